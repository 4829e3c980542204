//! Linking shared libraries: in this process (the default), or with the system C compiler.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Which linker writes a shared library.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Linker {
    /// safecall's own ELF linker, in this process (x86-64 and AArch64): no C compiler, no
    /// files besides the output. It takes [`LinkOptions::runtime_dir`]; `cc`, `flags` and
    /// `extra` are the C compiler's and are refused with it.
    #[default]
    InProcess,
    /// The C compiler driver ([`LinkOptions::cc`]) with [`LinkOptions::flags`] and
    /// [`LinkOptions::extra`].
    Cc,
}

impl Linker {
    /// Every linker, for option lists.
    pub const ALL: [Linker; 2] = [Linker::InProcess, Linker::Cc];

    /// The linker's name in options (`in-process`, `cc`).
    pub fn keyword(self) -> &'static str {
        match self {
            Linker::InProcess => "in-process",
            Linker::Cc => "cc",
        }
    }

    /// The linker named `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<Linker> {
        Linker::ALL.into_iter().find(|l| l.keyword() == keyword)
    }
}

/// How to link a shared library.
#[derive(Clone, Debug)]
pub struct LinkOptions {
    /// Which linker (default: in-process).
    pub linker: Linker,
    /// The compiler driver ([`Linker::Cc`] only); default `$CC`, else `cc` for the host, and the target's
    /// [cross compiler](crate::target::Target::default_cross_cc) for another target.
    pub cc: Option<String>,
    /// The target the object was compiled for (`None`: the host); it chooses the default
    /// compiler driver.
    pub target: Option<crate::target::Target>,
    /// Flags before the inputs ([`Linker::Cc`] only); default `-shared -Wl,-z,now -Wl,-z,text`.
    pub flags: Vec<String>,
    /// Link `libsafecall_runtime.so` from this directory (with an rpath) instead of leaving the
    /// TVM-FFI symbols undefined for load time.
    pub runtime_dir: Option<PathBuf>,
    /// Extra arguments after the inputs (libraries, `-L` paths; [`Linker::Cc`] only).
    pub extra: Vec<String>,
}

impl Default for LinkOptions {
    fn default() -> Self {
        LinkOptions {
            linker: Linker::InProcess,
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
    /// The linker that failed.
    pub linker: Linker,
    /// The command, as it could be typed in a shell ([`Linker::Cc`]; for the in-process
    /// linker, its name).
    pub command: String,
    /// Exit status and the linker's output (or why it could not start); for the in-process
    /// linker, what in the object or the output it could not handle.
    pub output: String,
}

impl std::fmt::Display for LinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.linker {
            Linker::InProcess => write!(
                f,
                "linking failed ({}): {}",
                self.command,
                self.output.trim_end()
            ),
            Linker::Cc => write!(
                f,
                "linking failed: {}\n{}",
                self.command,
                self.output.trim_end()
            ),
        }
    }
}

impl std::error::Error for LinkError {}

/// Links the object file `object` into the shared library `output`.
pub fn link_shared_library(
    object: &Path,
    output: &Path,
    options: &LinkOptions,
) -> Result<(), LinkError> {
    match options.linker {
        Linker::InProcess => {
            let bytes = std::fs::read(object).map_err(|e| {
                in_process_error(format!("cannot read `{}`: {e}", object.display()))
            })?;
            link_in_process(&bytes, output, options)
        }
        Linker::Cc => link_with_cc(object, output, options),
    }
}

/// Links the object file bytes `object` into the shared library `output`: in this process,
/// or through a temporary `<output>.o` for the C compiler.
pub fn link_object_bytes(
    object: &[u8],
    output: &Path,
    options: &LinkOptions,
) -> Result<(), LinkError> {
    match options.linker {
        Linker::InProcess => link_in_process(object, output, options),
        Linker::Cc => {
            let mut path = output.as_os_str().to_owned();
            path.push(".o");
            let path = PathBuf::from(path);
            std::fs::write(&path, object).map_err(|e| LinkError {
                linker: Linker::Cc,
                command: format!("writing {}", path.display()),
                output: e.to_string(),
            })?;
            let linked = link_with_cc(&path, output, options);
            let _ = std::fs::remove_file(&path);
            linked
        }
    }
}

/// The in-process linker's name in errors.
const IN_PROCESS: &str = "the in-process linker";

fn in_process_error(output: String) -> LinkError {
    LinkError {
        linker: Linker::InProcess,
        command: IN_PROCESS.to_owned(),
        output,
    }
}

fn link_in_process(object: &[u8], output: &Path, options: &LinkOptions) -> Result<(), LinkError> {
    let defaults = LinkOptions::default();
    let cc_only = [
        ("cc", options.cc.is_some()),
        ("flags", options.flags != defaults.flags),
        ("extra", !options.extra.is_empty()),
    ];
    if let Some((field, _)) = cc_only.iter().find(|(_, given)| *given) {
        return Err(in_process_error(format!(
            "the link option `{field}` is for the C compiler: set `linker` to `Linker::Cc` \
             (`--linker cc`) to use it"
        )));
    }
    let mut settings = super::elf::Settings {
        soname: output
            .file_name()
            .map(|name| name.to_string_lossy().into_owned()),
        ..Default::default()
    };
    // Generated GPU launches call libc (to reach the CUDA driver at run time).
    let libc = crate::lower::libc_names().map(str::to_owned);
    settings
        .as_needed
        .push(("libc.so.6".to_owned(), libc.to_vec()));
    if let Some(dir) = &options.runtime_dir {
        settings.needed.push("libsafecall_runtime.so".to_owned());
        settings.runpath = Some(dir.display().to_string());
    }
    let library = super::elf::link(object, &settings).map_err(in_process_error)?;
    write_library(output, &library)
        .map_err(|e| in_process_error(format!("cannot write `{}`: {e}", output.display())))
}

/// Writes a library as a new file (a library of that name loaded in some process keeps its
/// old contents), executable like a linker's output.
///
/// The old file is removed before the new one is renamed into place, as a linker removes its
/// output before writing it: renaming over an existing file makes ext4 flush the new file's
/// data at once (`auto_da_alloc`), which cost over a millisecond per library here, more than
/// linking it.
fn write_library(output: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut temporary = output.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    let written = std::fs::write(&temporary, bytes)
        .and_then(|()| std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| match std::fs::remove_file(output) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            Ok(()) | Err(_) => Ok(()),
        })
        .and_then(|()| std::fs::rename(&temporary, output));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

fn link_with_cc(object: &Path, output: &Path, options: &LinkOptions) -> Result<(), LinkError> {
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
        linker: Linker::Cc,
        command: command.clone(),
        output: format!("cannot run `{cc}`: {e}"),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = format!("{}\n", out.status);
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    output.push_str(&String::from_utf8_lossy(&out.stdout));
    Err(LinkError {
        linker: Linker::Cc,
        command,
        output,
    })
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
