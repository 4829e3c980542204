//! `safecall build FILE -o OUT`: compile an IR file to an object file or a shared library, and
//! show its intermediate forms.

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use safecall::aot::{LinkOptions, Linker};
use safecall::lower::LowerOptions;
use safecall::{Backend, Emit, Options};

use crate::codegen::CodegenArgs;
use crate::failure::Failure;
use crate::source::{IrFile, io_failure, stem};

/// The file name of safecall-runtime's shared library.
const RUNTIME_LIBRARY: &str = "libsafecall_runtime.so";

/// Compile an IR file to a shared library (`.so`) or an object file (`.o`)
///
/// The output's extension chooses what is written: `.so` is linked in-process (no C compiler
/// needed; `--linker cc` links with `cc -shared -Wl,-z,now -Wl,-z,text`) and can be loaded by
/// Python's
/// `tvm_ffi.load_module` or safecall-runtime; `.o` is for your own link step. Either way the
/// TVM-FFI C API is left undefined, resolved at load time from whichever runtime the process
/// has, unless `--link-runtime` links libsafecall_runtime.so.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  safecall build examples/ir/add_one.scir -o add_one.so
  safecall build kernels.scir -o kernels.o --backend llvm --opt 3 --cpu x86-64-v3
  safecall build add_one.scir --emit lowered --emit clif
  safecall build add_one.scir -o add_one.so --emit asm --emit-dir dump/

Exit codes: 0 built, 1 invalid IR, 2 usage (bad option or combination), 4 code generation,
linking or a file failed.")]
pub struct BuildArgs {
    /// The IR file (`.scir`, see docs/ir.md)
    pub file: PathBuf,

    /// The output: `NAME.so` (shared library) or `NAME.o` (object file)
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,

    #[command(flatten)]
    pub codegen: CodegenArgs,

    /// Print an intermediate form on stdout (repeatable; several are separated by `// ----
    /// FORM ----` lines)
    #[arg(long, value_enum, value_name = "FORM")]
    pub emit: Vec<EmitForm>,

    /// Write the forms of --emit to DIR/<file stem>.<scir|lowered|clif|ll|s> instead of
    /// stdout
    #[arg(long, value_name = "DIR", requires = "emit")]
    pub emit_dir: Option<PathBuf>,

    /// Register the functions at load time as system-library symbols
    /// `__tvm_ffi_<PREFIX><name>` instead of exporting them (overrides the module's
    /// `system_lib_prefix`)
    #[arg(long, value_name = "PREFIX")]
    pub system_lib: Option<String>,

    /// Also export the host function NAME as `__tvm_ffi_main`
    #[arg(long, value_name = "NAME")]
    pub main: Option<String>,

    /// `.so` only: link libsafecall_runtime.so from DIR (default: the directory of this
    /// safecall executable, or its `deps/`), with an rpath, instead of leaving the TVM-FFI C
    /// API for load time. Write `--link-runtime=DIR`
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub link_runtime: Option<Option<PathBuf>>,

    /// `.so` only: which linker writes the library: `in-process` (safecall's own ELF linker,
    /// no C compiler needed; the default) or `cc` (the system C compiler driver, `cc -shared
    /// -Wl,-z,now -Wl,-z,text`; the default when `--cc` or `--link-arg` is given)
    #[arg(long, value_name = "LINKER", value_parser = parse_linker)]
    pub linker: Option<Linker>,

    /// `.so` only: the C compiler driver that links with `--linker cc` (default: `$CC`, else
    /// `cc`; for another `--target`, its GNU cross compiler such as `aarch64-linux-gnu-gcc`)
    #[arg(long, value_name = "CC")]
    pub cc: Option<String>,

    /// `.so` only, with `--linker cc`: an extra argument of the link command, after the inputs
    /// (repeatable), e.g.
    /// `--link-arg=-L/opt/kernels --link-arg=-lkernels`
    #[arg(long = "link-arg", value_name = "ARG", allow_hyphen_values = true)]
    pub link_args: Vec<String>,
}

/// An intermediate form `--emit` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EmitForm {
    /// The IR, as the printer writes it.
    Ir,
    /// The lowered form, annotated with the IR it came from.
    Lowered,
    /// Cranelift IR as built (`--backend cranelift`).
    Clif,
    /// LLVM IR as built, before optimization (`--backend llvm`).
    LlvmIr,
    /// The machine code as assembly: Cranelift's VCode disassembly, or LLVM's assembly
    /// output (after optimization).
    Asm,
}

impl EmitForm {
    fn extension(self) -> &'static str {
        match self {
            EmitForm::Ir => "scir",
            EmitForm::Lowered => "lowered",
            EmitForm::Clif => "clif",
            EmitForm::LlvmIr => "ll",
            EmitForm::Asm => "s",
        }
    }

    fn name(self) -> &'static str {
        match self {
            EmitForm::Ir => "ir",
            EmitForm::Lowered => "lowered",
            EmitForm::Clif => "clif",
            EmitForm::LlvmIr => "llvm-ir",
            EmitForm::Asm => "asm",
        }
    }

    /// The library's [`Emit`] for this form with `backend`.
    fn emit(self, backend: Backend) -> Result<Emit, Failure> {
        Ok(match (self, backend) {
            (EmitForm::Ir, _) => Emit::Ir,
            (EmitForm::Lowered, _) => Emit::Lowered,
            (EmitForm::Asm, _) => Emit::Asm,
            (EmitForm::Clif, Backend::Cranelift) | (EmitForm::LlvmIr, Backend::Llvm) => {
                Emit::BackendIr
            }
            (EmitForm::Clif, Backend::Llvm) => {
                return Err(Failure::usage(
                    "`--emit clif` shows Cranelift's IR, but the backend is LLVM",
                )
                .help("use `--emit llvm-ir`, or drop `--backend llvm`"));
            }
            (EmitForm::LlvmIr, Backend::Cranelift) => {
                return Err(Failure::usage(
                    "`--emit llvm-ir` shows LLVM's IR, but the backend is Cranelift",
                )
                .help("add `--backend llvm`, or use `--emit clif`"));
            }
        })
    }
}

/// What `-o` asks for.
enum Output {
    Object(PathBuf),
    SharedLibrary(PathBuf),
}

fn output_kind(path: &Path) -> Result<Output, Failure> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("o") => Ok(Output::Object(path.to_owned())),
        Some("so") => Ok(Output::SharedLibrary(path.to_owned())),
        _ => Err(Failure::usage(format!(
            "cannot tell what to build from `{}`: the output must end in `.so` (a shared \
             library) or `.o` (an object file)",
            path.display()
        ))),
    }
}

/// Runs `safecall build`.
pub fn build(args: &BuildArgs) -> Result<(), Failure> {
    let output = args.output.as_deref().map(output_kind).transpose()?;
    if output.is_none() && args.emit.is_empty() {
        return Err(Failure::usage(
            "nothing to do: give an output with `-o OUT.so` / `-o OUT.o`, or `--emit FORM`",
        ));
    }
    let codegen = args.codegen.settings()?;
    let emits = args
        .emit
        .iter()
        .map(|f| f.emit(codegen.backend).map(|e| (*f, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let link = link_options(args, output.as_ref())?;

    let file = IrFile::load(&args.file)?;
    let options = Options {
        backend: codegen.backend,
        lower: LowerOptions {
            system_lib_prefix: args.system_lib.clone(),
            main_alias: args.main.clone(),
        },
        cranelift: codegen.cranelift,
        llvm: codegen.llvm,
    };

    for (i, (form, emit)) in emits.iter().enumerate() {
        let text =
            safecall::emit(&file.module, *emit, &options).map_err(|e| file.compile_failure(e))?;
        match &args.emit_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| io_failure("cannot create", dir, &e))?;
                let path = dir.join(stem(&args.file)).with_extension(form.extension());
                std::fs::write(&path, text).map_err(|e| io_failure("cannot write", &path, &e))?;
                eprintln!("wrote {} ({})", path.display(), form.name());
            }
            None => {
                if emits.len() > 1 {
                    if i > 0 {
                        println!();
                    }
                    println!("// ---- {} ----", form.name());
                }
                print!("{text}");
            }
        }
    }

    let Some(output) = output else {
        return Ok(());
    };
    let path = match &output {
        Output::Object(path) => {
            let bytes = safecall::compile_object(&file.module, &options)
                .map_err(|e| file.compile_failure(e))?;
            std::fs::write(path, bytes).map_err(|e| io_failure("cannot write", path, &e))?;
            path
        }
        Output::SharedLibrary(path) => {
            safecall::build_shared_library(&file.module, path, &options, &link)
                .map_err(|e| file.compile_failure(e))?;
            path
        }
    };
    let n = file.module.functions.len();
    eprintln!(
        "built {} from {} ({} function{}: {})",
        path.display(),
        file.name,
        n,
        if n == 1 { "" } else { "s" },
        file.function_names()
    );
    Ok(())
}

/// The link options of a `.so` output; link options with any other output are an error.
fn link_options(args: &BuildArgs, output: Option<&Output>) -> Result<LinkOptions, Failure> {
    let mut link = LinkOptions::default();
    let link_flags = [
        ("--link-runtime", args.link_runtime.is_some()),
        ("--linker", args.linker.is_some()),
        ("--cc", args.cc.is_some()),
        ("--link-arg", !args.link_args.is_empty()),
    ];
    if !matches!(output, Some(Output::SharedLibrary(_))) {
        if let Some((flag, _)) = link_flags.iter().find(|(_, given)| *given) {
            return Err(Failure::usage(format!(
                "{flag} applies to shared libraries, but the output is not a `.so`"
            )));
        }
        return Ok(link);
    }
    let wants_cc = args.cc.is_some() || !args.link_args.is_empty();
    link.linker = match args.linker {
        Some(Linker::InProcess) if wants_cc => {
            return Err(Failure::usage(
                "--cc and --link-arg are options of the C compiler, but `--linker in-process` \
                 links without one",
            )
            .help("drop `--linker in-process`, or the C compiler's options"));
        }
        Some(linker) => linker,
        None if wants_cc => Linker::Cc,
        None => Linker::InProcess,
    };
    link.cc = args.cc.clone();
    link.extra = args.link_args.clone();
    if let Some(dir) = &args.link_runtime {
        link.runtime_dir = Some(runtime_dir(dir.as_deref())?);
    }
    Ok(link)
}

/// The directory holding libsafecall_runtime.so: `dir` when given (non-empty), else next to
/// this executable (or in its `deps/`, where cargo leaves the libraries of dependencies).
fn runtime_dir(dir: Option<&Path>) -> Result<PathBuf, Failure> {
    let candidates: Vec<PathBuf> = if let Some(dir) = dir {
        vec![dir.to_owned()]
    } else {
        let exe = std::env::current_exe()
            .map_err(|e| Failure::failed(format!("cannot locate the safecall executable: {e}")))?;
        let exe_dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        vec![exe_dir.clone(), exe_dir.join("deps")]
    };
    for candidate in &candidates {
        if candidate.join(RUNTIME_LIBRARY).is_file() {
            return std::path::absolute(candidate)
                .map_err(|e| io_failure("cannot resolve", candidate, &e));
        }
    }
    let looked: Vec<String> = candidates
        .iter()
        .map(|c| format!("`{}`", c.display()))
        .collect();
    Err(Failure::failed(format!(
        "{RUNTIME_LIBRARY} is not in {}",
        looked.join(" or ")
    ))
    .help(
        "build it with `cargo build -p safecall-runtime` (it lands in target/debug), and pass \
         `--link-runtime=DIR`",
    ))
}

/// Parses `--linker`.
fn parse_linker(text: &str) -> Result<Linker, String> {
    Linker::from_keyword(text).ok_or_else(|| {
        let names: Vec<&str> = Linker::ALL.iter().map(|l| l.keyword()).collect();
        format!(
            "unknown linker `{text}`; expected one of: {}",
            names.join(", ")
        )
    })
}
