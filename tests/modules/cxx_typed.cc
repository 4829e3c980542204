// A C++ library built against the real TVM-FFI headers with TVM_FFI_DLL_EXPORT_TYPED_FUNC,
// loaded by tests/modules_cross.rs under safecall-runtime's module loader.
#include <tvm/ffi/tvm_ffi.h>

#include <string>

namespace ffi = tvm::ffi;

static int AddTwo(int x) {
  if (x < 0) TVM_FFI_THROW(ValueError) << "add_two: " << x << " is negative";
  return x + 2;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_two, AddTwo);
TVM_FFI_DLL_EXPORT_TYPED_FUNC_DOC(add_two, "x + 2; a ValueError for a negative x.");

// Returns a string the library allocates itself (its deleter lives in this library).
static ffi::String Greet(ffi::String who) { return ffi::String("hello, " + std::string(who)); }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(greet, Greet);

// Calls back into the caller; errors of the callback propagate as C++ exceptions and come
// out of this function as errors again.
static int64_t ApplyPlusOne(ffi::Function f, int64_t x) { return f(x).cast<int64_t>() + 1; }
TVM_FFI_DLL_EXPORT_TYPED_FUNC(apply_plus_one, ApplyPlusOne);

// Looks up a global function by name and calls it.
static int64_t CallGlobal(ffi::String name, int64_t x) {
  return ffi::Function::GetGlobalRequired(name)(x).cast<int64_t>();
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(call_global, CallGlobal);

// Sums a 1-d float32 tensor.
static double SumTensor(ffi::TensorView t) {
  TVM_FFI_ICHECK_EQ(t.ndim(), 1);
  const float* data = static_cast<const float*>(t.data_ptr());
  double sum = 0;
  for (int64_t i = 0; i < t.size(0); ++i) sum += data[i];
  return sum;
}
TVM_FFI_DLL_EXPORT_TYPED_FUNC(sum_tensor, SumTensor);
