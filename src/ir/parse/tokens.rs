//! Token helpers of the parser: peeking, eating and expecting tokens, names, lists.

use super::super::source_map::*;
use super::super::syntax;
use super::lexer::{Tok, Token};
use super::{PResult, ParseError, Parser, one_of, ticks};

impl<'a> Parser<'a> {
    pub(super) fn peek(&self) -> &Tok<'a> {
        &self.toks[self.pos].tok
    }

    pub(super) fn peek_at(&self, n: usize) -> &Tok<'a> {
        &self.toks[(self.pos + n).min(self.toks.len() - 1)].tok
    }

    pub(super) fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    pub(super) fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.toks[self.pos - 1].span.end
        }
    }

    /// Moves past the current token (never past the end) and returns its span.
    pub(super) fn bump(&mut self) -> Span {
        let span = self.toks[self.pos].span;
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        span
    }

    /// [`Parser::bump`], returning the token itself (a copy: the parser may come back to it).
    pub(super) fn bump_token(&mut self) -> Token<'a> {
        let t = self.toks[self.pos].clone();
        self.bump();
        t
    }

    pub(super) fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Ident { text, quoted: false } if text == kw)
    }

    pub(super) fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    pub(super) fn is_punct_at(&self, n: usize, p: &str) -> bool {
        matches!(self.peek_at(n), Tok::Punct(q) if *q == p)
    }

    pub(super) fn eat_kw(&mut self, kw: &str) -> bool {
        let hit = self.is_kw(kw);
        if hit {
            self.bump();
        }
        hit
    }

    pub(super) fn eat_punct(&mut self, p: &str) -> bool {
        let hit = self.is_punct(p);
        if hit {
            self.bump();
        }
        hit
    }

    pub(super) fn unexpected(&self, expected: Vec<String>) -> ParseError {
        let found = self.peek().describe();
        ParseError::new(
            self.span(),
            format!("expected {}, found {found}", one_of(&expected)),
            expected,
        )
    }

    pub(super) fn expect_punct(&mut self, p: &str) -> PResult<Span> {
        if self.is_punct(p) {
            Ok(self.bump())
        } else {
            Err(self.unexpected(vec![format!("`{p}`")]))
        }
    }

    pub(super) fn expect_kw(&mut self, kw: &str) -> PResult<Span> {
        if self.is_kw(kw) {
            Ok(self.bump())
        } else {
            Err(self.unexpected(vec![format!("`{kw}`")]))
        }
    }

    pub(super) fn expect_eof(&mut self) -> PResult<()> {
        if matches!(self.peek(), Tok::Eof) {
            Ok(())
        } else {
            Err(self.unexpected(vec!["end of input".to_owned()]))
        }
    }

    /// A name: an identifier that is not a reserved word, or a quoted name.
    pub(super) fn name(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident { text, quoted } => {
                if !quoted && syntax::is_reserved(&text) {
                    return Err(ParseError::new(
                        self.span(),
                        format!("expected {what}, found the reserved word `{text}`"),
                        vec![what.to_owned()],
                    )
                    .with_note(format!("write `` `{text}` `` to use it as a name")));
                }
                let span = self.bump();
                Ok((text.into_owned(), span))
            }
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    /// An unquoted identifier (type names, keys, field names).
    pub(super) fn word(&mut self, expected: &[&str]) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident {
                text,
                quoted: false,
            } => {
                let span = self.bump();
                Ok((text.into_owned(), span))
            }
            _ => Err(self.unexpected(ticks(expected))),
        }
    }

    pub(super) fn string(&mut self, what: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Str(s) => Ok((s.into_owned(), self.bump())),
            _ => Err(self.unexpected(vec![what.to_owned()])),
        }
    }

    pub(super) fn line_col(&self, span: Span) -> String {
        let (l, c) = span.line_col(self.text);
        format!("{l}:{c}")
    }

    /// A comma-separated list up to `close`, with an optional trailing comma.
    pub(super) fn list<T>(
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
}
