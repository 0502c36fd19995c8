//! `numbering`: the list labels of a section (or the body), in the state
//! with every change accepted, are consecutive at a level — no gap and no
//! repeat (7.3, 7.4, … 7.8 after a clause is deleted) — restarting only
//! under a new parent.

use super::{Facts, Outcome, verdict};
use crate::docx::State;

/// The counter a label shows at its last level: "7.3" → 3, "(c)" → 3,
/// "iv." → 4 (roman when `roman`), "Article 12" → 12.
fn value(label: &str, roman: bool) -> Option<i64> {
    let core = label.trim().trim_end_matches(['.', ')', ':']).trim_start_matches('(');
    let last = core.rsplit(['.', ' ', '(', ')']).find(|s| !s.is_empty())?;
    if let Ok(n) = last.parse() {
        return Some(n);
    }
    let lower = last.to_ascii_lowercase();
    if roman && let Some(n) = roman_value(&lower) {
        return Some(n);
    }
    let mut chars = lower.chars();
    let c = chars.next()?;
    // "aa" follows "z" in Word's lettering.
    (c.is_ascii_lowercase() && chars.all(|x| x == c))
        .then(|| (c as i64 - 'a' as i64 + 1) + 26 * (lower.len() as i64 - 1))
}

fn roman_value(s: &str) -> Option<i64> {
    let digit = |c| match c {
        'i' => Some(1),
        'v' => Some(5),
        'x' => Some(10),
        'l' => Some(50),
        'c' => Some(100),
        'd' => Some(500),
        'm' => Some(1000),
        _ => None,
    };
    let values: Vec<i64> = s.chars().map(digit).collect::<Option<_>>()?;
    let mut total = 0;
    for (i, v) in values.iter().enumerate() {
        if values.get(i + 1).is_some_and(|n| n > v) { total -= v } else { total += v }
    }
    (total > 0).then_some(total)
}

pub(super) fn evaluate(facts: &Facts<'_>, section: Option<&str>, level: Option<u8>) -> Outcome {
    let section = match facts.section(section) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    // (level, label) of every numbered paragraph in the section, accepted state.
    let mut items: Vec<(u8, String)> = Vec::new();
    for (i, (p, _)) in facts.sections.paragraphs.iter().enumerate() {
        if section.as_deref().is_some_and(|s| !facts.sections.in_section(i, s)) {
            continue;
        }
        let Some(label) =
            p.label_in(State::Accepted).filter(|l| l.chars().any(char::is_alphanumeric))
        else {
            continue;
        };
        if !p.present(State::Accepted) {
            continue;
        }
        items.push((p.label.level.unwrap_or(0), label.to_string()));
    }
    // The section's own heading is not one of its items.
    if section.is_some() && !items.is_empty() {
        items.remove(0);
    }
    let Some(target) = level.map(|l| l - 1).or_else(|| items.iter().map(|(l, _)| *l).min()) else {
        return verdict(false, "no numbered paragraph to check".into());
    };
    let at_level: Vec<&String> =
        items.iter().filter(|(l, _)| *l == target).map(|(_, s)| s).collect();
    let roman = at_level.iter().any(|l| {
        let v = l.trim().trim_end_matches(['.', ')']).trim_start_matches('(').to_ascii_lowercase();
        v.len() > 1
            && roman_value(&v).is_some()
            && !v.chars().all(|c| c == v.chars().next().unwrap_or(' '))
    });
    let mut previous: Option<i64> = None;
    let mut checked = 0;
    for (l, label) in &items {
        if *l < target {
            previous = None; // a new parent: the list restarts
            continue;
        }
        if *l > target {
            continue;
        }
        let Some(v) = value(label, roman) else {
            return verdict(false, format!("cannot read a number in the label {label:?}"));
        };
        if let Some(prev) = previous
            && v != prev + 1
        {
            let what = if v == prev {
                "repeats"
            } else if v < prev {
                "goes back after"
            } else {
                "skips after"
            };
            return verdict(
                false,
                format!("label {label} {what} the previous one (numbers {prev} then {v})"),
            );
        }
        previous = Some(v);
        checked += 1;
    }
    let first = at_level.first().map(|s| s.as_str()).unwrap_or("");
    let last = at_level.last().map(|s| s.as_str()).unwrap_or("");
    verdict(
        true,
        format!("{checked} labels at level {} are consecutive ({first} … {last})", target + 1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values() {
        assert_eq!(value("7.3", false), Some(3));
        assert_eq!(value("(c)", false), Some(3));
        assert_eq!(value("iv.", true), Some(4));
        assert_eq!(value("(i)", false), Some(9), "a letter unless the list is roman");
        assert_eq!(value("Article 12", false), Some(12));
        assert_eq!(value("aa)", false), Some(27));
        assert_eq!(value("•", false), None);
    }
}
