//! Library modules: a shared library loaded from a path, or the system library of a prefix.
//!
//! Both are a [`SymbolSource`] (where `__tvm_ffi_<name>` and the special symbols are found)
//! wrapped in a [`LibraryModule`] (kind `library`, as in the real runtime). Creating one
//! ([`create_library_module`]) writes the registered context symbols into the library, rebuilds
//! the import tree of `__tvm_ffi__library_bin` and stores the library module's handle in
//! `__tvm_ffi__library_ctx`, in the real runtime's order.

use core::ffi::{c_int, c_void};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::ThreadId;

use crate::abi::{TVMFFIAny, TVMFFIFunctionCell, TVMFFIObject, TVMFFISafeCallType, type_index};
use crate::library_bin::{self, BinModule};
use crate::object::{self, ObjectLayout};
use crate::rust_api::{
    Any, AnyView, Bytes, Error, Function, Module, ObjectRef, String as FfiString, WeakObjectRef,
};

use super::{ModuleImpl, property_mask};

use crate::abi::symbols::error_kind::{RUNTIME_ERROR, TYPE_ERROR, VALUE_ERROR};
use crate::abi::symbols::{
    DOC_PREFIX, EXPORT_PREFIX as SYMBOL_PREFIX, LIBRARY_BIN_SYMBOL, LIBRARY_CTX_SYMBOL,
    METADATA_PREFIX,
};

/// The global function that rebuilds a module of `kind` from bytes.
pub fn loader_name(kind: &str) -> String {
    format!("ffi.Module.load_from_bytes.{kind}")
}

/// Where a library module finds its symbols.
pub trait SymbolSource: Send + Sync + 'static {
    /// The address of the symbol `name`, or NULL.
    fn symbol(&self, name: &str) -> *mut c_void;

    /// The address of the safe-call function `name` (`__tvm_ffi_<name>`), or NULL.
    fn function_symbol(&self, name: &str) -> *mut c_void {
        self.symbol(&format!("{SYMBOL_PREFIX}{name}"))
    }

    /// A description for messages (a path, a prefix).
    fn describe(&self) -> String;
}

/// A shared library opened with `dlopen`; closed when dropped.
pub struct DsoLibrary {
    library: libloading::os::unix::Library,
    /// The `dlopen` handle (equal for every open of the same loaded image).
    handle: usize,
    path: PathBuf,
}

impl DsoLibrary {
    /// Opens `path` (`RTLD_NOW | RTLD_LOCAL`: missing symbols fail here, not at a call).
    pub fn open(path: &Path) -> Result<DsoLibrary, Error> {
        // A bare file name would make dlopen search the library path instead of the file.
        let path = if path.components().count() == 1 && path.is_relative() {
            Path::new(".").join(path)
        } else {
            path.to_path_buf()
        };
        // SAFETY: loading a library runs its initializers; loading a library is what the
        // caller asked for.
        let library = unsafe {
            libloading::os::unix::Library::open(
                Some(&path),
                libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
            )
        }
        .map_err(|e| {
            Error::new(
                RUNTIME_ERROR,
                &format!(
                    "Failed to load dynamic shared library {}: {e}",
                    path.display()
                ),
            )
        })?;
        let raw = library.into_raw();
        // SAFETY: `raw` was just taken out of a library that is now given back its handle.
        let library = unsafe { libloading::os::unix::Library::from_raw(raw) };
        Ok(DsoLibrary {
            library,
            handle: raw as usize,
            path,
        })
    }
}

impl SymbolSource for DsoLibrary {
    fn symbol(&self, name: &str) -> *mut c_void {
        // SAFETY: the symbol is only used as an address here.
        match unsafe { self.library.get::<*mut c_void>(name.as_bytes()) } {
            Ok(sym) => sym.into_raw(),
            Err(_) => core::ptr::null_mut(),
        }
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

/// The system library of a prefix: symbols registered with
/// `TVMFFIEnvModRegisterSystemLibSymbol`.
pub struct SystemLibrary {
    prefix: String,
}

impl SymbolSource for SystemLibrary {
    /// `<prefix><name>`, else `<name>` (as the real runtime looks them up).
    fn symbol(&self, name: &str) -> *mut c_void {
        crate::env::system_lib_symbol(format!("{}{name}", self.prefix).as_bytes())
            .or_else(|| crate::env::system_lib_symbol(name.as_bytes()))
            .unwrap_or(core::ptr::null_mut())
    }

    /// `__tvm_ffi_<prefix><name>`, else `__tvm_ffi_<name>`.
    fn function_symbol(&self, name: &str) -> *mut c_void {
        crate::env::system_lib_symbol(format!("{SYMBOL_PREFIX}{}{name}", self.prefix).as_bytes())
            .or_else(|| crate::env::system_lib_symbol(format!("{SYMBOL_PREFIX}{name}").as_bytes()))
            .unwrap_or(core::ptr::null_mut())
    }

    fn describe(&self) -> String {
        format!("the system library with prefix {:?}", self.prefix)
    }
}

/// A module whose functions are the safe calls of a [`SymbolSource`].
pub struct LibraryModule {
    source: Arc<dyn SymbolSource>,
    /// The library's `__tvm_ffi__library_ctx` (NULL when it has none) and the module handle
    /// stored there, cleared again when this module goes (see `Drop`).
    ctx: CtxSlot,
}

/// Where a library module's handle was stored.
struct CtxSlot {
    slot: *mut *mut c_void,
    written: Arc<AtomicPtr<c_void>>,
}

// SAFETY: the slot is only accessed under LOAD_LOCK, while the library is loaded.
unsafe impl Send for CtxSlot {}
// SAFETY: as above.
unsafe impl Sync for CtxSlot {}

impl Drop for LibraryModule {
    /// A library can stay mapped after its module is gone (another `dlopen` handle, a library
    /// depending on it): its `__tvm_ffi__library_ctx` must not keep pointing at a dead module.
    /// Import calls then fail with a clear error instead of reading freed memory.
    fn drop(&mut self) {
        let written = self.ctx.written.load(Ordering::Acquire);
        if self.ctx.slot.is_null() || written.is_null() {
            return;
        }
        let _guard = LOAD_LOCK.lock();
        // SAFETY: the library is still loaded (`source` is dropped after this), and the slot
        // is a pointer-sized variable written only under LOAD_LOCK.
        unsafe {
            if self.ctx.slot.read_unaligned() == written {
                self.ctx.slot.write_unaligned(core::ptr::null_mut());
            }
        }
    }
}

impl LibraryModule {
    /// The library this module finds its functions in.
    pub fn source(&self) -> &Arc<dyn SymbolSource> {
        &self.source
    }

    /// Calls a string getter (`__tvm_ffi__metadata_<name>` / `__tvm_ffi__doc_<name>`).
    fn string_getter(&self, symbol: &str) -> Result<Option<String>, Error> {
        let address = self.source.symbol(symbol);
        if address.is_null() {
            return Ok(None);
        }
        // SAFETY: symbols with these names follow the safe-call ABI (DESIGN §3).
        let getter = unsafe { core::mem::transmute::<*mut c_void, TVMFFISafeCallType>(address) };
        let mut result = TVMFFIAny::NONE;
        // SAFETY: no arguments; `result` is a writable None.
        let code = unsafe { getter(core::ptr::null_mut(), core::ptr::null(), 0, &mut result) };
        if code != 0 {
            return Err(Error::take_raised_after_failure(code));
        }
        // SAFETY: on success the callee wrote an owned value.
        let value = unsafe { Any::from_raw_owned_unchecked(result) };
        let text: FfiString = value.cast().map_err(|_| {
            Error::new(
                TYPE_ERROR,
                &format!(
                    "{symbol} in {} returned a {}, not a string",
                    self.source.describe(),
                    crate::registry::type_key_of(value.type_index())
                ),
            )
        })?;
        Ok(Some(String::from_utf8_lossy(text.as_bytes()).into_owned()))
    }
}

impl ModuleImpl for LibraryModule {
    fn kind(&self) -> &str {
        "library"
    }

    fn get_function(&self, name: &str, module: &Module) -> Result<Option<Function>, Error> {
        let address = self.source.function_symbol(name);
        if address.is_null() {
            return Ok(None);
        }
        // SAFETY: `__tvm_ffi_<name>` symbols follow the safe-call ABI.
        let target = unsafe { core::mem::transmute::<*mut c_void, TVMFFISafeCallType>(address) };
        Ok(Some(library_function(target, module)))
    }

    fn implements_function(&self, name: &str, _module: &Module) -> Result<bool, Error> {
        Ok(!self.source.function_symbol(name).is_null())
    }

    fn function_metadata(&self, name: &str) -> Result<Option<String>, Error> {
        self.string_getter(&format!("{METADATA_PREFIX}{name}"))
    }

    fn function_doc(&self, name: &str) -> Result<Option<String>, Error> {
        self.string_getter(&format!("{DOC_PREFIX}{name}"))
    }

    fn property_mask(&self) -> i32 {
        property_mask::BINARY_SERIALIZABLE | property_mask::RUNNABLE
    }
}

/// A function object calling a library's safe call (with a NULL handle, as the real runtime
/// does) and holding the module, so that the library stays loaded while the function lives.
#[repr(C)]
struct LibraryFunctionObj {
    header: TVMFFIObject,
    cell: TVMFFIFunctionCell,
    target: TVMFFISafeCallType,
    module: Module,
}

// SAFETY: repr(C) with the header first.
unsafe impl ObjectLayout for LibraryFunctionObj {}

/// The safe call of a [`LibraryFunctionObj`].
///
/// # Safety
/// `func` must be a `LibraryFunctionObj`; the arguments follow the safe-call contract.
unsafe extern "C" fn library_trampoline(
    func: *mut c_void,
    args: *const TVMFFIAny,
    num_args: i32,
    result: *mut TVMFFIAny,
) -> c_int {
    // SAFETY: this trampoline is only installed in LibraryFunctionObj cells.
    let target = unsafe { (*func.cast::<LibraryFunctionObj>()).target };
    // SAFETY: the library's safe call follows the same contract.
    unsafe { target(core::ptr::null_mut(), args, num_args, result) }
}

fn library_function(target: TVMFFISafeCallType, module: &Module) -> Function {
    let payload = LibraryFunctionObj {
        header: object::blank_header(),
        cell: TVMFFIFunctionCell {
            safe_call: Some(library_trampoline),
            cpp_call: core::ptr::null_mut(),
        },
        target,
        module: module.clone(),
    };
    let obj = object::alloc(type_index::FUNCTION, payload, 0);
    // SAFETY: a fresh Function object with one strong reference we take over.
    let obj = unsafe { ObjectRef::from_raw_owned(obj.cast()) }.expect("allocated");
    AnyView::from(&obj).cast().expect("a Function object")
}

/// The number of readable bytes from `address` to the end of the loaded segment holding it
/// (0 when no loaded object maps it), tightened to the symbol's size when the dynamic symbol
/// table records one.
fn readable_len(address: *const u8) -> usize {
    struct Search {
        address: usize,
        end: Option<usize>,
    }
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the Search passed below; `info` is valid during the callback.
        let (search, info) = unsafe { (&mut *data.cast::<Search>(), &*info) };
        for i in 0..usize::from(info.dlpi_phnum) {
            // SAFETY: dlpi_phdr has dlpi_phnum entries.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type != libc::PT_LOAD || ph.p_flags & libc::PF_R == 0 {
                continue;
            }
            let start = (info.dlpi_addr as usize).wrapping_add(ph.p_vaddr as usize);
            let end = start.wrapping_add(ph.p_memsz as usize);
            if (start..end).contains(&search.address) {
                search.end = Some(end);
                return 1;
            }
        }
        0
    }
    let mut search = Search {
        address: address as usize,
        end: None,
    };
    // SAFETY: the callback only reads the program headers it is given.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut search).cast()) };
    let Some(end) = search.end else { return 0 };
    let mut len = end - address as usize;
    let mut info: libc::Dl_info = libc::Dl_info {
        dli_fname: core::ptr::null(),
        dli_fbase: core::ptr::null_mut(),
        dli_sname: core::ptr::null(),
        dli_saddr: core::ptr::null_mut(),
    };
    let mut symbol: *mut c_void = core::ptr::null_mut();
    const RTLD_DL_SYMENT: c_int = 1;
    // SAFETY: dladdr1 only fills `info` and `symbol`.
    let found = unsafe { libc::dladdr1(address.cast(), &mut info, &mut symbol, RTLD_DL_SYMENT) };
    if found != 0 && !symbol.is_null() && info.dli_saddr.cast_const() == address.cast() {
        // SAFETY: with RTLD_DL_SYMENT, `symbol` points to the symbol's ELF entry.
        let size = unsafe { (*symbol.cast::<libc::Elf64_Sym>()).st_size } as usize;
        if size != 0 {
            len = len.min(size);
        }
    }
    len
}

/// Reads the library blob at `address`, within the memory that is actually mapped there.
fn read_library_bin(
    address: *const u8,
    source: &dyn SymbolSource,
) -> Result<library_bin::LibraryBin, Error> {
    let len = readable_len(address);
    // SAFETY: `len` bytes from `address` lie in one readable loaded segment (0 when none).
    let bytes = unsafe { core::slice::from_raw_parts(address, len) };
    library_bin::decode(bytes)
        .map_err(|e| Error::new(VALUE_ERROR, &format!("{}: {e}", source.describe())))
}

/// Calls `ffi.Module.load_from_bytes.<kind>` on `payload`.
pub fn load_from_bytes(kind: &str, payload: &[u8]) -> Result<Module, Error> {
    let name = loader_name(kind);
    let loader = Function::get_global(&name).ok_or_else(|| {
        Error::new(
            RUNTIME_ERROR,
            &format!(
                "Library binary was created using {{{kind}}} but a loader of that name is not \
                 registered. Make sure to have runtime that registers {name}"
            ),
        )
    })?;
    let bytes = Bytes::new(payload);
    let out = loader.call(&[AnyView::from(&bytes)])?;
    out.cast::<Module>().map_err(|e| {
        Error::new(
            TYPE_ERROR,
            &format!("{name} must return an ffi.Module: {}", e.message()),
        )
    })
}

/// Builds the module of a library: context symbols, the import tree, `__tvm_ffi__library_ctx`.
pub fn create_library_module(source: Arc<dyn SymbolSource>) -> Result<Module, Error> {
    let _guard = LOAD_LOCK.lock();
    for (name, value) in crate::env::context_symbol_list() {
        let Ok(name) = core::str::from_utf8(&name) else {
            continue;
        };
        let slot = source.symbol(name).cast::<*mut c_void>();
        if !slot.is_null() {
            // SAFETY: a context symbol is a writable pointer-sized variable (the contract of
            // TVMFFIEnvModRegisterContextSymbol).
            unsafe { slot.write_unaligned(value) };
        }
    }
    let bin_address = source.symbol(LIBRARY_BIN_SYMBOL).cast::<u8>().cast_const();
    let ctx_slot = source.symbol(LIBRARY_CTX_SYMBOL).cast::<*mut c_void>();
    let written = Arc::new(AtomicPtr::new(core::ptr::null_mut()));
    let lib_module = Module::from_impl(LibraryModule {
        source: source.clone(),
        ctx: CtxSlot {
            slot: ctx_slot,
            written: written.clone(),
        },
    });
    let root = if bin_address.is_null() {
        lib_module.clone()
    } else {
        let bin = read_library_bin(bin_address, &*source)?;
        let mut modules = Vec::with_capacity(bin.modules.len());
        for m in &bin.modules {
            modules.push(match m {
                BinModule::Lib => lib_module.clone(),
                BinModule::Serialized { kind, payload } => {
                    load_from_bytes(kind, payload).map_err(|e| {
                        Error::new(
                            e.kind().as_ref(),
                            &format!(
                                "loading the imported module of kind `{kind}` of {}: {}",
                                source.describe(),
                                e.message()
                            ),
                        )
                    })?
                }
            });
        }
        for (module, children) in modules.iter().zip(&bin.imports) {
            for &child in children {
                // The blob's graph is acyclic; a loader returning a module that already
                // imports one of these could still close a cycle, which this refuses.
                module.import_module(&modules[child])?;
            }
        }
        modules.swap_remove(0)
    };
    if !ctx_slot.is_null() {
        let handle = lib_module.as_ptr().cast::<c_void>();
        // SAFETY: `__tvm_ffi__library_ctx` is a writable pointer-sized variable, written under
        // LOAD_LOCK (held by every caller); the module clears it when it goes.
        unsafe { ctx_slot.write_unaligned(handle) };
        written.store(handle, Ordering::Release);
    }
    Ok(root)
}

/// A lock that the thread holding it may take again (loaders may load libraries).
struct ReentrantLock {
    state: Mutex<(Option<ThreadId>, usize)>,
    released: Condvar,
}

struct ReentrantGuard<'a>(&'a ReentrantLock);

impl ReentrantLock {
    const fn new() -> Self {
        ReentrantLock {
            state: Mutex::new((None, 0)),
            released: Condvar::new(),
        }
    }

    fn lock(&self) -> ReentrantGuard<'_> {
        let me = std::thread::current().id();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match state.0 {
                None => {
                    *state = (Some(me), 1);
                    break;
                }
                Some(owner) if owner == me => {
                    state.1 += 1;
                    break;
                }
                Some(_) => {
                    state = self.released.wait(state).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
        ReentrantGuard(self)
    }
}

impl Drop for ReentrantGuard<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1 -= 1;
        if state.1 == 0 {
            state.0 = None;
            self.0.released.notify_one();
        }
    }
}

/// Serializes library loading, so that one loaded image gets one module (and one
/// `__tvm_ffi__library_ctx` value).
static LOAD_LOCK: ReentrantLock = ReentrantLock::new();

/// Modules of loaded libraries by `dlopen` handle.
fn loaded() -> &'static Mutex<HashMap<usize, WeakObjectRef>> {
    static LOADED: OnceLock<Mutex<HashMap<usize, WeakObjectRef>>> = OnceLock::new();
    LOADED.get_or_init(Mutex::default)
}

/// Marks a library image as being loaded (only touched under LOAD_LOCK).
struct Loading(usize);

static LOADING: Mutex<Vec<usize>> = Mutex::new(Vec::new());

impl Loading {
    fn enter(handle: usize, library: &DsoLibrary) -> Result<Loading, Error> {
        let mut loading = LOADING.lock().unwrap_or_else(|p| p.into_inner());
        if loading.contains(&handle) {
            return Err(Error::new(
                RUNTIME_ERROR,
                &format!(
                    "{} is loaded again while its imported modules are being loaded (a loader \
                     loads the library that imports it)",
                    library.describe()
                ),
            ));
        }
        loading.push(handle);
        Ok(Loading(handle))
    }
}

impl Drop for Loading {
    fn drop(&mut self) {
        LOADING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&h| h != self.0);
    }
}

/// Options of [`load_library_with`].
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Keep the library loaded for the rest of the process (as Python's `load_module` does by
    /// default), e.g. when its own code creates objects that may outlive the module.
    pub keep_alive: bool,
}

/// Loads a shared library as a module (see [`Module::load`](crate::Module::load)). This runs
/// the library's code in this process, which a damaged library can crash: see
/// [`Module::load_from_file`](crate::Module::load_from_file).
pub fn load_library(path: &Path) -> Result<Module, Error> {
    load_library_with(path, LoadOptions::default())
}

/// Loads a shared library as a module, with options.
pub fn load_library_with(path: &Path, options: LoadOptions) -> Result<Module, Error> {
    let _guard = LOAD_LOCK.lock();
    let library = DsoLibrary::open(path)?;
    let handle = library.handle;
    let existing = {
        let mut table = loaded().lock().unwrap_or_else(|p| p.into_inner());
        table.retain(|_, weak| weak.strong_count() > 0);
        table.get(&handle).and_then(WeakObjectRef::upgrade)
    };
    let module = match existing {
        // The image is loaded and has its module: our extra `dlopen` is closed with `library`.
        Some(obj) => AnyView::from(&obj).cast::<Module>()?,
        None => {
            // A loader of this library's imports that loads the library again would recurse
            // without end (the image has no module until the first load finishes).
            let _loading = Loading::enter(handle, &library)?;
            let module = create_library_module(Arc::new(library))?;
            loaded()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(handle, module.as_object().downgrade());
            module
        }
    };
    if options.keep_alive {
        module.keep_alive();
    }
    Ok(module)
}

/// `ffi.ModuleLoadFromFile`: dispatches on the extension to `ffi.Module.load_from_file.<ext>`
/// (`dll`, `dylib` and `dso` count as `so`). Loading runs the library's code: see
/// [`Module::load_from_file`](crate::Module::load_from_file).
pub fn load_from_file(path: &str) -> Result<Module, Error> {
    let Some(dot) = path.rfind('.') else {
        return Err(Error::new(
            RUNTIME_ERROR,
            &format!("Failed to get file format from {path}"),
        ));
    };
    let mut format = &path[dot + 1..];
    if matches!(format, "dll" | "dylib" | "dso") {
        format = "so";
    }
    let name = format!("ffi.Module.load_from_file.{format}");
    let loader = Function::get_global(&name).ok_or_else(|| {
        Error::new(
            RUNTIME_ERROR,
            &format!(
                "Loader for `.{format}` files is not registered, resolved to ({name}) in the \
                 global registry."
            ),
        )
    })?;
    let path_arg = Any::from(path);
    let format_arg = Any::from(format);
    loader
        .call(&[path_arg.view(), format_arg.view()])?
        .cast::<Module>()
}

/// The system library of `prefix`: one module per prefix for the life of the process.
pub fn system_lib(prefix: &str) -> Result<Module, Error> {
    static SYSTEM_LIBS: OnceLock<Mutex<HashMap<String, Module>>> = OnceLock::new();
    let _guard = LOAD_LOCK.lock();
    let table = SYSTEM_LIBS.get_or_init(Mutex::default);
    if let Some(m) = table.lock().unwrap_or_else(|p| p.into_inner()).get(prefix) {
        return Ok(m.clone());
    }
    let module = create_library_module(Arc::new(SystemLibrary {
        prefix: prefix.to_owned(),
    }))?;
    table
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(prefix.to_owned(), module.clone());
    Ok(module)
}
