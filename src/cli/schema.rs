//! Function metadata as `safecall inspect` shows it: the `type_schema` of
//! `__tvm_ffi__metadata_<name>` (a JSON string inside the metadata JSON) rendered as a
//! signature with Python-like type names, `add_one(x: Tensor, y: Tensor) -> None`.
//!
//! Both forms of a function schema are read: `{"type": "ffi.Function", "named_args":
//! {"return": [R], "params": [P, ...]}}` (safecall and the C++ `TVM_FFI_DLL_EXPORT_TYPED_FUNC`
//! write this one) and `{"type": "ffi.Function", "args": [R, P, ...]}`.

use serde_json::Value;

/// A parsed `__tvm_ffi__metadata_<name>` value.
#[derive(Debug, Default)]
pub struct Metadata {
    /// The parameters' types, when the schema gives them.
    pub params: Option<Vec<String>>,
    /// The return type.
    pub ret: Option<String>,
    /// `arg_names`, when present.
    pub arg_names: Option<Vec<String>>,
    /// safecall's own `signature` key: the IR signature with tensor shapes.
    pub ir_signature: Option<String>,
    /// The whole metadata as JSON (with `type_schema` parsed), for `--json`.
    pub json: Value,
    /// What could not be understood.
    pub problem: Option<String>,
}

/// Parses metadata JSON text.
pub fn parse(text: &str) -> Metadata {
    let mut out = Metadata::default();
    let json: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.problem = Some(format!("the metadata is not JSON: {e}"));
            out.json = Value::String(text.to_owned());
            return out;
        }
    };
    out.json = json.clone();
    out.arg_names = json.get("arg_names").and_then(Value::as_array).map(|a| {
        a.iter()
            .map(|n| n.as_str().map_or_else(|| n.to_string(), str::to_owned))
            .collect()
    });
    out.ir_signature = json
        .get("signature")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let schema = match json.get("type_schema") {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v) => v,
            Err(e) => {
                out.problem = Some(format!("its type_schema is not JSON: {e}"));
                return out;
            }
        },
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            out.problem = Some("its type_schema is neither a string nor an object".to_owned());
            return out;
        }
        None => {
            out.problem = Some("it has no type_schema".to_owned());
            return out;
        }
    };
    if let Value::Object(map) = &mut out.json {
        map.insert("type_schema".to_owned(), schema.clone());
    }
    match function_parts(&schema) {
        Some((ret, params)) => {
            out.ret = Some(render(ret));
            out.params = Some(params.iter().map(|p| render(p)).collect());
        }
        None => {
            out.problem = Some(format!(
                "its type_schema is not a function: {}",
                render(&schema)
            ))
        }
    }
    out
}

/// The return type and parameters of a function schema.
fn function_parts(schema: &Value) -> Option<(&Value, Vec<&Value>)> {
    let origin = schema.get("type")?.as_str()?;
    if !matches!(origin, "ffi.Function" | "Callable" | "std::function") {
        return None;
    }
    if let Some(named) = schema.get("named_args") {
        let ret = named.get("return")?.as_array()?.first()?;
        let params = named
            .get("params")
            .and_then(Value::as_array)
            .map(|p| p.iter().collect())
            .unwrap_or_default();
        return Some((ret, params));
    }
    let args = schema.get("args")?.as_array()?;
    let (ret, params) = args.split_first()?;
    Some((ret, params.iter().collect()))
}

/// A type schema with Python-like names: `Tensor`, `str`, `int | None`, `tuple[int, Tensor]`.
pub fn render(schema: &Value) -> String {
    let Some(origin) = schema.get("type").and_then(Value::as_str) else {
        return schema.to_string();
    };
    let args: Vec<String> = schema
        .get("args")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(render).collect())
        .unwrap_or_default();
    let with_args = |name: &str| {
        if args.is_empty() {
            name.to_owned()
        } else {
            format!("{name}[{}]", args.join(", "))
        }
    };
    match origin {
        "ffi.Tensor" | "DLTensor*" => "Tensor".to_owned(),
        "ffi.String" => "str".to_owned(),
        "ffi.Bytes" => "bytes".to_owned(),
        "ffi.Shape" => "Shape".to_owned(),
        "DataType" => "dtype".to_owned(),
        "ffi.Module" => "Module".to_owned(),
        "ffi.Object" => "Object".to_owned(),
        "Optional" => format!("{} | None", args.join(" | ")),
        "Union" | "Variant" => args.join(" | "),
        "tuple" | "ffi.Tuple" => format!("tuple[{}]", args.join(", ")),
        "ffi.Array" | "Array" | "list" | "ffi.List" | "List" => with_args("list"),
        "ffi.Map" | "Map" | "dict" | "ffi.Dict" | "Dict" => with_args("dict"),
        "ffi.Function" | "Callable" | "std::function" => match function_parts(schema) {
            Some((ret, params)) => format!(
                "Callable[[{}], {}]",
                params
                    .iter()
                    .map(|p| render(p))
                    .collect::<Vec<_>>()
                    .join(", "),
                render(ret)
            ),
            None => "Callable[..., Any]".to_owned(),
        },
        other => with_args(other),
    }
}

/// `name(a: T, b: U) -> R`, with names where the metadata has them.
pub fn signature(name: &str, meta: &Metadata) -> Option<String> {
    let params = meta.params.as_ref()?;
    let names = meta.arg_names.as_ref().filter(|n| n.len() == params.len());
    let params: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, ty)| match names {
            Some(names) => format!("{}: {ty}", names[i]),
            None => ty.clone(),
        })
        .collect();
    Some(format!(
        "{name}({}) -> {}",
        params.join(", "),
        meta.ret.as_deref().unwrap_or("Any")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safecall_metadata() {
        let text = r#"{"type_schema": "{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[{\"type\":\"None\"}],\"params\":[{\"type\":\"ffi.Tensor\"},{\"type\":\"Optional\",\"args\":[{\"type\":\"Union\",\"args\":[{\"type\":\"void*\"},{\"type\":\"int\"}]}]},{\"type\":\"tuple\",\"args\":[{\"type\":\"int\"},{\"type\":\"ffi.String\"}]}]}}", "arg_names": ["x", "p", "t"], "signature": "f(...)"}"#;
        let meta = parse(text);
        assert_eq!(meta.problem, None);
        assert_eq!(
            signature("f", &meta).unwrap(),
            "f(x: Tensor, p: void* | int | None, t: tuple[int, str]) -> None"
        );
        assert_eq!(meta.ir_signature.as_deref(), Some("f(...)"));
    }

    #[test]
    fn positional_form_without_names() {
        let text = r#"{"type_schema": "{\"type\":\"ffi.Function\",\"args\":[{\"type\":\"int\"},{\"type\":\"int\"},{\"type\":\"ffi.Function\"},{\"type\":\"ffi.Array\",\"args\":[{\"type\":\"ffi.Map\",\"args\":[{\"type\":\"ffi.String\"},{\"type\":\"float\"}]}]}]}"}"#;
        let meta = parse(text);
        assert_eq!(
            signature("g", &meta).unwrap(),
            "g(int, Callable[..., Any], list[dict[str, float]]) -> int"
        );
    }

    #[test]
    fn problems_are_reported_not_hidden() {
        assert!(parse("not json").problem.unwrap().contains("not JSON"));
        assert!(parse("{}").problem.unwrap().contains("no type_schema"));
        let meta = parse(r#"{"type_schema": "{\"type\":\"int\"}"}"#);
        assert!(meta.problem.unwrap().contains("not a function: int"));
    }
}
