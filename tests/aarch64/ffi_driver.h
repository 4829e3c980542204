/* The C side of tests/aarch64.rs: argument values made through the real libtvm_ffi C API,
 * calls of safe-call entries with the caller-visible parts of the contract checked, and one
 * printed line per outcome. Included by the generated check-suite driver and by examples.c;
 * compiled for aarch64 (run under qemu-aarch64) and for x86-64 (run natively), each against
 * that architecture's libtvm_ffi.so, so that the two runs can be compared line for line. */
/* Each driver uses part of these helpers. */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <ctype.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#define MAX_PASSED 32
#define MAX_HELD 64
#define MAX_DIMS 8

/* A tensor's memory: the DLPack header (the DLTensor a DLTensor* argument points at), its
 * shape and strides, and the data buffer. A Tensor object owns it through the deleter. */
typedef struct {
  DLManagedTensor managed;
  int64_t shape[MAX_DIMS];
  int64_t strides[MAX_DIMS];
  unsigned char* buffer;
} TensorBox;

/* A tensor passed to a call: where (a dotted argument path), and as what. */
typedef struct {
  char path[32];
  TensorBox* box;
  TVMFFIObjectHandle object; /* the Tensor object, or NULL for a DLTensor* or an address */
} Passed;

/* What the arguments of one call hold: object references, memory, passed tensors. */
typedef struct {
  Passed tensors[MAX_PASSED];
  int ntensors;
  TVMFFIObjectHandle held[MAX_HELD];
  int nheld;
  void* blocks[MAX_HELD];
  int nblocks;
} Call;

static void die(const char* what) {
  printf("driver error: %s\n", what);
  exit(2);
}

static void hold(Call* c, TVMFFIObjectHandle obj) {
  if (c->nheld == MAX_HELD) die("too many objects");
  c->held[c->nheld++] = obj;
}

/* Memory freed when the call's arguments are given back. */
static void* keep(Call* c, void* p) {
  if (c->nblocks == MAX_HELD) die("too many blocks");
  c->blocks[c->nblocks++] = p;
  return p;
}

static void* block(Call* c, size_t size) {
  void* p = calloc(1, size);
  if (!p) die("out of memory");
  return keep(c, p);
}

static TVMFFIAny pod(int32_t type_index, uint64_t bits) {
  TVMFFIAny v;
  memset(&v, 0, sizeof v);
  v.type_index = type_index;
  v.v_uint64 = bits;
  return v;
}

static TVMFFIAny object_value(Call* c, int32_t type_index, TVMFFIObjectHandle obj) {
  TVMFFIAny v = pod(type_index, 0);
  v.v_obj = (TVMFFIObject*)obj;
  if (c) hold(c, obj);
  return v;
}

static uint32_t strong_count(TVMFFIObjectHandle obj) {
  return (uint32_t)(((TVMFFIObject*)obj)->combined_ref_count & 0xffffffffu);
}

static TVMFFIByteArray bytes_of(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

/* The global function `name` (a new reference), or exits. */
static TVMFFIObjectHandle global(const char* name) {
  TVMFFIByteArray b = bytes_of(name);
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionGetGlobal(&b, &f) != 0 || !f) die(name);
  return f;
}

/* Calls the global `name`; its result is an owned value. Returns the return code. */
static int call_global(const char* name, TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  TVMFFIObjectHandle f = global(name);
  memset(result, 0, sizeof *result);
  int rc = TVMFFIFunctionCall(f, args, n, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

/* --- argument values ------------------------------------------------------------------ */

static TVMFFIAny raw_str(const char* s) {
  TVMFFIAny v = pod(kTVMFFIRawStr, 0);
  v.v_c_str = s;
  return v;
}

static TVMFFIAny byte_array(Call* c, const char* data, size_t len) {
  TVMFFIByteArray* b = block(c, sizeof *b);
  char* copy = block(c, len + 1);
  memcpy(copy, data, len);
  b->data = copy;
  b->size = len;
  TVMFFIAny v = pod(kTVMFFIByteArrayPtr, 0);
  v.v_ptr = b;
  return v;
}

/* An int from its 64-bit words, least significant first (a BigInt object beyond int64). */
static TVMFFIAny big_int(Call* c, size_t n, const int64_t* words) {
  TVMFFIAny v = pod(kTVMFFINone, 0);
  TVMFFIByteArray b = {(const char*)words, n * sizeof(int64_t)};
  if (TVMFFIBigIntFromByteArray(&b, &v) != 0) die("cannot make a BigInt");
  if (c && v.type_index >= kTVMFFIStaticObjectBegin) hold(c, v.v_obj);
  return v;
}

/* Up to 7 bytes on the stack (SmallStr/SmallBytes), else a String/Bytes object. */
static TVMFFIAny text(Call* c, int is_bytes, const char* data, size_t len) {
  TVMFFIAny v = pod(kTVMFFINone, 0);
  if (len <= 7) {
    v.type_index = is_bytes ? kTVMFFISmallBytes : kTVMFFISmallStr;
    v.small_str_len = (uint32_t)len;
    memcpy(v.v_bytes, data, len);
    return v;
  }
  TVMFFIByteArray b = {data, len};
  if ((is_bytes ? TVMFFIBytesFromByteArray(&b, &v) : TVMFFIStringFromByteArray(&b, &v)) != 0)
    die("cannot make a string object");
  if (c) hold(c, v.v_obj);
  return v;
}

static int echo_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self;
  if (n == 0) return 0; /* result stays None */
  return TVMFFIAnyViewToOwnedAny(&args[0], result);
}

static int fail_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* result) {
  (void)self, (void)args, (void)n, (void)result;
  TVMFFIErrorSetRaisedFromCStr("ValueError", "callback failed");
  return -1;
}

/* A Function object: `echo` returns its first argument, `fail` raises. */
static TVMFFIObjectHandle callback(const char* name) {
  TVMFFIObjectHandle f = NULL;
  TVMFFISafeCallType call = strcmp(name, "echo") == 0 ? echo_callback : fail_callback;
  if (strcmp(name, "echo") != 0 && strcmp(name, "fail") != 0) die(name);
  if (TVMFFIFunctionCreate(NULL, call, NULL, &f) != 0) die("cannot make a function");
  return f;
}

static TVMFFIAny func(Call* c, const char* name) {
  return object_value(c, kTVMFFIFunction, callback(name));
}

static void set_global(const char* name, TVMFFIObjectHandle f) {
  TVMFFIByteArray b = bytes_of(name);
  if (TVMFFIFunctionSetGlobal(&b, f, 1) != 0) die(name);
  TVMFFIObjectDecRef(f);
}

/* A container made by the runtime's own constructor (`ffi.Shape`, `ffi.Array`, `ffi.List`). */
static TVMFFIAny container(Call* c, const char* constructor, TVMFFIAny* items, int32_t n) {
  TVMFFIAny v;
  if (call_global(constructor, items, n, &v) != 0) die(constructor);
  if (v.type_index >= kTVMFFIStaticObjectBegin) hold(c, v.v_obj);
  return v;
}

static TVMFFIAny shape(Call* c, int32_t n, const int64_t* dims) {
  TVMFFIAny items[MAX_DIMS + 1];
  for (int32_t i = 0; i < n; ++i) items[i] = pod(kTVMFFIInt, (uint64_t)dims[i]);
  return container(c, "ffi.Shape", items, n);
}

static void tensor_deleter(DLManagedTensor* managed) {
  TensorBox* box = (TensorBox*)managed;
  free(box->buffer);
  free(box);
}

/* A tensor's memory. mode 0: a fresh 64-byte aligned buffer (plus `misalign`) holding `init`
 * (`len` bytes), 1: NULL data, 2: the address `fake`. `shape` has `ndim` entries, `strides`
 * too or is NULL. */
static TensorBox* tensor_box(int mode, size_t misalign, const unsigned char* init, size_t len,
                             uint64_t fake, int32_t ndim, const int64_t* shape,
                             const int64_t* strides, uint8_t code, uint8_t bits,
                             uint16_t lanes, int32_t device_type, int32_t device_id,
                             uint64_t byte_offset) {
  if (ndim > MAX_DIMS) die("too many dimensions");
  TensorBox* box = calloc(1, sizeof *box);
  if (!box) die("out of memory");
  DLTensor* t = &box->managed.dl_tensor;
  if (mode == 0) {
    size_t size = (misalign + len + 64 + 63) / 64 * 64;
    box->buffer = aligned_alloc(64, size);
    if (!box->buffer) die("out of memory");
    memset(box->buffer, 0, size);
    memcpy(box->buffer + misalign, init, len);
    t->data = box->buffer + misalign;
  } else if (mode == 2) {
    t->data = (void*)(uintptr_t)fake;
  }
  memcpy(box->shape, shape, sizeof(int64_t) * (size_t)ndim);
  t->shape = box->shape;
  if (strides) {
    memcpy(box->strides, strides, sizeof(int64_t) * (size_t)ndim);
    t->strides = box->strides;
  }
  t->device.device_type = (DLDeviceType)device_type;
  t->device.device_id = device_id;
  t->ndim = ndim;
  t->dtype.code = code;
  t->dtype.bits = bits;
  t->dtype.lanes = lanes;
  t->byte_offset = byte_offset;
  box->managed.manager_ctx = box;
  box->managed.deleter = tensor_deleter;
  return box;
}

static Passed* pass(Call* c, const char* path, TensorBox* box, TVMFFIObjectHandle object) {
  if (c->ntensors == MAX_PASSED) die("too many tensors");
  Passed* p = &c->tensors[c->ntensors++];
  snprintf(p->path, sizeof p->path, "%s", path);
  p->box = box;
  p->object = object;
  return p;
}

/* A Tensor object (the runtime takes the DLPack tensor over) or a DLTensor*. */
static TVMFFIAny tensor(Call* c, const char* path, int as_object, TensorBox* box) {
  if (as_object) {
    TVMFFIObjectHandle obj = NULL;
    if (TVMFFITensorFromDLPack(&box->managed, 0, 0, &obj) != 0) die("TVMFFITensorFromDLPack");
    pass(c, path, box, obj);
    return object_value(c, kTVMFFITensor, obj);
  }
  pass(c, path, box, NULL);
  keep(c, box->buffer);
  keep(c, box);
  TVMFFIAny v = pod(kTVMFFIDLTensorPtr, 0);
  v.v_ptr = &box->managed.dl_tensor;
  return v;
}

static uint64_t first_element(const TensorBox* box) {
  return (uint64_t)(uintptr_t)box->managed.dl_tensor.data + box->managed.dl_tensor.byte_offset;
}

/* The address of a tensor's first element, as an Int or an OpaquePtr. */
static TVMFFIAny data_ptr(Call* c, const char* path, int as_int, TensorBox* box) {
  pass(c, path, box, NULL);
  keep(c, box->buffer);
  keep(c, box);
  return pod(as_int ? kTVMFFIInt : kTVMFFIOpaquePtr, first_element(box));
}

/* --- outcomes ------------------------------------------------------------------------- */

static void print_escaped(const char* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\n') fputs("\\n", stdout);
    else if (data[i] == '\\') fputs("\\\\", stdout);
    else putchar(data[i]);
  }
}

static const TVMFFIByteArray* object_bytes(TVMFFIObjectHandle obj) {
  return (const TVMFFIByteArray*)((const char*)obj + sizeof(TVMFFIObject));
}

static const char* passed_path(const Call* c, const TVMFFIAny* v) {
  for (int i = 0; c && i < c->ntensors; ++i) {
    const Passed* p = &c->tensors[i];
    if (v->type_index == kTVMFFITensor && p->object && (void*)v->v_obj == p->object)
      return p->path;
    if (v->type_index == kTVMFFIDLTensorPtr && !p->object &&
        v->v_ptr == &p->box->managed.dl_tensor)
      return p->path;
  }
  return NULL;
}

static double element(const DLTensor* t, int64_t offset);
static int readable(DLDataType d);

/* A tensor the function allocated: `new_tensor shape [..] dtype C/B/L device T:I`, then
 * `values [..]` (compact, in order) when the driver reads its element type. */
static void render_new_tensor(const DLTensor* t) {
  int64_t numel = 1;
  fputs("new_tensor shape [", stdout);
  for (int k = 0; k < t->ndim; ++k) {
    printf(k ? ", %lld" : "%lld", (long long)t->shape[k]);
    numel *= t->shape[k];
  }
  printf("] dtype %u/%u/%u device %d:%d", t->dtype.code, t->dtype.bits, t->dtype.lanes,
         t->device.device_type, t->device.device_id);
  if (!readable(t->dtype)) return;
  fputs(" values [", stdout);
  for (int64_t i = 0; i < numel; ++i) printf(i ? ", %g" : "%g", element(t, i));
  putchar(']');
}

/* Prints a value in the form tests/aarch64/cases.rs renders the expected one. */
static void render(const Call* c, const TVMFFIAny* v) {
  const char* path;
  double d;
  switch (v->type_index) {
    case kTVMFFINone: fputs("None", stdout); return;
    case kTVMFFIInt: printf("int %lld", (long long)v->v_int64); return;
    case kTVMFFIBool: printf("bool %lld", (long long)v->v_int64); return;
    case kTVMFFIFloat:
      memcpy(&d, &v->v_uint64, sizeof d);
      if (d != d) fputs("float nan", stdout);
      else printf("float %016llx", (unsigned long long)v->v_uint64);
      return;
    case kTVMFFIOpaquePtr: printf("ptr %llx", (unsigned long long)v->v_uint64); return;
    case kTVMFFIDataType: printf("dtype %016llx", (unsigned long long)v->v_uint64); return;
    case kTVMFFIDevice: printf("device %016llx", (unsigned long long)v->v_uint64); return;
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      fputs(v->type_index == kTVMFFISmallStr ? "str " : "bytes ", stdout);
      print_escaped(v->v_bytes, v->small_str_len);
      return;
    case kTVMFFIStr:
    case kTVMFFIBytes:
      fputs(v->type_index == kTVMFFIStr ? "str " : "bytes ", stdout);
      print_escaped(object_bytes(v->v_obj)->data, object_bytes(v->v_obj)->size);
      return;
    case kTVMFFIRawStr:
      fputs("raw_str ", stdout);
      print_escaped(v->v_c_str, strlen(v->v_c_str));
      return;
    case kTVMFFIFunction: fputs("func", stdout); return;
    case kTVMFFIBigInt: {
      /* Its words through the C API, least significant first. */
      TVMFFIByteArray b = TVMFFIBigIntGetContentByteArray(v);
      const int64_t* w = (const int64_t*)b.data;
      fputs("big_int [", stdout);
      for (size_t i = 0; i < b.size / sizeof(int64_t); ++i) printf(i ? ", %lld" : "%lld", (long long)w[i]);
      putchar(']');
      return;
    }
    case kTVMFFIShape: {
      const TVMFFIShapeCell* s =
          (const TVMFFIShapeCell*)((const char*)v->v_obj + sizeof(TVMFFIObject));
      fputs("shape [", stdout);
      for (size_t i = 0; i < s->size; ++i) printf(i ? ", %lld" : "%lld", (long long)s->data[i]);
      putchar(']');
      return;
    }
    case kTVMFFIArray:
    case kTVMFFIList: {
      const TVMFFISeqCell* s =
          (const TVMFFISeqCell*)((const char*)v->v_obj + sizeof(TVMFFIObject));
      fputs("array [", stdout);
      for (int64_t i = 0; i < s->size; ++i) {
        if (i) fputs(", ", stdout);
        render(c, (const TVMFFIAny*)s->data + i);
      }
      putchar(']');
      return;
    }
    case kTVMFFITensor:
    case kTVMFFIDLTensorPtr:
      path = passed_path(c, v);
      if (path) printf("arg %s", path);
      else if (c && v->type_index == kTVMFFITensor)  /* a check-suite call: one it allocated */
        render_new_tensor((const DLTensor*)((const char*)v->v_obj + sizeof(TVMFFIObject)));
      else fputs(v->type_index == kTVMFFITensor ? "tensor" : "dltensor", stdout);
      return;
    default: printf("type %d", v->type_index);
  }
}

/* Prints an error message with each passed tensor's first-element address written back as
 * the `{ptr:PATH}` placeholder of the cases. */
static void print_message(const Call* c, const TVMFFIByteArray* m) {
  size_t i = 0;
  while (i < m->size) {
    int replaced = 0;
    for (int k = 0; c && k < c->ntensors && !replaced; ++k) {
      if (!c->tensors[k].box->buffer) continue;
      char address[32];
      int n = snprintf(address, sizeof address, "0x%llx",
                       (unsigned long long)first_element(c->tensors[k].box));
      size_t end = i + (size_t)n;
      if (end <= m->size && memcmp(m->data + i, address, (size_t)n) == 0 &&
          (end == m->size || !isxdigit((unsigned char)m->data[end]))) {
        printf("{ptr:%s}", c->tensors[k].path);
        i += (size_t)n;
        replaced = 1;
      }
    }
    if (!replaced) {
      print_escaped(m->data + i, 1);
      ++i;
    }
  }
}

/* Takes the raised error and prints `raise KIND: MESSAGE` (the message escaped). */
static void print_raised(const Call* c) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (!err) {
    fputs("returned -1 without raising an error", stdout);
    return;
  }
  const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)((const char*)err + sizeof(TVMFFIObject));
  fputs("raise ", stdout);
  print_escaped(cell->kind.data, cell->kind.size);
  fputs(": ", stdout);
  print_message(c, &cell->message);
  TVMFFIObjectDecRef(err);
}

/* Calls `entry` (the safe-call symbol) or else `function` (a Function object, through
 * TVMFFIFunctionCall) with `result` arriving as None, checks what a caller can see of the
 * safe-call contract (return code 0 or -1, a POD result with zero padding, `result` untouched
 * after an error, every argument reference given back) and prints one line: `ok VALUE` or
 * `raise KIND: MESSAGE`, followed by any contract violation in brackets. */
static void check_call(Call* c, TVMFFISafeCallType entry, TVMFFIObjectHandle function,
                       const TVMFFIAny* args, int32_t n) {
  uint32_t before[MAX_HELD];
  for (int i = 0; i < c->nheld; ++i) before[i] = strong_count(c->held[i]);
  TVMFFIAny result = pod(kTVMFFINone, 0);
  int rc = entry ? entry(NULL, args, n, &result)
                 : TVMFFIFunctionCall(function, (TVMFFIAny*)args, n, &result);
  if (rc == 0) {
    fputs("ok ", stdout);
    render(c, &result);
    if (result.type_index < kTVMFFIStaticObjectBegin && result.type_index != kTVMFFISmallStr &&
        result.type_index != kTVMFFISmallBytes && result.small_str_len != 0)
      printf(" [non-zero padding %x]", result.small_str_len);
    if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
  } else if (rc == -1) {
    print_raised(c);
    if (result.type_index != kTVMFFINone || result.small_str_len != 0 || result.v_uint64 != 0)
      fputs(" [the failed call wrote its result]", stdout);
  } else {
    printf("return code %d", rc);
  }
  for (int i = 0; i < c->nheld; ++i) {
    if (strong_count(c->held[i]) != before[i])
      printf(" [argument object %d: %u references before the call, %u after]", i, before[i],
             strong_count(c->held[i]));
  }
  putchar('\n');
}

/* A call through the library's exported symbol `__tvm_ffi_<fn>`. */
static void call_entry(Call* c, TVMFFISafeCallType entry, const TVMFFIAny* args, int32_t n) {
  if (entry) check_call(c, entry, NULL, args, n);
  else puts("missing entry");
}

/* Reads element values back (in logical row-major order) and prints `after PATH: ok`, or
 * what they are when they differ from `want` (`n` values). */
static int readable(DLDataType d) {
  if (d.lanes != 1) return 0;
  switch (d.code * 1000 + d.bits) {
    case kDLFloat * 1000 + 32: case kDLFloat * 1000 + 64: case kDLInt * 1000 + 8:
    case kDLInt * 1000 + 16: case kDLInt * 1000 + 32: case kDLInt * 1000 + 64:
    case kDLUInt * 1000 + 8: case kDLBool * 1000 + 8: return 1;
    default: return 0;
  }
}

static double element(const DLTensor* t, int64_t offset) {
  const unsigned char* p =
      (const unsigned char*)t->data + t->byte_offset + offset * ((t->dtype.bits + 7) / 8);
  float f;
  double d;
  int64_t x64;
  int32_t x32;
  int16_t x16;
  switch (t->dtype.code * 1000 + t->dtype.bits) {
    case kDLFloat * 1000 + 32: memcpy(&f, p, 4); return f;
    case kDLFloat * 1000 + 64: memcpy(&d, p, 8); return d;
    case kDLInt * 1000 + 8: return (int8_t)*p;
    case kDLInt * 1000 + 16: memcpy(&x16, p, 2); return x16;
    case kDLInt * 1000 + 32: memcpy(&x32, p, 4); return x32;
    case kDLInt * 1000 + 64: memcpy(&x64, p, 8); return (double)x64;
    case kDLUInt * 1000 + 8:
    case kDLBool * 1000 + 8: return *p;
    default: die("an element type the driver does not read"); return 0;
  }
}

static void after(const Call* c, const char* path, int64_t n, const double* want) {
  const Passed* p = NULL;
  for (int i = 0; i < c->ntensors; ++i)
    if (strcmp(c->tensors[i].path, path) == 0) p = &c->tensors[i];
  if (!p) die("no tensor at that path");
  const DLTensor* t = &p->box->managed.dl_tensor;
  int64_t strides[MAX_DIMS], index[MAX_DIMS] = {0}, count = 1;
  for (int k = t->ndim - 1; k >= 0; --k) {
    if (t->strides) strides[k] = t->strides[k];
    else strides[k] = k == t->ndim - 1 ? 1 : strides[k + 1] * t->shape[k + 1];
    count *= t->shape[k];
  }
  double got[4096];
  if (count > 4096) die("too many elements to read back");
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (int k = 0; k < t->ndim; ++k) offset += index[k] * strides[k];
    got[i] = element(t, offset);
    for (int k = t->ndim - 1; k >= 0 && ++index[k] == t->shape[k]; --k) index[k] = 0;
  }
  int same = count == n;
  for (int64_t i = 0; same && i < n; ++i) same = got[i] == want[i];
  printf("after %s: ", path);
  if (same) {
    puts("ok");
    return;
  }
  for (int64_t i = 0; i < count; ++i) printf(i ? " %g" : "%g", got[i]);
  putchar('\n');
}

/* --- the environment allocator --------------------------------------------------------- */

/* A recording CPU allocator (calloc'ed data) or one that fails with a message, installed on
 * this thread per case; `allocations` prints whether every allocation was freed. */
static const char* alloc_failure;
static int alloc_made, alloc_freed;

static void recording_deleter(DLManagedTensorVersioned* m) {
  alloc_freed++;
  free(m->dl_tensor.data);
  free(m->dl_tensor.shape);
  free(m);
}

static int recording_allocator(DLTensor* prototype, DLManagedTensorVersioned** out,
                               void* error_ctx,
                               void (*set_error)(void*, const char*, const char*)) {
  if (alloc_failure) {
    set_error(error_ctx, "RuntimeError", alloc_failure);
    return -1;
  }
  int64_t numel = 1;
  for (int k = 0; k < prototype->ndim; ++k) numel *= prototype->shape[k];
  size_t bytes = (size_t)numel * ((prototype->dtype.bits * prototype->dtype.lanes + 7) / 8);
  DLManagedTensorVersioned* m = calloc(1, sizeof *m);
  m->version.major = 1;
  m->deleter = recording_deleter;
  m->dl_tensor = *prototype;
  m->dl_tensor.data = calloc(1, bytes ? bytes : 1);
  m->dl_tensor.shape = malloc(sizeof(int64_t) * (size_t)(prototype->ndim ? prototype->ndim : 1));
  for (int k = 0; k < prototype->ndim; ++k) m->dl_tensor.shape[k] = prototype->shape[k];
  m->dl_tensor.strides = NULL;
  m->dl_tensor.byte_offset = 0;
  alloc_made++;
  *out = m;
  return 0;
}

/* mode 0: no allocator; 1: the recording one; 2: one that fails with `failure`. */
static void use_allocator(int mode, const char* failure) {
  alloc_failure = mode == 2 ? failure : NULL;
  alloc_made = alloc_freed = 0;
  TVMFFIEnvSetDLPackManagedTensorAllocator(mode ? recording_allocator : NULL, 0, NULL);
}

static void allocations(void) {
  if (alloc_made == alloc_freed) puts("allocations: ok");
  else printf("allocations: %d made, %d freed\n", alloc_made, alloc_freed);
}

/* Gives back every reference and block the call's arguments held. */
static void finish(Call* c) {
  for (int i = 0; i < c->nheld; ++i) TVMFFIObjectDecRef(c->held[i]);
  for (int i = 0; i < c->nblocks; ++i) free(c->blocks[i]);
  memset(c, 0, sizeof *c);
}

/* --- libraries ------------------------------------------------------------------------ */

static void* open_lib(const char* dir, const char* module) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.so", dir, module);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) printf("dlopen %s\n", dlerror());
  return lib;
}

/* The module of `<dir>/<name>.so` loaded by the runtime (`ffi.ModuleLoadFromFile`), or NULL
 * with the error still raised. */
static TVMFFIObjectHandle load_module(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.so", dir, name);
  TVMFFIAny arg = text(NULL, 0, path, strlen(path)), result;
  int rc = call_global("ffi.ModuleLoadFromFile", &arg, 1, &result);
  if (arg.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(arg.v_obj);
  if (rc != 0) return NULL;
  if (result.type_index != kTVMFFIModule) die("ffi.ModuleLoadFromFile returned no module");
  return result.v_obj;
}

/* Prints what the runtime reads of a function's metadata and doc (`metadata FN: JSON` and
 * `doc FN: TEXT`, escaped; `None` when absent). */
static void print_metadata(TVMFFIObjectHandle module, const char* fn) {
  const char* getters[2] = {"ffi.ModuleGetFunctionMetadata", "ffi.ModuleGetFunctionDoc"};
  for (int i = 0; i < 2; ++i) {
    TVMFFIAny args[3] = {pod(kTVMFFIModule, 0), text(NULL, 0, fn, strlen(fn)),
                         pod(kTVMFFIBool, 1)},
              result;
    args[0].v_obj = (TVMFFIObject*)module;
    printf("%s %s: ", i == 0 ? "metadata" : "doc", fn);
    if (call_global(getters[i], args, 3, &result) != 0) print_raised(NULL);
    else if (result.type_index == kTVMFFINone) fputs("None", stdout);
    else if (result.type_index == kTVMFFISmallStr)
      print_escaped(result.v_bytes, result.small_str_len);
    else if (result.type_index == kTVMFFIStr)
      print_escaped(object_bytes(result.v_obj)->data, object_bytes(result.v_obj)->size);
    else render(NULL, &result);
    putchar('\n');
    if (args[1].type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(args[1].v_obj);
    if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
  }
}

/* The function `fn` of a module (not its imports): a new reference, or NULL. */
static TVMFFIObjectHandle module_function(TVMFFIObjectHandle module, const char* fn) {
  TVMFFIAny args[3] = {pod(kTVMFFIModule, 0), text(NULL, 0, fn, strlen(fn)), pod(kTVMFFIBool, 0)},
            result;
  args[0].v_obj = (TVMFFIObject*)module;
  int rc = call_global("ffi.ModuleGetFunction", args, 3, &result);
  if (args[1].type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(args[1].v_obj);
  if (rc != 0) die("ffi.ModuleGetFunction failed");
  if (result.type_index == kTVMFFIFunction) return result.v_obj;
  if (result.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(result.v_obj);
  return NULL;
}

/* A call of the module's function `fn` as the runtime gives it out (ffi.ModuleGetFunction),
 * through TVMFFIFunctionCall. */
static void call_function(Call* c, TVMFFIObjectHandle module, const char* fn,
                          const TVMFFIAny* args, int32_t n) {
  TVMFFIObjectHandle f = module_function(module, fn);
  if (!f) {
    puts("missing function");
    return;
  }
  check_call(c, NULL, f, args, n);
  TVMFFIObjectDecRef(f);
}

static TVMFFISafeCallType entry_of(void* lib, const char* fn) {
  char name[256];
  snprintf(name, sizeof name, "__tvm_ffi_%s", fn);
  return (TVMFFISafeCallType)dlsym(lib, name);
}
