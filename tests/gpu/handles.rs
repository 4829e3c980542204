//! Launches of a kernel handle the caller loaded (`function=`, as Triton's `load_binary` hands
//! its launcher one): on every delivery path, for CUDA and HIP, the module launches the handle
//! as it is, loads nothing and embeds no copy of the binary; a handle the driver does not know
//! is the driver's error.

use std::path::Path;

use serde_json::json;

use crate::hip_double::{hip, rocm_tensor};
use crate::support::{Arg, build, call, call_err, cuda_tensor, deliveries, fake, hex};

const PTX: &str = ".visible .entry add_one(.param .u64 x, .param .u64 y, .param .u32 n) { ret; }\\n\
                   .visible .entry other(.param .u64 x) { ret; }";

/// `add_one(x, y, kernel)` launching `kernel` (a handle of `binary`'s `add_one`) on the CUDA
/// or ROCm device of `x`.
fn module(binary: &str, device: &str, n: &str) -> safecall::ir::Module {
    let text = format!(
        "module handles;\n{binary}\n\
         fn add_one(x: tensor[(n,), float32, device={device}], y: tensor[(n,), float32, device={device}], kernel: ptr) {{\n    \
         launch kernels.add_one[grid=(ceil_div(n, 256)), block=(256), function=kernel](x.data, y.data, cast<{n}>(n));\n}}\n"
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hip");
    safecall::ir::parse::parse_in_dir(&text, Some(&dir))
        .map(|(m, _)| m)
        .unwrap_or_else(|e| panic!("{}", e.render("handles.scir", &text)))
}

#[test]
fn a_cuda_kernel_handle_is_launched_as_it_is() {
    let binary = format!(
        "device_binary kernels {{\n    format ptx;\n    data b\"{PTX}\";\n    kernels [add_one, other];\n}}"
    );
    let m = module(&binary, "cuda", "u32");
    let object = safecall::compile_object(&m, &safecall::Options::default()).expect("object");
    assert!(
        !object.windows(15).any(|w| w == b".visible .entry"),
        "no copy of the binary in the object"
    );
    let (mut sx, mut sy) = ([1000i64], [1000i64]);
    let x = cuda_tensor(0x7000_0000, 1, &mut sx);
    let y = cuda_tensor(0x7100_0000, 1, &mut sy);
    for how in deliveries() {
        fake().reset();
        fake().set_primary_context(1);
        let image = format!("{}\0", PTX.replace("\\n", "\n"));
        let kernel = fake().load_function(image.as_bytes(), "add_one");
        fake().reset();
        let built = build(&m, how);
        let f = built.function("add_one");
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y), Arg::Ptr(kernel)]).unwrap();
        let calls = fake().calls();
        assert!(
            !calls
                .iter()
                .any(|c| c.contains("Load") || c.contains("GetKernel")),
            "{how:?}: nothing loaded: {calls:?}"
        );
        let launches = fake().launches();
        assert_eq!(launches.len(), 1, "{how:?}");
        assert_eq!(launches[0]["kernel"], "add_one", "{how:?}");
        assert_eq!(launches[0]["grid"], json!([4, 1, 1]));
        assert_eq!(
            launches[0]["args"],
            json!([
                hex(&0x7000_0000u64.to_le_bytes()),
                hex(&0x7100_0000u64.to_le_bytes()),
                hex(&1000u32.to_le_bytes())
            ])
        );
        let err = call_err(
            &f,
            &[Arg::Tensor(&x), Arg::Tensor(&y), Arg::Ptr(0x7fff_0000_0000)],
        );
        assert!(
            err.starts_with("RuntimeError: add_one: launch of kernels.add_one failed")
                && err.contains("CUDA_ERROR_INVALID_HANDLE"),
            "{how:?}: {err}"
        );
    }
}

#[test]
fn a_hip_kernel_handle_is_launched_as_it_is() {
    let binary = "device_binary kernels {\n    format hsaco;\n    file \"../kernel_params/kernels_gfx942.hsaco\";\n    kernels [add_one];\n}";
    let m = module(binary, "rocm", "i32");
    let image = m.device_binaries[0].data.clone();
    let object = safecall::compile_object(&m, &safecall::Options::default()).expect("object");
    assert!(
        !object.windows(64).any(|w| w == &image[..64]),
        "no copy of the code object in the object"
    );
    let (mut sx, mut sy) = ([1000i64], [1000i64]);
    let x = rocm_tensor(0x7000_0000, 1, &mut sx);
    let y = rocm_tensor(0x7100_0000, 1, &mut sy);
    for how in deliveries() {
        hip().reset();
        hip().set_device(1);
        let kernel = hip().load_function(&image, "add_one");
        hip().set_device(0);
        hip().reset();
        let built = build(&m, how);
        let f = built.function("add_one");
        call(&f, &[Arg::Tensor(&x), Arg::Tensor(&y), Arg::Ptr(kernel)]).unwrap();
        let calls = hip().calls();
        assert!(
            !calls
                .iter()
                .any(|c| c.contains("Load") || c.contains("GetFunction")),
            "{how:?}: nothing loaded: {calls:?}"
        );
        let launches = hip().launches();
        assert_eq!(launches.len(), 1, "{how:?}");
        assert_eq!(launches[0]["kernel"], "add_one", "{how:?}");
        assert_eq!(launches[0]["device"], 1, "{how:?}");
        assert_eq!(
            launches[0]["args"],
            json!([
                hex(&0x7000_0000u64.to_le_bytes()),
                hex(&0x7100_0000u64.to_le_bytes()),
                hex(&1000i32.to_le_bytes())
            ])
        );
        assert_eq!(
            hip().current_device(),
            0,
            "{how:?}: the caller's device back"
        );
        // No module table per device: an ordinal past the table's 64 is the runtime's to judge.
        let (mut sa, mut sb) = ([1000i64], [1000i64]);
        let far_x = rocm_tensor(0x7000_0000, 64, &mut sa);
        let far_y = rocm_tensor(0x7100_0000, 64, &mut sb);
        let err = call_err(
            &f,
            &[Arg::Tensor(&far_x), Arg::Tensor(&far_y), Arg::Ptr(kernel)],
        );
        assert!(
            err.starts_with(
                "RuntimeError: add_one: launch of kernels.add_one: HIP device 64 is not \
                 available: hipSetDevice returned hipErrorInvalidDevice"
            ),
            "{how:?}: {err}"
        );
    }
}
