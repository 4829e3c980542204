//! Lowering: verified host IR to the [lowered form](crate::lir). All ABI knowledge lives here.
//!
//! For each host function `f` the lowering emits `__tvm_ffi_f` following the contract of
//! docs/abi.md: the argument-count check, per-parameter type-index checks and decoding
//! (`params`), per-tensor checks, constraints, then the body (`body`), with every error
//! path raising through one cold, shared helper ([`raise`]) and releasing owned references.
//! It also emits `__tvm_ffi__metadata_f` and `__tvm_ffi__doc_f` (`exports`).

mod body;
mod calls;
pub mod capi;
mod exports;
mod function;
mod gpu;
pub(crate) use gpu::libc_symbol;
mod params;
pub mod raise;
mod schema;

pub use schema::{metadata_json, signature_text};

use std::collections::HashMap;

use crate::ir;
use crate::lir::{self, Data, DataId, FuncId, Import, ImportId, Linkage, Signature};
use capi::CApi;

/// Options of the lowering.
#[derive(Clone, Debug, Default)]
pub struct LowerOptions {
    /// Overrides [`ir::Module::system_lib_prefix`]: register functions at load time as
    /// `__tvm_ffi_<prefix><name>` instead of exporting them.
    pub system_lib_prefix: Option<String>,
    /// Also export this host function as `__tvm_ffi_main`.
    pub main_alias: Option<String>,
    /// How generated code reaches the error-raising helper.
    pub raise_helper: RaiseHelper,
    /// How a rejected call is explained.
    pub explain: ExplainStrategy,
    /// Leave out the source annotations of dumps (faster; the JIT sets it).
    pub skip_annotations: bool,
    /// Leave out the `__tvm_ffi__metadata_<name>` / `__tvm_ffi__doc_<name>` getters (the JIT
    /// serves metadata from Rust instead).
    pub skip_metadata_getters: bool,
}

/// Where the explanation of a rejected call comes from.
///
/// Host functions check their arguments on a fast path that carries no message code: any
/// failed check calls an *explain function*, which runs the same checks again, each with its
/// precise message, and raises the first that fails.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ExplainStrategy {
    /// One explain function per host function, compiled with the module (AOT).
    #[default]
    Embedded,
    /// Call the import `dispatcher(ctx, handle, args, num_args, result) -> int`, where `ctx` is
    /// the address the caller gives for the host function (the JIT compiles the explain
    /// function, from [`lower_explain`], on the first failure).
    Lazy {
        /// Symbol of the dispatcher.
        dispatcher: String,
        /// `ctx` of each host function, by name (embedded as a constant: JIT code only).
        contexts: HashMap<String, u64>,
    },
}

/// Symbol of the explain function in a module made by [`lower_explain`].
pub const EXPLAIN_SYMBOL: &str = "__safecall_explain";

/// Lowers only the explain function of host function `name` of a verified module, exported as
/// [`EXPLAIN_SYMBOL`].
pub fn lower_explain(
    module: &ir::Module,
    name: &str,
    options: &LowerOptions,
) -> Result<lir::Module, LowerError> {
    let func = module
        .functions
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| LowerError {
            function: None,
            message: format!("no function `{name}` to explain"),
        })?;
    let mut ctx = ModuleCtx::new(module, options);
    let explain = function::lower_explain_function(
        &mut ctx,
        func,
        EXPLAIN_SYMBOL.to_owned(),
        Linkage::Export,
    )
    .map_err(|message| LowerError {
        function: Some(name.to_owned()),
        message,
    })?;
    ctx.add_function(explain);
    Ok(ctx.finish())
}

/// Where the cold error-raising helper lives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RaiseHelper {
    /// Emitted once into each module (AOT objects and libraries).
    #[default]
    Embedded,
    /// An external function with this symbol name and the helper's signature, compiled once
    /// (see [`raise::helper_module`]); the JIT shares one helper between all modules.
    External(String),
}

/// A lowering failure: verified IR that the lowering cannot express (a limit was exceeded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError {
    /// Function the problem is in, if any.
    pub function: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for LowerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.function {
            Some(func) => write!(f, "in function `{func}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for LowerError {}

/// Prefix of exported safe-call symbols.
pub const EXPORT_PREFIX: &str = "__tvm_ffi_";
/// Symbol of the module handle slot written by loaders.
pub const LIBRARY_CTX_SYMBOL: &str = "__tvm_ffi__library_ctx";
/// Symbol of the embedded import tree.
pub const LIBRARY_BIN_SYMBOL: &str = "__tvm_ffi__library_bin";

/// Lowers a module. The module must have passed the verifier.
pub fn lower(module: &ir::Module, options: &LowerOptions) -> Result<lir::Module, LowerError> {
    let mut ctx = ModuleCtx::new(module, options);
    let prefix = options
        .system_lib_prefix
        .clone()
        .or_else(|| module.system_lib_prefix.clone());
    let host_ids: Vec<FuncId> = module
        .functions
        .iter()
        .map(|_| ctx.reserve_function())
        .collect();
    ctx.host_functions = module
        .functions
        .iter()
        .map(|f| f.name.clone())
        .zip(host_ids.iter().copied())
        .collect();
    for (func, &id) in module.functions.iter().zip(&host_ids) {
        let linkage = if prefix.is_some() {
            Linkage::Local
        } else {
            Linkage::Export
        };
        let error = |message| LowerError {
            function: Some(func.name.clone()),
            message,
        };
        let explain = match &options.explain {
            ExplainStrategy::Embedded => {
                let name = ctx.local_name(&format!("explain_{}", func.name));
                let f = function::lower_explain_function(&mut ctx, func, name, Linkage::Local)
                    .map_err(error)?;
                function::ExplainTarget::Function(ctx.add_function(f))
            }
            ExplainStrategy::Lazy {
                dispatcher,
                contexts,
            } => {
                let ptr = lir::Ty::Ptr;
                let sig =
                    Signature::new(vec![ptr, ptr, ptr, lir::Ty::I32, ptr], Some(lir::Ty::I32));
                let dispatcher = ctx.import(dispatcher, sig);
                let context = *contexts
                    .get(&func.name)
                    .ok_or_else(|| error(format!("no explain context for `{}`", func.name)))?;
                function::ExplainTarget::Lazy {
                    dispatcher,
                    context,
                }
            }
        };
        let lowered = function::lower_function(&mut ctx, func, linkage, explain).map_err(error)?;
        ctx.define_function(id, lowered);
    }
    exports::emit_exports(&mut ctx, &host_ids, prefix.as_deref())?;
    if let Some(main) = &options.main_alias {
        let index = module.functions.iter().position(|f| &f.name == main).ok_or_else(|| LowerError {
            function: None,
            message: format!("`{main}` is not a function of this module and cannot be exported as `__tvm_ffi_main`"),
        })?;
        if prefix.is_none() {
            ctx.out
                .aliases
                .push((format!("{EXPORT_PREFIX}main"), host_ids[index]));
        }
    }
    Ok(ctx.finish())
}

/// State shared by the lowering of all functions of a module.
pub(crate) struct ModuleCtx<'m> {
    pub ir: &'m ir::Module,
    pub options: &'m LowerOptions,
    pub out: lir::Module,
    functions: Vec<Option<lir::Function>>,
    imports: HashMap<String, ImportId>,
    cstrings: HashMap<Vec<u8>, DataId>,
    raise: Option<raise::RaiseTarget>,
    library_ctx: Option<DataId>,
    unique: u32,
    /// Host functions by IR name (for direct calls within the module).
    pub host_functions: HashMap<String, FuncId>,
    /// Driver and device-binary state of GPU launches.
    gpu: gpu::GpuState,
}

impl<'m> ModuleCtx<'m> {
    fn new(ir: &'m ir::Module, options: &'m LowerOptions) -> Self {
        ModuleCtx {
            ir,
            options,
            out: lir::Module {
                name: ir.name.clone(),
                ..Default::default()
            },
            functions: Vec::new(),
            imports: HashMap::new(),
            cstrings: HashMap::new(),
            raise: None,
            library_ctx: None,
            unique: 0,
            host_functions: HashMap::new(),
            gpu: gpu::GpuState::default(),
        }
    }

    /// A fresh local symbol name.
    pub fn local_name(&mut self, what: &str) -> String {
        self.unique += 1;
        format!("__safecall_{what}_{}", self.unique)
    }

    /// Reserves a function id, defined later with [`ModuleCtx::define_function`].
    pub fn reserve_function(&mut self) -> FuncId {
        self.functions.push(None);
        FuncId(self.functions.len() as u32 - 1)
    }

    /// Defines a reserved function.
    pub fn define_function(&mut self, id: FuncId, func: lir::Function) {
        self.functions[id.0 as usize] = Some(func);
    }

    /// Adds a function.
    pub fn add_function(&mut self, func: lir::Function) -> FuncId {
        let id = self.reserve_function();
        self.define_function(id, func);
        id
    }

    /// Adds a data object.
    pub fn add_data(&mut self, data: Data) -> DataId {
        self.out.data.push(data);
        DataId(self.out.data.len() as u32 - 1)
    }

    /// Declares (once) an external function.
    pub fn import(&mut self, name: &str, sig: Signature) -> ImportId {
        if let Some(id) = self.imports.get(name) {
            return *id;
        }
        self.out.imports.push(Import {
            name: name.to_owned(),
            sig,
        });
        let id = ImportId(self.out.imports.len() as u32 - 1);
        self.imports.insert(name.to_owned(), id);
        id
    }

    /// Declares (once) a C API function.
    pub fn capi(&mut self, f: CApi) -> ImportId {
        self.import(f.name(), f.signature())
    }

    /// A read-only NUL-terminated copy of `text`, shared by all uses.
    pub fn cstring(&mut self, text: &[u8]) -> DataId {
        if let Some(id) = self.cstrings.get(text) {
            return *id;
        }
        let mut contents = text.to_vec();
        contents.push(0);
        let name = self.local_name("str");
        let id = self.add_data(Data {
            name,
            linkage: Linkage::Local,
            writable: false,
            align: 1,
            contents,
            relocs: Vec::new(),
            section: None,
        });
        self.cstrings.insert(text.to_vec(), id);
        id
    }

    /// A writable, 8-byte aligned, zero-initialized pointer-sized cell (handle caches).
    pub fn handle_cell(&mut self, what: &str) -> DataId {
        let name = self.local_name(what);
        self.add_data(Data {
            name,
            linkage: Linkage::Local,
            writable: true,
            align: 8,
            contents: vec![0; 8],
            relocs: Vec::new(),
            section: None,
        })
    }

    /// `__tvm_ffi__library_ctx`, emitted on first use.
    pub fn library_ctx(&mut self) -> DataId {
        if let Some(id) = self.library_ctx {
            return id;
        }
        let id = self.add_data(Data {
            name: LIBRARY_CTX_SYMBOL.to_owned(),
            linkage: Linkage::Export,
            writable: true,
            align: 8,
            contents: vec![0; 8],
            relocs: Vec::new(),
            section: None,
        });
        self.library_ctx = Some(id);
        id
    }

    fn finish(mut self) -> lir::Module {
        self.out.functions = self
            .functions
            .into_iter()
            .enumerate()
            .map(|(i, f)| f.unwrap_or_else(|| panic!("function {i} reserved but never defined")))
            .collect();
        lir::verify::debug_check(&self.out);
        self.out
    }
}
