//! [`ObjectRef`]: an owned strong reference to any object, and [`WeakObjectRef`].

use core::ptr::NonNull;

use crate::abi::TVMFFIObject;
use crate::object;

/// A strong reference to an object (of this runtime or any other with the same ABI).
pub struct ObjectRef(NonNull<TVMFFIObject>);

// SAFETY: reference counts are atomic; objects are shared immutably.
unsafe impl Send for ObjectRef {}
// SAFETY: as above.
unsafe impl Sync for ObjectRef {}

impl ObjectRef {
    /// Takes over a strong reference.
    ///
    /// # Safety
    /// `obj` must be a live object whose strong reference the caller gives up.
    pub unsafe fn from_raw_owned(obj: *mut TVMFFIObject) -> Option<Self> {
        NonNull::new(obj).map(ObjectRef)
    }

    /// Adds a strong reference to a borrowed object.
    ///
    /// # Safety
    /// `obj` must be a live object.
    pub unsafe fn from_raw_borrowed(obj: *mut TVMFFIObject) -> Self {
        // SAFETY: guaranteed by the caller.
        unsafe { object::inc_ref(obj) };
        ObjectRef(NonNull::new(obj).expect("object pointer is NULL"))
    }

    /// The object pointer (still owned by `self`).
    pub fn as_ptr(&self) -> *mut TVMFFIObject {
        self.0.as_ptr()
    }

    /// Gives up the reference, returning the object pointer.
    pub fn into_raw(self) -> *mut TVMFFIObject {
        let ptr = self.0.as_ptr();
        core::mem::forget(self);
        ptr
    }

    /// The object's type index.
    pub fn type_index(&self) -> i32 {
        // SAFETY: the object is alive while we hold a reference.
        unsafe { (*self.as_ptr()).type_index }
    }

    /// The current strong count.
    pub fn strong_count(&self) -> u32 {
        // SAFETY: the object is alive while we hold a reference.
        unsafe { object::strong_count(self.as_ptr()) }
    }

    /// The current weak count (strong references together hold one weak reference).
    pub fn weak_count(&self) -> u32 {
        // SAFETY: the object is alive while we hold a reference.
        unsafe { object::weak_count(self.as_ptr()) }
    }

    /// A weak reference to the object.
    pub fn downgrade(&self) -> WeakObjectRef {
        // SAFETY: the object is alive while we hold a reference.
        unsafe { object::inc_weak_ref(self.as_ptr()) };
        WeakObjectRef(self.0)
    }
}

impl Clone for ObjectRef {
    fn clone(&self) -> Self {
        // SAFETY: the object is alive while we hold a reference.
        unsafe { object::inc_ref(self.as_ptr()) };
        ObjectRef(self.0)
    }
}

impl Drop for ObjectRef {
    fn drop(&mut self) {
        // SAFETY: we own one strong reference.
        unsafe { object::dec_ref(self.as_ptr()) };
    }
}

impl core::fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObjectRef")
            .field("ptr", &self.0)
            .field("type_index", &self.type_index())
            .finish()
    }
}

impl PartialEq for ObjectRef {
    /// Identity: the same object.
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for ObjectRef {}

/// A weak reference: keeps the memory (not the contents) of an object alive.
pub struct WeakObjectRef(NonNull<TVMFFIObject>);

// SAFETY: reference counts are atomic.
unsafe impl Send for WeakObjectRef {}
// SAFETY: as above.
unsafe impl Sync for WeakObjectRef {}

impl WeakObjectRef {
    /// A strong reference, if the object is still alive.
    pub fn upgrade(&self) -> Option<ObjectRef> {
        // SAFETY: our weak reference keeps the header readable.
        let promoted = unsafe { object::try_promote_weak_ref(self.0.as_ptr()) };
        // Lazily: an `ObjectRef` built for a failed promotion would release a strong
        // reference nobody holds when it is dropped.
        promoted.then(|| ObjectRef(self.0))
    }

    /// The current strong count (0 once the object is destroyed).
    pub fn strong_count(&self) -> u32 {
        // SAFETY: our weak reference keeps the header readable.
        unsafe { object::strong_count(self.0.as_ptr()) }
    }
}

impl Clone for WeakObjectRef {
    fn clone(&self) -> Self {
        // SAFETY: our weak reference keeps the header readable.
        unsafe { object::inc_weak_ref(self.0.as_ptr()) };
        WeakObjectRef(self.0)
    }
}

impl Drop for WeakObjectRef {
    fn drop(&mut self) {
        // SAFETY: we own one weak reference.
        unsafe { object::dec_weak_ref(self.0.as_ptr()) };
    }
}

/// Typed object references: a newtype over [`ObjectRef`] for one type index.
pub(crate) trait TypedObjectRef: Sized {
    /// Wraps a reference known to have the right type.
    fn from_object_ref(obj: ObjectRef) -> Self;
    /// The underlying reference.
    fn as_object_ref(&self) -> &ObjectRef;
    /// Unwraps the underlying reference.
    fn into_object_ref(self) -> ObjectRef;
}

macro_rules! typed_object_ref {
    ($t:ident) => {
        impl $crate::rust_api::object_ref::TypedObjectRef for $t {
            fn from_object_ref(obj: $crate::rust_api::ObjectRef) -> Self {
                $t(obj)
            }
            fn as_object_ref(&self) -> &$crate::rust_api::ObjectRef {
                &self.0
            }
            fn into_object_ref(self) -> $crate::rust_api::ObjectRef {
                self.0
            }
        }
        impl $t {
            /// The underlying object reference.
            pub fn as_object(&self) -> &$crate::rust_api::ObjectRef {
                &self.0
            }
            /// The object pointer (still owned by `self`).
            pub fn as_ptr(&self) -> *mut $crate::abi::TVMFFIObject {
                self.0.as_ptr()
            }
            /// Gives up the reference, returning the object pointer.
            pub fn into_raw(self) -> *mut $crate::abi::TVMFFIObject {
                self.0.into_raw()
            }
        }
    };
}
pub(crate) use typed_object_ref;
