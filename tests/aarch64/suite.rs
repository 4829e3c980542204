//! The check-suite driver: C source making every Rust-runner case of the shared suite
//! (`tests/checks/`) through the real libtvm_ffi C API (`ffi_driver.h`), and the lines it
//! must print, rendered from the cases' expectations.

use std::fmt::Write as _;

use safecall_runtime::abi::{DEVICE_ID_SHIFT, type_index};
use serde_json::Value;

use crate::common::cases::{Case, Expect, Suite, arg_path, float_of, int_list, tag};
use crate::common::tensor::{self, Data, Storage, TensorDesc};

/// The 64-bit payload of a POD descriptor (int, bool, float, ptr, dtype, device) as
/// little-endian memory holds it: (type index, bits).
fn pod_bits(key: &str, x: &Value) -> Option<(i32, u64)> {
    Some(match key {
        "int" => (type_index::INT, x.as_i64().expect("an i64") as u64),
        "bool" => (type_index::BOOL, u64::from(x.as_bool().expect("a bool"))),
        "ptr" => (type_index::OPAQUE_PTR, x.as_u64().expect("an address")),
        "float" => (type_index::FLOAT, float_of(x).to_bits()),
        "dtype" => {
            let dtype = tensor::parse_dtype(x.as_str().expect("a dtype name"));
            (type_index::DATA_TYPE, u64::from(dtype.to_bits()))
        }
        "device" => {
            let d = tensor::parse_device(x.as_str().expect("a device name"));
            let bits =
                u64::from(d.device_type as u32) | u64::from(d.device_id as u32) << DEVICE_ID_SHIFT;
            (type_index::DEVICE, bits)
        }
        _ => return None,
    })
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

fn c_ints(v: &[i64]) -> String {
    // A trailing 0: C has no empty arrays.
    let items: Vec<String> = v
        .iter()
        // i64::MIN's digits do not fit a `long long` literal before the minus applies.
        .map(|&x| {
            if x == i64::MIN {
                "(-9223372036854775807LL - 1)".to_owned()
            } else {
                format!("{x}LL")
            }
        })
        .chain(["0".into()])
        .collect();
    format!("(const int64_t[]){{{}}}", items.join(", "))
}

fn path_text(path: &[usize]) -> String {
    path.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// `tensor_box(...)` for a tensor descriptor: the data is a fresh 64-byte aligned buffer (plus
/// the misalignment) holding the bytes the Rust runners' [`Storage`] writes for the same
/// descriptor, or the descriptor's NULL or fake address.
fn c_tensor_box(body: &Value) -> String {
    let desc = TensorDesc::parse(body);
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
    let init_list: Vec<String> = init.iter().map(u8::to_string).chain(["0".into()]).collect();
    format!(
        "tensor_box({mode}, {misalign}, (const unsigned char[]){{{}}}, {}, 0x{fake:x}ULL, {}, \
         {}, {}, {}, {}, {}, {}, {}, {}ULL)",
        init_list.join(","),
        init.len(),
        desc.shape.len(),
        c_ints(&desc.shape),
        desc.strides.as_deref().map_or("NULL".to_owned(), c_ints),
        desc.dtype.code,
        desc.dtype.bits,
        desc.dtype.lanes,
        desc.device.device_type,
        desc.device.device_id,
        desc.byte_offset,
    )
}

/// A C expression of type `TVMFFIAny` for an argument descriptor at `path`; `as_object` says
/// how a top-level tensor is passed (tensors inside containers are always objects).
fn c_value(v: &Value, path: &[usize], as_object: bool) -> String {
    if v.is_null() {
        return "pod(kTVMFFINone, 0)".to_owned();
    }
    let (key, body) = tag(v);
    if let Some((index, bits)) = pod_bits(key, body) {
        return format!("pod({index}, 0x{bits:x}ULL)");
    }
    let at = c_string(&path_text(path));
    let text = || body.as_str().expect("a string");
    match key {
        "str" | "bytes" => format!(
            "text(&c, {}, {}, {})",
            i32::from(key == "bytes"),
            c_string(text()),
            text().len()
        ),
        "raw_str" => format!("raw_str({})", c_string(text())),
        "big_int" => {
            let words = int_list(body);
            format!("big_int(&c, {}, {})", words.len(), c_ints(&words))
        }
        "byte_array" => format!("byte_array(&c, {}, {})", c_string(text()), text().len()),
        "shape" => {
            let dims = int_list(body);
            format!("shape(&c, {}, {})", dims.len(), c_ints(&dims))
        }
        "array" | "list" => {
            let items: Vec<String> = body
                .as_array()
                .expect("a list")
                .iter()
                .enumerate()
                .map(|(j, item)| {
                    let mut p = path.to_vec();
                    p.push(j);
                    c_value(item, &p, true)
                })
                .collect();
            let constructor = if key == "list" {
                "ffi.List"
            } else {
                "ffi.Array"
            };
            format!(
                "container(&c, \"{constructor}\", (TVMFFIAny[]){{{}}}, {})",
                if items.is_empty() {
                    "pod(0, 0)".to_owned()
                } else {
                    items.join(", ")
                },
                items.len()
            )
        }
        "func" => format!("func(&c, {})", c_string(text())),
        "tensor" => format!(
            "tensor(&c, {at}, {}, {})",
            i32::from(as_object),
            c_tensor_box(body)
        ),
        "data_ptr" => {
            let as_int = match v.get("as").and_then(Value::as_str).unwrap_or("ptr") {
                "int" => 1,
                "ptr" => 0,
                other => panic!("data_ptr passed as {other:?}"),
            };
            format!("data_ptr(&c, {at}, {as_int}, {})", c_tensor_box(body))
        }
        "null_tensor_object" => "pod(kTVMFFITensor, 0)".to_owned(),
        "null_dltensor" => "pod(kTVMFFIDLTensorPtr, 0)".to_owned(),
        other => panic!("unknown value descriptor `{other}`"),
    }
}

/// Escapes text as the driver prints it: one line, `\n` and `\\` escaped.
fn escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// Undoes [`escape`].
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == '\\') {
            (_, true) => match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// What one line the driver prints must be.
pub enum Want {
    /// Exactly this line.
    Line(String),
    /// `metadata FN: JSON`, the metadata the runtime reads for `func`, whose `type_schema`
    /// (itself JSON text) parses to `type_schema` and whose `arg_names` are these.
    Metadata {
        func: String,
        type_schema: Value,
        arg_names: Vec<String>,
    },
}

impl Want {
    fn matches(&self, got: &str) -> bool {
        match self {
            Want::Line(line) => got == line,
            Want::Metadata {
                func,
                type_schema,
                arg_names,
            } => {
                let Some(json) = got.strip_prefix(&format!("metadata {func}: ")) else {
                    return false;
                };
                let Ok(outer) = serde_json::from_str::<Value>(&unescape(json)) else {
                    return false;
                };
                let schema = outer["type_schema"]
                    .as_str()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok());
                let names: Option<Vec<&str>> = outer["arg_names"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect());
                schema.as_ref() == Some(type_schema) && names.is_some_and(|n| n == *arg_names)
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Want::Line(line) => line.clone(),
            Want::Metadata {
                func,
                type_schema,
                arg_names,
            } => format!("metadata {func}: type_schema {type_schema}, arg_names {arg_names:?}"),
        }
    }
}

/// Compares a driver's output with the expected (name, line) pairs; returns the failures.
pub fn differences(got: &str, expected: &[(String, Want)]) -> Vec<String> {
    let got: Vec<&str> = got.lines().collect();
    let mut failures: Vec<String> = expected
        .iter()
        .enumerate()
        .filter(|(i, (_, want))| !got.get(*i).is_some_and(|g| want.matches(g)))
        .map(|(i, (name, want))| {
            format!(
                "{name}\n  expected: {}\n  got:      {}",
                want.describe(),
                got.get(i).unwrap_or(&"(nothing)")
            )
        })
        .collect();
    if got.len() > expected.len() {
        failures.push(format!(
            "{} more lines than expected:\n  {}",
            got.len() - expected.len(),
            got[expected.len()..].join("\n  ")
        ));
    }
    failures
}

/// An expected value as the driver's `render` prints a result.
fn render(v: &Value) -> String {
    if v.is_null() {
        return "None".to_owned();
    }
    let (key, body) = tag(v);
    match pod_bits(key, body) {
        Some((type_index::FLOAT, bits)) if f64::from_bits(bits).is_nan() => {
            return "float nan".to_owned();
        }
        Some((type_index::FLOAT, bits)) => return format!("float {bits:016x}"),
        Some((type_index::INT, bits)) => return format!("int {}", bits as i64),
        Some((type_index::BOOL, bits)) => return format!("bool {bits}"),
        Some((type_index::OPAQUE_PTR, bits)) => return format!("ptr {bits:x}"),
        Some((_, bits)) => return format!("{key} {bits:016x}"),
        None => {}
    }
    match key {
        "str" | "bytes" => format!("{key} {}", escape(body.as_str().expect("a string"))),
        "big_int" => format!(
            "big_int [{}]",
            int_list(body)
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "shape" => format!(
            "shape [{}]",
            body.as_array()
                .expect("a list")
                .iter()
                .map(|x| x.as_i64().expect("an integer").to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "array" => format!(
            "array [{}]",
            body.as_array()
                .expect("a list")
                .iter()
                .map(render)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "func" => "func".to_owned(),
        "arg" => format!("arg {}", path_text(&arg_path(body, "returns"))),
        "new_tensor" => render_new_tensor(body),
        other => panic!("unknown expected-value descriptor `{other}`"),
    }
}

/// How the driver prints a tensor the function allocated (`render_new_tensor` in
/// ffi_driver.h): its values when the driver reads its element type (the case must give them).
fn render_new_tensor(body: &Value) -> String {
    let d = tensor::parse_dtype(body["dtype"].as_str().unwrap_or("float32"));
    let (dt, id) = {
        let dev = tensor::parse_device(body["device"].as_str().unwrap_or("cpu:0"));
        (dev.device_type, dev.device_id)
    };
    let shape: Vec<String> = int_list(&body["shape"])
        .iter()
        .map(i64::to_string)
        .collect();
    let mut s = format!(
        "new_tensor shape [{}] dtype {}/{}/{} device {dt}:{id}",
        shape.join(", "),
        d.code,
        d.bits,
        d.lanes
    );
    let readable = d.lanes == 1
        && matches!(
            (d.code, d.bits),
            (2, 32 | 64) | (0, 8 | 16 | 32 | 64) | (1, 8) | (6, 8)
        );
    if readable {
        let values = body["values"].as_array().unwrap_or_else(|| {
            panic!("new_tensor {body}: give `values` (the C driver prints them)")
        });
        let values: Vec<String> = values
            .iter()
            .map(|v| format!("{}", v.as_f64().expect("a number")))
            .collect();
        write!(s, " values [{}]", values.join(", ")).unwrap();
    }
    s
}

/// The C driver making every Rust-runner case of `suites` (a top-level tensor once per
/// tensor mode of the case; libraries in the directory `argv[1]`), with the name and the
/// expected line of each line it prints.
pub fn driver(suites: &[Suite]) -> (String, Vec<(String, Want)>, Counts) {
    let mut counts = Counts::default();
    let mut c = "#include \"ffi_driver.h\"\n\nint main(int argc, char** argv) {\n  void* lib;\n  \
                 TVMFFIObjectHandle m;\n  (void)argc;\n"
        .to_owned();
    let mut expected = Vec::new();
    for suite in suites {
        // The library opened directly (its symbols), and loaded by the runtime (its module).
        writeln!(
            c,
            "  lib = open_lib(argv[1], \"{0}\");\n  if (!lib) return 1;\n  \
             m = load_module(argv[1], \"{0}\");\n  if (!m) {{ print_raised(NULL); return 1; }}",
            suite.module
        )
        .unwrap();
        for (name, callback) in &suite.globals {
            writeln!(
                c,
                "  set_global({}, callback({}));",
                c_string(name),
                c_string(callback)
            )
            .unwrap();
        }
        for case in suite.cases.iter().filter(|c| c.runs_on("rust")) {
            counts.cases += 1;
            for (mode, as_object) in modes(case) {
                counts.calls += 1;
                let label = format!("{}: {}{mode}", suite.module, case.name);
                let n = case.args.len();
                let mut block = format!("  {{ Call c; TVMFFIAny args[{}];", n.max(1));
                block.push_str(" memset(&c, 0, sizeof c);");
                match &case.allocator {
                    None => block.push_str(" use_allocator(0, NULL);"),
                    Some(Value::String(s)) if s == "cpu" => {
                        block.push_str(" use_allocator(1, NULL);")
                    }
                    Some(other) => write!(
                        block,
                        " use_allocator(2, {});",
                        c_string(other["fails"].as_str().expect("a failure message"))
                    )
                    .unwrap(),
                }
                for (i, a) in case.args.iter().enumerate() {
                    write!(block, "\n    args[{i}] = {};", c_value(a, &[i], as_object)).unwrap();
                }
                // Through the exported symbol, then through the runtime's Function.
                write!(
                    block,
                    "\n    call_entry(&c, entry_of(lib, \"{0}\"), args, {n});\
                     \n    call_function(&c, m, \"{0}\", args, {n});",
                    case.func
                )
                .unwrap();
                for through in [" via the symbol", " via ffi.Function"] {
                    expected.push((format!("{label}{through}"), Want::Line(expected_line(case))));
                }
                if matches!(case.expect, Expect::Returns(_)) {
                    for (path, values) in &case.after {
                        let path = path_text(path);
                        let values: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
                        write!(
                            block,
                            "\n    after(&c, \"{path}\", {}, (const double[]){{{}}});",
                            values.len(),
                            values.join(", ") + ", 0"
                        )
                        .unwrap();
                        expected.push((label.clone(), Want::Line(format!("after {path}: ok"))));
                        counts.read_backs += 1;
                    }
                }
                if case.allocator.is_some() {
                    block.push_str("\n    allocations();");
                    expected.push((label.clone(), Want::Line("allocations: ok".to_owned())));
                }
                writeln!(
                    c,
                    "{block}\n    use_allocator(0, NULL);\n    finish(&c); }}"
                )
                .unwrap();
            }
        }
        // Metadata and docs as the runtime reads them from the loaded module.
        for m in &suite.metadata {
            counts.metadata += 1;
            writeln!(c, "  print_metadata(m, \"{}\");", m.func).unwrap();
            let label = format!("{}: metadata of {}", suite.module, m.func);
            expected.push((
                label.clone(),
                Want::Metadata {
                    func: m.func.clone(),
                    type_schema: m.type_schema.clone(),
                    arg_names: m.arg_names.clone(),
                },
            ));
            expected.push((
                label,
                Want::Line(format!("doc {}: {}", m.func, escape(&m.doc))),
            ));
        }
        c.push_str("  TVMFFIObjectDecRef(m);\n");
    }
    c.push_str("  return 0;\n}\n");
    (c, expected, counts)
}

/// What a driver checks.
#[derive(Debug, Default)]
pub struct Counts {
    /// Cases of the Rust runners.
    pub cases: usize,
    /// Calls (a case passing a tensor is called once per tensor mode), each made twice:
    /// through the exported symbol and through the runtime's Function.
    pub calls: usize,
    /// Tensor contents read back after a call (`after`).
    pub read_backs: usize,
    /// Functions whose metadata and doc are checked.
    pub metadata: usize,
}

/// The tensor modes a case runs in, as (label suffix, whether tensors are objects): each of
/// its `tensor_modes` when it passes a top-level tensor, else once.
fn modes(case: &Case) -> Vec<(&'static str, bool)> {
    if !case.args.iter().any(|a| a.get("tensor").is_some()) {
        return vec![("", true)];
    }
    case.tensor_modes
        .iter()
        .map(|m| match m.as_str() {
            "object" => (" (object)", true),
            "dltensor_ptr" => (" (DLTensor*)", false),
            other => panic!("unknown tensor mode {other:?}"),
        })
        .collect()
}

/// The line the driver must print for a call of `case`.
fn expected_line(case: &Case) -> String {
    match &case.expect {
        Expect::Returns(v) => format!("ok {}", render(v)),
        Expect::Raises { kind, message } => format!("raise {kind}: {}", escape(message)),
    }
}
