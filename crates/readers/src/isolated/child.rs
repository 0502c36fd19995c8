//! The child's side: a reader under the operating system's limits,
//! answering files on its standard input until the parent closes it.
//!
//! Owns: the limits the child puts on itself before it reads a byte of a
//! file, and the reading loop. Must never: write a file, keep a descriptor
//! it inherited, print a panic (its reason goes in the answer), or go on
//! reading once it has grown past what a fresh child would hold.

use std::io::{self, BufReader, BufWriter, Read};
use std::process::ExitCode;
use std::time::Duration;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use super::wire::{self, CONTINUING, Model, RETIRING};
use super::{Bounds, Kind};
use crate::{docx, pdf, xlsx};

/// A child that has grown by more than this since it started retires after
/// its answer: memory a reader freed stays mapped, and would count against
/// the next file's bound.
const RETIRE_GROWTH_BYTES: u64 = 64 << 20;

/// The reader mode's entry: `args` are the ones [`super::Pool`] passes
/// after the embedding program's own (`--memory-bytes N --cpu-ms N
/// --stack-bytes N`). Returns when the parent closes the input; exit 2 on
/// arguments that are not the pool's.
pub fn serve_child(args: &[String]) -> ExitCode {
    let Some(bounds) = parse_bounds(args) else {
        eprintln!("redjury reader: expects --memory-bytes N --cpu-ms N --stack-bytes N");
        return ExitCode::from(2);
    };
    close_inherited_descriptors();
    // A panic's reason goes in the answer (the reading thread's join
    // carries it); nothing is printed for the parent to pass on.
    std::panic::set_hook(Box::new(|_| {}));
    if let Err(e) = lifelong_limits() {
        eprintln!("redjury reader: cannot set its limits: {e}");
        return ExitCode::from(1);
    }
    match serve(bounds) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redjury reader: {e}");
            ExitCode::from(1)
        }
    }
}

fn parse_bounds(args: &[String]) -> Option<Bounds> {
    let mut b = Bounds::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value: u64 = it.next()?.parse().ok()?;
        match flag.as_str() {
            "--memory-bytes" => b.memory_bytes = value,
            "--cpu-ms" => b.cpu = Duration::from_millis(value),
            "--stack-bytes" => b.stack_bytes = value,
            _ => return None,
        }
    }
    Some(b)
}

/// Limits for the child's whole life: no core file, no file written
/// (`RLIMIT_FSIZE` 0: pipes are not files), few descriptors.
fn lifelong_limits() -> io::Result<()> {
    let zero = Rlimit { current: Some(0), maximum: Some(0) };
    setrlimit(Resource::Core, zero)?;
    setrlimit(Resource::Fsize, zero)?;
    // Standard input, output and error, and /proc/self/statm while measuring.
    setrlimit(Resource::Nofile, Rlimit { current: Some(8), maximum: Some(8) })?;
    Ok(())
}

/// Closes every descriptor above standard error: the child reads hostile
/// files and should hold nothing of its parent's (a log, a socket, the
/// store) whatever the parent forgot to mark close-on-exec.
fn close_inherited_descriptors() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return };
    let fds: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // The listing's own descriptor is among them, closed by now: that
        // close fails (EBADF), harmlessly.
        close(fd);
    }
}

#[allow(unsafe_code)]
fn close(fd: i32) {
    // SAFETY: the child has just started in reader mode and opened nothing
    // but the listing above, which is closed: no object of this process
    // owns `fd`, so closing it invalidates nothing that will be used.
    let _ = unsafe { rustix::io::try_close(fd) };
}

fn serve(bounds: Bounds) -> io::Result<()> {
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    wire::greet(&mut output)?;
    let started = mapped_bytes().unwrap_or(0);
    while let Some((kind, len)) = wire::read_request_head(&mut input)? {
        let mapped = mapped_bytes().unwrap_or(started);
        let allowance = mapped.saturating_add(len).saturating_add(bounds.memory_bytes);
        let hard = getrlimit(Resource::As).maximum;
        setrlimit(Resource::As, Rlimit { current: Some(allowance), maximum: hard })?;
        let mut bytes = Vec::new();
        (&mut input).take(len).read_to_end(&mut bytes)?;
        if bytes.len() as u64 != len {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        limit_cpu(bounds.cpu)?;
        let model = read_on_thread(kind, bytes, bounds.stack_bytes);
        let json = serde_json::to_vec(&model).map_err(io::Error::other)?;
        drop(model);
        let grown = mapped_bytes().unwrap_or(0).saturating_sub(started) > RETIRE_GROWTH_BYTES;
        wire::write_answer(&mut output, if grown { RETIRING } else { CONTINUING }, &json)?;
        if grown {
            return Ok(());
        }
    }
    Ok(())
}

/// The next file may use `cpu` more seconds of CPU than the child has used
/// so far; past it the kernel sends SIGXCPU, which ends the child.
fn limit_cpu(cpu: Duration) -> io::Result<()> {
    let used = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let used_secs = u64::try_from(used.tv_sec).unwrap_or(0) + 1;
    let allowance = used_secs + cpu.as_secs().max(1) + u64::from(cpu.subsec_nanos() > 0);
    let hard = getrlimit(Resource::Cpu).maximum;
    setrlimit(Resource::Cpu, Rlimit { current: Some(allowance), maximum: hard })?;
    Ok(())
}

/// Reads on a thread of its own: its stack has a guard the runtime knows,
/// so an overflow is reported as one, and a panic comes back as a reason.
fn read_on_thread(kind: Kind, bytes: Vec<u8>, stack: u64) -> Model {
    let stack = usize::try_from(stack).unwrap_or(usize::MAX);
    let reading = std::thread::Builder::new().stack_size(stack).spawn(move || read(kind, bytes));
    match reading.map(|h| h.join()) {
        Ok(Ok(model)) => model,
        Ok(Err(panic)) => Model::Refused(format!(
            "a reader failed on it ({})",
            crate::panic_message(panic.as_ref())
        )),
        Err(e) => Model::Refused(format!("the reader could not start a thread: {e}")),
    }
}

fn read(kind: Kind, bytes: Vec<u8>) -> Model {
    match kind {
        Kind::Document => match docx::from_bytes(bytes, docx::Limits::default()) {
            Ok(doc) => Model::Document(Box::new(doc)),
            Err(e) => Model::Refused(e.to_string()),
        },
        Kind::Workbook => match xlsx::from_bytes(bytes, docx::Limits::default()) {
            Ok(book) => Model::Workbook(book),
            Err(e) => Model::Refused(e.to_string()),
        },
        Kind::Pdf => match pdf::from_bytes(&bytes, pdf::Limits::default()) {
            Ok(p) => Model::Pdf(Box::new(p)),
            Err(e) => Model::Refused(e.to_string()),
        },
    }
}

/// The child's mapped address space (`VmSize`), from /proc/self/statm.
fn mapped_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    Some(pages.saturating_mul(rustix::param::page_size() as u64))
}
