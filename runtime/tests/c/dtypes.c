/* Data types: every code, bits, lanes, aliases, scalable vectors and the error messages. */
#include "common.h"

static const char* kStrings[] = {
    "", "void", "int", "int8", "int16", "int32", "int64", "int1", "int0", "int8x4", "int32x16",
    "uint", "uint1", "uint8", "uint16", "uint32", "uint64", "uint8x2", "i8", "i32", "i64x2", "u8",
    "u16x4", "bool", "boolx4", "bool8", "bool1", "bool16", "float", "float16", "float32",
    "float64", "float32x4", "float8", "f16", "f32", "f64x8", "bfloat", "bfloat16", "bfloat16x2",
    "bf16", "bf16x4", "handle", "handle32", "handlex2", "handle64x4", "float8_e3m4",
    "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn",
    "float8_e4m3fnx4", "float8_e5m2x2", "float4_e2m1fnx2", "float4_e2m1fn_x2", "float4_e2m1fn_",
    "float6_e3m2fnx8", "fp8_e4m3fn", "fp8_e5m2x4", "fp6_e2m3fn", "fp4_e2m1fn", "fp4_e2m1fn_x4",
    "f8_e4m3fn", "f8_e5m2", "f6_e3m2fn", "f4_e2m1fn", "f4_e2m1fnx2", "int32xvscalex4",
    "float32xvscalex8", "uint8xvscalex16", "int8xvscale", "int32x65535", "int8x256",
    /* errors */
    "int8x0", "int8x", "int8x65536", "int256", "int4294967296", "int99999999999",
    "int8x4294967296", "Int32", "b8", "float32_", "int32x4x", "float8_e9m9", "float8_e4m3fnuzz",
    "float8_", "float6_e2m3", "float6_", "float4_e2m1", "float4_", "fp8_e4", "f8_bad", "complex64",
    "complex", "int 8", " int8", "int8 ", "i", "u", "f", "bf", "custom", "custom[", "custom[foo]",
    "custom[foo]32", "customx", "float8_e4m3fnx0", "float4_e2m1fn_x", "float4_e2m1fnx", "intx4",
    "floatx2", "i8x0", "bf16x0", "u8x", "f32x65536", "int8xvscalex0", "handlexvscalex4",
    "float8_e4m3fnxvscalex2", "x4", "8", "int-8", "uint+8", "int08", "int008x04",
};

static void from_string(const char* s, size_t size) {
  TVMFFIByteArray str = {s, size};
  DLDataType dtype;
  memset(&dtype, 0x77, sizeof(dtype));
  int ret = TVMFFIDataTypeFromString(&str, &dtype);
  printf("from ");
  print_bytes(s, size);
  if (ret == 0) {
    printf(" -> code=%u bits=%u lanes=%u", dtype.code, dtype.bits, dtype.lanes);
    TVMFFIAny out;
    memset(&out, 0x5a, sizeof(out));
    int ret2 = TVMFFIDataTypeToString(&dtype, &out);
    if (ret2 == 0) {
      const char* data = out.type_index == kTVMFFISmallStr ? out.v_bytes
                                                           : CELL(out.v_obj, TVMFFIByteArray)->data;
      size_t len = out.type_index == kTVMFFISmallStr ? out.small_str_len
                                                      : CELL(out.v_obj, TVMFFIByteArray)->size;
      printf(" back=");
      print_bytes(data, len);
      printf(" back_type=%d\n", out.type_index);
      release_any(&out);
    } else {
      printf("\n");
      print_raised("  back");
    }
  } else {
    printf(" -> %d\n", ret);
    print_raised("  error");
  }
}

static void to_string(uint8_t code, uint8_t bits, uint16_t lanes) {
  DLDataType dtype = {code, bits, lanes};
  TVMFFIAny out;
  memset(&out, 0x5a, sizeof(out));
  int ret = TVMFFIDataTypeToString(&dtype, &out);
  printf("to (%u,%u,%u) -> %d", code, bits, lanes, ret);
  if (ret == 0) {
    printf(" ");
    print_any("", &out);
    release_any(&out);
  } else {
    printf("\n");
    print_raised("  error");
  }
}

/* dtype.get_custom_type_code: "posit" -> 150, anything else -> 151. */
static int custom_code(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  printf("  custom_code called with %d argument(s), type_index=%d\n", num_args, args[0].type_index);
  const char* data = "";
  size_t len = 0;
  if (args[0].type_index == kTVMFFIRawStr) {
    data = args[0].v_c_str;
    len = strlen(data);
  } else if (args[0].type_index == kTVMFFISmallStr) {
    data = args[0].v_bytes;
    len = args[0].small_str_len;
  } else if (args[0].type_index == kTVMFFIStr) {
    data = CELL(args[0].v_obj, TVMFFIByteArray)->data;
    len = CELL(args[0].v_obj, TVMFFIByteArray)->size;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = (len == 5 && memcmp(data, "posit", 5) == 0) ? 150 : 151;
  return 0;
}

/* dtype.get_custom_type_name: 150 -> "posit", else "other". */
static int custom_name(void* handle, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)handle;
  printf("  custom_name called with %d argument(s), type_index=%d\n", num_args, args[0].type_index);
  TVMFFIByteArray name = ba(args[0].v_int64 == 150 ? "posit" : "other");
  return TVMFFIStringFromByteArray(&name, result);
}

static void register_global(const char* name, TVMFFISafeCallType f) {
  TVMFFIObjectHandle func = NULL;
  TVMFFIFunctionCreate(NULL, f, NULL, &func);
  TVMFFIByteArray key = ba(name);
  TVMFFIFunctionSetGlobal(&key, func, 1);
  TVMFFIObjectDecRef(func);
}

int main(void) {
  for (size_t i = 0; i < sizeof(kStrings) / sizeof(kStrings[0]); ++i) {
    from_string(kStrings[i], strlen(kStrings[i]));
  }
  /* The size bounds the string: no NUL terminator is needed and embedded NULs count. */
  from_string("int8x4", 4);
  from_string("float32\0x", 9);
  from_string("int8\0", 5);

  uint8_t bits_list[] = {0, 1, 4, 6, 8, 16, 32, 64, 255};
  uint16_t lanes_list[] = {0, 1, 2, 4, 65535, 65534, 32768, 32767, 65532};
  for (int code = 0; code <= 19; ++code) {
    for (size_t b = 0; b < sizeof(bits_list); ++b) {
      for (size_t l = 0; l < sizeof(lanes_list) / sizeof(lanes_list[0]); ++l) {
        to_string((uint8_t)code, bits_list[b], lanes_list[l]);
      }
    }
  }
  to_string(128, 32, 1);
  to_string(129, 32, 1);
  to_string(255, 8, 1);

  /* Custom types resolve through the global registry once the hooks exist. */
  register_global("dtype.get_custom_type_code", custom_code);
  register_global("dtype.get_custom_type_name", custom_name);
  from_string("custom[posit]16", 15);
  from_string("custom[posit]16x4", 17);
  from_string("custom[other]", 13);
  from_string("custom[posit]x", 14);
  to_string(150, 16, 1);
  to_string(151, 8, 2);
  return 0;
}
