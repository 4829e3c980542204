//! `triton_launch_module(...)`: the host function a Triton kernel launches through on the
//! installed driver (`_triton_host_function.launch_module`), built as a verified IR module
//! directly, with `safecall::ir::build`: no IR text is written and parsed again. Python decides
//! what the launch is from Triton's metadata (each argument's kind, each host descriptor's
//! checked spec from `_triton_args.descriptor_spec`, the launch settings from
//! `_triton_args.launch_settings`); this module only shapes it as IR:
//!
//! ```text
//! fn launch(grid_x: i32, grid_y: i32, grid_z: i32, stream: stream, arg0.., global_scratch,
//!           profile_scratch, function: data_ptr) {
//!     assert (argK.shape[i] <= 2147483647) else ValueError(..);   // per descriptor dim
//!     if (<the grid launches>) {
//!         launch kernel.NAME[grid=.., block=(..), .., function=function](args..);
//!     }
//! }
//! ```
//!
//! Building and verifying the module this way costs tens of microseconds where the Python
//! builder, the text and its parse cost hundreds (about 0.4 ms more for a kernel with four
//! host TMA descriptors): the first launch of every new kernel pays it. It is the one adapter
//! that does not go through the public Python builder, for that cost; what it builds is
//! compared with the Python builder's in python/tests/test_triton_launch_module.py.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};
use safecall::ir::build::*;
use safecall::ir::model::{
    Expr, L2Promotion, LaunchArg, LaunchSetting, LaunchSettingKind, OobFill, ParamType, ScalarType,
    SettingValue, Swizzle, TdmArg, TensorMapArg, TensorMapDtype, tdm_limits, tensormap_limits,
};
use safecall::ir::print::{print_launch_arg, print_param_type, print_stmt};
use safecall::ir::syntax;

use safecall_runtime::abi::DLDataType;

use crate::Module;

/// The Python-facing type and the kernel's type of a scalar argument.
struct Scalar {
    outer: ScalarType,
    inner: Option<ScalarType>,
}

/// A host descriptor argument: a tensor parameter and what is built from it.
struct Descriptor {
    dtype: DLDataType,
    rank: usize,
    device: i32,
    built: Built,
}

/// What a descriptor passes first: a TMA descriptor or an AMD TDM descriptor.
enum Built {
    TensorMap(TensorMapSpec),
    Tdm {
        block: Vec<u64>,
        warps: u64,
        pad: Option<(u64, u64)>,
    },
}

/// A `tensormap(..)` or `tensormap_im2col(..)`, without its tensor.
struct TensorMapSpec {
    box_dims: Vec<i64>,
    swizzle: Swizzle,
    l2_promotion: L2Promotion,
    oob_fill: OobFill,
    dtype: TensorMapDtype,
    /// `(lower, upper, channels, pixels, element_strides)` of an im2col descriptor.
    im2col: Option<Im2col>,
}

type Im2col = (Vec<i64>, Vec<i64>, i64, i64, Option<Vec<i64>>);

/// One kernel argument.
enum Leaf {
    Pointer,
    Scalar(Scalar),
    Descriptor(Box<Descriptor>),
}

fn value_error(message: String) -> PyErr {
    PyValueError::new_err(message)
}

/// `e` as the `ValueError` of `triton_launch_module`, naming `what` it was reading: every
/// spec it cannot read is one, whatever reading it raised.
fn named(py: Python<'_>, what: &str, e: PyErr) -> PyErr {
    PyValueError::new_err(format!("triton_launch_module: {what}: {}", e.value(py)))
}

fn scalar_type(word: &str) -> PyResult<ScalarType> {
    syntax::parse_scalar_type(word)
        .ok_or_else(|| value_error(format!("unknown scalar type `{word}`")))
}

fn keyword<T>(what: &str, word: &str, parse: impl Fn(&str) -> Option<T>) -> PyResult<T> {
    parse(word).ok_or_else(|| value_error(format!("unknown {what} `{word}`")))
}

/// `None` (a pointer), `(outer, inner or None)` (a scalar) or a descriptor spec.
fn leaf(item: &Bound<'_, PyAny>) -> PyResult<Leaf> {
    if item.is_none() {
        return Ok(Leaf::Pointer);
    }
    let tuple = item
        .cast::<PyTuple>()
        .map_err(|_| value_error("not None or a tuple".into()))?;
    if tuple.len() == 2 {
        let (outer, inner): (String, Option<String>) = tuple.extract()?;
        return Ok(Leaf::Scalar(Scalar {
            outer: scalar_type(&outer)?,
            inner: inner.as_deref().map(scalar_type).transpose()?,
        }));
    }
    let tag: String = match tuple.get_item(0) {
        Ok(tag) => tag.extract()?,
        Err(_) => return Err(value_error("an empty tuple".into())),
    };
    Ok(Leaf::Descriptor(Box::new(match tag.as_str() {
        "tensormap" => {
            type Spec = (
                String,
                String,
                usize,
                String,
                Vec<i64>,
                String,
                String,
                String,
                String,
                Option<Im2col>,
                String,
            );
            let (_, dtype, rank, device, box_dims, swizzle, l2, fill, element, im2col, shape): Spec =
                tuple.extract()?;
            let max = tensormap_limits::MAX_RANK;
            let lengths_fit = match &im2col {
                // N, the spatial dims, C: a corner per spatial dim.
                Some((lower, upper, _, _, strides)) => {
                    rank >= 3
                        && lower.len() == rank - 2
                        && upper.len() == rank - 2
                        && strides.as_ref().is_none_or(|s| s.len() == rank)
                }
                None => box_dims.len() == rank,
            };
            if !(1..=max).contains(&rank) || !lengths_fit {
                return Err(value_error(format!(
                    "a tensormap of rank {rank} (1 to {max}) whose box or corners do not have its rank"
                )));
            }
            let built = Built::TensorMap(TensorMapSpec {
                box_dims,
                swizzle: keyword("swizzle", &swizzle, Swizzle::from_keyword)?,
                l2_promotion: keyword("l2_promotion", &l2, L2Promotion::from_keyword)?,
                oob_fill: keyword("oob_fill", &fill, OobFill::from_keyword)?,
                dtype: keyword("tensormap dtype", &element, TensorMapDtype::from_keyword)?,
                im2col,
            });
            descriptor(&dtype, rank, &device, built, &shape)?
        }
        "tdm" => {
            type Spec = (
                String,
                String,
                usize,
                String,
                Vec<u64>,
                u64,
                Option<(u64, u64)>,
                String,
            );
            let (_, dtype, rank, device, block, warps, pad, shape): Spec = tuple.extract()?;
            let max = tdm_limits::MAX_RANK;
            if !(1..=max).contains(&rank) || block.len() != rank {
                return Err(value_error(format!(
                    "a TDM descriptor of rank {rank} (1 to {max}) with a block of {} dims",
                    block.len()
                )));
            }
            descriptor(
                &dtype,
                rank,
                &device,
                Built::Tdm { block, warps, pad },
                &shape,
            )?
        }
        other => return Err(value_error(format!("unknown argument kind `{other}`"))),
    })))
}

fn descriptor(
    dtype: &str,
    rank: usize,
    device: &str,
    built: Built,
    shape: &str,
) -> PyResult<Descriptor> {
    // Triton passes each dim of the shape as an i32, checked to fit (`descriptor_args`).
    if shape != syntax::scalar_type(I32) {
        return Err(value_error(format!(
            "a descriptor's shape passed as `{shape}` (only i32 is built)"
        )));
    }
    Ok(Descriptor {
        dtype: safecall_runtime::dtype::parse(dtype)
            .map_err(|e| value_error(format!("dtype `{dtype}`: {e}")))?,
        rank,
        device: keyword("device", device, syntax::parse_device_name)?,
        built,
    })
}

/// A scalar type as a parameter type.
fn param_type(t: ScalarType) -> ParamType {
    match t {
        ScalarType::Bool => ParamType::Bool,
        ScalarType::Int(i) => ParamType::Int(i),
        ScalarType::Float(f) => ParamType::Float(f),
        ScalarType::Ptr => ParamType::Ptr,
    }
}

/// A launch setting's value from Python: a list of ints (dims), a str (a keyword), a bool or
/// an int. The settings this module sets itself (the grid, block, stream, device and
/// function) are refused: one way in.
fn setting(kind: &str, value: &Bound<'_, PyAny>) -> PyResult<LaunchSetting> {
    let own = [
        LaunchSettingKind::Grid,
        LaunchSettingKind::Block,
        LaunchSettingKind::Stream,
        LaunchSettingKind::Device,
        LaunchSettingKind::Function,
    ];
    let kind = LaunchSettingKind::ALL
        .into_iter()
        .find(|k| k.keyword() == kind && !own.contains(k))
        .ok_or_else(|| value_error(format!("unknown launch setting `{kind}`")))?;
    let value = if let Ok(word) = value.cast::<PyString>() {
        SettingValue::Keyword(word.to_cow()?.into_owned())
    } else if let Ok(flag) = value.cast::<PyBool>() {
        SettingValue::Expr(boolean(flag.is_true()))
    } else if let Ok(n) = value.extract::<i64>() {
        SettingValue::Expr(int(n))
    } else if let Ok(dims) = value.extract::<Vec<i64>>() {
        SettingValue::Dims(dims.into_iter().map(int).collect())
    } else {
        return Err(value_error(format!(
            "{} is not a keyword, bool, int or list of ints",
            value.repr()?
        )));
    };
    LaunchSetting::new(kind, value).map_err(value_error)
}

/// The IR of one descriptor argument `name` of function `function`: the tensor parameter,
/// the checks of its shape (asserted in `f`'s body) and what the launch passes for it.
fn descriptor_args(
    f: &mut FunctionBuilder,
    function: &str,
    name: &str,
    d: &Descriptor,
) -> Vec<LaunchArg> {
    let dims: Vec<String> = (0..d.rank).map(|i| format!("{name}_dim{i}")).collect();
    let spec = TensorSpecBuilder::new(dims.iter().map(String::as_str))
        .dtype(d.dtype)
        .device(d.device)
        .any_strides()
        .any_byte_offset();
    let t = f.tensor(name, spec);
    // Triton passes each dim as an i32: checked to fit.
    let limit = i64::from(i32::MAX);
    let passed = syntax::scalar_type(I32);
    for i in 0..d.rank {
        f.assert(
            t.shape(i).le(int(limit)),
            "ValueError",
            [
                format!("{function}: argument '{name}': shape[{i}] is ").into(),
                t.shape(i).into(),
                format!("; Triton passes a descriptor's shape as {passed} (at most {limit})")
                    .into(),
            ],
        );
    }
    let first: LaunchArg = match &d.built {
        Built::TensorMap(m) => {
            let map = match &m.im2col {
                None => TensorMapArg::new(name, m.box_dims.iter().copied().map(int).collect()),
                Some((lower, upper, channels, pixels, strides)) => {
                    let ints = |v: &Vec<i64>| v.iter().copied().map(int).collect::<Vec<Expr>>();
                    let map = tensormap_im2col(
                        name,
                        ints(lower),
                        ints(upper),
                        int(*channels),
                        int(*pixels),
                    );
                    match strides {
                        Some(s) => map.element_strides(ints(s)),
                        None => map,
                    }
                }
            };
            map.swizzle(m.swizzle)
                .l2_promotion(m.l2_promotion)
                .oob_fill(m.oob_fill)
                .dtype(m.dtype)
                .into()
        }
        Built::Tdm { block, warps, pad } => TdmArg {
            tensor: name.to_owned(),
            block: block.clone(),
            warps: *warps,
            pad: *pad,
        }
        .into(),
    };
    let mut args = vec![first];
    args.extend((0..d.rank).map(|i| t.shape(i).cast(I32).into()));
    args.extend((0..d.rank).map(|i| t.stride(i).into()));
    args
}

/// The launch module of kernel `name` (see the module docs): `leaves` per kernel argument
/// `None` (a pointer), `(outer, inner or None)` (a scalar: the Python-facing type and, when
/// another, the kernel's, which the argument is cast to) or a descriptor spec
/// (`_triton_args.descriptor_spec`); `trailing` the names of the pointers after them (the
/// scratch pointers); `settings` the launch settings of `_triton_args.launch_settings` by
/// keyword (not the grid, block, stream, device or function, which this sets); `hip` for an
/// AMD kernel (its launch skips a grid with a zero dim, each dim passed as `u32`). A
/// `ValueError` names a spec this cannot read (which argument or setting, and why), an
/// `IRError` a module that does not verify (a launch the binary's parameter table refuses).
#[pyfunction]
#[pyo3(signature = (name, format, binary, leaves, trailing, num_ctas, block, settings, ordinal, hip))]
#[allow(clippy::too_many_arguments)]
fn triton_launch_module(
    py: Python<'_>,
    name: &str,
    format: &str,
    binary: &[u8],
    leaves: Vec<Bound<'_, PyAny>>,
    trailing: Vec<String>,
    num_ctas: i64,
    block: i64,
    settings: &Bound<'_, PyDict>,
    ordinal: i64,
    hip: bool,
) -> PyResult<Module> {
    let format = crate::kernel_params::binary_format(format).map_err(|e| named(py, "binary", e))?;
    let leaves = leaves
        .iter()
        .enumerate()
        .map(|(i, item)| leaf(item).map_err(|e| named(py, &format!("argument {i}"), e)))
        .collect::<PyResult<Vec<_>>>()?;
    let mut m = ModuleBuilder::new(&format!("triton_launch_{name}"));
    m.device_binary("kernel", format, binary, [name]);
    let mut f = FunctionBuilder::new("launch");
    f.doc(&format!(
        "Launches Triton kernel `{name}` as Triton 3.9's launcher does."
    ));
    let grid: Vec<Expr> = ["grid_x", "grid_y", "grid_z"]
        .into_iter()
        .map(|g| f.param(g, param_type(I32)))
        .collect();
    let stream = f.param("stream", ParamType::Stream);
    let mut args = Vec::new();
    for (i, leaf) in leaves.iter().enumerate() {
        let pname = format!("arg{i}");
        match leaf {
            Leaf::Pointer => args.push(f.param(&pname, ParamType::DataPtr).into()),
            Leaf::Scalar(s) => {
                let p = f.param(&pname, param_type(s.outer));
                args.push(s.inner.map_or(p.clone(), |t| p.cast(t)).into());
            }
            Leaf::Descriptor(d) => args.extend(descriptor_args(&mut f, "launch", &pname, d)),
        }
    }
    for pointer in &trailing {
        args.push(f.param(pointer, ParamType::DataPtr).into());
    }
    let function = f.param("function", ParamType::DataPtr);
    let x = if num_ctas > 1 {
        grid[0].clone().cast(I64) * int(num_ctas)
    } else {
        grid[0].clone()
    };
    let wide: Vec<Expr> = grid.iter().map(|g| g.clone().cast(I64)).collect();
    let (nonempty, launch_grid) = if hip {
        // The AMD driver.c launches unless gridX * gridY * gridZ == 0, passing each dimension
        // as `unsigned int` (a negative one reaches the runtime as 2^32 - |g|, which decides).
        let nonzero = |g: &Expr| g.clone().not_equals(int(0));
        let nonempty = nonzero(&wide[0])
            .and(nonzero(&wide[1]))
            .and(nonzero(&wide[2]));
        let dims = [x, grid[1].clone(), grid[2].clone()].map(|g| g.cast(U32));
        (nonempty, dims.to_vec())
    } else {
        // driver.c launches when gridX * gridY * gridZ > 0 (a negative grid launches nothing).
        let product = wide[0].clone() * wide[1].clone() * wide[2].clone();
        (
            product.gt(int(0)),
            vec![x, grid[1].clone(), grid[2].clone()],
        )
    };
    let mut launch = LaunchBuilder::new("kernel", name)
        .grid(launch_grid)
        .block([int(block)]);
    for (key, value) in settings.iter() {
        let key = key.extract::<String>()?;
        let parsed =
            setting(&key, &value).map_err(|e| named(py, &format!("setting `{key}`"), e))?;
        launch = launch.setting(parsed);
    }
    let launch = launch
        .stream(stream)
        .device(int(ordinal))
        .function(function);
    let launch = args.into_iter().fold(launch, LaunchBuilder::arg);
    f.if_then(nonempty, |b| {
        b.launch(launch);
    });
    m.function(f.finish());
    let file = format!("<triton launch {name}>");
    match m.finish_verified() {
        Ok(verified) => Ok(Module::built(verified, file)),
        Err(errors) => Err(crate::built_module_error(py, &errors, &file)),
    }
}

/// The IR of host descriptor argument `arg` of function `function` as text, for the Python
/// builder to splice (`_triton_args.descriptor_argument`, which `safecall.triton.function`
/// builds with): the parameter's type, the statements checking its shape, and what the launch
/// passes for it (the descriptor, then the shape and the strides), each printed as the IR spells
/// it. `spec` is a `_triton_args.descriptor_spec`. The installed driver's launches are built by
/// the same code ([`triton_launch_module`]): a descriptor's IR has one owner.
#[pyfunction]
fn triton_descriptor_ir(
    py: Python<'_>,
    spec: &Bound<'_, PyAny>,
    arg: &str,
    function: &str,
) -> PyResult<(String, Vec<String>, Vec<String>)> {
    let what = || format!("descriptor '{arg}'");
    let Leaf::Descriptor(d) = leaf(spec).map_err(|e| named(py, &what(), e))? else {
        return Err(named(
            py,
            &what(),
            value_error("not a descriptor spec".into()),
        ));
    };
    let mut f = FunctionBuilder::new(function);
    let passed = descriptor_args(&mut f, function, arg, &d);
    let built = f.finish();
    Ok((
        print_param_type(&built.params[0].ty),
        built.body.iter().map(print_stmt).collect(),
        passed.iter().map(print_launch_arg).collect(),
    ))
}

/// Adds [`triton_launch_module`] and [`triton_descriptor_ir`] to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(triton_launch_module, m)?)?;
    m.add_function(wrap_pyfunction!(triton_descriptor_ir, m)?)
}
