//! A CUDA host function that allocates (examples/ir/cuda_alloc.scir) against the CUDA driver
//! double and a fake device allocator installed through the env API: what reaches the driver,
//! the tensors allocated and returned, and every allocation freed exactly once, on the error
//! paths too, on every delivery path and backend.

use crate::support::{Arg, build, call, call_err, cuda_tensor, deliveries, fake, hex};
use safecall_runtime::Tensor;
use serde_json::json;

fn example() -> safecall::ir::Module {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ir"));
    let text = std::fs::read_to_string(dir.join("cuda_alloc.scir")).unwrap();
    safecall::ir::parse::parse_in_dir(&text, Some(dir))
        .unwrap_or_else(|e| panic!("{}", e.render("cuda_alloc.scir", &text)))
        .0
}

fn all_freed(what: &str) {
    let r = crate::common::allocator::record();
    assert!(
        r.live.is_empty() && r.bad_frees == 0 && r.frees == r.sizes.len(),
        "{what}: allocations not freed exactly once: {r:?}"
    );
}

#[test]
fn add_two_allocates_launches_twice_through_the_scratch_buffer_and_returns_its_output() {
    let m = example();
    for how in deliveries() {
        fake().reset();
        let built = build(&m, how);
        let f = built.function("add_two");
        let mut shape = [1000i64];
        let x = cuda_tensor(0x7000_0000, 1, &mut shape);
        crate::common::allocator::install();
        let result = call(&f, &[Arg::Tensor(&x)]).unwrap();
        let r = crate::common::allocator::record();
        assert_eq!(
            r.sizes,
            [4000, 4000],
            "{how:?}: the scratch tensor, then the output"
        );
        assert_eq!(
            r.frees, 1,
            "{how:?}: the scratch tensor is released on return"
        );
        let y = result.cast::<Tensor>().unwrap();
        drop(result);
        assert_eq!(y.shape(), [1000]);
        assert_eq!((y.device().device_type, y.device().device_id), (2, 1));
        let launches = fake().launches();
        assert_eq!(launches.len(), 2, "{how:?}");
        let out = y.data_ptr() as usize;
        assert_eq!(r.live, [out], "{how:?}: only the output is alive");
        // The scratch tensor: the first launch's output and the second launch's input.
        let scratch = launches[0]["args"][1].clone();
        assert_ne!(scratch, json!(hex(&(out as u64).to_le_bytes())));
        let n = hex(&1000u32.to_le_bytes());
        assert_eq!(
            launches[0]["args"],
            json!([hex(&0x7000_0000u64.to_le_bytes()), scratch, n])
        );
        assert_eq!(
            launches[1]["args"],
            json!([scratch, hex(&(out as u64).to_le_bytes()), n])
        );
        assert_eq!(launches[1]["grid"], json!([4, 1, 1]));
        drop(y);
        all_freed(&format!("{how:?}"));

        // A failing launch: both tensors are released, the driver's error is raised.
        fake().fail("cuLaunchKernelEx", 719);
        let err = call_err(&f, &[Arg::Tensor(&x)]);
        assert!(
            err.starts_with("RuntimeError: add_two: launch of kernels.add_one failed"),
            "{err}"
        );
        assert_eq!(crate::common::allocator::record().sizes.len(), 4);
        all_freed(&format!("{how:?}, failed launch"));

        // No allocator: the message names the tensor, its shape, dtype and device.
        crate::common::allocator::set(None);
        let err = call_err(&f, &[Arg::Tensor(&x)]);
        assert!(
            err.starts_with(
                "RuntimeError: add_two: cannot allocate `scratch` with shape (1000,), float32 on cuda:1: no tensor allocator is installed"
            ),
            "{err}"
        );
    }
}
