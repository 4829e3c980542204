/* A TVM-FFI library written by hand against the real headers, with no metadata, no docs and
 * no import tree: what `safecall inspect` shows of a library that only exports functions. */
#include <tvm/ffi/c_api.h>

TVM_FFI_DLL_EXPORT int __tvm_ffi_plain_answer(void* self, const TVMFFIAny* args,
                                              int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)args;
  if (num_args != 0) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "plain_answer takes no arguments");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = 42;
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_plain_nothing(void* self, const TVMFFIAny* args,
                                               int32_t num_args, TVMFFIAny* result) {
  (void)self;
  (void)args;
  (void)num_args;
  (void)result;
  return 0;
}
