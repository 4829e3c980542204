//! `safecall build --emit`: the intermediate forms on stdout or beside the output, per
//! backend, and the usage errors of asking one backend for the other's.

use super::build::check_add_one;
use super::support::Dir;
use crate::snapshot;

#[test]
fn emit_prints_each_form_on_stdout() {
    let dir = Dir::new("build_emit");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir.safecall(&["build", &file, "--emit", "ir"]).expect(0);
    let text = std::fs::read_to_string(dir.path(&file)).unwrap();
    assert_eq!(
        out.stdout,
        safecall::ir::print::print(&safecall::ir::parse::parse(&text).unwrap())
    );
    let out = dir
        .safecall(&[
            "build", &file, "--emit", "lowered", "--emit", "clif", "--emit", "asm",
        ])
        .expect(0);
    let lowered = out
        .stdout
        .find("// ---- lowered ----")
        .expect("lowered header");
    let clif = out.stdout.find("// ---- clif ----").expect("clif header");
    let asm = out.stdout.find("// ---- asm ----").expect("asm header");
    assert!(lowered < clif && clif < asm, "{}", out.stdout);
    assert!(out.stdout[clif..asm].contains("function u0:"), "CLIF text");
    assert!(
        out.stdout[asm..].contains("; __tvm_ffi_add_one (") && out.stdout[asm..].contains("ret"),
        "assembly"
    );
}

#[cfg(feature = "llvm")]
#[test]
fn emit_of_llvm_forms() {
    let dir = Dir::new("build_emit_llvm");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&[
            "build",
            &file,
            "--backend",
            "llvm",
            "--emit",
            "llvm-ir",
            "--emit",
            "asm",
        ])
        .expect(0);
    assert!(
        out.stdout.contains("define i32 @__tvm_ffi_add_one("),
        "LLVM IR"
    );
    assert!(
        out.stdout.contains("__tvm_ffi_add_one:\n"),
        "assembly label"
    );
}

#[test]
fn emit_of_the_other_backends_ir_is_a_usage_error() {
    let dir = Dir::new("build_emit_mismatch");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "--emit", "llvm-ir"])
        .expect(2);
    snapshot!("build_emit_llvm_ir_with_cranelift", out.stderr);
}

#[test]
fn emit_dir_writes_one_file_per_form_next_to_the_output() {
    let dir = Dir::new("build_emit_dir");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&[
            "build",
            &file,
            "-o",
            "add_one.so",
            "--emit",
            "lowered",
            "--emit",
            "asm",
            "--emit-dir",
            "dump",
        ])
        .expect(0);
    assert_eq!(out.stdout, "", "nothing on stdout with --emit-dir");
    for f in ["dump/add_one.lowered", "dump/add_one.s"] {
        let text = std::fs::read_to_string(dir.path(f)).unwrap();
        assert!(text.contains("__tvm_ffi_add_one"), "{f}");
    }
    check_add_one(&dir.path("add_one.so"));
}
