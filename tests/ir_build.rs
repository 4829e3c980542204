//! The builder API: it makes the same modules as the text format, its helpers make the
//! expressions they name, and verifier errors on built IR (no text) name the function, the
//! statement path and the printed statement.

use safecall::ir::build::*;
use safecall::ir::print::{print, print_expr};
use safecall::ir::verify::{FnItem, Location, StmtFocus, verify};
use safecall::ir::*;
use safecall_runtime::abi::device_type;

fn example(name: &str) -> Module {
    let path = format!("{}/examples/ir/{name}.scir", env!("CARGO_MANIFEST_DIR"));
    parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn builds_add_one_exactly_like_the_example() {
    let mut m = ModuleBuilder::new("add_one");
    let mut f = FunctionBuilder::new("add_one");
    f.doc("y = x + 1, elementwise, over float32 tensors on the CPU.");
    let spec = || {
        TensorSpecBuilder::new(["n"])
            .dtype_name("float32")
            .device(device_type::CPU)
    };
    let x = f.tensor("x", spec());
    let y = f.tensor("y", spec());
    let xp = f.let_("xp", x.data());
    let yp = f.let_("yp", y.data());
    f.for_range("i", int(0), var("n"), |b, i| {
        let off = b.let_("off", i * 4);
        let v = b.let_("v", xp.clone().offset(off.clone()).load(F32));
        b.store(F32, yp.clone().offset(off), v + float32(1.0));
    });
    m.function(f.finish());
    let built = m.build();
    assert_eq!(built, example("add_one"), "built:\n{}", print(&built));
    verify(&built).unwrap();
}

#[test]
fn builds_the_launcher_exactly_like_the_example() {
    let mut m = ModuleBuilder::new("matmul_launcher");
    m.extern_fn(
        "matmul_kernel_launch",
        [PTR, PTR, PTR, PTR, I64, I64, I64, I32, I32, PTR],
        Some(I32),
        ErrorConvention::NonZeroIsRaised,
    );
    m.build_function("matmul", |f| {
        f.doc("c = a @ b + bias on a CUDA device; 128x128 tiles.");
        let cuda = |shape: [&str; 2], dt: &str| {
            TensorSpecBuilder::new(shape)
                .dtype_name(dt)
                .device(device_type::CUDA)
                .alignment(16)
        };
        let a = f.tensor("a", cuda(["m", "k"], "float16"));
        let b = f.tensor("b", cuda(["k", "n"], "float16"));
        let bias = f.tensor(
            "bias",
            TensorSpecBuilder::new(["n"])
                .dtype_name("float32")
                .device(device_type::CUDA),
        );
        let c = f.tensor("c", cuda(["m", "n"], "float32").index_type(IntType::I32));
        f.divisible("k", 8);
        let (m_, n, k) = (var("m"), var("n"), var("k"));
        f.assert(
            m_.clone().gt(int(0)).and(n.clone().gt(int(0))),
            "ValueError",
            [
                "matmul: empty output of shape (".into(),
                m_.clone().into(),
                ", ".into(),
                n.clone().into(),
                ")".into(),
            ],
        );
        let gx = f.let_("grid_x", n.clone().ceil_div(int(128)).cast(I32));
        let gy = f.let_("grid_y", ceil_div(m_.clone(), 128).cast(I32));
        let stream = f.get_stream("stream", a.device_type(), a.device_id());
        f.call_extern(
            "matmul_kernel_launch",
            [
                a.data(),
                b.data(),
                bias.data(),
                c.data(),
                m_,
                n,
                k,
                gx,
                gy,
                stream,
            ],
        );
    });
    let built = m.build();
    assert_eq!(built, example("launcher"), "built:\n{}", print(&built));
    assert!(m.build_verified().is_ok());
}

#[test]
fn builds_modules_with_imports_and_packed_calls() {
    let mut m = ModuleBuilder::new("with_imports");
    m.imported_module("helpers", "test_helpers", b"helpers v1\0".to_vec(), [])
        .imported_module(
            "kernels",
            "cuda",
            b"\x7fELF\x02\x01\x01\x00fatbin".to_vec(),
            ["helpers"],
        )
        .import("kernels");
    let mut f = FunctionBuilder::new("forward");
    f.doc(
        "Forwards `x` to the function `add_bias` of the imported modules and returns the result.",
    );
    let x = f.tensor(
        "x",
        TensorSpecBuilder::new(["n"])
            .dtype_name("float32")
            .device(device_type::CUDA),
    );
    let bias = f.param("bias", ParamType::Float(FloatType::F32));
    f.returns(RetType::Any);
    let r = f.call_packed_into("r", Callee::Import("add_bias".into()), [x.expr(), bias]);
    f.ret(r);
    m.function(f.finish());
    assert_eq!(m.build(), example("imports"));
}

#[test]
fn any_rank_spec_prints_and_verifies() {
    let spec = TensorSpecBuilder::any_rank()
        .dtype_name("float16")
        .device(2)
        .build();
    assert_eq!((spec.shape.rank(), spec.shape.dims()), (None, &[][..]));
    assert_eq!(
        safecall::ir::print::print_tensor_spec(&spec),
        "tensor[any, float16, device=cuda, strides=any]"
    );
    let mut m = ModuleBuilder::new("m");
    let mut f = FunctionBuilder::new("rank");
    f.param("x", spec);
    f.returns(RetType::Scalar(ScalarType::Int(IntType::I32)));
    f.ret(TensorRef::new("x").ndim());
    m.function(f.finish());
    let module = m.build();
    safecall::ir::verify::verify(&module).expect("an any-rank tensor with any strides verifies");
}

#[test]
fn tensor_spec_defaults() {
    let spec = TensorSpecBuilder::new([Dim::from("n"), Dim::from(4)]).build();
    assert_eq!(spec.dtype, None);
    assert_eq!(
        spec.shape,
        TensorShape::Dims(vec![Dim::Var("n".into()), Dim::Const(4)])
    );
    assert_eq!(spec.strides, Strides::Compact);
    assert_eq!(spec.device_type, DeviceTypePolicy::Any);
    assert_eq!(spec.device_id, DeviceIdPolicy::Same);
    assert_eq!(spec.byte_offset, ByteOffsetPolicy::Zero);
    assert_eq!(spec.alignment, None);
    assert_eq!(spec.index_type, None);
}

#[test]
fn tensor_spec_setters() {
    let spec = TensorSpecBuilder::new([2, 3])
        .dtype_name("int8x4")
        .strides(["s0", "s1"])
        .device(device_type::ROCM)
        .device_id_var("dev")
        .any_byte_offset()
        .alignment(64)
        .index_type(IntType::U32)
        .build();
    assert_eq!(
        spec.dtype,
        Some(safecall_runtime::dtype::parse("int8x4").unwrap())
    );
    assert_eq!(
        spec.strides,
        Strides::Exact(vec![Dim::Var("s0".into()), Dim::Var("s1".into())])
    );
    assert_eq!(spec.device_type, DeviceTypePolicy::Code(10));
    assert_eq!(spec.device_id, DeviceIdPolicy::Var("dev".into()));
    assert_eq!(spec.byte_offset, ByteOffsetPolicy::Any);
    assert_eq!(spec.alignment, Some(64));
    assert_eq!(spec.index_type, Some(IntType::U32));
    assert_eq!(
        TensorSpecBuilder::new([1]).any_strides().build().strides,
        Strides::Any
    );
    let same = TensorSpecBuilder::new([1]).same_device_type().build();
    assert_eq!(same.device_type, DeviceTypePolicy::Same);
    assert_eq!(
        safecall::ir::print::print_tensor_spec(&same),
        "tensor[(1,), any, device=same]"
    );
    assert!(
        TensorSpecBuilder::new([1])
            .try_dtype_name("float33x0")
            .is_err()
    );
}

#[test]
#[should_panic(expected = "bad dtype `floaty`")]
fn bad_dtype_name_panics_with_the_name() {
    let _ = TensorSpecBuilder::new([1]).dtype_name("floaty");
}

#[test]
fn operators_build_the_expressions_they_name() {
    let (a, b) = (var("a"), var("b"));
    let cases: Vec<(Expr, &str)> = vec![
        (a.clone() + b.clone(), "a + b"),
        (a.clone() - 1, "a - 1"),
        ((a.clone() + b.clone()) * 2, "(a + b) * 2"),
        (a.clone() / b.clone() % 3, "a / b % 3"),
        (a.clone() & b.clone() | 1, "a & b | 1"),
        (a.clone() ^ b.clone(), "a ^ b"),
        (a.clone() << 2, "a << 2"),
        (a.clone() >> b.clone(), "a >> b"),
        (-a.clone(), "-a"),
        (-int(5), "-(5)"),
        (int(-5), "-5"),
        (!a.clone().lt(b.clone()), "!(a < b)"),
        (a.clone().bit_not(), "~a"),
        (a.clone().le(1).or(b.clone().ge(2)), "a <= 1 || b >= 2"),
        (
            a.clone().equals(b.clone()).and(a.clone().not_equals(1)),
            "a == b && a != 1",
        ),
        (a.clone().gt(b.clone()), "a > b"),
        (a.clone().min(b.clone()).max(0), "max(min(a, b), 0)"),
        (min(1, 2) + max(3, 4), "min(1, 2) + max(3, 4)"),
        (
            a.clone().floordiv(2) + floormod(a.clone(), 2),
            "floordiv(a, 2) + floormod(a, 2)",
        ),
        (a.clone().ceil_div(b.clone()), "ceil_div(a, b)"),
        (
            select(boolean(true), float(1.5), float(-0.0)),
            "select(true, 1.5, -0.0)",
        ),
        (a.clone().cast(I32), "cast<i32>(a)"),
        (var("p").offset(8).load(F32), "load<f32>(offset(p, 8))"),
        (
            cast(U8, int_of(IntType::U64, -1)),
            "cast<u8>(18446744073709551615u64)",
        ),
        (uint64(u64::MAX), "18446744073709551615u64"),
        (float32(f32::from_bits(0x7fc0_0001)), "f32bits(0x7fc00001)"),
        (float(f64::NAN), "nan"),
        (float32(f32::NEG_INFINITY), "-inf_f32"),
        (string("a\"b\n"), "\"a\\\"b\\n\""),
        (is_none("opt"), "is_none(opt)"),
        (
            TensorRef::new("x").stride(1) * TensorRef::new("x").shape(0),
            "x.strides[1] * x.shape[0]",
        ),
        (Expr::from(&TensorRef::new("x")), "x"),
        (field("x", TensorField::ByteOffset), "x.byte_offset"),
        (var("step") + var("a b"), "`step` + `a b`"),
    ];
    for (e, want) in cases {
        assert_eq!(print_expr(&e), want, "{e:?}");
        assert_eq!(parse::parse_expr(want).unwrap(), e, "{want}");
    }
    let t = TensorRef::new("x");
    assert_eq!(t.name(), "x");
    let fields = [
        (t.ndim(), TensorField::NDim),
        (t.dtype(), TensorField::DType),
        (t.device(), TensorField::Device),
        (t.device_type(), TensorField::DeviceType),
        (t.device_id(), TensorField::DeviceId),
        (t.byte_offset(), TensorField::ByteOffset),
        (t.data(), TensorField::Data),
    ];
    for (e, f) in fields {
        assert_eq!(
            e,
            Expr::Field {
                tensor: "x".into(),
                field: f
            }
        );
    }
}

#[test]
fn nested_blocks_and_statements() {
    let mut f = FunctionBuilder::new("f");
    let n = f.param("n", ParamType::Int(IntType::I64));
    let cb = f.param("cb", ParamType::Func);
    f.param("maybe", ParamType::Int(IntType::I32).optional());
    f.returns(RetType::Scalar(I64));
    let acc = f.let_mut("acc", int(0));
    f.for_range_step("i", n.clone(), int(0), -2, |b, i| {
        b.if_else(
            i.clone().floormod(3).equals(0),
            |t| {
                t.assign("acc", acc.clone() + i.clone());
            },
            |e| {
                e.if_then(is_none("maybe"), |t| {
                    t.call_packed(Callee::Param("cb".into()), [i.clone()]);
                });
            },
        );
    });
    let r = f.call_packed_into(
        "r",
        Callee::Global("testing.echo".into()),
        [acc.clone(), cb],
    );
    f.assert(
        cast(I64, r).equals(acc.clone()),
        "RuntimeError",
        ["echo changed ".into(), acc.clone().into()],
    );
    f.ret(acc);
    let func = f.finish();
    let mut m = ModuleBuilder::new("m");
    m.function(func);
    let module = m.build();
    verify(&module).unwrap();
    let printed = print(&module);
    assert_eq!(parse(&printed).unwrap(), module);
    assert!(
        printed.contains(
            "    for i in n..0 step -2 {\n        if floormod(i, 3) == 0 {\n            acc = acc + i;\n        } else if is_none(maybe) {\n            call_packed cb(i);\n        }\n    }\n"
        ),
        "{printed}"
    );
}

#[test]
fn extern_calls_and_streams() {
    let mut m = ModuleBuilder::new("m");
    m.extern_fn("puts", [PTR], Some(I32), ErrorConvention::None)
        .system_lib_prefix("lib_");
    let mut f = FunctionBuilder::new("hello");
    f.returns(RetType::Scalar(I32));
    let st = f.param("st", ParamType::Stream);
    let rc = f.call_extern_into("rc", "puts", [string("hello")]);
    let s = f.get_stream("s", typed(2), typed(0));
    f.assert(
        s.equals(st),
        "ValueError",
        ["not the current stream".into()],
    );
    f.ret(rc);
    m.function(f.finish());
    let module = m.build();
    assert_eq!(module.system_lib_prefix.as_deref(), Some("lib_"));
    verify(&module).unwrap();
    assert!(
        print(&module)
            .contains("let rc = call puts(\"hello\");\n    let s = get_stream(2i32, 0i32);")
    );
}

fn typed(v: i64) -> Expr {
    int_of(IntType::I32, v)
}

#[test]
fn verify_errors_on_built_ir_name_function_path_and_statement() {
    let mut f = FunctionBuilder::new("bad");
    let n = f.param("n", ParamType::Int(IntType::I64));
    f.if_then(n.clone().gt(0), |b| {
        b.let_("half", n.clone() / int_of(IntType::I32, 2));
    });
    let mut m = ModuleBuilder::new("m");
    m.function(f.finish());
    let errors = m.build_verified().unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.function.as_deref(), Some("bad"));
    let path = StmtPath::root(0).child(source_map::Block::Then, 0);
    assert_eq!(
        e.location,
        Location::Function {
            index: 0,
            item: FnItem::Stmt {
                path,
                focus: StmtFocus::Expr(vec![0])
            }
        }
    );
    let rendered = e.render(None);
    assert_eq!(
        rendered,
        "error: operands of `/` have different types: i64 and i32 (there are no implicit conversions; use `cast<T>(...)`)\n  \
         = note: in function `bad`, statement body[0].then[0] `let half = n / 2i32;`\n"
    );
    assert_eq!(
        e.to_string(),
        "in function `bad`, statement body[0].then[0] `let half = n / 2i32;`: operands of `/` have different types: i64 and i32 (there are no implicit conversions; use `cast<T>(...)`)"
    );
}

#[test]
fn verified_module_wraps_only_valid_modules() {
    let m = example("add_one");
    let v = VerifiedModule::new(m.clone()).unwrap();
    assert_eq!(*v, m);
    assert_eq!(v.into_inner(), m);
    let mut bad = m.clone();
    bad.functions.push(bad.functions[0].clone());
    let errors = VerifiedModule::new(bad).unwrap_err();
    assert!(
        errors[0]
            .message
            .starts_with("duplicate function `add_one`"),
        "{errors:?}"
    );
}

#[test]
fn half_constants_round_to_nearest_even_and_build_the_texts_module() {
    // The builder's constants equal the parsed literals, and round once from the f64.
    assert_eq!(float16(0.1), parse::parse_expr("0.1f16").unwrap());
    assert_eq!(bfloat16(0.1), parse::parse_expr("0.1bf16").unwrap());
    assert_eq!(print_expr(&float16(65520.0)), "inf_f16");
    assert_eq!(print_expr(&float16(2f64.powi(-25))), "0.0f16");
    // Triton truncates this to 0x3f80; the nearest bf16 is 0x3f81.
    assert_eq!(
        bfloat16(1.0 + 2f64.powi(-8) + 2f64.powi(-20)),
        half_bits(0x3f81, FloatType::BF16)
    );
    assert_eq!(
        print_expr(&half_bits(0x7c01, FloatType::F16)),
        "f16bits(0x7c01)"
    );

    let mut f = FunctionBuilder::new("clamp_scale");
    let s = f.param("s", ParamType::Float(FloatType::F16));
    let x = f.param("x", ParamType::Float(FloatType::F32));
    f.returns(RetType::Scalar(BF16));
    let scaled = cast(F16, cast(F32, s) * x);
    f.ret(select(
        scaled.clone().lt(float16(1.0)),
        cast(BF16, scaled),
        bfloat16(1.0),
    ));
    let mut m = ModuleBuilder::new("halves");
    m.function(f.finish());
    let text = "module halves;\n\nfn clamp_scale(s: f16, x: f32) -> bf16 {\n    \
                return select(cast<f16>(cast<f32>(s) * x) < 1.0f16, cast<bf16>(cast<f16>(cast<f32>(s) * x)), 1.0bf16);\n}\n";
    assert_eq!(m.build(), parse(text).unwrap());
    assert!(m.build_verified().is_ok());
}
