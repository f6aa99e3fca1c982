//! SIGINT and SIGTERM for long commands and owners: the first one flips a
//! switch the work watches (so it can stop cooperatively, clean up and
//! exit 130); a second one exits at once.

use tokio::signal::unix::{signal, SignalKind};

/// Call `on_first` (on a background thread) at the first SIGINT or
/// SIGTERM; exit with 130 at the second. The handlers are registered
/// before this returns, so a signal right after is not lost.
pub fn install(on_first: impl Fn() + Send + 'static) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut int, mut term) = rt.block_on(async {
        Ok::<_, std::io::Error>((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?))
    })?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        rt.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            tracing::info!("interrupted: stopping");
            on_first();
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            tracing::warn!("interrupted twice: exiting at once");
            std::process::exit(130);
        });
    })?;
    Ok(())
}
