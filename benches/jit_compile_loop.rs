//! Compiles `examples/ir/launcher.scir` (or the example named by the second argument, such as
//! `cuda_add_one`) with the JIT's default settings (the baseline tier on x86-64;
//! `benches/jit_tier_count.sh` compares the tiers) N times (the first argument; 0 compiles it
//! once outside the count, to warm the process-wide error helper and the pools). `benches/compile_instruction_count.sh` runs it under callgrind:
//! instructions per compile do not depend on the machine's load, unlike the timings of
//! `cargo bench --features criterion --bench jit`. Run by `cargo bench`, it compiles 1000 times and prints the mean.

mod support;

fn main() {
    let name = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "launcher".to_owned());
    let launcher = support::example(&name);
    let options = support::launcher_options();
    // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
    // only symbols it declares with their real signatures.
    drop(unsafe { safecall::jit::compile(&launcher, &options) }.expect("compile the example"));
    let count: Option<u32> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let start = std::time::Instant::now();
    for _ in 0..count.unwrap_or(1000) {
        // SAFETY: the benchmark's IR dereferences only the arguments it checks and calls
        // only symbols it declares with their real signatures.
        drop(unsafe { safecall::jit::compile(&launcher, &options) }.expect("compile the example"));
    }
    if count.is_none() {
        println!(
            "{name} JIT compile: {:?} (mean of 1000)",
            start.elapsed() / 1000
        );
    }
}
