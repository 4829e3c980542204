//! `--help` texts and command-line errors.

use super::support::Dir;
use crate::snapshot;

#[test]
fn top_level_help_lists_the_commands_and_the_exit_codes() {
    let out = Dir::new("help_top").safecall(&["--help"]).expect(0);
    snapshot!("help", out.stdout);
}

#[test]
fn every_subcommand_help_documents_its_exit_codes() {
    let dir = Dir::new("help_sub");
    for sub in ["check", "build", "run", "inspect"] {
        let out = dir.safecall(&[sub, "--help"]).expect(0);
        assert!(
            out.stdout.contains("Exit codes: 0"),
            "{sub} --help:\n{}",
            out.stdout
        );
        assert!(
            out.stdout.contains(&format!("Usage: safecall {sub}")),
            "{}",
            out.stdout
        );
    }
    let run = dir.safecall(&["run", "--help"]).expect(0);
    for syntax in [
        "float32[4,3]:arange",
        "int8[8]:fill=3",
        "str:hello",
        "dtype:float32",
        "cuda:1",
    ] {
        assert!(run.stdout.contains(syntax), "run --help lacks {syntax}");
    }
}

#[test]
fn a_missing_or_unknown_subcommand_is_a_usage_error() {
    let dir = Dir::new("help_usage");
    let out = dir.safecall(&[]).expect(2);
    assert!(
        out.stderr.contains("Usage: safecall <COMMAND>"),
        "{}",
        out.stderr
    );
    let out = dir.safecall(&["frobnicate"]).expect(2);
    assert!(
        out.stderr
            .contains("error: unrecognized subcommand 'frobnicate'"),
        "{}",
        out.stderr
    );
}

#[test]
fn version_is_the_crate_version() {
    let out = Dir::new("help_version").safecall(&["--version"]).expect(0);
    assert_eq!(
        out.stdout.trim(),
        format!("safecall {}", env!("CARGO_PKG_VERSION"))
    );
}
