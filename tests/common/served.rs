//! `redjury serve` as a child process on a free 127.0.0.1 port, for tests
//! and benchmarks that talk to it over HTTP.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Served {
    pub child: Child,
    pub url: String,
    pub stdout: Arc<Mutex<String>>,
    pub stderr: Arc<Mutex<String>>,
}

/// What `start` saw when the server did not come up.
#[derive(Debug)]
pub struct Failed {
    pub code: Option<i32>,
    #[allow(dead_code)] // shown through Debug when a test fails
    pub stdout: String,
    pub stderr: String,
}

impl Served {
    /// Starts `redjury serve ARGS` in `dir` with `envs` set (and every
    /// E2E key variable not in `envs` unset); waits for "listening on".
    pub fn start(dir: &Path, args: &[String], envs: &[(&str, &str)]) -> Result<Served, Failed> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_redjury"));
        cmd.arg("serve").args(args).current_dir(dir).env_remove("RUST_LOG");
        for k in ["E2E_OPENAI_KEY", "E2E_ANTHROPIC_KEY", "E2E_GEMINI_KEY", "REDJURY_TOKEN"] {
            cmd.env_remove(k);
        }
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child =
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start redjury serve");
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let out_pipe = child.stdout.take().expect("stdout");
        let out_log = stdout.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out_pipe).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.to_string());
                }
                out_log.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let mut err_pipe = child.stderr.take().expect("stderr");
        let err_log = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                err_log.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(url) => Ok(Served { child, url, stdout, stderr }),
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().ok();
                std::thread::sleep(Duration::from_millis(100));
                Err(Failed {
                    code: status.and_then(|s| s.code()),
                    stdout: stdout.lock().unwrap().clone(),
                    stderr: stderr.lock().unwrap().clone(),
                })
            }
        }
    }

    /// Sends SIGTERM.
    pub fn term(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// Waits for the process to exit; its exit code.
    pub fn wait(&mut self, limit: Duration) -> Option<i32> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().unwrap().clone()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
