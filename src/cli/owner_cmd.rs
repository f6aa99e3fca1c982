//! `jarvis serve` and `jarvis sync`: run the owner process.

use std::sync::Arc;

use crate::app::owner::server::Owner;
use crate::app::App;
use crate::config::Config;

/// Which long-lived command this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The web app on 127.0.0.1 (port override: `--port`).
    Serve {
        port: Option<u16>,
        /// Run the scheduled jobs (not with `--no-jobs`).
        jobs: bool,
    },
    Sync,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Serve { .. } => "serve",
            Role::Sync => "sync",
        }
    }
}

pub fn run(role: Role, config: Config) -> anyhow::Result<u8> {
    let home = config.home.clone();
    if role == Role::Sync {
        // Refuse to start on a setup a service would silently get wrong.
        let problems = crate::app::jobs::setup_problems(&config);
        if !problems.is_empty() {
            anyhow::bail!("jarvis sync cannot start: {}", problems.join("; "));
        }
    }
    // The owner lock first: a second owner is refused before it loads anything.
    let owner = Owner::start(&home, role.name())?;
    let app = App::from_config(config, crate::config::process_env);
    app.set_lock_notice(Box::new(|h| {
        eprintln!("waiting for {h} to finish with the knowledge base…");
    }));
    let shutdown = app.shutdown().clone();
    super::signals::install(move || shutdown.cancel())?;
    let kb = app.kb()?;
    let cfg = app.config();
    let model = app.chat_model_label();
    tracing::info!(
        pid = std::process::id(),
        role = role.name(),
        chat = %model,
        embed_model = %kb.model_id(),
        socket = %owner.socket().display(),
        "jarvis {} started",
        role.name()
    );
    if role == Role::Sync {
        // An index built by another embedding model would make every
        // refresh fail: stop here with the fix instead.
        kb.check_model()?;
    }
    drop(kb);
    eprintln!(
        "jarvis {} (pid {}) owns {} — chat model {model}, embedding model {}",
        role.name(),
        std::process::id(),
        cfg.rag_dir().display(),
        app.kb()?.model_id()
    );
    eprintln!(
        "`jarvis kb …` commands now run in this process through {}",
        owner.socket().display()
    );
    let shutdown = app.shutdown().clone();
    // One runtime for the jobs (and the web server under `serve`).
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // An idle owner gives the embedding model's memory back.
    rt.spawn(Arc::clone(&app).keep_model_alive_only_while_used());
    let jobs = match role {
        Role::Sync | Role::Serve { jobs: true, .. } => {
            let j = crate::app::jobs::start_jobs(&app, rt.handle(), role.name())?;
            eprintln!("scheduled jobs run here; `jarvis kb sync-status` shows them");
            Some(Arc::new(j))
        }
        Role::Serve { jobs: false, .. } => None,
    };
    // Where the web app listens, once it does (`ask` sends what waits for
    // an answer there; a `sync` has none).
    let web: super::delegate::WebAddress = Arc::default();
    match role {
        Role::Sync => {
            eprintln!("Ctrl-C stops it.");
            owner.run(Arc::clone(&app), super::delegate::handler(jobs.clone(), web), &shutdown)?;
        }
        Role::Serve { port, .. } => {
            // The socket loop on its own thread, the web server on the
            // runtime here; either ending stops the other.
            let sock = {
                let (app, shutdown, jobs, web) = (Arc::clone(&app), shutdown.clone(), jobs.clone(), web.clone());
                std::thread::Builder::new().name("owner-socket".into()).spawn(move || {
                    let r = owner.run(app, super::delegate::handler(jobs, web), &shutdown);
                    shutdown.cancel();
                    r
                })?
            };
            let mcp_scope = match crate::mcp::scope(&app.config()) {
                crate::mcp::Scope::PublicOnly => "public documents only",
                crate::mcp::Scope::IncludePrivate => "include_private = true: MCP clients can read PRIVATE notes too",
            };
            let opts = crate::web::WebOptions {
                port,
                on_ready: Some(Box::new(move |addr| {
                    let _ = web.set(format!("http://{addr}/"));
                    eprintln!("web app on http://{addr}/ — open it in your browser; Ctrl-C stops it");
                    eprintln!("MCP (streamable HTTP) on http://{addr}/mcp — {mcp_scope}");
                })),
            };
            let served = rt.block_on(crate::web::serve(Arc::clone(&app), opts, shutdown.clone()));
            shutdown.cancel();
            let owned = sock
                .join()
                .map_err(|_| anyhow::anyhow!("the owner socket thread panicked"))?;
            served?;
            owned?;
        }
    }
    if let Some(j) = jobs {
        j.stop();
    }
    drop(rt);
    drop(app);
    tracing::info!(role = role.name(), "jarvis {} stopped", role.name());
    eprintln!("jarvis {} stopped", role.name());
    Ok(0)
}
