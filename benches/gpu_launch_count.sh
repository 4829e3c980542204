#!/usr/bin/env bash
# Instructions per call of a host function that launches a kernel, against the same function
# without the launch (argument checks only), counted by callgrind: (N calls - 0 calls) / N, in
# steady state (the driver is found and the binary loaded by a warm-up call). The driver is the
# test double (tests/fake_cuda) in benchmark mode, whose entry points do next to nothing, so
# the difference is the host-side launch path: the launch's own checks, the cached driver,
# kernel and device loads, the cuCtxGetCurrent and cuLaunchKernelEx calls (device 0's primary
# context is current, as PyTorch leaves it, and recognised by handle: benches/c/launch_loop.c),
# the double's few instructions per call included.
# `launch_cluster` is a launch in a cluster of two blocks; `launch_all_settings` the same with
# PDL, a cooperative grid, the SPREAD policy, a preferred cluster and a priority: the ratio of
# the two is what the launch settings cost. SAFECALL_CLI=path counts the functions a given
# `safecall` binary compiles (an older build, to compare), skipping those it cannot compile.
# Needs valgrind and `cargo xtask venv` (the TVM-FFI headers). Usage: benches/gpu_launch_count.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
include=$(.venv/bin/tvm-ffi-config --includedir)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
features=()
if command -v llvm-config-19 >/dev/null; then
    # The features the test suite builds with, so nothing is rebuilt.
    export LLVM_SYS_191_PREFIX=${LLVM_SYS_191_PREFIX:-$(llvm-config-19 --prefix)}
    features=(--features llvm)
fi
# The runtime (TVMFFIEnvGetStream is on the launch path) and the double optimized, as the
# benchmarks build them; the generated code does not depend on how the CLI was built.
cargo build --quiet --release -p safecall-runtime -p safecall-fake-cuda -p safecall-fake-hip
cargo build --quiet --bin safecall "${features[@]}"
cli=${SAFECALL_CLI:-target/debug/safecall}
release=$PWD/target/release
# The loop programs (benches/c/NAME.c), each calling one function of a library N times.
for loop in launch_loop tma_loop hip_launch_loop; do
    cc -O2 -I"$include" "benches/c/$loop.c" -o "$out/$loop" -ldl \
        -Wl,--no-as-needed -L"$release" -lsafecall_runtime -Wl,-rpath,"$release"
done
# Instructions per call of FUNC in LIB.so under LOOP with DOUBLE (a library of
# target/release/deps): (N calls - 0 calls) / N, one decimal.
per_call() {
    local loop=$1 lib=$2 func=$3 double=$4 base total
    for calls in 0 "$n"; do
        total=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null \
            "$out/$loop" "$out/$lib.so" "$func" "$calls" "$release/deps/$double" 2>&1 |
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
        base=${base:-$total}
    done
    awk -v t="$total" -v b="$base" -v n="$n" 'BEGIN { printf "%.1f", (t - b) / n }'
}
# An older build cannot parse the new settings: it gets the file without that function.
if "$cli" check benches/ir/gpu_launch.scir >/dev/null 2>&1; then
    cp benches/ir/gpu_launch.scir "$out/gpu_launch.scir"
else
    sed '/^\/\/\/ The same launch with every setting/,$d' benches/ir/gpu_launch.scir >"$out/gpu_launch.scir"
fi
declare -A cuda_per_call=()
for backend in cranelift llvm; do
    if ! "$cli" build --backend "$backend" "$out/gpu_launch.scir" -o "$out/$backend.so" >/dev/null 2>&1; then
        echo "$backend: not built (no LLVM backend in this build?)"
        continue
    fi
    declare -A per_call=()
    for f in checks_only launch_empty launch_four launch_three launch_cluster launch_all_settings; do
        if ! grep -q "^fn $f(" "$out/gpu_launch.scir"; then
            continue
        fi
        per_call[$f]=$(per_call launch_loop "$backend" "$f" libsafecall_fake_cuda.so)
        echo "$backend $f: ${per_call[$f]} instructions per call"
        cuda_per_call[$backend:$f]=${per_call[$f]}
    done
    if [[ -n ${per_call[launch_all_settings]:-} ]]; then
        awk -v a="${per_call[launch_all_settings]}" -v c="${per_call[launch_cluster]}" -v b="$backend" \
            'BEGIN { printf "%s launch_all_settings / launch_cluster: %.3f\n", b, a / c }'
    fi
    for f in launch_empty launch_four launch_three; do
        [[ -n ${per_call[$f]:-} ]] || continue
        awk -v l="${per_call[$f]}" -v c="${per_call[checks_only]}" -v f="$f" -v b="$backend" \
            'BEGIN { printf "%s %s: the launch adds %.1f instructions to the checks\n", b, f, l - c }'
    done
done
# TMA: two descriptors taken from the launch sites' caches (benches/ir/gpu_tma.scir) against the
# same launch passing the tensors' data pointers (target: at most 1.3x).
if "$cli" check benches/ir/gpu_tma.scir >/dev/null 2>&1; then
    for backend in cranelift llvm; do
        if ! "$cli" build --backend "$backend" benches/ir/gpu_tma.scir -o "$out/tma_$backend.so" >/dev/null 2>&1; then
            continue
        fi
        declare -A tma=()
        for f in tma_plain tma_two; do
            tma[$f]=$(per_call tma_loop "tma_$backend" "$f" libsafecall_fake_cuda.so)
            echo "$backend $f: ${tma[$f]} instructions per call"
        done
        awk -v a="${tma[tma_two]}" -v p="${tma[tma_plain]}" -v b="$backend" \
            'BEGIN { printf "%s tma_two / tma_plain: %.3f\n", b, a / p }'
    done
fi
# HIP (issue 40): the same launch shapes on AMDGPU code objects through the HIP runtime double
# (benches/ir/hip_launch.scir), against the CUDA launch of the same shape counted above in this
# run (target: within 10%).
if "$cli" check benches/ir/hip_launch.scir >/dev/null 2>&1; then
    for backend in cranelift llvm; do
        if ! "$cli" build --backend "$backend" benches/ir/hip_launch.scir -o "$out/hip_$backend.so" >/dev/null 2>&1; then
            continue
        fi
        declare -A hip_per_call=()
        for f in checks_only launch_empty launch_three; do
            hip_per_call[$f]=$(per_call hip_launch_loop "hip_$backend" "$f" libsafecall_fake_hip.so)
            echo "$backend hip $f: ${hip_per_call[$f]} instructions per call"
        done
        for f in launch_empty launch_three; do
            awk -v h="${hip_per_call[$f]}" -v hc="${hip_per_call[checks_only]}" -v f="$f" -v b="$backend" \
                -v c="${cuda_per_call[$backend:$f]:-0}" -v cc="${cuda_per_call[$backend:checks_only]:-0}" \
                'BEGIN { printf "%s hip %s: the launch adds %.1f instructions to the checks (CUDA: %.1f; HIP / CUDA %.3f)\n", b, f, h - hc, c - cc, (c - cc > 0) ? (h - hc) / (c - cc) : 0 }'
        done
    done
fi
