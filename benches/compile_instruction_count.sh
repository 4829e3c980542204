#!/usr/bin/env bash
# Instructions per JIT compile of examples/ir/launcher.scir, or of the example EXAMPLE (e.g.
# cuda_add_one) (the JIT's default settings:
# verification, lowering, code generation by the default tier and finalization), counted by callgrind: N compiles minus
# none, divided by N. Kernel time (mprotect) is not counted. Needs valgrind.
# With `aot` first: instructions per build of the example from IR text to a shared library on
# disk (benches/aot_build_loop.rs: default settings, in-process linker; Cranelift settings may
# follow the example: OPT_LEVEL REGALLOC COLD, e.g. `speed default cranelift`).
# Usage: benches/compile_instruction_count.sh [N [EXAMPLE]]
#        benches/compile_instruction_count.sh aot [N [EXAMPLE [OPT_LEVEL [REGALLOC [COLD]]]]]
set -euo pipefail
cd "$(dirname "$0")/.."
bench=jit_compile_loop
what="JIT compile"
if [ "${1:-}" = aot ]; then
    shift
    bench=aot_build_loop
    what="IR text to .so"
fi
n=${1:-200}
example=${2:-launcher}
settings=("${@:3}")
exe=$(cargo bench --no-run --bench "$bench" 2>&1 |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p')
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" "$1" "$example" \
        "${settings[@]}" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
base=$(count 0)
total=$(count "$n")
awk -v t="$total" -v b="$base" -v n="$n" -v e="$example" -v w="$what" -v s="${settings[*]}" \
    'BEGIN { printf "%s %s%s: %.0f instructions each (%d runs)\n", e, w, (s == "" ? "" : " [" s "]"), (t - b) / n, n }'
