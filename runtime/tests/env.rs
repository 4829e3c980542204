//! Environment: per-thread streams, module-symbol tables, import lookups and the table of
//! exported C API symbols for JIT binding.

use core::ffi::c_void;

use safecall_runtime::capi::{
    TVMFFIEnvModLookupFromImports, TVMFFIEnvModRegisterContextSymbol,
    TVMFFIEnvModRegisterSystemLibSymbol,
};
use safecall_runtime::rust_api::registry;
use safecall_runtime::{Any, Error, Function, c_api_symbol, c_api_symbols};

#[test]
fn streams_are_per_thread_and_per_device() {
    let a = 0x1000 as *mut c_void;
    assert!(registry::set_stream(2, 0, a).is_null());
    assert!(registry::set_stream(2, 1, 0x2000 as *mut c_void).is_null());
    assert_eq!(registry::get_stream(2, 0), a);
    assert!(registry::get_stream(10, 0).is_null());
    std::thread::spawn(|| {
        assert!(registry::get_stream(2, 0).is_null());
        registry::set_stream(2, 0, 0x3000 as *mut c_void);
    })
    .join()
    .unwrap();
    assert_eq!(registry::get_stream(2, 0), a);
    assert_eq!(registry::set_stream(2, 0, core::ptr::null_mut()), a);
}

#[test]
fn module_symbols_are_stored() {
    static VALUE: u8 = 0;
    let addr = (&raw const VALUE).cast_mut().cast::<c_void>();
    // SAFETY: NUL-terminated names.
    unsafe {
        assert_eq!(
            TVMFFIEnvModRegisterContextSymbol(c"__safecall_ctx_test".as_ptr(), addr),
            0
        );
        assert_eq!(
            TVMFFIEnvModRegisterSystemLibSymbol(c"__tvm_ffi_safecall_env_test".as_ptr(), addr),
            0
        );
    }
    assert!(
        registry::context_symbols()
            .iter()
            .any(|(n, v)| n == "__safecall_ctx_test" && *v == addr)
    );
    assert_eq!(
        registry::system_lib_symbol("__tvm_ffi_safecall_env_test"),
        Some(addr)
    );
    assert_eq!(registry::system_lib_symbol("__tvm_ffi_missing"), None);
}

#[test]
fn lookup_from_imports_without_a_module_uses_the_global_registry() {
    let f = Function::from_closure(|_| Ok(Any::from(7i64)));
    f.set_global("safecall.env_test.imported", true).unwrap();
    let mut out = core::ptr::null_mut();
    // SAFETY: NUL-terminated name, writable slot.
    let code = unsafe {
        TVMFFIEnvModLookupFromImports(
            core::ptr::null_mut(),
            c"safecall.env_test.imported".as_ptr(),
            &mut out,
        )
    };
    assert_eq!(code, 0);
    assert_eq!(out.cast(), f.as_ptr());
    // SAFETY: as above.
    let code = unsafe {
        TVMFFIEnvModLookupFromImports(
            core::ptr::null_mut(),
            c"safecall.env_test.nope".as_ptr(),
            &mut out,
        )
    };
    assert_eq!(code, -1);
    assert_eq!(
        Error::take_raised().unwrap().message(),
        "Cannot find function safecall.env_test.nope in the imported modules or global registry."
    );
}

#[test]
fn c_api_symbol_table_lists_every_exported_function() {
    let names: Vec<&str> = c_api_symbols().iter().map(|s| s.name).collect();
    assert_eq!(names.len(), 50);
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
    assert!(c_api_symbols().iter().all(|s| !s.address.is_null()));
    assert_eq!(
        c_api_symbol("TVMFFIFunctionCall"),
        Some(safecall_runtime::capi::TVMFFIFunctionCall as *const u8)
    );
    assert_eq!(c_api_symbol("TVMFFINoSuchFunction"), None);
}

#[test]
fn type_registry_helpers() {
    assert_eq!(registry::type_key_to_index("ffi.Tensor").unwrap(), 70);
    assert_eq!(registry::type_key(65).unwrap(), "ffi.String");
    let base = registry::register_object_type("safecall.env_test.Node", 64, 2).unwrap();
    assert!(base >= 128);
    assert_eq!(
        registry::register_object_type("safecall.env_test.Node", 64, 2).unwrap(),
        base
    );
    let child = registry::register_object_type("safecall.env_test.Leaf", base, 0).unwrap();
    assert_eq!(child, base + 1);
    assert_eq!(registry::type_info(child).unwrap().type_depth, 2);
    let err = registry::type_key_to_index("safecall.env_test.Missing").unwrap_err();
    assert_eq!(err.kind(), "InternalError");
}
