//! A real browser for the web app's tests: Debian's chromium driven through
//! chromedriver (WebDriver) with fantoccini. Headless, a fresh profile, no
//! background networking; chromium's own network log is kept so a test can
//! prove the page talked to nothing but the app.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use super::net::free_port;

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// A chromedriver (its own process group) and one browser session.
pub struct Browser {
    pub c: Client,
    driver: Child,
    pub profile: tempfile::TempDir,
    pub rt: tokio::runtime::Runtime,
}

impl Browser {
    /// Dark colour scheme (`prefers-color-scheme: dark`).
    pub fn start(width: u32, height: u32) -> Browser {
        Browser::start_with(width, height, true)
    }

    /// Light colour scheme: headless chromium's own default when dark is
    /// not forced (the tests check `matchMedia` rather than trust that).
    pub fn start_light(width: u32, height: u32) -> Browser {
        Browser::start_with(width, height, false)
    }

    /// Dark, with `scale` device pixels per CSS pixel (a HiDPI screen).
    pub fn start_scaled(width: u32, height: u32, scale: u32) -> Browser {
        Browser::start_full(width, height, true, Some(scale))
    }

    fn start_with(width: u32, height: u32, dark: bool) -> Browser {
        Browser::start_full(width, height, dark, None)
    }

    fn start_full(width: u32, height: u32, dark: bool, scale: Option<u32>) -> Browser {
        assert!(
            std::path::Path::new(CHROMIUM).exists() && std::path::Path::new(CHROMEDRIVER).exists(),
            "the browser tests need Debian's chromium and chromium-driver — `cargo xtask test` installs them"
        );
        let profile = tempfile::tempdir().unwrap();
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start chromedriver");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let netlog = profile.path().join("netlog.json");
        let mut caps = json!({
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-default-apps",
                    "--disable-client-side-phishing-detection", "--no-pings", "--disable-domain-reliability",
                    "--homepage=about:blank",
                    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,CertificateTransparencyComponentUpdater",
                    "--hide-scrollbars", "--force-color-profile=srgb", "--force-dark-mode",
                    format!("--user-data-dir={}", profile.path().join("profile").display()),
                    format!("--window-size={width},{height}"),
                    format!("--log-net-log={}", netlog.display()),
                ],
            }
        });
        let args = caps["goog:chromeOptions"]["args"].as_array_mut().unwrap();
        if !dark {
            args.retain(|a| a != "--force-dark-mode");
        }
        if let Some(scale) = scale {
            args.push(json!(format!("--force-device-scale-factor={scale}")));
        }
        let caps: serde_json::Map<String, Value> = caps.as_object().unwrap().clone();
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let c = rt.block_on(async {
            loop {
                match ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
                    .capabilities(caps.clone())
                    .connect(&url)
                    .await
                {
                    Ok(c) => break c,
                    Err(e) if Instant::now() < deadline => {
                        let _ = e;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Err(e) => panic!("cannot start a chromium session: {e}"),
                }
            }
        });
        let b = Browser { c, driver, profile, rt };
        b.resize(width, height);
        b
    }

    pub fn resize(&self, width: u32, height: u32) {
        // The window's outer size; make the viewport what was asked.
        self.rt.block_on(self.c.set_window_size(width, height)).unwrap();
        let inner: Value = self.js("return [window.innerWidth, window.innerHeight]");
        let (iw, ih) = (
            inner[0].as_u64().unwrap_or(0) as u32,
            inner[1].as_u64().unwrap_or(0) as u32,
        );
        if iw > 0 && (iw != width || ih != height) {
            let _ = self
                .rt
                .block_on(self.c.set_window_size(width * 2 - iw, height * 2 - ih));
        }
    }

    pub fn goto(&self, url: &str) {
        self.rt.block_on(self.c.goto(url)).unwrap();
    }

    pub fn js(&self, script: &str) -> Value {
        self.rt.block_on(self.c.execute(script, vec![])).unwrap_or(Value::Null)
    }

    pub fn js_args(&self, script: &str, args: Vec<Value>) -> Value {
        self.rt.block_on(self.c.execute(script, args)).unwrap()
    }

    /// Wait until `script` (a `return …` expression) is truthy.
    pub fn wait(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = self.js(script);
            let truthy = match &v {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64() != Some(0.0),
                Value::String(s) => !s.is_empty(),
                _ => true,
            };
            if truthy {
                return v;
            }
            if Instant::now() > deadline {
                let body = self.js("return document.body.innerText");
                // The last requests that finished, with their times: a
                // request still pending is the one missing here.
                let requests = self.js(
                    "return performance.getEntriesByType('resource').slice(-10).map((e) => `${Math.round(e.startTime)} ms +${Math.round(e.duration)} ms ${e.name.replace(location.origin, '')}`).join('\\n')",
                );
                panic!(
                    "timed out waiting for {what}; page text:\n{}\n\nlast finished requests (start, duration, path):\n{}",
                    body.as_str().unwrap_or(""),
                    requests.as_str().unwrap_or("")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn click(&self, css: &str) {
        // The page re-renders lists as answers arrive: retry an element that
        // went stale between finding and clicking it.
        let mut tries = 0;
        loop {
            let el = self.rt.block_on(
                self.c
                    .wait()
                    .at_most(Duration::from_secs(10))
                    .for_element(Locator::Css(css)),
            );
            let el = el.unwrap_or_else(|e| panic!("no element {css}: {e}"));
            match self.rt.block_on(el.click()) {
                Ok(()) => return,
                Err(e) if tries < 20 && e.to_string().contains("stale") => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                // The conversation scrolls smoothly: WebDriver's own
                // scroll-into-view can land mid-animation, with the element
                // still under the composer. Bring it into view at once and
                // try again; a page where it stays covered still fails.
                Err(e) if tries < 20 && e.to_string().contains("click intercepted") => {
                    tries += 1;
                    let _ = self.rt.block_on(self.c.execute(
                        "arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})",
                        vec![serde_json::to_value(&el).unwrap_or_default()],
                    ));
                    std::thread::sleep(Duration::from_millis(150));
                }
                Err(e) => panic!("cannot click {css}: {e}"),
            }
        }
    }

    /// Type into an element (WebDriver key events: Enter is "\u{E007}").
    pub fn type_into(&self, css: &str, text: &str) {
        let el = self
            .rt
            .block_on(self.c.find(Locator::Css(css)))
            .unwrap_or_else(|e| panic!("no element {css}: {e}"));
        self.rt.block_on(el.send_keys(text)).unwrap();
    }

    /// Key presses to whatever has focus.
    pub fn keys(&self, text: &str) {
        let el = self.rt.block_on(self.c.active_element()).unwrap();
        self.rt.block_on(el.send_keys(text)).unwrap();
    }

    pub fn screenshot(&self, name: &str) -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let png = self.rt.block_on(self.c.screenshot()).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap();
        path
    }

    /// Every request in chromium's network log: (url, initiator or
    /// network-isolation site, "" for the browser's own background work).
    /// Complete once the session has ended (chromium closes the log).
    pub fn network_requests(&self) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(self.profile.path().join("netlog.json")).unwrap_or_default();
        let log: Value = serde_json::from_str(&text)
            .or_else(|_| serde_json::from_str(&format!("{}]}}", text.trim_end().trim_end_matches(','))))
            .unwrap_or(Value::Null);
        let mut out = Vec::new();
        for ev in log["events"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let p = &ev["params"];
            let Some(url) = p["url"].as_str() else { continue };
            let by = p["initiator"]
                .as_str()
                .or_else(|| p["network_isolation_key"].as_str())
                .or_else(|| p["site_for_cookies"].as_str())
                .unwrap_or("");
            out.push((url.to_string(), by.to_string()));
        }
        out.sort();
        out.dedup();
        out
    }

    /// End the session (chromium exits) and the driver.
    pub fn finish(mut self) -> Vec<(String, String)> {
        let c = self.c.clone();
        let _ = self.rt.block_on(c.close());
        // chromium writes the end of its network log as it exits.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && self.network_requests().is_empty() {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill();
        self.network_requests()
    }

    fn kill(&mut self) {
        // chromedriver leaves chromium running when killed alone: end the
        // whole process group.
        let pgid = self.driver.id() as i32;
        kill_group(pgid);
        let _ = self.driver.wait();
    }
}

fn kill_group(pgid: i32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Every request the app's page made went to the app's own origin. The
/// browser's own background traffic (update checks and the like, which
/// the flags mostly silence) is listed but is not the page's doing.
pub fn assert_only_app_origin(reqs: &[(String, String)], origin: &str) {
    let host = origin.trim_start_matches("http://");
    let internal = |u: &str| ["data:", "about:", "chrome:", "blob:"].iter().any(|p| u.starts_with(p));
    assert!(
        reqs.iter().any(|(u, _)| u.starts_with(origin)),
        "the network log is empty or missed the app: {reqs:?}"
    );
    let page: Vec<&(String, String)> = reqs
        .iter()
        .filter(|(u, by)| by.contains(host) || u.starts_with(origin))
        .collect();
    let foreign: Vec<&&(String, String)> = page
        .iter()
        .filter(|(u, _)| !u.starts_with(origin) && !internal(u))
        .collect();
    assert!(foreign.is_empty(), "the page requested beyond its origin: {foreign:?}");
    let background: Vec<&String> = reqs
        .iter()
        .filter(|(u, by)| by.is_empty() && !u.starts_with(origin))
        .map(|(u, _)| u)
        .collect();
    eprintln!(
        "page requests: {}, all to {origin}; browser background requests (not the page's): {background:?}",
        page.len()
    );
}

/// The visible text of the first element matching `css` ("" if none).
pub fn text_of(b: &Browser, css: &str) -> String {
    b.js_args(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : ''",
        vec![json!(css)],
    )
    .as_str()
    .unwrap_or("")
    .to_string()
}
