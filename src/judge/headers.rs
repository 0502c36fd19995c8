//! The rate-limit headers providers send with every reply: OpenAI's
//! `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (resets as Go
//! durations, "6m0s") and Anthropic's
//! `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`
//! (resets as RFC 3339 instants). Gemini sends none.
//!
//! Owns: reading them into one shape. Must never fail on what a server
//! sends: a header that does not parse is absent.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One budget as a reply described it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Budget {
    /// The limit per minute.
    pub limit: Option<u64>,
    /// What is left now.
    pub remaining: Option<u64>,
    /// How long until it is whole again.
    pub reset: Option<Duration>,
}

impl Budget {
    fn is_empty(&self) -> bool {
        self.limit.is_none() && self.remaining.is_none() && self.reset.is_none()
    }
}

/// Every budget a reply described.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct RateHeaders {
    /// Requests.
    pub requests: Option<Budget>,
    /// Tokens (OpenAI: input and output together).
    pub tokens: Option<Budget>,
    /// Anthropic's input tokens.
    pub input_tokens: Option<Budget>,
    /// Anthropic's output tokens.
    pub output_tokens: Option<Budget>,
}

impl RateHeaders {
    /// Reads the headers of a reply; `header` looks one up by name.
    pub(crate) fn read(header: &dyn Fn(&str) -> Option<String>) -> RateHeaders {
        let openai = |kind: &str| {
            let b = Budget {
                limit: header(&format!("x-ratelimit-limit-{kind}")).and_then(|v| count(&v)),
                remaining: header(&format!("x-ratelimit-remaining-{kind}"))
                    .and_then(|v| v.trim().parse().ok()),
                reset: header(&format!("x-ratelimit-reset-{kind}")).and_then(|v| go_duration(&v)),
            };
            (!b.is_empty()).then_some(b)
        };
        let anthropic = |kind: &str| {
            let h = |part: &str| header(&format!("anthropic-ratelimit-{kind}-{part}"));
            let b = Budget {
                limit: h("limit").and_then(|v| count(&v)),
                remaining: h("remaining").and_then(|v| v.trim().parse().ok()),
                reset: h("reset").and_then(|v| until_rfc3339(&v)),
            };
            (!b.is_empty()).then_some(b)
        };
        RateHeaders {
            requests: openai("requests").or_else(|| anthropic("requests")),
            tokens: openai("tokens").or_else(|| anthropic("tokens")),
            input_tokens: anthropic("input-tokens"),
            output_tokens: anthropic("output-tokens"),
        }
    }

    /// Whether the reply carried any budget.
    #[cfg(test)]
    fn any(&self) -> bool {
        self.requests.is_some()
            || self.tokens.is_some()
            || self.input_tokens.is_some()
            || self.output_tokens.is_some()
    }
}

/// A positive count (Azure sends -1 and 0 as placeholders).
fn count(v: &str) -> Option<u64> {
    v.trim().parse::<i64>().ok().filter(|n| *n > 0).map(|n| n as u64)
}

/// A Go duration: "12ms", "1s", "1.5s", "6m0s", "1h2m3s".
pub(crate) fn go_duration(v: &str) -> Option<Duration> {
    let mut rest = v.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    total.is_finite().then(|| Duration::from_secs_f64(total.max(0.0)))
}

/// The time from now until an RFC 3339 instant ("2026-01-01T00:00:42Z");
/// zero when it has passed.
pub(crate) fn until_rfc3339(v: &str) -> Option<Duration> {
    let at = rfc3339_seconds(v.trim())?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs_f64();
    Some(Duration::from_secs_f64((at - now).max(0.0)))
}

/// Seconds since the Unix epoch of an RFC 3339 date-time.
pub(crate) fn rfc3339_seconds(v: &str) -> Option<f64> {
    let (date, time) = v.split_once(['T', 't', ' '])?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => return None,
    };
    let mut c = clock.split(':');
    let (h, m) = (c.next()?.parse::<i64>().ok()?, c.next()?.parse::<i64>().ok()?);
    let s: f64 = c.next()?.parse().ok()?;
    let offset_secs = match offset {
        "Z" | "z" => 0,
        o => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let (oh, om) = o[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    let days = crate::calendar::days_from_civil(year, month, day);
    Some((days * 86_400 + h * 3600 + m * 60 - offset_secs) as f64 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("12ms"), Some(Duration::from_millis(12)));
        assert_eq!(go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("1h2m3s"), Some(Duration::from_secs(3723)));
        assert_eq!(go_duration("soon"), None);
        assert_eq!(go_duration(""), None);
    }

    #[test]
    fn rfc3339_instants() {
        assert_eq!(rfc3339_seconds("1970-01-02T00:00:00Z"), Some(86_400.0));
        assert_eq!(rfc3339_seconds("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(rfc3339_seconds("1970-01-01T00:00:01.5Z"), Some(1.5));
        assert_eq!(until_rfc3339("2000-01-01T00:00:00Z"), Some(Duration::ZERO), "passed");
        assert_eq!(rfc3339_seconds("tomorrow"), None);
    }

    #[test]
    fn both_providers_headers() {
        let openai = |name: &str| -> Option<String> {
            match name {
                "x-ratelimit-limit-requests" => Some("3000".into()),
                "x-ratelimit-remaining-requests" => Some("2999".into()),
                "x-ratelimit-reset-requests" => Some("20ms".into()),
                "x-ratelimit-limit-tokens" => Some("-1".into()),
                _ => None,
            }
        };
        let h = RateHeaders::read(&openai);
        let r = h.requests.expect("requests");
        assert_eq!(
            (r.limit, r.remaining, r.reset),
            (Some(3000), Some(2999), Some(Duration::from_millis(20)))
        );
        assert!(h.tokens.is_none(), "Azure's -1 placeholder is no limit");
        let anthropic = |name: &str| -> Option<String> {
            match name {
                "anthropic-ratelimit-requests-limit" => Some("50".into()),
                "anthropic-ratelimit-requests-remaining" => Some("49".into()),
                "anthropic-ratelimit-requests-reset" => Some("2000-01-01T00:00:00Z".into()),
                "anthropic-ratelimit-input-tokens-limit" => Some("50000".into()),
                _ => None,
            }
        };
        let h = RateHeaders::read(&anthropic);
        assert_eq!(h.requests.and_then(|r| r.limit), Some(50));
        assert_eq!(h.input_tokens.and_then(|r| r.limit), Some(50_000));
        assert!(h.output_tokens.is_none());
        assert!(!RateHeaders::read(&|_| None).any());
    }
}
