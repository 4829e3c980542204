//! Offsets and sizes for code generators, derived from the `#[repr(C)]` structs with
//! `offset_of!` / `size_of` and checked at compile time.

use core::mem::{offset_of, size_of};

use super::dlpack::*;
use super::ffi::*;

/// `sizeof(TVMFFIAny)`.
pub const ANY_SIZE: usize = size_of::<TVMFFIAny>();
/// Offset of `TVMFFIAny::type_index`.
pub const ANY_TYPE_INDEX_OFFSET: usize = offset_of!(TVMFFIAny, type_index);
/// Offset of `TVMFFIAny::small_str_len` (also `zero_padding`).
pub const ANY_SMALL_STR_LEN_OFFSET: usize = offset_of!(TVMFFIAny, small_str_len);
/// Offset of the value union of `TVMFFIAny`.
pub const ANY_VALUE_OFFSET: usize = offset_of!(TVMFFIAny, value);

/// `sizeof(TVMFFIObject)`: object payloads (cells) start here.
pub const OBJECT_HEADER_SIZE: usize = size_of::<TVMFFIObject>();
/// Offset of `TVMFFIObject::combined_ref_count`.
pub const OBJECT_REF_COUNT_OFFSET: usize = offset_of!(TVMFFIObject, combined_ref_count);
/// Offset of `TVMFFIObject::type_index`.
pub const OBJECT_TYPE_INDEX_OFFSET: usize = offset_of!(TVMFFIObject, type_index);
/// Offset of `TVMFFIObject::deleter`.
pub const OBJECT_DELETER_OFFSET: usize = offset_of!(TVMFFIObject, deleter);
/// Bytes this runtime reserves in front of every object it allocates.
pub const OBJECT_ALLOC_RESERVE: usize = 16;

/// `sizeof(TVMFFIByteArray)`.
pub const BYTE_ARRAY_SIZE: usize = size_of::<TVMFFIByteArray>();
/// Offset of `TVMFFIByteArray::data`.
pub const BYTE_ARRAY_DATA_OFFSET: usize = offset_of!(TVMFFIByteArray, data);
/// Offset of `TVMFFIByteArray::size`.
pub const BYTE_ARRAY_SIZE_OFFSET: usize = offset_of!(TVMFFIByteArray, size);

/// Offset of the shape data pointer inside a Shape object.
pub const SHAPE_OBJECT_DATA_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFIShapeCell, data);
/// Offset of the shape length inside a Shape object.
pub const SHAPE_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFIShapeCell, size);
/// Offset of the element pointer inside an Array object.
pub const SEQ_OBJECT_DATA_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFISeqCell, data);
/// Offset of the element count inside an Array object.
pub const SEQ_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE + offset_of!(TVMFFISeqCell, size);
/// Offset of the word count (a `size_t`) inside an `ffi.BigInt` object (`c_api.h`'s
/// `kTVMFFIBigInt`: the header, the word count, then the words).
pub const BIG_INT_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE;
/// Offset of the first word (the least significant; 64-bit, native-endian, signed two's
/// complement, minimal length) inside an `ffi.BigInt` object.
pub const BIG_INT_OBJECT_WORDS_OFFSET: usize = OBJECT_HEADER_SIZE + size_of::<usize>();
/// Offset of the string/bytes data pointer inside a String or Bytes object.
pub const STR_OBJECT_DATA_OFFSET: usize = OBJECT_HEADER_SIZE + BYTE_ARRAY_DATA_OFFSET;
/// Offset of the string/bytes length inside a String or Bytes object.
pub const STR_OBJECT_SIZE_OFFSET: usize = OBJECT_HEADER_SIZE + BYTE_ARRAY_SIZE_OFFSET;
/// Offset of the `safe_call` pointer inside a Function object.
pub const FUNCTION_OBJECT_SAFE_CALL_OFFSET: usize =
    OBJECT_HEADER_SIZE + offset_of!(TVMFFIFunctionCell, safe_call);
/// Offset of the embedded `DLTensor` inside a Tensor object.
pub const TENSOR_OBJECT_DLTENSOR_OFFSET: usize = OBJECT_HEADER_SIZE;

/// `sizeof(DLTensor)`.
pub const DLTENSOR_SIZE: usize = size_of::<DLTensor>();
/// Offset of `DLTensor::data`.
pub const DLTENSOR_DATA_OFFSET: usize = offset_of!(DLTensor, data);
/// Offset of `DLTensor::device` (device type; the id follows at +4).
pub const DLTENSOR_DEVICE_TYPE_OFFSET: usize =
    offset_of!(DLTensor, device) + offset_of!(DLDevice, device_type);
/// Offset of `DLTensor::device.device_id`.
pub const DLTENSOR_DEVICE_ID_OFFSET: usize =
    offset_of!(DLTensor, device) + offset_of!(DLDevice, device_id);
/// Offset of `DLTensor::ndim`.
pub const DLTENSOR_NDIM_OFFSET: usize = offset_of!(DLTensor, ndim);
/// Offset of `DLTensor::dtype` (code u8, bits u8, lanes u16).
pub const DLTENSOR_DTYPE_OFFSET: usize = offset_of!(DLTensor, dtype);
/// Offset of `DLTensor::shape`.
pub const DLTENSOR_SHAPE_OFFSET: usize = offset_of!(DLTensor, shape);
/// Offset of `DLTensor::strides`.
pub const DLTENSOR_STRIDES_OFFSET: usize = offset_of!(DLTensor, strides);
/// Offset of `DLTensor::byte_offset`.
pub const DLTENSOR_BYTE_OFFSET_OFFSET: usize = offset_of!(DLTensor, byte_offset);

/// Offset of `DLDataType::code`.
pub const DTYPE_CODE_OFFSET: usize = offset_of!(DLDataType, code);
/// Offset of `DLDataType::bits`.
pub const DTYPE_BITS_OFFSET: usize = offset_of!(DLDataType, bits);
/// Offset of `DLDataType::lanes`.
pub const DTYPE_LANES_OFFSET: usize = offset_of!(DLDataType, lanes);

/// Bit position of `DLDataType::bits` in the dtype read as one little-endian `u32` (as a
/// `TVMFFIAny` holds it, and as generated code loads it from a `DLTensor`).
pub const DTYPE_BITS_SHIFT: u32 = (DTYPE_BITS_OFFSET * 8) as u32;
/// Bit position of `DLDataType::lanes` in the dtype read as one little-endian `u32`.
pub const DTYPE_LANES_SHIFT: u32 = (DTYPE_LANES_OFFSET * 8) as u32;
/// Bit position of `DLDevice::device_id` in the device read as one little-endian `u64`.
pub const DEVICE_ID_SHIFT: u32 = (offset_of!(DLDevice, device_id) * 8) as u32;

impl DLDataType {
    /// The dtype as one little-endian `u32`: the value a `TVMFFIAny` of type `DataType`
    /// holds in its low bits and the value of a 4-byte load from `DLTensor::dtype`.
    pub const fn to_bits(self) -> u32 {
        self.code as u32
            | (self.bits as u32) << DTYPE_BITS_SHIFT
            | (self.lanes as u32) << DTYPE_LANES_SHIFT
    }
}

/// Bit position of `DLTensor::dtype` in the 8 bytes at [`DLTENSOR_NDIM_OFFSET`] read as one
/// little-endian `u64` (`ndim` is the low half).
pub const NDIM_DTYPE_DTYPE_SHIFT: u32 = ((DLTENSOR_DTYPE_OFFSET - DLTENSOR_NDIM_OFFSET) * 8) as u32;

const _: () = assert!(DLTENSOR_DTYPE_OFFSET == DLTENSOR_NDIM_OFFSET + 4);

/// `ndim` and `dtype` of a DLTensor as the one little-endian `u64` an 8-byte load at
/// [`DLTENSOR_NDIM_OFFSET`] reads: one comparison checks both.
pub const fn ndim_dtype_bits(ndim: i32, dtype: DLDataType) -> u64 {
    ndim as u32 as u64 | (dtype.to_bits() as u64) << NDIM_DTYPE_DTYPE_SHIFT
}

impl DLDevice {
    /// The device as one little-endian `u64`: the value a `TVMFFIAny` of type `Device` holds.
    pub const fn to_bits(self) -> u64 {
        self.device_type as u32 as u64 | (self.device_id as u32 as u64) << DEVICE_ID_SHIFT
    }
}

/// Offset of `TVMFFITypeInfo::type_key` (a `TVMFFIByteArray`).
pub const TYPE_INFO_TYPE_KEY_OFFSET: usize = offset_of!(TVMFFITypeInfo, type_key);

const _: () = {
    assert!(ANY_SIZE == 16);
    assert!(OBJECT_HEADER_SIZE == 24);
    assert!(DLTENSOR_SIZE == 48);
    assert!(size_of::<TVMFFIErrorCell>() == 72);
    assert!(size_of::<DLDataType>() == 4);
    assert!(size_of::<DLDevice>() == 8);
    assert!(
        DLDataType {
            code: 1,
            bits: 2,
            lanes: 3
        }
        .to_bits()
        .to_le_bytes()[DTYPE_BITS_OFFSET]
            == 2
    );
    assert!(
        DLDevice {
            device_type: 1,
            device_id: 5
        }
        .to_bits()
            >> DEVICE_ID_SHIFT
            == 5
    );
};
