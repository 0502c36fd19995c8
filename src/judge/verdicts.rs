//! Reading a judge's reply into per-rubric votes.
//!
//! Owns: tolerant parsing (```json fences, prose around one JSON object)
//! and the rules for odd replies: unknown ids ignored, duplicate ids → the
//! first wins, a missing rubric or an invalid verdict → that judge abstains
//! on that rubric with the reason. Must never turn an abstention into FAIL.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::verdict::Verdict;

/// One judge's say on one rubric.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JudgeVote {
    /// PASS or FAIL, with the judge's reason.
    Verdict {
        /// PASS or FAIL.
        verdict: Verdict,
        /// The judge's one-sentence reason.
        justification: String,
    },
    /// No verdict, and why.
    Abstain {
        /// Why there is no verdict.
        reason: String,
    },
}

impl JudgeVote {
    /// The verdict, if the judge gave one.
    pub fn verdict(&self) -> Option<Verdict> {
        match self {
            JudgeVote::Verdict { verdict, .. } => Some(*verdict),
            JudgeVote::Abstain { .. } => None,
        }
    }
}

/// Finds the one JSON object in a reply: inside a ```json fence if there is
/// one, else from the first `{` to its matching `}`.
pub(crate) fn extract_json(text: &str) -> Option<&str> {
    let mut body = text.trim();
    if let Some(start) = body.find("```") {
        let after = &body[start + 3..];
        let after =
            after.strip_prefix("json").or_else(|| after.strip_prefix("JSON")).unwrap_or(after);
        if let Some(end) = after.find("```") {
            body = after[..end].trim();
        }
    }
    let start = body.find('{')?;
    let bytes = body.as_bytes();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&body[start..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Parses a reply into a vote for each of `rubric_ids`. `Err` (a failed
/// attempt) when the reply holds no usable verdict at all.
pub(crate) fn parse(
    text: &str,
    rubric_ids: &[String],
) -> Result<BTreeMap<String, JudgeVote>, String> {
    let json = extract_json(text)
        .ok_or_else(|| format!("reply holds no JSON object: {}", preview(text)))?;
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| format!("reply is not valid JSON ({e}): {}", preview(text)))?;
    let items = value
        .get("verdicts")
        .and_then(|v| v.as_array())
        .ok_or_else(|| format!("reply has no \"verdicts\" list: {}", preview(text)))?;
    let mut votes: BTreeMap<String, JudgeVote> = BTreeMap::new();
    for item in items {
        let id = match item.get("rubric_id").or_else(|| item.get("id")) {
            Some(serde_json::Value::String(s)) => s.trim().to_string(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => continue,
        };
        if !rubric_ids.contains(&id) || votes.contains_key(&id) {
            continue; // unknown id ignored; duplicate: the first wins
        }
        let raw = item.get("verdict").and_then(|v| v.as_str()).unwrap_or("");
        let justification =
            item.get("justification").and_then(|v| v.as_str()).unwrap_or("").trim().to_string();
        let vote = match Verdict::parse(&raw.trim().to_ascii_uppercase()) {
            Some(verdict) => JudgeVote::Verdict { verdict, justification },
            None => JudgeVote::Abstain { reason: format!("invalid verdict {:?}", preview(raw)) },
        };
        votes.insert(id, vote);
    }
    if !votes.values().any(|v| v.verdict().is_some()) {
        return Err(format!("reply holds no usable verdict for any rubric: {}", preview(text)));
    }
    for id in rubric_ids {
        votes.entry(id.clone()).or_insert_with(|| JudgeVote::Abstain {
            reason: "the judge returned no verdict for this rubric".into(),
        });
    }
    Ok(votes)
}

fn preview(text: &str) -> String {
    let t: String = text.chars().take(160).collect();
    if text.chars().count() > 160 { format!("{t}…") } else { t }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Vec<String> {
        vec!["r1".into(), "r2".into(), "r3".into()]
    }

    #[test]
    fn fenced_json_with_prose_odd_ids_and_bad_verdicts() {
        let reply = "Sure! Here is my grading:\n```json\n{\"verdicts\": [\
            {\"rubric_id\": \"r1\", \"verdict\": \"PASS\", \"justification\": \"Inserts it at p-012 {braces} \\\"quoted\\\".\"},\
            {\"rubric_id\": \"r1\", \"verdict\": \"FAIL\", \"justification\": \"duplicate\"},\
            {\"rubric_id\": \"r9\", \"verdict\": \"PASS\", \"justification\": \"unknown\"},\
            {\"rubric_id\": \"r2\", \"verdict\": \"MAYBE\", \"justification\": \"?\"}]}\n```\nHope this helps.";
        let v = parse(reply, &ids()).expect("usable");
        assert_eq!(
            v["r1"],
            JudgeVote::Verdict {
                verdict: Verdict::Pass,
                justification: "Inserts it at p-012 {braces} \"quoted\".".into()
            }
        );
        assert_eq!(v["r2"], JudgeVote::Abstain { reason: "invalid verdict \"MAYBE\"".into() });
        assert_eq!(
            v["r3"],
            JudgeVote::Abstain { reason: "the judge returned no verdict for this rubric".into() }
        );
        assert!(!v.contains_key("r9"));
    }

    #[test]
    fn prose_around_a_bare_object() {
        let v = parse("I think {\"verdicts\":[{\"rubric_id\":\"r3\",\"verdict\":\"fail\",\"justification\":\"x\"}]} done", &ids())
            .expect("usable");
        assert_eq!(v["r3"].verdict(), Some(Verdict::Fail));
    }

    #[test]
    fn unusable_replies_are_failed_attempts() {
        assert!(parse("no json here", &ids()).unwrap_err().contains("no JSON object"));
        assert!(parse("{\"verdicts\": [", &ids()).is_err());
        assert!(parse("{\"answer\": 1}", &ids()).unwrap_err().contains("no \"verdicts\" list"));
        assert!(
            parse("{\"verdicts\": [{\"rubric_id\": \"r1\", \"verdict\": \"YES\"}]}", &ids())
                .unwrap_err()
                .contains("no usable verdict")
        );
    }
}
