//! Symbols a module exports besides its host functions: `__tvm_ffi__metadata_<name>`,
//! `__tvm_ffi__doc_<name>`, `__tvm_ffi__library_bin`, and, in system-library mode, the
//! load-time constructor that registers every function with the runtime.

use safecall_runtime::abi::{BYTE_ARRAY_DATA_OFFSET, BYTE_ARRAY_SIZE, BYTE_ARRAY_SIZE_OFFSET};

use crate::lir::{
    Callee, Data, DataReloc, FuncId, Linkage, Signature, Symbol, Ty, builder::FuncBuilder,
};

use super::capi::{CApi, safe_call_signature};
use super::modctx::ModuleCtx;
use super::options::LowerError;
use super::schema;
use safecall_runtime::abi::symbols::{
    DOC_PREFIX, EXPORT_PREFIX, LIBRARY_BIN_SYMBOL, LIBRARY_CTX_SYMBOL, METADATA_PREFIX,
};

/// Emits the metadata and doc getters, the library blob and the system-library constructor.
///
/// In system-library mode nothing is exported (two system libraries linked into one program
/// must not clash): the constructor registers each host function as
/// `__tvm_ffi_<prefix><name>`, and every other symbol the loader looks up as
/// `<prefix><symbol>` (`<prefix>__tvm_ffi__metadata_<name>`, `<prefix>__tvm_ffi__doc_<name>`,
/// `<prefix>__tvm_ffi__library_bin`, `<prefix>__tvm_ffi__library_ctx`), which is where the
/// system library of both runtimes finds them.
pub(crate) fn emit_exports(
    ctx: &mut ModuleCtx<'_>,
    host_ids: &[FuncId],
    system_lib_prefix: Option<&str>,
) -> Result<(), LowerError> {
    let linkage = if system_lib_prefix.is_some() {
        Linkage::Local
    } else {
        Linkage::Export
    };
    let mut registrations = Vec::new();
    for (func, &id) in ctx.ir.functions.iter().zip(host_ids) {
        registrations.push((format!("{EXPORT_PREFIX}{}", func.name), Symbol::Func(id)));
        if ctx.options.skip_metadata_getters {
            continue;
        }
        let meta = string_getter(
            ctx,
            &format!("{METADATA_PREFIX}{}", func.name),
            &schema::metadata_json(func),
            linkage,
        );
        registrations.push((
            format!("{METADATA_PREFIX}{}", func.name),
            Symbol::Func(meta),
        ));
        if !func.doc.is_empty() {
            let doc = string_getter(
                ctx,
                &format!("{DOC_PREFIX}{}", func.name),
                &func.doc,
                linkage,
            );
            registrations.push((format!("{DOC_PREFIX}{}", func.name), Symbol::Func(doc)));
        }
    }
    if let Some(blob) = super::blob::encode(ctx.ir) {
        let bin = ctx.add_data(Data {
            name: LIBRARY_BIN_SYMBOL.to_owned(),
            linkage,
            writable: false,
            align: 8,
            contents: blob,
            relocs: Vec::new(),
            section: None,
        });
        registrations.push((LIBRARY_BIN_SYMBOL.to_owned(), Symbol::Data(bin)));
    }
    if let Some(library_ctx) = ctx.library_ctx {
        ctx.out.data[library_ctx.0 as usize].linkage = linkage;
        registrations.push((LIBRARY_CTX_SYMBOL.to_owned(), Symbol::Data(library_ctx)));
    }
    if let Some(prefix) = system_lib_prefix {
        emit_system_lib_constructor(ctx, prefix, &registrations);
    }
    Ok(())
}

/// A safe-call function with no parameters returning a constant String.
fn string_getter(ctx: &mut ModuleCtx<'_>, symbol: &str, text: &str, linkage: Linkage) -> FuncId {
    let mut b = FuncBuilder::new(symbol, linkage, safe_call_signature());
    b.source(format!("return the constant string ({} bytes)", text.len()));
    let result = b.param(3);
    let data = ctx.cstring(text.as_bytes());
    let slot = b.slot(BYTE_ARRAY_SIZE as u32, 8);
    let ba = b.stack_addr(slot, 0);
    let p = b.symbol_addr(Symbol::Data(data));
    b.store(ba, BYTE_ARRAY_DATA_OFFSET, p);
    b.store_imm(Ty::I64, ba, BYTE_ARRAY_SIZE_OFFSET, text.len() as i64);
    let f = ctx.capi(CApi::StringFromByteArray);
    let rc = b
        .call(Callee::Import(f), Some(Ty::I32), vec![ba, result])
        .expect("returns");
    b.ret(Some(rc));
    ctx.add_function(b.finish())
}

/// A constructor (in `.init_array`) registering every symbol under its system-library name
/// ([`system_lib_name`]) with `TVMFFIEnvModRegisterSystemLibSymbol`.
fn emit_system_lib_constructor(
    ctx: &mut ModuleCtx<'_>,
    prefix: &str,
    symbols: &[(String, Symbol)],
) {
    let name = ctx.local_name("register_system_lib");
    let mut b = FuncBuilder::new(name, Linkage::Local, Signature::new(Vec::new(), None));
    b.source(format!(
        "register the functions of the system library with prefix {prefix:?}"
    ));
    let register = ctx.capi(CApi::EnvModRegisterSystemLibSymbol);
    for (symbol, target) in symbols {
        let registered = system_lib_name(symbol, prefix);
        let data = ctx.cstring(registered.as_bytes());
        let name_ptr = b.symbol_addr(Symbol::Data(data));
        let fn_ptr = b.symbol_addr(*target);
        b.call(
            Callee::Import(register),
            Some(Ty::I32),
            vec![name_ptr, fn_ptr],
        );
    }
    b.ret(None);
    let ctor = ctx.add_function(b.finish());
    let entry_name = ctx.local_name("init_array_entry");
    ctx.add_data(Data {
        name: entry_name,
        linkage: Linkage::Local,
        writable: true,
        align: 8,
        contents: vec![0; 8],
        relocs: vec![DataReloc {
            offset: 0,
            symbol: Symbol::Func(ctor),
            addend: 0,
        }],
        section: Some(".init_array".to_owned()),
    });
}

/// The name a symbol is registered under in the system library of `prefix`: a host function
/// `__tvm_ffi_<name>` becomes `__tvm_ffi_<prefix><name>` (how the system library looks up
/// functions); anything else gets the prefix in front, `<prefix><symbol>` (how it looks up
/// other symbols: metadata, docs, the library blob and context).
fn system_lib_name(symbol: &str, prefix: &str) -> String {
    let is_function = symbol.starts_with(EXPORT_PREFIX)
        && !symbol.starts_with(METADATA_PREFIX)
        && !symbol.starts_with(DOC_PREFIX)
        && symbol != LIBRARY_BIN_SYMBOL
        && symbol != LIBRARY_CTX_SYMBOL;
    match symbol.strip_prefix(EXPORT_PREFIX) {
        Some(name) if is_function => format!("{EXPORT_PREFIX}{prefix}{name}"),
        _ => format!("{prefix}{symbol}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_lib_names_follow_the_loader() {
        assert_eq!(system_lib_name("__tvm_ffi_add", "p_"), "__tvm_ffi_p_add");
        assert_eq!(
            system_lib_name("__tvm_ffi__metadata_add", "p_"),
            "p___tvm_ffi__metadata_add"
        );
        assert_eq!(
            system_lib_name("__tvm_ffi__doc_add", "p."),
            "p.__tvm_ffi__doc_add"
        );
        assert_eq!(
            system_lib_name("__tvm_ffi__library_bin", "p_"),
            "p___tvm_ffi__library_bin"
        );
        assert_eq!(
            system_lib_name("__tvm_ffi__library_ctx", ""),
            "__tvm_ffi__library_ctx"
        );
    }
}
