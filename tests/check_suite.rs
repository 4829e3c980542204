//! The shared check suite: the cases in `tests/checks/` (format in `tests/checks/README.md`)
//! run on every delivery path — AOT shared libraries of each backend, linked in-process and by
//! the C compiler, loaded into this process (safecall-runtime), the JIT, and the same
//! libraries loaded by Python's real `tvm_ffi` (`python/tests/checks`).

use std::process::Command;

use crate::common::aot::Library;
use crate::common::cases::{Suite, load_all, parse_module};
use crate::common::delivery::{backend_name, backends, jit_tiers, row_name, shared_libraries};
use crate::common::libs::{BuildError, libraries};
use crate::common::runner::{Callee, Tally, run_cases};
use crate::common::skip::skip;
use safecall::aot::Linker;

/// The AOT run of one backend and linker; false when the backend is not built in (skipped).
fn run_aot(backend: safecall::Backend, linker: Linker, name: &str, suites: &[Suite]) -> bool {
    let dir = match &*libraries(backend, linker, name, suites) {
        Ok(dir) => dir.clone(),
        Err(BuildError::Unavailable(why)) => {
            skip(&format!("AOT [{name}]: {why}"));
            return false;
        }
        Err(BuildError::Failed(why)) => panic!("AOT [{name}]: building the libraries: {why}"),
    };
    let libs: Vec<Library> = suites
        .iter()
        .map(|s| Library::open(&dir.join(format!("{}.so", s.module))))
        .collect();
    let lookup = |suite: &Suite, f: &str| {
        let i = suites
            .iter()
            .position(|s| s.module == suite.module)
            .expect("a suite of this run");
        libs[i].function(f)
    };
    let label = format!("aot {name}");
    let mut tally = Tally::default();
    run_cases(&label, suites, &lookup, &mut tally);
    for (suite, lib) in suites.iter().zip(&libs) {
        for m in &suite.metadata {
            tally.metadata += 1;
            if let Err(e) = crate::common::metadata::check(lib, m) {
                tally.failures.push(format!(
                    "[{label}] {}: metadata of {}: {e}",
                    suite.module, m.func
                ));
            }
        }
    }
    tally.finish(&label);
    true
}

#[test]
fn aot_libraries_pass_the_check_suite() {
    let suites = load_all();
    let mut ran = 0;
    for (backend, linker) in shared_libraries() {
        ran += usize::from(run_aot(
            backend,
            linker,
            &row_name(backend, linker),
            &suites,
        ));
    }
    assert!(ran > 0, "no backend ran");
}

#[test]
fn jit_passes_the_check_suite() {
    let suites = load_all();
    // The baseline tier (the default on x86-64), then each backend directly; Cranelift compiles
    // each module on the calling thread, then on two threads at once.
    use safecall::jit::FirstTier;
    let runs = jit_tiers().into_iter().flat_map(|(first_tier, backend)| {
        let (name, threads): (_, &[usize]) = match (first_tier, backend) {
            (FirstTier::Baseline, _) => ("baseline", &[1]),
            (_, safecall::Backend::Cranelift) => ("cranelift", &[1, 2]),
            (_, backend) => (backend_name(backend), &[1]),
        };
        threads.iter().map(move |&t| (backend, name, first_tier, t))
    });
    for (backend, name, first_tier, threads) in runs {
        let label = format!("{name}, {threads} compile thread(s)");
        let options = safecall::jit::JitOptions {
            backend,
            first_tier,
            compile_threads: threads,
            ..Default::default()
        };
        let modules: Vec<safecall::jit::JitModule> = suites
            .iter()
            .map(|s| {
                // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
                // and calls only symbols it declares with their real signatures.
                unsafe { safecall::jit::compile(&parse_module(&s.module), &options) }
                    .unwrap_or_else(|e| panic!("JIT-compiling {} with {label}: {e}", s.module))
            })
            .collect();
        let lookup = |suite: &Suite, f: &str| {
            let i = suites
                .iter()
                .position(|s| s.module == suite.module)
                .expect("a suite of this run");
            Some(Callee {
                function: modules[i].function(f)?.clone(),
                entry: modules[i].safe_call(f)?,
            })
        };
        let runner = format!("jit {label}");
        let mut tally = Tally::default();
        run_cases(&runner, &suites, &lookup, &mut tally);
        tally.finish(&runner);
    }
}

#[test]
fn python_tvm_ffi_passes_the_check_suite() {
    let Some(python) = std::env::var_os("SAFECALL_PYTHON") else {
        skip("SAFECALL_PYTHON is not set (run `cargo xtask test`, which creates .venv)");
        return;
    };
    let suites = load_all();
    let mut libs = Vec::new();
    for (backend, linker) in shared_libraries() {
        let name = row_name(backend, linker);
        let name = name.as_str();
        match &*libraries(backend, linker, name, &suites) {
            Ok(dir) => libs.push(format!("{name}={}", dir.display())),
            Err(BuildError::Unavailable(why)) => skip(&format!("python [{name}]: {why}")),
            Err(BuildError::Failed(why)) => panic!("python [{name}]: {why}"),
        }
    }
    assert!(!libs.is_empty(), "no backend built libraries");
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(&python)
        .current_dir(root)
        .args([
            "-m",
            "pytest",
            "python/tests/checks/test_libraries.py",
            "python/tests/checks/test_metadata.py",
            "-q",
            "-rs",
        ])
        .env("SAFECALL_CHECK_LIBS", libs.join(";"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.to_string_lossy()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    assert!(
        out.status.success(),
        "pytest failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

/// The dynamic symbols of a library: (defined globals, strong undefined). The C compiler's
/// start files add weak undefined references of their own (`__cxa_finalize`,
/// `__gmon_start__`, ...), which are not the module's.
fn dynamic_symbols(path: &std::path::Path) -> (Vec<String>, Vec<String>) {
    use cranelift_object::object::{self, Object, ObjectSymbol};
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = object::File::parse(&*bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut defined, mut undefined) = (Vec::new(), Vec::new());
    for symbol in file.dynamic_symbols() {
        let name = symbol.name().expect("a symbol name").to_owned();
        if name.is_empty() {
            continue;
        }
        if !symbol.is_undefined() && symbol.is_global() {
            defined.push(name);
        } else if symbol.is_undefined() && !symbol.is_weak() {
            undefined.push(name);
        }
    }
    defined.sort();
    undefined.sort();
    (defined, undefined)
}

#[test]
fn both_linkers_export_and_import_the_same_symbols() {
    let suites = load_all();
    let mut compared = 0;
    for backend in backends() {
        let rows: Vec<_> = shared_libraries()
            .into_iter()
            .filter(|(b, _)| *b == backend)
            .collect();
        let dirs: Vec<_> = rows
            .iter()
            .map(|&(b, linker)| {
                let name = row_name(b, linker);
                match &*libraries(b, linker, &name, &suites) {
                    Ok(dir) => dir.clone(),
                    Err(e) => panic!("{name}: {e:?}"),
                }
            })
            .collect();
        let [in_process, cc] = [Linker::InProcess, Linker::Cc].map(|l| {
            let i = rows
                .iter()
                .position(|r| r.1 == l)
                .expect("a row per linker");
            &dirs[i]
        });
        for suite in &suites {
            let file = format!("{}.so", suite.module);
            let ours = dynamic_symbols(&in_process.join(&file));
            let theirs = dynamic_symbols(&cc.join(&file));
            assert!(
                ours.0.iter().any(|s| s.starts_with("__tvm_ffi_")),
                "{file}: no __tvm_ffi_ export in {:?}",
                ours.0
            );
            assert_eq!(ours.0, theirs.0, "{file} ({backend:?}): exported symbols");
            assert_eq!(ours.1, theirs.1, "{file} ({backend:?}): imported symbols");
            compared += 1;
        }
    }
    assert!(compared > 0, "no library compared");
}

std::thread_local! {
    /// The backtrace [`safecall_unwind_probe`] took last, as text.
    static BACKTRACE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Called by generated code (the library resolves it from this `-rdynamic` test binary):
/// records a backtrace, which the unwinder can only take past the generated function's frame
/// through the library's `.eh_frame`, found through `PT_GNU_EH_FRAME`.
#[unsafe(no_mangle)]
pub extern "C" fn safecall_unwind_probe(x: i64) -> i64 {
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    BACKTRACE.with(|b| *b.borrow_mut() = trace);
    x + 1
}

/// The frame below the generated code: the unwinder must reach it.
#[inline(never)]
fn call_through_library(f: &safecall_runtime::Function) -> i64 {
    let out = f
        .call(&[safecall_runtime::AnyView::from(41i64)])
        .expect("the call succeeds");
    std::hint::black_box(out.cast::<i64>().expect("an int"))
}

#[test]
fn unwinders_walk_through_the_generated_code_of_every_delivery() {
    let module = parse_module_text(
        "module unwind;\nextern fn safecall_unwind_probe(i64) -> i64;\n\
         fn f(x: i64) -> i64 { let r = call safecall_unwind_probe(x); return r; }\n",
    );
    let dir = crate::common::libs::run_dir().join("unwind");
    std::fs::create_dir_all(&dir).unwrap();
    for (backend, linker) in shared_libraries() {
        let name = row_name(backend, linker);
        let path = dir.join(format!("{name}.so"));
        let options = safecall::Options {
            backend,
            ..Default::default()
        };
        let link = safecall::aot::LinkOptions {
            linker,
            ..Default::default()
        };
        safecall::build_shared_library(&module, &path, &options, &link)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let library =
            safecall_runtime::Module::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let f = library.get_function("f").unwrap().expect("f is exported");
        assert_eq!(call_through_library(&f), 42, "{name}");
        let trace = BACKTRACE.with(|b| b.borrow().clone());
        assert!(
            trace.contains("call_through_library"),
            "{name}: the backtrace stops in the generated code:\n{trace}"
        );
    }
}

fn parse_module_text(text: &str) -> safecall::ir::Module {
    safecall::ir::parse(text).unwrap_or_else(|e| panic!("{e:?}"))
}
