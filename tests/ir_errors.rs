//! Malformed `.scir` inputs: each one fails at the stage it names (parse or verify), with the
//! message it names, and the rendered diagnostics (line:column, caret excerpt, what was
//! expected, the function and statement) are snapshotted in `snapshots/ir/`.

use safecall::ir::parse::parse_with_source_map;
use safecall::ir::verify::{Source, render_errors, verify};

#[derive(Debug, PartialEq)]
enum Stage {
    Parse,
    Verify,
}

/// Runs `text` through the parser and the verifier; returns the stage that failed and the
/// rendered diagnostics.
fn diagnose(text: &str) -> (Stage, String) {
    let file = "input.scir";
    match parse_with_source_map(text) {
        Err(e) => (Stage::Parse, e.render(file, text)),
        Ok((module, map)) => match verify(&module) {
            Ok(_) => panic!("the input was accepted:\n{text}"),
            Err(errors) => (
                Stage::Verify,
                render_errors(
                    &errors,
                    Some(Source {
                        file,
                        text,
                        map: &map,
                    }),
                ),
            ),
        },
    }
}

macro_rules! error_case {
    ($name:ident, $stage:ident, $needle:expr, $text:expr) => {
        #[test]
        fn $name() {
            let text: &str = $text;
            let (stage, rendered) = diagnose(text);
            assert_eq!(stage, Stage::$stage, "{rendered}");
            assert!(rendered.contains($needle), "expected {:?} in:\n{rendered}", $needle);
            assert!(rendered.contains("--> input.scir:"), "no position in:\n{rendered}");
            assert!(rendered.contains('^'), "no caret in:\n{rendered}");
            insta::with_settings!({
                snapshot_path => "../snapshots/ir",
                prepend_module_to_snapshot => false,
                description => text,
                omit_expression => true,
            }, {
                insta::assert_snapshot!(concat!("error_", stringify!($name)), rendered);
            });
        }
    };
}

// ---- parse errors -----------------------------------------------------------------------

error_case!(
    unknown_type,
    Parse,
    "unknown parameter type `i33`",
    "module m;\nfn f(x: i33) {\n}\n"
);

error_case!(
    unterminated_block,
    Parse,
    "the block opened at 3:21 is not closed",
    "module m;\n\nfn f(n: i64) -> i64 {\n    if n > 0 {\n        return n;\n    }\n    return 0;\n"
);

error_case!(
    bad_dtype_string,
    Parse,
    "bad dtype `flaot32`: unknown dtype `flaot32`",
    "module m;\nfn f(x: tensor[(n,), flaot32]) {\n}\n"
);

error_case!(
    constraint_not_zero,
    Parse,
    "expected `0`, found an integer literal",
    "module m;\nfn f(n: i64) where n % 16 == 1 {\n}\n"
);

error_case!(
    tuple_element_without_name,
    Parse,
    "expected `:`, found `,`",
    "module m;\nfn f(t: tuple(i64, f32)) {\n}\n"
);

error_case!(
    const_param_with_typed_literal,
    Parse,
    "a constant parameter's value is an `i64` or an `f64` literal",
    "module m;\nfn f(block: const(128i32)) {\n}\n"
);

error_case!(
    const_param_with_string,
    Parse,
    "expected an integer, float, `true`, `false` or `none`, found a string literal",
    "module m;\nfn f(mode: const(\"fast\")) {\n}\n"
);

error_case!(
    missing_semicolon,
    Parse,
    "expected `;`, found `let`",
    "module m;\nfn f(n: i64) {\n    let a = n * 2\n    let b = a;\n}\n"
);

error_case!(
    chained_comparison,
    Parse,
    "comparison operators cannot be chained",
    "module m;\nfn f(n: i64) -> bool {\n    return 0 < n < 10;\n}\n"
);

error_case!(
    unknown_tensor_field,
    Parse,
    "unknown tensor field `size`",
    "module m;\nfn f(x: tensor[(n,), float32]) -> i64 {\n    return x.size;\n}\n"
);

error_case!(
    reserved_word_as_name,
    Parse,
    "found the reserved word `step`",
    "module m;\nfn f() {\n    let step = 1;\n}\n"
);

error_case!(
    negative_unsigned_literal,
    Parse,
    "a `u8` literal cannot be negative",
    "module m;\nfn f() -> u8 {\n    return -1u8;\n}\n"
);

error_case!(
    unknown_tensor_attribute,
    Parse,
    "unknown tensor attribute `layout`",
    "module m;\nfn f(x: tensor[(n, c), float32, layout=nhwc]) {\n}\n"
);

error_case!(
    doc_comment_before_extern,
    Parse,
    "a doc comment must be followed by `fn`, found `extern`",
    "module m;\n/// Launches the kernel.\nextern fn launch(ptr) -> i32;\n"
);

error_case!(
    mut_call_result,
    Parse,
    "the result of `call` binds an immutable name",
    "module m;\nextern fn g() -> i32;\nfn f() {\n    let mut r = call g();\n}\n"
);

error_case!(
    unknown_builtin,
    Parse,
    "unknown function `sqrt`",
    "module m;\nfn f(x: f64) -> f64 {\n    return sqrt(x);\n}\n"
);

error_case!(
    unknown_device,
    Parse,
    "unknown device `tpu`",
    "module m;\nfn f(x: tensor[(n,), float32, device=tpu]) {\n}\n"
);

error_case!(
    unterminated_string,
    Parse,
    "unterminated string literal",
    "module m;\nfn f(n: i64) {\n    assert n > 0 else ValueError(\"n must be positive);\n}\n"
);

error_case!(
    missing_module_header,
    Parse,
    "expected `module`, found `fn`",
    "fn f() {\n}\n"
);

// ---- verify errors ----------------------------------------------------------------------

error_case!(
    undeclared_variable,
    Verify,
    "`z` is not declared",
    "module m;\nfn f(n: i64) -> i64 {\n    let y = n + z;\n    return y;\n}\n"
);

error_case!(
    shape_variable_never_bound,
    Verify,
    "`m` is not declared",
    "module m;\nfn f(x: tensor[(n,), float32]) -> i64 {\n    return n * m;\n}\n"
);

error_case!(
    variable_used_before_binding,
    Verify,
    "`total` is used before it is bound (by body[1])",
    "module m;\nfn f(x: tensor[(n,), float32]) -> i64 {\n    let half = total / 2;\n    let total = n * 4;\n    return half;\n}\n"
);

error_case!(
    shape_variable_bound_only_by_optional,
    Verify,
    "symbolic variable `n` (bound by bias.shape[0]) is bound only by optional parameters",
    "module m;\nfn f(bias: optional[tensor[(n,), float32]]) -> i64 {\n    return n;\n}\n"
);

error_case!(
    out_of_scope_let,
    Verify,
    "`t` is not in scope here: it is bound by body[0].then[0]",
    "module m;\nfn f(n: i64) -> i64 {\n    if n > 0 {\n        let t = n * 2;\n    }\n    return t;\n}\n"
);

error_case!(
    wrong_arity_in_call,
    Verify,
    "wrong number of arguments: extern `launch` takes 3, found 2",
    "module m;\nextern fn launch(ptr, i64, ptr) -> i32 nonzero_is_raised;\nfn f(x: tensor[(n,), float32]) {\n    call launch(x.data, n);\n}\n"
);

error_case!(
    extern_argument_type,
    Verify,
    "argument 1 of `launch` must be i32, found i64",
    "module m;\nextern fn launch(ptr, i32);\nfn f(x: tensor[(n,), float32]) {\n    call launch(x.data, n);\n}\n"
);

error_case!(
    undeclared_extern,
    Verify,
    "call to undeclared extern function `launch`",
    "module m;\nfn f() {\n    call launch();\n}\n"
);

error_case!(
    type_mismatch_in_binary,
    Verify,
    "operands of `+` have different types: i64 and i32",
    "module m;\nfn f(x: tensor[(n,), float32]) -> i64 {\n    let a = x.shape[0] + 1i32;\n    return a;\n}\n"
);

error_case!(
    duplicate_function,
    Verify,
    "duplicate function `f`",
    "module m;\nfn f() {\n}\nfn g() {\n}\nfn f() {\n}\n"
);

error_case!(
    duplicate_param,
    Verify,
    "duplicate name `x`: it is already parameter `x`",
    "module m;\nfn f(x: i64, y: f32, x: f64) {\n}\n"
);

error_case!(
    param_clashes_with_shape_variable,
    Verify,
    "duplicate name `n`: it is already parameter `n`",
    "module m;\nfn f(n: i64, x: tensor[(n,), float32]) {\n}\n"
);

error_case!(
    duplicate_let,
    Verify,
    "duplicate name `a`: it is already bound by body[0] `let a = 1;`",
    "module m;\nfn f() {\n    let a = 1;\n    for i in 0..4 {\n        let a = i;\n    }\n}\n"
);

error_case!(
    assign_to_immutable,
    Verify,
    "cannot assign to `acc`: it is bound by body[0] `let acc = 0;`, not a `let mut` binding",
    "module m;\nfn f(n: i64) -> i64 {\n    let acc = 0;\n    for i in 0..n {\n        acc = acc + i;\n    }\n    return acc;\n}\n"
);

error_case!(
    assign_to_parameter,
    Verify,
    "cannot assign to `n`: it is parameter `n`",
    "module m;\nfn f(n: i64) {\n    n = 0;\n}\n"
);

error_case!(
    missing_return,
    Verify,
    "missing return: `f` returns i64",
    "module m;\nfn f(n: i64) -> i64 {\n    if n > 0 {\n        return n;\n    }\n}\n"
);

error_case!(
    return_type_mismatch,
    Verify,
    "return type mismatch: `f` returns i32, found i64",
    "module m;\nfn f(x: tensor[(n,), float32]) -> i32 {\n    return x.shape[0];\n}\n"
);

error_case!(
    return_tensor_not_a_parameter,
    Verify,
    "return type mismatch: `f` returns tensor, found ptr",
    "module m;\nfn f(x: tensor[(n,), float32]) -> tensor {\n    return x.data;\n}\n"
);

error_case!(
    return_value_from_none_function,
    Verify,
    "`f` returns none, but this `return` has a value",
    "module m;\nfn f(n: i64) {\n    return n;\n}\n"
);

error_case!(
    constraint_divisor_zero,
    Verify,
    "the divisor must be positive",
    "module m;\nfn f(x: tensor[(n,), float32]) where n % 0 == 0 {\n}\n"
);

error_case!(
    constraint_unknown_variable,
    Verify,
    "the constraint names `q`, which is neither a parameter nor a symbolic variable",
    "module m;\nfn f(x: tensor[(n,), float32]) where q % 4 == 0 {\n}\n"
);

error_case!(
    constraint_on_float_parameter,
    Verify,
    "the constraint names `s`, a parameter of type f32",
    "module m;\nfn f(s: f32) where s % 4 == 0 {\n}\n"
);

error_case!(
    stride_list_length,
    Verify,
    "the stride list has 1 entry but the tensor has 2 dimensions",
    "module m;\nfn f(x: tensor[(m, n), float32, strides=(s0,)]) {\n}\n"
);

error_case!(
    alignment_not_power_of_two,
    Verify,
    "alignment 12 is not a power of two",
    "module m;\nfn f(x: tensor[(n,), float32, align=12]) {\n}\n"
);

error_case!(
    tuple_element_clashes,
    Verify,
    "duplicate name `lo`: it is already tuple element `lo`",
    "module m;\nfn f(t: tuple(lo: i64, lo: i64)) {\n}\n"
);

error_case!(
    optional_of_optional,
    Verify,
    "`optional[optional[...]]` is redundant",
    "module m;\nfn f(x: optional[optional[i64]]) {\n}\n"
);

error_case!(
    unknown_callee_param,
    Verify,
    "`callback` is not declared",
    "module m;\nfn f(x: i64) {\n    call_packed callback(x);\n}\n"
);

error_case!(
    callee_is_not_a_func,
    Verify,
    "the callee `x` must be a `func` parameter, found i64",
    "module m;\nfn f(x: i64) {\n    call_packed x(x);\n}\n"
);

error_case!(
    import_call_without_imports,
    Verify,
    "`call_packed import` needs the module to import a module",
    "module m;\nfn f(x: i64) {\n    call_packed import \"g\"(x);\n}\n"
);

error_case!(
    empty_global_name,
    Verify,
    "the global function name is empty",
    "module m;\nfn f(x: i64) {\n    call_packed global \"\"(x);\n}\n"
);

error_case!(
    import_cycle,
    Verify,
    "import cycle: a -> b -> c -> a",
    "module m;\nimported_module a {\n    kind \"k\";\n    payload b\"1\";\n    imports [b];\n}\nimported_module b {\n    kind \"k\";\n    payload b\"2\";\n    imports [c];\n}\nimported_module c {\n    kind \"k\";\n    payload b\"3\";\n    imports [a];\n}\nimport a;\n"
);

error_case!(
    import_unknown_label,
    Verify,
    "`import kernels` names no imported module",
    "module m;\nimport kernels;\n"
);

error_case!(
    empty_payload,
    Verify,
    "imported module payload is empty",
    "module m;\nimported_module k {\n    kind \"cuda\";\n    payload b\"\";\n}\nimport k;\n"
);

error_case!(
    lib_kind_is_reserved,
    Verify,
    "imported module kind `_lib` is reserved",
    "module m;\nimported_module k {\n    kind \"_lib\";\n    payload b\"x\";\n}\nimport k;\n"
);

error_case!(
    nonzero_is_raised_must_return_int,
    Verify,
    "extern `launch` is `nonzero_is_raised` but returns f32",
    "module m;\nextern fn launch(ptr) -> f32 nonzero_is_raised;\n"
);

error_case!(
    shape_index_out_of_range,
    Verify,
    "dimension index 2 out of range: tensor `x` has 2 dimensions",
    "module m;\nfn f(x: tensor[(m, n), float32]) -> i64 {\n    return x.shape[2];\n}\n"
);

error_case!(
    int_constant_out_of_range,
    Verify,
    "constant 300 does not fit u8",
    "module m;\nfn f() -> u8 {\n    return 300u8;\n}\n"
);

error_case!(
    f32_constant_not_exact,
    Verify,
    "f32 constant 0.1 is not exactly representable as f32",
    "module m;\nfn f() -> f32 {\n    return f64bits_f32(0x3fb999999999999a);\n}\n"
);

error_case!(
    f16_constant_not_exact,
    Verify,
    "f16 constant 0.1 is not exactly representable as f16 (the nearest is 0.0999755859375f16)",
    "module m;\nfn f() -> f16 {\n    return f64bits_f16(0x3fb999999999999a);\n}\n"
);

error_case!(
    half_arithmetic,
    Verify,
    "`*` needs integer or float operands, found bf16 (f16 and bf16 only convert and compare",
    "module m;\nfn f(a: bf16) -> bf16 {\n    return a * a;\n}\n"
);

error_case!(
    half_from_integer,
    Verify,
    "cannot cast i32 to f16 (f16 and bf16 convert only to and from floats",
    "module m;\nfn f(n: i32) -> f16 {\n    return cast<f16>(n);\n}\n"
);

error_case!(
    half_extern_parameter,
    Verify,
    "extern `scale` takes or returns f16: C passes half-precision floats in float registers",
    "module m;\nextern fn scale(f16) -> i32;\n"
);

error_case!(
    half_bits_too_wide,
    Parse,
    "`bf16bits` takes the 16 bits of a `bf16`",
    "module m;\nfn f() -> bf16 {\n    return bf16bits(0x10000);\n}\n"
);

error_case!(
    unreachable_statement,
    Verify,
    "unreachable statement",
    "module m;\nfn f(n: i64) -> i64 {\n    return n;\n    let a = 1;\n}\n"
);

error_case!(
    loop_step_zero,
    Verify,
    "the loop step must be a non-zero constant",
    "module m;\nfn f(n: i64) {\n    for i in 0..n step 0 {\n    }\n}\n"
);

error_case!(
    loop_bounds_types_differ,
    Verify,
    "loop bounds have different types: start is i32, end is i64",
    "module m;\nfn f(n: i64) {\n    for i in 0i32..n {\n    }\n}\n"
);

error_case!(
    store_value_type,
    Verify,
    "the stored value must be f32, found f64",
    "module m;\nfn f(x: tensor[(n,), float32]) {\n    store<f32>(x.data, 1.0);\n}\n"
);

error_case!(
    let_of_a_tensor,
    Verify,
    "`let` binds scalars, devices and dtypes; this value is tensor",
    "module m;\nfn f(x: tensor[(n,), float32]) {\n    let y = x;\n}\n"
);

error_case!(
    message_interpolates_a_tensor,
    Verify,
    "messages interpolate scalars, devices and dtypes, found tensor",
    "module m;\nfn f(x: tensor[(n,), float32]) {\n    assert n > 0 else ValueError(\"bad tensor \", x);\n}\n"
);

error_case!(
    is_none_of_required_parameter,
    Verify,
    "`is_none(n)`: `n` is never None",
    "module m;\nfn f(n: i64) -> bool {\n    return is_none(n);\n}\n"
);

error_case!(
    condition_not_bool,
    Verify,
    "the condition of `if` must be bool, found i64",
    "module m;\nfn f(n: i64) {\n    if n {\n    }\n}\n"
);

error_case!(
    float_remainder,
    Verify,
    "`%` needs integer operands, found f64",
    "module m;\nfn f(x: f64) -> f64 {\n    return x % 2.0;\n}\n"
);

error_case!(
    invalid_cast,
    Verify,
    "cannot cast f64 to ptr",
    "module m;\nfn f(x: f64) -> ptr {\n    return cast<ptr>(x);\n}\n"
);

error_case!(
    bad_error_kind,
    Verify,
    "error kind `Value Error` is not an identifier",
    "module m;\nfn f(n: i64) {\n    assert n > 0 else `Value Error`(\"n\");\n}\n"
);

error_case!(
    device_id_variable_clash,
    Verify,
    "duplicate name `dev`: it is already parameter `dev`",
    "module m;\nfn f(dev: device, x: tensor[(n,), float32, device_id=dev]) {\n}\n"
);

error_case!(
    negative_dimension,
    Verify,
    "dimension 1 is negative (-4)",
    "module m;\nfn f(x: tensor[(n, -4), float32]) {\n}\n"
);

error_case!(
    invalid_raw_dtype,
    Verify,
    "invalid dtype dtype(99, 32, 1)",
    "module m;\nfn f(x: tensor[(n,), dtype(99, 32, 1)]) {\n}\n"
);

/// Several problems in one function are all reported, each with its own position.
#[test]
fn several_errors_are_all_reported() {
    let text = "module m;\nfn f(x: tensor[(n,), float32]) -> i32 {\n    let a = n + 1i32;\n    let b = q;\n    return a;\n}\n";
    let (_, map) = parse_with_source_map(text).unwrap();
    let errors = verify(&parse_with_source_map(text).unwrap().0).unwrap_err();
    // `a` has no type after its error, so `return a` reports nothing more (no cascade).
    assert_eq!(errors.len(), 2, "{errors:#?}");
    let rendered = render_errors(
        &errors,
        Some(Source {
            file: "input.scir",
            text,
            map: &map,
        }),
    );
    assert!(rendered.contains("input.scir:3:13"), "{rendered}");
    assert!(rendered.contains("input.scir:4:13"), "{rendered}");
}

// ---- issue 9 syntax ---------------------------------------------------------------------

error_case!(
    unknown_index_type,
    Parse,
    "unknown index type `f32`",
    "module m;\nfn f(x: tensor[(n,), float32, index=f32]) {\n}\n"
);

error_case!(
    constraint_on_optional_parameter,
    Verify,
    "the constraint names `n`, which may be absent",
    "module m;\nfn f(n: optional[i64]) where n % 8 == 0 {\n}\n"
);

error_case!(
    stream_parameter_in_arithmetic,
    Verify,
    "operands of `+` have different types: ptr and i64",
    "module m;\nfn f(st: stream, p: data_ptr) {\n    let q = st + 16;\n}\n"
);

error_case!(
    stride_variable_bound_only_by_optional,
    Verify,
    "symbolic variable `sx` (bound by x.strides[0]) is bound only by optional parameters",
    "module m;\nfn f(x: optional[tensor[(n,), float32, strides=(sx,)]], y: tensor[(n,), float32]) -> i64 {\n    return n * sx;\n}\n"
);

// ---- tensors of any rank ----------------------------------------------------------------

error_case!(
    any_rank_needs_any_strides,
    Verify,
    "a tensor of any rank cannot require compact strides (the default); write `strides=any`",
    "module m;\nfn f(x: tensor[any, float16, device=cuda]) {\n}\n"
);

error_case!(
    any_rank_has_no_index_limit,
    Verify,
    "a tensor of any rank cannot have an element-count limit (`index=`)",
    "module m;\nfn f(x: tensor[any, float16, strides=any, index=i32]) {\n}\n"
);

error_case!(
    any_rank_dims_cannot_be_indexed,
    Verify,
    "tensor `x` has any rank (`tensor[any, ...]`), so its dimensions cannot be indexed",
    "module m;\nfn f(x: tensor[any, float16, strides=any]) -> i64 {\n    return x.shape[0];\n}\n"
);

error_case!(
    tensor_shape_is_dims_or_any,
    Parse,
    "`tensor[any, dtype, ...]` for any rank",
    "module m;\nfn f(x: tensor[n, float16]) {\n}\n"
);
