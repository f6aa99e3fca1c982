//! The last PDF built from each draft file, held so the editor can show
//! its pages as pictures.
//!
//! Owns: one staged copy of the newest build per (draft, file), in a
//! temporary file outside the drafts root (a build is output, not part of
//! the draft, and the folder a build was made from stays unchanged), named
//! by a hash of its bytes; and the pages already drawn from it.
//! Must not: draw anything itself (PDFium lives in `pdf`, run in a child by
//! `app`), or hold more than [`MAX_BUILDS`] builds or [`MAX_PAGE_BYTES`] of
//! pictures per build.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use super::disk::Disk;
use super::DraftsError;

/// A staged build is `<tmp>/jarvis-build-XXXX.pdf`.
pub const STAGED_PREFIX: &str = "jarvis-build-";

/// Builds held at once (the oldest goes first).
pub const MAX_BUILDS: usize = 8;
/// Drawn pages kept per build; past this a page is drawn again on request.
pub const MAX_PAGE_BYTES: usize = 48 << 20;

/// One held build.
#[derive(Debug)]
pub struct Build {
    /// Hex prefix of the PDF's sha256: the same bytes get the same id, so
    /// a browser cache keyed on it is never wrong.
    pub id: String,
    pub bytes: usize,
    file: tempfile::NamedTempFile,
    /// (page, width) → (PNG, width, height); plus the page count once known.
    pages: Mutex<PageCache>,
}

#[derive(Debug, Default)]
struct PageCache {
    drawn: HashMap<(u32, u32), Arc<DrawnPage>>,
    bytes: usize,
    count: Option<u32>,
}

/// A page as a picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrawnPage {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

impl Build {
    /// Where the staged PDF is (for the worker to read).
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn page(&self, page: u32, width: u32) -> Option<Arc<DrawnPage>> {
        lock(&self.pages).drawn.get(&(page, width)).cloned()
    }

    /// The page count, once a page has been drawn.
    pub fn page_count(&self) -> Option<u32> {
        lock(&self.pages).count
    }

    /// Keep a drawn page (unless the build's picture budget is spent).
    pub fn keep_page(&self, page: u32, width: u32, count: u32, drawn: DrawnPage) -> Arc<DrawnPage> {
        let drawn = Arc::new(drawn);
        let mut c = lock(&self.pages);
        c.count = Some(count);
        if c.bytes + drawn.png.len() <= MAX_PAGE_BYTES && !c.drawn.contains_key(&(page, width)) {
            c.bytes += drawn.png.len();
            c.drawn.insert((page, width), Arc::clone(&drawn));
        }
        drawn
    }
}

/// (draft id, file name).
type Key = (String, String);

/// The held builds of this process.
#[derive(Debug, Default)]
pub struct Builds {
    /// Newest last.
    held: Mutex<Vec<(Key, Arc<Build>)>>,
    /// One page drawn at a time: each draw is a child process, and a preview
    /// scrolled fast asks for many.
    drawing: Mutex<()>,
    /// Stages each build (the drafts writer, so a write log sees it).
    disk: Disk,
}

impl Builds {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds staged through `disk` (the workspace's, sharing its log).
    pub fn with_disk(disk: Disk) -> Self {
        Builds {
            disk,
            ..Self::default()
        }
    }

    /// Hold `pdf` as the newest build of `filename` in draft `draft_id`
    /// (both already validated by the build that made it), replacing the
    /// previous one. Returns its id.
    pub fn put(&self, draft_id: &str, filename: &str, pdf: &[u8]) -> Result<String, DraftsError> {
        let id = super::content_hash(pdf)[..16].to_string();
        let key = (draft_id.to_string(), filename.to_string());
        let mut held = lock(&self.held);
        if let Some((_, b)) = held.iter().find(|(k, _)| *k == key) {
            if b.id == id {
                return Ok(id);
            }
        }
        let file = self.disk.temp_file(STAGED_PREFIX, ".pdf", pdf)?;
        held.retain(|(k, _)| *k != key);
        held.push((
            key,
            Arc::new(Build {
                id: id.clone(),
                bytes: pdf.len(),
                file,
                pages: Mutex::new(PageCache::default()),
            }),
        ));
        let excess = held.len().saturating_sub(MAX_BUILDS);
        held.drain(..excess);
        Ok(id)
    }

    /// The held build `build` of `filename` in `draft_id`.
    pub fn get(&self, draft_id: &str, filename: &str, build: &str) -> Result<Arc<Build>, DraftsError> {
        lock(&self.held)
            .iter()
            .find(|((d, f), b)| d == draft_id && f == filename && b.id == build)
            .map(|(_, b)| Arc::clone(b))
            .ok_or_else(|| DraftsError::NoBuild {
                name: filename.to_string(),
            })
    }

    /// Held while one page is drawn.
    pub fn drawing(&self) -> MutexGuard<'_, ()> {
        lock(&self.drawing)
    }

    /// Forget every build of a draft (it was deleted).
    pub fn forget_draft(&self, draft_id: &str) {
        lock(&self.held).retain(|((d, _), _)| d != draft_id);
    }
}

use crate::lock::lock;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_build_replaces_the_last_and_old_ones_are_dropped() {
        let b = Builds::new();
        let one = b.put("d1", "a.tex", b"%PDF-1 one").unwrap();
        let path = b.get("d1", "a.tex", &one).unwrap().path().to_path_buf();
        assert!(path.exists());
        assert!(!path.starts_with(std::env::temp_dir().join("d1")));
        let two = b.put("d1", "a.tex", b"%PDF-1 two").unwrap();
        assert_ne!(one, two);
        assert!(matches!(b.get("d1", "a.tex", &one), Err(DraftsError::NoBuild { .. })));
        assert!(!path.exists(), "the replaced build's file is removed");
        assert_eq!(b.put("d1", "a.tex", b"%PDF-1 two").unwrap(), two, "same bytes, same id");
        for i in 0..MAX_BUILDS {
            b.put(&format!("x{i}"), "a.tex", format!("%PDF {i}").as_bytes())
                .unwrap();
        }
        assert!(b.get("d1", "a.tex", &two).is_err(), "the oldest went first");
        let last = b.put("x9", "a.tex", b"%PDF nine").unwrap();
        let build = b.get("x9", "a.tex", &last).unwrap();
        assert_eq!(build.page_count(), None);
        let p = DrawnPage {
            png: vec![1, 2, 3],
            width: 10,
            height: 14,
        };
        build.keep_page(1, 800, 3, p.clone());
        assert_eq!(build.page(1, 800).as_deref(), Some(&p));
        assert_eq!(build.page_count(), Some(3));
        b.forget_draft("x9");
        assert!(b.get("x9", "a.tex", &last).is_err());
    }
}
