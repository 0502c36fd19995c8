//! One check item run as a task file writes it, and what it must answer:
//! the one helper `checks.rs` and `family.rs` share.
use std::path::{Path, PathBuf};

use redjury::docx::Document;
use redjury::{PreparedCheck, Verdict};
use serde_json::Value;

/// The task a check runs in: its input, its author, and the folder its
/// gold paths are relative to.
pub struct On<'a> {
    pub input: Option<&'a Document>,
    pub author: &'a str,
    pub base: PathBuf,
}

impl Default for On<'_> {
    fn default() -> Self {
        On { input: None, author: "A", base: PathBuf::from(".") }
    }
}

/// The verdict and reason of `check` (as JSON, validated as a task file's)
/// on `doc`.
pub fn verdict(check: &Value, doc: &Document, on: &On<'_>) -> (Verdict, String) {
    let prepared = PreparedCheck::from_json(check, Path::new(&on.base))
        .unwrap_or_else(|e| panic!("{check}: {e}"));
    redjury::evaluate_check(&prepared, doc, on.input, on.author)
}

/// Asserts `check` passes on `doc` (author "A"); its reason.
pub fn pass(check: Value, doc: &Document) -> String {
    let (v, why) = verdict(&check, doc, &On::default());
    assert_eq!(v, Verdict::Pass, "{check}: {why}");
    why
}

/// Asserts `check` fails on `doc` (author "A") and says `says`.
pub fn fail(check: Value, doc: &Document, says: &str) {
    let (v, why) = verdict(&check, doc, &On::default());
    assert_eq!(v, Verdict::Fail, "{check}: {why}");
    assert!(why.contains(says), "{check}: {why:?} should say {says:?}");
}
