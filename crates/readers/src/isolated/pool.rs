//! The parent's side: a small pool of reader children, reused across
//! files, each file timed, each death explained.
//!
//! Owns: starting children (the embedding program's binary in its reader
//! mode, with no environment but the allocator's setting), handing each
//! file to an idle one, the wall-time bound, and reading a dead child's
//! last words for the reason. Must never: block on a child without a
//! deadline, reuse a child that failed, or leave a child running after
//! its pool is gone.

use std::ffi::OsString;
use std::io::{self, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::wire::{self, RETIRING};
use super::{Bounds, Failure, Kind};

/// How long a new child may take to greet.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How much of a child's standard error is kept for its reason.
const STDERR_TAIL: usize = 16 << 10;
// Signal numbers on Linux (the only system the reader mode's limits are
// written for).
const SIGKILL: i32 = 9;
const SIGXCPU: i32 = 24;

/// Children that read files under [`Bounds`]; safe to share between threads.
pub struct Pool {
    program: PathBuf,
    leading: Vec<OsString>,
    bounds: Bounds,
    size: usize,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Default)]
struct State {
    idle: Vec<Worker>,
    live: usize,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("program", &self.program)
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl Pool {
    /// A pool of at most `size` children, each `program` run with `leading`
    /// arguments (the embedding program's reader mode, which must call
    /// [`super::serve_child`] with the rest) and the bounds. One child is
    /// started now, so that a program that is not a reader of this version
    /// is refused here rather than on every file.
    pub fn start(
        program: PathBuf,
        leading: Vec<OsString>,
        bounds: Bounds,
        size: usize,
    ) -> Result<Pool, Failure> {
        let pool = Pool {
            program,
            leading,
            bounds,
            size: size.max(1),
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        };
        let first = pool.spawn()?;
        let mut state = pool.lock();
        state.live = 1;
        state.idle.push(first);
        drop(state);
        Ok(pool)
    }

    /// The bounds each child reads under.
    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Reads one file in a child: the model, or why not.
    pub(super) fn read(&self, kind: Kind, bytes: &[u8]) -> Result<wire::Model, Failure> {
        let mut worker = self.take()?;
        let exchanged = worker.exchange(kind, bytes, self.bounds.wall);
        let answer = match exchanged {
            Ok((state, json)) => {
                if state == RETIRING {
                    self.retire(worker, Duration::from_secs(2));
                } else {
                    self.give_back(worker);
                }
                json
            }
            Err(ended) => {
                let failure = worker.post_mortem(ended, self.bounds);
                self.retire(worker, Duration::ZERO);
                return Err(failure);
            }
        };
        wire::decode(answer)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// An idle child, a new one when fewer than `size` live, or the next
    /// one freed.
    fn take(&self) -> Result<Worker, Failure> {
        let mut state = self.lock();
        loop {
            if let Some(mut w) = state.idle.pop() {
                if matches!(w.child.try_wait(), Ok(None)) {
                    return Ok(w);
                }
                state.live -= 1;
                drop(w);
                continue;
            }
            if state.live < self.size {
                state.live += 1;
                drop(state);
                return self.spawn().inspect_err(|_| {
                    self.lock().live -= 1;
                    self.freed.notify_one();
                });
            }
            state = self.freed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn give_back(&self, worker: Worker) {
        self.lock().idle.push(worker);
        self.freed.notify_one();
    }

    /// Ends a child that will not be reused, waiting up to `grace` for it to
    /// exit by itself.
    fn retire(&self, mut worker: Worker, grace: Duration) {
        worker.end(grace);
        self.lock().live -= 1;
        self.freed.notify_one();
    }

    fn spawn(&self) -> Result<Worker, Failure> {
        let b = self.bounds;
        let mut child = Command::new(&self.program)
            .args(&self.leading)
            .arg("--memory-bytes")
            .arg(b.memory_bytes.to_string())
            .arg("--cpu-ms")
            .arg(b.cpu.as_millis().to_string())
            .arg("--stack-bytes")
            .arg(b.stack_bytes.to_string())
            // Nothing of the parent's environment (API keys among it); one
            // malloc arena, so that a thread's arena reservation does not
            // count against the address-space bound.
            .env_clear()
            .env("MALLOC_ARENA_MAX", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                Failure::Unavailable(format!("cannot start {}: {e}", self.program.display()))
            })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err(Failure::Unavailable("a reader child without its pipes".into()));
        };
        let tail = Arc::new(Mutex::new(Vec::new()));
        let drain = drain_stderr(stderr, tail.clone());
        let (answers, greeting) = listen(stdout);
        let mut worker = Worker { child, stdin: Some(stdin), answers, tail, drain: Some(drain) };
        match greeting.recv_timeout(START_TIMEOUT) {
            Ok(Ok(v)) if v == wire::version() => Ok(worker),
            Ok(Ok(v)) => {
                worker.end(Duration::ZERO);
                Err(Failure::Unavailable(format!(
                    "{} is a reader of another version ({v}; this one is {})",
                    self.program.display(),
                    wire::version()
                )))
            }
            Ok(Err(e)) => {
                worker.end(Duration::from_secs(1));
                let said = worker.last_words();
                Err(Failure::Unavailable(format!(
                    "{} did not start as a reader ({e}){}",
                    self.program.display(),
                    if said.is_empty() { String::new() } else { format!(": {said}") }
                )))
            }
            Err(_) => {
                worker.end(Duration::ZERO);
                Err(Failure::Unavailable(format!(
                    "{} did not greet in time",
                    self.program.display()
                )))
            }
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for mut w in self.lock().idle.drain(..) {
            w.end(Duration::from_millis(200));
        }
    }
}

/// One child and its pipes.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Answers,
    tail: Arc<Mutex<Vec<u8>>>,
    drain: Option<JoinHandle<()>>,
}

/// How an exchange ended without an answer.
enum Ended {
    /// No answer within the wall bound.
    Late,
    /// The child's pipes failed: it died.
    Died(io::Error),
}

impl Worker {
    fn exchange(
        &mut self,
        kind: Kind,
        bytes: &[u8],
        wall: Duration,
    ) -> Result<(u8, Vec<u8>), Ended> {
        let started = Instant::now();
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Ended::Died(io::ErrorKind::BrokenPipe.into()));
        };
        if let Err(e) = wire::write_request(stdin, kind, bytes) {
            return Err(Ended::Died(e));
        }
        let left = wall.saturating_sub(started.elapsed());
        match self.answers.recv_timeout(left) {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(Ended::Died(e)),
            Err(RecvTimeoutError::Timeout) => Err(Ended::Late),
            Err(RecvTimeoutError::Disconnected) => {
                Err(Ended::Died(io::ErrorKind::UnexpectedEof.into()))
            }
        }
    }

    /// Why the child gave no answer: the bound it met, or how it died.
    fn post_mortem(&mut self, ended: Ended, bounds: Bounds) -> Failure {
        let Ended::Died(cause) = ended else {
            return Failure::Time { limit: bounds.wall };
        };
        let status = self.end(Duration::from_secs(2));
        let said = self.last_words();
        if said.contains("has overflowed its stack") {
            return Failure::Crashed { how: "stack overflow".into() };
        }
        if said.contains("memory allocation of") {
            return Failure::Memory { limit_bytes: bounds.memory_bytes };
        }
        use std::os::unix::process::ExitStatusExt;
        match status.and_then(|s| s.signal()) {
            Some(SIGXCPU) => Failure::Time { limit: bounds.cpu },
            Some(SIGKILL) => Failure::Crashed {
                how: "killed by signal 9, which the kernel sends when the machine is out of memory"
                    .into(),
            },
            Some(n) => Failure::Crashed { how: format!("signal {n}") },
            None => Failure::Crashed {
                how: match said.lines().last() {
                    Some(line) => format!("it ended: {line}"),
                    None => format!("it ended without an answer: {cause}"),
                },
            },
        }
    }

    /// Closes the child's input, waits up to `grace` for it to exit, kills
    /// it if it has not, and reaps it.
    fn end(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.stdin = None;
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(self.reaped(status)),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    return self.child.wait().ok().map(|s| self.reaped(s));
                }
                Err(_) => return None,
            }
        }
    }

    fn reaped(&mut self, status: ExitStatus) -> ExitStatus {
        // Its standard error is closed now: the drain ends.
        if let Some(drain) = self.drain.take() {
            let _ = drain.join();
        }
        status
    }

    fn last_words(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&tail).trim().to_string()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes of the child's standard error.
fn drain_stderr(
    mut stderr: std::process::ChildStderr,
    tail: Arc<Mutex<Vec<u8>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
            t.extend_from_slice(chunk.get(..n).unwrap_or_default());
            let excess = t.len().saturating_sub(STDERR_TAIL);
            t.drain(..excess);
        }
    })
}

/// The child's greeting (its version), once.
type Greeting = Receiver<io::Result<String>>;
/// Each answer: its state byte and its JSON, or how the pipe failed.
type Answers = Receiver<io::Result<(u8, Vec<u8>)>>;

/// A thread reading the child's output: its greeting, then its answers,
/// until the pipe ends.
fn listen(stdout: std::process::ChildStdout) -> (Answers, Greeting) {
    let (answer_tx, answers) = mpsc::channel();
    let (greet_tx, greeting) = mpsc::channel();
    std::thread::spawn(move || {
        let mut input = BufReader::new(stdout);
        let greeted = wire::read_greeting(&mut input);
        let ok = greeted.is_ok();
        if greet_tx.send(greeted).is_err() || !ok {
            return;
        }
        loop {
            let answer = wire::read_answer(&mut input);
            let failed = answer.is_err();
            if answer_tx.send(answer).is_err() || failed {
                return;
            }
        }
    });
    (answers, greeting)
}
