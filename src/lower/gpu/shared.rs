//! Runtime tables shared between modules (the JIT's): a module's launches take the CUDA
//! driver's or the HIP runtime's table of entry points from an external function compiled once
//! per process ([`helper_module`]) instead of finding the runtime with an init function of
//! their own. The runtime is then searched for, and its entry points resolved, once per
//! process rather than once per module, and each module lowers and compiles a call instead of
//! the search (its messages included).

use crate::ir;
use crate::lir::{self, Callee, DataId, FuncId, IntCC, Linkage, Signature, Symbol, Ty};
use crate::lir::{Var, builder::FuncBuilder};

use super::super::calls::{load_cell, load_once};
use super::super::capi::CApi;
use super::super::modctx::{ModuleCtx, TableSource};
use super::super::options::{GpuRuntimes, LowerSettings, RaiseHelper};
use super::support::zeroed;

/// A GPU runtime whose table modules may share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Runtime {
    /// The CUDA driver.
    Cuda,
    /// The HIP runtime.
    Hip,
}

/// The signature of an init function and of a shared helper: `int f(void** out)`.
pub(super) fn init_signature() -> Signature {
    Signature::new(vec![Ty::Ptr], Some(Ty::I32))
}

impl<'m> ModuleCtx<'m> {
    /// The cell of `runtime`'s table of `entries` pointers and how it is filled: the shared
    /// helper the settings name, else `init` emitted over a table of the module's own.
    pub(super) fn runtime_table(
        &mut self,
        runtime: Runtime,
        entries: usize,
        init: fn(&mut ModuleCtx<'m>, DataId) -> FuncId,
    ) -> (DataId, TableSource) {
        let (name, table_name) = match runtime {
            Runtime::Cuda => ("cuda_driver", "cuda_driver_table"),
            Runtime::Hip => ("hip_runtime", "hip_runtime_table"),
        };
        let helper = match (&self.options.gpu_runtimes, runtime) {
            (GpuRuntimes::Embedded, _) => None,
            (GpuRuntimes::Shared { cuda, .. }, Runtime::Cuda) => Some(cuda.clone()),
            (GpuRuntimes::Shared { hip, .. }, Runtime::Hip) => Some(hip.clone()),
        };
        match helper {
            Some(symbol) => {
                let helper = self.import(&symbol, init_signature());
                (self.handle_cell(name), TableSource::Shared(helper))
            }
            None => {
                // The table before the cell: the data objects' order in the dumps.
                let table = zeroed(self, table_name, entries * 8);
                let cell = self.handle_cell(name);
                (cell, TableSource::Own(init(self, table)))
            }
        }
    }
}

/// The table in `cell`, filled from `source` on first use (a nonzero result branches to
/// `error`, the error raised).
pub(crate) fn load_table(
    m: &mut ModuleCtx<'_>,
    b: &mut FuncBuilder,
    cell: DataId,
    source: TableSource,
    error: lir::BlockId,
) -> Var {
    let helper = match source {
        TableSource::Own(init) => return load_once(m, b, cell, init, error),
        TableSource::Shared(helper) => helper,
    };
    // Not under `TVMFFIHandleInitOnce`: the helper takes it for the process's table, and its
    // lock is not reentrant. Threads racing here store the same pointer.
    load_cell(m, b, cell, error, |_, b, cell_addr| {
        b.call(Callee::Import(helper), Some(Ty::I32), vec![cell_addr])
            .expect("returns")
    })
}

/// A module exporting `cuda` and `hip`, each `int f(void** cell)`: fills the process's table
/// of that runtime once (the init function a module embeds otherwise, under
/// `TVMFFIHandleInitOnce`), then stores its address in `*cell`; on failure the init's error is
/// raised and the result is nonzero. Errors go through `raise` (the JIT's shared helper).
pub(crate) fn helper_module(cuda: &str, hip: &str, raise: RaiseHelper) -> lir::Module {
    let ir = ir::Module::new("safecall_gpu_runtimes");
    let settings = LowerSettings {
        raise_helper: raise,
        ..LowerSettings::default()
    };
    let no_expressions = crate::ir::typing::ExprTypes::default();
    let mut m = ModuleCtx::new(&ir, &no_expressions, &settings);
    let (cell, TableSource::Own(init)) = m.cuda_driver() else {
        unreachable!("a helper module embeds its init functions");
    };
    export_table(&mut m, cuda, cell, init);
    let (cell, TableSource::Own(init)) = m.hip_runtime() else {
        unreachable!("a helper module embeds its init functions");
    };
    export_table(&mut m, hip, cell, init);
    m.finish()
}

/// `int name(void** out)`: `TVMFFIHandleInitOnce(&cell, init)`, then `*out = cell`.
fn export_table(m: &mut ModuleCtx<'_>, name: &str, cell: DataId, init: FuncId) {
    let mut b = FuncBuilder::new(name, Linkage::Export, init_signature());
    let out = b.param(0);
    let cell_addr = b.symbol_addr(Symbol::Data(cell));
    let init_addr = b.symbol_addr(Symbol::Func(init));
    let init_once = m.capi(CApi::HandleInitOnce);
    let rc = b
        .call(
            Callee::Import(init_once),
            Some(Ty::I32),
            vec![cell_addr, init_addr],
        )
        .expect("returns");
    let failed = b.icmp_imm(IntCC::Ne, rc, 0);
    let fail = b.new_cold_block();
    let ok = b.new_block();
    b.branch(failed, fail, ok);
    b.switch_to(fail);
    b.ret(Some(rc));
    b.switch_to(ok);
    let table = b.load(Ty::Ptr, cell_addr, 0);
    b.store(out, 0, table);
    let zero = b.iconst(Ty::I32, 0);
    b.ret(Some(zero));
    m.add_function(b.finish());
}
