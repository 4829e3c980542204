//! `safecall inspect`: libraries from safecall (exported and system-library mode), from C
//! against the real headers (with and without metadata, with an import tree whose loader is
//! not registered), and from C++ with `TVM_FFI_DLL_EXPORT_TYPED_FUNC`.

use std::process::Command;

use safecall_runtime::library_bin::{self, BinModule, LibraryBin};

use super::support::{Dir, cc_shared, repo, run, tvm_ffi_include};
use crate::snapshot;

/// `imports.scir` (two imported modules, kinds `cuda` and `test_helpers`, whose loaders this
/// process does not have) built with `--main forward`.
fn imports_library(dir: &Dir) -> &'static str {
    let file = dir.copy("examples/ir/imports.scir");
    dir.safecall(&["build", &file, "-o", "imports.so", "--main", "forward"])
        .expect(0);
    "imports.so"
}

#[test]
fn a_safecall_library_shows_signatures_docs_and_its_import_tree() {
    let dir = Dir::new("inspect_imports");
    let lib = imports_library(&dir);
    let out = dir.safecall(&["inspect", lib]).expect(0);
    assert_eq!(out.stderr, "");
    snapshot!("inspect_imports", out.stdout);
}

#[test]
fn add_one() {
    let dir = Dir::new("inspect_add_one");
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&["build", &file, "-o", "add_one.so"])
        .expect(0);
    let out = dir.safecall(&["inspect", "add_one.so"]).expect(0);
    snapshot!("inspect_add_one", out.stdout);
}

#[test]
fn no_load_reads_only_the_file() {
    let dir = Dir::new("inspect_no_load");
    let lib = imports_library(&dir);
    let out = dir.safecall(&["inspect", "--no-load", lib]).expect(0);
    assert!(
        out.stdout
            .contains("  not loaded (--no-load): no signatures or docs\n\nfunctions (2):\n  forward\n  main: an alias of forward\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("  └─ [2] cuda: 14 bytes"),
        "{}",
        out.stdout
    );
}

#[test]
fn json_output_has_the_parsed_metadata_and_the_tree() {
    let dir = Dir::new("inspect_json");
    let lib = imports_library(&dir);
    let out = dir.safecall(&["inspect", "--json", lib]).expect(0);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let forward = &v["functions"][0];
    assert_eq!(forward["name"], "forward");
    assert_eq!(
        forward["signature"],
        "forward(x: Tensor, bias: float) -> Any"
    );
    assert_eq!(
        forward["metadata"]["arg_names"],
        serde_json::json!(["x", "bias"])
    );
    assert_eq!(
        forward["metadata"]["type_schema"]["named_args"]["params"][0]["type"],
        "ffi.Tensor"
    );
    assert_eq!(v["functions"][1]["alias_of"], "forward");
    let kinds: Vec<&str> = v["imports"]["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["_lib", "test_helpers", "cuda"]);
    assert_eq!(
        v["imports"]["modules"][0]["imports"],
        serde_json::json!([2])
    );
    assert_eq!(v["library_ctx"], true);
}

#[test]
fn a_system_library_shows_the_functions_it_registers() {
    let dir = Dir::new("inspect_system_lib");
    let file = dir.copy("tests/modules/syslib.scir");
    dir.safecall(&["build", &file, "-o", "sys.so", "--system-lib", "sc_cli."])
        .expect(0);
    let out = dir.safecall(&["inspect", "sys.so"]).expect(0);
    snapshot!("inspect_system_lib", out.stdout);
    let out = dir.safecall(&["inspect", "--no-load", "sys.so"]).expect(0);
    assert!(
        out.stdout
            .contains("  sc_cli.sys_add\n  sc_cli.sys_import\n"),
        "names from the file alone:\n{}",
        out.stdout
    );
}

#[test]
fn an_object_file_is_read_without_loading() {
    let dir = Dir::new("inspect_object");
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&["build", &file, "-o", "add_one.o"]).expect(0);
    let out = dir.safecall(&["inspect", "add_one.o"]).expect(0);
    assert!(
        out.stdout.starts_with(
            "add_one.o: object file, x86_64\n  an object file: no signatures or docs\n\nfunctions (1):\n  add_one\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn a_file_that_is_not_a_library_is_a_clear_failure() {
    let dir = Dir::new("inspect_not_lib");
    dir.write("notes.txt", "hello");
    let out = dir.safecall(&["inspect", "notes.txt"]).expect(4);
    snapshot!("inspect_not_a_library", out.stderr);
    let out = dir.safecall(&["inspect", "missing.so"]).expect(4);
    assert_eq!(
        out.stderr,
        "error: cannot read `missing.so`: No such file or directory\n"
    );
}

#[test]
fn a_library_that_cannot_be_loaded_is_still_inspected_from_the_file() {
    let dir = Dir::new("inspect_unloadable");
    let file = dir.copy("examples/ir/launcher.scir");
    // The launcher calls `matmul_kernel_launch`, which nothing defines: dlopen fails.
    dir.safecall(&["build", &file, "-o", "launcher.so"])
        .expect(0);
    let out = dir.safecall(&["inspect", "launcher.so"]).expect(0);
    assert!(
        out.stdout.contains("  not loaded (") && out.stdout.contains("matmul_kernel_launch"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\nfunctions (1):\n  matmul\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("  other symbols: matmul_kernel_launch\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_c_library_without_metadata() {
    let Some(include) = tvm_ffi_include("a_c_library_without_metadata") else {
        return;
    };
    let dir = Dir::new("inspect_plain_c");
    cc_shared(
        &dir,
        "libplain.so",
        &[repo().join("tests/cli/plain.c")],
        &["-I", include.to_str().unwrap()],
    );
    let out = dir.safecall(&["inspect", "libplain.so"]).expect(0);
    snapshot!("inspect_plain_c", out.stdout);
}

#[test]
fn a_c_library_with_metadata_and_an_import_tree_whose_loader_is_not_registered() {
    let Some(include) = tvm_ffi_include("a_c_library_with_metadata") else {
        return;
    };
    let dir = Dir::new("inspect_c_blob");
    let blob = library_bin::encode(&LibraryBin {
        modules: vec![
            BinModule::Lib,
            BinModule::Serialized {
                kind: "sc_cross_helpers".into(),
                payload: b"cross".to_vec(),
            },
        ],
        imports: vec![vec![1], vec![]],
    });
    let bytes: Vec<String> = blob.iter().map(u8::to_string).collect();
    dir.write(
        "c_blob.inc",
        &format!(
            "TVM_FFI_DLL_EXPORT const unsigned char __tvm_ffi__library_bin[{}] \
             __attribute__((aligned(8))) = {{{}}};\n",
            blob.len(),
            bytes.join(",")
        ),
    );
    cc_shared(
        &dir,
        "libcross.so",
        &[repo().join("tests/modules/c_safe_call.c")],
        &[
            "-std=gnu11",
            "-I",
            include.to_str().unwrap(),
            "-I",
            dir.0.to_str().unwrap(),
        ],
    );
    let out = dir.safecall(&["inspect", "libcross.so"]).expect(0);
    snapshot!("inspect_c_with_metadata", out.stdout);
}

#[test]
fn a_cxx_library_using_the_header_macros() {
    let Some(include) = tvm_ffi_include("a_cxx_library_using_the_header_macros") else {
        return;
    };
    let dir = Dir::new("inspect_cxx");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    run(Command::new(cxx)
        .args(["-std=c++17", "-O1", "-fPIC", "-shared"])
        .arg("-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1")
        .arg("-I")
        .arg(&include)
        .arg(repo().join("tests/modules/cxx_typed.cc"))
        .arg("-o")
        .arg(dir.path("libcxx.so")));
    let out = dir.safecall(&["inspect", "libcxx.so"]).expect(0);
    let functions = out
        .stdout
        .split("\nimports")
        .next()
        .expect("a functions section");
    snapshot!("inspect_cxx", functions);
    assert!(
        out.stdout.contains("needs libraries: libstdc++.so.6"),
        "{}",
        out.stdout
    );
}
