//! `redjury report`: a results folder's tables and agreement as text, or
//! the self-contained HTML page, with an optional paired comparison and
//! calibration.

use std::path::{Path, PathBuf};

use crate::aggregate::Bootstrap;
use crate::aggregate::agreement::agreement;
use crate::aggregate::compare::compare;
use crate::calibrate;
use crate::commands::CommandError;
use crate::report::{self as results, html, markdown};

/// What `redjury report` is asked.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// The results folder.
    pub run: PathBuf,
    /// Another results folder to compare against.
    pub compare: Option<PathBuf>,
    /// The paired comparison's bootstrap.
    pub bootstrap: Bootstrap,
    /// A `redjury calibrate` folder.
    pub calibration: Option<PathBuf>,
    /// Write the HTML page instead of the text.
    pub html: Option<HtmlReport>,
}

/// Where the HTML page goes and how much of the views it embeds.
#[derive(Debug, Clone)]
pub struct HtmlReport {
    /// The page's file; `None` is `report.html` in the results folder.
    pub file: Option<PathBuf>,
    /// Compressed views embedded, at most, in bytes.
    pub views_budget: usize,
}

/// What `redjury report` produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportOutput {
    /// The text to print.
    Text(String),
    /// The HTML page was written here.
    Html(PathBuf),
}

/// Builds the report a request asks for.
pub fn report(request: &ReportRequest) -> Result<ReportOutput, CommandError> {
    let (rows, summary) = results::load_run(&request.run).map_err(CommandError::failed)?;
    let comparison = match &request.compare {
        Some(other) => {
            let (other_rows, _) = results::load_run(other).map_err(CommandError::failed)?;
            Some(compare(&rows, &other_rows, request.bootstrap))
        }
        None => None,
    };
    let agreement = agreement(&rows);
    let calibration = match &request.calibration {
        Some(dir) => Some(calibrate::report::load(dir).map_err(CommandError::failed)?),
        None => None,
    };
    let Some(wanted) = &request.html else {
        let mut text = markdown::summary(&summary);
        if let Some(c) = &comparison {
            text.push('\n');
            text.push_str(&markdown::comparison(c));
        }
        text.push_str(&markdown::agreement(&agreement));
        if let Some(c) = &calibration {
            text.push_str(&calibrate::report::for_run(c, &summary));
        }
        return Ok(ReportOutput::Text(text));
    };
    let file = wanted.file.clone().unwrap_or_else(|| request.run.join("report.html"));
    let trust = calibration.as_ref().map(calibrate::report::trust);
    let views_dir = request.run.join("views");
    let page = html::Page {
        dir: &request.run,
        summary: &summary,
        rows: &rows,
        agreement: &agreement,
        trust: trust.as_deref(),
        against: comparison
            .as_ref()
            .zip(request.compare.as_deref())
            .map(|(c, dir)| html::Against { dir, comparison: c }),
        views: html::Views {
            dir: views_dir.is_dir().then_some(views_dir.as_path()),
            budget: wanted.views_budget,
        },
    };
    write_page(&file, &html::render(&page))?;
    Ok(ReportOutput::Html(file))
}

fn write_page(file: &Path, page: &str) -> Result<(), CommandError> {
    std::fs::write(file, page)
        .map_err(|e| CommandError::failed(e).context(format!("cannot write {}", file.display())))
}
