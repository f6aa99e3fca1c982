//! Embedded raster images, as PNG, for figure captioning.
//!
//! Pure extraction: no captioning, no store. Images smaller than
//! `min_pixels` (logos, rules, icons) are dropped before they are decoded;
//! an image drawn on several pages (a journal logo, a repeated figure) is
//! kept once, keyed by a hash of its stored bytes.

use std::collections::HashSet;
use std::io::Cursor;

use pdfium_render::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{PdfEngine, PdfError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// 1-based page number where the image first appears.
    pub page: u32,
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// Forms can nest; real files rarely go past two levels, hostile ones loop.
const MAX_FORM_DEPTH: usize = 8;

/// Extract at most `max_figures` distinct images of at least `min_pixels`
/// pixels from a PDF held in memory.
pub fn extract_figures(
    engine: &PdfEngine,
    name: &str,
    bytes: &[u8],
    max_figures: usize,
    min_pixels: u64,
) -> Result<Vec<Figure>, PdfError> {
    let doc = engine.open(name, bytes)?;
    let mut out = Vec::new();
    let mut seen: HashSet<[u8; 32]> = HashSet::new();
    if max_figures == 0 {
        return Ok(out);
    }
    for (pi, page) in doc.pages().iter().enumerate() {
        let mut images = Vec::new();
        for object in page.objects().iter() {
            collect_images(object, 0, &mut images);
        }
        for object in images {
            let Some(image) = object.as_image_object() else {
                continue;
            };
            let (w, h) = match (image.width(), image.height()) {
                (Ok(w), Ok(h)) if w > 0 && h > 0 => (w as u32, h as u32),
                _ => continue,
            };
            if u64::from(w) * u64::from(h) < min_pixels {
                continue;
            }
            let key: [u8; 32] = match image.get_raw_image_data() {
                Ok(data) => Sha256::digest(&data).into(),
                Err(_) => continue,
            };
            if !seen.insert(key) {
                continue;
            }
            match to_png(image) {
                Ok((png, width, height)) => out.push(Figure {
                    page: pi as u32 + 1,
                    png,
                    width,
                    height,
                }),
                Err(reason) => {
                    tracing::warn!(file = name, page = pi + 1, %reason, "skipping an embedded image that cannot be decoded")
                }
            }
            if out.len() >= max_figures {
                return Ok(out);
            }
        }
    }
    Ok(out)
}

fn collect_images<'a>(object: PdfPageObject<'a>, depth: usize, out: &mut Vec<PdfPageObject<'a>>) {
    match &object {
        PdfPageObject::Image(_) => out.push(object),
        PdfPageObject::XObjectForm(form) if depth < MAX_FORM_DEPTH => {
            let children: Vec<PdfPageObject<'a>> = (0..form.len()).filter_map(|i| form.get(i).ok()).collect();
            for child in children {
                collect_images(child, depth + 1, out);
            }
        }
        _ => {}
    }
}

fn to_png(image: &PdfPageImageObject<'_>) -> Result<(Vec<u8>, u32, u32), String> {
    let decoded = image.get_raw_image().map_err(|e| e.to_string())?;
    let (width, height) = (decoded.width(), decoded.height());
    let mut png = Vec::new();
    if decoded
        .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .is_err()
    {
        // Colour types PNG has no encoding for (e.g. 32-bit float): go via RGBA8.
        png.clear();
        image::DynamicImage::ImageRgba8(decoded.to_rgba8())
            .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
            .map_err(|e| e.to_string())?;
    }
    Ok((png, width, height))
}
