/*
 * Host time per launch on a real GPU, from C: the driver call alone against a safecall host
 * function that makes it. Both launch the `empty` kernel of examples/ir/cuda_add_one.ptx on
 * one thread: the driver directly (`cuLaunchKernelEx`, the kernel from `cuLibraryLoadData`),
 * and `__tvm_ffi_empty` of a shared library safecall built from examples/ir/cuda_add_one.scir
 * (its argument checked, the environment stream asked of libtvm_ffi, the same
 * `cuLaunchKernelEx`). Launches are timed in batches of BATCH (queued, not waited for; the
 * context is synchronized between batches, untimed), the two alternating ROUNDS times; the
 * figures are medians over all batches, in nanoseconds per launch.
 *
 *   gpu_launch_floor LIBCUDA LIBTVM_FFI HOST_LIB PTX [ROUNDS]
 *
 * Built and run by benches/gpu_launch_floor.sh (on a machine with an NVIDIA GPU; against the
 * CUDA driver test double elsewhere, where the figures are host paths over a do-nothing
 * driver). Types and entry points from the cuda.h that Triton's wheel bundles.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <tvm/ffi/c_api.h>

#define BATCH 200
#define BATCHES_PER_ROUND 50

typedef int (*safe_call)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);

static void* need(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "missing %s\n", name);
    exit(1);
  }
  return p;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static char* read_file(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    perror(path);
    exit(1);
  }
  buf[n] = 0;
  fclose(f);
  return buf;
}

#define CHECK(call)                                                   \
  do {                                                                \
    CUresult r_ = (call);                                             \
    if (r_ != CUDA_SUCCESS) {                                         \
      fprintf(stderr, "%s failed: %d (line %d)\n", #call, (int)r_, __LINE__); \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: gpu_launch_floor LIBCUDA LIBTVM_FFI HOST_LIB PTX [ROUNDS]\n");
    return 2;
  }
  int rounds = argc > 5 ? atoi(argv[5]) : 5;
  void* cuda = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!cuda) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  if (!dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  /* The CUDA driver test double: its benchmark mode (no records), where it is the driver. */
  void (*quiet)(int) = (void (*)(int))dlsym(cuda, "safecall_fake_cuda_quiet");
  if (quiet) quiet(1);
  CUresult (*init)(unsigned) = need(cuda, "cuInit");
  CUresult (*device_get)(CUdevice*, int) = need(cuda, "cuDeviceGet");
  CUresult (*retain)(CUcontext*, CUdevice) = need(cuda, "cuDevicePrimaryCtxRetain");
  CUresult (*set_current)(CUcontext) = need(cuda, "cuCtxSetCurrent");
  CUresult (*synchronize)(void) = need(cuda, "cuCtxSynchronize");
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = need(cuda, "cuMemAlloc_v2");
  CUresult (*library_load)(CUlibrary*, const void*, CUjit_option*, void**, unsigned, CUlibraryOption*,
                           void**, unsigned) = need(cuda, "cuLibraryLoadData");
  CUresult (*get_kernel)(CUkernel*, CUlibrary, const char*) = need(cuda, "cuLibraryGetKernel");
  CUresult (*launch)(const CUlaunchConfig*, CUfunction, void**, void**) = need(cuda, "cuLaunchKernelEx");

  /* Device 0's primary context current, as PyTorch (cudaSetDevice) leaves it. */
  CUdevice dev;
  CUcontext ctx;
  CHECK(init(0));
  CHECK(device_get(&dev, 0));
  CHECK(retain(&ctx, dev));
  CHECK(set_current(ctx));
  char* ptx = read_file(argv[4]);
  CUlibrary lib;
  CUkernel kernel;
  CHECK(library_load(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CHECK(get_kernel(&kernel, lib, "empty"));
  CUlaunchConfig config;
  memset(&config, 0, sizeof config);
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;

  void* host = dlopen(argv[3], RTLD_NOW);
  if (!host) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  safe_call empty = (safe_call)need(host, "__tvm_ffi_empty");
  CUdeviceptr data;
  CHECK(mem_alloc(&data, 256));
  int64_t shape[1] = {1};
  DLTensor x;
  memset(&x, 0, sizeof x);
  x.data = (void*)(uintptr_t)data;
  x.device.device_type = kDLCUDA;
  x.device.device_id = 0;
  x.ndim = 1;
  x.dtype.code = kDLFloat;
  x.dtype.bits = 32;
  x.dtype.lanes = 1;
  x.shape = shape;
  TVMFFIAny arg;
  memset(&arg, 0, sizeof arg);
  arg.type_index = kTVMFFIDLTensorPtr;
  arg.v_ptr = &x;

  /* Warm-up: the host function loads its image on its first call. */
  for (int i = 0; i < 100; ++i) {
    TVMFFIAny result;
    memset(&result, 0, sizeof result);
    if (empty(NULL, &arg, 1, &result) != 0) {
      fprintf(stderr, "__tvm_ffi_empty failed\n");
      return 1;
    }
    CHECK(launch(&config, (CUfunction)kernel, NULL, NULL));
  }
  CHECK(synchronize());

  int total = rounds * BATCHES_PER_ROUND;
  double* driver_ns = malloc(sizeof(double) * (size_t)total);
  double* safecall_ns = malloc(sizeof(double) * (size_t)total);
  for (int r = 0; r < rounds; ++r) {
    for (int b = 0; b < BATCHES_PER_ROUND; ++b) {
      int k = r * BATCHES_PER_ROUND + b;
      double t0 = now_ns();
      for (int i = 0; i < BATCH; ++i) CHECK(launch(&config, (CUfunction)kernel, NULL, NULL));
      driver_ns[k] = (now_ns() - t0) / BATCH;
      CHECK(synchronize());
      t0 = now_ns();
      int bad = 0;
      for (int i = 0; i < BATCH; ++i) {
        TVMFFIAny result;
        result.type_index = kTVMFFINone;
        bad |= empty(NULL, &arg, 1, &result);
      }
      safecall_ns[k] = (now_ns() - t0) / BATCH;
      CHECK(synchronize());
      if (bad) {
        fprintf(stderr, "__tvm_ffi_empty failed\n");
        return 1;
      }
    }
  }
  qsort(driver_ns, (size_t)total, sizeof(double), cmp);
  qsort(safecall_ns, (size_t)total, sizeof(double), cmp);
  double d = driver_ns[total / 2], s = safecall_ns[total / 2];
  printf("{\"host_lib\": \"%s\", \"driver_ns\": %.1f, \"safecall_ns\": %.1f, \"ratio\": %.3f, "
         "\"batches\": %d, \"batch\": %d}\n",
         argv[3], d, s, s / d, total, BATCH);
  return 0;
}
