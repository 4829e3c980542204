//! Running the shared cases against one delivery path, through safecall-runtime.

use safecall_runtime::Function;
use safecall_runtime::abi::TVMFFISafeCallType;
use serde_json::Value;

use super::args::{Args, TensorMode};
use super::cases::{Case, Expect, Suite};
use super::compare::{check_after, check_result};

/// What a run did.
#[derive(Debug, Default)]
pub struct Tally {
    /// Cases run.
    pub cases: usize,
    /// Calls made (a case with tensors runs once per tensor mode).
    pub calls: usize,
    /// Metadata cases checked.
    pub metadata: usize,
    /// Everything that went wrong.
    pub failures: Vec<String>,
}

impl Tally {
    /// Prints the counts and fails with every failure.
    pub fn finish(self, label: &str) {
        eprintln!(
            "check suite [{label}]: {} cases ({} calls), {} metadata cases, {} failures",
            self.cases,
            self.calls,
            self.metadata,
            self.failures.len()
        );
        assert!(self.cases > 0, "[{label}] ran no cases");
        assert!(
            self.failures.is_empty(),
            "[{label}] {} failures:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

fn has_top_level_tensor(args: &[Value]) -> bool {
    args.iter().any(|a| a.get("tensor").is_some())
}

/// A host function under test: as a Function, and its raw safe-call entry point.
pub struct Callee {
    /// The function, called through safecall-runtime.
    pub function: Function,
    /// The `__tvm_ffi_<name>` entry, called directly for the contract checks.
    pub entry: TVMFFISafeCallType,
}

/// Makes one call of a case (twice: once raw for the contract, once through
/// `Function::call`) and checks the outcome.
fn call_once(callee: &Callee, case: &Case, mode: TensorMode) -> Result<(), String> {
    let args = Args::build(&case.args, mode);
    let counts = args.strong_counts();
    install_allocator(case);
    let raw = super::contract::check_raw_call(callee.entry, &args)
        .map_err(|e| format!("safe-call contract: {e}"));
    let raw = raw.and_then(|()| allocations_freed(case));
    install_allocator(case);
    let outcome = callee.function.call(&args.views());
    let checked = check_outcome(case, &args, outcome);
    let checked = raw.and(checked).and_then(|()| allocations_freed(case));
    super::allocator::set(None);
    // The call (and its result, now dropped) took no reference it did not give back.
    let after = args.strong_counts();
    if after != counts {
        return Err(format!(
            "reference counts of the argument objects changed from {counts:?} to {after:?}"
        ));
    }
    checked
}

/// Installs the case's allocator on this thread (none when it has none).
fn install_allocator(case: &Case) {
    match &case.allocator {
        None => {
            super::allocator::set(None);
        }
        Some(Value::String(s)) if s == "cpu" => {
            super::allocator::install();
        }
        Some(other) => {
            let message = other["fails"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: unknown allocator {other}", case.name));
            super::allocator::install();
            super::allocator::fail_with(message);
        }
    }
}

/// With a recording allocator: every allocation of the call was freed exactly once.
fn allocations_freed(case: &Case) -> Result<(), String> {
    if case.allocator.is_none() {
        return Ok(());
    }
    let r = super::allocator::record();
    if r.live.is_empty() && r.bad_frees == 0 && r.frees == r.sizes.len() {
        Ok(())
    } else {
        Err(format!(
            "allocations not freed exactly once: {} allocated ({:?} bytes), {} freed, {} still live, {} double frees",
            r.sizes.len(),
            r.sizes,
            r.frees,
            r.live.len(),
            r.bad_frees
        ))
    }
}

fn check_outcome(
    case: &Case,
    args: &Args,
    outcome: Result<safecall_runtime::Any, safecall_runtime::Error>,
) -> Result<(), String> {
    match (&case.expect, outcome) {
        (Expect::Returns(want), Ok(got)) => {
            check_result(want, &got, args)?;
            drop(got);
            check_after(&case.after, args)
        }
        (Expect::Returns(want), Err(e)) => Err(format!("expected {want}, raised {e}")),
        (Expect::Raises { kind, message }, Ok(got)) => Err(format!(
            "expected {kind}: {message}\n    returned {}",
            super::compare::show(got.as_raw())
        )),
        (Expect::Raises { kind, message }, Err(e)) => {
            let message = args.expand(message);
            if e.kind() == kind.as_str() && e.message() == message.as_str() {
                Ok(())
            } else {
                Err(format!(
                    "expected {kind}: {message}\n      raised {}: {}",
                    e.kind(),
                    e.message()
                ))
            }
        }
    }
}

/// Runs every Rust case of `suites`; `lookup` gives the function `name` of a suite's module.
pub fn run_cases(
    label: &str,
    suites: &[Suite],
    lookup: &dyn Fn(&Suite, &str) -> Option<Callee>,
    tally: &mut Tally,
) {
    for suite in suites {
        for (name, callback) in &suite.globals {
            super::args::callback(callback)
                .set_global(name, true)
                .unwrap_or_else(|e| panic!("registering {name}: {e}"));
        }
        for case in suite.cases.iter().filter(|c| c.runs_on("rust")) {
            tally.cases += 1;
            let Some(callee) = lookup(suite, &case.func) else {
                tally.failures.push(format!(
                    "[{label}] {}: {}: no function `{}`",
                    suite.module, case.name, case.func
                ));
                continue;
            };
            let modes: Vec<TensorMode> = if has_top_level_tensor(&case.args) {
                case.tensor_modes
                    .iter()
                    .map(|m| TensorMode::parse(m))
                    .collect()
            } else {
                vec![TensorMode::Object]
            };
            for mode in modes {
                tally.calls += 1;
                if let Err(e) = call_once(&callee, case, mode) {
                    tally.failures.push(format!(
                        "[{label}] {}: {} ({mode:?}):\n    {e}",
                        suite.module, case.name
                    ));
                }
            }
        }
    }
}
