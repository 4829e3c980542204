//! A recording environment allocator for tests: CPU tensors from the runtime's CPU allocator,
//! each allocation's size and each free counted per thread, so a test can assert that every
//! allocation a host function made was freed exactly once (on error paths too). A failing
//! mode raises the allocator's own error, as an out-of-memory allocator would.

use std::cell::RefCell;
use std::ffi::{CString, c_char, c_void};

use safecall_runtime::abi::{DLManagedTensorVersioned, DLPackManagedTensorAllocator, DLTensor};

/// What the allocator of this thread recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Bytes of each allocation, in order.
    pub sizes: Vec<u64>,
    /// Data addresses of the allocations not yet freed.
    pub live: Vec<usize>,
    /// Frees so far.
    pub frees: usize,
    /// A free of an address that was not live (a double free).
    pub bad_frees: usize,
}

thread_local! {
    static RECORD: RefCell<Record> = RefCell::default();
    static FAIL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// This thread's record so far.
pub fn record() -> Record {
    RECORD.with_borrow(|r| r.clone())
}

/// Installs the recording allocator for this thread (not globally), clearing the record;
/// returns the previous allocator.
pub fn install() -> DLPackManagedTensorAllocator {
    RECORD.with_borrow_mut(|r| *r = Record::default());
    FAIL.with_borrow_mut(|f| *f = None);
    set(Some(recording_allocator))
}

/// Sets this thread's allocator (not the global one); returns the previous one.
pub fn set(allocator: DLPackManagedTensorAllocator) -> DLPackManagedTensorAllocator {
    let mut previous: DLPackManagedTensorAllocator = None;
    // SAFETY: a valid allocator (or None) and a writable out slot.
    let rc = unsafe {
        safecall_runtime::capi::TVMFFIEnvSetDLPackManagedTensorAllocator(
            allocator,
            0,
            &mut previous,
        )
    };
    assert_eq!(rc, 0);
    previous
}

/// From now on the allocator raises `RuntimeError: message` instead of allocating.
pub fn fail_with(message: &str) {
    FAIL.with_borrow_mut(|f| *f = Some(message.to_owned()));
}

unsafe extern "C" fn recording_deleter(this: *mut DLManagedTensorVersioned) {
    // SAFETY: `this` came from `recording_allocator`, which stored the CPU allocator's
    // deleter in `manager_ctx` (that deleter does not read `manager_ctx`).
    unsafe {
        let data = (*this).dl_tensor.data as usize;
        RECORD.with_borrow_mut(|r| match r.live.iter().position(|&d| d == data) {
            Some(i) => {
                r.live.swap_remove(i);
                r.frees += 1;
            }
            None => r.bad_frees += 1,
        });
        let original: unsafe extern "C" fn(*mut DLManagedTensorVersioned) =
            std::mem::transmute((*this).manager_ctx);
        original(this);
    }
}

/// A tensor of the fake device allocator: data at a made-up address (never dereferenced).
#[repr(C)]
struct FakeManaged {
    managed: DLManagedTensorVersioned,
    shape: Vec<i64>,
}

/// The next made-up device address (1 MiB apart, per thread).
fn fake_address() -> usize {
    thread_local! {
        static NEXT: std::cell::Cell<usize> = const { std::cell::Cell::new(0xd000_0000) };
    }
    NEXT.with(|n| {
        let a = n.get();
        n.set(a + 0x10_0000);
        a
    })
}

unsafe extern "C" fn fake_deleter(this: *mut DLManagedTensorVersioned) {
    // SAFETY: `this` is the first field of a boxed FakeManaged made by `fake_device`.
    let boxed = unsafe { Box::from_raw(this.cast::<FakeManaged>()) };
    drop(boxed);
}

/// A device (non-CPU) tensor with a made-up data address, as the fake CUDA tests need.
///
/// # Safety
/// A valid prototype.
unsafe fn fake_device(prototype: &DLTensor) -> *mut DLManagedTensorVersioned {
    // SAFETY: the prototype's shape has ndim entries.
    let shape: Vec<i64> = (0..prototype.ndim as usize)
        .map(|k| unsafe { *prototype.shape.add(k) })
        .collect();
    let mut boxed = Box::new(FakeManaged {
        managed: DLManagedTensorVersioned {
            version: safecall_runtime::abi::DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(fake_deleter),
            flags: 0,
            dl_tensor: *prototype,
        },
        shape,
    });
    boxed.managed.dl_tensor.data = fake_address() as *mut c_void;
    boxed.managed.dl_tensor.shape = boxed.shape.as_mut_ptr();
    boxed.managed.dl_tensor.strides = std::ptr::null_mut();
    boxed.managed.dl_tensor.byte_offset = 0;
    Box::into_raw(boxed).cast()
}

/// The recording allocator (a `DLPackManagedTensorAllocator`): CPU tensors from the runtime's
/// CPU allocator; tensors on other devices at made-up addresses (a fake device allocator).
///
/// # Safety
/// Called by the runtime with a valid prototype, out slot and error callback.
pub unsafe extern "C" fn recording_allocator(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: Option<unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char)>,
) -> i32 {
    if let Some(message) = FAIL.with_borrow(|f| f.clone()) {
        let kind = CString::new("RuntimeError").unwrap();
        let text = CString::new(message).unwrap();
        if let Some(set_error) = set_error {
            // SAFETY: the runtime's callback takes NUL-terminated strings.
            unsafe { set_error(error_ctx, kind.as_ptr(), text.as_ptr()) };
        }
        return -1;
    }
    // SAFETY: the caller passes a valid prototype.
    if unsafe { (*prototype).device.device_type } != safecall_runtime::abi::device_type::CPU {
        // SAFETY: as above; `out` is writable.
        unsafe { out.write(fake_device(&*prototype)) };
    } else {
        // SAFETY: forwarded from our caller.
        let rc = unsafe {
            safecall_runtime::tensor::cpu_allocator(prototype, out, error_ctx, set_error)
        };
        if rc != 0 {
            return rc;
        }
    }
    // SAFETY: the CPU allocator returned a valid managed tensor.
    unsafe {
        let m = &mut **out;
        let t = &m.dl_tensor;
        let numel: i64 = (0..t.ndim as usize).map(|k| *t.shape.add(k)).product();
        let bytes = numel as u64 * (u64::from(t.dtype.bits) * u64::from(t.dtype.lanes)).div_ceil(8);
        let data = t.data as usize;
        RECORD.with_borrow_mut(|r| {
            r.sizes.push(bytes);
            r.live.push(data);
        });
        m.manager_ctx = m.deleter.map_or(std::ptr::null_mut(), |d| d as *mut c_void);
        m.deleter = Some(recording_deleter);
    }
    0
}
