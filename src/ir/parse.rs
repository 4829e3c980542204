//! The parser of the text format (see `docs/ir.md`): hand-written recursive descent.
//!
//! [`parse`] gives the [`Module`]; [`parse_with_source_map`] also gives the [`SourceMap`]
//! that diagnostics use to point at the text. The first error stops the parse; it carries a
//! span, what was expected and what was found, and renders with `line:column` and a caret
//! excerpt ([`ParseError::render`]).
//!
//! ```
//! let text = "module m;\n\nfn answer() -> i32 {\n    return 42i32;\n}\n";
//! let module = safecall::ir::parse::parse(text).unwrap();
//! assert_eq!(module.functions[0].name, "answer");
//! assert_eq!(safecall::ir::print::print(&module), text);
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use super::model::*;
use super::source_map::*;
use super::syntax;
pub use error::ParseError;
use error::one_of;
use lexer::{Token, lex};

mod alloc;
mod device;
mod error;
mod expr;
mod items;
mod lexer;
mod literals;
mod params;
mod stmt;
mod tdm;
mod tensor;
mod tensormap;
mod tokens;

type PResult<T> = Result<T, ParseError>;

/// Parses a module.
pub fn parse(text: &str) -> Result<Module, ParseError> {
    parse_with_source_map(text).map(|(m, _)| m)
}

/// Parses a module and returns the spans of its parts. `file` paths of device binaries are
/// read relative to the current directory.
pub fn parse_with_source_map(text: &str) -> Result<(Module, SourceMap), ParseError> {
    parse_in_dir(text, None)
}

/// Parses a module read from a file in `dir`, so that `file "..."` paths of device binaries
/// are read relative to it (`None`: the current directory); returns the spans of its parts.
pub fn parse_in_dir(text: &str, dir: Option<&Path>) -> Result<(Module, SourceMap), ParseError> {
    parse_with_files(text, dir, &HashMap::new())
}

/// As [`parse_in_dir`], with files given in memory: a `file "PATH"` whose `PATH` is a key of
/// `files` takes its bytes from there, without reading the disk. A caller that holds a device
/// binary (the Python builder) passes it so, instead of spelling it as an escaped `b"..."`
/// literal that the lexer reads back byte by byte; the module is the same either way, and
/// prints with its bytes inline (`data b"..."`).
///
/// ```
/// use std::collections::HashMap;
/// let text = "module m;\n\ndevice_binary k { format ptx; file \"k.ptx\"; kernels [k]; }\n";
/// let ptx: &[u8] = b".entry k() { ret; }";
/// let files = HashMap::from([("k.ptx".to_owned(), ptx)]);
/// let (module, _) = safecall::ir::parse::parse_with_files(text, None, &files).unwrap();
/// assert_eq!(module.device_binaries[0].data, ptx);
/// ```
pub fn parse_with_files(
    text: &str,
    dir: Option<&Path>,
    files: &HashMap<String, &[u8]>,
) -> Result<(Module, SourceMap), ParseError> {
    let toks = lex(text)?;
    let mut p = Parser {
        text,
        toks,
        pos: 0,
        depth: 0,
        dir,
        files: Some(files),
    };
    p.module()
}

/// Parses one expression (the whole text).
pub fn parse_expr(text: &str) -> Result<Expr, ParseError> {
    let toks = lex(text)?;
    let mut p = Parser {
        text,
        toks,
        pos: 0,
        depth: 0,
        dir: None,
        files: None,
    };
    let (e, _) = p.expr()?;
    p.expect_eof()?;
    Ok(e)
}

/// The words the parser's messages list, derived from the types (a new scalar type appears in
/// them by itself): scalar types in [`ScalarType::all`]'s order.
static SCALAR_TYPES: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| ScalarType::all().map(syntax::scalar_type).collect());
/// Parameter types: the scalars, then the other words and forms `param_type` takes.
static PARAM_TYPES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    SCALAR_TYPES
        .iter()
        .copied()
        .chain(ParamWord::KEYWORDS.iter().copied())
        .chain(ParamForm::ALL.map(ParamForm::shown))
        .collect()
});
/// Return types: `none`, the scalars, then the other words `ret_type` takes.
static RET_TYPES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    std::iter::once(RetWord::None.keyword())
        .chain(SCALAR_TYPES.iter().copied())
        .chain(
            RetWord::ALL
                .into_iter()
                .filter(|w| *w != RetWord::None)
                .map(RetWord::keyword),
        )
        .collect()
});
const FIELDS: &[&str] = &[
    "data",
    "shape[i]",
    "strides[i]",
    "ndim",
    "dtype",
    "device",
    "device_type",
    "device_id",
    "byte_offset",
];
const BUILTINS: &[&str] = &[
    "min",
    "max",
    "ceil_div",
    "floordiv",
    "floormod",
    "select",
    "offset",
    "is_none",
    "cast<T>",
    "load<T>",
    "f64bits",
    "f32bits",
    "f16bits",
    "bf16bits",
    "f64bits_f32",
    "f64bits_f16",
    "f64bits_bf16",
];

fn ticks(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| format!("`{s}`")).collect()
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token<'a>>,
    pos: usize,
    /// Current nesting of expressions, blocks and parameter types.
    depth: usize,
    /// Where `file "..."` paths are read from (`None`: the current directory).
    dir: Option<&'a Path>,
    /// `file "..."` paths served from memory before the disk ([`parse_with_files`]).
    files: Option<&'a HashMap<String, &'a [u8]>>,
}

/// Deepest nesting the parser accepts (it recurses; this keeps it off the end of the stack).
const MAX_DEPTH: usize = 128;

/// The parts of a parameter type that have spans of their own.
#[derive(Default)]
struct TypeSpans {
    elements: Vec<ParamSpans>,
    tensor: Option<TensorSpans>,
}
