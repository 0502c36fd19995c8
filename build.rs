//! Says, on every build, when the shared corpus of Word-made test files is
//! absent: the tests that read it are then skipped, and `cargo test` alone
//! would not show that (a passing test's output is captured).

fn main() {
    println!("cargo:rerun-if-env-changed=REDJURY_CORPUS");
    let dir = std::env::var_os("REDJURY_CORPUS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from("../shared/corpus"));
    // A missing path makes cargo run this again on every build, so the
    // note shows until the corpus is there.
    println!("cargo:rerun-if-changed={}", dir.join("README.md").display());
    if !dir.join("README.md").is_file() {
        println!(
            "cargo:warning=the shared corpus of Word-made .docx files is not at {}: the tests that read it (corpus_oracle, and the corpus cases of checks) are skipped; set REDJURY_CORPUS to run them",
            dir.display()
        );
    }
}
