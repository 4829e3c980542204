//! Tensors and DLPack.

use core::ffi::{c_int, c_void};

use super::safe;
use crate::abi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::tensor;

/// `TVMFFITensorFromDLPack`: takes ownership of `from` on success only.
///
/// # Safety
/// `from` must be a valid DLPack tensor; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITensorFromDLPack(
    from: *mut DLManagedTensor,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let obj =
                tensor::from_dlpack(from, require_alignment as usize, require_contiguous != 0)?;
            out.write(obj.cast());
        }
        Ok(())
    })
}

/// `TVMFFITensorFromDLPackVersioned`: takes ownership of `from` on success only.
///
/// # Safety
/// `from` must be a valid versioned DLPack tensor; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITensorFromDLPackVersioned(
    from: *mut DLManagedTensorVersioned,
    require_alignment: i32,
    require_contiguous: i32,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let obj = tensor::from_dlpack_versioned(
                from,
                require_alignment as usize,
                require_contiguous != 0,
            )?;
            out.write(obj.cast());
        }
        Ok(())
    })
}

/// `TVMFFITensorToDLPack`.
///
/// # Safety
/// `from` must be a live Tensor object; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITensorToDLPack(
    from: *mut c_void,
    out: *mut *mut DLManagedTensor,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(tensor::to_dlpack(from.cast())) };
        Ok(())
    })
}

/// `TVMFFITensorToDLPackVersioned`.
///
/// # Safety
/// `from` must be a live Tensor object; `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITensorToDLPackVersioned(
    from: *mut c_void,
    out: *mut *mut DLManagedTensorVersioned,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { out.write(tensor::to_dlpack_versioned(from.cast())) };
        Ok(())
    })
}

/// `TVMFFITensorCreateUnsafeView`.
///
/// # Safety
/// `source` must be a live object; `prototype` valid with data inside the source's memory;
/// `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFITensorCreateUnsafeView(
    source: *mut c_void,
    prototype: *const DLTensor,
    out: *mut *mut c_void,
) -> c_int {
    safe(|| {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let obj = tensor::create_view(source.cast(), &*prototype)?;
            out.write(obj.cast());
        }
        Ok(())
    })
}

/// `TVMFFIEnvTensorAlloc`: the thread's (else the process's) DLPack allocator; a RuntimeError
/// when none is set, as in libtvm_ffi. An allocator's non-zero code is returned unchanged.
///
/// # Safety
/// `prototype` must be a valid prototype (dtype, ndim, shape, device); `out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TVMFFIEnvTensorAlloc(
    prototype: *mut DLTensor,
    out: *mut *mut c_void,
) -> c_int {
    let mut code = 0;
    let status = safe(|| {
        // SAFETY: guaranteed by the caller.
        code = unsafe { tensor::env_alloc_raw(prototype, out.cast()) };
        Ok(())
    });
    if status != 0 { status } else { code }
}
