//! Object storage and lifetime: allocation with a 16-byte prefix, the combined strong/weak
//! reference count and the deleter-flag protocol of `TVMFFIObject`.
//!
//! Every object this runtime allocates is laid out as
//!
//! ```text
//! | total size (8 bytes) | TVMFFIObjectAllocHeader (8 bytes) | TVMFFIObject header | payload ... |
//!                                                             ^ object pointer (16-byte aligned)
//! ```
//!
//! The `TVMFFIObjectAllocHeader::delete_space` right before the object frees the block, as the
//! real runtime's builtin allocator does. The payload type `T` is a `#[repr(C)]` struct whose
//! first field is the [`TVMFFIObject`] header; [`alloc`] installs a deleter that drops `T` when
//! the strong count reaches zero and frees the block when the weak count does.

use core::ffi::{c_int, c_void};
use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering, fence};
use std::alloc::{Layout, dealloc, handle_alloc_error};

use crate::abi::symbols::error_kind::VALUE_ERROR;
use crate::abi::{
    OBJECT_ALLOC_RESERVE, TVMFFICustomAllocator, TVMFFIObject, TVMFFIObjectAllocHeader,
    deleter_flags,
};

/// One strong reference in `combined_ref_count`.
pub const STRONG_ONE: u64 = 1;
/// One weak reference in `combined_ref_count`.
pub const WEAK_ONE: u64 = 1 << 32;
/// A fresh object: one strong and one weak reference (the weak one belongs to the strong set).
pub const BOTH_ONE: u64 = STRONG_ONE | WEAK_ONE;
const STRONG_MASK: u64 = WEAK_ONE - 1;
/// Alignment of every object body this runtime allocates.
const BODY_ALIGN: usize = 16;

/// Views the reference count of `obj` as an atomic.
///
/// # Safety
/// `obj` must point to a live object header.
unsafe fn ref_count<'a>(obj: *mut TVMFFIObject) -> &'a AtomicU64 {
    // SAFETY: the header is 8-byte aligned and the count is only accessed atomically.
    unsafe { AtomicU64::from_ptr(ptr::addr_of_mut!((*obj).combined_ref_count)) }
}

/// Calls the object's deleter with `flags`, if it has one.
///
/// # Safety
/// `obj` must point to an object header whose deleter may be called with `flags` now.
unsafe fn call_deleter(obj: *mut TVMFFIObject, flags: c_int) {
    // SAFETY: the caller guarantees the header is readable.
    if let Some(deleter) = unsafe { (*obj).deleter } {
        // SAFETY: the deleter is the object's own, called exactly once per flag.
        unsafe { deleter(obj.cast(), flags) };
    }
}

/// Adds a strong reference.
///
/// # Safety
/// `obj` must point to a live object the caller holds a strong reference to.
pub unsafe fn inc_ref(obj: *mut TVMFFIObject) {
    // SAFETY: guaranteed by the caller.
    unsafe { ref_count(obj) }.fetch_add(STRONG_ONE, Ordering::Relaxed);
}

/// Drops a strong reference: runs the strong deleter when the strong count reaches zero and
/// the weak one when the weak count does, exactly like the C++ runtime. NULL is a no-op.
///
/// # Safety
/// `obj` must be NULL or point to a live object the caller holds a strong reference to.
pub unsafe fn dec_ref(obj: *mut TVMFFIObject) {
    if obj.is_null() {
        return;
    }
    // SAFETY: the caller holds a strong reference, so the header is live.
    let count = unsafe { ref_count(obj) };
    let before = count.fetch_sub(STRONG_ONE, Ordering::Release);
    debug_assert_ne!(
        before & STRONG_MASK,
        0,
        "dec_ref on an object whose strong count is already 0 (a reference released twice)"
    );
    if before == BOTH_ONE {
        fence(Ordering::Acquire);
        // SAFETY: this was the last strong and the last weak reference.
        unsafe { call_deleter(obj, deleter_flags::BOTH) };
    } else if before & STRONG_MASK == STRONG_ONE {
        fence(Ordering::Acquire);
        // SAFETY: this was the last strong reference; weak ones keep the memory.
        unsafe { call_deleter(obj, deleter_flags::STRONG) };
        if count.fetch_sub(WEAK_ONE, Ordering::Release) == WEAK_ONE {
            fence(Ordering::Acquire);
            // SAFETY: the last weak reference is gone too.
            unsafe { call_deleter(obj, deleter_flags::WEAK) };
        }
    }
}

/// Adds a weak reference.
///
/// # Safety
/// `obj` must point to an object whose memory is alive (a strong or weak reference is held).
pub unsafe fn inc_weak_ref(obj: *mut TVMFFIObject) {
    // SAFETY: guaranteed by the caller.
    unsafe { ref_count(obj) }.fetch_add(WEAK_ONE, Ordering::Relaxed);
}

/// Drops a weak reference, freeing the memory when it was the last one.
///
/// # Safety
/// `obj` must point to an object the caller holds a weak reference to.
pub unsafe fn dec_weak_ref(obj: *mut TVMFFIObject) {
    // SAFETY: the caller holds a weak reference, so the memory is alive.
    if unsafe { ref_count(obj) }.fetch_sub(WEAK_ONE, Ordering::Release) == WEAK_ONE {
        fence(Ordering::Acquire);
        // SAFETY: the last weak reference is gone.
        unsafe { call_deleter(obj, deleter_flags::WEAK) };
    }
}

/// Turns a weak reference into a new strong one if the object is still alive.
///
/// # Safety
/// `obj` must point to an object the caller holds a weak reference to.
pub unsafe fn try_promote_weak_ref(obj: *mut TVMFFIObject) -> bool {
    // SAFETY: the caller holds a weak reference, so the memory is alive.
    let count = unsafe { ref_count(obj) };
    let mut current = count.load(Ordering::Relaxed);
    while current & STRONG_MASK != 0 {
        match count.compare_exchange_weak(
            current,
            current + STRONG_ONE,
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
    false
}

/// The strong count of `obj`.
///
/// # Safety
/// `obj` must point to an object whose memory is alive.
pub unsafe fn strong_count(obj: *mut TVMFFIObject) -> u32 {
    // SAFETY: guaranteed by the caller.
    (unsafe { ref_count(obj) }.load(Ordering::Acquire) & STRONG_MASK) as u32
}

/// The weak count of `obj`.
///
/// # Safety
/// `obj` must point to an object whose memory is alive.
pub unsafe fn weak_count(obj: *mut TVMFFIObject) -> u32 {
    // SAFETY: guaranteed by the caller.
    (unsafe { ref_count(obj) }.load(Ordering::Acquire) >> 32) as u32
}

// ---------------------------------------------------------------------------
// The builtin allocator (also what `TVMFFIGetCustomAllocator` returns by default)
// ---------------------------------------------------------------------------

/// The layout of a block holding a body of `size` bytes.
fn block_layout(size: usize) -> Layout {
    let total = size
        .checked_add(OBJECT_ALLOC_RESERVE)
        .expect("object size overflows");
    Layout::from_size_align(total, BODY_ALIGN).expect("object size overflows")
}

/// Allocates `size` bytes for an object body preceded by the 16-byte prefix; the prefix
/// records the size and a `delete_space` that frees the block. Returns the body pointer.
pub fn allocate_body(size: usize) -> *mut u8 {
    let layout = block_layout(size);
    // SAFETY: the layout has a non-zero size (at least the prefix).
    let base = unsafe { std::alloc::alloc(layout) };
    if base.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: the block is OBJECT_ALLOC_RESERVE + size bytes long, 16-byte aligned.
    unsafe {
        base.cast::<usize>().write(size);
        let body = base.add(OBJECT_ALLOC_RESERVE);
        body.cast::<TVMFFIObjectAllocHeader>()
            .sub(1)
            .write(TVMFFIObjectAllocHeader {
                delete_space: Some(builtin_delete_space),
            });
        body
    }
}

/// `delete_space` of the builtin allocator: frees the block of `body`.
///
/// # Safety
/// `body` must come from [`allocate_body`] and not have been freed.
unsafe extern "C" fn builtin_delete_space(body: *mut c_void) {
    // SAFETY: `body` comes from `allocate_body`, which recorded the size 16 bytes before it.
    unsafe {
        let base = body.cast::<u8>().sub(OBJECT_ALLOC_RESERVE);
        let size = base.cast::<usize>().read();
        dealloc(base, block_layout(size));
    }
}

/// Frees the block of an object through the `delete_space` in front of it.
///
/// # Safety
/// `obj` must be an object allocated with a `TVMFFIObjectAllocHeader` in front, whose
/// contents are already dropped.
pub unsafe fn free_body(obj: *mut c_void) {
    // SAFETY: the alloc header sits right before the body.
    let header = unsafe { obj.cast::<TVMFFIObjectAllocHeader>().sub(1).read() };
    if let Some(delete_space) = header.delete_space {
        // SAFETY: the callback owns the block.
        unsafe { delete_space(obj) };
    }
}

/// `allocate` of the builtin [`TVMFFICustomAllocator`].
///
/// # Safety
/// Callable from C with any arguments; alignments above 16 are refused with an error raised.
unsafe extern "C" fn builtin_allocate(
    size: usize,
    alignment: usize,
    _type_index: i32,
    _context: *mut c_void,
) -> *mut c_void {
    if alignment > BODY_ALIGN || !alignment.is_power_of_two() {
        crate::error::set_raised_from_str(
            VALUE_ERROR,
            &format!("the builtin object allocator supports alignments up to 16, not {alignment}"),
        );
        return ptr::null_mut();
    }
    allocate_body(size).cast()
}

/// The builtin allocator entry; `TVMFFISetCustomAllocator(NULL)` restores it.
pub struct BuiltinAllocator(pub core::cell::UnsafeCell<TVMFFICustomAllocator>);

// SAFETY: the entry is never written after initialisation; C only reads it.
unsafe impl Sync for BuiltinAllocator {}

/// The builtin allocator, returned by `TVMFFIGetCustomAllocator` until another is set.
pub static BUILTIN_ALLOCATOR: BuiltinAllocator =
    BuiltinAllocator(core::cell::UnsafeCell::new(TVMFFICustomAllocator {
        allocate: Some(builtin_allocate),
        context: ptr::null_mut(),
    }));

// ---------------------------------------------------------------------------
// Typed objects
// ---------------------------------------------------------------------------

/// A payload struct that starts with the object header.
///
/// # Safety
/// Implementors must be `#[repr(C)]` with a [`TVMFFIObject`] as their first field.
pub unsafe trait ObjectLayout: Sized {}

/// The deleter of objects of payload `T` allocated by [`alloc`].
///
/// # Safety
/// Called by the reference-count protocol only, with `obj` allocated by [`alloc::<T>`].
unsafe extern "C" fn typed_deleter<T: ObjectLayout>(obj: *mut c_void, flags: c_int) {
    if flags & deleter_flags::STRONG != 0 {
        // SAFETY: the strong count reached zero: the payload is dropped once.
        unsafe { ptr::drop_in_place(obj.cast::<T>()) };
    }
    if flags & deleter_flags::WEAK != 0 {
        // SAFETY: the weak count reached zero: the block is freed once.
        unsafe { free_body(obj) };
    }
}

/// Allocates an object holding `value` followed by `extra` bytes (8-byte aligned, for inline
/// arrays), with one strong reference. `value.header` is overwritten with a fresh header.
pub fn alloc<T: ObjectLayout>(type_index: i32, value: T, extra: usize) -> *mut T {
    let body = allocate_body(size_of::<T>() + extra).cast::<T>();
    const { assert!(align_of::<T>() <= BODY_ALIGN) };
    // SAFETY: the body is large enough and aligned for T; T starts with the header.
    unsafe {
        body.write(value);
        body.cast::<TVMFFIObject>().write(TVMFFIObject {
            combined_ref_count: BOTH_ONE,
            type_index,
            padding: 0,
            deleter: Some(typed_deleter::<T>),
        });
    }
    body
}

/// The address right after the payload `T`, where inline arrays start.
///
/// # Safety
/// `obj` must be an object allocated by [`alloc::<T>`].
pub unsafe fn tail<T: ObjectLayout, E>(obj: *mut T) -> *mut E {
    const { assert!(size_of::<T>().is_multiple_of(8) && align_of::<E>() <= 8) };
    // SAFETY: the tail lies within the allocation made by `alloc`.
    unsafe { obj.add(1).cast() }
}

/// A fresh object header (the allocation functions overwrite it).
pub const fn blank_header() -> TVMFFIObject {
    TVMFFIObject {
        combined_ref_count: 0,
        type_index: 0,
        padding: 0,
        deleter: None,
    }
}

/// An opaque object: a foreign handle and the function that releases it.
#[repr(C)]
pub struct OpaqueObj {
    header: TVMFFIObject,
    cell: crate::abi::TVMFFIOpaqueObjectCell,
    deleter: Option<unsafe extern "C" fn(handle: *mut c_void)>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for OpaqueObj {}

impl Drop for OpaqueObj {
    fn drop(&mut self) {
        if let Some(deleter) = self.deleter {
            // SAFETY: the creator handed us the handle together with its deleter.
            unsafe { deleter(self.cell.handle) };
        }
    }
}

/// Creates an opaque object of `type_index` owning `handle`.
pub fn new_opaque(
    handle: *mut c_void,
    type_index: i32,
    deleter: Option<unsafe extern "C" fn(handle: *mut c_void)>,
) -> *mut TVMFFIObject {
    let obj = OpaqueObj {
        header: blank_header(),
        cell: crate::abi::TVMFFIOpaqueObjectCell { handle },
        deleter,
    };
    alloc(type_index, obj, 0).cast()
}
