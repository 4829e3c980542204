//! [`Function`]: a reference to an `ffi.Function`, from a Rust closure or a raw safe call.

use core::ffi::c_void;

use crate::abi::symbols::error_kind::VALUE_ERROR;
use crate::abi::{TVMFFIAny, TVMFFISafeCallType};
use crate::rust_api::object_ref::typed_object_ref;
use crate::rust_api::{Any, AnyView, Error, ObjectRef};

/// A callable TVM-FFI function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function(ObjectRef);

typed_object_ref!(Function);

impl Function {
    /// A function calling `f`. Errors it returns and panics inside it come out of C calls as
    /// raised errors (a panic becomes a `RuntimeError`), never as an unwind through C.
    pub fn from_closure<F>(f: F) -> Self
    where
        F: Fn(&[AnyView<'_>]) -> Result<Any, Error> + Send + Sync + 'static,
    {
        let obj = crate::function::new_rust(Box::new(f));
        // SAFETY: a fresh object comes with one strong reference we take over.
        Function(unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"))
    }

    /// A function calling a raw safe call with `context` as its handle; `deleter` (if any)
    /// receives `context` when the function is destroyed (`TVMFFIFunctionCreate`).
    ///
    /// # Safety
    /// `safe_call` must follow the safe-call contract and be callable from any thread for as
    /// long as the function lives; `deleter` must accept `context` once.
    pub unsafe fn from_safe_call(
        safe_call: TVMFFISafeCallType,
        context: *mut c_void,
        deleter: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> Self {
        let obj = crate::function::new_extern_c(context, Some(safe_call), deleter);
        // SAFETY: a fresh object comes with one strong reference we take over.
        Function(unsafe { ObjectRef::from_raw_owned(obj) }.expect("allocated"))
    }

    /// Calls the function.
    pub fn call(&self, args: &[AnyView<'_>]) -> Result<Any, Error> {
        let num_args =
            i32::try_from(args.len()).map_err(|_| Error::new(VALUE_ERROR, "too many arguments"))?;
        let mut result = TVMFFIAny::NONE;
        // SAFETY: the function is alive; AnyView is repr(transparent) over TVMFFIAny.
        let code = unsafe {
            crate::function::call_raw(self.as_ptr(), args.as_ptr().cast(), num_args, &mut result)
        };
        if code == 0 {
            // SAFETY: on success the callee wrote an owned value.
            Ok(unsafe { Any::from_raw_owned_unchecked(result) })
        } else {
            Err(Error::take_raised_after_failure(code))
        }
    }

    /// The global function registered under `name`.
    pub fn get_global(name: &str) -> Option<Function> {
        crate::module::builtins::ensure();
        let obj = crate::function::get_global(name.as_bytes());
        // SAFETY: the registry returns a new strong reference (or NULL).
        unsafe { ObjectRef::from_raw_owned(obj) }.map(Function)
    }

    /// Registers this function globally under `name`. Without `allow_override`, an existing
    /// registration is a RuntimeError.
    pub fn set_global(&self, name: &str, allow_override: bool) -> Result<(), Error> {
        crate::module::builtins::ensure();
        crate::function::set_global(name.as_bytes(), Any::from(self.clone()), allow_override)
    }

    /// Removes a global function; returns whether one was registered.
    pub fn remove_global(name: &str) -> bool {
        crate::module::builtins::ensure();
        crate::function::remove_global(name.as_bytes())
    }
}
