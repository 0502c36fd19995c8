//! The journal file: answers the store could not take, one JSON line each,
//! synced, shared by every process that opens the same store (a SQLite
//! file's journal sits beside it; a PostgreSQL store's in the working
//! folder).
//!
//! Owns the cross-process discipline of that file: every append and every
//! emptying (read, store each line, remove) runs under an exclusive lock on
//! the file itself, taken on the file the path names at that moment (a
//! lock won on a file another process has just removed is dropped and
//! taken again), so no line is appended to a file that is being emptied.
//! Must never remove a line it has not handed to its caller to store, and
//! never wait for the lock without bound.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long an append or an emptying waits for another process's hold on
/// the journal (an emptying against a slow store) before it gives up.
const LOCK_WAIT: Duration = Duration::from_secs(60);

pub(super) struct Journal {
    path: PathBuf,
    /// Threads of this process take turns before the file lock, so that
    /// they never poll against each other.
    turn: Mutex<()>,
}

/// Why an emptying stopped: the file could not be read or removed, or the
/// caller could not store a line (the file keeps every line).
pub(super) enum Stopped<E> {
    File(std::io::Error),
    Store(E),
}

impl Journal {
    pub(super) fn new(path: PathBuf) -> Journal {
        Journal { path, turn: Mutex::default() }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one line, synced. It starts on a line of its own: a line
    /// cut short by a full disk never swallows the next one.
    pub(super) fn append(&self, line: &str) -> std::io::Result<()> {
        let _turn = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        let mut file = self.locked(&options)?.ok_or_else(|| {
            std::io::Error::other("the journal vanished while it was being created")
        })?;
        file.write_all(format!("\n{line}\n").as_bytes())?;
        file.sync_all()
    }

    /// Hands every non-empty line to `store`, then removes the file; when
    /// `store` fails, the file is left with every line in it. Returns how
    /// many lines were handed over (0 when there is no journal).
    pub(super) fn empty<E>(
        &self,
        mut store: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<usize, Stopped<E>> {
        let _turn = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut file) = self.locked(OpenOptions::new().read(true)).map_err(Stopped::File)?
        else {
            return Ok(0);
        };
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(Stopped::File)?;
        let mut handed = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            store(line).map_err(Stopped::Store)?;
            handed += 1;
        }
        // Removed while still locked: a waiting appender then finds its
        // file gone and creates a new one.
        std::fs::remove_file(&self.path).map_err(Stopped::File)?;
        Ok(handed)
    }

    /// The file's lines as they are now (read under the lock, so never a
    /// line half written); `None` when there is no journal.
    pub(super) fn read(&self) -> std::io::Result<Option<String>> {
        let _turn = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut file) = self.locked(OpenOptions::new().read(true))? else {
            return Ok(None);
        };
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        Ok(Some(text))
    }

    /// The journal opened with `options` and locked, as the path names it
    /// now; `None` when it does not exist (and `options` do not create it).
    fn locked(&self, options: &OpenOptions) -> std::io::Result<Option<File>> {
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let file = match options.open(&self.path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            match file.try_lock() {
                Ok(()) if names_this_file(&self.path, &file)? => return Ok(Some(file)),
                // Emptied and removed by another process while this one
                // waited: its lock is on a file nobody will read.
                Ok(()) => continue,
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(std::io::Error::other(format!(
                        "another process has held the journal locked for over {} s",
                        LOCK_WAIT.as_secs()
                    )));
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
    }
}

/// Whether `path` still names the open `file` (not removed, not replaced).
fn names_this_file(path: &Path, file: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let open = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(named) => Ok(named.dev() == open.dev() && named.ino() == open.ino()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}
