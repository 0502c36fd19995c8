//! The cache on a failing machine, end to end: a disk that fills during a
//! run (on a real tmpfs of a few megabytes), a cache on a read-only file
//! system, a cache a newer redjury wrote. The file systems are mounted in
//! a user and mount namespace of the test's own (`unshare`), so no root
//! and nothing outside the test is touched; where the machine cannot make
//! one, these tests say so and skip, unless `REDJURY_REQUIRE_NAMESPACES`
//! is set (CI sets it).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::e2e::*;
use crate::common::mock::*;

/// Whether this machine lets an unprivileged process mount a tmpfs in a
/// namespace of its own.
fn namespaces() -> bool {
    let ok = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /mnt"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("REDJURY_REQUIRE_NAMESPACES").is_none(),
            "REDJURY_REQUIRE_NAMESPACES is set but `unshare --user --mount` cannot mount a tmpfs here"
        );
        eprintln!("skipped: this machine cannot mount a tmpfs in a user namespace (unshare)");
    }
    ok
}

/// `redjury ARGS` inside a namespace where `script` runs first (it sees
/// the command as "$@"), with the judges' keys set.
fn spawn_in_namespace(script: &str, redjury_args: &[String]) -> std::process::Child {
    let mut cmd = Command::new("unshare");
    cmd.args(["--user", "--map-root-user", "--mount", "--propagation", "private", "sh", "-c"])
        .arg(script)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_redjury"))
        .args(redjury_args)
        .current_dir(root())
        .env_remove("RUST_LOG");
    for k in ["E2E_OPENAI_KEY", "E2E_ANTHROPIC_KEY", "E2E_GEMINI_KEY"] {
        cmd.env(k, "sk-e2e-secret");
    }
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("unshare")
}

/// Mock judges that answer only once the disk is full: the first request
/// asks for the disk to be filled (a flag file) and every answer waits
/// until it is.
fn answering_once_full(provider: &'static str, flags: &Path) -> Handler {
    let inner = stand_in(provider, "strong");
    let flags = flags.to_path_buf();
    Arc::new(move |req: &Recorded, i| {
        let _ = std::fs::write(flags.join("fill"), "");
        let start = Instant::now();
        while !flags.join("filled").exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        inner(req, i)
    })
}

async fn full_disk_judges(flags: &Path) -> Judges {
    Judges {
        openai: MockServer::start(answering_once_full("openai", flags)).await,
        anthropic: MockServer::start(answering_once_full("anthropic", flags)).await,
        gemini: MockServer::start(answering_once_full("gemini", flags)).await,
    }
}

/// The script for a run on a small tmpfs that fills once the judges are
/// asked, and is freed when the test says so (or once the run ends); what
/// the cache kept is copied out.
const FULL_DISK: &str = r#"
set -u
mount -t tmpfs -o size=8m tmpfs "$DISK" || exit 97
"$@" > "$FLAGS/stdout" 2> "$FLAGS/stderr" &
pid=$!
while [ ! -e "$FLAGS/fill" ] && kill -0 $pid 2>/dev/null; do sleep 0.02; done
dd if=/dev/zero of="$DISK/filler" bs=64k 2>/dev/null
touch "$FLAGS/filled"
while [ ! -e "$FLAGS/free" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
rm -f "$DISK/filler"
code=0; wait $pid || code=$?
cp "$DISK"/cache.sqlite "$FLAGS/kept.sqlite" 2>/dev/null
exit $code
"#;

fn script(template: &str, disk: &Path, flags: &Path) -> String {
    format!("DISK='{}'; FLAGS='{}'; {template}", disk.display(), flags.display())
}

async fn wait_for(child: std::process::Child) -> i32 {
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap();
    out.unwrap().status.code().unwrap_or(-1)
}

/// A disk that fills while the judges answer, then is freed: every
/// answer is held in memory, stored once there is room, and the rerun
/// pays for nothing. (39 answers were logged as "could not be stored or
/// journalled", the run exited 0, and the rerun paid all 39 again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_during_a_run_loses_no_answer() {
    if !namespaces() {
        return;
    }
    let dir = temp_dir("store-full");
    let (disk, flags) = (dir.join("disk"), dir.join("flags"));
    std::fs::create_dir_all(&disk).unwrap();
    std::fs::create_dir_all(&flags).unwrap();
    let judges = full_disk_judges(&flags).await;
    let panel = judges.panel(&dir, "gemini-test");
    let run = score_args("gold/redlines", &panel, &dir.join("run"), &disk.join("cache.sqlite"));
    let child = spawn_in_namespace(&script(FULL_DISK, &disk, &flags), &run);
    let stderr = flags.join("stderr");
    let start = Instant::now();
    while !std::fs::read_to_string(&stderr).unwrap_or_default().contains("waiting up to") {
        assert!(start.elapsed() < Duration::from_secs(120), "the run never waited for room");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let calls: usize = judges.counts().iter().sum();
    std::fs::write(flags.join("free"), "").unwrap();
    let code = wait_for(child).await;
    let err = std::fs::read_to_string(&stderr).unwrap_or_default();
    assert_eq!(code, 0, "stored once there was room: {err}");
    assert!(err.contains("No space left on device") || err.contains("full"), "{err}");
    // Scored again from the copy of what the cache kept: nothing to pay.
    let again = score_args("gold/redlines", &panel, &dir.join("again"), &flags.join("kept.sqlite"));
    let (code, out, err) = redjury(again, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts().iter().sum::<usize>(), calls, "no call paid twice");
}

/// A disk that stays full: the run ends with exit 1 naming how many
/// answers it holds and where it saved them (beside the results), and the
/// next run into that folder stores them first and pays for nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_stays_full_ends_the_run_with_the_answers_saved() {
    if !namespaces() {
        return;
    }
    let dir = temp_dir("store-stays-full");
    let (disk, flags) = (dir.join("disk"), dir.join("flags"));
    std::fs::create_dir_all(&disk).unwrap();
    std::fs::create_dir_all(&flags).unwrap();
    let judges = full_disk_judges(&flags).await;
    let panel = judges.panel(&dir, "gemini-test");
    let run = score_args("gold/redlines", &panel, &dir.join("run"), &disk.join("cache.sqlite"));
    let code = wait_for(spawn_in_namespace(&script(FULL_DISK, &disk, &flags), &run)).await;
    let err = std::fs::read_to_string(flags.join("stderr")).unwrap_or_default();
    let calls: usize = judges.counts().iter().sum();
    assert_eq!(code, 1, "{err}");
    let saved = dir.join("run/pending-answers.jsonl");
    assert!(
        err.contains(&format!("{calls} judge answers received in this run could not be stored")),
        "{err}"
    );
    assert!(err.contains(&saved.display().to_string()), "{err}");
    assert_eq!(std::fs::read_to_string(&saved).unwrap().lines().count(), calls);
    // Into the same results folder, with a cache on a disk with room.
    let again = score_args("gold/redlines", &panel, &dir.join("run"), &dir.join("cache.sqlite"));
    let (code, out, err) = redjury(again, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts().iter().sum::<usize>(), calls, "nothing paid twice");
    assert!(!saved.exists(), "stored, then removed");
}

/// A cache on a read-only file system is read (hits served, and said so)
/// instead of refused ("unable to open database file"); answers it cannot
/// keep end the run with exit 1, saved beside the results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_on_a_read_only_file_system_serves_its_answers() {
    if !namespaces() {
        return;
    }
    let judges = Judges::start("strong").await;
    let dir = temp_dir("store-read-only");
    let panel = judges.panel(&dir, "gemini-test");
    let warm = dir.join("warm.sqlite");
    let (code, out, err) =
        redjury(score_args("gold/redlines", &panel, &dir.join("first"), &warm), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let calls = judges.counts();
    let disk = dir.join("disk");
    std::fs::create_dir_all(&disk).unwrap();
    let read_only = format!(
        r#"mount -t tmpfs tmpfs '{d}' && cp '{w}' '{d}/cache.sqlite' && mount -o remount,ro '{d}' || exit 97
"$@" > '{d}.out' 2>&1"#,
        d = disk.display(),
        w = warm.display()
    );
    let cached = score_args("gold/redlines", &panel, &dir.join("ro"), &disk.join("cache.sqlite"));
    let mut cached: Vec<String> = cached.into_iter().filter(|a| a != "--quiet").collect();
    let code = wait_for(spawn_in_namespace(&read_only, &cached)).await;
    let out = std::fs::read_to_string(format!("{}.out", disk.display())).unwrap_or_default();
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cannot be written"), "said so: {out}");
    assert_eq!(judges.counts(), calls, "every answer came from the read-only cache");
    // New calls (a second repeat) cannot be kept there.
    let twice = dir.join("twice.toml");
    let text = std::fs::read_to_string(&panel)
        .unwrap()
        .replace("retry_base_ms = 10", "retry_base_ms = 10\nrepeats = 2");
    std::fs::write(&twice, text).unwrap();
    let at = cached.iter().position(|a| a == &panel.display().to_string()).unwrap();
    cached[at] = twice.display().to_string();
    let code = wait_for(spawn_in_namespace(&read_only, &cached)).await;
    let out = std::fs::read_to_string(format!("{}.out", disk.display())).unwrap_or_default();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("pending-answers.jsonl"), "{out}");
}

/// A cache a newer redjury wrote is refused before any work, naming both
/// schema versions and what to do (exit 2), and left untouched. (Every
/// answer failed "NOT NULL constraint failed" into a journal that never
/// drained, and every run paid for every call again.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_from_a_newer_redjury_is_refused_before_any_call() {
    let judges = Judges::start("strong").await;
    let dir = temp_dir("store-newer");
    let panel = judges.panel(&dir, "gemini-test");
    let cache = dir.join("cache.sqlite");
    drop(redjury::Cache::open(&cache).unwrap());
    let conn = rusqlite::Connection::open(&cache).unwrap();
    conn.execute_batch("PRAGMA user_version = 7").unwrap();
    drop(conn);
    let before = std::fs::read(&cache).unwrap();
    let (code, out, err) =
        redjury(score_args("gold/redlines", &panel, &dir.join("run"), &cache), true).await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("written by a newer redjury (store schema 7"), "{err}");
    assert!(
        err.contains(&format!("this redjury knows store schema {}", redjury::SCHEMA_VERSION)),
        "{err}"
    );
    assert!(err.contains("upgrade redjury"), "{err}");
    assert_eq!(judges.counts(), [0, 0, 0]);
    assert_eq!(std::fs::read(&cache).unwrap(), before, "untouched");
}
