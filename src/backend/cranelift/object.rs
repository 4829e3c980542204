//! Relocatable object files from Cranelift (`cranelift-object`).

use cranelift_object::object::write::{Symbol as ObjSymbol, SymbolSection};
use cranelift_object::object::{SymbolFlags, SymbolKind, SymbolScope};
use cranelift_object::{ObjectBuilder, ObjectModule};

use super::error::CraneliftError;
use super::isa::IsaPurpose;
use super::settings::CraneliftOptions;
use crate::lir;

/// Compiles a lowered module to the bytes of a relocatable object file with Cranelift:
/// position-independent code, `.eh_frame` with pc-relative pointers, aliases as extra symbols,
/// `.init_array` sections typed as such.
pub(crate) fn object(
    module: &lir::Module,
    options: &CraneliftOptions,
) -> Result<Vec<u8>, CraneliftError> {
    let err = |e: &dyn std::fmt::Display| CraneliftError(e.to_string());
    let isa = super::isa::host_isa(IsaPurpose::Aot, options)?;
    let builder = ObjectBuilder::new(
        isa.clone(),
        module.name.as_bytes().to_vec(),
        cranelift_module::default_libcall_names(),
    )
    .map_err(|e| err(&e))?;
    let mut m = ObjectModule::new(builder);
    let declared = super::define::declare(&mut m, module, false)?;
    super::define::define_data(&mut m, module, &declared)?;
    // The functions that run only when a call fails, by the baseline compiler where the
    // settings ask for it; Cranelift compiles the rest (and any function the baseline refuses).
    let mut by_baseline = super::cold::baseline_selection(module, options.cold, options.target);
    let mut baseline_defined = Vec::new();
    for (i, selected) in by_baseline.iter_mut().enumerate() {
        if *selected {
            match super::cold::define_baseline_function(&mut m, module, &declared, i)? {
                Some(defined) => baseline_defined.push(defined),
                None => *selected = false,
            }
        }
    }
    let mut unwind_infos = Vec::new();
    super::define::define_functions_where(
        &mut m,
        module,
        &declared,
        None,
        |i| !by_baseline[i],
        |c| {
            let code = c
                .ctx
                .compiled_code()
                .expect("defined functions are compiled");
            if let Some(info) = code.create_unwind_info(&*isa).map_err(|e| err(&e))? {
                unwind_infos.push((c.id, info));
            }
            Ok(())
        },
    )?;
    let mut product = m.finish();
    let mut eh_frame = super::unwind::EhFrameBuilder::new();
    for (id, info) in unwind_infos {
        eh_frame.add(&*isa, product.function_symbol(id), info);
    }
    for f in baseline_defined {
        eh_frame.add_frame_pointer_function(&*isa, product.function_symbol(f.id), f.len);
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
