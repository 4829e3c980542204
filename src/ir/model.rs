//! The data model of the host IR.
//!
//! A [`Module`] holds host [`Function`]s. Each function declares typed [`Param`]s (scalars,
//! strings, tensors described by a [`TensorSpec`], callbacks, ...), optional [`Constraint`]s on
//! integer values, a [`RetType`] and a body of [`Stmt`]s over [`Expr`]s.
//!
//! Conventions every pass relies on:
//! - Names (parameters, tuple elements, symbolic variables, `let` bindings, loop variables)
//!   share one namespace per function; shadowing is not allowed.
//! - Symbolic variables are introduced by tensor specs ([`Dim::Var`], [`Strides::Exact`],
//!   [`DeviceIdPolicy::Var`]); the first occurrence in parameter order binds the value at call
//!   time and later occurrences must match. They have type `i64` and are in scope in the whole body.
//! - There are no implicit conversions: both operands of a binary operator have the same type;
//!   [`Expr::Cast`] converts.
//! - Integer arithmetic wraps (two's complement). Division and remainder by zero raise a
//!   `ValueError` at run time; `MIN / -1` wraps to `MIN` and `MIN % -1` is 0.
//! - The model carries no source positions, so `parse(print(m)) == m` is plain equality; the
//!   parser reports positions through a separate source map.

#[macro_use]
mod keyword;
mod alloc;
mod expr;
mod float;
mod gpu;
mod scalar;
mod tdm;
mod tensor;
mod tensormap;
pub use alloc::{Alloc, AllocDevice};
pub use expr::{BinOp, Expr, TensorField, UnOp};
pub use float::FloatType;
pub use gpu::{
    BinaryFormat, ClusterPolicy, DeviceBinary, Launch, LaunchSetting, LaunchSettingKind,
    LaunchSettings, Platform, SettingShape, SettingValue,
};
pub use scalar::{IntType, ScalarType};
pub use tdm::{TdmArg, limits as tdm_limits};
pub use tensor::{
    ByteOffsetPolicy, DeviceIdPolicy, DeviceTypePolicy, Dim, Strides, TensorShape, TensorSpec,
};
pub use tensormap::{
    Interleave, L2Promotion, LaunchArg, OobFill, Swizzle, TensorMapArg, TensorMapDtype,
    TensorMapLayout, limits as tensormap_limits,
};

/// A compilation unit: one object file, shared library or JIT module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// Module name (used in dumps and diagnostics).
    pub name: String,
    /// Extern C functions the body may call.
    pub externs: Vec<ExternFn>,
    /// Modules embedded in `__tvm_ffi__library_bin`.
    pub imported_modules: Vec<ImportedModule>,
    /// Labels of the [`ImportedModule`]s this library imports directly.
    pub imports: Vec<String>,
    /// GPU device binaries whose kernels [`Stmt::Launch`] launches.
    pub device_binaries: Vec<DeviceBinary>,
    /// When set, functions are registered at load time as system-library symbols
    /// `__tvm_ffi_<prefix><name>` instead of being exported.
    pub system_lib_prefix: Option<String>,
    /// Host functions, exported as `__tvm_ffi_<name>`.
    pub functions: Vec<Function>,
}

impl Module {
    /// A module named `name` with nothing in it.
    pub fn new(name: impl Into<String>) -> Module {
        Module {
            name: name.into(),
            externs: Vec::new(),
            imported_modules: Vec::new(),
            imports: Vec::new(),
            device_binaries: Vec::new(),
            system_lib_prefix: None,
            functions: Vec::new(),
        }
    }
}

/// A C function declared for [`Stmt::CallExtern`].
#[derive(Clone, Debug, PartialEq)]
pub struct ExternFn {
    /// C symbol name.
    pub name: String,
    /// Parameter C types.
    pub params: Vec<ScalarType>,
    /// Return C type; `None` is `void`.
    pub ret: Option<ScalarType>,
    /// How the return value reports errors.
    pub errors: ErrorConvention,
}

/// How an extern C function reports errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorConvention {
    /// The return value is an ordinary value.
    None,
    /// The function returns an integer; non-zero means it has already raised a TVM-FFI error
    /// (with `TVMFFIErrorSetRaised*`), which the host function propagates by returning -1.
    NonZeroIsRaised,
}

/// A module embedded in the library blob (`__tvm_ffi__library_bin`).
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedModule {
    /// Label used by [`Module::imports`] and [`ImportedModule::imports`] (IR-only, not emitted).
    pub label: String,
    /// Module kind; loaded through the global function `ffi.Module.load_from_bytes.<kind>`.
    pub kind: String,
    /// Serialized module; at least one byte.
    pub payload: Vec<u8>,
    /// Labels of the modules this one imports.
    pub imports: Vec<String>,
}

/// A host function: the safe-call entry point `__tvm_ffi_<name>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Export name.
    pub name: String,
    /// Doc string, served by `__tvm_ffi__doc_<name>`.
    pub doc: String,
    /// Parameters in call order.
    pub params: Vec<Param>,
    /// Constraints checked at call time after all parameters are decoded.
    pub constraints: Vec<Constraint>,
    /// Return type.
    pub ret: RetType,
    /// Body.
    pub body: Vec<Stmt>,
}

impl Function {
    /// The first parameter that is a (non-optional) tensor on a CUDA device: a
    /// [`Stmt::Launch`] of a CUDA kernel without `device=` launches on its device.
    pub fn first_cuda_tensor(&self) -> Option<&str> {
        self.first_tensor_on(Platform::Cuda)
    }

    /// The first parameter that is a (non-optional) tensor on a device of `platform`
    /// (`device=cuda`, `device=rocm`): a [`Stmt::Launch`] of that platform's kernel without
    /// `device=` launches on its device.
    pub fn first_tensor_on(&self, platform: Platform) -> Option<&str> {
        self.params.iter().find_map(|p| match &p.ty {
            ParamType::Tensor(spec) if spec.device_type.code() == Some(platform.device_type()) => {
                Some(p.name.as_str())
            }
            _ => None,
        })
    }

    /// The parameter or tuple element (at any depth, inside `optional[...]` too) named `name`.
    pub fn param_named(&self, name: &str) -> Option<&Param> {
        fn find<'p>(params: &'p [Param], name: &str) -> Option<&'p Param> {
            params.iter().find_map(|p| {
                if p.name == name {
                    return Some(p);
                }
                let mut t = &p.ty;
                while let ParamType::Optional(inner) = t {
                    t = inner;
                }
                match t {
                    ParamType::Tuple(items) => find(items, name),
                    _ => None,
                }
            })
        }
        find(&self.params, name)
    }
}

/// A named parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    /// Name, unique in the function.
    pub name: String,
    /// Accepted values.
    pub ty: ParamType,
}

/// What a parameter accepts at call time (see docs/abi.md for the type indices each accepts).
#[derive(Clone, Debug, PartialEq)]
pub enum ParamType {
    /// Int or Bool; out-of-range values are a ValueError.
    Int(IntType),
    /// Bool or Int (non-zero is true).
    Bool,
    /// Float, Int or Bool.
    Float(FloatType),
    /// Opaque pointer; None is the null pointer.
    Ptr,
    /// RawStr, SmallStr or String object.
    Str,
    /// ByteArrayPtr, SmallBytes or Bytes object.
    Bytes,
    /// Device.
    Device,
    /// DataType.
    DType,
    /// Shape object.
    Shape,
    /// Function object (a callback for [`Callee::Param`]).
    Func,
    /// Anything, unchecked.
    Any,
    /// Tensor object or DLTensor pointer, checked against the spec.
    Tensor(TensorSpec),
    /// The inner type, or None.
    Optional(Box<ParamType>),
    /// A value the kernel was specialized on, asserted at call time.
    Const(ConstValue),
    /// An `ffi.Array` whose elements are checked against their own parameters (which may nest).
    Tuple(Vec<Param>),
    /// A data pointer: an opaque pointer or a plain integer address (`tensor.data_ptr()`).
    DataPtr,
    /// An explicit stream: an opaque pointer, an integer handle, or None (the null stream).
    Stream,
}

/// The value of a [`ParamType::Const`] parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue {
    /// An integer (accepts Int, or Bool when the value is 0 or 1).
    Int(i64),
    /// A bool (accepts Bool, or Int 0/1).
    Bool(bool),
    /// A float compared bit for bit, as the bits of an `f64` (accepts Float, or an Int that
    /// converts exactly).
    Float(u64),
    /// None.
    None,
}

/// A call-time constraint on an integer parameter or symbolic variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Constraint {
    /// `var % divisor == 0` (divisor > 0).
    Divisible {
        /// Integer parameter or symbolic variable.
        var: String,
        /// Divisor.
        divisor: u64,
    },
}

/// Return types.
#[derive(Clone, Debug, PartialEq)]
pub enum RetType {
    /// None.
    None,
    /// A POD value (int, bool, float, opaque pointer).
    Scalar(ScalarType),
    /// A device.
    Device,
    /// A data type.
    DType,
    /// A string (created through `TVMFFIStringFromByteArray`, or a string argument).
    Str,
    /// A tensor argument, passed through (the object with an extra reference, or the same
    /// DLTensor pointer that was passed), or a tensor allocated by [`Stmt::Alloc`] (ownership
    /// moves to the caller).
    Tensor,
    /// Any value (e.g. the result of a packed call, moved out).
    Any,
    /// Several values, returned as one `ffi.Array` (`-> (tensor, tensor)`, written
    /// `return (a, b);`); no element is `None` or itself a tuple.
    Tuple(Vec<RetType>),
}

/// Types of values in expressions.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    /// A machine value.
    Scalar(ScalarType),
    /// A string (parameter or literal).
    Str,
    /// Bytes parameter.
    Bytes,
    /// A device.
    Device,
    /// A data type.
    DType,
    /// A Shape parameter.
    Shape,
    /// A Function parameter.
    Func,
    /// A tensor parameter, or a tensor allocated by [`Stmt::Alloc`].
    Tensor,
    /// A dynamically typed value (Any parameter, packed call result, tuple parameter).
    Any,
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `let [mut] name = value`.
    Let {
        /// New name.
        name: String,
        /// Whether [`Stmt::Assign`] may change it.
        mutable: bool,
        /// Initial value; its type is the binding's type.
        value: Expr,
    },
    /// `name = value` for a `let mut` binding.
    Assign {
        /// The binding.
        name: String,
        /// New value, of the binding's type.
        value: Expr,
    },
    /// `store<ty>(ptr, value)`.
    Store {
        /// Stored type.
        ty: ScalarType,
        /// Address.
        ptr: Expr,
        /// Value of type `ty`.
        value: Expr,
    },
    /// `if cond { then } else { otherwise }`.
    If {
        /// A bool.
        cond: Expr,
        /// Taken when true.
        then_body: Vec<Stmt>,
        /// Taken when false.
        else_body: Vec<Stmt>,
    },
    /// `for var in start..end step step { body }`: `var` runs from `start` while `var < end`
    /// (or `var > end` for a negative step).
    For {
        /// Loop variable, of the integer type of `start`.
        var: String,
        /// First value.
        start: Expr,
        /// Bound (exclusive).
        end: Expr,
        /// Non-zero constant step.
        step: i64,
        /// Body.
        body: Vec<Stmt>,
    },
    /// Raise `kind` with `message` unless `cond` holds.
    Assert {
        /// A bool.
        cond: Expr,
        /// Error kind, e.g. `ValueError`.
        kind: String,
        /// Message parts.
        message: Vec<MessagePart>,
    },
    /// Call a declared extern C function.
    CallExtern {
        /// Binds the return value (the function must return a value).
        dest: Option<String>,
        /// Declared name.
        func: String,
        /// Arguments matching the declaration.
        args: Vec<Expr>,
    },
    /// Call a function through the safe-call ABI; the result is an owned [`Type::Any`].
    CallPacked {
        /// Binds the result.
        dest: Option<String>,
        /// What to call.
        callee: Callee,
        /// Arguments of any type.
        args: Vec<Expr>,
    },
    /// `let dest = stream(device_type, device_id)`: the current stream of a device
    /// (`TVMFFIEnvGetStream`), a `ptr`.
    GetStream {
        /// New name.
        dest: String,
        /// Device type, `i32`.
        device_type: Expr,
        /// Device id, `i32`.
        device_id: Expr,
    },
    /// Launch a kernel of a [`DeviceBinary`] through the CUDA driver.
    Launch(Box<Launch>),
    /// `let dest = empty(...)`: allocate a tensor through the environment allocator.
    Alloc(Box<Alloc>),
    /// Return a value matching the function's return type (`None` for `RetType::None`).
    Return(Option<Expr>),
    /// `return (a, b, ...);`: the values of a [`RetType::Tuple`] function, one per element, in
    /// a new `ffi.Array`.
    ReturnTuple(Vec<Expr>),
}

/// A part of an assertion message.
#[derive(Clone, Debug, PartialEq)]
pub enum MessagePart {
    /// Literal text.
    Text(String),
    /// A value, formatted at run time (integers in decimal, bools, floats, pointers in hex,
    /// dtypes and devices by name).
    Value(Expr),
}

/// The target of a packed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// A global function, looked up by name once per call site.
    Global(String),
    /// A function of an imported module (`TVMFFIEnvModLookupFromImports`).
    Import(String),
    /// A [`ParamType::Func`] parameter.
    Param(String),
    /// A symbol following the safe-call ABI (e.g. `__tvm_ffi_other`), called directly.
    Direct(String),
}

// The words of the parameter and return types that are not scalar types (those are
// `ScalarType`'s): one owner for the parser, the printer and the parser's "expected one of"
// lists.

keyword_enum! {
    /// A parameter type written as one word, besides the scalar types.
    ParamWord {
        /// [`ParamType::Str`].
        Str = "str",
        /// [`ParamType::Bytes`].
        Bytes = "bytes",
        /// [`ParamType::Device`].
        Device = "device",
        /// [`ParamType::DType`].
        DType = "dtype",
        /// [`ParamType::Shape`].
        Shape = "shape",
        /// [`ParamType::Func`].
        Func = "func",
        /// [`ParamType::Any`].
        Any = "any",
        /// [`ParamType::DataPtr`].
        DataPtr = "data_ptr",
        /// [`ParamType::Stream`].
        Stream = "stream",
    }
}

keyword_enum! {
    /// A parameter type written as a word and a bracketed part.
    ParamForm {
        /// `optional[T]`: [`ParamType::Optional`].
        Optional = "optional",
        /// `const(V)`: [`ParamType::Const`].
        Const = "const",
        /// `tuple(name: T, ...)`: [`ParamType::Tuple`].
        Tuple = "tuple",
        /// `tensor[...]`: [`ParamType::Tensor`].
        Tensor = "tensor",
    }
}

keyword_enum! {
    /// A return type written as one word, besides the scalar types (a tuple is `(T, ...)`).
    RetWord {
        /// [`RetType::None`].
        None = "none",
        /// [`RetType::Device`].
        Device = "device",
        /// [`RetType::DType`].
        DType = "dtype",
        /// [`RetType::Str`].
        Str = "str",
        /// [`RetType::Tensor`].
        Tensor = "tensor",
        /// [`RetType::Any`].
        Any = "any",
    }
}

impl ParamWord {
    /// The type the word names.
    pub fn param_type(self) -> ParamType {
        match self {
            ParamWord::Str => ParamType::Str,
            ParamWord::Bytes => ParamType::Bytes,
            ParamWord::Device => ParamType::Device,
            ParamWord::DType => ParamType::DType,
            ParamWord::Shape => ParamType::Shape,
            ParamWord::Func => ParamType::Func,
            ParamWord::Any => ParamType::Any,
            ParamWord::DataPtr => ParamType::DataPtr,
            ParamWord::Stream => ParamType::Stream,
        }
    }
}

impl ParamForm {
    /// How the parser's messages show the form: `optional[...]`, `const(...)`, ...
    pub fn shown(self) -> &'static str {
        match self {
            ParamForm::Optional => "optional[...]",
            ParamForm::Const => "const(...)",
            ParamForm::Tuple => "tuple(...)",
            ParamForm::Tensor => "tensor[...]",
        }
    }
}

impl RetWord {
    /// The type the word names.
    pub fn ret_type(self) -> RetType {
        match self {
            RetWord::None => RetType::None,
            RetWord::Device => RetType::Device,
            RetWord::DType => RetType::DType,
            RetWord::Str => RetType::Str,
            RetWord::Tensor => RetType::Tensor,
            RetWord::Any => RetType::Any,
        }
    }
}

impl ParamType {
    /// The parameter type of a scalar type.
    pub fn scalar(t: ScalarType) -> ParamType {
        match t {
            ScalarType::Bool => ParamType::Bool,
            ScalarType::Int(i) => ParamType::Int(i),
            ScalarType::Float(f) => ParamType::Float(f),
            ScalarType::Ptr => ParamType::Ptr,
        }
    }

    /// The scalar type or the word this type is written as, where it is one word.
    pub fn word(&self) -> Option<Result<ScalarType, ParamWord>> {
        Some(match self {
            ParamType::Bool => Ok(ScalarType::Bool),
            ParamType::Int(i) => Ok(ScalarType::Int(*i)),
            ParamType::Float(f) => Ok(ScalarType::Float(*f)),
            ParamType::Ptr => Ok(ScalarType::Ptr),
            ParamType::Str => Err(ParamWord::Str),
            ParamType::Bytes => Err(ParamWord::Bytes),
            ParamType::Device => Err(ParamWord::Device),
            ParamType::DType => Err(ParamWord::DType),
            ParamType::Shape => Err(ParamWord::Shape),
            ParamType::Func => Err(ParamWord::Func),
            ParamType::Any => Err(ParamWord::Any),
            ParamType::DataPtr => Err(ParamWord::DataPtr),
            ParamType::Stream => Err(ParamWord::Stream),
            ParamType::Tensor(_)
            | ParamType::Optional(_)
            | ParamType::Const(_)
            | ParamType::Tuple(_) => return None,
        })
    }
}

impl RetType {
    /// The scalar type or the word this type is written as, where it is one word.
    pub fn word(&self) -> Option<Result<ScalarType, RetWord>> {
        Some(match self {
            RetType::Scalar(s) => Ok(*s),
            RetType::None => Err(RetWord::None),
            RetType::Device => Err(RetWord::Device),
            RetType::DType => Err(RetWord::DType),
            RetType::Str => Err(RetWord::Str),
            RetType::Tensor => Err(RetWord::Tensor),
            RetType::Any => Err(RetWord::Any),
            RetType::Tuple(_) => return None,
        })
    }
}
