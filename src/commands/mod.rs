//! The commands redjury offers — `score`, `rejudge`, `report`,
//! `calibrate`, `serve`, `batches`, `render`, `gate` — each composed from
//! the stages, for the binary and for any program that runs them itself.
//!
//! Owns: where the panel, prices and cache come from when nothing names
//! them (`defaults.rs`), what each command does in which order, the text it
//! has to say, and whether a problem is a refusal (found before any work:
//! exit 2) or a failure met while working (exit 1). Must never hold a
//! stage's logic, compute a figure (`aggregate`) or format one (`report`),
//! and never prints: it returns text for its caller to show.

mod defaults;
mod inspect;
mod merge;
mod reading;
mod report;
mod run;
mod serve;

use std::error::Error;
use std::path::{Path, PathBuf};

pub use defaults::Found;
pub use inspect::{BatchCancel, batch_table, cancel_batches, copy_cache, gate_file, render_file};
pub use merge::{MergeRequest, Merged, merge};
pub use reading::{READER_MODE, isolated_reader, serve_reader_child};
pub use report::{HtmlReport, ReportOutput, ReportRequest, report};
pub use run::{
    CalibrateRequest, CalibrationDone, PlannedCalibration, PlannedRun, RunInputs, RunRequest,
};
pub use serve::{BoundService, PlannedService, ServeRequest};

use crate::pipeline::{Scorer, ScorerError};
use crate::prompt::Templates;

/// A command's error, with what it means for the caller: refused before
/// any work for how the command was set up (nothing was spent), or failed
/// while working.
#[derive(Debug)]
pub struct CommandError {
    /// Which of the two it is.
    pub ending: Ending,
    context: Option<String>,
    source: Box<dyn Error + Send + Sync>,
}

/// How a command that did not succeed ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Refused before any work for how it was set up: exit 2.
    Refused,
    /// Failed while working: exit 1.
    Failed,
}

impl CommandError {
    /// A refusal: the setup is wrong, nothing was spent.
    pub fn refused(e: impl Into<Box<dyn Error + Send + Sync>>) -> CommandError {
        CommandError { ending: Ending::Refused, context: None, source: e.into() }
    }

    /// A failure met while working.
    pub fn failed(e: impl Into<Box<dyn Error + Send + Sync>>) -> CommandError {
        CommandError { ending: Ending::Failed, context: None, source: e.into() }
    }

    /// Says what was being done when it failed ("cannot write x").
    fn context(mut self, what: impl Into<String>) -> CommandError {
        self.context = Some(what.into());
        self
    }

    /// The process exit code the binary gives it.
    pub fn exit_code(&self) -> u8 {
        match self.ending {
            Ending::Refused => 2,
            Ending::Failed => 1,
        }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.context {
            Some(c) => f.write_str(c),
            None => self.source.fmt(f),
        }
    }
}

impl Error for CommandError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match &self.context {
            Some(_) => Some(self.source.as_ref()),
            None => self.source.source(),
        }
    }
}

/// Who judges and with what, as every command that judges is told:
/// each `None` is found by [`defaults`](Found).
#[derive(Debug, Clone, Default)]
pub struct Judging {
    /// The panel file.
    pub panel: Option<PathBuf>,
    /// The cache file.
    pub cache: Option<PathBuf>,
    /// A folder with `system.md` and `user.md` instead of the built-in prompts.
    pub prompts: Option<PathBuf>,
    /// The price table.
    pub prices: Option<PathBuf>,
}

impl Judging {
    fn templates(&self) -> Result<Templates, CommandError> {
        match &self.prompts {
            Some(dir) => Templates::from_dir(dir).map_err(CommandError::refused),
            None => Ok(Templates::builtin()),
        }
    }

    /// The panel, prices and cache, from the flags or the defaults: `out`
    /// places the default cache, `tasks` is where a panel beside the tasks
    /// is looked for.
    pub fn resolve(&self, out: &Path, tasks: Option<&Path>) -> Result<Found, CommandError> {
        defaults::resolve(
            self.panel.as_deref(),
            self.prices.as_deref(),
            self.cache.as_deref(),
            out,
            tasks,
        )
    }
}

/// A quorum that cannot be met, or a cache that cannot be used (a newer
/// redjury's, not a cache at all), is a refusal before any work, not a
/// failure.
fn built(scorer: Result<Scorer, ScorerError>) -> Result<Scorer, CommandError> {
    scorer.map_err(|e| match e {
        ScorerError::QuorumUnreachable { .. } | ScorerError::Cache(_) => CommandError::refused(e),
        other => CommandError::failed(other),
    })
}
