//! `format hsaco` device binaries (AMDGPU code objects) and their launches: checked against the
//! code object's metadata, on `device=rocm` tensors, without the settings HIP does not have.

use super::*;

/// Triton's `scale` for gfx942 (tests/kernel_params/README.md) launched from a function with a
/// ROCm tensor `x`, with `settings` after grid and block.
fn hip_launch(settings: &str, args: &str) -> String {
    format!(
        "module m;\n\ndevice_binary kernels {{\n    format hsaco;\n    file \"scale_gfx942.hsaco\";\n    \
         kernels [scale];\n}}\n\nfn f(x: tensor[(n,), float32, device=rocm], y: ptr, n32: i32, \
         a: f32, b: f64, flag: bool, h: i16, big: i64, s: ptr, on: bool) {{\n    \
         launch kernels.scale[grid=(1), block=(128){settings}]({args});\n}}\n"
    )
}

#[test]
fn an_hsaco_launch_matching_the_metadata_passes_and_prints_back() {
    let text = hip_launch(", shared_mem=1024, cooperative=on", SCALE_ARGS);
    assert_eq!(check_fixture(&text).as_deref(), Ok(""));
    let (module, _) = parse_in_dir(&text, Some(&fixtures())).unwrap();
    assert_eq!(module.device_binaries[0].format, BinaryFormat::Hsaco);
    assert_eq!(
        module.device_binaries[0].format.platform(),
        ir::Platform::Hip
    );
    let printed = print(&module);
    assert!(printed.contains("format hsaco;"), "{printed}");
    assert_eq!(parse(&printed).unwrap(), module);
}

#[test]
fn hsaco_arguments_are_checked_against_the_metadata_note() {
    let nine = "x.data, y, n32, a, b, flag, h, big, s";
    assert_fixture_error(
        &hip_launch("", nine),
        "kernel `scale` takes 10 parameters (64 bytes: 8-byte global_buffer, 8-byte \
         global_buffer, 4-byte by_value, 4-byte by_value, 8-byte by_value, 1-byte by_value, \
         2-byte by_value, 8-byte by_value, 8-byte global_buffer, 8-byte global_buffer); the \
         launch passes 9 (ptr, ptr, i32, f32, f64, bool, i16, i64, ptr)",
        "10:5",
    );
    assert_fixture_error(
        &hip_launch("", "x.data, y, n32, b, a, flag, h, big, s, s"),
        "kernel argument 3 of `scale` is f64 (8 bytes), but the kernel's parameter is 4-byte \
         by_value (4 bytes)",
        "10:65",
    );
}

#[test]
fn settings_hip_has_no_equivalent_for_are_errors() {
    for (setting, message, at) in [
        (
            ", cluster=(2), preferred_cluster=(4)",
            "`preferred_cluster` has no HIP equivalent: device binary `kernels` is an AMDGPU code object, and HIP launches have no preferred cluster dimensions",
            "10:81",
        ),
        (
            ", cluster=(1), cluster_policy=spread",
            "`cluster_policy` has no HIP equivalent: device binary `kernels` is an AMDGPU code object, and HIP launches have no cluster scheduling policies",
            "10:5",
        ),
        (
            ", pdl=on",
            "`pdl` has no HIP equivalent: device binary `kernels` is an AMDGPU code object, and HIP launches have no programmatic dependent launch",
            "10:53",
        ),
        (
            ", priority=1",
            "`priority` has no HIP equivalent: device binary `kernels` is an AMDGPU code object, and HIP launches have no per-launch priorities (stream priorities only)",
            "10:58",
        ),
    ] {
        assert_fixture_error(&hip_launch(setting, SCALE_ARGS), message, at);
    }
}

#[test]
fn a_cluster_is_a_setting_hip_launches_take() {
    // `hipDrvLaunchKernelEx` takes cluster dimensions; with a cooperative grid too.
    for setting in [", cluster=(2)", ", cluster=(2, 1, 1), cooperative=on"] {
        let text = hip_launch(setting, SCALE_ARGS);
        assert_eq!(check_fixture(&text).as_deref(), Ok(""), "{setting}");
    }
}

#[test]
fn tma_descriptors_are_errors_on_amd() {
    let text = hip_launch(
        "",
        "x.data, y, n32, a, b, flag, h, big, s, tensormap(x, box=(8))",
    );
    assert_fixture_error(
        &text,
        "kernel argument 9 is a TMA descriptor (`tensormap`), which AMD GPUs do not have \
         (device binary `kernels` is an AMDGPU code object)",
        "10:106",
    );
}

#[test]
fn the_default_device_is_the_first_tensor_of_the_kernels_platform() {
    let cuda_tensor = hip_launch("", SCALE_ARGS).replace("device=rocm", "device=cuda");
    assert_fixture_error(
        &cuda_tensor,
        "the launch has no `device=`, and `f` has no HIP tensor parameter (`device=rocm`) to \
         take the device from",
        "10:5",
    );
    let with_device = hip_launch(", device=1", SCALE_ARGS).replace("device=rocm", "device=cuda");
    assert_eq!(check_fixture(&with_device).as_deref(), Ok(""));
    // A CUDA kernel in a function with only a ROCm tensor names CUDA.
    let cuda_kernel = with_launch("launch kernels.k[grid=(1), block=(1)](p, p);")
        .replace("device=cuda", "device=rocm");
    assert_error(
        &cuda_kernel,
        "the launch has no `device=`, and `f` has no CUDA tensor parameter (`device=cuda`) to \
         take the device from",
        "10:5",
    );
}

#[test]
fn an_unreadable_code_object_is_a_warning() {
    let text = hip_launch("", "").replace(
        "file \"scale_gfx942.hsaco\"",
        "data b\"\\x7fELF not really\"",
    );
    let warnings = check_fixture(&text).unwrap();
    assert!(
        warnings.contains(
            "warning: the kernel parameters of device binary `kernels` (hsaco) cannot be read: \
             not a little-endian ELF64 file"
        ),
        "{warnings}"
    );
}
