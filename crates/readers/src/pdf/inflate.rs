//! Bounding what a PDF's streams inflate to, before lopdf or pdf-extract
//! decompress anything (neither bounds it), and loading the objects.
//!
//! Two passes: every zlib stream found in the raw bytes is inflated into
//! a counter (covering cross-reference and object streams, which lopdf
//! inflates while it parses), and lopdf's load-time object filter refuses
//! the filter chains the raw pass cannot see (Flate behind an ASCII
//! stage) or whose worst case exceeds the limit (LZW, RunLength).

use std::cell::RefCell;

use flate2::{Decompress, FlushDecompress, Status};
use lopdf::{Object, ObjectId};

use super::{Limits, PdfError};

/// Whether the trailer names an encryption dictionary: `/Encrypt`
/// followed by a reference or a dictionary.
pub(super) fn names_encryption(bytes: &[u8]) -> bool {
    let key = b"/Encrypt";
    let mut rest = bytes;
    while let Some(at) = find(rest, key) {
        let after = rest.get(at + key.len()..).unwrap_or_default();
        let next = after.iter().find(|b| !b.is_ascii_whitespace());
        if next.is_some_and(|b| b.is_ascii_digit() || *b == b'<') {
            return true;
        }
        rest = after;
    }
    false
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Inflates, into a counter, every zlib stream that follows a `stream`
/// keyword; refuses the file when one stream or all together exceed the
/// limits. Linear: each inflation consumes the bytes it reads.
pub(super) fn measure_raw_streams(bytes: &[u8], limits: &Limits) -> Result<(), PdfError> {
    // One inflater and one buffer for every stream: a file may hold a
    // `stream` keyword every few bytes.
    let mut z = Decompress::new(true);
    let mut buf = vec![0u8; 64 << 10];
    let mut total: u64 = 0;
    let mut at = 0;
    while let Some(found) = bytes.get(at..).and_then(|rest| find(rest, b"stream")) {
        let keyword = at + found;
        let mut start = keyword + b"stream".len();
        if bytes.get(start) == Some(&b'\r') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'\n') {
            start += 1;
        }
        let data = bytes.get(start..).unwrap_or_default();
        let (out, consumed) = inflated_size(&mut z, &mut buf, data, limits.max_stream_bytes)?;
        total = total.saturating_add(out);
        if total > limits.max_inflated_bytes {
            return Err(too_large("its streams together, inflated", limits.max_inflated_bytes));
        }
        at = start + consumed.max(1);
    }
    Ok(())
}

/// How many bytes zlib data inflates to (0 when it is not zlib data) and
/// how many input bytes it took; refused beyond `cap`.
fn inflated_size(
    z: &mut Decompress,
    buf: &mut [u8],
    data: &[u8],
    cap: u64,
) -> Result<(u64, usize), PdfError> {
    z.reset(true);
    loop {
        let before = (z.total_in(), z.total_out());
        let input = data.get(z.total_in() as usize..).unwrap_or_default();
        let status = z.decompress(input, buf, FlushDecompress::None);
        if z.total_out() > cap {
            return Err(too_large("one stream, inflated", cap));
        }
        match status {
            Ok(Status::StreamEnd) => break,
            Ok(_) if (z.total_in(), z.total_out()) == before => break,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok((z.total_out(), z.total_in() as usize))
}

fn too_large(what: &str, limit: u64) -> PdfError {
    PdfError::TooLarge { what: what.into(), limit }
}

thread_local! {
    /// The limit lopdf's object filter applies, and the first refusal it
    /// met: the filter is a plain `fn`, and lopdf (built without its
    /// `rayon` feature) calls it on the loading thread.
    static FILTER: RefCell<(u64, Option<String>)> = const { RefCell::new((0, None)) };
}

/// Parses the objects, refusing streams whose decoding could exceed the
/// limits.
pub(super) fn load(bytes: &[u8], limits: &Limits) -> Result<lopdf::Document, PdfError> {
    FILTER.with(|f| *f.borrow_mut() = (limits.max_stream_bytes, None));
    let options = lopdf::LoadOptions { filter: Some(filter), ..Default::default() };
    let loaded = lopdf::Document::load_mem_with_options(bytes, options);
    let refused = FILTER.with(|f| f.borrow_mut().1.take());
    if let Some(why) = refused {
        return Err(PdfError::TooLarge { what: why, limit: limits.max_stream_bytes });
    }
    loaded.map_err(|e| PdfError::Structure(e.to_string()))
}

/// lopdf's object filter: keeps every object, except a stream whose
/// decoding could exceed the limit, which is dropped and noted.
///
/// lopdf 0.42 (`reader.rs`, `load_objects_raw`) keeps its own `object`
/// for a top-level object and uses what the filter returns only for the
/// objects of an object stream, which never hold streams: so a stream is
/// answered without a copy, and anything else with one.
fn filter(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Object::Stream(stream) = object {
        let cap = FILTER.with(|f| f.borrow().0);
        if let Err(why) = bounded(stream, cap) {
            FILTER.with(|f| {
                let mut f = f.borrow_mut();
                if f.1.is_none() {
                    f.1 = Some(why);
                }
            });
            return None;
        }
        return Some((id, Object::Null));
    }
    Some((id, object.clone()))
}

/// Whether a stream's filter chain stays within `cap` when decoded.
fn bounded(stream: &lopdf::Stream, cap: u64) -> Result<(), String> {
    let filters: Vec<Vec<u8>> =
        stream.filters().map(|f| f.iter().map(|n| n.to_vec()).collect()).unwrap_or_default();
    let len = stream.content.len() as u64;
    let worst = |ratio: u64| len.saturating_mul(ratio) > cap;
    // Each 9-bit LZW code emits at most 4,096 bytes.
    if filters.iter().any(|f| f == b"LZWDecode") && worst(3_641) {
        return Err(format!("an LZW stream of {len} bytes, which may inflate"));
    }
    let ascii_first = filters.first().is_some_and(|f| matches!(f.as_slice(), b"ASCII85Decode"));
    let flate_next = filters.get(1).is_some_and(|f| matches!(f.as_slice(), b"FlateDecode"));
    if ascii_first && flate_next {
        let first = filters.first().cloned().unwrap_or_default();
        let mut dict = lopdf::Dictionary::new();
        dict.set("Filter", Object::Name(first));
        // An ASCII stage never grows what it decodes.
        let stage = lopdf::Stream::new(dict, stream.content.clone()).decompressed_content();
        if let Ok(zlib) = stage {
            let mut z = Decompress::new(true);
            inflated_size(&mut z, &mut vec![0u8; 64 << 10], &zlib, cap)
                .map_err(|_| "one ASCII-armoured stream, inflated".to_string())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encryption_is_seen_by_its_trailer_key_not_by_the_word() {
        assert!(names_encryption(b"trailer << /Encrypt 5 0 R /Root 1 0 R >>"));
        assert!(names_encryption(b"trailer<</Encrypt<</Filter/Standard>>>>"));
        assert!(!names_encryption(b"(the /Encrypt key) Tj"));
    }
}
