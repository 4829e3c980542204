//! The CUDA driver's and HIP runtime's tables that JIT modules share by default
//! (`JitOptions::share_gpu_runtimes`): a module compiled after another one has launched finds
//! the runtime without a single call (no entry point resolved again, no `cuInit`/`hipInit`),
//! loads its own binary and launches as a module with its own init does.

use safecall::jit::{self, JitOptions};

use crate::hip_double::{hip, rocm_tensor};
use crate::support::{Arg, call, cuda_tensor, fake};

/// Compiles `module` with the JIT's defaults (shared tables).
fn compile(module: &safecall::ir::Module) -> jit::JitModule {
    // SAFETY: the tests' own IR: it dereferences only the tensors it checks and launches the
    // kernels of its binaries with their parameters.
    unsafe { jit::compile(module, &JitOptions::default()) }.expect("JIT")
}

#[test]
fn jit_modules_share_the_cuda_driver_table() {
    assert!(JitOptions::default().share_gpu_runtimes);
    let m = crate::support::module();
    let (mut sx, mut sy) = ([1000i64], [1000i64]);
    let x = cuda_tensor(0x7000_0000, 1, &mut sx);
    let y = cuda_tensor(0x7100_0000, 1, &mut sy);
    let args = [Arg::Tensor(&x), Arg::Tensor(&y)];
    let first = compile(&m);
    fake().reset();
    call(&first.function("add_one").unwrap().clone(), &args).unwrap();
    let before = fake().launches();

    let second = compile(&m);
    fake().reset();
    call(&second.function("add_one").unwrap().clone(), &args).unwrap();
    let calls = fake().calls();
    for init in ["cuGetProcAddress_v2", "cuInit"] {
        assert!(!calls.iter().any(|c| c == init), "{init} again: {calls:?}");
    }
    assert_eq!(
        calls.iter().filter(|c| *c == "cuLibraryLoadData").count(),
        1,
        "each module loads its own binary: {calls:?}"
    );
    assert_eq!(fake().launches(), before, "the same launch");
}

#[test]
fn jit_modules_share_the_hip_runtime_table() {
    let m = crate::hip_launch::module();
    let (mut sx, mut sy) = ([1000i64], [1000i64]);
    let x = rocm_tensor(0x7000_0000, 1, &mut sx);
    let y = rocm_tensor(0x7100_0000, 1, &mut sy);
    let args = [Arg::Tensor(&x), Arg::Tensor(&y)];
    let first = compile(&m);
    hip().reset();
    call(&first.function("add_one").unwrap().clone(), &args).unwrap();
    let before = hip().launches();

    let second = compile(&m);
    hip().reset();
    call(&second.function("add_one").unwrap().clone(), &args).unwrap();
    let calls = hip().calls();
    assert!(
        !calls.iter().any(|c| c == "hipInit"),
        "hipInit again: {calls:?}"
    );
    assert_eq!(
        calls.iter().filter(|c| *c == "hipModuleLoadData").count(),
        1,
        "each module loads its own binary: {calls:?}"
    );
    assert_eq!(hip().launches(), before, "the same launch");
}
