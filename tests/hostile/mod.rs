//! The hostile-call harness: calls every parameter kind of `hostile.scir` with near-valid and
//! random argument lists whose pointers are honest, and checks the safe-call contract against
//! a model of DESIGN.md §3: a call returns 0 with the right result, or -1 with an error raised
//! and `result` untouched; a call the model says must fail is never accepted; argument objects
//! keep their reference counts.
//!
//! Used by `tests/hostile_calls.rs` (a short run on every backend and delivery path, in CI) and
//! `benches/hostile_calls.rs` (10M calls per kind on one path, printing the counts).

pub mod model;
pub mod tensors;
pub mod values;

use std::path::Path;

use safecall::Backend;
use safecall::jit::{JitModule, JitOptions};
use safecall_runtime::abi::{TVMFFIAny, TVMFFISafeCallType, type_index as ti};
use safecall_runtime::{Any, AnyView, Error};

use model::{DataPtrs, Expect, KINDS, Obs};
use values::Arg;

/// The harness IR module.
pub const SOURCE: &str = include_str!("hostile.scir");

/// A small deterministic generator (SplitMix64): the runs are reproducible from their seed,
/// and a statistics-quality generator is not needed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Compiled code: JIT memory or a loaded shared library.
enum Code {
    Jit(JitModule),
    Library(libloading::Library),
}

/// The harness module compiled for one delivery path.
pub struct Compiled {
    pub label: String,
    code: Code,
}

/// Why a path could not be set up.
pub enum Unavailable {
    Backend(String),
}

fn module() -> safecall::ir::Module {
    safecall::ir::parse::parse(SOURCE).expect("hostile.scir parses")
}

impl Compiled {
    /// JIT-compiles the harness module with `backend`.
    pub fn jit(backend: Backend) -> Result<Compiled, Unavailable> {
        let options = JitOptions {
            backend,
            ..JitOptions::default()
        };
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        match unsafe { safecall::jit::compile(&module(), &options) } {
            Ok(jit) => Ok(Compiled {
                label: format!("jit/{backend:?}"),
                code: Code::Jit(jit),
            }),
            Err(e @ safecall::Error::Backend(safecall::backend::BackendError::Unavailable(_))) => {
                Err(Unavailable::Backend(e.to_string()))
            }
            Err(e) => panic!("JIT-compiling hostile.scir: {e}"),
        }
    }

    /// Builds the harness module into `dir/hostile-<backend>.so` and loads it.
    pub fn library(backend: Backend, dir: &Path) -> Result<Compiled, Unavailable> {
        let path = dir.join(format!("hostile-{backend:?}.so"));
        let options = safecall::Options {
            backend,
            ..Default::default()
        };
        match safecall::build_shared_library(&module(), &path, &options, &Default::default()) {
            Ok(()) => {}
            Err(e @ safecall::Error::Backend(safecall::backend::BackendError::Unavailable(_))) => {
                return Err(Unavailable::Backend(e.to_string()));
            }
            Err(e) => panic!("building {}: {e}", path.display()),
        }
        // SAFETY: a library safecall generated: no initializers besides registration, and its
        // symbols follow the safe-call ABI.
        let lib = unsafe { libloading::Library::new(&path) }
            .unwrap_or_else(|e| panic!("dlopen {}: {e}", path.display()));
        Ok(Compiled {
            label: format!("so/{backend:?}"),
            code: Code::Library(lib),
        })
    }

    /// The safe-call entry of `h_<kind>`.
    pub fn entry(&self, kind: &str) -> TVMFFISafeCallType {
        let name = format!("h_{kind}");
        match &self.code {
            Code::Jit(jit) => jit.safe_call(&name).expect("a JIT function"),
            // SAFETY: exported `__tvm_ffi_*` symbols are safe-call functions.
            Code::Library(lib) => {
                *unsafe { lib.get::<TVMFFISafeCallType>(format!("__tvm_ffi_{name}").as_bytes()) }
                    .expect("an exported function")
            }
        }
    }
}

/// Counts of one kind.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub calls: u64,
    /// Returned 0 with the expected result.
    pub accepted: u64,
    /// Returned -1 with an error, as the model said it must.
    pub rejected: u64,
    /// Calls the rules leave open (only the contract was checked): accepted / rejected.
    pub open_accepted: u64,
    pub open_rejected: u64,
    pub failures: Vec<String>,
}

impl Counts {
    pub fn line(&self, kind: &str) -> String {
        format!(
            "{kind:<20} {:>10} calls {:>10} accepted {:>10} rejected {:>8} open(ok) {:>8} open(err) {:>4} failures",
            self.calls,
            self.accepted,
            self.rejected,
            self.open_accepted,
            self.open_rejected,
            self.failures.len()
        )
    }
}

fn bits(raw: &TVMFFIAny) -> u64 {
    // SAFETY: every bit pattern of the union is a valid u64.
    unsafe { raw.value.v_uint64 }
}

fn check_obs(obs: &Obs, got: &Any, arg: Option<&Arg>) -> Result<(), String> {
    let raw = got.as_raw();
    let view = got.view();
    let ok = match obs {
        Obs::Int(v) => raw.type_index == ti::INT && bits(raw) as i64 == *v,
        Obs::BigInt(w) => {
            // SAFETY: a BigInt result's words live as long as `got`.
            raw.type_index == ti::BIG_INT
                && unsafe { safecall_runtime::big_int::words(raw) } == w.as_slice()
        }
        Obs::Bool(b) => raw.type_index == ti::BOOL && bits(raw) == *b as u64,
        Obs::Float(options) => {
            // SAFETY: a Float result holds an f64.
            let x = unsafe { raw.value.v_float64 };
            raw.type_index == ti::FLOAT
                && options
                    .iter()
                    .any(|o| o.to_bits() == x.to_bits() || (o.is_nan() && x.is_nan()))
        }
        Obs::Ptr(p) => {
            (raw.type_index == ti::OPAQUE_PTR && bits(raw) == *p)
                || (*p == 0 && raw.type_index == ti::NONE)
        }
        Obs::Device(d) => raw.type_index == ti::DEVICE && bits(raw) == d.to_bits(),
        Obs::DataType(d) => raw.type_index == ti::DATA_TYPE && bits(raw) == u64::from(d.to_bits()),
        Obs::Str(b) => {
            matches!(raw.type_index, ti::SMALL_STR | ti::STR)
                && view.str_bytes() == Some(b.as_slice())
        }
        Obs::Bytes(b) => {
            matches!(raw.type_index, ti::SMALL_BYTES | ti::BYTES)
                && view.str_bytes() == Some(b.as_slice())
        }
        Obs::Shape(dims) => {
            raw.type_index == ti::SHAPE
                && got
                    .cast::<safecall_runtime::Shape>()
                    .is_ok_and(|s| s.as_slice() == dims.as_slice())
        }
        Obs::NewTensor(shape) => {
            raw.type_index == ti::TENSOR
                && got
                    .cast::<safecall_runtime::Tensor>()
                    .is_ok_and(|t| t.shape() == shape.as_slice())
        }
        Obs::Same => {
            let arg = arg.expect("an argument");
            raw.type_index == arg.raw.type_index
                && bits(raw) == bits(&arg.raw)
                && (raw.small_str_len == arg.raw.small_str_len
                    || !matches!(raw.type_index, ti::SMALL_STR | ti::SMALL_BYTES))
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "returned {} (type {}, bits {:#x}), expected {obs:?}",
            crate::common::compare::show(raw),
            raw.type_index,
            bits(raw)
        ))
    }
}

/// Makes one call and checks it; `Err` describes a contract violation.
fn call_checked(
    entry: TVMFFISafeCallType,
    args: &[Arg],
    expect: &Expect,
    counts: &mut Counts,
) -> Result<(), String> {
    let raw: Vec<TVMFFIAny> = args.iter().map(|a| a.raw).collect();
    let before: Vec<u32> = args.iter().map(Arg::strong_count).collect();
    let mut result = TVMFFIAny::NONE;
    // SAFETY: a safe-call entry point; every argument points at live, honest memory kept
    // alive by `args`.
    let rc = unsafe {
        entry(
            std::ptr::null_mut(),
            raw.as_ptr(),
            raw.len() as i32,
            &mut result,
        )
    };
    counts.calls += 1;
    let outcome = match rc {
        0 => {
            // SAFETY: on success the callee wrote an owned value.
            let got = unsafe { Any::from_raw_owned_unchecked(result) };
            let pod = result.type_index < ti::STATIC_OBJECT_BEGIN
                && !matches!(result.type_index, ti::SMALL_STR | ti::SMALL_BYTES);
            if pod && result.small_str_len != 0 {
                Err(format!(
                    "a POD result with padding {:#x}",
                    result.small_str_len
                ))
            } else {
                match expect {
                    Expect::Rejects(_, why) => Err(format!(
                        "accepted a call that must fail ({why}), returning {}",
                        crate::common::compare::show(got.as_raw())
                    )),
                    Expect::Returns(obs) => {
                        counts.accepted += 1;
                        check_obs(obs, &got, args.last())
                    }
                    Expect::Unsure => {
                        counts.open_accepted += 1;
                        Ok(())
                    }
                }
            }
        }
        -1 => {
            let raised = Error::take_raised();
            if result.type_index != ti::NONE || result.small_str_len != 0 || bits(&result) != 0 {
                Err("failed but wrote `result`".to_owned())
            } else if let Some(error) = raised {
                match expect {
                    Expect::Returns(obs) => Err(format!(
                        "expected {obs:?}, raised {}: {}",
                        error.kind(),
                        error.message()
                    )),
                    Expect::Rejects(Some(kind), why) if error.kind() != *kind => Err(format!(
                        "expected a {kind} ({why}), raised {}: {}",
                        error.kind(),
                        error.message()
                    )),
                    Expect::Rejects(..) => {
                        counts.rejected += 1;
                        Ok(())
                    }
                    Expect::Unsure => {
                        counts.open_rejected += 1;
                        Ok(())
                    }
                }
            } else {
                Err("returned -1 without raising an error".to_owned())
            }
        }
        other => Err(format!("returned {other}, neither 0 nor -1")),
    };
    let after: Vec<u32> = args.iter().map(Arg::strong_count).collect();
    if before != after {
        return Err(format!(
            "argument reference counts went from {before:?} to {after:?}"
        ));
    }
    outcome
}

/// Runs `calls` hostile calls of `kind` on `compiled` with seed `seed`.
pub fn run_kind(compiled: &Compiled, kind: &str, calls: u64, seed: u64) -> Counts {
    let entry = compiled.entry(kind);
    let mut rng = Rng::new(seed);
    let data = DataPtrs::new();
    let mut counts = Counts::default();
    // Functions that allocate get the recording CPU allocator (this thread only).
    crate::common::allocator::install();
    for _ in 0..calls {
        let descs = model::generate(kind, &mut rng, &data);
        let expect = model::expect(kind, &descs, &data);
        let args: Vec<Arg> = descs.iter().cloned().map(Arg::build).collect();
        let checked = call_checked(entry, &args, &expect, &mut counts).and_then(|()| {
            // Every allocation of the call was freed exactly once (the result is dropped).
            let r = crate::common::allocator::record();
            if r.live.is_empty() && r.bad_frees == 0 && r.frees == r.sizes.len() {
                Ok(())
            } else {
                Err(format!("allocations not freed exactly once: {r:?}"))
            }
        });
        if let Err(e) = checked
            && counts.failures.len() < 20
        {
            let shown: Vec<String> = args
                .iter()
                .map(|a| {
                    // SAFETY: `a` keeps its referents alive.
                    let v = unsafe { AnyView::from_raw(a.raw) };
                    format!(
                        "{:?} = {}",
                        a.desc,
                        crate::common::compare::show(v.as_raw())
                    )
                })
                .collect();
            counts.failures.push(format!(
                "[{}] h_{kind}({}): {e}",
                compiled.label,
                shown.join(", ")
            ));
        }
    }
    crate::common::allocator::set(None);
    counts
}

/// Every kind, in the order of `hostile.scir`.
pub fn kinds() -> &'static [&'static str] {
    &KINDS
}
