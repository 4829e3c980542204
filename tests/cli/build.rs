//! `safecall build`: outputs by extension, backends and their options, intermediate forms,
//! linking, and every way it can fail.

use cranelift_object::object::{self, Object, ObjectKind, ObjectSymbol};
use safecall_runtime::{AnyView, Module, Tensor};

use super::support::{Dir, runtime_libdir};
use crate::snapshot;

/// Loads `lib` into this process and checks that `add_one` computes y = x + 1.
pub(crate) fn check_add_one(lib: &std::path::Path) {
    let module = Module::load(lib).expect("the library loads");
    let add_one = module.get_function("add_one").unwrap().expect("exported");
    let x = Tensor::cpu::<f32>(&[3]).unwrap();
    let y = Tensor::cpu::<f32>(&[3]).unwrap();
    // SAFETY: a fresh tensor only this test uses.
    unsafe { x.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(&[1.0, 2.0, 3.0]);
    add_one
        .call(&[AnyView::from(&x), AnyView::from(&y)])
        .expect("add_one succeeds");
    assert_eq!(y.as_slice::<f32>().unwrap(), &[2.0, 3.0, 4.0]);
}

#[test]
fn so_output_is_a_library_that_loads_and_runs() {
    let dir = Dir::new("build_so");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "add_one.so"])
        .expect(0);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "built add_one.so from add_one.scir (1 function: add_one)\n"
    );
    assert!(
        !dir.path("add_one.so.o").exists(),
        "the intermediate object is removed"
    );
    check_add_one(&dir.path("add_one.so"));
}

#[test]
fn so_output_links_without_a_c_compiler_on_path() {
    let dir = Dir::new("build_so_no_cc");
    let file = dir.copy("examples/ir/add_one.scir");
    let empty = dir.path("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let path = [("PATH", empty.as_path())];
    dir.safecall_with_env(&["build", &file, "-o", "add_one.so"], &path)
        .expect(0);
    check_add_one(&dir.path("add_one.so"));
    // The C compiler, asked for, is missing: the error names it.
    let out = dir
        .safecall_with_env(&["build", &file, "-o", "cc.so", "--linker", "cc"], &path)
        .expect(4);
    assert!(out.stderr.contains("cannot run `cc`"), "{}", out.stderr);
}

#[test]
fn an_in_process_link_failure_is_one_line_with_the_alternative() {
    let dir = Dir::new("build_in_process_fail");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "missing/x.so"])
        .expect(4);
    assert_eq!(
        out.stderr,
        "error: linking failed (the in-process linker): cannot write `missing/x.so`: No such \
         file or directory (os error 2)\nhelp: `--linker cc` links with the system C compiler \
         instead\n"
    );
}

#[test]
fn both_linkers_write_libraries_that_inspect_the_same() {
    let dir = Dir::new("build_linkers");
    let file = dir.copy("examples/ir/add_one.scir");
    let mut listings = Vec::new();
    for (output, linker) in [("ours.so", "in-process"), ("cc.so", "cc")] {
        dir.safecall(&["build", &file, "-o", output, "--linker", linker])
            .expect(0);
        check_add_one(&dir.path(output));
        let out = dir.safecall(&["inspect", output]).expect(0);
        listings.push(out.stdout.replacen(output, "LIB", 1));
    }
    assert_eq!(listings[0], listings[1]);
}

#[test]
fn linker_options_that_cannot_apply_are_usage_errors() {
    let dir = Dir::new("build_linker_usage");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--linker", "gold"])
        .expect(2);
    assert!(
        out.stderr
            .contains("unknown linker `gold`; expected one of: in-process, cc"),
        "{}",
        out.stderr
    );
    let out = dir
        .safecall(&[
            "build",
            &file,
            "-o",
            "x.so",
            "--linker",
            "in-process",
            "--link-arg=-lm",
        ])
        .expect(2);
    assert!(
        out.stderr
            .contains("`--linker in-process` links without one"),
        "{}",
        out.stderr
    );
    let out = dir
        .safecall(&["build", &file, "-o", "x.o", "--linker", "cc"])
        .expect(2);
    assert!(out.stderr.contains("--linker applies to shared libraries"));
}

/// Every example module, exported and as a system library, for this machine and for the other
/// target, linked in-process: `inspect` finds nothing wrong with any of them, and for this
/// machine it says the same of them as of the libraries `cc` links (loading them where their
/// imports resolve).
#[test]
fn every_example_links_in_process_into_a_library_inspect_accepts() {
    let dir = Dir::new("build_in_process_examples");
    let examples = super::support::repo().join("examples/ir");
    let mut files: Vec<_> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "scir"))
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let (other, _) = other_target();
    let mut built = 0;
    for path in &files {
        let file = path.to_str().unwrap();
        let name = path.file_stem().unwrap().to_str().unwrap();
        for (mode, extra) in [
            ("exports", &[][..]),
            ("syslib", &["--system-lib", "t_"][..]),
        ] {
            for target in ["host", other] {
                let output = format!("{name}-{mode}-{target}.so");
                let mut args = vec!["build", file, "-o", &output, "--target", target];
                args.extend(extra);
                dir.safecall(&args).expect(0);
                let ours = dir.safecall(&["inspect", &output]).expect(0);
                built += 1;
                if target != "host" {
                    continue;
                }
                let cc_output = format!("cc-{output}");
                args[3] = &cc_output;
                args.extend(["--linker", "cc"]);
                dir.safecall(&args).expect(0);
                let theirs = dir.safecall(&["inspect", &cc_output]).expect(0);
                assert_eq!(
                    without_unversioned_libc(&ours.stdout),
                    theirs.stdout.replacen(&cc_output, &output, 1),
                    "{output}"
                );
            }
        }
    }
    println!("{built} libraries linked in-process and inspected");
}

/// `inspect`'s listing without the libc functions among "other symbols": the in-process
/// linker records libc as needed but binds its functions (`dlopen`, ... of GPU launches)
/// without a symbol version, where `cc` binds them to the version of the libc it linked with.
fn without_unversioned_libc(listing: &str) -> String {
    let libc = ["dlerror", "dlopen", "dlsym", "getenv"];
    let mut out = String::new();
    for line in listing.lines() {
        if let Some(names) = line.strip_prefix("  other symbols: ") {
            let rest: Vec<&str> = names.split(", ").filter(|n| !libc.contains(n)).collect();
            if !rest.is_empty() {
                out.push_str(&format!("  other symbols: {}\n", rest.join(", ")));
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[test]
fn o_output_is_a_relocatable_object_exporting_the_function() {
    let dir = Dir::new("build_o");
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&["build", &file, "-o", "add_one.o"]).expect(0);
    let bytes = std::fs::read(dir.path("add_one.o")).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    assert_eq!(obj.kind(), ObjectKind::Relocatable);
    let exported: Vec<_> = obj
        .symbols()
        .filter(|s| s.is_global() && !s.is_undefined())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect();
    for name in [
        "__tvm_ffi_add_one",
        "__tvm_ffi__metadata_add_one",
        "__tvm_ffi__doc_add_one",
    ] {
        assert!(exported.iter().any(|e| e == name), "{name} in {exported:?}");
    }
}

#[test]
fn an_output_of_another_extension_is_a_usage_error() {
    let dir = Dir::new("build_ext");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "add_one.dylib"])
        .expect(2);
    snapshot!("build_unknown_extension", out.stderr);
    assert!(!dir.path("add_one.dylib").exists());
}

#[test]
fn nothing_to_do_is_a_usage_error() {
    let dir = Dir::new("build_nothing");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir.safecall(&["build", &file]).expect(2);
    assert_eq!(
        out.stderr,
        "error: nothing to do: give an output with `-o OUT.so` / `-o OUT.o`, or `--emit FORM`\n"
    );
}

#[test]
fn invalid_ir_is_reported_and_nothing_is_written() {
    let dir = Dir::new("build_invalid");
    dir.write("bad.scir", "module m;\nfn f() -> i64 {\n}\n");
    let out = dir
        .safecall(&["build", "bad.scir", "-o", "bad.so"])
        .expect(1);
    snapshot!("build_invalid_ir", out.stderr);
    assert!(!dir.path("bad.so").exists());
}

#[test]
fn an_unknown_backend_is_a_usage_error() {
    let dir = Dir::new("build_backend");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--backend", "gcc"])
        .expect(2);
    snapshot!("build_unknown_backend", out.stderr);
}

#[cfg(not(feature = "llvm"))]
#[test]
fn the_llvm_backend_without_the_feature_is_a_clear_usage_error() {
    let dir = Dir::new("build_no_llvm");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--backend", "llvm"])
        .expect(2);
    snapshot!("build_llvm_unavailable", out.stderr);
    assert!(!dir.path("x.so").exists());
    let out = dir
        .safecall(&["run", "--backend", "llvm", &file, "add_one"])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: this safecall was built without the LLVM backend\nhelp: build safecall with the \
         cargo feature `llvm` (LLVM 19): `cargo build --features llvm`\n",
        "run says the same"
    );
}

#[cfg(feature = "llvm")]
#[test]
fn the_llvm_backend_builds_a_working_library_with_its_options() {
    let dir = Dir::new("build_llvm");
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&[
        "build",
        &file,
        "-o",
        "add_one.so",
        "--backend",
        "llvm",
        "--opt",
        "3",
        "--cpu",
        "x86-64",
        "--target",
        "host",
    ])
    .expect(0);
    check_add_one(&dir.path("add_one.so"));
    let out = dir
        .safecall(&[
            "build",
            &file,
            "-o",
            "x.so",
            "--backend",
            "llvm",
            "--opt",
            "4",
        ])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: `--opt 4` is not an LLVM optimization level: use 0, 1, 2 or 3\n"
    );
}

#[test]
fn options_the_backend_does_not_have_are_usage_errors() {
    let dir = Dir::new("build_options");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--opt", "3"])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: `--opt 3` is not a Cranelift optimization level: use `none`, `speed` or \
         `speed_and_size`\n"
    );
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--cpu", "skylake"])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: --cpu applies to the LLVM backend; Cranelift compiles for the host CPU\n\
         help: add `--backend llvm`\n"
    );
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--omit-frame-pointer"])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: --omit-frame-pointer applies to the LLVM backend; Cranelift keeps a frame \
         pointer in every function\n\
         help: add `--backend llvm`\n"
    );
    dir.safecall(&["build", &file, "-o", "x.so", "--opt", "none"])
        .expect(0);
    check_add_one(&dir.path("x.so"));
}

#[test]
fn an_unsupported_target_is_a_usage_error_listing_the_supported_ones() {
    let dir = Dir::new("build_target");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&[
            "build",
            &file,
            "-o",
            "x.so",
            "--target",
            "riscv64gc-unknown-linux-gnu",
        ])
        .expect(2);
    let host = cranelift_native::builder().unwrap().triple().to_string();
    snapshot!(
        "build_foreign_target",
        out.stderr
            .replace(&format!("host ({host})"), "host (<host triple>)")
    );
    // The host's own triple, with another vendor, is accepted.
    let arch_os = host.split_once('-').map(|(a, rest)| {
        let rest = rest.split_once('-').map_or(rest, |(_, r)| r);
        format!("{a}-pc-{rest}")
    });
    dir.safecall(&["build", &file, "-o", "x.so", "--target", &arch_os.unwrap()])
        .expect(0);
}

/// The supported target that is not this machine.
fn other_target() -> (&'static str, object::Architecture) {
    if cfg!(target_arch = "aarch64") {
        ("x86_64-unknown-linux-gnu", object::Architecture::X86_64)
    } else {
        ("aarch64-unknown-linux-gnu", object::Architecture::Aarch64)
    }
}

#[test]
fn objects_for_another_target_have_its_architecture_with_both_backends() {
    let dir = Dir::new("build_cross_o");
    let file = dir.copy("examples/ir/add_one.scir");
    let (triple, arch) = other_target();
    let backends: &[&str] = if safecall::backend::llvm::AVAILABLE {
        &["cranelift", "llvm"]
    } else {
        &["cranelift"]
    };
    for backend in backends {
        let out = format!("x_{backend}.o");
        dir.safecall(&[
            "build",
            &file,
            "-o",
            &out,
            "--target",
            triple,
            "--backend",
            backend,
        ])
        .expect(0);
        let bytes = std::fs::read(dir.path(&out)).unwrap();
        let obj = object::File::parse(&*bytes).unwrap();
        assert_eq!(obj.architecture(), arch, "{backend}");
        assert_eq!(obj.kind(), ObjectKind::Relocatable, "{backend}");
        assert!(
            obj.symbols()
                .any(|s| s.name() == Ok("__tvm_ffi_add_one") && s.is_definition()),
            "{backend}: no __tvm_ffi_add_one"
        );
        assert!(obj.section_by_name(".eh_frame").is_some(), "{backend}");
    }
    // The JIT of `run` cannot take another target.
    let out = dir
        .safecall(&["run", &file, "add_one", "--target", triple])
        .expect(2);
    assert!(
        out.stderr
            .contains(&format!("for the host only, not for {triple}")),
        "{}",
        out.stderr
    );
}

#[test]
fn a_library_for_another_target_links_with_its_cross_compiler_and_inspects_from_the_file() {
    let (triple, arch) = other_target();
    let dir = Dir::new("build_cross_so");
    let file = dir.copy("examples/ir/add_one.scir");
    // The in-process linker needs no cross compiler.
    dir.safecall(&["build", &file, "-o", "ours.so", "--target", triple])
        .expect(0);
    let bytes = std::fs::read(dir.path("ours.so")).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    assert_eq!(obj.architecture(), arch);
    assert_eq!(obj.kind(), ObjectKind::Dynamic);
    let cc = format!("{}-linux-gnu-gcc", arch_name(arch));
    let has_cc = std::process::Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cc {
        super::support::skip(&format!(
            "{cc} is not installed (Debian: gcc-aarch64-linux-gnu)"
        ));
        return;
    }
    // No --cc: the target's cross compiler is the default of `--linker cc`.
    dir.safecall(&[
        "build", &file, "-o", "x.so", "--target", triple, "--linker", "cc",
    ])
    .expect(0);
    let bytes = std::fs::read(dir.path("x.so")).unwrap();
    let obj = object::File::parse(&*bytes).unwrap();
    assert_eq!(obj.architecture(), arch);
    assert_eq!(obj.kind(), ObjectKind::Dynamic);
    // inspect reads it from the file and says why it does not load it.
    let out = dir.safecall(&["inspect", "x.so"]).expect(0);
    let name = arch_name(arch);
    assert!(
        out.stdout.starts_with(&format!(
            "x.so: shared library, {name}\n  not loaded (built for {name}, not for this \
             machine): no signatures or docs\n\nfunctions (1):\n  add_one\n"
        )),
        "{}",
        out.stdout
    );
    // A compiler that does not exist is named in the error.
    let out = dir
        .safecall(&[
            "build",
            &file,
            "-o",
            "y.so",
            "--target",
            triple,
            "--linker",
            "cc",
            "--cc",
            "no-such-cross-gcc",
        ])
        .expect(4);
    assert!(
        out.stderr.contains("cannot run `no-such-cross-gcc`"),
        "{}",
        out.stderr
    );
}

fn arch_name(arch: object::Architecture) -> &'static str {
    match arch {
        object::Architecture::Aarch64 => "aarch64",
        _ => "x86_64",
    }
}

#[test]
fn a_link_failure_shows_the_command_and_the_linkers_output() {
    let dir = Dir::new("build_link_fail");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&[
            "build",
            &file,
            "-o",
            "x.so",
            "--link-arg=-lsafecall_no_such_library",
        ])
        .expect(4);
    let mut lines = out.stderr.lines();
    assert_eq!(lines.next(), Some("error: linking failed"));
    assert_eq!(
        lines.next(),
        Some(
            "  command: cc -shared -Wl,-z,now -Wl,-z,text -o x.so x.so.o \
             -lsafecall_no_such_library"
        )
    );
    assert_eq!(lines.next(), Some("  exit status: 1"));
    assert!(
        out.stderr.contains("safecall_no_such_library") && out.stderr.contains("cannot find"),
        "the linker's own message:\n{}",
        out.stderr
    );
    assert!(!dir.path("x.so").exists());
}

#[test]
fn a_linker_that_cannot_start_is_named() {
    let dir = Dir::new("build_no_cc");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--cc", "/nonexistent/cc"])
        .expect(4);
    snapshot!("build_linker_missing", out.stderr);
}

#[test]
fn link_options_with_an_object_output_are_usage_errors() {
    let dir = Dir::new("build_link_o");
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&["build", &file, "-o", "x.o", "--link-runtime"])
        .expect(2);
    assert_eq!(
        out.stderr,
        "error: --link-runtime applies to shared libraries, but the output is not a `.so`\n"
    );
}

#[test]
fn link_runtime_links_libsafecall_runtime_from_the_build_or_a_given_dir() {
    let dir = Dir::new("build_link_runtime");
    let file = dir.copy("examples/ir/add_one.scir");
    let libdir = runtime_libdir();
    for (output, flag) in [
        ("default.so", "--link-runtime".to_owned()),
        ("given.so", format!("--link-runtime={}", libdir.display())),
    ] {
        dir.safecall(&["build", &file, "-o", output, &flag])
            .expect(0);
        let inspected = dir.safecall(&["inspect", "--no-load", output]).expect(0);
        assert!(
            inspected
                .stdout
                .contains("  needs libraries: libsafecall_runtime.so\n"),
            "{}",
            inspected.stdout
        );
        assert!(
            inspected.stdout.contains("from the linked runtime"),
            "{}",
            inspected.stdout
        );
        check_add_one(&dir.path(output));
    }
    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--link-runtime=nowhere"])
        .expect(4);
    snapshot!("build_link_runtime_missing", out.stderr);
}

#[test]
fn system_lib_and_main_shape_the_exports() {
    let dir = Dir::new("build_exports");
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&["build", &file, "-o", "main.so", "--main", "add_one"])
        .expect(0);
    let out = dir.safecall(&["inspect", "main.so"]).expect(0);
    assert!(
        out.stdout.contains("  main: an alias of add_one\n"),
        "{}",
        out.stdout
    );

    let out = dir
        .safecall(&["build", &file, "-o", "x.so", "--main", "nope"])
        .expect(1);
    assert_eq!(
        out.stderr,
        "error: `add_one.scir` cannot be compiled\n  `nope` is not a function of this module and \
         cannot be exported as `__tvm_ffi_main`\n"
    );

    dir.safecall(&["build", &file, "-o", "sys.so", "--system-lib", "demo."])
        .expect(0);
    let out = dir.safecall(&["inspect", "sys.so"]).expect(0);
    assert!(
        out.stdout
            .contains("functions (1) (system library: registered at load time):\n  demo.add_one(x: Tensor, y: Tensor) -> None\n"),
        "{}",
        out.stdout
    );
}
