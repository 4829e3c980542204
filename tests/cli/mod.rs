//! Integration tests of the `safecall` command-line tool: every subcommand, its output, its
//! failures and their exit codes (as `safecall --help` documents them), with the diagnostics
//! snapshotted in `snapshots/cli/`.

mod build;
mod check;
mod damaged;
mod emit;
mod gpu;
mod help;
mod inspect;
mod run;
mod support;
