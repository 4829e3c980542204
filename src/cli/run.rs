//! `safecall run FILE FUNC ARGS...`: JIT-compile an IR file, call one of its functions with
//! arguments written on the command line ([`crate::args`]), print the result or the error.

use std::path::PathBuf;

use safecall::ir::{Param, ParamType};
use safecall::jit::JitOptions;
use safecall_runtime::{Any, AnyView, Array, Bytes, Function, Shape, Tensor};

use crate::args::{self, Value};
use crate::codegen::CodegenArgs;
use crate::failure::Failure;
use crate::show::{self, HostData};
use crate::source::IrFile;
use crate::tensor;

/// JIT-compile an IR file and call one of its functions
///
/// The module is verified and compiled in-process (no C compiler or linker), FUNC is called
/// with ARGS through the bundled TVM-FFI runtime, and the result is printed on stdout; an
/// error raised by the function is printed on stderr exactly as raised, `KIND: message`.
/// Options go before the first argument: every word from there on is an argument.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Arguments, one word each (quote them for the shell):
  42  -7  0x10                 int
  1.5  -2e-3  inf  nan         float
  true  false                  bool
  none                         None
  str:hello  '\"json string\"'   string (str: takes the rest of the word)
  bytes:ab\\x00c                bytes (\\xNN escapes)
  cpu:0  cuda:1                device
  dtype:float32                data type
  shape:[2,3]                  shape
  ptr:0x1000                   opaque pointer
  global:NAME                  a registered global function (for func parameters)
  '(1, float32[2]:ones)'       array (for tuple parameters)
  DTYPE[DIMS][:PATTERN][@DEVICE]   tensor, e.g. float32[4,3]:arange, int8[8]:fill=3,
                               float32[2]:zeros, float64[3]:[1,2.5,-1], float16[64,32]@cuda:0

Tensor patterns: zeros (default), ones, arange (0, 1, 2, ... row-major, converted like
numpy's astype), fill=V, [v, v, ...]. A device other than cpu labels host memory with that
device, for trying GPU launchers on the CPU with a stand-in launch function (--preload).

Results print in the same syntax (strings as JSON strings); tensors as DTYPE[DIMS]@DEVICE
followed by their elements.

Examples:
  safecall run --print-tensors examples/ir/add_one.scir add_one float32[4]:arange float32[4]
  safecall run --backend llvm kernels.scir scale float32[8]:ones 2.5
  safecall run --preload ./libstandin.so launcher.scir launch float16[64,32]@cuda:0 -1.5

Exit codes: 0 the call returned, 1 invalid IR, 2 usage (e.g. argument syntax, unknown
function), 3 the function raised an error, 4 compiling or loading failed (e.g. unresolved
extern symbols).")]
pub struct RunArgs {
    /// The IR file (`.scir`, see docs/ir.md)
    pub file: PathBuf,

    /// The host function to call
    #[arg(value_name = "FUNC")]
    pub function: String,

    /// The arguments (see below)
    #[arg(
        value_name = "ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,

    #[command(flatten)]
    pub codegen: CodegenArgs,

    /// After a successful call, print every tensor argument, named by its parameter
    #[arg(long)]
    pub print_tensors: bool,

    /// Load a shared library before compiling, with its symbols global, so that the `extern
    /// fn`s the IR declares resolve to it (repeatable). Without it they resolve from this
    /// process, or the compile fails naming them. Its file is checked and it is loaded in a
    /// child process first, so that a damaged library is reported rather than crashing this
    /// one
    #[arg(long, value_name = "LIB")]
    pub preload: Vec<PathBuf>,
}

/// Runs `safecall run`.
pub fn run(args: &RunArgs) -> Result<(), Failure> {
    let codegen = args.codegen.settings()?;
    if let Some(target) = codegen.target {
        return Err(Failure::usage(format!(
            "`run` compiles into this process and so for the host only, not for {target}"
        ))
        .help("build a library for it with `safecall build --target`"));
    }
    let file = IrFile::load(&args.file)?;
    let Some(function) = file
        .module
        .functions
        .iter()
        .find(|f| f.name == args.function)
    else {
        return Err(Failure::usage(format!(
            "`{}` has no function `{}`",
            file.name, args.function
        ))
        .help(format!("its functions: {}", file.function_names())));
    };
    let values = args
        .args
        .iter()
        .enumerate()
        .map(|(i, text)| {
            if text.starts_with("--") {
                return Err(Failure::usage(format!(
                    "argument {} (`{text}`): options of `run` go before the first argument",
                    i + 1
                ))
                .help(format!(
                    "safecall run [OPTIONS] FILE FUNC ARGS..., e.g. `safecall run {text} {} {} ...`",
                    args.file.display(),
                    args.function
                )));
            }
            args::parse(text).map_err(|e| {
                Failure::usage(format!("argument {} (`{text}`): {e}", i + 1))
                    .help("see `safecall run --help` for the argument syntax")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut made = Made::default();
    let anys = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let label = label(function.params.get(i), &format!("args[{i}]"));
            made.any(v, &label, function.params.get(i).map(|p| &p.ty))
                .map_err(|e| {
                    Failure::usage(format!("argument {} (`{}`): {e}", i + 1, args.args[i]))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;

    crate::sandbox::check_preloads(&args.preload)?;
    let _libraries = args
        .preload
        .iter()
        .map(|path| preload(path))
        .collect::<Result<Vec<_>, _>>()?;
    let options = JitOptions {
        backend: codegen.backend,
        cranelift: codegen.cranelift,
        llvm: codegen.llvm,
        ..JitOptions::default()
    };
    // SAFETY: `safecall run` executes the file's host function the way a program runs: the
    // user asked for exactly this code (its pointers, its extern calls) to run in this process.
    let jit = unsafe { safecall::jit::compile(&file.module, &options) }
        .map_err(|e| file.compile_failure(e))?;
    let callee = jit
        .function(&function.name)
        .expect("compiled functions are all present");

    let views: Vec<AnyView<'_>> = anys.iter().map(Any::view).collect();
    let result = callee
        .call(&views)
        .map_err(|e| Failure::raised(&e.kind(), &e.message()))?;
    let host = HostData {
        extra: made.host_ranges(),
    };
    println!("{}", show::value(&result.view(), &host));
    if args.print_tensors {
        for (label, t) in &made.tensors {
            println!("{label} = {}", show::tensor(t.dltensor(), &host));
        }
    }
    Ok(())
}

/// How a value is named in `--print-tensors`: the parameter's name, else its position.
fn label(param: Option<&Param>, fallback: &str) -> String {
    param.map_or_else(|| fallback.to_owned(), |p| p.name.clone())
}

/// The objects made for the arguments.
#[derive(Default)]
struct Made {
    /// Tensors by label, in argument order.
    tensors: Vec<(String, Tensor)>,
}

impl Made {
    /// Host memory behind the tensors that are labelled with another device.
    fn host_ranges(&self) -> Vec<(usize, usize)> {
        self.tensors
            .iter()
            .map(|(_, t)| {
                let start = t.data_ptr() as usize;
                let bytes = t.numel().max(0) as usize
                    * usize::from(t.dtype().bits).div_ceil(8)
                    * usize::from(t.dtype().lanes.max(1));
                (start, start + bytes.max(1))
            })
            .collect()
    }

    /// The TVM-FFI value of `v`; `ty` is the parameter's type when known (it names tuple
    /// elements).
    fn any(&mut self, v: &Value, label: &str, ty: Option<&ParamType>) -> Result<Any, String> {
        Ok(match v {
            Value::None => Any::none(),
            Value::Bool(b) => Any::from(*b),
            Value::Int(i) => Any::from(*i),
            Value::UpperU64(v) => safecall_runtime::big_int::any_from_words(&[*v as i64, 0]),
            Value::Float(f) => Any::from(*f),
            Value::Str(s) => Any::from(s.as_str()),
            Value::Bytes(b) => Any::from(Bytes::new(b)),
            Value::Device(d) => Any::from(*d),
            Value::DType(d) => Any::from(*d),
            Value::Shape(dims) => Any::from(Shape::new(dims)),
            Value::Ptr(p) => Any::from_view(AnyView::opaque_ptr(*p as *mut std::ffi::c_void))
                .map_err(|e| e.message().into_owned())?,
            Value::Global(name) => Any::from(
                Function::get_global(name)
                    .ok_or_else(|| format!("no global function `{name}` is registered"))?,
            ),
            Value::Tensor(spec) => {
                let t = tensor::create(spec)?;
                self.tensors.push((label.to_owned(), t.clone()));
                Any::from(t)
            }
            Value::Tuple(items) => {
                let elements = match ty {
                    Some(ParamType::Tuple(params)) => Some(params),
                    Some(ParamType::Optional(inner)) => match &**inner {
                        ParamType::Tuple(params) => Some(params),
                        _ => None,
                    },
                    _ => None,
                };
                let mut anys = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let param = elements.and_then(|p| p.get(i));
                    let fallback = format!("{label}[{i}]");
                    let name = match param {
                        Some(p) if !p.name.is_empty() => p.name.clone(),
                        _ => fallback,
                    };
                    anys.push(self.any(item, &name, param.map(|p| &p.ty))?);
                }
                Any::from(Array::new(anys))
            }
        })
    }
}

/// Loads `path` with its symbols global (`RTLD_NOW | RTLD_GLOBAL`).
fn preload(path: &std::path::Path) -> Result<libloading::os::unix::Library, Failure> {
    // A bare file name would make dlopen search the library path instead of the file.
    let path = if path.components().count() == 1 && path.is_relative() {
        std::path::Path::new(".").join(path)
    } else {
        path.to_path_buf()
    };
    // SAFETY: loading a library runs its initializers; the user asked for this library.
    unsafe {
        libloading::os::unix::Library::open(
            Some(&path),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
        )
    }
    .map_err(|e| Failure::failed(format!("cannot load `{}`", path.display())).detail(e))
}
