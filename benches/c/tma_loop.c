/*
 * Calls `__tvm_ffi_<argv[2]>` of the shared library argv[1] argv[3] times with two CUDA
 * DLTensors (float16, 256 x 128, compact, 16-byte aligned addresses that are never
 * dereferenced), after one warm-up call: the driver of the TMA rows of
 * benches/gpu_launch_count.sh. The CUDA driver is the test double argv[4] in benchmark mode,
 * with a context of device 0 current.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/ffi/c_api.h>
typedef int (*safe_call)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);
int main(int argc, char** argv) {
  if (argc != 5) { fprintf(stderr, "usage: tma_loop LIB FUNCTION N FAKE_DRIVER\n"); return 2; }
  setenv("SAFECALL_LIBCUDA_PATH", argv[4], 1);
  void* fake = dlopen(argv[4], RTLD_NOW);
  if (!fake) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  ((void (*)(int))dlsym(fake, "safecall_fake_cuda_quiet"))(1);
  ((void (*)(int))dlsym(fake, "safecall_fake_cuda_set_user_context"))(0);
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  char symbol[256];
  snprintf(symbol, sizeof symbol, "__tvm_ffi_%s", argv[2]);
  safe_call f = (safe_call)dlsym(lib, symbol);
  if (!f) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  long n = atol(argv[3]);
  int64_t shape_a[2] = {256, 128}, shape_b[2] = {256, 128};
  DLTensor t[2];
  for (int i = 0; i < 2; ++i) {
    t[i].data = (void*)(uintptr_t)(0x100000 * (i + 1));
    t[i].device.device_type = kDLCUDA;
    t[i].device.device_id = 0;
    t[i].ndim = 2;
    t[i].dtype.code = kDLFloat;
    t[i].dtype.bits = 16;
    t[i].dtype.lanes = 1;
    t[i].shape = i == 0 ? shape_a : shape_b;
    t[i].strides = NULL;
    t[i].byte_offset = 0;
  }
  TVMFFIAny args[2] = {{0}};
  for (int i = 0; i < 2; ++i) {
    args[i].type_index = kTVMFFIDLTensorPtr;
    args[i].v_ptr = &t[i];
  }
  int bad = 0;
  for (long i = 0; i < n + 1; ++i) {
    TVMFFIAny r = {0};
    bad |= f(NULL, args, 2, &r);
  }
  if (bad) { fprintf(stderr, "%s failed\n", symbol); return 1; }
  return 0;
}
