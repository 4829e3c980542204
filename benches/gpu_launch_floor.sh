#!/usr/bin/env bash
# Host time per launch from C on a real GPU: the driver's `cuLaunchKernelEx` alone against a
# safecall host function (Cranelift and LLVM `.so`) that makes it (benches/c/gpu_launch_floor.c).
#
#   bash benches/gpu_launch_floor.sh [DIR]
#
# Builds, here, the C driver (cc, with the cuda.h Triton's wheel bundles and the TVM-FFI
# headers of `.venv`) and the `.so` files of examples/ir/cuda_add_one.scir into DIR (default
# target/gpu-launch-floor), with DIR/run.sh, which runs them where they are (needs
# `libcuda.so.1`, or the driver named by $SAFECALL_LIBCUDA_PATH, and a Python with tvm_ffi for
# libtvm_ffi.so). Here, without a GPU, it then runs them once against the CUDA driver test
# double (figures: host paths over a do-nothing driver).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/gpu-launch-floor}
mkdir -p "$dir"
include=$(.venv/bin/tvm-ffi-config --includedir)
cuda_include=$(.venv/bin/python -c 'import os, triton; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "include"))')
cc -O2 -I"$include" -I"$cuda_include" benches/c/gpu_launch_floor.c -o "$dir/gpu_launch_floor" -ldl
features=()
if llvm-config-19 --version >/dev/null 2>&1; then features=(--features llvm); fi
cargo build -q --release --bin safecall "${features[@]}"
backends=(cranelift)
if [ ${#features[@]} -gt 0 ]; then backends+=(llvm); fi
for b in "${backends[@]}"; do
    target/release/safecall build examples/ir/cuda_add_one.scir -o "$dir/add_one_$b.so" --backend "$b" >/dev/null
done
cp examples/ir/cuda_add_one.ptx "$dir/"
cat > "$dir/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs gpu_launch_floor beside this script for each host library here, 10 rounds each.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
libcuda=${SAFECALL_LIBCUDA_PATH:-libcuda.so.1}
libtvm=$(python3 -c 'import os, tvm_ffi; print(os.path.join(os.path.dirname(tvm_ffi.__file__), "lib", "libtvm_ffi.so"))')
for lib in "$here"/add_one_*.so; do
    "$here/gpu_launch_floor" "$libcuda" "$libtvm" "$lib" "$here/cuda_add_one.ptx" "${ROUNDS:-10}"
done
RUN
chmod +x "$dir/run.sh"
echo "built $dir (run there: bash $dir/run.sh)"
if [ ! -e /dev/nvidia0 ]; then
    cargo build -q --release -p safecall-fake-cuda
    double=$PWD/target/release/libsafecall_fake_cuda.so
    SAFECALL_LIBCUDA_PATH=$double PATH="$PWD/.venv/bin:$PATH" ROUNDS=2 bash "$dir/run.sh"
fi
