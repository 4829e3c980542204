/* Strings and bytes (inline up to 7 bytes, objects beyond) and AnyView -> Any conversion. */
#include "common.h"

static void string_case(const char* text, size_t size) {
  TVMFFIByteArray input = {text, size};
  TVMFFIAny out;
  memset(&out, 0x5a, sizeof(out));
  char label[64];
  snprintf(label, sizeof(label), "string[%zu]", size);
  printf("%s -> %d\n", label, TVMFFIStringFromByteArray(&input, &out));
  print_any(label, &out);
  if (out.type_index >= kTVMFFIStaticObjectBegin) {
    printf("  copied=%d\n", CELL(out.v_obj, TVMFFIByteArray)->data != text);
  }
  release_any(&out);

  memset(&out, 0x5a, sizeof(out));
  snprintf(label, sizeof(label), "bytes[%zu]", size);
  printf("%s -> %d\n", label, TVMFFIBytesFromByteArray(&input, &out));
  print_any(label, &out);
  release_any(&out);
}

static void to_owned(const char* label, TVMFFIAny* view) {
  TVMFFIAny out;
  memset(&out, 0x5a, sizeof(out));
  int ret = TVMFFIAnyViewToOwnedAny(view, &out);
  printf("%s -> %d\n", label, ret);
  if (ret == 0) print_any(label, &out);
  else print_raised(label);
  release_any(&out);
}

int main(void) {
  const char* text = "abcdefghijklmnopqrstuvwxyz";
  for (size_t n = 0; n <= 9; ++n) string_case(text, n);
  string_case(text, 26);
  string_case("a\0b\0c\0d\0e", 9);
  string_case("a\0b", 3);
  string_case("\xff\xfe\x80", 3);

  TVMFFIAny view;
  memset(&view, 0, sizeof(view));
  to_owned("none", &view);
  view.type_index = kTVMFFIInt;
  view.v_int64 = -42;
  to_owned("int", &view);
  view.type_index = kTVMFFIBool;
  view.v_int64 = 1;
  to_owned("bool", &view);
  view.type_index = kTVMFFIFloat;
  view.v_float64 = 2.5;
  to_owned("float", &view);
  view.type_index = kTVMFFIOpaquePtr;
  view.v_ptr = (void*)0x1000;
  to_owned("opaque ptr", &view);
  view.type_index = kTVMFFIDataType;
  view.v_int64 = 0;
  view.v_dtype.code = 2;
  view.v_dtype.bits = 16;
  view.v_dtype.lanes = 4;
  to_owned("dtype", &view);
  view.type_index = kTVMFFIDevice;
  view.v_device.device_type = 2;
  view.v_device.device_id = 3;
  to_owned("device", &view);

  DLTensor tensor;
  memset(&tensor, 0, sizeof(tensor));
  view.type_index = kTVMFFIDLTensorPtr;
  view.v_ptr = &tensor;
  {
    TVMFFIAny out;
    printf("dltensor ptr -> %d\n", TVMFFIAnyViewToOwnedAny(&view, &out));
    printf("dltensor ptr: type_index=%d same_ptr=%d\n", out.type_index, out.v_ptr == &tensor);
  }

  view.type_index = kTVMFFIRawStr;
  view.v_c_str = "short";
  to_owned("raw str short", &view);
  view.v_c_str = "a raw string longer than seven";
  to_owned("raw str long", &view);
  view.v_c_str = "";
  to_owned("raw str empty", &view);

  TVMFFIByteArray bytes = {"by\0tes", 6};
  view.type_index = kTVMFFIByteArrayPtr;
  view.v_ptr = &bytes;
  to_owned("byte array ptr short", &view);
  TVMFFIByteArray long_bytes = {"0123456789", 10};
  view.v_ptr = &long_bytes;
  to_owned("byte array ptr long", &view);

  /* Small strings stay small. */
  TVMFFIAny small;
  TVMFFIByteArray small_input = ba("hey");
  TVMFFIStringFromByteArray(&small_input, &small);
  to_owned("small str", &small);
  TVMFFIBytesFromByteArray(&small_input, &small);
  to_owned("small bytes", &small);

  /* Objects get one more reference. */
  TVMFFIAny str_obj;
  TVMFFIByteArray long_input = ba("a long string object");
  TVMFFIStringFromByteArray(&long_input, &str_obj);
  TVMFFIAny out;
  printf("object view -> %d\n", TVMFFIAnyViewToOwnedAny(&str_obj, &out));
  printf("same object=%d refcount=%u\n", out.v_obj == str_obj.v_obj, strong_count(str_obj.v_obj));
  release_any(&out);
  printf("refcount after release=%u\n", strong_count(str_obj.v_obj));

  /* An rvalue reference moves the object out of its slot. */
  TVMFFIObjectHandle slot = str_obj.v_obj;
  view.type_index = kTVMFFIObjectRValueRef;
  view.v_ptr = &slot;
  printf("rvalue ref -> %d\n", TVMFFIAnyViewToOwnedAny(&view, &out));
  print_any("rvalue ref", &out);
  printf("slot cleared=%d\n", slot == NULL);
  release_any(&out);
  return 0;
}
