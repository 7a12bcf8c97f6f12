//! A small W3C WebDriver client over the workspace's reqwest, driving Debian's headless
//! Chromium through `chromedriver`, for the web page's browser tests and `scripts/screenshots`.
//!
//! Only what the tests use: open a URL, run a script, find and click or type into an element,
//! open a tab, resize, take a screenshot. Waiting is polling a script until it answers truthy,
//! with a generous limit, so the tests assert outcomes and never wall-clock times.

use serde_json::{json, Value};
use std::net::TcpListener;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a wait polls before failing the test.
pub const WAIT: Duration = Duration::from_secs(30);

/// Where Debian's packages put the browser and its driver.
fn chromium_paths() -> Option<(PathBuf, PathBuf)> {
    let browser = ["/usr/bin/chromium", "/usr/lib/chromium/chromium"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())?;
    let driver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())?;
    Some((browser, driver))
}

/// The browser and driver, or `None` (with the reason printed) when the test should skip:
/// only when they are missing outside CI. In CI (`CI` set) a missing browser fails the test.
pub fn chromium_or_skip(test: &str) -> Option<(PathBuf, PathBuf)> {
    match chromium_paths() {
        Some(paths) => Some(paths),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "{test}: chromium and chromium-driver are required in CI (.ci/run installs them)"
            )
        }
        None => {
            eprintln!(
                "skipping {test}: /usr/bin/chromium or /usr/bin/chromedriver is missing \
                 (apt-get install chromium chromium-driver; .ci/run installs them)"
            );
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running chromedriver with one headless Chromium session.
pub struct Browser {
    http: reqwest::Client,
    base: String,
    session: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a fresh headless Chromium (its own profile directory, every
    /// background connection off, since the network here is closed) at `width`x`height`.
    pub async fn start(paths: &(PathBuf, PathBuf), width: u32, height: u32) -> Browser {
        let (browser, driver) = paths;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let port = free_port();
        // Its own process group, so ending the test ends the browser it started too.
        let driver = Command::new(driver)
            .process_group(0)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = match http.get(format!("{base}/status")).send().await {
                Ok(r) => r.json_value().await["value"]["ready"] == json!(true),
                Err(_) => false,
            };
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--hide-scrollbars".to_owned(),
            format!("--window-size={width},{height}"),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut options = json!({"binary": browser, "args": args});
        // Headless windows are at least 500 px wide; a phone's width needs device emulation.
        if width < 500 {
            options["mobileEmulation"] = json!({"deviceMetrics":
                {"width": width, "height": height, "pixelRatio": 2, "touch": true}});
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": options,
        }}});
        let mut me = Browser {
            http,
            base,
            session: String::new(),
            driver,
            _profile: profile,
        };
        let value = me.call("POST", "/session", Some(caps)).await;
        me.session = value["sessionId"].as_str().unwrap().to_owned();
        me
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        match self.try_call(method, path, body).await {
            Ok(value) => value,
            Err((status, value)) => panic!("webdriver {method} {path}: {status} {value}"),
        }
    }

    /// [`call`](Self::call) that returns a refusal (its status and body) instead of failing.
    async fn try_call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, (reqwest::StatusCode, Value)> {
        let url = if path == "/session" {
            format!("{}{path}", self.base)
        } else {
            format!("{}/session/{}{path}", self.base, self.session)
        };
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(body.unwrap_or_else(|| json!({})).to_string()),
        };
        let response = request.send().await.unwrap();
        let status = response.status();
        let value = response.json_value().await;
        if status.is_success() {
            Ok(value["value"].clone())
        } else {
            Err((status, value))
        }
    }

    pub async fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({"url": url}))).await;
    }

    pub async fn url(&self) -> String {
        self.call("GET", "/url", None)
            .await
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    pub async fn refresh(&self) {
        self.call("POST", "/refresh", None).await;
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    pub async fn eval(&self, script: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
        .await
    }

    /// Polls `script` until it returns a truthy value, and returns that value.
    pub async fn wait_for(&self, what: &str, script: &str, args: Value) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let value = self.eval(script, args.clone()).await;
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!("")
                && value != json!(0);
            if truthy {
                return value;
            }
            if Instant::now() > deadline {
                let body = self
                    .eval(
                        "return document.body ? document.body.innerText : ''",
                        json!([]),
                    )
                    .await;
                panic!("timed out waiting for {what}; the page shows:\n{body}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for an element matching `css` and returns its reference.
    pub async fn find(&self, css: &str) -> String {
        self.wait_for(
            &format!("element {css}"),
            "return document.querySelector(arguments[0]) !== null",
            json!([css]),
        )
        .await;
        let value = self
            .call(
                "POST",
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        value[ELEMENT].as_str().unwrap().to_owned()
    }

    /// Clicks the element matching `css` as a user would (it must be visible and enabled).
    /// An element that is there but not clickable yet (a sidebar still sliding in, a list
    /// being redrawn) is tried again until [`WAIT`], as a person would wait for it.
    pub async fn click(&self, css: &str) {
        let deadline = Instant::now() + WAIT;
        loop {
            let element = self.find(css).await;
            let refused = match self
                .try_call("POST", &format!("/element/{element}/click"), None)
                .await
            {
                Ok(_) => return,
                Err(refused) => refused,
            };
            let error = refused.1["value"]["error"].as_str().unwrap_or("");
            let transient = matches!(
                error,
                "element not interactable"
                    | "element click intercepted"
                    | "stale element reference"
            );
            assert!(
                transient && Instant::now() < deadline,
                "webdriver click on {css}: {} {}",
                refused.0,
                refused.1
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Types `text` into the element matching `css` as key presses.
    pub async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.call(
            "POST",
            &format!("/element/{element}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Opens a new tab and switches to it; returns the previous tab's handle.
    pub async fn new_tab(&self) -> String {
        let old = self.call("GET", "/window", None).await;
        let tab = self
            .call("POST", "/window/new", Some(json!({"type": "tab"})))
            .await;
        self.call("POST", "/window", Some(json!({"handle": tab["handle"]})))
            .await;
        old.as_str().unwrap().to_owned()
    }

    /// Switches to `handle`; returns the handle of the tab left.
    pub async fn switch_back(&self, handle: &str) -> String {
        let current = self.call("GET", "/window", None).await;
        self.switch_to(handle).await;
        current.as_str().unwrap().to_owned()
    }

    pub async fn switch_to(&self, handle: &str) {
        self.call("POST", "/window", Some(json!({"handle": handle})))
            .await;
    }

    /// A PNG of the viewport.
    pub async fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let data = self.call("GET", "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap()
    }

    pub async fn save_screenshot(&self, path: &Path) {
        std::fs::write(path, self.screenshot().await).unwrap();
    }

    /// Closes the browser, then the driver.
    pub async fn quit(self) {
        let _ = self.call("DELETE", "", None).await;
    }
}

impl Drop for Browser {
    /// Ends the driver's process group (the driver and the browser it started).
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.driver.id()) {
            // SAFETY: signalling a process group this test created.
            unsafe { libc::killpg(pid, libc::SIGKILL) };
        }
        let _ = self.driver.wait();
    }
}

trait JsonValue {
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        let bytes = self.bytes().await.unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }
}
