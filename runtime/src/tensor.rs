//! Tensor objects: `TVMFFIObject` + `DLTensor`, made from DLPack tensors (versioned or not),
//! as views of other tensors, or by an environment allocator; and their DLPack export.
//!
//! A tensor made from DLPack borrows the producer's shape (and strides, when given; compact
//! strides are otherwise computed into the tensor's own allocation) and calls the producer's
//! deleter exactly once, when the tensor's strong count reaches zero. Exports hold a strong
//! reference until the consumer calls their deleter.

use core::ffi::{c_char, c_int, c_void};
use core::ptr;

use crate::abi::symbols::error_kind::{INTERNAL_ERROR, RUNTIME_ERROR};
use crate::abi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned,
    DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED, DLPACK_VERSION, DLPackVersion, DLTensor,
    TVMFFIObject, device_type, type_index,
};
use crate::object::{self, ObjectLayout};
use crate::rust_api::Error;

/// The two DLPack managed-tensor structs.
pub trait ManagedTensor {
    /// The producer's tensor.
    fn dl_tensor(&self) -> &DLTensor;
    /// Calls the producer's deleter.
    ///
    /// # Safety
    /// `this` must be a managed tensor whose deleter has not run.
    unsafe fn delete(this: *mut Self);
}

impl ManagedTensor for DLManagedTensor {
    fn dl_tensor(&self) -> &DLTensor {
        &self.dl_tensor
    }
    unsafe fn delete(this: *mut Self) {
        // SAFETY: guaranteed by the caller.
        if let Some(deleter) = unsafe { (*this).deleter } {
            // SAFETY: the consumer calls the producer's deleter once.
            unsafe { deleter(this) };
        }
    }
}

impl ManagedTensor for DLManagedTensorVersioned {
    fn dl_tensor(&self) -> &DLTensor {
        &self.dl_tensor
    }
    unsafe fn delete(this: *mut Self) {
        // SAFETY: guaranteed by the caller.
        if let Some(deleter) = unsafe { (*this).deleter } {
            // SAFETY: the consumer calls the producer's deleter once.
            unsafe { deleter(this) };
        }
    }
}

/// Payload of a tensor that owns a DLPack managed tensor.
#[repr(C)]
struct DLPackTensorObj<M: ManagedTensor> {
    header: TVMFFIObject,
    tensor: DLTensor,
    managed: *mut M,
}

// SAFETY: repr(C) with the header first.
unsafe impl<M: ManagedTensor> ObjectLayout for DLPackTensorObj<M> {}

impl<M: ManagedTensor> Drop for DLPackTensorObj<M> {
    fn drop(&mut self) {
        // SAFETY: the tensor owns the managed tensor; this runs once, at strong count zero.
        unsafe { M::delete(self.managed) };
    }
}

/// Payload of a view that keeps its source tensor alive; shape and strides follow it.
#[repr(C)]
struct ViewTensorObj {
    header: TVMFFIObject,
    tensor: DLTensor,
    source: *mut TVMFFIObject,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for ViewTensorObj {}

impl Drop for ViewTensorObj {
    fn drop(&mut self) {
        // SAFETY: the view owns one strong reference to its source.
        unsafe { object::dec_ref(self.source) };
    }
}

/// Whether the device's data pointers are plain addresses (CPU, CUDA, ROCm and host memory).
pub fn is_direct_address(device: DLDevice) -> bool {
    device.device_type <= device_type::CUDA_HOST
        || device.device_type == device_type::CUDA_MANAGED
        || device.device_type == device_type::ROCM
        || device.device_type == device_type::ROCM_HOST
}

/// The dimensions of a DLTensor.
///
/// # Safety
/// `t.shape` must hold `t.ndim` entries (or `t.ndim` be at most 0).
pub unsafe fn shape_of(t: &DLTensor) -> &[i64] {
    if t.ndim <= 0 || t.shape.is_null() {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { core::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }
}

/// Whether `t` is compact row-major (NULL strides, an empty tensor, or matching strides
/// ignoring extent-1 dimensions).
///
/// # Safety
/// `t.shape` and (when non-NULL) `t.strides` must hold `t.ndim` entries.
pub unsafe fn is_contiguous(t: &DLTensor) -> bool {
    if t.strides.is_null() {
        return true;
    }
    // SAFETY: guaranteed by the caller.
    let shape = unsafe { shape_of(t) };
    if shape.contains(&0) {
        return true;
    }
    // SAFETY: guaranteed by the caller.
    let strides = unsafe { core::slice::from_raw_parts(t.strides, shape.len()) };
    let mut expected = 1i64;
    for (&extent, &stride) in shape.iter().zip(strides).rev() {
        if extent == 1 {
            continue;
        }
        if stride != expected {
            return false;
        }
        expected = expected.wrapping_mul(extent);
    }
    true
}

/// Whether the first element of `t` is aligned to `alignment` bytes (only the byte offset
/// counts on devices whose pointers are not addresses).
pub fn is_aligned(t: &DLTensor, alignment: usize) -> bool {
    if is_direct_address(t.device) {
        (t.data as usize)
            .wrapping_add(t.byte_offset as usize)
            .is_multiple_of(alignment)
    } else {
        (t.byte_offset as usize).is_multiple_of(alignment)
    }
}

/// Bytes of `numel` elements of `dtype`, rounded up.
pub fn data_size(numel: u64, dtype: DLDataType) -> u64 {
    (numel * u64::from(dtype.bits) * u64::from(dtype.lanes)).div_ceil(8)
}

/// Fills compact row-major strides for `shape`.
fn fill_compact_strides(shape: &[i64], out: &mut [i64]) {
    let mut stride = 1i64;
    for (extent, slot) in shape.iter().zip(out.iter_mut()).rev() {
        *slot = stride;
        stride = stride.wrapping_mul(*extent);
    }
}

/// Wraps a managed tensor in a tensor object without checks (the object owns it).
///
/// # Safety
/// `managed` must be a valid managed tensor that this call takes ownership of.
unsafe fn wrap_managed<M: ManagedTensor>(managed: *mut M) -> *mut TVMFFIObject {
    // SAFETY: guaranteed by the caller.
    let tensor = *unsafe { &*managed }.dl_tensor();
    let needs_strides = tensor.strides.is_null() && tensor.ndim != 0;
    let extra = if needs_strides {
        tensor.ndim.max(0) as usize * 8
    } else {
        0
    };
    let obj = object::alloc(
        type_index::TENSOR,
        DLPackTensorObj {
            header: object::blank_header(),
            tensor,
            managed,
        },
        extra,
    );
    if needs_strides {
        // SAFETY: the object has room for ndim strides; the producer's shape has ndim entries.
        unsafe {
            let strides = object::tail::<DLPackTensorObj<M>, i64>(obj);
            let out = core::slice::from_raw_parts_mut(strides, tensor.ndim as usize);
            fill_compact_strides(shape_of(&tensor), out);
            (*obj).tensor.strides = strides;
        }
    }
    obj.cast()
}

fn from_dlpack_error(message: String) -> Error {
    Error::new(RUNTIME_ERROR, &message)
}

/// Checks the alignment and contiguity requirements of `TVMFFITensorFromDLPack*`.
///
/// # Safety
/// `t` must be a valid DLTensor.
unsafe fn check_requirements(
    t: &DLTensor,
    alignment: usize,
    contiguous: bool,
) -> Result<(), Error> {
    if alignment != 0 && !is_aligned(t, alignment) {
        return Err(from_dlpack_error(format!(
            "FromDLPack: Data is not aligned to {alignment} bytes."
        )));
    }
    // SAFETY: guaranteed by the caller.
    if contiguous && !unsafe { is_contiguous(t) } {
        return Err(from_dlpack_error(
            "FromDLPack: Tensor is not contiguous.".to_owned(),
        ));
    }
    Ok(())
}

/// `TVMFFITensorFromDLPack`: takes ownership of `managed` on success only.
///
/// # Safety
/// `managed` must be a valid unversioned DLPack tensor.
pub unsafe fn from_dlpack(
    managed: *mut DLManagedTensor,
    alignment: usize,
    contiguous: bool,
) -> Result<*mut TVMFFIObject, Error> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        check_requirements(&(*managed).dl_tensor, alignment, contiguous)?;
        Ok(wrap_managed(managed))
    }
}

/// `TVMFFITensorFromDLPackVersioned`: takes ownership of `managed` on success only.
///
/// # Safety
/// `managed` must be a valid versioned DLPack tensor.
pub unsafe fn from_dlpack_versioned(
    managed: *mut DLManagedTensorVersioned,
    alignment: usize,
    contiguous: bool,
) -> Result<*mut TVMFFIObject, Error> {
    // SAFETY: guaranteed by the caller.
    unsafe {
        check_requirements(&(*managed).dl_tensor, alignment, contiguous)?;
        if (*managed).flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED != 0 {
            return Err(from_dlpack_error(
                "Subbyte type padded is not yet supported".to_owned(),
            ));
        }
        Ok(wrap_managed(managed))
    }
}

/// The DLTensor of a tensor object (of any runtime).
///
/// # Safety
/// `obj` must be a live Tensor object that outlives `'a`.
pub unsafe fn dltensor<'a>(obj: *mut TVMFFIObject) -> &'a DLTensor {
    // SAFETY: the DLTensor follows the header in every tensor object.
    unsafe { &*obj.add(1).cast::<DLTensor>() }
}

/// Deleter of the unversioned exports made by [`to_dlpack`].
///
/// # Safety
/// `this` must come from [`to_dlpack`]; called once by the consumer.
unsafe extern "C" fn exported_deleter(this: *mut DLManagedTensor) {
    // SAFETY: `this` is a box made by `to_dlpack` holding a strong reference.
    unsafe {
        let boxed = Box::from_raw(this);
        object::dec_ref(boxed.manager_ctx.cast());
    }
}

/// Deleter of the versioned exports made by [`to_dlpack_versioned`].
///
/// # Safety
/// `this` must come from [`to_dlpack_versioned`]; called once by the consumer.
unsafe extern "C" fn exported_versioned_deleter(this: *mut DLManagedTensorVersioned) {
    // SAFETY: `this` is a box made by `to_dlpack_versioned` holding a strong reference.
    unsafe {
        let boxed = Box::from_raw(this);
        object::dec_ref(boxed.manager_ctx.cast());
    }
}

/// `TVMFFITensorToDLPack`: a managed tensor sharing the data, holding a strong reference.
///
/// # Safety
/// `obj` must be a live Tensor object.
pub unsafe fn to_dlpack(obj: *mut TVMFFIObject) -> *mut DLManagedTensor {
    // SAFETY: guaranteed by the caller.
    unsafe {
        object::inc_ref(obj);
        Box::into_raw(Box::new(DLManagedTensor {
            dl_tensor: *dltensor(obj),
            manager_ctx: obj.cast(),
            deleter: Some(exported_deleter),
        }))
    }
}

/// `TVMFFITensorToDLPackVersioned`: as [`to_dlpack`], versioned (flags 0).
///
/// # Safety
/// `obj` must be a live Tensor object.
pub unsafe fn to_dlpack_versioned(obj: *mut TVMFFIObject) -> *mut DLManagedTensorVersioned {
    // SAFETY: guaranteed by the caller.
    unsafe {
        object::inc_ref(obj);
        Box::into_raw(Box::new(DLManagedTensorVersioned {
            version: DLPACK_VERSION,
            manager_ctx: obj.cast(),
            deleter: Some(exported_versioned_deleter),
            flags: 0,
            dl_tensor: *dltensor(obj),
        }))
    }
}

/// `TVMFFITensorCreateUnsafeView`: a tensor described by `prototype` (data pointer, dtype,
/// device, byte offset; shape and strides are copied) that keeps `source` alive.
///
/// # Safety
/// `source` must be a live object and `prototype` a valid DLTensor with non-NULL strides
/// (unless ndim is 0).
pub unsafe fn create_view(
    source: *mut TVMFFIObject,
    prototype: &DLTensor,
) -> Result<*mut TVMFFIObject, Error> {
    if prototype.strides.is_null() {
        return Err(Error::new(
            INTERNAL_ERROR,
            "Check not null: prototype.strides ",
        ));
    }
    let ndim = prototype.ndim.max(0) as usize;
    // SAFETY: guaranteed by the caller.
    unsafe { object::inc_ref(source) };
    let obj = object::alloc(
        type_index::TENSOR,
        ViewTensorObj {
            header: object::blank_header(),
            tensor: *prototype,
            source,
        },
        ndim * 16,
    );
    // SAFETY: the object has room for ndim dims and ndim strides; the prototype holds ndim.
    unsafe {
        let shape = object::tail::<ViewTensorObj, i64>(obj);
        let strides = shape.add(ndim);
        if ndim > 0 {
            ptr::copy_nonoverlapping(prototype.shape, shape, ndim);
            ptr::copy_nonoverlapping(prototype.strides, strides, ndim);
        }
        (*obj).tensor.shape = shape;
        (*obj).tensor.strides = strides;
    }
    Ok(obj.cast())
}

// ---------------------------------------------------------------------------
// The default CPU allocator
// ---------------------------------------------------------------------------

/// Alignment of the data of tensors made by [`cpu_allocator`].
pub const CPU_DATA_ALIGNMENT: usize = 64;

/// A managed tensor made by [`cpu_allocator`], with the storage it points into.
#[repr(C)]
struct CpuManaged {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
    layout: std::alloc::Layout,
}

/// Deleter of tensors made by [`cpu_allocator`].
///
/// # Safety
/// `this` must come from [`cpu_allocator`]; called once.
unsafe extern "C" fn cpu_deleter(this: *mut DLManagedTensorVersioned) {
    // SAFETY: `this` is the first field of a boxed CpuManaged that owns the data.
    unsafe {
        let boxed = Box::from_raw(this.cast::<CpuManaged>());
        std::alloc::dealloc(boxed.managed.dl_tensor.data.cast(), boxed.layout);
    }
}

/// A `DLPackManagedTensorAllocator` for CPU tensors: zero-filled, 64-byte aligned data,
/// compact layout (NULL strides). `Tensor::empty` falls back to it when no allocator is set;
/// `TVMFFIEnvTensorAlloc` does not (as in libtvm_ffi): install it with
/// `TVMFFIEnvSetDLPackManagedTensorAllocator(cpu_allocator, ...)`.
///
/// # Safety
/// Callable from C with a valid prototype and output slot.
pub unsafe extern "C" fn cpu_allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char)>,
) -> c_int {
    let fail = |message: &str| {
        let text = std::ffi::CString::new(message).unwrap_or_default();
        let kind = std::ffi::CString::new(RUNTIME_ERROR).unwrap_or_default();
        if let Some(set_error) = set_error {
            // SAFETY: the caller's error callback takes NUL-terminated strings.
            unsafe { set_error(error_ctx, kind.as_ptr(), text.as_ptr()) };
        }
        -1
    };
    // SAFETY: the caller passes a valid prototype.
    let proto = unsafe { &*prototype };
    if proto.device.device_type != device_type::CPU {
        return fail(&format!(
            "the default CPU allocator cannot allocate on device type {}",
            proto.device.device_type
        ));
    }
    // SAFETY: the prototype's shape holds ndim entries.
    let shape = unsafe { shape_of(proto) }.to_vec();
    if shape.iter().any(|&d| d < 0) {
        return fail("the default CPU allocator got a negative dimension");
    }
    let numel = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
    let bytes = numel
        .and_then(|n| n.checked_mul(u64::from(proto.dtype.bits) * u64::from(proto.dtype.lanes)));
    let Some(bytes) = bytes.map(|b| b.div_ceil(8)) else {
        return fail("the default CPU allocator got a tensor too large to allocate");
    };
    let Ok(layout) =
        std::alloc::Layout::from_size_align((bytes as usize).max(1), CPU_DATA_ALIGNMENT)
    else {
        return fail("the default CPU allocator got a tensor too large to allocate");
    };
    // SAFETY: the layout has a non-zero size.
    let data = unsafe { std::alloc::alloc_zeroed(layout) };
    if data.is_null() {
        return fail(&format!(
            "the default CPU allocator could not allocate {bytes} bytes"
        ));
    }
    let mut boxed = Box::new(CpuManaged {
        managed: DLManagedTensorVersioned {
            version: DLPackVersion {
                major: DLPACK_VERSION.major,
                minor: DLPACK_VERSION.minor,
            },
            manager_ctx: ptr::null_mut(),
            deleter: Some(cpu_deleter),
            flags: 0,
            dl_tensor: DLTensor {
                data: data.cast(),
                device: proto.device,
                ndim: proto.ndim,
                dtype: proto.dtype,
                shape: ptr::null_mut(),
                strides: ptr::null_mut(),
                byte_offset: 0,
            },
        },
        shape,
        layout,
    });
    boxed.managed.dl_tensor.shape = boxed.shape.as_mut_ptr();
    let raw = Box::into_raw(boxed);
    // SAFETY: `raw` is a live box; the managed tensor is its first field.
    unsafe {
        (*raw).managed.manager_ctx = raw.cast();
        out.write(raw.cast());
    }
    0
}

/// Wraps the result of an environment allocator (see `TVMFFIEnvTensorAlloc`).
///
/// # Safety
/// `managed` must be NULL or a valid versioned managed tensor this call takes ownership of.
pub unsafe fn from_allocated(
    managed: *mut DLManagedTensorVersioned,
) -> Result<*mut TVMFFIObject, Error> {
    if managed.is_null() {
        return Err(Error::new(
            RUNTIME_ERROR,
            "Check failed: (dlpack_tensor != nullptr) is false: TVMFFIEnvTensorAlloc: failed to allocate a tensor from the allocator",
        ));
    }
    // SAFETY: guaranteed by the caller.
    Ok(unsafe { wrap_managed(managed) })
}

/// The message of `TVMFFIEnvTensorAlloc` when no allocator is installed (libtvm_ffi's).
pub const NO_ALLOCATOR_MESSAGE: &str = "TVMFFIEnvTensorAlloc: allocator is nullptr, likely because TVMFFIEnvSetDLPackManagedTensorAllocator has not been called.";

/// `TVMFFIEnvTensorAlloc`: allocates with the thread's (else the process's) DLPack allocator;
/// with none installed, raises a RuntimeError as libtvm_ffi does. Returns the allocator's code
/// unchanged when it fails (its error already raised through the callback).
///
/// # Safety
/// `prototype` must be a valid prototype; `out` writable.
pub unsafe fn env_alloc_raw(prototype: *mut DLTensor, out: *mut *mut TVMFFIObject) -> c_int {
    match crate::env::get_allocator() {
        // SAFETY: guaranteed by the caller.
        Some(allocator) => unsafe { alloc_with(allocator, prototype, out) },
        None => {
            Error::new(RUNTIME_ERROR, NO_ALLOCATOR_MESSAGE).set_raised();
            -1
        }
    }
}

/// Allocates with `allocator` and wraps the result in a Tensor object.
///
/// # Safety
/// As [`env_alloc_raw`]; `allocator` follows the DLPack allocator contract.
unsafe fn alloc_with(
    allocator: unsafe extern "C" fn(
        *mut DLTensor,
        *mut *mut DLManagedTensorVersioned,
        *mut c_void,
        Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char)>,
    ) -> c_int,
    prototype: *mut DLTensor,
    out: *mut *mut TVMFFIObject,
) -> c_int {
    let mut managed: *mut DLManagedTensorVersioned = ptr::null_mut();
    // SAFETY: the allocator follows the DLPack allocator contract.
    let ret = unsafe {
        allocator(
            prototype,
            &mut managed,
            ptr::null_mut(),
            Some(allocator_set_error),
        )
    };
    if ret != 0 {
        return ret;
    }
    // SAFETY: on success the allocator hands over a managed tensor (or NULL).
    match unsafe { from_allocated(managed) } {
        Ok(obj) => {
            // SAFETY: the caller passes a writable slot.
            unsafe { out.write(obj) };
            0
        }
        Err(error) => {
            error.set_raised();
            -1
        }
    }
}

/// A new tensor from the installed allocator, or from [`cpu_allocator`] when none is
/// installed (the Rust API's convenience; the C API raises then).
///
/// # Safety
/// As [`env_alloc_raw`].
pub unsafe fn alloc_or_cpu(prototype: *mut DLTensor) -> Result<*mut TVMFFIObject, Error> {
    let allocator = crate::env::get_allocator().unwrap_or(cpu_allocator);
    let mut out = ptr::null_mut();
    // SAFETY: guaranteed by the caller.
    match unsafe { alloc_with(allocator, prototype, &mut out) } {
        0 => Ok(out),
        code => Err(Error::take_raised_after_failure(code)),
    }
}

/// [`env_alloc_raw`] with the error taken out of the thread-local slot.
///
/// # Safety
/// As [`env_alloc_raw`].
pub unsafe fn env_alloc(prototype: *mut DLTensor) -> Result<*mut TVMFFIObject, Error> {
    let mut out = ptr::null_mut();
    // SAFETY: guaranteed by the caller.
    match unsafe { env_alloc_raw(prototype, &mut out) } {
        0 => Ok(out),
        code => Err(Error::take_raised_after_failure(code)),
    }
}

/// The `set_error` callback given to allocators: raises the error on this thread.
///
/// # Safety
/// Called with NUL-terminated kind and message.
unsafe extern "C" fn allocator_set_error(
    _ctx: *mut c_void,
    kind: *const c_char,
    message: *const c_char,
) {
    // SAFETY: the allocator passes NUL-terminated strings.
    let (kind, message) = unsafe {
        (
            core::ffi::CStr::from_ptr(kind).to_bytes(),
            core::ffi::CStr::from_ptr(message).to_bytes(),
        )
    };
    crate::error::set_raised_from_bytes(kind, message);
}
