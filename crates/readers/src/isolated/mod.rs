//! Reading untrusted files in a bounded child process: the second wall
//! behind the readers' own limits.
//!
//! The readers bound what they know a file can cost, but a PDF's font
//! programs and CMaps are parsed by a third-party crate that can still
//! recurse until the stack overflows (an abort no `catch_unwind` stops) or
//! allocate by a number the file declares. So an output is read by the
//! same binary started in a reader mode ([`serve_child`]), one of a small
//! pool reused across files ([`Pool`]), under limits the operating system
//! enforces ([`Bounds`]: address space, CPU time, wall time, stack, no file
//! written, no descriptor inherited, no environment). The child answers
//! with the typed model, versioned; whatever happens to it instead becomes
//! a [`Failure`] with its reason — "needed more than 256 MB", "took longer
//! than 5 s", "crashed (stack overflow)" — which the caller records where
//! the file's other reasons go.
//!
//! [`Reader`] is the one front: in process (an embedding program's choice,
//! and the tests') or isolated, the same models and errors either way.
//!
//! Owns: the child's limits, the wire between parent and child, and the
//! reasons a child gives when it dies. Must never: let a file's failure
//! reach the calling process; allocate by a length the child declares
//! without a bound; hand a caller a model from a child of another version.

mod child;
mod pool;
mod wire;

use std::sync::Arc;
use std::time::Duration;

pub use child::serve_child;
pub use pool::Pool;

use crate::docx::{self, Document, DocxError};
use crate::pdf::{self, Pdf, PdfError};
use crate::xlsx::{self, Workbook, XlsxError};

/// What the operating system lets one read cost in the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Memory the reader may map beyond what the child holds when a file
    /// arrives and the file's own bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// CPU time for one file (`RLIMIT_CPU`, whole seconds, rounded up).
    pub cpu: Duration,
    /// Wall time for one file, from sending it to the answer; the parent
    /// kills the child at this point.
    pub wall: Duration,
    /// The reading thread's stack.
    pub stack_bytes: u64,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            memory_bytes: 256 << 20,
            cpu: Duration::from_secs(5),
            wall: Duration::from_secs(5),
            stack_bytes: 8 << 20,
        }
    }
}

/// Why a file read in the child gave no model, or why no child could read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// The reader refused the file, with its own reason.
    #[error("{0}")]
    Refused(String),
    /// The reader needed more memory than the bound.
    #[error(
        "the reader needed more than {} MB to read this file (a file made to cost memory, or one larger than redjury reads)",
        .limit_bytes >> 20
    )]
    Memory {
        /// The bound, in bytes.
        limit_bytes: u64,
    },
    /// The reader took longer than the bound (wall or CPU time).
    #[error("the reader took longer than {} s to read this file (a file made to cost time)", .limit.as_secs_f64())]
    Time {
        /// The bound.
        limit: Duration,
    },
    /// The reader's process died.
    #[error("the reader crashed on this file ({how})")]
    Crashed {
        /// How: "stack overflow", "signal 11", "an answer that cannot be read" …
        how: String,
    },
    /// No reader process could be started or talked to: a problem of this
    /// machine, not of the file.
    #[error("no reader process could read this file: {0}")]
    Unavailable(String),
}

/// Which reader a file goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Word .docx.
    Document,
    /// An Excel .xlsx.
    Workbook,
    /// A PDF.
    Pdf,
}

/// Where files are read: in this process, or in a bounded child.
#[derive(Clone, Default)]
pub enum Reader {
    /// In this process, under the readers' own limits only: for programs
    /// that read trusted files, and for tests of the readers themselves.
    #[default]
    InProcess,
    /// In a child process under [`Bounds`]: a file that would abort, exhaust
    /// memory or hang the reader costs a reason, not the process.
    Isolated(Arc<Pool>),
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reader::InProcess => f.write_str("Reader::InProcess"),
            Reader::Isolated(pool) => write!(f, "Reader::Isolated({:?})", pool.bounds()),
        }
    }
}

impl Reader {
    /// A .docx, under the default [`docx::Limits`].
    pub fn document(&self, bytes: Vec<u8>) -> Result<Document, DocxError> {
        match self {
            Reader::InProcess => docx::from_bytes(bytes, docx::Limits::default()),
            Reader::Isolated(pool) => match pool.read(Kind::Document, &bytes) {
                Ok(wire::Model::Document(doc)) => Ok(*doc),
                Ok(other) => Err(DocxError::Isolated(other.unexpected())),
                Err(f) => Err(DocxError::Isolated(f)),
            },
        }
    }

    /// An .xlsx, under the default [`docx::Limits`].
    pub fn workbook(&self, bytes: Vec<u8>) -> Result<Workbook, XlsxError> {
        match self {
            Reader::InProcess => xlsx::from_bytes(bytes, docx::Limits::default()),
            Reader::Isolated(pool) => match pool.read(Kind::Workbook, &bytes) {
                Ok(wire::Model::Workbook(book)) => Ok(book),
                Ok(other) => Err(XlsxError::Isolated(other.unexpected())),
                Err(f) => Err(XlsxError::Isolated(f)),
            },
        }
    }

    /// A PDF, under the default [`pdf::Limits`].
    pub fn pdf(&self, bytes: &[u8]) -> Result<Pdf, PdfError> {
        match self {
            Reader::InProcess => pdf::from_bytes(bytes, pdf::Limits::default()),
            Reader::Isolated(pool) => match pool.read(Kind::Pdf, bytes) {
                Ok(wire::Model::Pdf(pdf)) => Ok(*pdf),
                Ok(other) => Err(PdfError::Isolated(other.unexpected())),
                Err(f) => Err(PdfError::Isolated(f)),
            },
        }
    }
}

#[cfg(test)]
mod tests;
