//! The GPU items of the IR: `device_binary` and `launch` through the parser, the printer,
//! the builder and the verifier (each error with its message and the place it points at).

use safecall::ir::build::*;
use safecall::ir::parse::{parse, parse_in_dir, parse_with_source_map};
use safecall::ir::verify::{Source, render_errors, render_warnings, verify};
use safecall::ir::{self, BinaryFormat, ClusterPolicy, Expr, IntType, ParamType, print};

mod hip;
mod tdm;
mod tensormap;

use crate::common::diagnostics::{assert_error, assert_rendered, diagnose};

const HEAD: &str = "module m;\n\ndevice_binary kernels {\n    format ptx;\n    data b\".entry k(.param .u64 a, .param .u64 b)\";\n    kernels [k, k2];\n}\n\n";

/// A function `f` with a CUDA tensor `x` and the statement `stmt`.
fn with_launch(stmt: &str) -> String {
    format!(
        "{HEAD}fn f(x: tensor[(n,), float32, device=cuda], p: ptr, s: str) {{\n    {stmt}\n}}\n"
    )
}

#[test]
fn launches_and_binaries_print_and_parse_back() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/gpu/launch.scir"
    ))
    .unwrap();
    let module = parse(&text).unwrap();
    assert_eq!(module.device_binaries.len(), 3);
    assert_eq!(module.device_binaries[1].format, BinaryFormat::Cubin);
    assert_eq!(module.device_binaries[1].data, b"FAKE_INVALID_IMAGE");
    verify(&module).unwrap();
    let printed = print(&module);
    assert!(printed.contains(
        "launch kernels.scale[grid=(gx, gy), block=(bx, by, bz), shared_mem=smem, stream=s, device=dev](p, a, flag, b, h);"
    ), "{printed}");
    assert!(
        printed.contains(
            "launch kernels.empty[grid=(g), block=(128), cluster=(c, 1, 1), device=0]();"
        )
    );
    assert_eq!(parse(&printed).unwrap(), module);
}

#[test]
fn settings_may_come_in_any_order() {
    let a = parse(&with_launch(
        "launch kernels.k[device=0, block=(32, 2), grid=(4)](p);",
    ))
    .unwrap();
    let b = parse(&with_launch(
        "launch kernels.k[grid=(4), block=(32, 2), device=0](p);",
    ))
    .unwrap();
    assert_eq!(a, b);
}

#[test]
fn launch_is_not_reserved() {
    let text = "module m;\n\nextern fn launch(i64);\n\nfn f() {\n    let mut launch = 1;\n    launch = 2;\n    call launch(launch);\n}\n";
    let module = parse(text).unwrap();
    verify(&module).unwrap();
    assert_eq!(print(&module), text);
}

#[test]
fn file_paths_are_read_relative_to_the_ir_files_directory() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ir"));
    let text = std::fs::read_to_string(dir.join("cuda_add_one.scir")).unwrap();
    let (module, _) = parse_in_dir(&text, Some(dir)).unwrap();
    let ptx = std::fs::read(dir.join("cuda_add_one.ptx")).unwrap();
    assert_eq!(module.device_binaries[0].data, ptx);
    assert_eq!(module.device_binaries[0].kernels, ["add_one", "empty"]);
    // The printed form embeds the bytes, so it parses anywhere.
    assert_eq!(parse(&print(&module)).unwrap(), module);

    let rendered = parse_in_dir(&text, Some(std::path::Path::new("/nonexistent")))
        .unwrap_err()
        .render("cuda_add_one.scir", &text);
    assert!(
        rendered.contains("cannot read device binary file `/nonexistent/cuda_add_one.ptx`"),
        "{rendered}"
    );
}

#[test]
fn the_builder_makes_what_the_parser_makes() {
    let mut m = ModuleBuilder::new("m");
    m.device_binary(
        "kernels",
        BinaryFormat::Ptx,
        b".entry k(.param .u64 a, .param .u64 b)".to_vec(),
        ["k", "k2"],
    );
    m.build_function("f", |f| {
        let x = f.tensor(
            "x",
            TensorSpecBuilder::new(["n"])
                .dtype_name("float32")
                .device(2),
        );
        f.param("p", ParamType::Ptr);
        f.param("s", ParamType::Str);
        f.launch(
            LaunchBuilder::new("kernels", "k")
                .grid([ceil_div(var("n"), 256)])
                .block([int_of(IntType::I32, 256)])
                .shared_mem(int(0))
                .args([x.data(), var("p")]),
        );
    });
    let built = m.build_verified().unwrap().into_inner();
    let text = with_launch(
        "launch kernels.k[grid=(ceil_div(n, 256)), block=(256i32), shared_mem=0](x.data, p);",
    );
    assert_eq!(built, parse(&text).unwrap());
}

#[test]
fn parse_errors_say_what_is_wrong() {
    assert_error(
        &with_launch("launch kernels.k[grid=(1), blocks=(1)]();"),
        "unknown launch setting `blocks`",
        "10:32",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1)]();"),
        "missing `block=(...)` in the launch configuration",
        "10:21",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), grid=(2)]();"),
        "duplicate launch setting `grid`",
        "10:43",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format sass;\n}\n",
        "expected one of `cubin`, `fatbin`, or `ptx`",
        "3:12",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format ptx;\n    kernels [k];\n}\n",
        "missing `data b\"...\"` or `file \"PATH\";` in `device_binary`",
        "5:1",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format ptx;\n    file \"no/such.ptx\";\n    kernels [k];\n}\n",
        "cannot read device binary file `no/such.ptx`",
        "4:10",
    );
}

#[test]
fn verifier_errors_point_at_the_launch() {
    assert_error(
        &with_launch("launch kernels.nope[grid=(1), block=(1)]();"),
        "unknown kernel `nope`: device binary `kernels` lists k, k2",
        "10:12",
    );
    assert_error(
        &with_launch("launch other.k[grid=(1), block=(1)]();"),
        "unknown device binary `other`; the module declares kernels",
        "10:12",
    );
    assert_error(
        "module m;\nfn f(x: tensor[(n,), float32, device=cuda]) {\n    launch k.k[grid=(1), block=(1)]();\n}\n",
        "`launch` needs a device binary, but the module declares none",
        "3:12",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1, 1, 1, 1), block=(1)]();"),
        "grid has 4 dimensions; it takes 1 to 3",
        "10:5",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1.5)]();"),
        "block[0] must be an integer, found f64",
        "10:39",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), shared_mem=true]();"),
        "shared_mem must be an integer, found bool",
        "10:54",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), stream=3]();"),
        "the stream must be ptr, found i64",
        "10:50",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), function=7]();"),
        "the kernel's handle must be ptr, found i64",
        "10:52",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1)](s);"),
        "kernel argument 0 must be a scalar or a pointer, found str (pass a tensor's `.data`)",
        "10:43",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1)](x);"),
        "kernel argument 0 must be a scalar or a pointer, found tensor",
        "10:43",
    );
    assert_error(
        &format!("{HEAD}fn g(p: ptr) {{\n    launch kernels.k[grid=(1), block=(1)](p);\n}}\n"),
        "the launch has no `device=`, and `g` has no CUDA tensor parameter (`device=cuda`) to take the device from",
        "10:5",
    );
}

#[test]
fn verifier_checks_device_binaries() {
    assert_error(
        "module m;\ndevice_binary b {\n    format ptx;\n    data b\"ab\\x00cd\";\n    kernels [k, k];\n}\n",
        "PTX text has a NUL byte at offset 2; only a final NUL is allowed",
        "4:10",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format ptx;\n    data b\"ab\";\n    kernels [k, k];\n}\n",
        "kernel `k` is listed twice",
        "5:17",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format cubin;\n    data b\"\";\n    kernels [k];\n}\n",
        "the device binary's image is empty",
        "4:10",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format cubin;\n    data b\"x\";\n    kernels [];\n}\n",
        "a device binary lists at least one kernel",
        "2:15",
    );
    assert_error(
        "module m;\ndevice_binary b {\n    format cubin;\n    data b\"x\";\n    kernels [k];\n}\ndevice_binary b {\n    format cubin;\n    data b\"y\";\n    kernels [k];\n}\n",
        "duplicate device binary `b` (item 0 has the same name)",
        "7:15",
    );
}

#[test]
fn every_launch_setting_prints_parses_and_builds_the_same() {
    let stmt = "launch kernels.k[grid=(4), block=(128), cluster=(2, 1, 1), device=0, pdl=true, \
                cooperative=b, cluster_policy=load_balancing, preferred_cluster=(4, 1, 1), \
                priority=-1, function=p](p, p);";
    let text = format!("{HEAD}fn f(p: ptr, b: bool) {{\n    {stmt}\n}}\n");
    let parsed = parse(&text).unwrap();
    verify(&parsed).unwrap();
    assert_eq!(print(&parsed), text);
    // Written in another order, the settings are kept in kind order.
    let shuffled = text.replace(
        "grid=(4), block=(128), cluster=(2, 1, 1), device=0, pdl=true",
        "pdl=true, device=0, cluster=(2, 1, 1), block=(128), grid=(4)",
    );
    assert_eq!(parse(&shuffled).unwrap(), parsed);

    let mut m = ModuleBuilder::new("m");
    m.device_binary(
        "kernels",
        BinaryFormat::Ptx,
        b".entry k(.param .u64 a, .param .u64 b)".to_vec(),
        ["k", "k2"],
    );
    m.build_function("f", |f| {
        f.param("p", ParamType::Ptr);
        f.param("b", ParamType::Bool);
        f.launch(
            LaunchBuilder::new("kernels", "k")
                .function(var("p"))
                .priority(int(-1))
                .preferred_cluster([int(4), int(1), int(1)])
                .cluster_policy(ClusterPolicy::LoadBalancing)
                .cooperative(var("b"))
                .pdl(boolean(true))
                .device(int(0))
                .cluster([int(2), int(1), int(1)])
                .block([int(128)])
                .grid([int(4)])
                .args([var("p"), var("p")]),
        );
    });
    assert_eq!(m.build_verified().unwrap().into_inner(), parsed);
}

#[test]
fn launch_setting_errors_name_the_setting() {
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), cluster_policy=round_robin]();"),
        "unknown cluster policy `round_robin`; expected one of default, spread, load_balancing",
        "10:58",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), pdl=true, pdl=false]();"),
        "duplicate launch setting `pdl`",
        "10:53",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), pdl=1]();"),
        "pdl must be bool, found i64",
        "10:47",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), cooperative=p]();"),
        "cooperative must be bool, found ptr",
        "10:55",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), priority=1.0]();"),
        "priority must be an integer, found f64",
        "10:52",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), priority=4294967296]();"),
        "priority is 4294967296; it must fit in an i32",
        "10:52",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), preferred_cluster=(2)]();"),
        "`preferred_cluster` needs a `cluster`",
        "10:62",
    );
    assert_error(
        &with_launch(
            "launch kernels.k[grid=(1), block=(1), cluster=(2, 2), preferred_cluster=(4, 3)]();",
        ),
        "preferred_cluster[1] is 3, not a multiple of cluster[1] (2)",
        "10:81",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), cluster=(0, 1)]();"),
        "cluster[0] is 0; it must be at least 1",
        "10:52",
    );
    assert_error(
        &with_launch("launch kernels.k[grid=(1), block=(1), preferred_cluster=()]();"),
        "preferred_cluster has 0 dimensions; it takes 1 to 3",
        "10:5",
    );
}

// ---- launch arguments against the kernel's parameters ----------------------------------------

/// The directory of the Triton-made binaries (tests/kernel_params/README.md).
fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel_params")
}

/// The Triton kernel `scale` (x: *fp32, y: *fp32, n: i32, a: fp32, b: fp64, flag: i8, h: i16,
/// big: i64, then Triton's two scratch pointers) from `file` in `format`, launched with `args`.
fn scale_launch(format: &str, file: &str, args: &str) -> String {
    format!(
        "module m;\n\ndevice_binary kernels {{\n    format {format};\n    file \"{file}\";\n    \
         kernels [scale];\n}}\n\nfn f(x: tensor[(n,), float32, device=cuda], y: ptr, n32: i32, \
         a: f32, b: f64, flag: bool, h: i16, big: i64, s: ptr) {{\n    \
         launch kernels.scale[grid=(1), block=(128)]({args});\n}}\n"
    )
}

const SCALE_ARGS: &str = "x.data, y, n32, a, b, flag, h, big, s, s";

/// Parses `text` (files relative to the fixtures) and verifies it: the rendered errors, or the
/// rendered warnings of the verified module.
fn check_fixture(text: &str) -> Result<String, String> {
    let (module, map) = parse_in_dir(text, Some(&fixtures())).unwrap();
    let source = Source {
        file: "input.scir",
        text,
        map: &map,
    };
    match verify(&module) {
        Ok(v) => Ok(render_warnings(v.warnings(), Some(source))),
        Err(errors) => Err(render_errors(&errors, Some(source))),
    }
}

/// Asserts that `text` fails to verify with `message` at `at`.
fn assert_fixture_error(text: &str, message: &str, at: &str) {
    assert_rendered(&check_fixture(text).expect_err("accepted"), message, at);
}

#[test]
fn launches_matching_the_kernel_pass_in_every_format() {
    for (format, file) in [
        ("ptx", "scale_sm90.ptx"),
        ("cubin", "scale_sm90.cubin"),
        ("fatbin", "scale.fatbin"),
    ] {
        assert_eq!(
            check_fixture(&scale_launch(format, file, SCALE_ARGS)).as_deref(),
            Ok(""),
            "{format}"
        );
    }
    // A cubin gives sizes only: an i32 where the kernel takes an f32 is not seen there.
    let swapped = "x.data, y, n32, n32, b, flag, h, big, s, s";
    assert!(check_fixture(&scale_launch("cubin", "scale_sm90.cubin", swapped)).is_ok());
}

#[test]
fn a_launch_with_the_wrong_argument_count_lists_both() {
    let nine = "x.data, y, n32, a, b, flag, h, big, s";
    assert_fixture_error(
        &scale_launch("ptx", "scale_sm90.ptx", nine),
        "kernel `scale` takes 10 parameters (64 bytes: u64, u64, u32, f32, f64, u8, u16, u64, \
         u64, u64); the launch passes 9 (ptr, ptr, i32, f32, f64, bool, i16, i64, ptr)",
        "10:5",
    );
    assert_fixture_error(
        &scale_launch("cubin", "scale_sm90.cubin", nine),
        "kernel `scale` takes 10 parameters (64 bytes: 8-byte, 8-byte, 4-byte, 4-byte, 8-byte, \
         1-byte, 2-byte, 8-byte, 8-byte, 8-byte); the launch passes 9",
        "10:5",
    );
}

#[test]
fn a_launch_argument_of_the_wrong_size_or_type_is_named() {
    // The arguments start at column 49.
    assert_fixture_error(
        &scale_launch(
            "ptx",
            "scale_sm90.ptx",
            "x.data, y, n32, b, a, flag, h, big, s, s",
        ),
        "kernel argument 3 of `scale` is f64 (8 bytes), but the kernel's parameter is f32 (4 bytes)",
        "10:65",
    );
    assert_fixture_error(
        &scale_launch(
            "fatbin",
            "scale.fatbin",
            "x.data, y, n32, n32, b, flag, h, big, s, s",
        ),
        "kernel argument 3 of `scale` is i32, but the kernel's parameter is f32, which takes only f32",
        "10:65",
    );
    assert_fixture_error(
        &scale_launch(
            "ptx",
            "scale_sm90.ptx",
            "x.data, n32, n32, a, b, flag, h, big, s, s",
        ),
        "kernel argument 1 of `scale` is i32 (4 bytes), but the kernel's parameter is u64 (8 bytes)",
        "10:57",
    );
    assert_fixture_error(
        &scale_launch(
            "cubin",
            "scale_sm90.cubin",
            "x.data, y, n32, a, a, flag, h, big, s, s",
        ),
        "kernel argument 4 of `scale` is f32 (4 bytes), but the kernel's parameter is 8-byte (8 bytes)",
        "10:68",
    );
}

#[test]
fn a_launch_argument_less_aligned_than_the_parameter_is_an_error() {
    let text = format!(
        "{}fn f(x: tensor[(n,), float32, device=cuda], p: ptr) {{\n    launch kernels.k[grid=(1), block=(1)](p);\n}}\n",
        HEAD.replace(
            ".entry k(.param .u64 a, .param .u64 b)",
            ".entry k(.param .align 16 .b8 p[8])"
        )
    );
    assert_error(
        &text,
        "kernel argument 0 of `k` is ptr (aligned to 8 bytes), but the kernel's parameter is b8[8] align 16, aligned to 16 bytes",
        "10:43",
    );
    // Raw bytes of the right size and alignment take any value.
    let fits = text.replace(".align 16 .b8 p[8]", ".align 8 .b8 p[8]");
    verify(&parse(&fits).unwrap()).unwrap();
}

#[test]
fn unreadable_tables_are_warnings_not_errors() {
    for (file, needle, at) in [
        (
            "compressed.fatbin",
            "warning: the kernel parameters of device binary `kernels` (fatbin) cannot be read: member 0 (ELF for sm_90) is compressed",
            "5:10",
        ),
        (
            "disagree.fatbin",
            "warning: the parameters of kernel `scale` are unknown (the members disagree: member 0 (ELF for sm_90) gives 10 parameters",
            "6:14",
        ),
    ] {
        // Even a launch with no argument at all is accepted: nothing is known to check it by.
        let warnings = check_fixture(&scale_launch("fatbin", file, "")).unwrap();
        assert!(warnings.contains(needle), "{needle:?} not in:\n{warnings}");
        assert!(
            warnings.contains(&format!("--> input.scir:{at}\n")),
            "{warnings}"
        );
    }
    // A kernel missing from a readable table.
    let text = format!(
        "{HEAD}fn f(x: tensor[(n,), float32, device=cuda]) {{\n    launch kernels.k2[grid=(1), block=(1)]();\n}}\n"
    );
    let (module, _) = parse_with_source_map(&text).unwrap();
    let v = verify(&module).unwrap();
    assert_eq!(v.warnings().len(), 1);
    assert_eq!(
        v.warnings()[0].message,
        "kernel `k2` is not in the parameter table of device binary `kernels` (ptx lists k); its launches are not checked against it"
    );
    // A cubin without its `.nv.info.scale` section (as if stripped).
    let mut stripped = std::fs::read(fixtures().join("scale_sm90.cubin")).unwrap();
    let at = stripped
        .windows(14)
        .position(|w| w == b".nv.info.scale")
        .unwrap();
    stripped[at + 7] = b'X';
    let mut m = ModuleBuilder::new("m");
    m.device_binary("b", BinaryFormat::Cubin, stripped, ["scale"]);
    m.build_function("f", |f| {
        f.launch(
            LaunchBuilder::new("b", "scale")
                .grid([int(1)])
                .block([int(1)])
                .device(int(0)),
        );
    });
    let v = m.build_verified().unwrap();
    assert_eq!(
        v.warnings()[0].message,
        "kernel `scale` is not in the parameter table of device binary `b` (cubin lists no kernel); its launches are not checked against it"
    );
}
