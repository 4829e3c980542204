//! `tensormap(..)` and `tensormap_im2col(..)` launch arguments (TMA descriptors): print, parse,
//! build, and every rule the verifier decides from constants.

use super::*;

/// A module with a descriptor kernel and a function `f` of `a` (f16, 2-D) holding `stmt`.
fn with_tma(params: &str, stmt: &str) -> String {
    format!(
        "module m;\n\ndevice_binary tma {{\n    format ptx;\n    data b\".entry c(.param .align 64 .b8 m[128], .param .u32 n)\";\n    kernels [c];\n}}\n\nfn f(a: tensor[(m, k), float16, device=cuda]{params}) {{\n    {stmt}\n}}\n"
    )
}

#[test]
fn tensormap_arguments_print_parse_and_build_the_same() {
    let stmt = "launch tma.c[grid=(1), block=(1)](tensormap(a, box=(64, 64), element_strides=(1, 2), interleave=b16, swizzle=b128_atom32, l2_promotion=b256, oob_fill=nan, dtype=bf16), cast<u32>(m));";
    let text = with_tma("", stmt);
    let module = parse(&text).unwrap();
    let printed = print::print(&module);
    assert!(printed.contains(stmt), "{printed}");
    assert_eq!(parse(&printed).unwrap(), module);
    // Options at their zero value are not printed.
    let plain = "launch tma.c[grid=(1), block=(1)](tensormap(a, box=(64, 64)), 1u32);";
    let short = parse(&with_tma("", plain)).unwrap();
    assert!(print::print(&short).contains(plain));
    // The builder makes the same launch.
    let built = LaunchBuilder::new("tma", "c")
        .grid([int(1)])
        .block([int(1)])
        .arg(tensormap("a", [int(64), int(64)]))
        .arg(Expr::Int {
            value: 1,
            ty: IntType::U32,
        })
        .finish();
    let ir::Stmt::Launch(parsed) = &short.functions[0].body[0] else {
        panic!("a launch")
    };
    assert_eq!(**parsed, built);
    verify(&short).expect("valid");
}

#[test]
fn tensormap_parse_errors_name_the_option() {
    let parse_err = |stmt: &str| {
        let text = with_tma("", stmt);
        parse(&text).unwrap_err().render("input.scir", &text)
    };
    let e = parse_err("launch tma.c[grid=(1), block=(1)](tensormap(a, swizzle=b128), 1u32);");
    assert!(e.contains("`tensormap(a, ...)` needs `box=`"), "{e}");
    let e = parse_err(
        "launch tma.c[grid=(1), block=(1)](tensormap(a, box=(8, 8), swizzle=b100), 1u32);",
    );
    assert!(e.contains("unknown swizzle `b100`; expected one of none, b32, b64, b128, b128_atom32, b128_atom32_flip8, b128_atom64"), "{e}");
    let e =
        parse_err("launch tma.c[grid=(1), block=(1)](tensormap(a, box=(8, 8), box=(8, 8)), 1u32);");
    assert!(e.contains("duplicate tensormap option `box`"), "{e}");
    let e =
        parse_err("launch tma.c[grid=(1), block=(1)](tensormap(a, box=(8, 8), tile=(1)), 1u32);");
    assert!(e.contains("unknown tensormap option `tile`"), "{e}");
}

#[test]
fn tensormap_rules_decided_by_constants_are_verifier_errors() {
    // `at`: the text the error points at (its first occurrence in the argument), or "" for
    // the whole statement.
    let err = |params: &str, arg: &str, message: &str, at: &str| {
        let stmt = format!("launch tma.c[grid=(1), block=(1)]({arg}, 1u32);");
        let open = stmt.find('(').unwrap();
        let column = match at {
            "" => 5,
            needle => 5 + open + stmt[open..].find(needle).unwrap(),
        };
        assert_error(&with_tma(params, &stmt), message, &format!("10:{column}"));
    };
    let prefix = "kernel argument 0 (tensormap of `a`): ";
    err(
        "",
        "tensormap(a, box=(64, 300))",
        &format!("{prefix}box[1] is 300; it must be 1 to 256"),
        "300",
    );
    err(
        "",
        "tensormap(a, box=(0, 64))",
        &format!("{prefix}box[0] is 0; it must be 1 to 256"),
        "0, 64",
    );
    err(
        "",
        "tensormap(a, box=(64, 4))",
        &format!("{prefix}the inner box is 8 bytes (4 x 2 bytes); it must be a multiple of 16"),
        "4)",
    );
    err(
        "",
        "tensormap(a, box=(64, 128), swizzle=b64)",
        &format!("{prefix}the inner box is 256 bytes; swizzle=b64 allows at most 64"),
        "128",
    );
    err(
        "",
        "tensormap(a, box=(64, 64), element_strides=(1, 9))",
        &format!("{prefix}element_strides[1] is 9; it must be 1 to 8"),
        "9",
    );
    err(
        "",
        "tensormap(a, box=(64, 64), element_strides=(1))",
        &format!("{prefix}element_strides has 1 entries; `a` has 2 dimensions"),
        "",
    );
    err(
        "",
        "tensormap(a, box=(64))",
        &format!("{prefix}box has 1 entries; `a` (rank 2) needs 2"),
        "",
    );
    err(
        "",
        "tensormap(a, box=(8, 8), interleave=b16)",
        &format!("{prefix}rank is 2; it must be 3 to 5 with interleave"),
        "",
    );
    err(
        "",
        "tensormap(a, box=(8, 8), oob_fill=nan, dtype=u16)",
        &format!("{prefix}oob_fill=nan needs a float element type, found u16"),
        "",
    );
    err(
        ", b: tensor[(4, 4, 4), int32, device=cuda]",
        "tensormap(b, box=(4, 4, 8), interleave=b32, swizzle=b64)",
        "kernel argument 0 (tensormap of `b`): interleave=b32 needs swizzle=b32, found swizzle=b64",
        "",
    );
    err(
        ", c: tensor[(4,), float32x4, device=cuda]",
        "tensormap(c, box=(4))",
        "kernel argument 0 (tensormap of `c`): `c` has dtype float32x4, which no TMA element type represents; give `dtype=`",
        "",
    );
    err(
        ", d: tensor[(4,), any, device=cuda]",
        "tensormap(d, box=(8))",
        "kernel argument 0 (tensormap of `d`): `d` accepts any dtype, so the descriptor's element type is unknown",
        "",
    );
    err(
        ", p: ptr",
        "tensormap(p, box=(8))",
        "kernel argument 0 (tensormap of `p`): `p` is a ptr, not a tensor parameter",
        "",
    );
    err(
        "",
        "tensormap(z, box=(8))",
        "kernel argument 0 (tensormap of `z`): no tensor parameter `z`",
        "",
    );
    err(
        ", r: tensor[any, float16, device=cuda, strides=any]",
        "tensormap(r, box=(8))",
        "kernel argument 0 (tensormap of `r`): `r` is a tensor of any rank; a descriptor needs one box entry per dimension, so the tensor's rank must be fixed",
        "",
    );
    err(
        ", bm: f32",
        "tensormap(a, box=(bm, 64))",
        "kernel argument 0 (tensormap of `a`): box and element strides are integers, found f32",
        "bm",
    );
}

/// A launch of `tma.c` with a descriptor argument `arg` over `a: tensor[(m, SHAPE), uint8]`.
fn with_bytes(shape: &str, arg: &str) -> String {
    with_tma(
        "",
        &format!("launch tma.c[grid=(1), block=(1)]({arg}, 1u32);"),
    )
    .replace("(m, k), float16", &format!("(m, {shape}), uint8"))
}

#[test]
fn tensormap_packed_dtypes_verify_over_byte_tensors() {
    for arg in [
        "tensormap(a, box=(8, 64), dtype=u4x16_align8)",
        "tensormap(a, box=(8, 256), swizzle=b128, dtype=u4x16_align8)",
        "tensormap(a, box=(8, 128), dtype=u4x16_align16)",
        "tensormap(a, box=(8, 128), swizzle=b128_atom32, dtype=u4x16_align16)",
        "tensormap(a, box=(8, 128), swizzle=b128, dtype=u6x16_align16)",
        "tensormap(a, box=(8, 128), swizzle=b128_atom64, dtype=u6x16_align16)",
    ] {
        let text = with_bytes("k", arg);
        let module = parse(&text).unwrap();
        verify(&module).unwrap_or_else(|e| panic!("{arg}: {e:?}"));
    }
    let text = with_bytes("192", "tensormap(a, box=(8, 128), dtype=u6x16_align16)");
    verify(&parse(&text).unwrap()).unwrap();
}

#[test]
fn tensormap_packed_rules_decided_by_constants_are_verifier_errors() {
    let err = |shape: &str, arg: &str, message: &str, at: &str| {
        let text = with_bytes(shape, arg);
        let line = text.lines().nth(9).unwrap();
        let column = match at {
            "" => 5,
            needle => {
                let open = line.find('(').unwrap();
                1 + open + line[open..].find(needle).unwrap()
            }
        };
        assert_error(&text, message, &format!("10:{column}"));
    };
    let prefix = "kernel argument 0 (tensormap of `a`): ";
    err(
        "k",
        "tensormap(a, box=(8, 64), dtype=u4x16_align16)",
        &format!("{prefix}box[1] is 64; dtype=u4x16_align16 needs exactly 128"),
        "64)",
    );
    err(
        "k",
        "tensormap(a, box=(8, 16), dtype=u4x16_align8)",
        &format!(
            "{prefix}the inner box is 16 x 4 bits = 64 bits; it must be a multiple of 16 bytes (128 bits)"
        ),
        "16)",
    );
    err(
        "k",
        "tensormap(a, box=(8, 128), swizzle=b32, dtype=u4x16_align8)",
        &format!(
            "{prefix}the inner box is 128 x 4 bits = 512 bits; swizzle=b32 allows at most 32 bytes (256 bits)"
        ),
        "128",
    );
    err(
        "k",
        "tensormap(a, box=(8, 128), swizzle=b64, dtype=u4x16_align16)",
        &format!(
            "{prefix}dtype=u4x16_align16 allows swizzle=none, b128, b128_atom32, found swizzle=b64"
        ),
        "",
    );
    err(
        "k",
        "tensormap(a, box=(8, 128), swizzle=b128_atom64, dtype=u4x16_align16)",
        &format!(
            "{prefix}dtype=u4x16_align16 allows swizzle=none, b128, b128_atom32, found swizzle=b128_atom64"
        ),
        "",
    );
    err(
        "k",
        "tensormap(a, box=(8, 128), swizzle=b128_atom32_flip8, dtype=u6x16_align16)",
        &format!(
            "{prefix}dtype=u6x16_align16 allows swizzle=none, b128, b128_atom32, b128_atom64, found swizzle=b128_atom32_flip8"
        ),
        "",
    );
    err(
        "k, 4",
        "tensormap(a, box=(8, 128, 8), interleave=b16, dtype=u6x16_align16)",
        &format!("{prefix}dtype=u6x16_align16 needs interleave=none, found interleave=b16"),
        "",
    );
    err(
        "k",
        "tensormap(a, box=(8, 64), oob_fill=nan, dtype=u4x16_align8)",
        &format!("{prefix}oob_fill=nan needs a float element type, found u4x16_align8"),
        "",
    );
    err(
        "100",
        "tensormap(a, box=(8, 128), dtype=u4x16_align16)",
        &format!(
            "{prefix}`a`'s innermost extent is 100 bytes; dtype=u4x16_align16 needs a multiple of 64 bytes (128 values)"
        ),
        "",
    );
    err(
        "64",
        "tensormap(a, box=(8, 128), dtype=u6x16_align16)",
        &format!(
            "{prefix}`a`'s innermost extent is 64 bytes; dtype=u6x16_align16 needs a multiple of 96 bytes (128 values)"
        ),
        "",
    );
    // An im2col descriptor's inner box is its channels per pixel.
    err(
        "h, w, c",
        "tensormap_im2col(a, lower=(0, 0), upper=(0, 0), channels=64, pixels=32, dtype=u4x16_align16)",
        &format!("{prefix}channels is 64; dtype=u4x16_align16 needs exactly 128"),
        "64,",
    );
    // The tensor is a container of bytes.
    let text = with_tma(
        "",
        "launch tma.c[grid=(1), block=(1)](tensormap(a, box=(8, 64), dtype=u4x16_align8), 1u32);",
    );
    assert_error(
        &text,
        "kernel argument 0 (tensormap of `a`): dtype=u4x16_align8 reads `a` as packed bytes, so its dtype must be a 1-byte type (uint8, int8 or a float8 type), found float16",
        "10:5",
    );
}

#[test]
fn a_tensormap_needs_a_128_byte_parameter() {
    let text = with_tma("", "launch tma.c[grid=(1), block=(1)](a.data, 1u32);");
    assert_error(
        &text,
        "kernel argument 0 of `c` is ptr (8 bytes), but the kernel's parameter is b8[128] align 64 (128 bytes)",
        "10:39",
    );
    let text = "module m;\n\ndevice_binary tma {\n    format ptx;\n    data b\".entry c(.param .u64 p, .param .u32 n)\";\n    kernels [c];\n}\n\nfn f(a: tensor[(m, k), float16, device=cuda]) {\n    launch tma.c[grid=(1), block=(1)](tensormap(a, box=(8, 8)), 1u32);\n}\n"
        .to_owned();
    assert_error(
        &text,
        "kernel argument 0 of `c` is tensormap (128 bytes), but the kernel's parameter is u64 (8 bytes)",
        "10:57",
    );
}

#[test]
fn tensormap_im2col_prints_parses_builds_and_verifies() {
    let params = ", x: tensor[(n, h, w, c), float16, device=cuda], cpp: i32";
    let stmt = "launch tma.c[grid=(1), block=(1)](tensormap_im2col(x, lower=(-1, -1), upper=(1, 1), channels=64, pixels=cpp, swizzle=b128), 1u32);";
    let text = with_tma(params, stmt);
    let module = parse(&text).unwrap();
    let printed = print::print(&module);
    assert!(printed.contains(stmt), "{printed}");
    assert_eq!(parse(&printed).unwrap(), module);
    verify(&module).expect("valid");
    let built = tensormap_im2col(
        "x",
        [int(-1), int(-1)],
        [int(1), int(1)],
        int(64),
        var("cpp"),
    )
    .swizzle(safecall::ir::Swizzle::B128);
    let ir::Stmt::Launch(parsed) = &module.functions[0].body[0] else {
        panic!("a launch")
    };
    assert_eq!(parsed.args[0], ir::LaunchArg::TensorMap(Box::new(built)));

    let err = |params: &str, arg: &str, message: &str| {
        let stmt = format!("launch tma.c[grid=(1), block=(1)]({arg}, 1u32);");
        let rendered = diagnose(&with_tma(params, &stmt));
        assert!(
            rendered.contains(message),
            "expected {message:?} in:\n{rendered}"
        );
    };
    let x = ", x: tensor[(n, h, w, c), float16, device=cuda]";
    let prefix = "kernel argument 0 (tensormap of `x`): ";
    err(
        "",
        "tensormap_im2col(a, lower=(0), upper=(0), channels=8, pixels=8)",
        "kernel argument 0 (tensormap of `a`): rank is 2; it must be 3 to 5 for im2col",
    );
    err(
        x,
        "tensormap_im2col(x, lower=(-200, 0), upper=(0, 0), channels=8, pixels=8)",
        &format!("{prefix}lower[0] is -200; it must be -128 to 127"),
    );
    err(
        x,
        "tensormap_im2col(x, lower=(0, 0), upper=(0, 0), channels=300, pixels=8)",
        &format!("{prefix}channels is 300; it must be 1 to 256"),
    );
    err(
        x,
        "tensormap_im2col(x, lower=(0, 0), upper=(0, 0), channels=8, pixels=2000)",
        &format!("{prefix}pixels is 2000; it must be 1 to 1024"),
    );
    err(
        x,
        "tensormap_im2col(x, lower=(0), upper=(0, 0), channels=8, pixels=8)",
        &format!("{prefix}lower has 1 entries; `x` (rank 4) needs 2"),
    );
    err(
        x,
        "tensormap_im2col(x, lower=(0, 0), upper=(0, 0), channels=128, pixels=8, swizzle=b64)",
        &format!("{prefix}the inner box is 256 bytes; swizzle=b64 allows at most 64"),
    );
    let e = diagnose(&with_tma(
        x,
        "launch tma.c[grid=(1), block=(1)](tensormap_im2col(x, box=(1, 1, 1, 8)), 1u32);",
    ));
    assert!(
        e.contains("`tensormap_im2col` takes `lower`, `upper`, `channels`, `pixels`, not `box`"),
        "{e}"
    );
    let e = diagnose(&with_tma(
        x,
        "launch tma.c[grid=(1), block=(1)](tensormap_im2col(x, lower=(0, 0), upper=(0, 0), channels=8), 1u32);",
    ));
    assert!(
        e.contains("`tensormap_im2col(x, ...)` needs `pixels=`"),
        "{e}"
    );
}
