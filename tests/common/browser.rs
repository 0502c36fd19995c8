//! A headless Chromium driven over the DevTools protocol on a pipe
//! (`--remote-debugging-pipe`: the protocol's messages on file
//! descriptors 3 and 4, each ended by a NUL), so a test can size the
//! window, run script in a page, and take screenshots, with no websocket
//! client and no other program.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

pub struct Browser {
    child: Child,
    to: ChildStdin,
    from: Receiver<Value>,
    next: u64,
    session: String,
    _profile: super::Scratch,
}

/// How long one protocol command may take.
const PATIENCE: Duration = Duration::from_secs(60);

impl Browser {
    /// Starts Chromium (at `path`) with one blank page attached.
    pub fn launch(path: &Path) -> Browser {
        let profile = super::temp_dir("chromium-cdp");
        // The shell hands our pipes to Chromium as descriptors 3 and 4;
        // Chromium's own output goes nowhere.
        let script = format!(
            "exec 3<&0 4>&1 >/dev/null 2>&1; exec '{}' --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking --disable-component-update --disable-sync --remote-debugging-pipe --user-data-dir='{}' about:blank",
            path.display(),
            profile.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start chromium");
        let to = child.stdin.take().expect("stdin");
        let out = child.stdout.take().expect("stdout");
        let (tx, from) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(out);
            loop {
                let mut message = Vec::new();
                match reader.read_until(0, &mut message) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        message.pop();
                        if let Ok(v) = serde_json::from_slice::<Value>(&message)
                            && tx.send(v).is_err()
                        {
                            return;
                        }
                    }
                }
            }
        });
        let mut browser =
            Browser { child, to, from, next: 0, session: String::new(), _profile: profile };
        let target = browser.call_browser("Target.createTarget", json!({"url": "about:blank"}));
        let id = target["targetId"].as_str().expect("a target").to_string();
        let attached =
            browser.call_browser("Target.attachToTarget", json!({"targetId": id, "flatten": true}));
        browser.session = attached["sessionId"].as_str().expect("a session").to_string();
        browser.call("Page.enable", json!({}));
        browser.call("Runtime.enable", json!({}));
        browser
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next += 1;
        let id = self.next;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).expect("json");
        bytes.push(0);
        self.to.write_all(&bytes).and_then(|()| self.to.flush()).expect("write to chromium");
        loop {
            let reply = self
                .from
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("chromium did not answer {method} within {PATIENCE:?}"));
            if reply["id"] == json!(id) {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    fn call_browser(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    /// A command to the page.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    /// Opens `url` in a window `width` × `height` (a phone's when narrow)
    /// and waits for it to load.
    pub fn open(&mut self, url: &str, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
        self.call("Page.navigate", json!({"url": url}));
        // Loaded when the page's script has filled the task table.
        self.eval_until("document.querySelector('#tasks-table tbody tr') !== null");
    }

    /// Runs `expression` (it may be a promise) in the page; its value.
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        assert!(r.get("exceptionDetails").is_none(), "{expression}: {r}");
        r["result"]["value"].clone()
    }

    /// Waits until `condition` holds in the page.
    pub fn eval_until(&mut self, condition: &str) {
        for _ in 0..600 {
            if self.eval(condition) == json!(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("never true in the page: {condition}");
    }

    /// A screenshot of the whole page, as PNG, into `file`.
    pub fn screenshot(&mut self, file: &Path) {
        let shot = self.call(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true}),
        );
        use base64::Engine;
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap_or(""))
            .expect("base64");
        std::fs::write(file, png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
