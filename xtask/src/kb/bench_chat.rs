//! `cargo xtask bench chat`: the agent's own overhead per turn, with a model
//! that answers instantly (an in-process provider behind the real agentic
//! loop), over a 10k-chunk knowledge base.
//!
//! Each measured turn makes three tool rounds (search_kb, get_document,
//! kb_stats), then answers; a second series answers at once with no tool,
//! so `(with tools − without) / 3` is the cost of one tool round. Figures
//! are printed, never asserted. The knowledge base is built from synthetic
//! text with synthetic vectors (embedding 10k chunks for real takes minutes
//! and says nothing about the agent); queries are embedded for real.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use jarvis::cancel::Cancel;
use jarvis::chat::tools::{ToolDeps, VaultSettings};
use jarvis::chat::{CachedProviders, ChatAgent, ChatDeps, ChatEvent, ChatSettings, SessionStore};
use jarvis::kb::{Document, Kb, KbSettings};
use jarvis::llm::provider::{Exchange, PdfToText, Turn};
use jarvis::llm::transcript::{Block, Message, Role};
use jarvis::llm::{CallError, LlmSettings};
use jarvis::paths::JarvisHome;
use jarvis::store::Metadata;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::common::{self, percentiles};

const CHUNKS: usize = 10_000;
const DOC_CHUNKS: usize = 10;
const WORDS: &[&str] = &[
    "budget",
    "review",
    "travel",
    "paper",
    "transformer",
    "attention",
    "protein",
    "folding",
    "garden",
    "recipe",
    "meeting",
    "project",
    "deadline",
    "neural",
    "network",
    "dataset",
    "benchmark",
    "latency",
    "memory",
    "index",
    "vector",
    "search",
    "privacy",
    "notes",
    "vault",
    "summary",
    "figure",
    "table",
    "result",
    "method",
    "baseline",
    "training",
    "inference",
    "model",
    "cluster",
    "sequence",
    "genome",
    "cell",
    "signal",
    "pathway",
];

/// Answers instantly: three tool rounds, then text (or text at once).
struct Instant3 {
    rounds: usize,
}

fn calls_so_far(messages: &[Message]) -> usize {
    // Assistant messages after the last user message that carries text.
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::User && m.content.iter().any(|b| matches!(b, Block::Text { .. })))
        .unwrap_or(0);
    messages[start..].iter().filter(|m| m.role == Role::Assistant).count()
}

impl Exchange for Instant3 {
    fn provider_name(&self) -> &str {
        "ollama"
    }
    fn model(&self) -> &str {
        "instant"
    }
    fn exchange(
        &self,
        turn: &Turn<'_>,
        _: Option<&Cancel>,
        _: &mut jarvis::llm::stream::OnEvent<'_>,
    ) -> Result<Message, CallError> {
        let n = calls_so_far(turn.messages);
        let call = |id: &str, name: &str, args: serde_json::Value| Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args,
            }],
        };
        Ok(match n {
            0 if self.rounds > 0 => call("c1", "search_kb", json!({"query": "transformer attention latency"})),
            1 if self.rounds > 1 => call("c2", "get_document", json!({"source": "bench://doc42"})),
            2 if self.rounds > 2 => call("c3", "kb_stats", json!({})),
            _ => Message::assistant("An instant answer."),
        })
    }
    fn pdf_to_text(&self) -> Option<&PdfToText> {
        None
    }
}

fn build_kb(dir: &Path, cfg: &jarvis::config::Config) -> Result<Kb> {
    let embedder = common::load_embedder(cfg)?;
    let dims = embedder.dims();
    let kb = Kb::open(dir, embedder, None, KbSettings::default()).context("open the bench knowledge base")?;
    if kb.count()? >= CHUNKS {
        return Ok(kb);
    }
    let mut rng = StdRng::seed_from_u64(11);
    let word_vecs: Vec<Vec<f32>> = WORDS
        .iter()
        .map(|_| (0..dims).map(|_| rng.random_range(-1.0f32..1.0)).collect())
        .collect();
    for batch in (0..CHUNKS).collect::<Vec<_>>().chunks(1000) {
        let mut docs = Vec::new();
        let mut vecs = Vec::new();
        for &i in batch {
            let mut r = StdRng::seed_from_u64(i as u64);
            let ids: Vec<usize> = (0..60).map(|_| r.random_range(0..WORDS.len())).collect();
            let text = ids.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
            let mut v = vec![0f32; dims];
            for &w in &ids {
                for (a, b) in v.iter_mut().zip(&word_vecs[w]) {
                    *a += b;
                }
            }
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            v.iter_mut().for_each(|x| *x /= norm);
            let mut meta = Metadata::new();
            meta.insert("source".into(), format!("bench://doc{}", i / DOC_CHUNKS).into());
            meta.insert("doc_type".into(), "paper".into());
            meta.insert("visibility".into(), "public".into());
            meta.insert("title".into(), format!("Bench paper {}", i / DOC_CHUNKS).into());
            meta.insert("chunk_index".into(), ((i % DOC_CHUNKS) as i64).into());
            docs.push(Document {
                embed_text: text.clone(),
                text,
                meta,
            });
            vecs.push(v);
        }
        let prepared = kb.prepare_with_vectors(docs, vecs)?;
        kb.commit(prepared, None, &jarvis::kb::Actor::Cli)?;
    }
    Ok(kb)
}

/// A provider source whose every spec is the instant fake.
struct InstantSource {
    inner: CachedProviders,
    provider: Arc<dyn jarvis::llm::ChatProvider>,
}

impl jarvis::chat::ProviderSource for InstantSource {
    fn resolve(&self, spec: &str) -> Result<(String, String), jarvis::chat::SwitchError> {
        self.inner.resolve(spec)
    }
    fn provider(&self, _: &str) -> Result<Arc<dyn jarvis::llm::ChatProvider>, jarvis::llm::LlmError> {
        Ok(self.provider.clone())
    }
    fn is_cloud(&self, _: &str) -> bool {
        false
    }
    fn secrets(&self) -> Vec<String> {
        Vec::new()
    }
    fn default_spec(&self) -> String {
        "ollama:instant".into()
    }
}

/// (to first event, to reply, summed tool durations) per turn, in ms.
fn series(agent: &ChatAgent, turns: usize) -> Result<Vec<(f64, f64, f64)>> {
    let mut out = Vec::new();
    for i in 0..turns {
        let s = Arc::new(Mutex::new(agent.new_session(Some("ollama:instant"), None)?));
        let first: Arc<Mutex<Option<Instant>>> = Arc::default();
        let tools_ms: Arc<Mutex<f64>> = Arc::default();
        let (f2, t2) = (first.clone(), tools_ms.clone());
        let sink = move |e: ChatEvent| {
            let mut f = f2.lock().unwrap_or_else(|p| p.into_inner());
            if f.is_none() {
                *f = Some(Instant::now());
            }
            if let ChatEvent::ToolFinish { duration_ms, .. } = e {
                *t2.lock().unwrap_or_else(|p| p.into_inner()) += duration_ms as f64;
            }
        };
        let t0 = Instant::now();
        agent
            .run_turn(
                &s,
                &format!("question {i} about transformer latency"),
                &sink,
                &Cancel::new(),
            )
            .context("bench turn")?;
        let total = t0.elapsed().as_secs_f64() * 1000.0;
        let first_ms = first
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .map_or(total, |f| f.duration_since(t0).as_secs_f64() * 1000.0);
        let tools = *tools_ms.lock().unwrap_or_else(|p| p.into_inner());
        out.push((first_ms, total, tools));
    }
    Ok(out)
}

pub fn run(root: &Path, args: &[&str]) -> Result<()> {
    let turns: usize = common::flag(args, "--turns")
        .map_or(Ok(20), str::parse)
        .context("--turns")?;
    let cfg = common::config(root)?;
    let work = common::work_dir(root).join("chat");
    std::fs::create_dir_all(&work)?;
    let t = Instant::now();
    let kb = Arc::new(build_kb(&work.join("rag"), &cfg)?);
    eprintln!(
        "knowledge base: {} chunks ready in {:.1} s",
        kb.count()?,
        t.elapsed().as_secs_f64()
    );
    let home = JarvisHome::at(work.join("home"));
    let sessions = work.join("sessions");
    let _ = std::fs::remove_dir_all(&sessions);
    let agent_for = |rounds: usize| {
        ChatAgent::new(ChatDeps {
            tools: ToolDeps {
                kb: kb.clone(),
                vault: VaultSettings::default(),
                papers: None,
                mcp: None,
                drafts: None,
            },
            providers: Arc::new(InstantSource {
                inner: CachedProviders::new(LlmSettings::default()),
                provider: Arc::new(Instant3 { rounds }),
            }),
            home: home.clone(),
            sessions: SessionStore::new(&sessions),
            settings: ChatSettings::default(),
        })
    };
    let with = agent_for(3);
    let without = agent_for(0);
    // Warm up: the first query pays the model's first-run costs.
    series(&with, 2)?;
    let w = series(&with, turns)?;
    let wo = series(&without, turns)?;
    let col = |v: &[(f64, f64, f64)], f: fn(&(f64, f64, f64)) -> f64| -> Vec<f64> { v.iter().map(f).collect() };
    let (first50, first95) = percentiles(&mut col(&w, |x| x.0));
    let (reply50, reply95) = percentiles(&mut col(&w, |x| x.1));
    let (base50, base95) = percentiles(&mut col(&wo, |x| x.1));
    let (tools50, _) = percentiles(&mut col(&w, |x| x.2));
    println!("bench chat — {turns} turns, {CHUNKS}-chunk index, instant in-process model (release)");
    println!("  message → first event          p50 {first50:7.2} ms   p95 {first95:7.2} ms");
    println!("  message → reply, 3 tool rounds p50 {reply50:7.2} ms   p95 {reply95:7.2} ms");
    println!("  message → reply, no tools      p50 {base50:7.2} ms   p95 {base95:7.2} ms");
    println!(
        "  per tool round (difference / 3) p50 {:7.2} ms   (tools themselves: {:.2} ms per round)",
        (reply50 - base50) / 3.0,
        tools50 / 3.0
    );
    println!("  goal: ≤ 50 ms of our own time per tool round");
    Ok(())
}
