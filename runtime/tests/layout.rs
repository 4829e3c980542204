//! Layout test: sizes, alignments and field offsets of every ABI struct in
//! `safecall_runtime::abi`, and the constants it mirrors, checked against `tests/c/layout.c`
//! compiled with the real headers.

mod support;

use core::mem::{align_of, offset_of, size_of};
use std::fmt::Write;

use safecall_runtime::abi::*;

/// Prints the same lines as `layout.c`, from the Rust definitions.
fn rust_layout() -> String {
    let mut out = String::new();
    macro_rules! size {
        ($t:ident) => {
            writeln!(
                out,
                "{} size={} align={}",
                stringify!($t),
                size_of::<$t>(),
                align_of::<$t>()
            )
            .unwrap();
        };
    }
    macro_rules! field {
        ($t:ident, $c_name:literal, $($f:tt)+) => {{
            let size = {
                let probe = core::mem::MaybeUninit::<$t>::uninit();
                let base = probe.as_ptr();
                // SAFETY: only the field's address is taken, never read.
                let field = unsafe { core::ptr::addr_of!((*base).$($f)+) };
                fn size_of_pointee<T>(_: *const T) -> usize { size_of::<T>() }
                size_of_pointee(field)
            };
            writeln!(out, "{}.{} offset={} size={}", stringify!($t), $c_name, offset_of!($t, $($f)+), size).unwrap();
        }};
    }
    size!(DLPackVersion);
    field!(DLPackVersion, "major", major);
    field!(DLPackVersion, "minor", minor);
    size!(DLDevice);
    field!(DLDevice, "device_type", device_type);
    field!(DLDevice, "device_id", device_id);
    size!(DLDataType);
    field!(DLDataType, "code", code);
    field!(DLDataType, "bits", bits);
    field!(DLDataType, "lanes", lanes);
    size!(DLTensor);
    field!(DLTensor, "data", data);
    field!(DLTensor, "device", device);
    field!(DLTensor, "ndim", ndim);
    field!(DLTensor, "dtype", dtype);
    field!(DLTensor, "shape", shape);
    field!(DLTensor, "strides", strides);
    field!(DLTensor, "byte_offset", byte_offset);
    size!(DLManagedTensor);
    field!(DLManagedTensor, "dl_tensor", dl_tensor);
    field!(DLManagedTensor, "manager_ctx", manager_ctx);
    field!(DLManagedTensor, "deleter", deleter);
    size!(DLManagedTensorVersioned);
    field!(DLManagedTensorVersioned, "version", version);
    field!(DLManagedTensorVersioned, "manager_ctx", manager_ctx);
    field!(DLManagedTensorVersioned, "deleter", deleter);
    field!(DLManagedTensorVersioned, "flags", flags);
    field!(DLManagedTensorVersioned, "dl_tensor", dl_tensor);
    size!(TVMFFIVersion);
    field!(TVMFFIVersion, "major", major);
    field!(TVMFFIVersion, "minor", minor);
    field!(TVMFFIVersion, "patch", patch);
    size!(TVMFFIObject);
    field!(TVMFFIObject, "combined_ref_count", combined_ref_count);
    field!(TVMFFIObject, "type_index", type_index);
    field!(TVMFFIObject, "__padding", padding);
    field!(TVMFFIObject, "deleter", deleter);
    size!(TVMFFIAny);
    field!(TVMFFIAny, "type_index", type_index);
    field!(TVMFFIAny, "small_str_len", small_str_len);
    field!(TVMFFIAny, "v_int64", value.v_int64);
    size!(TVMFFIByteArray);
    field!(TVMFFIByteArray, "data", data);
    field!(TVMFFIByteArray, "size", size);
    size!(TVMFFIShapeCell);
    field!(TVMFFIShapeCell, "data", data);
    field!(TVMFFIShapeCell, "size", size);
    size!(TVMFFISeqCell);
    field!(TVMFFISeqCell, "data", data);
    field!(TVMFFISeqCell, "size", size);
    field!(TVMFFISeqCell, "capacity", capacity);
    field!(TVMFFISeqCell, "data_deleter", data_deleter);
    size!(TVMFFIErrorCell);
    field!(TVMFFIErrorCell, "kind", kind);
    field!(TVMFFIErrorCell, "message", message);
    field!(TVMFFIErrorCell, "backtrace", backtrace);
    field!(TVMFFIErrorCell, "update_backtrace", update_backtrace);
    field!(TVMFFIErrorCell, "cause_chain", cause_chain);
    field!(TVMFFIErrorCell, "extra_context", extra_context);
    size!(TVMFFIFunctionCell);
    field!(TVMFFIFunctionCell, "safe_call", safe_call);
    field!(TVMFFIFunctionCell, "cpp_call", cpp_call);
    size!(TVMFFIOpaqueObjectCell);
    field!(TVMFFIOpaqueObjectCell, "handle", handle);
    size!(TVMFFIObjectAllocHeader);
    field!(TVMFFIObjectAllocHeader, "delete_space", delete_space);
    size!(TVMFFICustomAllocator);
    field!(TVMFFICustomAllocator, "allocate", allocate);
    field!(TVMFFICustomAllocator, "context", context);
    size!(TVMFFIFieldInfo);
    field!(TVMFFIFieldInfo, "name", name);
    field!(TVMFFIFieldInfo, "doc", doc);
    field!(TVMFFIFieldInfo, "metadata", metadata);
    field!(TVMFFIFieldInfo, "flags", flags);
    field!(TVMFFIFieldInfo, "size", size);
    field!(TVMFFIFieldInfo, "alignment", alignment);
    field!(TVMFFIFieldInfo, "offset", offset);
    field!(TVMFFIFieldInfo, "getter", getter);
    field!(TVMFFIFieldInfo, "setter", setter);
    field!(
        TVMFFIFieldInfo,
        "default_value_or_factory",
        default_value_or_factory
    );
    field!(
        TVMFFIFieldInfo,
        "field_static_type_index",
        field_static_type_index
    );
    size!(TVMFFIMethodInfo);
    field!(TVMFFIMethodInfo, "name", name);
    field!(TVMFFIMethodInfo, "doc", doc);
    field!(TVMFFIMethodInfo, "metadata", metadata);
    field!(TVMFFIMethodInfo, "flags", flags);
    field!(TVMFFIMethodInfo, "method", method);
    size!(TVMFFITypeMetadata);
    field!(TVMFFITypeMetadata, "doc", doc);
    field!(TVMFFITypeMetadata, "creator", creator);
    field!(TVMFFITypeMetadata, "total_size", total_size);
    field!(
        TVMFFITypeMetadata,
        "structural_eq_hash_kind",
        structural_eq_hash_kind
    );
    size!(TVMFFITypeAttrColumn);
    field!(TVMFFITypeAttrColumn, "data", data);
    field!(TVMFFITypeAttrColumn, "size", size);
    field!(TVMFFITypeAttrColumn, "begin_index", begin_index);
    size!(TVMFFITypeInfo);
    field!(TVMFFITypeInfo, "type_index", type_index);
    field!(TVMFFITypeInfo, "type_depth", type_depth);
    field!(TVMFFITypeInfo, "type_key", type_key);
    field!(TVMFFITypeInfo, "type_ancestors", type_ancestors);
    field!(TVMFFITypeInfo, "type_key_hash", type_key_hash);
    field!(TVMFFITypeInfo, "num_fields", num_fields);
    field!(TVMFFITypeInfo, "num_methods", num_methods);
    field!(TVMFFITypeInfo, "fields", fields);
    field!(TVMFFITypeInfo, "methods", methods);
    field!(TVMFFITypeInfo, "metadata", metadata);

    let consts: [(&str, String); 15] = [
        (
            "kTVMFFIStaticObjectEnd",
            type_index::STATIC_OBJECT_END.to_string(),
        ),
        (
            "kTVMFFIDynObjectBegin",
            type_index::DYN_OBJECT_BEGIN.to_string(),
        ),
        ("kTVMFFIUnchanged", type_index::UNCHANGED.to_string()),
        ("kTVMFFIBigInt", type_index::BIG_INT.to_string()),
        (
            "kTVMFFIVisitInterrupt",
            type_index::VISIT_INTERRUPT.to_string(),
        ),
        (
            "kTVMFFIFieldFlagBitMaskIsStaticMethod",
            field_flags::IS_STATIC_METHOD.to_string(),
        ),
        (
            "kTVMFFIFieldFlagBitSetterIsFunctionObj",
            field_flags::SETTER_IS_FUNCTION_OBJ.to_string(),
        ),
        ("DLPACK_MAJOR_VERSION", DLPACK_VERSION.major.to_string()),
        ("DLPACK_MINOR_VERSION", DLPACK_VERSION.minor.to_string()),
        (
            "DLPACK_FLAG_BITMASK_READ_ONLY",
            DLPACK_FLAG_BITMASK_READ_ONLY.to_string(),
        ),
        (
            "DLPACK_FLAG_BITMASK_IS_COPIED",
            DLPACK_FLAG_BITMASK_IS_COPIED.to_string(),
        ),
        (
            "DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED",
            DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED.to_string(),
        ),
        (
            "TVM_FFI_VERSION",
            format!(
                "{}.{}.{}",
                TVM_FFI_VERSION.major, TVM_FFI_VERSION.minor, TVM_FFI_VERSION.patch
            ),
        ),
        ("kDLFloat4_e2m1fn", dtype_code::FLOAT4_E2M1FN.to_string()),
        ("kDLTrn", device_type::TRN.to_string()),
    ];
    for (name, value) in consts {
        writeln!(out, "const {name}={value}").unwrap();
    }
    out
}

#[test]
fn abi_layouts_match_the_real_headers() {
    let Some(peer) = support::peer("abi_layouts_match_the_real_headers") else {
        return;
    };
    // Only the real library is needed; the program prints header facts.
    let exe = support::compile(&peer, "layout", support::Runtime::Real, &peer.libdir);
    let (code, c_out) = support::run(&exe);
    assert_eq!(code, Some(0));
    let rust_out = rust_layout();
    for (c_line, rust_line) in c_out.lines().zip(rust_out.lines()) {
        assert_eq!(
            rust_line, c_line,
            "abi.rs (left) differs from the real headers (right)"
        );
    }
    assert_eq!(rust_out.lines().count(), c_out.lines().count());
}

#[test]
fn code_generator_offsets_follow_the_structs() {
    assert_eq!(OBJECT_HEADER_SIZE, 24);
    assert_eq!(ANY_VALUE_OFFSET, 8);
    assert_eq!(ANY_SMALL_STR_LEN_OFFSET, 4);
    assert_eq!(OBJECT_TYPE_INDEX_OFFSET, 8);
    assert_eq!(OBJECT_DELETER_OFFSET, 16);
    assert_eq!(STR_OBJECT_DATA_OFFSET, 24);
    assert_eq!(STR_OBJECT_SIZE_OFFSET, 32);
    assert_eq!(SHAPE_OBJECT_DATA_OFFSET, 24);
    assert_eq!(SHAPE_OBJECT_SIZE_OFFSET, 32);
    assert_eq!(FUNCTION_OBJECT_SAFE_CALL_OFFSET, 24);
    assert_eq!(TENSOR_OBJECT_DLTENSOR_OFFSET, 24);
    assert_eq!(DLTENSOR_BYTE_OFFSET_OFFSET, 40);
    assert_eq!(DLTENSOR_DTYPE_OFFSET, 20);
    assert_eq!(DLTENSOR_DEVICE_ID_OFFSET, 12);
    assert_eq!(SEQ_OBJECT_SIZE_OFFSET, 32);
    assert_eq!(TYPE_INFO_TYPE_KEY_OFFSET, 8);
    assert_eq!(OBJECT_ALLOC_RESERVE, 16);
}

#[test]
#[cfg(target_endian = "little")]
fn ndim_and_dtype_are_one_eight_byte_load() {
    let mut shape = [3i64, 5];
    let tensor = DLTensor {
        data: std::ptr::null_mut(),
        device: DLDevice {
            device_type: 2,
            device_id: 1,
        },
        ndim: 2,
        dtype: DLDataType {
            code: 2,
            bits: 16,
            lanes: 4,
        },
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    // SAFETY: 8 bytes at DLTENSOR_NDIM_OFFSET lie within the struct.
    let loaded = unsafe {
        std::ptr::from_ref(&tensor)
            .cast::<u8>()
            .add(DLTENSOR_NDIM_OFFSET)
            .cast::<u64>()
            .read_unaligned()
    };
    assert_eq!(loaded, ndim_dtype_bits(2, tensor.dtype));
    assert_ne!(loaded, ndim_dtype_bits(1, tensor.dtype));
    let other = DLDataType {
        lanes: 1,
        ..tensor.dtype
    };
    assert_ne!(loaded, ndim_dtype_bits(2, other));
}
