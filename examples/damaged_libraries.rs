//! `safecall inspect` on many damaged copies of libraries that `safecall build` made: bytes
//! flipped, words replaced, ranges cut or inserted, the file truncated. Every run must end
//! with exit code 0 or 4 and a message; a signal, a panic (exit 101) or a hang of `safecall`
//! itself is a failure, and the file is kept for a look.
//!
//! ```text
//! cargo build --features llvm --bin safecall --example damaged_libraries
//! target/debug/examples/damaged_libraries [--count N] [--seed S] [--jobs J] [--dir DIR]
//!     [--safecall PATH] [--keep TEXT]
//! ```
//!
//! `--keep TEXT` also keeps the copies whose outcome contains TEXT (e.g. `crashed`) in
//! `DIR/kept`.
//!
//! It prints the counts of each outcome, and exits with 1 when any run failed. The damage is
//! drawn from a seeded generator (SplitMix64, written out below rather than a dependency for
//! one function), so a run is reproducible with its seed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one `safecall inspect` may take before it counts as a hang.
const WATCHDOG: Duration = Duration::from_secs(60);
/// The time limit `inspect` gives its child that loads the library.
const LOAD_TIMEOUT: &str = "5";

/// SplitMix64: a small, well-known generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A position to damage: most often in the first pages (ELF and program headers, symbol,
/// string, hash and version tables, relocations), where the loader reads, else anywhere.
fn position(rng: &mut Rng, len: usize) -> usize {
    match rng.below(4) {
        0 | 1 => rng.below(len.min(0x800)),
        _ => rng.below(len),
    }
}

/// One damaged copy of `original`, and a word for the kind of damage.
fn damage(rng: &mut Rng, original: &[u8]) -> (Vec<u8>, &'static str) {
    let mut bytes = original.to_vec();
    let len = bytes.len();
    match rng.below(5) {
        0 => {
            for _ in 0..=rng.below(8) {
                let at = position(rng, len);
                bytes[at] ^= 1 << rng.below(8);
            }
            (bytes, "flip")
        }
        1 => {
            let width = if rng.below(2) == 0 { 4 } else { 8 };
            let at = position(rng, len) / width * width;
            let value: u64 = match rng.below(6) {
                0 => 0,
                1 => u64::MAX,
                2 => rng.below(64) as u64,
                3 => 1 << rng.below(64),
                4 => {
                    let old = bytes[at..(at + width).min(len)]
                        .iter()
                        .rev()
                        .fold(0u64, |v, &b| v << 8 | u64::from(b));
                    old.wrapping_add(rng.below(0x2000) as u64)
                        .wrapping_sub(0x1000)
                }
                _ => rng.next(),
            };
            for (k, b) in value.to_le_bytes()[..width].iter().enumerate() {
                if let Some(slot) = bytes.get_mut(at + k) {
                    *slot = *b;
                }
            }
            (bytes, "word")
        }
        2 => {
            let at = position(rng, len);
            let cut = 1 + rng.below(4096).min(len - at - 1);
            bytes.drain(at..at + cut);
            (bytes, "cut")
        }
        3 => {
            let at = position(rng, len);
            let extra: Vec<u8> = (0..1 + rng.below(64)).map(|_| rng.next() as u8).collect();
            bytes.splice(at..at, extra);
            (bytes, "insert")
        }
        _ => {
            bytes.truncate(rng.below(len));
            (bytes, "truncate")
        }
    }
}

/// How one run of `inspect` ended.
fn classify(code: Option<i32>, stderr: &str) -> String {
    match code {
        None => "FAILURE: safecall killed by a signal".to_owned(),
        Some(101) => "FAILURE: safecall panicked".to_owned(),
        Some(_) if stderr.contains("panicked") || stderr.contains("internal error") => {
            "FAILURE: safecall panicked".to_owned()
        }
        Some(0) => "ok: inspected".to_owned(),
        Some(4) if stderr.contains(" is damaged: ") => "exit 4: damaged (not loaded)".to_owned(),
        Some(4) if stderr.contains(" crashed (") => {
            let signal = stderr
                .split(" crashed (")
                .nth(1)
                .and_then(|s| s.split(')').next())
                .unwrap_or("?");
            format!("exit 4: loading crashed in the child ({signal})")
        }
        Some(4) if stderr.contains("did not finish within") => {
            "exit 4: loading hung in the child (stopped)".to_owned()
        }
        Some(4) if stderr.contains("is not a library") => "exit 4: not an object file".to_owned(),
        Some(4) if stderr.contains("failed (exit code") => {
            "exit 4: the loader in the child gave up (its fatal error)".to_owned()
        }
        Some(4) => format!(
            "exit 4: other ({})",
            stderr.lines().next().unwrap_or_default()
        ),
        Some(other) => format!("FAILURE: exit code {other}"),
    }
}

/// Runs `safecall inspect FILE` with a watchdog: the exit code (`None`: a signal) and
/// stderr, or `Err` on a hang.
fn inspect(safecall: &Path, file: &Path, json: bool) -> Result<(Option<i32>, String), ()> {
    let mut cmd = Command::new(safecall);
    cmd.arg("inspect").args(["--load-timeout", LOAD_TIMEOUT]);
    if json {
        cmd.arg("--json");
    }
    let mut child = cmd
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start safecall");
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let deadline = Instant::now() + WATCHDOG;
    loop {
        if let Some(status) = child.try_wait().expect("wait for safecall") {
            return Ok((status.code(), reader.join().unwrap_or_default()));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Builds the libraries the copies are made of.
fn originals(safecall: &Path, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let builds: [(&str, &[&str]); 3] = [
        (
            "imports.so",
            &["examples/ir/imports.scir", "--main", "forward"],
        ),
        ("add_one.so", &["examples/ir/add_one.scir"]),
        (
            "syslib.so",
            &["tests/modules/syslib.scir", "--system-lib", "dmg."],
        ),
    ];
    builds
        .iter()
        .map(|(name, args)| {
            let out = dir.join(name);
            let status = Command::new(safecall)
                .arg("build")
                .arg(root.join(args[0]))
                .arg("-o")
                .arg(&out)
                .args(&args[1..])
                .stdout(Stdio::null())
                .status()
                .expect("run safecall build");
            assert!(status.success(), "safecall build {name} failed");
            (
                name.to_string(),
                std::fs::read(&out).expect("read a built library"),
            )
        })
        .collect()
}

fn main() {
    let mut count = 10_000u64;
    let mut seed = 21u64;
    let mut jobs = 2usize;
    let exe = std::env::current_exe().expect("this executable");
    let mut safecall = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("safecall"))
        .expect("target/<profile>/examples");
    let mut dir = std::env::temp_dir().join(format!("safecall-damaged-{}", std::process::id()));
    let mut keep: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--count" => count = value.parse().expect("--count N"),
            "--seed" => seed = value.parse().expect("--seed S"),
            "--jobs" => jobs = value.parse().expect("--jobs J"),
            "--dir" => dir = PathBuf::from(value),
            "--safecall" => safecall = PathBuf::from(value),
            "--keep" => keep = Some(value),
            other => panic!("unknown option {other}"),
        }
    }
    std::fs::create_dir_all(dir.join("kept")).expect("create the work directory");
    let originals = Arc::new(originals(&safecall, &dir));
    let next = Arc::new(AtomicU64::new(0));
    let counts: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
    let started = Instant::now();
    let workers: Vec<_> = (0..jobs)
        .map(|worker| {
            let (originals, next, counts) = (originals.clone(), next.clone(), counts.clone());
            let (safecall, dir, keep) = (safecall.clone(), dir.clone(), keep.clone());
            std::thread::spawn(move || {
                loop {
                    let case = next.fetch_add(1, Ordering::Relaxed);
                    if case >= count {
                        break;
                    }
                    // Each case has its own generator: the same seed gives the same files.
                    let mut rng = Rng(seed ^ case.wrapping_mul(0xa076_1d64_78bd_642f));
                    let (name, original) = &originals[rng.below(originals.len())];
                    let (bytes, kind) = damage(&mut rng, original);
                    let file = dir.join(format!("case{worker}.so"));
                    std::fs::write(&file, &bytes).expect("write a damaged copy");
                    let outcome = match inspect(&safecall, &file, case % 4 == 3) {
                        Ok((code, stderr)) => classify(code, &stderr),
                        Err(()) => "FAILURE: safecall hung".to_owned(),
                    };
                    if outcome.starts_with("FAILURE")
                        || keep.as_deref().is_some_and(|k| outcome.contains(k))
                    {
                        let kept = dir.join("kept").join(format!("{case}-{kind}-{name}"));
                        let _ = std::fs::copy(&file, &kept);
                        eprintln!(
                            "case {case} ({kind} of {name}): {outcome}: {}",
                            kept.display()
                        );
                    }
                    let mut counts = counts.lock().expect("counts");
                    *counts.entry(outcome).or_default() += 1;
                    let done: u64 = counts.values().sum();
                    if done.is_multiple_of(1000) {
                        eprintln!(
                            "{done} of {count} in {:.0} s: {counts:?}",
                            started.elapsed().as_secs_f64()
                        );
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let counts = counts.lock().expect("counts");
    println!(
        "{count} damaged copies (seed {seed}) through `safecall inspect` in {:.0} s:",
        started.elapsed().as_secs_f64()
    );
    for (outcome, n) in counts.iter() {
        println!("  {n:>6}  {outcome}");
    }
    let failures = |what: &str| {
        counts
            .get(&format!("FAILURE: safecall {what}"))
            .copied()
            .unwrap_or(0)
    };
    let other: u64 = counts
        .iter()
        .filter(|(k, _)| k.starts_with("FAILURE: exit code"))
        .map(|(_, n)| n)
        .sum();
    println!(
        "signals {}, panics {}, hangs {}, other exit codes {other}",
        failures("killed by a signal"),
        failures("panicked"),
        failures("hung")
    );
    if counts.keys().any(|k| k.starts_with("FAILURE")) {
        std::process::exit(1);
    }
}
