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

use std::fmt;
use std::path::Path;

use safecall_runtime::abi::DLDataType;
use safecall_runtime::dtype;

use super::diag;
use super::lexer::{Tok, Token, lex};
use super::model::*;
use super::print::binop_prec;
use super::source_map::*;
use super::syntax;

mod device;

/// A syntax error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Where it is.
    pub span: Span,
    /// What is wrong (for unexpected tokens: "expected ..., found ...").
    pub message: String,
    /// What would have been accepted there, when the parser knows.
    pub expected: Vec<String>,
    /// Extra context (e.g. where an unterminated block was opened).
    pub note: Option<String>,
}

impl ParseError {
    pub(crate) fn new(span: Span, message: String, expected: Vec<String>) -> Self {
        ParseError {
            span,
            message,
            expected,
            note: None,
        }
    }

    pub(crate) fn with_note(mut self, note: String) -> Self {
        self.note = Some(note);
        self
    }

    /// Renders the error with `file:line:column`, the source line and a caret under the span.
    pub fn render(&self, file: &str, text: &str) -> String {
        let mut notes = Vec::new();
        if !self.expected.is_empty() && !self.message.starts_with("expected") {
            notes.push(format!("expected {}", one_of(&self.expected)));
        }
        notes.extend(self.note.iter().cloned());
        diag::render(
            "error",
            &self.message,
            Some((file, text, self.span)),
            &notes,
        )
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.span.start)
    }
}

impl std::error::Error for ParseError {}

fn one_of(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("one of {}, or {last}", init.join(", ")),
    }
}

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
    let toks = lex(text)?;
    let mut p = Parser {
        text,
        toks,
        pos: 0,
        depth: 0,
        dir,
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
    };
    let (e, _) = p.expr()?;
    p.expect_eof()?;
    Ok(e)
}

const PARAM_TYPES: &[&str] = &[
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "bool",
    "f32",
    "f64",
    "ptr",
    "str",
    "bytes",
    "device",
    "dtype",
    "shape",
    "func",
    "any",
    "data_ptr",
    "stream",
    "optional[...]",
    "const(...)",
    "tuple(...)",
    "tensor[...]",
];
const SCALAR_TYPES: &[&str] = &[
    "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "ptr",
];
const RET_TYPES: &[&str] = &[
    "none", "bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64", "ptr",
    "device", "dtype", "str", "tensor", "any",
];
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
    "f64bits_f32",
];

fn ticks(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| format!("`{s}`")).collect()
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token>,
    pos: usize,
    /// Current nesting of expressions, blocks and parameter types.
    depth: usize,
    /// Where `file "..."` paths are read from (`None`: the current directory).
    dir: Option<&'a Path>,
}

/// Deepest nesting the parser accepts (it recurses; this keeps it off the end of the stack).
const MAX_DEPTH: usize = 128;

/// The parts of a parameter type that have spans of their own.
#[derive(Default)]
struct TypeSpans {
    elements: Vec<ParamSpans>,
    tensor: Option<TensorSpans>,
}

impl<'a> Parser<'a> {
    // ---- token helpers -------------------------------------------------------------------

    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, n: usize) -> &Tok {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].span.end
        }
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident { text, quoted: false } if text == kw)
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn is_punct_at(&self, n: usize, p: &str) -> bool {
        matches!(self.peek_at(n), Tok::Punct(q) if *q == p)
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        let hit = self.is_kw(kw);
        if hit {
            self.bump();
        }
        hit
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        let hit = self.is_punct(p);
        if hit {
            self.bump();
        }
        hit
    }

    fn unexpected(&self, expected: Vec<String>) -> ParseError {
        let found = self.peek().describe();
        ParseError::new(
            self.span(),
            format!("expected {}, found {found}", one_of(&expected)),
            expected,
        )
    }

    fn expect_punct(&mut self, p: &str) -> PResult<Span> {
        if self.is_punct(p) {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(vec![format!("`{p}`")]))
        }
    }

    fn expect_kw(&mut self, kw: &str) -> PResult<Span> {
        if self.is_kw(kw) {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(vec![format!("`{kw}`")]))
        }
    }

    fn expect_eof(&mut self) -> PResult<()> {
        if matches!(self.peek(), Tok::Eof) {
            Ok(())
        } else {
            Err(self.unexpected(vec!["end of input".to_owned()]))
        }
    }

    /// A name: an identifier that is not a reserved word, or a quoted name.
    fn name(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident { text, quoted } => {
                if !quoted && syntax::RESERVED.contains(&text.as_str()) {
                    return Err(ParseError::new(
                        self.span(),
                        format!("expected {what}, found the reserved word `{text}`"),
                        vec![what.to_owned()],
                    )
                    .with_note(format!("write `` `{text}` `` to use it as a name")));
                }
                let span = self.bump().span;
                Ok((text, span))
            }
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    /// An unquoted identifier (type names, keys, field names).
    fn word(&mut self, expected: &[&str]) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident {
                text,
                quoted: false,
            } => {
                let span = self.bump().span;
                Ok((text, span))
            }
            _ => Err(self.unexpected(ticks(expected))),
        }
    }

    fn string(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Str(s) => Ok((s, self.bump().span)),
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    fn line_col(&self, span: Span) -> String {
        let (l, c) = span.line_col(self.text);
        format!("{l}:{c}")
    }

    /// A comma-separated list up to `close`, with an optional trailing comma.
    fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<Vec<T>> {
        let mut out = Vec::new();
        while !self.is_punct(close) {
            out.push(item(self)?);
            if !self.eat_punct(",") {
                if self.is_punct(close) {
                    break;
                }
                return Err(self.unexpected(vec!["`,`".to_owned(), format!("`{close}`")]));
            }
        }
        self.expect_punct(close)?;
        Ok(out)
    }

    // ---- literals ------------------------------------------------------------------------

    /// An integer literal with an optional leading `-`; returns (negative, magnitude, suffix, span).
    fn int_literal(&mut self, what: &str) -> PResult<(bool, u64, Option<String>, Span)> {
        let start = self.span();
        let negative = self.is_punct("-") && matches!(self.peek_at(1), Tok::Int { .. });
        if negative {
            self.bump();
        }
        match self.peek().clone() {
            Tok::Int { value, suffix } => {
                let end = self.bump().span;
                Ok((negative, value, suffix, start.to(end)))
            }
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    /// A signed 64-bit integer literal without a suffix (or with `i64`).
    fn i64_literal(&mut self, what: &str) -> PResult<(i64, Span)> {
        let (neg, mag, suffix, span) = self.int_literal(what)?;
        if suffix.as_deref().is_some_and(|s| s != "i64") {
            return Err(ParseError::new(
                span,
                format!(
                    "expected {what} (an `i64`), found a literal with suffix `{}`",
                    suffix.unwrap_or_default()
                ),
                vec![what.to_owned()],
            ));
        }
        Ok((
            signed_value(neg, mag).ok_or_else(|| out_of_i64(span))?,
            span,
        ))
    }

    /// A non-negative literal without suffix that fits `u64`.
    fn u64_literal(&mut self, what: &str) -> PResult<(u64, Span)> {
        match self.peek().clone() {
            Tok::Int {
                value,
                suffix: None,
            } => Ok((value, self.bump().span)),
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    fn float_from_text(
        &self,
        text: &str,
        ty: FloatType,
        negative: bool,
        span: Span,
    ) -> PResult<u64> {
        let bad = || ParseError::new(span, format!("invalid float literal `{text}`"), vec![]);
        Ok(match ty {
            FloatType::F64 => {
                let bits = text.parse::<f64>().map_err(|_| bad())?.to_bits();
                if negative { bits ^ (1 << 63) } else { bits }
            }
            FloatType::F32 => {
                let bits = text.parse::<f32>().map_err(|_| bad())?.to_bits();
                syntax::f32_bits_to_f64(if negative { bits ^ (1 << 31) } else { bits })
            }
        })
    }

    /// Whether the next tokens start a numeric literal (for folding a leading `-`).
    fn at_number(&self, n: usize) -> bool {
        match self.peek_at(n) {
            Tok::Int { .. } | Tok::Float { .. } => true,
            Tok::Ident {
                text,
                quoted: false,
            } => matches!(text.as_str(), "inf" | "nan" | "inf_f32" | "nan_f32"),
            _ => false,
        }
    }

    /// A numeric literal at the current token (after an optional folded `-`).
    fn number(&mut self, negative: bool, start: Span) -> PResult<Expr> {
        let tok = self.bump();
        let span = start.to(tok.span);
        let sign64 = |bits: u64| if negative { bits ^ (1 << 63) } else { bits };
        Ok(match tok.tok {
            Tok::Int { value, suffix } => {
                let ty = match suffix.as_deref() {
                    None => IntType::I64,
                    Some(s) => {
                        syntax::parse_int_type(s).expect("the lexer only accepts known suffixes")
                    }
                };
                let v = if syntax::int_signed(ty) {
                    signed_value(negative, value).ok_or_else(|| out_of_i64(span))?
                } else if negative && value != 0 {
                    return Err(ParseError::new(
                        span,
                        format!("a `{}` literal cannot be negative", syntax::int_type(ty)),
                        vec![],
                    ));
                } else {
                    value as i64
                };
                Expr::Int { value: v, ty }
            }
            Tok::Float { text, suffix } => {
                let ty = if suffix.as_deref() == Some("f32") {
                    FloatType::F32
                } else {
                    FloatType::F64
                };
                Expr::Float {
                    bits: self.float_from_text(&text, ty, negative, span)?,
                    ty,
                }
            }
            Tok::Ident { text, .. } => match text.as_str() {
                "inf" => Expr::Float {
                    bits: sign64(f64::INFINITY.to_bits()),
                    ty: FloatType::F64,
                },
                "nan" => Expr::Float {
                    bits: sign64(syntax::CANONICAL_NAN_F64),
                    ty: FloatType::F64,
                },
                "inf_f32" => Expr::Float {
                    bits: sign64(f64::INFINITY.to_bits()),
                    ty: FloatType::F32,
                },
                _ => Expr::Float {
                    bits: sign64(syntax::CANONICAL_NAN_F64),
                    ty: FloatType::F32,
                },
            },
            _ => unreachable!("at_number checked the token"),
        })
    }

    /// `f64bits(0x...)`, `f32bits(0x...)`, `f64bits_f32(0x...)`; the name is consumed.
    fn bits_literal(&mut self, which: &str, name_span: Span) -> PResult<(Expr, Span)> {
        self.expect_punct("(")?;
        let (bits, span) = self.u64_literal("the bits as an integer literal")?;
        let close = self.expect_punct(")")?;
        let e = match which {
            "f64bits" => Expr::Float {
                bits,
                ty: FloatType::F64,
            },
            "f64bits_f32" => Expr::Float {
                bits,
                ty: FloatType::F32,
            },
            _ => {
                let b32 = u32::try_from(bits).map_err(|_| {
                    ParseError::new(
                        span,
                        "`f32bits` takes the 32 bits of an `f32`".to_owned(),
                        vec![],
                    )
                })?;
                Expr::Float {
                    bits: syntax::f32_bits_to_f64(b32),
                    ty: FloatType::F32,
                }
            }
        };
        Ok((e, name_span.to(close)))
    }

    // ---- module level --------------------------------------------------------------------

    fn module(&mut self) -> PResult<(Module, SourceMap)> {
        let mut map = SourceMap::default();
        if !self.is_kw("module") {
            return Err(self
                .unexpected(vec!["`module`".to_owned()])
                .with_note("a module starts with `module NAME;`".to_owned()));
        }
        self.bump();
        let (name, name_span) = self.name("a module name")?;
        map.module_name = name_span;
        self.expect_punct(";")?;
        let mut m = Module {
            name,
            externs: vec![],
            imported_modules: vec![],
            device_binaries: vec![],
            imports: vec![],
            system_lib_prefix: None,
            functions: vec![],
        };
        loop {
            let mut doc_lines = Vec::new();
            let doc_start = self.span();
            while let Tok::Doc(d) = self.peek().clone() {
                doc_lines.push(d);
                self.bump();
            }
            if !doc_lines.is_empty() && !self.is_kw("fn") {
                return Err(ParseError::new(
                    doc_start,
                    format!(
                        "a doc comment must be followed by `fn`, found {}",
                        self.peek().describe()
                    ),
                    vec!["`fn`".to_owned()],
                ));
            }
            let start = self.span();
            if matches!(self.peek(), Tok::Eof) {
                break;
            } else if self.is_kw("fn") {
                let (f, spans) = self.function(doc_lines.join("\n"))?;
                m.functions.push(f);
                map.functions.push(spans);
            } else if self.eat_kw("system_lib_prefix") {
                let (prefix, _) = self.string("the prefix as a string literal")?;
                let end = self.expect_punct(";")?;
                if m.system_lib_prefix.is_some() {
                    return Err(ParseError::new(
                        start.to(end),
                        "duplicate `system_lib_prefix`".to_owned(),
                        vec![],
                    ));
                }
                m.system_lib_prefix = Some(prefix);
                map.system_lib_prefix = Some(start.to(end));
            } else if self.is_kw("extern") {
                m.externs.push(self.extern_fn()?);
                map.externs
                    .push(start.to(Span::new(self.prev_end(), self.prev_end())));
            } else if self.is_kw("imported_module") {
                let (im, spans) = self.imported_module()?;
                m.imported_modules.push(im);
                map.imported_modules.push(spans);
            } else if self.is_kw("device_binary") {
                let (b, spans) = self.device_binary()?;
                m.device_binaries.push(b);
                map.device_binaries.push(spans);
            } else if self.eat_kw("import") {
                let (label, span) = self.name("an imported module label")?;
                self.expect_punct(";")?;
                m.imports.push(label);
                map.imports.push(span);
            } else {
                return Err(self.unexpected(ticks(&[
                    "fn",
                    "extern",
                    "imported_module",
                    "device_binary",
                    "import",
                    "system_lib_prefix",
                ])));
            }
        }
        Ok((m, map))
    }

    fn extern_fn(&mut self) -> PResult<ExternFn> {
        self.expect_kw("extern")?;
        self.expect_kw("fn")?;
        let (name, _) = self.name("the extern function's name")?;
        self.expect_punct("(")?;
        let params = self.list(")", |p| p.scalar_type())?;
        let ret = if self.eat_punct("->") {
            Some(self.scalar_type()?)
        } else {
            None
        };
        let errors = if self.eat_kw("nonzero_is_raised") {
            ErrorConvention::NonZeroIsRaised
        } else {
            ErrorConvention::None
        };
        if !self.is_punct(";") {
            let mut expected = vec!["`;`".to_owned()];
            if errors == ErrorConvention::None {
                expected.insert(0, "`nonzero_is_raised`".to_owned());
                if ret.is_none() {
                    expected.insert(0, "`->`".to_owned());
                }
            }
            return Err(self.unexpected(expected));
        }
        self.bump();
        Ok(ExternFn {
            name,
            params,
            ret,
            errors,
        })
    }

    fn imported_module(&mut self) -> PResult<(ImportedModule, ImportedModuleSpans)> {
        let start = self.expect_kw("imported_module")?;
        let (label, label_span) = self.name("the imported module's label")?;
        let open = self.expect_punct("{")?;
        let mut spans = ImportedModuleSpans {
            label: label_span,
            ..Default::default()
        };
        let (mut kind, mut payload, mut imports) = (None, None, None);
        while !self.is_punct("}") {
            let key_span = self.span();
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.unclosed(open));
            }
            let (key, _) = self.word(&["kind", "payload", "imports", "}"])?;
            match key.as_str() {
                "kind" if kind.is_none() => {
                    let (k, s) = self.string("the kind as a string literal")?;
                    kind = Some(k);
                    spans.kind = s;
                }
                "payload" if payload.is_none() => match self.peek().clone() {
                    Tok::Bytes(b) => {
                        spans.payload = self.bump().span;
                        payload = Some(b);
                    }
                    _ => {
                        return Err(
                            self.unexpected(vec!["a byte string literal `b\"...\"`".to_owned()])
                        );
                    }
                },
                "imports" if imports.is_none() => {
                    self.expect_punct("[")?;
                    let labels = self.list("]", |p| p.name("an imported module label"))?;
                    spans.imports = labels.iter().map(|(_, s)| *s).collect();
                    imports = Some(labels.into_iter().map(|(l, _)| l).collect());
                }
                "kind" | "payload" | "imports" => {
                    return Err(ParseError::new(
                        key_span,
                        format!("duplicate `{key}`"),
                        vec![],
                    ));
                }
                _ => {
                    return Err(ParseError::new(
                        key_span,
                        format!(
                            "expected one of `kind`, `payload`, `imports`, or `}}`, found `{key}`"
                        ),
                        ticks(&["kind", "payload", "imports", "}"]),
                    ));
                }
            }
            self.expect_punct(";")?;
        }
        let close = self.expect_punct("}")?;
        spans.span = start.to(close);
        let kind = kind.ok_or_else(|| {
            ParseError::new(
                close,
                "missing `kind \"...\";` in `imported_module`".to_owned(),
                vec![],
            )
        })?;
        let payload = payload.ok_or_else(|| {
            ParseError::new(
                close,
                "missing `payload b\"...\";` in `imported_module`".to_owned(),
                vec![],
            )
        })?;
        Ok((
            ImportedModule {
                label,
                kind,
                payload,
                imports: imports.unwrap_or_default(),
            },
            spans,
        ))
    }

    fn unclosed(&self, open: Span) -> ParseError {
        self.unexpected(vec!["`}`".to_owned()]).with_note(format!(
            "the block opened at {} is not closed",
            self.line_col(open)
        ))
    }

    // ---- functions -----------------------------------------------------------------------

    fn function(&mut self, doc: String) -> PResult<(Function, FunctionSpans)> {
        let start = self.expect_kw("fn")?;
        let (name, name_span) = self.name("the function's name")?;
        let mut spans = FunctionSpans {
            name: name_span,
            ..Default::default()
        };
        self.expect_punct("(")?;
        let params = self.list(")", |p| p.param())?;
        let (params, param_spans): (Vec<_>, Vec<_>) = params.into_iter().unzip();
        spans.params = param_spans;
        let ret = if self.eat_punct("->") {
            let (r, s) = self.ret_type()?;
            spans.ret = Some(s);
            r
        } else {
            RetType::None
        };
        let mut constraints = Vec::new();
        if self.eat_kw("where") {
            loop {
                let (c, s) = self.constraint()?;
                constraints.push(c);
                spans.constraints.push(s);
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        if !self.is_punct("{") {
            let mut expected = vec!["`{`".to_owned()];
            if constraints.is_empty() {
                expected.insert(0, "`where`".to_owned());
                if ret == RetType::None && spans.ret.is_none() {
                    expected.insert(0, "`->`".to_owned());
                }
            } else {
                expected.insert(0, "`,`".to_owned());
            }
            return Err(self.unexpected(expected));
        }
        let mut stmts = std::collections::HashMap::new();
        let (body, end) = self.block(&StmtPath::default(), Block::Body, &mut stmts)?;
        spans.stmts = stmts;
        spans.end = end;
        spans.span = start.to(end);
        Ok((
            Function {
                name,
                doc,
                params,
                constraints,
                ret,
                body,
            },
            spans,
        ))
    }

    fn param(&mut self) -> PResult<(Param, ParamSpans)> {
        let (name, name_span) = self.name("a parameter name")?;
        self.expect_punct(":").map_err(|e| {
            e.with_note("parameters and tuple elements are written `name: type`".to_owned())
        })?;
        let ty_start = self.span();
        let (ty, parts) = self.param_type()?;
        let ty_span = ty_start.to(Span::new(self.prev_end(), self.prev_end()));
        let spans = ParamSpans {
            span: name_span.to(ty_span),
            name: name_span,
            ty: ty_span,
            elements: parts.elements,
            tensor: parts.tensor,
        };
        Ok((Param { name, ty }, spans))
    }

    fn param_type(&mut self) -> PResult<(ParamType, TypeSpans)> {
        self.nested(Self::param_type_inner)
    }

    fn param_type_inner(&mut self) -> PResult<(ParamType, TypeSpans)> {
        let (word, span) = match self.peek() {
            Tok::Ident { quoted: false, .. } => self.word(&[])?,
            _ => return Err(self.unexpected(vec!["a parameter type".to_owned()])),
        };
        let simple = match word.as_str() {
            "bool" => Some(ParamType::Bool),
            "ptr" => Some(ParamType::Ptr),
            "str" => Some(ParamType::Str),
            "bytes" => Some(ParamType::Bytes),
            "device" => Some(ParamType::Device),
            "dtype" => Some(ParamType::DType),
            "shape" => Some(ParamType::Shape),
            "func" => Some(ParamType::Func),
            "any" => Some(ParamType::Any),
            "data_ptr" => Some(ParamType::DataPtr),
            "stream" => Some(ParamType::Stream),
            w => syntax::parse_int_type(w)
                .map(ParamType::Int)
                .or_else(|| syntax::parse_float_type(w).map(ParamType::Float)),
        };
        if let Some(t) = simple {
            return Ok((t, TypeSpans::default()));
        }
        match word.as_str() {
            "optional" => {
                self.expect_punct("[")?;
                let (inner, parts) = self.param_type()?;
                self.expect_punct("]")?;
                Ok((ParamType::Optional(Box::new(inner)), parts))
            }
            "const" => {
                self.expect_punct("(")?;
                let v = self.const_value()?;
                self.expect_punct(")")?;
                Ok((ParamType::Const(v), TypeSpans::default()))
            }
            "tuple" => {
                self.expect_punct("(")?;
                let elems = self.list(")", |p| p.param())?;
                let (elems, spans): (Vec<_>, Vec<_>) = elems.into_iter().unzip();
                Ok((
                    ParamType::Tuple(elems),
                    TypeSpans {
                        elements: spans,
                        tensor: None,
                    },
                ))
            }
            "tensor" => {
                let (spec, spans) = self.tensor_spec()?;
                Ok((
                    ParamType::Tensor(spec),
                    TypeSpans {
                        elements: vec![],
                        tensor: Some(spans),
                    },
                ))
            }
            _ => Err(ParseError::new(
                span,
                format!("unknown parameter type `{word}`"),
                ticks(PARAM_TYPES),
            )),
        }
    }

    fn const_value(&mut self) -> PResult<ConstValue> {
        let start = self.span();
        if self.eat_kw("none") {
            return Ok(ConstValue::None);
        }
        if self.eat_kw("true") {
            return Ok(ConstValue::Bool(true));
        }
        if self.eat_kw("false") {
            return Ok(ConstValue::Bool(false));
        }
        if self.is_kw("f64bits") && self.is_punct_at(1, "(") {
            let s = self.bump().span;
            let (e, _) = self.bits_literal("f64bits", s)?;
            let Expr::Float { bits, .. } = e else {
                unreachable!()
            };
            return Ok(ConstValue::Float(bits));
        }
        let negative = self.is_punct("-") && self.at_number(1);
        if negative {
            self.bump();
        }
        let expected = || vec!["an integer, float, `true`, `false` or `none`".to_owned()];
        if !self.at_number(0) {
            return Err(self.unexpected(expected()));
        }
        let e = self.number(negative, start)?;
        let span = start.to(Span::new(self.prev_end(), self.prev_end()));
        match e {
            Expr::Int { value, ty: IntType::I64 } => Ok(ConstValue::Int(value)),
            Expr::Float { bits, ty: FloatType::F64 } => Ok(ConstValue::Float(bits)),
            _ => Err(ParseError::new(
                span,
                "a constant parameter's value is an `i64` or an `f64` literal without another type suffix".to_owned(),
                expected(),
            )),
        }
    }

    /// `(d0, d1, ...)`; returns the dims and the span of each.
    fn dims(&mut self) -> PResult<(Vec<Dim>, Vec<Span>, Span)> {
        let open = self.expect_punct("(")?;
        let items = self.list(")", |p| {
            if matches!(p.peek(), Tok::Int { .. })
                || (p.is_punct("-") && matches!(p.peek_at(1), Tok::Int { .. }))
            {
                let (v, s) = p.i64_literal("a dimension")?;
                Ok((Dim::Const(v), s))
            } else if matches!(p.peek(), Tok::Ident { .. }) {
                let (n, s) = p.name("a dimension (an integer or a symbolic variable)")?;
                Ok((Dim::Var(n), s))
            } else {
                Err(p.unexpected(vec![
                    "a dimension (an integer or a symbolic variable)".to_owned(),
                ]))
            }
        })?;
        let close = Span::new(self.prev_end(), self.prev_end());
        let (dims, spans) = items.into_iter().unzip();
        Ok((dims, spans, open.to(close)))
    }

    fn tensor_spec(&mut self) -> PResult<(TensorSpec, TensorSpans)> {
        self.expect_punct("[")?;
        if !self.is_punct("(") {
            return Err(self
                .unexpected(vec!["the shape `(...)`".to_owned()])
                .with_note(
                    "a tensor type is written `tensor[(dims...), dtype, key=value...]`".to_owned(),
                ));
        }
        let (shape, dim_spans, shape_span) = self.dims()?;
        let mut spans = TensorSpans {
            shape: shape_span,
            dims: dim_spans,
            ..Default::default()
        };
        self.expect_punct(",")?;
        let dtype_start = self.span();
        let dtype = self.dtype()?;
        spans.dtype = dtype_start.to(Span::new(self.prev_end(), self.prev_end()));
        let mut spec = TensorSpec {
            dtype,
            shape,
            strides: Strides::Compact,
            device_type: None,
            device_id: DeviceIdPolicy::Same,
            byte_offset: ByteOffsetPolicy::Zero,
            alignment: None,
            index_type: None,
        };
        const KEYS: &[&str] = &[
            "device",
            "strides",
            "device_id",
            "byte_offset",
            "align",
            "index",
        ];
        while self.eat_punct(",") {
            if self.is_punct("]") {
                break;
            }
            let key_span = self.span();
            let (key, _) = self.word(KEYS)?;
            let attr = match key.as_str() {
                "device" => TensorAttr::Device,
                "strides" => TensorAttr::Strides,
                "device_id" => TensorAttr::DeviceId,
                "byte_offset" => TensorAttr::ByteOffset,
                "align" => TensorAttr::Align,
                "index" => TensorAttr::Index,
                _ => {
                    return Err(ParseError::new(
                        key_span,
                        format!("unknown tensor attribute `{key}`"),
                        ticks(KEYS),
                    ));
                }
            };
            if spans.attrs.iter().any(|(a, _)| *a == attr) {
                return Err(ParseError::new(
                    key_span,
                    format!("duplicate tensor attribute `{key}`"),
                    vec![],
                ));
            }
            self.expect_punct("=")?;
            match attr {
                TensorAttr::Device => {
                    spec.device_type = match self.peek().clone() {
                        Tok::Int { .. } | Tok::Punct("-") => {
                            let (v, s) = self.i64_literal("a device type code")?;
                            Some(i32::try_from(v).map_err(|_| {
                                ParseError::new(
                                    s,
                                    "device type code does not fit `i32`".to_owned(),
                                    vec![],
                                )
                            })?)
                        }
                        Tok::Ident {
                            text,
                            quoted: false,
                        } if text == "any" => {
                            self.bump();
                            None
                        }
                        Tok::Ident {
                            text,
                            quoted: false,
                        } if syntax::parse_device_name(&text).is_some() => {
                            self.bump();
                            syntax::parse_device_name(&text)
                        }
                        _ => {
                            let mut names: Vec<&str> = vec!["any"];
                            names.extend(syntax::DEVICE_NAMES.iter().map(|(n, _)| *n));
                            let mut expected = ticks(&names);
                            expected.push("a device type code".to_owned());
                            return Err(ParseError::new(
                                self.span(),
                                format!("unknown device {}", self.peek().describe()),
                                expected,
                            ));
                        }
                    };
                }
                TensorAttr::Strides => {
                    spec.strides = if self.eat_kw("any") {
                        Strides::Any
                    } else if self.eat_kw("compact") {
                        Strides::Compact
                    } else if self.is_punct("(") {
                        let (dims, ds, _) = self.dims()?;
                        spans.strides = ds;
                        Strides::Exact(dims)
                    } else {
                        return Err(self.unexpected(vec![
                            "`any`".into(),
                            "`compact`".into(),
                            "`(...)`".into(),
                        ]));
                    };
                }
                TensorAttr::DeviceId => {
                    spec.device_id = if self.eat_kw("same") {
                        DeviceIdPolicy::Same
                    } else if self.eat_kw("free") {
                        DeviceIdPolicy::Free
                    } else if matches!(self.peek(), Tok::Ident { .. }) {
                        DeviceIdPolicy::Var(self.name("a symbolic variable")?.0)
                    } else {
                        return Err(self.unexpected(vec![
                            "`same`".into(),
                            "`free`".into(),
                            "a symbolic variable".into(),
                        ]));
                    };
                }
                TensorAttr::ByteOffset => {
                    spec.byte_offset = if self.eat_kw("zero") {
                        ByteOffsetPolicy::Zero
                    } else if self.eat_kw("any") {
                        ByteOffsetPolicy::Any
                    } else {
                        return Err(self.unexpected(vec!["`zero`".into(), "`any`".into()]));
                    };
                }
                TensorAttr::Align => {
                    let (v, s) = self.u64_literal("the alignment in bytes")?;
                    spec.alignment = Some(u32::try_from(v).map_err(|_| {
                        ParseError::new(s, "alignment does not fit `u32`".to_owned(), vec![])
                    })?);
                }
                TensorAttr::Index => {
                    let (w, s) = self.word(&["i32", "i64", "u32", "..."])?;
                    spec.index_type = Some(syntax::parse_int_type(&w).ok_or_else(|| {
                        ParseError::new(
                            s,
                            format!("unknown index type `{w}`"),
                            ticks(&["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]),
                        )
                    })?);
                }
            }
            let end = Span::new(self.prev_end(), self.prev_end());
            spans.attrs.push((attr, key_span.to(end)));
        }
        if !self.is_punct("]") {
            return Err(self.unexpected(vec!["`,`".to_owned(), "`]`".to_owned()]));
        }
        self.bump();
        Ok((spec, spans))
    }

    fn dtype(&mut self) -> PResult<Option<DLDataType>> {
        let span = self.span();
        let word = match self.peek().clone() {
            Tok::Ident {
                text,
                quoted: false,
            } => text,
            _ => {
                return Err(self.unexpected(vec![
                    "a dtype (`float32`, `int8x4`, ...)".into(),
                    "`any`".into(),
                ]));
            }
        };
        self.bump();
        if word == "any" {
            return Ok(None);
        }
        if word == "dtype" && self.is_punct("(") {
            self.bump();
            let mut parts = [0u64; 3];
            let limits = [u64::from(u8::MAX), u64::from(u8::MAX), u64::from(u16::MAX)];
            for (i, what) in ["the type code", "the bits", "the lanes"]
                .iter()
                .enumerate()
            {
                let (v, s) = self.u64_literal(what)?;
                if v > limits[i] {
                    return Err(ParseError::new(s, format!("{what} out of range"), vec![]));
                }
                parts[i] = v;
                if i < 2 {
                    self.expect_punct(",")?;
                }
            }
            self.expect_punct(")")?;
            return Ok(Some(DLDataType {
                code: parts[0] as u8,
                bits: parts[1] as u8,
                lanes: parts[2] as u16,
            }));
        }
        // A dtype name may continue with digits after a lexer split (`float8_e4m3fn` is one
        // identifier, but nothing else needs joining).
        dtype::parse(&word).map(Some).map_err(|e| {
            ParseError::new(span, format!("bad dtype `{word}`: {e}"), vec![])
                .with_note("dtypes are spelled as in TVM-FFI: `float32`, `int8x4`, `bfloat16`, `float8_e4m3fn`, `bool`, or `any`".to_owned())
        })
    }

    fn scalar_type(&mut self) -> PResult<ScalarType> {
        let span = self.span();
        let (w, _) = self.word(SCALAR_TYPES)?;
        syntax::parse_scalar_type(&w).ok_or_else(|| {
            ParseError::new(
                span,
                format!("unknown scalar type `{w}`"),
                ticks(SCALAR_TYPES),
            )
        })
    }

    fn ret_type(&mut self) -> PResult<(RetType, Span)> {
        let span = self.span();
        let (w, _) = self.word(RET_TYPES)?;
        let t = match w.as_str() {
            "none" => RetType::None,
            "device" => RetType::Device,
            "dtype" => RetType::DType,
            "str" => RetType::Str,
            "tensor" => RetType::Tensor,
            "any" => RetType::Any,
            w => RetType::Scalar(syntax::parse_scalar_type(w).ok_or_else(|| {
                ParseError::new(span, format!("unknown return type `{w}`"), ticks(RET_TYPES))
            })?),
        };
        Ok((t, span))
    }

    fn constraint(&mut self) -> PResult<(Constraint, Span)> {
        let (var, start) = self.name("a constrained variable")?;
        let shape_note = || "constraints have the form `name % divisor == 0`".to_owned();
        if !self.is_punct("%") {
            return Err(self
                .unexpected(vec!["`%`".to_owned()])
                .with_note(shape_note()));
        }
        self.bump();
        let (divisor, _) = self.u64_literal("the divisor (a non-negative integer literal)")?;
        self.expect_punct("==")
            .map_err(|e| e.with_note(shape_note()))?;
        let zero_span = self.span();
        match self.peek() {
            Tok::Int {
                value: 0,
                suffix: None,
            } => {
                self.bump();
            }
            _ => {
                return Err(ParseError::new(
                    zero_span,
                    format!("expected `0`, found {}", self.peek().describe()),
                    vec!["`0`".to_owned()],
                )
                .with_note(shape_note()));
            }
        }
        Ok((Constraint::Divisible { var, divisor }, start.to(zero_span)))
    }

    // ---- statements ----------------------------------------------------------------------

    /// `{ stmt* }`; returns the statements and the span of the closing brace.
    fn block(
        &mut self,
        parent: &StmtPath,
        block: Block,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<(Vec<Stmt>, Span)> {
        // A block level (block, statement, `if`) takes far more stack than an expression level.
        self.nested_cost(4, |p| p.block_inner(parent, block, map))
    }

    fn block_inner(
        &mut self,
        parent: &StmtPath,
        block: Block,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<(Vec<Stmt>, Span)> {
        let open = self.expect_punct("{")?;
        let mut stmts = Vec::new();
        loop {
            if self.is_punct("}") {
                let close = self.bump().span;
                return Ok((stmts, close));
            }
            if matches!(self.peek(), Tok::Eof) || self.is_kw("fn") {
                return Err(self.unclosed(open));
            }
            let path = if block == Block::Body {
                StmtPath::root(stmts.len())
            } else {
                parent.child(block, stmts.len())
            };
            let stmt = self.stmt(&path, map)?;
            stmts.push(stmt);
        }
    }

    fn stmt(
        &mut self,
        path: &StmtPath,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<Stmt> {
        let start = self.span();
        let mut spans = StmtSpans::default();
        let stmt = if self.eat_kw("let") {
            let mutable = self.eat_kw("mut");
            let (name, name_span) = self.name("the new name")?;
            spans.name = Some(name_span);
            self.expect_punct("=")?;
            let special = ["call", "call_packed", "get_stream"]
                .iter()
                .find(|k| self.is_kw(k))
                .copied();
            if let (true, Some(kw)) = (mutable, special) {
                return Err(ParseError::new(
                    self.span(),
                    format!("the result of `{kw}` binds an immutable name; drop `mut`"),
                    vec![],
                ));
            }
            let s = match special {
                Some("call") => self.call_extern(Some(name), &mut spans)?,
                Some("call_packed") => self.call_packed(Some(name), &mut spans)?,
                Some(_) => {
                    self.bump();
                    self.expect_punct("(")?;
                    let (device_type, s1) = self.expr()?;
                    self.expect_punct(",")?;
                    let (device_id, s2) = self.expr()?;
                    self.expect_punct(")")?;
                    spans.exprs = vec![s1, s2];
                    Stmt::GetStream {
                        dest: name,
                        device_type,
                        device_id,
                    }
                }
                None => {
                    let (value, s) = self.expr()?;
                    spans.exprs = vec![s];
                    Stmt::Let {
                        name,
                        mutable,
                        value,
                    }
                }
            };
            self.end_stmt()?;
            s
        } else if self.eat_kw("store") {
            self.expect_punct("<")?;
            let ty = self.scalar_type()?;
            self.expect_punct(">")?;
            self.expect_punct("(")?;
            let (ptr, s1) = self.expr()?;
            self.expect_punct(",")?;
            let (value, s2) = self.expr()?;
            self.expect_punct(")")?;
            self.end_stmt()?;
            spans.exprs = vec![s1, s2];
            Stmt::Store { ty, ptr, value }
        } else if self.is_kw("if") {
            self.if_stmt(path, &mut spans, map)?
        } else if self.eat_kw("for") {
            let (var, var_span) = self.name("the loop variable")?;
            spans.name = Some(var_span);
            self.expect_kw("in")?;
            let (start_e, s1) = self.expr()?;
            self.expect_punct("..")?;
            let (end_e, s2) = self.expr()?;
            spans.exprs = vec![s1, s2];
            let step = if self.eat_kw("step") {
                self.i64_literal("the step (an integer literal)")?.0
            } else if self.is_punct("{") {
                1
            } else {
                return Err(self.unexpected(vec!["`step`".into(), "`{`".into()]));
            };
            let (body, _) = self.block(path, Block::Loop, map)?;
            Stmt::For {
                var,
                start: start_e,
                end: end_e,
                step,
                body,
            }
        } else if self.eat_kw("assert") {
            let (cond, s) = self.expr()?;
            spans.exprs.push(s);
            self.expect_kw("else").map_err(|e| {
                e.with_note(
                    "an assertion is written `assert COND else Kind(\"message\", value, ...);`"
                        .to_owned(),
                )
            })?;
            let (kind, kind_span) = self.name("the error kind")?;
            spans.name = Some(kind_span);
            self.expect_punct("(")?;
            let mut parts = Vec::new();
            while !self.is_punct(")") {
                match self.peek().clone() {
                    Tok::Str(text) if self.is_punct_at(1, ",") || self.is_punct_at(1, ")") => {
                        self.bump();
                        parts.push(MessagePart::Text(text));
                    }
                    _ => {
                        let (e, s) = self.expr()?;
                        spans.exprs.push(s);
                        parts.push(MessagePart::Value(e));
                    }
                }
                if !self.eat_punct(",") && !self.is_punct(")") {
                    return Err(self.unexpected(vec!["`,`".into(), "`)`".into()]));
                }
            }
            self.bump();
            self.end_stmt()?;
            Stmt::Assert {
                cond,
                kind,
                message: parts,
            }
        } else if self.is_kw("call") {
            let s = self.call_extern(None, &mut spans)?;
            self.end_stmt()?;
            s
        } else if self.is_kw("call_packed") {
            let s = self.call_packed(None, &mut spans)?;
            self.end_stmt()?;
            s
        } else if self.is_kw("launch") && !self.is_punct_at(1, "=") {
            // `launch` is not reserved: `launch = e;` assigns a binding of that name.
            let s = self.launch(&mut spans)?;
            self.end_stmt()?;
            s
        } else if self.eat_kw("return") {
            let value = if self.is_punct(";") {
                None
            } else {
                let (e, s) = self.expr()?;
                spans.exprs.push(s);
                Some(e)
            };
            self.end_stmt()?;
            Stmt::Return(value)
        } else if matches!(self.peek(), Tok::Ident { .. }) && self.is_punct_at(1, "=") {
            let (name, name_span) = self.name("a name")?;
            spans.name = Some(name_span);
            self.bump();
            let (value, s) = self.expr()?;
            spans.exprs.push(s);
            self.end_stmt()?;
            Stmt::Assign { name, value }
        } else {
            return Err(self.unexpected(vec!["a statement".to_owned()]).with_note(
                "statements are `let`, `NAME = ...`, `store`, `if`, `for`, `assert`, `call`, `call_packed`, `launch`, `return` or `}`"
                    .to_owned(),
            ));
        };
        spans.span = start.to(Span::new(self.prev_end(), self.prev_end()));
        map.insert(path.clone(), spans);
        Ok(stmt)
    }

    fn end_stmt(&mut self) -> PResult<()> {
        if self.is_punct(";") {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(vec!["`;`".to_owned()]))
        }
    }

    fn if_stmt(
        &mut self,
        path: &StmtPath,
        spans: &mut StmtSpans,
        map: &mut std::collections::HashMap<StmtPath, StmtSpans>,
    ) -> PResult<Stmt> {
        self.expect_kw("if")?;
        let (cond, s) = self.expr()?;
        spans.exprs.push(s);
        let (then_body, _) = self.block(path, Block::Then, map)?;
        let else_body = if self.eat_kw("else") {
            if self.is_kw("if") {
                let nested_path = path.child(Block::Else, 0);
                let nested = self.stmt(&nested_path, map)?;
                vec![nested]
            } else {
                self.block(path, Block::Else, map)?.0
            }
        } else {
            vec![]
        };
        Ok(Stmt::If {
            cond,
            then_body,
            else_body,
        })
    }

    fn args(&mut self) -> PResult<(Vec<Expr>, Vec<ExprSpans>)> {
        self.expect_punct("(")?;
        let items = self.list(")", |p| p.expr())?;
        Ok(items.into_iter().unzip())
    }

    fn call_extern(&mut self, dest: Option<String>, spans: &mut StmtSpans) -> PResult<Stmt> {
        self.expect_kw("call")?;
        let (func, fs) = self.name("the extern function's name")?;
        if dest.is_none() {
            spans.name = Some(fs);
        }
        let (args, s) = self.args()?;
        spans.exprs = s;
        Ok(Stmt::CallExtern { dest, func, args })
    }

    fn call_packed(&mut self, dest: Option<String>, spans: &mut StmtSpans) -> PResult<Stmt> {
        self.expect_kw("call_packed")?;
        let start = self.span();
        let kind = ["global", "import", "direct"]
            .iter()
            .find(|k| self.is_kw(k) && matches!(self.peek_at(1), Tok::Str(_)))
            .copied();
        let callee = match kind {
            Some(k) => {
                self.bump();
                let (s, _) = self.string("a function name")?;
                match k {
                    "global" => Callee::Global(s),
                    "import" => Callee::Import(s),
                    _ => Callee::Direct(s),
                }
            }
            None => {
                if !matches!(self.peek(), Tok::Ident { .. }) {
                    return Err(self.unexpected(vec![
                        "`global \"name\"`".into(),
                        "`import \"name\"`".into(),
                        "`direct \"symbol\"`".into(),
                        "a function parameter".into(),
                    ]));
                }
                Callee::Param(self.name("a function parameter")?.0)
            }
        };
        if dest.is_none() {
            spans.name = Some(start.to(Span::new(self.prev_end(), self.prev_end())));
        }
        let (args, s) = self.args()?;
        spans.exprs = s;
        Ok(Stmt::CallPacked { dest, callee, args })
    }

    // ---- expressions ---------------------------------------------------------------------

    fn expr(&mut self) -> PResult<(Expr, ExprSpans)> {
        self.nested(|p| p.binary(1))
    }

    /// Runs `f` one nesting level deeper, failing past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.nested_cost(1, f)
    }

    /// Like [`Self::nested`] for constructs whose parsing uses `cost` times more stack.
    fn nested_cost<T>(
        &mut self,
        cost: usize,
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> PResult<T> {
        if self.depth + cost > MAX_DEPTH {
            return Err(ParseError::new(
                self.span(),
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
                vec![],
            ));
        }
        self.depth += cost;
        let result = f(self);
        self.depth -= cost;
        result
    }

    fn peek_binop(&self) -> Option<BinOp> {
        let Tok::Punct(p) = self.peek() else {
            return None;
        };
        Some(match *p {
            "||" => BinOp::Or,
            "&&" => BinOp::And,
            "==" => BinOp::Eq,
            "!=" => BinOp::Ne,
            "<" => BinOp::Lt,
            "<=" => BinOp::Le,
            ">" => BinOp::Gt,
            ">=" => BinOp::Ge,
            "|" => BinOp::BitOr,
            "^" => BinOp::BitXor,
            "&" => BinOp::BitAnd,
            "<<" => BinOp::Shl,
            ">>" => BinOp::Shr,
            "+" => BinOp::Add,
            "-" => BinOp::Sub,
            "*" => BinOp::Mul,
            "/" => BinOp::Div,
            "%" => BinOp::Rem,
            _ => return None,
        })
    }

    fn binary(&mut self, min_prec: u8) -> PResult<(Expr, ExprSpans)> {
        let (mut lhs, mut lspans) = self.unary()?;
        let mut compared = false;
        while let Some(op) = self.peek_binop() {
            let p = binop_prec(op);
            if p < min_prec {
                break;
            }
            if p == 3 && compared {
                return Err(ParseError::new(
                    self.span(),
                    "comparison operators cannot be chained".to_owned(),
                    vec![],
                )
                .with_note("use parentheses or `&&`".to_owned()));
            }
            compared = p == 3;
            self.bump();
            let (rhs, rspans) = self.binary(p + 1)?;
            let span = lspans.span.to(rspans.span);
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
            lspans = ExprSpans {
                span,
                children: vec![lspans, rspans],
            };
        }
        Ok((lhs, lspans))
    }

    fn unary(&mut self) -> PResult<(Expr, ExprSpans)> {
        let start = self.span();
        let op = match self.peek() {
            Tok::Punct("-") => UnOp::Neg,
            Tok::Punct("!") => UnOp::Not,
            Tok::Punct("~") => UnOp::BitNot,
            _ => return self.primary(),
        };
        if op == UnOp::Neg && self.at_number(1) {
            self.bump();
            let e = self.number(true, start)?;
            let span = start.to(Span::new(self.prev_end(), self.prev_end()));
            return Ok((
                e,
                ExprSpans {
                    span,
                    children: vec![],
                },
            ));
        }
        self.bump();
        let (arg, s) = self.nested(Self::unary)?;
        let span = start.to(s.span);
        Ok((
            Expr::Unary {
                op,
                arg: Box::new(arg),
            },
            ExprSpans {
                span,
                children: vec![s],
            },
        ))
    }

    fn primary(&mut self) -> PResult<(Expr, ExprSpans)> {
        let start = self.span();
        let leaf = |e: Expr, end: usize| {
            (
                e,
                ExprSpans {
                    span: Span::new(start.start, end),
                    children: vec![],
                },
            )
        };
        if self.at_number(0) {
            let e = self.number(false, start)?;
            return Ok(leaf(e, self.prev_end()));
        }
        match self.peek().clone() {
            Tok::Str(s) => {
                self.bump();
                Ok(leaf(Expr::Str(s), self.prev_end()))
            }
            Tok::Punct("(") => {
                self.bump();
                let (e, mut s) = self.expr()?;
                let close = self.expect_punct(")")?;
                s.span = start.to(close);
                Ok((e, s))
            }
            Tok::Ident { text, quoted } => {
                if !quoted && (text == "true" || text == "false") {
                    self.bump();
                    return Ok(leaf(Expr::Bool(text == "true"), self.prev_end()));
                }
                if !quoted && (text == "cast" || text == "load") && self.is_punct_at(1, "<") {
                    self.bump();
                    self.bump();
                    let ty = self.scalar_type()?;
                    self.expect_punct(">")?;
                    self.expect_punct("(")?;
                    let (arg, s) = self.expr()?;
                    let close = self.expect_punct(")")?;
                    let e = if text == "cast" {
                        Expr::Cast {
                            ty,
                            arg: Box::new(arg),
                        }
                    } else {
                        Expr::Load {
                            ty,
                            ptr: Box::new(arg),
                        }
                    };
                    return Ok((
                        e,
                        ExprSpans {
                            span: start.to(close),
                            children: vec![s],
                        },
                    ));
                }
                if !quoted && self.is_punct_at(1, "(") {
                    return self.builtin(&text, start);
                }
                if self.is_punct_at(1, ".") {
                    return self.field();
                }
                let (n, span) = self.name("an expression")?;
                Ok((
                    Expr::Var(n),
                    ExprSpans {
                        span,
                        children: vec![],
                    },
                ))
            }
            _ => Err(self.unexpected(vec!["an expression".to_owned()])),
        }
    }

    fn builtin(&mut self, name: &str, start: Span) -> PResult<(Expr, ExprSpans)> {
        if matches!(name, "f64bits" | "f32bits" | "f64bits_f32") {
            self.bump();
            let (e, span) = self.bits_literal(name, start)?;
            return Ok((
                e,
                ExprSpans {
                    span,
                    children: vec![],
                },
            ));
        }
        if name == "is_none" {
            self.bump();
            self.bump();
            let (n, _) = self.name("a parameter name")?;
            let close = self.expect_punct(")")?;
            return Ok((
                Expr::IsNone(n),
                ExprSpans {
                    span: start.to(close),
                    children: vec![],
                },
            ));
        }
        let binop = match name {
            "min" => Some(BinOp::Min),
            "max" => Some(BinOp::Max),
            "ceil_div" => Some(BinOp::CeilDiv),
            "floordiv" => Some(BinOp::FloorDiv),
            "floormod" => Some(BinOp::FloorMod),
            _ => None,
        };
        let arity = match name {
            "select" => 3,
            "offset" => 2,
            _ if binop.is_some() => 2,
            _ => {
                return Err(ParseError::new(start, format!("unknown function `{name}`"), ticks(BUILTINS)).with_note(
                    "only these built-in functions exist in expressions; extern functions are called with `call`"
                        .to_owned(),
                ));
            }
        };
        self.bump();
        let args_start = self.span();
        let (mut args, spans) = self.args()?;
        let close = Span::new(self.prev_end(), self.prev_end());
        if args.len() != arity {
            return Err(ParseError::new(
                args_start.to(close),
                format!("`{name}` takes {arity} arguments, found {}", args.len()),
                vec![],
            ));
        }
        let span = start.to(close);
        let mut next = || Box::new(args.remove(0));
        let e = match (name, binop) {
            (_, Some(op)) => Expr::Binary {
                op,
                lhs: next(),
                rhs: next(),
            },
            ("select", _) => Expr::Select {
                cond: next(),
                then_value: next(),
                else_value: next(),
            },
            _ => Expr::PtrOffset {
                ptr: next(),
                offset: next(),
            },
        };
        Ok((
            e,
            ExprSpans {
                span,
                children: spans,
            },
        ))
    }

    fn field(&mut self) -> PResult<(Expr, ExprSpans)> {
        let (tensor, start) = self.name("a tensor parameter")?;
        self.expect_punct(".")?;
        let fspan = self.span();
        let (f, _) = self.word(FIELDS)?;
        let index = |p: &mut Self| -> PResult<usize> {
            p.expect_punct("[")?;
            let (v, s) = p.u64_literal("a dimension index")?;
            p.expect_punct("]")?;
            usize::try_from(v).map_err(|_| ParseError::new(s, "index too large".to_owned(), vec![]))
        };
        let field = match f.as_str() {
            "data" => TensorField::Data,
            "shape" => TensorField::Shape(index(self)?),
            "strides" => TensorField::Stride(index(self)?),
            "ndim" => TensorField::NDim,
            "dtype" => TensorField::DType,
            "device" => TensorField::Device,
            "device_type" => TensorField::DeviceType,
            "device_id" => TensorField::DeviceId,
            "byte_offset" => TensorField::ByteOffset,
            _ => {
                return Err(ParseError::new(
                    fspan,
                    format!("unknown tensor field `{f}`"),
                    ticks(FIELDS),
                ));
            }
        };
        let span = start.to(Span::new(self.prev_end(), self.prev_end()));
        Ok((
            Expr::Field { tensor, field },
            ExprSpans {
                span,
                children: vec![],
            },
        ))
    }
}

fn signed_value(negative: bool, magnitude: u64) -> Option<i64> {
    if negative {
        if magnitude <= 1 << 63 {
            Some((magnitude as i64).wrapping_neg())
        } else {
            None
        }
    } else {
        i64::try_from(magnitude).ok()
    }
}

fn out_of_i64(span: Span) -> ParseError {
    ParseError::new(
        span,
        "integer literal out of range for a signed 64-bit value".to_owned(),
        vec![],
    )
}
