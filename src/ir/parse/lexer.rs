//! Tokens of the text format. A token borrows its text from the source where it can (names,
//! strings without escapes, doc comments, float literals): lexing allocates only for literals
//! with escapes and for byte strings.

use std::borrow::Cow;

use super::error::ParseError;
use crate::ir::source_map::Span;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok<'a> {
    /// A name; `quoted` when written in backticks (then never a keyword).
    Ident { text: Cow<'a, str>, quoted: bool },
    /// An integer literal: magnitude and optional suffix (`i32`, `u8`, `f32`, ...).
    Int {
        value: u64,
        suffix: Option<&'static str>,
    },
    /// A float literal: its text (without suffix) and optional suffix.
    Float {
        text: &'a str,
        suffix: Option<&'static str>,
    },
    /// A string literal.
    Str(Cow<'a, str>),
    /// A byte string literal.
    Bytes(Vec<u8>),
    /// A `///` doc comment line (text after `///` and one optional space).
    Doc(&'a str),
    /// Punctuation.
    Punct(&'static str),
    /// End of input.
    Eof,
}

impl Tok<'_> {
    /// How the token is described in "found ..." messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident {
                text,
                quoted: false,
            } => format!("`{text}`"),
            Tok::Ident { text, quoted: true } => format!("quoted name `{text}`"),
            Tok::Int { .. } => "an integer literal".to_owned(),
            Tok::Float { .. } => "a float literal".to_owned(),
            Tok::Str(_) => "a string literal".to_owned(),
            Tok::Bytes(_) => "a byte string literal".to_owned(),
            Tok::Doc(_) => "a doc comment".to_owned(),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Eof => "end of input".to_owned(),
        }
    }
}

/// A token and where it is.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub span: Span,
}

/// The punctuation at the start of `rest`, longest first: two-character forms, then one.
fn punct(rest: &[u8]) -> Option<&'static str> {
    let two = match rest {
        [b'.', b'.', ..] => Some(".."),
        [b'-', b'>', ..] => Some("->"),
        [b'=', b'=', ..] => Some("=="),
        [b'!', b'=', ..] => Some("!="),
        [b'<', b'=', ..] => Some("<="),
        [b'>', b'=', ..] => Some(">="),
        [b'&', b'&', ..] => Some("&&"),
        [b'|', b'|', ..] => Some("||"),
        [b'<', b'<', ..] => Some("<<"),
        [b'>', b'>', ..] => Some(">>"),
        _ => None,
    };
    two.or(match rest.first()? {
        b'(' => Some("("),
        b')' => Some(")"),
        b'[' => Some("["),
        b']' => Some("]"),
        b'{' => Some("{"),
        b'}' => Some("}"),
        b',' => Some(","),
        b';' => Some(";"),
        b':' => Some(":"),
        b'.' => Some("."),
        b'=' => Some("="),
        b'<' => Some("<"),
        b'>' => Some(">"),
        b'+' => Some("+"),
        b'-' => Some("-"),
        b'*' => Some("*"),
        b'/' => Some("/"),
        b'%' => Some("%"),
        b'&' => Some("&"),
        b'|' => Some("|"),
        b'^' => Some("^"),
        b'~' => Some("~"),
        b'!' => Some("!"),
        _ => None,
    })
}

const SUFFIXES: &[&str] = &[
    "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
];

/// Whether a literal suffix names a float type (`f16`, `bf16`, `f32`, `f64`).
fn is_float_suffix(suffix: Option<&str>) -> bool {
    suffix.is_some_and(|s| crate::ir::model::FloatType::from_keyword(s).is_some())
}

struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

/// The most tokens [`lex`] reserves room for up front (4 MiB of tokens: a generated launcher's
/// text of a quarter megabyte); longer texts grow the vector as needed.
const MAX_RESERVED_TOKENS: usize = 1 << 16;

/// Splits `text` into tokens (the last one is [`Tok::Eof`]).
pub(crate) fn lex(text: &str) -> Result<Vec<Token<'_>>, ParseError> {
    let mut lx = Lexer { text, pos: 0 };
    // About one token per four bytes of generated IR: sized once instead of regrown (and
    // copied) a dozen times. Capped: a long literal (a device binary's image) is one token,
    // and reserving 64 bytes of tokens per four bytes of it would ask for 16 times the text.
    let mut out = Vec::with_capacity((text.len() / 4 + 1).min(MAX_RESERVED_TOKENS));
    loop {
        lx.skip_trivia();
        let start = lx.pos;
        let Some(c) = lx.peek() else {
            out.push(Token {
                tok: Tok::Eof,
                span: Span::new(start, start),
            });
            return Ok(out);
        };
        let tok = if lx.rest().starts_with("///") {
            lx.pos += 3;
            let line_end = lx.rest().find('\n').map_or(lx.text.len(), |i| lx.pos + i);
            let mut doc = &lx.text[lx.pos..line_end];
            if let Some(d) = doc.strip_prefix(' ') {
                doc = d;
            }
            lx.pos = line_end;
            Tok::Doc(doc)
        } else if c.is_ascii_alphabetic() || c == '_' {
            if c == 'b' && lx.rest()[1..].starts_with('"') {
                lx.pos += 1;
                Tok::Bytes(lx.bytes_literal(start)?)
            } else {
                Tok::Ident {
                    text: Cow::Borrowed(lx.ident()),
                    quoted: false,
                }
            }
        } else if c.is_ascii_digit() {
            lx.number(start)?
        } else if c == '"' {
            Tok::Str(lx.quoted('"', start)?)
        } else if c == '`' {
            Tok::Ident {
                text: lx.quoted('`', start)?,
                quoted: true,
            }
        } else if let Some(p) = punct(lx.rest().as_bytes()) {
            lx.pos += p.len();
            Tok::Punct(p)
        } else {
            return Err(ParseError::new(
                Span::new(start, start + c.len_utf8()),
                format!("unexpected character `{}`", c.escape_default()),
                vec![],
            ));
        };
        out.push(Token {
            tok,
            span: Span::new(start, lx.pos),
        });
    }
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        match self.text.as_bytes().get(self.pos) {
            Some(&b) if b.is_ascii() => Some(char::from(b)),
            _ => self.rest().chars().next(),
        }
    }

    /// Skips whitespace (Unicode's, as `str::trim_start` does; ASCII by bytes) and `//`
    /// comments that are not `///` doc comments.
    fn skip_trivia(&mut self) {
        let bytes = self.text.as_bytes();
        loop {
            while let Some(&b) = bytes.get(self.pos) {
                if b.is_ascii_whitespace() || b == 0x0b {
                    self.pos += 1;
                } else if b.is_ascii() {
                    break;
                } else {
                    let rest = self.rest();
                    let trimmed = rest.trim_start();
                    if trimmed.len() == rest.len() {
                        break;
                    }
                    self.pos += rest.len() - trimmed.len();
                }
            }
            let rest = self.rest();
            if rest.starts_with("//") && !rest.starts_with("///") {
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else {
                return;
            }
        }
    }

    fn ident(&mut self) -> &'a str {
        let rest = self.rest();
        // By bytes: a non-ASCII character's first byte ends the name, as the character would.
        let len = rest
            .bytes()
            .position(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    fn digits(&mut self, radix: u32) -> &'a str {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !c.is_digit(radix))
            .unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    fn suffix(&mut self, start: usize) -> Result<Option<&'static str>, ParseError> {
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let s = self.ident();
                if let Some(known) = SUFFIXES.iter().find(|k| **k == s) {
                    Ok(Some(known))
                } else {
                    Err(ParseError::new(
                        Span::new(start, self.pos),
                        format!("unknown literal suffix `{s}`"),
                        SUFFIXES.iter().map(|s| format!("`{s}`")).collect(),
                    ))
                }
            }
            _ => Ok(None),
        }
    }

    fn number(&mut self, start: usize) -> Result<Tok<'a>, ParseError> {
        let rest = self.rest();
        if rest.starts_with("0x") || rest.starts_with("0X") {
            self.pos += 2;
            let digits = self.digits(16);
            if digits.is_empty() {
                return Err(ParseError::new(
                    Span::new(start, self.pos),
                    "hexadecimal literal has no digits".to_owned(),
                    vec![],
                ));
            }
            let value = u64::from_str_radix(digits, 16).map_err(|_| too_large(start, self.pos))?;
            let suffix = self.suffix(start)?;
            if is_float_suffix(suffix) {
                return Err(ParseError::new(
                    Span::new(start, self.pos),
                    "a hexadecimal literal cannot have a float suffix".to_owned(),
                    vec![],
                ));
            }
            return Ok(Tok::Int { value, suffix });
        }
        self.digits(10);
        let mut is_float = false;
        let r = self.rest();
        if r.starts_with('.') && r[1..].starts_with(|c: char| c.is_ascii_digit()) {
            self.pos += 1;
            self.digits(10);
            is_float = true;
        }
        let r = self.rest();
        if r.starts_with(['e', 'E']) {
            let after = &r[1..];
            let after = after.strip_prefix(['+', '-']).unwrap_or(after);
            if after.starts_with(|c: char| c.is_ascii_digit()) {
                self.pos += r.len() - after.len();
                self.digits(10);
                is_float = true;
            }
        }
        let text = &self.text[start..self.pos];
        let suffix = self.suffix(start)?;
        if is_float {
            if suffix.is_some() && !is_float_suffix(suffix) {
                return Err(ParseError::new(
                    Span::new(start, self.pos),
                    format!(
                        "a float literal cannot have the integer suffix `{}`",
                        suffix.unwrap_or_default()
                    ),
                    crate::ir::model::FloatType::ALL
                        .iter()
                        .map(|t| format!("`{}`", t.keyword()))
                        .collect(),
                ));
            }
            return Ok(Tok::Float { text, suffix });
        }
        if is_float_suffix(suffix) {
            return Ok(Tok::Float { text, suffix });
        }
        let value = text
            .parse::<u64>()
            .map_err(|_| too_large(start, self.pos))?;
        Ok(Tok::Int { value, suffix })
    }

    fn escape(&mut self, start: usize) -> Result<u32, ParseError> {
        // Called after the backslash.
        let esc_start = self.pos - 1;
        let Some(c) = self.peek() else {
            return Err(unterminated(self.text, start, self.pos));
        };
        self.pos += c.len_utf8();
        let bad = |lx: &Self, what: &str| {
            ParseError::new(
                Span::new(esc_start, lx.pos),
                format!("invalid escape: {what}"),
                vec![],
            )
        };
        Ok(match c {
            'n' => 0x0a,
            't' => 0x09,
            'r' => 0x0d,
            '0' => 0,
            '\\' | '"' | '`' | '\'' => c as u32,
            'x' => {
                let hex = self.rest().get(..2).unwrap_or("");
                let v = u32::from_str_radix(hex, 16)
                    .map_err(|_| bad(self, "`\\x` needs two hex digits"))?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(bad(self, "`\\x` needs two hex digits"));
                }
                self.pos += 2;
                v
            }
            'u' => {
                let rest = self.rest();
                let close = rest.find('}');
                let (Some(inner), Some(close)) = (rest.strip_prefix('{'), close) else {
                    return Err(bad(self, "expected `\\u{XXXX}`"));
                };
                let hex = &inner[..close - 1];
                let v =
                    u32::from_str_radix(hex, 16).map_err(|_| bad(self, "expected `\\u{XXXX}`"))?;
                self.pos += close + 1;
                v
            }
            other => {
                return Err(bad(
                    self,
                    &format!("unknown escape `\\{}`", other.escape_default()),
                ));
            }
        })
    }

    /// A `"..."` or `` `...` `` literal starting at the current position: borrowed from the
    /// text unless it has escapes.
    fn quoted(&mut self, delim: char, start: usize) -> Result<Cow<'a, str>, ParseError> {
        self.pos += 1;
        let text = self.text;
        let first = self.pos;
        let mut out = String::new();
        debug_assert!(delim.is_ascii());
        let stop = [delim as u8, b'\\'];
        loop {
            // The run of plain characters up to the next delimiter or escape, copied at once
            // (both are ASCII, so the run ends on a character boundary).
            let rest = self.rest();
            let run = rest
                .bytes()
                .position(|b| stop.contains(&b))
                .unwrap_or(rest.len());
            self.pos += run;
            let Some(c) = self.peek() else {
                return Err(unterminated(self.text, start, self.pos));
            };
            if c == delim && self.pos - run == first {
                // The first run ends the literal: no escape, so it is the text between the
                // quotes as written.
                let inner = &text[first..self.pos];
                self.pos += 1;
                return Ok(Cow::Borrowed(inner));
            }
            out.push_str(&rest[..run]);
            self.pos += c.len_utf8();
            if c == delim {
                return Ok(Cow::Owned(out));
            }
            if c == '\\' {
                let esc_start = self.pos - 1;
                let v = self.escape(start)?;
                let ch = char::from_u32(v).ok_or_else(|| {
                    ParseError::new(
                        Span::new(esc_start, self.pos),
                        format!("invalid escape: {v:#x} is not a character"),
                        vec![],
                    )
                })?;
                out.push(ch);
            } else {
                out.push(c);
            }
        }
    }

    /// A `b"..."` literal; the `b` is consumed.
    fn bytes_literal(&mut self, start: usize) -> Result<Vec<u8>, ParseError> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(unterminated(self.text, start, self.pos));
            };
            let c_start = self.pos;
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let v = self.escape(start)?;
                    let b = u8::try_from(v).map_err(|_| {
                        ParseError::new(
                            Span::new(c_start, self.pos),
                            "invalid escape in a byte string: only `\\xNN` and simple escapes"
                                .to_owned(),
                            vec![],
                        )
                    })?;
                    out.push(b);
                }
                c if c.is_ascii() => out.push(c as u8),
                _ => {
                    return Err(ParseError::new(
                        Span::new(c_start, self.pos),
                        "non-ASCII character in a byte string; write it as `\\xNN` bytes"
                            .to_owned(),
                        vec![],
                    ));
                }
            }
        }
    }
}

fn too_large(start: usize, end: usize) -> ParseError {
    ParseError::new(
        Span::new(start, end),
        "integer literal does not fit in 64 bits".to_owned(),
        vec![],
    )
}

fn unterminated(text: &str, start: usize, end: usize) -> ParseError {
    let what = match text[start..].chars().next() {
        Some('`') => "quoted name",
        Some('b') => "byte string",
        _ => "string literal",
    };
    ParseError::new(
        Span::new(start, end),
        format!("unterminated {what}"),
        vec![],
    )
    .with_note("a closing quote is missing".to_owned())
}
