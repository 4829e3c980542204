/*
 * The add_one host function written by hand in C, with the same checks as safecall's
 * generated code (examples/ir/add_one.scir): the baseline of benches/call_overhead.rs.
 *
 * Checks, in order: argument count; per argument: Tensor object or DLTensor*, non-NULL;
 * per tensor: ndim 1, dtype float32, device CPU, shape[0] binds / matches n, compact strides
 * (NULL strides, extent-1 dims and empty tensors exempt), byte_offset 0, non-NULL data unless
 * empty, same device id. Errors are static strings (the cold path is not measured).
 *
 * The helpers are forced inline: gcc -O2 keeps `check` (called twice) out of line, which
 * costs about 47 instructions per call (111 against 64 at n = 0, callgrind) and would make
 * this baseline slower than the C a performance-minded author writes.
 */
#include <stddef.h>
#include <stdint.h>
#include <tvm/ffi/c_api.h>

static int fail(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}

static inline __attribute__((always_inline)) DLTensor* as_tensor(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFITensor) {
    return a->v_obj == NULL ? NULL : (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  }
  if (a->type_index == kTVMFFIDLTensorPtr) return (DLTensor*)a->v_ptr;
  return NULL;
}

static inline __attribute__((always_inline)) int check(const DLTensor* t, int64_t* n, int bind, int32_t* device_id) {
  if (t->ndim != 1) return fail("ValueError", "add_one: ndim mismatch");
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
    return fail("TypeError", "add_one: dtype mismatch");
  if (t->device.device_type != kDLCPU) return fail("ValueError", "add_one: device mismatch");
  int64_t extent = t->shape[0];
  if (bind) {
    *n = extent;
  } else if (extent != *n) {
    return fail("ValueError", "add_one: shape mismatch");
  }
  int empty = extent == 0;
  if (t->strides != NULL && !empty && extent != 1 && t->strides[0] != 1)
    return fail("ValueError", "add_one: not compact");
  if (t->byte_offset != 0) return fail("ValueError", "add_one: byte_offset");
  if (!empty && t->data == NULL) return fail("ValueError", "add_one: NULL data");
  if (bind) {
    *device_id = t->device.device_id;
  } else if (t->device.device_id != *device_id) {
    return fail("ValueError", "add_one: device id mismatch");
  }
  return 0;
}

int __tvm_ffi_add_one(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  if (num_args != 2) return fail("TypeError", "add_one: expected 2 arguments");
  DLTensor* x = as_tensor(&args[0]);
  if (x == NULL) return fail("TypeError", "add_one: x is not a tensor");
  DLTensor* y = as_tensor(&args[1]);
  if (y == NULL) return fail("TypeError", "add_one: y is not a tensor");
  int64_t n = 0;
  int32_t device_id = 0;
  if (check(x, &n, 1, &device_id) != 0) return -1;
  if (check(y, &n, 0, &device_id) != 0) return -1;
  const float* xp = (const float*)x->data;
  float* yp = (float*)y->data;
  for (int64_t i = 0; i < n; ++i) yp[i] = xp[i] + 1.0f;
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  return 0;
}
