//! Inputs the fuzz targets (fuzz/) found crashing, kept in fuzz/regressions/: each is now a
//! clear error.

use safecall::ir::parse::parse;
use safecall::ir::verify::verify;

#[test]
fn a_module_name_with_a_nul_byte_is_a_verifier_error() {
    // Found by the `frontend` fuzz target: the name reached the object writer, which panicked.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fuzz/regressions/frontend-nul-in-symbol-name.scir"
    ))
    .unwrap();
    let module = parse(&text).expect("the input parses");
    let errors = verify(&module).expect_err("a NUL byte in the module name");
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("contains a NUL byte")),
        "{errors:?}"
    );
    let built = safecall::compile_object(&module, &Default::default());
    assert!(built.is_err(), "compiling must refuse it, not panic");
}
