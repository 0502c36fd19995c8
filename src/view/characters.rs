//! How a document's characters show to a person: the ones no one can see
//! made visible for the judges, and the form a person reads a text in, for
//! the checks and for telling authors apart.
//!
//! Owns: which characters are invisible (Unicode's
//! Default_Ignorable_Code_Point, which holds every format character, bidi
//! control, variation selector and filler), how the view writes them
//! (`⟨U+200B⟩`), and the as-read form: visual order where explicit bidi
//! controls reorder a line, invisible characters dropped, NFKC, and a word
//! of letters that all look like Latin ones read as those (UTS #39
//! confusables). Must never change a visible character of what the judges
//! read: only invisible ones are written as escapes.

use icu_properties::CodePointSetData;
use icu_properties::props::{BidiControl, DefaultIgnorableCodePoint};
use unicode_normalization::UnicodeNormalization;

/// Whether a person sees nothing where `c` stands (a zero-width space, a
/// soft hyphen, a bidi control, a word joiner, a Hangul filler…).
pub(crate) fn invisible(c: char) -> bool {
    CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointSetData::new::<BidiControl>().contains(c)
}

/// How the view writes an invisible character: `⟨U+200B⟩`.
pub(crate) fn escape_invisible(c: char, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "⟨U+{:04X}⟩", u32::from(c));
}

/// `s` as a person reads it: each line in the order it is shown, with the
/// invisible characters gone, compatibility forms folded (NFKC: a
/// full-width or mathematical letter is the letter), and each word whose
/// letters all look like Latin ones (Cyrillic "о" inside "unlimitеd")
/// written with those. Whitespace is kept as it is.
pub(crate) fn as_read(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    // Only explicit embeddings, overrides and isolates reorder what a
    // reader sees of left-to-right text; the marks (LRM, RLM, ALM) that
    // Hebrew and Arabic text carry do not.
    let reorders = |c: char| matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    let ordered = if s.chars().any(reorders) {
        s.split('\n').map(visual_line).collect::<Vec<_>>().join("\n")
    } else {
        s.to_string()
    };
    let folded: String = ordered.chars().filter(|&c| !invisible(c)).nfkc().collect();
    latin_lookalikes(&folded)
}

/// A line in the order its characters are shown (UAX #9), for a line
/// that explicit controls reorder: "\u{202E}detimilnu\u{202C}" shows as
/// "unlimited".
fn visual_line(line: &str) -> String {
    let info = unicode_bidi::BidiInfo::new(line, Some(unicode_bidi::Level::ltr()));
    info.paragraphs
        .iter()
        .map(|para| info.reorder_line(para, para.range.clone()).into_owned())
        .collect()
}

/// Each word (a run of letters and marks) whose non-ASCII letters all have
/// a Latin prototype in Unicode's confusables, written with the
/// prototypes; other words (a Russian word, "café") stay as they are.
fn latin_lookalikes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_ascii() {
            out.push_str(word);
        } else {
            let mapped: Option<String> = word.chars().map(latin_prototype).collect();
            out.push_str(mapped.as_deref().unwrap_or(word));
        }
        word.clear();
    };
    for c in s.chars() {
        if c.is_alphanumeric() || is_mark(c) {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// The ASCII letters `c` is confusable with, or `c` itself when ASCII;
/// `None` for a character that looks like no Latin letter.
fn latin_prototype(c: char) -> Option<String> {
    if c.is_ascii() {
        return Some(c.to_string());
    }
    let mut buf = [0u8; 4];
    let skeleton: String = unicode_security::skeleton(c.encode_utf8(&mut buf)).collect();
    let latin = !skeleton.is_empty() && skeleton.chars().all(|k| k.is_ascii_alphanumeric());
    latin.then_some(skeleton)
}

/// A combining mark: part of the word it follows.
fn is_mark(c: char) -> bool {
    use icu_properties::props::{GeneralCategory, GeneralCategoryGroup};
    let gc = icu_properties::CodePointMapData::<GeneralCategory>::new().get(c);
    GeneralCategoryGroup::Mark.contains(gc)
}

/// The key two author names compare by: as read, whitespace collapsed.
/// Names that look the same to a person ("Vendor C\u{43E}unsel", "Vendor
/// Counsel\u{200B}") have the same key.
pub(crate) fn author_key(name: &str) -> String {
    as_read(name).split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_characters_are_dropped_when_read() {
        assert_eq!(as_read("unli\u{200B}mited"), "unlimited");
        assert_eq!(as_read("unli\u{AD}mited"), "unlimited");
        assert_eq!(as_read("un\u{2060}limited\u{FEFF}"), "unlimited");
        assert_eq!(as_read("un\u{3164}limited"), "unlimited");
    }

    #[test]
    fn bidi_overrides_read_in_the_order_shown() {
        assert_eq!(as_read("\u{202E}detimilnu\u{202C} liability"), "unlimited liability");
        assert_eq!(as_read("a \u{2067}\u{202E}xc\u{202C}\u{2069} b\nnext"), "a cx b\nnext");
    }

    #[test]
    fn bidi_marks_alone_do_not_reorder() {
        // Hebrew text carries RLM marks: dropped, the order kept.
        assert_eq!(as_read("abc \u{200F}def"), "abc def");
    }

    #[test]
    fn lookalike_letters_read_as_the_latin_ones() {
        // Cyrillic о and е inside a Latin word.
        assert_eq!(as_read("unlimit\u{435}d c\u{43E}nsequential"), "unlimited consequential");
        // Full-width and mathematical letters fold by NFKC.
        assert_eq!(as_read("ｕｎｌｉｍｉｔｅｄ"), "unlimited");
        assert_eq!(as_read("\u{1D42E}nlimited"), "unlimited");
        // A word in another script, and accented Latin, stay.
        assert_eq!(as_read("договор café"), "договор café");
    }

    #[test]
    fn escapes_name_the_code_point() {
        let mut s = String::new();
        escape_invisible('\u{200B}', &mut s);
        escape_invisible('\u{202E}', &mut s);
        assert_eq!(s, "⟨U+200B⟩⟨U+202E⟩");
        assert!(invisible('\u{AD}') && invisible('\u{2066}') && invisible('\u{FE0F}'));
        assert!(!invisible(' ') && !invisible('a') && !invisible('\u{A0}'));
    }

    #[test]
    fn lookalike_authors_share_a_key() {
        assert_eq!(author_key("Vendor C\u{43E}unsel"), author_key("Vendor Counsel"));
        assert_eq!(author_key(" Vendor\u{A0}Counsel\u{200B}"), "Vendor Counsel");
        assert_ne!(author_key("Vendor Counsel"), author_key("vendor counsel"));
    }
}
