//! `SymbolBinding::Process` where it matters: a process that has the real `libtvm_ffi` loaded
//! globally (as Python's `tvm_ffi` loads it) and does not export safecall-runtime's C API.
//! JIT-compiled code must then raise into libtvm_ffi's thread-local slot, where the caller
//! (Python) reads it, and leave safecall-runtime's slot alone; the default binding does the
//! opposite. Skipped with a printed reason without the peer (`cargo xtask test` provides it;
//! under `CI=true` a missing peer fails).

#[path = "../../common/skip.rs"]
mod skip;

use std::ffi::c_void;
use std::path::PathBuf;

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use safecall::jit::{JitOptions, SymbolBinding};
use safecall_runtime::abi::{
    OBJECT_HEADER_SIZE, TVMFFIAny, TVMFFIErrorCell, TVMFFISafeCallType, TVMFFIValue, type_index,
};

const MODULE: &str = "module m;\n\
fn twice(n: i32) -> i64 { return cast<i64>(n) * 2; }\n";

type MoveFromRaised = unsafe extern "C" fn(*mut *mut c_void);
type DecRef = unsafe extern "C" fn(*mut c_void) -> i32;

/// The real runtime, loaded `RTLD_GLOBAL`, and its two functions this test reads errors with.
struct RealRuntime {
    _lib: Library,
    move_from_raised: MoveFromRaised,
    dec_ref: DecRef,
}

impl RealRuntime {
    fn load() -> Option<RealRuntime> {
        let Some(dir) = std::env::var_os("SAFECALL_TVM_FFI_LIBDIR") else {
            skip::skip(
                "SAFECALL_TVM_FFI_LIBDIR is unset (run `cargo xtask test`, which installs \
                 apache-tvm-ffi and sets it)",
            );
            return None;
        };
        let path = PathBuf::from(dir).join("libtvm_ffi.so");
        // SAFETY: loading the real runtime runs its static initializers, which only register
        // its built-in types and functions.
        let lib = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) }
            .unwrap_or_else(|e| panic!("load {}: {e}", path.display()));
        // SAFETY: both symbols have these signatures in `c_api.h`.
        let (move_from_raised, dec_ref) = unsafe {
            (
                *lib.get::<MoveFromRaised>(b"TVMFFIErrorMoveFromRaised")
                    .expect("TVMFFIErrorMoveFromRaised"),
                *lib.get::<DecRef>(b"TVMFFIObjectDecRef")
                    .expect("TVMFFIObjectDecRef"),
            )
        };
        Some(RealRuntime {
            _lib: lib,
            move_from_raised,
            dec_ref,
        })
    }

    /// Takes the error raised in libtvm_ffi's slot: `(kind, message)`.
    fn take_raised(&self) -> Option<(String, String)> {
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: a writable slot for the error handle.
        unsafe { (self.move_from_raised)(&mut handle) };
        if handle.is_null() {
            return None;
        }
        // SAFETY: an Error object of the real runtime: its cell follows the object header,
        // and this reference is ours to release.
        unsafe {
            let cell = &*handle
                .cast::<u8>()
                .add(OBJECT_HEADER_SIZE)
                .cast::<TVMFFIErrorCell>();
            let text = |b: &safecall_runtime::abi::TVMFFIByteArray| {
                String::from_utf8_lossy(std::slice::from_raw_parts(b.data.cast::<u8>(), b.size))
                    .into_owned()
            };
            let out = (text(&cell.kind), text(&cell.message));
            (self.dec_ref)(handle);
            Some(out)
        }
    }
}

fn int_arg(v: i64) -> TVMFFIAny {
    TVMFFIAny {
        type_index: type_index::INT,
        small_str_len: 0,
        value: TVMFFIValue { v_int64: v },
    }
}

/// Calls `f` with `args`: the return code and the result.
fn call(f: TVMFFISafeCallType, args: &[TVMFFIAny]) -> (i32, TVMFFIAny) {
    let mut result = TVMFFIAny::NONE;
    // SAFETY: `f` is a live safe-call entry; `args` and `result` are valid for the call.
    let code = unsafe {
        f(
            std::ptr::null_mut(),
            args.as_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    (code, result)
}

fn twice(binding: SymbolBinding) -> (safecall::jit::JitModule, TVMFFISafeCallType) {
    let module = safecall::ir::parse::parse(MODULE).expect("parses");
    let options = JitOptions {
        binding,
        ..JitOptions::default()
    };
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let jit = unsafe { safecall::jit::compile(&module, &options) }.expect("compiles");
    let f = jit.safe_call("twice").expect("defined");
    (jit, f)
}

#[test]
fn errors_land_in_the_slot_of_the_runtime_the_process_has() {
    let Some(real) = RealRuntime::load() else {
        return;
    };
    let (_jit, f) = twice(SymbolBinding::Process);

    let (code, result) = call(f, &[int_arg(21)]);
    assert_eq!(code, 0);
    assert_eq!(result.type_index, type_index::INT);
    // SAFETY: an Int result.
    assert_eq!(unsafe { result.value.v_int64 }, 42);

    let (code, _) = call(f, &[int_arg(1 << 40)]);
    assert_eq!(code, -1);
    let (kind, message) = real.take_raised().expect("raised into libtvm_ffi's slot");
    assert_eq!(kind, "ValueError");
    assert!(message.contains("argument 'n'"), "{message}");
    assert!(message.contains("1099511627776"), "{message}");
    assert!(
        safecall_runtime::Error::take_raised().is_none(),
        "the error went to safecall-runtime's slot"
    );

    let (code, _) = call(f, &[]);
    assert_eq!(code, -1);
    let (kind, message) = real.take_raised().expect("raised into libtvm_ffi's slot");
    assert_eq!(kind, "TypeError");
    assert!(message.contains("expected 1 argument"), "{message}");
}

#[test]
fn the_default_binding_raises_into_safecall_runtime() {
    let Some(real) = RealRuntime::load() else {
        return;
    };
    let (_jit, f) = twice(SymbolBinding::SafecallRuntime);
    let (code, _) = call(f, &[]);
    assert_eq!(code, -1);
    let err = safecall_runtime::Error::take_raised().expect("raised into safecall-runtime");
    assert_eq!(err.kind(), "TypeError");
    assert!(
        real.take_raised().is_none(),
        "libtvm_ffi's slot is untouched"
    );
}
