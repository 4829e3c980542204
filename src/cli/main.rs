//! `safecall`: the command-line driver of the safecall compiler.
//!
//! ```text
//! safecall check FILE.scir                         parse, verify and lower; diagnostics as in rustc
//! safecall build FILE.scir -o OUT.so|OUT.o         compile (and link) with Cranelift or LLVM
//! safecall run FILE.scir FUNC ARGS...              JIT-compile, call, print the result
//! safecall inspect LIB.so                          functions, signatures, docs, import tree
//! ```
//!
//! Every subcommand is a module of its own ([`check`], [`build`], [`run`], [`inspect`]); they
//! share the loading of IR files ([`source`]), the translation of code-generation options
//! ([`codegen`]) and the reporting of failures with documented exit codes ([`failure`]). The
//! user documentation is `docs/cli.md`.

mod args;
mod build;
mod check;
mod codegen;
mod elf_check;
mod failure;
mod inspect;
mod library;
mod probe;
mod run;
mod sandbox;
mod schema;
mod show;
mod source;
mod tensor;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit codes, as `--help` documents them.
const EXIT_CODES: &str = "\
Exit codes:
  0    success
  1    the IR file does not parse or verify (diagnostics on stderr)
  2    usage: invalid command line, argument syntax, or an option this build cannot honour
  3    `run`: the called function raised an error (`KIND: message` on stderr)
  4    failure: reading or writing files, code generation, linking, loading, unresolved symbols
  101  internal error: a bug in safecall (please report it)";

/// Compile host functions to native TVM-FFI safe-call code.
///
/// A host function is described in a `.scir` file (the IR reference is docs/ir.md). safecall
/// verifies it and generates `__tvm_ffi_<name>` functions that check their arguments and raise
/// precise errors, as an object file, a shared library that Python's `tvm_ffi.load_module`
/// loads, or JIT-compiled code called at once.
#[derive(Debug, Parser)]
#[command(name = "safecall", version, after_help = EXIT_CODES, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Check(check::CheckArgs),
    Build(build::BuildArgs),
    Run(run::RunArgs),
    Inspect(inspect::InspectArgs),
    /// Loads libraries in a child process for `inspect` and `run --preload` (internal)
    #[command(name = sandbox::SUBCOMMAND, hide = true)]
    LoadInChild(sandbox::ChildArgs),
}

fn main() -> ExitCode {
    failure::install_panic_hook();
    let cli = Cli::parse();
    if let Command::LoadInChild(args) = &cli.command {
        return failure::catch_internal_errors(|| sandbox::child(args));
    }
    failure::catch_internal_errors(|| {
        let outcome = match cli.command {
            Command::Check(args) => check::check(&args),
            Command::Build(args) => build::build(&args),
            Command::Run(args) => run::run(&args),
            Command::Inspect(args) => inspect::inspect(&args),
            Command::LoadInChild(_) => unreachable!("handled above"),
        };
        match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => failure.report(),
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
