//! `TritonLaunch`: the installed Triton driver's launcher for kernels whose arguments are
//! pointers, scalars and host tensor descriptors (`triton_descriptor`), as a native callable.
//! Triton's JIT calls it on every launch with `(grid_x, grid_y, grid_z, stream, function,
//! packed_metadata, launch_metadata, enter_hook, exit_hook, *args)`; it converts the arguments
//! as Triton 3.9's `driver.c` extractors do and calls the generated host function's safe-call
//! entry directly (no tvm_ffi Python layer in between), raising the function's error as the
//! Python exception of its kind.
//!
//! The host function is built on the first launch of each `CUfunction` (and, for kernels with
//! descriptors, of each combination of their paddings and `round_f32_to_tf32`, which the
//! `CUtensorMap` encodes) by a Python callback (`build(function, key) -> (address,
//! keepalive)`, `safecall._triton_launcher`), since Triton only hands the cubin to
//! `load_binary`. The host function takes the `CUfunction` as its last argument: the callback
//! hands the specializations of a kernel that declare the same parameters one host function.

use std::sync::Mutex;

use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyTuple};
use smallvec::SmallVec;

use safecall_runtime::abi::{DLDataType, TVMFFIAny, TVMFFISafeCallType, device_type};

use crate::detached::call_detached;
use crate::host_errors::ErrorApi;
use crate::triton_descriptor::{DescriptorSlot, DescriptorSpec, FLAG_BITS, flags_key};
use crate::triton_kinds::{DESCRIPTOR_CODE, Kind};
use crate::triton_metadata::PackedMetadata;
use crate::triton_values::{Address, exact_i64, float, grid_dim, half_bits, int, to_u64};
use crate::triton_words::{INLINE_WORDS, Words};

/// An argument of [`TritonLaunch::launch`]: owned by the caller, or borrowed from the call's
/// tuple (no reference counting).
pub(crate) trait Arg<'py> {
    fn bound(&self) -> &Bound<'py, PyAny>;
}

impl<'py> Arg<'py> for Bound<'py, PyAny> {
    fn bound(&self) -> &Bound<'py, PyAny> {
        self
    }
}

impl<'py> Arg<'py> for Borrowed<'_, 'py, PyAny> {
    fn bound(&self) -> &Bound<'py, PyAny> {
        self
    }
}

/// The launches through a host function (by every launcher that shares it: the kernels of one
/// form) after which its code is compiled again by optimizing Cranelift in the background
/// (`jit(..., tier_up="on_request")`; counted by [`crate::compile::JitCode::count_launch`]): the baseline
/// compiler's code costs about 30 ns more per launch (docs/jit.md). Waiting keeps the recompile
/// (about a millisecond of the tier-up thread's time) off the first launches of new kernels
/// and off kernels launched a few times only; it pays for itself after some 25 000 launches.
const TIER_UP_AFTER: u32 = 1000;

/// The call's arguments kept on the stack (`__call__`).
const INLINE_ARGS: usize = 48;

/// A built host function: the safe-call entry and what keeps its code alive.
struct Built {
    function: u64,
    /// The descriptors' launch flags it was built for.
    flags: u64,
    entry: TVMFFISafeCallType,
    _keepalive: Py<PyAny>,
}

/// The first function a launcher built (see [`TritonLaunch::entry`]).
struct First {
    function: u64,
    /// The descriptors' launch flags it was built for.
    flags: u64,
    entry: TVMFFISafeCallType,
    /// Its JIT code, which counts the launches through it and asks for its tier-up.
    code: Option<Py<crate::compile::JitCode>>,
}

/// The GPU runtime that checks a pointer argument's `data_ptr()`, by its library's path.
enum Runtime {
    /// The CUDA driver: `cuPointerGetAttribute`.
    Cuda(String),
    /// The HIP runtime: `hipPointerGetAttribute` (Triton's AMD driver).
    Hip(String),
}

/// [`Runtime`] loaded.
#[derive(Clone, Copy)]
enum Checker {
    Cuda(&'static crate::cuda_context::Driver),
    Hip(&'static crate::hip_runtime::Runtime),
}

/// The launcher (see the module docs).
#[pyclass(frozen)]
pub struct TritonLaunch {
    kinds: Vec<Kind>,
    /// The host descriptor parameters, in order.
    descriptors: Vec<DescriptorSpec>,
    /// Whether a descriptor's `round_f32_to_tf32` is honoured (Triton 3.7+).
    tf32: bool,
    build: Py<PyAny>,
    hook_chain: Py<PyAny>,
    tensor_type: Py<PyAny>,
    runtime: Runtime,
    integer_slow: Py<PyAny>,
    hook_first: bool,
    /// The kernel's packed metadata, which each launch's must equal.
    metadata: PackedMetadata,
    /// `None`: a launch passes exactly the kernel's arguments; else at least this many (up to
    /// its last parameter that is not a constexpr), more ignored.
    at_least: Option<usize>,
    /// The argument words of every launch: grid, stream, one per non-constexpr kernel
    /// argument, the two scratch pointers, the `CUfunction`.
    words: usize,
    errors: ErrorApi,
    /// The first function built: `CUfunction`, descriptor flags and entry, read without the
    /// lock (a kernel is almost always launched on the one device it was loaded on, with
    /// descriptors of one padding).
    first: std::sync::OnceLock<First>,
    /// `runtime`, loaded on the first pointer it checks.
    checker: std::sync::OnceLock<Checker>,
    /// The first `function` object a launch passed and its value (an exact `int`: immutable).
    function_object: std::sync::OnceLock<(Py<PyAny>, u64)>,
    built: Mutex<Vec<Built>>,
}

#[pymethods]
impl TritonLaunch {
    /// `TritonLaunch(kinds, build, hook_chain, tensor_type, libcuda, integer_slow,
    /// hook_first, descriptors, tf32, libhip=None, check_metadata=None, at_least=None)`: `kinds` one code per positional kernel argument (2: a
    /// host descriptor, the next of `descriptors`, each `(DLPack type code, bits)`);
    /// `build(function, key) -> (address, keepalive)`, `key` per descriptor `(padding,
    /// round_f32_to_tf32)`;
    /// `hook_chain` Triton's `HookChain` class (hooks of that class run only when they hold
    /// calls); `tensor_type` `torch.Tensor` or any class (one whose `is_cuda` is true has its
    /// `data_ptr()` read directly); `libcuda` the driver library, which checks any other
    /// pointer argument; `integer_slow(rule, value)` an integer outside its rule's fast range;
    /// `hook_first` whether the enter hook runs before any argument is read (Triton 3.7+) or
    /// after the scalars and before the pointers (3.6); `tf32` whether descriptors'
    /// `round_f32_to_tf32` is honoured (3.7+); `libhip` the HIP runtime, which then checks
    /// pointers instead of `libcuda` (an AMD kernel); `check_metadata(packed)` raises for a
    /// launch's packed metadata other than the kernel's (not checked without it);
    /// `at_least` how many of the kernel's arguments a launch must pass at least, more being
    /// ignored (`None`: exactly its arguments).
    #[new]
    #[pyo3(signature = (kinds, build, hook_chain, tensor_type, libcuda, integer_slow, hook_first, descriptors, tf32, libhip=None, check_metadata=None, at_least=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kinds: Vec<u8>,
        build: Py<PyAny>,
        hook_chain: Py<PyAny>,
        tensor_type: Py<PyAny>,
        libcuda: String,
        integer_slow: Py<PyAny>,
        hook_first: bool,
        descriptors: Vec<(u8, u8)>,
        tf32: bool,
        libhip: Option<String>,
        check_metadata: Option<Py<PyAny>>,
        at_least: Option<usize>,
    ) -> PyResult<Self> {
        let mut next = 0;
        let kinds = kinds
            .into_iter()
            .map(|code| {
                if code != DESCRIPTOR_CODE {
                    return Kind::from_code(code);
                }
                next += 1;
                Ok(Kind::Descriptor { index: next - 1 })
            })
            .collect::<PyResult<Vec<_>>>()?;
        if next != descriptors.len() || next as u32 * FLAG_BITS > u64::BITS {
            return Err(PyValueError::new_err(format!(
                "{next} descriptor arguments but {} descriptions (at most {})",
                descriptors.len(),
                u64::BITS / FLAG_BITS
            )));
        }
        // Grid, stream, the kernel's arguments, the two scratch pointers, the `CUfunction`.
        let words = 4 + kinds.iter().filter(|k| !matches!(k, Kind::Skip)).count() + 3;
        // A descriptor's view is a tensor of the launch's platform (the host function's
        // parameter says which).
        let device_type = if libhip.is_some() {
            device_type::ROCM
        } else {
            device_type::CUDA
        };
        Ok(TritonLaunch {
            words,
            at_least,
            kinds,
            descriptors: descriptors
                .into_iter()
                .map(|(code, bits)| DescriptorSpec {
                    dtype: DLDataType {
                        code,
                        bits,
                        lanes: 1,
                    },
                    device_type,
                    reads_fields: device_type == device_type::CUDA,
                })
                .collect(),
            tf32,
            build,
            hook_chain,
            tensor_type,
            runtime: match libhip {
                Some(path) => Runtime::Hip(path),
                None => Runtime::Cuda(libcuda),
            },
            integer_slow,
            hook_first,
            metadata: PackedMetadata::new(check_metadata),
            errors: ErrorApi::load()?,
            first: std::sync::OnceLock::new(),
            checker: std::sync::OnceLock::new(),
            function_object: std::sync::OnceLock::new(),
            built: Mutex::new(Vec::new()),
        })
    }

    /// One launch, called with Triton's launcher protocol (the driver hands Triton
    /// [`function`](Self::function)'s builtin instead, which is called with less work).
    #[pyo3(signature = (*args))]
    fn __call__(&self, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        // Borrowed from the tuple, which holds them for the call: no reference counting; on
        // the stack for up to `INLINE_ARGS`.
        let tuple = args.as_borrowed();
        let n = args.len();
        let mut inline =
            [const { std::mem::MaybeUninit::<Borrowed<'_, '_, PyAny>>::uninit() }; INLINE_ARGS];
        let mut heap = Vec::new();
        let all: &mut [std::mem::MaybeUninit<Borrowed<'_, '_, PyAny>>] = if n <= INLINE_ARGS {
            &mut inline[..n]
        } else {
            heap.resize_with(n, std::mem::MaybeUninit::uninit);
            &mut heap[..]
        };
        for (i, item) in all.iter_mut().enumerate() {
            // SAFETY: i < n, the tuple's length.
            item.write(unsafe { tuple.get_borrowed_item_unchecked(i) });
        }
        // SAFETY: every one of the `n` items was written above (`Borrowed` is `Copy`: nothing
        // to drop).
        let all = unsafe {
            std::slice::from_raw_parts(all.as_ptr().cast::<Borrowed<'_, '_, PyAny>>(), n)
        };
        self.call_items(all)
    }

    /// Whether the first host function has switched to Cranelift's optimized code (asked for
    /// after [`TIER_UP_AFTER`] launches through it, by this launcher and those that share it).
    #[getter]
    fn tiered_up(&self) -> bool {
        self.first
            .get()
            .and_then(|first| first.code.as_ref())
            .is_some_and(|code| code.get().tiered_up())
    }

    /// This launcher as a builtin function with CPython's fast calling convention
    /// (`safecall._native` module docs of `triton_fast_call`): called exactly as the launcher,
    /// it gets the call's arguments without a tuple in between.
    fn function(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        crate::triton_fast_call::function(slf)
    }
}

impl TritonLaunch {
    /// One launch with Triton's launcher protocol: the nine leading arguments, then the
    /// kernel's.
    ///
    /// The count as Python's `SafecallLauncher._check_count` decides it: exact, or with
    /// `at_least` (Triton 3.7+, whose `driver.c` never counts the items) trailing constexprs
    /// may be left out and items past the last parameter are ignored.
    pub(crate) fn call_items(&self, all: &[Borrowed<'_, '_, PyAny>]) -> PyResult<()> {
        const FIXED: usize = 9;
        let n = self.kinds.len();
        let given = all.len().saturating_sub(FIXED);
        if all.len() == FIXED + n || (self.at_least.is_some() && given > n) {
            return self.launch(&all[..FIXED], &all[FIXED..FIXED + n], &[]);
        }
        if let Some(at_least) = self.at_least
            && all.len() >= FIXED
            && given >= at_least
        {
            // Trailing constexprs left out: their places filled (a constexpr is not read).
            let none = all[0].py().None().into_bound(all[0].py());
            let mut kernel_args: Vec<Borrowed<'_, '_, PyAny>> = all[FIXED..].to_vec();
            kernel_args.resize(n, none.as_borrowed());
            return self.launch(&all[..FIXED], &kernel_args, &[]);
        }
        Err(PyTypeError::new_err(match self.at_least {
            Some(at_least) if at_least < n => format!(
                "the launcher takes {FIXED} arguments and at least the kernel's first {at_least} \
                 (its last parameters are constexprs), got {}",
                all.len()
            ),
            _ => format!(
                "the launcher takes {} arguments ({FIXED} and the kernel's {n}), got {}",
                FIXED + n,
                all.len()
            ),
        }))
    }

    /// One launch: `fixed` the JIT's nine leading arguments (grid x, y, z, stream, function,
    /// packed metadata, launch metadata, enter and exit hooks), `kernel_args` one per
    /// positional kernel argument. The dispatcher (`triton_dispatch`) calls this directly,
    /// with `addresses[i]` the `data_ptr()` it already read of kernel argument `i` (an
    /// object with `data_ptr()`), which is then not called again; `addresses` may be shorter
    /// than `kernel_args` (empty: every `data_ptr()` called here).
    pub(crate) fn launch<'py>(
        &self,
        fixed: &[impl Arg<'py>],
        kernel_args: &[impl Arg<'py>],
        addresses: &[Option<Address<'py>>],
    ) -> PyResult<()> {
        let py = fixed[0].bound().py();
        if fixed.len() != 9 || kernel_args.len() != self.kinds.len() {
            return Err(PyTypeError::new_err(format!(
                "the launcher takes 9 arguments and the kernel's {}, got {} and {}",
                self.kinds.len(),
                fixed.len(),
                kernel_args.len()
            )));
        }
        // Parsed first, as Triton's launchers parse them (before the hook and the arguments).
        let grid = [
            grid_dim(fixed[0].bound())?,
            grid_dim(fixed[1].bound())?,
            grid_dim(fixed[2].bound())?,
        ];
        let function = self.function_handle(fixed[4].bound())?;
        self.metadata.check(fixed[5].bound())?;
        // Without descriptors the host function is known before any argument is read.
        let known = if self.descriptors.is_empty() {
            Some(self.entry(py, function, 0)?)
        } else {
            None
        };
        // Triton 3.7+ (driver.c) run the enter hook before reading any argument; 3.6's
        // generated launcher parses the scalars first (PyArg_ParseTuple), then runs the hook,
        // then reads the pointers.
        let launch_metadata = fixed[6].bound();
        let enter = fixed[7].bound();
        if self.hook_first {
            self.hook(enter, launch_metadata)?;
        }
        // On the stack for up to `INLINE_WORDS` words (no allocation per launch); each push a
        // store (a `SmallVec` push checks its capacity and where it lives every time).
        let mut inline = [const { std::mem::MaybeUninit::<TVMFFIAny>::uninit() }; INLINE_WORDS];
        let mut heap = Vec::new();
        let mut values = Words::new(&mut inline, &mut heap, self.words);
        for g in grid {
            values.push(int(i64::from(g)));
        }
        values.push(int(to_u64(fixed[3].bound())? as i64));
        let address = |i: usize| addresses.get(i).and_then(Option::as_ref);
        // Each descriptor's DLTensor and the argument slot it goes to, pointed at once every
        // slot is in place (the vector does not move after that).
        let mut slots: SmallVec<[(DescriptorSlot, usize); 4]> = SmallVec::new();
        let mut flags = 0u64;
        for (i, kind) in self.kinds.iter().enumerate() {
            let value = kernel_args[i].bound();
            match kind {
                Kind::Skip => {}
                Kind::Pointer if self.hook_first => {
                    values.push(int(self.pointer(value, address(i))? as i64))
                }
                // Read after the enter hook, below.
                Kind::Pointer => values.push(int(0)),
                Kind::Integer { rule, lo, hi } => {
                    // An `int` (or a subclass) in the fast range as it is; anything else, such
                    // as an object with only `__index__` (which some of Triton's readers take
                    // and others refuse), by the release's rule.
                    let v = exact_i64(value).or_else(|| {
                        value
                            .is_instance_of::<PyInt>()
                            .then(|| value.extract::<i64>().ok())
                            .flatten()
                    });
                    let bits = match v {
                        Some(v) if (*lo..=*hi).contains(&v) => v,
                        _ => self
                            .integer_slow
                            .bind(py)
                            .call1((*rule, value))?
                            .extract::<i64>()?,
                    };
                    values.push(int(bits))
                }
                Kind::Float => values.push(float(value.extract::<f64>()?)),
                Kind::Half => values.push(int(half_bits(py, value.extract::<f64>()?)? as i64)),
                Kind::BFloat16 => values.push(int(
                    ((value.extract::<f64>()? as f32).to_bits() >> 16) as i64,
                )),
                Kind::Descriptor { index } => {
                    let (slot, f) =
                        DescriptorSlot::read(&self.descriptors[*index], value, self.tf32)?;
                    flags |= f << (FLAG_BITS * *index as u32);
                    slots.push((slot, values.len()));
                    values.push(int(0));
                }
            }
        }
        for (slot, at) in slots.iter_mut() {
            values.set(*at, slot.argument());
        }
        let entry = match known {
            Some(entry) => entry,
            None => self.entry(py, function, flags)?,
        };
        if !self.hook_first {
            self.hook(enter, launch_metadata)?;
            // The pointers' words, found again from the kinds: the grid and stream first, then
            // one word per kind but the constexprs'.
            let mut word = 4;
            for (i, kind) in self.kinds.iter().enumerate() {
                match kind {
                    Kind::Skip => continue,
                    Kind::Pointer => {
                        let address = self.pointer(kernel_args[i].bound(), address(i))?;
                        values.set(word, int(address as i64));
                    }
                    _ => {}
                }
                word += 1;
            }
        }
        // The two scratch pointers: none for the kernels this launcher serves. Then the
        // `CUfunction`, which the host function (shared by the kernels of one form) launches.
        values.push(int(0));
        values.push(int(0));
        values.push(int(function as i64));
        let mut result = TVMFFIAny::NONE;
        // SAFETY: `entry` is a generated safe-call function kept alive by `built`, which
        // touches no Python object; `values` holds `len` initialised arguments of the kinds its
        // parameters take; the descriptors' `DLTensor*` arguments point into `slots`, which
        // lives, unmoved, until the call returns.
        let (args, count) = values.finished();
        let rc = unsafe { call_detached(py, entry, args, count, &mut result) };
        if rc != 0 {
            return Err(self.errors.raised());
        }
        self.hook(fixed[8].bound(), launch_metadata)
    }

    /// The entry of `function`'s host function for descriptors with launch `flags`, built on
    /// its first launch.
    fn entry(&self, py: Python<'_>, function: u64, flags: u64) -> PyResult<TVMFFISafeCallType> {
        if let Some(first) = self.first.get()
            && first.function == function
            && first.flags == flags
        {
            self.count_launch(first);
            return Ok(first.entry);
        }
        {
            let built = self.built.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(b) = built
                .iter()
                .find(|b| b.function == function && b.flags == flags)
            {
                return Ok(b.entry);
            }
        }
        let key = flags_key(flags, self.descriptors.len());
        let (address, keepalive): (usize, Py<PyAny>) =
            self.build.bind(py).call1((function, key))?.extract()?;
        if address == 0 {
            return Err(PyRuntimeError::new_err(
                "the host function's address is NULL",
            ));
        }
        // SAFETY: `address` is a generated `__tvm_ffi_` safe-call entry (safecall.jit's), kept
        // alive by `keepalive`, which `Built` holds for the launcher's life.
        let entry = unsafe { std::mem::transmute::<usize, TVMFFISafeCallType>(address) };
        let code = keepalive
            .bind(py)
            .cast::<crate::compile::JitCode>()
            .ok()
            .map(|code| code.clone().unbind());
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        built.push(Built {
            function,
            flags,
            entry,
            _keepalive: keepalive,
        });
        drop(built);
        let first = First {
            function,
            flags,
            entry,
            code,
        };
        if self.first.set(first).is_ok()
            && let Some(first) = self.first.get()
        {
            // This launch is the first one counted.
            self.count_launch(first);
        }
        Ok(entry)
    }

    /// The `CUfunction` handle Triton passes, an `int`: read once for the object it passes
    /// every time (`CompiledKernel.function`, kept alive here so that its address keeps naming
    /// it), converted as any other for a different object.
    #[inline]
    fn function_handle(&self, value: &Bound<'_, PyAny>) -> PyResult<u64> {
        if let Some((object, handle)) = self.function_object.get()
            && object.as_ptr() == value.as_ptr()
        {
            return Ok(*handle);
        }
        let handle = to_u64(value)?;
        if self.function_object.get().is_none() && value.is_exact_instance_of::<PyInt>() {
            let _ = self.function_object.set((value.clone().unbind(), handle));
        }
        Ok(handle)
    }

    /// Counts a launch of the first function with its code, shared with the launchers of the
    /// kernels of its form; at the [`TIER_UP_AFTER`]th launch through it, the code's tier-up is
    /// asked for (Cranelift's optimized code, compiled in the background, which the function
    /// then switches to).
    #[inline]
    fn count_launch(&self, first: &First) {
        if let Some(code) = &first.code {
            code.get().count_launch(TIER_UP_AFTER);
        }
    }

    /// A pointer argument's address, as `driver.c`'s `extractPointer`: `None` is NULL, an
    /// `int` (or an instance of a subclass, `bool` included: `PyLong_Check`) itself, anything
    /// else its `data_ptr()`, which must be an `int`, checked with `cuPointerGetAttribute`. One
    /// shortcut: a torch tensor whose `is_cuda` is true is device memory, its `data_ptr()`
    /// taken without the driver's check (which would return it unchanged); any other tensor
    /// (pinned host memory included) is checked by the driver, as Triton checks it.
    /// `address` is the `data_ptr()` the caller already read, if it did.
    fn pointer<'py>(
        &self,
        value: &Bound<'py, PyAny>,
        address: Option<&Address<'py>>,
    ) -> PyResult<u64> {
        if value.is_none() {
            return Ok(0);
        }
        if value.is_instance_of::<PyInt>() {
            return to_u64(value);
        }
        let py = value.py();
        let device_tensor = value.get_type_ptr().cast() == self.tensor_type.as_ptr()
            && value.getattr(pyo3::intern!(py, "is_cuda"))?.is_truthy()?;
        let read = |address: &Bound<'py, PyAny>| {
            if !address.is_instance_of::<PyInt>() {
                return Err(PyTypeError::new_err(
                    "data_ptr method of Pointer object must return 64-bit int",
                ));
            }
            to_u64(address)
        };
        let address = match address {
            Some(Address::Int(a)) => *a,
            Some(Address::Object(a)) => read(a)?,
            None => match crate::method_call::call_method0(value, pyo3::intern!(py, "data_ptr")) {
                Ok(a) => read(&a)?,
                // Any failure of the call (no such attribute, not callable, or it raised) is
                // driver.c's TypeError, with the call's own error as its cause; what is no
                // `Exception` (a KeyboardInterrupt) goes through as it is.
                Err(e) if e.is_instance_of::<PyException>(py) => {
                    let error = PyTypeError::new_err(
                        "Pointer argument must be either uint64 or have data_ptr method",
                    );
                    error.set_cause(py, Some(e));
                    return Err(error);
                }
                Err(e) => return Err(e),
            },
        };
        if device_tensor || address == 0 {
            return Ok(address);
        }
        // Anything else's address, checked by the driver as Triton checks it.
        match self.checker()? {
            Checker::Cuda(d) => crate::cuda_context::device_pointer_in(d, address),
            Checker::Hip(rt) => crate::hip_runtime::device_pointer_in(rt, address),
        }
    }

    /// The runtime that checks pointers, loaded once (an error each time until it loads).
    #[inline]
    fn checker(&self) -> PyResult<Checker> {
        if let Some(checker) = self.checker.get() {
            return Ok(*checker);
        }
        let checker = match &self.runtime {
            Runtime::Cuda(libcuda) => Checker::Cuda(crate::cuda_context::driver(libcuda)?),
            Runtime::Hip(libhip) => Checker::Hip(crate::hip_runtime::runtime(libhip)?),
        };
        Ok(*self.checker.get_or_init(|| checker))
    }

    /// Calls a launch hook with the launch metadata, unless it is `None` or a `HookChain`
    /// without calls.
    fn hook(&self, hook: &Bound<'_, PyAny>, metadata: &Bound<'_, PyAny>) -> PyResult<()> {
        if crate::triton_knobs::hooked(hook, self.hook_chain.bind(hook.py()))? {
            hook.call1((metadata,))?;
        }
        Ok(())
    }
}

/// Adds the class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TritonLaunch>()
}
