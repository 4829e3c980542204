//! Compiles `examples/ir/launcher.scir` with the JIT's default settings (the baseline tier on
//! x86-64; `benches/jit_tier_count.sh` compares the tiers) N times (the first
//! argument; 0 compiles the launcher once outside the count, to warm the process-wide error
//! helper and the pools). `benches/compile_instruction_count.sh` runs it under callgrind:
//! instructions per compile do not depend on the machine's load, unlike the timings of
//! `cargo bench --bench jit`. Run by `cargo bench`, it compiles 1000 times and prints the mean.

mod support;

fn main() {
    let launcher = support::example("launcher");
    let options = support::launcher_options();
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    drop(unsafe { safecall::jit::compile(&launcher, &options) }.expect("compile launcher"));
    let count: Option<u32> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let start = std::time::Instant::now();
    for _ in 0..count.unwrap_or(1000) {
        // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
        // only symbols it declares with their real signatures.
        drop(unsafe { safecall::jit::compile(&launcher, &options) }.expect("compile launcher"));
    }
    if count.is_none() {
        println!(
            "launcher JIT compile: {:?} (mean of 1000)",
            start.elapsed() / 1000
        );
    }
}
