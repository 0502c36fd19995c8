//! HTTP for the batch endpoints: GET and POST with the judge's headers,
//! replies read with a size cap, and errors that say what the provider
//! said without a URL's query or a key.

use serde_json::Value;

use crate::judge::provider;

/// Why a batch request failed.
#[derive(Debug, Clone)]
pub struct WireError {
    /// What went wrong, for the user.
    pub message: String,
    /// Whether trying again later may work (a timeout, 429, 5xx).
    pub transient: Transient,
    /// The HTTP status, when the provider answered.
    pub status: Option<u16>,
}

/// Whether a failed batch request may work if tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transient {
    /// A timeout, a dropped connection, 408, 429, 5xx.
    Yes,
    /// The provider refused it.
    No,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl WireError {
    pub(super) fn format(message: impl Into<String>) -> WireError {
        WireError { message: message.into(), transient: Transient::No, status: None }
    }

    /// Whether the provider refused the request for its size: 413, or a
    /// 400 that says a limit on requests, bytes or tokens was passed
    /// (OpenAI's `too_many_tasks`, an upload over the file limit).
    pub fn too_large(&self) -> bool {
        match self.status {
            Some(413) => true,
            Some(400 | 422) => {
                let m = self.message.to_ascii_lowercase();
                [
                    "too large",
                    "too_large",
                    "too many",
                    "too_many",
                    "exceeds the maximum",
                    "exceeds the limit",
                    "maximum size",
                    "token_limit_exceeded",
                ]
                .iter()
                .any(|p| m.contains(p))
            }
            _ => false,
        }
    }
}

/// One provider's API as the batch code calls it.
pub(crate) struct Api<'a> {
    pub(super) http: &'a reqwest::Client,
    pub(super) headers: Vec<(&'static str, String)>,
    /// The largest reply read (results files are large).
    pub(super) max_bytes: u64,
    /// Bytes sent so far (what a batch run uploads).
    pub(super) sent: std::sync::atomic::AtomicU64,
}

/// A request body and its content type.
pub(crate) struct Payload {
    /// Its `content-type`.
    pub content_type: String,
    /// The body.
    pub bytes: Vec<u8>,
}

impl Payload {
    /// A JSON body.
    pub(crate) fn json(v: &Value) -> Payload {
        Payload {
            content_type: "application/json".into(),
            bytes: serde_json::to_vec(v).unwrap_or_default(),
        }
    }
}

impl Api<'_> {
    /// GET `url`, the body as text.
    pub(crate) async fn get(&self, url: &str) -> Result<String, WireError> {
        self.send(reqwest::Method::GET, url, None).await
    }

    /// POST `payload` to `url`, the body as text.
    pub(crate) async fn post(&self, url: &str, payload: Payload) -> Result<String, WireError> {
        self.send(reqwest::Method::POST, url, Some(payload)).await
    }

    /// POST JSON, the reply parsed.
    pub(crate) async fn post_json(&self, url: &str, body: &Value) -> Result<Value, WireError> {
        parse(&self.post(url, Payload::json(body)).await?)
    }

    /// GET, the reply parsed.
    pub(crate) async fn get_json(&self, url: &str) -> Result<Value, WireError> {
        parse(&self.get(url).await?)
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: &str,
        payload: Option<Payload>,
    ) -> Result<String, WireError> {
        let shown = url.split('?').next().unwrap_or(url).to_string();
        let mut req = self.http.request(method, url);
        for (name, value) in &self.headers {
            req = req.header(*name, value);
        }
        if let Some(p) = payload {
            self.sent.fetch_add(p.bytes.len() as u64, std::sync::atomic::Ordering::Relaxed);
            req = req.header("content-type", p.content_type).body(p.bytes);
        }
        let transport = |e: reqwest::Error| WireError {
            message: format!("{shown}: {}", e.without_url()),
            transient: Transient::Yes,
            status: None,
        };
        let mut resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(transport)? {
            if (body.len() + chunk.len()) as u64 > self.max_bytes {
                return Err(WireError::format(format!(
                    "{shown}: the reply is larger than {} bytes",
                    self.max_bytes
                )));
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if (200..300).contains(&status) {
            return Ok(text);
        }
        let transient = if matches!(status, 408 | 409 | 429) || status >= 500 {
            Transient::Yes
        } else {
            Transient::No
        };
        Err(WireError {
            message: format!(
                "{shown}: HTTP {status}: {}{}",
                provider::error_message(&text),
                error_code(&text)
            ),
            transient,
            status: Some(status),
        })
    }
}

/// The error's code or type, when the body names one: " (code)".
fn error_code(text: &str) -> String {
    let v: Option<Value> = serde_json::from_str(text).ok();
    v.as_ref()
        .and_then(|v| {
            v.pointer("/error/code")
                .or_else(|| v.pointer("/error/type"))
                .or_else(|| v.pointer("/error/status"))
        })
        .and_then(Value::as_str)
        .map(|c| format!(" ({c})"))
        .unwrap_or_default()
}

fn parse(text: &str) -> Result<Value, WireError> {
    serde_json::from_str(text)
        .map_err(|e| WireError::format(format!("the provider's reply is not JSON ({e})")))
}

/// How a batch's items are wrapped into one request body: written
/// straight into one buffer, so a batch of 190 MB is held once.
pub(crate) struct Envelope {
    /// Everything before the first item.
    pub prefix: Vec<u8>,
    /// Between two items.
    pub separator: &'static [u8],
    /// Everything after the last item.
    pub suffix: Vec<u8>,
    /// The body's `content-type`.
    pub content_type: String,
}

impl Envelope {
    /// A JSON body: `prefix`, items separated by commas, `suffix`.
    pub(crate) fn json(prefix: &str, suffix: &str) -> Envelope {
        Envelope {
            prefix: prefix.as_bytes().to_vec(),
            separator: b",",
            suffix: suffix.as_bytes().to_vec(),
            content_type: "application/json".into(),
        }
    }

    /// A multipart/form-data body with text fields and one JSONL file
    /// whose lines are the items.
    pub(crate) fn multipart_jsonl(
        fields: &[(&str, &str)],
        file_field: &str,
        filename: &str,
    ) -> Envelope {
        // The boundary only has to be absent from the parts; a JSONL file
        // of judge requests never holds this line.
        let boundary = "redjury-batch-9b0c7e2f5a3d4e1f8c6b";
        let mut prefix = String::new();
        for (name, value) in fields {
            prefix.push_str(&format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            ));
        }
        prefix.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{file_field}\"; filename=\"{filename}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        ));
        Envelope {
            prefix: prefix.into_bytes(),
            separator: b"\n",
            suffix: format!("\n\r\n--{boundary}--\r\n").into_bytes(),
            content_type: format!("multipart/form-data; boundary={boundary}"),
        }
    }

    /// Bytes the envelope adds around `n` items.
    pub(crate) fn overhead(&self, n: usize) -> usize {
        self.prefix.len() + self.suffix.len() + n.saturating_sub(1) * self.separator.len()
    }
}

/// A batch body being filled: items are appended as they are made.
pub(crate) struct Filling {
    bytes: Vec<u8>,
    items: usize,
    separator: &'static [u8],
}

impl Filling {
    /// An empty body in `envelope`.
    pub(crate) fn start(envelope: &Envelope) -> Filling {
        Filling { bytes: envelope.prefix.clone(), items: 0, separator: envelope.separator }
    }

    /// Appends one serialised item.
    pub(crate) fn push(&mut self, item: &[u8]) {
        if self.items > 0 {
            self.bytes.extend_from_slice(self.separator);
        }
        self.bytes.extend_from_slice(item);
        self.items += 1;
    }

    /// The finished body.
    pub(crate) fn finish(mut self, envelope: &Envelope) -> Payload {
        self.bytes.extend_from_slice(&envelope.suffix);
        Payload { content_type: envelope.content_type.clone(), bytes: self.bytes }
    }
}
