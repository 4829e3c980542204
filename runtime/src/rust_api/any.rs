//! [`Any`] (an owned value) and [`AnyView`] (a borrowed one): safe wrappers over `TVMFFIAny`,
//! with conversions from Rust values and checked conversions back.

use core::ffi::{CStr, c_void};
use core::marker::PhantomData;

use crate::abi::symbols::error_kind::{INTERNAL_ERROR, TYPE_ERROR};
use crate::abi::{
    DLDataType, DLDevice, TVMFFIAny, TVMFFIByteArray, TVMFFIObject, TVMFFIValue, type_index as ti,
};
use crate::object;
use crate::rust_api::object_ref::TypedObjectRef;
use crate::rust_api::{Bytes, Error, Function, ObjectRef, Shape, String, Tensor};

/// A borrowed value: what functions receive as arguments. It never owns an object; `'a` ties
/// it to whatever it borrows (an [`Any`], an object reference, a C string).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct AnyView<'a> {
    raw: TVMFFIAny,
    _borrow: PhantomData<&'a ()>,
}

/// An owned value: POD values inline, objects with one strong reference, strings of up to 7
/// bytes inline. Never a raw C string, byte-array pointer or rvalue reference.
#[repr(transparent)]
pub struct Any {
    raw: TVMFFIAny,
}

// SAFETY: objects are reference counted atomically and shared immutably.
unsafe impl Send for Any {}
// SAFETY: as above.
unsafe impl Sync for Any {}

fn pod(type_index: i32, value: TVMFFIValue) -> TVMFFIAny {
    TVMFFIAny {
        type_index,
        small_str_len: 0,
        value,
    }
}

/// The TypeError for a failed conversion, worded like the C++ runtime's.
pub fn conversion_error(from_type_index: i32, to: &str) -> Error {
    Error::new(
        TYPE_ERROR,
        &format!(
            "Cannot convert from type `{}` to `{to}`",
            crate::registry::type_key_of(from_type_index)
        ),
    )
}

impl<'a> AnyView<'a> {
    /// The None value.
    pub const fn none() -> Self {
        AnyView {
            raw: TVMFFIAny::NONE,
            _borrow: PhantomData,
        }
    }

    /// Wraps a raw value.
    ///
    /// # Safety
    /// `raw` must be a valid value whose referents (objects, strings, tensors) outlive `'a`.
    pub const unsafe fn from_raw(raw: TVMFFIAny) -> Self {
        AnyView {
            raw,
            _borrow: PhantomData,
        }
    }

    /// Views a raw value in place.
    ///
    /// # Safety
    /// As [`AnyView::from_raw`].
    pub unsafe fn from_raw_ref(raw: &TVMFFIAny) -> AnyView<'_> {
        AnyView {
            raw: *raw,
            _borrow: PhantomData,
        }
    }

    /// Views a raw C argument array.
    ///
    /// # Safety
    /// `args` must hold `num_args` valid values that outlive `'a` (or `num_args` be 0).
    pub unsafe fn slice_from_raw(args: *const TVMFFIAny, num_args: i32) -> &'a [AnyView<'a>] {
        if num_args <= 0 || args.is_null() {
            &[]
        } else {
            // SAFETY: guaranteed by the caller; AnyView is repr(transparent).
            unsafe { core::slice::from_raw_parts(args.cast(), num_args as usize) }
        }
    }

    /// The raw value.
    pub const fn as_raw(&self) -> &TVMFFIAny {
        &self.raw
    }

    /// The type index (`abi::type_index`).
    pub const fn type_index(&self) -> i32 {
        self.raw.type_index
    }

    /// Whether this is None.
    pub const fn is_none(&self) -> bool {
        self.raw.type_index == ti::NONE
    }

    /// Converts to `T`, failing with a TypeError (or the conversion's own error).
    pub fn cast<T: FromAnyView<'a>>(&self) -> Result<T, Error> {
        T::from_any_view(self)
    }

    /// The object pointer, if this holds an object.
    pub fn object_ptr(&self) -> Option<*mut TVMFFIObject> {
        // SAFETY: every bit pattern of the union is a valid pointer value; it is only an
        // object when the type index says so.
        let obj = unsafe { self.raw.value.v_obj };
        (self.raw.type_index >= ti::STATIC_OBJECT_BEGIN).then_some(obj)
    }

    /// The bytes of a string-like value (SmallStr, String, RawStr) or bytes-like value
    /// (SmallBytes, Bytes, ByteArrayPtr), borrowed from this view.
    pub fn str_bytes(&self) -> Option<&[u8]> {
        let raw = &self.raw;
        // SAFETY: each arm reads the union member its type index selects; referents outlive 'a.
        unsafe {
            match raw.type_index {
                ti::SMALL_STR | ti::SMALL_BYTES => {
                    Some(&raw.value.v_bytes[..(raw.small_str_len as usize).min(7)])
                }
                ti::STR | ti::BYTES => Some(crate::string::object_bytes(raw.value.v_obj)),
                ti::RAW_STR if !raw.value.v_c_str.is_null() => {
                    Some(CStr::from_ptr(raw.value.v_c_str).to_bytes())
                }
                ti::BYTE_ARRAY_PTR if !raw.value.v_ptr.is_null() => Some(crate::error::bytes_of(
                    &*raw.value.v_ptr.cast::<TVMFFIByteArray>(),
                )),
                _ => None,
            }
        }
    }
}

impl core::fmt::Debug for AnyView<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("AnyView").field(&self.raw).finish()
    }
}

impl Default for AnyView<'_> {
    fn default() -> Self {
        AnyView::none()
    }
}

impl Any {
    /// The None value.
    pub const fn none() -> Self {
        Any {
            raw: TVMFFIAny::NONE,
        }
    }

    /// Takes ownership of a raw value.
    ///
    /// # Safety
    /// `raw` must be an owned value (objects carry a strong reference the `Any` takes over;
    /// no RawStr, ByteArrayPtr or ObjectRValueRef).
    pub const unsafe fn from_raw_owned_unchecked(raw: TVMFFIAny) -> Self {
        Any { raw }
    }

    /// Takes ownership of a raw value produced by this runtime's own code.
    pub(crate) fn from_raw_owned(raw: TVMFFIAny) -> Self {
        Any { raw }
    }

    /// An owned copy of `view` (`TVMFFIAnyViewToOwnedAny`): objects gain a reference, raw C
    /// strings and byte arrays are copied into String/Bytes, rvalue references are moved out
    /// of their slot (which becomes NULL).
    pub fn from_view(view: AnyView<'_>) -> Result<Any, Error> {
        let raw = view.raw;
        // SAFETY: each arm reads the union member its type index selects.
        unsafe {
            match raw.type_index {
                t if t >= ti::STATIC_OBJECT_BEGIN => {
                    if raw.value.v_obj.is_null() {
                        // Not a valid value (None is type index 0), but a caller can pass it:
                        // an error, not a crash.
                        return Err(Error::new(
                            TYPE_ERROR,
                            &format!("a NULL object pointer with type index {t}"),
                        ));
                    }
                    object::inc_ref(raw.value.v_obj);
                    Ok(Any { raw })
                }
                ti::RAW_STR => {
                    let bytes = view.str_bytes().unwrap_or_default();
                    Ok(Any {
                        raw: crate::string::string_to_any(bytes),
                    })
                }
                ti::BYTE_ARRAY_PTR => {
                    let bytes = view.str_bytes().unwrap_or_default();
                    Ok(Any {
                        raw: crate::string::bytes_to_any(bytes),
                    })
                }
                ti::OBJECT_RVALUE_REF => {
                    let slot = raw.value.v_ptr.cast::<*mut TVMFFIObject>();
                    let obj = *slot;
                    if obj.is_null() {
                        return Err(Error::new(
                            INTERNAL_ERROR,
                            "Check failed: (obj_addr[0] != nullptr) is false: RValueRef already moved",
                        ));
                    }
                    *slot = core::ptr::null_mut();
                    Ok(Any {
                        raw: pod((*obj).type_index, TVMFFIValue { v_obj: obj }),
                    })
                }
                _ => Ok(Any { raw }),
            }
        }
    }

    /// Gives up ownership, returning the raw value.
    pub fn into_raw(self) -> TVMFFIAny {
        let raw = self.raw;
        core::mem::forget(self);
        raw
    }

    /// The raw value (still owned by `self`).
    pub const fn as_raw(&self) -> &TVMFFIAny {
        &self.raw
    }

    /// A view borrowing this value.
    pub fn view(&self) -> AnyView<'_> {
        AnyView {
            raw: self.raw,
            _borrow: PhantomData,
        }
    }

    /// The type index (`abi::type_index`).
    pub const fn type_index(&self) -> i32 {
        self.raw.type_index
    }

    /// Whether this is None.
    pub const fn is_none(&self) -> bool {
        self.raw.type_index == ti::NONE
    }

    /// The object pointer (NULL when this holds no object).
    pub fn object_ptr(&self) -> *mut TVMFFIObject {
        self.view().object_ptr().unwrap_or(core::ptr::null_mut())
    }

    /// Converts to `T`, failing with a TypeError.
    pub fn cast<'a, T: FromAnyView<'a>>(&'a self) -> Result<T, Error> {
        T::from_any_view(&self.view())
    }
}

impl Drop for Any {
    fn drop(&mut self) {
        if self.raw.type_index >= ti::STATIC_OBJECT_BEGIN {
            // SAFETY: an owned Any holds one strong reference to its object.
            unsafe { object::dec_ref(self.raw.value.v_obj) };
        }
    }
}

impl Clone for Any {
    fn clone(&self) -> Self {
        if self.raw.type_index >= ti::STATIC_OBJECT_BEGIN {
            // SAFETY: `self` holds a strong reference, so the object is alive.
            unsafe { object::inc_ref(self.raw.value.v_obj) };
        }
        Any { raw: self.raw }
    }
}

impl Default for Any {
    fn default() -> Self {
        Any::none()
    }
}

impl core::fmt::Debug for Any {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Any").field(&self.raw).finish()
    }
}

impl<'a> From<&'a Any> for AnyView<'a> {
    fn from(value: &'a Any) -> Self {
        value.view()
    }
}

// The DLDataType / DLDevice conversions below pack the value into the low bytes of
// `v_uint64` (zeroing the rest, as the ABI wants), which is the union layout on
// little-endian targets, the only ones TVM-FFI supports.
const _: () = assert!(
    cfg!(target_endian = "little"),
    "TVM-FFI targets are little-endian"
);

macro_rules! pod_conversions {
    ($($t:ty => $index:expr, $field:ident, $conv:expr;)*) => {$(
        impl From<$t> for AnyView<'_> {
            fn from(value: $t) -> Self {
                #[allow(clippy::redundant_closure_call)]
                AnyView { raw: pod($index, TVMFFIValue { $field: ($conv)(value) }), _borrow: PhantomData }
            }
        }
        impl From<$t> for Any {
            fn from(value: $t) -> Self {
                Any { raw: AnyView::from(value).raw }
            }
        }
    )*};
}

pod_conversions! {
    i64 => ti::INT, v_int64, |v| v;
    i32 => ti::INT, v_int64, i64::from;
    i16 => ti::INT, v_int64, i64::from;
    i8 => ti::INT, v_int64, i64::from;
    u32 => ti::INT, v_int64, i64::from;
    u16 => ti::INT, v_int64, i64::from;
    u8 => ti::INT, v_int64, i64::from;
    bool => ti::BOOL, v_int64, i64::from;
    f64 => ti::FLOAT, v_float64, |v| v;
    f32 => ti::FLOAT, v_float64, f64::from;
    DLDataType => ti::DATA_TYPE, v_uint64, |d: DLDataType| u64::from(d.to_bits());
    DLDevice => ti::DEVICE, v_uint64, |d: DLDevice| d.to_bits();
}

impl From<()> for AnyView<'_> {
    fn from(_: ()) -> Self {
        AnyView::none()
    }
}

impl From<()> for Any {
    fn from(_: ()) -> Self {
        Any::none()
    }
}

impl<'a> From<&'a CStr> for AnyView<'a> {
    /// A RawStr view of a NUL-terminated string.
    fn from(value: &'a CStr) -> Self {
        AnyView {
            raw: pod(
                ti::RAW_STR,
                TVMFFIValue {
                    v_c_str: value.as_ptr(),
                },
            ),
            _borrow: PhantomData,
        }
    }
}

impl From<&str> for Any {
    /// A string (SmallStr up to 7 bytes, a String object beyond).
    fn from(value: &str) -> Self {
        Any {
            raw: crate::string::string_to_any(value.as_bytes()),
        }
    }
}

impl From<std::string::String> for Any {
    fn from(value: std::string::String) -> Self {
        Any::from(value.as_str())
    }
}

impl AnyView<'static> {
    /// An opaque pointer value (`kTVMFFIOpaquePtr`).
    pub fn opaque_ptr(ptr: *mut c_void) -> Self {
        AnyView {
            raw: pod(ti::OPAQUE_PTR, TVMFFIValue { v_ptr: ptr }),
            _borrow: PhantomData,
        }
    }
}

/// Checked conversion out of an [`AnyView`].
pub trait FromAnyView<'a>: Sized {
    /// Converts `view`, failing with a TypeError naming both types.
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error>;
}

impl<'a> FromAnyView<'a> for i64 {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            // SAFETY: ints and bools are stored in v_int64.
            ti::INT | ti::BOOL => Ok(unsafe { view.raw.value.v_int64 }),
            t => Err(conversion_error(t, "int")),
        }
    }
}

impl<'a> FromAnyView<'a> for bool {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            // SAFETY: ints and bools are stored in v_int64.
            ti::INT | ti::BOOL => Ok(unsafe { view.raw.value.v_int64 } != 0),
            t => Err(conversion_error(t, "bool")),
        }
    }
}

impl<'a> FromAnyView<'a> for f64 {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            // SAFETY: floats are stored in v_float64.
            ti::FLOAT => Ok(unsafe { view.raw.value.v_float64 }),
            // SAFETY: ints and bools are stored in v_int64.
            ti::INT | ti::BOOL => Ok(unsafe { view.raw.value.v_int64 } as f64),
            t => Err(conversion_error(t, "float")),
        }
    }
}

impl<'a> FromAnyView<'a> for DLDataType {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            // SAFETY: data types are stored in v_dtype.
            ti::DATA_TYPE => Ok(unsafe { view.raw.value.v_dtype }),
            t => Err(conversion_error(t, "DataType")),
        }
    }
}

impl<'a> FromAnyView<'a> for DLDevice {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            // SAFETY: devices are stored in v_device.
            ti::DEVICE => Ok(unsafe { view.raw.value.v_device }),
            t => Err(conversion_error(t, "Device")),
        }
    }
}

impl<'a> FromAnyView<'a> for *mut c_void {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            // SAFETY: opaque pointers are stored in v_ptr.
            ti::OPAQUE_PTR => Ok(unsafe { view.raw.value.v_ptr }),
            ti::NONE => Ok(core::ptr::null_mut()),
            t => Err(conversion_error(t, "void*")),
        }
    }
}

impl<'a> FromAnyView<'a> for std::string::String {
    /// Copies a string (SmallStr, String object or raw C string), replacing invalid UTF-8.
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            ti::SMALL_STR | ti::STR | ti::RAW_STR => {
                let bytes = view.str_bytes().unwrap_or_default();
                Ok(std::string::String::from_utf8_lossy(bytes).into_owned())
            }
            t => Err(conversion_error(t, "ffi.String")),
        }
    }
}

impl<'a> FromAnyView<'a> for Vec<u8> {
    /// Copies a byte string (SmallBytes, Bytes object or byte-array pointer).
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            ti::SMALL_BYTES | ti::BYTES | ti::BYTE_ARRAY_PTR => {
                Ok(view.str_bytes().unwrap_or_default().to_vec())
            }
            t => Err(conversion_error(t, "ffi.Bytes")),
        }
    }
}

impl<'a> FromAnyView<'a> for Any {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        Any::from_view(*view)
    }
}

impl<'a> FromAnyView<'a> for ObjectRef {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.object_ptr() {
            // SAFETY: the view borrows a live object.
            Some(obj) => Ok(unsafe { ObjectRef::from_raw_borrowed(obj) }),
            None => Err(conversion_error(view.type_index(), "ffi.Object")),
        }
    }
}

/// Typed object references convert from views holding exactly their type index.
macro_rules! object_conversions {
    ($($t:ident => $index:expr, $key:expr;)*) => {$(
        impl<'a> FromAnyView<'a> for $t {
            fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
                match view.object_ptr() {
                    Some(obj) if view.type_index() == $index => {
                        // SAFETY: the view borrows a live object of this type.
                        Ok($t::from_object_ref(unsafe { ObjectRef::from_raw_borrowed(obj) }))
                    }
                    _ => Err(conversion_error(view.type_index(), $key)),
                }
            }
        }
        impl<'a> From<&'a $t> for AnyView<'a> {
            fn from(value: &'a $t) -> Self {
                value.as_object_ref().into()
            }
        }
        impl From<$t> for Any {
            fn from(value: $t) -> Self {
                value.into_object_ref().into()
            }
        }
    )*};
}

object_conversions! {
    Shape => ti::SHAPE, "ffi.Shape";
    Tensor => ti::TENSOR, "ffi.Tensor";
    Function => ti::FUNCTION, "ffi.Function";
    Error => ti::ERROR, "ffi.Error";
}

impl<'a> From<&'a ObjectRef> for AnyView<'a> {
    fn from(value: &'a ObjectRef) -> Self {
        let obj = value.as_ptr();
        // SAFETY: the reference keeps the object alive for 'a.
        let type_index = unsafe { (*obj).type_index };
        AnyView {
            raw: pod(type_index, TVMFFIValue { v_obj: obj }),
            _borrow: PhantomData,
        }
    }
}

impl From<ObjectRef> for Any {
    fn from(value: ObjectRef) -> Self {
        // SAFETY: the reference's ownership moves into the Any.
        let type_index = unsafe { (*value.as_ptr()).type_index };
        Any {
            raw: pod(
                type_index,
                TVMFFIValue {
                    v_obj: value.into_raw(),
                },
            ),
        }
    }
}

impl<'a> From<&'a String> for AnyView<'a> {
    fn from(value: &'a String) -> Self {
        value.as_any().view()
    }
}

impl From<String> for Any {
    fn from(value: String) -> Self {
        value.into_any()
    }
}

impl<'a> From<&'a Bytes> for AnyView<'a> {
    fn from(value: &'a Bytes) -> Self {
        value.as_any().view()
    }
}

impl From<Bytes> for Any {
    fn from(value: Bytes) -> Self {
        value.into_any()
    }
}

impl<'a> FromAnyView<'a> for String {
    /// A String (shares the object; copies raw C strings).
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            ti::SMALL_STR | ti::STR | ti::RAW_STR => {
                Ok(String::from_any_unchecked(Any::from_view(*view)?))
            }
            t => Err(conversion_error(t, "ffi.String")),
        }
    }
}

impl<'a> FromAnyView<'a> for Bytes {
    /// Bytes (shares the object; copies byte-array pointers).
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.type_index() {
            ti::SMALL_BYTES | ti::BYTES | ti::BYTE_ARRAY_PTR => {
                Ok(Bytes::from_any_unchecked(Any::from_view(*view)?))
            }
            t => Err(conversion_error(t, "ffi.Bytes")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_values_round_trip() {
        let dtype = DLDataType {
            code: 2,
            bits: 16,
            lanes: 4,
        };
        let device = DLDevice {
            device_type: 2,
            device_id: 3,
        };
        assert_eq!(AnyView::from(dtype).cast::<DLDataType>().unwrap(), dtype);
        assert_eq!(Any::from(device).cast::<DLDevice>().unwrap(), device);
        // SAFETY: the whole 8-byte value is initialized.
        let bits = unsafe { AnyView::from(dtype).as_raw().value.v_uint64 };
        assert_eq!(bits >> 32, 0);
        assert_eq!(AnyView::from(-5i32).cast::<i64>().unwrap(), -5);
        assert!(AnyView::from(true).cast::<bool>().unwrap());
        assert_eq!(AnyView::from(1.5f32).cast::<f64>().unwrap(), 1.5);
        let err = AnyView::from(1.5).cast::<i64>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "TypeError: Cannot convert from type `float` to `int`"
        );
    }
}
