//! Finding the HIP runtime once per process: the library (`$SAFECALL_LIBAMDHIP64_PATH`, else
//! `libamdhip64.so` and its sonames), every entry point with `dlsym`, then `hipInit(0)`; and
//! calls through the table with their error descriptions.

use crate::lir::{Callee, DataId, FuncId, IntCC, Symbol, Ty, Var, builder::FuncBuilder};

use super::super::super::context::FnCtx;
use super::super::super::modctx::ModuleCtx;
use super::super::super::modctx::TableSource;
use super::super::super::raise::{MsgPart, Tag};
use super::super::cuda::{self, Libc};
use super::super::driver::{dl_error, libc_call, static_str};
use super::super::shared::Runtime;
use super::super::support::{InitFn, cstr_or, error_parts};
use super::api::{self, Entry};
use safecall_runtime::abi::symbols::error_kind::RUNTIME_ERROR;

/// Start of every message about finding or starting the runtime.
const NO_LAUNCH: &str = "cannot launch HIP kernels: ";

impl ModuleCtx<'_> {
    /// The runtime table's cell and how it is filled (an init function emitted on first use,
    /// or the shared helper the settings name).
    pub(crate) fn hip_runtime(&mut self) -> (DataId, TableSource) {
        if let Some(r) = self.gpu.hip_runtime {
            return r;
        }
        let r = self.runtime_table(Runtime::Hip, Entry::ALL.len(), emit_runtime_init);
        self.gpu.hip_runtime = Some(r);
        r
    }
}

/// Calls runtime entry `entry` through the table at `table`.
pub(super) fn call(b: &mut FuncBuilder, table: Var, entry: Entry, args: Vec<Var>) -> Var {
    let f = b.load(Ty::Ptr, table, entry.offset());
    let ret = entry.signature().ret.expect("entries return a value");
    b.call(Callee::Indirect(f, entry.signature()), Some(ret), args)
        .expect("returns")
}

/// Message parts describing the HIP error `rc` (an `I32`):
/// `hipErrorName (error N: description)`, asking the runtime for the name and text.
pub(super) fn describe_error(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    table: Var,
    rc: Var,
) -> Vec<MsgPart> {
    let name = call(b, table, Entry::GetErrorName, vec![rc]);
    let name = cstr_or(m, b, name, "hipErrorUnknown");
    let text = call(b, table, Entry::GetErrorString, vec![rc]);
    let text = cstr_or(m, b, text, "no description");
    error_parts(name, rc, text)
}

/// Raises a RuntimeError (the text of `parts`, then the runtime's description of `rc`)
/// unless `rc` is `hipSuccess`; `parts` runs on the failure path.
pub(super) fn check(
    fx: &mut FnCtx<'_, '_>,
    table: Var,
    rc: Var,
    parts: impl FnOnce(&mut FnCtx<'_, '_>) -> Vec<MsgPart>,
) {
    let ok = fx.b.icmp_imm(IntCC::Eq, rc, api::SUCCESS);
    fx.check(ok, RUNTIME_ERROR, |fx| {
        let mut all = parts(fx);
        all.extend(describe_error(fx.m, &mut fx.b, table, rc));
        all
    });
}

/// `int init(void** out)`: finds the runtime, fills `table`, runs `hipInit(0)`; `*out` =
/// table.
fn emit_runtime_init(m: &mut ModuleCtx<'_>, table: DataId) -> FuncId {
    let mut f = InitFn::new(m, "hip_runtime_init");
    let handle = f.b.mutable_var(Ty::Ptr);
    let null = f.b.iconst(Ty::Ptr, 0);
    let flags = f.b.iconst(Ty::I32, cuda::RTLD_NOW_LOCAL);
    let found = f.b.new_block();

    // 1. $SAFECALL_LIBAMDHIP64_PATH, when set.
    let env_name = static_str(&mut f, api::LIBAMDHIP64_PATH_ENV);
    let path = libc_call(&mut f, Libc::Getenv, vec![env_name]);
    let from_env = f.b.new_block();
    let mut search = f.b.new_block();
    let is_set = f.b.icmp(IntCC::Ne, path, null);
    f.b.branch(is_set, from_env, search);
    f.b.switch_to(from_env);
    let h = libc_call(&mut f, Libc::Dlopen, vec![path, flags]);
    let loaded = f.b.icmp(IntCC::Ne, h, null);
    f.check(loaded, |f| {
        let e = dl_error(f);
        vec![
            MsgPart::text(format!("{NO_LAUNCH}{} is `", api::LIBAMDHIP64_PATH_ENV)),
            MsgPart::Value(Tag::CStr, path),
            MsgPart::text("`, which could not be loaded: "),
            MsgPart::Value(Tag::CStr, e),
        ]
    });
    f.b.assign(handle, h);
    f.b.jump(found);

    // 2. Each name in turn; the last failure is reported.
    for (i, name) in api::LIBAMDHIP64.iter().enumerate() {
        f.b.switch_to(search);
        let lib = static_str(&mut f, name);
        let h = libc_call(&mut f, Libc::Dlopen, vec![lib, flags]);
        f.b.assign(handle, h);
        let loaded = f.b.icmp(IntCC::Ne, h, null);
        if i + 1 < api::LIBAMDHIP64.len() {
            search = f.b.new_block();
            f.b.branch(loaded, found, search);
        } else {
            f.check(loaded, |f| {
                let e = dl_error(f);
                vec![
                    MsgPart::text(format!(
                        "{NO_LAUNCH}no HIP runtime found: {} is not set, and dlopen failed for \
                         {} (the last: ",
                        api::LIBAMDHIP64_PATH_ENV,
                        api::LIBAMDHIP64.join(", ")
                    )),
                    MsgPart::Value(Tag::CStr, e),
                    MsgPart::text(")"),
                ]
            });
            f.b.jump(found);
        }
    }

    // Every entry point.
    f.b.switch_to(found);
    let table = f.b.symbol_addr(Symbol::Data(table));
    for entry in Entry::ALL {
        let name = static_str(&mut f, entry.name());
        let p = libc_call(&mut f, Libc::Dlsym, vec![handle, name]);
        // An optional entry stays null; the launch that calls it checks.
        if !entry.optional() {
            let present = f.b.icmp(IntCC::Ne, p, null);
            f.check(present, |_| {
                vec![MsgPart::text(format!(
                    "{NO_LAUNCH}the HIP runtime has no `{}`",
                    entry.name()
                ))]
            });
        }
        f.b.store(table, entry.offset(), p);
    }
    let zero = f.b.iconst(Ty::I32, 0);
    let rc = call(&mut f.b, table, Entry::Init, vec![zero]);
    let ok = f.b.icmp_imm(IntCC::Eq, rc, api::SUCCESS);
    f.check(ok, |f| {
        let mut parts = vec![MsgPart::text(format!("{NO_LAUNCH}hipInit failed: "))];
        parts.extend(describe_error(f.m, &mut f.b, table, rc));
        parts
    });
    f.finish(table)
}
