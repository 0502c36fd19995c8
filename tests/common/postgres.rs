//! The PostgreSQL server the shared-store tests use: `REDJURY_TEST_POSTGRES`
//! names it (a URL; `.ci/run` starts a throwaway cluster on a loopback port
//! and sets it). Without it those tests are skipped, and say so, unless
//! `REDJURY_REQUIRE_POSTGRES` is set (CI sets it), which makes its absence
//! a failure.

use std::sync::atomic::{AtomicU32, Ordering};
use tokio::sync::{Mutex, MutexGuard};

/// The server's URL, or `None` (the test is skipped, and says so).
pub fn server(test: &str) -> Option<String> {
    match std::env::var("REDJURY_TEST_POSTGRES").ok().filter(|u| !u.trim().is_empty()) {
        Some(url) => Some(url),
        None => {
            assert!(
                std::env::var_os("REDJURY_REQUIRE_POSTGRES").is_none(),
                "{test}: no PostgreSQL server (REDJURY_TEST_POSTGRES is unset and REDJURY_REQUIRE_POSTGRES is set)"
            );
            eprintln!(
                "SKIPPED {test}: no PostgreSQL server; set REDJURY_TEST_POSTGRES to a URL (.ci/run starts one)"
            );
            None
        }
    }
}

/// A store of the test's own on the server: a fresh PostgreSQL schema.
pub fn store(test: &str) -> Option<String> {
    Some(fresh_schema(&server(test)?, test))
}

/// A store on the second server, which the test may stop and start, and
/// the command that does it (`REDJURY_TEST_POSTGRES_RESTARTABLE`, and
/// `REDJURY_TEST_POSTGRES_CTL`, a `pg_ctl -D …` to add `stop` or `start`
/// to; `.ci/run` sets both), with this test's turn on the server: the
/// tests that stop it take turns, or one would stop it under another.
pub async fn restartable(test: &str) -> Option<(String, String, MutexGuard<'static, ()>)> {
    static TURN: Mutex<()> = Mutex::const_new(());
    let url = std::env::var("REDJURY_TEST_POSTGRES_RESTARTABLE").ok().filter(|u| !u.is_empty());
    let restart = std::env::var("REDJURY_TEST_POSTGRES_CTL").ok().filter(|c| !c.is_empty());
    match url.zip(restart) {
        Some((url, restart)) => {
            // A tokio lock: it is held across the test's awaits, and a
            // test that failed holding it still gives it up.
            let turn = TURN.lock().await;
            Some((fresh_schema(&url, test), restart, turn))
        }
        None => {
            assert!(
                std::env::var_os("REDJURY_REQUIRE_POSTGRES").is_none(),
                "{test}: no restartable PostgreSQL server (REDJURY_TEST_POSTGRES_RESTARTABLE and _CTL are unset and REDJURY_REQUIRE_POSTGRES is set)"
            );
            eprintln!(
                "SKIPPED {test}: no PostgreSQL server this test may stop; set REDJURY_TEST_POSTGRES_RESTARTABLE and REDJURY_TEST_POSTGRES_CTL (.ci/run starts one)"
            );
            None
        }
    }
}

fn fresh_schema(url: &str, test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let name: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
        .take(32)
        .collect();
    let schema = format!("t_{name}_{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}redjury_schema={schema}")
}

/// The server that asks for a password (scram-sha-256) and speaks TLS
/// with a certificate for `localhost` only (`.ci/postgres` makes it).
pub struct Secure {
    /// `postgres://redjury:PASSWORD@localhost:PORT/postgres`.
    pub url: String,
    /// The port, for URLs the test builds.
    pub port: u16,
    /// The password the server wants.
    pub password: String,
    /// The CA that signed the server's certificate.
    pub ca: String,
    /// A CA that signed nothing.
    pub other_ca: String,
}

/// The secure server (`REDJURY_TEST_POSTGRES_SECURE`, `_CA`, `_OTHER_CA`),
/// or `None` (the test is skipped, and says so).
pub fn secure(test: &str) -> Option<Secure> {
    let var = |v: &str| std::env::var(v).ok().filter(|u| !u.is_empty());
    let found = var("REDJURY_TEST_POSTGRES_SECURE")
        .zip(var("REDJURY_TEST_POSTGRES_CA"))
        .zip(var("REDJURY_TEST_POSTGRES_OTHER_CA"));
    let Some(((url, ca), other_ca)) = found else {
        assert!(
            std::env::var_os("REDJURY_REQUIRE_POSTGRES").is_none(),
            "{test}: no TLS PostgreSQL server (REDJURY_TEST_POSTGRES_SECURE, _CA, _OTHER_CA unset and REDJURY_REQUIRE_POSTGRES set)"
        );
        eprintln!("SKIPPED {test}: no TLS PostgreSQL server; .ci/postgres starts one");
        return None;
    };
    let rest = url.strip_prefix("postgres://redjury:").expect("secure URL names user redjury");
    let (password, host) = rest.rsplit_once('@').expect("secure URL has a password");
    let port =
        host.split(['/', ':']).nth(1).and_then(|p| p.parse().ok()).expect("secure URL has a port");
    Some(Secure { port, password: password.to_string(), url: url.clone(), ca, other_ca })
}
