//! The results folder (`--out`): checked before any work, written beside
//! itself and swapped in whole when the run ends.
//!
//! Owns: what `--out` may be (never the outputs or the tasks folder, never
//! a folder of files redjury did not write that is not a run), keeping the
//! files a user put in a run folder through a rerun, and removing the
//! partial folders of runs whose process is gone. Must never delete a file
//! redjury did not write, and never leave a results folder that mixes two
//! runs.

use std::path::{Path, PathBuf};

use super::run::{PENDING_ANSWERS, RunError};

/// What a run writes in its results folder: all a rerun replaces.
pub(crate) const RUN_FILES: [&str; 7] = [
    "results.jsonl",
    "summary.json",
    "summary.md",
    "rewards.jsonl",
    "prompts.jsonl",
    "views",
    PENDING_ANSWERS,
];

/// An `--out` checked before any work.
#[derive(Debug)]
pub(crate) struct Target {
    out: PathBuf,
    /// Entries of an earlier run's folder that redjury did not write: moved
    /// into the new folder, never deleted.
    keep: Vec<PathBuf>,
}

impl Target {
    /// Files and folders in it that redjury did not write (kept by the run).
    pub(crate) fn kept(&self) -> &[PathBuf] {
        &self.keep
    }
}

/// Checks `out` before any work: refused when it is (or holds) one of
/// `inputs` (the outputs, the tasks, an earlier run being rejudged), when
/// it is a file, or when it holds files redjury did not write and no run.
pub(crate) fn check(out: &Path, inputs: &[&Path]) -> Result<Target, RunError> {
    let absolute = |p: &Path| p.canonicalize().or_else(|_| std::path::absolute(p)).ok();
    if let Some(o) = absolute(out) {
        for input in inputs {
            if absolute(input).is_some_and(|i| i.starts_with(&o)) {
                return Err(RunError::Protected {
                    path: out.to_path_buf(),
                    input: input.to_path_buf(),
                });
            }
        }
    }
    if out.exists() && !out.is_dir() {
        return Err(RunError::Foreign { path: out.to_path_buf() });
    }
    let entries = match std::fs::read_dir(out) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target { out: out.to_path_buf(), keep: Vec::new() });
        }
        Err(source) => return Err(RunError::Write { path: out.to_path_buf(), source }),
    };
    let keep: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| !RUN_FILES.iter().any(|f| e.file_name() == *f))
        .map(|e| e.path())
        .collect();
    if !keep.is_empty() && !out.join("summary.json").is_file() {
        return Err(RunError::Foreign { path: out.to_path_buf() });
    }
    Ok(Target { out: out.to_path_buf(), keep })
}

/// The folder a run writes into before it is swapped in as `--out`.
pub(super) struct Staging {
    target: Target,
    pub(super) dir: PathBuf,
}

fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Write { path: path.to_path_buf(), source }
}

impl Staging {
    /// A fresh folder beside `--out`; partial folders that killed runs
    /// left there are removed first.
    pub(super) fn start(target: Target) -> Result<Staging, RunError> {
        let name = target
            .out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".into());
        let parent =
            target.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(write_error(parent))?;
        remove_abandoned(parent, &name);
        let dir = parent.join(format!(".{name}.partial-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(write_error(&dir))?;
        }
        std::fs::create_dir_all(&dir).map_err(write_error(&dir))?;
        Ok(Staging { target, dir })
    }

    /// Puts the finished folder in place of `--out`, whole, with the files
    /// a user put in the earlier run's folder moved into it.
    pub(super) fn swap(self) -> Result<(), RunError> {
        let out = &self.target.out;
        for kept in &self.target.keep {
            if let Some(name) = kept.file_name() {
                std::fs::rename(kept, self.dir.join(name)).map_err(write_error(kept))?;
            }
        }
        let old = self.dir.with_file_name(format!(
            ".{}.old-{}",
            out.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
            std::process::id()
        ));
        if out.exists() {
            std::fs::rename(out, &old).map_err(write_error(out))?;
        }
        std::fs::rename(&self.dir, out).map_err(write_error(out))?;
        if old.exists() {
            // Holds only what an earlier run wrote: the rest was moved.
            std::fs::remove_dir_all(&old).map_err(write_error(&old))?;
        }
        Ok(())
    }
}

/// Removes `.NAME.partial-PID` and `.NAME.old-PID` folders beside `--out`
/// whose process is gone (a run killed midway). Only Linux can tell; a
/// folder whose process may live is left alone.
fn remove_abandoned(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let pid = [".partial-", ".old-"].iter().find_map(|kind| {
            file.strip_prefix(&format!(".{name}{kind}")).and_then(|p| p.parse::<u32>().ok())
        });
        let Some(pid) = pid else { continue };
        let gone = cfg!(target_os = "linux")
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists();
        if gone && entry.path().is_dir() {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => tracing::info!("removed {}, left by a run that was killed", file),
                Err(e) => tracing::warn!("cannot remove {}: {e}", entry.path().display()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"))
    }

    #[test]
    fn a_run_replaces_its_results_folder_whole_and_keeps_what_a_user_put_there() {
        let dir = temp();
        let out = dir.path().join("run");
        std::fs::create_dir_all(out.join("views")).expect("mkdir");
        std::fs::write(out.join("summary.json"), "{}").expect("write");
        std::fs::write(out.join("views/stale.md"), "old").expect("write");
        std::fs::write(out.join("notes.txt"), "mine").expect("write");
        let staging = Staging::start(check(&out, &[]).expect("checked")).expect("starts");
        assert!(out.join("views/stale.md").exists(), "the old results stay until the swap");
        std::fs::write(staging.dir.join("summary.json"), "{\"new\": 1}").expect("write");
        staging.swap().expect("swaps");
        assert_eq!(
            std::fs::read_to_string(out.join("summary.json")).ok().as_deref(),
            Some("{\"new\": 1}")
        );
        assert!(!out.join("views").exists());
        assert_eq!(std::fs::read_to_string(out.join("notes.txt")).ok().as_deref(), Some("mine"));
        let leftovers: Vec<_> =
            std::fs::read_dir(dir.path()).expect("dir").flatten().map(|e| e.file_name()).collect();
        assert_eq!(leftovers, ["run"], "no partial or old folder is left behind");
    }

    /// `--force` with `--out` on the outputs folder deleted the user's
    /// .docx outputs without a word; a folder of someone else's files, and
    /// the inputs, are refused whatever is asked.
    #[test]
    fn the_inputs_and_a_folder_of_something_else_are_never_replaced() {
        let dir = temp();
        std::fs::write(dir.path().join("notes.txt"), "mine").expect("write");
        assert!(matches!(check(dir.path(), &[]), Err(RunError::Foreign { .. })));
        let outputs = dir.path().join("outputs");
        std::fs::create_dir_all(outputs.join("strong")).expect("mkdir");
        for out in [outputs.clone(), dir.path().to_path_buf()] {
            assert!(
                matches!(check(&out, &[&outputs.join("strong")]), Err(RunError::Protected { .. })),
                "{}",
                out.display()
            );
        }
        let empty = dir.path().join("empty");
        std::fs::create_dir_all(&empty).expect("mkdir");
        assert!(check(&empty, &[&outputs]).is_ok(), "an empty folder is fine");
    }

    /// Killed runs left `.NAME.partial-PID` folders that only the same PID
    /// removed.
    #[test]
    fn partial_folders_of_killed_runs_are_removed_by_the_next_run() {
        let dir = temp();
        let dead = dir.path().join(format!(".run.partial-{}", u32::MAX - 1));
        let other = dir.path().join(".other.partial-1");
        std::fs::create_dir_all(&dead).expect("mkdir");
        std::fs::create_dir_all(&other).expect("mkdir");
        let staging =
            Staging::start(check(&dir.path().join("run"), &[]).expect("ok")).expect("starts");
        assert_eq!(dead.exists(), !cfg!(target_os = "linux"));
        assert!(other.exists(), "another folder's partial is not this run's to remove");
        staging.swap().expect("swaps");
    }
}
