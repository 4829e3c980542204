//! [`call_detached`]: a generated host function called with the interpreter lock released, as
//! Triton's launchers release it around `cuLaunchKernel` (`Py_BEGIN_ALLOW_THREADS`) and
//! `tvm_ffi` releases it around its calls: a launch that blocks in the driver (its queue of
//! pending launches full) stalls no other Python thread, and a driver callback that needs the
//! lock (a host function on the stream) cannot deadlock against the launching thread.

use pyo3::prelude::*;
use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType};

/// The call's entry and pointers, moved into the closure that runs without the lock.
struct Call {
    entry: TVMFFISafeCallType,
    args: *const TVMFFIAny,
    count: i32,
    result: *mut TVMFFIAny,
}

// SAFETY: `Call` never leaves the calling thread: `Python::detach` runs its closure on this
// thread and returns before the borrowed arguments and result go away; `Send` only meets
// `detach`'s bound, which guards against Python objects used without the lock (there are none:
// the arguments are plain words and `DLTensor`s).
unsafe impl Send for Call {}

/// `entry(NULL, args, count, result)` with the interpreter lock released for the call.
///
/// # Safety
///
/// `entry` is a safe-call function that touches no Python object; `args` points to `count`
/// initialised arguments of the kinds its parameters take, and it and whatever they point to
/// stay alive, unmoved, until the call returns; `result` is valid for writes.
pub(crate) unsafe fn call_detached(
    py: Python<'_>,
    entry: TVMFFISafeCallType,
    args: *const TVMFFIAny,
    count: i32,
    result: *mut TVMFFIAny,
) -> i32 {
    let call = Call {
        entry,
        args,
        count,
        result,
    };
    // A method call moves the whole `Call` into the closure (a field read would move the
    // field alone, which is not `Send`).
    py.detach(move || call.run())
}

impl Call {
    fn run(self) -> i32 {
        // SAFETY: `call_detached`'s contract.
        unsafe { (self.entry)(std::ptr::null_mut(), self.args, self.count, self.result) }
    }
}
