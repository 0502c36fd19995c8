//! Hostile outputs never take a run down: each class of tests/common/
//! hostile.rs through `render`, `gate` and `score` (the service's turn is
//! in tests/serve.rs), and the reader children's bounds as the operating
//! system enforces them (memory, CPU time, wall time).
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::e2e::results;
use crate::common::hostile::{self, Hostile};
use crate::common::{root, temp_dir};
use redjury::isolated::{Bounds, Pool, Reader};
use redjury::{READER_MODE, ReaderFailure};

/// What a loaded two-core machine needs at most for one hostile file
/// (the bound itself is 5 s of wall time).
const PATIENCE: Duration = Duration::from_secs(30);

fn redjury(dir: &Path, args: &[&str]) -> (i32, String, String, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_redjury"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
        started.elapsed(),
    )
}

/// Nothing a reader's runtime prints on a crash reaches the user.
fn quiet(class: &str, stderr: &str) {
    for raw in ["panicked", "backtrace", "has overflowed its stack", "fatal runtime error"] {
        assert!(!stderr.contains(raw), "{class}: stderr shows {raw:?}:\n{stderr}");
    }
}

#[test]
fn every_hostile_class_ends_in_its_reason_through_render_and_gate() {
    let dir = temp_dir("isolation-render");
    for Hostile { class, ext, bytes, reason } in hostile::classes() {
        let file = dir.join(format!("{class}.{ext}"));
        std::fs::write(&file, &bytes).unwrap();
        let name = file.display().to_string();
        let (code, _, stderr, took) = redjury(&dir, &["render", &name]);
        assert_eq!(code, 1, "{class}: render exits 1 with the reason:\n{stderr}");
        assert!(stderr.contains(reason), "{class}: {stderr}");
        assert!(stderr.contains(&format!("cannot render {name}")), "{class}: {stderr}");
        quiet(class, &stderr);
        assert!(took < PATIENCE, "{class}: render took {took:?}");
        let (code, stdout, stderr, _) = redjury(&dir, &["gate", &name, "--author", "Agent"]);
        assert_eq!(code, 1, "{class}: the gate fails:\n{stdout}{stderr}");
        assert!(stdout.starts_with("FAIL") && stdout.contains(reason), "{class}: {stdout}");
        quiet(class, &stderr);
    }
}

/// The exhibit tasks scored with hostile files as their outputs, beside
/// a good one: the run writes its folder, each hostile row is a gate
/// failure naming what the reader met, the good row is read.
#[test]
fn a_run_with_hostile_outputs_writes_its_folder_and_names_each_reason() {
    let dir = temp_dir("isolation-score");
    let outputs = dir.join("outputs");
    std::fs::create_dir_all(&outputs).unwrap();
    let classes = hostile::classes();
    let tasks = ["redline-s5-t1-g01a", "redline-s5-t2-g01a", "redline-s5-t3-g01a"];
    for (task, h) in tasks.iter().zip(&classes) {
        std::fs::write(outputs.join(format!("{task}.pdf")), &h.bytes).unwrap();
    }
    let good = "redline-s5-t4-g01a";
    std::fs::copy(
        root().join(format!("scenarios/s5-exhibits/outputs/strong/{good}.pdf")),
        outputs.join(format!("{good}.pdf")),
    )
    .unwrap();
    let tasks_dir = root().join("scenarios/s5-exhibits/rubrics").display().to_string();
    let (out, cache) = (dir.join("out"), dir.join("cache.sqlite"));
    let (code, stdout, stderr, took) = redjury(
        &dir,
        &[
            "score",
            "--tasks",
            &tasks_dir,
            "--outputs",
            &outputs.display().to_string(),
            "--out",
            &out.display().to_string(),
            "--cache",
            &cache.display().to_string(),
            "--dry-run",
        ],
    );
    assert_eq!(code, 0, "a dry run ends 0:\n{stdout}\n{stderr}");
    quiet("score", &stderr);
    assert!(took < PATIENCE * 3, "score took {took:?}");
    let rows = results(&out);
    for (task, h) in tasks.iter().zip(&classes) {
        let row = rows.iter().find(|r| r["task"] == *task).unwrap_or_else(|| panic!("{task}"));
        assert_eq!(row["status"], "gate_failed", "{}: {row}", h.class);
        let why = row["gate"]["reason"].as_str().unwrap();
        assert!(why.contains(h.reason), "{}: {why}", h.class);
    }
    let row = rows.iter().find(|r| r["task"] == good).unwrap();
    assert_eq!(row["gate"]["passed"], true, "the good output beside them: {row}");
}

fn pool(bounds: Bounds) -> Reader {
    let exe = env!("CARGO_BIN_EXE_redjury").into();
    Reader::Isolated(Arc::new(Pool::start(exe, vec![READER_MODE.into()], bounds, 2).unwrap()))
}

fn failure(read: Result<redjury::pdf::Pdf, redjury::pdf::PdfError>) -> ReaderFailure {
    match read {
        Err(redjury::pdf::PdfError::Isolated(f)) => f,
        Err(e) => panic!("the reader's own refusal, not a bound: {e}"),
        Ok(_) => panic!("read"),
    }
}

/// Each bound is the operating system's, and each is said as what it is:
/// an address-space limit, a CPU-time limit, the parent's wall clock.
#[test]
fn the_childrens_bounds_hold_and_say_which_one_was_met() {
    let flood = hostile::glyph_flood(400_000);
    let generous = Bounds {
        memory_bytes: 4 << 30,
        cpu: Duration::from_secs(60),
        wall: Duration::from_secs(60),
        stack_bytes: 8 << 20,
    };
    let memory = pool(Bounds { memory_bytes: 64 << 20, ..generous });
    assert_eq!(
        failure(memory.pdf(&flood)),
        ReaderFailure::Memory { limit_bytes: 64 << 20 },
        "64 MB of address space"
    );
    let wall = pool(Bounds { wall: Duration::from_millis(100), ..generous });
    let started = Instant::now();
    assert_eq!(
        failure(wall.pdf(&flood)),
        ReaderFailure::Time { limit: Duration::from_millis(100) }
    );
    assert!(started.elapsed() < PATIENCE, "killed at the wall bound");
    let cpu = pool(Bounds { cpu: Duration::from_secs(1), ..generous });
    assert_eq!(
        failure(cpu.pdf(&flood)),
        ReaderFailure::Time { limit: Duration::from_secs(1) },
        "SIGXCPU after a second of CPU"
    );
    // After each failure the pool reads the next file.
    let good = std::fs::read(root().join("scenarios/s5-exhibits/inputs/exhibit-1.pdf")).unwrap();
    for reader in [&memory, &wall, &cpu] {
        assert!(reader.pdf(&good).is_ok());
    }
}

/// A child holds nothing of its parent's: no environment (API keys), no
/// descriptor, no file it may write.
#[test]
fn a_reader_child_has_no_environment_no_descriptor_and_writes_no_file() {
    // The pool clears the environment; the child closes what it inherited
    // and refuses to write. Probed from outside: /proc of a live child
    // (the pool starts one at once and keeps it while `_reader` lives).
    let _reader = pool(Bounds::default());
    let me = std::process::id();
    let children: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat.rsplit(')').next().and_then(|s| s.split_whitespace().nth(1));
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(&me.to_string()) && String::from_utf8_lossy(&cmd).contains(READER_MODE)
        })
        .collect();
    assert!(!children.is_empty(), "a live reader child of this test");
    for pid in children {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let vars: Vec<String> = String::from_utf8_lossy(&environ)
            .split('\0')
            .filter(|v| !v.is_empty())
            .map(str::to_string)
            .collect();
        assert_eq!(vars, ["MALLOC_ARENA_MAX=1"], "the child's environment");
        let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(fds.iter().all(|fd| ["0", "1", "2"].contains(&fd.as_str())), "{fds:?}");
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let line = |name: &str| {
            limits.lines().find(|l| l.starts_with(name)).unwrap_or_default().to_string()
        };
        assert!(line("Max file size").split_whitespace().nth(3) == Some("0"), "{limits}");
        assert!(line("Max core file size").split_whitespace().nth(4) == Some("0"), "{limits}");
    }
}
