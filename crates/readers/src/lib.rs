//! redjury's readers: the files an agent's output and a task's inputs
//! come as, read into typed models — a Word .docx with its tracked
//! changes, comments, numbering and stories ([`docx`]), an Excel .xlsx
//! with its cells, number formats and merged ranges ([`xlsx`]), a PDF with
//! its pages, positioned glyphs, outline and annotations ([`pdf`]) — and
//! the calendar arithmetic they need ([`calendar`]).
//!
//! Owns: everything that touches a file's bytes. Must never panic, hang
//! or allocate by a size a file declares on any input: every read is
//! bounded by [`docx::Limits`] or [`pdf::Limits`], a DTD is refused, and
//! the crate denies `unwrap`, indexing and byte-position string slicing
//! (the PDF reader's third-party text extractor is guarded, not proven:
//! see [`pdf`]). Depends on nothing else of redjury's: the compiler, not a
//! text scan, keeps it so.
//!
//! ```
//! let err = redjury_readers::docx::from_bytes(b"not a zip".to_vec(), Default::default());
//! assert_eq!(
//!     err.err().map(|e| e.to_string()).as_deref(),
//!     Some("not a .docx: it does not start with a zip signature")
//! );
//! ```

pub mod calendar;
pub mod docx;
pub mod isolated;
pub mod pdf;
pub mod xlsx;

/// What a caught panic says (its `&str` or `String` payload), for the
/// reason a file's reader records instead of printing it.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into())
}
