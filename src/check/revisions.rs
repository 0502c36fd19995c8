//! `no_format_changes` and `revisions_remaining`: counts of tracked changes.

use super::{Facts, Outcome, by, verdict};
use crate::docx::RevisionKind;

pub(super) fn no_format_changes(facts: &Facts<'_>, author: Option<&str>) -> Outcome {
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for r in facts.doc.revisions.iter().filter(|r| r.kind.is_format()) {
        if by(author, r.author.as_deref()) {
            *kinds.entry(kind_name(r.kind)).or_default() += 1;
        }
    }
    let n: usize = kinds.values().sum();
    let reason = if n == 0 {
        "no formatting or property revisions".into()
    } else {
        let each: Vec<String> = kinds.iter().map(|(k, c)| format!("{c} {k}")).collect();
        format!("{n} formatting or property revision(s): {}", each.join(", "))
    };
    verdict(n == 0, reason)
}

/// A kind as task files write it ("run_format", "table_grid").
fn kind_name(kind: RevisionKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

pub(super) fn remaining(
    facts: &Facts<'_>,
    kinds: &[RevisionKind],
    author: Option<&str>,
    min: Option<u32>,
    max: Option<u32>,
) -> Outcome {
    let n = facts
        .doc
        .revisions
        .iter()
        .filter(|r| {
            (kinds.is_empty() || kinds.contains(&r.kind)) && by(author, r.author.as_deref())
        })
        .count() as u32;
    let ok = min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m);
    let what = if kinds.is_empty() {
        "tracked changes".to_string()
    } else {
        kinds.iter().map(|k| kind_name(*k)).collect::<Vec<_>>().join("/")
    };
    let whose = author.map(|a| format!(" by {a}")).unwrap_or_default();
    verdict(ok, format!("{n} {what}{whose} remain (wanted {})", bounds(min, max)))
}

/// "exactly 1", "1 to 3", "≥ 1", "≤ 3" or "any".
pub(super) fn bounds(min: Option<u32>, max: Option<u32>) -> String {
    match (min, max) {
        (Some(a), Some(b)) if a == b => format!("exactly {a}"),
        (Some(a), Some(b)) => format!("{a} to {b}"),
        (Some(a), None) => format!("≥ {a}"),
        (None, Some(b)) => format!("≤ {b}"),
        (None, None) => "any".into(),
    }
}
