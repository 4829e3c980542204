/* Hand-written safe-call functions against the real TVM-FFI headers, loaded by
 * tests/modules_cross.rs under safecall-runtime's module loader. The library embeds an import
 * tree (c_blob.inc, written by the test: the library imports a module of the kind
 * `sc_cross_helpers`) and calls `triple` of its imports through TVMFFIEnvModLookupFromImports. */
#include <stdio.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#include "c_blob.inc" /* defines __tvm_ffi__library_bin */

TVM_FFI_DLL_EXPORT void* __tvm_ffi__library_ctx = NULL;

static int raise(const char* kind, const char* message) {
  TVMFFIErrorSetRaisedFromCStr(kind, message);
  return -1;
}

static int get_int(const TVMFFIAny* a, int index, int64_t* out) {
  if (a->type_index != kTVMFFIInt && a->type_index != kTVMFFIBool) {
    char message[128];
    snprintf(message, sizeof(message), "argument #%d: expected int, got type index %d", index,
             a->type_index);
    return raise("TypeError", message);
  }
  *out = a->v_int64;
  return 0;
}

static int get_str(const TVMFFIAny* a, const char** data, size_t* size) {
  if (a->type_index == kTVMFFISmallStr) {
    *data = a->v_bytes;
    *size = a->small_str_len;
  } else if (a->type_index == kTVMFFIStr) {
    TVMFFIByteArray* s = (TVMFFIByteArray*)((char*)a->v_obj + sizeof(TVMFFIObject));
    *data = s->data;
    *size = s->size;
  } else if (a->type_index == kTVMFFIRawStr) {
    *data = a->v_c_str;
    *size = strlen(a->v_c_str);
  } else {
    return raise("TypeError", "expected a string");
  }
  return 0;
}

static void put_int(TVMFFIAny* result, int64_t v) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = v;
}

/* c_add(a: int, b: int) -> int */
TVM_FFI_DLL_EXPORT int __tvm_ffi_c_add(void* self, const TVMFFIAny* args, int32_t num_args,
                                       TVMFFIAny* result) {
  (void)self;
  int64_t a, b;
  if (num_args != 2) return raise("TypeError", "c_add takes 2 arguments");
  if (get_int(&args[0], 0, &a) || get_int(&args[1], 1, &b)) return -1;
  put_int(result, a + b);
  return 0;
}

/* c_concat(a: str, b: str) -> str, created through the C API (no deleter lives here). */
TVM_FFI_DLL_EXPORT int __tvm_ffi_c_concat(void* self, const TVMFFIAny* args, int32_t num_args,
                                          TVMFFIAny* result) {
  (void)self;
  const char *a, *b;
  size_t na, nb;
  char buffer[256];
  if (num_args != 2) return raise("TypeError", "c_concat takes 2 arguments");
  if (get_str(&args[0], &a, &na) || get_str(&args[1], &b, &nb)) return -1;
  if (na + nb > sizeof(buffer)) return raise("ValueError", "c_concat: too long");
  memcpy(buffer, a, na);
  memcpy(buffer + na, b, nb);
  TVMFFIByteArray joined = {buffer, na + nb};
  return TVMFFIStringFromByteArray(&joined, result);
}

/* c_call_global(name: str, x: int): looks the global function up, calls it, releases it. */
TVM_FFI_DLL_EXPORT int __tvm_ffi_c_call_global(void* self, const TVMFFIAny* args,
                                               int32_t num_args, TVMFFIAny* result) {
  (void)self;
  const char* name;
  size_t size;
  if (num_args != 2) return raise("TypeError", "c_call_global takes 2 arguments");
  if (get_str(&args[0], &name, &size)) return -1;
  TVMFFIByteArray name_array = {name, size};
  TVMFFIObjectHandle f = NULL;
  int rc = TVMFFIFunctionGetGlobal(&name_array, &f);
  if (rc != 0) return rc;
  if (f == NULL) return raise("RuntimeError", "c_call_global: no such global function");
  TVMFFIAny arg = args[1];
  rc = TVMFFIFunctionCall(f, &arg, 1, result);
  TVMFFIObjectDecRef(f);
  return rc;
}

/* c_call_import(x: int): `triple` of the imported modules (a borrowed, cached function). */
TVM_FFI_DLL_EXPORT int __tvm_ffi_c_call_import(void* self, const TVMFFIAny* args,
                                               int32_t num_args, TVMFFIAny* result) {
  (void)self;
  static TVMFFIObjectHandle triple = NULL;
  if (num_args != 1) return raise("TypeError", "c_call_import takes 1 argument");
  if (triple == NULL) {
    int rc = TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, "triple", &triple);
    if (rc != 0) return rc;
  }
  TVMFFIAny arg = args[0];
  return TVMFFIFunctionCall(triple, &arg, 1, result);
}

static int constant_string(const char* text, TVMFFIAny* result) {
  TVMFFIByteArray bytes = {text, strlen(text)};
  return TVMFFIStringFromByteArray(&bytes, result);
}

TVM_FFI_DLL_EXPORT int __tvm_ffi__metadata_c_add(void* self, const TVMFFIAny* args,
                                                 int32_t num_args, TVMFFIAny* result) {
  (void)self, (void)args, (void)num_args;
  return constant_string(
      "{\"type_schema\": \"{\\\"type\\\":\\\"ffi.Function\\\",\\\"args\\\":[{\\\"type\\\":\\\"int\\\"},"
      "{\\\"type\\\":\\\"int\\\"},{\\\"type\\\":\\\"int\\\"}]}\"}",
      result);
}

TVM_FFI_DLL_EXPORT int __tvm_ffi__doc_c_add(void* self, const TVMFFIAny* args, int32_t num_args,
                                            TVMFFIAny* result) {
  (void)self, (void)args, (void)num_args;
  return constant_string("a + b, hand-written in C.", result);
}
