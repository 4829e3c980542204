//! A descriptor's cache miss as a cold local function: the rules checked ([`super::rules`]),
//! the driver's encoder called ([`super::encode`]) and the result cached, compiled once per
//! module and kind of descriptor instead of once per launch argument.
//!
//! Descriptors of one kind (the same rank, element type, layout, options, which layout values
//! are constants, and host function) share the function: the values (address, dims, strides,
//! box, ...) come in an array of words, the argument's own texts (its `what` and the tensor's
//! name) as C strings, so that messages read as they would inline. A kernel with four
//! descriptors of one kind (Triton's attention kernels) lowers and compiles one miss instead
//! of four. The function returns 0, or raises and returns -1; its caller then undoes what the
//! launch holds (`cleanup`) and leaves through its error exit.

use crate::ir::{Expr, TensorMapArg, TensorMapDtype, TensorMapLayout};
use crate::lir::{
    Callee, ConvOp, FuncId, Linkage, Signature, Symbol, Ty, Var, builder::FuncBuilder,
};

use super::super::super::context::FnCtx;
use super::super::super::modctx::ModuleCtx;
use super::super::super::raise::PART_SIZE;
use super::encode::encode;
use super::entry::insert;
use super::miss_fn::{Miss, MissFn};
use super::prepare::{Inputs, Prepared};
use super::rules::check_rules;

/// Calls the miss function of descriptor `p` (made on first use of its kind): checks and
/// encodes its inputs into `out` (128-byte aligned storage), then stores key and descriptor
/// into the entry of the cache at `cache` (entries of `entry_size` bytes) that the cache's
/// round-robin counter picks. Returns the function's result: 0, or -1 with the error raised.
pub(crate) fn call(
    fx: &mut FnCtx<'_, '_>,
    p: &Prepared<'_>,
    out: Var,
    table: Var,
    cache: Var,
    entry_size: usize,
) -> Var {
    let form = form_of(p.arg);
    let rank = p.inputs.dims.len();
    let call_context = fx.call_context();
    let kind = format!("{form:?}|{:?}|{rank}|{entry_size}|{call_context}", p.elem);
    let id = match fx.m.gpu.tensormap_misses.get(&kind) {
        Some(&id) => id,
        None => {
            let id = define(fx.m, &form, p.elem, rank, entry_size, call_context);
            fx.m.gpu.tensormap_misses.insert(kind, id);
            id
        }
    };
    let words = words(&p.inputs);
    let slot = fx.b.slot(8 * words.len().max(1) as u32, 8);
    let at = fx.b.stack_addr(slot, 0);
    for (j, &w) in words.iter().enumerate() {
        fx.b.store(at, 8 * j, w);
    }
    let what = fx.m.cstring(p.what.as_bytes());
    let what = fx.b.symbol_addr(Symbol::Data(what));
    let tensor = fx.m.cstring(p.arg.tensor.as_bytes());
    let tensor = fx.b.symbol_addr(Symbol::Data(tensor));
    let args = vec![table, at, out, cache, what, tensor];
    fx.b.call(Callee::Func(id), Some(Ty::I32), args)
        .expect("the miss function returns its status")
}

/// The words the miss function reads, in order: the address, the dims, the tensor's
/// strides, the byte strides, the layout's values, the element strides, the innermost extent.
fn words(v: &Inputs) -> Vec<Var> {
    let mut words = vec![v.addr_int];
    words.extend(&v.dims);
    words.extend(&v.tensor_strides);
    words.extend(&v.byte_strides);
    words.extend(&v.layout);
    words.extend(&v.element_strides);
    words.extend(v.inner_extent);
    words
}

/// `t` with its tensor's name left out and each expression reduced to whether it is a
/// constant (a literal 0 of its type) or not (an unnamed variable): all the miss function's
/// code depends on.
fn form_of(t: &TensorMapArg) -> TensorMapArg {
    let reduce = |e: &Expr| {
        if let Expr::Int { ty, .. } = e {
            Expr::Int { value: 0, ty: *ty }
        } else {
            Expr::Var(String::new())
        }
    };
    let all = |es: &[Expr]| es.iter().map(reduce).collect::<Vec<_>>();
    let layout = match &t.layout {
        TensorMapLayout::Tiled { box_dims } => TensorMapLayout::Tiled {
            box_dims: all(box_dims),
        },
        TensorMapLayout::Im2col {
            lower,
            upper,
            channels,
            pixels,
        } => TensorMapLayout::Im2col {
            lower: all(lower),
            upper: all(upper),
            channels: reduce(channels),
            pixels: reduce(pixels),
        },
    };
    TensorMapArg {
        tensor: String::new(),
        layout,
        element_strides: all(&t.element_strides),
        interleave: t.interleave,
        swizzle: t.swizzle,
        l2_promotion: t.l2_promotion,
        oob_fill: t.oob_fill,
        dtype: t.dtype,
    }
}

/// The cold local function `i32 miss(table, words, out, cache, what, tensor)` of descriptors
/// of form `form` (see [`form_of`]) and element type `elem`, of rank `rank`, in a host
/// function whose messages end with `call_context`.
fn define(
    m: &mut ModuleCtx<'_>,
    form: &TensorMapArg,
    elem: TensorMapDtype,
    rank: usize,
    entry_size: usize,
    call_context: String,
) -> FuncId {
    let name = m.local_name("tensormap_miss");
    let sig = Signature::new(vec![Ty::Ptr; 6], Some(Ty::I32));
    let mut b = FuncBuilder::new(name, Linkage::Local, sig);
    b.set_cold();
    b.source(
        "cold helper: a tensormap descriptor's cache miss (its rules, the encoder, the cache)",
    );
    let parts = b.slot(PART_SIZE, 8);
    let [table, words, out, cache, what, tensor] = [0, 1, 2, 3, 4, 5].map(|i| b.param(i));
    let mut next = 0;
    let mut read = |b: &mut FuncBuilder, n: usize| -> Vec<Var> {
        let vs = (next..next + n)
            .map(|j| b.load(Ty::I64, words, 8 * j))
            .collect();
        next += n;
        vs
    };
    let addr_int = read(&mut b, 1)[0];
    let dims = read(&mut b, rank);
    let tensor_strides = read(&mut b, rank);
    let byte_strides = read(&mut b, rank.saturating_sub(1));
    let layout = read(&mut b, form.layout.exprs().count());
    let element_strides = read(&mut b, rank);
    let inner_extent = read(&mut b, usize::from(rank > 0)).first().copied();
    let addr = b.convert(ConvOp::IntToPtr, addr_int, Ty::Ptr);
    let miss = Miss {
        t: form,
        elem,
        v: Inputs {
            addr,
            addr_int,
            tensor_strides,
            dims,
            inner_extent,
            byte_strides,
            layout,
            element_strides,
        },
    };
    let mut cx = MissFn {
        m,
        b,
        parts,
        table,
        what,
        tensor,
        call_context,
    };
    check_rules(&mut cx, &miss);
    encode(&mut cx, &miss, out);
    let MissFn { m, mut b, .. } = cx;
    insert(&mut b, cache, &miss.v.key(form), out, entry_size);
    let ok = b.iconst(Ty::I32, 0);
    b.ret(Some(ok));
    m.add_function(b.finish())
}
