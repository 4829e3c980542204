//! Failures of a subcommand: what went wrong in one line, the detail under it, and the exit
//! code (documented in `safecall --help` and docs/cli.md).

use std::process::ExitCode;
use std::sync::Mutex;

/// The documented exit codes other than success.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// The IR file does not parse or verify.
    Invalid = 1,
    /// The command line is invalid or asks for something this build cannot do.
    Usage = 2,
    /// `run`: the called function raised an error.
    Raised = 3,
    /// Files, code generation, linking, loading.
    Failed = 4,
    /// An internal error (a panic), as Rust's own exit code for one.
    Internal = 101,
}

/// The exit code of a panic (as Rust's own).
const INTERNAL: u8 = Code::Internal as u8;

/// A failed subcommand.
#[derive(Debug)]
pub struct Failure {
    code: Code,
    /// Everything printed on stderr.
    text: String,
}

impl Failure {
    fn new(code: Code, cause: impl std::fmt::Display) -> Self {
        Failure {
            code,
            text: format!("error: {cause}\n"),
        }
    }

    /// An invalid command line, argument, or option combination.
    pub fn usage(cause: impl std::fmt::Display) -> Self {
        Failure::new(Code::Usage, cause)
    }

    /// A failure of the work itself (files, code generation, linking, loading).
    pub fn failed(cause: impl std::fmt::Display) -> Self {
        Failure::new(Code::Failed, cause)
    }

    /// An internal error reported by a child process (`detail`: what it printed).
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Failure::new(
            Code::Internal,
            "internal error in safecall (a bug, please report it)",
        )
        .detail(detail)
    }

    /// Invalid IR: the rendered diagnostics, then a summary line.
    pub fn invalid(diagnostics: &str, summary: impl std::fmt::Display) -> Self {
        let mut text = diagnostics.trim_end().to_owned();
        text.push_str(&format!("\n\nerror: {summary}\n"));
        Failure {
            code: Code::Invalid,
            text,
        }
    }

    /// An error raised by a called function, exactly as raised: `KIND: message`.
    pub fn raised(kind: &str, message: &str) -> Self {
        Failure {
            code: Code::Raised,
            text: format!("{kind}: {message}\n"),
        }
    }

    /// Adds detail under the cause: each line indented by two spaces.
    pub fn detail(mut self, detail: impl std::fmt::Display) -> Self {
        for line in detail.to_string().trim_end().lines() {
            self.text.push_str("  ");
            self.text.push_str(line);
            self.text.push('\n');
        }
        self
    }

    /// The same failure with another exit code.
    pub fn with_code(mut self, code: Code) -> Self {
        self.code = code;
        self
    }

    /// Adds a `help:` line.
    pub fn help(mut self, help: impl std::fmt::Display) -> Self {
        self.text.push_str(&format!("help: {help}\n"));
        self
    }

    /// Prints the failure on stderr and returns its exit code.
    pub fn report(self) -> ExitCode {
        eprint!("{}", self.text);
        ExitCode::from(self.code as u8)
    }
}

/// The last panic's message and location, recorded by the hook for [`catch_internal_errors`].
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Replaces the default panic output (a Rust backtrace hint) with a recorded message that
/// [`catch_internal_errors`] reports as an internal error. Panics caught elsewhere (the JIT
/// guards its own) print nothing.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        let at = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        *PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{payload}{at}"));
    }));
}

/// Runs `f`; a panic becomes the documented internal-error report and exit code 101.
pub fn catch_internal_errors(f: impl FnOnce() -> ExitCode) -> ExitCode {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(code) => code,
        Err(_) => {
            let what = PANIC
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .unwrap_or_else(|| "a panic".to_owned());
            eprintln!("error: internal error in safecall (a bug, please report it)\n  {what}");
            ExitCode::from(INTERNAL)
        }
    }
}
