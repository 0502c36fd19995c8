//! The `redjury` binary: parses arguments and hands them to `cli`, which
//! calls the library.

#![forbid(unsafe_code)]

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    use std::io::IsTerminal;
    // A reader child (started by this binary's own pool) reads files and
    // nothing else: no logging, no arguments for people.
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == redjury::READER_MODE) {
        let rest: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
        return redjury::serve_reader_child(&rest);
    }
    // Colour only on a terminal, and never when NO_COLOR is set
    // (no-color.org): a log file or a pipe gets plain text.
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(
            // The PostgreSQL pool's own warnings repeat what the store's
            // errors say once.
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,deadpool=error,tokio_postgres=error".into()),
        )
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .init();
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", message(&e));
            // 2: refused for how the command was set up (nothing was
            // spent); 1: failed while working.
            ExitCode::from(e.downcast_ref::<redjury::CommandError>().map_or(1, |c| c.exit_code()))
        }
    }
}

/// The error and its causes, each cause once: library errors often quote
/// their cause already ("cannot read x: No such file or directory").
fn message(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !text.contains(&c) {
            text.push_str(": ");
            text.push_str(&c);
        }
    }
    text
}
