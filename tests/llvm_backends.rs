//! The Cranelift and LLVM backends side by side: the same examples compile to objects with
//! the same exported symbols, link into shared libraries without text relocations, and run
//! (from libraries and from the JIT) with identical results and identical error messages.
//! Without the `llvm` feature only the Cranelift half runs (the LLVM half is skipped with a
//! printed reason, or fails in CI).

mod jit_side;

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::path::PathBuf;

use crate::llvm_support::{backends, example, jit_options, options};
use cranelift_object::object::{self, Object, ObjectSection, ObjectSymbol, SymbolKind};
use safecall::Backend;
use safecall::aot::LinkOptions;
use safecall::jit::SymbolAddress;
use safecall_runtime::abi::{DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFIValue, type_index};
use safecall_runtime::{Any, AnyView, Function, Tensor};

const EXAMPLES: &[&str] = &[
    "add_one",
    "launcher",
    "call_global",
    "imports",
    "all_params",
];

/// What an object file says about one defined symbol.
#[derive(Debug, PartialEq, Eq, Clone)]
struct SymbolFacts {
    global: bool,
    text: bool,
    writable: bool,
    /// Alignment the symbol's address is guaranteed (section alignment and offset).
    align: u64,
    section: String,
}

fn symbol_facts(bytes: &[u8]) -> (BTreeMap<String, SymbolFacts>, Vec<String>) {
    let file = object::File::parse(bytes).expect("a valid object");
    let mut defined = BTreeMap::new();
    let mut undefined = Vec::new();
    for sym in file.symbols() {
        let name = sym.name().unwrap_or_default().to_owned();
        if name.is_empty() || matches!(sym.kind(), SymbolKind::Section | SymbolKind::File) {
            continue;
        }
        if sym.is_undefined() {
            undefined.push(name);
            continue;
        }
        let section = sym
            .section_index()
            .map(|i| file.section_by_index(i).unwrap());
        let (section_name, writable, section_align) = match &section {
            Some(s) => {
                let name = s.name().unwrap_or_default().to_owned();
                let writable = match s.flags() {
                    object::SectionFlags::Elf { sh_flags } => {
                        sh_flags & u64::from(object::elf::SHF_WRITE) != 0
                    }
                    _ => false,
                };
                (name, writable, s.align().max(1))
            }
            None => (String::new(), false, 1),
        };
        let offset = sym.address() - section.as_ref().map_or(0, |s| s.address());
        let align = if offset == 0 {
            section_align
        } else {
            section_align.min(1 << offset.trailing_zeros())
        };
        defined.insert(
            name,
            SymbolFacts {
                global: sym.is_global(),
                text: sym.kind() == SymbolKind::Text,
                writable,
                align,
                section: section_name,
            },
        );
    }
    (defined, undefined)
}

/// The scratch directory of this test binary, under `target/tmp` (never `/tmp`): its files
/// are named after the module and backend, so a later run overwrites them instead of leaving
/// more behind.
fn scratch_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("llvm-backends");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn examples_compile_to_objects_with_the_same_exports() {
    let backends = backends();
    for name in EXAMPLES {
        let module = example(name);
        let allowed: Vec<String> = module.externs.iter().map(|e| e.name.clone()).collect();
        let mut exports: Vec<(Backend, BTreeMap<String, SymbolFacts>)> = Vec::new();
        for &backend in &backends {
            let object = safecall::compile_object(&module, &options(backend))
                .unwrap_or_else(|e| panic!("{name} with {backend:?}: {e}"));
            let (defined, undefined) = symbol_facts(&object);
            for u in &undefined {
                assert!(
                    safecall_runtime::c_api_symbol(u).is_some() || allowed.contains(u),
                    "{name} with {backend:?} references `{u}`, neither the C API nor an extern"
                );
            }
            let global: BTreeMap<String, SymbolFacts> =
                defined.into_iter().filter(|(_, f)| f.global).collect();
            assert!(global.contains_key(&format!("__tvm_ffi_{}", module.functions[0].name)));
            exports.push((backend, global));
        }
        if let [(_, clif), (_, llvm)] = &exports[..] {
            let names = |m: &BTreeMap<String, SymbolFacts>| m.keys().cloned().collect::<Vec<_>>();
            assert_eq!(names(clif), names(llvm), "{name}: exported symbols differ");
            for (symbol, c) in clif {
                let l = &llvm[symbol];
                assert_eq!(c.text, l.text, "{name}: `{symbol}` kind differs");
                assert_eq!(
                    c.writable, l.writable,
                    "{name}: `{symbol}` writability differs"
                );
                if !c.text {
                    assert!(
                        l.align >= 8 || l.align >= c.align,
                        "{name}: `{symbol}` alignment"
                    );
                }
            }
        }
    }
}

#[test]
fn library_ctx_is_writable_aligned_exported_data() {
    let module = example("imports");
    for backend in backends() {
        let object = safecall::compile_object(&module, &options(backend)).unwrap();
        let (defined, _) = symbol_facts(&object);
        let ctx = &defined["__tvm_ffi__library_ctx"];
        assert!(
            ctx.global && !ctx.text && ctx.writable,
            "{backend:?}: {ctx:?}"
        );
        assert!(ctx.align >= 8, "{backend:?}: {ctx:?}");
        let bin = &defined["__tvm_ffi__library_bin"];
        assert!(
            bin.global && !bin.text && !bin.writable,
            "{backend:?}: {bin:?}"
        );
        // Local helpers stay local.
        for (name, facts) in &defined {
            if name.starts_with("__safecall_") {
                assert!(!facts.global, "{backend:?}: `{name}` is exported");
            }
        }
    }
}

/// Builds `module` into a shared library with the default link flags
/// (`-shared -Wl,-z,now -Wl,-z,text`: no text relocations) and loads it.
fn load_library(
    module: &safecall::ir::Module,
    opts: &safecall::Options,
    tag: &str,
) -> libloading::Library {
    let path = scratch_dir().join(format!("{}_{tag}.so", module.name));
    safecall::build_shared_library(module, &path, opts, &LinkOptions::default())
        .unwrap_or_else(|e| panic!("{tag}: {e}"));
    // SAFETY: the library only has the generated code (no constructors except the
    // system-library registration), which references the C API of this test binary.
    unsafe { libloading::Library::new(&path) }.unwrap()
}

/// A function from a library symbol with the safe-call signature.
fn library_function(lib: &libloading::Library, symbol: &str) -> Function {
    // SAFETY: the generated symbol has the safe-call signature; the library outlives the
    // function in these tests (it is never unloaded while they run).
    unsafe {
        let f: libloading::Symbol<'_, safecall_runtime::abi::TVMFFISafeCallType> =
            lib.get(symbol.as_bytes()).unwrap();
        Function::from_safe_call(*f, std::ptr::null_mut(), None)
    }
}

fn f32_tensor(values: &[f32]) -> Tensor {
    let t = Tensor::cpu::<f32>(&[values.len() as i64]).unwrap();
    // SAFETY: a fresh tensor nobody else sees.
    unsafe { t.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(values);
    t
}

/// Calls and outcomes that must be identical on every backend: `(label, outcome)`.
fn add_one_outcomes(f: &Function) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let x = f32_tensor(&[1.0, -2.5, f32::MAX, f32::NAN]);
    let y = f32_tensor(&[0.0; 4]);
    let r = f.call(&[AnyView::from(&x), AnyView::from(&y)]);
    out.push((
        "ok".to_owned(),
        format!("{:?} {:?}", r.map(|_| ()), y.as_slice::<f32>().unwrap()),
    ));
    let short = f32_tensor(&[0.0; 3]);
    let i = Tensor::cpu::<i32>(&[4]).unwrap();
    let cases: Vec<(&str, Vec<AnyView<'_>>)> = vec![
        ("no args", vec![]),
        ("int arg", vec![AnyView::from(1i64), AnyView::from(&y)]),
        (
            "shape mismatch",
            vec![AnyView::from(&x), AnyView::from(&short)],
        ),
        ("dtype mismatch", vec![AnyView::from(&x), AnyView::from(&i)]),
        ("none", vec![AnyView::from(&x), AnyView::from(())]),
    ];
    for (label, args) in cases {
        let e = f.call(&args).expect_err(label);
        out.push((label.to_owned(), format!("{}: {}", e.kind(), e.message())));
    }
    out
}

#[test]
fn add_one_libraries_behave_identically() {
    let module = example("add_one");
    let mut results = Vec::new();
    for backend in backends() {
        let lib = load_library(&module, &options(backend), &format!("{backend:?}"));
        let f = library_function(&lib, "__tvm_ffi_add_one");
        let outcome = add_one_outcomes(&f);
        assert!(
            outcome[0]
                .1
                .starts_with("Ok(()) [2.0, -1.5, 3.4028235e38, NaN]"),
            "{outcome:?}"
        );
        let meta = library_function(&lib, "__tvm_ffi__metadata_add_one")
            .call(&[])
            .unwrap()
            .cast::<String>()
            .unwrap();
        results.push((backend, outcome, meta));
        std::mem::forget(lib);
    }
    let (_, first, first_meta) = &results[0];
    assert!(
        first[1].1.contains("expected 2 arguments, got 0"),
        "{first:?}"
    );
    for (backend, outcome, meta) in &results[1..] {
        assert_eq!(outcome, first, "{backend:?} differs from Cranelift");
        assert_eq!(meta, first_meta, "{backend:?}: metadata differs");
    }
}

#[test]
fn main_alias_and_system_library_behave_identically() {
    let module = example("add_one");
    for backend in backends() {
        let tag = format!("{backend:?}").to_lowercase();
        // `__tvm_ffi_main` is the same function as `__tvm_ffi_add_one`.
        let mut opts = options(backend);
        opts.lower.main_alias = Some("add_one".to_owned());
        let lib = load_library(&module, &opts, &format!("{tag}_main"));
        // SAFETY: only addresses are compared.
        let (main, add_one) = unsafe {
            (
                *lib.get::<*const c_void>(b"__tvm_ffi_main").unwrap(),
                *lib.get::<*const c_void>(b"__tvm_ffi_add_one").unwrap(),
            )
        };
        assert_eq!(main, add_one, "{backend:?}");
        std::mem::forget(lib);

        // A system library registers its functions from `.init_array` when loaded, and
        // exports none of them.
        let mut opts = options(backend);
        let prefix = format!("{tag}_");
        opts.lower.system_lib_prefix = Some(prefix.clone());
        let lib = load_library(&module, &opts, &format!("{tag}_syslib"));
        // SAFETY: only looked up.
        assert!(unsafe { lib.get::<*const c_void>(b"__tvm_ffi_add_one") }.is_err());
        let registered = safecall_runtime::rust_api::registry::system_lib_symbol(&format!(
            "__tvm_ffi_{prefix}add_one"
        ))
        .unwrap_or_else(|| panic!("{backend:?}: not registered"));
        // SAFETY: the registered symbol is the generated safe-call function.
        let f = unsafe {
            Function::from_safe_call(
                std::mem::transmute::<*mut c_void, safecall_runtime::abi::TVMFFISafeCallType>(
                    registered,
                ),
                std::ptr::null_mut(),
                None,
            )
        };
        let outcome = add_one_outcomes(&f);
        assert!(
            outcome[0].1.starts_with("Ok(())"),
            "{backend:?}: {outcome:?}"
        );
        std::mem::forget(lib);
    }
}

#[test]
fn add_one_jit_behaves_like_the_library() {
    let module = example("add_one");
    let mut all = Vec::new();
    for backend in backends() {
        let opt_levels: &[u8] = if backend == Backend::Llvm {
            &[0, 1, 2, 3]
        } else {
            &[2]
        };
        for &level in opt_levels {
            // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
            // and calls only symbols it declares with their real signatures.
            let jit =
                unsafe { safecall::jit::compile(&module, &jit_options(backend, level)) }.unwrap();
            all.push((
                backend,
                level,
                add_one_outcomes(jit.function("add_one").unwrap()),
            ));
        }
    }
    let lib = load_library(&module, &options(Backend::Cranelift), "reference");
    let reference = add_one_outcomes(&library_function(&lib, "__tvm_ffi_add_one"));
    std::mem::forget(lib);
    for (backend, level, outcome) in all {
        assert_eq!(outcome, reference, "{backend:?} at O{level}");
    }
}

#[test]
fn process_binding_resolves_the_c_api_with_dlsym_on_both_backends() {
    // This test binary exports safecall-runtime's C API (`-rdynamic`), so `dlsym` finds it.
    let module = example("add_one");
    for backend in backends() {
        let mut opts = jit_options(backend, 2);
        opts.binding = safecall::jit::SymbolBinding::Process;
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&module, &opts) }.unwrap();
        let outcome = add_one_outcomes(jit.function("add_one").unwrap());
        assert!(
            outcome[0].1.starts_with("Ok(()) [2.0, -1.5"),
            "{backend:?}: {outcome:?}"
        );
        assert!(
            outcome[1].1.contains("expected 2 arguments, got 0"),
            "{backend:?}: {outcome:?}"
        );
    }
}

/// Stands in for every extern C function of the examples (never reached with the argument
/// lists below, which fail the checks first; returns 0, "no error", if it were).
extern "C" fn extern_stub() -> i64 {
    0
}

#[test]
fn every_example_function_raises_identically_on_bad_arguments() {
    let mut results: Vec<(Backend, Vec<String>)> = Vec::new();
    for backend in backends() {
        let mut outcomes = Vec::new();
        for name in EXAMPLES {
            let module = example(name);
            let mut opts = jit_options(backend, 2);
            for e in &module.externs {
                // SAFETY: a function of this program with the C signature the IR declares for it.
                opts.symbols.insert(e.name.clone(), unsafe {
                    SymbolAddress::new(extern_stub as *const u8)
                });
            }
            // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
            // and calls only symbols it declares with their real signatures.
            let jit = unsafe { safecall::jit::compile(&module, &opts) }
                .unwrap_or_else(|e| panic!("{name} with {backend:?}: {e}"));
            for func in &module.functions {
                let f = jit.function(&func.name).unwrap();
                let n = func.params.len();
                let s = Any::from("not a tensor or a number");
                let arg_lists: Vec<Vec<AnyView<'_>>> = vec![
                    vec![],
                    vec![AnyView::from(()); n],
                    vec![AnyView::from(-1i64); n],
                    vec![AnyView::from(&s); n],
                    vec![AnyView::from(1.5f64); n + 1],
                ];
                for args in arg_lists {
                    outcomes.push(match f.call(&args) {
                        Ok(v) => format!("{name}.{}: ok {}", func.name, v.type_index()),
                        Err(e) => format!("{name}.{}: {}: {}", func.name, e.kind(), e.message()),
                    });
                }
            }
        }
        results.push((backend, outcomes));
    }
    let (_, first) = &results[0];
    assert!(first.iter().all(|o| !o.contains(": ok ")), "{first:#?}");
    for (backend, outcomes) in &results[1..] {
        assert_eq!(outcomes, first, "{backend:?} differs from Cranelift");
    }
}

/// A DLTensor on `cuda:0` with `shape` and dtype `(code, bits)`, data at a fake aligned address
/// (the host code never touches device memory).
struct FakeCudaTensor {
    shape: Vec<i64>,
    tensor: DLTensor,
}

impl FakeCudaTensor {
    fn new(shape: &[i64], code: u8, bits: u8) -> Box<Self> {
        let mut t = Box::new(FakeCudaTensor {
            shape: shape.to_vec(),
            tensor: DLTensor {
                data: 0x1000_0000usize as *mut c_void,
                device: DLDevice {
                    device_type: 2,
                    device_id: 0,
                },
                ndim: shape.len() as i32,
                dtype: DLDataType {
                    code,
                    bits,
                    lanes: 1,
                },
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        });
        t.tensor.shape = t.shape.as_mut_ptr();
        t
    }

    fn view(&self) -> AnyView<'_> {
        let raw = TVMFFIAny {
            type_index: type_index::DL_TENSOR_PTR,
            small_str_len: 0,
            value: TVMFFIValue {
                v_ptr: (&self.tensor as *const DLTensor).cast_mut().cast(),
            },
        };
        // SAFETY: a DLTensor pointer that `self` keeps alive.
        unsafe { AnyView::from_raw(raw) }
    }
}

#[cfg(feature = "llvm")]
mod llvm_only {
    use super::*;
    use safecall::backend::llvm::LlvmOptions;

    #[test]
    fn invalid_optimization_level_is_an_error() {
        let module = example("add_one");
        let mut opts = options(Backend::Llvm);
        opts.llvm.opt_level = 4;
        let err = safecall::compile_object(&module, &opts).unwrap_err();
        assert!(err.to_string().contains("optimization level 4"), "{err}");
    }

    #[test]
    fn any_target_cpu_compiles_working_code() {
        let module = example("add_one");
        for cpu in ["generic", "x86-64-v2", "native"] {
            let mut opts = jit_options(Backend::Llvm, 3);
            opts.llvm.cpu = cpu.to_owned();
            // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
            // and calls only symbols it declares with their real signatures.
            let jit = unsafe { safecall::jit::compile(&module, &opts) }.unwrap();
            let outcome = add_one_outcomes(jit.function("add_one").unwrap());
            assert!(
                outcome[0].1.starts_with("Ok(()) [2.0, -1.5"),
                "{cpu}: {outcome:?}"
            );
        }
    }

    #[test]
    fn frame_pointers_are_kept_unless_omitted() {
        let module = example("add_one");
        // The assembly of `__tvm_ffi_add_one` (up to the end of its unwind description).
        let add_one_asm = |frame_pointers: bool| {
            let mut opts = options(Backend::Llvm);
            opts.llvm.frame_pointers = frame_pointers;
            let text = safecall::emit(&module, safecall::Emit::Asm, &opts).unwrap();
            let start = text.find("__tvm_ffi_add_one:").expect("the function");
            let end = start + text[start..].find(".cfi_endproc").expect("its end");
            text[start..end].to_owned()
        };
        let sets_up_rbp = |asm: &str| asm.contains("movq\t%rsp, %rbp");
        assert!(sets_up_rbp(&add_one_asm(true)), "{}", add_one_asm(true));
        assert!(!sets_up_rbp(&add_one_asm(false)), "{}", add_one_asm(false));
        // The code without frame pointers behaves the same.
        let mut opts = jit_options(Backend::Llvm, 2);
        opts.llvm.frame_pointers = false;
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks and
        // calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&module, &opts) }.unwrap();
        let outcome = add_one_outcomes(jit.function("add_one").unwrap());
        assert!(outcome[0].1.starts_with("Ok(()) [2.0, -1.5"), "{outcome:?}");
    }

    #[test]
    fn passing_checks_make_no_call_and_failing_ones_jump_to_the_explanation() {
        // The assembly of `__tvm_ffi_<name>` (up to the end of its unwind description).
        let asm_of = |module: &safecall::ir::Module, name: &str, frame_pointers: bool| {
            let mut opts = options(Backend::Llvm);
            opts.llvm.frame_pointers = frame_pointers;
            let text = safecall::emit(module, safecall::Emit::Asm, &opts).unwrap();
            let start = text
                .find(&format!("__tvm_ffi_{name}:"))
                .expect("the function");
            let end = start + text[start..].find(".cfi_endproc").expect("its end");
            text[start..end].to_owned()
        };
        let add_one = example("add_one");
        for frame_pointers in [true, false] {
            let asm = asm_of(&add_one, "add_one", frame_pointers);
            // Both explain calls (the argument count's and every later check's) are jumps:
            // the function calls nothing, so the checks need no frame set up for a call.
            assert!(!asm.contains("callq\t") && !asm.contains("call\t"), "{asm}");
            assert!(asm.contains("jmp\t__safecall_explain_add_one"), "{asm}");
            assert!(!asm.contains("%rbx"), "no callee-saved register: {asm}");
        }
        // A function that takes the address of its stack keeps a call (the callee of a
        // `musttail` call may not reach the caller's frame).
        let launcher = example("launcher");
        let asm = asm_of(&launcher, "matmul", true);
        assert!(asm.contains("callq\t__safecall_explain_matmul"), "{asm}");
        // The rejections are explained as before: the built libraries' jumps are covered by
        // `add_one_libraries_behave_identically` (every backend's outcomes compared); the
        // JIT's explain calls go through its lazy dispatcher (a call, never `musttail`).
        // SAFETY: the IR is the example's: it dereferences only the arguments it checks and
        // calls only symbols it declares with their real signatures.
        let jit = unsafe { safecall::jit::compile(&add_one, &jit_options(Backend::Llvm, 2)) };
        let outcome = add_one_outcomes(jit.unwrap().function("add_one").unwrap());
        assert_eq!(
            outcome[1].1,
            "TypeError: add_one: expected 2 arguments, got 0\n  when calling add_one(x: \
             Tensor[(n,), float32, cpu], y: Tensor[(n,), float32, cpu])",
            "{outcome:?}"
        );
    }

    #[test]
    fn float_min_and_max_chains_propagate_signaling_nans_and_order_zeros_at_every_level() {
        // min/max of a chain, as LLVM 19 at -O3 once got wrong for a signaling NaN operand
        // (it returned the other operand), against Cranelift.
        use safecall_runtime::AnyView;
        let text = "module m;\nfn f(buf: ptr) {\n\
            let a = load<f32>(offset(buf, 0i64));\n\
            let b = load<f32>(offset(buf, 4i64));\n\
            let c = cast<f32>(load<u8>(offset(buf, 8i64)));\n\
            let lo = min(b, min(c, a));\n\
            let hi = max(b, max(c, a));\n\
            store<f32>(offset(buf, 12i64), select(lo != lo, 7.0f32, lo));\n\
            store<f32>(offset(buf, 16i64), select(hi != hi, 7.0f32, hi));\n}\n";
        let module = safecall::ir::parse::parse(text).unwrap();
        let values: [u32; 8] = [
            0xffb6_7fff, // negative signaling NaN
            0x7f93_c0e3, // signaling NaN
            0x7fc0_0000, // quiet NaN
            0x8000_0000, // -0
            0x0000_0000, // +0
            0x3f80_0000, // 1
            0xbf80_0000, // -1
            0x7f80_0000, // inf
        ];
        let run = |backend, level| {
            // SAFETY: the IR reads and writes only the buffer it is given.
            let jit =
                unsafe { safecall::jit::compile(&module, &jit_options(backend, level)) }.unwrap();
            let f = jit.function("f").unwrap().clone();
            let mut out = Vec::new();
            for a in values {
                for b in values {
                    for c in [0u32, 1] {
                        let mut buf = [a, b, c, 0, 0];
                        f.call(&[AnyView::opaque_ptr(buf.as_mut_ptr().cast())])
                            .unwrap();
                        out.push((a, b, c, (buf[3], buf[4])));
                    }
                }
            }
            out
        };
        let reference = run(Backend::Cranelift, 2);
        // A NaN operand gives NaN (7.0 here); min(-0, +0) is -0 and max +0.
        let at = |a: u32, b: u32, c: u32| {
            reference
                .iter()
                .find(|r| (r.0, r.1, r.2) == (a, b, c))
                .unwrap()
                .3
        };
        assert_eq!(at(0x7f93_c0e3, 0x3f80_0000, 1), (0x40e0_0000, 0x40e0_0000));
        assert_eq!(at(0x8000_0000, 0x0000_0000, 0), (0x8000_0000, 0));
        for level in 0..=3 {
            assert_eq!(run(Backend::Llvm, level), reference, "LLVM O{level}");
        }
    }

    #[test]
    fn the_add_one_loop_is_vectorized_at_o3() {
        // Pointer arithmetic reaches LLVM as `getelementptr`, so the loop vectorizer sees it:
        // the float additions become packed SSE additions of four lanes.
        let module = example("add_one");
        let mut opts = options(Backend::Llvm);
        opts.llvm = LlvmOptions {
            cpu: "x86-64".to_owned(),
            ..LlvmOptions::with_opt_level(3)
        };
        let text = safecall::emit(&module, safecall::Emit::Asm, &opts).unwrap();
        assert!(text.contains("addps"), "not vectorized:\n{text}");
    }
}

#[cfg(not(feature = "llvm"))]
#[test]
fn llvm_without_the_feature_is_unavailable() {
    let module = example("add_one");
    let err = safecall::compile_object(&module, &options(Backend::Llvm)).unwrap_err();
    assert!(
        matches!(
            err,
            safecall::Error::Backend(safecall::backend::BackendError::Unavailable(Backend::Llvm))
        ),
        "{err}"
    );
    assert!(err.to_string().contains("`--features llvm`"), "{err}");
    // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
    // and calls only symbols it declares with their real signatures.
    let err =
        unsafe { safecall::jit::compile(&module, &jit_options(Backend::Llvm, 2)) }.unwrap_err();
    assert!(
        matches!(
            err,
            safecall::Error::Backend(safecall::backend::BackendError::Unavailable(Backend::Llvm))
        ),
        "{err}"
    );
}
