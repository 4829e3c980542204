//! The TVM-FFI C API functions generated code calls, with their C signatures.
//!
//! Generated code references only these symbols (all declared in the real `c_api.h` and
//! `extra/c_env_api.h`), so the same object works with libtvm_ffi and with safecall-runtime.

use safecall_runtime::abi::symbols::c_api;

use crate::lir::{Signature, Ty};

/// A C API function used by generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CApi {
    /// `void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** parts, int32_t n)`
    ErrorSetRaisedFromCStrParts,
    /// `int TVMFFIObjectIncRef(TVMFFIObjectHandle obj)`
    ObjectIncRef,
    /// `int TVMFFIObjectDecRef(TVMFFIObjectHandle obj)`
    ObjectDecRef,
    /// `int TVMFFIFunctionCall(TVMFFIObjectHandle f, TVMFFIAny* args, int32_t n, TVMFFIAny* result)`
    FunctionCall,
    /// `int TVMFFIFunctionGetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle* out)`
    FunctionGetGlobal,
    /// `int TVMFFIHandleInitOnce(void** handle_addr, int (*init)(void** result))`
    HandleInitOnce,
    /// `int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle ctx, const char* name, TVMFFIObjectHandle* out)`
    EnvModLookupFromImports,
    /// `TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id)`
    EnvGetStream,
    /// `DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator()`
    EnvGetDLPackManagedTensorAllocator,
    /// `int TVMFFIEnvTensorAlloc(DLTensor* prototype, TVMFFIObjectHandle* out)`
    EnvTensorAlloc,
    /// `int TVMFFIStringFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out)`
    StringFromByteArray,
    /// `int TVMFFIBigIntFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out)`
    BigIntFromByteArray,
    /// `int TVMFFIAnyViewToOwnedAny(const TVMFFIAny* view, TVMFFIAny* out)`
    AnyViewToOwnedAny,
    /// `const TVMFFITypeInfo* TVMFFIGetTypeInfo(int32_t type_index)`
    GetTypeInfo,
    /// `int TVMFFIEnvModRegisterSystemLibSymbol(const char* name, void* symbol)`
    EnvModRegisterSystemLibSymbol,
}

impl CApi {
    /// The C symbol name.
    pub fn name(self) -> &'static str {
        match self {
            CApi::ErrorSetRaisedFromCStrParts => c_api::ERROR_SET_RAISED_FROM_CSTR_PARTS,
            CApi::ObjectIncRef => c_api::OBJECT_INC_REF,
            CApi::ObjectDecRef => c_api::OBJECT_DEC_REF,
            CApi::FunctionCall => c_api::FUNCTION_CALL,
            CApi::FunctionGetGlobal => c_api::FUNCTION_GET_GLOBAL,
            CApi::HandleInitOnce => c_api::HANDLE_INIT_ONCE,
            CApi::EnvModLookupFromImports => c_api::ENV_MOD_LOOKUP_FROM_IMPORTS,
            CApi::EnvGetStream => c_api::ENV_GET_STREAM,
            CApi::EnvGetDLPackManagedTensorAllocator => {
                c_api::ENV_GET_DLPACK_MANAGED_TENSOR_ALLOCATOR
            }
            CApi::EnvTensorAlloc => c_api::ENV_TENSOR_ALLOC,
            CApi::StringFromByteArray => c_api::STRING_FROM_BYTE_ARRAY,
            CApi::BigIntFromByteArray => c_api::BIG_INT_FROM_BYTE_ARRAY,
            CApi::AnyViewToOwnedAny => c_api::ANY_VIEW_TO_OWNED_ANY,
            CApi::GetTypeInfo => c_api::GET_TYPE_INFO,
            CApi::EnvModRegisterSystemLibSymbol => c_api::ENV_MOD_REGISTER_SYSTEM_LIB_SYMBOL,
        }
    }

    /// The C signature.
    pub fn signature(self) -> Signature {
        use Ty::{I32, Ptr};
        let (params, ret): (&[Ty], Option<Ty>) = match self {
            CApi::ErrorSetRaisedFromCStrParts => (&[Ptr, Ptr, I32], None),
            CApi::ObjectIncRef | CApi::ObjectDecRef => (&[Ptr], Some(I32)),
            CApi::FunctionCall => (&[Ptr, Ptr, I32, Ptr], Some(I32)),
            CApi::FunctionGetGlobal
            | CApi::HandleInitOnce
            | CApi::StringFromByteArray
            | CApi::BigIntFromByteArray
            | CApi::EnvTensorAlloc
            | CApi::AnyViewToOwnedAny
            | CApi::EnvModRegisterSystemLibSymbol => (&[Ptr, Ptr], Some(I32)),
            CApi::EnvModLookupFromImports => (&[Ptr, Ptr, Ptr], Some(I32)),
            CApi::EnvGetStream => (&[I32, I32], Some(Ptr)),
            CApi::GetTypeInfo => (&[I32], Some(Ptr)),
            CApi::EnvGetDLPackManagedTensorAllocator => (&[], Some(Ptr)),
        };
        Signature::new(params.to_vec(), ret)
    }
}

/// The safe-call signature `int f(void* handle, const TVMFFIAny* args, int32_t n, TVMFFIAny* result)`.
pub fn safe_call_signature() -> Signature {
    Signature::new(vec![Ty::Ptr, Ty::Ptr, Ty::I32, Ty::Ptr], Some(Ty::I32))
}
