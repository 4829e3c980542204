//! `examples/ir/launcher.scir` (or the example named by the second argument; Cranelift settings
//! may follow, see `main`) from IR text to a
//! shared library on disk with the default settings and the in-process linker, N times (the
//! first argument; 0 builds it once outside the count). `benches/compile_instruction_count.sh
//! aot` runs it under callgrind. Run by `cargo bench --bench aot_build_loop`, it builds 200
//! times and prints the mean time of each stage: parse, verify, lower, code generation (the
//! object's bytes), link (the library on disk).

mod support;

use std::time::{Duration, Instant};

fn main() {
    let name = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "launcher".to_owned());
    let path = support::root()
        .join("examples/ir")
        .join(format!("{name}.scir"));
    let text = std::fs::read_to_string(&path).expect("read the example");
    let dir = support::scratch_dir("aot_build_loop");
    let output = dir.join(format!("{name}.so"));
    // Optional Cranelift settings: the third argument an optimization level (`none`, `speed`),
    // the fourth a register allocator (`backtracking`, `single_pass`), the fifth the compiler
    // of the error paths (`baseline`, `cranelift`).
    let mut options = safecall::Options::default();
    let setting = |i: usize| std::env::args().nth(i).filter(|a| a != "default");
    if let Some(level) = setting(3) {
        options.cranelift.opt_level = level.parse().expect("a Cranelift optimization level");
    }
    if let Some(regalloc) = setting(4) {
        options.cranelift.regalloc = regalloc.parse().expect("a Cranelift register allocator");
    }
    if let Some(cold) = setting(5) {
        options.cranelift.cold = cold.parse().expect("`baseline` or `cranelift`");
    }
    let link = safecall::aot::LinkOptions::default();
    let build = || {
        let (module, _) = safecall::ir::parse::parse_in_dir(&text, path.parent()).expect("parses");
        safecall::build_shared_library(&module, &output, &options, &link).expect("builds");
    };
    build();
    let count: Option<u32> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let n = count.unwrap_or(200);
    let start = Instant::now();
    for _ in 0..n {
        build();
    }
    let whole = start.elapsed() / n.max(1);
    if count.is_none() {
        println!("{name} IR text -> .so (in-process linker): {whole:?} (mean of {n})");
        stages(&text, &path, &output, &options, &link, n);
    }
    // `AOT_BUILD_LOOP_OUT=PATH` keeps the library built (to count its instructions per call).
    if let Some(keep) = std::env::var_os("AOT_BUILD_LOOP_OUT") {
        std::fs::copy(&output, keep).expect("copy the library");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Prints the mean time of each stage of the same build, each stage timed on its own.
fn stages(
    text: &str,
    path: &std::path::Path,
    output: &std::path::Path,
    options: &safecall::Options,
    link: &safecall::aot::LinkOptions,
    n: u32,
) {
    let mut parse = Duration::ZERO;
    let mut verify = Duration::ZERO;
    let mut lower = Duration::ZERO;
    let mut codegen = Duration::ZERO;
    let mut linking = Duration::ZERO;
    for _ in 0..n {
        let t = Instant::now();
        let (module, _) = safecall::ir::parse::parse_in_dir(text, path.parent()).expect("parses");
        parse += t.elapsed();
        let t = Instant::now();
        let verified = safecall::ir::verify::verify(&module).expect("verifies");
        verify += t.elapsed();
        let t = Instant::now();
        let lowered = safecall::lower::lower(&verified, &options.lower).expect("lowers");
        lower += t.elapsed();
        drop(lowered);
        // The object from the verified module: lowering again, then code generation.
        let t = Instant::now();
        let object = safecall::compile_object(&verified, options).expect("compiles");
        codegen += t.elapsed();
        let t = Instant::now();
        safecall::aot::link_object_bytes(&object, output, link).expect("links");
        linking += t.elapsed();
    }
    let codegen = codegen.saturating_sub(lower);
    for (stage, total) in [
        ("parse", parse),
        ("verify", verify),
        ("lower", lower),
        ("codegen", codegen),
        ("link", linking),
    ] {
        println!("  {stage:<8} {:?}", total / n);
    }
}
