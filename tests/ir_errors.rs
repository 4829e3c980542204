//! Malformed `.scir` inputs, one file each in `tests/ir_errors/`: each fails at the stage its
//! header names (`// error: parse` or `// error: verify`) with a message containing its
//! `// expect:` line, and the rendered diagnostics (line:column, caret excerpt, what was
//! expected, the function and statement) are snapshotted in `snapshots/ir/error_NAME.snap`
//! (`INSTA_UPDATE=always` blesses them). The header lines are not part of the input: the
//! parser sees the text after them, so positions are those of the input itself.

use std::path::Path;

use safecall::ir::parse::parse_with_source_map;
use safecall::ir::verify::{Source, render_errors, verify};

#[derive(Debug, PartialEq)]
enum Stage {
    Parse,
    Verify,
}

/// Runs `text` through the parser and the verifier; returns the stage that failed and the
/// rendered diagnostics.
fn diagnose(text: &str) -> (Stage, String) {
    let file = "input.scir";
    match parse_with_source_map(text) {
        Err(e) => (Stage::Parse, e.render(file, text)),
        Ok((module, map)) => match verify(&module) {
            Ok(_) => panic!("the input was accepted:\n{text}"),
            Err(errors) => (
                Stage::Verify,
                render_errors(
                    &errors,
                    Some(Source {
                        file,
                        text,
                        map: &map,
                    }),
                ),
            ),
        },
    }
}

/// A case: its stage, what the message contains, and the input.
struct Case {
    name: String,
    stage: Stage,
    needle: String,
    text: String,
}

/// Reads `tests/ir_errors/NAME.scir`: two header lines, then the input.
fn read_case(path: &Path) -> Case {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let file = std::fs::read_to_string(path).unwrap();
    let (stage, rest) = file
        .split_once('\n')
        .unwrap_or_else(|| panic!("{name}: no header"));
    let (needle, text) = rest
        .split_once('\n')
        .unwrap_or_else(|| panic!("{name}: no `// expect:` line"));
    let stage = match stage {
        "// error: parse" => Stage::Parse,
        "// error: verify" => Stage::Verify,
        other => panic!("{name}: the first line is `{other}`, not `// error: parse|verify`"),
    };
    let needle = needle
        .strip_prefix("// expect: ")
        .unwrap_or_else(|| panic!("{name}: the second line is not `// expect: ...`"))
        .to_owned();
    Case {
        name,
        stage,
        needle,
        text: text.to_owned(),
    }
}

/// Checks one case; `Err` says what is wrong.
fn check_case(case: &Case) -> Result<(), String> {
    let (stage, rendered) = diagnose(&case.text);
    if stage != case.stage {
        return Err(format!(
            "failed at {stage:?}, not {:?}:\n{rendered}",
            case.stage
        ));
    }
    for (what, ok) in [
        (
            format!("expected {:?}", case.needle),
            rendered.contains(&case.needle),
        ),
        (
            "no position".to_owned(),
            rendered.contains("--> input.scir:"),
        ),
        ("no caret".to_owned(), rendered.contains('^')),
    ] {
        if !ok {
            return Err(format!("{what} in:\n{rendered}"));
        }
    }
    let snapshot = std::panic::catch_unwind(|| {
        insta::with_settings!({
            snapshot_path => "../snapshots/ir",
            prepend_module_to_snapshot => false,
            description => case.text.as_str(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("error_{}", case.name), rendered);
        });
    });
    snapshot.map_err(|_| "the rendered diagnostics differ from the snapshot".to_owned())
}

/// Every file of `tests/ir_errors/` fails as its header says; all failures are listed.
#[test]
fn every_error_case_fails_as_its_file_says() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ir_errors");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "scir"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 84,
        "only {} cases in {}",
        paths.len(),
        dir.display()
    );
    let failures: Vec<String> = paths
        .iter()
        .map(|p| read_case(p))
        .filter_map(|case| {
            check_case(&case)
                .err()
                .map(|why| format!("{}: {why}", case.name))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Several problems in one function are all reported, each with its own position.
#[test]
fn several_errors_are_all_reported() {
    let text = "module m;\nfn f(x: tensor[(n,), float32]) -> i32 {\n    let a = n + 1i32;\n    let b = q;\n    return a;\n}\n";
    let (_, map) = parse_with_source_map(text).unwrap();
    let errors = verify(&parse_with_source_map(text).unwrap().0).unwrap_err();
    // `a` has no type after its error, so `return a` reports nothing more (no cascade).
    assert_eq!(errors.len(), 2, "{errors:#?}");
    let rendered = render_errors(
        &errors,
        Some(Source {
            file: "input.scir",
            text,
            map: &map,
        }),
    );
    assert!(rendered.contains("input.scir:3:13"), "{rendered}");
    assert!(rendered.contains("input.scir:4:13"), "{rendered}");
}
