//! `cargo xtask lint`'s size rule: no source file of the project over [`MAX_LINES`] lines
//! (DEVELOPERS.md: small modules with names that explain themselves). The files are the Rust
//! and Python files git tracks, so generated and vendored trees never count.

use std::path::Path;
use std::process::Command;

use crate::workspace_root;

/// The most lines a source file may have.
pub const MAX_LINES: usize = 700;

/// Fails, listing them, when tracked `.rs`/`.py` files are over [`MAX_LINES`] lines.
pub fn check() -> Result<(), String> {
    let root = workspace_root();
    let out = Command::new("git")
        .current_dir(&root)
        .args(["ls-files", "--", "*.rs", "*.py"])
        .output()
        .map_err(|e| format!("cannot run git ls-files: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let files: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    let over = oversized(&root, &files)?;
    if over.is_empty() {
        eprintln!(
            "xtask: {} source files, none over {MAX_LINES} lines",
            files.len()
        );
        return Ok(());
    }
    Err(format!(
        "source files over {MAX_LINES} lines (split them by concept):\n{}",
        over.iter()
            .map(|(f, n)| format!("  {f}: {n} lines"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

/// The files of `files` (relative to `root`) over [`MAX_LINES`] lines, with their counts.
fn oversized(root: &Path, files: &[String]) -> Result<Vec<(String, usize)>, String> {
    let mut over = Vec::new();
    for file in files {
        let path = root.join(file);
        // A tracked file deleted in the working tree is not a source file any more.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let lines = text.lines().count();
        if lines > MAX_LINES {
            over.push((file.clone(), lines));
        }
    }
    Ok(over)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_over_the_limit_are_listed_with_their_counts() {
        let dir = std::env::temp_dir().join(format!("xtask-size-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("small.rs"), "fn f() {}\n".repeat(MAX_LINES)).unwrap();
        std::fs::write(dir.join("big.py"), "x = 1\n".repeat(MAX_LINES + 1)).unwrap();
        let files = [
            "small.rs".to_owned(),
            "big.py".to_owned(),
            "gone.rs".to_owned(),
        ];
        assert_eq!(
            oversized(&dir, &files).unwrap(),
            vec![("big.py".to_owned(), MAX_LINES + 1)]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
