//! The commands that look at one file or the cache without scoring:
//! `render`, `gate` and `batches`.

use std::path::Path;
use std::sync::Arc;

use crate::cache::{BatchRecord, BatchState, Cache, CopyReport, copy_store};
use crate::check::gate::{self, GateResult};
use crate::commands::{CommandError, defaults};
use crate::docx;
use crate::isolated::Reader;
use crate::judge::{Judge, batch};
use crate::pdf;
use crate::report::utc;
use crate::task::OutputKind;
use crate::view::{self, ViewKind};
use crate::xlsx;

/// A file's view as text, and the reader's warnings about it: a .docx, an
/// .xlsx output as the judges see its sheets, or a PDF's pages.
pub fn render_file(
    path: &Path,
    kind: ViewKind,
    reader: &Reader,
) -> Result<(String, Vec<String>), CommandError> {
    let title = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let cannot = |e: Box<dyn std::error::Error + Send + Sync>| {
        CommandError::failed(e).context(format!("cannot render {}", path.display()))
    };
    let bytes = docx::read_file(path, &Default::default()).map_err(|e| cannot(e.into()))?;
    if xlsx::is_xlsx(&bytes) {
        let book = reader.workbook(bytes).map_err(|e| cannot(e.into()))?;
        return Ok((view::render_workbook(&book, kind, &title), Vec::new()));
    }
    if pdf::is_pdf(&bytes) {
        let read = reader.pdf(&bytes).map_err(|e| cannot(e.into()))?;
        let warnings = read
            .pages
            .iter()
            .filter_map(|p| Some(format!("{}: {}", path.display(), p.text_error.as_ref()?)))
            .collect();
        return Ok((view::render_pdf(&read, kind, &title), warnings));
    }
    let doc = reader.document(bytes).map_err(|e| cannot(e.into()))?;
    let warnings = doc.warnings.iter().map(|w| format!("{}: {w}", path.display())).collect();
    Ok((view::render(&doc, kind, &title), warnings))
}

/// The gate on one file: a .docx must hold a tracked change or comment by
/// `author` (beyond what `input` held); an .xlsx output must load and
/// fill a cell (its `input` is the template it is filled in from); a PDF
/// must load and differ from its `input`.
pub fn gate_file(
    path: &Path,
    author: &str,
    input: Option<&Path>,
    reader: &Reader,
) -> Result<GateResult, CommandError> {
    let cannot = |p: &Path, e: Box<dyn std::error::Error + Send + Sync>| {
        CommandError::refused(e).context(format!("cannot read the input {}", p.display()))
    };
    let bytes = match docx::read_file(path, &Default::default()) {
        Ok(b) => b,
        // Unreadable whatever its kind: the gate fails with the reason.
        Err(e) => return Ok(gate::check_against(&Err(e), author, None)),
    };
    // As `score` does: the kind expected (here, the one the file's name
    // promises) decides, never the content alone — a workbook named
    // .docx fails the gate of a .docx.
    let found = OutputKind::of_content(&bytes);
    if let Some(expected) = OutputKind::named_by(path)
        && expected != found
    {
        return Ok(GateResult::failed(crate::pipeline::prepare::wrong_kind(
            expected, bytes, reader,
        )));
    }
    if found == OutputKind::Pdf {
        let source = match input {
            Some(p) => {
                let b = docx::read_file(p, &Default::default()).map_err(|e| cannot(p, e.into()))?;
                let read =
                    pdf::from_bytes(&b, pdf::Limits::default()).map_err(|e| cannot(p, e.into()))?;
                Some((read, crate::hash::sha256_hex_bytes(&b)))
            }
            None => None,
        };
        let loaded = reader.pdf(&bytes);
        let against = source.as_ref().map(|(p, sha)| (p, sha.as_str()));
        return Ok(gate::check_pdf(&loaded, against, &crate::hash::sha256_hex_bytes(&bytes)));
    }
    if found == OutputKind::Workbook {
        let template = match input {
            Some(p) => Some(xlsx::load(p).map_err(|e| cannot(p, e.into()))?),
            None => None,
        };
        return Ok(gate::check_workbook(&reader.workbook(bytes), template.as_ref()));
    }
    let input_doc = match input {
        Some(p) => Some(docx::load(p).map_err(|e| cannot(p, e.into()))?),
        None => None,
    };
    Ok(gate::check_against(&reader.document(bytes), author, input_doc.as_ref()))
}

/// The batches a cache records, as a table.
pub fn batch_table(cache_path: &Path) -> Result<String, CommandError> {
    let recorded = recorded(cache_path)?.1;
    if recorded.is_empty() {
        return Ok("no batches recorded in this cache\n".into());
    }
    let mut out = String::from("id\tjudge\tprovider\tstate\tcalls\tsubmitted (UTC)\tnote\n");
    for b in &recorded {
        let state = match b.state {
            BatchState::Intent => "submitting",
            BatchState::Submitted => "submitted",
            BatchState::Collected => "collected",
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{state}\t{}\t{}\t{}\n",
            b.id,
            b.judge,
            b.provider,
            b.items,
            utc(b.created_at),
            b.note.as_deref().unwrap_or("")
        ));
    }
    Ok(out)
}

/// Which batches to cancel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchCancel {
    /// These, by id.
    Ids(Vec<String>),
    /// Every batch not yet collected.
    All,
}

/// Asks the providers to cancel batches recorded in a cache, with the
/// keys and endpoints of `panel` (found as for `score` when `None`). Each
/// batch's outcome, in order: what it answered before the cancel is
/// collected by the next run.
pub async fn cancel_batches(
    cache_path: &Path,
    panel: Option<&Path>,
    which: BatchCancel,
) -> Result<Vec<(String, Result<(), String>)>, CommandError> {
    let (cache, recorded) = recorded(cache_path)?;
    let ids = match which {
        BatchCancel::Ids(ids) => ids,
        BatchCancel::All => recorded
            .iter()
            .filter(|b| b.state == BatchState::Submitted)
            .map(|b| b.id.clone())
            .collect(),
    };
    let found = defaults::resolve(panel, None, Some(cache_path), Path::new("out"), None)?;
    let judges: Vec<Arc<Judge>> = found
        .panel
        .judges
        .iter()
        .map(|c| Judge::from_env(c.clone()).map(Arc::new))
        .collect::<Result<_, _>>()
        .map_err(CommandError::refused)?;
    let mut outcomes = Vec::with_capacity(ids.len());
    for id in ids {
        let outcome = batch::cancel(&cache, &judges, &id).await.map_err(|e| e.to_string());
        outcomes.push((id, outcome));
    }
    Ok(outcomes)
}

fn recorded(cache_path: &Path) -> Result<(Cache, Vec<BatchRecord>), CommandError> {
    let url = cache_path
        .to_str()
        .is_some_and(|p| p.starts_with("postgres://") || p.starts_with("postgresql://"));
    if !url && !cache_path.is_file() {
        return Err(CommandError::refused(format!(
            "no cache at {}",
            crate::cache::shown_location(cache_path)
        )));
    }
    let cache = Cache::open(cache_path).map_err(CommandError::refused)?;
    let recorded = cache.batches().map_err(CommandError::failed)?;
    Ok((cache, recorded))
}

/// `redjury cache copy FROM TO`: every row of one store (a SQLite file or
/// a `postgres://` URL) into another, checked by counting. A source that
/// does not exist is a refusal.
pub fn copy_cache(from: &Path, to: &Path) -> Result<CopyReport, CommandError> {
    let url = from
        .to_str()
        .is_some_and(|p| p.starts_with("postgres://") || p.starts_with("postgresql://"));
    if !url && !from.is_file() {
        return Err(CommandError::refused(format!(
            "no cache at {}",
            crate::cache::shown_location(from)
        )));
    }
    copy_store(from, to).map_err(CommandError::failed)
}
