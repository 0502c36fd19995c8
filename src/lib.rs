//! redjury: scores contract redlines (.docx with tracked changes and
//! comments) with a panel of LLM judges.
//!
//! Data flows one way, one module per stage; see ARCHITECTURE.md. A Rust
//! program (a trainer, an evaluation harness) needs only what is
//! re-exported here: build a [`Scorer`] once and share it; every call to it
//! shares the judges' rate limits, the cache and the de-duplication of
//! identical judge calls.
//!
//! ```no_run
//! use std::sync::Arc;
//! use redjury::{Dispatch, JudgeMode, OutputSource, PanelConfig, Reader, Scorer, ScorerConfig, Status, Templates};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let scorer = Scorer::new(ScorerConfig {
//!     panel: PanelConfig::load("panel.toml".as_ref())?,
//!     templates: Templates::builtin(),
//!     cache_path: "cache.sqlite".into(),
//!     mode: JudgeMode::Live,
//!     dispatch: Dispatch::Live,
//!     // Outputs from a policy are untrusted: read them in bounded children
//!     // (`redjury::isolated_reader()`, for a binary that runs
//!     // `redjury::serve_reader_child` in its reader mode).
//!     reader: Reader::InProcess,
//! })?;
//! let tasks = redjury::load_tasks("rubrics".as_ref())?;
//! let task = Arc::new(tasks.into_iter().next().ok_or("no task")?);
//! let output = OutputSource::Bytes(std::fs::read("rollout.docx")?);
//! let row = scorer.score(task, output, "step-12-sample-3").await;
//! match row.status {
//!     // A gate failure is a real 0; a scored row has its reward.
//!     Status::Scored | Status::GateFailed => println!("reward {:?}", row.reward),
//!     // Never a silent 0: the judges could not reach the quorum.
//!     Status::Incomplete | Status::Pending => println!("no reward: {:?}", row.reason),
//! }
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

// The front door: the modules are private, and what a program embedding
// redjury (a trainer, an evaluation harness) and the binary need is
// re-exported here, by what it is in the domain.

mod aggregate;
mod cache;
mod calibrate;
mod check;
mod commands;
mod hash;
mod judge;
mod panel;
mod pipeline;
mod prompt;
mod report;
mod score;
mod serve;
mod task;
mod verdict;
mod view;

/// Reading untrusted files in bounded children of this binary (see
/// [`isolated_reader`]), or in process.
pub use redjury_readers::isolated;
pub use redjury_readers::isolated::{Bounds as ReaderBounds, Failure as ReaderFailure, Reader};
/// The readers: a .docx into its model, an .xlsx into its workbook, a PDF
/// into its pages, outline and annotations, and the calendar arithmetic.
pub use redjury_readers::{calendar, docx, pdf, xlsx};

// Tasks and the outputs that answer them.
pub use pipeline::load_tasks;
pub use task::check_spec::PreparedCheck;
pub use task::{
    Output, OutputKind, Outputs, Rubric, Side, Task, TaskError, find_outputs, task_from_json,
};

// The gate, the deterministic checks and the views judges read.
pub use check::gate::{
    GateResult, check as gate, check_against as gate_against, check_pdf as gate_pdf,
    check_workbook as gate_workbook,
};
pub use check::{
    Outcome as CheckOutcome, evaluate as evaluate_check, evaluate_pdf as evaluate_pdf_checks,
    evaluate_workbook as evaluate_workbook_checks,
};
pub use view::{
    ViewKind, render as render_view, render_against as render_view_against,
    render_pdf as render_pdf_view, render_workbook as render_workbook_view,
};

// Judges, their prompts and the store of their answers.
pub use cache::{
    BatchItem, BatchRecord, BatchState, Cache, CacheError, CallKey, CopyReport, Lease, Outcome,
    SCHEMA_VERSION, StoredResponse, Usage, copy_store,
};
pub use judge::batch::{
    BatchProgress, BatchReport, Leftover, Plan as BatchPlan, wait as wait_for_batches,
};
pub use judge::config::{
    ConfigError, Guarantee, JudgeConfig, OutputTokensField, PanelConfig, Provider, Rate,
    StructuredOutput,
};
pub use judge::verdicts::JudgeVote;
pub use judge::{Auth, CallResult, Judge, JudgeError};
pub use prompt::{Prompt, PromptError, Templates};

// Scoring: the one pipeline, its runs and its rows.
pub use pipeline::run::{RejudgeJob, RunEnd, RunError, RunReport, RunSettings, ScoreJob, Views};
pub use pipeline::{
    BatchFallback, Dispatch, JudgeMode, OutputSource, Progress, STORE_WAIT, Scorer, ScorerConfig,
    ScorerError, Silent, Unsettled,
};
pub use score::{Reward, RubricResult, Status, TaskResult};
pub use verdict::Verdict;

// Figures and results folders.
pub use aggregate::Bootstrap;
pub use aggregate::agreement::Agreement;
pub use aggregate::{PriceError, Prices};
pub use report::markdown::outcome;
pub use report::{ReportError, Shard, Summary, load_run, write_summary};

// Calibration against gold, and the reward service.
pub use calibrate::doctored::{
    DoctorError, injected as injection_probe_document, null_output as null_probe_document,
};
pub use calibrate::{
    CalibrateError, CalibrateSettings, Calibration, FlaggedJudges, GoldError, GoldSet,
    LabelledOutput, Probe,
};
pub use serve::{OnIncomplete, ServeEnd, ServeError, ServeOptions, Service};

// The commands, as the binary runs them.
pub use commands::{
    BatchCancel, BoundService, CalibrateRequest, CalibrationDone, CommandError, Ending, Found,
    HtmlReport, Judging, MergeRequest, Merged, PlannedCalibration, PlannedRun, PlannedService,
    ReportOutput, ReportRequest, RunInputs, RunRequest, ServeRequest, batch_table, cancel_batches,
    copy_cache, gate_file, merge, render_file, report,
};
pub use commands::{READER_MODE, isolated_reader, serve_reader_child};
