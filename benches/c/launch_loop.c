/*
 * Calls `__tvm_ffi_<argv[2]>` of the shared library argv[1] argv[3] times with one int
 * argument (the device, 0), after one warm-up call that finds the driver and loads the
 * binary: the driver of benches/gpu_launch_count.sh. The CUDA driver is the test double
 * argv[4] (tests/fake_cuda) in benchmark mode, with device 0's primary context current, as
 * PyTorch leaves it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/ffi/c_api.h>
typedef int (*safe_call)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);
int main(int argc, char** argv) {
  if (argc != 5) { fprintf(stderr, "usage: launch_loop LIB FUNCTION N FAKE_DRIVER\n"); return 2; }
  setenv("SAFECALL_LIBCUDA_PATH", argv[4], 1);
  void* fake = dlopen(argv[4], RTLD_NOW);
  if (!fake) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  ((void (*)(int))dlsym(fake, "safecall_fake_cuda_quiet"))(1);
  /* Device 0's primary context current, as PyTorch (cudaSetDevice) leaves it. */
  int dev = 0;
  void* ctx = NULL;
  ((int (*)(int*, int))dlsym(fake, "cuDeviceGet"))(&dev, 0);
  ((int (*)(void**, int))dlsym(fake, "cuDevicePrimaryCtxRetain"))(&ctx, dev);
  ((int (*)(void*))dlsym(fake, "cuCtxSetCurrent"))(ctx);
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  char symbol[256];
  snprintf(symbol, sizeof symbol, "__tvm_ffi_%s", argv[2]);
  safe_call f = (safe_call)dlsym(lib, symbol);
  if (!f) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  long n = atol(argv[3]);
  TVMFFIAny args[1] = {{0}};
  args[0].type_index = kTVMFFIInt;
  args[0].v_int64 = 0;
  int bad = 0;
  for (long i = 0; i < n + 1; ++i) {
    TVMFFIAny r = {0};
    bad |= f(NULL, args, 1, &r);
  }
  if (bad) { fprintf(stderr, "%s failed\n", symbol); return 1; }
  return 0;
}
