//! [`ParseError`]: a syntax error with its span, what was expected and a note, rendered with
//! `line:column` and a caret excerpt.

use std::fmt;

use super::super::diag;
use super::super::source_map::Span;

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

pub(super) fn one_of(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("one of {}, or {last}", init.join(", ")),
    }
}
