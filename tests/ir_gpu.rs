//! The GPU items of the IR: `device_binary` and `launch` through the parser, the printer,
//! the builder and the verifier (each error with its message and the place it points at).

use safecall::ir::build::*;
use safecall::ir::parse::{parse, parse_in_dir, parse_with_source_map};
use safecall::ir::verify::{Source, render_errors, render_warnings, verify};
use safecall::ir::{self, BinaryFormat, ClusterPolicy, Expr, IntType, ParamType, print};

const HEAD: &str = "module m;\n\ndevice_binary kernels {\n    format ptx;\n    data b\".entry k(.param .u64 a, .param .u64 b)\";\n    kernels [k, k2];\n}\n\n";

/// Parses and verifies `text`; returns the rendered diagnostics (parse or verify errors).
fn diagnose(text: &str) -> String {
    match parse_with_source_map(text) {
        Err(e) => e.render("input.scir", text),
        Ok((module, map)) => match verify(&module) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(errors) => render_errors(
                &errors,
                Some(Source {
                    file: "input.scir",
                    text,
                    map: &map,
                }),
            ),
        },
    }
}

/// A function `f` with a CUDA tensor `x` and the statement `stmt`.
fn with_launch(stmt: &str) -> String {
    format!(
        "{HEAD}fn f(x: tensor[(n,), float32, device=cuda], p: ptr, s: str) {{\n    {stmt}\n}}\n"
    )
}

/// Asserts the diagnostics of `text` hold `message` and point at `line:column`.
fn assert_error(text: &str, message: &str, at: &str) {
    assert_rendered(&diagnose(text), message, at);
}

/// Asserts rendered diagnostics hold `message` and point at `line:column`.
fn assert_rendered(rendered: &str, message: &str, at: &str) {
    assert!(
        rendered.contains(message),
        "expected {message:?} in:\n{rendered}"
    );
    assert!(
        rendered.contains(&format!("--> input.scir:{at}\n")),
        "expected position {at} in:\n{rendered}"
    );
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
                priority=-1](p, p);";
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
