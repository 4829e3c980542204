//! The module of `examples/jit.rs`, shared with the aarch64 tests (which compile it ahead of
//! time instead of JIT-compiling it). Not an example of its own: `examples/jit.rs` and
//! `tests/aarch64/examples.rs` include it with `#[path]`.

use safecall::ir::build::{FunctionBuilder, ModuleBuilder, TensorSpecBuilder, int, var};
use safecall::ir::{ErrorConvention, IntType, Module, RetType, ScalarType};
use safecall_runtime::abi::device_type;

/// `scale(x: tensor[(n,), float32, device=cpu]) -> i64`: launches `fake_launch` with a grid of
/// ceil_div(n, 128) blocks and returns n.
pub fn jit_demo() -> Module {
    let i32t = ScalarType::Int(IntType::I32);
    let mut module = ModuleBuilder::new("jit_demo");
    module.extern_fn(
        "fake_launch",
        [ScalarType::Ptr, ScalarType::Int(IntType::I64), i32t],
        Some(i32t),
        ErrorConvention::NonZeroIsRaised,
    );
    let mut f = FunctionBuilder::new("scale");
    f.doc("Doubles x in place through the (fake) kernel and returns its length.");
    f.returns(RetType::Scalar(ScalarType::Int(IntType::I64)));
    let x = f.tensor(
        "x",
        TensorSpecBuilder::new(["n"])
            .dtype_name("float32")
            .device(device_type::CPU),
    );
    let n = var("n");
    let grid = f.let_("grid", n.clone().ceil_div(int(128)).cast(i32t));
    f.call_extern("fake_launch", [x.data(), n.clone(), grid]);
    f.ret(n);
    module.function(f.finish());
    module.build()
}
