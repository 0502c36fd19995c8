//! What pdf-extract must not be given as the file has it: graphics-state
//! dictionaries (it clones the current one's soft mask on every `q`: a
//! large one times many saves runs out of memory), and Type 1 font
//! programs and ToUnicode maps its parsers would recurse through until the
//! stack overflows, or expand without bound (a `bfrange` over 2³² codes).
//! Each is replaced or dropped in redjury's copy of the document: the text
//! of such a font may then decode less well, and nothing else changes.

use lopdf::{Dictionary, Document, Object, ObjectId};

/// Most codes a ToUnicode map may map (by its ranges' spans).
const MAX_MAPPED_CODES: u64 = 1 << 20;
/// Deepest nesting of brackets in a CMap or a font program's clear text.
const MAX_NESTING: usize = 64;

/// Defangs the document in place (see the module's doc).
pub(super) fn defang(doc: &mut Document) {
    let mut drop_unicode: Vec<ObjectId> = Vec::new();
    let mut drop_program: Vec<(ObjectId, Vec<u8>)> = Vec::new();
    let mut states: Vec<ObjectId> = Vec::new();
    for (id, object) in &doc.objects {
        let dict = match object {
            Object::Dictionary(d) => d,
            Object::Stream(s) => &s.dict,
            _ => continue,
        };
        if let Ok(Object::Reference(map)) = dict.get(b"ToUnicode")
            && stream_bytes(doc, *map).is_none_or(|b| !safe_cmap(&b))
        {
            drop_unicode.push(*id);
        }
        // A Type 1 program's clear text is PostScript pdf-extract parses
        // (binary CFF and TrueType programs are not scanned: random bytes
        // would look nested).
        if let Ok(Object::Reference(program)) = dict.get(b"FontFile")
            && stream_bytes(doc, *program).is_none_or(|b| nesting(clear_text(&b)) > MAX_NESTING)
        {
            drop_program.push((*id, b"FontFile".to_vec()));
        }
        let inner = dict.get(b"Resources").ok().and_then(|o| o.as_dict().ok());
        for resources in [inner, Some(dict)].into_iter().flatten() {
            if let Ok(Object::Reference(gs)) = resources.get(b"ExtGState") {
                states.push(*gs);
            }
        }
    }
    for id in drop_unicode {
        if let Some(d) = dict_mut(doc, id) {
            d.remove(b"ToUnicode");
        }
    }
    for (id, key) in drop_program {
        if let Some(d) = dict_mut(doc, id) {
            d.remove(&key);
        }
    }
    for id in states {
        if let Some(d) = dict_mut(doc, id) {
            empty_states(d);
        }
    }
    // Graphics-state dictionaries written in place inside resources.
    for object in doc.objects.values_mut() {
        let dict = match object {
            Object::Dictionary(d) => d,
            Object::Stream(s) => &mut s.dict,
            _ => continue,
        };
        if let Ok(Object::Dictionary(gs)) = dict.get_mut(b"ExtGState") {
            empty_states(gs);
        }
        if let Ok(Object::Dictionary(r)) = dict.get_mut(b"Resources")
            && let Ok(Object::Dictionary(gs)) = r.get_mut(b"ExtGState")
        {
            empty_states(gs);
        }
    }
}

/// Every graphics state named becomes an empty dictionary: `gs` still
/// finds it, and applies nothing (pdf-extract reads only the soft mask).
fn empty_states(gs: &mut Dictionary) {
    for (_, v) in gs.iter_mut() {
        *v = Object::Dictionary(Dictionary::new());
    }
}

fn dict_mut(doc: &mut Document, id: ObjectId) -> Option<&mut Dictionary> {
    match doc.objects.get_mut(&id)? {
        Object::Dictionary(d) => Some(d),
        Object::Stream(s) => Some(&mut s.dict),
        _ => None,
    }
}

fn stream_bytes(doc: &Document, id: ObjectId) -> Option<Vec<u8>> {
    let stream = doc.get_object(id).ok()?.as_stream().ok()?;
    Some(stream.decompressed_content().unwrap_or_else(|_| stream.content.clone()))
}

/// A font program's clear-text part: Type 1 fonts encrypt the rest.
fn clear_text(program: &[u8]) -> &[u8] {
    let end = program.windows(5).position(|w| w == b"eexec").unwrap_or(program.len());
    program.get(..end).unwrap_or(program)
}

/// The deepest nesting of `[`, `{`, `(` and `<<` in `bytes`.
fn nesting(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for b in bytes {
        match b {
            b'[' | b'{' | b'(' | b'<' => depth += 1,
            b']' | b'}' | b')' | b'>' => depth = depth.saturating_sub(1),
            _ => {}
        }
        deepest = deepest.max(depth);
    }
    deepest
}

/// Whether a ToUnicode CMap is safe to parse: nested at most
/// [`MAX_NESTING`] deep, and its `bfrange` spans mapping at most
/// [`MAX_MAPPED_CODES`] codes together.
fn safe_cmap(cmap: &[u8]) -> bool {
    if nesting(cmap) > MAX_NESTING {
        return false;
    }
    let text = String::from_utf8_lossy(cmap);
    let mut mapped: u64 = 0;
    for section in text.split("beginbfrange").skip(1) {
        let body = section.split("endbfrange").next().unwrap_or_default();
        let hexes: Vec<u64> = body
            .split('<')
            .skip(1)
            .filter_map(|h| h.split('>').next())
            .map(|h| u64::from_str_radix(h.trim(), 16).unwrap_or(u64::MAX))
            .collect();
        // Triples <lo> <hi> <dst>, or <lo> <hi> [ … ] (the array's own
        // hex strings follow and are counted as pairs too: an over-count
        // only refuses a little earlier).
        for pair in hexes.chunks(3) {
            if let [lo, hi, ..] = pair {
                mapped = mapped.saturating_add(hi.saturating_sub(*lo).saturating_add(1));
            }
        }
    }
    mapped <= MAX_MAPPED_CODES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmaps_that_would_expand_or_nest_without_bound_are_not_parsed() {
        assert!(safe_cmap(b"1 beginbfrange <0000> <00FF> <0041> endbfrange"));
        assert!(!safe_cmap(b"1 beginbfrange <00000000> <FFFFFFFF> <0000> endbfrange"));
        assert!(!safe_cmap(&[b'['; 65]));
        assert_eq!(nesting(b"{ { ( ) } } eexec {{{{{{{{"), 8);
        assert_eq!(nesting(clear_text(b"{ { ( ) } } eexec {{{{{{{{")), 3);
    }
}
