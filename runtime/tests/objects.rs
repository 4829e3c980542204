//! Object lifetime: the strong count reaches zero exactly once, the deleter-flag protocol,
//! weak references, and thread safety of the counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use safecall_runtime::ObjectRef;
use safecall_runtime::abi::{TVMFFIObject, deleter_flags, type_index};
use safecall_runtime::capi::{TVMFFIObjectDecRef, TVMFFIObjectIncRef};
use safecall_runtime::object::{self, ObjectLayout};

/// An object whose payload counts its drops.
#[repr(C)]
struct Counted {
    header: TVMFFIObject,
    drops: Arc<AtomicUsize>,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for Counted {}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

fn counted() -> (ObjectRef, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    let obj = object::alloc(
        type_index::OBJECT,
        Counted {
            header: object::blank_header(),
            drops: drops.clone(),
        },
        0,
    );
    // SAFETY: a fresh object comes with one strong reference.
    (
        unsafe { ObjectRef::from_raw_owned(obj.cast()) }.unwrap(),
        drops,
    )
}

#[test]
fn refcount_reaches_zero_exactly_once_across_threads() {
    let (obj, drops) = counted();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let obj = obj.clone();
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    let copy = obj.clone();
                    drop(copy);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(obj.strong_count(), 1);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    drop(obj);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn c_incref_and_decref_follow_the_count() {
    let (obj, drops) = counted();
    let raw = obj.into_raw();
    // SAFETY: we hold a strong reference to `raw` throughout.
    unsafe {
        assert_eq!(TVMFFIObjectIncRef(raw.cast()), 0);
        assert_eq!(object::strong_count(raw), 2);
        assert_eq!(TVMFFIObjectDecRef(raw.cast()), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        assert_eq!(TVMFFIObjectDecRef(raw.cast()), 0);
    }
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // SAFETY: NULL is accepted.
    assert_eq!(unsafe { TVMFFIObjectDecRef(core::ptr::null_mut()) }, 0);
}

#[test]
fn weak_references_keep_memory_not_contents() {
    let (obj, drops) = counted();
    let weak = obj.downgrade();
    assert_eq!(obj.weak_count(), 2);
    let again = weak.upgrade().expect("alive");
    assert_eq!(obj.strong_count(), 2);
    drop(again);
    drop(obj);
    // Contents destroyed once; the weak reference still reads the header.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(weak.strong_count(), 0);
    assert!(weak.upgrade().is_none());
    let weak2 = weak.clone();
    drop(weak);
    drop(weak2); // frees the memory; a double free would crash or be caught by the allocator
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

static FLAGS_SEEN: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn recording_deleter(_obj: *mut core::ffi::c_void, flags: i32) {
    FLAGS_SEEN.lock().unwrap().push(flags);
}

#[test]
fn deleter_flags_protocol() {
    let mut header = TVMFFIObject {
        combined_ref_count: object::BOTH_ONE,
        type_index: type_index::OBJECT,
        padding: 0,
        deleter: Some(recording_deleter),
    };
    let p: *mut TVMFFIObject = &mut header;
    // SAFETY: `header` is a live object for the whole test; the deleter frees nothing.
    unsafe {
        // Last strong and last weak at once: one call with both flags.
        object::dec_ref(p);
        assert_eq!(*FLAGS_SEEN.lock().unwrap(), [deleter_flags::BOTH]);
        FLAGS_SEEN.lock().unwrap().clear();

        // A weak reference outstanding: strong first, weak when the last weak goes.
        (*p).combined_ref_count = object::BOTH_ONE;
        object::inc_weak_ref(p);
        object::dec_ref(p);
        assert_eq!(*FLAGS_SEEN.lock().unwrap(), [deleter_flags::STRONG]);
        assert_eq!(object::strong_count(p), 0);
        assert_eq!(object::weak_count(p), 1);
        assert!(!object::try_promote_weak_ref(p));
        object::dec_weak_ref(p);
        assert_eq!(
            *FLAGS_SEEN.lock().unwrap(),
            [deleter_flags::STRONG, deleter_flags::WEAK]
        );
    }
}

#[test]
fn objects_reserve_an_alloc_header_in_front() {
    let (obj, _drops) = counted();
    let body = obj.as_ptr().cast::<u8>();
    assert_eq!(body as usize % 16, 0);
    // SAFETY: 16 bytes are reserved before every object this runtime allocates.
    let header = unsafe {
        body.cast::<safecall_runtime::abi::TVMFFIObjectAllocHeader>()
            .sub(1)
            .read()
    };
    assert!(header.delete_space.is_some());
}

#[test]
fn opaque_objects_release_their_handle_once() {
    static RELEASED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn release(_handle: *mut core::ffi::c_void) {
        RELEASED.fetch_add(1, Ordering::SeqCst);
    }
    let obj = object::new_opaque(
        core::ptr::null_mut(),
        type_index::OPAQUE_PY_OBJECT,
        Some(release),
    );
    // SAFETY: a fresh object comes with one strong reference.
    let obj = unsafe { ObjectRef::from_raw_owned(obj) }.unwrap();
    let copy = obj.clone();
    drop(obj);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 0);
    drop(copy);
    assert_eq!(RELEASED.load(Ordering::SeqCst), 1);
}

/// An object header in a `Box` whose deleter records each flag it sees and frees the box on
/// the weak flag, so a test can tell "contents destroyed once" and "memory freed once" apart.
mod tracked {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use safecall_runtime::abi::{TVMFFIObject, deleter_flags, type_index};
    use safecall_runtime::object;

    /// How often the strong and the weak part of the deleter ran.
    pub static STRONG_RUNS: AtomicUsize = AtomicUsize::new(0);
    pub static WEAK_RUNS: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn deleter(obj: *mut core::ffi::c_void, flags: i32) {
        if flags & deleter_flags::STRONG != 0 {
            STRONG_RUNS.fetch_add(1, Ordering::SeqCst);
        }
        if flags & deleter_flags::WEAK != 0 {
            WEAK_RUNS.fetch_add(1, Ordering::SeqCst);
            // SAFETY: `new` made `obj` with Box::into_raw; the weak flag comes once.
            drop(unsafe { Box::from_raw(obj.cast::<TVMFFIObject>()) });
        }
    }

    /// A fresh object (one strong reference).
    pub fn new() -> *mut TVMFFIObject {
        Box::into_raw(Box::new(TVMFFIObject {
            combined_ref_count: object::BOTH_ONE,
            type_index: type_index::OBJECT,
            padding: 0,
            deleter: Some(deleter),
        }))
    }
}

/// Regression test: a failed upgrade used to build (and drop) an `ObjectRef` anyway, taking
/// the strong count of a dead object to 4294967295 and its weak count down by one, so the
/// memory was never freed.
#[test]
fn upgrading_a_dead_weak_reference_changes_no_count_and_frees_once() {
    let raw = tracked::new();
    // SAFETY: a fresh object comes with one strong reference.
    let obj = unsafe { ObjectRef::from_raw_owned(raw) }.unwrap();
    let weak = obj.downgrade();
    drop(obj);
    assert_eq!(tracked::STRONG_RUNS.load(Ordering::SeqCst), 1);
    assert_eq!(tracked::WEAK_RUNS.load(Ordering::SeqCst), 0);
    for _ in 0..3 {
        assert!(weak.upgrade().is_none());
        assert_eq!(weak.strong_count(), 0);
        // SAFETY: `weak` keeps the header readable.
        assert_eq!(unsafe { object::weak_count(raw) }, 1);
    }
    drop(weak);
    assert_eq!(tracked::STRONG_RUNS.load(Ordering::SeqCst), 1);
    assert_eq!(
        tracked::WEAK_RUNS.load(Ordering::SeqCst),
        1,
        "the memory must be freed exactly once"
    );
}

/// Releasing a strong reference of a dead object is caught in debug builds (the count would
/// wrap to 4294967295 and the memory would never be freed).
#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "strong count is already 0")]
fn releasing_a_dead_object_is_caught_in_debug_builds() {
    let mut header = TVMFFIObject {
        // No strong reference left, one weak one.
        combined_ref_count: object::WEAK_ONE,
        type_index: type_index::OBJECT,
        padding: 0,
        deleter: None,
    };
    // SAFETY: `header` is alive for the whole test and has no deleter.
    unsafe { object::dec_ref(&mut header) };
}

/// A NULL pointer under an object type index is not a valid value, but a caller can pass
/// one: taking an owned copy is an error, not a NULL dereference.
#[test]
fn owning_a_null_object_view_is_an_error() {
    use safecall_runtime::abi::{TVMFFIAny, TVMFFIValue};
    use safecall_runtime::{Any, AnyView};
    let raw = TVMFFIAny {
        type_index: type_index::TENSOR,
        small_str_len: 0,
        value: TVMFFIValue {
            v_obj: core::ptr::null_mut(),
        },
    };
    // SAFETY: the view refers to nothing that must stay alive.
    let err = Any::from_view(unsafe { AnyView::from_raw(raw) }).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(err.message().contains("NULL object"), "{}", err.message());
}
