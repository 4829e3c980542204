//! Cross-compilation for aarch64, tested under emulation. The shared check suite
//! (`tests/checks/`) and the examples (`examples/ir/` and the IR of the example programs) are
//! built for `aarch64-unknown-linux-gnu` by each backend, linked in-process and again by
//! `aarch64-linux-gnu-gcc`, and called under `qemu-aarch64` by C drivers (`tests/aarch64/`) linked against the real
//! aarch64 `libtvm_ffi.so` of the `apache-tvm-ffi` manylinux wheel. The drivers build every
//! argument through the real C API (strings, shapes, arrays and lists, callbacks, Tensor
//! objects and `DLTensor*`s) and print one line per outcome.
//!
//! The same drivers also run natively on x86-64 (on an x86-64 host), against the x86-64
//! `libtvm_ffi.so` and x86-64 builds of the same modules: both runs must print what the cases
//! expect, and for the examples the aarch64 output must equal the x86-64 output line for line.
//!
//! Needs Debian's `qemu-user` and `gcc-aarch64-linux-gnu`, and pip (to fetch the wheels once
//! into the target directory); without them the test prints why it skips, unless `CI=true`.

mod examples;
mod suite;
mod toolchain;

use crate::common::cases;

use std::path::Path;

use crate::common::delivery::{row_name, shared_libraries};
use suite::differences;
use toolchain::{machines, work_dir};

#[test]
fn aarch64_libraries_pass_the_check_suite_under_qemu() {
    let Some(machines) = machines() else {
        return;
    };
    let suites = cases::load_all();
    let (source, expected, counts) = suite::driver(&suites);
    for machine in &machines {
        let arch = machine.arch;
        let work = work_dir(&format!("{}-check", arch.name));
        let driver_c = work.join("driver.c");
        std::fs::write(&driver_c, &source).unwrap();
        let driver = work.join("driver");
        machine.compile_driver(&driver_c, &driver);
        for (backend, linker) in shared_libraries() {
            let row = row_name(backend, linker);
            let dir = work.join(&row);
            std::fs::create_dir_all(&dir).unwrap();
            let options = arch.options(backend);
            let link = safecall::aot::LinkOptions {
                linker,
                ..Default::default()
            };
            for suite in &suites {
                safecall::build_shared_library(
                    &cases::parse_module(&suite.module),
                    &dir.join(format!("{}.so", suite.module)),
                    &options,
                    &link,
                )
                .unwrap_or_else(|e| {
                    panic!("{row}: building {} for {}: {e}", suite.module, arch.name)
                });
            }
            let out = machine.run_driver(&driver, &[&dir], &[]);
            let failures = differences(&out, &expected);
            assert!(
                failures.is_empty(),
                "{} [{row}]: {} of {} lines differ:\n{}",
                arch.name,
                failures.len(),
                expected.len(),
                failures.join("\n")
            );
            println!(
                "{} [{row}]: {} check-suite cases ({} calls, each through the symbol and \
                 through ffi.Function; {} tensor read-backs; metadata and doc of {} functions) \
                 as expected{} ({} modules)",
                arch.name,
                counts.cases,
                counts.calls,
                counts.read_backs,
                counts.metadata,
                arch.qemu.map_or(String::new(), |q| format!(" under {q}")),
                suites.len()
            );
        }
    }
}

#[test]
fn the_examples_run_under_qemu_as_on_x86_64() {
    let Some(machines) = machines() else {
        return;
    };
    let mut outputs = Vec::new();
    for machine in &machines {
        let arch = machine.arch;
        let work = work_dir(&format!("{}-examples", arch.name));
        let driver = work.join("examples");
        machine.compile_driver(&Path::new(toolchain::C_DIR).join("examples.c"), &driver);
        for (backend, linker) in shared_libraries() {
            let row = row_name(backend, linker);
            let dir = work.join(&row);
            std::fs::create_dir_all(&dir).unwrap();
            let link = safecall::aot::LinkOptions {
                linker,
                ..Default::default()
            };
            let built = examples::build_all(&dir, &arch.options(backend), &link, arch);
            // A CUDA driver that does not exist, so that the message of the CUDA example does
            // not depend on this machine.
            let out = machine.run_driver(
                &driver,
                &[&dir],
                &[(examples::LIBCUDA, "/nonexistent/libcuda.so.1")],
            );
            let failures = differences(&out, &examples::expected());
            assert!(
                failures.is_empty(),
                "{} [{row}] examples: {} lines differ:\n{}\n\nwhole output:\n{out}",
                arch.name,
                failures.len(),
                failures.join("\n")
            );
            println!(
                "{} [{row}]: {built} example modules built, {} lines of example output \
                 as expected{}",
                arch.name,
                out.lines().count(),
                arch.qemu.map_or(String::new(), |q| format!(" under {q}")),
            );
            outputs.push((arch.name, row, out));
        }
    }
    // Every machine and backend printed the same lines.
    for (name, row, out) in &outputs[1..] {
        assert_eq!(
            out, &outputs[0].2,
            "{name} [{row}] and {} [{}] print different example output",
            outputs[0].0, outputs[0].1
        );
    }
}
