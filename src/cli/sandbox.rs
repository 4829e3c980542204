//! Loading libraries in a child process: the same `safecall` executable, re-invoked with a
//! hidden subcommand, under a time limit.
//!
//! Loading a shared library runs its code (the dynamic loader's relocation of what it maps,
//! then the library's constructors), and calling its metadata getters runs more of it. A
//! damaged library can crash there (the loader trusts the file), or hang; no care in this
//! process can prevent that, so what runs a library's code for `inspect` runs in a child, and
//! `run --preload` first loads its libraries in a child once. A crash or a hang of the child
//! is reported as such, and `safecall` itself goes on.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::elf_check::{self, Verdict};
use crate::failure::Failure;

/// The name of the hidden subcommand the child runs.
pub const SUBCOMMAND: &str = "__load-in-child";

/// How long a child may take when no time limit is given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What starts each line of the child's answer on its stdout (a library may print there too).
const MARKER: &str = "\u{1}safecall-child\u{1}";

/// At most this much of a child's output is kept (a library may print without end).
const OUTPUT_LIMIT: usize = 16 << 20;

/// What the child does once it has loaded its libraries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Load one library (local symbols) and call its metadata and doc getters.
    Inspect,
    /// Load the libraries in order with their symbols global, as `run --preload` does.
    Preload,
}

/// The hidden subcommand run in the child (not for users: its output is a private protocol).
#[derive(Debug, clap::Args)]
pub struct ChildArgs {
    /// What to do
    #[arg(long, value_enum)]
    pub mode: Mode,
    /// The libraries
    #[arg(required = true)]
    pub libraries: Vec<PathBuf>,
}

/// How a child ended.
#[derive(Debug)]
pub enum Outcome {
    /// It finished: the JSON values it answered, in order.
    Answered(Vec<serde_json::Value>),
    /// A signal killed it (`SIGSEGV`, ...): the signal's name, and what it answered before.
    Crashed {
        signal: String,
        answered: Vec<serde_json::Value>,
        stderr: String,
    },
    /// It ran past the time limit and was killed.
    TimedOut {
        limit: Duration,
        answered: Vec<serde_json::Value>,
    },
    /// It exited with another code than 0 (the loader's own fatal errors exit with 127).
    Exited {
        code: i32,
        answered: Vec<serde_json::Value>,
        stderr: String,
    },
}

/// The name of a signal.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGABRT => "SIGABRT",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGSYS => "SIGSYS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        other => return format!("signal {other}"),
    };
    name.to_owned()
}

/// Collects a pipe's bytes on a thread (up to [`OUTPUT_LIMIT`]), so the child never blocks on a
/// full pipe.
fn collect(mut pipe: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::clone(&buffer);
    std::thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut kept = shared.lock().unwrap_or_else(|p| p.into_inner());
            if kept.len() < OUTPUT_LIMIT {
                kept.extend_from_slice(&chunk[..n]);
            }
        }
    });
    buffer
}

fn take(buffer: &Arc<Mutex<Vec<u8>>>) -> String {
    let bytes = std::mem::take(&mut *buffer.lock().unwrap_or_else(|p| p.into_inner()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `safecall __load-in-child --mode MODE LIBS...` and waits for it, at most `limit`.
pub fn run_child(mode: Mode, libraries: &[&Path], limit: Duration) -> Result<Outcome, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::failed(format!("cannot find the safecall executable: {e}")))?;
    let mode_name = match mode {
        Mode::Inspect => "inspect",
        Mode::Preload => "preload",
    };
    let mut command = Command::new(exe);
    command
        .arg(SUBCOMMAND)
        .args(["--mode", mode_name, "--"])
        .args(libraries.iter().map(|p| OsString::from(p.as_os_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: whatever the library starts is stopped with it.
        .process_group(0);
    let mut child = command
        .spawn()
        .map_err(|e| Failure::failed(format!("cannot start a child process: {e}")))?;
    let stdout = collect(child.stdout.take().expect("piped stdout"));
    let stderr = collect(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => {
                return Err(Failure::failed(format!(
                    "cannot wait for a child process: {e}"
                )));
            }
        }
    };
    if status.is_none() {
        // Not reaped yet, so its process group still exists.
        kill_group(child.id() as libc::pid_t);
        let _ = child.wait();
    }
    // The pipes close when the group is gone; what they had is read by then, or soon.
    let settle = Instant::now() + Duration::from_millis(500);
    while Arc::strong_count(&stdout) + Arc::strong_count(&stderr) > 2 && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(1));
    }
    let answered = answers(&take(&stdout));
    let stderr = take(&stderr);
    Ok(match status {
        None => Outcome::TimedOut { limit, answered },
        Some(status) => match (status.signal(), status.code()) {
            (Some(signal), _) => Outcome::Crashed {
                signal: signal_name(signal),
                answered,
                stderr,
            },
            (None, Some(0)) => Outcome::Answered(answered),
            (None, code) => Outcome::Exited {
                code: code.unwrap_or(-1),
                answered,
                stderr,
            },
        },
    })
}

/// Kills the child's process group (the child and anything it started).
fn kill_group(pid: libc::pid_t) {
    // SAFETY: `kill` with a negated process-group id signals that group only: the group made
    // for the child (`process_group(0)`), whose leader is not reaped yet.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// The JSON values after the marker, one a line.
fn answers(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .filter_map(|line| {
            let at = line.find(MARKER)?;
            serde_json::from_str(&line[at + MARKER.len()..]).ok()
        })
        .collect()
}

/// In the child: writes one answer line.
fn answer(value: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\n{MARKER}{value}");
    let _ = out.flush();
}

/// In the child: no core file for a crash (the parent reports it).
fn no_core_dumps() {
    let limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `setrlimit` reads the struct it is given; lowering a limit is always allowed.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &limit);
    }
}

/// In the child: ends the process at once, without running exit handlers (a loaded library's
/// destructors): its work is done and answered.
fn exit_now() -> ! {
    let _ = std::io::stdout().lock().flush();
    // SAFETY: `_exit` ends the process; nothing of it is used after.
    unsafe { libc::_exit(0) }
}

/// The hidden subcommand: loads the libraries and answers on stdout.
pub fn child(args: &ChildArgs) -> ExitCode {
    no_core_dumps();
    match args.mode {
        Mode::Inspect => {
            for path in &args.libraries {
                answer(&crate::probe::inspect(path));
            }
        }
        Mode::Preload => {
            for (index, path) in args.libraries.iter().enumerate() {
                match crate::probe::open(path, true) {
                    Ok(()) => answer(&json!({ "loaded": index })),
                    Err(e) => {
                        answer(&json!({ "failed": index, "error": e }));
                        break;
                    }
                }
            }
        }
    }
    exit_now()
}

/// The message of a child that did not finish, for a library.
pub fn not_finished(outcome: &Outcome, library: &Path) -> Option<Failure> {
    let lib = library.display();
    let failure = match outcome {
        Outcome::Answered(_) => return None,
        Outcome::Crashed { signal, stderr, .. } => Failure::failed(format!(
            "loading {lib} crashed ({signal}): the library is damaged or not a TVM-FFI library"
        ))
        .detail(stderr.trim()),
        Outcome::TimedOut { limit, .. } => Failure::failed(format!(
            "loading {lib} did not finish within {} s and was stopped: the library hangs in \
             its initializers or its getters",
            limit.as_secs_f64()
        )),
        Outcome::Exited { code, stderr, .. } if *code == 101 && stderr.contains("internal") => {
            // Its first line says "internal error" already.
            Failure::internal(stderr.lines().skip(1).collect::<Vec<_>>().join("\n"))
        }
        Outcome::Exited { code, stderr, .. } => Failure::failed(format!(
            "loading {lib} failed (exit code {code}): the library is damaged or not a TVM-FFI \
             library"
        ))
        .detail(stderr.trim()),
    };
    Some(failure)
}

/// A short note on how a child ended, for the output of `inspect`.
pub fn note(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::Answered(_) => None,
        Outcome::Crashed { signal, .. } => Some(format!("loading crashed ({signal})")),
        Outcome::TimedOut { limit, .. } => Some(format!(
            "loading did not finish within {} s",
            limit.as_secs_f64()
        )),
        Outcome::Exited { code, .. } => Some(format!("loading failed (exit code {code})")),
    }
}

/// The failure for a file that fails the static checks.
pub fn damaged(library: &Path, damage: &str) -> Failure {
    Failure::failed(format!("{} is damaged: {damage}", library.display()))
        .detail("it was not loaded: none of its code ran")
}

/// `run --preload`: checks each library from its file, then loads them all in a child first
/// (in order, symbols global, as the process will), so that a library that crashes or hangs
/// when loaded is reported instead of ending `safecall`. A library that simply fails to load
/// is left to the process's own load, which reports why.
pub fn check_preloads(libraries: &[PathBuf]) -> Result<(), Failure> {
    for path in libraries {
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        match elf_check::check_bytes(&bytes) {
            Err(damage) => return Err(damaged(path, &damage)),
            Ok(Verdict::NotLoadable(_) | Verdict::Loadable) => {}
        }
    }
    let paths: Vec<&Path> = libraries.iter().map(PathBuf::as_path).collect();
    let outcome = run_child(Mode::Preload, &paths, DEFAULT_TIMEOUT)?;
    let answered = match &outcome {
        Outcome::Answered(a) => a,
        Outcome::Crashed { answered, .. }
        | Outcome::TimedOut { answered, .. }
        | Outcome::Exited { answered, .. } => answered,
    };
    let loaded = answered.iter().filter(|a| a["loaded"].is_u64()).count();
    match libraries.get(loaded) {
        Some(culprit) => not_finished(&outcome, culprit).map_or(Ok(()), Err),
        None => Ok(()),
    }
}
