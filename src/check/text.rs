//! Text measures the checks share: whitespace normalisation, tokens, token
//! F1 and short previews for reasons.

use std::collections::HashMap;

/// Surrounding whitespace removed and inner runs of whitespace (including
/// non-breaking spaces) collapsed to one space.
pub(crate) fn normalise_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` in the form a check compares: as a person reads it, or as stored.
pub(crate) fn in_form(s: &str, characters: crate::task::check_spec::Characters) -> String {
    match characters {
        crate::task::check_spec::Characters::AsRead => crate::view::characters::as_read(s),
        crate::task::check_spec::Characters::Stored => s.to_string(),
    }
}

/// Lower-case words with surrounding punctuation removed.
pub(crate) fn tokens(s: &str) -> Vec<String> {
    s.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Token F1 of `predicted` against `gold`, as multisets (1.0 when both are
/// empty).
pub(crate) fn token_f1(gold: &[String], predicted: &[String]) -> f64 {
    if gold.is_empty() && predicted.is_empty() {
        return 1.0;
    }
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for t in gold {
        *counts.entry(t).or_default() += 1;
    }
    let mut overlap = 0i64;
    for t in predicted {
        if let Some(c) = counts.get_mut(t.as_str())
            && *c > 0
        {
            *c -= 1;
            overlap += 1;
        }
    }
    if overlap == 0 {
        return 0.0;
    }
    let p = overlap as f64 / predicted.len() as f64;
    let r = overlap as f64 / gold.len() as f64;
    2.0 * p * r / (p + r)
}

/// At most 80 characters of `s`, quoted, for a reason line.
pub(crate) fn preview(s: &str) -> String {
    let s = normalise_ws(s);
    let t: String = s.chars().take(80).collect();
    if s.chars().count() > 80 { format!("\"{t}…\"") } else { format!("\"{t}\"") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Vec<String> {
        tokens(s)
    }

    #[test]
    fn token_f1_on_hand_computed_cases() {
        assert_eq!(token_f1(&t("a b c d"), &t("a b c d")), 1.0);
        // 2 of 4 gold tokens found, 2 of 2 predicted correct: P 1, R 0.5.
        assert!((token_f1(&t("a b c d"), &t("a b")) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(token_f1(&t("a"), &t("b")), 0.0);
        assert_eq!(token_f1(&[], &[]), 1.0);
        // Punctuation and case do not count.
        assert_eq!(token_f1(&t("Twelve (12) months."), &t("twelve 12 months")), 1.0);
    }

    #[test]
    fn whitespace_is_normalised() {
        assert_eq!(normalise_ws("  Vendor\u{a0}\u{a0}Counsel \n"), "Vendor Counsel");
    }
}
