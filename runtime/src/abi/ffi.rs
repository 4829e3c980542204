//! TVM-FFI core structs (`tvm/ffi/c_api.h`): objects, `TVMFFIAny`, byte arrays, shapes,
//! sequences, errors, functions, allocators and type information.

use core::ffi::{c_char, c_int, c_void};

use super::constants::type_index;
use super::dlpack::*;

/// `TVMFFIVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TVMFFIVersion {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

/// The version of the TVM-FFI headers this ABI mirrors (0.1.16, shipped by the
/// `apache-tvm-ffi` 0.1.15.post2 wheel).
pub const TVM_FFI_VERSION: TVMFFIVersion = TVMFFIVersion {
    major: 0,
    minor: 1,
    patch: 16,
};

/// Object deleter: `void (*deleter)(void* self, int flags)`.
pub type TVMFFIObjectDeleter = Option<unsafe extern "C" fn(obj: *mut c_void, flags: c_int)>;

/// `TVMFFIObject`: the 24-byte header at the start of every object.
#[repr(C)]
#[derive(Debug)]
pub struct TVMFFIObject {
    /// Strong count in the low 32 bits, weak count in the high 32 bits.
    pub combined_ref_count: u64,
    /// Type index of the object.
    pub type_index: i32,
    /// Padding (zero).
    pub padding: u32,
    /// Deleter, called with [`deleter_flags`](super::deleter_flags).
    pub deleter: TVMFFIObjectDeleter,
}

/// The value union of [`TVMFFIAny`].
#[repr(C)]
#[derive(Clone, Copy)]
pub union TVMFFIValue {
    /// Integers and bools.
    pub v_int64: i64,
    /// Floats.
    pub v_float64: f64,
    /// Pointers of any kind.
    pub v_ptr: *mut c_void,
    /// Raw C string.
    pub v_c_str: *const c_char,
    /// Object pointer.
    pub v_obj: *mut TVMFFIObject,
    /// Data type.
    pub v_dtype: DLDataType,
    /// Device.
    pub v_device: DLDevice,
    /// Inline bytes of small strings.
    pub v_bytes: [u8; 8],
    /// Raw 64 bits.
    pub v_uint64: u64,
}

/// `TVMFFIAny`: a 16-byte tagged value.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TVMFFIAny {
    /// A [`type_index`] value.
    pub type_index: i32,
    /// `zero_padding`, or `small_str_len` for SmallStr / SmallBytes.
    pub small_str_len: u32,
    /// The value.
    pub value: TVMFFIValue,
}

impl TVMFFIAny {
    /// The None value, all bits zero.
    pub const NONE: TVMFFIAny = TVMFFIAny {
        type_index: type_index::NONE,
        small_str_len: 0,
        value: TVMFFIValue { v_uint64: 0 },
    };
}

impl core::fmt::Debug for TVMFFIAny {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: every bit pattern of the 8-byte union is a valid u64.
        let bits = unsafe { self.value.v_uint64 };
        f.debug_struct("TVMFFIAny")
            .field("type_index", &self.type_index)
            .field("small_str_len", &self.small_str_len)
            .field("value", &format_args!("{bits:#018x}"))
            .finish()
    }
}

/// `TVMFFIByteArray`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIByteArray {
    /// Data pointer (not NUL-terminated in general).
    pub data: *const c_char,
    /// Length in bytes.
    pub size: usize,
}

/// `TVMFFIShapeCell`: payload of a Shape object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIShapeCell {
    /// Dimensions.
    pub data: *const i64,
    /// Number of dimensions.
    pub size: usize,
}

/// `TVMFFISeqCell`: payload of Array and List objects.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFISeqCell {
    /// First element (an array of `TVMFFIAny`).
    pub data: *mut c_void,
    /// Number of elements.
    pub size: i64,
    /// Capacity.
    pub capacity: i64,
    /// Frees `data`.
    pub data_deleter: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// `update_backtrace` of an error cell.
pub type TVMFFIUpdateBacktrace =
    Option<unsafe extern "C" fn(obj: *mut c_void, backtrace: *const TVMFFIByteArray, mode: i32)>;

/// `TVMFFIErrorCell`: payload of an Error object (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIErrorCell {
    /// Error kind, e.g. `ValueError`.
    pub kind: TVMFFIByteArray,
    /// Message.
    pub message: TVMFFIByteArray,
    /// Backtrace text.
    pub backtrace: TVMFFIByteArray,
    /// Replaces or appends to the backtrace.
    pub update_backtrace: TVMFFIUpdateBacktrace,
    /// Cause (an Error object) or NULL.
    pub cause_chain: *mut c_void,
    /// Extra context object or NULL.
    pub extra_context: *mut c_void,
}

/// `TVMFFISafeCallType`.
pub type TVMFFISafeCallType = unsafe extern "C" fn(
    handle: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int;

/// `TVMFFIFunctionCell`: payload of a Function object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIFunctionCell {
    /// The safe-call entry point.
    pub safe_call: Option<TVMFFISafeCallType>,
    /// C++ fast path (unused by this runtime; NULL).
    pub cpp_call: *mut c_void,
}

/// `TVMFFIOpaqueObjectCell`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIOpaqueObjectCell {
    /// The foreign handle.
    pub handle: *mut c_void,
}

/// `TVMFFIObjectAllocHeader`: the header a runtime may place before an object.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIObjectAllocHeader {
    /// Frees the allocation.
    pub delete_space: Option<unsafe extern "C" fn(ptr: *mut c_void)>,
}

/// `TVMFFICustomAllocator`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFICustomAllocator {
    /// Allocates `size` bytes at `alignment` for an object of `type_index`.
    pub allocate: Option<
        unsafe extern "C" fn(
            size: usize,
            alignment: usize,
            type_index: i32,
            ctx: *mut c_void,
        ) -> *mut c_void,
    >,
    /// Passed to `allocate`.
    pub context: *mut c_void,
}

/// `TVMFFIFieldGetter`.
pub type TVMFFIFieldGetter =
    Option<unsafe extern "C" fn(field: *mut c_void, result: *mut TVMFFIAny) -> c_int>;
/// `TVMFFIObjectCreator`.
pub type TVMFFIObjectCreator = Option<unsafe extern "C" fn(result: *mut *mut c_void) -> c_int>;

/// `TVMFFIFieldInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIFieldInfo {
    /// Field name.
    pub name: TVMFFIByteArray,
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// JSON metadata.
    pub metadata: TVMFFIByteArray,
    /// `TVMFFIFieldFlagBitMask` bits.
    pub flags: i64,
    /// Size in bytes.
    pub size: i64,
    /// Alignment in bytes.
    pub alignment: i64,
    /// Offset from the object start.
    pub offset: i64,
    /// Getter.
    pub getter: TVMFFIFieldGetter,
    /// Setter (a function pointer or a Function object, see the flags).
    pub setter: *mut c_void,
    /// Default value or factory.
    pub default_value_or_factory: TVMFFIAny,
    /// Static type index of the field.
    pub field_static_type_index: i32,
}

/// `TVMFFIMethodInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFIMethodInfo {
    /// Method name.
    pub name: TVMFFIByteArray,
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// JSON metadata.
    pub metadata: TVMFFIByteArray,
    /// Flags.
    pub flags: i64,
    /// The method (a Function in an Any).
    pub method: TVMFFIAny,
}

/// `TVMFFITypeMetadata`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeMetadata {
    /// Docstring.
    pub doc: TVMFFIByteArray,
    /// Creator.
    pub creator: TVMFFIObjectCreator,
    /// Total object size.
    pub total_size: i32,
    /// `TVMFFISEqHashKind`.
    pub structural_eq_hash_kind: i32,
}

/// `TVMFFITypeAttrColumn`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeAttrColumn {
    /// Values indexed by `type_index - begin_index`.
    pub data: *const TVMFFIAny,
    /// Number of entries.
    pub size: i32,
    /// Type index of entry 0.
    pub begin_index: i32,
}

/// `TVMFFITypeInfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TVMFFITypeInfo {
    /// Type index.
    pub type_index: i32,
    /// Depth in the type hierarchy.
    pub type_depth: i32,
    /// Type key, e.g. `ffi.String`.
    pub type_key: TVMFFIByteArray,
    /// Ancestors, `type_depth` entries.
    pub type_ancestors: *const *const TVMFFITypeInfo,
    /// Hash of the type key.
    pub type_key_hash: u64,
    /// Number of fields.
    pub num_fields: i32,
    /// Number of methods.
    pub num_methods: i32,
    /// Fields.
    pub fields: *const TVMFFIFieldInfo,
    /// Methods.
    pub methods: *const TVMFFIMethodInfo,
    /// Metadata or NULL.
    pub metadata: *const TVMFFITypeMetadata,
}

/// `TVMFFIStreamHandle`.
pub type TVMFFIStreamHandle = *mut c_void;
