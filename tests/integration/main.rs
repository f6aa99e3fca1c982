//! The single integration-test binary (one link instead of one per file).
//! Every test runs with a temporary JARVIS_HOME and HOME; none reaches
//! beyond loopback or touches the real ~/.jarvis.
// Tests spawn the built binary and helpers directly; the rule that only
// jarvis::sandbox spawns processes is for library code.
#![allow(clippy::disallowed_methods)]

mod ask_owner;
mod chat_add_file;
mod chat_assist;
mod chat_cite;
mod chat_drafts;
mod chat_eval;
mod chat_limits;
mod chat_memory;
mod chat_privacy;
mod chat_queue_pins;
mod chat_turns;
mod citations;
mod cli_add;
mod cli_add_remote;
mod cli_config;
mod cli_digest;
mod cli_kb;
mod cli_memory;
mod cli_model_switch;
mod cli_pdf;
mod cli_runtime;
mod cli_tune;
mod cli_vault;
mod digest;
mod digest_feedback;
mod disk_full;
mod drafts_build;
mod kb_crash;
mod kb_crash_ops;
mod llm;
mod llm_cache;
mod llm_stream;
mod mcp;
mod mcp_servers;
mod metadata;
mod owner;
mod owner_limits;
mod owner_progress;
mod pdf_isolation;
mod pdf_ocr;
mod sandbox;
mod support;
mod sync_crash;
mod sync_jobs;
mod tidy;
mod tidy_layers;
mod tidy_settings;
mod tidy_unit_tests;
mod web_browser;
mod web_browser_assist;
mod web_browser_chat;
mod web_browser_cite;
mod web_browser_digest;
mod web_browser_mcp;
mod web_browser_memory;
mod web_browser_timeline;
mod web_browser_ui;
mod web_browser_viewer;
mod web_chat;
mod web_draft_pages;
mod web_drafts;
mod web_drafts_spy;
mod web_editor;
mod web_editor_build;
mod web_editor_cite;
mod web_editor_menu;
mod web_first_run;
mod web_http;
mod web_library;
mod web_source;
mod zotero;
