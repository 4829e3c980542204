#!/usr/bin/env bash
# Instructions per call inside `__tvm_ffi_add_one` (examples/ir/add_one.scir: two float32
# tensors, every check), counted by callgrind (inclusive cost of the function divided by the
# calls), for the same function written by hand in C (benches/c/add_one_baseline.c, cc -O2)
# and safecall's `.so` on Cranelift at `--opt none` and `--opt speed` (the default),
# and on LLVM when the `safecall` binary is built with the cargo feature `llvm`, and TVM 0.27's
# generated function (benches/tvm/add_one.py) when a Python with apache-tvm is found
# ($TVM_PYTHON, else .venv-tvm/bin/python), at n = 0 (the checks alone) and n = 4 (the checks
# and a 4-element loop). Counts do not depend on the machine's load, unlike the timings of
# `cargo bench --bench call_overhead`.
# Needs valgrind and `cargo xtask venv` (the TVM-FFI headers). For the TVM row:
#   python3 -m venv .venv-tvm && .venv-tvm/bin/pip install apache-tvm==0.27.0.post1
# Usage: benches/instruction_count.sh [N] (N calls per count, default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
include=$(.venv/bin/tvm-ffi-config --includedir)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Debug builds: the generated code and the C baseline do not depend on them, and the runtime
# is not on the success path. The LLVM backend is counted when this build has it.
cargo build --quiet -p safecall-runtime
if ! cargo build --quiet --bin safecall --features llvm 2>/dev/null; then
    cargo build --quiet --bin safecall
fi
runtime=$PWD/target/debug
cc -O2 -I"$include" benches/c/call_loop.c -o "$out/call_loop" -ldl \
    -Wl,--no-as-needed -L"$runtime" -lsafecall_runtime -Wl,-rpath,"$runtime"
cc -O2 -shared -fPIC -I"$include" benches/c/add_one_baseline.c -o "$out/hand_written_c.so"
libs=(hand_written_c)
build() {
    local name=$1
    shift
    if target/debug/safecall build examples/ir/add_one.scir -o "$out/$name.so" "$@" \
        >/dev/null 2>&1; then
        libs+=("$name")
    else
        echo "$name: not counted (safecall build $* failed; LLVM needs --features llvm)"
    fi
}
build cranelift_none --opt none
build cranelift_speed --opt speed
build llvm --backend llvm
tvm_python=${TVM_PYTHON:-.venv-tvm/bin/python}
if [ -x "$tvm_python" ] && "$tvm_python" benches/tvm/add_one.py "$out/tvm_0.27.so" 2>/dev/null; then
    libs+=(tvm_0.27)
else
    echo "tvm_0.27: not counted (no Python with apache-tvm at $tvm_python; see this script's header)"
fi
# Instructions inside __tvm_ffi_add_one (callees included) per call, for $1 at $2 elements.
count() {
    local cg="$out/callgrind.out"
    valgrind --tool=callgrind --callgrind-out-file="$cg" "$out/call_loop" "$out/$1.so" "$n" "$2" \
        >/dev/null 2>&1
    callgrind_annotate --inclusive=yes "$cg" 2>/dev/null |
        awk -v n="$n" '/__tvm_ffi_add_one/ { gsub(",", "", $1); printf "%.1f", $1 / n; exit }'
}
printf '%-16s %10s %10s %12s %12s\n' code "n = 0" "n = 4" "n=0 / C" "n=4 / C"
declare -A c0 c4
for lib in "${libs[@]}"; do
    c0[$lib]=$(count "$lib" 0)
    c4[$lib]=$(count "$lib" 4)
    printf '%-16s %10s %10s %12s %12s\n' "$lib" "${c0[$lib]}" "${c4[$lib]}" \
        "$(awk -v a="${c0[$lib]}" -v c="${c0[hand_written_c]}" 'BEGIN { printf "%.3f", a / c }')" \
        "$(awk -v a="${c4[$lib]}" -v c="${c4[hand_written_c]}" 'BEGIN { printf "%.3f", a / c }')"
done
