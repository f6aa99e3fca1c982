//! Pages as pictures: one page of a PDF rasterised to PNG, for showing a
//! compiled draft where the browser will not run its own PDF viewer (a
//! frame sandboxed to nothing).
//!
//! Caps, so a hostile or huge document cannot make a render cost more than
//! a picture's worth: only the first [`MAX_RENDER_PAGES`] pages can be
//! drawn, the width is clamped to [`MIN_RENDER_WIDTH`]..=[`MAX_RENDER_WIDTH`]
//! pixels and the height to [`MAX_RENDER_HEIGHT`] (a page 40 times taller
//! than wide is drawn narrower, not taller). Blocking, like every PDFium
//! call: callers run it off the async runtime.

use std::io::Cursor;

use pdfium_render::prelude::*;
use serde::{Deserialize, Serialize};

use super::{read_error, PdfEngine, PdfError};

/// Pages past this one are not drawn (the preview says how many there are).
pub const MAX_RENDER_PAGES: u32 = 200;
/// The narrowest picture drawn.
pub const MIN_RENDER_WIDTH: u32 = 200;
/// The widest picture drawn (a HiDPI preview pane).
pub const MAX_RENDER_WIDTH: u32 = 2400;
/// The tallest picture drawn.
pub const MAX_RENDER_HEIGHT: u32 = 4000;

/// One page drawn as a PNG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageImage {
    /// 1-based.
    pub page: u32,
    /// How many pages the document has (not all may be drawable).
    pub pages: u32,
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

/// Clamp a requested width to what [`render_page`] draws.
pub fn clamp_width(width: u32) -> u32 {
    width.clamp(MIN_RENDER_WIDTH, MAX_RENDER_WIDTH)
}

/// Draw page `page` (1-based) of the PDF in `bytes`, `width` pixels wide
/// (clamped), on white, with form fields, as a PNG.
pub fn render_page(engine: &PdfEngine, name: &str, bytes: &[u8], page: u32, width: u32) -> Result<PageImage, PdfError> {
    let doc = engine.open(name, bytes)?;
    let pages = u32::try_from(doc.pages().len()).unwrap_or(0);
    if page == 0 || page > pages {
        return Err(PdfError::Read {
            name: name.into(),
            reason: format!("there is no page {page}; the document has {pages}"),
        });
    }
    if page > MAX_RENDER_PAGES {
        return Err(PdfError::Read {
            name: name.into(),
            reason: format!(
                "page {page} is past the first {MAX_RENDER_PAGES}, the most the preview draws — download the PDF to read it"
            ),
        });
    }
    // page ≤ MAX_RENDER_PAGES, so the index fits PDFium's int.
    let index = (page - 1) as PdfPageIndex;
    let p = doc.pages().get(index).map_err(|e| read_error(name, "page", e))?;
    let width = clamp_width(width);
    let config = PdfRenderConfig::new()
        .set_target_width(width as Pixels)
        .set_maximum_width(width as Pixels)
        .set_maximum_height(MAX_RENDER_HEIGHT as Pixels)
        .set_clear_color(PdfColor::WHITE)
        .render_form_data(true);
    let bitmap = p
        .render_with_config(&config)
        .map_err(|e| read_error(name, "drawing the page", e))?;
    let image = bitmap
        .as_image()
        .map_err(|e| read_error(name, "reading the drawn page", e))?
        .into_rgb8();
    let (w, h) = image.dimensions();
    let mut png = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| PdfError::Read {
            name: name.into(),
            reason: format!("encoding page {page} as PNG: {e}"),
        })?;
    Ok(PageImage {
        page,
        pages,
        png,
        width: w,
        height: h,
    })
}
