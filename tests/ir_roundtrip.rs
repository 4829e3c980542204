//! Property test: `parse(print(m)) == m` and printing is stable, for generated modules that
//! cover every variant of the model (valid or not: the printer and parser must not lose
//! anything the builder can express, including odd names, NaN payloads, inexact `f32`
//! constants, unnamed dtypes and arbitrary payload bytes).

use proptest::prelude::*;
use safecall::ir::*;
use safecall_runtime::abi::DLDataType;

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z_][a-z0-9_]{0,5}",
        2 => prop::sample::select(safecall::ir::syntax::RESERVED).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["min", "cast", "load", "shape", "stream", "tensor", "i32", "f64bits", "global"])
            .prop_map(str::to_owned),
        1 => any::<String>().prop_map(|s| s.chars().take(4).collect()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[ -~]{0,8}", 1 => any::<String>().prop_map(|s| s.chars().take(8).collect())]
}

fn int_type() -> impl Strategy<Value = IntType> {
    prop::sample::select(IntType::ALL.to_vec())
}

fn float_type() -> impl Strategy<Value = FloatType> {
    prop::sample::select(FloatType::ALL.to_vec())
}

fn scalar_type() -> impl Strategy<Value = ScalarType> {
    prop_oneof![
        Just(ScalarType::Bool),
        Just(ScalarType::Ptr),
        int_type().prop_map(ScalarType::Int),
        float_type().prop_map(ScalarType::Float),
    ]
}

/// Float bits: ordinary values, f32, f16 and bf16 values (incl. NaN payloads), special values,
/// any bits.
fn float_bits() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<f64>().prop_map(f64::to_bits),
        any::<u32>().prop_map(safecall::ir::syntax::f32_bits_to_f64),
        any::<u16>().prop_map(|h| safecall::ir::half::half_to_f64_bits(h, FloatType::F16)),
        any::<u16>().prop_map(|h| safecall::ir::half::half_to_f64_bits(h, FloatType::BF16)),
        prop::sample::select(vec![
            0u64,
            (-0.0f64).to_bits(),
            f64::INFINITY.to_bits(),
            f64::NEG_INFINITY.to_bits(),
            f64::NAN.to_bits(),
            0x7ff8_0000_0000_0001,
            0xfff8_0000_0000_0000,
            1.0e300f64.to_bits(),
            5e-324f64.to_bits(),
        ]),
        any::<u64>(),
    ]
}

fn int_value() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -300i64..300,
        Just(i64::MIN),
        Just(i64::MAX),
        Just(-1)
    ]
}

fn field() -> impl Strategy<Value = TensorField> {
    prop_oneof![
        Just(TensorField::Data),
        (0usize..5).prop_map(TensorField::Shape),
        (0usize..5).prop_map(TensorField::Stride),
        Just(TensorField::NDim),
        Just(TensorField::DType),
        Just(TensorField::Device),
        Just(TensorField::DeviceType),
        Just(TensorField::DeviceId),
        Just(TensorField::ByteOffset),
    ]
}

fn binop() -> impl Strategy<Value = BinOp> {
    use BinOp::*;
    prop::sample::select(vec![
        Add, Sub, Mul, Div, Rem, FloorDiv, FloorMod, CeilDiv, Min, Max, BitAnd, BitOr, BitXor, Shl,
        Shr, Eq, Ne, Lt, Le, Gt, Ge, And, Or,
    ])
}

fn unop() -> impl Strategy<Value = UnOp> {
    prop::sample::select(vec![UnOp::Neg, UnOp::Not, UnOp::BitNot])
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (int_value(), int_type()).prop_map(|(value, ty)| Expr::Int { value, ty }),
        (float_bits(), float_type()).prop_map(|(bits, ty)| Expr::Float { bits, ty }),
        any::<bool>().prop_map(Expr::Bool),
        text().prop_map(Expr::Str),
        name().prop_map(Expr::Var),
        (name(), field()).prop_map(|(tensor, field)| Expr::Field { tensor, field }),
        name().prop_map(Expr::IsNone),
    ];
    leaf.prop_recursive(3, 24, 3, |inner| {
        prop_oneof![
            (unop(), inner.clone()).prop_map(|(op, a)| Expr::Unary {
                op,
                arg: Box::new(a)
            }),
            (binop(), inner.clone(), inner.clone()).prop_map(|(op, a, b)| Expr::Binary {
                op,
                lhs: Box::new(a),
                rhs: Box::new(b)
            }),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, a, b)| Expr::Select {
                cond: Box::new(c),
                then_value: Box::new(a),
                else_value: Box::new(b)
            }),
            (scalar_type(), inner.clone()).prop_map(|(ty, a)| Expr::Cast {
                ty,
                arg: Box::new(a)
            }),
            (inner.clone(), inner.clone()).prop_map(|(p, o)| Expr::PtrOffset {
                ptr: Box::new(p),
                offset: Box::new(o)
            }),
            (scalar_type(), inner).prop_map(|(ty, p)| Expr::Load {
                ty,
                ptr: Box::new(p)
            }),
        ]
    })
}

fn callee() -> impl Strategy<Value = Callee> {
    prop_oneof![
        text().prop_map(Callee::Global),
        text().prop_map(Callee::Import),
        name().prop_map(Callee::Param),
        text().prop_map(Callee::Direct),
    ]
}

fn message_part() -> impl Strategy<Value = MessagePart> {
    prop_oneof![
        text().prop_map(MessagePart::Text),
        expr().prop_map(MessagePart::Value)
    ]
}

fn stmt() -> impl Strategy<Value = Stmt> {
    let simple = prop_oneof![
        (name(), any::<bool>(), expr()).prop_map(|(name, mutable, value)| Stmt::Let {
            name,
            mutable,
            value
        }),
        (name(), expr()).prop_map(|(name, value)| Stmt::Assign { name, value }),
        (scalar_type(), expr(), expr()).prop_map(|(ty, ptr, value)| Stmt::Store { ty, ptr, value }),
        (expr(), name(), prop::collection::vec(message_part(), 0..4)).prop_map(
            |(cond, kind, message)| Stmt::Assert {
                cond,
                kind,
                message
            }
        ),
        (
            prop::option::of(name()),
            name(),
            prop::collection::vec(expr(), 0..3)
        )
            .prop_map(|(dest, func, args)| Stmt::CallExtern { dest, func, args }),
        (
            prop::option::of(name()),
            callee(),
            prop::collection::vec(expr(), 0..3)
        )
            .prop_map(|(dest, callee, args)| Stmt::CallPacked { dest, callee, args }),
        (name(), expr(), expr()).prop_map(|(dest, device_type, device_id)| Stmt::GetStream {
            dest,
            device_type,
            device_id
        }),
        (
            name(),
            name(),
            prop::collection::vec(expr(), 0..4),
            prop::collection::vec(expr(), 0..4),
            prop::collection::vec(launch_setting(), 0..6),
            prop::collection::vec(launch_arg(), 0..3),
        )
            .prop_map(|(binary, kernel, grid, block, optional, args)| {
                let mut settings = LaunchSettings::new();
                for s in [LaunchSetting::Grid(grid), LaunchSetting::Block(block)]
                    .into_iter()
                    .chain(optional)
                {
                    // A second setting of a kind is dropped, as the parser would refuse it.
                    let _ = settings.insert(s);
                }
                Stmt::Launch(Box::new(Launch {
                    binary,
                    kernel,
                    settings,
                    args,
                }))
            }),
        prop::option::of(expr()).prop_map(Stmt::Return),
        prop::collection::vec(expr(), 1..4).prop_map(Stmt::ReturnTuple),
        (
            name(),
            prop::collection::vec(expr(), 0..4),
            dtype(),
            prop_oneof![
                expr().prop_map(AllocDevice::Value),
                (expr(), expr()).prop_map(|(device_type, device_id)| AllocDevice::Parts {
                    device_type,
                    device_id
                }),
            ],
        )
            .prop_map(|(dest, shape, dtype, device)| Stmt::Alloc(Box::new(Alloc {
                dest,
                shape,
                dtype,
                device
            }))),
    ];
    simple.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            (
                expr(),
                prop::collection::vec(inner.clone(), 0..3),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(cond, then_body, else_body)| Stmt::If {
                    cond,
                    then_body,
                    else_body
                }),
            (
                name(),
                expr(),
                expr(),
                any::<i64>(),
                prop::collection::vec(inner, 0..3)
            )
                .prop_map(|(var, start, end, step, body)| Stmt::For {
                    var,
                    start,
                    end,
                    step,
                    body
                }),
        ]
    })
}

fn dim() -> impl Strategy<Value = Dim> {
    prop_oneof![
        any::<i64>().prop_map(Dim::Const),
        (0i64..64).prop_map(Dim::Const),
        name().prop_map(Dim::Var)
    ]
}

fn dtype() -> impl Strategy<Value = DLDataType> {
    prop_oneof![
        prop::sample::select(vec![
            "float32",
            "int8x4",
            "bfloat16",
            "float8_e4m3fn",
            "bool",
            "uint1",
            "handle"
        ])
        .prop_map(|s| safecall_runtime::dtype::parse(s).unwrap()),
        (any::<u8>(), any::<u8>(), any::<u16>()).prop_map(|(code, bits, lanes)| DLDataType {
            code,
            bits,
            lanes
        }),
    ]
}

fn tensor_spec() -> impl Strategy<Value = TensorSpec> {
    let strides = prop_oneof![
        Just(Strides::Compact),
        Just(Strides::Any),
        prop::collection::vec(dim(), 0..3).prop_map(Strides::Exact),
    ];
    let device_id = prop_oneof![
        Just(DeviceIdPolicy::Same),
        Just(DeviceIdPolicy::Free),
        name().prop_map(DeviceIdPolicy::Var),
    ];
    (
        prop::option::of(dtype()),
        prop_oneof![
            4 => prop::collection::vec(dim(), 0..3).prop_map(TensorShape::Dims),
            1 => Just(TensorShape::AnyRank),
        ],
        strides,
        prop_oneof![
            Just(DeviceTypePolicy::Any),
            Just(DeviceTypePolicy::Same),
            any::<i32>().prop_map(DeviceTypePolicy::Code),
            (1i32..20).prop_map(DeviceTypePolicy::Code),
        ],
        device_id,
        prop::sample::select(vec![ByteOffsetPolicy::Zero, ByteOffsetPolicy::Any]),
        prop::option::of(any::<u32>()),
        prop::option::of(int_type()),
    )
        .prop_map(
            |(
                dtype,
                shape,
                strides,
                device_type,
                device_id,
                byte_offset,
                alignment,
                index_type,
            )| TensorSpec {
                dtype,
                shape,
                strides,
                device_type,
                device_id,
                byte_offset,
                alignment,
                index_type,
            },
        )
}

fn const_value() -> impl Strategy<Value = ConstValue> {
    prop_oneof![
        any::<i64>().prop_map(ConstValue::Int),
        any::<bool>().prop_map(ConstValue::Bool),
        float_bits().prop_map(ConstValue::Float),
        Just(ConstValue::None),
    ]
}

fn param_type() -> impl Strategy<Value = ParamType> {
    let leaf = prop_oneof![
        int_type().prop_map(ParamType::Int),
        Just(ParamType::Bool),
        float_type().prop_map(ParamType::Float),
        Just(ParamType::Ptr),
        Just(ParamType::Str),
        Just(ParamType::Bytes),
        Just(ParamType::Device),
        Just(ParamType::DType),
        Just(ParamType::Shape),
        Just(ParamType::Func),
        Just(ParamType::Any),
        Just(ParamType::DataPtr),
        Just(ParamType::Stream),
        tensor_spec().prop_map(ParamType::Tensor),
        const_value().prop_map(ParamType::Const),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| ParamType::Optional(Box::new(t))),
            prop::collection::vec(
                (name(), inner).prop_map(|(name, ty)| Param { name, ty }),
                0..3
            )
            .prop_map(ParamType::Tuple),
        ]
    })
}

fn ret_type() -> impl Strategy<Value = RetType> {
    let single = prop_oneof![
        Just(RetType::None),
        scalar_type().prop_map(RetType::Scalar),
        Just(RetType::Device),
        Just(RetType::DType),
        Just(RetType::Str),
        Just(RetType::Tensor),
        Just(RetType::Any),
    ];
    // Tuples of any return types (the parser reads what the verifier would refuse too).
    single.prop_recursive(1, 4, 3, |inner| {
        prop::collection::vec(inner, 0..3).prop_map(RetType::Tuple)
    })
}

fn function() -> impl Strategy<Value = Function> {
    (
        name(),
        prop_oneof![
            Just(String::new()),
            any::<String>().prop_map(|s| s.chars().take(20).collect())
        ],
        prop::collection::vec(
            (name(), param_type()).prop_map(|(name, ty)| Param { name, ty }),
            0..4,
        ),
        prop::collection::vec(
            (name(), any::<u64>())
                .prop_map(|(var, divisor)| Constraint::Divisible { var, divisor }),
            0..2,
        ),
        ret_type(),
        prop::collection::vec(stmt(), 0..4),
    )
        .prop_map(|(name, doc, params, constraints, ret, body)| Function {
            name,
            doc,
            params,
            constraints,
            ret,
            body,
        })
}

fn module() -> impl Strategy<Value = Module> {
    let extern_fn = (
        name(),
        prop::collection::vec(scalar_type(), 0..3),
        prop::option::of(scalar_type()),
        prop::sample::select(vec![
            ErrorConvention::None,
            ErrorConvention::NonZeroIsRaised,
        ]),
    )
        .prop_map(|(name, params, ret, errors)| ExternFn {
            name,
            params,
            ret,
            errors,
        });
    let imported = (
        name(),
        text(),
        prop::collection::vec(any::<u8>(), 0..12),
        prop::collection::vec(name(), 0..2),
    )
        .prop_map(|(label, kind, payload, imports)| ImportedModule {
            label,
            kind,
            payload,
            imports,
        });
    let device_binary = (
        name(),
        prop::sample::select(vec![
            BinaryFormat::Cubin,
            BinaryFormat::Fatbin,
            BinaryFormat::Ptx,
        ]),
        prop::collection::vec(any::<u8>(), 0..12),
        prop::collection::vec(name(), 0..3),
    )
        .prop_map(|(name, format, data, kernels)| DeviceBinary {
            name,
            format,
            data,
            kernels,
        });
    (
        name(),
        prop::collection::vec(extern_fn, 0..2),
        prop::collection::vec(imported, 0..2),
        prop::collection::vec(device_binary, 0..2),
        prop::collection::vec(name(), 0..2),
        prop::option::of(text()),
        prop::collection::vec(function(), 0..3),
    )
        .prop_map(
            |(
                name,
                externs,
                imported_modules,
                device_binaries,
                imports,
                system_lib_prefix,
                functions,
            )| Module {
                name,
                externs,
                imported_modules,
                device_binaries,
                imports,
                system_lib_prefix,
                functions,
            },
        )
}

/// `cases` by default (bounded so the suite runs in seconds); `PROPTEST_CASES` overrides it.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn print_then_parse_gives_the_module_back(m in module()) {
        let printed = print(&m);
        let parsed = match parse(&printed) {
            Ok(p) => p,
            Err(e) => return Err(TestCaseError::fail(e.render("printed", &printed))),
        };
        prop_assert_eq!(&parsed, &m, "printed:\n{}", printed);
        prop_assert_eq!(print(&parsed), printed);
    }

    #[test]
    fn expressions_round_trip(e in expr()) {
        let printed = safecall::ir::print::print_expr(&e);
        let parsed = safecall::ir::parse::parse_expr(&printed)
            .map_err(|err| TestCaseError::fail(err.render("expr", &printed)))?;
        prop_assert_eq!(parsed, e, "printed: {}", printed);
    }
}

fn examples() -> Vec<String> {
    [
        "add_one",
        "launcher",
        "call_global",
        "imports",
        "all_params",
    ]
    .iter()
    .map(|n| {
        std::fs::read_to_string(format!(
            "{}/examples/ir/{n}.scir",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    })
    .collect()
}

/// Parses, verifies and renders diagnostics; none of it may panic, whatever the text.
fn diagnose(text: &str) {
    match safecall::ir::parse::parse_with_source_map(text) {
        Err(e) => {
            assert!(e.span.start <= e.span.end && e.span.end <= text.len());
            let _ = e.render("fuzz", text);
        }
        Ok((m, map)) => {
            if let Err(errors) = verify(&m) {
                let source = safecall::ir::verify::Source {
                    file: "fuzz",
                    text,
                    map: &map,
                };
                let _ = safecall::ir::verify::render_errors(&errors, Some(source));
            }
        }
    }
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn parser_never_panics_on_arbitrary_text(s in any::<String>()) {
        diagnose(&s);
    }

    #[test]
    fn parser_never_panics_on_damaged_examples(
        which in 0usize..5,
        at in any::<prop::sample::Index>(),
        len in 0usize..12,
        insert in prop_oneof!["[ -~]{0,3}", Just(String::new()), prop::sample::select(vec!["{", "}", "(", ")", ";", "\"", "`", "-", "///", "\n"]).prop_map(str::to_owned)],
    ) {
        let text = &examples()[which];
        let mut start = at.index(text.len());
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + len).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let damaged = format!("{}{insert}{}", &text[..start], &text[end..]);
        diagnose(&damaged);
    }

    /// Verifying generated (mostly invalid) modules never panics, and every error renders
    /// without source too.
    #[test]
    fn verifier_never_panics(m in module()) {
        if let Err(errors) = verify(&m) {
            prop_assert!(!errors.is_empty());
            for e in &errors {
                let r = e.render(None);
                prop_assert!(r.starts_with("error: "));
            }
        }
    }
}

/// Any optional launch setting, of every kind and shape.
fn layout() -> impl Strategy<Value = TensorMapLayout> {
    let dims = || prop::collection::vec(expr(), 0..4);
    prop_oneof![
        dims().prop_map(|box_dims| TensorMapLayout::Tiled { box_dims }),
        (dims(), dims(), expr(), expr()).prop_map(|(lower, upper, channels, pixels)| {
            TensorMapLayout::Im2col {
                lower,
                upper,
                channels,
                pixels,
            }
        }),
    ]
}

fn launch_arg() -> impl Strategy<Value = LaunchArg> {
    let dims = || prop::collection::vec(expr(), 0..4);
    let options = (
        prop::sample::select(Interleave::ALL.to_vec()),
        prop::sample::select(Swizzle::ALL.to_vec()),
        prop::sample::select(L2Promotion::ALL.to_vec()),
        prop::sample::select(OobFill::ALL.to_vec()),
        prop::option::of(prop::sample::select(TensorMapDtype::ALL.to_vec())),
    );
    prop_oneof![
        expr().prop_map(LaunchArg::Value),
        (name(), layout(), dims(), options).prop_map(
            |(
                tensor,
                layout,
                element_strides,
                (interleave, swizzle, l2_promotion, oob_fill, dtype),
            )| {
                LaunchArg::TensorMap(Box::new(TensorMapArg {
                    tensor,
                    layout,
                    element_strides,
                    interleave,
                    swizzle,
                    l2_promotion,
                    oob_fill,
                    dtype,
                }))
            }
        ),
        (
            name(),
            prop::collection::vec(any::<u64>(), 0..6),
            any::<(u64, Option<(u64, u64)>)>()
        )
            .prop_map(|(tensor, block, (warps, pad))| TdmArg {
                tensor,
                block,
                warps,
                pad
            }
            .into()),
    ]
}

/// Any optional launch setting, by its kind's shape: a new setting is generated without a
/// line here.
fn launch_setting() -> impl Strategy<Value = LaunchSetting> {
    let optional: Vec<LaunchSettingKind> = LaunchSettingKind::ALL
        .into_iter()
        .filter(|k| !k.required())
        .collect();
    prop::sample::select(optional).prop_flat_map(|kind| {
        let value = match kind.shape() {
            SettingShape::Dims => prop::collection::vec(expr(), 0..4)
                .prop_map(SettingValue::Dims)
                .boxed(),
            SettingShape::Expr => expr().prop_map(SettingValue::Expr).boxed(),
            SettingShape::Keyword(words) => prop::sample::select(words.to_vec())
                .prop_map(|w| SettingValue::Keyword(w.to_owned()))
                .boxed(),
        };
        value.prop_map(move |v| LaunchSetting::new(kind, v).expect("a value of its shape"))
    })
}
