//! Randomized differential test of the two backends.
//!
//! A seeded generator writes host-IR programs over every scalar type (i8..i64, u8..u64, f32,
//! f64, bool): arithmetic, the whole division and remainder family (divisors of 0 and -1
//! included, with MIN dividends), shifts, bitwise operations, min/max, comparisons, selects,
//! casts between all of them, `let mut` variables assigned in loops and branches, nested
//! loops with dynamic trip counts, loads and stores (aligned or not) over a 64-byte buffer,
//! and assertions whose messages format run-time values. Each program is JIT-compiled by
//! Cranelift and by LLVM (optimization levels 0..3 in turn) and called on random inputs
//! (edge values favoured, a few out of range or of the wrong type); the results, the error
//! kinds and messages, and the buffer contents must be identical.
//!
//! Floats compare bit for bit, except that any NaN equals any NaN (IEEE leaves the payload
//! and sign of a NaN result open, and LLVM folds constant NaN expressions to a positive
//! quiet NaN where x86 computes a negative one); float values are stored to the buffer only
//! once NaNs are replaced by 0.
//!
//! `SAFECALL_DIFF_SEED` and `SAFECALL_DIFF_PROGRAMS` override the seed and the number of
//! programs; `SAFECALL_DIFF_VERBOSE` prints every program and outcome.

use crate::llvm_support;
use std::fmt::Write;

use safecall::Backend;
use safecall::ir::IntType;
use safecall::ir::syntax;
use safecall_runtime::abi::type_index;
use safecall_runtime::{Any, AnyView};

const DEFAULT_SEED: u64 = 0x5afe_ca11_d1ff_0001;
const DEFAULT_PROGRAMS: usize = 240;
const INPUTS_PER_PROGRAM: usize = 8;
const BUF_LEN: usize = 64;

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent`%.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum T {
    Int(IntType),
    F32,
    F64,
    Bool,
}

const INTS: &[T] = &[
    T::Int(IntType::I8),
    T::Int(IntType::I16),
    T::Int(IntType::I32),
    T::Int(IntType::I64),
    T::Int(IntType::U8),
    T::Int(IntType::U16),
    T::Int(IntType::U32),
    T::Int(IntType::U64),
];
const FLOATS: &[T] = &[T::F32, T::F64];

impl T {
    fn name(self) -> &'static str {
        match self {
            T::Int(i) => syntax::int_type(i),
            T::F32 => "f32",
            T::F64 => "f64",
            T::Bool => "bool",
        }
    }

    fn bytes(self) -> usize {
        match self {
            T::Int(i) => syntax::int_bits(i) as usize / 8,
            T::F32 => 4,
            T::F64 => 8,
            T::Bool => 1,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, T::F32 | T::F64)
    }

    /// The range of values of an integer type, as i128.
    fn int_range(self) -> (i128, i128) {
        let T::Int(i) = self else { unreachable!() };
        let bits = syntax::int_bits(i);
        if syntax::int_signed(i) {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        }
    }
}

struct Var {
    name: String,
    ty: T,
    mutable: bool,
}

struct Gen {
    rng: Rng,
    scopes: Vec<Vec<Var>>,
    counter: u32,
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }

    fn vars_of(&self, ty: T, mutable_only: bool) -> Vec<String> {
        self.scopes
            .iter()
            .flatten()
            .filter(|v| v.ty == ty && (v.mutable || !mutable_only))
            .map(|v| v.name.clone())
            .collect()
    }

    fn any_type(&mut self) -> T {
        match self.rng.below(10) {
            0..=5 => self.rng.pick(INTS),
            6..=8 => self.rng.pick(FLOATS),
            _ => T::Bool,
        }
    }

    fn int_value(&mut self, ty: T) -> i128 {
        let (lo, hi) = ty.int_range();
        match self.rng.below(10) {
            0 => 0,
            1 => 1,
            2 => lo,
            3 => hi,
            4 => {
                if lo < 0 {
                    -1
                } else {
                    hi
                }
            }
            5 | 6 => (self.rng.below(21) as i128 - 10).clamp(lo, hi),
            _ => {
                let span = (hi - lo) as u128 + 1;
                lo + (self.rng.next() as u128 % span) as i128
            }
        }
    }

    fn float_value(&mut self) -> f64 {
        match self.rng.below(16) {
            0 => 0.0,
            1 => -0.0,
            2 => 1.0,
            3 => -1.5,
            4 => 0.1,
            5 => f64::INFINITY,
            6 => f64::NEG_INFINITY,
            7 => f64::NAN,
            8 => 3.0e38,
            9 => -2147483648.0,
            10 => 9.3e18,
            11 => 1.0e-300,
            12 => 255.5,
            _ => (self.rng.next() as i64 as f64) / (1u64 << self.rng.below(64)) as f64,
        }
    }

    fn literal(&mut self, ty: T) -> String {
        match ty {
            T::Int(i) => {
                let v = self.int_value(ty) as i64;
                format!("({}{})", syntax::int_value(v, i), syntax::int_type(i))
            }
            T::F32 => {
                let v = self.float_value() as f32;
                format!("({})", syntax::f32_literal(f64::from(v).to_bits()))
            }
            T::F64 => format!("({})", syntax::f64_literal(self.float_value().to_bits())),
            T::Bool => self.rng.pick(&["true", "false"]).to_owned(),
        }
    }

    /// An address in the buffer where `size` bytes fit: a constant offset, or a masked
    /// run-time one.
    fn address(&mut self, size: usize, depth: u32) -> String {
        if depth > 0 && self.rng.chance(30) {
            let ty = self.rng.pick(INTS);
            let e = self.expr(ty, depth - 1);
            format!("offset(buf, (cast<i64>({e}) & 31i64))")
        } else {
            format!("offset(buf, {}i64)", self.rng.below(BUF_LEN - size + 1))
        }
    }

    fn leaf(&mut self, ty: T, depth: u32) -> String {
        let vars = self.vars_of(ty, false);
        let roll = self.rng.below(20);
        if !vars.is_empty() && roll < 11 {
            return self.rng.pick(&vars);
        }
        if ty != T::Bool && roll < 16 {
            let addr = self.address(ty.bytes(), depth);
            return format!("load<{}>({addr})", ty.name());
        }
        self.literal(ty)
    }

    fn expr(&mut self, ty: T, depth: u32) -> String {
        if depth == 0 || self.rng.chance(25) {
            return self.leaf(ty, depth);
        }
        let d = depth - 1;
        match ty {
            T::Int(_) => self.int_expr(ty, d),
            T::F32 | T::F64 => self.float_expr(ty, d),
            T::Bool => self.bool_expr(d),
        }
    }

    fn cast_from(&mut self, ty: T, d: u32) -> String {
        let from = loop {
            let f = self.any_type();
            // Bools convert to integers only; everything else converts both ways.
            if f != ty && !(f == T::Bool && ty.is_float()) {
                break f;
            }
        };
        let e = self.expr(from, d);
        format!("cast<{}>({e})", ty.name())
    }

    fn int_expr(&mut self, ty: T, d: u32) -> String {
        match self.rng.below(13) {
            0 | 1 => {
                let op = self.rng.pick(&["+", "-", "*"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("({a} {op} {b})")
            }
            2 | 3 => {
                let a = self.expr(ty, d);
                // Mostly non-zero divisors (so that most calls run to the end); -1, MIN
                // dividends and zero still come up.
                let T::Int(i) = ty else { unreachable!() };
                let s = syntax::int_type(i);
                let b = match self.rng.below(10) {
                    0..=2 => {
                        let (lo, hi) = ty.int_range();
                        let v = self.rng.pick(&[-1, 1, 2, 3, 7, -8, lo, hi]).clamp(lo, hi);
                        let v = if v == 0 { 1 } else { v };
                        format!("({}{s})", syntax::int_value(v as i64, i))
                    }
                    3..=8 => {
                        let e = self.expr(ty, d);
                        format!("({e} | (1{s}))")
                    }
                    _ => self.expr(ty, d),
                };
                match self.rng.below(5) {
                    0 => format!("({a} / {b})"),
                    1 => format!("({a} % {b})"),
                    2 => format!("floordiv({a}, {b})"),
                    3 => format!("floormod({a}, {b})"),
                    _ => format!("ceil_div({a}, {b})"),
                }
            }
            4 => {
                let op = self.rng.pick(&["&", "|", "^"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("({a} {op} {b})")
            }
            5 => {
                let op = self.rng.pick(&["<<", ">>"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("({a} {op} {b})")
            }
            6 => {
                let f = self.rng.pick(&["min", "max"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("{f}({a}, {b})")
            }
            7 => {
                let op = if ty.int_range().0 < 0 {
                    self.rng.pick(&["-", "~"])
                } else {
                    "~"
                };
                let a = self.expr(ty, d);
                format!("({op}{a})")
            }
            8 => {
                let c = self.expr(T::Bool, d);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("select({c}, {a}, {b})")
            }
            9 | 10 => self.cast_from(ty, d),
            _ => self.leaf(ty, d),
        }
    }

    fn float_expr(&mut self, ty: T, d: u32) -> String {
        match self.rng.below(10) {
            0..=2 => {
                let op = self.rng.pick(&["+", "-", "*", "/"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("({a} {op} {b})")
            }
            3 => {
                let f = self.rng.pick(&["min", "max"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("{f}({a}, {b})")
            }
            4 => {
                let a = self.expr(ty, d);
                format!("(-{a})")
            }
            5 => {
                let c = self.expr(T::Bool, d);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("select({c}, {a}, {b})")
            }
            6..=8 => self.cast_from(ty, d),
            _ => self.leaf(ty, d),
        }
    }

    fn bool_expr(&mut self, d: u32) -> String {
        match self.rng.below(8) {
            0..=2 => {
                let ty = if self.rng.chance(60) {
                    self.rng.pick(INTS)
                } else {
                    self.rng.pick(FLOATS)
                };
                let op = self.rng.pick(&["==", "!=", "<", "<=", ">", ">="]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("({a} {op} {b})")
            }
            3 => {
                let op = self.rng.pick(&["&&", "||"]);
                let (a, b) = (self.expr(T::Bool, d), self.expr(T::Bool, d));
                format!("({a} {op} {b})")
            }
            4 => {
                let a = self.expr(T::Bool, d);
                format!("(!{a})")
            }
            5 => {
                let ty = self.rng.pick(INTS);
                let a = self.expr(ty, d);
                format!("cast<bool>({a})")
            }
            _ => self.leaf(T::Bool, d),
        }
    }

    fn declare(&mut self, name: String, ty: T, mutable: bool) {
        self.scopes
            .last_mut()
            .expect("a scope")
            .push(Var { name, ty, mutable });
    }

    fn block(&mut self, out: &mut String, indent: usize, nesting: u32, count: usize) {
        self.scopes.push(Vec::new());
        for _ in 0..count {
            self.stmt(out, indent, nesting);
        }
        self.scopes.pop();
    }

    fn stmt(&mut self, out: &mut String, indent: usize, nesting: u32) {
        let pad = " ".repeat(indent);
        let depth = 3;
        match self.rng.below(13) {
            0..=2 | 12 => {
                let ty = self.any_type();
                let e = self.expr(ty, depth);
                let name = self.fresh("v");
                let _ = writeln!(out, "{pad}let {name} = {e};");
                self.declare(name, ty, false);
            }
            3 | 4 => {
                let ty = self.any_type();
                let e = self.expr(ty, depth);
                let name = self.fresh("m");
                let _ = writeln!(out, "{pad}let mut {name} = {e};");
                self.declare(name, ty, true);
            }
            5 | 6 => {
                let ty = self.any_type();
                let targets = self.vars_of(ty, true);
                if targets.is_empty() {
                    return self.stmt(out, indent, nesting);
                }
                let target = self.rng.pick(&targets);
                let e = self.expr(ty, depth);
                let _ = writeln!(out, "{pad}{target} = {e};");
            }
            7 | 8 => {
                let ty = self.any_type();
                let e = self.expr(ty, depth);
                let addr = self.address(ty.bytes(), 1);
                let value = if ty.is_float() {
                    // A NaN's payload is not compared: store 0 instead.
                    let name = self.fresh("s");
                    let _ = writeln!(out, "{pad}let {name} = {e};");
                    let zero = if ty == T::F32 { "0.0f32" } else { "0.0" };
                    format!("select({name} != {name}, {zero}, {name})")
                } else {
                    e
                };
                let _ = writeln!(out, "{pad}store<{}>({addr}, {value});", ty.name());
            }
            9 if nesting < 2 => {
                let c = self.expr(T::Bool, depth);
                let _ = writeln!(out, "{pad}if {c} {{");
                let n = 1 + self.rng.below(3);
                self.block(out, indent + 4, nesting + 1, n);
                let _ = writeln!(out, "{pad}}} else {{");
                let n = self.rng.below(3);
                self.block(out, indent + 4, nesting + 1, n);
                let _ = writeln!(out, "{pad}}}");
            }
            10 if nesting < 2 => {
                let ty = self.rng.pick(INTS);
                let T::Int(i) = ty else { unreachable!() };
                let s = syntax::int_type(i);
                let name = self.fresh("i");
                let dynamic = {
                    let e = self.expr(ty, 1);
                    format!("({e} & 7{s})")
                };
                let (start, end, step) = if self.rng.chance(75) {
                    let start = self.rng.below(3);
                    let end = if self.rng.chance(50) {
                        format!("({start}{s} + {dynamic})")
                    } else {
                        format!("{}{s}", start + self.rng.below(8))
                    };
                    (format!("{start}{s}"), end, 1 + self.rng.below(3) as i64)
                } else {
                    let start = 7 + self.rng.below(3);
                    (
                        format!("{start}{s}"),
                        dynamic,
                        -(1 + self.rng.below(2) as i64),
                    )
                };
                let step = if step == 1 {
                    String::new()
                } else {
                    format!(" step {step}")
                };
                let _ = writeln!(out, "{pad}for {name} in {start}..{end}{step} {{");
                self.scopes.push(vec![Var {
                    name,
                    ty,
                    mutable: false,
                }]);
                let n = 1 + self.rng.below(3);
                self.block(out, indent + 4, nesting + 1, n);
                self.scopes.pop();
                let _ = writeln!(out, "{pad}}}");
            }
            _ => {
                // Mostly true, so that most calls get past it.
                let (c1, c2) = (self.expr(T::Bool, 2), self.expr(T::Bool, 1));
                let c = format!("({c1} || {c2})");
                let mut parts = vec!["\"check failed: \"".to_owned()];
                for _ in 0..1 + self.rng.below(3) {
                    let ty = self.any_type();
                    parts.push(self.expr(ty, 1));
                    parts.push("\" / \"".to_owned());
                }
                let _ = writeln!(
                    out,
                    "{pad}assert {c} else ValueError({});",
                    parts.join(", ")
                );
            }
        }
    }

    /// A program: its text, parameter types and return type.
    fn program(&mut self, index: usize) -> (String, Vec<T>, T) {
        self.scopes = vec![Vec::new()];
        let params: Vec<T> = (0..2 + self.rng.below(4))
            .map(|_| self.any_type())
            .collect();
        let ret = self.any_type();
        let mut text = format!("module diff{index};\n\nfn f(");
        for (i, ty) in params.iter().enumerate() {
            let _ = write!(text, "p{i}: {}, ", ty.name());
            self.declare(format!("p{i}"), *ty, false);
        }
        let _ = writeln!(text, "buf: ptr) -> {} {{", ret.name());
        let n = 3 + self.rng.below(8);
        for _ in 0..n {
            self.stmt(&mut text, 4, 0);
        }
        let e = self.expr(ret, 3);
        let _ = writeln!(text, "    return {e};\n}}");
        (text, params, ret)
    }

    /// An argument for a parameter of type `ty`: mostly in range, sometimes not.
    fn argument(&mut self, ty: T) -> Any {
        if self.rng.chance(3) {
            return match self.rng.below(3) {
                0 => Any::from("wrong"),
                1 => Any::from(i64::MIN),
                _ => Any::from(1.5f64),
            };
        }
        match ty {
            T::Int(_) => {
                let (lo, hi) = ty.int_range();
                let v = self.int_value(ty).clamp(lo, hi.min(i64::MAX as i128));
                Any::from(v as i64)
            }
            T::F32 | T::F64 => Any::from(self.float_value()),
            T::Bool => Any::from(self.rng.chance(50)),
        }
    }
}

/// A comparable rendering of a call's outcome and the buffer after it.
fn outcome(result: Result<Any, safecall_runtime::Error>, buf: &[u8]) -> String {
    let value = match result {
        Err(e) => format!("error {}: {}", e.kind(), e.message()),
        Ok(v) => match v.type_index() {
            type_index::INT => format!("int {}", v.cast::<i64>().unwrap()),
            type_index::BOOL => format!("bool {}", v.cast::<bool>().unwrap()),
            type_index::FLOAT => {
                let f = v.cast::<f64>().unwrap();
                if f.is_nan() {
                    "float NaN".to_owned()
                } else {
                    format!("float {f:?} ({:#018x})", f.to_bits())
                }
            }
            other => format!("type index {other}"),
        },
    };
    format!("{value}; buffer {buf:02x?}")
}

#[test]
fn backends_agree_on_random_programs() {
    let backends = llvm_support::backends();
    if !backends.contains(&Backend::Llvm) {
        return;
    }
    let seed = std::env::var("SAFECALL_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let programs = std::env::var("SAFECALL_DIFF_PROGRAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_PROGRAMS);
    let mut g = Gen {
        rng: Rng(seed),
        scopes: Vec::new(),
        counter: 0,
    };
    let verbose = std::env::var_os("SAFECALL_DIFF_VERBOSE").is_some();
    let (mut calls, mut errors) = (0usize, 0usize);
    for index in 0..programs {
        let (text, params, ret) = g.program(index);
        let module = safecall::ir::parse::parse(&text).unwrap_or_else(|e| {
            panic!("generated text does not parse:\n{}", e.render("gen", &text))
        });
        if let Err(errors) = safecall::ir::verify::verify(&module) {
            panic!(
                "generated program does not verify:\n{text}\n{}",
                safecall::ir::verify::render_errors(&errors, None)
            );
        }
        let opt_level = (index % 4) as u8;
        let clif =
            // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
            // and calls only symbols it declares with their real signatures.
            unsafe { safecall::jit::compile(&module, &llvm_support::jit_options(Backend::Cranelift, 2)) }
                .unwrap_or_else(|e| panic!("Cranelift:\n{text}\n{e}"));
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let llvm = unsafe {
            safecall::jit::compile(
                &module,
                &llvm_support::jit_options(Backend::Llvm, opt_level),
            )
        }
        .unwrap_or_else(|e| panic!("LLVM O{opt_level}:\n{text}\n{e}"));
        // The baseline tier, the JIT's default on x86-64.
        // SAFETY: the IR is this test's own: it dereferences only the arguments it checks
        // and calls only symbols it declares with their real signatures.
        let baseline =
            unsafe { safecall::jit::compile(&module, &safecall::jit::JitOptions::default()) }
                .unwrap_or_else(|e| panic!("baseline:\n{text}\n{e}"));
        let (fc, fl) = (clif.function("f").unwrap(), llvm.function("f").unwrap());
        let fb = baseline.function("f").unwrap();
        if verbose {
            eprintln!("program {index}:\n{text}");
        }
        for _ in 0..INPUTS_PER_PROGRAM {
            let args: Vec<Any> = params.iter().map(|&t| g.argument(t)).collect();
            let init: Vec<u8> = (0..BUF_LEN).map(|_| g.rng.next() as u8).collect();
            let run = |f: &safecall_runtime::Function| {
                let mut buf = init.clone();
                let mut views: Vec<AnyView<'_>> = args.iter().map(AnyView::from).collect();
                views.push(AnyView::opaque_ptr(buf.as_mut_ptr().cast()));
                let r = f.call(&views);
                outcome(r, &buf)
            };
            let (a, b, c) = (run(fc), run(fl), run(fb));
            assert_eq!(
                a,
                c,
                "Cranelift and the default JIT tier disagree (seed {seed:#x}, program {index}, \
                 returns {})\n{text}\narguments: {args:?}",
                ret.name()
            );
            assert_eq!(
                a,
                b,
                "backends disagree (seed {seed:#x}, program {index}, LLVM O{opt_level}, returns {})\n\
                 {text}\narguments: {args:?}",
                ret.name()
            );
            if verbose {
                eprintln!("program {index}: {}", &a[..a.len().min(160)]);
            }
            calls += 1;
            errors += usize::from(a.starts_with("error"));
        }
    }
    println!(
        "differential: {programs} programs, {calls} calls ({errors} raised errors), identical on \
         Cranelift, LLVM O0..O3 and the default JIT tier (seed {seed:#x})"
    );
    assert!(
        errors > 0 && errors < calls,
        "{errors} of {calls} calls raised"
    );
}
