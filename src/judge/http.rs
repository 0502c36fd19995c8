//! One HTTP exchange with a judge: send, read a reply of bounded size, and
//! read the server's retry hints.
//!
//! Owns: the transport and its limits. Must never read a reply whole into
//! memory before knowing it fits, and never put a URL or key in an error.

use std::time::Duration;

use super::headers::RateHeaders;
use super::provider::Request;

/// A reply as received: status, the headers we use, body text.
pub(super) struct Received {
    pub status: u16,
    pub body: String,
    /// How long the server asked us to wait (`retry-after-ms`,
    /// `Retry-After` in seconds or as an HTTP date, Gemini's `retryDelay`).
    pub retry_after: Option<Duration>,
    /// `x-should-retry`, when the server sent it.
    pub should_retry: Option<bool>,
    /// The rate-limit budgets the reply reported.
    pub limits: RateHeaders,
}

/// Why no reply was received.
#[non_exhaustive]
pub(super) enum TransportError {
    Timeout,
    /// No connection could be made (refused, no route, no such host): the
    /// operating system's reason.
    Unreachable(String),
    /// The connection broke after it was made.
    Connection(String),
    TooLarge {
        limit: u64,
    },
}

/// Sends `req` and reads the reply, refusing one larger than `max_bytes`.
pub(super) async fn exchange(
    client: &reqwest::Client,
    req: &Request,
    max_bytes: u64,
) -> Result<Received, TransportError> {
    let mut builder = client.post(&req.url).body(req.body.clone());
    for (name, value) in &req.headers {
        builder = builder.header(*name, value);
    }
    let mut response = builder.send().await.map_err(transport)?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    if response.content_length().is_some_and(|n| n > max_bytes) {
        return Err(TransportError::TooLarge { limit: max_bytes });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport)? {
        if (body.len() + chunk.len()) as u64 > max_bytes {
            return Err(TransportError::TooLarge { limit: max_bytes });
        }
        body.extend_from_slice(&chunk);
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    let header = |h: &str| headers.get(h).and_then(|v| v.to_str().ok()).map(str::trim);
    let retry_after = header("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .map(|ms| ms / 1000.0)
        .or_else(|| header("retry-after").and_then(|v| v.parse::<f64>().ok()))
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
        .or_else(|| header("retry-after").and_then(http_date_delay))
        .or_else(|| retry_delay_in_body(&body));
    let should_retry = match header("x-should-retry") {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let limits = RateHeaders::read(&|name: &str| header(name).map(str::to_string));
    Ok(Received { status, body, retry_after, should_retry, limits })
}

fn transport(e: reqwest::Error) -> TransportError {
    if e.is_timeout() {
        return TransportError::Timeout;
    }
    // reqwest's own words ("error sending request") say nothing of why:
    // the innermost cause is the operating system's ("Connection refused
    // (os error 111)"). The caller names the URL.
    let mut cause: &dyn std::error::Error = &e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let why = cause.to_string();
    if e.is_connect() { TransportError::Unreachable(why) } else { TransportError::Connection(why) }
}

/// `Retry-After` as an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"): the
/// time from now until then (zero if it has passed).
pub(super) fn http_date_delay(value: &str) -> Option<Duration> {
    // IMF-fixdate and the two obsolete forms RFC 9110 §5.6.7 says a
    // recipient must accept.
    let at = httpdate::parse_http_date(value.trim()).ok()?;
    Some(at.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

/// Gemini's 429 bodies carry `RetryInfo.retryDelay` ("38s").
fn retry_delay_in_body(body: &str) -> Option<Duration> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let details = v.pointer("/error/details")?.as_array()?;
    details.iter().find_map(|d| {
        let delay = d.get("retryDelay")?.as_str()?;
        let secs: f64 = delay.trim_end_matches('s').parse().ok()?;
        (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        assert_eq!(http_date_delay("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Duration::ZERO));
        assert_eq!(http_date_delay("Sunday, 06-Nov-94 08:49:37 GMT"), Some(Duration::ZERO));
        assert_eq!(http_date_delay("tomorrow"), None);
        let soon = std::time::SystemTime::now() + Duration::from_secs(3600);
        let delay = http_date_delay(&httpdate::fmt_http_date(soon)).unwrap();
        assert!(delay > Duration::from_secs(3590) && delay <= Duration::from_secs(3600));
    }

    #[test]
    fn retry_info_in_gemini_bodies() {
        let gemini = r#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"38s"}]}}"#;
        assert_eq!(retry_delay_in_body(gemini), Some(Duration::from_secs(38)));
    }
}
