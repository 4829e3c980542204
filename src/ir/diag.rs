//! Rendering of diagnostics: `file:line:column`, the source line and a caret under the span.
//!
//! ```text
//! error: expected `;`, found `}`
//!  --> add_one.scir:7:21
//!   |
//! 7 |     let y = n + 1i32
//!   |                     ^
//!   = note: ...
//! ```

use std::fmt::Write as _;

use super::source_map::Span;

/// Renders a diagnostic. `at` is `(file, text, span)` when the source is known; `notes` are
/// added as `= note:` lines.
pub fn render(
    severity: &str,
    message: &str,
    at: Option<(&str, &str, Span)>,
    notes: &[String],
) -> String {
    let mut out = format!("{severity}: {message}\n");
    let mut gutter = 1;
    if let Some((file, text, span)) = at {
        let start = span.start.min(text.len());
        let (line, col) = span.line_col(text);
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let source_line = &text[line_start..line_end];
        let end = span.end.clamp(start, line_end);
        let width = text[start..end].chars().count().max(1);
        let pad: String = text[line_start..start]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let number = line.to_string();
        gutter = number.len();
        let blank = " ".repeat(gutter);
        let _ = writeln!(out, "{blank}--> {file}:{line}:{col}");
        let _ = writeln!(out, "{blank} |");
        let _ = writeln!(out, "{number} | {source_line}");
        let _ = writeln!(out, "{blank} | {pad}{}", "^".repeat(width));
    }
    for note in notes {
        let _ = writeln!(out, "{} = note: {note}", " ".repeat(gutter));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_under_the_span() {
        let text = "module m;\nfn f() {\n    let x = y;\n}\n";
        let start = text.find('y').unwrap();
        let r = render(
            "error",
            "unknown `y`",
            Some(("t.scir", text, Span::new(start, start + 1))),
            &[],
        );
        assert_eq!(
            r,
            "error: unknown `y`\n --> t.scir:3:13\n  |\n3 |     let x = y;\n  |             ^\n"
        );
    }

    #[test]
    fn end_of_input_gets_one_caret() {
        let text = "module m;\nfn f() {";
        let r = render(
            "error",
            "x",
            Some(("t", text, Span::new(text.len(), text.len()))),
            &["n".into()],
        );
        assert!(
            r.contains("2 | fn f() {\n  |         ^\n  = note: n\n"),
            "{r}"
        );
    }
}
