#!/usr/bin/env bash
# Instructions per JIT compile of examples/ir/launcher.scir, or of the example EXAMPLE (e.g.
# cuda_add_one) (the JIT's default settings:
# verification, lowering, code generation by the default tier and finalization), counted by callgrind: N compiles minus
# none, divided by N. Kernel time (mprotect) is not counted. Needs valgrind.
# Usage: benches/compile_instruction_count.sh [N [EXAMPLE]]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
example=${2:-launcher}
exe=$(cargo bench --no-run --bench jit_compile_loop 2>&1 |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p')
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$exe" "$1" "$example" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
base=$(count 0)
total=$(count "$n")
awk -v t="$total" -v b="$base" -v n="$n" -v e="$example" \
    'BEGIN { printf "%s JIT compile: %.0f instructions per compile (%d compiles)\n", e, (t - b) / n, n }'
