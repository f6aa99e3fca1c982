//! Metadata inference for local PDFs against fake model servers on loopback.

use jarvis::ingest::metadata::{infer, resolve, PdfMetadata};
use jarvis::llm::spec::make_provider;

use crate::support::fakes::llm::FakeServer;
use crate::support::fakes::wires::{settings_for, Wire};
use crate::support::net::dead_url;

const PAGES: &str = "Deep Residual Learning\nKaiming He  Xiangyu Zhang\nMicrosoft Research\nAbstract. Deeper neural networks are more difficult to train. doi:10.1109/CVPR.2016.90";
const PROMPT: &str = "Extract title and authors as JSON.\n{text}";

#[test]
fn title_and_authors_come_from_one_small_completion_and_the_doi_from_the_page() {
    for wire in [Wire::Ollama, Wire::OpenRouter, Wire::Anthropic] {
        let server = FakeServer::start(vec![wire.text(&[
            "{\"title\": \"Deep Residual Learning\",",
            " \"authors\": [\"Kaiming He\", \"Xiangyu Zhang\"], \"doi\": \"10.9999/wrong\"}",
        ])]);
        let provider = wire.provider(&server);
        let m = infer(PAGES, Some(provider.as_ref()), PROMPT, None);
        assert_eq!(m.title.as_deref(), Some("Deep Residual Learning"), "{wire:?}");
        assert_eq!(m.authors.as_deref(), Some("Kaiming He, Xiangyu Zhang"));
        assert_eq!(
            m.doi.as_deref(),
            Some("10.1109/CVPR.2016.90"),
            "the printed DOI wins over a guess"
        );
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1, "exactly one completion");
        assert!(reqs[0].body.to_string().contains("Deep Residual Learning"));
    }
}

#[test]
fn an_unreachable_or_confused_model_degrades_to_nothing() {
    // Nothing listens on this port: inference gives up and the add goes on.
    let url = dead_url();
    let provider = make_provider("ollama", &settings_for(&url)).unwrap();
    let t = std::time::Instant::now();
    let m = infer(PAGES, Some(provider.as_ref()), PROMPT, None);
    assert_eq!(
        m,
        PdfMetadata {
            doi: Some("10.1109/CVPR.2016.90".into()),
            ..Default::default()
        }
    );
    eprintln!("unreachable provider: gave up after {:?}", t.elapsed());

    let server = FakeServer::start(vec![Wire::OpenRouter.text(&["I could not find a title, sorry."])]);
    let m = infer(
        "no doi here",
        Some(Wire::OpenRouter.provider(&server).as_ref()),
        PROMPT,
        None,
    );
    assert_eq!(m, PdfMetadata::default());

    // Explicit values for everything: no request at all.
    let server = FakeServer::start(vec![]);
    let provider = Wire::OpenRouter.provider(&server);
    let all = PdfMetadata {
        title: Some("T".into()),
        authors: Some("A".into()),
        doi: Some("10.1234/x".into()),
    };
    let r = resolve(&all, || infer(PAGES, Some(provider.as_ref()), PROMPT, None));
    assert_eq!(r, all);
    assert!(server.requests().is_empty());
}
