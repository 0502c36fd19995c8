//! Where a PostgreSQL store is and how to reach it: the URL taken apart
//! into what the client connects with, redjury's own options, the
//! password from wherever libpq users keep it, and the TLS mode.
//!
//! Owns: the URL's parsing (once, with the error), the password sources
//! (the URL, `password_file=`, `PGPASSWORD`, `passfile=` / `PGPASSFILE` /
//! `~/.pgpass`, in libpq's order), `sslmode` and `sslrootcert` as libpq
//! spells them, and the URL as it may be shown. Must never put the
//! password in anything it returns for showing, and never pass redjury's
//! own options to the server (it would refuse the connection).

use std::path::{Path, PathBuf};

use tokio_postgres::config::{Host, SslMode};

/// Connections one process opens at most, unless the URL says
/// `redjury_pool=N`.
const DEFAULT_POOL: usize = 8;

/// How much of the connection to check, as libpq's `sslmode` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Security {
    /// Plain text.
    Disable,
    /// TLS when the server offers it, plain otherwise; nothing verified
    /// (libpq's default).
    Prefer,
    /// TLS or no connection; the certificate not verified.
    Require,
    /// TLS with a certificate signed by a trusted CA, for any name.
    VerifyCa(Roots),
    /// TLS with a certificate signed by a trusted CA for the host's name.
    VerifyFull(Roots),
}

/// The CAs a verifying mode trusts (`sslrootcert`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Roots {
    /// A PEM file of CA certificates.
    File(PathBuf),
    /// The system's trust store (`sslrootcert=system`).
    System,
}

/// A store's address, parsed once.
pub(super) struct Address {
    /// What the client connects with (the password filled in).
    pub(super) config: tokio_postgres::Config,
    /// The URL as it may be shown: the password replaced by `***`.
    pub(super) shown: String,
    /// The server and database in words, for messages.
    pub(super) server: String,
    /// The PostgreSQL schema the tables live in (a plain identifier).
    pub(super) schema: String,
    /// Connections at most.
    pub(super) pool: usize,
    pub(super) security: Security,
}

/// What the process's environment holds for a connection: read by the
/// caller, so that parsing is a function of its inputs (and testable).
pub(super) struct Environment {
    /// `PGPASSWORD`.
    pub(super) password: Option<String>,
    /// `PGPASSFILE`, else `~/.pgpass`.
    pub(super) passfile: Option<PathBuf>,
    /// `~/.postgresql/root.crt`, libpq's default `sslrootcert`.
    pub(super) default_root: Option<PathBuf>,
}

impl Environment {
    pub(super) fn of_process() -> Environment {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Environment {
            password: std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()),
            passfile: std::env::var_os("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".pgpass"))),
            default_root: home.map(|h| h.join(".postgresql/root.crt")),
        }
    }
}

/// The options redjury reads from the URL and keeps from the server.
#[derive(Default)]
struct Own {
    schema: Option<String>,
    pool: Option<usize>,
    password_file: Option<PathBuf>,
    passfile: Option<PathBuf>,
    sslmode: Option<String>,
    sslrootcert: Option<String>,
}

impl Address {
    pub(super) fn parse(url: &str, env: &Environment) -> Result<Address, String> {
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        // `kept` goes to the client; `named` (all but redjury's options)
        // is what is shown, and names the journal.
        let (mut kept, mut named) = (Vec::new(), Vec::new());
        let mut own = Own::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decoded(v);
            if !k.starts_with("redjury_") {
                named.push(pair);
            }
            match k {
                "redjury_schema" => own.schema = Some(v),
                "redjury_pool" => {
                    own.pool =
                        Some(v.parse().ok().filter(|n| (1..=256).contains(n)).ok_or_else(|| {
                            format!("redjury_pool={v}: give a number of connections, 1 to 256")
                        })?)
                }
                "password_file" => own.password_file = Some(PathBuf::from(v)),
                "passfile" => own.passfile = Some(PathBuf::from(v)),
                "sslmode" => own.sslmode = Some(v),
                "sslrootcert" => own.sslrootcert = Some(v),
                _ => kept.push(pair),
            }
        }
        let schema = own.schema.clone().unwrap_or_else(|| "redjury".to_string());
        check_schema(&schema)?;
        let joined = |pairs: &[&str]| {
            if pairs.is_empty() { base.to_string() } else { format!("{base}?{}", pairs.join("&")) }
        };
        let (url, shown) = (joined(&kept), without_password(&joined(&named)));
        // The client's own message for a malformed URL can quote it.
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            format!("not a PostgreSQL URL ({}): {shown}", without_password(&format!("{e}")))
        })?;
        if config.get_password().is_none()
            && let Some(password) = password(&config, &own, env)?
        {
            config.password(password);
        }
        let security = security(&own, env)?;
        config.ssl_mode(match security {
            Security::Disable => SslMode::Disable,
            Security::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        });
        Ok(Address {
            server: server(&config),
            shown,
            config,
            schema,
            pool: own.pool.unwrap_or(DEFAULT_POOL),
            security,
        })
    }
}

fn check_schema(schema: &str) -> Result<(), String> {
    let plain = !schema.is_empty()
        && schema.len() <= 63
        && schema.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        Ok(())
    } else {
        Err(format!(
            "redjury_schema={schema:?}: use lower-case letters, digits and _ (not first a digit)"
        ))
    }
}

fn decoded(v: &str) -> String {
    percent_encoding::percent_decode_str(v).decode_utf8_lossy().into_owned()
}

/// The password when the URL has none, in libpq's order: a file holding
/// it (`password_file=`, as secrets are mounted), `PGPASSWORD`, then the
/// first matching line of a password file (`passfile=`, `PGPASSFILE`,
/// `~/.pgpass`).
fn password(
    config: &tokio_postgres::Config,
    own: &Own,
    env: &Environment,
) -> Result<Option<String>, String> {
    if let Some(file) = &own.password_file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("password_file={}: cannot be read ({e})", file.display()))?;
        return Ok(Some(text.trim_end_matches(['\r', '\n']).to_string()));
    }
    if let Some(p) = &env.password {
        return Ok(Some(p.clone()));
    }
    let (file, named) = match (&own.passfile, &env.passfile) {
        (Some(f), _) => (f, true),
        (None, Some(f)) => (f, false),
        (None, None) => return Ok(None),
    };
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if !named && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("passfile {}: cannot be read ({e})", file.display())),
    };
    if readable_by_others(file) {
        // As libpq: a password file others can read is not used.
        tracing::warn!(
            "password file {} has group or world access and is ignored; chmod 0600 it",
            file.display()
        );
        return Ok(None);
    }
    Ok(passfile_match(&text, &Wanted::of(config)))
}

#[cfg(unix)]
fn readable_by_others(file: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(file).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
}

#[cfg(not(unix))]
fn readable_by_others(_: &Path) -> bool {
    false
}

/// The connection a password file's line must match.
struct Wanted {
    host: String,
    port: String,
    database: String,
    user: String,
}

impl Wanted {
    fn of(config: &tokio_postgres::Config) -> Wanted {
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            // libpq matches a socket connection as "localhost".
            _ => "localhost".to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
        let user = config.get_user().unwrap_or_default().to_string();
        let database = config.get_dbname().map_or_else(|| user.clone(), str::to_string);
        Wanted { host, port, database, user }
    }
}

/// The password of the first line `host:port:database:user:password`
/// that matches (`*` matches anything; `\:` and `\\` are escapes;
/// lines starting with `#` are comments).
fn passfile_match(text: &str, wanted: &Wanted) -> Option<String> {
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = passfile_fields(line);
        let [host, port, database, user, password] = fields.as_slice() else { continue };
        let matches = |field: &String, value: &str| field == "*" || field == value;
        if matches(host, &wanted.host)
            && matches(port, &wanted.port)
            && matches(database, &wanted.database)
            && matches(user, &wanted.user)
        {
            return Some(password.clone());
        }
    }
    None
}

fn passfile_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(field)) = (chars.next(), fields.last_mut()) {
                    field.push(next);
                }
            }
            // The password is the rest of the line, colons and all.
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

/// `sslmode` and `sslrootcert` as libpq reads them: `prefer` by default;
/// `require` with a CA file named verifies the CA (as libpq does);
/// `sslrootcert=system` means the system's roots and `verify-full`.
fn security(own: &Own, env: &Environment) -> Result<Security, String> {
    let roots = |explicit: &Option<String>| -> Result<Roots, String> {
        match explicit.as_deref() {
            Some("system") => Ok(Roots::System),
            Some(file) => Ok(Roots::File(PathBuf::from(file))),
            None => match &env.default_root {
                Some(f) if f.exists() => Ok(Roots::File(f.clone())),
                _ => Err(
                    "a verifying sslmode needs the CA's certificate: give sslrootcert=FILE (PEM), sslrootcert=system, or put it in ~/.postgresql/root.crt"
                        .to_string(),
                ),
            },
        }
    };
    let default =
        if own.sslrootcert.as_deref() == Some("system") { "verify-full" } else { "prefer" };
    match own.sslmode.as_deref().unwrap_or(default) {
        "disable" => Ok(Security::Disable),
        // `allow` tries plain first; redjury asks for TLS first instead.
        "allow" | "prefer" => Ok(Security::Prefer),
        "require" => match &own.sslrootcert {
            Some(_) => Ok(Security::VerifyCa(roots(&own.sslrootcert)?)),
            None => Ok(Security::Require),
        },
        "verify-ca" => Ok(Security::VerifyCa(roots(&own.sslrootcert)?)),
        "verify-full" => Ok(Security::VerifyFull(roots(&own.sslrootcert)?)),
        other => Err(format!(
            "sslmode={other}: use disable, allow, prefer, require, verify-ca or verify-full"
        )),
    }
}

/// The server and database in words: `127.0.0.1:5432, database "db"`.
fn server(config: &tokio_postgres::Config) -> String {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => format!("{h}:{port}"),
        #[cfg(unix)]
        Some(Host::Unix(dir)) => format!("socket {}/.s.PGSQL.{port}", dir.display()),
        None => format!("localhost:{port}"),
    };
    let user = config.get_user().unwrap_or_default();
    let database = config.get_dbname().unwrap_or(user);
    format!("server {host}, database \"{database}\", user \"{user}\"")
}

/// The URL with its password hidden wherever it is written:
/// `postgres://user:secret@host/db?password=secret&sslmode=require` →
/// `postgres://user:***@host/db?password=***&sslmode=require`. What is
/// printed, logged or stored of a store's location goes through here.
pub(in crate::cache) fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    // The user part ends at the last '@': a password may hold '/' or '@'.
    let (authority, tail) = match rest.rsplit_once('@') {
        Some((user, host)) => {
            let (host, tail) = match host.find('/') {
                Some(i) => host.split_at(i),
                None => (host, ""),
            };
            let shown = match user.split_once(':') {
                Some((name, _)) => format!("{name}:***@{host}"),
                None => format!("{user}@{host}"),
            };
            (shown, tail)
        }
        None => {
            let (authority, tail) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            (authority.to_string(), tail)
        }
    };
    let query = query.map(|q| {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => pair.to_string(),
            })
            .collect();
        format!("?{}", pairs.join("&"))
    });
    format!("{scheme}://{authority}{tail}{}", query.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Environment {
        Environment { password: None, passfile: None, default_root: None }
    }

    fn parsed(url: &str, env: &Environment) -> Address {
        Address::parse(url, env).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_password_never_shows_and_redjurys_options_never_reach_the_server() {
        let a = parsed(
            "postgres://ci:s3cret@127.0.0.1:5432/db?sslmode=disable&redjury_schema=run_7&redjury_pool=3",
            &none(),
        );
        assert_eq!(a.shown, "postgres://ci:***@127.0.0.1:5432/db?sslmode=disable");
        assert_eq!(a.config.get_password(), Some(&b"s3cret"[..]));
        assert_eq!((a.schema.as_str(), a.pool, a.security), ("run_7", 3, Security::Disable));
        assert_eq!(a.server, "server 127.0.0.1:5432, database \"db\", user \"ci\"");
        assert!(Address::parse("postgres://h/db?redjury_schema=x;drop", &none()).is_err());
        assert!(Address::parse("postgres://h/db?redjury_pool=0", &none()).is_err());
        assert_eq!(without_password("postgresql://u@h/db"), "postgresql://u@h/db");
        assert_eq!(without_password("postgresql://h/db"), "postgresql://h/db");
        assert_eq!(
            without_password("postgres://u:p%40ss@h:5/db?sslmode=require&PASSWORD=x&a=b"),
            "postgres://u:***@h:5/db?sslmode=require&PASSWORD=***&a=b"
        );
        assert_eq!(without_password("postgres://h?password=x"), "postgres://h?password=***");
        assert_eq!(without_password("postgres://ci:ab/cd@h/db"), "postgres://ci:***@h/db");
        assert_eq!(without_password("postgres://ci:a@b@h:1/db"), "postgres://ci:***@h:1/db");
    }

    #[test]
    fn the_password_comes_from_the_url_a_file_the_environment_or_a_pgpass_in_libpqs_order() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "from-file\n").unwrap_or_else(|e| panic!("{e}"));
        let pgpass = dir.path().join("pgpass");
        std::fs::write(
            &pgpass,
            "# comment\nother:5432:*:ci:wrong\ndb.example:*:shop:ci:from\\:pgpass:x\n*:*:*:*:fallback\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let env = Environment {
            password: Some("from-env".into()),
            passfile: Some(pgpass.clone()),
            default_root: None,
        };
        let password = |url: &str, env: &Environment| {
            parsed(url, env).config.get_password().map(|p| String::from_utf8_lossy(p).into_owned())
        };
        let url = "postgres://ci@db.example:6543/shop";
        assert_eq!(
            password("postgres://ci:in-url@db.example/shop", &env).as_deref(),
            Some("in-url")
        );
        let with_file = format!("{url}?password_file={}", secret.display());
        assert_eq!(password(&with_file, &env).as_deref(), Some("from-file"));
        assert_eq!(password(url, &env).as_deref(), Some("from-env"));
        let no_env = Environment { password: None, ..env };
        assert_eq!(password(url, &no_env).as_deref(), Some("from:pgpass:x"));
        assert_eq!(password("postgres://ci@elsewhere/db", &no_env).as_deref(), Some("fallback"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(password(url, &no_env), None, "a pgpass others can read is ignored");
        }
        let missing = format!("{url}?password_file={}", dir.path().join("nope").display());
        let e = Address::parse(&missing, &no_env).err().unwrap_or_default();
        assert!(e.contains("password_file=") && e.contains("cannot be read"), "{e}");
    }

    #[test]
    fn sslmode_and_sslrootcert_read_as_libpq_reads_them() {
        let security = |url: &str| Address::parse(url, &none()).map(|a| a.security);
        let ca = || Roots::File(PathBuf::from("/ca.pem"));
        assert_eq!(security("postgres://h/db"), Ok(Security::Prefer));
        assert_eq!(security("postgres://h/db?sslmode=require"), Ok(Security::Require));
        assert_eq!(
            security("postgres://h/db?sslmode=require&sslrootcert=/ca.pem"),
            Ok(Security::VerifyCa(ca()))
        );
        assert_eq!(
            security("postgres://h/db?sslmode=verify-full&sslrootcert=%2Fca.pem"),
            Ok(Security::VerifyFull(ca()))
        );
        assert_eq!(
            security("postgres://h/db?sslrootcert=system"),
            Ok(Security::VerifyFull(Roots::System))
        );
        let e = security("postgres://h/db?sslmode=verify-ca").err().unwrap_or_default();
        assert!(e.contains("sslrootcert=FILE"), "{e}");
        let e = security("postgres://h/db?sslmode=strict").err().unwrap_or_default();
        assert!(e.contains("sslmode=strict: use disable"), "{e}");
    }
}
