//! The wire between the parent and a reader child, over the child's
//! standard input and output.
//!
//! The child greets with [`HELLO`] and its version; then each request is
//! one byte of [`Kind`], the file's length (u64, little-endian) and its
//! bytes, and each answer one byte ([`CONTINUING`] or [`RETIRING`]), the
//! length of a JSON [`Model`] and the JSON. Both ends are this crate at
//! the same version, and the greeting proves it.
//!
//! Owns: the framing and the answer's type. Must never: read a length
//! without a bound, or decode an answer of another version.

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

use super::{Failure, Kind};
use crate::docx::Document;
use crate::pdf::Pdf;
use crate::xlsx::Workbook;

/// The greeting's first bytes.
pub(super) const HELLO: &[u8; 15] = b"redjury-reader\n";

/// What must match between parent and child: the wire's own version and
/// the crate's (the models change with it).
pub(super) fn version() -> String {
    format!("wire 1, redjury-readers {}", env!("CARGO_PKG_VERSION"))
}

/// The child goes on reading after this answer.
pub(super) const CONTINUING: u8 = 0;
/// The child exits after this answer (it has grown; a fresh one replaces it).
pub(super) const RETIRING: u8 = 1;

/// The largest answer the parent takes: a model several times the size of
/// anything a reader holds within its limits.
pub(super) const MAX_ANSWER_BYTES: u64 = 2 << 30;

/// A reader's answer.
#[derive(Serialize, Deserialize)]
#[serde(tag = "model", content = "read", rename_all = "snake_case")]
pub(super) enum Model {
    /// A .docx.
    Document(Box<Document>),
    /// An .xlsx.
    Workbook(Workbook),
    /// A PDF.
    Pdf(Box<Pdf>),
    /// The reader's refusal, as it says it.
    Refused(String),
}

impl Model {
    /// What a caller gets for an answer that is not the model it asked for:
    /// the refusal, or (never from a child of this version) a crash.
    pub(super) fn unexpected(self) -> Failure {
        match self {
            Model::Refused(why) => Failure::Refused(why),
            _ => Failure::Crashed { how: "it answered with another kind of model".into() },
        }
    }
}

impl Kind {
    fn byte(self) -> u8 {
        match self {
            Kind::Document => b'd',
            Kind::Workbook => b'x',
            Kind::Pdf => b'p',
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        match b {
            b'd' => Some(Kind::Document),
            b'x' => Some(Kind::Workbook),
            b'p' => Some(Kind::Pdf),
            _ => None,
        }
    }
}

/// Writes the greeting.
pub(super) fn greet(out: &mut impl Write) -> io::Result<()> {
    let v = version();
    out.write_all(HELLO)?;
    out.write_all(&(v.len() as u64).to_le_bytes())?;
    out.write_all(v.as_bytes())?;
    out.flush()
}

/// Reads the greeting; the child's version, or why it is not one.
pub(super) fn read_greeting(input: &mut impl Read) -> io::Result<String> {
    let mut hello = [0u8; 15];
    input.read_exact(&mut hello)?;
    if &hello != HELLO {
        return Err(io::Error::other("the program started is not a redjury reader"));
    }
    let len = read_len(input, 256)?;
    let mut v = vec![0u8; len];
    input.read_exact(&mut v)?;
    String::from_utf8(v).map_err(|_| io::Error::other("its version is not text"))
}

/// Sends a file.
pub(super) fn write_request(out: &mut impl Write, kind: Kind, bytes: &[u8]) -> io::Result<()> {
    out.write_all(&[kind.byte()])?;
    out.write_all(&(bytes.len() as u64).to_le_bytes())?;
    out.write_all(bytes)?;
    out.flush()
}

/// A request's head: the kind and the file's length; `None` at the end of
/// the input (the parent closed it).
pub(super) fn read_request_head(input: &mut impl Read) -> io::Result<Option<(Kind, u64)>> {
    let mut kind = [0u8; 1];
    if input.read(&mut kind)? == 0 {
        return Ok(None);
    }
    let mut len = [0u8; 8];
    input.read_exact(&mut len)?;
    let kind = Kind::from_byte(kind[0]).ok_or_else(|| io::Error::other("unknown kind"))?;
    Ok(Some((kind, u64::from_le_bytes(len))))
}

/// Writes an answer.
pub(super) fn write_answer(out: &mut impl Write, state: u8, json: &[u8]) -> io::Result<()> {
    out.write_all(&[state])?;
    out.write_all(&(json.len() as u64).to_le_bytes())?;
    out.write_all(json)?;
    out.flush()
}

/// Reads one answer: its state byte and its JSON, bounded.
pub(super) fn read_answer(input: &mut impl Read) -> io::Result<(u8, Vec<u8>)> {
    let mut state = [0u8; 1];
    input.read_exact(&mut state)?;
    let len = read_len(input, MAX_ANSWER_BYTES)?;
    // Read as it comes, never allocated by the length alone.
    let mut json = Vec::new();
    input.take(len as u64).read_to_end(&mut json)?;
    if json.len() != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok((state[0], json))
}

fn read_len(input: &mut impl Read, max: u64) -> io::Result<usize> {
    let mut len = [0u8; 8];
    input.read_exact(&mut len)?;
    let len = u64::from_le_bytes(len);
    if len > max {
        return Err(io::Error::other(format!("a length of {len} bytes, above {max}")));
    }
    usize::try_from(len).map_err(|_| io::Error::other("a length this machine cannot hold"))
}

/// Decodes an answer's JSON. A document nests as deep as its XML may (512
/// elements), deeper than serde_json's default guard, so the guard is off
/// and the decoding runs on a thread whose stack holds that depth.
pub(super) fn decode(json: Vec<u8>) -> Result<Model, Failure> {
    let decoding = std::thread::Builder::new().stack_size(64 << 20).spawn(move || {
        let mut de = serde_json::Deserializer::from_slice(&json);
        de.disable_recursion_limit();
        let model = Model::deserialize(&mut de)?;
        de.end()?;
        Ok::<Model, serde_json::Error>(model)
    });
    let joined = decoding
        .map_err(|e| Failure::Unavailable(format!("cannot start a thread to decode: {e}")))?
        .join();
    match joined {
        Ok(Ok(mut model)) => {
            if let Model::Document(doc) = &mut model {
                doc.reindex_comments();
            }
            Ok(model)
        }
        Ok(Err(e)) => Err(Failure::Crashed { how: format!("an answer that cannot be read: {e}") }),
        Err(_) => Err(Failure::Crashed { how: "an answer that cannot be decoded".into() }),
    }
}
