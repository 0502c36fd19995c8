//! The PostgreSQL engine of the store: one server shared by every replica
//! of `serve` and every shard of `score`, on any machine that reaches it.
//!
//! Owns: the connection pool, the schema (its own PostgreSQL schema,
//! `redjury` unless the URL names another), its version, and the rows:
//! prompts, responses (`ON CONFLICT DO NOTHING`: the first paid answer is
//! the one kept), renders, check verdicts, leases timed by the server's
//! clock, batches and their calls, and the rate budgets every process of a
//! panel shares (one row per judge, reserved in one atomic statement: a
//! leaky bucket, as `governor` keeps in memory). Must never write to a
//! schema a newer redjury made, never show the password of its URL (in
//! messages, notes or file names), and never answer from a private budget
//! when the shared one cannot be reached.
//!
//! The rest of the crate calls the store from blocking threads; this
//! engine runs its async client on a small runtime of its own and waits
//! for each statement.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};

use super::engine::{Access, Engine, Record, RecordKind, Takeover};
use super::{
    BatchItem, BatchRecord, BatchState, CacheError, CallKey, Outcome, StoredResponse,
    UnknownBatchState, Usage, now,
};
use crate::prompt::Prompt;

/// The schema this redjury writes in PostgreSQL (`meta.schema_version`);
/// a higher one was written by a newer redjury and is refused.
const SCHEMA_VERSION: i64 = 1;

/// How long one statement (a connection from the pool included) may take
/// before the store counts as unreachable.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `--cache` names a PostgreSQL server rather than a file.
pub(super) fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

mod address;
mod tls;

pub(super) use address::without_password;
use address::{Address, Environment};

pub(super) struct Postgres {
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// The URL without its password.
    shown: String,
    /// The server and database in words, for messages.
    server: String,
    /// The PostgreSQL schema the tables live in (a plain identifier).
    schema: String,
}

/// A database error as the user should read it: the server's own words
/// (authentication failed for user X; database "Y" does not exist;
/// permission denied for schema Z), or the connection's failure with its
/// cause, never only "db error".
fn pg(e: tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut said = format!("{} ({})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            said.push_str(&format!("; {detail}"));
        }
        if let Some(hint) = db.hint() {
            said.push_str(&format!("; hint: {hint}"));
        }
        return said;
    }
    if let Some(refused) = tls::refused_certificate(&e) {
        return refused;
    }
    let mut said = e.to_string();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let c_said = c.to_string();
        if !said.contains(&c_said) {
            said.push_str(&format!(": {c_said}"));
        }
        cause = c.source();
    }
    if said.contains("password missing") {
        said.push_str(
            " (give it in the URL, as password_file=FILE, in PGPASSWORD, or in ~/.pgpass)",
        );
    }
    said
}

/// A failure to get a connection, with the server's reason.
fn connection(e: deadpool_postgres::PoolError) -> String {
    use deadpool_postgres::PoolError;
    match e {
        PoolError::Backend(e) => pg(e),
        PoolError::Timeout(_) => format!(
            "no connection within {} s (the server did not answer, or every connection of the pool is busy)",
            STATEMENT_TIMEOUT.as_secs()
        ),
        other => other.to_string(),
    }
}

impl Postgres {
    /// Connects, creates the schema when it is missing and refuses one a
    /// newer redjury wrote.
    pub(super) fn open(url: &str) -> Result<Postgres, CacheError> {
        let address = Address::parse(url, &Environment::of_process())
            .map_err(|e| CacheError::at(std::path::Path::new(&without_password(url)), &e))?;
        let at =
            |e: &dyn std::fmt::Display| CacheError::at(std::path::Path::new(&address.shown), e);
        let tls = tls::connector(&address.security).map_err(|e| at(&e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("redjury-postgres")
            .enable_all()
            .build()
            .map_err(|e| at(&e))?;
        let manager = Manager::from_config(
            address.config,
            tls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = {
            let _entered = runtime.enter();
            Pool::builder(manager)
                .max_size(address.pool)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(STATEMENT_TIMEOUT))
                .create_timeout(Some(STATEMENT_TIMEOUT))
                .build()
                .map_err(|e| at(&e))?
        };
        let store = Postgres {
            runtime: Some(runtime),
            pool,
            shown: address.shown,
            server: address.server,
            schema: address.schema,
        };
        store.create_schema()?;
        Ok(store)
    }

    /// The URL without its password.
    pub(super) fn shown(&self) -> &str {
        &self.shown
    }

    /// Where answers the server cannot take wait for it: a journal in the
    /// current directory, named after the server (never its password), so
    /// the next process started here stores them.
    pub(super) fn journal(&self) -> PathBuf {
        // Named as before passwords were shown as *** (`user@host`), so a
        // journal an earlier redjury left is still found.
        let named = self.shown.replace(":***@", "@");
        let digest = crate::hash::sha256_hex(&format!("{named}#{}", self.schema));
        let name = format!(".redjury-postgres-{}.pending.jsonl", digest.get(..12).unwrap_or(""));
        std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir()).join(name)
    }

    fn err(&self, e: impl std::fmt::Display) -> CacheError {
        CacheError::at(std::path::Path::new(&self.shown), &e)
    }

    /// Runs `work` on the engine's runtime and waits for it.
    fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, String>> + Send + 'static,
    ) -> Result<T, CacheError> {
        let Some(runtime) = &self.runtime else { return Err(self.err("closed")) };
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(tokio::time::timeout(STATEMENT_TIMEOUT, work).await);
        });
        match rx.recv() {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(e))) => Err(self.err(format!("{}: {e}", self.server))),
            Ok(Err(_)) => Err(self.err(format!(
                "{}: no answer within {} s",
                self.server,
                STATEMENT_TIMEOUT.as_secs()
            ))),
            Err(_) => Err(self.err("the store's runtime stopped")),
        }
    }

    /// The pool and the schema, to move into a statement's future.
    fn client(&self) -> (Pool, String) {
        (self.pool.clone(), self.schema.clone())
    }

    fn create_schema(&self) -> Result<(), CacheError> {
        let (pool, s) = self.client();
        let found: Option<i64> = self.run(async move {
            let mut c = pool.get().await.map_err(connection)?;
            let tx = c.transaction().await.map_err(pg)?;
            // Two processes creating the schema at once would collide.
            tx.execute("SELECT pg_advisory_xact_lock(7324021)", &[]).await.map_err(pg)?;
            tx.batch_execute(&schema_sql(&s)).await.map_err(pg)?;
            let row = tx
                .query_opt(
                    &format!("SELECT value FROM {s}.meta WHERE name = 'schema_version'"),
                    &[],
                )
                .await
                .map_err(pg)?;
            let found: Option<i64> = row.map(|r| r.get(0));
            if found.is_none() {
                tx.execute(
                    &format!("INSERT INTO {s}.meta (name, value) VALUES ('schema_version', $1)"),
                    &[&SCHEMA_VERSION],
                )
                .await
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(found)
        })?;
        match found {
            Some(v) if v > SCHEMA_VERSION => Err(self.err(format!(
                "schema {} was written by a newer redjury (schema version {v}; this one writes {SCHEMA_VERSION}): upgrade redjury, or name another schema with ?redjury_schema=NAME",
                self.schema
            ))),
            _ => Ok(()),
        }
    }

    /// Runs one statement that changes rows; the rows it changed.
    fn execute(
        &self,
        sql: String,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    ) -> Result<u64, CacheError> {
        let pool = self.pool.clone();
        self.run(async move {
            let c = pool.get().await.map_err(connection)?;
            c.execute(&sql, &borrowed(&params)).await.map_err(pg)
        })
    }

    /// Runs one query; its rows.
    fn query(
        &self,
        sql: String,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    ) -> Result<Vec<tokio_postgres::Row>, CacheError> {
        let pool = self.pool.clone();
        self.run(async move {
            let c = pool.get().await.map_err(connection)?;
            c.query(&sql, &borrowed(&params)).await.map_err(pg)
        })
    }
}

/// Parameters as tokio-postgres takes them.
fn borrowed(
    params: &[Box<dyn tokio_postgres::types::ToSql + Send + Sync>],
) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    params.iter().map(|p| p.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync)).collect()
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // A runtime dropped inside another's async context would panic.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn schema_sql(s: &str) -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.meta (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS {s}.prompts (
            hash TEXT COLLATE \"C\" PRIMARY KEY, template_version TEXT NOT NULL, system TEXT NOT NULL,
            user_prefix TEXT NOT NULL, user_rubrics TEXT NOT NULL, rubric_ids TEXT NOT NULL, created_at BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS {s}.responses (
            key TEXT COLLATE \"C\" PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, params TEXT NOT NULL,
            template_version TEXT NOT NULL, prompt_hash TEXT NOT NULL, repeat BIGINT NOT NULL,
            outcome TEXT NOT NULL, text TEXT NOT NULL, input_tokens BIGINT NOT NULL, output_tokens BIGINT NOT NULL,
            cached_tokens BIGINT NOT NULL, latency_ms BIGINT NOT NULL, attempts BIGINT NOT NULL,
            created_at BIGINT NOT NULL, cache_write_tokens BIGINT NOT NULL DEFAULT 0);
         CREATE TABLE IF NOT EXISTS {s}.renders (key TEXT COLLATE \"C\" PRIMARY KEY, gate TEXT NOT NULL, view TEXT, created_at BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS {s}.checks (key TEXT COLLATE \"C\" PRIMARY KEY, results TEXT NOT NULL, created_at BIGINT NOT NULL);
         CREATE TABLE IF NOT EXISTS {s}.leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at DOUBLE PRECISION NOT NULL);
         CREATE TABLE IF NOT EXISTS {s}.batches (
            id TEXT COLLATE \"C\" PRIMARY KEY, judge TEXT NOT NULL, provider TEXT NOT NULL, base_url TEXT NOT NULL,
            model TEXT NOT NULL, state TEXT NOT NULL, items BIGINT NOT NULL, input_file TEXT,
            note TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, tag TEXT, owner TEXT);
         CREATE TABLE IF NOT EXISTS {s}.batch_items (
            batch_id TEXT NOT NULL, custom_id TEXT NOT NULL, call TEXT NOT NULL, digest TEXT NOT NULL,
            rubric_ids TEXT, position BIGINT, seq BIGSERIAL, PRIMARY KEY (batch_id, custom_id));
         CREATE INDEX IF NOT EXISTS batch_items_digest ON {s}.batch_items (digest);
         CREATE TABLE IF NOT EXISTS {s}.rate_budgets (budget TEXT PRIMARY KEY, next_us BIGINT NOT NULL);"
    )
}

/// The server's clock now, in microseconds since the epoch (SQL).
const NOW_US: &str = "(extract(epoch from clock_timestamp()) * 1000000)::bigint";

type Params = Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>;

fn p<T: tokio_postgres::types::ToSql + Send + Sync + 'static>(
    v: T,
) -> Box<dyn tokio_postgres::types::ToSql + Send + Sync> {
    Box::new(v)
}

const RESPONSE_COLUMNS: &str = "outcome, text, input_tokens, output_tokens, cached_tokens, latency_ms, attempts, cache_write_tokens, provider, model, params, template_version, prompt_hash, repeat";

fn stored_at(r: &tokio_postgres::Row, at: usize) -> StoredResponse {
    let outcome: String = r.get(at);
    StoredResponse {
        outcome: if outcome == "declined" { Outcome::Declined } else { Outcome::Text },
        text: r.get(at + 1),
        usage: Usage {
            input: r.get::<_, i64>(at + 2) as u64,
            output: r.get::<_, i64>(at + 3) as u64,
            cached: r.get::<_, i64>(at + 4) as u64,
            cache_write: r.get::<_, i64>(at + 7) as u64,
        },
        latency_ms: r.get::<_, i64>(at + 5) as u64,
        attempts: r.get::<_, i64>(at + 6) as u32,
    }
}

fn call_key_at(r: &tokio_postgres::Row, at: usize) -> CallKey {
    CallKey {
        provider: r.get(at + 8),
        model: r.get(at + 9),
        params: r.get(at + 10),
        template_version: r.get(at + 11),
        prompt_hash: r.get(at + 12),
        repeat: r.get::<_, i64>(at + 13) as u32,
    }
}

const SELECT_BATCH: &str =
    "id, judge, provider, base_url, model, state, items, input_file, note, created_at, tag, owner";

fn batch_row(r: &tokio_postgres::Row) -> Result<BatchRecord, UnknownBatchState> {
    Ok(BatchRecord {
        id: r.get(0),
        judge: r.get(1),
        provider: r.get(2),
        base_url: r.get(3),
        model: r.get(4),
        state: r.get::<_, String>(5).parse()?,
        items: r.get::<_, i64>(6) as u64,
        input_file: r.get(7),
        note: r.get(8),
        created_at: r.get(9),
        tag: r.get(10),
        owner: r.get(11),
    })
}

impl Engine for Postgres {
    fn access(&self) -> Access {
        Access::ReadWrite
    }

    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    fn shared(&self) -> bool {
        true
    }

    fn put_prompt(&self, pr: &Prompt) -> Result<(), CacheError> {
        let ids = serde_json::to_string(&pr.rubric_ids).map_err(|e| self.err(e))?;
        let sql = format!(
            "INSERT INTO {}.prompts (hash, template_version, system, user_prefix, user_rubrics, rubric_ids, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (hash) DO NOTHING",
            self.schema
        );
        let params: Params = vec![
            p(pr.hash.clone()),
            p(pr.template_version.clone()),
            p(pr.system.clone()),
            p(pr.user_prefix.clone()),
            p(pr.user_rubrics.clone()),
            p(ids),
            p(now()),
        ];
        self.execute(sql, params).map(|_| ())
    }

    fn get_prompt(&self, hash: &str) -> Result<Option<Prompt>, CacheError> {
        let sql = format!(
            "SELECT system, user_prefix, user_rubrics, rubric_ids, template_version FROM {}.prompts WHERE hash = $1",
            self.schema
        );
        let rows = self.query(sql, vec![p(hash.to_string())])?;
        Ok(rows.first().and_then(|r| {
            let ids: Vec<String> = serde_json::from_str(&r.get::<_, String>(3)).ok()?;
            Some(Prompt::new(r.get(0), r.get(1), r.get(2), ids, r.get(4)))
        }))
    }

    fn get_response(&self, key: &CallKey) -> Result<Option<StoredResponse>, CacheError> {
        let sql =
            format!("SELECT {RESPONSE_COLUMNS} FROM {}.responses WHERE key = $1", self.schema);
        let rows = self.query(sql, vec![p(key.digest())])?;
        Ok(rows.first().map(|r| stored_at(r, 0)))
    }

    fn put_response(&self, key: &CallKey, r: &StoredResponse) -> Result<(), CacheError> {
        let sql = format!(
            "INSERT INTO {}.responses
             (key, provider, model, params, template_version, prompt_hash, repeat, outcome, text, input_tokens,
              output_tokens, cached_tokens, latency_ms, attempts, created_at, cache_write_tokens)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
             ON CONFLICT (key) DO NOTHING",
            self.schema
        );
        let params: Params = vec![
            p(key.digest()),
            p(key.provider.clone()),
            p(key.model.clone()),
            p(key.params.clone()),
            p(key.template_version.clone()),
            p(key.prompt_hash.clone()),
            p(i64::from(key.repeat)),
            p(r.outcome.as_str().to_string()),
            p(r.text.clone()),
            p(r.usage.input as i64),
            p(r.usage.output as i64),
            p(r.usage.cached as i64),
            p(r.latency_ms as i64),
            p(i64::from(r.attempts)),
            p(now()),
            p(r.usage.cache_write as i64),
        ];
        self.execute(sql, params).map(|_| ())
    }

    fn take_lease(
        &self,
        digest: &str,
        owner: &str,
        ttl: Duration,
        rule: Takeover,
    ) -> Result<bool, CacheError> {
        // Timed by the server's clock: the machines' clocks may differ. A
        // lease counts as live for a lease's time after the server
        // started, whatever its expiry says: its holder could not renew it
        // while the server was down, and another owner taking it at once
        // would pay for the call again.
        let s = &self.schema;
        let sql = format!(
            "INSERT INTO {s}.leases (key, owner, expires_at)
             VALUES ($1, $2, extract(epoch from clock_timestamp())::float8 + $3::float8)
             ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
             WHERE GREATEST({s}.leases.expires_at,
                            extract(epoch from pg_postmaster_start_time())::float8 + $3::float8)
                   < extract(epoch from clock_timestamp())::float8
                OR {s}.leases.owner = EXCLUDED.owner OR {s}.leases.owner = $4::text"
        );
        // Compare-and-set: a holder seen gone is replaced only while it is
        // still the holder, so of the waiters who saw it gone one wins.
        let gone: Option<String> = match rule {
            Takeover::WhenExpired => None,
            Takeover::FromGone(holder) => Some(holder),
        };
        let params: Params =
            vec![p(digest.to_string()), p(owner.to_string()), p(ttl.as_secs_f64()), p(gone)];
        self.execute(sql, params).map(|n| n > 0)
    }

    fn lease_holder(&self, digest: &str) -> Result<Option<String>, CacheError> {
        let sql = format!("SELECT owner FROM {}.leases WHERE key = $1", self.schema);
        Ok(self.query(sql, vec![p(digest.to_string())])?.first().map(|r| r.get(0)))
    }

    fn release(&self, digest: &str, owner: &str) -> Result<(), CacheError> {
        let sql = format!("DELETE FROM {}.leases WHERE key = $1 AND owner = $2", self.schema);
        self.execute(sql, vec![p(digest.to_string()), p(owner.to_string())]).map(|_| ())
    }

    fn get_render(&self, key: &str) -> Result<Option<(String, Option<String>)>, CacheError> {
        let sql = format!("SELECT gate, view FROM {}.renders WHERE key = $1", self.schema);
        Ok(self.query(sql, vec![p(key.to_string())])?.first().map(|r| (r.get(0), r.get(1))))
    }

    fn put_render(&self, key: &str, gate: &str, view: Option<&str>) -> Result<(), CacheError> {
        let sql = format!(
            "INSERT INTO {}.renders (key, gate, view, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (key) DO UPDATE SET gate = EXCLUDED.gate, view = EXCLUDED.view",
            self.schema
        );
        let params: Params =
            vec![p(key.to_string()), p(gate.to_string()), p(view.map(str::to_string)), p(now())];
        self.execute(sql, params).map(|_| ())
    }

    fn get_checks(&self, key: &str) -> Result<Option<String>, CacheError> {
        let sql = format!("SELECT results FROM {}.checks WHERE key = $1", self.schema);
        Ok(self.query(sql, vec![p(key.to_string())])?.first().map(|r| r.get(0)))
    }

    fn put_checks(&self, key: &str, results: &str) -> Result<(), CacheError> {
        let sql = format!(
            "INSERT INTO {}.checks (key, results, created_at) VALUES ($1, $2, $3)
             ON CONFLICT (key) DO UPDATE SET results = EXCLUDED.results",
            self.schema
        );
        self.execute(sql, vec![p(key.to_string()), p(results.to_string()), p(now())]).map(|_| ())
    }

    fn response_count(&self) -> Result<u64, CacheError> {
        self.count(RecordKind::Responses)
    }

    fn record_batch(&self, b: &BatchRecord, items: &[BatchItem]) -> Result<(), CacheError> {
        let mut calls = Vec::with_capacity(items.len());
        for item in items {
            let call = serde_json::to_string(&item.key).map_err(|e| self.err(e))?;
            let ids = item.rubric_ids.as_ref().map(serde_json::to_string).transpose();
            calls.push((
                item.custom_id.clone(),
                call,
                item.key.digest(),
                ids.map_err(|e| self.err(e))?,
                i64::from(item.position),
            ));
        }
        let (pool, s, b) = (self.pool.clone(), self.schema.clone(), b.clone());
        self.run(async move {
            let mut c = pool.get().await.map_err(connection)?;
            let tx = c.transaction().await.map_err(pg)?;
            tx.execute(
                &format!(
                    "INSERT INTO {s}.batches
                     (id, judge, provider, base_url, model, state, items, input_file, note, created_at, updated_at, tag, owner)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12)
                     ON CONFLICT (id) DO UPDATE SET judge = EXCLUDED.judge, provider = EXCLUDED.provider,
                        base_url = EXCLUDED.base_url, model = EXCLUDED.model, state = EXCLUDED.state,
                        items = EXCLUDED.items, input_file = EXCLUDED.input_file, note = EXCLUDED.note,
                        created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
                        tag = EXCLUDED.tag, owner = EXCLUDED.owner"
                ),
                &[
                    &b.id,
                    &b.judge,
                    &b.provider,
                    &b.base_url,
                    &b.model,
                    &b.state.as_str(),
                    &(b.items as i64),
                    &b.input_file,
                    &b.note,
                    &b.created_at,
                    &b.tag,
                    &b.owner,
                ],
            )
            .await
            .map_err(pg)?;
            let insert = tx
                .prepare(&format!(
                    "INSERT INTO {s}.batch_items (batch_id, custom_id, call, digest, rubric_ids, position)
                     VALUES ($1, $2, $3, $4, $5, $6)
                     ON CONFLICT (batch_id, custom_id) DO UPDATE SET call = EXCLUDED.call,
                        digest = EXCLUDED.digest, rubric_ids = EXCLUDED.rubric_ids, position = EXCLUDED.position"
                ))
                .await
                .map_err(pg)?;
            for (custom_id, call, digest, ids, position) in &calls {
                tx.execute(&insert, &[&b.id, custom_id, call, digest, ids, position])
                    .await
                    .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn adopt_intent(
        &self,
        intent: &str,
        id: &str,
        input_file: Option<&str>,
    ) -> Result<(), CacheError> {
        let (pool, s) = self.client();
        let shown = intent.to_string();
        let (intent, id, input_file) =
            (intent.to_string(), id.to_string(), input_file.map(str::to_string));
        let moved = self.run(async move {
            let mut c = pool.get().await.map_err(connection)?;
            let tx = c.transaction().await.map_err(pg)?;
            let moved = tx
                .execute(
                    &format!(
                        "INSERT INTO {s}.batches
                         (id, judge, provider, base_url, model, state, items, input_file, note, created_at, updated_at, tag, owner)
                         SELECT $2, judge, provider, base_url, model, 'submitted', items, COALESCE($3, input_file), note,
                                created_at, $4, tag, owner FROM {s}.batches WHERE id = $1
                         ON CONFLICT (id) DO UPDATE SET state = 'submitted',
                            input_file = EXCLUDED.input_file, updated_at = EXCLUDED.updated_at"
                    ),
                    &[&intent, &id, &input_file, &now()],
                )
                .await
                .map_err(pg)?;
            if moved > 0 {
                tx.execute(
                    &format!("UPDATE {s}.batch_items SET batch_id = $2 WHERE batch_id = $1"),
                    &[&intent, &id],
                )
                .await
                .map_err(pg)?;
                tx.execute(&format!("DELETE FROM {s}.batches WHERE id = $1"), &[&intent])
                    .await
                    .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(moved)
        })?;
        if moved == 0 {
            return Err(self.err(format!("no batch intent {shown} is recorded")));
        }
        Ok(())
    }

    fn drop_intent(&self, intent: &str) -> Result<(), CacheError> {
        let (pool, s, intent) = (self.pool.clone(), self.schema.clone(), intent.to_string());
        self.run(async move {
            let mut c = pool.get().await.map_err(connection)?;
            let tx = c.transaction().await.map_err(pg)?;
            for sql in [
                format!("DELETE FROM {s}.batch_items WHERE batch_id = $1"),
                format!("DELETE FROM {s}.batches WHERE id = $1"),
            ] {
                tx.execute(&sql, &[&intent]).await.map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }

    fn open_batch_of(
        &self,
        digest: &str,
        base_url: &str,
    ) -> Result<Option<(String, BatchState)>, CacheError> {
        let s = &self.schema;
        let sql = format!(
            "SELECT b.id, b.state FROM {s}.batch_items i JOIN {s}.batches b ON b.id = i.batch_id
             WHERE i.digest = $1 AND b.base_url = $2 AND b.state IN ('submitted', 'intent')
             ORDER BY (b.state = 'intent'), b.created_at DESC LIMIT 1"
        );
        let rows = self.query(sql, vec![p(digest.to_string()), p(base_url.to_string())])?;
        let first = rows
            .first()
            .map(|r| Ok::<_, UnknownBatchState>((r.get(0), r.get::<_, String>(1).parse()?)));
        first.transpose().map_err(|e| self.err(e))
    }

    fn batch(&self, id: &str) -> Result<Option<BatchRecord>, CacheError> {
        let sql = format!("SELECT {SELECT_BATCH} FROM {}.batches WHERE id = $1", self.schema);
        self.query(sql, vec![p(id.to_string())])?
            .first()
            .map(batch_row)
            .transpose()
            .map_err(|e| self.err(e))
    }

    fn batches(&self) -> Result<Vec<BatchRecord>, CacheError> {
        let sql = format!(
            "SELECT {SELECT_BATCH} FROM {}.batches ORDER BY created_at DESC, id",
            self.schema
        );
        self.query(sql, Vec::new())?
            .iter()
            .map(batch_row)
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))
    }

    fn batch_items(&self, id: &str) -> Result<Vec<BatchItem>, CacheError> {
        let sql = format!(
            "SELECT custom_id, call, rubric_ids, position FROM {}.batch_items WHERE batch_id = $1
             ORDER BY position, seq",
            self.schema
        );
        let mut out = Vec::new();
        for (n, r) in self.query(sql, vec![p(id.to_string())])?.iter().enumerate() {
            let key: CallKey =
                serde_json::from_str(&r.get::<_, String>(1)).map_err(|e| self.err(e))?;
            let rubric_ids =
                r.get::<_, Option<String>>(2).and_then(|t| serde_json::from_str(&t).ok());
            let position = r.get::<_, Option<i64>>(3).map(|p| p as u32).unwrap_or(n as u32);
            out.push(BatchItem { custom_id: r.get(0), key, rubric_ids, position });
        }
        Ok(out)
    }

    fn set_batch_state(
        &self,
        id: &str,
        state: BatchState,
        note: Option<&str>,
    ) -> Result<(), CacheError> {
        let sql = format!(
            "UPDATE {}.batches SET state = $2, note = COALESCE($3, note), updated_at = $4 WHERE id = $1",
            self.schema
        );
        let params: Params = vec![
            p(id.to_string()),
            p(state.as_str().to_string()),
            p(note.map(str::to_string)),
            p(now()),
        ];
        self.execute(sql, params).map(|_| ())
    }

    fn records(
        &self,
        kind: RecordKind,
        after: &str,
        limit: usize,
    ) -> Result<Vec<(String, Record)>, CacheError> {
        let s = &self.schema;
        let page = |key: &str| {
            format!("WHERE {key} > $1 COLLATE \"C\" ORDER BY {key} COLLATE \"C\" LIMIT $2")
        };
        let params = || -> Params { vec![p(after.to_string()), p(limit as i64)] };
        match kind {
            RecordKind::Prompts => {
                let sql = format!("SELECT hash FROM {s}.prompts {}", page("hash"));
                let mut out = Vec::new();
                for r in self.query(sql, params())? {
                    let k: String = r.get(0);
                    if let Some(pr) = self.get_prompt(&k)? {
                        out.push((k, Record::Prompt(pr)));
                    }
                }
                Ok(out)
            }
            RecordKind::Responses => {
                let sql =
                    format!("SELECT key, {RESPONSE_COLUMNS} FROM {s}.responses {}", page("key"));
                Ok(self
                    .query(sql, params())?
                    .iter()
                    .map(|r| (r.get(0), Record::Response(call_key_at(r, 1), stored_at(r, 1))))
                    .collect())
            }
            RecordKind::Renders => {
                let sql = format!("SELECT key, gate, view FROM {s}.renders {}", page("key"));
                Ok(self
                    .query(sql, params())?
                    .iter()
                    .map(|r| {
                        (r.get(0), Record::Render { key: r.get(0), gate: r.get(1), view: r.get(2) })
                    })
                    .collect())
            }
            RecordKind::Checks => {
                let sql = format!("SELECT key, results FROM {s}.checks {}", page("key"));
                Ok(self
                    .query(sql, params())?
                    .iter()
                    .map(|r| (r.get(0), Record::Checks { key: r.get(0), results: r.get(1) }))
                    .collect())
            }
            RecordKind::Batches => {
                let sql = format!("SELECT id FROM {s}.batches {}", page("id"));
                let mut out = Vec::new();
                for r in self.query(sql, params())? {
                    let id: String = r.get(0);
                    if let Some(b) = self.batch(&id)? {
                        let items = self.batch_items(&id)?;
                        out.push((id, Record::Batch(b, items)));
                    }
                }
                Ok(out)
            }
        }
    }

    fn count(&self, kind: RecordKind) -> Result<u64, CacheError> {
        let sql = format!("SELECT COUNT(*) FROM {}.{}", self.schema, kind.name());
        let rows = self.query(sql, Vec::new())?;
        Ok(rows.first().map(|r| r.get::<_, i64>(0) as u64).unwrap_or(0))
    }

    fn pace(&self, budget: &str, interval: Duration) -> Result<Option<Duration>, CacheError> {
        let s = &self.schema;
        // Each request reserves the next slot of the budget, `interval`
        // after the last reserved one (or now, after an idle spell), in
        // one statement: every process of every machine queues in it.
        let sql = format!(
            "INSERT INTO {s}.rate_budgets AS b (budget, next_us) VALUES ($1, {NOW_US} + $2)
             ON CONFLICT (budget) DO UPDATE SET next_us = GREATEST(b.next_us, {NOW_US}) + $2
             RETURNING next_us - $2 - {NOW_US}"
        );
        let step = i64::try_from(interval.as_micros()).unwrap_or(i64::MAX);
        let rows = self.query(sql, vec![p(budget.to_string()), p(step)])?;
        let wait_us = rows.first().map(|r| r.get::<_, i64>(0)).unwrap_or(0);
        Ok(Some(Duration::from_micros(u64::try_from(wait_us).unwrap_or(0))))
    }

    fn hold(&self, budget: &str, wait: Duration) -> Result<(), CacheError> {
        let s = &self.schema;
        let sql = format!(
            "INSERT INTO {s}.rate_budgets AS b (budget, next_us) VALUES ($1, {NOW_US} + $2)
             ON CONFLICT (budget) DO UPDATE SET next_us = GREATEST(b.next_us, {NOW_US} + $2)"
        );
        let step = i64::try_from(wait.as_micros()).unwrap_or(i64::MAX);
        self.execute(sql, vec![p(budget.to_string()), p(step)]).map(|_| ())
    }
}
