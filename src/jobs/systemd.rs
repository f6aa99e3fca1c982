//! Running `jarvis sync` as a systemd user service.
//!
//! Owns: the unit text `jarvis sync --print-systemd-unit` prints
//! ([`unit`]: `Type=notify`, `Restart=on-failure`, the binary's absolute
//! path, `JARVIS_HOME`, a watchdog), and the readiness and watchdog
//! notifications ([`ready`], [`watchdog_interval`], [`ping`]) — no-ops
//! when not started by systemd.
//! Must not: install or start anything (the README gives the user the
//! three commands).

use std::path::Path;
use std::time::Duration;

/// How long systemd waits for a watchdog ping before restarting us.
pub const WATCHDOG_SEC: u64 = 120;

/// Quote a value for a unit file: `%` doubles (specifier escape) and the
/// whole value is double-quoted with `\` and `"` escaped, so a path with
/// spaces stays one word.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The user unit for `jarvis sync` with this binary and home.
pub fn unit(binary: &Path, home: &Path) -> String {
    format!(
        "# Jarvis background sync — install with:\n\
         #   jarvis sync --print-systemd-unit > ~/.config/systemd/user/jarvis-sync.service\n\
         #   systemctl --user daemon-reload\n\
         #   systemctl --user enable --now jarvis-sync.service\n\
         [Unit]\n\
         Description=Jarvis background sync (vault refresh, PDF inbox, drafts retention, digest)\n\
         \n\
         [Service]\n\
         Type=notify\n\
         NotifyAccess=main\n\
         ExecStart={} sync\n\
         Environment={}\n\
         Restart=on-failure\n\
         RestartSec=10\n\
         WatchdogSec={WATCHDOG_SEC}\n\
         TimeoutStopSec=30\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        quoted(&binary.display().to_string()),
        quoted(&format!("JARVIS_HOME={}", home.display())),
    )
}

/// Tell systemd start-up is done (no-op outside systemd).
pub fn ready() {
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        tracing::warn!(error = %e, "cannot tell systemd that jarvis sync is ready");
    }
}

/// Tell systemd we are stopping.
pub fn stopping() {
    let _ = sd_notify::notify(&[sd_notify::NotifyState::Stopping]);
}

/// How often to ping the watchdog: half its timeout, when systemd set one.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().map(|d| d / 2).filter(|d| !d.is_zero())
}

/// One watchdog ping.
pub fn ping() {
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Watchdog]) {
        tracing::warn!(error = %e, "cannot ping the systemd watchdog");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_names_the_binary_and_home_and_quotes_them() {
        let u = unit(Path::new("/opt/my apps/jarvis"), Path::new("/home/a/.jar%vis"));
        assert!(u.contains("Type=notify"), "{u}");
        assert!(u.contains("Restart=on-failure"), "{u}");
        assert!(u.contains("ExecStart=\"/opt/my apps/jarvis\" sync"), "{u}");
        assert!(u.contains("Environment=\"JARVIS_HOME=/home/a/.jar%%vis\""), "{u}");
        assert!(u.contains("WatchdogSec="), "{u}");
    }
}
