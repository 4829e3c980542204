//! LLVM IR dumps annotated with the host-IR item each part came from.
//!
//! The translator attaches `!safecall.source` metadata (a node of strings) to the first
//! instruction of each item; this module turns LLVM's own printout of the module into the
//! annotated dump: every such attachment becomes `; <item>` comment lines before its
//! instruction, the source nodes are dropped, and the remaining metadata is renumbered.
//!
//! ```text
//! block0:
//!   ; check: add_one takes 2 argument(s)
//!   %v5.c = icmp ne i32 %v2, 2
//! ```

use std::collections::HashMap;
use std::fmt::Write;

use super::translate::SOURCE_KIND;

/// The annotated form of `printed`, a module printed by LLVM.
pub(crate) fn render(printed: &str) -> String {
    let attachment = format!(", !{SOURCE_KIND} !");
    let mut source_ids: Vec<u32> = Vec::new();
    for line in printed.lines() {
        if let Some((_, id)) = split_attachment(line, &attachment) {
            source_ids.push(id);
        }
    }
    let mut sources: HashMap<u32, Vec<String>> = HashMap::new();
    let mut kept: Vec<u32> = Vec::new();
    for line in printed.lines() {
        if let Some((id, body)) = metadata_definition(line) {
            if source_ids.contains(&id) {
                sources.insert(id, metadata_strings(body));
            } else {
                kept.push(id);
            }
        }
    }
    let renumber: HashMap<u32, u32> = kept
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new as u32))
        .collect();

    let mut out = String::with_capacity(printed.len());
    for line in printed.lines() {
        if metadata_definition(line).is_some_and(|(id, _)| sources.contains_key(&id)) {
            continue;
        }
        let stripped = split_attachment(line, &attachment).map(|(rest, id)| {
            let indent = &rest[..rest.len() - rest.trim_start().len()];
            for text in sources.get(&id).into_iter().flatten() {
                let _ = writeln!(out, "{indent}; {}", comment_text(text));
            }
            rest
        });
        out.push_str(&renumber_metadata(
            stripped.as_deref().unwrap_or(line),
            &renumber,
        ));
        out.push('\n');
    }
    out
}

/// `line` without its source attachment, and the attached node's id.
fn split_attachment(line: &str, attachment: &str) -> Option<(String, u32)> {
    let at = line.find(attachment)?;
    let after = &line[at + attachment.len()..];
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    let id = after[..digits].parse().ok()?;
    Some((format!("{}{}", &line[..at], &after[digits..]), id))
}

/// A comment-safe rendering of a source description (control characters escaped).
fn comment_text(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `!N = <body>` lines: the id and the body.
fn metadata_definition(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix('!')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let body = rest[digits..].strip_prefix(" = ")?;
    Some((rest[..digits].parse().ok()?, body))
}

/// The strings of a metadata node printed as `!{!"a", !"b"}` (LLVM escapes `"` and `\` as
/// `\22` and `\5C`, and non-printable bytes likewise).
fn metadata_strings(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("!\"") {
        let tail = &rest[start + 2..];
        let end = tail.find('"').unwrap_or(tail.len());
        out.push(unescape(&tail[..end]));
        rest = &tail[(end + 1).min(tail.len())..];
    }
    out
}

fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 <= bytes.len()
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Rewrites `!N` metadata references outside quoted strings through `map`.
fn renumber_metadata(line: &str, map: &HashMap<u32, u32>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_string = false;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        out.push(c);
        match c {
            '"' => in_string = !in_string,
            '!' if !in_string => {
                let rest = &line[i + 1..];
                let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 {
                    let id: u32 = rest[..digits].parse().unwrap_or(u32::MAX);
                    match map.get(&id) {
                        Some(new) => out.push_str(&new.to_string()),
                        None => out.push_str(&rest[..digits]),
                    }
                    for _ in 0..digits {
                        chars.next();
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachments_become_comments_and_metadata_is_renumbered() {
        let printed = "define void @f() {\n\
                       block0:\n  \
                       %v1 = add i32 1, 2, !safecall.source !0\n  \
                       br i1 true, label %a, label %b, !prof !1, !safecall.source !2\n\
                       }\n\
                       !0 = !{!\"check: a \\22quoted\\22 \\5C item\"}\n\
                       !1 = !{!\"branch_weights\", i32 1, i32 2000}\n\
                       !2 = !{!\"first\", !\"second\"}\n";
        let expected = "define void @f() {\n\
                        block0:\n  \
                        ; check: a \"quoted\" \\ item\n  \
                        %v1 = add i32 1, 2\n  \
                        ; first\n  \
                        ; second\n  \
                        br i1 true, label %a, label %b, !prof !0\n\
                        }\n\
                        !0 = !{!\"branch_weights\", i32 1, i32 2000}\n";
        assert_eq!(render(printed), expected);
    }
}
