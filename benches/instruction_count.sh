#!/usr/bin/env bash
# Instructions per call of the generated add_one host function (Cranelift, as `safecall build`
# makes it) and of the same function written by hand in C (benches/c/add_one_baseline.c,
# cc -O2), counted by callgrind: N calls minus 0 calls, divided by N. Counts do not depend on
# the machine's load, unlike the timings of `cargo bench --bench call_overhead`.
# Needs valgrind and `cargo xtask venv` (the TVM-FFI headers). Usage: benches/instruction_count.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
include=$(.venv/bin/tvm-ffi-config --includedir)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Debug builds: the generated code and the C baseline do not depend on them, and the runtime
# is not on the success path.
cargo build --quiet -p safecall-runtime
cargo build --quiet --bin safecall
runtime=$PWD/target/debug
cc -O2 -I"$include" benches/c/call_loop.c -o "$out/call_loop" -ldl \
    -Wl,--no-as-needed -L"$runtime" -lsafecall_runtime -Wl,-rpath,"$runtime"
cc -O2 -shared -fPIC -I"$include" benches/c/add_one_baseline.c -o "$out/hand_written_c.so"
target/debug/safecall build examples/ir/add_one.scir -o "$out/safecall.so" >/dev/null 2>&1
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$out/call_loop" "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
declare -A per_call
for lib in hand_written_c safecall; do
    base=$(count "$out/$lib.so" 0)
    total=$(count "$out/$lib.so" "$n")
    per_call[$lib]=$(awk -v t="$total" -v b="$base" -v n="$n" 'BEGIN { printf "%.1f", (t - b) / n }')
    echo "$lib: ${per_call[$lib]} instructions per call (driver loop included)"
done
awk -v s="${per_call[safecall]}" -v c="${per_call[hand_written_c]}" \
    'BEGIN { printf "ratio safecall / hand_written_c: %.3f\n", s / c }'
