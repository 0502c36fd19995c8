//! Where the commands read untrusted files: in children of this same
//! binary, started in its reader mode, under the operating system's
//! limits.
//!
//! Owns: the reader mode's name on the command line, and the pool the
//! binary's commands share. Must never: read an output in the binary's own
//! process when the pool could be started (a file that aborts the reader
//! would take the run, or the service, down with it).

use std::process::ExitCode;
use std::sync::Arc;

use crate::commands::CommandError;
use crate::isolated::{Bounds, Pool, Reader};

/// The first argument that starts the binary as a reader child. Not a
/// command for people: the pool passes it, with the bounds after it.
pub const READER_MODE: &str = "__read-untrusted";

/// The reader mode's entry, for `main` to call when its first argument is
/// [`READER_MODE`] (with the arguments after it).
pub fn serve_reader_child(args: &[String]) -> ExitCode {
    crate::isolated::serve_child(args)
}

/// A pool of reader children of the running binary, one per core, under
/// the default [`Bounds`]. The running binary must dispatch
/// [`READER_MODE`] to [`serve_reader_child`], as `redjury` does; one
/// child is started now, so that a binary that cannot is refused here.
pub fn isolated_reader() -> Result<Reader, CommandError> {
    let exe = std::env::current_exe().map_err(|e| {
        CommandError::refused(format!(
            "cannot find this program's own file to read outputs in a child process: {e}"
        ))
    })?;
    let size = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let pool = Pool::start(exe, vec![READER_MODE.into()], Bounds::default(), size)
        .map_err(CommandError::refused)?;
    Ok(Reader::Isolated(Arc::new(pool)))
}
