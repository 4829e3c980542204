//! Annotated dumps of the lowered form and the CLIF of the example host functions (issue 4).
//! Every part of a dump names the IR statement or check it implements; the snapshots in
//! `snapshots/lowered/` and `snapshots/clif/` show what each example compiles to.

fn example(name: &str) -> safecall::ir::Module {
    let path = format!("{}/examples/ir/{name}.scir", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let dir = std::path::Path::new(&path).parent();
    safecall::ir::parse::parse_in_dir(&text, dir)
        .map(|(module, _)| module)
        .unwrap_or_else(|e| panic!("{}", e.render(&path, &text)))
}

/// The dumped functions whose names start with `__tvm_ffi_` (the host functions and their
/// metadata getters), not the module's shared cold helpers. Functions start at a line
/// beginning with `header` followed by the function name.
fn host_functions(dump: &str, header: fn(&str) -> Option<&str>) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in dump.lines() {
        if let Some(name) = header(line) {
            keep = name.starts_with("__tvm_ffi_");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn lowered_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("function ")?;
    let rest = rest.strip_prefix("cold ").unwrap_or(rest);
    let rest = rest.strip_prefix("export ").unwrap_or(rest);
    rest.split('(').next()
}

fn clif_header(line: &str) -> Option<&str> {
    line.strip_prefix("; ")
        .filter(|n| n.starts_with("__"))
        .map(|n| n.trim())
}

fn snapshot(kind: &str, name: &str, text: String) {
    insta::with_settings!({ snapshot_path => format!("../snapshots/{kind}"), prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
}

fn dumps(name: &str) {
    let module = example(name);
    let options = safecall::Options::default();
    let lowered = safecall::emit(&module, safecall::Emit::Lowered, &options).unwrap();
    let clif = safecall::emit(&module, safecall::Emit::BackendIr, &options).unwrap();
    let lowered_hosts = host_functions(&lowered, lowered_header);
    let clif_hosts = host_functions(&clif, clif_header);
    for f in &module.functions {
        let symbol = format!("__tvm_ffi_{}", f.name);
        assert!(
            lowered_hosts.contains(&format!("{symbol}(")),
            "{symbol} missing from the lowered dump"
        );
        assert!(
            clif_hosts.contains(&format!("; {symbol}\n")),
            "{symbol} missing from the CLIF dump"
        );
        // Each host function's checks and statements are annotated.
        assert!(
            clif_hosts.contains(&format!("; check: {} takes", f.name)),
            "no annotation in {symbol}"
        );
    }
    snapshot("lowered", name, lowered_hosts);
    snapshot("clif", name, clif_hosts);
}

#[test]
fn add_one() {
    dumps("add_one");
}

#[test]
fn cuda_launch_settings() {
    dumps("cuda_launch_settings");
}

#[test]
fn cuda_tma_copy() {
    dumps("cuda_tma_copy");
}

#[test]
fn launcher() {
    dumps("launcher");
}

#[test]
fn call_global() {
    dumps("call_global");
}

#[test]
fn imports() {
    dumps("imports");
}

#[test]
fn all_params() {
    dumps("all_params");
}

#[test]
fn explain_function_of_add_one() {
    // The explain function re-runs the checks with a precise message each.
    let clif = safecall::emit(
        &example("add_one"),
        safecall::Emit::BackendIr,
        &safecall::Options::default(),
    )
    .unwrap();
    let explain: String = clif
        .split("\n; ")
        .find(|part| part.starts_with("__safecall_explain_add_one"))
        .expect("the explain function is in the module")
        .to_owned();
    assert!(
        explain.contains("call fn"),
        "it raises through the shared helper"
    );
    snapshot("clif", "add_one_explain", format!("; {explain}"));
}

#[test]
fn a_verified_module_compiles_like_the_module_it_wraps() {
    // The driver accepts a module already verified (borrowed or owned) and lowers it without
    // verifying it again; what comes out is what the plain module gives.
    let options = safecall::Options::default();
    for name in ["add_one", "launcher", "all_params", "calls"] {
        let module = example(name);
        let borrowed = safecall::ir::verify(&module).unwrap();
        let owned = safecall::ir::VerifiedModule::new(module.clone()).unwrap();
        for what in [safecall::Emit::Ir, safecall::Emit::Lowered] {
            let plain = safecall::emit(&module, what, &options).unwrap();
            assert_eq!(safecall::emit(&borrowed, what, &options).unwrap(), plain);
            assert_eq!(safecall::emit(&owned, what, &options).unwrap(), plain);
        }
        let object = safecall::compile_object(&module, &options).unwrap();
        assert_eq!(
            safecall::compile_object(&owned, &options).unwrap(),
            object,
            "{name}"
        );
    }
}
