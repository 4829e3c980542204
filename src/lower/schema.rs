//! How host functions describe themselves: signature text in error messages, expected-type
//! phrases, and the `type_schema` JSON of `__tvm_ffi__metadata_<name>`.

use serde_json::{Value, json};

use crate::ir::{
    ByteOffsetPolicy, ConstValue, DeviceIdPolicy, DeviceTypePolicy, Dim, Function, IntType,
    ParamType, RetType, ScalarType, Strides, TensorShape, TensorSpec,
};

use super::raise::device_name;

pub use crate::ir::syntax::{int_type as int_name, scalar_type as scalar_name};

/// Inclusive value range of an integer type, as `i64` (u64 is limited to `i64::MAX`: TVM-FFI
/// ints are signed 64-bit).
pub fn int_range(t: IntType) -> (i64, i64) {
    match t {
        IntType::I8 => (i8::MIN.into(), i8::MAX.into()),
        IntType::I16 => (i16::MIN.into(), i16::MAX.into()),
        IntType::I32 => (i32::MIN.into(), i32::MAX.into()),
        IntType::I64 => (i64::MIN, i64::MAX),
        IntType::U8 => (0, u8::MAX.into()),
        IntType::U16 => (0, u16::MAX.into()),
        IntType::U32 => (0, u32::MAX.into()),
        IntType::U64 => (0, i64::MAX),
    }
}

/// `" is out of range for T [lo, hi]"`, the tail of an integer's range error: `u64`'s whole
/// range (an int of 2^63 or more reaches it as a BigInt), where [`int_range`] stops at
/// `i64::MAX`, the most an `Int` holds.
pub fn out_of_range_text(t: IntType) -> String {
    let (lo, hi) = int_range(t);
    let hi = if t == IntType::U64 {
        u64::MAX.to_string()
    } else {
        hi.to_string()
    };
    format!(" is out of range for {} [{lo}, {hi}]", int_name(t))
}

fn dim_text(d: &Dim) -> String {
    match d {
        Dim::Const(c) => c.to_string(),
        Dim::Var(v) => v.clone(),
    }
}

/// `(n, 4)` / `(n,)` / `()`.
pub fn dims_text(dims: &[Dim]) -> String {
    match dims {
        [one] => format!("({},)", dim_text(one)),
        _ => format!(
            "({})",
            dims.iter().map(dim_text).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A dtype's name (`float32`), or `any`.
pub fn dtype_text(dtype: Option<safecall_runtime::abi::DLDataType>) -> String {
    match dtype {
        None => "any".to_owned(),
        Some(d) => safecall_runtime::dtype::format(d).unwrap_or_else(|_| format!("{d:?}")),
    }
}

/// A device type's name (`cpu`), or its code.
pub fn device_type_text(code: i32) -> String {
    device_name(code)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("device_type={code}"))
}

/// `Tensor[(n,), float32]`, with the device type and stride form when they are constrained.
pub fn tensor_text(spec: &TensorSpec) -> String {
    let shape = match &spec.shape {
        TensorShape::Dims(dims) => dims_text(dims),
        TensorShape::AnyRank => "any".to_owned(),
    };
    let mut s = format!("Tensor[{shape}, {}", dtype_text(spec.dtype));
    match spec.device_type {
        DeviceTypePolicy::Any => {}
        DeviceTypePolicy::Same => s.push_str(", device=same"),
        DeviceTypePolicy::Code(dev) => {
            s.push_str(", ");
            s.push_str(&device_type_text(dev));
        }
    }
    match &spec.strides {
        Strides::Compact => {}
        Strides::Any => s.push_str(", strided"),
        Strides::Exact(dims) => s.push_str(&format!(", strides={}", dims_text(dims))),
    }
    match &spec.device_id {
        DeviceIdPolicy::Same => {}
        DeviceIdPolicy::Free => s.push_str(", device_id=free"),
        DeviceIdPolicy::Var(v) => s.push_str(&format!(", device_id={v}")),
    }
    if spec.byte_offset == ByteOffsetPolicy::Any {
        s.push_str(", byte_offset=any");
    }
    if let Some(align) = spec.alignment {
        s.push_str(&format!(", align={align}"));
    }
    if let Some(index) = spec.index_type {
        s.push_str(&format!(", index={}", int_name(index)));
    }
    s.push(']');
    s
}

fn float_text(bits: u64) -> String {
    format!("{:?}", f64::from_bits(bits))
}

/// A parameter type as signatures in messages show it.
pub fn param_text(ty: &ParamType) -> String {
    match ty {
        ParamType::Int(t) => int_name(*t).to_owned(),
        ParamType::Bool => "bool".to_owned(),
        ParamType::Float(t) => crate::ir::syntax::float_type(*t).to_owned(),
        ParamType::Ptr => "ptr".to_owned(),
        ParamType::Str => "str".to_owned(),
        ParamType::Bytes => "bytes".to_owned(),
        ParamType::Device => "Device".to_owned(),
        ParamType::DType => "DataType".to_owned(),
        ParamType::Shape => "Shape".to_owned(),
        ParamType::Func => "Function".to_owned(),
        ParamType::Any => "Any".to_owned(),
        ParamType::Tensor(spec) => tensor_text(spec),
        ParamType::Optional(inner) => format!("Optional[{}]", param_text(inner)),
        ParamType::Const(c) => format!("Literal[{}]", const_text(c)),
        ParamType::Tuple(items) => format!(
            "Tuple[{}]",
            items
                .iter()
                .map(|p| format!("{}: {}", p.name, param_text(&p.ty)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ParamType::DataPtr => "DataPtr".to_owned(),
        ParamType::Stream => "Stream".to_owned(),
    }
}

/// A constant as messages show it.
pub fn const_text(c: &ConstValue) -> String {
    match c {
        ConstValue::Int(v) => v.to_string(),
        ConstValue::Bool(b) => if *b { "True" } else { "False" }.to_owned(),
        ConstValue::Float(bits) => float_text(*bits),
        ConstValue::None => "None".to_owned(),
    }
}

/// `add_one(x: Tensor[(n,), float32], y: Tensor[(n,), float32])`.
pub fn signature_text(f: &Function) -> String {
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, param_text(&p.ty)))
        .collect();
    format!("{}({})", f.name, params.join(", "))
}

/// What a parameter accepts, for "expected X, got Y" messages.
pub fn expected_text(ty: &ParamType) -> String {
    match ty {
        ParamType::Int(_) => "int".to_owned(),
        ParamType::Bool => "bool".to_owned(),
        ParamType::Float(_) => "float".to_owned(),
        ParamType::Ptr => "void* or None".to_owned(),
        ParamType::Str => "str".to_owned(),
        ParamType::Bytes => "bytes".to_owned(),
        ParamType::Device => "Device".to_owned(),
        ParamType::DType => "DataType".to_owned(),
        ParamType::Shape => "ffi.Shape".to_owned(),
        ParamType::Func => "ffi.Function".to_owned(),
        ParamType::Any => "any value".to_owned(),
        ParamType::Tensor(_) => "Tensor".to_owned(),
        ParamType::Optional(inner) => format!("{} or None", expected_text(inner)),
        ParamType::Const(ConstValue::None) => "None".to_owned(),
        ParamType::Const(ConstValue::Int(_)) => "int".to_owned(),
        ParamType::Const(ConstValue::Bool(_)) => "bool".to_owned(),
        ParamType::Const(ConstValue::Float(_)) => "float".to_owned(),
        ParamType::Tuple(items) => format!("ffi.Array of {} elements", items.len()),
        ParamType::DataPtr => "void* or int (a data pointer)".to_owned(),
        ParamType::Stream => "void*, int or None (a stream)".to_owned(),
    }
}

fn ty(name: &str) -> Value {
    json!({ "type": name })
}

/// The TVM-FFI type schema of a parameter type.
pub fn param_schema(t: &ParamType) -> Value {
    match t {
        ParamType::Int(_) | ParamType::Const(ConstValue::Int(_)) => ty("int"),
        ParamType::Bool | ParamType::Const(ConstValue::Bool(_)) => ty("bool"),
        ParamType::Float(_) | ParamType::Const(ConstValue::Float(_)) => ty("float"),
        ParamType::Const(ConstValue::None) => ty("None"),
        ParamType::Ptr => json!({ "type": "Optional", "args": [ty("void*")] }),
        ParamType::Str => ty("ffi.String"),
        ParamType::Bytes => ty("ffi.Bytes"),
        ParamType::Device => ty("Device"),
        ParamType::DType => ty("DataType"),
        ParamType::Shape => ty("ffi.Shape"),
        ParamType::Func => ty("ffi.Function"),
        ParamType::Any => ty("Any"),
        ParamType::Tensor(_) => ty("ffi.Tensor"),
        ParamType::Optional(inner) => json!({ "type": "Optional", "args": [param_schema(inner)] }),
        ParamType::Tuple(items) => {
            json!({ "type": "tuple", "args": items.iter().map(|p| param_schema(&p.ty)).collect::<Vec<_>>() })
        }
        ParamType::DataPtr => json!({ "type": "Union", "args": [ty("void*"), ty("int")] }),
        ParamType::Stream => {
            json!({ "type": "Union", "args": [ty("void*"), ty("int"), ty("None")] })
        }
    }
}

/// The TVM-FFI type schema of a return type.
pub fn return_schema(r: &RetType) -> Value {
    match r {
        RetType::None => ty("None"),
        RetType::Scalar(ScalarType::Bool) => ty("bool"),
        RetType::Scalar(ScalarType::Int(_)) => ty("int"),
        RetType::Scalar(ScalarType::Float(_)) => ty("float"),
        RetType::Scalar(ScalarType::Ptr) => ty("void*"),
        RetType::Device => ty("Device"),
        RetType::DType => ty("DataType"),
        RetType::Str => ty("ffi.String"),
        RetType::Tensor => ty("ffi.Tensor"),
        RetType::Any => ty("Any"),
        RetType::Tuple(items) => {
            json!({ "type": "tuple", "args": items.iter().map(return_schema).collect::<Vec<_>>() })
        }
    }
}

/// The metadata JSON served by `__tvm_ffi__metadata_<name>`: `{"type_schema": "<json>",
/// "arg_names": [...], "signature": "..."}`, where `type_schema` is itself a JSON string.
pub fn metadata_json(f: &Function) -> String {
    let schema = json!({
        "type": "ffi.Function",
        "named_args": {
            "return": [return_schema(&f.ret)],
            "params": f.params.iter().map(|p| param_schema(&p.ty)).collect::<Vec<_>>(),
        }
    });
    json!({
        "type_schema": schema.to_string(),
        "arg_names": f.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        "signature": signature_text(f),
    })
    .to_string()
}
