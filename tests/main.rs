//! The integration tests, one binary: each module below was a test binary
//! of its own, and 18 binaries were relinked after every library change.
//! The pacing test keeps a binary of its own (`tests/pacing.rs`): it is a
//! timing test, and the rest running beside it on two cores could push it
//! under its threshold.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

#[global_allocator]
static ALLOCATOR: common::alloc::Counting = common::alloc::Counting;

mod architecture;
mod batch;
mod calibrate;
mod checks;
mod cli;
mod commands;
mod example;
mod family;
mod fixtures;
mod hostile;
mod html;
mod integrity;
mod isolation;
mod judges;
mod layouts;
mod parity;
mod pdf;
mod score_e2e;
mod scorer;
mod seen;
mod serve;
mod shared_store;
mod store;
mod store_access;
mod voting;
