#!/usr/bin/env bash
# The JIT's tiers side by side in instructions, counted by callgrind (counts do not depend on the
# machine's load): per JIT compile (IR to callable: verification, lowering, code generation,
# linking) of examples/ir/launcher.scir, examples/ir/launcher4d.scir and modules of 250 and 1000
# launchers, and per call of add_one (n = 0 and 1024) and of both launchers through their
# safe-call pointers (driver loop included). Each figure is (N runs minus 0 runs) / N.
# Baseline: the JIT's default tier on x86-64; cranelift: Cranelift's fast-compile settings.
# Needs valgrind. Usage: benches/jit_tier_count.sh [compile|call] (both by default)
set -euo pipefail
cd "$(dirname "$0")/.."
exe=$(cargo bench --features llvm --no-run --bench jit_tier_loop 2>&1 |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p')
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" "$@" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
per_run() { # MODE WHAT N
    local b c
    b=$(count "$1" baseline "$2" 0)
    c=$(count "$1" baseline "$2" "$3")
    local baseline
    baseline=$(awk -v t="$c" -v b="$b" -v n="$3" 'BEGIN { printf "%.0f", (t - b) / n }')
    b=$(count "$1" cranelift "$2" 0)
    c=$(count "$1" cranelift "$2" "$3")
    local cranelift
    cranelift=$(awk -v t="$c" -v b="$b" -v n="$3" 'BEGIN { printf "%.0f", (t - b) / n }')
    if [ "$1" = compile ]; then
        awk -v w="$2" -v b="$baseline" -v c="$cranelift" 'BEGIN {
            printf "compile %s: baseline %.0f, cranelift fast %.0f instructions; cranelift / baseline %.2f\n", w, b, c, c / b }'
    else
        awk -v w="$2" -v b="$baseline" -v c="$cranelift" 'BEGIN {
            printf "call %s: baseline %.0f, cranelift fast %.0f instructions; baseline / cranelift fast %.2f\n", w, b, c, b / c }'
    fi
    if [ "$1" = call ]; then
        b=$(count "$1" cranelift_opt "$2" 0)
        c=$(count "$1" cranelift_opt "$2" "$3")
        awk -v w="$2" -v t="$c" -v z="$b" -v n="$3" -v base="$baseline" 'BEGIN {
            o = (t - z) / n; printf "call %s: cranelift optimized %.0f instructions; baseline / optimized %.2f\n", w, o, base / o }'
    fi
}
if [ "${1:-compile}" = compile ]; then
    per_run compile launcher 50
    per_run compile launcher4d 50
    per_run compile quarter 2
    per_run compile thousand 1
fi
if [ "${1:-call}" = call ]; then
    per_run call add_one_0 10000
    per_run call add_one_1024 100
    per_run call launcher 10000
    per_run call launcher4d 10000
fi
