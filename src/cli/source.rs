//! IR files: reading, parsing and verifying them, and turning compiler errors into failures
//! whose diagnostics point into the file.

use std::path::{Path, PathBuf};

use safecall::aot::Linker;
use safecall::ir::verify::{Source, render_errors, render_warnings};
use safecall::ir::{self, SourceMap};

use crate::failure::{Code, Failure};

/// A parsed IR file.
pub struct IrFile {
    /// The path as given (for messages).
    pub name: String,
    /// The text.
    pub text: String,
    /// The module.
    pub module: ir::Module,
    /// Where its parts are in the text.
    pub map: SourceMap,
}

fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

impl IrFile {
    /// Reads and parses `path`; a syntax error is a failure with the rendered diagnostic.
    pub fn parse(path: &Path) -> Result<IrFile, Failure> {
        let name = path.display().to_string();
        let text = read(path)?;
        match ir::parse::parse_in_dir(&text, path.parent()) {
            Ok((module, map)) => Ok(IrFile {
                name,
                text,
                module,
                map,
            }),
            Err(e) => Err(Failure::invalid(
                &e.render(&name, &text),
                format!("could not parse `{name}`"),
            )),
        }
    }

    /// Reads, parses and verifies `path`.
    pub fn load(path: &Path) -> Result<IrFile, Failure> {
        let file = IrFile::parse(path)?;
        file.verify()?;
        Ok(file)
    }

    /// Runs the verifier; its errors become a failure with every diagnostic, and its warnings
    /// are printed on stderr (`warning: ...`, with the place in the file).
    pub fn verify(&self) -> Result<ir::VerifiedModule<'_>, Failure> {
        let verified = ir::verify::verify(&self.module).map_err(|errors| self.invalid(&errors))?;
        if !verified.warnings().is_empty() {
            eprint!(
                "{}",
                render_warnings(verified.warnings(), Some(self.source()))
            );
        }
        Ok(verified)
    }

    /// The file as a source for rendering diagnostics.
    fn source(&self) -> Source<'_> {
        Source {
            file: &self.name,
            text: &self.text,
            map: &self.map,
        }
    }

    fn invalid(&self, errors: &[ir::VerifyError]) -> Failure {
        Failure::invalid(
            &render_errors(errors, Some(self.source())),
            format!(
                "`{}` is not valid IR ({})",
                self.name,
                plural(errors.len(), "error")
            ),
        )
    }

    /// The names of the module's functions, for messages.
    pub fn function_names(&self) -> String {
        self.module
            .functions
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// A failure for an error of the compiler API while compiling this file.
    pub fn compile_failure(&self, error: safecall::Error) -> Failure {
        use safecall::Error as E;
        use safecall::backend::BackendError as B;
        match error {
            E::Invalid(errors) => self.invalid(&errors),
            E::Lower(e) => Failure::failed(format!("`{}` cannot be compiled", self.name))
                .detail(e)
                .with_code(Code::Invalid),
            E::Backend(B::Failed(e)) => {
                Failure::failed(format!("code generation for `{}` failed", self.name)).detail(e)
            }
            E::Backend(B::Unavailable(_)) => {
                Failure::usage("this safecall was built without the LLVM backend").help(
                    "build safecall with the cargo feature `llvm` (LLVM 19): \
                         `cargo build --features llvm`",
                )
            }
            E::Backend(B::UnresolvedSymbols(names)) => Failure::failed(format!(
                "`{}` calls symbols that are not defined in this process: {}",
                self.name,
                names.join(", ")
            ))
            .help("load a library that defines them with `--preload LIB`"),
            E::Link(e) => match e.linker {
                Linker::Cc => Failure::failed("linking failed")
                    .detail(format!("command: {}", e.command))
                    .detail(e.output),
                Linker::InProcess => {
                    Failure::failed(format!("linking failed ({}): {}", e.command, e.output))
                        .help("`--linker cc` links with the system C compiler instead")
                }
            },
            E::Io { path, error } => io_failure("cannot write", &path, &error),
        }
    }
}

/// Reads a text file; failing that, a failure naming it.
pub fn read(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| io_failure("cannot read", path, &e))
}

/// `cannot <verb> `<path>`: <error>`.
pub fn io_failure(verb: &str, path: &Path, error: &std::io::Error) -> Failure {
    Failure::failed(format!(
        "{verb} `{}`: {}",
        path.display(),
        io_message(error)
    ))
}

/// An I/O error's message without Rust's `(os error N)` suffix.
fn io_message(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The stem of a path, for naming outputs (`add_one` of `examples/ir/add_one.scir`).
pub fn stem(path: &Path) -> PathBuf {
    PathBuf::from(path.file_stem().unwrap_or(path.as_os_str()))
}
