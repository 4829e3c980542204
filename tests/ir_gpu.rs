//! The GPU items of the IR: `device_binary` and `launch` through the parser, the printer,
//! the builder and the verifier (each error with its message and the place it points at).

use safecall::ir::build::*;
use safecall::ir::parse::{parse, parse_in_dir, parse_with_source_map};
use safecall::ir::verify::{Source, render_errors, verify};
use safecall::ir::{BinaryFormat, ClusterPolicy, IntType, ParamType, print};

const HEAD: &str = "module m;\n\ndevice_binary kernels {\n    format ptx;\n    data b\".entry k()\";\n    kernels [k, k2];\n}\n\n";

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
    let rendered = diagnose(text);
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
        b".entry k()".to_vec(),
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
                priority=-1](p);";
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
    m.device_binary("kernels", BinaryFormat::Ptx, b".entry k()".to_vec(), ["k", "k2"]);
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
                .args([var("p")]),
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
