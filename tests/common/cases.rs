//! Loading the shared check cases (`tests/checks/*.json`, format in `tests/checks/README.md`).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The directory of the shared cases.
pub fn checks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/checks")
}

/// One case file: a module and the calls made against it.
#[derive(Debug)]
pub struct Suite {
    /// The module's file stem (`tests/checks/<module>.scir`).
    pub module: String,
    /// The calls.
    pub cases: Vec<Case>,
    /// Metadata and doc expectations.
    pub metadata: Vec<MetadataCase>,
    /// Global functions the runners register before the calls: (name, callback name).
    pub globals: Vec<(String, String)>,
}

/// One call and its expected outcome.
#[derive(Debug)]
pub struct Case {
    /// Human-readable name, unique in its file.
    pub name: String,
    /// The host function.
    pub func: String,
    /// Argument descriptors.
    pub args: Vec<Value>,
    /// What must happen.
    pub expect: Expect,
    /// Expected tensor contents after a successful call: (argument path, values).
    pub after: Vec<(Vec<usize>, Vec<f64>)>,
    /// Runners the case is restricted to (`python`, `rust`), when it is.
    pub only: Option<Vec<String>>,
    /// Tensor passing modes of the Rust runners (`object`, `dltensor_ptr`); both by default.
    pub tensor_modes: Vec<String>,
    /// The environment allocator installed for the call: `"cpu"` (recording: every
    /// allocation must be freed exactly once once the result is dropped) or
    /// `{"fails": "message"}`; none when absent.
    pub allocator: Option<Value>,
}

/// The expected outcome of a call.
#[derive(Debug)]
pub enum Expect {
    /// Success with this value (a value descriptor, or `{"arg": i}` for a passed-through
    /// tensor).
    Returns(Value),
    /// An error of this kind with exactly this message (placeholders expanded by the runner).
    Raises { kind: String, message: String },
}

/// Expected metadata of a host function.
#[derive(Debug)]
pub struct MetadataCase {
    /// The host function.
    pub func: String,
    /// The parsed `type_schema` JSON.
    pub type_schema: Value,
    /// The argument names.
    pub arg_names: Vec<String>,
    /// The doc string.
    pub doc: String,
}

impl Case {
    /// Whether the runner family `runner` (`rust` or `python`) runs this case.
    pub fn runs_on(&self, runner: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|only| only.iter().any(|r| r == runner))
    }
}

fn string(v: &Value, what: &str, at: &str) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("{at}: `{what}` must be a string, got {v}"))
        .to_owned()
}

fn strings(v: &Value, what: &str, at: &str) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("{at}: `{what}` must be a list of strings, got {v}"))
        .iter()
        .map(|s| string(s, what, at))
        .collect()
}

fn parse_case(v: &Value, at: &str) -> Case {
    let name = string(&v["name"], "name", at);
    let at = format!("{at}: case {name:?}");
    let expect = match (v.get("returns"), v.get("raises")) {
        (Some(value), None) => Expect::Returns(value.clone()),
        (None, Some(err)) => Expect::Raises {
            kind: string(&err["kind"], "raises.kind", &at),
            message: string(&err["message"], "raises.message", &at),
        },
        _ => panic!("{at}: exactly one of `returns` and `raises` is required"),
    };
    let after: Vec<(Vec<usize>, Vec<f64>)> = v
        .get("after")
        .map(|a| {
            a.as_array()
                .unwrap_or_else(|| panic!("{at}: `after` must be a list"))
                .iter()
                .map(|entry| {
                    let path = arg_path(&entry["arg"], &at);
                    let values = entry["values"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{at}: `after[].values` must be a list"))
                        .iter()
                        .map(|x| {
                            x.as_f64()
                                .unwrap_or_else(|| panic!("{at}: `after` values are numbers"))
                        })
                        .collect();
                    (path, values)
                })
                .collect()
        })
        .unwrap_or_default();
    if !after.is_empty() && matches!(expect, Expect::Raises { .. }) {
        panic!("{at}: `after` only goes with `returns`");
    }
    let known = [
        "name",
        "fn",
        "args",
        "returns",
        "raises",
        "after",
        "only",
        "tensor_modes",
        "allocator",
        "note",
    ];
    if let Some(obj) = v.as_object() {
        for key in obj.keys() {
            assert!(known.contains(&key.as_str()), "{at}: unknown key `{key}`");
        }
    }
    Case {
        func: string(&v["fn"], "fn", &at),
        args: v["args"]
            .as_array()
            .unwrap_or_else(|| panic!("{at}: `args` must be a list"))
            .clone(),
        expect,
        after,
        only: v.get("only").map(|o| strings(o, "only", &at)),
        allocator: v.get("allocator").cloned(),
        tensor_modes: v
            .get("tensor_modes")
            .map(|o| strings(o, "tensor_modes", &at))
            .unwrap_or_else(|| vec!["object".to_owned(), "dltensor_ptr".to_owned()]),
        name,
    }
}

/// An argument path: `0` or `"2.1"` (element 1 of the array passed as argument 2).
pub fn arg_path(v: &Value, at: &str) -> Vec<usize> {
    match v {
        Value::Number(n) => vec![n.as_u64().expect("argument index") as usize],
        Value::String(s) => s
            .split('.')
            .map(|p| {
                p.parse()
                    .unwrap_or_else(|_| panic!("{at}: bad argument path {s:?}"))
            })
            .collect(),
        other => panic!("{at}: bad argument path {other}"),
    }
}

fn parse_metadata(v: &Value, at: &str) -> MetadataCase {
    let func = string(&v["fn"], "fn", at);
    let at = format!("{at}: metadata of {func}");
    MetadataCase {
        type_schema: v
            .get("type_schema")
            .cloned()
            .unwrap_or_else(|| panic!("{at}: `type_schema` is required")),
        arg_names: strings(&v["arg_names"], "arg_names", &at),
        doc: string(&v["doc"], "doc", &at),
        func,
    }
}

/// Loads one case file.
pub fn load(path: &Path) -> Suite {
    let at = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{at}: {e}"));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
    let module = string(&v["module"], "module", &at);
    let cases = v
        .get("cases")
        .and_then(Value::as_array)
        .map(|cs| cs.iter().map(|c| parse_case(c, &at)).collect())
        .unwrap_or_default();
    let metadata = v
        .get("metadata")
        .and_then(Value::as_array)
        .map(|ms| ms.iter().map(|m| parse_metadata(m, &at)).collect())
        .unwrap_or_default();
    let globals = v
        .get("globals")
        .and_then(Value::as_object)
        .map(|g| {
            g.iter()
                .map(|(name, callback)| (name.clone(), string(callback, "globals", &at)))
                .collect()
        })
        .unwrap_or_default();
    let suite = Suite {
        module,
        cases,
        metadata,
        globals,
    };
    let mut names: Vec<&str> = suite.cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        panic!("{at}: two cases are named {:?}", w[0]);
    }
    suite
}

/// Every case file, sorted by name.
pub fn load_all() -> Vec<Suite> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(checks_dir())
        .expect("tests/checks exists")
        .map(|e| e.expect("readable directory").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

/// The source text of a case module.
pub fn module_text(module: &str) -> (PathBuf, String) {
    let path = checks_dir().join(format!("{module}.scir"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, text)
}

/// Parses and returns a case module, panicking with a rendered diagnostic.
pub fn parse_module(module: &str) -> safecall::ir::Module {
    let (path, text) = module_text(module);
    safecall::ir::parse::parse(&text)
        .unwrap_or_else(|e| panic!("{}", e.render(&path.display().to_string(), &text)))
}

/// The single key of a value descriptor (the key other than `as`), and its body.
pub fn tag(v: &Value) -> (&str, &Value) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("a value descriptor is null or an object, got {v}"));
    let key = obj
        .keys()
        .find(|k| k.as_str() != "as")
        .unwrap_or_else(|| panic!("empty value descriptor {v}"));
    (key.as_str(), &obj[key])
}

/// The value of a `float` descriptor: a number, or `"nan"`, `"inf"`, `"-inf"`, `"-0.0"`.
pub fn float_of(v: &Value) -> f64 {
    match v {
        Value::String(s) => match s.as_str() {
            "nan" => f64::NAN,
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "-0.0" => -0.0,
            other => panic!("bad float {other:?}"),
        },
        other => other.as_f64().expect("a float"),
    }
}

/// A list of integers in a descriptor (a shape, strides).
pub fn int_list(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("a list of integers")
        .iter()
        .map(|x| x.as_i64().expect("an integer"))
        .collect()
}
