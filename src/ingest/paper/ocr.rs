//! What OCR did to a paper, said and marked: a warning for the pages left
//! out (a text layer that is junk and that nothing read better) and for the
//! scanned pages nobody read (OCR off or not installed), and the chunk
//! metadata that marks text OCR read — `ocr_pages` (the document's pages
//! read by OCR) on every body chunk, and `ocr` (true or false) per chunk:
//! whether its words come from those pages.
//! Must not: run OCR or any PDF work (the caller's PDF tools did).

use std::collections::HashSet;

use serde_json::json;

use crate::kb::stage::Document;
use crate::pdf::Converted;

/// "page 3" / "pages 3, 5, 7".
fn pages(list: &[usize]) -> String {
    let n: Vec<String> = list.iter().map(usize::to_string).collect();
    match n.len() {
        1 => format!("page {}", n[0]),
        _ => format!("pages {}", n.join(", ")),
    }
}

/// What the user should hear about pages OCR did not save.
pub(super) fn warnings(c: &Converted) -> Vec<String> {
    let mut out = Vec::new();
    let why = c.ocr_note.as_deref().unwrap_or("OCR could not read them either");
    if !c.unreadable_pages.is_empty() {
        out.push(format!(
            "{} left out: the text layer does not read as words (its fonts map glyphs to the wrong characters) and {why}",
            pages(&c.unreadable_pages)
        ));
    } else if let Some(note) = &c.ocr_note {
        out.push(format!("some pages are pictures of text that were not read: {note}"));
    }
    if !c.ocr_pages.is_empty() {
        tracing::info!(pages = ?c.ocr_pages, "text read by OCR");
    }
    out
}

fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphabetic())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
}

/// Mark the body chunks of a paper some of whose pages OCR read. `from_text`:
/// the chunks are the converted text (full text), not a summary of it; a
/// summary written from that text is all marked.
pub(super) fn mark(docs: &mut [Document], c: &Converted, from_text: bool) {
    if c.ocr_pages.is_empty() {
        return;
    }
    let page_words = |ocr: bool| -> HashSet<String> {
        c.page_texts
            .iter()
            .enumerate()
            .filter(|(i, _)| c.ocr_pages.contains(&(i + 1)) == ocr)
            .flat_map(|(_, t)| words(t))
            .collect()
    };
    let (by_ocr, by_layer) = (page_words(true), page_words(false));
    for d in docs {
        let ocr = !from_text || {
            let (mut o, mut t) = (0usize, 0usize);
            for w in words(&d.text) {
                match (by_ocr.contains(&w), by_layer.contains(&w)) {
                    (true, false) => o += 1,
                    (false, true) => t += 1,
                    _ => {}
                }
            }
            o > t || o == t && by_layer.is_empty()
        };
        d.meta.insert("ocr".into(), json!(ocr));
        d.meta.insert("ocr_pages".into(), json!(c.ocr_pages));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(texts: &[&str], ocr_pages: Vec<usize>) -> Converted {
        Converted {
            markdown: texts.join("\n\n"),
            page_count: texts.len(),
            page_texts: texts.iter().map(|t| t.to_string()).collect(),
            title: None,
            unreadable_pages: Vec::new(),
            ocr_pages,
            ocr_note: None,
            ocr_wanted: Vec::new(),
        }
    }

    fn doc(text: &str) -> Document {
        Document {
            text: text.into(),
            embed_text: text.into(),
            meta: Default::default(),
        }
    }

    #[test]
    fn chunks_are_marked_by_where_their_words_come_from() {
        let c = converted(
            &[
                "typeset pages with fonts that work",
                "scanned appendix read by tesseract",
            ],
            vec![2],
        );
        let mut docs = vec![doc("typeset pages with fonts"), doc("the scanned appendix")];
        mark(&mut docs, &c, true);
        assert_eq!(docs[0].meta["ocr"], json!(false));
        assert_eq!(docs[1].meta["ocr"], json!(true));
        assert_eq!(docs[1].meta["ocr_pages"], json!([2]));
        // A summary of such text is all marked; a paper without OCR is not.
        let mut docs = vec![doc("a summary")];
        mark(&mut docs, &c, false);
        assert_eq!(docs[0].meta["ocr"], json!(true));
        let mut docs = vec![doc("typeset")];
        mark(&mut docs, &converted(&["typeset"], vec![]), true);
        assert!(!docs[0].meta.contains_key("ocr"));
    }

    #[test]
    fn pages_left_out_are_said_with_the_reason() {
        let mut c = converted(&["a", "b", "c"], vec![]);
        c.unreadable_pages = vec![2, 3];
        c.ocr_note = Some("OCR is off (`pdf.ocr = false`)".into());
        let w = warnings(&c);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("pages 2, 3 left out") && w[0].contains("pdf.ocr = false"),
            "{w:?}"
        );
    }
}
