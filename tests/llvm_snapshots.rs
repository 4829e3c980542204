//! Annotated LLVM IR of the example modules (`examples/ir/*.scir`), as built before
//! optimization, snapshotted in `snapshots/llvm/`: every host-IR item shows up as a comment
//! before the instructions implementing it, cold paths carry `!prof` weights and `cold`.

use crate::llvm_support;
use safecall::{Backend, Emit};

/// The annotated LLVM IR of `examples/ir/<name>.scir`, or `None` (with a printed reason) when
/// this build has no LLVM backend.
fn llvm_ir(name: &str) -> Option<String> {
    if !llvm_support::llvm_available() {
        return None;
    }
    let module = llvm_support::example(name);
    let text = safecall::emit(
        &module,
        Emit::BackendIr,
        &llvm_support::options(Backend::Llvm),
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    insta::with_settings!({ snapshot_path => "../snapshots/llvm", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, text);
    });
    Some(text)
}

/// The blocks of a lowered function reachable from its entry (the backend emits only those).
fn reachable(func: &safecall::lir::Function) -> Vec<bool> {
    use safecall::lir::Terminator;
    let mut seen = vec![false; func.blocks.len()];
    let mut stack = vec![0usize];
    while let Some(b) = stack.pop() {
        if std::mem::replace(&mut seen[b], true) {
            continue;
        }
        match &func.blocks[b].term {
            Terminator::Jump(t) => stack.push(t.0 as usize),
            Terminator::Branch {
                then_block,
                else_block,
                ..
            } => stack.extend([then_block.0 as usize, else_block.0 as usize]),
            Terminator::Return(_) => {}
        }
    }
    seen
}

/// Every `Source` item of the reachable code of the lowered form appears as a comment in the
/// LLVM IR.
fn assert_all_sources_annotated(name: &str, text: &str) {
    let module = llvm_support::example(name);
    let lowered =
        safecall::lower::lower(&safecall::ir::verify(&module).unwrap(), &Default::default())
            .unwrap();
    for func in &lowered.functions {
        let start = text
            .lines()
            .find(|l| l.starts_with("define ") && l.contains(&format!(" @{}(", func.name)))
            .and_then(|l| text.find(l))
            .unwrap_or_else(|| panic!("{} is not defined", func.name));
        let body = &text[start..];
        let body = &body[..body.find("\n}\n").expect("function end")];
        let live = reachable(func);
        for (block, _) in func.blocks.iter().zip(live).filter(|(_, live)| *live) {
            for inst in &block.insts {
                if let safecall::lir::Inst::Source(i) = inst {
                    let comment = format!("; {}", func.sources[*i as usize]);
                    assert!(
                        body.contains(&comment),
                        "{}: no comment `{comment}`",
                        func.name
                    );
                }
            }
        }
    }
}

#[test]
fn add_one() {
    let Some(text) = llvm_ir("add_one") else {
        return;
    };
    assert_all_sources_annotated("add_one", &text);
    // The cold error paths: branch weights towards the hot side, a `cold` helper.
    assert!(text.contains(r#"!{!"branch_weights", i32 2000, i32 1}"#));
    assert!(text.contains("attributes #1 = { cold noinline nounwind optnone"));
    assert!(!text.contains("safecall.source"));
}

#[test]
fn launcher() {
    let Some(text) = llvm_ir("launcher") else {
        return;
    };
    assert_all_sources_annotated("launcher", &text);
    assert!(text.contains(
        "declare i32 @matmul_kernel_launch(ptr, ptr, ptr, ptr, i64, i64, i64, i32, i32, ptr)"
    ));
}

#[test]
fn call_global() {
    let Some(text) = llvm_ir("call_global") else {
        return;
    };
    assert_all_sources_annotated("call_global", &text);
}

#[test]
fn imports() {
    let Some(text) = llvm_ir("imports") else {
        return;
    };
    assert_all_sources_annotated("imports", &text);
    assert!(text.contains("@__tvm_ffi__library_ctx = global [8 x i8] zeroinitializer, align 8"));
}

#[test]
fn all_params() {
    let Some(text) = llvm_ir("all_params") else {
        return;
    };
    assert_all_sources_annotated("all_params", &text);
    // Narrow C arguments are extended as the C ABI wants.
    assert!(
        text.contains("declare i32 @consume(i8 signext, i16 signext, i32, i64, i8 zeroext, i16 zeroext, i32, i64, i8 zeroext, float, double, ptr)"),
        "{}",
        text.lines().find(|l| l.contains("@consume(")).unwrap_or("")
    );
}
