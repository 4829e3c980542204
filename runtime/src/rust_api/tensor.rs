//! [`Tensor`]: a reference to an `ffi.Tensor` (a DLTensor with shared ownership).

use crate::abi::symbols::error_kind::{TYPE_ERROR, VALUE_ERROR};
use crate::abi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor, device_type,
    dtype_code,
};
use crate::rust_api::object_ref::typed_object_ref;
use crate::rust_api::{Error, ObjectRef};

/// A tensor object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor(ObjectRef);

typed_object_ref!(Tensor);

/// Element types a CPU tensor's data can be viewed as.
///
/// # Safety
/// `DTYPE` must describe `Self` exactly (size `bits / 8`, one lane), any bit pattern of that
/// size must be a valid `Self`.
pub unsafe trait Element: Copy {
    /// The matching data type.
    const DTYPE: DLDataType;
}

macro_rules! elements {
    ($($t:ty => $code:expr;)*) => {$(
        // SAFETY: primitive numbers of exactly `bits` bits, valid for every bit pattern.
        unsafe impl Element for $t {
            const DTYPE: DLDataType = DLDataType { code: $code, bits: (size_of::<$t>() * 8) as u8, lanes: 1 };
        }
    )*};
}

elements! {
    f32 => dtype_code::FLOAT;
    f64 => dtype_code::FLOAT;
    i8 => dtype_code::INT;
    i16 => dtype_code::INT;
    i32 => dtype_code::INT;
    i64 => dtype_code::INT;
    u8 => dtype_code::UINT;
    u16 => dtype_code::UINT;
    u32 => dtype_code::UINT;
    u64 => dtype_code::UINT;
}

impl Tensor {
    /// A new tensor from the environment allocator: the thread's or process's DLPack
    /// allocator if one is set, else the default CPU allocator (zero-filled, 64-byte aligned,
    /// compact). Unlike `TVMFFIEnvTensorAlloc`, which raises when none is set.
    pub fn empty(shape: &[i64], dtype: DLDataType, device: DLDevice) -> Result<Tensor, Error> {
        let mut prototype = DLTensor {
            data: core::ptr::null_mut(),
            device,
            ndim: i32::try_from(shape.len())
                .map_err(|_| Error::new(VALUE_ERROR, "too many dimensions"))?,
            dtype,
            shape: shape.as_ptr().cast_mut(),
            strides: core::ptr::null_mut(),
            byte_offset: 0,
        };
        // SAFETY: the prototype describes `shape`, alive for the call.
        let obj = unsafe { crate::tensor::alloc_or_cpu(&mut prototype) }?;
        // SAFETY: a fresh object comes with one strong reference we take over.
        Ok(Tensor(
            unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"),
        ))
    }

    /// A zero-filled CPU tensor of `T`.
    pub fn cpu<T: Element>(shape: &[i64]) -> Result<Tensor, Error> {
        Tensor::empty(
            shape,
            T::DTYPE,
            DLDevice {
                device_type: device_type::CPU,
                device_id: 0,
            },
        )
    }

    /// Takes ownership of an unversioned DLPack tensor (only on success), checking the data
    /// alignment (0 for none) and contiguity when asked.
    ///
    /// # Safety
    /// `managed` must be a valid DLPack tensor whose deleter may be called from any thread.
    pub unsafe fn from_dlpack(
        managed: *mut DLManagedTensor,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<Tensor, Error> {
        // SAFETY: guaranteed by the caller.
        let obj =
            unsafe { crate::tensor::from_dlpack(managed, require_alignment, require_contiguous) }?;
        // SAFETY: a fresh object comes with one strong reference we take over.
        Ok(Tensor(
            unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"),
        ))
    }

    /// As [`Tensor::from_dlpack`], for a versioned DLPack tensor.
    ///
    /// # Safety
    /// As [`Tensor::from_dlpack`].
    pub unsafe fn from_dlpack_versioned(
        managed: *mut DLManagedTensorVersioned,
        require_alignment: usize,
        require_contiguous: bool,
    ) -> Result<Tensor, Error> {
        // SAFETY: guaranteed by the caller.
        let obj = unsafe {
            crate::tensor::from_dlpack_versioned(managed, require_alignment, require_contiguous)
        }?;
        // SAFETY: a fresh object comes with one strong reference we take over.
        Ok(Tensor(
            unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"),
        ))
    }

    /// Exports as an unversioned DLPack tensor sharing the data; the consumer must call its
    /// deleter once.
    pub fn to_dlpack(&self) -> *mut DLManagedTensor {
        // SAFETY: the object is a live Tensor.
        unsafe { crate::tensor::to_dlpack(self.as_ptr()) }
    }

    /// Exports as a versioned DLPack tensor sharing the data; the consumer must call its
    /// deleter once.
    pub fn to_dlpack_versioned(&self) -> *mut DLManagedTensorVersioned {
        // SAFETY: the object is a live Tensor.
        unsafe { crate::tensor::to_dlpack_versioned(self.as_ptr()) }
    }

    /// A view described by `prototype` (shape and strides are copied) keeping `self` alive.
    ///
    /// # Safety
    /// `prototype.data` must point into this tensor's memory, and its shape, strides and byte
    /// offset must stay within it; strides must be non-NULL.
    pub unsafe fn create_view(&self, prototype: &DLTensor) -> Result<Tensor, Error> {
        // SAFETY: guaranteed by the caller.
        let obj = unsafe { crate::tensor::create_view(self.as_ptr(), prototype) }?;
        // SAFETY: a fresh object comes with one strong reference we take over.
        Ok(Tensor(
            unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"),
        ))
    }

    /// The DLTensor.
    pub fn dltensor(&self) -> &DLTensor {
        // SAFETY: the object is a live Tensor.
        unsafe { crate::tensor::dltensor(self.as_ptr()) }
    }

    /// The data pointer (add [`Tensor::byte_offset`] for the first element).
    pub fn data_ptr(&self) -> *mut core::ffi::c_void {
        self.dltensor().data
    }

    /// The dimensions.
    pub fn shape(&self) -> &[i64] {
        // SAFETY: a tensor's shape holds ndim entries.
        unsafe { crate::tensor::shape_of(self.dltensor()) }
    }

    /// The strides in elements (None when NULL, meaning compact).
    pub fn strides(&self) -> Option<&[i64]> {
        let t = self.dltensor();
        (!t.strides.is_null()).then(|| {
            // SAFETY: non-NULL strides hold ndim entries.
            unsafe { core::slice::from_raw_parts(t.strides, t.ndim.max(0) as usize) }
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DLDataType {
        self.dltensor().dtype
    }

    /// The device.
    pub fn device(&self) -> DLDevice {
        self.dltensor().device
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.dltensor().ndim.max(0) as usize
    }

    /// The byte offset of the first element from the data pointer.
    pub fn byte_offset(&self) -> u64 {
        self.dltensor().byte_offset
    }

    /// The number of elements.
    pub fn numel(&self) -> i64 {
        self.shape().iter().product()
    }

    /// Whether the layout is compact row-major.
    pub fn is_contiguous(&self) -> bool {
        // SAFETY: a tensor's shape and strides hold ndim entries.
        unsafe { crate::tensor::is_contiguous(self.dltensor()) }
    }

    /// Whether the first element is aligned to `alignment` bytes.
    pub fn is_aligned(&self, alignment: usize) -> bool {
        crate::tensor::is_aligned(self.dltensor(), alignment)
    }

    fn check_slice<T: Element>(&self) -> Result<usize, Error> {
        let t = self.dltensor();
        if t.device.device_type != device_type::CPU
            && t.device.device_type != device_type::CUDA_HOST
        {
            return Err(Error::new(
                VALUE_ERROR,
                "only host tensors can be viewed as slices",
            ));
        }
        if t.dtype != T::DTYPE {
            return Err(Error::new(
                TYPE_ERROR,
                &format!(
                    "tensor of dtype {} viewed as {}",
                    crate::dtype::format(t.dtype).unwrap_or_default(),
                    crate::dtype::format(T::DTYPE).unwrap_or_default()
                ),
            ));
        }
        if !self.is_contiguous() {
            return Err(Error::new(
                VALUE_ERROR,
                "only contiguous tensors can be viewed as slices",
            ));
        }
        let numel =
            usize::try_from(self.numel()).map_err(|_| Error::new(VALUE_ERROR, "negative shape"))?;
        if numel > 0 && (t.data.is_null() || !self.is_aligned(align_of::<T>())) {
            return Err(Error::new(VALUE_ERROR, "tensor data is NULL or misaligned"));
        }
        Ok(numel)
    }

    /// The elements of a contiguous host tensor of `T`.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], Error> {
        let numel = self.check_slice::<T>()?;
        if numel == 0 {
            return Ok(&[]);
        }
        let t = self.dltensor();
        // SAFETY: checked: host memory, contiguous, matching dtype, aligned, numel elements.
        Ok(unsafe {
            core::slice::from_raw_parts(
                t.data.cast::<u8>().add(t.byte_offset as usize).cast(),
                numel,
            )
        })
    }

    /// The elements of a contiguous host tensor of `T`, mutably.
    ///
    /// # Safety
    /// Tensors share their data: nothing else may read or write it while the slice lives.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice<T: Element>(&self) -> Result<&mut [T], Error> {
        let numel = self.check_slice::<T>()?;
        if numel == 0 {
            return Ok(&mut []);
        }
        let t = self.dltensor();
        // SAFETY: checked as in `as_slice`; exclusivity is guaranteed by the caller.
        Ok(unsafe {
            core::slice::from_raw_parts_mut(
                t.data.cast::<u8>().add(t.byte_offset as usize).cast(),
                numel,
            )
        })
    }
}
