//! `tdm(..)` launch arguments (AMD TDM descriptors): parsed and printed back, checked against
//! the tensor and the kernel's parameter, and refused on CUDA launches.

use super::*;

/// A function launching the fixture's `tdm2` (a 48-byte descriptor, then an `i32`) with
/// `desc` for the descriptor; `x` a 2-D half tensor, `y` a 3-D float one.
fn tdm_launch(params: &str, desc: &str) -> String {
    format!(
        "module m;\n\ndevice_binary kernels {{\n    format hsaco;\n    file \"kernels_gfx942.hsaco\";\n    \
         kernels [tdm2, tdm3];\n}}\n\nfn f(x: tensor[(m, n), float16, device=rocm], y: tensor[(a, b, c), \
         float32, device=rocm]{params}) {{\n    \
         launch kernels.tdm2[grid=(1), block=(128)]({desc}, cast<i32>(m));\n}}\n"
    )
}

#[test]
fn a_tdm_argument_passes_and_prints_back() {
    for desc in [
        "tdm(x, block=(64, 64), warps=4, pad=(64, 8))",
        "tdm(x, block=(16, 128), warps=8)",
    ] {
        let text = tdm_launch("", desc);
        assert_eq!(check_fixture(&text).as_deref(), Ok(""), "{desc}");
        let (module, _) = parse_in_dir(&text, Some(&fixtures())).unwrap();
        let printed = print(&module);
        assert!(printed.contains(desc), "{printed}");
        assert_eq!(parse(&printed).unwrap(), module);
    }
}

#[test]
fn the_descriptors_size_is_checked_against_the_kernels_parameter() {
    assert_fixture_error(
        &tdm_launch("", "tdm(y, block=(2, 16, 64), warps=8)"),
        "kernel argument 0 of `tdm2` is rank-3 tdm (80 bytes), but the kernel's parameter is \
         48-byte by_value (48 bytes)",
        "10:5",
    );
}

#[test]
fn what_a_descriptor_cannot_describe_is_an_error() {
    let what = "kernel argument 0 (tdm of `x`)";
    for (params, desc, message) in [
        ("", "tdm(x, block=(64), warps=4)", format!("{what}: block has 1 entries; `x` (rank 2) needs 2")),
        ("", "tdm(x, block=(0, 70000), warps=4)", format!("{what}: block[0] is 0; it must be 1 to 65535")),
        ("", "tdm(x, block=(64, 64), warps=0)", format!("{what}: warps is 0; it must be 1 to 32")),
        (
            "",
            "tdm(x, block=(64, 64), warps=4, pad=(63, 8))",
            format!("{what}: pad=(63, 8) is not a whole number of 32-bit words of 16-bit elements"),
        ),
        (
            "",
            "tdm(x, block=(64, 64), warps=4, pad=(18446744073709551615, 8))",
            format!(
                "{what}: pad=(18446744073709551615, 8) is too large: the interval must be at \
                 most 256 words, the amount 128"
            ),
        ),
        (
            "",
            "tdm(x, block=(64, 64), warps=4, pad=(6, 8))",
            format!(
                "{what}: the padding interval is 6 elements = 3 words; it must be a power of \
                 two of 2 to 256 words"
            ),
        ),
        (
            "",
            "tdm(x, block=(64, 64), warps=4, pad=(64, 512))",
            format!("{what}: the padding amount is 512 elements = 256 words; it must be 1 to 128 words"),
        ),
        ("", "tdm(z, block=(64, 64), warps=4)", "kernel argument 0 (tdm of `z`): no tensor parameter `z`".to_owned()),
        (
            ", z: tensor[(k,), dtype(0, 4, 1), device=rocm]",
            "tdm(z, block=(64), warps=4)",
            "kernel argument 0 (tdm of `z`): `z` has dtype int4; a TDM descriptor takes elements of 8, 16, 32 or 64 bits".to_owned(),
        ),
        (
            ", z: tensor[any, float32, device=rocm, strides=any]",
            "tdm(z, block=(64), warps=4)",
            "kernel argument 0 (tdm of `z`): `z` is a tensor of any rank; a descriptor needs one block extent per dimension, so the tensor's rank must be fixed".to_owned(),
        ),
        (
            ", z: tensor[(k,), any, device=rocm]",
            "tdm(z, block=(64), warps=4)",
            "kernel argument 0 (tdm of `z`): `z` accepts any dtype, so the descriptor's element size is unknown; declare the tensor's dtype".to_owned(),
        ),
    ] {
        let text = tdm_launch(params, desc);
        assert!(check_fixture(&text).is_err(), "accepted: {desc}");
        assert_fixture_error(&text, &message, "10:5");
    }
}

#[test]
fn tdm_options_are_parsed_strictly() {
    for (desc, message) in [
        ("tdm(x, warps=4)", "`tdm(x, ...)` needs `block=`"),
        ("tdm(x, block=(64, 64))", "`tdm(x, ...)` needs `warps=`"),
        (
            "tdm(x, block=(64, 64), warps=4, warps=8)",
            "duplicate tdm option `warps`",
        ),
        (
            "tdm(x, block=(64, 64), warps=4, swizzle=b128)",
            "unknown tdm option `swizzle`; the options are `block`, `warps`, `pad`",
        ),
        (
            "tdm(x, block=(64, 64), warps=4, pad=(64))",
            "pad takes (interval, amount), found 1 values",
        ),
        ("tdm(x, block=(m, 64), warps=4)", "expected a block extent"),
    ] {
        let text = tdm_launch("", desc);
        let err = parse_in_dir(&text, Some(&fixtures())).expect_err(desc);
        assert!(err.to_string().contains(message), "{desc}: {err}");
    }
}

#[test]
fn tdm_descriptors_are_errors_on_cuda() {
    let text =
        with_launch("launch kernels.k[grid=(1), block=(1)](tdm(x, block=(64), warps=4), p);");
    assert_error(
        &text,
        "kernel argument 0 is an AMD TDM descriptor (`tdm`), which CUDA kernels do not take \
         (device binary `kernels` is a CUDA binary; use `tensormap`)",
        "10:5",
    );
}
