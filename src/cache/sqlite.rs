//! The SQLite engine of the store: one file, shared by every process that
//! names it.
//!
//! Owns: the connection, the schema and its version, opening a store that
//! cannot be written (read-only), and following the file when it is
//! deleted or replaced while open. Must never modify a store written by a
//! newer redjury (it is refused before anything is written), never keep
//! storing into a file that is no longer at its path (a "ghost": its
//! answers would be gone when the process exits), and never overwrite a
//! file that is not a redjury store.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use super::engine::{Access, Engine, Record, RecordKind, Takeover};
use super::{
    BatchItem, BatchRecord, BatchState, CacheError, CallKey, StoredResponse, now, now_secs,
};
use crate::prompt::Prompt;

/// The schema this redjury writes (`PRAGMA user_version`). Stores made
/// before versions were recorded read 0 and are migrated when opened; a
/// store with a higher version, or with columns this version does not
/// know, was written by a newer redjury and is refused.
pub const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS prompts (
        hash TEXT PRIMARY KEY, template_version TEXT NOT NULL, system TEXT NOT NULL,
        user_prefix TEXT NOT NULL, user_rubrics TEXT NOT NULL, rubric_ids TEXT NOT NULL, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS responses (
        key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, params TEXT NOT NULL,
        template_version TEXT NOT NULL, prompt_hash TEXT NOT NULL, repeat INTEGER NOT NULL,
        outcome TEXT NOT NULL, text TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL, latency_ms INTEGER NOT NULL, attempts INTEGER NOT NULL, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS renders (key TEXT PRIMARY KEY, gate TEXT NOT NULL, view TEXT, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS checks (key TEXT PRIMARY KEY, results TEXT NOT NULL, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL);
     CREATE TABLE IF NOT EXISTS batches (
        id TEXT PRIMARY KEY, judge TEXT NOT NULL, provider TEXT NOT NULL, base_url TEXT NOT NULL,
        model TEXT NOT NULL, state TEXT NOT NULL, items INTEGER NOT NULL, input_file TEXT,
        note TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS batch_items (
        batch_id TEXT NOT NULL, custom_id TEXT NOT NULL, call TEXT NOT NULL, digest TEXT NOT NULL,
        PRIMARY KEY (batch_id, custom_id));
     CREATE INDEX IF NOT EXISTS batch_items_digest ON batch_items (digest);";

/// Columns added after the first release: (table, column, declaration).
/// Added when missing, in this order, under one write lock.
const ADDED: &[(&str, &str, &str)] = &[
    ("responses", "cache_write_tokens", "INTEGER NOT NULL DEFAULT 0"),
    ("batch_items", "rubric_ids", "TEXT"),
    ("batch_items", "position", "INTEGER"),
    ("batches", "tag", "TEXT"),
    ("batches", "owner", "TEXT"),
];

/// Every column this version knows, per table (the created ones and
/// [`ADDED`]); any other column means a newer redjury wrote the store.
const KNOWN: &[(&str, &[&str])] = &[
    (
        "prompts",
        &[
            "hash",
            "template_version",
            "system",
            "user_prefix",
            "user_rubrics",
            "rubric_ids",
            "created_at",
        ],
    ),
    (
        "responses",
        &[
            "key",
            "provider",
            "model",
            "params",
            "template_version",
            "prompt_hash",
            "repeat",
            "outcome",
            "text",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "latency_ms",
            "attempts",
            "created_at",
            "cache_write_tokens",
        ],
    ),
    ("renders", &["key", "gate", "view", "created_at"]),
    ("checks", &["key", "results", "created_at"]),
    ("leases", &["key", "owner", "expires_at"]),
    (
        "batches",
        &[
            "id",
            "judge",
            "provider",
            "base_url",
            "model",
            "state",
            "items",
            "input_file",
            "note",
            "created_at",
            "updated_at",
            "tag",
            "owner",
        ],
    ),
    ("batch_items", &["batch_id", "custom_id", "call", "digest", "rubric_ids", "position"]),
];

/// Which file the connection has open: (device, inode) on Unix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId(u64, u64);

fn file_id(path: &Path) -> Option<FileId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| FileId(m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).ok().map(|_| FileId(0, 0))
    }
}

/// What became of the file behind the open connection.
enum Followed {
    /// Still there.
    Same,
    /// Moved to a store at the path again, with this note to tell.
    Moved(String),
}

/// One SQLite file.
pub(super) struct Sqlite {
    conn: Mutex<Connection>,
    path: PathBuf,
    access: Access,
    busy_timeout: Duration,
    /// The file the connection has open, and when it was opened (rows
    /// written since belong to this process's work).
    file: Mutex<OpenFile>,
    /// What happened to the store that a run should tell at its end.
    notes: Mutex<Vec<String>>,
    /// Set when the store is lost, until the front has journalled what
    /// this process wrote into it.
    newly_lost: std::sync::atomic::AtomicBool,
}

struct OpenFile {
    id: Option<FileId>,
    since: i64,
    /// The path holds something that is not a redjury store: nothing more
    /// is written to the ghost, and nothing to that file.
    lost: Option<String>,
}

impl Sqlite {
    /// Opens (or creates) the store; a file that cannot be written is
    /// opened read-only, with a note saying so.
    pub(super) fn open(path: &Path, busy_timeout: Duration) -> Result<Sqlite, CacheError> {
        let err = |e: &dyn std::fmt::Display| CacheError::at(path, e);
        let (conn, access) = match connect(path, busy_timeout) {
            Ok(conn) => (conn, Access::ReadWrite),
            Err(Connect::ReadOnly) => (connect_read_only(path, busy_timeout)?, Access::ReadOnly),
            Err(Connect::Failed(e)) => return Err(e),
        };
        let notes = match access {
            Access::ReadWrite => Vec::new(),
            Access::ReadOnly => vec![format!(
                "cache {} cannot be written (a read-only file system?): answers already in it are used, new answers are not kept in it",
                path.display()
            )],
        };
        for note in &notes {
            tracing::warn!("{note}");
        }
        let id = file_id(path);
        if id.is_none() {
            return Err(err(&"the file vanished while it was being opened"));
        }
        Ok(Sqlite {
            conn: Mutex::new(conn),
            path: path.to_path_buf(),
            access,
            busy_timeout,
            file: Mutex::new(OpenFile { id, since: now() - 1, lost: None }),
            notes: Mutex::new(notes),
            newly_lost: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Whether the store was lost since this was last asked.
    pub(super) fn newly_lost(&self) -> bool {
        self.newly_lost.swap(false, std::sync::atomic::Ordering::AcqRel)
    }

    /// What happened to the store that a run should tell.
    pub(super) fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn note(&self, note: String) {
        tracing::error!("{note}");
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).push(note);
    }

    pub(super) fn err(&self, e: impl std::fmt::Display) -> CacheError {
        CacheError::at(&self.path, &e)
    }

    /// The connection, for reading. Reading a ghost is harmless: it holds
    /// what this process stored.
    pub(super) fn read(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection, for writing: refused when the store is read-only or
    /// its file was replaced by something else; moved to a new store at
    /// the path first when the file was deleted or replaced by a store.
    pub(super) fn write(&self) -> Result<MutexGuard<'_, Connection>, CacheError> {
        if self.access == Access::ReadOnly {
            return Err(self.err("opened read-only: new answers are not kept in it"));
        }
        if let Followed::Moved(note) = self.follow()? {
            self.note(note);
        }
        Ok(self.read())
    }

    /// Notices that the file at the path is not the one open: deleted (a
    /// new store is written there with what this process wrote), or
    /// replaced by another file (left alone: it may share the old file's
    /// write-ahead log, so neither is written again by this process).
    fn follow(&self) -> Result<Followed, CacheError> {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = &file.lost {
            return Err(self.err(why));
        }
        let now_id = file_id(&self.path);
        if now_id.is_some() && now_id == file.id {
            return Ok(Followed::Same);
        }
        let (what, moved) = match now_id {
            None => ("was deleted", self.write_again(file.since)),
            Some(_) => (
                "was replaced by another file",
                Err(self.err("the file there now is not this process's to write into")),
            ),
        };
        match moved {
            Ok(copied) => {
                file.id = file_id(&self.path);
                Ok(Followed::Moved(format!(
                    "cache {} {what} while this process had it open; it was written again there with the {copied} rows this process had stored since it opened it, and stores there from now on",
                    self.path.display()
                )))
            }
            Err(e) => {
                let why = format!(
                    "cache {} {what} while this process had it open ({}): nothing more is stored in it, and new answers go to its journal",
                    self.path.display(),
                    e.message
                );
                file.lost = Some(why.clone());
                self.newly_lost.store(true, std::sync::atomic::Ordering::Release);
                self.note(why.clone());
                Err(self.err(why))
            }
        }
    }

    /// Writes a new store at the (free) path with what this process wrote
    /// since `since`, and moves the connection to it. The store is made
    /// under a temporary name from the ghost, put in place by a hard link
    /// (never over a file that appeared meanwhile), and opened only once
    /// the ghost is closed (its write-ahead log and index, at the path's
    /// names, go with it). Returns the rows copied.
    fn write_again(&self, since: i64) -> Result<usize, CacheError> {
        let name = self.path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let staged = self.path.with_file_name(format!(".{name}.new-{}", std::process::id()));
        let _ = std::fs::remove_file(&staged);
        let copied = {
            let store = stage(&staged).map_err(|e| self.err(e))?;
            let copied = copy_rows(&self.read(), &staged, since).map_err(|e| self.err(e));
            drop(store);
            copied?
        };
        let linked = std::fs::hard_link(&staged, &self.path);
        let _ = std::fs::remove_file(&staged);
        linked.map_err(|e| self.err(format!("a new store could not be put at the path: {e}")))?;
        // The ghost's log is emptied into the ghost and the ghost closed
        // (readers wait meanwhile): SQLite keeps the log of an unlinked
        // database at the path's name, where an empty log is harmless to
        // the new store (it rebuilds the index), and one another process
        // has written to is not.
        let mut conn = self.read();
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        let log = PathBuf::from(format!("{}-wal", self.path.display()));
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > 0) {
            return Err(self.err(
                "another process is still writing to the deleted file's write-ahead log; the new store there is left for it",
            ));
        }
        let placeholder = Connection::open_in_memory().map_err(|e| self.err(e))?;
        drop(std::mem::replace(&mut *conn, placeholder));
        match connect(&self.path, self.busy_timeout) {
            Ok(fresh) => {
                *conn = fresh;
                Ok(copied)
            }
            Err(failed) => {
                // Still read what is stored, from the new file.
                if let Ok(read_only) = connect_read_only(&self.path, self.busy_timeout) {
                    *conn = read_only;
                }
                Err(match failed {
                    Connect::ReadOnly => self.err("it cannot be written"),
                    Connect::Failed(e) => e,
                })
            }
        }
    }

    /// Responses written since this process opened the store, for a journal
    /// when the store is lost.
    pub(super) fn responses_since_open(&self) -> Vec<(super::CallKey, super::StoredResponse)> {
        let since = self.file.lock().unwrap_or_else(|p| p.into_inner()).since;
        let conn = self.read();
        let rows = conn
            .prepare(&format!("SELECT {RESPONSE_COLUMNS} FROM responses WHERE created_at >= ?1"))
            .and_then(|mut s| {
                s.query_map(params![since], |r| Ok((call_key(r)?, stored(r)?)))?.collect()
            });
        rows.unwrap_or_default()
    }

    /// Folds the write-ahead log into the database file.
    pub(super) fn checkpoint(&self) -> Result<(), CacheError> {
        if self.access == Access::ReadOnly {
            return Ok(());
        }
        self.read()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| self.err(e))
    }
}

/// The columns a response is read from, in the order [`stored`] and
/// [`call_key`] read them.
pub(super) const RESPONSE_COLUMNS: &str = "outcome, text, input_tokens, output_tokens, cached_tokens, latency_ms, attempts, cache_write_tokens, provider, model, params, template_version, prompt_hash, repeat";

pub(super) fn stored(r: &rusqlite::Row<'_>) -> rusqlite::Result<super::StoredResponse> {
    stored_at(r, 0)
}

/// A response read from [`RESPONSE_COLUMNS`] starting at column `at`.
fn stored_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<super::StoredResponse> {
    let outcome: String = r.get(at)?;
    Ok(super::StoredResponse {
        outcome: if outcome == "declined" {
            super::Outcome::Declined
        } else {
            super::Outcome::Text
        },
        text: r.get(at + 1)?,
        usage: super::Usage {
            input: r.get::<_, i64>(at + 2)? as u64,
            output: r.get::<_, i64>(at + 3)? as u64,
            cached: r.get::<_, i64>(at + 4)? as u64,
            cache_write: r.get::<_, i64>(at + 7)? as u64,
        },
        latency_ms: r.get::<_, i64>(at + 5)? as u64,
        attempts: r.get::<_, i64>(at + 6)? as u32,
    })
}

fn call_key(r: &rusqlite::Row<'_>) -> rusqlite::Result<super::CallKey> {
    call_key_at(r, 0)
}

/// A call key read from [`RESPONSE_COLUMNS`] starting at column `at`.
fn call_key_at(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<super::CallKey> {
    Ok(super::CallKey {
        provider: r.get(at + 8)?,
        model: r.get(at + 9)?,
        params: r.get(at + 10)?,
        template_version: r.get(at + 11)?,
        prompt_hash: r.get(at + 12)?,
        repeat: r.get(at + 13)?,
    })
}

/// Why a connection could not be made.
enum Connect {
    /// The file exists but cannot be written.
    ReadOnly,
    Failed(CacheError),
}

/// Opens the store for reading and writing: refused when a newer redjury
/// wrote it, migrated when an older one did.
fn connect(path: &Path, busy_timeout: Duration) -> Result<Connection, Connect> {
    let conn = open_checked(path, busy_timeout)?;
    let err = |e: &dyn std::fmt::Display| Connect::Failed(CacheError::at(path, e));
    // WAL + NORMAL: each committed response survives the process being
    // killed; only an OS crash could lose the last few.
    match enable_wal(&conn, busy_timeout) {
        Ok(()) => {}
        Err(e) if cannot_write(&e) => return Err(Connect::ReadOnly),
        Err(e) => return Err(err(&busy(&e, busy_timeout))),
    }
    conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| err(&e))?;
    write_schema(&conn, busy_timeout).map_err(|e| Connect::Failed(CacheError::at(path, &e)))?;
    Ok(conn)
}

/// A new store under a temporary name, in a rollback journal (no
/// write-ahead log), so that it is whole in its one file once closed.
fn stage(path: &Path) -> Result<Connection, String> {
    let conn = match open_checked(path, DEFAULT_STAGE_TIMEOUT) {
        Ok(c) => c,
        Err(Connect::ReadOnly) => return Err("it cannot be written".into()),
        Err(Connect::Failed(e)) => return Err(e.message),
    };
    write_schema(&conn, DEFAULT_STAGE_TIMEOUT)?;
    Ok(conn)
}

const DEFAULT_STAGE_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens a connection to what is at `path` after checking that it is a
/// redjury store (or nothing yet) this version may write: never a file of
/// another kind, another program's database, or a newer redjury's store.
fn open_checked(path: &Path, busy_timeout: Duration) -> Result<Connection, Connect> {
    let err = |e: &dyn std::fmt::Display| Connect::Failed(CacheError::at(path, e));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        std::fs::create_dir_all(parent).map_err(|e| err(&e))?;
    }
    not_foreign_file(path).map_err(|m| err(&m))?;
    let conn = match Connection::open(path) {
        Ok(c) => c,
        Err(e) if cannot_write(&e) && path.is_file() => return Err(Connect::ReadOnly),
        Err(e) => return Err(err(&e)),
    };
    // SQLite opens a file it cannot write read-only, without a word; a
    // store in WAL mode then cannot even be read that way.
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Err(Connect::ReadOnly);
    }
    conn.busy_timeout(busy_timeout).map_err(|e| err(&e))?;
    check_version(&conn).map_err(|m| err(&m))?;
    not_foreign_database(&conn).map_err(|m| err(&m))?;
    Ok(conn)
}

/// The tables, created or brought up to date, under one write lock.
fn write_schema(conn: &Connection, busy_timeout: Duration) -> Result<(), String> {
    migrate(conn).map_err(|e| busy(&e, busy_timeout))?;
    check_version(conn)
}

/// A file at the path that is not an SQLite database is someone else's:
/// SQLite would write its tables over it.
fn not_foreign_file(path: &Path) -> Result<(), String> {
    use std::io::Read as _;
    let Ok(mut f) = std::fs::File::open(path) else { return Ok(()) };
    let mut head = [0u8; 16];
    let n = f.read(&mut head).unwrap_or(0);
    if n == 0 || head == *b"SQLite format 3\0" {
        return Ok(());
    }
    Err("it is not a redjury cache (not an SQLite database): pass another --cache; redjury does not write over a file it did not make".into())
}

/// Another program's SQLite database (tables, none of them ours) is not
/// ours to add tables to.
fn not_foreign_database(conn: &Connection) -> Result<(), String> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| e.to_string())?;
    if tables.is_empty() || tables.iter().any(|t| t == "responses") {
        return Ok(());
    }
    Err(format!(
        "it is an SQLite database but not a redjury cache (its tables: {}): pass another --cache",
        tables.join(", ")
    ))
}

/// Opens an existing store that cannot be written, read-only and as an
/// immutable file (a WAL store needs to write its shared-memory file even
/// to read; `immutable` reads the database file alone).
fn connect_read_only(path: &Path, busy_timeout: Duration) -> Result<Connection, CacheError> {
    let err = |e: &dyn std::fmt::Display| CacheError::at(path, e);
    let absolute = std::path::absolute(path).map_err(|e| err(&e))?;
    let encoded =
        percent_encoding::utf8_percent_encode(&absolute.to_string_lossy(), URI_PATH).to_string();
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(format!("file:{encoded}?immutable=1"), flags)
        .map_err(|e| err(&e))?;
    conn.busy_timeout(busy_timeout).map_err(|e| err(&e))?;
    check_version(&conn).map_err(|m| err(&m))?;
    let version: i64 =
        conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| err(&e))?;
    if version < SCHEMA_VERSION {
        return Err(err(&format!(
            "it cannot be written, and it was made by an older redjury (store schema {version}, this redjury writes {SCHEMA_VERSION}): its upgrade cannot be saved; copy it somewhere writable and pass that --cache"
        )));
    }
    Ok(conn)
}

/// What a path keeps unescaped in an SQLite URI; everything else (`?`,
/// `#`, `%`, spaces, non-ASCII) is percent-encoded.
const URI_PATH: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'/').remove(b'.').remove(b'-').remove(b'_');

fn cannot_write(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)
    )
}

/// Refuses a store written by a newer redjury: a higher schema version, or
/// a column this version does not know (it could not fill it in).
fn check_version(conn: &Connection) -> Result<(), String> {
    let version: i64 =
        conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    let newer = |what: String| {
        format!(
            "it was written by a newer redjury ({what}; this redjury knows store schema {SCHEMA_VERSION}): upgrade redjury (`cargo install --locked --path .` in a newer checkout), or pass another --cache"
        )
    };
    if version > SCHEMA_VERSION {
        return Err(newer(format!("store schema {version}")));
    }
    let mut unknown = Vec::new();
    for (table, known) in KNOWN {
        let mut stmt =
            conn.prepare("SELECT name FROM pragma_table_info(?1)").map_err(|e| e.to_string())?;
        let columns: Vec<String> = stmt
            .query_map(params![table], |r| r.get(0))
            .and_then(Iterator::collect)
            .map_err(|e| e.to_string())?;
        unknown.extend(
            columns
                .into_iter()
                .filter(|c| !known.contains(&c.as_str()))
                .map(|c| format!("{table}.{c}")),
        );
    }
    if !unknown.is_empty() {
        return Err(newer(format!("columns this version does not know: {}", unknown.join(", "))));
    }
    Ok(())
}

/// Switches the store to WAL. SQLite answers a journal-mode change made
/// while another connection has the file open with "locked" at once,
/// without waiting on the busy timeout, so several processes opening a new
/// store together retry here until one of them has made the change.
fn enable_wal(conn: &Connection, timeout: Duration) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates the tables, or brings an older store to [`SCHEMA_VERSION`].
/// Look and add under one write lock: two processes opening the same new
/// (or old) store at once would otherwise see it half made, or both see a
/// column missing and the second ALTER would fail.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        conn.execute_batch(SCHEMA)?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version >= SCHEMA_VERSION {
            return Ok(());
        }
        for (table, column, declaration) in ADDED {
            let has = conn
                .prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?
                .exists(params![table, column])?;
            if !has {
                conn.execute_batch(&format!(
                    "ALTER TABLE {table} ADD COLUMN {column} {declaration}"
                ))?;
            }
        }
        conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Copies, from the ghost connection into the store now at `path`, the
/// rows written since `since` (and the items of those batches), leaving
/// every row already there as it is. Returns how many were copied.
fn copy_rows(ghost: &Connection, path: &Path, since: i64) -> rusqlite::Result<usize> {
    ghost.execute("ATTACH DATABASE ?1 AS fresh", params![path.to_string_lossy()])?;
    let copied = (|| {
        let mut copied = 0;
        for (table, _) in KNOWN.iter().filter(|(t, _)| !matches!(*t, "leases" | "batch_items")) {
            let columns = shared_columns(ghost, table)?;
            copied += ghost.execute(
                &format!(
                    "INSERT OR IGNORE INTO fresh.{table} ({columns}) SELECT {columns} FROM main.{table} WHERE created_at >= ?1"
                ),
                params![since],
            )?;
        }
        let columns = shared_columns(ghost, "batch_items")?;
        copied += ghost.execute(
            &format!(
                "INSERT OR IGNORE INTO fresh.batch_items ({columns}) SELECT {columns} FROM main.batch_items
                 WHERE batch_id IN (SELECT id FROM main.batches WHERE created_at >= ?1)"
            ),
            params![since],
        )?;
        Ok(copied)
    })();
    let _ = ghost.execute_batch("DETACH DATABASE fresh");
    copied
}

/// The columns a table has in both the ghost and the new store.
fn shared_columns(conn: &Connection, table: &str) -> rusqlite::Result<String> {
    let names = |schema: &str| -> rusqlite::Result<Vec<String>> {
        conn.prepare(&format!("SELECT name FROM pragma_table_info('{table}', '{schema}')"))?
            .query_map([], |r| r.get(0))?
            .collect()
    };
    let fresh = names("fresh")?;
    Ok(names("main")?.into_iter().filter(|c| fresh.contains(c)).collect::<Vec<_>>().join(", "))
}

/// SQLite's "database is locked" says nothing of how long we waited.
pub(super) fn busy(e: &rusqlite::Error, waited: Duration) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            format!("{e} (another process held it for more than {} s)", waited.as_secs())
        }
        _ => e.to_string(),
    }
}

/// The SQLite engine behind the store's one interface (see `engine.rs`):
/// the store's rows (prompts, responses, renders, check verdicts,
/// leases) here, batches in `batches.rs`.
impl Engine for Sqlite {
    fn access(&self) -> Access {
        self.access
    }
    #[cfg(test)]
    fn as_sqlite(&self) -> Option<&Sqlite> {
        Some(self)
    }
    fn notes(&self) -> Vec<String> {
        Sqlite::notes(self)
    }
    fn newly_lost(&self) -> bool {
        Sqlite::newly_lost(self)
    }
    fn responses_since_open(&self) -> Vec<(CallKey, StoredResponse)> {
        Sqlite::responses_since_open(self)
    }
    fn checkpoint(&self) -> Result<(), CacheError> {
        Sqlite::checkpoint(self)
    }
    fn record_batch(&self, b: &BatchRecord, items: &[BatchItem]) -> Result<(), CacheError> {
        Sqlite::record_batch(self, b, items)
    }
    fn adopt_intent(
        &self,
        intent: &str,
        id: &str,
        input_file: Option<&str>,
    ) -> Result<(), CacheError> {
        Sqlite::adopt_intent(self, intent, id, input_file)
    }
    fn drop_intent(&self, intent: &str) -> Result<(), CacheError> {
        Sqlite::drop_intent(self, intent)
    }
    fn open_batch_of(
        &self,
        digest: &str,
        base_url: &str,
    ) -> Result<Option<(String, BatchState)>, CacheError> {
        Sqlite::open_batch_of(self, digest, base_url)
    }
    fn batch(&self, id: &str) -> Result<Option<BatchRecord>, CacheError> {
        Sqlite::batch(self, id)
    }
    fn batches(&self) -> Result<Vec<BatchRecord>, CacheError> {
        Sqlite::batches(self)
    }
    fn batch_items(&self, id: &str) -> Result<Vec<BatchItem>, CacheError> {
        Sqlite::batch_items(self, id)
    }
    fn set_batch_state(
        &self,
        id: &str,
        state: BatchState,
        note: Option<&str>,
    ) -> Result<(), CacheError> {
        Sqlite::set_batch_state(self, id, state, note)
    }
    fn records(
        &self,
        kind: RecordKind,
        after: &str,
        limit: usize,
    ) -> Result<Vec<(String, Record)>, CacheError> {
        Sqlite::records(self, kind, after, limit)
    }
    fn count(&self, kind: RecordKind) -> Result<u64, CacheError> {
        let sql = format!("SELECT COUNT(*) FROM {}", kind.name());
        self.read()
            .query_row(&sql, [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    fn put_prompt(&self, p: &Prompt) -> Result<(), CacheError> {
        let ids = serde_json::to_string(&p.rubric_ids).map_err(|e| self.err(e))?;
        self.write()?
            .execute(
                "INSERT OR IGNORE INTO prompts
                 (hash, template_version, system, user_prefix, user_rubrics, rubric_ids, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    p.hash,
                    p.template_version,
                    p.system,
                    p.user_prefix,
                    p.user_rubrics,
                    ids,
                    now()
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn get_prompt(&self, hash: &str) -> Result<Option<Prompt>, CacheError> {
        let row = self
            .read()
            .query_row(
                "SELECT system, user_prefix, user_rubrics, rubric_ids, template_version FROM prompts WHERE hash = ?1",
                params![hash],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(system, prefix, rubrics, ids, version)| {
            let ids: Vec<String> = serde_json::from_str(&ids).ok()?;
            Some(Prompt::new(system, prefix, rubrics, ids, version))
        }))
    }

    fn get_response(
        &self,
        key: &super::CallKey,
    ) -> Result<Option<super::StoredResponse>, CacheError> {
        self.read()
            .query_row(
                &format!("SELECT {RESPONSE_COLUMNS} FROM responses WHERE key = ?1"),
                params![key.digest()],
                stored,
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    fn put_response(
        &self,
        key: &super::CallKey,
        r: &super::StoredResponse,
    ) -> Result<(), CacheError> {
        self.write()?
            .execute(
                "INSERT OR IGNORE INTO responses
                 (key, provider, model, params, template_version, prompt_hash, repeat, outcome, text, input_tokens,
                  output_tokens, cached_tokens, latency_ms, attempts, created_at, cache_write_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                params![
                    key.digest(),
                    key.provider,
                    key.model,
                    key.params,
                    key.template_version,
                    key.prompt_hash,
                    key.repeat,
                    r.outcome.as_str(),
                    r.text,
                    r.usage.input as i64,
                    r.usage.output as i64,
                    r.usage.cached as i64,
                    r.latency_ms as i64,
                    r.attempts,
                    now(),
                    r.usage.cache_write as i64
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(busy(&e, self.busy_timeout)))
    }

    /// Takes (or renews) a lease for `owner` unless another owner's lease
    /// is still live (or the rule says to take it anyway). True when taken.
    fn take_lease(
        &self,
        digest: &str,
        owner: &str,
        ttl: Duration,
        rule: Takeover,
    ) -> Result<bool, CacheError> {
        let now = now_secs();
        let expires_at = now + ttl.as_secs_f64();
        let gone = match &rule {
            Takeover::WhenExpired => None,
            Takeover::FromGone(holder) => Some(holder.as_str()),
        };
        self.write()?
            .execute(
                "INSERT INTO leases VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                 WHERE leases.expires_at < ?4 OR leases.owner = excluded.owner OR leases.owner = ?5",
                params![digest, owner, expires_at, now, gone],
            )
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    fn lease_holder(&self, digest: &str) -> Result<Option<String>, CacheError> {
        self.read()
            .query_row("SELECT owner FROM leases WHERE key = ?1", params![digest], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    fn release(&self, digest: &str, owner: &str) -> Result<(), CacheError> {
        self.write()?
            .execute("DELETE FROM leases WHERE key = ?1 AND owner = ?2", params![digest, owner])
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn get_render(&self, key: &str) -> Result<Option<(String, Option<String>)>, CacheError> {
        self.read()
            .query_row("SELECT gate, view FROM renders WHERE key = ?1", params![key], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    fn put_render(&self, key: &str, gate: &str, view: Option<&str>) -> Result<(), CacheError> {
        self.write()?
            .execute(
                "INSERT OR REPLACE INTO renders (key, gate, view, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![key, gate, view, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn get_checks(&self, key: &str) -> Result<Option<String>, CacheError> {
        self.read()
            .query_row("SELECT results FROM checks WHERE key = ?1", params![key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    fn put_checks(&self, key: &str, results: &str) -> Result<(), CacheError> {
        self.write()?
            .execute(
                "INSERT OR REPLACE INTO checks (key, results, created_at) VALUES (?1, ?2, ?3)",
                params![key, results, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    fn response_count(&self) -> Result<u64, CacheError> {
        self.read()
            .query_row("SELECT COUNT(*) FROM responses", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }
}

impl Sqlite {
    /// Rows of a kind after a key, for copying the store.
    fn records(
        &self,
        kind: RecordKind,
        after: &str,
        limit: usize,
    ) -> Result<Vec<(String, Record)>, CacheError> {
        match kind {
            RecordKind::Prompts => {
                let sql = "SELECT hash FROM prompts WHERE hash > ?1 ORDER BY hash LIMIT ?2";
                let mut out = Vec::new();
                for k in self.keys(sql, after, limit)? {
                    if let Some(p) = self.get_prompt(&k)? {
                        out.push((k, Record::Prompt(p)));
                    }
                }
                Ok(out)
            }
            RecordKind::Batches => {
                let sql = "SELECT id FROM batches WHERE id > ?1 ORDER BY id LIMIT ?2";
                let mut out = Vec::new();
                for id in self.keys(sql, after, limit)? {
                    if let Some(b) = self.batch(&id)? {
                        let items = self.batch_items(&id)?;
                        out.push((id, Record::Batch(b, items)));
                    }
                }
                Ok(out)
            }
            RecordKind::Responses => self.rows(
                &format!(
                    "SELECT key, {RESPONSE_COLUMNS} FROM responses WHERE key > ?1 ORDER BY key LIMIT ?2"
                ),
                after,
                limit,
                |r| Ok((r.get(0)?, Record::Response(call_key_at(r, 1)?, stored_at(r, 1)?))),
            ),
            RecordKind::Renders => self.rows(
                "SELECT key, gate, view FROM renders WHERE key > ?1 ORDER BY key LIMIT ?2",
                after,
                limit,
                |r| Ok((r.get(0)?, Record::Render { key: r.get(0)?, gate: r.get(1)?, view: r.get(2)? })),
            ),
            RecordKind::Checks => self.rows(
                "SELECT key, results FROM checks WHERE key > ?1 ORDER BY key LIMIT ?2",
                after,
                limit,
                |r| Ok((r.get(0)?, Record::Checks { key: r.get(0)?, results: r.get(1)? })),
            ),
        }
    }

    fn keys(&self, sql: &str, after: &str, limit: usize) -> Result<Vec<String>, CacheError> {
        let conn = self.read();
        let mut stmt = conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params![after, limit as i64], |r| r.get(0));
        rows.and_then(|r| r.collect()).map_err(|e| self.err(e))
    }

    fn rows(
        &self,
        sql: &str,
        after: &str,
        limit: usize,
        row: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<(String, Record)>,
    ) -> Result<Vec<(String, Record)>, CacheError> {
        let conn = self.read();
        let mut stmt = conn.prepare(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params![after, limit as i64], row);
        rows.and_then(|r| r.collect()).map_err(|e| self.err(e))
    }
}
