//! [`Module`]: a reference to an `ffi.Module` (see [`crate::module`] for what modules are).
//!
//! ```no_run
//! use safecall_runtime::{Any, AnyView, Function, Module};
//! # fn main() -> Result<(), safecall_runtime::Error> {
//! // Imported modules of the kind `my_kernels` are rebuilt from their payload by this loader.
//! Module::register_loader(
//!     "my_kernels",
//!     |payload| {
//!         let size = payload.len() as i64;
//!         let f = Function::from_closure(move |_| Ok(Any::from(size)));
//!         Ok(Module::from_functions("my_kernels", [("payload_size".to_owned(), f)]))
//!     },
//!     false,
//! )?;
//! let module = Module::load("./libadd_one.so")?;
//! let add_one = module.get_function("add_one")?.expect("exported");
//! let out = add_one.call(&[AnyView::from(41i64)])?;
//! for import in module.imports() {
//!     println!("imports a module of kind {}", import.kind());
//! }
//! # let _ = out;
//! # Ok(())
//! # }
//! ```

use std::path::Path;

use crate::abi::symbols::error_kind::TYPE_ERROR;
use crate::abi::type_index as ti;
use crate::module::{self, FunctionTable, LoadOptions, ModuleImpl};
use crate::rust_api::any::{FromAnyView, conversion_error};
use crate::rust_api::object_ref::{TypedObjectRef, typed_object_ref};
use crate::rust_api::{Any, AnyView, Bytes, Error, Function, ObjectRef};

/// A module: functions by name, plus the modules it imports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module(ObjectRef);

typed_object_ref!(Module);

impl Module {
    /// Wraps a reference already checked to be a module object of this runtime.
    pub(crate) fn from_object_ref_unchecked(obj: ObjectRef) -> Self {
        <Module as TypedObjectRef>::from_object_ref(obj)
    }

    /// Loads a shared library (`ffi.Module.load_from_file.so`): its `__tvm_ffi_<name>`
    /// functions, its `__tvm_ffi__library_ctx` set to the library module, and the import tree
    /// of its `__tvm_ffi__library_bin`. Loading a library that is already loaded returns the
    /// module it already has.
    ///
    /// Loading runs the library's code in this process: the system's dynamic loader maps and
    /// relocates the file, trusting its headers and tables, then runs its constructors, and
    /// the import tree's loaders run next. A damaged or hostile file can crash or hang the
    /// process there, before any error can be returned; only load files you trust (see
    /// [`Module::load_from_file`] for what the `safecall` CLI does about it).
    pub fn load(path: impl AsRef<Path>) -> Result<Module, Error> {
        module::load_library(path.as_ref())
    }

    /// [`Module::load`] with options (e.g. keep the library loaded for the rest of the
    /// process, for libraries whose own code creates objects, as C++ libraries do).
    pub fn load_with(path: impl AsRef<Path>, options: LoadOptions) -> Result<Module, Error> {
        module::load_library_with(path.as_ref(), options)
    }

    /// Loads a module file through the loader registered for its extension
    /// (`ffi.ModuleLoadFromFile`: `ffi.Module.load_from_file.<ext>`; `.so` is built in).
    ///
    /// # Loading runs the library's code
    ///
    /// For a shared library this is [`Module::load`]: the dynamic loader (`dlopen`) maps the
    /// file and applies its relocations, trusting its program headers, dynamic section and
    /// tables, then runs its constructors; the loaders of its imported modules run after.
    /// None of that can be checked from here, so a damaged or hostile library can crash the
    /// process (a segmentation fault inside `dlopen`, say) or hang it, and no `Err` is
    /// returned. Load only libraries you trust, or load them in a process you can lose.
    ///
    /// The `safecall` command-line tool does the latter: `safecall inspect` checks the file's
    /// consistency first (section and segment bounds, the dynamic section, symbol, hash and
    /// version tables, relocation targets, initializers) and refuses a damaged one without
    /// loading it, then loads the library in a child process under a time limit, reporting a
    /// crash or a hang there as an error; `safecall run --preload` loads its libraries in such
    /// a child first. See docs/cli.md.
    pub fn load_from_file(path: &str) -> Result<Module, Error> {
        module::library::load_from_file(path)
    }

    /// The system library of `prefix` (`ffi.SystemLib`): the functions registered with
    /// `TVMFFIEnvModRegisterSystemLibSymbol` as `__tvm_ffi_<prefix><name>` (or, failing that,
    /// `__tvm_ffi_<name>`). One module per prefix for the life of the process.
    pub fn system_lib(prefix: &str) -> Result<Module, Error> {
        module::system_lib(prefix)
    }

    /// A module around a Rust implementation.
    pub fn from_impl(imp: impl ModuleImpl) -> Module {
        module::new_module(Box::new(imp))
    }

    /// A module of `kind` whose functions are `functions`.
    pub fn from_functions(
        kind: &str,
        functions: impl IntoIterator<Item = (String, Function)>,
    ) -> Module {
        Module::from_impl(FunctionTable::new(kind, functions))
    }

    /// The function `name` of this module itself (`None` when it has none).
    pub fn get_function(&self, name: &str) -> Result<Option<Function>, Error> {
        self.get_function_with_imports(name, false)
    }

    /// Keeps this module (and so its library) alive for the rest of the process
    /// (`ffi.ModuleGlobalsAdd`).
    pub fn keep_alive(&self) {
        module::builtins::pin(self);
    }

    /// Registers `loader` as `ffi.Module.load_from_bytes.<kind>`: the global function that
    /// library loading calls to rebuild an imported module of `kind` from its payload.
    pub fn register_loader<F>(kind: &str, loader: F, allow_override: bool) -> Result<(), Error>
    where
        F: Fn(&[u8]) -> Result<Module, Error> + Send + Sync + 'static,
    {
        let f = Function::from_closure(move |args: &[AnyView<'_>]| {
            let [payload] = args else {
                return Err(Error::new(
                    TYPE_ERROR,
                    &format!(
                        "a module loader takes 1 argument (bytes), got {}",
                        args.len()
                    ),
                ));
            };
            let payload: Bytes = payload.cast()?;
            loader(payload.as_bytes()).map(Any::from)
        });
        f.set_global(&module::library::loader_name(kind), allow_override)
    }
}

impl<'a> FromAnyView<'a> for Module {
    fn from_any_view(view: &AnyView<'a>) -> Result<Self, Error> {
        match view.object_ptr() {
            // SAFETY: the view borrows a live object.
            Some(obj) if unsafe { module::is_module(obj) } => {
                // SAFETY: a live module object of this runtime.
                Ok(Module(unsafe { ObjectRef::from_raw_borrowed(obj) }))
            }
            _ if view.type_index() == ti::MODULE => Err(Error::new(
                TYPE_ERROR,
                "the ffi.Module was not created by this runtime",
            )),
            _ => Err(conversion_error(view.type_index(), "ffi.Module")),
        }
    }
}

impl<'a> From<&'a Module> for AnyView<'a> {
    fn from(value: &'a Module) -> Self {
        value.as_object_ref().into()
    }
}

impl From<Module> for Any {
    fn from(value: Module) -> Self {
        value.into_object_ref().into()
    }
}
