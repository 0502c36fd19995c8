//! The OPC package: a zip archive read under hard limits, and its
//! relationships.
//!
//! Owns: sniffing what kind of file we were handed, the decompression limits,
//! and resolving relationship targets to part names. Must never trust a size
//! the archive declares: every read is capped by the bytes actually inflated.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use zip::ZipArchive;

use super::DocxError;
use super::xml::{Ev, PartReader, attr, local};

/// Decompression limits. The defaults admit any contract Word writes
/// (tens of megabytes of XML) and stop zip bombs early.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Largest input file, in bytes.
    pub max_file_bytes: u64,
    /// Largest single part once inflated.
    pub max_part_bytes: u64,
    /// Largest sum of inflated parts read from one package.
    pub max_total_bytes: u64,
    /// Largest inflated/compressed ratio tolerated for parts over 1 MiB.
    pub max_ratio: u64,
    /// Most entries in the zip's central directory.
    pub max_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 256 << 20,
            max_part_bytes: 64 << 20,
            max_total_bytes: 256 << 20,
            max_ratio: 200,
            max_entries: 20_000,
        }
    }
}

pub(crate) struct Package {
    archive: ZipArchive<Cursor<Vec<u8>>>,
    /// Lower-cased part name (no leading '/') → index in the archive.
    names: HashMap<String, usize>,
    limits: Limits,
    inflated: u64,
}

/// One relationship of a part.
pub(crate) struct Relationship {
    /// Its id (`rId3`), by which parts refer to it.
    pub id: String,
    /// Last path segment of the relationship type ("styles", "comments"…),
    /// identical across transitional and Strict type URIs.
    pub kind: String,
    /// Part name the target resolves to (for internal targets).
    pub target: Option<String>,
}

const OLE_MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

fn contains_utf16(hay: &[u8], needle: &str) -> bool {
    let pattern: Vec<u8> = needle.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    hay.windows(pattern.len()).any(|w| w == pattern.as_slice())
}

/// Explains why bytes that are not a zip cannot be a .docx.
fn sniff_non_zip(bytes: &[u8]) -> DocxError {
    if bytes.starts_with(&OLE_MAGIC) {
        if contains_utf16(bytes, "EncryptionInfo") || contains_utf16(bytes, "EncryptedPackage") {
            return DocxError::Encrypted;
        }
        return DocxError::LegacyDoc;
    }
    let head = bytes.get(..512).unwrap_or(bytes);
    let text = String::from_utf8_lossy(head);
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with("{\\rtf") {
        return DocxError::NotDocx("it is an RTF file".into());
    }
    if trimmed.starts_with("<?xml") || trimmed.starts_with('<') {
        if text.contains("pkg:package") || text.contains("w:wordDocument") {
            return DocxError::NotDocx(
                "it is a flat Word XML file; save it from Word as .docx".into(),
            );
        }
        return DocxError::NotDocx("it is an XML or HTML file, not a zip package".into());
    }
    if bytes.is_empty() {
        return DocxError::NotDocx("the file is empty".into());
    }
    DocxError::NotDocx("it does not start with a zip signature".into())
}

/// The first entry name the central directory lists twice, if any. Reads
/// only the directory (bounded by `max_entries`); a ZIP64 or damaged
/// directory is left to the zip reader.
fn repeated_name(bytes: &[u8], max_entries: usize) -> Option<String> {
    let u16_at =
        |i: usize| Some(u16::from_le_bytes(bytes.get(i..i + 2)?.try_into().ok()?) as usize);
    let u32_at =
        |i: usize| Some(u32::from_le_bytes(bytes.get(i..i + 4)?.try_into().ok()?) as usize);
    // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
    let floor = bytes.len().saturating_sub(65_557);
    let eocd = (floor..bytes.len().saturating_sub(21)).rev().find(|&i| {
        bytes.get(i..).is_some_and(|tail| tail.starts_with(&[0x50, 0x4b, 0x05, 0x06]))
    })?;
    let (count, mut at) = (u16_at(eocd + 10)?, u32_at(eocd + 16)?);
    if count == 0xFFFF || count > max_entries {
        return None;
    }
    let mut seen = std::collections::HashSet::with_capacity(count);
    for _ in 0..count {
        if !bytes.get(at..)?.starts_with(&[0x50, 0x4b, 0x01, 0x02]) {
            return None;
        }
        let (name_len, extra, comment) = (u16_at(at + 28)?, u16_at(at + 30)?, u16_at(at + 32)?);
        let name = bytes.get(at + 46..at + 46 + name_len)?;
        if !seen.insert(name) {
            return Some(String::from_utf8_lossy(name).trim_start_matches('/').to_string());
        }
        at += 46 + name_len + extra + comment;
    }
    None
}

impl Package {
    pub(crate) fn open(bytes: Vec<u8>, limits: Limits) -> Result<Package, DocxError> {
        if bytes.len() as u64 > limits.max_file_bytes {
            return Err(DocxError::TooLarge {
                what: "the file".into(),
                limit: limits.max_file_bytes,
            });
        }
        if !bytes.starts_with(b"PK") {
            return Err(sniff_non_zip(&bytes));
        }
        // The zip reader keeps one entry per name: find exact duplicates in
        // the central directory itself.
        if let Some(part) = repeated_name(&bytes, limits.max_entries) {
            return Err(DocxError::DuplicatePart { part, how: "" });
        }
        let archive =
            ZipArchive::new(Cursor::new(bytes)).map_err(|e| DocxError::Zip(e.to_string()))?;
        if archive.len() > limits.max_entries {
            return Err(DocxError::TooManyEntries {
                count: archive.len(),
                limit: limits.max_entries,
            });
        }
        let mut names: HashMap<String, usize> = HashMap::with_capacity(archive.len());
        for i in 0..archive.len() {
            let Some(Ok(name)) = archive.name_for_index(i) else { continue };
            let name = name.trim_start_matches('/');
            // Part names are case-insensitive (OPC): two entries for one
            // part let two readers see two different documents.
            if let Some(&first) = names.get(&part_key(name)) {
                let same = archive
                    .name_for_index(first)
                    .and_then(Result::ok)
                    .map(|f| f.trim_start_matches('/') == name);
                let how =
                    if same == Some(true) { "" } else { " (names differing only in letter case)" };
                return Err(DocxError::DuplicatePart { part: name.to_string(), how });
            }
            names.insert(part_key(name), i);
        }
        Ok(Package { archive, names, limits, inflated: 0 })
    }

    /// The package's main part, as its root relationship of type
    /// officeDocument names it (when it exists), else `default`.
    pub(crate) fn main_part(&mut self, default: &str) -> Result<String, DocxError> {
        let named = self
            .relationships("")?
            .into_iter()
            .find(|r| r.kind == "officeDocument")
            .and_then(|r| r.target)
            .filter(|t| self.has_part(t));
        Ok(named.unwrap_or_else(|| default.to_string()))
    }

    pub(crate) fn has_part(&self, name: &str) -> bool {
        self.names.contains_key(&part_key(name))
    }

    /// Reads a part as text, or `None` when the package has no such part.
    pub(crate) fn read_part(&mut self, name: &str) -> Result<Option<String>, DocxError> {
        match self.read_bytes(name)? {
            Some(buf) => decode_text(name, buf).map(Some),
            None => Ok(None),
        }
    }

    /// Reads a part's bytes under the package's limits, or `None` when the
    /// package has no such part.
    pub(crate) fn read_bytes(&mut self, name: &str) -> Result<Option<Vec<u8>>, DocxError> {
        let Some(&index) = self.names.get(&part_key(name)) else {
            return Ok(None);
        };
        let limits = self.limits;
        let remaining_total = limits.max_total_bytes.saturating_sub(self.inflated);
        let cap = limits.max_part_bytes.min(remaining_total);
        let mut file = self.archive.by_index(index).map_err(|e| match e {
            zip::result::ZipError::UnsupportedArchive(msg) if msg.contains("assword") => {
                DocxError::Encrypted
            }
            other => DocxError::Zip(format!("{name}: {other}")),
        })?;
        let compressed = file.compressed_size().max(1);
        // Never allocate what the archive merely declares.
        let mut buf = Vec::with_capacity((file.size().min(cap).min(1 << 20)) as usize);
        let read = (&mut file)
            .take(cap + 1)
            .read_to_end(&mut buf)
            .map_err(|e| DocxError::Zip(format!("{name}: {e}")))?;
        let read = read as u64;
        if read > cap {
            return Err(if cap == limits.max_part_bytes {
                DocxError::TooLarge {
                    what: format!("part {name} once decompressed"),
                    limit: limits.max_part_bytes,
                }
            } else {
                DocxError::TooLarge {
                    what: "the package's decompressed parts".into(),
                    limit: limits.max_total_bytes,
                }
            });
        }
        if read > (1 << 20) && read / compressed > limits.max_ratio {
            return Err(DocxError::CompressionRatio {
                part: name.to_string(),
                ratio: read / compressed,
                limit: limits.max_ratio,
            });
        }
        self.inflated += read;
        Ok(Some(buf))
    }

    /// The relationships of `part` (from `<dir>/_rels/<file>.rels`), empty if none.
    pub(crate) fn relationships(&mut self, part: &str) -> Result<Vec<Relationship>, DocxError> {
        let (dir, file) = part.rsplit_once('/').unwrap_or(("", part));
        let rels_name = if dir.is_empty() {
            format!("_rels/{file}.rels")
        } else {
            format!("{dir}/_rels/{file}.rels")
        };
        let Some(xml) = self.read_part(&rels_name)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut reader = PartReader::new(&rels_name, &xml);
        loop {
            match reader.next()? {
                Ev::Start(_, e) | Ev::Empty(_, e) if local(&e) == "Relationship" => {
                    let kind = attr(&e, "Type")
                        .map(|t| t.rsplit('/').next().unwrap_or_default().to_string())
                        .unwrap_or_default();
                    let external =
                        attr(&e, "TargetMode").is_some_and(|m| m.eq_ignore_ascii_case("External"));
                    let target = match (external, attr(&e, "Target")) {
                        (false, Some(t)) => Some(resolve_target(dir, &t)),
                        _ => None,
                    };
                    let id = attr(&e, "Id").unwrap_or_default();
                    out.push(Relationship { id, kind, target });
                }
                Ev::Eof => break,
                _ => {}
            }
        }
        Ok(out)
    }
}

/// What identifies a part: its name with percent-escapes decoded (a zip
/// entry stores `header%201.xml` for the part a relationship names
/// `header 1.xml`, and Word finds it) and letter case folded (OPC part
/// names are case-insensitive).
fn part_key(name: &str) -> String {
    percent_encoding::percent_decode_str(name).decode_utf8_lossy().to_ascii_lowercase()
}

/// Resolves a relationship target against the source part's folder.
fn resolve_target(dir: &str, target: &str) -> String {
    let target = percent_encoding::percent_decode_str(target).decode_utf8_lossy();
    let mut segments: Vec<&str> = if let Some(abs) = target.strip_prefix('/') {
        return normalize(abs.split('/').collect());
    } else if dir.is_empty() {
        Vec::new()
    } else {
        dir.split('/').collect()
    };
    segments.extend(target.split('/'));
    normalize(segments)
}

fn normalize(segments: Vec<&str>) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in segments {
        match s {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.join("/")
}

/// XML parts are UTF-8 in practice; UTF-16 with a BOM is legal and handled.
fn decode_text(name: &str, buf: Vec<u8>) -> Result<String, DocxError> {
    if let Some((&bom, rest)) = buf.split_first_chunk::<2>()
        && (bom == [0xFF, 0xFE] || bom == [0xFE, 0xFF])
    {
        let le = bom == [0xFF, 0xFE];
        // An odd trailing byte is not a UTF-16 unit; it is ignored.
        let (pairs, _) = rest.as_chunks::<2>();
        let units: Vec<u16> = pairs
            .iter()
            .map(|&pair| if le { u16::from_le_bytes(pair) } else { u16::from_be_bytes(pair) })
            .collect();
        return String::from_utf16(&units)
            .map_err(|_| DocxError::Encoding { part: name.to_string() });
    }
    let start = if buf.starts_with(&[0xEF, 0xBB, 0xBF]) { 3 } else { 0 };
    match String::from_utf8(buf) {
        Ok(mut s) => {
            if start > 0 {
                s.drain(..start);
            }
            Ok(s)
        }
        Err(_) => Err(DocxError::Encoding { part: name.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_relative_to_the_source_folder() {
        assert_eq!(resolve_target("word", "styles.xml"), "word/styles.xml");
        assert_eq!(resolve_target("word", "../customXml/item1.xml"), "customXml/item1.xml");
        assert_eq!(resolve_target("word", "/word/document2.xml"), "word/document2.xml");
        assert_eq!(resolve_target("", "word/document.xml"), "word/document.xml");
        assert_eq!(resolve_target("word", "my%20notes.xml"), "word/my notes.xml");
    }

    #[test]
    fn a_percent_escape_before_a_multibyte_character_does_not_panic() {
        // "%a" then the two bytes of "é": taking the two bytes after '%' as
        // a string slice would cut "é" in half.
        assert_eq!(resolve_target("word", "%aé.xml"), "word/%aé.xml");
        assert_eq!(resolve_target("word", "my%20notes.xml"), "word/my notes.xml");
    }

    #[test]
    fn non_zip_inputs_are_named() {
        let mut ole = OLE_MAGIC.to_vec();
        ole.extend(std::iter::repeat_n(0u8, 64));
        assert!(matches!(sniff_non_zip(&ole), DocxError::LegacyDoc));
        ole.extend("EncryptionInfo".encode_utf16().flat_map(|u| u.to_le_bytes()));
        assert!(matches!(sniff_non_zip(&ole), DocxError::Encrypted));
        assert!(
            matches!(sniff_non_zip(b"{\\rtf1 hello"), DocxError::NotDocx(m) if m.contains("RTF"))
        );
        assert!(matches!(sniff_non_zip(b""), DocxError::NotDocx(m) if m.contains("empty")));
    }
}
