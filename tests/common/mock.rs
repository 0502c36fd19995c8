//! An in-process HTTP/1.1 server on 127.0.0.1 that speaks each judge
//! provider's wire format, with injectable faults.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
    /// The rubric ids the prompt asks about.
    pub fn rubric_ids(&self) -> Vec<String> {
        let marker = "exactly one verdict for each of these ids: ";
        let text = self.body.replace("\\n", "\n");
        text.find(marker)
            .map(|i| {
                let rest = &text[i + marker.len()..];
                let end = rest.find(".\n").or_else(|| rest.find('.')).unwrap_or(rest.len());
                rest[..end].split(", ").map(|s| s.trim().to_string()).collect()
            })
            .unwrap_or_default()
    }
}

pub enum Action {
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Accept the request, then say nothing for this long.
    Stall(Duration),
    /// Answer 200 with this body after a delay.
    Later(Duration, String),
    /// Answer with this status and body after a delay.
    StatusLater(Duration, u16, String),
    /// Close the connection without a response.
    Drop,
    /// Answer 200 with this body in chunks (no content-length up front, as
    /// a streaming proxy sends it).
    Chunked(String),
}

pub fn ok(body: String) -> Action {
    Action::Respond { status: 200, headers: vec![], body }
}

pub fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Action {
    Action::Respond {
        status: code,
        headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        body: body.to_string(),
    }
}

pub type Handler = Arc<dyn Fn(&Recorded, usize) -> Action + Send + Sync>;

pub struct MockServer {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<Recorded>>>,
}

impl MockServer {
    pub async fn start(handler: Handler) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("addr");
        let log: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let log2 = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                // As real servers do: no Nagle delay between head and body.
                let _ = socket.set_nodelay(true);
                let handler = handler.clone();
                let log = log2.clone();
                tokio::spawn(async move {
                    loop {
                        let Some(req) = read_request(&mut socket).await else { return };
                        let index = {
                            let mut l = log.lock().expect("log");
                            l.push(req.clone());
                            l.len() - 1
                        };
                        let written = match handler(&req, index) {
                            Action::Respond { status, headers, body } => {
                                reply(&mut socket, status, &headers, &body).await
                            }
                            Action::Later(d, body) => {
                                tokio::time::sleep(d).await;
                                reply(&mut socket, 200, &[], &body).await
                            }
                            Action::StatusLater(d, status, body) => {
                                tokio::time::sleep(d).await;
                                reply(&mut socket, status, &[], &body).await
                            }
                            Action::Stall(d) => {
                                tokio::time::sleep(d).await;
                                return;
                            }
                            Action::Drop => return,
                            Action::Chunked(body) => chunked(&mut socket, &body).await,
                        };
                        if written.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        MockServer { addr, log }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().expect("log").clone()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            l.split_once(':').map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[header_end + 4..].to_vec();
    while body.len() < len {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
        at: Instant::now(),
    })
}

/// A verdicts JSON object for these ids.
pub fn verdicts_json(ids: &[String], verdict: &dyn Fn(&str) -> &'static str) -> String {
    let items: Vec<serde_json::Value> = ids
        .iter()
        .map(|id| serde_json::json!({"rubric_id": id, "verdict": verdict(id), "justification": format!("Checked {id}.")}))
        .collect();
    serde_json::json!({ "verdicts": items }).to_string()
}

/// A success body in the provider's format carrying `text` (for Anthropic:
/// a tool_use block whose input is the parsed `text`).
pub fn success_body(provider: &str, text: &str) -> String {
    match provider {
        "openai" => serde_json::json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1767225600, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050, "prompt_tokens_details": {"cached_tokens": 800}}
        })
        .to_string(),
        "anthropic" => {
            let input: serde_json::Value = serde_json::from_str(text).unwrap_or(serde_json::Value::Null);
            serde_json::json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "record_verdicts", "input": input}],
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 200, "output_tokens": 50, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 800}
            })
            .to_string()
        }
        _ => serde_json::json!({
            "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 1000, "candidatesTokenCount": 50, "totalTokenCount": 1050, "cachedContentTokenCount": 800}
        })
        .to_string(),
    }
}

/// `inner`, every 200 answered `delay` late (a judge that takes its time).
pub fn slowed(delay: Duration, inner: Handler) -> Handler {
    Arc::new(move |req: &Recorded, n| match inner(req, n) {
        Action::Respond { status: 200, body, .. } => Action::Later(delay, body),
        other => other,
    })
}

/// `inner`, with every 2xx body's usage rewritten to what a provider
/// whose tokenizer makes a token of 3 characters would bill: the request
/// body's length for the prompt (none of it from a prompt cache), the
/// answer's text for the output. A bill that grows with what was asked,
/// as a real one does (`success_body` bills every call the same).
pub fn billing_by_size(provider: &'static str, inner: Handler) -> Handler {
    Arc::new(move |req: &Recorded, n| {
        let (headers, body) = match inner(req, n) {
            Action::Respond { status: 200, headers, body } => (headers, body),
            other => return other,
        };
        let Ok(mut reply) = serde_json::from_str::<serde_json::Value>(&body) else {
            return Action::Respond { status: 200, headers, body };
        };
        let input = (req.body.len() / 3) as u64;
        let answer_len = |v: &serde_json::Value| v.to_string().len() as u64;
        match provider {
            "openai" => {
                let out = reply["choices"][0]["message"]["content"]
                    .as_str()
                    .map_or(0, |t| t.len() as u64)
                    / 3;
                reply["usage"] = serde_json::json!({"prompt_tokens": input, "completion_tokens": out, "total_tokens": input + out, "prompt_tokens_details": {"cached_tokens": 0}});
            }
            "anthropic" => {
                let out = answer_len(&reply["content"][0]["input"]) / 3;
                reply["usage"] = serde_json::json!({"input_tokens": input, "output_tokens": out, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
            }
            _ => {
                let out = reply["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .map_or(0, |t| t.len() as u64)
                    / 3;
                reply["usageMetadata"] = serde_json::json!({"promptTokenCount": input, "candidatesTokenCount": out, "totalTokenCount": input + out, "cachedContentTokenCount": 0});
            }
        }
        Action::Respond { status: 200, headers, body: reply.to_string() }
    })
}

/// A handler that answers every request correctly, PASS for every rubric
/// whose id is in `pass` and FAIL otherwise.
pub fn answering(provider: &'static str, pass: &'static [&'static str]) -> Handler {
    Arc::new(move |req: &Recorded, _| {
        let ids = req.rubric_ids();
        ok(success_body(
            provider,
            &verdicts_json(&ids, &|id| if pass.contains(&id) { "PASS" } else { "FAIL" }),
        ))
    })
}

/// What a rate-limited mock says of its budget in each reply.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reports {
    /// No rate-limit headers (as Gemini).
    #[allow(dead_code)] // the judge bench's
    Nothing,
    /// OpenAI's `x-ratelimit-*-requests` headers.
    OpenAi,
    /// Anthropic's `anthropic-ratelimit-requests-*` headers (the reset as
    /// an RFC 3339 instant).
    Anthropic,
}

/// One reply with a length: every status and header a mock sends goes
/// through here.
async fn reply(
    socket: &mut tokio::net::TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body.as_bytes()).await
}

/// A 200 whose body comes in 64 KiB chunks, its length not said up front.
async fn chunked(socket: &mut tokio::net::TcpStream, body: &str) -> std::io::Result<()> {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    socket.write_all(head.as_bytes()).await?;
    for chunk in body.as_bytes().chunks(64 * 1024) {
        socket.write_all(format!("{:x}\r\n", chunk.len()).as_bytes()).await?;
        socket.write_all(chunk).await?;
        socket.write_all(b"\r\n").await?;
    }
    socket.write_all(b"0\r\n\r\n").await
}

/// Unix seconds as an RFC 3339 UTC time to the second, without the zone:
/// "2026-12-01T09:30:00".
pub fn utc_seconds(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = redjury::calendar::civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// An instant as Anthropic writes it: RFC 3339, UTC, milliseconds.
fn rfc3339(t: std::time::SystemTime) -> String {
    let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("{}.{:03}Z", utc_seconds(since.as_secs() as i64), since.subsec_millis())
}

/// When a rate-limited mock accepted and refused requests.
#[derive(Default)]
pub struct Window {
    pub accepted: Vec<Instant>,
    pub refused: usize,
    pub refused_at: Vec<Instant>,
}

#[allow(dead_code)] // read by the pacing test binary
impl Window {
    /// Accepted requests a second over the span they arrived in.
    pub fn rate(&self) -> f64 {
        let (Some(first), Some(last)) = (self.accepted.first(), self.accepted.last()) else {
            return 0.0;
        };
        (self.accepted.len() - 1) as f64 / (*last - *first).as_secs_f64()
    }

    /// The share of requests answered 429.
    pub fn refused_share(&self) -> f64 {
        self.refused as f64 / (self.refused + self.accepted.len()).max(1) as f64
    }
}

/// A judge that allows `per_second` requests in any sliding one-second
/// window and answers 429 beyond, reporting its budget as `reports` says.
pub fn sliding_window(
    provider: &'static str,
    per_second: usize,
    reports: Reports,
) -> (Handler, Arc<Mutex<Window>>) {
    shared_window(provider, per_second, reports, 0)
}

/// [`sliding_window`] whose budget another client also spends, at
/// `others_per_second` evenly spaced requests (call inside a runtime).
pub fn shared_window(
    provider: &'static str,
    per_second: usize,
    reports: Reports,
    others_per_second: usize,
) -> (Handler, Arc<Mutex<Window>>) {
    let recent = Arc::new(Mutex::new(std::collections::VecDeque::<Instant>::new()));
    if others_per_second > 0 {
        let other = recent.clone();
        let every = Duration::from_secs_f64(1.0 / others_per_second as f64);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let now = Instant::now();
                let mut r = other.lock().expect("recent");
                while r.front().is_some_and(|t| now - *t >= Duration::from_secs(1)) {
                    r.pop_front();
                }
                if r.len() < per_second {
                    r.push_back(now);
                }
            }
        });
    }
    let window: Arc<Mutex<Window>> = Arc::default();
    let tally = window.clone();
    let handler: Handler = Arc::new(move |req: &Recorded, _| {
        let now = Instant::now();
        let mut recent = recent.lock().expect("recent");
        while recent.front().is_some_and(|t| now - *t >= Duration::from_secs(1)) {
            recent.pop_front();
        }
        let accepted = recent.len() < per_second;
        if accepted {
            recent.push_back(now);
            tally.lock().expect("tally").accepted.push(now);
        } else {
            let mut t = tally.lock().expect("tally");
            t.refused += 1;
            t.refused_at.push(now);
        }
        // Whole again when the newest request leaves the window.
        let reset = recent.back().map(|t| Duration::from_secs(1).saturating_sub(now - *t));
        let mut headers: Vec<(String, String)> = Vec::new();
        if reports == Reports::Anthropic {
            let limit = (per_second * 60).to_string();
            headers.push(("anthropic-ratelimit-requests-limit".into(), limit));
            let left = (per_second - recent.len()).to_string();
            headers.push(("anthropic-ratelimit-requests-remaining".into(), left));
            if let Some(r) = reset {
                let at = rfc3339(std::time::SystemTime::now() + r);
                headers.push(("anthropic-ratelimit-requests-reset".into(), at));
            }
        }
        if reports == Reports::OpenAi {
            headers.push(("x-ratelimit-limit-requests".into(), (per_second * 60).to_string()));
            headers.push((
                "x-ratelimit-remaining-requests".into(),
                (per_second - recent.len()).to_string(),
            ));
            if let Some(r) = reset {
                headers.push(("x-ratelimit-reset-requests".into(), format!("{}ms", r.as_millis())));
            }
        }
        if !accepted {
            let oldest = recent.front().map(|t| Duration::from_secs(1).saturating_sub(now - *t));
            let wait = oldest.unwrap_or_default().as_millis().max(1);
            headers.push(("retry-after-ms".into(), wait.to_string()));
            return Action::Respond {
                status: 429,
                headers,
                body: r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
            };
        }
        let body = success_body(provider, &verdicts_json(&req.rubric_ids(), &|_| "PASS"));
        Action::Respond { status: 200, headers, body }
    });
    (handler, window)
}
