//! Tensors: DLPack round trips keep the data pointer and run the producer's deleter once,
//! after the last user; CPU tensors from the default allocator; views.

use std::sync::atomic::{AtomicUsize, Ordering};

use safecall_runtime::abi::{
    DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLTensor, device_type,
    dtype_code,
};
use safecall_runtime::{Any, AnyView, Function, Tensor};

/// A DLPack producer owning a Vec<f32> and counting its deleter calls (the managed tensor
/// comes first, so a pointer to the producer is one to the managed tensor).
#[repr(C)]
struct Producer {
    managed: DLManagedTensor,
    data: Vec<f32>,
    shape: Vec<i64>,
    deleted: &'static AtomicUsize,
}

unsafe extern "C" fn producer_deleter(this: *mut DLManagedTensor) {
    // SAFETY: `this` is the first field of a boxed Producer (manager_ctx points at it).
    let producer = unsafe { Box::from_raw((*this).manager_ctx.cast::<Producer>()) };
    producer.deleted.fetch_add(1, Ordering::SeqCst);
}

/// A one-dimensional float32 DLTensor on device type `device_type` (device 0) with shape
/// `shape` and no data.
fn float32_vector(device_type: i32, shape: *mut i64) -> DLTensor {
    DLTensor {
        data: core::ptr::null_mut(),
        device: DLDevice {
            device_type,
            device_id: 0,
        },
        ndim: 1,
        dtype: DLDataType {
            code: dtype_code::FLOAT,
            bits: 32,
            lanes: 1,
        },
        shape,
        strides: core::ptr::null_mut(),
        byte_offset: 0,
    }
}

fn produce(values: &[f32], deleted: &'static AtomicUsize) -> (*mut DLManagedTensor, *mut f32) {
    let mut p = Box::new(Producer {
        managed: DLManagedTensor {
            // Data and shape are set below, once the box holds them.
            dl_tensor: float32_vector(device_type::CPU, core::ptr::null_mut()),
            manager_ctx: core::ptr::null_mut(),
            deleter: Some(producer_deleter),
        },
        data: values.to_vec(),
        shape: vec![values.len() as i64],
        deleted,
    });
    p.managed.dl_tensor.data = p.data.as_mut_ptr().cast();
    p.managed.dl_tensor.shape = p.shape.as_mut_ptr();
    let data = p.data.as_mut_ptr();
    let raw = Box::into_raw(p);
    // SAFETY: `raw` is a live box.
    unsafe { (*raw).managed.manager_ctx = raw.cast() };
    (raw.cast(), data)
}

#[test]
fn dlpack_round_trip_keeps_data_and_deletes_once() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let (managed, data) = produce(&[1.0, 2.0, 3.0], &DELETED);
    // SAFETY: a valid producer tensor; ownership passes on success.
    let tensor = unsafe { Tensor::from_dlpack(managed, 4, true) }.unwrap();
    assert_eq!(tensor.data_ptr(), data.cast());
    assert_eq!(tensor.shape(), [3]);
    assert_eq!(tensor.strides(), Some(&[1i64][..]));
    assert_eq!(tensor.as_slice::<f32>().unwrap(), [1.0, 2.0, 3.0]);

    // Out and back in again, unversioned and versioned.
    let exported = tensor.to_dlpack();
    let exported_v = tensor.to_dlpack_versioned();
    // SAFETY: our own exports, valid DLPack tensors.
    let again = unsafe { Tensor::from_dlpack(exported, 0, false) }.unwrap();
    // SAFETY: as above.
    let again_v = unsafe { Tensor::from_dlpack_versioned(exported_v, 0, false) }.unwrap();
    assert_eq!(again.data_ptr(), data.cast());
    assert_eq!(again_v.data_ptr(), data.cast());
    drop(tensor);
    drop(again);
    assert_eq!(
        DELETED.load(Ordering::SeqCst),
        0,
        "deleted while a user remains"
    );
    drop(again_v);
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);
}

#[test]
fn failed_import_leaves_ownership_with_the_producer() {
    static DELETED: AtomicUsize = AtomicUsize::new(0);
    let (managed, _) = produce(&[1.0; 4], &DELETED);
    // SAFETY: a valid producer tensor.
    unsafe { (*managed).dl_tensor.byte_offset = 2 };
    // SAFETY: as above.
    let err = unsafe { Tensor::from_dlpack(managed, 4, false) }.unwrap_err();
    assert_eq!(
        err.to_string(),
        "RuntimeError: FromDLPack: Data is not aligned to 4 bytes."
    );
    assert_eq!(DELETED.load(Ordering::SeqCst), 0);
    // SAFETY: still ours to delete.
    unsafe { ((*managed).deleter.unwrap())(managed) };
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);
}

#[test]
fn cpu_tensor_from_shape_and_dtype() {
    let t = Tensor::cpu::<f32>(&[2, 3]).unwrap();
    assert_eq!(t.shape(), [2, 3]);
    assert_eq!(t.strides(), Some(&[3i64, 1][..]));
    assert!(t.is_aligned(64));
    assert_eq!(t.as_slice::<f32>().unwrap(), [0.0; 6]);
    // SAFETY: nothing else uses the data meanwhile.
    let data = unsafe { t.as_mut_slice::<f32>() }.unwrap();
    data.copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(t.as_slice::<f32>().unwrap()[4], 5.0);
    assert!(t.as_slice::<i32>().is_err());
    let empty = Tensor::cpu::<i64>(&[0, 5]).unwrap();
    assert_eq!(empty.as_slice::<i64>().unwrap(), [0i64; 0]);
    let scalar = Tensor::cpu::<u8>(&[]).unwrap();
    assert_eq!(scalar.as_slice::<u8>().unwrap(), [0]);
}

#[test]
fn versioned_dlpack_of_a_cpu_tensor() {
    let t = Tensor::cpu::<i32>(&[4]).unwrap();
    let exported: *mut DLManagedTensorVersioned = t.to_dlpack_versioned();
    assert_eq!(t.as_object().strong_count(), 2);
    // SAFETY: our own export; the consumer calls the deleter once.
    unsafe {
        assert_eq!((*exported).version.major, 1);
        assert_eq!((*exported).dl_tensor.data, t.data_ptr());
        ((*exported).deleter.unwrap())(exported);
    }
    assert_eq!(t.as_object().strong_count(), 1);
}

#[test]
fn views_keep_their_source_alive() {
    let t = Tensor::cpu::<f32>(&[4]).unwrap();
    // SAFETY: exclusive use during the test.
    unsafe { t.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(&[0.0, 1.0, 2.0, 3.0]);
    let mut proto = *t.dltensor();
    let shape = [2i64];
    let strides = [1i64];
    proto.shape = shape.as_ptr().cast_mut();
    proto.strides = strides.as_ptr().cast_mut();
    proto.byte_offset = 8;
    // SAFETY: the view stays within the source's data.
    let view = unsafe { t.create_view(&proto) }.unwrap();
    drop(t);
    assert_eq!(view.as_slice::<f32>().unwrap(), [2.0, 3.0]);
}

#[test]
fn tensors_pass_through_functions() {
    let f = Function::from_closure(|args| {
        let t: Tensor = args[0].cast()?;
        Ok(Any::from(t.as_slice::<f32>()?.iter().sum::<f32>() as f64))
    });
    let t = Tensor::cpu::<f32>(&[3]).unwrap();
    // SAFETY: exclusive use during the test.
    unsafe { t.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(&[1.0, 2.0, 4.0]);
    let sum: f64 = f.call(&[AnyView::from(&t)]).unwrap().cast().unwrap();
    assert_eq!(sum, 7.0);
}

/// What an allocator's error callback was given.
#[derive(Default)]
struct RaisedByAllocator {
    kind: String,
    message: String,
}

unsafe extern "C" fn record_allocator_error(
    ctx: *mut core::ffi::c_void,
    kind: *const core::ffi::c_char,
    message: *const core::ffi::c_char,
) {
    // SAFETY: `ctx` is the test's RaisedByAllocator; the strings are NUL-terminated.
    let (raised, kind, message) = unsafe {
        (
            &mut *ctx.cast::<RaisedByAllocator>(),
            std::ffi::CStr::from_ptr(kind),
            std::ffi::CStr::from_ptr(message),
        )
    };
    raised.kind = kind.to_string_lossy().into_owned();
    raised.message = message.to_string_lossy().into_owned();
}

#[test]
fn the_default_allocator_raises_a_runtime_error_for_a_device_it_cannot_serve() {
    let mut shape = [4i64];
    let mut prototype = float32_vector(device_type::CUDA, shape.as_mut_ptr());
    let mut out: *mut DLManagedTensorVersioned = core::ptr::null_mut();
    let mut raised = RaisedByAllocator::default();
    // SAFETY: a valid prototype, a writable out slot and a matching error callback.
    let code = unsafe {
        safecall_runtime::tensor::cpu_allocator(
            &mut prototype,
            &mut out,
            (&mut raised as *mut RaisedByAllocator).cast(),
            Some(record_allocator_error),
        )
    };
    assert_eq!(code, -1);
    assert!(out.is_null());
    assert_eq!(
        raised.kind,
        safecall_runtime::abi::symbols::error_kind::RUNTIME_ERROR
    );
    assert_eq!(
        raised.message,
        "the default CPU allocator cannot allocate on device type 2"
    );
}

#[test]
fn env_tensor_alloc_raises_without_an_allocator_and_uses_the_cpu_one_once_installed() {
    use safecall_runtime::capi::{TVMFFIEnvSetDLPackManagedTensorAllocator, TVMFFIEnvTensorAlloc};
    let mut shape = [4i64];
    let mut prototype = float32_vector(device_type::CPU, shape.as_mut_ptr());
    let mut out: *mut core::ffi::c_void = core::ptr::null_mut();
    // This thread has no allocator (no test installs one globally).
    // SAFETY: a valid prototype and out slot.
    let rc = unsafe { TVMFFIEnvTensorAlloc(&mut prototype, &mut out) };
    assert_eq!(rc, -1);
    assert!(out.is_null());
    let err = safecall_runtime::Error::take_raised().expect("an error is raised");
    assert_eq!(err.kind(), "RuntimeError");
    assert_eq!(
        err.message(),
        safecall_runtime::tensor::NO_ALLOCATOR_MESSAGE
    );
    // The CPU allocator, installed on request (this thread only).
    let mut previous = None;
    // SAFETY: a valid allocator and out slot.
    let rc = unsafe {
        TVMFFIEnvSetDLPackManagedTensorAllocator(
            Some(safecall_runtime::tensor::cpu_allocator),
            0,
            &mut previous,
        )
    };
    assert_eq!(rc, 0);
    assert!(previous.is_none());
    // SAFETY: as above.
    let rc = unsafe { TVMFFIEnvTensorAlloc(&mut prototype, &mut out) };
    assert_eq!(rc, 0);
    // SAFETY: a fresh Tensor object with one reference, taken over here.
    let any = unsafe {
        Any::from_raw_owned_unchecked(safecall_runtime::abi::TVMFFIAny {
            type_index: safecall_runtime::abi::type_index::TENSOR,
            small_str_len: 0,
            value: safecall_runtime::abi::TVMFFIValue { v_obj: out.cast() },
        })
    };
    let t = any.view().cast::<Tensor>().unwrap();
    assert_eq!(t.shape(), &[4]);
    assert!(t.is_aligned(safecall_runtime::tensor::CPU_DATA_ALIGNMENT));
    // SAFETY: clears this thread's allocator again.
    unsafe { TVMFFIEnvSetDLPackManagedTensorAllocator(None, 0, core::ptr::null_mut()) };
}
