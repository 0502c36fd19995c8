//! redjury: scores contract redlines (.docx with tracked changes and
//! comments) with a panel of LLM judges.
//!
//! Data flows one way, one module per stage; see ARCHITECTURE.md.

pub mod aggregate;
pub mod cache;
pub mod check;
pub mod docx;
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
