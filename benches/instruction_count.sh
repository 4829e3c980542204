#!/usr/bin/env bash
# Instructions per call inside `__tvm_ffi_add_one` (examples/ir/add_one.scir: two float32
# tensors, every check), counted by callgrind (inclusive cost of the function divided by the
# calls), for the same function written by hand in C (benches/c/add_one_baseline.c, cc -O2)
# and safecall's `.so` on Cranelift at `--opt none` and `--opt speed` (the default),
# and on LLVM when the `safecall` binary is built with the cargo feature `llvm` (also with
# `--omit-frame-pointer`, as the C build has no frame pointer; the C is counted with frame
# pointers too, `hand_written_c_fp`), and TVM 0.27's
# generated function (benches/tvm/add_one.py) when a Python with apache-tvm is found
# ($TVM_PYTHON, else .venv-tvm/bin/python), at n = 0 (the checks alone) and n = 4 (the checks
# and a 4-element loop), and per element of the loop ((count at n = 1024 - count at n = 0) /
# 1024). LLVM builds for `--cpu generic`, the ISA of C's and TVM's builds (valgrind cannot run
# the AVX-512 that `native` may pick). The last row is the JIT's baseline tier (its default on
# x86-64, which writes no `.so`): benches/jit_tier_loop.rs calls the function through its
# safe-call pointer, and the count is the JIT code's own inclusive cost (the largest of the
# unnamed code objects callgrind reports) per call; that harness has no n = 4 case.
# Counts do not depend on the machine's load, unlike the
# timings of `cargo bench --features criterion --bench call_overhead`.
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
# The same C with frame pointers: the like-for-like row for safecall's LLVM default.
cc -O2 -fno-omit-frame-pointer -shared -fPIC -I"$include" benches/c/add_one_baseline.c \
    -o "$out/hand_written_c_fp.so"
libs=(hand_written_c hand_written_c_fp)
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
build llvm --backend llvm --cpu generic
build llvm_no_fp --backend llvm --cpu generic --omit-frame-pointer
tvm_python=${TVM_PYTHON:-.venv-tvm/bin/python}
if [ -x "$tvm_python" ] && "$tvm_python" benches/tvm/add_one.py "$out/tvm_0.27.so" 2>/dev/null; then
    libs+=(tvm_0.27)
else
    echo "tvm_0.27: not counted (no Python with apache-tvm at $tvm_python; see this script's header)"
fi
# Instructions inside __tvm_ffi_add_one (callees included) per call, for $1 at $2 elements
# over $3 calls.
count() {
    local cg="$out/callgrind.out"
    valgrind --tool=callgrind --callgrind-out-file="$cg" "$out/call_loop" "$out/$1.so" "$3" "$2" \
        >/dev/null 2>&1
    callgrind_annotate --inclusive=yes "$cg" 2>/dev/null |
        awk -v n="$3" '/__tvm_ffi_add_one/ { gsub(",", "", $1); printf "%.1f", $1 / n; exit }'
}
ratio() { awk -v a="$1" -v c="$2" 'BEGIN { printf "%.3f", a / c }'; }
long_calls=$(((n + 99) / 100))
printf '%-18s %8s %8s %12s %8s %8s %8s\n' code "n = 0" "n = 4" "per element" "n=0/C" "n=4/C" "elem/C"
declare -A c0 c4 e
for lib in "${libs[@]}"; do
    c0[$lib]=$(count "$lib" 0 "$n")
    c4[$lib]=$(count "$lib" 4 "$n")
    long=$(count "$lib" 1024 "$long_calls")
    e[$lib]=$(awk -v l="$long" -v z="${c0[$lib]}" 'BEGIN { printf "%.2f", (l - z) / 1024 }')
    printf '%-18s %8s %8s %12s %8s %8s %8s\n' "$lib" "${c0[$lib]}" "${c4[$lib]}" "${e[$lib]}" \
        "$(ratio "${c0[$lib]}" "${c0[hand_written_c]}")" \
        "$(ratio "${c4[$lib]}" "${c4[hand_written_c]}")" \
        "$(ratio "${e[$lib]}" "${e[hand_written_c]}")"
done
# The baseline tier: instructions inside the JIT-compiled function per call, for CASE over $2
# calls.
jit_count() {
    local cg="$out/callgrind.jit"
    valgrind --tool=callgrind --callgrind-out-file="$cg" "$tier_loop" call baseline "$1" "$2" \
        >/dev/null 2>&1
    callgrind_annotate --inclusive=yes --threshold=100 "$cg" 2>/dev/null |
        awk -v n="$2" '/\[\?\?\?\]$/ { gsub(",", "", $1); if ($1 + 0 > max) max = $1 + 0 }
            END { printf "%.1f", max / n }'
}
# With LLVM when this machine builds it, as benches/jit_tier_count.sh does (one build for both).
tier_loop=$( (cargo bench --no-run --features llvm --bench jit_tier_loop 2>&1 ||
    cargo bench --no-run --bench jit_tier_loop 2>&1) |
    sed -n 's/.*Executable .*(\(.*\)).*/\1/p' | tail -1)
b0=$(jit_count add_one_0 "$n")
b1024=$(jit_count add_one_1024 "$long_calls")
be=$(awk -v l="$b1024" -v z="$b0" 'BEGIN { printf "%.2f", (l - z) / 1024 }')
printf '%-18s %8s %8s %12s %8s %8s %8s\n' baseline_jit "$b0" - "$be" \
    "$(ratio "$b0" "${c0[hand_written_c]}")" - "$(ratio "$be" "${e[hand_written_c]}")"
