//! The native part of the `safecall` Python package (`safecall._native`).
//!
//! It parses and verifies IR text into [`Module`]s, JIT-compiles them bound to the TVM-FFI
//! runtime the process has (the `libtvm_ffi` that `tvm_ffi` loaded with `RTLD_GLOBAL`), builds
//! libraries and object files, and prints intermediate forms. The Python layer
//! (`safecall/__init__.py`) wraps the JIT's safe-call addresses into `tvm_ffi.Function`s.
//!
//! The extension exports `PyInit__native` only (build.rs): safecall-runtime is linked in for
//! its Rust API, but its C API never becomes a second TVM-FFI runtime in the process.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The extension's Rust allocations (IR, lowering, the JIT's compile) come from mimalloc:
/// building a kernel's host function makes about two thousand short-lived allocations, on
/// which glibc's `malloc` spent about a fifth of the JIT's instructions. Built with
/// local-dynamic TLS, as a library loaded by `dlopen` must be.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use safecall::ir::verify::{Source, VerifyError, render_errors};
use safecall::ir::{self, SourceMap};

mod bench;
mod c_entry;
mod compile;
mod cuda_constants;
mod cuda_context;
mod detached;
mod hip_runtime;
mod host_errors;
mod kernel_params;
mod method_call;
mod recursion;
mod tensor_map;
mod triton_active;
mod triton_amd_range;
mod triton_autotune;
mod triton_binding;
mod triton_bound;
mod triton_config;
mod triton_descriptor;
mod triton_dispatch;
mod triton_fast_call;
mod triton_grid;
mod triton_heuristics;
mod triton_key;
mod triton_kinds;
mod triton_knobs;
mod triton_launch;
mod triton_launch_module;
mod triton_memo;
mod triton_metadata;
mod triton_method;
mod triton_overridden;
mod triton_run;
mod triton_table;
mod triton_values;
mod triton_words;
mod vocabulary;

pyo3::create_exception!(
    safecall,
    IRError,
    PyValueError,
    "Invalid IR: the message is the rendered diagnostics; `errors` holds each as a Diagnostic."
);

pyo3::create_exception!(
    safecall,
    CompileError,
    PyRuntimeError,
    "Verified IR that could not be compiled, linked or written (backend, symbols, linker, I/O)."
);

/// One problem found in IR: what is wrong and where.
#[pyclass(frozen, module = "safecall", get_all)]
#[derive(Clone)]
pub struct Diagnostic {
    /// What is wrong.
    message: String,
    /// The file name the text was given under.
    file: String,
    /// 1-based line, or None when the problem has no place in the text.
    line: Option<usize>,
    /// 1-based column (in characters), or None.
    column: Option<usize>,
    /// The function it is in, if any.
    function: Option<String>,
    /// What it is about (``statement body[0] `...` ``, ``parameter `x` ``...), for verifier
    /// errors.
    subject: Option<String>,
    /// The diagnostic rendered with the source line and a caret.
    rendered: String,
}

#[pymethods]
impl Diagnostic {
    fn __repr__(&self) -> String {
        match (self.line, self.column) {
            (Some(l), Some(c)) => format!("<Diagnostic {}:{l}:{c}: {}>", self.file, self.message),
            _ => format!("<Diagnostic {}: {}>", self.file, self.message),
        }
    }

    fn __str__(&self) -> String {
        self.rendered.clone()
    }
}

/// A verified IR module.
#[pyclass(frozen, module = "safecall")]
pub struct Module {
    /// Verified when it was parsed: compiling it does not verify again.
    pub(crate) inner: ir::VerifiedModule<'static>,
    /// The text it was parsed from (for a module built natively, its printed form, made when
    /// first asked for) and the name it was given (for messages).
    text: OnceLock<String>,
    file: String,
}

impl Module {
    /// A module built natively (not parsed), under the name `file` in messages.
    pub(crate) fn built(inner: ir::VerifiedModule<'static>, file: String) -> Self {
        Module {
            inner,
            text: OnceLock::new(),
            file,
        }
    }

    /// The text the module was parsed from, or the printed module when it was built.
    fn text(&self) -> &str {
        self.text.get_or_init(|| ir::print::print(&self.inner))
    }

    fn function(&self, name: &str) -> PyResult<&ir::Function> {
        self.inner
            .functions
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| {
                PyKeyError::new_err(format!(
                    "module `{}` has no function `{name}` (it has: {})",
                    self.inner.name,
                    self.names().join(", ")
                ))
            })
    }

    fn names(&self) -> Vec<String> {
        self.inner
            .functions
            .iter()
            .map(|f| f.name.clone())
            .collect()
    }
}

#[pymethods]
impl Module {
    /// The module's name.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// The names of the host functions, in order.
    #[getter]
    fn functions(&self) -> Vec<String> {
        self.names()
    }

    /// The text the module was parsed from; for a module built natively (not parsed), its
    /// printed form, made when first asked for.
    #[getter]
    fn source(&self) -> &str {
        self.text()
    }

    /// The file name the text was given under.
    #[getter]
    fn file(&self) -> &str {
        &self.file
    }

    /// What the verifier accepted but reports, as `Diagnostic`s without a place in the text: a
    /// device binary whose kernel parameters cannot be read, so that its launches are not
    /// checked against them.
    #[getter]
    fn warnings(&self) -> Vec<Diagnostic> {
        self.inner
            .warnings()
            .iter()
            .map(|w| Diagnostic {
                message: w.message.clone(),
                file: self.file.clone(),
                line: None,
                column: None,
                function: None,
                subject: Some(w.subject.clone()),
                rendered: w.render(None),
            })
            .collect()
    }

    /// `name(param: type, ...)`, as messages show it.
    fn signature(&self, name: &str) -> PyResult<String> {
        Ok(safecall::lower::signature_text(self.function(name)?))
    }

    /// The metadata JSON a library serves for `name` (`type_schema`, `arg_names`, `signature`).
    fn metadata_json(&self, name: &str) -> PyResult<String> {
        Ok(safecall::lower::metadata_json(self.function(name)?))
    }

    /// The parameter names of `name`, in order (the metadata's `arg_names`).
    fn arg_names(&self, name: &str) -> PyResult<Vec<String>> {
        let f = self.function(name)?;
        Ok(f.params.iter().map(|p| p.name.clone()).collect())
    }

    /// The doc comment of `name`, or None.
    fn doc(&self, name: &str) -> PyResult<Option<String>> {
        let doc = &self.function(name)?.doc;
        Ok((!doc.is_empty()).then(|| doc.clone()))
    }

    fn __str__(&self) -> String {
        ir::print::print(&self.inner)
    }

    fn __repr__(&self) -> String {
        format!(
            "<safecall.Module {} ({})>",
            self.inner.name,
            self.names().join(", ")
        )
    }
}

fn line_col(text: &str, span: ir::Span) -> (Option<usize>, Option<usize>) {
    let (line, col) = span.line_col(text);
    (Some(line), Some(col))
}

/// An `IRError` carrying `rendered` as its message and `errors` as its attribute.
fn ir_error(py: Python<'_>, rendered: String, errors: Vec<Diagnostic>) -> PyErr {
    let err = IRError::new_err(rendered);
    let value = err.value(py);
    match PyList::new(py, errors) {
        Ok(list) => {
            if let Err(e) = value.setattr("errors", list) {
                return e;
            }
        }
        Err(e) => return e,
    }
    err
}

fn verify_diagnostics(
    errors: &[VerifyError],
    file: &str,
    text: &str,
    map: Option<&SourceMap>,
) -> Vec<Diagnostic> {
    errors
        .iter()
        .map(|e| {
            let source = map.map(|map| Source { file, text, map });
            let (line, column) = map
                .and_then(|m| e.location.span(m))
                .map_or((None, None), |s| line_col(text, s));
            Diagnostic {
                message: e.message.clone(),
                file: file.to_owned(),
                line,
                column,
                function: e.function.clone(),
                subject: Some(e.subject.clone()),
                rendered: e.render(source),
            }
        })
        .collect()
}

/// Parses and verifies IR text; invalid IR raises `IRError`.
///
/// Valid text is parsed without a source map (the common case, and the cheaper parse); only
/// invalid text is parsed again with one, to point the diagnostics into it. `files` serves
/// `file "..."` paths of device binaries from memory (path -> bytes), before the disk: the
/// builder passes its binaries so, instead of as escaped byte-string literals.
#[pyfunction]
#[pyo3(signature = (text, file = "<string>", files = None))]
fn parse(
    py: Python<'_>,
    text: String,
    file: &str,
    files: Option<HashMap<String, Bound<'_, PyBytes>>>,
) -> PyResult<Module> {
    // `file "..."` paths of device binaries are read next to the IR file when `file` names
    // one, else from the current directory.
    let path = std::path::Path::new(file);
    let dir = if path.is_file() { path.parent() } else { None };
    // The `bytes` objects' own memory, borrowed (a `Vec<u8>` parameter would extract each
    // element): the parser copies each binary once, into the module.
    let given = files.unwrap_or_default();
    let files: HashMap<String, &[u8]> = given
        .iter()
        .map(|(path, data)| (path.clone(), data.as_bytes()))
        .collect();
    if let Ok((module, _)) = ir::parse::parse_with_files(&text, dir, &files)
        && let Ok(verified) = ir::VerifiedModule::new(module)
    {
        return Ok(Module {
            inner: verified,
            text: OnceLock::from(text),
            file: file.to_owned(),
        });
    }
    let (module, map) = match ir::parse::parse_with_files(&text, dir, &files) {
        Ok(parsed) => parsed,
        Err(e) => {
            let rendered = e.render(file, &text);
            let (line, column) = line_col(&text, e.span);
            let diagnostic = Diagnostic {
                message: e.message.clone(),
                file: file.to_owned(),
                line,
                column,
                function: None,
                subject: None,
                rendered: rendered.clone(),
            };
            return Err(ir_error(py, rendered, vec![diagnostic]));
        }
    };
    let errors = match ir::verify::verify(&module) {
        Err(errors) => errors,
        Ok(_) => {
            return Err(CompileError::new_err(
                "internal error: the text failed to verify without a source map but verified \
                 with one",
            ));
        }
    };
    let source = Source {
        file,
        text: &text,
        map: &map,
    };
    let rendered = render_errors(&errors, Some(source));
    let diagnostics = verify_diagnostics(&errors, file, &text, Some(&map));
    Err(ir_error(py, rendered, diagnostics))
}

/// The `IRError` of a module that does not verify where no source map points into its text (a
/// module built natively, or one found invalid when compiled).
pub(crate) fn built_module_error(py: Python<'_>, errors: &[VerifyError], file: &str) -> PyErr {
    let diagnostics = verify_diagnostics(errors, file, "", None);
    ir_error(py, render_errors(errors, None), diagnostics)
}

/// Turns a compiler error into a Python exception (`IRError` for invalid IR, `CompileError`
/// otherwise).
pub(crate) fn compile_error(py: Python<'_>, module: &Module, e: safecall::Error) -> PyErr {
    match e {
        safecall::Error::Invalid(errors) => built_module_error(py, &errors, &module.file),
        other => CompileError::new_err(other.to_string()),
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("IRError", py.get_type::<IRError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add_class::<Diagnostic>()?;
    m.add_class::<Module>()?;
    m.add_class::<compile::JitCode>()?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    compile::register(m)?;
    bench::register(m)?;
    cuda_constants::register(m)?;
    cuda_context::register(m)?;
    hip_runtime::register(m)?;
    kernel_params::register(m)?;
    triton_launch::register(m)?;
    triton_launch_module::register(m)?;
    m.add_class::<triton_dispatch::TritonDispatch>()?;
    m.add_class::<triton_knobs::KnobsVersion>()?;
    m.add_class::<triton_bound::BoundDispatch>()?;
    m.add_class::<triton_dispatch::DispatchKey>()?;
    m.add_class::<triton_autotune::AutotuneDispatch>()?;
    m.add_class::<triton_heuristics::HeuristicsDispatch>()?;
    m.add_class::<triton_method::DispatchedMethod>()?;
    m.add_class::<triton_method::DispatchedRun>()?;
    tensor_map::register(m)?;
    vocabulary::register(m)?;
    m.add("HAS_LLVM", cfg!(feature = "llvm"))?;
    // The backends built into this extension, by name (the Rust side's list).
    let backends: Vec<&str> = safecall::Backend::ALL
        .into_iter()
        .filter(|b| b.available())
        .map(safecall::Backend::name)
        .collect();
    m.add("BACKENDS", pyo3::types::PyTuple::new(m.py(), backends)?)?;
    // The address of a `DLPackManagedTensorAllocator` for CPU tensors (zero-filled, 64-byte
    // aligned, compact): it calls no TVM-FFI function (errors go through the callback it is
    // given), so installing it in libtvm_ffi keeps one runtime in the process.
    m.add(
        "CPU_ALLOCATOR",
        safecall_runtime::tensor::cpu_allocator as *const () as usize,
    )?;
    Ok(())
}
