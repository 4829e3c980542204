//! Cross-compilation for aarch64, tested under emulation: the examples and the cases of the
//! shared check suite (`tests/checks/`) whose values are POD values (dtypes and devices
//! included), strings, bytes and `DLTensor*` tensors, built for `aarch64-unknown-linux-gnu`
//! by each backend, linked by `aarch64-linux-gnu-gcc`, and called under `qemu-aarch64` by a C
//! driver linked against the real aarch64 `libtvm_ffi.so` of the `apache-tvm-ffi` manylinux
//! wheel. Each call must give the result, or the error kind and message, that the cases
//! expect on x86-64.
//!
//! Needs Debian's `qemu-user` and `gcc-aarch64-linux-gnu`, and pip (to fetch the wheel once
//! into the target directory); without them the test prints why it skips, unless `CI=true`.

#[allow(dead_code)]
#[path = "common/cases.rs"]
mod cases;
#[allow(dead_code)]
#[path = "common/tensor.rs"]
mod tensor;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use cases::{Case, Expect, Suite};
use safecall_runtime::abi::{DEVICE_ID_SHIFT, type_index};
use serde_json::Value;

const TRIPLE: &str = "aarch64-unknown-linux-gnu";
const CC: &str = "aarch64-linux-gnu-gcc";
const QEMU: &str = "qemu-aarch64";
/// The cross toolchain's sysroot (Debian's `libc6-arm64-cross`), for qemu's loader.
const SYSROOT: &str = "/usr/aarch64-linux-gnu";
/// The peer runtime version whose aarch64 library the driver links.
const TVM_FFI: &str = "apache-tvm-ffi==0.1.15.post2";

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Skips (prints why and returns false) outside CI; fails under CI.
fn require(ok: bool, why: &str) -> bool {
    if !ok {
        assert!(!ci(), "aarch64: {why} (required under CI=true)");
        println!("skipped: aarch64: {why}");
    }
    ok
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The aarch64 `libtvm_ffi.so` and headers, fetched from the manylinux wheel once and kept in
/// the target directory: (include dir, lib dir).
fn tvm_ffi() -> Option<(PathBuf, PathBuf)> {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("aarch64-tvm-ffi");
    let (include, lib) = (root.join("tvm_ffi/include"), root.join("tvm_ffi/lib"));
    if lib.join("libtvm_ffi.so").exists() && include.join("tvm/ffi/c_api.h").exists() {
        return Some((include, lib));
    }
    let python = std::env::var("SAFECALL_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    if !require(
        Command::new(&python)
            .args(["-m", "pip", "--version"])
            .output()
            .is_ok_and(|o| o.status.success()),
        &format!("`{python} -m pip` is not available to fetch the aarch64 {TVM_FFI} wheel"),
    ) {
        return None;
    }
    let wheels = root.join("wheel");
    let mut download = Command::new(&python);
    download
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--python-version", "3.12", "-d"])
        .arg(&wheels);
    for platform in [
        "manylinux_2_28_aarch64",
        "manylinux_2_27_aarch64",
        "manylinux_2_17_aarch64",
        "manylinux2014_aarch64",
    ] {
        download.args(["--platform", platform]);
    }
    run(download.arg(TVM_FFI));
    // A wheel is a zip file: extract the library and the headers with Python's zipfile.
    run(Command::new(&python).args([
        "-c",
        "import sys, zipfile, glob\n\
         wheel = glob.glob(sys.argv[1] + '/apache_tvm_ffi-*.whl')[0]\n\
         z = zipfile.ZipFile(wheel)\n\
         z.extractall(sys.argv[2], [n for n in z.namelist()\n\
             if n.startswith('tvm_ffi/include/') or n == 'tvm_ffi/lib/libtvm_ffi.so'])\n",
        &wheels.to_string_lossy(),
        &root.to_string_lossy(),
    ]));
    assert!(
        lib.join("libtvm_ffi.so").exists(),
        "the wheel has no libtvm_ffi.so"
    );
    Some((include, lib))
}

/// A POD value descriptor (None, int, bool, float, opaque pointer, dtype, device) as (type
/// index, the 64-bit payload as little-endian memory holds it), or None for other kinds.
fn scalar(v: &Value) -> Option<(i32, u64)> {
    if v.is_null() {
        return Some((type_index::NONE, 0));
    }
    let (kind, x) = v.as_object()?.iter().next()?;
    Some(match kind.as_str() {
        "int" => (type_index::INT, x.as_i64()? as u64),
        "bool" => (type_index::BOOL, u64::from(x.as_bool()?)),
        "ptr" => (type_index::OPAQUE_PTR, x.as_u64()?),
        "dtype" => {
            let dtype = tensor::parse_dtype(x.as_str()?);
            (type_index::DATA_TYPE, u64::from(dtype.to_bits()))
        }
        "device" => {
            let d = tensor::parse_device(x.as_str()?);
            let bits =
                u64::from(d.device_type as u32) | u64::from(d.device_id as u32) << DEVICE_ID_SHIFT;
            (type_index::DEVICE, bits)
        }
        "float" => {
            let f = match x {
                Value::String(s) => match s.as_str() {
                    "nan" => f64::NAN,
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "-0.0" => -0.0,
                    _ => return None,
                },
                x => x.as_f64()?,
            };
            (type_index::FLOAT, f.to_bits())
        }
        _ => return None,
    })
}

/// A text descriptor (`str`, `bytes`, `raw_str`): its kind and contents.
fn text(v: &Value) -> Option<(&str, &str)> {
    let (kind, x) = v.as_object()?.iter().next()?;
    matches!(kind.as_str(), "str" | "bytes" | "raw_str").then_some((kind.as_str(), x.as_str()?))
}

/// A C expression of type `TVMFFIAny` for an argument descriptor the driver can pass:
/// POD values, raw C strings, strings and bytes (small ones on the stack, longer ones as
/// objects made by the real `libtvm_ffi`, as the Rust runners pass them), and tensors as
/// `DLTensor*` (argument `i` of its call): (declarations the expression needs, expression).
fn c_arg(v: &Value, i: usize) -> Option<(String, String)> {
    if let Some(body) = v.get("tensor") {
        return Some(c_dltensor(body, i));
    }
    if let Some((index, bits)) = scalar(v) {
        return Some((String::new(), format!("pod({index}, 0x{bits:x}ULL)")));
    }
    let (kind, contents) = text(v)?;
    let literal = c_string(contents);
    let expr = match kind {
        "raw_str" => format!("raw_str({literal})"),
        _ => format!(
            "text({}, {literal}, {})",
            i32::from(kind == "bytes"),
            contents.len()
        ),
    };
    Some((String::new(), expr))
}

/// A `DLTensor*` argument: the tensor, its shape and strides are locals of the call's block
/// (`t<i>`, `s<i>`, `st<i>`); the data is a fresh 64-byte aligned buffer (plus the
/// misalignment) holding the bytes the Rust runners' [`tensor::Storage`] writes for the same
/// descriptor, or the descriptor's NULL or fake address.
fn c_dltensor(body: &Value, i: usize) -> (String, String) {
    use tensor::{Data, Storage, TensorDesc};
    let desc = TensorDesc::parse(body);
    let list = |v: &[i64]| {
        v.iter()
            .map(|x| format!("{x}LL"))
            .chain(["0".to_owned()])
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shape = list(&desc.shape);
    let strides = desc.strides.as_deref().map(list);
    let (mode, misalign, fake) = match desc.data {
        Data::Alloc => (0, 0, 0),
        Data::Misalign(m) => (0, m, 0),
        Data::Null => (1, 0, 0),
        Data::Fake(a) => (2, 0, a),
    };
    let init = if mode == 0 {
        let storage = Storage::new(desc.clone());
        let extent = desc
            .element_offsets()
            .iter()
            .max()
            .map_or(0, |m| *m as usize + 1);
        let len = desc.byte_offset as usize + extent * desc.element_size();
        // SAFETY: `Storage::new` allocated at least `byte_offset + extent * element size`
        // bytes from the data pointer.
        let bytes = unsafe { std::slice::from_raw_parts(storage.dl.data.cast::<u8>(), len) };
        bytes.to_vec()
    } else {
        Vec::new()
    };
    let expr = format!(
        "dltensor(&t{i}, {mode}, {misalign}, (const unsigned char[]){{{}}}, {}, 0x{fake:x}ULL, \
         {}, s{i}, {}, {}, {}, {}, {}, {}, {}ULL)",
        init.iter()
            .map(|b| b.to_string())
            .chain(["0".to_owned()])
            .collect::<Vec<_>>()
            .join(","),
        init.len(),
        desc.shape.len(),
        if strides.is_some() {
            format!("st{i}")
        } else {
            "NULL".to_owned()
        },
        desc.dtype.code,
        desc.dtype.bits,
        desc.dtype.lanes,
        desc.device.device_type,
        desc.device.device_id,
        desc.byte_offset,
    );
    let mut decls = format!(" DLTensor t{i}; int64_t s{i}[] = {{{shape}}};");
    if let Some(strides) = strides {
        write!(decls, " int64_t st{i}[] = {{{strides}}};").unwrap();
    }
    (decls, expr)
}

/// A C string literal with every byte as a hex escape (one literal per byte, so that no
/// escape runs into the next character).
fn c_string(text: &str) -> String {
    if text.is_empty() {
        return "\"\"".to_owned();
    }
    text.bytes()
        .map(|b| format!("\"\\x{b:02x}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the driver can make the case's call and check its outcome.
fn scalar_case(case: &Case) -> bool {
    case.runs_on("rust")
        && case
            .args
            .iter()
            .enumerate()
            .all(|(i, a)| c_arg(a, i).is_some())
        && case.after.is_empty()
        && (!case.args.iter().any(|a| a.get("tensor").is_some())
            || case.tensor_modes.iter().any(|m| m == "dltensor_ptr"))
        && match &case.expect {
            Expect::Returns(v) => {
                scalar(v).is_some() || text(v).is_some_and(|(kind, _)| kind != "raw_str")
            }
            Expect::Raises { message, .. } => !message.contains("{ptr:"),
        }
}

/// Escapes text as the driver prints it: one line, `\n` and `\\` escaped.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The line the driver must print for `case`.
fn expected_line(case: &Case) -> String {
    match &case.expect {
        Expect::Returns(v) if text(v).is_some() => {
            let (kind, contents) = text(v).expect("a text value");
            format!("ok {kind} {}", escape(contents))
        }
        Expect::Returns(v) => {
            let (index, bits) = scalar(v).expect("a scalar case");
            if index == type_index::FLOAT && f64::from_bits(bits).is_nan() {
                format!("ok {index} nan")
            } else {
                format!("ok {index} {bits:016x}")
            }
        }
        Expect::Raises { kind, message } => format!("raise {kind}: {}", escape(message)),
    }
}

const DRIVER_HEAD: &str = r#"
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

typedef int (*SafeCall)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);

static void print_escaped(const TVMFFIByteArray* b) {
  for (size_t i = 0; i < b->size; ++i) {
    char c = b->data[i];
    if (c == '\n') fputs("\\n", stdout);
    else if (c == '\\') fputs("\\\\", stdout);
    else putchar(c);
  }
}

static TVMFFIAny pod(int32_t type_index, uint64_t bits) {
  TVMFFIAny v;
  memset(&v, 0, sizeof v);
  v.type_index = type_index;
  v.v_uint64 = bits;
  return v;
}

static TVMFFIAny raw_str(const char* s) {
  TVMFFIAny v;
  memset(&v, 0, sizeof v);
  v.type_index = kTVMFFIRawStr;
  v.v_c_str = s;
  return v;
}

/* Up to 7 bytes on the stack (SmallStr/SmallBytes), else a String/Bytes object. */
static TVMFFIAny text(int is_bytes, const char* data, size_t len) {
  TVMFFIAny v;
  memset(&v, 0, sizeof v);
  if (len <= 7) {
    v.type_index = is_bytes ? kTVMFFISmallBytes : kTVMFFISmallStr;
    v.small_str_len = (uint32_t)len;
    memcpy(v.v_bytes, data, len);
    return v;
  }
  TVMFFIByteArray b = {data, len};
  int rc = is_bytes ? TVMFFIBytesFromByteArray(&b, &v) : TVMFFIStringFromByteArray(&b, &v);
  if (rc != 0) printf("cannot make a string object\n");
  return v;
}

/* A DLTensor* argument; mode 0: a fresh 64-byte aligned buffer (plus misalign) holding
   `init`, 1: NULL data, 2: the fake address. The buffer is never freed (a short-lived driver). */
static TVMFFIAny dltensor(DLTensor* t, int mode, size_t misalign, const unsigned char* init,
                          size_t len, uint64_t fake, int32_t ndim, int64_t* shape,
                          int64_t* strides, uint8_t code, uint8_t bits, uint16_t lanes,
                          int32_t device_type, int32_t device_id, uint64_t byte_offset) {
  memset(t, 0, sizeof *t);
  if (mode == 0) {
    size_t size = (misalign + len + 64 + 63) / 64 * 64;
    unsigned char* p = aligned_alloc(64, size);
    memset(p, 0, size);
    memcpy(p + misalign, init, len);
    t->data = p + misalign;
  } else if (mode == 2) {
    t->data = (void*)(uintptr_t)fake;
  }
  t->device.device_type = (DLDeviceType)device_type;
  t->device.device_id = device_id;
  t->ndim = ndim;
  t->dtype.code = code;
  t->dtype.bits = bits;
  t->dtype.lanes = lanes;
  t->shape = shape;
  t->strides = strides;
  t->byte_offset = byte_offset;
  TVMFFIAny v = pod(kTVMFFIDLTensorPtr, 0);
  v.v_ptr = t;
  return v;
}

static void release(TVMFFIAny* args, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    if (args[i].type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(args[i].v_obj);
  }
}

static void call(void* lib, const char* fn, const TVMFFIAny* args, int32_t n) {
  char name[256];
  snprintf(name, sizeof name, "__tvm_ffi_%s", fn);
  SafeCall f = (SafeCall)dlsym(lib, name);
  if (!f) { printf("missing %s\n", name); return; }
  TVMFFIAny result;
  memset(&result, 0, sizeof result);
  result.type_index = kTVMFFINone;
  int rc = f(NULL, args, n, &result);
  if (rc == 0 && (result.type_index == kTVMFFISmallStr || result.type_index == kTVMFFISmallBytes)) {
    TVMFFIByteArray b = {result.v_bytes, result.small_str_len};
    printf("ok %s ", result.type_index == kTVMFFISmallStr ? "str" : "bytes");
    print_escaped(&b);
    putchar('\n');
  } else if (rc == 0 && (result.type_index == kTVMFFIStr || result.type_index == kTVMFFIBytes)) {
    const TVMFFIByteArray* b =
        (const TVMFFIByteArray*)((const char*)result.v_obj + sizeof(TVMFFIObject));
    printf("ok %s ", result.type_index == kTVMFFIStr ? "str" : "bytes");
    print_escaped(b);
    putchar('\n');
    TVMFFIObjectDecRef(result.v_obj);
  } else if (rc == 0) {
    double d;
    memcpy(&d, &result.v_int64, sizeof d);
    if (result.type_index == kTVMFFIFloat && d != d) printf("ok %d nan\n", result.type_index);
    else printf("ok %d %016llx\n", result.type_index, (unsigned long long)result.v_int64);
  } else if (rc == -1) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    TVMFFIErrorCell* cell = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
    fputs("raise ", stdout);
    print_escaped(&cell->kind);
    fputs(": ", stdout);
    print_escaped(&cell->message);
    putchar('\n');
    TVMFFIObjectDecRef(err);
  } else {
    printf("return code %d\n", rc);
  }
}

static void* open_lib(const char* dir, const char* module) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.so", dir, module);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) { printf("dlopen %s\n", dlerror()); }
  return lib;
}

int main(int argc, char** argv) {
  (void)argc;
  void* lib;
"#;

/// The C driver making the scalar calls of `suites` (libraries in the directory `argv[1]`),
/// and the lines it must print.
fn driver(suites: &[(&Suite, Vec<&Case>)]) -> (String, Vec<String>) {
    let mut c = DRIVER_HEAD.to_owned();
    let mut expected = Vec::new();
    for (suite, cases) in suites {
        writeln!(
            c,
            "  lib = open_lib(argv[1], \"{}\");\n  if (!lib) return 1;",
            suite.module
        )
        .unwrap();
        for case in cases {
            let args: Vec<(String, String)> = case
                .args
                .iter()
                .enumerate()
                .map(|(i, a)| c_arg(a, i).expect("a case the driver can make"))
                .collect();
            let n = args.len();
            let mut block = format!("  {{ TVMFFIAny args[{}];", n.max(1));
            for (i, (decls, expr)) in args.iter().enumerate() {
                block.push_str(decls);
                write!(block, " args[{i}] = {expr};").unwrap();
            }
            writeln!(
                c,
                "{block} call(lib, \"{}\", args, {n}); release(args, {n}); }}",
                case.func
            )
            .unwrap();
            expected.push(expected_line(case));
        }
    }
    c.push_str("  return 0;\n}\n");
    (c, expected)
}

fn backends() -> Vec<safecall::Backend> {
    let mut all = vec![safecall::Backend::Cranelift];
    if safecall::backend::llvm::AVAILABLE {
        all.push(safecall::Backend::Llvm);
    }
    all
}

fn options(backend: safecall::Backend) -> safecall::Options {
    let mut options =
        safecall::Options::for_target(safecall::target::Target::parse(TRIPLE).unwrap());
    options.backend = backend;
    options
}

#[test]
fn aarch64_libraries_pass_the_check_suite_under_qemu() {
    if !require(
        runs(CC, "--version"),
        &format!("`{CC}` is not installed (Debian: gcc-aarch64-linux-gnu)"),
    ) || !require(
        runs(QEMU, "-version"),
        &format!("`{QEMU}` is not installed (Debian: qemu-user)"),
    ) {
        return;
    }
    let Some((include, lib)) = tvm_ffi() else {
        return;
    };
    let all = cases::load_all();
    let selected: Vec<(&Suite, Vec<&Case>)> = all
        .iter()
        .filter(|s| s.globals.is_empty())
        .map(|s| (s, s.cases.iter().filter(|c| scalar_case(c)).collect()))
        .filter(|(_, cases): &(&Suite, Vec<&Case>)| !cases.is_empty())
        .collect();
    let (source, expected) = driver(&selected);
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("aarch64-check");
    std::fs::create_dir_all(&work).unwrap();
    let driver_c = work.join("driver.c");
    std::fs::write(&driver_c, source).unwrap();
    let driver_bin = work.join("driver");
    run(Command::new(CC)
        .arg(&driver_c)
        .arg("-I")
        .arg(&include)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-ltvm_ffi", "-ldl", "-o"])
        .arg(&driver_bin));
    for backend in backends() {
        let dir = work.join(format!("{backend:?}").to_lowercase());
        std::fs::create_dir_all(&dir).unwrap();
        let options = options(backend);
        for (suite, _) in &selected {
            safecall::build_shared_library(
                &cases::parse_module(&suite.module),
                &dir.join(format!("{}.so", suite.module)),
                &options,
                &Default::default(),
            )
            .unwrap_or_else(|e| panic!("{backend:?}: building {} for aarch64: {e}", suite.module));
        }
        let out = run(Command::new(QEMU)
            .args(["-L", SYSROOT])
            .arg(&driver_bin)
            .arg(&dir));
        let got: Vec<&str> = out.lines().collect();
        let names = selected.iter().flat_map(|(s, cases)| {
            cases
                .iter()
                .map(move |c| format!("{}: {}", s.module, c.name))
        });
        let failures: Vec<String> = names
            .zip(&expected)
            .enumerate()
            .filter(|(i, (_, want))| got.get(*i) != Some(&want.as_str()))
            .map(|(i, (name, want))| {
                format!(
                    "{name}\n  expected: {want}\n  got:      {}",
                    got.get(i).unwrap_or(&"(nothing)")
                )
            })
            .collect();
        assert!(
            failures.is_empty() && got.len() == expected.len(),
            "aarch64 [{backend:?}]: {} of {} cases differ ({} lines printed):\n{}",
            failures.len(),
            expected.len(),
            got.len(),
            failures.join("\n")
        );
        println!(
            "aarch64 [{backend:?}]: {} check-suite cases passed under {QEMU} ({} modules)",
            expected.len(),
            selected.len()
        );
    }
}

#[test]
fn the_examples_build_and_link_for_aarch64_with_both_backends() {
    if !require(
        runs(CC, "--version"),
        &format!("`{CC}` is not installed (Debian: gcc-aarch64-linux-gnu)"),
    ) {
        return;
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir");
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join("aarch64-examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "scir"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for backend in backends() {
        let dir = work.join(format!("{backend:?}").to_lowercase());
        std::fs::create_dir_all(&dir).unwrap();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let (module, _) = safecall::ir::parse::parse_in_dir(&text, Some(&examples))
                .unwrap_or_else(|e| panic!("{}", e.render(&file.to_string_lossy(), &text)));
            let stem = file.file_stem().unwrap().to_string_lossy();
            let so = dir.join(format!("{stem}.so"));
            safecall::build_shared_library(&module, &so, &options(backend), &Default::default())
                .unwrap_or_else(|e| panic!("{backend:?}: {stem}: {e}"));
            let bytes = std::fs::read(&so).unwrap();
            use cranelift_object::object::{self, Object};
            let file = object::File::parse(&*bytes).unwrap();
            assert_eq!(
                file.architecture(),
                object::Architecture::Aarch64,
                "{backend:?}: {stem}"
            );
        }
        println!(
            "aarch64 [{backend:?}]: {} examples built and linked by {CC}",
            files.len()
        );
    }
}
