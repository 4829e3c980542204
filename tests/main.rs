//! The integration tests that share one process: one module per former test binary, named
//! after its file (`cargo test --test integration check_suite::` runs one of them). Each test
//! binary links the whole library, so a test gets a binary of its own only when it needs a
//! process of its own: `Cargo.toml` lists the others and why.

mod aarch64;
mod big_int_floats;
mod big_ints;
mod check_suite;
#[cfg(feature = "cli")]
mod cli;
mod common;
#[cfg(feature = "cli")]
mod docs;
mod dumps;
#[cfg(feature = "cli")]
mod examples;
mod fuzz_regressions;
mod hostile;
mod hostile_calls;
mod ir_alloc;
mod ir_build;
mod ir_errors;
mod ir_examples;
mod ir_gpu;
mod ir_parse;
mod ir_roundtrip;
mod ir_typing;
mod jit;
mod jit_tiers;
mod llvm_backends;
mod llvm_differential;
mod llvm_python;
mod llvm_snapshots;
mod llvm_support;
mod loop_bounds;
mod modules;
mod modules_calls;
mod modules_cross;
mod modules_loading;
mod modules_python;
mod modules_system_lib;
mod raise_templates;

/// A test file that no binary declares is never compiled, so its tests would silently not run:
/// every `tests/*.rs` and every `tests/*/mod.rs` is a module above or the root of a binary in
/// `Cargo.toml`.
#[test]
fn every_test_file_belongs_to_a_binary() {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = std::fs::read_to_string(tests.join("main.rs")).unwrap();
    let manifest = std::fs::read_to_string(tests.parent().unwrap().join("Cargo.toml")).unwrap();
    let mut orphans = Vec::new();
    for entry in std::fs::read_dir(&tests).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = if path.is_dir() && path.join("mod.rs").exists() {
            name.clone()
        } else if let Some(stem) = name.strip_suffix(".rs") {
            stem.to_owned()
        } else {
            continue;
        };
        let declared = this.lines().any(|l| l == format!("mod {module};"));
        let root = manifest.contains(&format!("path = \"tests/{name}\""))
            || manifest.contains(&format!("path = \"tests/{name}/main.rs\""));
        if !declared && !root && name != "main.rs" {
            orphans.push(name);
        }
    }
    assert!(
        orphans.is_empty(),
        "not part of any test binary: {orphans:?} (add `mod NAME;` to tests/main.rs)"
    );
}
