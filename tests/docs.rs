//! The documentation is true: every `console` block of `docs/*.md` and the README is run,
//! command by command, and its output compared with the text in the docs; every `python`
//! block runs with the real `tvm_ffi`. (The `rust` blocks are doctests: `src/lib.rs` includes
//! the guides under `cfg(doctest)`.)
//!
//! A `console` block holds `$ COMMAND` lines, each followed by its expected output (stdout,
//! then stderr) and, when it is not 0, a last line `(exit code N)`. In the expected text a
//! line `...` stands for any number of lines and `...` inside a line for any text. Commands
//! run with `sh` in a directory holding a copy of `examples/`, one directory per document,
//! in order, with `safecall` (this build's binary) and `python` (`$SAFECALL_PYTHON`) first on
//! the `PATH`. `python` blocks run there too, as scripts, after every `console` block before
//! them; they check themselves with `assert`. With the `llvm` feature, every `safecall run`
//! command runs a second time with `--backend llvm` and must print the same.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fenced code block.
struct Block {
    lang: String,
    /// 1-based line of the opening fence.
    line: usize,
    text: String,
}

fn blocks(doc: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<Block> = None;
    for (i, line) in doc.lines().enumerate() {
        match (&mut current, line.trim_start().strip_prefix("```")) {
            (None, Some(lang)) => {
                current = Some(Block {
                    lang: lang.trim().to_owned(),
                    line: i + 1,
                    text: String::new(),
                });
            }
            (Some(_), Some(_)) => out.push(current.take().expect("open block")),
            (Some(block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(current.is_none(), "an unclosed code block");
    out
}

/// One command of a console block.
struct Step {
    command: String,
    expected: Vec<String>,
    code: i32,
}

fn steps(block: &str) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for line in block.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            out.push(Step {
                command: command.to_owned(),
                expected: Vec::new(),
                code: 0,
            });
            continue;
        }
        let step = out
            .last_mut()
            .unwrap_or_else(|| panic!("output before any command: {line:?}"));
        match line
            .strip_prefix("(exit code ")
            .and_then(|r| r.strip_suffix(')'))
        {
            Some(code) => step.code = code.parse().expect("an exit code"),
            None => step.expected.push(line.to_owned()),
        }
    }
    out
}

/// Whether `text` matches `pattern`, where `...` stands for any text.
fn line_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || !text[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Whether `lines` match `patterns`, where a pattern line `...` matches any number of lines.
fn lines_match(patterns: &[String], lines: &[&str]) -> bool {
    match patterns.split_first() {
        None => lines.is_empty(),
        Some((p, rest)) if p == "..." => (0..=lines.len()).any(|i| lines_match(rest, &lines[i..])),
        Some((p, rest)) => {
            !lines.is_empty() && line_matches(p, lines[0]) && lines_match(rest, &lines[1..])
        }
    }
}

/// A directory with a copy of `examples/` and a `bin/` of shims for the `PATH`.
struct Workspace {
    dir: PathBuf,
    path: String,
    python: bool,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

impl Workspace {
    fn new(name: &str) -> Workspace {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("docs")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
            &dir.join("examples"),
        );
        let bin = dir.join(".bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_safecall"), bin.join("safecall")).unwrap();
        let python = std::env::var_os("SAFECALL_PYTHON");
        if let Some(python) = &python {
            // A script, not a symlink: a virtual environment's python finds its packages
            // through the path it is started by.
            use std::os::unix::fs::PermissionsExt;
            let shim = bin.join("python");
            std::fs::write(
                &shim,
                format!("#!/bin/sh\nexec '{}' \"$@\"\n", Path::new(python).display()),
            )
            .unwrap();
            std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Workspace {
            dir,
            path,
            python: python.is_some(),
        }
    }

    fn sh(&self, command: &str) -> (Option<i32>, String) {
        let out = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(&self.dir)
            .env("PATH", &self.path)
            .env_remove("CC")
            .env_remove("COLUMNS")
            .output()
            .unwrap_or_else(|e| panic!("cannot run sh: {e}"));
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        (out.status.code(), text)
    }
}

use crate::common::skip::skip;

/// Runs the console and python blocks of `doc` (a path from the repository root); returns how
/// many commands and scripts ran.
fn check_doc(doc: &str) -> usize {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc))
        .unwrap_or_else(|e| panic!("{doc}: {e}"));
    let ws = Workspace::new(&doc.replace('/', "_"));
    let mut ran = 0;
    for block in blocks(&text) {
        let uses_python = match block.lang.as_str() {
            "console" => steps(&block.text)
                .iter()
                .any(|s| s.command.starts_with("python ")),
            "python" => true,
            _ => continue,
        };
        if uses_python && !ws.python {
            skip(&format!(
                "{doc}:{}: SAFECALL_PYTHON is not set (run `cargo xtask test`)",
                block.line
            ));
            continue;
        }
        if block.lang == "python" {
            let script = ws.dir.join(format!(".block{}.py", block.line));
            std::fs::write(&script, &block.text).unwrap();
            let (code, output) = ws.sh(&format!("python {}", script.display()));
            assert_eq!(
                code,
                Some(0),
                "{doc}:{}: the python block failed:\n{output}",
                block.line
            );
            ran += 1;
            continue;
        }
        for step in steps(&block.text) {
            // With the LLVM backend built in, a `safecall run` must print the same on it.
            let llvm_run = step
                .command
                .strip_prefix("safecall run ")
                .filter(|_| cfg!(feature = "llvm"))
                .map(|args| format!("safecall run --backend llvm {args}"));
            for command in std::iter::once(step.command.clone()).chain(llvm_run) {
                let (code, output) = ws.sh(&command);
                let lines: Vec<&str> = output.lines().collect();
                assert!(
                    code == Some(step.code) && lines_match(&step.expected, &lines),
                    "{doc}:{}: `{command}`\nexpected (exit code {}):\n{}\n\ngot (exit code {code:?}):\n{output}",
                    block.line,
                    step.code,
                    step.expected.join("\n"),
                );
                ran += 1;
            }
        }
    }
    ran
}

#[test]
fn patterns() {
    assert!(line_matches("a ... b", "a x y b"));
    assert!(line_matches("; f (...)", "; f (12 bytes)"));
    assert!(!line_matches("a ... b", "a x y c"));
    assert!(line_matches("...x...", "axb"));
    let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(lines_match(&p(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(lines_match(&p(&["a", "..."]), &["a"]));
    assert!(!lines_match(&p(&["a", "...", "d"]), &["a", "b"]));
}

#[test]
fn cli_md() {
    assert!(check_doc("docs/cli.md") > 15);
}

/// How many steps a document has: its console commands, plus its python blocks when
/// `SAFECALL_PYTHON` is set (they are skipped otherwise), plus its `safecall run` commands
/// again on LLVM with the `llvm` feature.
fn expected_steps(console: usize, python: usize, runs: usize) -> usize {
    let python = if std::env::var_os("SAFECALL_PYTHON").is_some() {
        python
    } else {
        0
    };
    let llvm_runs = if cfg!(feature = "llvm") { runs } else { 0 };
    console + python + llvm_runs
}

#[test]
fn python_md() {
    assert_eq!(check_doc("docs/python.md"), expected_steps(4, 5, 0));
}

#[test]
fn guide_md() {
    assert_eq!(check_doc("docs/guide.md"), expected_steps(4, 1, 1));
}

#[test]
fn abi_md() {
    assert_eq!(check_doc("docs/abi.md"), expected_steps(4, 0, 4));
}

#[test]
fn readme_names_what_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    // The two commands of its first section, verbatim.
    assert!(readme.contains("\n    cargo run --example add_one\n"));
    assert!(readme.contains("\n    cargo xtask test\n"));
    // Every document and example it links or names exists.
    for word in readme.split(|c: char| c.is_whitespace() || "()[]`,:;".contains(c)) {
        // A link may point into the file (`docs/python.md#a-section`).
        let word = word.split('#').next().unwrap_or(word);
        let is_path = word.starts_with("docs/") || word.starts_with("examples/");
        if is_path && !word.contains('*') {
            assert!(
                root.join(word).exists(),
                "README.md names {word}, which does not exist"
            );
        }
    }
    for example in ["add_one", "launcher", "calls", "jit"] {
        assert!(root.join("examples").join(format!("{example}.rs")).exists());
        assert!(
            readme.contains(&format!("`{example}.rs`")),
            "README.md lists {example}"
        );
    }
}

/// docs/extending.md's worked example is the current code: each `rust,ignore` block starts
/// with `// FILE` and the rest of it is quoted, byte for byte, from that file.
#[test]
fn extending_md_quotes_the_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("docs/extending.md")).unwrap();
    let mut quoted = 0;
    for block in blocks(&text).iter().filter(|b| b.lang == "rust,ignore") {
        let (first, excerpt) = block.text.split_once('\n').unwrap_or((&block.text, ""));
        let file = first
            .strip_prefix("// ")
            .unwrap_or_else(|| panic!("docs/extending.md:{}: no `// FILE` line", block.line));
        let source = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("docs/extending.md:{}: {file}: {e}", block.line));
        assert!(
            source.contains(excerpt),
            "docs/extending.md:{}: {file} no longer holds:\n{excerpt}",
            block.line
        );
        quoted += 1;
    }
    assert_eq!(quoted, 5, "the worked example's excerpts");
}
