//! `safecall check FILE`: parse, verify and lower an IR file without generating code.

use std::path::PathBuf;

use safecall::lower::{self, LowerOptions};

use crate::failure::Failure;
use crate::source::IrFile;

/// Check an IR file: parse, verify and lower it (no code generation)
///
/// Diagnostics point into the file as rustc's do (`file:line:column`, the line, a caret under
/// the problem, and the function and statement it is in); every verifier error is reported.
/// On success, prints the module's name and functions.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 valid, 1 invalid (diagnostics on stderr), 2 usage, 4 \
                        the file cannot be read."
)]
pub struct CheckArgs {
    /// The IR file (`.scir`, see docs/ir.md)
    pub file: PathBuf,
}

/// Runs `safecall check`.
pub fn check(args: &CheckArgs) -> Result<(), Failure> {
    let file = IrFile::parse(&args.file)?;
    lower::lower(&file.verify()?, &LowerOptions::default())
        .map_err(|e| file.compile_failure(safecall::Error::Lower(e)))?;
    let functions = &file.module.functions;
    println!(
        "{}: ok (module `{}`, {} function{}: {})",
        file.name,
        file.module.name,
        functions.len(),
        if functions.len() == 1 { "" } else { "s" },
        file.function_names()
    );
    Ok(())
}
