//! Linking shared libraries with the system C compiler.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How to link a shared library.
#[derive(Clone, Debug)]
pub struct LinkOptions {
    /// The compiler driver; default `$CC`, else `cc` for the host, and the target's
    /// [cross compiler](crate::target::Target::default_cross_cc) for another target.
    pub cc: Option<String>,
    /// The target the object was compiled for (`None`: the host); it chooses the default
    /// compiler driver.
    pub target: Option<crate::target::Target>,
    /// Flags before the inputs; default `-shared -Wl,-z,now -Wl,-z,text`.
    pub flags: Vec<String>,
    /// Link `libsafecall_runtime.so` from this directory (with an rpath) instead of leaving the
    /// TVM-FFI symbols undefined for load time.
    pub runtime_dir: Option<PathBuf>,
    /// Extra arguments after the inputs (libraries, `-L` paths).
    pub extra: Vec<String>,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            cc: None,
            target: None,
            flags: ["-shared", "-Wl,-z,now", "-Wl,-z,text"]
                .map(String::from)
                .to_vec(),
            runtime_dir: None,
            extra: Vec::new(),
        }
    }
}

/// A failed link: the command line and what the linker printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkError {
    /// The command, as it could be typed in a shell.
    pub command: String,
    /// Exit status and the linker's output (or why it could not start).
    pub output: String,
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "linking failed: {}\n{}",
            self.command,
            self.output.trim_end()
        )
    }
}

impl std::error::Error for LinkError {}

/// Links `object` into the shared library `output`.
pub fn link_shared_library(
    object: &Path,
    output: &Path,
    options: &LinkOptions,
) -> Result<(), LinkError> {
    let cc = options
        .cc
        .clone()
        .or_else(|| options.target.and_then(|t| t.default_cross_cc()))
        .or_else(|| std::env::var("CC").ok())
        .unwrap_or_else(|| "cc".to_owned());
    let mut cmd = Command::new(&cc);
    cmd.args(&options.flags).arg("-o").arg(output).arg(object);
    if let Some(dir) = &options.runtime_dir {
        cmd.arg(format!("-L{}", dir.display()))
            .arg("-lsafecall_runtime")
            .arg(format!("-Wl,-rpath,{}", dir.display()));
    }
    cmd.args(&options.extra);
    let command = std::iter::once(cc.clone())
        .chain(cmd.get_args().map(|a| shell_quote(&a.to_string_lossy())))
        .collect::<Vec<_>>()
        .join(" ");
    let out = cmd.output().map_err(|e| LinkError {
        command: command.clone(),
        output: format!("cannot run `{cc}`: {e}"),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = format!("{}\n", out.status);
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    output.push_str(&String::from_utf8_lossy(&out.stdout));
    Err(LinkError { command, output })
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=,+:@%".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
