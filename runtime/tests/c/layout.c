/* Prints the size, alignment and field offsets of every ABI struct from the real headers.
 * `layout.rs` prints the same lines from `safecall_runtime::abi` and compares. */
#include <stddef.h>

#include "common.h"

#define SIZE(T) printf("%s size=%zu align=%zu\n", #T, sizeof(T), _Alignof(T))
#define FIELD(T, f) printf("%s.%s offset=%zu size=%zu\n", #T, #f, offsetof(T, f), sizeof(((T*)0)->f))

int main(void) {
  SIZE(DLPackVersion);
  FIELD(DLPackVersion, major);
  FIELD(DLPackVersion, minor);
  SIZE(DLDevice);
  FIELD(DLDevice, device_type);
  FIELD(DLDevice, device_id);
  SIZE(DLDataType);
  FIELD(DLDataType, code);
  FIELD(DLDataType, bits);
  FIELD(DLDataType, lanes);
  SIZE(DLTensor);
  FIELD(DLTensor, data);
  FIELD(DLTensor, device);
  FIELD(DLTensor, ndim);
  FIELD(DLTensor, dtype);
  FIELD(DLTensor, shape);
  FIELD(DLTensor, strides);
  FIELD(DLTensor, byte_offset);
  SIZE(DLManagedTensor);
  FIELD(DLManagedTensor, dl_tensor);
  FIELD(DLManagedTensor, manager_ctx);
  FIELD(DLManagedTensor, deleter);
  SIZE(DLManagedTensorVersioned);
  FIELD(DLManagedTensorVersioned, version);
  FIELD(DLManagedTensorVersioned, manager_ctx);
  FIELD(DLManagedTensorVersioned, deleter);
  FIELD(DLManagedTensorVersioned, flags);
  FIELD(DLManagedTensorVersioned, dl_tensor);
  SIZE(TVMFFIVersion);
  FIELD(TVMFFIVersion, major);
  FIELD(TVMFFIVersion, minor);
  FIELD(TVMFFIVersion, patch);
  SIZE(TVMFFIObject);
  FIELD(TVMFFIObject, combined_ref_count);
  FIELD(TVMFFIObject, type_index);
  FIELD(TVMFFIObject, __padding);
  FIELD(TVMFFIObject, deleter);
  SIZE(TVMFFIAny);
  FIELD(TVMFFIAny, type_index);
  FIELD(TVMFFIAny, small_str_len);
  FIELD(TVMFFIAny, v_int64);
  SIZE(TVMFFIByteArray);
  FIELD(TVMFFIByteArray, data);
  FIELD(TVMFFIByteArray, size);
  SIZE(TVMFFIShapeCell);
  FIELD(TVMFFIShapeCell, data);
  FIELD(TVMFFIShapeCell, size);
  SIZE(TVMFFISeqCell);
  FIELD(TVMFFISeqCell, data);
  FIELD(TVMFFISeqCell, size);
  FIELD(TVMFFISeqCell, capacity);
  FIELD(TVMFFISeqCell, data_deleter);
  SIZE(TVMFFIErrorCell);
  FIELD(TVMFFIErrorCell, kind);
  FIELD(TVMFFIErrorCell, message);
  FIELD(TVMFFIErrorCell, backtrace);
  FIELD(TVMFFIErrorCell, update_backtrace);
  FIELD(TVMFFIErrorCell, cause_chain);
  FIELD(TVMFFIErrorCell, extra_context);
  SIZE(TVMFFIFunctionCell);
  FIELD(TVMFFIFunctionCell, safe_call);
  FIELD(TVMFFIFunctionCell, cpp_call);
  SIZE(TVMFFIOpaqueObjectCell);
  FIELD(TVMFFIOpaqueObjectCell, handle);
  SIZE(TVMFFIObjectAllocHeader);
  FIELD(TVMFFIObjectAllocHeader, delete_space);
  SIZE(TVMFFICustomAllocator);
  FIELD(TVMFFICustomAllocator, allocate);
  FIELD(TVMFFICustomAllocator, context);
  SIZE(TVMFFIFieldInfo);
  FIELD(TVMFFIFieldInfo, name);
  FIELD(TVMFFIFieldInfo, doc);
  FIELD(TVMFFIFieldInfo, metadata);
  FIELD(TVMFFIFieldInfo, flags);
  FIELD(TVMFFIFieldInfo, size);
  FIELD(TVMFFIFieldInfo, alignment);
  FIELD(TVMFFIFieldInfo, offset);
  FIELD(TVMFFIFieldInfo, getter);
  FIELD(TVMFFIFieldInfo, setter);
  FIELD(TVMFFIFieldInfo, default_value_or_factory);
  FIELD(TVMFFIFieldInfo, field_static_type_index);
  SIZE(TVMFFIMethodInfo);
  FIELD(TVMFFIMethodInfo, name);
  FIELD(TVMFFIMethodInfo, doc);
  FIELD(TVMFFIMethodInfo, metadata);
  FIELD(TVMFFIMethodInfo, flags);
  FIELD(TVMFFIMethodInfo, method);
  SIZE(TVMFFITypeMetadata);
  FIELD(TVMFFITypeMetadata, doc);
  FIELD(TVMFFITypeMetadata, creator);
  FIELD(TVMFFITypeMetadata, total_size);
  FIELD(TVMFFITypeMetadata, structural_eq_hash_kind);
  SIZE(TVMFFITypeAttrColumn);
  FIELD(TVMFFITypeAttrColumn, data);
  FIELD(TVMFFITypeAttrColumn, size);
  FIELD(TVMFFITypeAttrColumn, begin_index);
  SIZE(TVMFFITypeInfo);
  FIELD(TVMFFITypeInfo, type_index);
  FIELD(TVMFFITypeInfo, type_depth);
  FIELD(TVMFFITypeInfo, type_key);
  FIELD(TVMFFITypeInfo, type_ancestors);
  FIELD(TVMFFITypeInfo, type_key_hash);
  FIELD(TVMFFITypeInfo, num_fields);
  FIELD(TVMFFITypeInfo, num_methods);
  FIELD(TVMFFITypeInfo, fields);
  FIELD(TVMFFITypeInfo, methods);
  FIELD(TVMFFITypeInfo, metadata);

  /* Enum values and constants the runtime mirrors. */
  printf("const kTVMFFIStaticObjectEnd=%d\n", (int)kTVMFFIStaticObjectEnd);
  printf("const kTVMFFIDynObjectBegin=%d\n", (int)kTVMFFIDynObjectBegin);
  printf("const kTVMFFIUnchanged=%d\n", (int)kTVMFFIUnchanged);
  printf("const kTVMFFIBigInt=%d\n", (int)kTVMFFIBigInt);
  printf("const kTVMFFIVisitInterrupt=%d\n", (int)kTVMFFIVisitInterrupt);
  printf("const kTVMFFIFieldFlagBitMaskIsStaticMethod=%d\n", (int)kTVMFFIFieldFlagBitMaskIsStaticMethod);
  printf("const kTVMFFIFieldFlagBitSetterIsFunctionObj=%d\n", (int)kTVMFFIFieldFlagBitSetterIsFunctionObj);
  printf("const DLPACK_MAJOR_VERSION=%d\n", DLPACK_MAJOR_VERSION);
  printf("const DLPACK_MINOR_VERSION=%d\n", DLPACK_MINOR_VERSION);
  printf("const DLPACK_FLAG_BITMASK_READ_ONLY=%llu\n", (unsigned long long)DLPACK_FLAG_BITMASK_READ_ONLY);
  printf("const DLPACK_FLAG_BITMASK_IS_COPIED=%llu\n", (unsigned long long)DLPACK_FLAG_BITMASK_IS_COPIED);
  printf("const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED=%llu\n", (unsigned long long)DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
  printf("const TVM_FFI_VERSION=%d.%d.%d\n", TVM_FFI_VERSION_MAJOR, TVM_FFI_VERSION_MINOR, TVM_FFI_VERSION_PATCH);
  printf("const kDLFloat4_e2m1fn=%d\n", (int)kDLFloat4_e2m1fn);
  printf("const kDLTrn=%d\n", (int)kDLTrn);
  return 0;
}
