//! safecall-runtime's module loader on libraries of every origin: lifetimes (a library stays
//! loaded while its module or any of its functions is alive, and is unloaded after), the
//! symbols a loader reads and writes (`__tvm_ffi__library_bin` in the documented format,
//! `__tvm_ffi__library_ctx`, context symbols), hostile blobs embedded in real libraries, and
//! the C API symbols generated code references.

use crate::modules::support;

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;

use cranelift_object::object::{self, Object, ObjectSection, ObjectSymbol};
use safecall::aot::LinkOptions;
use safecall_runtime::library_bin::{self, BinModule, LibraryBin};
use safecall_runtime::{Any, AnyView, Error, Function, Module};

/// Whether a library image is currently loaded in this process (`RTLD_NOLOAD`).
fn is_loaded(path: &Path) -> bool {
    /// glibc's `RTLD_NOLOAD`.
    const RTLD_NOLOAD: i32 = 0x4;
    // SAFETY: RTLD_NOLOAD never loads anything; a found handle is closed again at once.
    unsafe {
        libloading::os::unix::Library::open(
            Some(path),
            RTLD_NOLOAD | libloading::os::unix::RTLD_LAZY,
        )
    }
    .is_ok()
}

#[test]
fn library_stays_loaded_while_a_function_lives_and_unloads_after() {
    let dir = support::out_dir("lifetime");
    let ir = support::parse(
        "lifetime",
        "module lifetime;\nfn life_add(x: i64) -> i64 { return x + 7; }\n",
    );
    let lib = support::build_so(
        &dir,
        "sc_lifetime",
        &ir,
        Default::default(),
        &LinkOptions::default(),
    );
    assert!(!is_loaded(&lib));
    let module = Module::load(&lib).unwrap();
    assert!(is_loaded(&lib));
    assert_eq!(
        Module::load(&lib).unwrap(),
        module,
        "one module per loaded image"
    );
    let f = module.get_function("life_add").unwrap().unwrap();
    let weak = module.as_object().downgrade();
    drop(module);
    assert!(weak.strong_count() > 0, "the function holds the module");
    assert!(is_loaded(&lib), "the function holds the library");
    let out = f.call(&[AnyView::from(35i64)]).unwrap();
    assert_eq!(out.cast::<i64>().unwrap(), 42);
    drop(f);
    assert_eq!(weak.strong_count(), 0);
    assert!(!is_loaded(&lib), "unloaded once nothing from it is alive");

    // Loading again works (a fresh image, a fresh module); pinned, it stays.
    let module = Module::load(&lib).unwrap();
    module.keep_alive();
    drop(module);
    assert!(is_loaded(&lib), "pinned with ffi.ModuleGlobalsAdd");
    let module = Module::load(&lib).unwrap();
    let unpin = Function::get_global("ffi.ModuleGlobalsRemove").unwrap();
    unpin.call(&[AnyView::from(&module)]).unwrap();
    drop(module);
    assert!(!is_loaded(&lib), "unpinned and dropped");
}

/// The in-process linker writes a library as a new file: a process that loaded the old one
/// keeps running its code, the path holds the new one, and no temporary file is left behind.
#[test]
fn a_library_built_over_a_loaded_one_leaves_the_loaded_code_intact() {
    let dir = support::out_dir("rewrite");
    let build = |value: i64| {
        let ir = support::parse(
            "rewrite",
            &format!("module rewrite;\nfn answer() -> i64 {{ return {value}; }}\n"),
        );
        support::build_so(
            &dir,
            "sc_rewrite",
            &ir,
            Default::default(),
            &LinkOptions::default(),
        )
    };
    let answer = |module: &Module| {
        let f = module.get_function("answer").unwrap().unwrap();
        f.call(&[]).unwrap().cast::<i64>().unwrap()
    };
    let lib = build(1);
    let first = Module::load(&lib).unwrap();
    assert_eq!(answer(&first), 1);
    assert_eq!(build(2), lib);
    assert_eq!(
        answer(&first),
        1,
        "the loaded library's code changed under it"
    );
    // A copy, so that the loader does not hand back the image already loaded from this path.
    let copy = dir.join("libsc_rewrite_copy.so");
    std::fs::copy(&lib, &copy).unwrap();
    assert_eq!(
        answer(&Module::load(&copy).unwrap()),
        2,
        "the path holds the new library"
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        files.len(),
        2,
        "no temporary file is left behind: {files:?}"
    );
}

/// A C library (no TVM-FFI headers needed) exposing its `__tvm_ffi__library_ctx` and a
/// context symbol through safe calls, with an optional `__tvm_ffi__library_bin`.
fn c_library(dir: &Path, name: &str, blob: Option<&[u8]>) -> PathBuf {
    let mut src = String::from(
        r#"#include <stdint.h>
typedef struct { int32_t type_index; uint32_t pad; union { int64_t v_int64; void* v_ptr; }; } Any;
void* __tvm_ffi__library_ctx = 0;
void* sc_test_context_symbol = 0;
static int put_ptr(Any* result, void* p) { result->type_index = 4; result->pad = 0; result->v_ptr = p; return 0; }
int __tvm_ffi_get_library_ctx(void* h, const Any* a, int32_t n, Any* r) { return put_ptr(r, __tvm_ffi__library_ctx); }
int __tvm_ffi_get_context_symbol(void* h, const Any* a, int32_t n, Any* r) { return put_ptr(r, sc_test_context_symbol); }
"#,
    );
    if let Some(blob) = blob {
        let bytes: Vec<String> = blob.iter().map(|b| b.to_string()).collect();
        src.push_str(&format!(
            "const unsigned char __tvm_ffi__library_bin[{}] __attribute__((aligned(8))) = {{{}}};\n",
            blob.len(),
            bytes.join(",")
        ));
    }
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let out = dir.join(format!("lib{name}.so"));
    support::run(
        support::cc()
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(&out)
            .arg(&c),
    );
    out
}

fn ptr_result(module: &Module, name: &str) -> *mut c_void {
    let f = module.get_function(name).unwrap().unwrap();
    f.call(&[]).unwrap().cast::<*mut c_void>().unwrap()
}

#[test]
fn loader_writes_library_ctx_and_context_symbols() {
    let dir = support::out_dir("context");
    let value = 0xC0FFEE_usize as *mut c_void;
    // SAFETY: a NUL-terminated name; the value is only stored.
    let rc = unsafe {
        safecall_runtime::capi::TVMFFIEnvModRegisterContextSymbol(
            c"sc_test_context_symbol".as_ptr(),
            value,
        )
    };
    assert_eq!(rc, 0);
    let plain_path = c_library(&dir, "sc_ctx_plain", None);
    let plain = Module::load(&plain_path).unwrap();
    assert_eq!(ptr_result(&plain, "get_context_symbol"), value);
    assert_eq!(
        ptr_result(&plain, "get_library_ctx"),
        plain.as_ptr().cast(),
        "without a blob the root module is the library module"
    );

    // The library stays mapped after its module goes (another handle holds it): its context
    // no longer names the dead module.
    // SAFETY: the test's own library; its symbols are read through their C types.
    let extra = unsafe { libloading::Library::new(&plain_path) }.unwrap();
    drop(plain);
    type SafeCall = unsafe extern "C" fn(*mut c_void, *const c_void, i32, *mut [u64; 2]) -> i32;
    // SAFETY: the symbol is a safe call with this signature.
    let get_ctx = unsafe { extra.get::<SafeCall>(b"__tvm_ffi_get_library_ctx") }.unwrap();
    let mut result = [0u64; 2];
    // SAFETY: no arguments; `result` is a writable Any.
    assert_eq!(
        unsafe { get_ctx(std::ptr::null_mut(), std::ptr::null(), 0, &mut result) },
        0
    );
    assert_eq!(result[1], 0, "cleared when the module went");
    let again = Module::load(&plain_path).unwrap();
    assert_eq!(ptr_result(&again, "get_library_ctx"), again.as_ptr().cast());
    drop(again);
    drop(extra);

    // With a blob whose root is a custom module importing the library, the context is still
    // the library module, not the root.
    Module::register_loader(
        "sc_ctx_wrapper",
        |_| Ok(Module::from_functions("sc_ctx_wrapper", [])),
        false,
    )
    .unwrap();
    let bin = LibraryBin {
        modules: vec![
            BinModule::Serialized {
                kind: "sc_ctx_wrapper".into(),
                payload: b"w".to_vec(),
            },
            BinModule::Lib,
        ],
        imports: vec![vec![1], vec![]],
    };
    let root = Module::load(c_library(
        &dir,
        "sc_ctx_wrapped",
        Some(&library_bin::encode(&bin)),
    ))
    .unwrap();
    assert_eq!(root.kind(), "sc_ctx_wrapper");
    let lib = root.imports()[0].clone();
    assert_eq!(lib.kind(), "library");
    assert!(root.get_function("get_library_ctx").unwrap().is_none());
    let f = root
        .get_function_with_imports("get_library_ctx", true)
        .unwrap()
        .unwrap();
    let ctx = f.call(&[]).unwrap().cast::<*mut c_void>().unwrap();
    assert_eq!(ctx, lib.as_ptr().cast());
}

/// Loads a C library embedding `blob`; returns the error.
fn load_error(dir: &Path, name: &str, blob: &[u8]) -> Error {
    let lib = c_library(dir, name, Some(blob));
    let err = Module::load(&lib).expect_err("a malformed library blob");
    assert!(
        !is_loaded(&lib),
        "{name}: a failed load unloads the library"
    );
    err
}

fn serialized(kind: &str, payload: &[u8]) -> BinModule {
    BinModule::Serialized {
        kind: kind.into(),
        payload: payload.to_vec(),
    }
}

#[test]
fn hostile_library_blobs_are_errors() {
    let dir = support::out_dir("hostile");
    // The header claims far more bytes than the symbol has: the loader reads no further than
    // the symbol's size in the dynamic symbol table.
    let err = load_error(&dir, "sc_blob_huge", &(1u64 << 40).to_le_bytes());
    assert_eq!(err.kind(), "ValueError");
    assert!(
        err.message()
            .ends_with("malformed __tvm_ffi__library_bin at byte 8: the header says 1099511627776 bytes follow, but only 0 do"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("libsc_blob_huge.so"),
        "names the library"
    );

    // A cycle.
    let cyclic = LibraryBin {
        modules: vec![BinModule::Lib, serialized("a", b"1"), serialized("b", b"2")],
        imports: vec![vec![1], vec![2], vec![1]],
    };
    let err = load_error(&dir, "sc_blob_cycle", &library_bin::encode(&cyclic));
    assert!(
        err.message()
            .contains("the import tree has a cycle: 1 -> 2 -> 1"),
        "{}",
        err.message()
    );

    // An index out of range, an empty payload, a truncated blob.
    let mut bad = LibraryBin {
        modules: vec![BinModule::Lib, serialized("a", b"1")],
        imports: vec![vec![7], vec![]],
    };
    let err = load_error(&dir, "sc_blob_range", &library_bin::encode(&bad));
    assert!(
        err.message().contains("imports module 7"),
        "{}",
        err.message()
    );
    bad.imports = vec![vec![1], vec![]];
    bad.modules[1] = serialized("a", b"");
    let err = load_error(&dir, "sc_blob_empty", &library_bin::encode(&bad));
    assert!(err.message().contains("empty payload"), "{}", err.message());
    let good = library_bin::encode(&LibraryBin {
        modules: vec![BinModule::Lib, serialized("a", b"1")],
        imports: vec![vec![1], vec![]],
    });
    let mut truncated = good[..good.len() - 3].to_vec();
    let nbytes = truncated.len() as u64 - 8;
    truncated[..8].copy_from_slice(&nbytes.to_le_bytes());
    let err = load_error(&dir, "sc_blob_truncated", &truncated);
    assert!(err.message().contains("needs"), "{}", err.message());

    // An unknown kind: no loader is registered.
    let unknown = LibraryBin {
        modules: vec![BinModule::Lib, serialized("sc_no_loader", b"x")],
        imports: vec![vec![1], vec![]],
    };
    let err = load_error(&dir, "sc_blob_unknown", &library_bin::encode(&unknown));
    assert_eq!(err.kind(), "RuntimeError");
    assert!(
        err.message().contains(
            "Library binary was created using {sc_no_loader} but a loader of that name is not registered"
        ),
        "{}",
        err.message()
    );

    // A loader that returns something else, and one that raises.
    Function::from_closure(|_| Ok(Any::from(1i64)))
        .set_global("ffi.Module.load_from_bytes.sc_int_loader", true)
        .unwrap();
    let wrong = LibraryBin {
        modules: vec![BinModule::Lib, serialized("sc_int_loader", b"x")],
        imports: vec![vec![1], vec![]],
    };
    let err = load_error(&dir, "sc_blob_wrong", &library_bin::encode(&wrong));
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message().contains("must return an ffi.Module"),
        "{}",
        err.message()
    );
    Module::register_loader(
        "sc_raising_loader",
        |payload| {
            Err(Error::new(
                "ValueError",
                &format!("cannot load {} bytes", payload.len()),
            ))
        },
        false,
    )
    .unwrap();
    let raising = LibraryBin {
        modules: vec![BinModule::Lib, serialized("sc_raising_loader", b"abc")],
        imports: vec![vec![1], vec![]],
    };
    let err = load_error(&dir, "sc_blob_raising", &library_bin::encode(&raising));
    assert_eq!(err.kind(), "ValueError");
    assert!(
        err.message().contains("cannot load 3 bytes"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("`sc_raising_loader`"),
        "{}",
        err.message()
    );

    // A loader that loads the very library being loaded: an error, not endless recursion.
    static SELF_PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    Module::register_loader(
        "sc_reloading_loader",
        |_| Module::load(SELF_PATH.get().expect("set before loading")),
        false,
    )
    .unwrap();
    let reloading = LibraryBin {
        modules: vec![BinModule::Lib, serialized("sc_reloading_loader", b"r")],
        imports: vec![vec![1], vec![]],
    };
    let lib = c_library(
        &dir,
        "sc_blob_reload",
        Some(&library_bin::encode(&reloading)),
    );
    SELF_PATH.set(lib.clone()).unwrap();
    let err = Module::load(&lib).unwrap_err();
    assert_eq!(err.kind(), "RuntimeError");
    assert!(
        err.message()
            .contains("is loaded again while its imported modules are being loaded"),
        "{}",
        err.message()
    );
    assert!(!is_loaded(&lib));
}

/// The dynamic symbol `name` of an ELF shared library: (bytes, address, section writable).
fn dynamic_symbol(file: &object::File<'_>, name: &str) -> (Vec<u8>, u64, bool) {
    let sym = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("{name} is exported"));
    let section = file
        .section_by_index(sym.section_index().expect("defined"))
        .unwrap();
    let data = section.data().unwrap();
    let start = (sym.address() - section.address()) as usize;
    let bytes = if data.is_empty() {
        vec![0; sym.size() as usize] // .bss
    } else {
        data[start..start + sym.size() as usize].to_vec()
    };
    let object::SectionFlags::Elf { sh_flags } = section.flags() else {
        panic!("ELF")
    };
    let writable = sh_flags & u64::from(object::elf::SHF_WRITE) != 0;
    (bytes, sym.address(), writable)
}

#[test]
fn the_symbol_table_names_code_and_the_tvm_ffi_symbols_but_not_internal_data() {
    let dir = support::out_dir("symtab");
    let module = support::parse(
        "add_one",
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir/add_one.scir"),
        )
        .unwrap(),
    );
    let lib = support::build_so(
        &dir,
        "sc_symtab",
        &module,
        Default::default(),
        &LinkOptions::default(),
    );
    let bytes = std::fs::read(&lib).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let names: BTreeSet<&str> = file.symbols().filter_map(|s| s.name().ok()).collect();
    // The exported function and the local explain function are named; the messages' strings
    // (local data named `__safecall_*`) are not, though the library has them.
    assert!(names.contains("__tvm_ffi_add_one"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("__safecall_explain")),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("__safecall_str_")),
        "{names:?}"
    );
    let rodata = file.section_by_name(".rodata").unwrap();
    let text = rodata.data().unwrap();
    let message = b"expected 2 arguments";
    assert!(text.windows(message.len()).any(|w| w == message));
}

#[test]
fn library_bin_and_library_ctx_are_in_the_documented_format() {
    let dir = support::out_dir("symbols");
    let module = support::parse(
        "imports",
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir/imports.scir"),
        )
        .unwrap(),
    );
    let lib = support::build_so(
        &dir,
        "sc_imports_example",
        &module,
        Default::default(),
        &LinkOptions::default(),
    );
    let bytes = std::fs::read(&lib).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let (blob, address, writable) = dynamic_symbol(&file, "__tvm_ffi__library_bin");
    assert!(!writable, "the blob is read-only");
    assert_eq!(address % 8, 0, "8-byte aligned");
    let nbytes = u64::from_le_bytes(blob[..8].try_into().unwrap());
    assert_eq!(
        nbytes as usize + 8,
        blob.len(),
        "the symbol is exactly the blob"
    );
    let bin = library_bin::decode(&blob).unwrap();
    assert_eq!(
        bin,
        LibraryBin {
            modules: vec![
                BinModule::Lib,
                serialized("test_helpers", b"helpers v1\0"),
                serialized("cuda", b"\x7fELF\x02\x01\x01\x00fatbin"),
            ],
            imports: vec![vec![2], vec![], vec![1]],
        }
    );
    let (ctx, address, writable) = dynamic_symbol(&file, "__tvm_ffi__library_ctx");
    assert_eq!(ctx, vec![0; 8], "pointer-sized, zero");
    assert_eq!(address % 8, 0, "8-byte aligned");
    assert!(writable, "the loader writes it");

    // A library without imports has neither.
    let plain = support::build_so(
        &dir,
        "sc_plain",
        &support::parse(
            "plain",
            "module plain;\nfn f(x: i64) -> i64 { return x; }\n",
        ),
        Default::default(),
        &LinkOptions::default(),
    );
    let bytes = std::fs::read(&plain).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    assert!(
        file.dynamic_symbols()
            .all(|s| !s.name().unwrap_or("").starts_with("__tvm_ffi__library"))
    );
}

/// Names of the functions declared in the real headers (empty when they are not available).
fn header_functions() -> BTreeSet<String> {
    let Some(peer) = support::peer("only_c_api_symbols_are_referenced (header check)", false)
    else {
        return BTreeSet::new();
    };
    let mut names = BTreeSet::new();
    for header in ["tvm/ffi/c_api.h", "tvm/ffi/extra/c_env_api.h"] {
        let text = std::fs::read_to_string(peer.include.join(header)).unwrap();
        for (i, _) in text.match_indices("TVMFFI") {
            let rest = &text[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if rest[end..].starts_with('(') {
                names.insert(rest[..end].to_owned());
            }
        }
    }
    names
}

/// Undefined symbols of an object or library: (name, weak).
fn undefined(path: &Path, dynamic: bool) -> Vec<(String, bool)> {
    let mut cmd = Command::new("nm");
    cmd.arg("-u");
    if dynamic {
        cmd.arg("-D");
    }
    let out = support::run(cmd.arg(path));
    out.lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let kind = parts.next()?;
            let name = parts.next()?;
            Some((
                name.split('@').next().unwrap_or(name).to_owned(),
                kind == "w" || kind == "v",
            ))
        })
        .collect()
}

#[test]
fn only_c_api_symbols_are_referenced() {
    let dir = support::out_dir("nm");
    let ours: BTreeSet<&str> = safecall_runtime::c_api_symbols()
        .iter()
        .map(|s| s.name)
        .collect();
    let headers = header_functions();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "scir"))
        .collect();
    files.push(support::sources().join("calls.scir"));
    files.push(support::sources().join("syslib.scir"));
    files.sort();
    assert!(files.len() >= 6);
    for file in files {
        let name = file.file_stem().unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let module = safecall::ir::parse::parse_in_dir(&text, file.parent())
            .unwrap_or_else(|e| panic!("{}", e.render(&name, &text)))
            .0;
        // What the IR itself names: extern C functions and direct safe-call targets; GPU
        // launches also find the CUDA driver through libc (docs/abi.md).
        let gpu: &[&str] = if module.device_binaries.is_empty() {
            &[]
        } else {
            &["getenv", "dlopen", "dlsym", "dlerror"]
        };
        let declared: BTreeSet<String> = module
            .externs
            .iter()
            .map(|e| e.name.clone())
            .chain(["__tvm_ffi_other_add".to_owned()])
            .chain(gpu.iter().map(|s| s.to_string()))
            .collect();
        let object = support::build_object(&dir, &name, &module, Default::default());
        // Externs stay undefined in the library (resolved when it is loaded).
        let lib = support::build_so(
            &dir,
            &name,
            &module,
            Default::default(),
            &LinkOptions::default(),
        );
        for (path, dynamic) in [(&object, false), (&lib, true)] {
            for (symbol, weak) in undefined(path, dynamic) {
                // Weak references come from the C toolchain's start files
                // (__gmon_start__, __cxa_finalize, _ITM_*), not from generated code.
                if weak && dynamic {
                    continue;
                }
                if declared.contains(&symbol) {
                    continue;
                }
                assert!(
                    ours.contains(symbol.as_str()),
                    "{}: references {symbol}, which is not a TVM-FFI C API function",
                    path.display()
                );
                assert!(
                    headers.is_empty() || headers.contains(&symbol),
                    "{}: references {symbol}, which the real headers do not declare",
                    path.display()
                );
            }
        }
    }
}
