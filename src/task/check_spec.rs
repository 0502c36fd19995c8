//! What a deterministic check asks, as a task file writes it: the typed
//! parameters of every check type, validated when tasks load.
//!
//! Owns: the check schema (`"kind": "check"` items), parameter validation
//! (regexes compiled, gold documents loaded) and each check's fingerprint.
//! Must never evaluate a check (that is `crate::check`'s job) and never
//! accept a parameter it does not know: a typo is an error naming it.

use std::path::Path;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::docx::{self, Document, RevisionKind};

/// Whose changes the `author` check accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorMode {
    /// At least one change or comment, and every one by the authors.
    #[default]
    All,
    /// None by anyone else (none at all passes).
    Only,
    /// At least one by the authors.
    Any,
}

/// Which text `contains` / `not_contains` search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Text inserted by tracked changes (and not deleted again).
    Inserted,
    /// Text deleted by tracked changes.
    Deleted,
    /// The document's text with every change accepted.
    Accepted,
}

/// A check as written in a task file (see README "Checks").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum CheckSpec {
    /// Who made the tracked changes and comments.
    Author {
        /// The authors whose changes count.
        authors: Vec<String>,
        #[serde(default)]
        /// How the authors must relate to everyone else's changes.
        mode: AuthorMode,
        #[serde(default = "yes")]
        /// Whether comments count as changes.
        include_comments: bool,
    },
    /// The author's changes stay inside the named sections.
    Scope {
        /// Section labels ("8", "9.2") the changes must stay in.
        sections: Vec<String>,
        #[serde(default)]
        /// Whose changes (default: the task's author).
        author: Option<String>,
    },
    /// No tracked formatting change.
    NoFormatChanges {
        #[serde(default)]
        /// Whose changes (default: anyone's).
        author: Option<String>,
    },
    /// How many tracked changes of some kinds remain.
    RevisionsRemaining {
        #[serde(default)]
        /// The kinds of change counted (default: all).
        kinds: Vec<RevisionKind>,
        #[serde(default)]
        /// Whose changes (default: anyone's).
        author: Option<String>,
        #[serde(default)]
        /// At least this many.
        min: Option<u32>,
        #[serde(default)]
        /// At most this many.
        max: Option<u32>,
    },
    /// The accepted text (of a section) equals a gold text.
    AcceptedTextEquals {
        #[serde(default)]
        /// The section compared (default: the whole document).
        section: Option<String>,
        #[serde(default)]
        /// The gold text.
        text: Option<String>,
        #[serde(default)]
        /// A gold .docx whose accepted text is the gold (relative to the task file).
        gold_docx: Option<String>,
        #[serde(default)]
        /// Pass at this token F1 instead of exact equality.
        min_f1: Option<f64>,
    },
    /// Token F1 of the inserted and deleted text against a gold redline.
    RevisionSetF1 {
        /// The gold redline (relative to the task file).
        gold_docx: String,
        /// The token F1 to reach.
        min_f1: f64,
        #[serde(default)]
        /// Whose changes on both sides (default: anyone's).
        author: Option<String>,
    },
    /// How many comments match.
    Comment(CommentSpec),
    /// A regex matches some text.
    Contains(Pattern),
    /// A regex matches no text.
    NotContains(Pattern),
}

/// The parameters of the `comment` check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommentSpec {
    #[serde(default)]
    /// The comments' author (default: anyone).
    pub author: Option<String>,
    #[serde(default)]
    /// The section they are anchored in.
    pub section: Option<String>,
    #[serde(default)]
    /// Text they contain (case-insensitive).
    pub contains: Option<String>,
    #[serde(default)]
    /// Text they equal (whitespace-normalised).
    pub equals: Option<String>,
    #[serde(default)]
    /// Replies only (true) or top-level comments only (false).
    pub reply: Option<bool>,
    #[serde(default)]
    /// Resolved (true) or open (false) comments only.
    pub resolved: Option<bool>,
    #[serde(default)]
    /// At least this many (default 1).
    pub min: Option<u32>,
    #[serde(default)]
    /// At most this many.
    pub max: Option<u32>,
}

/// The parameters of `contains` and `not_contains`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// The regex.
    pub pattern: String,
    #[serde(rename = "in")]
    /// Which text it searches.
    pub target: Target,
    #[serde(default)]
    /// The section searched (default: the whole body).
    pub section: Option<String>,
    #[serde(default)]
    /// Whose changes (inserted/deleted text only; default: anyone's).
    pub author: Option<String>,
}

fn yes() -> bool {
    true
}

/// Why a check's parameters are not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckSpecError {
    /// The object does not fit the schema (unknown type or field, wrong value type).
    #[error("check: {0}")]
    Schema(String),
    /// One parameter's value is wrong; the message says how.
    #[error("check parameter `{param}`: {message}")]
    Parameter {
        /// The parameter's name.
        param: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

fn param<T>(param: &'static str, message: impl Into<String>) -> Result<T, CheckSpecError> {
    Err(CheckSpecError::Parameter { param, message: message.into() })
}

/// A check ready to run: its regex compiled and its gold document loaded.
#[derive(Debug, Clone)]
pub struct PreparedCheck {
    /// The parameters as written.
    pub spec: CheckSpec,
    pub(crate) regex: Option<Regex>,
    pub(crate) gold: Option<Arc<Document>>,
    /// SHA-256 of the parameters and of the gold document's bytes: what
    /// the verdict depends on besides the output (keys cached verdicts).
    pub fingerprint: String,
}

impl PreparedCheck {
    /// Validates a check's parameters; `base` resolves `gold_docx` paths.
    pub fn from_json(
        value: &serde_json::Value,
        base: &Path,
    ) -> Result<PreparedCheck, CheckSpecError> {
        let spec: CheckSpec = serde_json::from_value(value.clone())
            .map_err(|e| CheckSpecError::Schema(e.to_string()))?;
        let mut fingerprint = serde_json::to_string(&spec).unwrap_or_default();
        let mut regex = None;
        let mut gold = None;
        let mut load_gold = |rel: &str| -> Result<Arc<Document>, CheckSpecError> {
            let (doc, sha) = load_gold(&base.join(rel))?;
            fingerprint.push_str(&sha);
            Ok(doc)
        };
        match &spec {
            CheckSpec::Author { authors, .. } => {
                if authors.iter().all(|a| a.trim().is_empty()) {
                    return param("authors", "name at least one author");
                }
            }
            CheckSpec::Scope { sections, .. } => {
                if sections.is_empty() || sections.iter().any(|s| s.trim().is_empty()) {
                    return param(
                        "sections",
                        "list at least one section label, e.g. [\"8\", \"9.2\"]",
                    );
                }
            }
            CheckSpec::NoFormatChanges { .. } => {}
            CheckSpec::RevisionsRemaining { min, max, .. } => {
                check_bounds(*min, *max)?;
                if min.is_none() && max.is_none() {
                    return param("max", "give min, max or both");
                }
            }
            CheckSpec::Comment(c) => {
                check_bounds(c.min, c.max)?;
                if c.contains.is_some() && c.equals.is_some() {
                    return param("equals", "give contains or equals, not both");
                }
            }
            CheckSpec::AcceptedTextEquals { text, gold_docx, min_f1, .. } => {
                match (text, gold_docx) {
                    (Some(_), None) => {}
                    (None, Some(g)) => gold = Some(load_gold(g)?),
                    _ => return param("text", "give exactly one of text and gold_docx"),
                }
                if let Some(f) = min_f1 {
                    check_f1(*f)?;
                }
            }
            CheckSpec::RevisionSetF1 { gold_docx, min_f1, .. } => {
                check_f1(*min_f1)?;
                gold = Some(load_gold(gold_docx)?);
            }
            CheckSpec::Contains(Pattern { pattern, .. })
            | CheckSpec::NotContains(Pattern { pattern, .. }) => {
                let compiled = Regex::new(pattern).map_err(|e| CheckSpecError::Parameter {
                    param: "pattern",
                    message: format!("invalid regex: {e}"),
                })?;
                regex = Some(compiled);
            }
        }
        let fingerprint = crate::hash::sha256_hex(&fingerprint);
        Ok(PreparedCheck { spec, regex, gold, fingerprint })
    }
}

fn check_bounds(min: Option<u32>, max: Option<u32>) -> Result<(), CheckSpecError> {
    match (min, max) {
        (Some(a), Some(b)) if a > b => param("min", format!("{a} is greater than max {b}")),
        _ => Ok(()),
    }
}

fn check_f1(v: f64) -> Result<(), CheckSpecError> {
    if v > 0.0 && v <= 1.0 { Ok(()) } else { param("min_f1", format!("{v} is not within (0, 1]")) }
}

/// Loads a gold document and the hash of its bytes.
fn load_gold(path: &Path) -> Result<(Arc<Document>, String), CheckSpecError> {
    let bytes = std::fs::read(path).map_err(|e| CheckSpecError::Parameter {
        param: "gold_docx",
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    let sha = crate::hash::sha256_hex_bytes(&bytes);
    let doc = docx::from_bytes(bytes, docx::Limits::default()).map_err(|e| {
        CheckSpecError::Parameter {
            param: "gold_docx",
            message: format!("{}: {e}", path.display()),
        }
    })?;
    Ok((Arc::new(doc), sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(v: serde_json::Value) -> String {
        PreparedCheck::from_json(&v, Path::new("."))
            .map(|_| ())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn parameters_are_validated_with_their_name() {
        use serde_json::json;
        let e = err(json!({"type": "contains", "pattern": "(", "in": "inserted"}));
        assert!(e.starts_with("check parameter `pattern`: invalid regex"), "{e}");
        assert!(
            err(json!({"type": "scope", "sections": []})).starts_with("check parameter `sections`")
        );
        assert!(
            err(json!({"type": "revisions_remaining", "min": 3, "max": 1}))
                .starts_with("check parameter `min`")
        );
        let e = err(json!({"type": "accepted_text_equals", "gold_docx": "nope.docx"}));
        assert!(e.starts_with("check parameter `gold_docx`: cannot read ./nope.docx"), "{e}");
        assert!(
            err(json!({"type": "author", "authors": ["A"], "colour": 1}))
                .contains("unknown field `colour`")
        );
        assert!(err(json!({"type": "teleport"})).contains("unknown variant `teleport`"));
        assert!(
            err(json!({"type": "comment", "contains": "a", "equals": "b"}))
                .starts_with("check parameter `equals`")
        );
        assert_eq!(err(json!({"type": "no_format_changes"})), "");
    }
}
