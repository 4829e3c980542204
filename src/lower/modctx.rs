//! State shared by the lowering of all functions of a module: the output module, imports,
//! shared strings and cells, and the caches of the raise helper and of GPU launches.

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

use crate::ir::{self, typing::ExprTypes};
use crate::lir::{self, Data, DataId, FuncId, Import, ImportId, Linkage, Signature};

use super::capi::CApi;
use super::options::LowerSettings;
use safecall_runtime::abi::symbols::LIBRARY_CTX_SYMBOL;

/// Each message text's offset in the module's object of message texts.
type TextOffsets = HashMap<Vec<u8>, u32, FxBuildHasher>;

/// State shared by the lowering of all functions of a module.
pub(crate) struct ModuleCtx<'m> {
    pub ir: &'m ir::Module,
    /// The type of every expression of `ir`, recorded by the verifier.
    pub types: &'m ExprTypes,
    pub options: &'m LowerSettings,
    pub out: lir::Module,
    functions: Vec<Option<lir::Function>>,
    imports: HashMap<String, ImportId, FxBuildHasher>,
    cstrings: HashMap<Vec<u8>, DataId, FxBuildHasher>,
    /// The texts of raised messages, NUL-terminated one after the other in one read-only
    /// object (made on first use), and each text's offset there.
    message_texts: Option<(DataId, TextOffsets)>,
    /// The message templates (see `raise`), by contents.
    message_templates: HashMap<Vec<u8>, DataId, FxBuildHasher>,
    /// The raise helper, once emitted or declared (see `raise`).
    pub(super) raise: Option<RaiseTarget>,
    pub(super) library_ctx: Option<DataId>,
    /// The BigInt-to-f64 conversion, once emitted (see `big_int::read_f64`).
    pub(super) big_int_f64: Option<FuncId>,
    unique: u32,
    /// Host functions by IR name (for direct calls within the module).
    pub host_functions: HashMap<String, FuncId>,
    /// Driver and device-binary state of GPU launches.
    pub(super) gpu: GpuState,
}

impl<'m> ModuleCtx<'m> {
    /// The state for lowering `ir`, whose expressions have the types `types`.
    pub(crate) fn new(
        ir: &'m ir::Module,
        types: &'m ExprTypes,
        options: &'m LowerSettings,
    ) -> Self {
        ModuleCtx {
            ir,
            types,
            options,
            out: lir::Module {
                name: ir.name.clone(),
                ..Default::default()
            },
            functions: Vec::new(),
            imports: HashMap::default(),
            cstrings: HashMap::default(),
            message_texts: None,
            message_templates: HashMap::default(),
            raise: None,
            library_ctx: None,
            big_int_f64: None,
            unique: 0,
            host_functions: HashMap::new(),
            gpu: GpuState::default(),
        }
    }

    /// A fresh local symbol name.
    pub fn local_name(&mut self, what: &str) -> String {
        self.unique += 1;
        format!("{}{what}_{}", super::INTERNAL_PREFIX, self.unique)
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

    /// A new local read-only data object named after `what`.
    fn read_only(&mut self, what: &str, align: u32, contents: Vec<u8>) -> DataId {
        let name = self.local_name(what);
        self.read_only_named(name, align, contents)
    }

    /// A new local read-only data object named `name`.
    pub(super) fn read_only_named(
        &mut self,
        name: String,
        align: u32,
        contents: Vec<u8>,
    ) -> DataId {
        self.add_data(Data {
            name,
            linkage: Linkage::Local,
            writable: false,
            align,
            contents,
            relocs: Vec::new(),
            section: None,
        })
    }

    /// A read-only NUL-terminated copy of `text`, shared by all uses.
    pub fn cstring(&mut self, text: &[u8]) -> DataId {
        if let Some(id) = self.cstrings.get(text) {
            return *id;
        }
        let mut contents = Vec::with_capacity(text.len() + 1);
        contents.extend_from_slice(text);
        contents.push(0);
        let id = self.read_only("str", 1, contents);
        self.cstrings.insert(text.to_vec(), id);
        id
    }

    /// The read-only object holding the texts of raised messages (made on first use, with an
    /// empty text at offset 0).
    pub fn message_texts(&mut self) -> DataId {
        if let Some((id, _)) = &self.message_texts {
            return *id;
        }
        let id = self.read_only("message_texts", 1, vec![0]);
        self.message_texts = Some((id, HashMap::default()));
        id
    }

    /// The offset of `text` (NUL-terminated) in [`ModuleCtx::message_texts`], appended once.
    pub fn message_text(&mut self, text: &[u8]) -> u32 {
        let id = self.message_texts();
        let Some((_, offsets)) = &mut self.message_texts else {
            unreachable!("made just above")
        };
        if let Some(&at) = offsets.get(text) {
            return at;
        }
        let contents = &mut self.out.data[id.0 as usize].contents;
        let at = u32::try_from(contents.len()).expect("message texts fit in 4 GiB");
        contents.extend_from_slice(text);
        contents.push(0);
        offsets.insert(text.to_vec(), at);
        at
    }

    /// A read-only, 8-byte aligned message template with these contents (one per distinct
    /// template).
    pub fn message_template(&mut self, contents: Vec<u8>) -> DataId {
        if let Some(&id) = self.message_templates.get(&contents) {
            return id;
        }
        let id = self.read_only("message", 8, contents.clone());
        self.message_templates.insert(contents, id);
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

    pub(crate) fn finish(mut self) -> lir::Module {
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

/// How a module reaches the helper.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RaiseTarget {
    Local(FuncId),
    External(ImportId),
}

/// How a module fills a GPU runtime's table cell (`gpu::shared`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum TableSource {
    /// Its own init function, run once under `TVMFFIHandleInitOnce`.
    Own(FuncId),
    /// The shared helper `int f(void** cell)` (an import), which stores the process's table
    /// in the cell (or raises and returns nonzero).
    Shared(ImportId),
}

/// The GPU state of a module being lowered (emitted on first use).
#[derive(Default)]
pub(crate) struct GpuState {
    /// The driver table's cell (null until initialized, then the table's address) and init.
    pub(super) driver: Option<(DataId, TableSource)>,
    /// Per device binary: its cell (the kernel table's address once loaded) and init.
    pub(super) binaries: HashMap<String, (DataId, FuncId)>,
    /// Primary contexts retained, by device ordinal (below
    /// `gpu::cuda::CACHED_DEVICES`).
    pub(super) primary_contexts: Option<DataId>,
    /// `CUdevice` handles, by device ordinal (below `gpu::cuda::CACHED_DEVICES`): the handle
    /// with bit 32 set once known, 0 before.
    pub(super) devices: Option<DataId>,
    /// Per kernel (binary, kernel) and kind of cache (`gpu::opt_in`): one 8-byte entry per
    /// device ordinal.
    pub(super) kernel_caches: HashMap<(String, String, &'static str), DataId>,
    /// The driver's version (`cuDriverGetVersion`), 0 until asked.
    pub(super) driver_version: Option<DataId>,
    /// The cold function that asks the driver for an error's name and text (`gpu::support`),
    /// once emitted.
    pub(super) describe_error: Option<FuncId>,
    /// The miss functions of `tensormap(..)` descriptors, by kind (`gpu::tensormap::miss`).
    pub(super) tensormap_misses: HashMap<String, FuncId>,
    /// The HIP runtime table's cell and init (`gpu::hip`).
    pub(super) hip_runtime: Option<(DataId, TableSource)>,
    /// Per HIP device binary: its function cache (a row of kernels per device ordinal) and
    /// the function that loads it on one device.
    pub(super) hip_binaries: HashMap<String, (DataId, FuncId)>,
}
