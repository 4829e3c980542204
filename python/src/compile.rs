//! JIT, AOT and intermediate forms, with the CLI's code-generation options.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use safecall::aot::{LinkOptions, Linker};
use safecall::backend::cranelift::CraneliftOptions;
use safecall::backend::llvm::LlvmOptions;
use safecall::jit::{FirstTier, JitOptions, SymbolAddress, SymbolBinding, TierUp};
use safecall::{Backend, Emit, Options};

use crate::{CompileError, Module, compile_error};

/// The executable memory of one JIT-compiled module. Every `tvm_ffi.Function` made from it
/// keeps this object alive (`keep_alive_object`), so the code is freed with the last of them.
#[pyclass(frozen, module = "safecall")]
pub struct JitCode {
    _code: Arc<safecall::jit::JitCode>,
    /// Launches counted through it by the native Triton launchers that share it (up to their
    /// tier-up threshold: [`JitCode::count_launch`]).
    launches: AtomicU32,
}

impl JitCode {
    /// Counts one launch through this code; at the `threshold`th asks for its tier-up
    /// ([`JitCode::tier_up`]). The launchers of the kernels that share a host function count
    /// together, so its optimized code comes after `threshold` launches through it, however
    /// they are spread. A load and a compare once the threshold is passed.
    #[inline]
    pub(crate) fn count_launch(&self, threshold: u32) {
        // Launches hold the interpreter lock: a plain load and store count them (a lost count
        // would only delay the request, and a second request does nothing).
        let n = self.launches.load(Relaxed);
        if n < threshold {
            self.launches.store(n + 1, Relaxed);
            if n + 1 == threshold {
                self.tier_up();
            }
        }
    }
}

#[pymethods]
impl JitCode {
    /// Whether a tier-up (`jit(..., tier_up=True)`) has switched the module's functions to
    /// Cranelift's code; until then they run the first tier's.
    #[getter]
    pub(crate) fn tiered_up(&self) -> bool {
        self._code.tiered_up()
    }

    /// Starts the tier-up of a module compiled with `tier_up="on_request"` (Cranelift compiles
    /// it again in the background; its functions switch to that code when it is ready):
    /// `True` when this call started it, `False` when it was started before or there is none.
    /// Also called natively by the Triton launcher.
    pub(crate) fn tier_up(&self) -> bool {
        self._code.request_tier_up()
    }
}

/// The backend settings of one call, checked like the CLI's `--backend`/`--opt`/`--cpu`/
/// `--target-features`.
struct Codegen {
    backend: Backend,
    cranelift: Option<CraneliftOptions>,
    llvm: LlvmOptions,
}

fn codegen(
    backend: &str,
    opt: Option<&Bound<'_, PyAny>>,
    cpu: Option<String>,
    target_features: Option<String>,
) -> PyResult<Codegen> {
    let opt = match opt {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => Some(v.str()?.to_string()),
    };
    match Backend::from_name(backend) {
        Some(Backend::Cranelift) => {
            if cpu.is_some() || target_features.is_some() {
                return Err(PyValueError::new_err(
                    "cpu and target_features apply to the LLVM backend; Cranelift compiles for \
                     the host CPU (pass backend=\"llvm\")",
                ));
            }
            let cranelift = match opt {
                None => None,
                Some(level) => {
                    let opt_level = level.parse().map_err(|_| {
                        PyValueError::new_err(format!(
                            "opt={level:?}: Cranelift's levels are \"none\", \"speed\" and \
                             \"speed_and_size\""
                        ))
                    })?;
                    Some(CraneliftOptions {
                        opt_level,
                        ..CraneliftOptions::default()
                    })
                }
            };
            Ok(Codegen {
                backend: Backend::Cranelift,
                cranelift,
                llvm: LlvmOptions::default(),
            })
        }
        Some(Backend::Llvm) => {
            if !Backend::Llvm.available() {
                return Err(CompileError::new_err(
                    "backend=\"llvm\": this build of safecall has no LLVM backend (build the \
                     package with the cargo feature `llvm`)",
                ));
            }
            let mut llvm = LlvmOptions::default();
            if let Some(level) = opt {
                llvm.opt_level = match level.as_str() {
                    "0" => 0,
                    "1" => 1,
                    "2" => 2,
                    "3" => 3,
                    _ => {
                        return Err(PyValueError::new_err(format!(
                            "opt={level:?}: LLVM's levels are 0, 1, 2 and 3"
                        )));
                    }
                };
            }
            if let Some(cpu) = cpu {
                llvm.cpu = cpu;
            }
            if let Some(features) = target_features {
                llvm.features = features;
            }
            Ok(Codegen {
                backend: Backend::Llvm,
                cranelift: None,
                llvm,
            })
        }
        None => Err(PyValueError::new_err(format!(
            "backend={backend:?}: expected {}",
            Backend::ALL.map(|b| format!("{:?}", b.name())).join(" or ")
        ))),
    }
}

/// JIT-compiles `module` bound to the process's TVM-FFI runtime; returns the code and the
/// safe-call address of each function.
#[pyfunction]
#[pyo3(signature = (module, symbols = None, backend = "cranelift", opt = None, cpu = None,
    target_features = None, process_symbols = true, tier_up = None))]
#[allow(clippy::too_many_arguments)]
fn jit(
    py: Python<'_>,
    module: &Module,
    symbols: Option<HashMap<String, usize>>,
    backend: &str,
    opt: Option<&Bound<'_, PyAny>>,
    cpu: Option<String>,
    target_features: Option<String>,
    process_symbols: bool,
    tier_up: Option<&Bound<'_, PyAny>>,
) -> PyResult<(JitCode, Vec<(String, usize)>)> {
    let settings = codegen(backend, opt, cpu, target_features)?;
    let tier_up = match tier_up {
        Some(value) => tier_up_of(value)?,
        None => TierUp::Never,
    };
    if tier_up != TierUp::Never && settings.backend != Backend::Cranelift {
        return Err(PyValueError::new_err(
            "tier_up applies to the Cranelift backend (LLVM compiles optimized code at once)",
        ));
    }
    let defaults = JitOptions::default();
    // Cranelift at an `opt` level the caller chose compiles the code itself; with `tier_up`
    // the first tier's code runs until Cranelift (at `opt`, else optimizing) has compiled it
    // again in the background. Otherwise the first tier alone (the baseline compiler on x86-64).
    let (first_tier, cranelift) = match (tier_up, settings.cranelift) {
        (TierUp::Never, Some(cranelift)) => (FirstTier::Backend, cranelift),
        (TierUp::Never, None) => (defaults.first_tier, defaults.cranelift),
        // Off x86-64 there is no baseline tier and so no tier-up: Cranelift compiles the first
        // (and only) tier at the settings it would have without one.
        (_, cranelift) if !cfg!(target_arch = "x86_64") => {
            (defaults.first_tier, cranelift.unwrap_or(defaults.cranelift))
        }
        (_, cranelift) => (defaults.first_tier, cranelift.unwrap_or_default()),
    };
    let options = JitOptions {
        binding: SymbolBinding::Process,
        symbols: symbols
            .unwrap_or_default()
            .into_iter()
            // SAFETY: the Python API documents (docs/python.md) that `symbols` are addresses of
            // functions with the C signatures the IR declares, alive while the module is, as with
            // ctypes: the caller vouches for them.
            .map(|(name, address)| (name, unsafe { SymbolAddress::new(address as *const u8) }))
            .collect(),
        process_symbols,
        backend: settings.backend,
        first_tier,
        tier_up,
        cranelift,
        llvm: settings.llvm,
        ..defaults
    };
    // Without the GIL: other Python threads run while this one compiles (an LLVM compile
    // takes milliseconds).
    let ir = &module.inner;
    // SAFETY: as with ctypes, running IR from Python is the caller's responsibility: the Python
    // API documents (docs/python.md) that the IR's pointers and extern calls must be valid.
    let compiled = py
        .detach(|| unsafe { safecall::jit::compile(ir, &options) })
        .map_err(|e| compile_error(py, module, e))?;
    let addresses = module
        .inner
        .functions
        .iter()
        .map(|f| {
            let entry = compiled
                .safe_call(&f.name)
                .expect("every function of the module is compiled");
            (f.name.clone(), entry as usize)
        })
        .collect();
    // The runtime-side functions of `compiled` go with it; the code lives on in `JitCode`.
    let code = compiled.code().clone();
    drop(compiled);
    let code = JitCode {
        _code: code,
        launches: AtomicU32::new(0),
    };
    Ok((code, addresses))
}

/// `jit`'s `tier_up`: `False`, `True` or `"background"`, `"on_request"`.
fn tier_up_of(value: &Bound<'_, PyAny>) -> PyResult<TierUp> {
    if let Ok(on) = value.cast::<pyo3::types::PyBool>() {
        return Ok(if on.is_true() {
            TierUp::Background
        } else {
            TierUp::Never
        });
    }
    match value.extract::<String>().as_deref() {
        Ok("background") => Ok(TierUp::Background),
        Ok("on_request") => Ok(TierUp::OnRequest),
        _ => Err(PyValueError::new_err(format!(
            "tier_up={}: False, True, \"background\" or \"on_request\"",
            value.repr()?
        ))),
    }
}

/// Compiles `module` to `path`: an object file when it ends in `.o`, else a shared library.
#[pyfunction]
#[pyo3(signature = (module, path, backend = "cranelift", opt = None, cpu = None,
    target_features = None, system_lib_prefix = None, main = None, link_args = None, cc = None,
    link_runtime = None, linker = None))]
#[allow(clippy::too_many_arguments)]
fn build(
    py: Python<'_>,
    module: &Module,
    path: PathBuf,
    backend: &str,
    opt: Option<&Bound<'_, PyAny>>,
    cpu: Option<String>,
    target_features: Option<String>,
    system_lib_prefix: Option<String>,
    main: Option<String>,
    link_args: Option<Vec<String>>,
    cc: Option<String>,
    link_runtime: Option<PathBuf>,
    linker: Option<String>,
) -> PyResult<()> {
    let settings = codegen(backend, opt, cpu, target_features)?;
    let mut options = Options {
        backend: settings.backend,
        cranelift: settings.cranelift.unwrap_or_default(),
        llvm: settings.llvm,
        ..Options::default()
    };
    options.lower.system_lib_prefix = system_lib_prefix;
    if let Some(main) = main {
        if !module.inner.functions.iter().any(|f| f.name == main) {
            return Err(PyValueError::new_err(format!(
                "main={main:?}: module `{}` has no function of that name",
                module.inner.name
            )));
        }
        options.lower.main_alias = Some(main);
    }
    let object = path.extension().is_some_and(|e| e == "o");
    if object && (link_args.is_some() || cc.is_some() || link_runtime.is_some() || linker.is_some())
    {
        return Err(PyValueError::new_err(
            "link_args, cc, link_runtime and linker apply to shared libraries; an `.o` path is \
             not linked",
        ));
    }
    let wants_cc = cc.is_some() || link_args.is_some();
    let linker = match linker.as_deref().map(|l| (l, Linker::from_keyword(l))) {
        None if wants_cc => Linker::Cc,
        None => Linker::InProcess,
        Some((_, Some(Linker::InProcess))) if wants_cc => {
            return Err(PyValueError::new_err(
                "linker='in-process' links without a C compiler: cc and link_args need \
                 linker='cc'",
            ));
        }
        Some((_, Some(linker))) => linker,
        Some((name, None)) => {
            let names: Vec<&str> = Linker::ALL.iter().map(|l| l.keyword()).collect();
            return Err(PyValueError::new_err(format!(
                "linker={name:?}: expected one of {}",
                names.join(", ")
            )));
        }
    };
    let link = LinkOptions {
        linker,
        cc,
        runtime_dir: link_runtime,
        extra: link_args.unwrap_or_default(),
        ..LinkOptions::default()
    };
    let ir = &module.inner;
    let result = py.detach(|| {
        if object {
            let bytes = safecall::compile_object(ir, &options)?;
            std::fs::write(&path, bytes).map_err(|error| safecall::Error::Io {
                path: path.clone(),
                error,
            })
        } else {
            safecall::build_shared_library(ir, &path, &options, &link)
        }
    });
    result.map_err(|e| compile_error(py, module, e))
}

/// An intermediate form of `module` as text: `"ir"`, `"lowered"`, `"backend"` (CLIF or LLVM
/// IR) or `"asm"`.
#[pyfunction]
#[pyo3(signature = (module, what, backend = "cranelift", opt = None, cpu = None,
    target_features = None))]
fn emit(
    py: Python<'_>,
    module: &Module,
    what: &str,
    backend: &str,
    opt: Option<&Bound<'_, PyAny>>,
    cpu: Option<String>,
    target_features: Option<String>,
) -> PyResult<String> {
    let form = match what {
        "ir" => Emit::Ir,
        "lowered" => Emit::Lowered,
        "backend" => Emit::BackendIr,
        "asm" => Emit::Asm,
        other => {
            return Err(PyValueError::new_err(format!(
                "emit {other:?}: expected \"ir\", \"lowered\", \"backend\" or \"asm\""
            )));
        }
    };
    let settings = codegen(backend, opt, cpu, target_features)?;
    let options = Options {
        backend: settings.backend,
        cranelift: settings.cranelift.unwrap_or_default(),
        llvm: settings.llvm,
        ..Options::default()
    };
    safecall::emit(&module.inner, form, &options).map_err(|e| compile_error(py, module, e))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(jit, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(emit, m)?)?;
    Ok(())
}
