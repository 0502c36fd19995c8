//! `provenance`: what saved the file — the `Application` of
//! docProps/app.xml, and Word's revision-session ids (`w:rsid…`), which
//! Word writes and python-docx and most generators do not.

use super::{Facts, Outcome, verdict};
use crate::task::check_spec::PreparedCheck;

pub(super) fn evaluate(facts: &Facts<'_>, check: &PreparedCheck, rsids: Option<bool>) -> Outcome {
    let p = &facts.doc.provenance;
    let app = p.application.as_deref();
    if let Some(re) = &check.regex {
        match app {
            None => {
                return verdict(
                    false,
                    "docProps/app.xml names no Application: the file was not saved by an office application".into(),
                );
            }
            Some(a) if !re.is_match(a) => {
                return verdict(
                    false,
                    format!(
                        "saved by {a:?}, which does not match {}",
                        re.as_str().trim_start_matches("(?i)")
                    ),
                );
            }
            Some(_) => {}
        }
    }
    // Counted in the main document only: a Word template's settings.xml
    // keeps its session list whatever wrote the body into it.
    let count = p.rsid_attributes;
    let has = count > 0;
    match rsids {
        Some(true) if !has => {
            return verdict(false, "no w:rsid attributes: Word writes them on every edit, so this file was not last saved by Word".into());
        }
        Some(false) if has => {
            return verdict(
                false,
                format!("{count} w:rsid attributes: the file was saved by Word"),
            );
        }
        _ => {}
    }
    verdict(
        true,
        format!("saved by {}; {count} w:rsid attributes", app.unwrap_or("an unnamed application")),
    )
}
