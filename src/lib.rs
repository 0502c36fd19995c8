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
//! use redjury::{Dispatch, JudgeMode, OutputSource, PanelConfig, Scorer, ScorerConfig, Status, Templates};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let scorer = Scorer::new(ScorerConfig {
//!     panel: PanelConfig::load("panel.toml".as_ref())?,
//!     templates: Templates::builtin(),
//!     cache_path: "cache.sqlite".into(),
//!     mode: JudgeMode::Live,
//!     dispatch: Dispatch::Live,
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

pub use redjury_readers::{calendar, docx, xlsx};

pub mod aggregate;
pub mod cache;
pub mod calibrate;
pub mod check;
pub mod hash;
pub mod judge;
pub mod panel;
pub mod pipeline;
pub mod prompt;
pub mod report;
pub mod score;
pub mod serve;
pub mod task;
pub mod verdict;
pub mod view;

pub use judge::config::PanelConfig;
pub use pipeline::load_tasks;
pub use pipeline::{Dispatch, JudgeMode, OutputSource, Scorer, ScorerConfig, ScorerError};
pub use prompt::Templates;
pub use score::{Reward, RubricResult, Status, TaskResult};
pub use serve::{OnIncomplete, ServeOptions, Service};
pub use task::{Rubric, Side, Task, TaskError, task_from_json};
pub use verdict::Verdict;
