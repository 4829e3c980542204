/*
 * Helpers shared by the C conformance programs. Each program prints observable behaviour
 * of the TVM-FFI C API on stdout; the Rust test `conformance.rs` links it once against the
 * real libtvm_ffi.so and once against libsafecall_runtime.so and compares the two outputs.
 * Never print anything that legitimately differs (pointer values, backtrace text).
 */
#ifndef SAFECALL_CONFORMANCE_COMMON_H_
#define SAFECALL_CONFORMANCE_COMMON_H_

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#define CELL(obj, T) ((T*)((char*)(obj) + sizeof(TVMFFIObject)))
#define HDR(obj) ((TVMFFIObject*)(obj))

static inline TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray a;
  a.data = s;
  a.size = strlen(s);
  return a;
}

static inline uint32_t strong_count(void* obj) {
  return (uint32_t)(HDR(obj)->combined_ref_count & 0xffffffffu);
}

static inline uint32_t weak_count(void* obj) {
  return (uint32_t)(HDR(obj)->combined_ref_count >> 32);
}

/* Prints the bytes of a byte array, escaping non-printable ones. */
static inline void print_bytes(const char* data, size_t size) {
  putchar('"');
  for (size_t i = 0; i < size; ++i) {
    unsigned char c = (unsigned char)data[i];
    if (c >= 32 && c < 127 && c != '"' && c != '\\') {
      putchar(c);
    } else {
      printf("\\x%02x", c);
    }
  }
  putchar('"');
}

/* Prints an error object's kind and message (never its backtrace). */
static inline void print_error_obj(void* err) {
  TVMFFIErrorCell* cell = CELL(err, TVMFFIErrorCell);
  printf("type_index=%d kind=", HDR(err)->type_index);
  print_bytes(cell->kind.data, cell->kind.size);
  printf(" message=");
  print_bytes(cell->message.data, cell->message.size);
  printf(" kind_nul=%d message_nul=%d", cell->kind.data[cell->kind.size] == 0,
         cell->message.data[cell->message.size] == 0);
}

/* Moves the raised error out of TLS and prints it; prints "none" when no error is raised. */
static inline void print_raised(const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  printf("%s: ", what);
  if (err == NULL) {
    printf("no error\n");
    return;
  }
  print_error_obj(err);
  printf(" refcount=%u\n", strong_count(err));
  TVMFFIObjectDecRef(err);
}

/* Prints the return code of a call, then the raised error if it failed. */
static inline void report(const char* what, int ret) {
  printf("%s -> %d\n", what, ret);
  if (ret != 0) print_raised(what);
}

/* Prints a TVMFFIAny: POD values and strings in full, objects by type index and content. */
static inline void print_any(const char* what, const TVMFFIAny* v) {
  printf("%s: type_index=%d", what, v->type_index);
  switch (v->type_index) {
    case kTVMFFINone:
      printf(" pad=%u value=%llu", v->zero_padding, (unsigned long long)v->v_uint64);
      break;
    case kTVMFFIInt:
    case kTVMFFIBool:
      printf(" pad=%u value=%lld", v->zero_padding, (long long)v->v_int64);
      break;
    case kTVMFFIFloat:
      printf(" pad=%u value=%.17g", v->zero_padding, v->v_float64);
      break;
    case kTVMFFIDataType:
      printf(" pad=%u code=%u bits=%u lanes=%u", v->zero_padding, v->v_dtype.code, v->v_dtype.bits,
             v->v_dtype.lanes);
      break;
    case kTVMFFIDevice:
      printf(" pad=%u device=(%d,%d)", v->zero_padding, v->v_device.device_type,
             v->v_device.device_id);
      break;
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      printf(" len=%u bytes=", v->small_str_len);
      for (int i = 0; i < 8; ++i) printf("%02x", (unsigned char)v->v_bytes[i]);
      printf(" text=");
      print_bytes(v->v_bytes, v->small_str_len);
      break;
    case kTVMFFIStr:
    case kTVMFFIBytes: {
      TVMFFIByteArray* arr = CELL(v->v_obj, TVMFFIByteArray);
      printf(" pad=%u size=%zu text=", v->zero_padding, arr->size);
      print_bytes(arr->data, arr->size);
      printf(" nul=%d refcount=%u weak=%u", arr->data[arr->size] == 0, strong_count(v->v_obj),
             weak_count(v->v_obj));
      break;
    }
    case kTVMFFIShape: {
      TVMFFIShapeCell* shape = CELL(v->v_obj, TVMFFIShapeCell);
      printf(" pad=%u shape=[", v->zero_padding);
      for (size_t i = 0; i < shape->size; ++i) printf("%s%lld", i ? "," : "", (long long)shape->data[i]);
      printf("] refcount=%u", strong_count(v->v_obj));
      break;
    }
    default:
      if (v->type_index >= kTVMFFIStaticObjectBegin) {
        printf(" pad=%u obj_type_index=%d refcount=%u", v->zero_padding, v->v_obj->type_index,
               strong_count(v->v_obj));
      } else {
        printf(" pad=%u", v->zero_padding);
      }
      break;
  }
  printf("\n");
}

static inline void release_any(TVMFFIAny* v) {
  if (v->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(v->v_obj);
  v->type_index = kTVMFFINone;
  v->v_int64 = 0;
}

#endif  // SAFECALL_CONFORMANCE_COMMON_H_
