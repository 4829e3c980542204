#!/usr/bin/env bash
# Instructions per Triton launch, counted by callgrind: (2N launches - N launches) / N, each
# process in steady state (benches/triton_launch_count.py: warm-up, the launcher's tier-up
# awaited), PYTHONHASHSEED=0, against the CUDA driver double built in release mode (quiet).
# Usage: [PY=.venv-triton36/bin/python] [WHAT=run<k>|grid<k>, k one of 2 3 8 16, a final c for tensors with a C data_ptr() (run16c)] [WHICH=safecall|stock] [DISPATCH=1]
#        benches/triton_launch_count.sh [N]
# WHAT=first8 or firsttma4 counts the first launch of a new signature (a launcher built and
# called once; on Triton 3.9, whose stock launcher is shared, with a small N: 30); WHAT=spec8 or
# spectma4 the same for a kernel whose form has a host function already (a new specialization
# of a launched kernel: safecall's launcher reuses it, N=30); WHAT=firstfn
# counts safecall.triton.function's build of the 4-descriptor kernel (Triton 3.9 only).
# Build the extension in release mode first: (cd python && ../.venv/bin/maturin develop --release).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-2000}
py=${PY:-.venv/bin/python}
cargo build --quiet --release -p safecall-fake-cuda
# One OpenBLAS thread (numpy's, where it is imported): its idle threads spin, and callgrind
# counted about 1,900 of their instructions per launch into some runs.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
export SAFECALL_FAKE_CUDA_PATH=$PWD/target/release/libsafecall_fake_cuda.so PYTHONHASHSEED=0 PYTHONPATH=$PWD/python
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TRITON_CACHE_DIR=$out/cache
N=1 "$py" benches/triton_launch_count.py  # compiles the kernels into the cache
total() {
    if ! N=$1 valgrind --tool=callgrind --callgrind-out-file="$out/$1.out" "$py" benches/triton_launch_count.py \
        >/dev/null 2>"$out/$1.err"; then
        echo "benches/triton_launch_count.py failed (N=$1): $(tail -n 1 "$out/$1.err")" >&2
        exit 1
    fi
    grep -m1 '^totals' "$out/$1.out" | awk '{print $2}'
}
a=$(total "$n")
b=$(total $((2 * n)))
unit="launch"
[[ ${WHAT:-} == first* ]] && unit="first launch of a new signature"
[[ ${WHAT:-} == spec* ]] && unit="first launch of a new specialization of a launched kernel"
[[ ${WHAT:-} == firstfn ]] && unit="build of safecall.triton.function"
echo "${WHAT:-run16} ${WHICH:-safecall}${DISPATCH:+ (dispatch)}: $(( (b - a) / n )) instructions per $unit"
