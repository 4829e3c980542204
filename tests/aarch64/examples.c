/* The examples driver of tests/aarch64.rs. It loads the example libraries (the .scir files of
 * examples/ir and the IR of the example programs, built into the directory argv[1]) the way a
 * TVM-FFI user does, through `ffi.ModuleLoadFromFile` and `ffi.ModuleGetFunction` of the real
 * libtvm_ffi. Then it does what the example programs do: calls with Tensor objects, global
 * functions, callbacks, loaders of imported modules, a stand-in kernel launch function and a
 * stream. It prints what happened; the aarch64 run must print what the x86-64 run does. */
#include "ffi_driver.h"

static const char* dir;

static TVMFFIAny view(TVMFFIObjectHandle obj, int32_t type_index) {
  return object_value(NULL, type_index, obj);
}

static TVMFFIAny str(const char* s) { return text(NULL, 0, s, strlen(s)); }

/* Takes the raised error and prints `WHAT -> KIND: MESSAGE` (the message as it is). */
static void print_error(const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (!err) die("no error was raised");
  const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)((const char*)err + sizeof(TVMFFIObject));
  printf("%s -> %.*s: %.*s\n", what, (int)cell->kind.size, cell->kind.data,
         (int)cell->message.size, cell->message.data);
  TVMFFIObjectDecRef(err);
}

/* The module of `<dir>/<name>.so`, or NULL after printing why it did not load. */
static TVMFFIObjectHandle load(const char* name) {
  TVMFFIObjectHandle module = load_module(dir, name);
  if (!module) {
    char what[256];
    snprintf(what, sizeof what, "loading %s.so", name);
    print_error(what);
  }
  return module;
}

/* The function `name` of a module, or exits. */
static TVMFFIObjectHandle function_of(TVMFFIObjectHandle module, const char* name) {
  TVMFFIObjectHandle f = module_function(module, name);
  if (!f) die(name);
  return f;
}

/* Calls `f`; on success returns 0 with `result` owned, else prints `WHAT -> KIND: MESSAGE`. */
static int call(const char* what, TVMFFIObjectHandle f, TVMFFIAny* args, int32_t n,
                TVMFFIAny* result) {
  memset(result, 0, sizeof *result);
  int rc = TVMFFIFunctionCall(f, args, n, result);
  if (rc != 0) print_error(what);
  return rc;
}

/* A Tensor object of `n` elements over host memory (float32 `values`, or zeros) that says
 * it is on `device_type`:`device_id`; `fake` (non-zero) is a data address never read. */
typedef struct {
  TVMFFIObjectHandle obj;
  TensorBox* box;
} Tensor;

static Tensor tensor_of(uint8_t code, uint8_t bits, int32_t ndim, const int64_t* shape,
                        const int64_t* strides, int32_t device_type, int32_t device_id,
                        uint64_t fake, const float* values) {
  int64_t count = 1;
  for (int32_t i = 0; i < ndim; ++i) count *= shape[i];
  size_t len = fake ? 0 : (size_t)count * bits / 8;
  unsigned char* init = calloc(1, len + 1);
  if (values) memcpy(init, values, len);
  Tensor t;
  t.box = tensor_box(fake ? 2 : 0, 0, init, len, fake, ndim, shape, strides, code, bits, 1,
                     device_type, device_id, 0);
  free(init);
  if (TVMFFITensorFromDLPack(&t.box->managed, 0, 0, &t.obj) != 0) die("TVMFFITensorFromDLPack");
  return t;
}

static Tensor cpu_f32(int64_t n, const float* values) {
  return tensor_of(kDLFloat, 32, 1, &n, NULL, kDLCPU, 0, 0, values);
}

static void print_f32(const char* name, const Tensor* t) {
  const float* data = t->box->managed.dl_tensor.data;
  printf("%s = [", name);
  for (int64_t i = 0; i < t->box->managed.dl_tensor.shape[0]; ++i)
    printf(i ? ", %.1f" : "%.1f", data[i]);
  puts("]");
}

static void drop(TVMFFIObjectHandle obj) {
  if (obj) TVMFFIObjectDecRef(obj);
}

/* --- what the libraries call back ------------------------------------------------------ */

/* `extern fn matmul_kernel_launch` of launcher.scir: records the launch; refuses grids
 * taller than 8 blocks by raising an error and returning non-zero, as examples/launcher.rs. */
static int launches;
static void* launched_data[4];
int matmul_kernel_launch(void* a, void* b, void* bias, void* c, int64_t m, int64_t n, int64_t k,
                         int32_t grid_x, int32_t grid_y, void* stream) {
  if (grid_y > 8) {
    char message[128];
    snprintf(message, sizeof message, "matmul_kernel_launch: grid (%d, %d) exceeds 8 blocks in y",
             grid_x, grid_y);
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", message);
    return -1;
  }
  ++launches;
  launched_data[0] = a, launched_data[1] = b, launched_data[2] = bias, launched_data[3] = c;
  printf("launched: m = %lld, n = %lld, k = %lld, grid = (%d, %d), stream = %p\n", (long long)m,
         (long long)n, (long long)k, grid_x, grid_y, stream);
  return 0;
}

/* `extern fn fake_launch` of the jit example's module: doubles the data, as examples/jit.rs. */
int fake_launch(float* data, int64_t n, int32_t grid) {
  for (int64_t i = 0; i < n; ++i) data[i] *= 2.0f;
  printf("  kernel launched: n = %lld, grid = %d\n", (long long)n, grid);
  return 0;
}

/* `extern fn consume` of all_params.scir. */
int32_t consume(int8_t a, int16_t b, int32_t c, int64_t d, uint8_t e, uint16_t f, uint32_t g,
                uint64_t h, _Bool flag, float x32, double x64, void* p) {
  printf("  consume(%d, %d, %d, %lld, %u, %u, %u, %llu, %d, %.2f, %.2f, %p)\n", a, b, c,
         (long long)d, e, f, g, (unsigned long long)h, flag, x32, x64, p);
  return 0;
}

/* `example.log` of calls.scir. */
static int log_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self, (void)result;
  printf("  example.log: scaling %lld elements\n", n > 0 ? (long long)args[0].v_int64 : -1LL);
  return 0;
}

/* A callback that prints what it was given and returns its argument count. */
static int show_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  printf("  callback got %d arguments:", n);
  for (int32_t i = 0; i < n; ++i) {
    putchar(' ');
    if (args[i].type_index == kTVMFFIOpaquePtr) printf("ptr %p", args[i].v_ptr);
    else render(NULL, &args[i]);
  }
  putchar('\n');
  *result = pod(kTVMFFIInt, (uint64_t)n);
  return 0;
}

/* Loaders of imported modules (`ffi.Module.load_from_bytes.KIND`): each prints the payload it
 * got and returns the module of the library named by `self`. */
static int loader(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  const char* kind_and_library = self;
  const char* library = kind_and_library + strlen(kind_and_library) + 1;
  TVMFFIByteArray payload = {"", 0};
  if (n == 1 && args[0].type_index == kTVMFFISmallBytes) {
    payload.data = args[0].v_bytes;
    payload.size = args[0].small_str_len;
  } else if (n == 1 && args[0].type_index == kTVMFFIBytes) {
    payload = *object_bytes(args[0].v_obj);
  }
  printf("  loader %s: payload b\"", kind_and_library);
  for (size_t i = 0; i < payload.size; ++i) {
    unsigned char b = (unsigned char)payload.data[i];
    if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') putchar(b);
    else printf("\\x%02x", b);
  }
  printf("\" -> %s.so\n", library);
  TVMFFIObjectHandle module = load(library);
  if (!module) {
    TVMFFIErrorSetRaisedFromCStr("RuntimeError", "the loader's library did not load");
    return -1;
  }
  *result = view(module, kTVMFFIModule);
  return 0;
}

static void register_loader(const char* kind, const char* library) {
  static char names[4][64];
  static int count;
  char* self = names[count++];
  snprintf(self, 64, "%s%c%s", kind, 0, library);
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(self, loader, NULL, &f) != 0) die("TVMFFIFunctionCreate");
  char global_name[128];
  snprintf(global_name, sizeof global_name, "ffi.Module.load_from_bytes.%s", kind);
  set_global(global_name, f);
}

static TVMFFIObjectHandle c_function(TVMFFISafeCallType f) {
  TVMFFIObjectHandle h = NULL;
  if (TVMFFIFunctionCreate(NULL, f, NULL, &h) != 0) die("TVMFFIFunctionCreate");
  return h;
}

/* --- the examples --------------------------------------------------------------------- */

/* examples/add_one.rs: y = x + 1, and a shape mismatch. */
static void add_one(void) {
  TVMFFIObjectHandle m = load("add_one");
  TVMFFIObjectHandle f = function_of(m, "add_one");
  float values[5] = {0, 1, 2, 3, 4};
  Tensor x = cpu_f32(5, values), y = cpu_f32(5, NULL), short_y = cpu_f32(3, NULL);
  TVMFFIAny args[2] = {view(x.obj, kTVMFFITensor), view(y.obj, kTVMFFITensor)}, result;
  if (call("add_one(x, y)", f, args, 2, &result) == 0) {
    print_f32("x", &x);
    print_f32("y", &y);
  }
  args[1] = view(short_y.obj, kTVMFFITensor);
  if (call("add_one(x, short)", f, args, 2, &result) == 0) puts("add_one(x, short) returned");
  drop(x.obj), drop(y.obj), drop(short_y.obj), drop(f), drop(m);
}

/* examples/ir/kernels.scir: x *= 3 in place. */
static void kernels(void) {
  TVMFFIObjectHandle m = load("kernels");
  TVMFFIObjectHandle f = function_of(m, "scale_in_place");
  float values[4] = {1, 2, 3, 4};
  Tensor x = cpu_f32(4, values);
  TVMFFIAny arg = view(x.obj, kTVMFFITensor), result;
  if (call("scale_in_place(x)", f, &arg, 1, &result) == 0) {
    printf("scale_in_place(x) returned %lld; ", (long long)result.v_int64);
    print_f32("x", &x);
  }
  drop(x.obj), drop(f), drop(m);
}

/* examples/calls.rs: a global function and a function of an imported module, whose loader
 * must be registered before the library loads. */
static void calls(void) {
  set_global("example.log", c_function(log_callback));
  TVMFFIObjectHandle m = load("calls");
  if (m) die("calls.so loaded without its loader");
  register_loader("example_kernels", "kernels");
  m = load("calls");
  if (!m) return;
  TVMFFIObjectHandle f = function_of(m, "scale");
  float values[4] = {1, 2, 3, 4};
  Tensor x = cpu_f32(4, values);
  TVMFFIAny arg = view(x.obj, kTVMFFITensor), result;
  if (call("scale(x)", f, &arg, 1, &result) == 0) {
    printf("scale(x) returned %lld; ", (long long)result.v_int64);
    print_f32("x", &x);
  }
  int64_t four = 4;
  Tensor wrong = tensor_of(kDLFloat, 64, 1, &four, NULL, kDLCPU, 0, 0, NULL);
  arg = view(wrong.obj, kTVMFFITensor);
  if (call("scale(float64 tensor)", f, &arg, 1, &result) == 0) puts("scale(float64) returned");
  drop(wrong.obj), drop(x.obj), drop(f), drop(m);
}

/* examples/launcher.rs: four CUDA tensors (addresses never read), the grid from the shapes,
 * the stream set for cuda:0, and the launch function's own error. */
static int matmul(TVMFFIObjectHandle f, const char* what, int64_t m, int64_t n, int64_t k,
                  int32_t c_device_type, int32_t c_device_id, void** data) {
  int64_t a_shape[2] = {m, k}, b_shape[2] = {k, n}, bias_shape[1] = {n}, c_shape[2] = {m, n};
  Tensor t[4] = {
      tensor_of(kDLFloat, 16, 2, a_shape, NULL, kDLCUDA, 0, 0x100000, NULL),
      tensor_of(kDLFloat, 16, 2, b_shape, NULL, kDLCUDA, 0, 0x200000, NULL),
      tensor_of(kDLFloat, 32, 1, bias_shape, NULL, kDLCUDA, 0, 0x300000, NULL),
      tensor_of(kDLFloat, 32, 2, c_shape, NULL, c_device_type, c_device_id, 0x400000, NULL),
  };
  TVMFFIAny args[4], result;
  for (int i = 0; i < 4; ++i) {
    args[i] = view(t[i].obj, kTVMFFITensor);
    if (data) data[i] = t[i].box->managed.dl_tensor.data;
  }
  int rc = call(what, f, args, 4, &result);
  for (int i = 0; i < 4; ++i) drop(t[i].obj);
  return rc;
}

static void launcher(void) {
  TVMFFIObjectHandle m = load("launcher");
  TVMFFIObjectHandle f = function_of(m, "matmul");
  if (TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x5eed, NULL) != 0) die("TVMFFIEnvSetStream");
  void* data[4];
  if (matmul(f, "matmul", 256, 384, 64, kDLCUDA, 0, data) == 0)
    printf("the launcher got the tensors' data pointers: %s\n",
           memcmp(data, launched_data, sizeof data) == 0 ? "true" : "false");
  int before = launches;
  matmul(f, "k = 60 (not a multiple of 8)", 256, 384, 60, kDLCUDA, 0, NULL);
  matmul(f, "c on the CPU", 256, 384, 64, kDLCPU, 0, NULL);
  matmul(f, "c on another GPU", 256, 384, 64, kDLCUDA, 1, NULL);
  matmul(f, "m = 2048", 2048, 384, 64, kDLCUDA, 0, NULL);
  printf("launches recorded after the rejected calls: %d\n", launches - before);
  drop(f), drop(m);
}

/* examples/jit.rs's module, built ahead of time: the extern launch function, a wrong dtype,
 * and the function called again through the global registry after the module is dropped. */
static void jit_demo(void) {
  TVMFFIObjectHandle m = load("jit_demo");
  TVMFFIObjectHandle f = function_of(m, "scale");
  float values[3] = {1, 2, 3};
  Tensor x = cpu_f32(3, values);
  int64_t three = 3;
  Tensor wrong = tensor_of(kDLInt, 32, 1, &three, NULL, kDLCPU, 0, 0, NULL);
  TVMFFIAny arg = view(x.obj, kTVMFFITensor), result;
  if (call("scale(x)", f, &arg, 1, &result) == 0) {
    printf("scale(x) returned %lld; ", (long long)result.v_int64);
    print_f32("x", &x);
  }
  arg = view(wrong.obj, kTVMFFITensor);
  if (call("scale(int32 tensor)", f, &arg, 1, &result) == 0) puts("scale(int32) returned");
  set_global("jit_demo.scale", f);
  drop(m);
  TVMFFIObjectHandle looked_up = global("jit_demo.scale");
  arg = view(x.obj, kTVMFFITensor);
  if (call("jit_demo.scale(x)", looked_up, &arg, 1, &result) == 0) {
    fputs("through the global registry, after dropping the module: ", stdout);
    print_f32("x", &x);
  }
  drop(looked_up), drop(wrong.obj), drop(x.obj);
}

/* examples/ir/call_global.scir: a global function by name, and callbacks. */
static void call_global_example(void) {
  set_global("testing.echo", callback("echo"));
  TVMFFIObjectHandle m = load("call_global");
  TVMFFIObjectHandle echo_positive = function_of(m, "echo_positive");
  TVMFFIAny arg = pod(kTVMFFIInt, 5), result;
  if (call("echo_positive(5)", echo_positive, &arg, 1, &result) == 0) {
    fputs("echo_positive(5) returned ", stdout);
    render(NULL, &result);
    putchar('\n');
  }
  arg = pod(kTVMFFIInt, (uint64_t)-2);
  if (call("echo_positive(-2)", echo_positive, &arg, 1, &result) == 0) puts("returned");
  TVMFFIObjectHandle apply = function_of(m, "apply");
  float values[2] = {1, 2};
  Tensor t = cpu_f32(2, values);
  double scale = 1.5;
  uint64_t bits;
  memcpy(&bits, &scale, sizeof bits);
  const char* names[3] = {"show", "echo", "fail"};
  for (int i = 0; i < 3; ++i) {
    TVMFFIObjectHandle cb = i == 0 ? c_function(show_callback) : callback(names[i]);
    TVMFFIAny args[3] = {view(cb, kTVMFFIFunction), view(t.obj, kTVMFFITensor),
                         pod(kTVMFFIFloat, bits)};
    char what[64];
    snprintf(what, sizeof what, "apply(%s, t, 1.5)", names[i]);
    if (call(what, apply, args, 3, &result) == 0) {
      printf("%s returned ", what);
      if (result.type_index == kTVMFFITensor && (void*)result.v_obj == t.obj) fputs("t", stdout);
      else render(NULL, &result);
      putchar('\n');
      if (result.type_index >= kTVMFFIStaticObjectBegin) drop(result.v_obj);
    }
    drop(cb);
  }
  drop(t.obj), drop(apply), drop(echo_positive), drop(m);
}

/* examples/ir/imports.scir: two imported modules (a `cuda` module importing a helper), both
 * rebuilt by loaders; `add_bias` is found in the imports. */
static void imports(void) {
  register_loader("test_helpers", "kernels");
  register_loader("cuda", "bias_kernels");
  TVMFFIObjectHandle m = load("imports");
  if (!m) return;
  TVMFFIObjectHandle f = function_of(m, "forward");
  int64_t n = 5;
  Tensor x = tensor_of(kDLFloat, 32, 1, &n, NULL, kDLCUDA, 0, 0x100000, NULL);
  Tensor cpu = cpu_f32(5, NULL);
  float bias = 0.5f;
  double bias64 = bias;
  uint64_t bits;
  memcpy(&bits, &bias64, sizeof bits);
  TVMFFIAny args[2] = {view(x.obj, kTVMFFITensor), pod(kTVMFFIFloat, bits)}, result;
  if (call("forward(x, 0.5)", f, args, 2, &result) == 0) {
    fputs("forward(x, 0.5) returned ", stdout);
    render(NULL, &result);
    putchar('\n');
  }
  args[0] = view(cpu.obj, kTVMFFITensor);
  if (call("forward(cpu tensor, 0.5)", f, args, 2, &result) == 0) puts("returned");
  drop(cpu.obj), drop(x.obj), drop(f), drop(m);
}

/* examples/ir/all_params.scir: loads (with `consume` from this program) and checks its
 * argument count. */
static void all_params(void) {
  TVMFFIObjectHandle m = load("all_params");
  TVMFFIObjectHandle f = function_of(m, "everything");
  TVMFFIAny result;
  if (call("everything()", f, NULL, 0, &result) == 0) puts("everything() returned");
  drop(f), drop(m);
}

/* examples/ir/launcher4d.scir: four strided 4-D CUDA tensors (addresses never read), no
 * mask, the specialization constant, and the kernel as a callback. */
static void attention(TVMFFIObjectHandle f, const char* what, int64_t d) {
  int64_t q_shape[4] = {2, 4, 256, d}, q_strides[4] = {4 * 256 * d, 256 * d, d, 1};
  int64_t k_shape[4] = {2, 4, 128, d}, k_strides[4] = {4 * 128 * d, 128 * d, d, 1};
  Tensor t[4] = {
      tensor_of(kDLFloat, 16, 4, q_shape, q_strides, kDLCUDA, 0, 0x100000, NULL),
      tensor_of(kDLFloat, 16, 4, k_shape, k_strides, kDLCUDA, 0, 0x200000, NULL),
      tensor_of(kDLFloat, 16, 4, k_shape, k_strides, kDLCUDA, 0, 0x300000, NULL),
      tensor_of(kDLFloat, 16, 4, q_shape, q_strides, kDLCUDA, 0, 0x400000, NULL),
  };
  TVMFFIObjectHandle kernel = c_function(show_callback);
  TVMFFIAny args[7], result;
  for (int i = 0; i < 4; ++i) args[i] = view(t[i].obj, kTVMFFITensor);
  args[4] = pod(kTVMFFINone, 0);
  args[5] = pod(kTVMFFIInt, 64);
  args[6] = view(kernel, kTVMFFIFunction);
  if (call(what, f, args, 7, &result) == 0) printf("%s returned\n", what);
  for (int i = 0; i < 4; ++i) drop(t[i].obj);
  drop(kernel);
}

static void launcher4d(void) {
  TVMFFIObjectHandle m = load("launcher4d");
  TVMFFIObjectHandle f = function_of(m, "attention");
  attention(f, "attention(d = 64)", 64);
  attention(f, "attention(d = 32)", 32);
  drop(f), drop(m);
}

/* examples/ir/cuda_add_one.scir: loads; without a CUDA driver the launch reports it (the test
 * points SAFECALL_LIBCUDA_PATH at a file that does not exist, so that the message does not
 * depend on what this machine has). */
static void cuda_add_one(void) {
  TVMFFIObjectHandle m = load("cuda_add_one");
  TVMFFIObjectHandle f = function_of(m, "empty");
  int64_t n = 4;
  Tensor x = tensor_of(kDLFloat, 32, 1, &n, NULL, kDLCUDA, 0, 0x100000, NULL);
  TVMFFIAny arg = view(x.obj, kTVMFFITensor), result;
  if (call("empty(x)", f, &arg, 1, &result) == 0) puts("empty(x) returned");
  drop(x.obj), drop(f), drop(m);
}

int main(int argc, char** argv) {
  if (argc != 2) die("usage: examples DIR");
  dir = argv[1];
  setvbuf(stdout, NULL, _IONBF, 0);
  puts("== add_one");
  add_one();
  puts("== kernels");
  kernels();
  puts("== calls");
  calls();
  puts("== launcher");
  launcher();
  puts("== jit_demo");
  jit_demo();
  puts("== call_global");
  call_global_example();
  puts("== imports");
  imports();
  puts("== all_params");
  all_params();
  puts("== launcher4d");
  launcher4d();
  puts("== cuda_add_one");
  cuda_add_one();
  return 0;
}
