//! Shared fixture for the chat-agent tests: a real knowledge base (fjall,
//! tantivy, arroy, the bundled model) over a generated vault, and agents
//! whose providers are the fake servers speaking the real wires.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use jarvis::chat::tools::{ToolDeps, VaultSettings};
use jarvis::chat::{CachedProviders, ChatAgent, ChatDeps, ChatEvent, ChatSettings, SessionStore, SharedSession};
use jarvis::ingest::vault::{refresh_vault, VaultOptions};
use jarvis::kb::Kb;
use jarvis::llm::LlmSettings;
use jarvis::paths::JarvisHome;

use super::fakes::llm::FakeServer;
use super::fakes::wires::settings_for;
use super::fs::write;
use super::runtime::config;
use super::Sandbox;

/// Text that exists only in private notes; no request body may contain it.
pub const SECRET: &str = "zanzibar-cobalt-4471";
pub const SECRET_WORDS: &[&str] = &["zanzibar", "cobalt-4471", "Divorce lawyer Hargreaves"];

pub struct Fx {
    pub sb: Sandbox,
    pub kb: Arc<Kb>,
    pub vault: PathBuf,
}

/// The default vault: public notes, private notes holding [`SECRET`], and
/// a public note carrying a prompt injection.
pub const NOTES: &[(&str, &str)] = &[
    (
        "cooking/pasta.md",
        "---\ncategory: recipe\n---\n# Pasta\n\nBoil the pasta in salted water for nine minutes. Budget dinners: pasta with garlic and oil.",
    ),
    (
        "work/budget.md",
        "---\ncategory: project\nstatus: active\n---\n# Team budget\n\nThe quarterly budget review is on Friday. Travel spending is over plan.",
    ),
    (
        "private/diary.md",
        "---\ncategory: health\n---\n# Diary\n\nDivorce lawyer Hargreaves said the code word is zanzibar-cobalt-4471. Budget for the lawyer: high.",
    ),
    (
        "private/health.md",
        "---\ncategory: health\n---\n# Health\n\nBlood pressure notes, zanzibar-cobalt-4471 appointment reference.",
    ),
];

pub fn fixture(notes: &[(&str, &str)]) -> Fx {
    let sb = Sandbox::new();
    let vault = sb.home().join("vault");
    for (rel, text) in notes {
        write(&vault, rel, text);
    }
    std::fs::create_dir_all(&vault).expect("vault");
    let cfg = config(&sb);
    let kb = jarvis::app::kb::open_kb(&cfg).expect("open kb");
    let opts = VaultOptions {
        private_dirs: vec!["private".into()],
        force: false,
        actor: jarvis::kb::Actor::Cli,
    };
    refresh_vault(&kb, &vault, &opts, &|_, _| {}, &jarvis::cancel::Cancel::new()).expect("index vault");
    Fx {
        sb,
        kb: Arc::new(kb),
        vault,
    }
}

/// Settings that send `ollama` to `local` and the cloud wires to `cloud`.
pub fn split_settings(local: &FakeServer, cloud: &FakeServer) -> LlmSettings {
    let mut s = settings_for(&cloud.url);
    s.ollama_host = local.url.clone();
    s
}

impl Fx {
    pub fn agent_with(&self, llm: LlmSettings, chat: ChatSettings) -> ChatAgent {
        ChatAgent::new(ChatDeps {
            tools: ToolDeps {
                drafts: None,
                kb: self.kb.clone(),
                vault: VaultSettings {
                    root: Some(self.vault.clone()),
                    private_dirs: vec!["private".into()],
                },
                papers: None,
                mcp: None,
            },
            providers: Arc::new(CachedProviders::new(llm)),
            home: JarvisHome::at(self.sb.jarvis_home()),
            sessions: SessionStore::new(self.sb.jarvis_home().join("sessions")),
            settings: chat,
        })
    }

    pub fn agent(&self, server: &FakeServer) -> ChatAgent {
        self.agent_with(settings_for(&server.url), ChatSettings::default())
    }
}

pub fn session(agent: &ChatAgent, spec: &str) -> SharedSession {
    Arc::new(Mutex::new(agent.new_session(Some(spec), None).expect("new session")))
}

/// Collects a turn's events.
#[derive(Clone, Default)]
pub struct Events(pub Arc<Mutex<Vec<ChatEvent>>>);

impl Events {
    pub fn sink(&self) -> impl Fn(ChatEvent) + Send + Sync + 'static {
        let v = self.0.clone();
        move |e| v.lock().expect("events").push(e)
    }
    pub fn all(&self) -> Vec<ChatEvent> {
        self.0.lock().expect("events").clone()
    }
}

/// No request the fake received contains any private text.
pub fn assert_no_private_text(server: &FakeServer) {
    let reqs = server.requests();
    assert!(!reqs.is_empty(), "the fake received no request at all");
    for (i, r) in reqs.iter().enumerate() {
        let body = r.body.to_string();
        for w in SECRET_WORDS.iter().chain([&SECRET]) {
            assert!(!body.contains(w), "request {i} carries private text {w:?}: {body}");
        }
    }
}

/// The tool-result texts of every request body (what the model was shown).
pub fn bodies(server: &FakeServer) -> Vec<String> {
    server.requests().iter().map(|r| r.body.to_string()).collect()
}
