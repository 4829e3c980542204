//! Fuzzes the front end: IR text through the parser, the verifier, the lowering and Cranelift
//! compilation to an object file. Any input is either a clean error (which renders with a
//! position) or a module that prints back to text that parses to the same printed module,
//! verifies, lowers (never with an internal error) and compiles without a panic.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run frontend` (from the workspace root).

#![no_main]

use libfuzzer_sys::fuzz_target;
use safecall::ir::parse::{parse, parse_with_source_map};
use safecall::ir::print::print;
use safecall::ir::verify::{Source, render_errors, verify};
use safecall::{Emit, Options, compile_object, emit};

const FILE: &str = "fuzz.scir";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (module, map) = match parse_with_source_map(text) {
        Ok(parsed) => parsed,
        Err(error) => {
            let rendered = error.render(FILE, text);
            assert!(rendered.contains(FILE), "parse error without a position:\n{rendered}");
            return;
        }
    };
    // The printer and the parser agree on every module the parser accepts.
    let printed = print(&module);
    let reparsed = parse(&printed)
        .unwrap_or_else(|e| panic!("printed module does not parse: {e:?}\n{printed}"));
    assert_eq!(print(&reparsed), printed, "printing is not stable");

    if let Err(errors) = verify(&module) {
        assert!(!errors.is_empty());
        let source = Source {
            file: FILE,
            text,
            map: &map,
        };
        let rendered = render_errors(&errors, Some(source));
        assert!(rendered.starts_with("error"), "{rendered}");
        return;
    }
    // A verified module lowers and compiles, or fails with a message (never a panic). With
    // debug assertions (cargo fuzz's default) the lowering's output also passes the LIR
    // verifier.
    // An internal lowering error on verified IR is a bug (the verifier let through what the
    // lowering cannot handle, or recorded no type for an expression it lowers).
    let options = Options::default();
    match emit(&module, Emit::Lowered, &options) {
        Ok(lowered) => assert!(!lowered.is_empty()),
        Err(safecall::Error::Lower(error)) if error.is_internal() => {
            panic!("internal error lowering a verified module: {error}\n{printed}")
        }
        Err(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
    }
    match compile_object(&module, &options) {
        Ok(object) => assert!(!object.is_empty()),
        Err(error) => assert!(!error.to_string().is_empty()),
    }
});
