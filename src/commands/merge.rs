//! `redjury merge DIR… --out DIR`: a sharded run's parts joined.

use std::path::{Path, PathBuf};

use crate::commands::{CommandError, defaults};
use crate::pipeline::run::RunError;
use crate::report::Summary;

/// What `redjury merge` is asked.
#[derive(Debug, Clone)]
pub struct MergeRequest {
    /// The parts' results folders.
    pub shards: Vec<PathBuf>,
    /// Where the joined folder goes.
    pub out: PathBuf,
    /// The price table (found as for `score` when `None`).
    pub prices: Option<PathBuf>,
}

/// The joined folder.
pub struct Merged {
    /// Its summary.
    pub summary: Summary,
    /// Where it is.
    pub out_dir: PathBuf,
}

/// Joins the parts; parts that do not belong together, or an `--out` that
/// is not a results folder, are refused before anything is written.
pub fn merge(request: &MergeRequest) -> Result<Merged, CommandError> {
    let found = defaults::resolve(None, request.prices.as_deref(), None, Path::new("."), None)?;
    let report = crate::pipeline::merge(&request.shards, &request.out, &found.prices).map_err(
        |e| match e {
            RunError::Write { .. } => CommandError::failed(e),
            other => CommandError::refused(other),
        },
    )?;
    Ok(Merged { summary: report.summary, out_dir: report.out_dir })
}
