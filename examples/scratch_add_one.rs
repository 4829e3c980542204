use safecall::ir::*;
use safecall_runtime::abi::DLDataType;

fn main() {
    let f32t = DLDataType { code: 2, bits: 32, lanes: 1 };
    let spec = TensorSpec {
        dtype: Some(f32t),
        shape: vec![Dim::Var("n".into())],
        strides: Strides::Compact,
        device_type: Some(1),
        device_id: DeviceIdPolicy::Same,
        byte_offset: ByteOffsetPolicy::Zero,
        alignment: None,
        index_type: None,
    };
    let i = || Expr::Var("i".into());
    let addr = |t: &str| Expr::PtrOffset {
        ptr: Box::new(Expr::Field { tensor: t.into(), field: TensorField::Data }),
        offset: Box::new(Expr::Binary { op: BinOp::Mul, lhs: Box::new(i()), rhs: Box::new(Expr::Int { value: 4, ty: IntType::I64 }) }),
    };
    let body = vec![Stmt::For {
        var: "i".into(),
        start: Expr::Int { value: 0, ty: IntType::I64 },
        end: Expr::Var("n".into()),
        step: 1,
        body: vec![Stmt::Store {
            ty: ScalarType::Float(FloatType::F32),
            ptr: addr("y"),
            value: Expr::Binary {
                op: BinOp::Add,
                lhs: Box::new(Expr::Load { ty: ScalarType::Float(FloatType::F32), ptr: Box::new(addr("x")) }),
                rhs: Box::new(Expr::Float { bits: 1.0f64.to_bits(), ty: FloatType::F32 }),
            },
        }],
    }];
    let f = Function {
        name: "add_one".into(),
        doc: "y = x + 1".into(),
        params: vec![
            Param { name: "x".into(), ty: ParamType::Tensor(spec.clone()) },
            Param { name: "y".into(), ty: ParamType::Tensor(spec) },
        ],
        constraints: vec![],
        ret: RetType::None,
        body,
    };
    let g = Function {
        name: "scalars".into(),
        doc: String::new(),
        params: vec![
            Param { name: "a".into(), ty: ParamType::Int(IntType::I32) },
            Param { name: "b".into(), ty: ParamType::Float(FloatType::F64) },
        ],
        constraints: vec![],
        ret: RetType::Scalar(ScalarType::Int(IntType::I64)),
        body: vec![Stmt::Return(Some(Expr::Binary { op: BinOp::FloorDiv, lhs: Box::new(Expr::Cast { ty: ScalarType::Int(IntType::I64), arg: Box::new(Expr::Var("a".into())) }), rhs: Box::new(Expr::Cast { ty: ScalarType::Int(IntType::I64), arg: Box::new(Expr::Var("b".into())) }) }))],
    };
    let m = Module { name: "m".into(), externs: vec![], imported_modules: vec![], imports: vec![], system_lib_prefix: None, functions: vec![f, g] };
    let l = safecall::lower::lower(&m, &Default::default()).unwrap();
    std::fs::write("/tmp/sc/add_one.lir", l.to_string()).unwrap();
    std::fs::write("/tmp/sc/add_one.clif", safecall::backend::cranelift::clif_text(&l).unwrap()).unwrap();
    let obj = safecall::aot::cranelift_object(&l, &Default::default()).unwrap();
    std::fs::write("/tmp/sc/add_one.o", obj).unwrap();
    safecall::aot::link_shared_library("/tmp/sc/add_one.o".as_ref(), "/tmp/sc/add_one.so".as_ref(), &Default::default()).unwrap();
    println!("ok");
}
