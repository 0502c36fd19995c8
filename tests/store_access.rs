//! Reaching a shared store as libpq users do: the password from the URL,
//! a `password_file=`, `PGPASSWORD` or a `~/.pgpass`; TLS as `sslmode`
//! and `sslrootcert` say (connecting with verify-full to the right name,
//! refusing a wrong name or an untrusted CA); every failure in the
//! server's own words, naming server and database, never the password.
//! The server is `.ci/postgres`'s secure cluster (scram-sha-256, TLS with a
//! certificate for `localhost` only).
use std::path::Path;
use std::process::Command;

use crate::common::postgres::{self, Secure};
use crate::common::temp_dir;
use redjury::Cache;

/// Opens the store; the error's words when it cannot.
fn open(url: &str) -> Result<Cache, String> {
    Cache::open(Path::new(url)).map_err(|e| e.to_string())
}

fn refused(url: &str) -> String {
    match open(url) {
        Ok(_) => panic!("{url} connected"),
        Err(e) => e,
    }
}

/// Whether the store's connection named `app` is encrypted, as the server
/// sees it (asked over a plain connection of the test's own).
fn encrypted(s: &Secure, app: &str) -> bool {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let plain = format!("{}?sslmode=disable", s.url);
        let (client, connection) = tokio_postgres::connect(&plain, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        let rows = client
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = $1",
                &[&app],
            )
            .await
            .unwrap();
        assert!(!rows.is_empty(), "no connection named {app}");
        rows.iter().all(|r| r.get::<_, bool>(0))
    })
}

fn fresh(url: &str, test: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}redjury_schema=t_{test}_{}_{n}", std::process::id())
}

/// TLS as libpq would: verify-full to the certificate's name connects
/// encrypted; to another name, or with a CA that did not sign it, it is
/// refused in words that say what to do; verify-ca checks the CA only;
/// require encrypts without verifying; disable is plain.
#[test]
fn tls_connects_and_refuses_as_libpqs_sslmode_says() {
    let Some(s) = postgres::secure("tls_connects_and_refuses_as_libpqs_sslmode_says") else {
        return;
    };
    let at = |host: &str, query: &str| {
        let url = s.url.replacen("@localhost:", &format!("@{host}:"), 1);
        fresh(&format!("{url}?{query}"), "tls")
    };
    let full =
        at("localhost", &format!("sslmode=verify-full&sslrootcert={}&application_name=full", s.ca));
    let store = open(&full).unwrap_or_else(|e| panic!("{e}"));
    assert!(encrypted(&s, "full"), "verify-full is encrypted");
    drop(store);

    let e = refused(&at("127.0.0.1", &format!("sslmode=verify-full&sslrootcert={}", s.ca)));
    assert!(e.contains("not for this host name") && e.contains("verify-ca"), "{e}");
    assert!(e.contains(&format!("server 127.0.0.1:{}", s.port)), "names the server: {e}");

    let ca =
        at("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={}&application_name=ca", s.ca));
    let store = open(&ca).unwrap_or_else(|e| panic!("verify-ca checks no name: {e}"));
    assert!(encrypted(&s, "ca"));
    drop(store);

    let e = refused(&at("localhost", &format!("sslmode=verify-full&sslrootcert={}", s.other_ca)));
    assert!(e.contains("not signed by a CA in sslrootcert"), "{e}");
    let e = refused(&at("localhost", "sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem"));
    assert!(e.contains("sslrootcert=/nonexistent/ca.pem") && e.contains("cannot be read"), "{e}");

    let store = open(&at("127.0.0.1", "sslmode=require&application_name=required"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(encrypted(&s, "required"), "require encrypts");
    drop(store);
    let store = open(&at("localhost", "sslmode=disable&application_name=plain"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!encrypted(&s, "plain"), "disable is plain text");
    drop(store);

    // A server without TLS: require refuses, prefer (the default) connects.
    let Some(trusting) = postgres::server("tls_connects_and_refuses_as_libpqs_sslmode_says") else {
        return;
    };
    let e = refused(&fresh(&format!("{trusting}?sslmode=require"), "tls"));
    assert!(e.to_lowercase().contains("tls"), "{e}");
    open(&fresh(&trusting, "tls")).unwrap_or_else(|e| panic!("prefer falls back to plain: {e}"));
}

/// Runs `redjury batches --cache URL` (a command that only opens the
/// store) with `env` set and `HOME` at `home`.
fn batches(url: &str, home: &Path, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redjury"));
    cmd.args(["batches", "--cache", url]).current_dir(home).env("HOME", home);
    cmd.env_remove("PGPASSWORD").env_remove("PGPASSFILE").env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// The password from where libpq users keep it — `PGPASSWORD`, a
/// `~/.pgpass` (ignored, with a warning, when others can read it), a
/// `password_file=` — and a wrong one refused in the server's words. The
/// password is printed nowhere.
#[test]
fn the_password_comes_from_pgpassword_a_pgpass_or_a_password_file() {
    let Some(s) =
        postgres::secure("the_password_comes_from_pgpassword_a_pgpass_or_a_password_file")
    else {
        return;
    };
    let home = temp_dir("pgpass");
    let bare = fresh(&format!("postgres://redjury@localhost:{}/postgres", s.port), "pw");
    let check = |(code, out, err): (i32, String, String), ok: bool| {
        assert!(!out.contains(&s.password) && !err.contains(&s.password), "printed:\n{out}{err}");
        assert_eq!(code == 0, ok, "{out}{err}");
        err
    };
    let err = check(batches(&bare, &home, &[]), false);
    assert!(
        err.contains("password missing") && err.contains("PGPASSWORD"),
        "no password anywhere, and where to give one: {err}"
    );

    check(batches(&bare, &home, &[("PGPASSWORD", &s.password)]), true);
    let err = check(batches(&bare, &home, &[("PGPASSWORD", "not-it")]), false);
    assert!(err.contains("password authentication failed for user \"redjury\""), "{err}");
    assert!(err.contains(&format!("server localhost:{}", s.port)), "{err}");

    let pgpass = home.join(".pgpass");
    std::fs::write(
        &pgpass,
        format!("elsewhere:*:*:*:nope\nlocalhost:{}:*:redjury:{}\n", s.port, s.password),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = check(batches(&bare, &home, &[]), false);
    assert!(err.contains("chmod 0600"), "a pgpass others can read is ignored, and said: {err}");
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    check(batches(&bare, &home, &[]), true);
    std::fs::remove_file(&pgpass).unwrap();

    let secret = home.join("store-password");
    std::fs::write(&secret, format!("{}\n", s.password)).unwrap();
    let with_file = format!("{bare}&password_file={}", secret.display());
    check(batches(&with_file, &home, &[]), true);
}

/// Each failure says the server's reason with the server, database and
/// user named: a database that does not exist, a schema the user may not
/// write in, a server that is not there.
#[test]
fn a_store_error_says_the_servers_reason() {
    let Some(s) = postgres::secure("a_store_error_says_the_servers_reason") else { return };
    let e = refused(&s.url.replacen("/postgres", "/no_such_db", 1));
    assert!(e.contains("database \"no_such_db\" does not exist"), "{e}");
    assert!(e.contains(&format!("server localhost:{}, database \"no_such_db\"", s.port)), "{e}");
    assert!(!e.contains(&s.password), "{e}");

    // A user who may create schemas but not write in the one named.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let user = format!("limited_{}", std::process::id());
    let schema = format!("locked_{}", std::process::id());
    runtime.block_on(async {
        let plain = format!("{}?sslmode=disable", s.url);
        let (client, connection) = tokio_postgres::connect(&plain, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
            .batch_execute(&format!(
                "CREATE ROLE {user} LOGIN PASSWORD 'limited-pw'; GRANT CREATE ON DATABASE postgres TO {user}; CREATE SCHEMA {schema};"
            ))
            .await
            .unwrap();
    });
    let e = refused(&format!(
        "postgres://{user}:limited-pw@localhost:{}/postgres?redjury_schema={schema}",
        s.port
    ));
    assert!(e.contains(&format!("permission denied for schema {schema}")), "{e}");
    assert!(e.contains(&format!("user \"{user}\"")) && !e.contains("limited-pw"), "{e}");

    let e = refused("postgres://redjury:pw@127.0.0.1:1/postgres?connect_timeout=2");
    assert!(e.contains("server 127.0.0.1:1") && e.to_lowercase().contains("refused"), "{e}");
}
