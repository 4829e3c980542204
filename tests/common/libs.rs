//! The check suite's shared libraries, built once per test process for each shared-library
//! row of the delivery paths (`delivery.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use safecall::Backend;
use safecall::aot::{LinkOptions, Linker};

use super::cases::{Suite, parse_module};

/// The directory of this process's build outputs; stale directories of earlier test
/// processes are removed first.
pub fn run_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-libs");
        if let Ok(entries) = std::fs::read_dir(&root) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let alive = name
                    .strip_prefix("run-")
                    .is_some_and(|pid| Path::new("/proc").join(pid).exists());
                if !alive {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = root.join(format!("run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the library directory");
        dir
    })
}

/// Why a backend's libraries could not be built.
#[derive(Clone, Debug)]
pub enum BuildError {
    /// This build of safecall does not have the backend.
    Unavailable(String),
    /// Compiling or linking failed.
    Failed(String),
}

/// The directory of a backend's libraries, or why there is none.
pub type Built = Arc<Result<PathBuf, BuildError>>;

/// Builds every case module with `backend`, linked by `linker`, into
/// `<run_dir>/<name>/<module>.so`, once per process.
pub fn libraries(backend: Backend, linker: Linker, name: &str, suites: &[Suite]) -> Built {
    static BUILT: OnceLock<Mutex<HashMap<String, Built>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    built
        .entry(name.to_owned())
        .or_insert_with(|| Arc::new(build_all(backend, linker, name, suites)))
        .clone()
}

fn build_all(
    backend: Backend,
    linker: Linker,
    name: &str,
    suites: &[Suite],
) -> Result<PathBuf, BuildError> {
    let dir = run_dir().join(name);
    std::fs::create_dir_all(&dir).expect("create the backend directory");
    let options = safecall::Options {
        backend,
        ..Default::default()
    };
    let link = LinkOptions {
        linker,
        ..LinkOptions::default()
    };
    for suite in suites {
        let module = parse_module(&suite.module);
        let output = dir.join(format!("{}.so", suite.module));
        safecall::build_shared_library(&module, &output, &options, &link).map_err(|e| match e {
            e @ safecall::Error::Backend(safecall::backend::BackendError::Unavailable(_)) => {
                BuildError::Unavailable(e.to_string())
            }
            other => BuildError::Failed(format!("{}: {other}", suite.module)),
        })?;
    }
    Ok(dir)
}
