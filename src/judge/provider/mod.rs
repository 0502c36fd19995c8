//! Each provider's wire format: how a prompt becomes an HTTP request, how a
//! response body becomes reply text, usage and abstentions, and which error
//! replies mean that no call to the judge can succeed.
//!
//! Ground truth is the current official SDKs (openai, anthropic,
//! google-genai on PyPI); one file per provider holds its request and its
//! response parsing. Owns: request bodies, response parsing, usage
//! normalisation, error classification. Must never put the API key
//! anywhere but the request header it belongs in.

mod anthropic;
mod gemini;
mod openai;

use serde_json::{Value, json};

use super::config::{JudgeConfig, Provider};
pub(crate) use crate::cache::Usage;
use crate::prompt::Prompt;

/// What a successful (2xx) response said.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    /// Text to parse for verdicts (a JSON object, possibly wrapped).
    /// Text to parse for verdicts (a JSON object, possibly wrapped).
    Text {
        /// The text.
        text: String,
        /// What it was billed.
        usage: Usage,
    },
    /// The provider answered but declined: a refusal or a safety block.
    /// The judge abstains on every rubric with this reason.
    /// The provider answered but declined: a refusal or a safety block.
    Declined {
        /// Why, as the provider said.
        reason: String,
        /// What it was billed.
        usage: Usage,
    },
}

/// A 2xx reply that holds no usable answer (truncated, empty, not the
/// provider's format): a failed attempt, retried and never cached, whose
/// tokens were billed all the same.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unusable {
    /// Why the reply cannot be used.
    pub message: String,
    /// What it was billed.
    pub usage: Usage,
}

impl Unusable {
    fn new(message: impl Into<String>, usage: Usage) -> Unusable {
        Unusable { message: message.into(), usage }
    }
}

/// What an error reply means for the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// Try again later (429, 5xx, 408, 409, overloaded).
    Retryable,
    /// This call cannot succeed (a prompt too long, a bad request).
    Fatal,
    /// No call to this judge can succeed: a bad key, no access, no such
    /// model or base_url, no quota. Traffic to it stops for the run.
    JudgeDown,
}

/// An HTTP request, ready to send. The body is serialised once, here, and
/// `content-type` is among the headers exactly once.
pub(crate) struct Request {
    /// Where to send it.
    pub url: String,
    /// Its headers, the key's among them.
    pub headers: Vec<(&'static str, String)>,
    /// The serialised body.
    pub body: Vec<u8>,
}

pub(crate) const TOOL_NAME: &str = "record_verdicts";

/// The verdict object every provider is asked for. Properties are in the
/// order the model should write them — name the rubric, reason, then
/// decide — and `required` lists them in that order too (Gemini takes its
/// `propertyOrdering` from it).
pub(crate) fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "rubric_id": {"type": "string"},
                        "justification": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["PASS", "FAIL"]}
                    },
                    "required": ["rubric_id", "justification", "verdict"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["verdicts"],
        "additionalProperties": false
    })
}

/// The request for one call. `key` is `None` for a server that needs none.
pub(crate) fn build(judge: &JudgeConfig, key: Option<&str>, prompt: &Prompt) -> Request {
    let (url, mut headers, body) = match judge.provider {
        Provider::Openai => openai::request(judge, key, prompt),
        Provider::Anthropic => anthropic::request(judge, key, prompt),
        Provider::Gemini => gemini::request(judge, key, prompt),
    };
    headers.push(("content-type", "application/json".into()));
    // A Value of strings and numbers always serialises.
    let body = serde_json::to_vec(&body).unwrap_or_default();
    Request { url, headers, body }
}

/// A call's request body alone (a batch item carries it).
pub(crate) fn body(judge: &JudgeConfig, prompt: &Prompt) -> Value {
    match judge.provider {
        Provider::Openai => openai::body(judge, prompt),
        Provider::Anthropic => anthropic::body(judge, prompt),
        Provider::Gemini => gemini::body(judge, prompt),
    }
}

/// The headers (the key's among them) every request to the provider's
/// API carries, batch endpoints included.
pub(crate) fn auth_headers(judge: &JudgeConfig, key: Option<&str>) -> Vec<(&'static str, String)> {
    match judge.provider {
        Provider::Openai => openai::headers(key),
        Provider::Anthropic => anthropic::headers(judge, key),
        Provider::Gemini => gemini::headers(key),
    }
}

/// Parses a 2xx body.
pub(crate) fn parse(provider: Provider, body: &str) -> Result<Reply, Unusable> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| Unusable::new(format!("response body is not JSON ({e})"), Usage::default()))?;
    match provider {
        Provider::Openai => openai::parse(&v),
        Provider::Anthropic => anthropic::parse(&v),
        Provider::Gemini => gemini::parse(&v),
    }
}

/// Classifies an error reply by its status and the provider's documented
/// error codes (a bad key is not always a 401: Gemini answers 400
/// `API_KEY_INVALID`).
pub(crate) fn classify(provider: Provider, status: u16, body: &str) -> ErrorClass {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let down = matches!(status, 401 | 403 | 404)
        || match provider {
            Provider::Openai => openai::judge_down(&v),
            Provider::Anthropic => anthropic::judge_down(&v),
            Provider::Gemini => gemini::judge_down(&v),
        };
    if down {
        ErrorClass::JudgeDown
    } else if matches!(status, 408 | 409 | 429) || status >= 500 {
        ErrorClass::Retryable
    } else {
        ErrorClass::Fatal
    }
}

/// The human-readable message inside an error body, whatever the provider.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let msg = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.pointer("/0/error/message"))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let msg = msg.unwrap_or_else(|| body.chars().take(200).collect());
    msg.trim().to_string()
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(provider: Provider) -> JudgeConfig {
        JudgeConfig::new("j", provider, "m")
    }

    fn prompt() -> Prompt {
        Prompt::new("sys".into(), "prefix".into(), "rubrics".into(), vec!["r1".into()], "v".into())
    }

    #[test]
    fn content_type_is_sent_once_and_the_key_only_in_its_header() {
        for provider in [Provider::Openai, Provider::Anthropic, Provider::Gemini] {
            let r = build(&config(provider), Some("sk-SECRET"), &prompt());
            assert_eq!(
                r.headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case("content-type")).count(),
                1
            );
            assert_eq!(r.headers.iter().filter(|(_, v)| v.contains("sk-SECRET")).count(), 1);
            assert!(!String::from_utf8_lossy(&r.body).contains("sk-SECRET"));
            assert!(!r.url.contains("sk-SECRET"));
            let keyless = build(&config(provider), None, &prompt());
            assert_eq!(keyless.headers.len(), r.headers.len() - 1, "no auth header without a key");
        }
    }

    #[test]
    fn every_provider_gets_the_schema_properties_in_one_order() {
        let order = ["rubric_id", "justification", "verdict"];
        let keys = |v: &Value| -> Vec<String> {
            v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
        };
        let body = |p| -> Value {
            serde_json::from_slice(&build(&config(p), Some("k"), &prompt()).body)
                .unwrap_or(Value::Null)
        };
        let openai = body(Provider::Openai);
        assert_eq!(
            keys(
                &openai["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["items"]
                    ["properties"]
            ),
            order
        );
        let claude = body(Provider::Anthropic);
        assert_eq!(
            keys(
                &claude["tools"][0]["input_schema"]["properties"]["verdicts"]["items"]["properties"]
            ),
            order
        );
        let gemini = body(Provider::Gemini);
        let item = &gemini["generationConfig"]["responseSchema"]["properties"]["verdicts"]["items"];
        assert_eq!(keys(&item["properties"]), order);
        assert_eq!(item["propertyOrdering"], json!(order));
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            error_message(
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
            ),
            "Incorrect API key provided"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
    }

    #[test]
    fn bad_keys_whatever_the_status() {
        let gemini_bad_key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#;
        assert_eq!(classify(Provider::Gemini, 400, gemini_bad_key), ErrorClass::JudgeDown);
        let too_long = r#"{"error":{"code":400,"message":"The input token count exceeds the maximum","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(classify(Provider::Gemini, 400, too_long), ErrorClass::Fatal);
        let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        assert_eq!(classify(Provider::Openai, 429, quota), ErrorClass::JudgeDown);
        let gateway = r#"{"error":{"message":"Invalid API key","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(classify(Provider::Openai, 400, gateway), ErrorClass::JudgeDown);
        let model = r#"{"error":{"message":"The model `x` does not exist","type":"invalid_request_error","code":"model_not_found"}}"#;
        assert_eq!(classify(Provider::Openai, 400, model), ErrorClass::JudgeDown);
        let claude = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(classify(Provider::Anthropic, 400, claude), ErrorClass::JudgeDown);
        let rate = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(classify(Provider::Anthropic, 429, rate), ErrorClass::Retryable);
        assert_eq!(classify(Provider::Anthropic, 529, "{}"), ErrorClass::Retryable);
        assert_eq!(classify(Provider::Openai, 404, "not json"), ErrorClass::JudgeDown);
        assert_eq!(classify(Provider::Openai, 413, "{}"), ErrorClass::Fatal);
    }
}
