//! `untracked_changes`: what the output changed without tracking, compared
//! with the task's input (the body, headers, footers and notes), and the
//! changes it attributes to another author that the input does not hold —
//! at most `max` of them.

use super::{Facts, Outcome, gate, verdict};
use crate::view::untracked::{compare, story_edits};

pub(super) fn evaluate(facts: &Facts<'_>, max: u32, attributed: bool) -> Outcome {
    let Some(input) = facts.input_doc else {
        return verdict(
            false,
            "the task names no input to compare the output with (give the task an \"input\")"
                .into(),
        );
    };
    let mut found = compare(facts.doc, input).describe();
    found.extend(story_edits(facts.doc, input));
    if attributed {
        found.extend(gate::not_in_input(facts.doc, input, facts.task_author));
    }
    let n = found.len();
    let shorten = |f: &String| {
        let short: String = f.chars().take(120).collect();
        if short.len() < f.len() { format!("{short}…") } else { short }
    };
    let shown: Vec<String> = found.iter().take(3).map(shorten).collect();
    let more = if n > 3 { format!(", and {} more", n - 3) } else { String::new() };
    match n {
        0 => verdict(true, "no change made without tracking, and none attributed to another author the input does not hold".into()),
        _ => verdict(
            n as u64 <= u64::from(max),
            format!("{n} change(s) not tracked as this round's (wanted at most {max}): {}{more}", shown.join("; ")),
        ),
    }
}
