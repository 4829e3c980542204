//! A module delivered as one of the [`Delivery`] rows, and its functions: the JIT's, or a
//! library's exported safe-call symbols (a library safecall built, or an object file linked
//! with `cc -shared`).

use std::path::Path;

use safecall::aot::LinkOptions;
use safecall::jit::{FirstTier, JitModule, JitOptions};
use safecall::{Backend, Options, ir};
use safecall_runtime::Function;

use super::delivery::Delivery;

/// A built module: its functions, and what keeps their code alive.
pub struct Built {
    jit: Option<JitModule>,
    lib: Option<libloading::Library>,
}

impl Built {
    /// The host function `name`.
    pub fn function(&self, name: &str) -> Function {
        if let Some(jit) = &self.jit {
            return jit.function(name).expect("defined").clone();
        }
        let lib = self.lib.as_ref().expect("a library");
        let symbol = format!("__tvm_ffi_{name}");
        // SAFETY: exported safe-call symbols; the library outlives the calls (it lives in self).
        unsafe {
            let f = *lib
                .get::<safecall_runtime::abi::TVMFFISafeCallType>(symbol.as_bytes())
                .expect("exported");
            Function::from_safe_call(f, std::ptr::null_mut(), None)
        }
    }
}

/// Delivers `module` as `how`: JIT-compiled with `jit` (its backend and first tier those of
/// the row), or written as a library at `so` (an object file beside it) and loaded.
///
/// # Safety
/// The module's code runs when its functions are called: its IR must dereference only what
/// its checks validate and call only symbols it declares with their real signatures.
pub unsafe fn deliver(module: &ir::Module, how: Delivery, so: &Path, jit: JitOptions) -> Built {
    let options = |backend| Options {
        backend,
        ..Default::default()
    };
    match how {
        Delivery::JitBaseline | Delivery::Jit(_) => {
            let (backend, first_tier) = match how {
                Delivery::Jit(backend) => (backend, FirstTier::Backend),
                _ => (Backend::Cranelift, FirstTier::Baseline),
            };
            let options = JitOptions {
                backend,
                first_tier,
                ..jit
            };
            // SAFETY: the caller's (this function's contract).
            let jit = unsafe { safecall::jit::compile(module, &options) }.expect("JIT compile");
            return Built {
                jit: Some(jit),
                lib: None,
            };
        }
        Delivery::Shared(backend, linker) => {
            let link = LinkOptions {
                linker,
                ..LinkOptions::default()
            };
            safecall::build_shared_library(module, so, &options(backend), &link)
                .expect("build the library");
        }
        Delivery::Object(backend) => {
            let object = safecall::compile_object(module, &options(backend)).expect("object");
            let o = so.with_extension("o");
            std::fs::write(&o, object).expect("write the object");
            let status = std::process::Command::new("cc")
                .args(["-shared", "-Wl,-z,now", "-o"])
                .arg(so)
                .arg(&o)
                .status()
                .expect("run cc");
            assert!(status.success(), "cc -shared failed");
        }
    }
    // SAFETY: a library safecall generated; its TVM-FFI symbols resolve to the runtime the
    // test links.
    let lib = unsafe { libloading::Library::new(so) }.expect("load the library");
    Built {
        jit: None,
        lib: Some(lib),
    }
}
