//! The argument syntax of `safecall run`: one command-line word per TVM-FFI value.
//!
//! ```text
//! 42  -7  0x10                 int
//! 1.5  -2e-3  inf  -inf  nan   float
//! true  false                  bool
//! none                         None
//! str:hello world  "quoted"    string (str: takes the rest of the word; "..." has JSON escapes)
//! bytes:ab\x00c                bytes (\xNN escapes, \\ for a backslash)
//! cpu:0  cuda:1                device (DLPack device name : id)
//! dtype:float32                data type
//! shape:[2,3]                  ffi.Shape
//! ptr:0x1000                   opaque pointer
//! global:NAME                  the global function NAME (for `func` parameters)
//! (1, float32[2]:ones)         ffi.Array (for `tuple(...)` parameters)
//! float32[4,3]:arange          tensor: DTYPE[DIMS][:PATTERN][@DEVICE]
//! ```
//!
//! Tensor patterns: `zeros` (the default), `ones`, `arange` (0, 1, 2, ... in row-major order,
//! converted to the dtype as numpy's `astype` does), `fill=V`, or the values `[v, v, ...]`.
//! A device other than `cpu` labels host memory with that device: the host function sees a
//! tensor of that device (for trying launchers on a machine without it; a real kernel would
//! be handed host memory).

use safecall_runtime::abi::{DLDataType, DLDevice, device_type};

/// A parsed argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `none`.
    None,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// An integer from 2^63 to 2^64 - 1 (what a `u64` takes beyond int64), passed as an
    /// `ffi.BigInt`: its low 64 bits.
    UpperU64(u64),
    /// A float.
    Float(f64),
    /// `str:...` or `"..."`.
    Str(String),
    /// `bytes:...`.
    Bytes(Vec<u8>),
    /// `NAME:ID`.
    Device(DLDevice),
    /// `dtype:NAME`.
    DType(DLDataType),
    /// `shape:[...]`.
    Shape(Vec<i64>),
    /// `ptr:ADDRESS`.
    Ptr(u64),
    /// `global:NAME`.
    Global(String),
    /// `DTYPE[DIMS]:PATTERN@DEVICE`.
    Tensor(TensorArg),
    /// `(a, b, ...)`.
    Tuple(Vec<Value>),
}

/// A tensor to create.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorArg {
    /// Its dtype.
    pub dtype: DLDataType,
    /// Its dtype as written.
    pub dtype_name: String,
    /// Its shape.
    pub shape: Vec<i64>,
    /// Its contents.
    pub fill: Fill,
    /// Its device label.
    pub device: DLDevice,
}

/// The contents of a tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum Fill {
    /// All zero.
    Zeros,
    /// All one.
    Ones,
    /// 0, 1, 2, ... in row-major order.
    Arange,
    /// One value everywhere.
    Value(Num),
    /// These values, in row-major order.
    Values(Vec<Num>),
}

/// A number in a tensor pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    /// An integer (also `true` = 1, `false` = 0).
    Int(i64),
    /// A float.
    Float(f64),
}

/// The CPU, device 0.
pub const CPU: DLDevice = DLDevice {
    device_type: device_type::CPU,
    device_id: 0,
};

/// Parses one command-line argument.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        text,
        pos: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.skip_spaces();
    if p.pos < text.len() {
        return Err(format!("unexpected `{}` after the value", &text[p.pos..]));
    }
    Ok(v)
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    /// Tuple nesting: inside a tuple, `str:` text ends at `,` or `)`.
    depth: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '+')
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char, context: &str) -> Result<(), String> {
        self.skip_spaces();
        if self.eat(c) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(found) => format!("expected `{c}` {context}, found `{found}`"),
                None => format!("expected `{c}` {context}, found the end of the argument"),
            })
        }
    }

    fn skip_spaces(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.pos += 1;
        }
    }

    fn word(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    fn value(&mut self) -> Result<Value, String> {
        self.skip_spaces();
        match self.peek() {
            None => Err("an empty argument; use `str:` for an empty string".to_owned()),
            Some('(') => self.tuple(),
            Some('"') => self.quoted().map(Value::Str),
            Some(_) => {
                let word = self.word().to_owned();
                if word.is_empty() {
                    let c = self.peek().unwrap_or(' ');
                    return Err(format!("unexpected `{c}`"));
                }
                match self.peek() {
                    Some('[') => self.tensor(&word),
                    Some(':') => {
                        self.pos += 1;
                        self.prefixed(&word)
                    }
                    _ => scalar(&word),
                }
            }
        }
    }

    fn tuple(&mut self) -> Result<Value, String> {
        self.pos += 1;
        self.depth += 1;
        let mut items = Vec::new();
        loop {
            self.skip_spaces();
            if self.eat(')') {
                break;
            }
            items.push(self.value()?);
            self.skip_spaces();
            if self.eat(')') {
                break;
            }
            self.expect(',', "or `)` between tuple elements")?;
        }
        self.depth -= 1;
        Ok(Value::Tuple(items))
    }

    /// A JSON string literal.
    fn quoted(&mut self) -> Result<String, String> {
        let start = self.pos;
        self.pos += 1;
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err("unterminated string: a `\"` is missing".to_owned()),
                Some(c) => {
                    self.pos += c.len_utf8();
                    match c {
                        _ if escaped => escaped = false,
                        '\\' => escaped = true,
                        '"' => break,
                        _ => {}
                    }
                }
            }
        }
        serde_json::from_str(&self.text[start..self.pos])
            .map_err(|e| format!("invalid string literal: {e}"))
    }

    /// Free text up to the end of the argument, or inside a tuple up to `,` or `)`.
    fn text_until_end(&mut self) -> &str {
        let start = self.pos;
        if self.depth == 0 {
            self.pos = self.text.len();
        } else {
            while self.peek().is_some_and(|c| c != ',' && c != ')') {
                self.pos += self.peek().map_or(1, char::len_utf8);
            }
        }
        &self.text[start..self.pos]
    }

    fn prefixed(&mut self, prefix: &str) -> Result<Value, String> {
        match prefix {
            "str" => Ok(Value::Str(self.text_until_end().to_owned())),
            "bytes" => {
                let text = self.text_until_end().to_owned();
                unescape_bytes(&text).map(Value::Bytes)
            }
            "dtype" => {
                let name = self.word().to_owned();
                parse_dtype(&name).map(Value::DType)
            }
            "shape" => self.dims("shape").map(Value::Shape),
            "global" => {
                let name = self.text_until_end().to_owned();
                if name.is_empty() {
                    return Err("`global:` needs the name of a global function".to_owned());
                }
                Ok(Value::Global(name))
            }
            "ptr" => {
                let word = self.word().to_owned();
                match parse_int(&word) {
                    Some(v) => Ok(Value::Ptr(v as u64)),
                    None => Err(format!("`ptr:{word}`: expected an address such as 0x1000")),
                }
            }
            _ => match safecall::ir::syntax::parse_device_name(prefix) {
                Some(code) => {
                    let id = self.word().to_owned();
                    let device_id = id.parse::<i32>().ok().filter(|id| *id >= 0).ok_or_else(
                        || {
                            format!(
                                "`{prefix}:{id}`: the device id must be a number, e.g. `{prefix}:0`"
                            )
                        },
                    )?;
                    Ok(Value::Device(DLDevice {
                        device_type: code,
                        device_id,
                    }))
                }
                None => Err(format!(
                    "unknown prefix `{prefix}:`: expected str:, bytes:, dtype:, shape:, ptr:, \
                     global: or a device such as cpu:0 or cuda:0"
                )),
            },
        }
    }

    /// `[d, d, ...]` of non-negative integers.
    fn dims(&mut self, what: &str) -> Result<Vec<i64>, String> {
        self.expect('[', &format!("to open the {what}"))?;
        let mut dims = Vec::new();
        loop {
            self.skip_spaces();
            if self.eat(']') {
                break;
            }
            let word = self.word().to_owned();
            match word.parse::<i64>() {
                Ok(d) if d >= 0 => dims.push(d),
                _ => {
                    return Err(format!(
                        "the {what} holds non-negative integers, found `{}`",
                        if word.is_empty() { self.rest() } else { &word }
                    ));
                }
            }
            self.skip_spaces();
            if self.eat(']') {
                break;
            }
            self.expect(',', &format!("or `]` between the entries of the {what}"))?;
        }
        Ok(dims)
    }

    fn tensor(&mut self, dtype_name: &str) -> Result<Value, String> {
        let dtype = parse_dtype(dtype_name)?;
        let shape = self.dims("shape")?;
        let mut fill = Fill::Zeros;
        if self.eat(':') {
            fill = self.pattern()?;
        }
        let mut device = CPU;
        if self.eat('@') {
            let name = self.word().to_owned();
            match self.prefixed_device(&name)? {
                Value::Device(d) => device = d,
                _ => unreachable!("prefixed_device returns devices"),
            }
        }
        Ok(Value::Tensor(TensorArg {
            dtype,
            dtype_name: dtype_name.to_owned(),
            shape,
            fill,
            device,
        }))
    }

    fn prefixed_device(&mut self, name: &str) -> Result<Value, String> {
        if safecall::ir::syntax::parse_device_name(name).is_none() {
            return Err(format!(
                "`@{name}`: expected a device such as `@cpu:0` or `@cuda:0`"
            ));
        }
        self.expect(
            ':',
            &format!("after the device name `{name}` (e.g. `{name}:0`)"),
        )?;
        self.prefixed(name)
    }

    fn pattern(&mut self) -> Result<Fill, String> {
        if self.peek() == Some('[') {
            self.pos += 1;
            let mut values = Vec::new();
            loop {
                self.skip_spaces();
                if self.eat(']') {
                    break;
                }
                let word = self.word().to_owned();
                values.push(number(&word)?);
                self.skip_spaces();
                if self.eat(']') {
                    break;
                }
                self.expect(',', "or `]` between tensor values")?;
            }
            return Ok(Fill::Values(values));
        }
        let word = self.word().to_owned();
        match word.as_str() {
            "zeros" => Ok(Fill::Zeros),
            "ones" => Ok(Fill::Ones),
            "arange" => Ok(Fill::Arange),
            "fill" => {
                if !self.eat('=') {
                    return Err("`fill` needs a value: `fill=3`".to_owned());
                }
                let value = self.word().to_owned();
                Ok(Fill::Value(number(&value)?))
            }
            _ => Err(format!(
                "unknown tensor pattern `{word}`: expected zeros, ones, arange, fill=V or [v, ...]"
            )),
        }
    }
}

fn parse_dtype(name: &str) -> Result<DLDataType, String> {
    safecall_runtime::dtype::parse(name)
        .map_err(|_| format!("unknown dtype `{name}` (e.g. float32, int8, bfloat16, bool)"))
}

/// A decimal or `0x` integer from 2^63 to 2^64 - 1.
fn parse_upper_u64(word: &str) -> Option<u64> {
    let v = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None if !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()) => {
            word.parse().ok()?
        }
        None => return None,
    };
    (v > i64::MAX as u64).then_some(v)
}

fn parse_int(word: &str) -> Option<i64> {
    let (negative, digits) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let magnitude = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => {
            digits.parse::<u64>().ok()?
        }
        None => return None,
    };
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

fn parse_float(word: &str) -> Option<f64> {
    match word {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ if word.bytes().any(|b| b.is_ascii_digit())
            && word
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+')) =>
        {
            word.parse().ok()
        }
        _ => None,
    }
}

/// A number of a tensor pattern.
fn number(word: &str) -> Result<Num, String> {
    match word {
        "true" => return Ok(Num::Int(1)),
        "false" => return Ok(Num::Int(0)),
        _ => {}
    }
    if let Some(v) = parse_int(word) {
        return Ok(Num::Int(v));
    }
    parse_float(word)
        .map(Num::Float)
        .ok_or_else(|| format!("`{word}` is not a number"))
}

fn scalar(word: &str) -> Result<Value, String> {
    match word {
        "none" => return Ok(Value::None),
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        _ => {}
    }
    if let Some(v) = parse_int(word) {
        return Ok(Value::Int(v));
    }
    if let Some(v) = parse_upper_u64(word) {
        return Ok(Value::UpperU64(v));
    }
    if word
        .trim_start_matches('-')
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'x' || b == b'X')
        && word.bytes().any(|b| b.is_ascii_digit())
        && !word.contains('.')
    {
        return Err(format!(
            "`{word}` does not fit 64 bits (TVM-FFI ints are int64; 2^63 to 2^64 - 1 pass as a \
             BigInt, for u64 parameters)"
        ));
    }
    if let Some(v) = parse_float(word) {
        return Ok(Value::Float(v));
    }
    if safecall::ir::syntax::parse_device_name(word).is_some() {
        return Err(format!("`{word}`: a device needs its id, e.g. `{word}:0`"));
    }
    if safecall_runtime::dtype::parse(word).is_ok() {
        return Err(format!(
            "`{word}`: write `dtype:{word}` for a data type, or `{word}[DIMS]` for a tensor"
        ));
    }
    Err(format!(
        "`{word}` is not a value: strings are written `str:{word}`"
    ))
}

/// `\xNN` and `\\` escapes.
fn unescape_bytes(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = text
                    .get(i + 2..i + 4)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| "`\\x` needs two hex digits, e.g. `\\x00`".to_owned())?;
                out.push(hex);
                i += 4;
            }
            _ => return Err("in `bytes:`, a backslash starts `\\xNN` or `\\\\`".to_owned()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use safecall_runtime::abi::dtype_code;

    fn f32() -> DLDataType {
        DLDataType {
            code: dtype_code::FLOAT,
            bits: 32,
            lanes: 1,
        }
    }

    #[test]
    fn scalars() {
        assert_eq!(parse("42"), Ok(Value::Int(42)));
        assert_eq!(parse("-7"), Ok(Value::Int(-7)));
        assert_eq!(parse("0x10"), Ok(Value::Int(16)));
        assert_eq!(
            parse("-9223372036854775808"),
            Ok(Value::Int(i64::MIN)),
            "the smallest int64"
        );
        assert_eq!(parse("9223372036854775808"), Ok(Value::UpperU64(1 << 63)));
        assert_eq!(parse("0xffffffffffffffff"), Ok(Value::UpperU64(u64::MAX)));
        assert!(
            parse("18446744073709551616")
                .unwrap_err()
                .contains("64 bits")
        );
        assert!(
            parse("-9223372036854775809")
                .unwrap_err()
                .contains("64 bits")
        );
        assert_eq!(parse("1.5"), Ok(Value::Float(1.5)));
        assert_eq!(parse("-2e-3"), Ok(Value::Float(-2e-3)));
        assert_eq!(parse("-inf"), Ok(Value::Float(f64::NEG_INFINITY)));
        assert!(matches!(parse("nan"), Ok(Value::Float(v)) if v.is_nan()));
        assert_eq!(parse("true"), Ok(Value::Bool(true)));
        assert_eq!(parse("none"), Ok(Value::None));
    }

    #[test]
    fn prefixed_values() {
        assert_eq!(parse("str:a b, c"), Ok(Value::Str("a b, c".into())));
        assert_eq!(parse("str:"), Ok(Value::Str(String::new())));
        assert_eq!(parse(r#""q\"uo\u00e9""#), Ok(Value::Str("q\"uoé".into())));
        assert_eq!(parse(r"bytes:a\x00\\"), Ok(Value::Bytes(b"a\0\\".to_vec())));
        assert_eq!(parse("dtype:float32"), Ok(Value::DType(f32())));
        assert_eq!(parse("shape:[2, 3]"), Ok(Value::Shape(vec![2, 3])));
        assert_eq!(parse("shape:[]"), Ok(Value::Shape(vec![])));
        assert_eq!(parse("ptr:0x1000"), Ok(Value::Ptr(0x1000)));
        assert_eq!(parse("global:a.b"), Ok(Value::Global("a.b".into())));
        assert_eq!(
            parse("cuda:1"),
            Ok(Value::Device(DLDevice {
                device_type: device_type::CUDA,
                device_id: 1
            }))
        );
    }

    #[test]
    fn tensors() {
        let Ok(Value::Tensor(t)) = parse("float32[4,3]:arange") else {
            panic!()
        };
        assert_eq!(
            (t.dtype, t.shape, t.fill, t.device),
            (f32(), vec![4, 3], Fill::Arange, CPU)
        );
        let Ok(Value::Tensor(t)) = parse("int8[8]:fill=3@cuda:0") else {
            panic!()
        };
        assert_eq!(t.fill, Fill::Value(Num::Int(3)));
        assert_eq!(t.device.device_type, device_type::CUDA);
        let Ok(Value::Tensor(t)) = parse("float32[]") else {
            panic!()
        };
        assert_eq!((t.shape, t.fill), (vec![], Fill::Zeros));
        let Ok(Value::Tensor(t)) = parse("float64[3]:[1, 2.5, -inf]") else {
            panic!()
        };
        assert_eq!(
            t.fill,
            Fill::Values(vec![
                Num::Int(1),
                Num::Float(2.5),
                Num::Float(f64::NEG_INFINITY)
            ])
        );
    }

    #[test]
    fn tuples() {
        assert_eq!(
            parse("(1, str:a, (none, 2.5))"),
            Ok(Value::Tuple(vec![
                Value::Int(1),
                Value::Str("a".into()),
                Value::Tuple(vec![Value::None, Value::Float(2.5)])
            ]))
        );
        assert_eq!(parse("()"), Ok(Value::Tuple(vec![])));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let cases = [
            ("float32[4]:arnge", "unknown tensor pattern `arnge`"),
            ("tensor32[4]", "unknown dtype `tensor32`"),
            ("float32[-1]", "non-negative integers"),
            ("float32[4", "expected `,` or `]`"),
            ("hello", "strings are written `str:hello`"),
            ("cuda", "a device needs its id"),
            ("float32", "write `dtype:float32`"),
            ("foo:1", "unknown prefix `foo:`"),
            ("(1, 2", "expected `,` or `)`"),
            ("int8[2]:fill", "`fill` needs a value"),
            ("float32[2]@gpu:0", "`@gpu`"),
            ("", "an empty argument"),
            ("1 2", "unexpected `2`"),
        ];
        for (text, needle) in cases {
            let err = parse(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
