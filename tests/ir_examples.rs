//! The example modules in `examples/ir/`: they parse, verify, print canonically (snapshots in
//! `snapshots/ir/`) and round-trip through the printer and parser.

use safecall::ir::parse::{parse, parse_in_dir};
use safecall::ir::print::print;
use safecall::ir::verify::{Source, render_errors, verify};

fn check(name: &str) -> safecall::ir::Module {
    let file = format!("examples/ir/{name}.scir");
    let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    // `file "..."` paths are read from the directory of the IR file.
    let (module, map) = parse_in_dir(&text, std::path::Path::new(&path).parent())
        .unwrap_or_else(|e| panic!("{}", e.render(&file, &text)));
    if let Err(errors) = verify(&module) {
        panic!(
            "{}",
            render_errors(
                &errors,
                Some(Source {
                    file: &file,
                    text: &text,
                    map: &map
                })
            )
        );
    }
    let printed = print(&module);
    let reparsed = parse(&printed).unwrap_or_else(|e| panic!("{}", e.render("printed", &printed)));
    assert_eq!(reparsed, module, "parse(print(m)) != m");
    assert_eq!(print(&reparsed), printed, "printing is not stable");
    insta::with_settings!({ snapshot_path => "../snapshots/ir", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, printed);
    });
    module
}

/// The AMD example: checked as [`check`] does but without a snapshot (its printed form embeds
/// two code objects, 150 KB of escaped bytes).
#[test]
fn hip_launches() {
    let path = format!(
        "{}/examples/ir/hip_launches.scir",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let (m, _) = parse_in_dir(&text, std::path::Path::new(&path).parent())
        .unwrap_or_else(|e| panic!("{}", e.render("hip_launches.scir", &text)));
    let verified = verify(&m).unwrap_or_else(|e| panic!("{}", render_errors(&e, None)));
    assert!(verified.warnings().is_empty(), "{:?}", verified.warnings());
    assert_eq!(parse(&print(&m)).unwrap(), m, "parse(print(m)) != m");
    let formats: Vec<_> = m.device_binaries.iter().map(|b| b.format).collect();
    assert_eq!(
        formats,
        [
            safecall::ir::BinaryFormat::Hipfb,
            safecall::ir::BinaryFormat::Hsaco
        ]
    );
}

#[test]
fn add_one() {
    let m = check("add_one");
    assert_eq!(m.functions[0].params.len(), 2);
}

#[test]
fn launcher() {
    let m = check("launcher");
    assert_eq!(m.functions[0].params.len(), 4);
    assert_eq!(
        m.externs[0].errors,
        safecall::ir::ErrorConvention::NonZeroIsRaised
    );
}

#[test]
fn call_global() {
    let m = check("call_global");
    assert_eq!(m.functions[0].ret, safecall::ir::RetType::Any);
}

#[test]
fn imports() {
    let m = check("imports");
    assert_eq!(m.imports, vec!["kernels".to_owned()]);
    assert_eq!(m.imported_modules[1].imports, vec!["helpers".to_owned()]);
}

#[test]
fn all_params() {
    check("all_params");
}

/// The complete `.scir` examples in `docs/ir.md` parse, verify and print as written.
#[test]
fn docs_examples_are_valid() {
    let doc =
        std::fs::read_to_string(format!("{}/docs/ir.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let mut checked = 0;
    for block in doc.split("```scir\n").skip(1) {
        let text = block.split("```").next().unwrap();
        if text.contains("...") {
            continue; // a fragment
        }
        let module = parse(text).unwrap_or_else(|e| panic!("{}", e.render("docs/ir.md", text)));
        verify(&module).unwrap_or_else(|e| panic!("{}", render_errors(&e, None)));
        checked += 1;
    }
    assert!(checked >= 1);
}

#[test]
fn launcher4d() {
    let m = check("launcher4d");
    let f = &m.functions[0];
    assert_eq!(
        f.params.len(),
        7,
        "four tensors, the mask, the constant, the kernel"
    );
}

#[test]
fn cuda_launch_settings() {
    let m = check("cuda_launch_settings");
    assert_eq!(m.functions.len(), 3);
}

#[test]
fn cuda_tma_copy() {
    let m = check("cuda_tma_copy");
    assert_eq!(m.functions.len(), 1);
}

#[test]
fn cuda_alloc() {
    let m = check("cuda_alloc");
    assert_eq!(m.functions[0].ret, safecall::ir::RetType::Tensor);
}

/// The CPU example runs for real: JIT-compiled, called with the runtime's CPU allocator
/// installed on this thread, its two outputs read back.
#[test]
fn cpu_alloc() {
    use safecall_runtime::{Any, Tensor};
    let m = check("cpu_alloc");
    // SAFETY: the example's IR dereferences only the tensor it checks.
    let jit = unsafe { safecall::jit::compile(&m, &Default::default()) }.unwrap();
    let x = Tensor::cpu::<f32>(&[4]).unwrap();
    // SAFETY: a fresh tensor owned by this test.
    unsafe { x.as_mut_slice::<f32>() }
        .unwrap()
        .copy_from_slice(&[1.0, -2.0, 5.0, 3.0]);
    // SAFETY: installs a valid allocator on this thread.
    let rc = unsafe {
        safecall_runtime::capi::TVMFFIEnvSetDLPackManagedTensorAllocator(
            Some(safecall_runtime::tensor::cpu_allocator),
            0,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let arg = Any::from(x);
    let out = jit.function("scan").unwrap().call(&[arg.view()]).unwrap();
    assert_eq!(out.type_index(), safecall_runtime::abi::type_index::ARRAY);
    // SAFETY: an ffi.Array carries a TVMFFISeqCell after the object header; the views live
    // while `out` holds the array.
    let (sums, maxima) = unsafe {
        let cell = &*out
            .object_ptr()
            .add(1)
            .cast::<safecall_runtime::abi::TVMFFISeqCell>();
        assert_eq!(cell.size, 2);
        let data = cell.data.cast::<safecall_runtime::abi::TVMFFIAny>();
        (
            safecall_runtime::AnyView::from_raw(*data)
                .cast::<Tensor>()
                .unwrap(),
            safecall_runtime::AnyView::from_raw(*data.add(1))
                .cast::<Tensor>()
                .unwrap(),
        )
    };
    assert_eq!(sums.as_slice::<f32>().unwrap(), [1.0, -1.0, 4.0, 7.0]);
    assert_eq!(maxima.as_slice::<f32>().unwrap(), [1.0, 1.0, 5.0, 5.0]);
    // SAFETY: clears this thread's allocator.
    unsafe {
        safecall_runtime::capi::TVMFFIEnvSetDLPackManagedTensorAllocator(
            None,
            0,
            std::ptr::null_mut(),
        )
    };
}
