//! The reference benchmark's rules for a task, which redjury is more
//! lenient about: its JSON schema (`task_id` an integer, `scenario_id` 1–3,
//! `level` 1–4, a `category` on every rubric) and the task-name pattern
//! every reference reader matches. A task breaking one still loads; the
//! loader warns, naming the rule, because the reference would drop it.

use super::Task;

/// The names every reference reader accepts: `^redline-s(\d+)-t(\d+)-g(\d+)([a-z])$`.
pub(crate) fn is_reference_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("redline-s") else { return false };
    let digits = |s: &str| -> usize { s.bytes().take_while(u8::is_ascii_digit).count() };
    let n = digits(rest);
    let Some(rest) = rest.get(n..).filter(|_| n > 0).and_then(|r| r.strip_prefix("-t")) else {
        return false;
    };
    let n = digits(rest);
    let Some(rest) = rest.get(n..).filter(|_| n > 0).and_then(|r| r.strip_prefix("-g")) else {
        return false;
    };
    let n = digits(rest);
    let variant = &rest[n..];
    n > 0 && variant.len() == 1 && variant.bytes().all(|b| b.is_ascii_lowercase())
}

/// The reference rules `task` breaks, each as a sentence.
pub(crate) fn broken_rules(
    task: &Task,
    task_id: &Option<serde_json::Value>,
    scenario_id: &Option<serde_json::Value>,
    level: &Option<serde_json::Value>,
) -> Vec<String> {
    let mut broken = Vec::new();
    if !is_reference_name(&task.name) {
        broken.push(format!(
            "task name {:?} does not match the reference pattern redline-s{{S}}-t{{T}}-g{{NN}}{{v}} with one lower-case variant letter",
            task.name
        ));
    }
    if !task_id.as_ref().is_some_and(|v| v.is_u64()) {
        broken.push("task_id must be an integer in the reference schema".into());
    }
    if !scenario_id.as_ref().and_then(|v| v.as_u64()).is_some_and(|s| (1..=3).contains(&s)) {
        broken.push("scenario_id must be the integer 1, 2 or 3 in the reference schema".into());
    }
    if !level.as_ref().and_then(|v| v.as_u64()).is_some_and(|l| (1..=4).contains(&l)) {
        broken.push("level must be an integer from 1 to 4 in the reference schema".into());
    }
    let uncategorised: Vec<&str> = task
        .rubrics
        .iter()
        .filter(|r| r.category == "(uncategorized)")
        .map(|r| r.id.as_str())
        .collect();
    if !uncategorised.is_empty() {
        broken.push(format!(
            "rubric(s) {} have no category, which the reference schema requires",
            uncategorised.join(", ")
        ));
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_names() {
        assert!(is_reference_name("redline-s1-t2-g01a"));
        assert!(is_reference_name("redline-s12-t4-g7z"));
        assert!(!is_reference_name("redline-s1-t2-g01"), "no variant letter");
        assert!(!is_reference_name("redline-s1-t2-g01ab"));
        assert!(!is_reference_name("redline-s1-t2-g01A"));
        assert!(!is_reference_name("redline-s-t2-g01a"));
        assert!(!is_reference_name("contract-7"));
    }
}
