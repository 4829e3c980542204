//! Message templates: one read-only template per distinct message, whose static texts are
//! stored once in the module's object of message texts and whose run-time values are indices
//! of the words a failing check stores.

use super::{PART_SIZE, PART_TAG_OFFSET, PART_VALUE_OFFSET, STORED, TEXT, Tag};
use crate::ir;
use crate::lir;
use crate::lower::{LowerOptions, lower};

fn lowered(text: &str) -> lir::Module {
    let module = ir::parse(text).unwrap_or_else(|e| panic!("test IR does not parse: {e:?}"));
    let verified = ir::verify(&module).unwrap_or_else(|e| panic!("test IR does not verify: {e:?}"));
    lower(&verified, &LowerOptions::default()).expect("lowers")
}

fn word(bytes: &[u8], at: usize) -> i64 {
    i64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// The NUL-terminated text at `offset` of `texts`.
fn text_at(texts: &[u8], offset: i64) -> &str {
    let start = usize::try_from(offset).expect("an offset");
    let len = texts[start..]
        .iter()
        .position(|&b| b == 0)
        .expect("NUL-terminated");
    std::str::from_utf8(&texts[start..start + len]).expect("UTF-8")
}

const TWO_ASSERTS: &str = "module m;
fn f(x: i64) {
    assert (x > 0) else ValueError(\"x is \", x, \", not positive\");
}
fn g(y: i64) {
    assert (y > 0) else ValueError(\"x is \", y, \", not positive\");
    assert (y < 9) else ValueError(\"x is \", y, \", not below 9\");
}
";

#[test]
fn equal_messages_share_one_template_and_texts_are_stored_once() {
    let m = lowered(TWO_ASSERTS);
    let texts: Vec<&lir::Data> = m
        .data
        .iter()
        .filter(|d| d.name.contains("message_texts"))
        .collect();
    let [texts] = texts[..] else {
        panic!("one object of message texts, got {}", texts.len())
    };
    assert!(!texts.writable && texts.relocs.is_empty());
    // The templates of the asserts' messages (the argument checks have theirs): those whose
    // first part is the text "x is ".
    let parts_of = |template: &lir::Data| -> Vec<(i64, i64)> {
        template
            .contents
            .chunks(PART_SIZE as usize)
            .map(|p| (word(p, PART_TAG_OFFSET), word(p, PART_VALUE_OFFSET)))
            .collect()
    };
    let templates: Vec<&lir::Data> = m
        .data
        .iter()
        .filter(|d| d.name.contains("_message_") && !d.name.contains("message_texts"))
        .filter(|d| {
            matches!(parts_of(d).first(), Some(&(tag, at))
                if tag == Tag::CStr as i64 | TEXT && text_at(&texts.contents, at) == "x is ")
        })
        .collect();
    // f's and g's first assert raise the same message (from different variables): one
    // template; g's second assert another.
    assert_eq!(
        templates.len(),
        2,
        "{:?}",
        templates.iter().map(|d| &d.name).collect::<Vec<_>>()
    );
    let shown: Vec<String> = texts
        .contents
        .split(|&b| b == 0)
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect();
    for text in ["x is ", ", not positive", ", not below 9"] {
        assert_eq!(
            shown.iter().filter(|t| *t == text).count(),
            1,
            "{text:?} once in {shown:?}"
        );
    }
    for template in templates {
        assert!(!template.writable && template.relocs.is_empty() && template.align == 8);
        let parts = parts_of(template);
        let [(t0, v0), (t1, v1), (t2, v2)] = parts[..] else {
            panic!("three parts, got {parts:?}")
        };
        assert_eq!(
            (t0, text_at(&texts.contents, v0)),
            (Tag::CStr as i64 | TEXT, "x is ")
        );
        assert_eq!(
            (t1, v1),
            (Tag::I64 as i64 | STORED, 0),
            "the first stored word"
        );
        assert_eq!(t2, Tag::CStr as i64 | TEXT);
        assert!(text_at(&texts.contents, v2).starts_with(", not "));
    }
}
