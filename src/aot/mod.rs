//! Ahead-of-time delivery: object files (`.o`) and shared libraries (`.so`).
//!
//! Objects are position-independent, carry `.eh_frame` with pc-relative pointers, and leave
//! the TVM-FFI C API symbols undefined. Shared libraries are linked by the system C compiler
//! (`cc -shared -Wl,-z,now -Wl,-z,text`), with the C API left for load time (whichever runtime
//! the process has: libtvm_ffi or safecall-runtime) or linked to `libsafecall_runtime.so`.

mod link;
mod unwind;

use cranelift_object::object::write::{Symbol as ObjSymbol, SymbolSection};
use cranelift_object::object::{SymbolFlags, SymbolKind, SymbolScope};
use cranelift_object::{ObjectBuilder, ObjectModule};

use crate::backend::cranelift::{self as clif, CraneliftOptions};
use crate::lir;
pub use link::{LinkError, LinkOptions, link_shared_library};

/// Compiles a lowered module to the bytes of a relocatable object file with LLVM (the same
/// conventions as [`cranelift_object()`]: PIC, `.eh_frame` without text relocations, the C API
/// left undefined).
#[cfg(feature = "llvm")]
pub use crate::backend::llvm::object as llvm_object;

/// Compiles a lowered module to the bytes of a relocatable object file with Cranelift.
pub fn cranelift_object(
    module: &lir::Module,
    options: &CraneliftOptions,
) -> Result<Vec<u8>, clif::CraneliftError> {
    let err = |e: &dyn std::fmt::Display| clif::CraneliftError(e.to_string());
    let isa = clif::host_isa(clif::IsaPurpose::Aot, options)?;
    let builder = ObjectBuilder::new(
        isa.clone(),
        module.name.as_bytes().to_vec(),
        cranelift_module::default_libcall_names(),
    )
    .map_err(|e| err(&e))?;
    let mut m = ObjectModule::new(builder);
    let declared = clif::declare(&mut m, module)?;
    clif::define_data(&mut m, module, &declared)?;
    let mut unwind_infos = Vec::new();
    clif::define_functions(&mut m, module, &declared, None, |c| {
        let code = c
            .ctx
            .compiled_code()
            .expect("defined functions are compiled");
        if let Some(info) = code.create_unwind_info(&*isa).map_err(|e| err(&e))? {
            unwind_infos.push((c.id, info));
        }
        Ok(())
    })?;
    let mut product = m.finish();
    let mut eh_frame = unwind::EhFrameBuilder::new();
    for (id, info) in unwind_infos {
        eh_frame.add(&*isa, product.function_symbol(id), info);
    }
    eh_frame.finish(&mut product.object).map_err(|e| err(&e))?;
    for (alias, target) in &module.aliases {
        let target_symbol = product.function_symbol(declared.functions[target.0 as usize]);
        let target_def = product.object.symbol(target_symbol);
        let (value, size) = (target_def.value, target_def.size);
        let SymbolSection::Section(section) = target_def.section else {
            return Err(err(&format!(
                "alias `{alias}`: its target is not defined in this object"
            )));
        };
        product.object.add_symbol(ObjSymbol {
            name: alias.as_bytes().to_vec(),
            value,
            size,
            kind: SymbolKind::Text,
            scope: SymbolScope::Dynamic,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        });
    }
    let mut bytes = product.emit().map_err(|e| err(&e))?;
    mark_init_arrays(&mut bytes).map_err(|e| err(&e))?;
    Ok(bytes)
}

/// Gives `.init_array` sections the ELF type `SHT_INIT_ARRAY`.
///
/// cranelift-object creates custom sections as `SHT_PROGBITS` (with the `used` flag as
/// `SHF_GNU_RETAIN`). GNU ld places them by name and runs the entries anyway, but the type is
/// what marks a section as an array of initializers: linkers that go by type (lld refuses to
/// merge sections of different types) need it, so it is patched in the section header table.
fn mark_init_arrays(bytes: &mut [u8]) -> Result<(), String> {
    use cranelift_object::object::read::elf::{ElfFile64, FileHeader};
    use cranelift_object::object::{Endianness, Object, ObjectSection, elf};

    let (shoff, shentsize, endian, indices) = {
        let file = ElfFile64::<Endianness>::parse(&*bytes).map_err(|e| e.to_string())?;
        let endian = file.endianness();
        let header = file.elf_header();
        let indices: Vec<usize> = file
            .sections()
            .filter(|s| s.name() == Ok(".init_array"))
            .map(|s| s.index().0)
            .collect();
        (
            header.e_shoff(endian) as usize,
            usize::from(header.e_shentsize(endian)),
            endian,
            indices,
        )
    };
    for index in indices {
        // sh_type is the second 32-bit word of an Elf64_Shdr.
        let at = shoff + index * shentsize + 4;
        let field = bytes
            .get_mut(at..at + 4)
            .ok_or("section header table out of bounds")?;
        let value = match endian {
            Endianness::Little => elf::SHT_INIT_ARRAY.to_le_bytes(),
            Endianness::Big => elf::SHT_INIT_ARRAY.to_be_bytes(),
        };
        field.copy_from_slice(&value);
    }
    Ok(())
}
