//! Ints beyond 64 bits at the call boundary: tvm_ffi passes a Python int outside `i64` as an
//! `ffi.BigInt` object (`c_api.h`'s `kTVMFFIBigInt`, minimal two's-complement words). A `u64`
//! parameter takes those of 2^63 to 2^64 - 1 (two words, the high one 0), a `u64` result of
//! that half goes back as such a BigInt, and `cast<u64>` of an `any` reads one; every other
//! integer parameter, and `u64` beyond its range, refuses them as out of range (a ValueError
//! naming the argument, also when the explain function passes a valid one first; floats take
//! them: tests/big_int_floats.rs); a packed
//! call's argument (a view) refuses the upper half rather than wrapping it. On every JIT tier
//! and backend of the build (the baseline tier, Cranelift, LLVM with the `llvm` feature).

use safecall::jit::{self, JitOptions};
use safecall_runtime::{Any, AnyView, Function, big_int};

use crate::common::delivery::jit_tiers;

const TEXT: &str = "module big;\n\
    fn low_half(x: u64) -> i64 { return cast<i64>(x & 0xffffffffu64); }\n\
    fn high_bit(x: u64) -> bool { return x >= 0x8000000000000000u64; }\n\
    fn maybe(x: optional[u64]) -> i64 { if is_none(x) { return -1; } return cast<i64>(x >> 32u64); }\n\
    fn signed(x: i64) -> i64 { return x; }\n\
    fn byte(x: i8) -> i64 { return cast<i64>(x); }\n\
    fn float(x: f64) -> f64 { return x; }\n\
    fn echo(x: u64) -> u64 { return x; }\n\
    fn back(x: any) -> u64 { return cast<u64>(x); }\n\
    fn two(x: u64, y: i8) -> i64 { return cast<i64>(y); }\n\
    fn pass(f: func, x: u64) { call_packed f(x); }\n\
    fn pair(x: u64) -> (u64, u64) { return (x, x); }\n";

/// An owned `Int` or `ffi.BigInt` holding `words` (least significant first).
fn int(words: &[i64]) -> Any {
    big_int::any_from_words(words)
}

fn each_tier(check: impl Fn(&jit::JitModule)) {
    let module = safecall::ir::parse::parse(TEXT)
        .unwrap_or_else(|e| panic!("{}", e.render("big.scir", TEXT)));
    for (first_tier, backend) in jit_tiers() {
        let options = JitOptions {
            first_tier,
            backend,
            ..JitOptions::default()
        };
        // SAFETY: the IR dereferences nothing but its arguments and calls no extern.
        let jit = unsafe { jit::compile(&module, &options) }.unwrap();
        check(&jit);
    }
}

#[test]
fn a_u64_takes_the_bigints_of_its_upper_half() {
    each_tier(|jit| {
        let low = jit.function("low_half").unwrap();
        let high = jit.function("high_bit").unwrap();
        let maybe = jit.function("maybe").unwrap();
        // 2^63, 2^64 - 1 and 0xdead_beef_0000_1234 + 2^63: two words, the high one 0.
        for (value, low_half) in [
            (1u64 << 63, 0),
            (u64::MAX, 0xffff_ffff),
            (0xdead_beef_0000_1234, 0x1234),
        ] {
            let arg = int(&[value as i64, 0]);
            assert!(arg.view().type_index() == safecall_runtime::abi::type_index::BIG_INT);
            assert_eq!(
                low.call(&[arg.view()]).unwrap().cast::<i64>().unwrap(),
                low_half
            );
            assert!(high.call(&[arg.view()]).unwrap().cast::<bool>().unwrap());
            assert_eq!(
                maybe.call(&[arg.view()]).unwrap().cast::<i64>().unwrap(),
                (value >> 32) as i64
            );
        }
        // Ints and bools as before.
        assert_eq!(
            low.call(&[int(&[7]).view()])
                .unwrap()
                .cast::<i64>()
                .unwrap(),
            7
        );
        assert!(
            !high
                .call(&[int(&[i64::MAX]).view()])
                .unwrap()
                .cast::<bool>()
                .unwrap()
        );
        assert_eq!(
            maybe
                .call(&[Any::none().view()])
                .unwrap()
                .cast::<i64>()
                .unwrap(),
            -1
        );
    });
}

#[test]
fn bigints_beyond_a_parameters_range_are_value_errors_naming_it() {
    each_tier(|jit| {
        let refused = |name: &str, words: &[i64], message: &str| {
            let raised = raised(jit, name, &[int(words).view()]);
            assert_eq!(
                raised,
                ("ValueError".into(), message.into()),
                "{name} {words:?}"
            );
        };
        let u64_range = "low_half: argument 'x' (#0): the int is out of range for u64 [0, 18446744073709551615]";
        refused("low_half", &[0, 1], u64_range); // 2^64
        refused("low_half", &[i64::MAX, -1], u64_range); // -2^63 - 1
        refused("low_half", &[1, 2, 3], u64_range); // three words
        refused("maybe", &[0, 1], &u64_range.replace("low_half", "maybe"));
        refused(
            "signed",
            &[i64::MIN, 0],
            "signed: argument 'x' (#0): the int is out of range for i64 [-9223372036854775808, 9223372036854775807]",
        );
        refused(
            "byte",
            &[5, 7],
            "byte: argument 'x' (#0): the int is out of range for i8 [-128, 127]",
        );
        // A negative int is refused with its value, as before.
        refused(
            "low_half",
            &[-1],
            "low_half: argument 'x' (#0): -1 is out of range for u64 [0, 18446744073709551615]",
        );
        // A float parameter takes one as the nearest f64 (tests/big_int_floats.rs).
        let float = jit.function("float").unwrap();
        let two_to_64 = float.call(&[int(&[0, 1]).view()]).unwrap();
        assert_eq!(two_to_64.cast::<f64>().unwrap(), 18446744073709551616.0);
    });
}

/// The kind and the first message line of the error `name(args)` raises (a panic if it
/// returns).
fn raised(jit: &jit::JitModule, name: &str, args: &[AnyView<'_>]) -> (String, String) {
    let err = jit.function(name).unwrap().call(args).unwrap_err();
    (
        err.kind().to_string(),
        err.message().lines().next().unwrap().to_owned(),
    )
}

/// The words of a BigInt result (panics on anything else).
fn words_of(any: &Any) -> Vec<i64> {
    assert_eq!(
        any.as_raw().type_index,
        safecall_runtime::abi::type_index::BIG_INT
    );
    // SAFETY: `any` owns the BigInt the words are borrowed from.
    unsafe { big_int::words(any.as_raw()) }.to_vec()
}

#[test]
fn a_u64_of_the_upper_half_returns_and_converts_as_a_bigint() {
    each_tier(|jit| {
        let echo = jit.function("echo").unwrap();
        let back = jit.function("back").unwrap();
        for words in [[i64::MIN, 0], [-1, 0]] {
            // Returned as the BigInt it came as, and read back from an `any` by `cast<u64>`.
            let out = echo.call(&[int(&words).view()]).unwrap();
            assert_eq!(words_of(&out), words);
            assert_eq!(words_of(&back.call(&[out.view()]).unwrap()), words);
        }
        assert_eq!(
            back.call(&[int(&[5]).view()])
                .unwrap()
                .cast::<i64>()
                .unwrap(),
            5
        );
        let range = "is out of range for u64 [0, 18446744073709551615]";
        let refused = |words: &[i64], value: &str| {
            let line = format!("back: in `return cast<u64>(x);`: {value} {range}");
            assert_eq!(
                raised(jit, "back", &[int(words).view()]),
                ("ValueError".into(), line)
            );
        };
        refused(&[0, 1], "the int");
        refused(&[-1], "-1");
    });
}

#[test]
fn the_explain_function_passes_a_valid_bigint_and_names_the_bad_argument() {
    each_tier(|jit| {
        let two = jit.function("two").unwrap();
        assert_eq!(
            two.call(&[int(&[i64::MIN, 0]).view(), int(&[-7]).view()])
                .unwrap()
                .cast::<i64>()
                .unwrap(),
            -7
        );
        let message = |x: &[i64], y: i64| raised(jit, "two", &[int(x).view(), int(&[y]).view()]);
        assert_eq!(
            message(&[i64::MIN, 0], 300),
            (
                "ValueError".into(),
                "two: argument 'y' (#1): 300 is out of range for i8 [-128, 127]".into()
            )
        );
        assert_eq!(
            message(&[0, 1], 5),
            (
                "ValueError".into(),
                "two: argument 'x' (#0): the int is out of range for u64 [0, 18446744073709551615]"
                    .into()
            )
        );
    });
}

#[test]
fn a_u64_of_the_upper_half_is_refused_where_only_a_view_can_carry_it() {
    each_tier(|jit| {
        let callback: Any = Function::from_closure(|_| Ok(Any::none())).into();
        let arg = int(&[i64::MIN, 0]);
        let passed = "the u64 9223372036854775808 passed as argument 0 does not fit in a TVM-FFI int (int64)";
        assert_eq!(
            raised(jit, "pass", &[callback.view(), arg.view()]),
            (
                "ValueError".into(),
                format!("pass: in `call_packed f(x);`: {passed}")
            )
        );
        let (kind, line) = raised(jit, "pair", &[arg.view()]);
        assert_eq!(kind, "ValueError");
        assert!(line.ends_with(passed), "{line}");
        // Below 2^63 both work.
        jit.function("pass")
            .unwrap()
            .call(&[callback.view(), int(&[3]).view()])
            .unwrap();
    });
}
