//! The once-per-process parts of launching: finding the driver and filling the driver
//! table; loading a device binary and filling its kernel table.

use crate::ir::DeviceBinary;
use crate::lir::{Callee, DataId, FuncId, IntCC, Symbol, Ty, Var};

use super::super::modctx::ModuleCtx;
use super::super::modctx::TableSource;
use super::super::options::LowerError;
use super::super::raise::{MsgPart, Tag};
use super::cuda::{self, Entry, Libc};
use super::shared::Runtime;
use super::support::{InitFn, call_entry, cstr_or, describe_error, embed_image, zeroed};

/// Start of every message about finding or starting the driver.
const NO_LAUNCH: &str = "cannot launch CUDA kernels: ";

impl ModuleCtx<'_> {
    /// The driver table's cell and how it is filled (an init function emitted on first use,
    /// or the shared helper the settings name).
    pub(super) fn cuda_driver(&mut self) -> (DataId, TableSource) {
        if let Some(d) = self.gpu.driver {
            return d;
        }
        let d = self.runtime_table(Runtime::Cuda, Entry::ALL.len(), emit_driver_init);
        self.gpu.driver = Some(d);
        d
    }

    /// The kernel-table cell of device binary `name` and its init function, emitted on first
    /// use. The driver must be initialized before the init function runs.
    pub(super) fn cuda_binary(&mut self, name: &str) -> Result<(DataId, FuncId), LowerError> {
        if let Some(b) = self.gpu.binaries.get(name) {
            return Ok(*b);
        }
        let binary = self
            .ir
            .device_binaries
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| {
                LowerError::internal(format!(
                    "no device binary `{name}` (the verifier should have rejected this)"
                ))
            })?
            .clone();
        let (driver_cell, _) = self.cuda_driver();
        let cell = self.handle_cell("cuda_binary");
        let init = emit_binary_init(self, &binary, driver_cell);
        self.gpu.binaries.insert(name.to_owned(), (cell, init));
        Ok((cell, init))
    }
}

/// Calls a libc function.
pub(super) fn libc_call(f: &mut InitFn<'_, '_>, func: Libc, args: Vec<Var>) -> Var {
    let id = f.m.import(func.name(), func.signature());
    f.b.call(Callee::Import(id), Some(Ty::Ptr), args)
        .expect("returns a pointer")
}

/// A pointer to a static NUL-terminated copy of `text`.
pub(super) fn static_str(f: &mut InitFn<'_, '_>, text: &str) -> Var {
    let data = f.m.cstring(text.as_bytes());
    f.b.symbol_addr(Symbol::Data(data))
}

/// `dlerror()`, never NULL.
pub(super) fn dl_error(f: &mut InitFn<'_, '_>) -> Var {
    let e = libc_call(f, Libc::Dlerror, vec![]);
    cstr_or(f.m, &mut f.b, e, "unknown dlopen error")
}

/// `int init(void** out)`: finds the driver, fills `table`, runs `cuInit(0)`; `*out` = table.
fn emit_driver_init(m: &mut ModuleCtx<'_>, table: DataId) -> FuncId {
    let mut f = InitFn::new(m, "cuda_driver_init");
    let gpa_name = static_str(&mut f, cuda::GET_PROC_ADDRESS);
    let gpa = f.b.mutable_var(Ty::Ptr);
    let null = f.b.iconst(Ty::Ptr, 0);
    let flags = f.b.iconst(Ty::I32, cuda::RTLD_NOW_LOCAL);

    // 1. $SAFECALL_LIBCUDA_PATH, when set.
    let env_name = static_str(&mut f, cuda::LIBCUDA_PATH_ENV);
    let path = libc_call(&mut f, Libc::Getenv, vec![env_name]);
    let from_env = f.b.new_block();
    let search = f.b.new_block();
    let found = f.b.new_block();
    let is_set = f.b.icmp(IntCC::Ne, path, null);
    f.b.branch(is_set, from_env, search);

    f.b.switch_to(from_env);
    let handle = libc_call(&mut f, Libc::Dlopen, vec![path, flags]);
    let loaded = f.b.icmp(IntCC::Ne, handle, null);
    f.check(loaded, |f| {
        let e = dl_error(f);
        vec![
            MsgPart::text(format!("{NO_LAUNCH}{} is `", cuda::LIBCUDA_PATH_ENV)),
            MsgPart::Value(Tag::CStr, path),
            MsgPart::text("`, which could not be loaded: "),
            MsgPart::Value(Tag::CStr, e),
        ]
    });
    let sym = libc_call(&mut f, Libc::Dlsym, vec![handle, gpa_name]);
    let has = f.b.icmp(IntCC::Ne, sym, null);
    f.check(has, |_| {
        vec![
            MsgPart::text(format!("{NO_LAUNCH}`")),
            MsgPart::Value(Tag::CStr, path),
            MsgPart::text(format!(
                "` (from {}) has no `{}`: it is not a CUDA 12 (or later) driver",
                cuda::LIBCUDA_PATH_ENV,
                cuda::GET_PROC_ADDRESS
            )),
        ]
    });
    f.b.assign(gpa, sym);
    f.b.jump(found);

    // 2. A driver some library already loaded (PyTorch, CuPy), else 3. libcuda.so.1.
    f.b.switch_to(search);
    let default = f.b.iconst(Ty::Ptr, cuda::RTLD_DEFAULT);
    let sym = libc_call(&mut f, Libc::Dlsym, vec![default, gpa_name]);
    f.b.assign(gpa, sym);
    let in_process = f.b.icmp(IntCC::Ne, sym, null);
    let open = f.b.new_block();
    f.b.branch(in_process, found, open);
    f.b.switch_to(open);
    let lib_name = static_str(&mut f, cuda::LIBCUDA);
    let handle = libc_call(&mut f, Libc::Dlopen, vec![lib_name, flags]);
    let loaded = f.b.icmp(IntCC::Ne, handle, null);
    f.check(loaded, |f| {
        let e = dl_error(f);
        vec![
            MsgPart::text(format!(
                "{NO_LAUNCH}no CUDA driver found: {} is not set, no library loaded in the \
                 process provides `{}`, and dlopen(\"{}\") failed: ",
                cuda::LIBCUDA_PATH_ENV,
                cuda::GET_PROC_ADDRESS,
                cuda::LIBCUDA
            )),
            MsgPart::Value(Tag::CStr, e),
        ]
    });
    let sym = libc_call(&mut f, Libc::Dlsym, vec![handle, gpa_name]);
    let has = f.b.icmp(IntCC::Ne, sym, null);
    f.check(has, |_| {
        vec![MsgPart::text(format!(
            "{NO_LAUNCH}{} has no `{}`: the CUDA driver is older than CUDA 12",
            cuda::LIBCUDA,
            cuda::GET_PROC_ADDRESS
        ))]
    });
    f.b.assign(gpa, sym);
    f.b.jump(found);

    // Every entry point, in its CUDA 12.0 version.
    f.b.switch_to(found);
    let table = f.b.symbol_addr(Symbol::Data(table));
    let status = f.b.slot(8, 8);
    let status = f.b.stack_addr(status, 0);
    let version = f.b.iconst(Ty::I32, cuda::API_VERSION);
    let proc_flags = f.b.iconst(Ty::I64, cuda::PROC_ADDRESS_DEFAULT);
    for entry in Entry::ALL {
        let name = static_str(&mut f, entry.name());
        let at = f.b.ptr_add_imm(table, entry.offset() as i64);
        f.b.store_imm(Ty::Ptr, at, 0, 0);
        let rc =
            f.b.call(
                Callee::Indirect(gpa, cuda::get_proc_address_signature()),
                Some(Ty::I32),
                vec![name, at, version, proc_flags, status],
            )
            .expect("returns");
        let p = f.b.load(Ty::Ptr, at, 0);
        let ok_rc = f.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
        let non_null = f.b.icmp(IntCC::Ne, p, null);
        let ok = f.b.binary(crate::lir::BinOp::And, ok_rc, non_null);
        f.check(ok, |_| {
            vec![
                MsgPart::text(format!(
                    "{NO_LAUNCH}the CUDA driver has no `{}` for CUDA 12.0 ({} returned ",
                    entry.name(),
                    cuda::GET_PROC_ADDRESS
                )),
                MsgPart::Value(Tag::I64, rc),
                MsgPart::text(")"),
            ]
        });
    }
    let zero = f.b.iconst(Ty::I32, 0);
    let rc = call_entry(&mut f.b, table, Entry::Init, vec![zero]);
    let ok = f.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    f.check(ok, |f| {
        let mut parts = vec![MsgPart::text(format!("{NO_LAUNCH}cuInit failed: "))];
        parts.extend(describe_error(f.m, &mut f.b, table, rc));
        parts
    });
    f.finish(table)
}

/// `int init(void** out)`: loads `binary`, looks up its kernels into a table; `*out` = that
/// table. Expects the driver table in `driver_cell`.
fn emit_binary_init(m: &mut ModuleCtx<'_>, binary: &DeviceBinary, driver_cell: DataId) -> FuncId {
    let (image, what) = embed_image(m, binary, "cuda_image");
    let kernels = zeroed(m, "cuda_kernels", binary.kernels.len() * 8);

    let mut f = InitFn::new(m, "cuda_binary_init");
    let cell = f.b.symbol_addr(Symbol::Data(driver_cell));
    let table = f.b.load(Ty::Ptr, cell, 0);
    let lib_slot = f.b.slot(8, 8);
    let lib_at = f.b.stack_addr(lib_slot, 0);
    f.b.store_imm(Ty::Ptr, lib_at, 0, 0);
    let image = f.b.symbol_addr(Symbol::Data(image));
    let null = f.b.iconst(Ty::Ptr, 0);
    let none = f.b.iconst(Ty::I32, 0);
    let rc = call_entry(
        &mut f.b,
        table,
        Entry::LibraryLoadData,
        vec![lib_at, image, null, null, none, null, null, none],
    );
    let ok = f.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
    f.check(ok, |f| {
        let mut parts = vec![MsgPart::text(format!(
            "cannot load {what}: cuLibraryLoadData returned "
        ))];
        parts.extend(describe_error(f.m, &mut f.b, table, rc));
        parts
    });
    let lib = f.b.load(Ty::Ptr, lib_at, 0);
    let kernels = f.b.symbol_addr(Symbol::Data(kernels));
    for (k, kernel) in binary.kernels.iter().enumerate() {
        let name = static_str(&mut f, kernel);
        let at = f.b.ptr_add_imm(kernels, 8 * k as i64);
        let rc = call_entry(
            &mut f.b,
            table,
            Entry::LibraryGetKernel,
            vec![at, lib, name],
        );
        let ok = f.b.icmp_imm(IntCC::Eq, rc, cuda::SUCCESS);
        f.check(ok, |f| {
            let mut parts = vec![MsgPart::text(format!(
                "{what}: cannot get kernel '{kernel}': cuLibraryGetKernel returned "
            ))];
            parts.extend(describe_error(f.m, &mut f.b, table, rc));
            // The library is useless without all its kernels: unload it (the next launch
            // tries again).
            call_entry(&mut f.b, table, Entry::LibraryUnload, vec![lib]);
            parts
        });
    }
    f.finish(kernels)
}
