//! Kernel parameters from PTX text: each `.entry NAME(.param ..., ...)` declaration.
//!
//! A parameter is `.param [.align A] .TYPE [.ptr [.SPACE] [.align P]] name[[N]]` (PTX ISA,
//! "Kernel Function Parameters" and "Kernel Parameter Attribute: .ptr"): its size is the
//! type's size (times `N` for an array), its alignment `A` or else the type's size; the
//! `.align` after `.ptr` is the pointee's and does not change the parameter. Comments, `.file`
//! strings and function bodies are skipped; `.visible`, `.weak` and `.extern` may come before
//! `.entry`, and an entry without a parameter list takes none.

pub use super::ptx_type::{PtxClass, PtxType};
use super::{KernelParam, KernelTables, ParamDecl};

/// The parameters of every `.entry` in `text` (a final NUL allowed); an error names the line
/// of a declaration it cannot read.
pub fn read(text: &[u8]) -> Result<KernelTables, String> {
    let text = text.strip_suffix(&[0]).unwrap_or(text);
    let tokens = tokenize(text)?;
    let mut tables = KernelTables::default();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(t) = tokens.get(i) {
        i += 1;
        match t.text {
            b"{" => depth += 1,
            b"}" => depth = depth.saturating_sub(1),
            b".entry" if depth == 0 => {
                let (name, params) = entry(&tokens, &mut i, t.line)?;
                tables.kernels.entry(name).or_insert(params);
            }
            _ => {}
        }
    }
    Ok(tables)
}

/// A token of PTX text: a word (directive, name, number), one punctuation byte, or a string.
struct Token<'a> {
    text: &'a [u8],
    line: usize,
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$' | b'%')
}

fn tokenize(text: &[u8]) -> Result<Vec<Token<'_>>, String> {
    // About one token per four bytes of PTX: one allocation instead of a dozen regrowths,
    // each copying every token so far.
    let mut tokens = Vec::with_capacity(text.len() / 4 + 16);
    let mut line = 1;
    let mut at = 0;
    while let Some(&c) = text.get(at) {
        let start = at;
        at += 1;
        match c {
            b'\n' => line += 1,
            c if c.is_ascii_whitespace() => {}
            b'/' if text.get(at) == Some(&b'/') => {
                while text.get(at).is_some_and(|&c| c != b'\n') {
                    at += 1;
                }
            }
            b'/' if text.get(at) == Some(&b'*') => {
                let opened = line;
                at += 1;
                loop {
                    match text.get(at) {
                        None => return Err(format!("line {opened}: unterminated `/*` comment")),
                        Some(b'*') if text.get(at + 1) == Some(&b'/') => break,
                        Some(b'\n') => line += 1,
                        Some(_) => {}
                    }
                    at += 1;
                }
                at += 2;
            }
            b'"' => {
                while text.get(at).is_some_and(|&c| c != b'"' && c != b'\n') {
                    at += 1;
                }
                at += 1;
                tokens.push(Token {
                    text: &text[start..at.min(text.len())],
                    line,
                });
            }
            c if is_word_byte(c) => {
                while text.get(at).copied().is_some_and(is_word_byte) {
                    at += 1;
                }
                tokens.push(Token {
                    text: &text[start..at],
                    line,
                });
            }
            _ => tokens.push(Token {
                text: &text[start..at],
                line,
            }),
        }
    }
    Ok(tokens)
}

/// Reads the entry after `.entry` (on `line`): its name and parameters.
fn entry(
    tokens: &[Token],
    i: &mut usize,
    line: usize,
) -> Result<(String, Vec<KernelParam>), String> {
    let name = match tokens.get(*i) {
        Some(t) if is_name(t.text) => String::from_utf8_lossy(t.text).into_owned(),
        _ => return Err(format!("line {line}: `.entry` without a kernel name")),
    };
    *i += 1;
    let mut params = Vec::new();
    if tokens.get(*i).is_none_or(|t| t.text != b"(") {
        return Ok((name, params));
    }
    *i += 1;
    if tokens.get(*i).is_some_and(|t| t.text == b")") {
        *i += 1;
        return Ok((name, params));
    }
    loop {
        let at = |i: usize| tokens.get(i).map_or(line, |t: &Token| t.line);
        let where_ = format!("line {}: parameter {} of `{name}`", at(*i), params.len());
        params.push(param(tokens, i).map_err(|e| format!("{where_}: {e}"))?);
        match tokens.get(*i).map(|t| t.text) {
            Some(b",") => *i += 1,
            Some(b")") => {
                *i += 1;
                return Ok((name, params));
            }
            Some(other) => {
                return Err(format!(
                    "{where_}: expected `,` or `)`, found `{}`",
                    String::from_utf8_lossy(other)
                ));
            }
            None => return Err(format!("{where_}: the parameter list is not closed")),
        }
    }
}

/// Whether `word` is a PTX identifier (not a directive, not a number).
fn is_name(word: &[u8]) -> bool {
    let starts_well = match word.first() {
        Some(c) if c.is_ascii_alphabetic() => true,
        Some(b'_' | b'$' | b'%') => word.len() > 1,
        _ => false,
    };
    starts_well && word.iter().all(|&c| is_word_byte(c) && c != b'.')
}

/// One `.param ...` declaration, up to (not including) the `,` or `)` after it.
fn param(tokens: &[Token], i: &mut usize) -> Result<KernelParam, String> {
    let mut next = || {
        let t = tokens.get(*i).map(|t| t.text);
        *i += 1;
        t
    };
    if next() != Some(b".param") {
        return Err("expected `.param`".to_owned());
    }
    let mut ty = None;
    let mut align = None;
    let mut after_ptr = false;
    loop {
        let word = next().ok_or("the declaration is cut off")?;
        match word {
            b".align" => {
                let n = next().and_then(number).ok_or("`.align` without a number")?;
                if !n.is_power_of_two() {
                    return Err(format!("alignment {n} is not a power of two"));
                }
                // After `.ptr`, `.align` is the pointee's alignment.
                if !after_ptr {
                    align = Some(n);
                }
            }
            b".ptr" => after_ptr = true,
            b".global" | b".const" | b".local" | b".shared" if after_ptr => {}
            w if w.first() == Some(&b'.') => {
                let keyword = String::from_utf8_lossy(&w[1..]);
                let t = PtxType::from_keyword(&keyword)
                    .ok_or_else(|| format!("unknown parameter type or attribute `.{keyword}`"))?;
                if ty.replace(t).is_some() {
                    return Err(format!("a second type `.{keyword}`"));
                }
            }
            w if is_name(w) => break,
            w => {
                return Err(format!("unexpected `{}`", String::from_utf8_lossy(w)));
            }
        }
    }
    let ty = ty.ok_or("no type")?;
    let count = if tokens.get(*i).is_some_and(|t| t.text == b"[") {
        *i += 1;
        let n = tokens
            .get(*i)
            .and_then(|t| number(t.text))
            .filter(|&n| n > 0)
            .ok_or("an array parameter needs a positive element count")?;
        *i += 1;
        if tokens.get(*i).is_none_or(|t| t.text != b"]") {
            return Err("expected `]`".to_owned());
        }
        *i += 1;
        Some(n)
    } else {
        None
    };
    let size = ty
        .size()
        .checked_mul(count.unwrap_or(1))
        .ok_or("the array is too large")?;
    Ok(KernelParam {
        size,
        decl: ParamDecl::Ptx {
            ty,
            count,
            align: align.unwrap_or(ty.size()),
        },
    })
}

/// A decimal or `0x` hexadecimal number.
fn number(word: &[u8]) -> Option<u32> {
    let text = std::str::from_utf8(word).ok()?;
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ptx(ty: PtxType, count: Option<u32>, align: u32) -> KernelParam {
        KernelParam {
            size: ty.size() * count.unwrap_or(1),
            decl: ParamDecl::Ptx { ty, count, align },
        }
    }

    #[test]
    fn reads_types_sizes_and_alignment() {
        let text = b"// header\n.version 8.0\n.visible .entry k(\n  .param .u64 .ptr .global .align 16 k_param_0, // x\n  .param .f32 a, /* b */\n  .param .align 64 .b8 tma[128],\n  .param .b32 arr[3]\n)\n{\n  ret;\n}\n.weak .entry none { ret; }\n.entry empty() {}\n\0";
        let t = read(text).unwrap();
        assert_eq!(
            t.kernels["k"],
            [
                ptx(PtxType::U64, None, 8),
                ptx(PtxType::F32, None, 4),
                ptx(PtxType::B8, Some(128), 64),
                ptx(PtxType::B32, Some(3), 4),
            ]
        );
        assert_eq!(t.kernels["none"], []);
        assert_eq!(t.kernels["empty"], []);
        assert_eq!(t.kernels.len(), 3);
        assert_eq!(super::super::buffer_size(&t.kernels["k"]), 204);
    }

    #[test]
    fn entries_inside_bodies_and_funcs_are_not_kernels() {
        let text =
            b".func (.param .b32 r) f(.param .b32 x) { ret; }\n.entry k(.param .s32 n) { { } }\n";
        let t = read(text).unwrap();
        assert_eq!(t.kernels.keys().collect::<Vec<_>>(), ["k"]);
        assert_eq!(t.kernels["k"], [ptx(PtxType::S32, None, 4)]);
    }

    #[test]
    fn every_type_spells_back() {
        for t in PtxType::ALL {
            assert_eq!(PtxType::from_keyword(t.keyword()), Some(t));
        }
        assert_eq!(PtxType::from_keyword("pred"), None);
    }

    #[test]
    fn damaged_text_is_an_error_naming_the_line() {
        for (text, needle) in [
            (
                &b".entry k(.param .u64 a"[..],
                "line 1: parameter 0 of `k`: the parameter list is not closed",
            ),
            (
                b".entry k(.param .u64 a,\n .param .pred p)",
                "line 2: parameter 1 of `k`: unknown parameter type or attribute `.pred`",
            ),
            (
                b".entry k(.param .u64 a .param)",
                "expected `,` or `)`, found `.param`",
            ),
            (b".entry k(.param a)", "parameter 0 of `k`: no type"),
            (b".entry k(.param .b8 a[0])", "positive element count"),
            (
                b".entry k(.param .align 3 .b8 a[4])",
                "alignment 3 is not a power of two",
            ),
            (b".entry k(.param .b32 a[4294967295])", "too large"),
            (b".entry (", "`.entry` without a kernel name"),
            (b"/* open\n.entry k()", "line 1: unterminated `/*` comment"),
            (b".entry k(.param .u32 .u64 a)", "a second type `.u64`"),
            (b".entry k(.param .u32 a[2)", "expected `]`"),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.contains(needle), "{e:?} lacks {needle:?}");
        }
        // Every prefix of a real declaration reads or fails without a panic.
        let whole =
            b".visible .entry k(.param .u64 .ptr .align 4 a, .param .align 8 .b8 s[16]) { ret; }";
        for n in 0..whole.len() {
            let _ = read(&whole[..n]);
        }
    }
}
