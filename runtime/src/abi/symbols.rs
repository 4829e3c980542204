//! Symbol names of the TVM-FFI ABI: what a library exports, the C API functions that generated
//! code calls, and the error kinds it raises. Spelled here once; the runtime's loader, the
//! `safecall` lowering, its JIT and its `inspect` command all use these.

/// Prefix of an exported safe-call function: `__tvm_ffi_<name>`.
pub const EXPORT_PREFIX: &str = "__tvm_ffi_";

/// The default function of a library (`__tvm_ffi_main`).
pub const MAIN_SYMBOL: &str = "__tvm_ffi_main";

/// The module-handle slot a loader writes into a library.
pub const LIBRARY_CTX_SYMBOL: &str = "__tvm_ffi__library_ctx";

/// The embedded import tree of a library.
pub const LIBRARY_BIN_SYMBOL: &str = "__tvm_ffi__library_bin";

/// Prefix of a function's metadata getter: `__tvm_ffi__metadata_<name>`.
pub const METADATA_PREFIX: &str = "__tvm_ffi__metadata_";

/// Prefix of a function's doc getter: `__tvm_ffi__doc_<name>`.
pub const DOC_PREFIX: &str = "__tvm_ffi__doc_";

/// Names of the C API functions that generated code (or its JIT support) calls. The runtime's
/// tests check that it exports each of them.
pub mod c_api {
    /// `TVMFFIErrorSetRaisedFromCStr`.
    pub const ERROR_SET_RAISED_FROM_CSTR: &str = "TVMFFIErrorSetRaisedFromCStr";
    /// `TVMFFIErrorSetRaisedFromCStrParts`.
    pub const ERROR_SET_RAISED_FROM_CSTR_PARTS: &str = "TVMFFIErrorSetRaisedFromCStrParts";
    /// `TVMFFIObjectIncRef`.
    pub const OBJECT_INC_REF: &str = "TVMFFIObjectIncRef";
    /// `TVMFFIObjectDecRef`.
    pub const OBJECT_DEC_REF: &str = "TVMFFIObjectDecRef";
    /// `TVMFFIFunctionCall`.
    pub const FUNCTION_CALL: &str = "TVMFFIFunctionCall";
    /// `TVMFFIFunctionGetGlobal`.
    pub const FUNCTION_GET_GLOBAL: &str = "TVMFFIFunctionGetGlobal";
    /// `TVMFFIHandleInitOnce`.
    pub const HANDLE_INIT_ONCE: &str = "TVMFFIHandleInitOnce";
    /// `TVMFFIEnvModLookupFromImports`.
    pub const ENV_MOD_LOOKUP_FROM_IMPORTS: &str = "TVMFFIEnvModLookupFromImports";
    /// `TVMFFIEnvGetStream`.
    pub const ENV_GET_STREAM: &str = "TVMFFIEnvGetStream";
    /// `TVMFFIEnvGetDLPackManagedTensorAllocator`.
    pub const ENV_GET_DLPACK_MANAGED_TENSOR_ALLOCATOR: &str =
        "TVMFFIEnvGetDLPackManagedTensorAllocator";
    /// `TVMFFIEnvTensorAlloc`.
    pub const ENV_TENSOR_ALLOC: &str = "TVMFFIEnvTensorAlloc";
    /// `TVMFFIStringFromByteArray`.
    pub const STRING_FROM_BYTE_ARRAY: &str = "TVMFFIStringFromByteArray";
    /// `TVMFFIBigIntFromByteArray`.
    pub const BIG_INT_FROM_BYTE_ARRAY: &str = "TVMFFIBigIntFromByteArray";
    /// `TVMFFIAnyViewToOwnedAny`.
    pub const ANY_VIEW_TO_OWNED_ANY: &str = "TVMFFIAnyViewToOwnedAny";
    /// `TVMFFIGetTypeInfo`.
    pub const GET_TYPE_INFO: &str = "TVMFFIGetTypeInfo";
    /// `TVMFFIEnvModRegisterSystemLibSymbol`.
    pub const ENV_MOD_REGISTER_SYSTEM_LIB_SYMBOL: &str = "TVMFFIEnvModRegisterSystemLibSymbol";
    /// Prefix every C API function name has.
    pub const PREFIX: &str = "TVMFFI";

    /// Every name above but the prefix.
    pub const ALL: &[&str] = &[
        ERROR_SET_RAISED_FROM_CSTR,
        ERROR_SET_RAISED_FROM_CSTR_PARTS,
        OBJECT_INC_REF,
        OBJECT_DEC_REF,
        FUNCTION_CALL,
        FUNCTION_GET_GLOBAL,
        HANDLE_INIT_ONCE,
        ENV_MOD_LOOKUP_FROM_IMPORTS,
        ENV_GET_STREAM,
        ENV_GET_DLPACK_MANAGED_TENSOR_ALLOCATOR,
        ENV_TENSOR_ALLOC,
        STRING_FROM_BYTE_ARRAY,
        BIG_INT_FROM_BYTE_ARRAY,
        ANY_VIEW_TO_OWNED_ANY,
        GET_TYPE_INFO,
        ENV_MOD_REGISTER_SYSTEM_LIB_SYMBOL,
    ];
}

/// The error kinds generated code and the runtime raise (the `kind` of an `ffi.Error`, which
/// Python maps to its exception classes).
pub mod error_kind {
    /// A value of the wrong type.
    pub const TYPE_ERROR: &str = "TypeError";
    /// A value of the right type but out of range or inconsistent.
    pub const VALUE_ERROR: &str = "ValueError";
    /// An index out of range.
    pub const INDEX_ERROR: &str = "IndexError";
    /// A failure while running (a callee's error, a driver failure).
    pub const RUNTIME_ERROR: &str = "RuntimeError";
    /// A bug: an invariant that should hold did not.
    pub const INTERNAL_ERROR: &str = "InternalError";
}
