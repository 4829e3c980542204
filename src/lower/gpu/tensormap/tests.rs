//! Descriptors of one kind share one miss function per host function; the function is the
//! module's only copy of the rules and the encoder's call.

use crate::ir;
use crate::lower::{LowerOptions, lower};

/// A PTX device binary `name` whose kernel `k` takes `n` descriptors.
fn binary(name: &str, n: usize) -> String {
    let params: Vec<String> = (0..n)
        .map(|i| format!(".param .align 64 .b8 d{i}[128]"))
        .collect();
    let ptx = format!(
        ".version 8.0\\n.target sm_90a\\n.address_size 64\\n.visible .entry k({}) {{ ret; }}\\n",
        params.join(", ")
    );
    format!(
        "device_binary {name} {{\n    format ptx;\n    data b\"{ptx}\";\n    kernels [k];\n}}\n\n"
    )
}

/// A host function `name` that launches `binary`'s kernel with the descriptors `maps` (IR
/// text of `tensormap(..)` arguments) of its tensors `a`, `b` (float16) and `c` (float32).
fn host(name: &str, binary: &str, maps: &[&str]) -> String {
    let tensors = "a: tensor[(m, n), float16, device=cuda], b: tensor[(p, q), float16, device=cuda], \
                   c: tensor[(r, s), float32, device=cuda]";
    let args = maps.join(", ");
    format!("fn {name}({tensors}) {{\n    launch {binary}.k[grid=(1), block=(128)]({args});\n}}\n")
}

/// A module whose `fn f` launches with the descriptors `maps` and, when `second`, whose `fn g`
/// launches with the first of them from a host function of its own.
fn module(maps: &[&str], second: bool) -> String {
    let mut text = format!("module m;\n\n{}", binary("kernels", maps.len()));
    if second {
        text += &binary("other", 1);
    }
    text += &host("f", "kernels", maps);
    if second {
        text += &host("g", "other", &maps[..1]);
    }
    text
}

/// The miss functions the lowering of `text` makes.
fn misses(text: &str) -> usize {
    let module =
        ir::parse(text).unwrap_or_else(|e| panic!("test IR does not parse: {e:?}\n{text}"));
    let verified =
        ir::verify(&module).unwrap_or_else(|e| panic!("test IR does not verify: {e:?}\n{text}"));
    let lowered = lower(&verified, &LowerOptions::default()).expect("lowers");
    lowered
        .functions
        .iter()
        .filter(|f| f.name.contains("tensormap_miss"))
        .count()
}

#[test]
fn descriptors_of_one_kind_share_one_miss_function() {
    // Other tensors, other boxes: one kind (rank 2, f16, the same options, constant boxes).
    let maps = [
        "tensormap(a, box=(64, 64), swizzle=b128)",
        "tensormap(b, box=(128, 32), swizzle=b128)",
        "tensormap(a, box=(8, 64), swizzle=b128)",
    ];
    assert_eq!(misses(&module(&maps, false)), 1);
}

#[test]
fn each_kind_of_descriptor_has_its_own_miss_function() {
    let kinds = [
        // An element type, a swizzle, a run-time box, an element stride: four more kinds.
        "tensormap(c, box=(64, 16), swizzle=b128)",
        "tensormap(a, box=(64, 32), swizzle=b64)",
        "tensormap(a, box=(64, cast<i64>(m)), swizzle=b128)",
        "tensormap(a, box=(64, 64), swizzle=b128, element_strides=(1, 2))",
    ];
    let mut maps = vec!["tensormap(a, box=(64, 64), swizzle=b128)"];
    maps.extend(kinds);
    assert_eq!(misses(&module(&maps, false)), 5);
}

#[test]
fn each_host_function_has_its_own_miss_functions() {
    // Its messages end with the host function's own `when calling` line.
    let maps = ["tensormap(a, box=(64, 64), swizzle=b128)"];
    assert_eq!(misses(&module(&maps, true)), 2);
}
