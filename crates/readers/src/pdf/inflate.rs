//! Bounding what a PDF's streams inflate to, before lopdf or pdf-extract
//! decompress anything (neither bounds it), and loading the objects.
//!
//! Two passes, each against the same budget — per stream, and for the
//! file: [`Limits::max_stream_bytes`], and the smaller of
//! [`Limits::max_inflated_bytes`] and [`Limits::max_inflation_per_byte`]
//! times the file's size (at least 8 MiB), so that the work a small file
//! can cause stays proportional to it:
//! - every Flate stream found in the raw bytes is inflated into a counter
//!   (cross-reference and object streams, which lopdf inflates while it
//!   parses, included), as lopdf would read it: zlib, and raw deflate
//!   after the two header bytes when zlib yields nothing;
//! - lopdf's load-time object filter decodes each stream's whole filter
//!   chain stage by stage the way lopdf does (Flate, LZW, ASCII85; lopdf
//!   0.42 expands no other filter), refusing past the budget.

use std::cell::RefCell;

use flate2::{Decompress, FlushDecompress, Status};
use lopdf::{Object, ObjectId};

use super::{Limits, PdfError};

/// Whether the trailer names an encryption dictionary: `/Encrypt`
/// followed by a reference or a dictionary. (A spelling this misses is
/// caught after loading: lopdf records that it decrypted.)
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

/// The most all streams of a file of `len` bytes may inflate to.
pub(super) fn file_budget(limits: &Limits, len: usize) -> u64 {
    let scaled = (len as u64).saturating_mul(limits.max_inflation_per_byte).max(8 << 20);
    scaled.min(limits.max_inflated_bytes)
}

/// An inflater reused for every stream (a file may hold a `stream`
/// keyword every few bytes), counting what it produces.
struct Inflater {
    zlib: Decompress,
    raw: Decompress,
    buf: Vec<u8>,
}

impl Inflater {
    fn new() -> Inflater {
        Inflater {
            zlib: Decompress::new(true),
            raw: Decompress::new(false),
            buf: vec![0; 64 << 10],
        }
    }

    /// Inflates `data` as lopdf does (zlib; raw deflate after two bytes
    /// when zlib gives nothing), into `out` when given, else into a
    /// counter. Returns the bytes produced and the input bytes used;
    /// refused beyond `cap`.
    fn inflate(
        &mut self,
        data: &[u8],
        cap: u64,
        mut out: Option<&mut Vec<u8>>,
    ) -> Result<(u64, usize), ()> {
        self.zlib.reset(true);
        let (n, used, ok) = run(&mut self.zlib, &mut self.buf, data, cap, out.as_deref_mut())?;
        if n > 0 || ok {
            return Ok((n, used));
        }
        let Some(body) = data.get(2..) else { return Ok((0, 0)) };
        self.raw.reset(false);
        let (n, used, _) = run(&mut self.raw, &mut self.buf, body, cap, out)?;
        Ok((n, if n > 0 { used + 2 } else { 0 }))
    }
}

/// Runs one inflater over `data`: (bytes out, bytes in, ended cleanly).
fn run(
    z: &mut Decompress,
    buf: &mut [u8],
    data: &[u8],
    cap: u64,
    mut out: Option<&mut Vec<u8>>,
) -> Result<(u64, usize, bool), ()> {
    loop {
        let before = (z.total_in(), z.total_out());
        let input = data.get(z.total_in() as usize..).unwrap_or_default();
        let status = z.decompress(input, buf, FlushDecompress::None);
        let produced = (z.total_out() - before.1) as usize;
        if z.total_out() > cap {
            return Err(());
        }
        if let (Some(out), Some(chunk)) = (out.as_deref_mut(), buf.get(..produced)) {
            out.extend_from_slice(chunk);
        }
        match status {
            Ok(Status::StreamEnd) => return Ok((z.total_out(), z.total_in() as usize, true)),
            Ok(_) if (z.total_in(), z.total_out()) == before => break,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok((z.total_out(), z.total_in() as usize, false))
}

/// Inflates, into a counter, every Flate stream that follows a `stream`
/// keyword; refuses the file when one stream or all together exceed the
/// budget. Linear: each inflation consumes the bytes it reads.
pub(super) fn measure_raw_streams(bytes: &[u8], limits: &Limits) -> Result<(), PdfError> {
    let budget = file_budget(limits, bytes.len());
    let mut inflater = Inflater::new();
    let mut total: u64 = 0;
    let mut at = 0;
    while let Some(found) = bytes.get(at..).and_then(|rest| find(rest, b"stream")) {
        let mut start = at + found + b"stream".len();
        // lopdf allows spaces and tabs before the end of line.
        while matches!(bytes.get(start), Some(b' ' | b'\t')) {
            start += 1;
        }
        if bytes.get(start) == Some(&b'\r') {
            start += 1;
        }
        if bytes.get(start) == Some(&b'\n') {
            start += 1;
        }
        let data = bytes.get(start..).unwrap_or_default();
        let left = budget.saturating_sub(total);
        let (out, consumed) =
            inflater.inflate(data, limits.max_stream_bytes.min(left), None).map_err(|()| {
                if left < limits.max_stream_bytes {
                    too_large("its streams together, inflated", budget)
                } else {
                    too_large("one stream, inflated", limits.max_stream_bytes)
                }
            })?;
        total = total.saturating_add(out);
        at = start + consumed.max(1);
    }
    Ok(())
}

fn too_large(what: &str, limit: u64) -> PdfError {
    PdfError::TooLarge { what: what.into(), limit }
}

/// What lopdf's object filter needs and found: it is a plain `fn`, and
/// lopdf (built without its `rayon` feature) calls it on the loading
/// thread.
struct FilterState {
    per_stream: u64,
    budget: u64,
    spent: u64,
    refused: Option<(String, u64)>,
}

thread_local! {
    static FILTER: RefCell<FilterState> =
        const { RefCell::new(FilterState { per_stream: 0, budget: 0, spent: 0, refused: None }) };
}

/// Parses the objects, refusing streams whose decoding would exceed the
/// budget, and a file lopdf had to decrypt.
pub(super) fn load(bytes: &[u8], limits: &Limits) -> Result<lopdf::Document, PdfError> {
    let budget = file_budget(limits, bytes.len());
    FILTER.with(|f| {
        *f.borrow_mut() =
            FilterState { per_stream: limits.max_stream_bytes, budget, spent: 0, refused: None }
    });
    let options = lopdf::LoadOptions { filter: Some(filter), ..Default::default() };
    let loaded = lopdf::Document::load_mem_with_options(bytes, options);
    if let Some((what, limit)) = FILTER.with(|f| f.borrow_mut().refused.take()) {
        return Err(PdfError::TooLarge { what, limit });
    }
    let doc = loaded.map_err(|e| PdfError::Structure(e.to_string()))?;
    if doc.was_encrypted() || doc.is_encrypted() {
        return Err(PdfError::Encrypted);
    }
    Ok(doc)
}

/// lopdf's object filter: keeps every object, except a stream whose
/// decoding would exceed the budget, which is dropped and noted.
///
/// lopdf 0.42 (`reader.rs`, `load_objects_raw`) keeps its own `object`
/// for a top-level object and uses what the filter returns only for the
/// objects of an object stream, which never hold streams: so a stream is
/// answered without a copy, and anything else with one.
fn filter(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Object::Stream(stream) = object {
        let (cap, left) = FILTER.with(|f| {
            let f = f.borrow();
            (f.per_stream, f.budget.saturating_sub(f.spent))
        });
        let refuse = |what: String, limit: u64| {
            FILTER.with(|f| {
                let mut f = f.borrow_mut();
                if f.refused.is_none() {
                    f.refused = Some((what, limit));
                }
            });
        };
        match decoded_size(stream, cap.min(left)) {
            Ok(n) => FILTER.with(|f| f.borrow_mut().spent += n),
            Err(_) if left < cap => {
                refuse("its streams together, decoded".into(), FILTER.with(|f| f.borrow().budget));
                return None;
            }
            Err(what) => {
                refuse(what, cap);
                return None;
            }
        }
        return Some((id, Object::Null));
    }
    Some((id, object.clone()))
}

/// What a stream decodes to through its whole filter chain, stage by
/// stage as lopdf decodes it; `Err` names what exceeded `cap`.
fn decoded_size(stream: &lopdf::Stream, cap: u64) -> Result<u64, String> {
    let Ok(filters) = stream.filters() else { return Ok(stream.content.len() as u64) };
    let filters: Vec<Vec<u8>> = filters.iter().map(|f| f.to_vec()).collect();
    let mut data: Option<Vec<u8>> = None;
    let mut inflater = Inflater::new();
    for (i, name) in filters.iter().enumerate() {
        let input = data.as_deref().unwrap_or(&stream.content);
        let last = i + 1 == filters.len();
        let next = match name.as_slice() {
            b"FlateDecode" => {
                let mut out = Vec::new();
                let sink = if last { None } else { Some(&mut out) };
                let (n, _) = inflater
                    .inflate(input, cap, sink)
                    .map_err(|()| "one stream, decoded".to_string())?;
                if last {
                    return Ok(n);
                }
                out
            }
            // Each 9-bit LZW code emits at most 4,096 bytes.
            b"LZWDecode" if (input.len() as u64).saturating_mul(3_641) > cap => {
                return Err(format!("an LZW stream of {} bytes, which may inflate", input.len()));
            }
            b"LZWDecode" | b"ASCII85Decode" => {
                let mut dict = lopdf::Dictionary::new();
                dict.set("Filter", Object::Name(name.clone()));
                match lopdf::Stream::new(dict, input.to_vec()).decompressed_content() {
                    Ok(out) => out,
                    Err(_) => return Ok(input.len() as u64),
                }
            }
            // lopdf decodes nothing else: the chain stops here.
            _ => return Ok(input.len() as u64),
        };
        data = Some(next);
    }
    Ok(data.map(|d| d.len() as u64).unwrap_or_default())
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
