//! PASS or FAIL: what a judge, a check or the panel says of one rubric.
//!
//! A vocabulary module: it depends on nothing in the crate, so that checks,
//! judges and the panel can all speak of verdicts without looking
//! downstream. Must never grow a third value: an abstention is the absence
//! of a verdict (`Option<Verdict>`), never a kind of one.

use serde::{Deserialize, Serialize};

/// PASS or FAIL, as a judge, a check or the panel gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    /// The criterion is met (for a penalty rubric: the undesirable edit is present).
    Pass,
    /// The criterion is not met.
    Fail,
}

impl Verdict {
    /// Reads `PASS` or `FAIL` exactly (callers normalise case first when
    /// they accept other spellings).
    pub fn parse(s: &str) -> Option<Verdict> {
        match s {
            "PASS" => Some(Verdict::Pass),
            "FAIL" => Some(Verdict::Fail),
            _ => None,
        }
    }

    /// `PASS` or `FAIL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
        }
    }

    /// PASS when `pass` holds.
    pub fn from_pass(pass: bool) -> Verdict {
        if pass { Verdict::Pass } else { Verdict::Fail }
    }
}
