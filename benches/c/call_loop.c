/*
 * Calls `__tvm_ffi_add_one` of the shared library argv[1] argv[2] times with two float32
 * DLTensor* arguments of argv[3] elements (0 to 1024, default 4): the driver of
 * benches/instruction_count.sh, which counts the instructions per call with callgrind (a
 * count, not a time: repeatable on a noisy machine).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/ffi/c_api.h>
typedef int (*safe_call)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);
enum { MAX_ELEMENTS = 1024 };
static float x[MAX_ELEMENTS], y[MAX_ELEMENTS];
int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: call_loop LIB CALLS [ELEMENTS]\n"); return 2; }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  safe_call f = (safe_call)dlsym(lib, "__tvm_ffi_add_one");
  if (!f) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  long n = atol(argv[2]);
  long elements = argc > 3 ? atol(argv[3]) : 4;
  if (elements < 0 || elements > MAX_ELEMENTS) {
    fprintf(stderr, "ELEMENTS must be 0 to %d\n", MAX_ELEMENTS);
    return 2;
  }
  for (long i = 0; i < elements; ++i) x[i] = (float)i;
  int64_t shape[1] = {elements};
  DLTensor tx = {x, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
  DLTensor ty = {y, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, NULL, 0};
  TVMFFIAny args[2] = {{0}};
  args[0].type_index = kTVMFFIDLTensorPtr; args[0].v_ptr = &tx;
  args[1].type_index = kTVMFFIDLTensorPtr; args[1].v_ptr = &ty;
  int bad = 0;
  for (long i = 0; i < n; ++i) {
    TVMFFIAny r = {0};
    bad |= f(NULL, args, 2, &r);
  }
  int wrong = n > 0 && elements > 0 && y[elements - 1] != (float)elements;
  if (bad || wrong) { fprintf(stderr, "add_one failed\n"); return 1; }
  return 0;
}
