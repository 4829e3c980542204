//! JIT-compiled code lives exactly as long as something refers to it: the [`JitModule`] or
//! any function made from it. After the last one is dropped its memory is no longer
//! executable (unmapped, or returned read-write to the Cranelift JIT's pool).
//! (One test in its own binary, so that no other JIT compilation maps memory meanwhile.)

#[allow(dead_code)] // this test uses the backends only
mod common {
    pub mod delivery;
    pub mod skip;
}
mod llvm_support;

use safecall_runtime::AnyView;

/// Whether `address` lies in an executable mapping of this process.
fn executable(address: usize) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("procfs");
    maps.lines().any(|line| {
        let mut fields = line.split_whitespace();
        let range = fields.next().unwrap_or_default();
        let perms = fields.next().unwrap_or_default();
        let Some((start, end)) = range.split_once('-') else {
            return false;
        };
        let start = usize::from_str_radix(start, 16).unwrap_or(usize::MAX);
        let end = usize::from_str_radix(end, 16).unwrap_or(0);
        (start..end).contains(&address) && perms.contains('x')
    })
}

#[test]
fn code_is_freed_when_the_last_function_is_dropped() {
    let module = llvm_support::parse("module m;\nfn triple(n: i64) -> i64 { return n * 3; }\n");
    for backend in llvm_support::backends() {
        // The first compilation also builds the process-wide error helper, which stays.
        drop(llvm_support::jit(&module, backend));

        let jit = llvm_support::jit(&module, backend);
        let address = jit.safe_call("triple").expect("defined") as usize;
        let f = jit.function("triple").expect("defined").clone();
        assert!(
            executable(address),
            "{backend:?}: compiled code is not mapped"
        );
        drop(jit);
        assert!(
            executable(address),
            "{backend:?}: freed while a function is alive"
        );
        let out = f.call(&[AnyView::from(14i64)]).unwrap();
        assert_eq!(out.cast::<i64>().unwrap(), 42, "{backend:?}");
        drop(f);
        assert!(
            !executable(address),
            "{backend:?}: code still executable after the last drop"
        );
    }
}
