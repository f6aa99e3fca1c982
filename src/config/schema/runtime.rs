//! The `[runtime]` rows of the settings table: the native pieces (ONNX
//! Runtime, PDFium, the embedding model) a user may bring instead of the
//! bundled ones, and how the embedding model runs.

use super::{Default, Field, Kind};

pub const FIELDS: &[Field] = &[
    field!(
        "runtime",
        "onnxruntime",
        Some("JARVIS_ORT_LIB"),
        Kind::OptPath,
        Default::Unset,
        "your own libonnxruntime.so (≥ 1.23) instead of the bundled one"
    ),
    field!(
        "runtime",
        "pdfium",
        Some("JARVIS_PDFIUM_LIB"),
        Kind::OptPath,
        Default::Unset,
        "your own libpdfium.so instead of the bundled one"
    ),
    field!(
        "runtime",
        "model_dir",
        Some("JARVIS_MODEL_DIR"),
        Kind::OptPath,
        Default::Unset,
        "a directory with model.onnx + tokenizer.json instead of the bundled model"
    ),
    field!(
        "runtime",
        "threads",
        None,
        Kind::Int { min: 0, max: 256 },
        Default::Int(0),
        "threads for embedding; 0 picks the number of cores"
    ),
    field!(
        "runtime",
        "model_keep_alive_secs",
        None,
        Kind::Int { min: 0, max: 604_800 },
        Default::Int(300),
        "seconds `serve`/`sync` keep an unused embedding model loaded; 0 keeps it loaded"
    ),
];
