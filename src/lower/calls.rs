//! Calls from host functions: extern C functions, and packed calls through the safe-call ABI
//! (global functions, functions of imported modules, callbacks, direct symbols).

use safecall_runtime::abi::{
    ANY_SIZE, ANY_VALUE_OFFSET, BYTE_ARRAY_DATA_OFFSET, BYTE_ARRAY_SIZE, BYTE_ARRAY_SIZE_OFFSET,
    type_index as ti,
};

use crate::ir::{Callee, ErrorConvention, Expr, IntType, ScalarType};
use crate::lir::{self, Ext, FuncId, IntCC, Linkage, Signature, Symbol, Ty, builder::FuncBuilder};

use super::capi::{CApi, safe_call_signature};
use super::context::{Binding, FnCtx};
use super::expr::{Val, copy_any, lower_expr, write_pod, write_scalar_any};
use super::layout::scalar_lir_type;
use super::modctx::ModuleCtx;
use super::options::LowerError;
use super::raise::{MsgPart, Tag, emit_raise};
use safecall_runtime::abi::symbols::EXPORT_PREFIX;
use safecall_runtime::abi::symbols::error_kind::{RUNTIME_ERROR, VALUE_ERROR};

/// How a C parameter of this type is passed (narrow integers are extended by the caller).
fn c_param(t: ScalarType) -> (Ty, Ext) {
    let ty = scalar_lir_type(t);
    let ext = match t {
        ScalarType::Bool => Ext::Uext,
        ScalarType::Int(i) if ty.bytes() < 4 => {
            if i.is_signed() {
                Ext::Sext
            } else {
                Ext::Uext
            }
        }
        ScalarType::Int(_) | ScalarType::Float(_) | ScalarType::Ptr => Ext::None,
    };
    (ty, ext)
}

/// Calls a declared extern C function.
pub(crate) fn lower_extern_call(
    fx: &mut FnCtx<'_, '_>,
    dest: Option<&str>,
    func: &str,
    args: &[Expr],
) -> Result<(), LowerError> {
    let decl = fx
        .m
        .ir
        .externs
        .iter()
        .find(|e| e.name == func)
        .ok_or_else(|| LowerError::internal(format!("extern function `{func}` is not declared")))?
        .clone();
    if decl.params.len() != args.len() {
        return Err(LowerError::internal(format!(
            "extern `{func}` takes {} arguments, got {}",
            decl.params.len(),
            args.len()
        )));
    }
    let (params, param_ext): (Vec<Ty>, Vec<Ext>) = decl.params.iter().map(|&t| c_param(t)).unzip();
    let (ret, ret_ext) = match decl.ret {
        Some(t) => {
            let (ty, ext) = c_param(t);
            (Some(ty), ext)
        }
        None => (None, Ext::None),
    };
    let sig = Signature {
        params,
        ret,
        param_ext,
        ret_ext,
    };
    let mut vars = Vec::new();
    for (arg, &want) in args.iter().zip(&decl.params) {
        let v = match lower_expr(fx, arg)? {
            Val::Scalar(v, _) => v,
            Val::Str(s) if want == ScalarType::Ptr => {
                let data = fx.m.cstring(s.as_bytes());
                fx.b.symbol_addr(Symbol::Data(data))
            }
            other @ (Val::Device(_)
            | Val::DType(_)
            | Val::Ref { .. }
            | Val::Tensor(_)
            | Val::Str(_)) => {
                return Err(LowerError::internal(format!(
                    "argument of extern `{func}` is not a scalar: {other:?}"
                )));
            }
        };
        vars.push(v);
    }
    let import = fx.m.import(func, sig);
    let rc = fx.b.call(lir::Callee::Import(import), ret, vars);
    if decl.errors == ErrorConvention::NonZeroIsRaised {
        let rc = rc.ok_or_else(|| {
            LowerError::internal(format!(
                "extern `{func}` returns nothing, but is declared to report errors"
            ))
        })?;
        fx.fail_on_nonzero(rc);
    }
    if let Some(name) = dest {
        let var = match (rc, decl.ret) {
            (Some(v), Some(_)) => v,
            _ => {
                return Err(LowerError::internal(format!(
                    "extern `{func}` returns nothing; its result cannot be bound to `{name}`"
                )));
            }
        };
        fx.bind(name, Binding::Scalar { var, guard: None });
    }
    Ok(())
}

/// Calls a function through the safe-call ABI. Arguments are views built on the stack; the
/// result is owned and released at exit (or when the call site runs again).
pub(crate) fn lower_packed_call(
    fx: &mut FnCtx<'_, '_>,
    dest: Option<&str>,
    callee: &Callee,
    args: &[Expr],
) -> Result<(), LowerError> {
    let result = packed_call(fx, callee, args)?;
    match dest {
        Some(name) => {
            let slot = fx.owned_slot();
            let d = fx.b.stack_addr(slot, 0);
            // The call site may run again (a loop): drop the previous result first.
            fx.release_any(d);
            copy_any(fx, d, result);
            fx.bind(
                name,
                Binding::Ref {
                    any: d,
                    guard: None,
                },
            );
        }
        None => fx.release_any(result),
    }
    Ok(())
}

/// Makes a packed call and returns the address of its result, a `TVMFFIAny` the caller now
/// owns (on failure the error exit is taken).
pub(crate) fn packed_call(
    fx: &mut FnCtx<'_, '_>,
    callee: &Callee,
    args: &[Expr],
) -> Result<lir::Var, LowerError> {
    let n = args.len();
    let args_slot = fx.b.slot((n.max(1) * ANY_SIZE) as u32, 8);
    for (k, arg) in args.iter().enumerate() {
        let v = lower_expr(fx, arg)?;
        let at = fx.b.stack_addr(args_slot, (k * ANY_SIZE) as u32);
        match v {
            Val::Scalar(var, ScalarType::Int(IntType::U64)) => {
                // An argument is a view, which cannot own a BigInt: a u64 of 2^63 or more is
                // refused rather than wrapped to a negative int.
                let fits = fx.b.icmp_imm(IntCC::Sge, var, 0);
                let prefix = format!(
                    "{}: in `{}`: the u64 ",
                    fx.func.name,
                    fx.current_stmt_text()
                );
                fx.check(fits, VALUE_ERROR, |_| {
                    vec![
                        MsgPart::Text(prefix),
                        MsgPart::Value(Tag::U64, var),
                        MsgPart::text(format!(
                            " passed as argument {k} does not fit in a TVM-FFI int (int64)"
                        )),
                    ]
                });
                write_scalar_any(fx, at, var, ScalarType::Int(IntType::U64))?;
            }
            Val::Scalar(var, ty) => write_scalar_any(fx, at, var, ty)?,
            Val::Device(var) => write_pod(fx, at, ti::DEVICE, var),
            Val::DType(var) => write_pod(fx, at, ti::DATA_TYPE, var),
            Val::Str(s) => {
                if s.as_bytes().contains(&0) {
                    return Err(LowerError::limit(
                        "a string literal passed to a packed call cannot contain NUL bytes",
                    )
                    .to_owned());
                }
                let data = fx.m.cstring(s.as_bytes());
                let p = fx.b.symbol_addr(Symbol::Data(data));
                write_pod(fx, at, ti::RAW_STR, p);
            }
            Val::Ref { any, .. } => copy_any(fx, at, any),
            Val::Tensor(t) => copy_any(fx, at, t.any),
        }
    }
    let args_ptr = fx.b.stack_addr(args_slot, 0);
    let n_var = fx.b.iconst(Ty::I32, n as i64);
    let result_slot = fx.b.slot(ANY_SIZE as u32, 8);
    let result = fx.b.stack_addr(result_slot, 0);
    // The callee receives `result` as None.
    let zero = fx.b.iconst(Ty::I64, 0);
    write_pod(fx, result, ti::NONE, zero);

    let rc = match callee {
        Callee::Direct(symbol) => {
            let target = direct_target(fx.m, symbol);
            let null = fx.b.iconst(Ty::Ptr, 0);
            fx.b.call(target, Some(Ty::I32), vec![null, args_ptr, n_var, result])
        }
        Callee::Param(name) => {
            let Binding::Ref { any, guard, .. } = fx.lookup(name)? else {
                return Err(LowerError::internal(format!(
                    "`{name}` is not a function parameter"
                )));
            };
            fx.check_present(&guard);
            let f = fx.b.load(Ty::Ptr, any, ANY_VALUE_OFFSET);
            call_function_object(fx, f, args_ptr, n_var, result)
        }
        Callee::Global(name) | Callee::Import(name) => {
            let import = matches!(callee, Callee::Import(_));
            let f = cached_lookup(fx, name, import);
            call_function_object(fx, f, args_ptr, n_var, result)
        }
    }
    .expect("safe calls return an int");
    fx.fail_on_nonzero(rc);
    Ok(result)
}

fn call_function_object(
    fx: &mut FnCtx<'_, '_>,
    f: lir::Var,
    args: lir::Var,
    n: lir::Var,
    result: lir::Var,
) -> Option<lir::Var> {
    let call = fx.m.capi(CApi::FunctionCall);
    fx.b.call(
        lir::Callee::Import(call),
        Some(Ty::I32),
        vec![f, args, n, result],
    )
}

/// A direct safe-call target: a host function of this module, or an external symbol.
fn direct_target(m: &mut ModuleCtx<'_>, symbol: &str) -> lir::Callee {
    if let Some(&id) = symbol
        .strip_prefix(EXPORT_PREFIX)
        .and_then(|name| m.host_functions.get(name))
    {
        return lir::Callee::Func(id);
    }
    lir::Callee::Import(m.import(symbol, safe_call_signature()))
}

/// Loads the function handle cached for `name`, looking it up once (thread-safely, through
/// `TVMFFIHandleInitOnce`) on first use.
fn cached_lookup(fx: &mut FnCtx<'_, '_>, name: &str, import: bool) -> lir::Var {
    // One cache cell per call site; its init function's error names the calling function and
    // statement.
    let caller = Caller {
        prefix: format!("{}: in `{}`: ", fx.func.name, fx.current_stmt_text()),
        context: fx.call_context(),
    };
    let cell =
        fx.m.handle_cell(if import { "import_fn" } else { "global_fn" });
    let init = emit_lookup_init(fx.m, name, import, &caller);
    let error = fx.error_block();
    load_once(fx.m, &mut fx.b, cell, init, error)
}

/// Loads the handle cached in `cell`, running `init` (`int init(void** out)`) under
/// `TVMFFIHandleInitOnce` first while the cell is still NULL; when `init` fails (it raised),
/// jumps to `error`.
pub(crate) fn load_once(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    cell: lir::DataId,
    init: FuncId,
    error: lir::BlockId,
) -> lir::Var {
    load_cell(m, b, cell, error, |m, b, cell_addr| {
        let init_once = m.capi(CApi::HandleInitOnce);
        let init_addr = b.symbol_addr(Symbol::Func(init));
        b.call(
            lir::Callee::Import(init_once),
            Some(Ty::I32),
            vec![cell_addr, init_addr],
        )
        .expect("returns")
    })
}

/// The pointer in `cell`; while it is NULL, `fill(cell's address)` (on a cold path) must store
/// it there and return 0, or raise and return nonzero, which branches to `error`.
pub(crate) fn load_cell(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    cell: lir::DataId,
    error: lir::BlockId,
    fill: impl FnOnce(&mut ModuleCtx<'_>, &mut FuncBuilder, lir::Var) -> lir::Var,
) -> lir::Var {
    let cell_addr = b.symbol_addr(Symbol::Data(cell));
    let cached = b.load(Ty::Ptr, cell_addr, 0);
    let handle = b.mutable_var(Ty::Ptr);
    b.assign(handle, cached);
    let null = b.iconst(Ty::Ptr, 0);
    let missing = b.icmp(IntCC::Eq, cached, null);
    let init_block = b.new_cold_block();
    let join = b.new_block();
    b.branch(missing, init_block, join);
    b.switch_to(init_block);
    let rc = fill(m, b, cell_addr);
    let failed = b.icmp_imm(IntCC::Ne, rc, 0);
    let ok = b.new_block();
    b.branch(failed, error, ok);
    b.switch_to(ok);
    let loaded = b.load(Ty::Ptr, cell_addr, 0);
    b.assign(handle, loaded);
    b.jump(join);
    b.switch_to(join);
    handle
}

/// Who looks a function up, for the messages of a failed lookup: `f: in `stmt`: ` before the
/// fact and the `when calling` line after it.
struct Caller {
    prefix: String,
    context: String,
}

/// `int init(void** out)`: looks the function up; a missing function raises a clear error.
fn emit_lookup_init(m: &mut ModuleCtx<'_>, name: &str, import: bool, caller: &Caller) -> FuncId {
    let Caller { prefix, context } = caller;
    let fn_name = m.local_name(if import { "init_import" } else { "init_global" });
    let mut b = FuncBuilder::new(
        fn_name,
        Linkage::Local,
        Signature::new(vec![Ty::Ptr], Some(Ty::I32)),
    );
    b.set_cold();
    let out = b.param(0);
    let name_data = m.cstring(name.as_bytes());
    let name_ptr = b.symbol_addr(Symbol::Data(name_data));
    let rc = if import {
        b.source(format!("look up `{name}` in the imported modules"));
        let ctx_cell = m.library_ctx();
        let ctx_addr = b.symbol_addr(Symbol::Data(ctx_cell));
        let ctx = b.load(Ty::Ptr, ctx_addr, 0);
        let null = b.iconst(Ty::Ptr, 0);
        let unset = b.icmp(IntCC::Eq, ctx, null);
        let fail = b.new_cold_block();
        let lookup = b.new_block();
        b.branch(unset, fail, lookup);
        b.switch_to(fail);
        let message = format!(
            "{prefix}cannot call `{name}` from an imported module: this library was not loaded \
             as a module (its __tvm_ffi__library_ctx is unset; load it with \
             tvm_ffi.load_module){context}"
        );
        raise_static(m, &mut b, RUNTIME_ERROR, &message);
        b.switch_to(lookup);
        let f = m.capi(CApi::EnvModLookupFromImports);
        b.call(
            lir::Callee::Import(f),
            Some(Ty::I32),
            vec![ctx, name_ptr, out],
        )
        .expect("returns")
    } else {
        b.source(format!("look up the global function `{name}`"));
        let slot = b.slot(BYTE_ARRAY_SIZE as u32, 8);
        let ba = b.stack_addr(slot, 0);
        b.store(ba, BYTE_ARRAY_DATA_OFFSET, name_ptr);
        b.store_imm(Ty::I64, ba, BYTE_ARRAY_SIZE_OFFSET, name.len() as i64);
        let f = m.capi(CApi::FunctionGetGlobal);
        b.call(lir::Callee::Import(f), Some(Ty::I32), vec![ba, out])
            .expect("returns")
    };
    let failed = b.icmp_imm(IntCC::Ne, rc, 0);
    let pass_rc = b.new_cold_block();
    let check_found = b.new_block();
    b.branch(failed, pass_rc, check_found);
    b.switch_to(pass_rc);
    b.ret(Some(rc));
    b.switch_to(check_found);
    let found = b.load(Ty::Ptr, out, 0);
    let null = b.iconst(Ty::Ptr, 0);
    let missing = b.icmp(IntCC::Eq, found, null);
    let not_found = b.new_cold_block();
    let ok = b.new_block();
    b.branch(missing, not_found, ok);
    b.switch_to(not_found);
    let message = if import {
        format!(
            "{prefix}function `{name}` is not found in the imported modules of this library{context}"
        )
    } else {
        format!("{prefix}global function `{name}` is not registered{context}")
    };
    raise_static(m, &mut b, RUNTIME_ERROR, &message);
    b.switch_to(ok);
    let zero = b.iconst(Ty::I32, 0);
    b.ret(Some(zero));
    m.add_function(b.finish())
}

/// In a helper function: raise a static message and return -1.
fn raise_static(m: &mut ModuleCtx<'_>, b: &mut FuncBuilder, kind: &str, message: &str) {
    let slot = b.slot(8, 8);
    let rc = emit_raise(m, b, slot, kind, vec![MsgPart::text(message)]);
    b.ret(Some(rc));
}
