//! `__tvm_ffi__library_bin`: the import tree and payloads of embedded modules.
//!
//! The format lives in one place, [`safecall_runtime::library_bin`], which both this encoder
//! and the runtime's module loader use. Module 0 is `_lib`, the library itself; modules `1..`
//! are the [`ir::ImportedModule`]s in declaration order, each importing the modules its
//! `imports` list names.

use safecall_runtime::library_bin::{self, BinModule, LibraryBin};

use crate::ir;

/// The import tree of a verified module (`None` when it imports nothing).
pub(super) fn library_bin(module: &ir::Module) -> Option<LibraryBin> {
    if module.imported_modules.is_empty() {
        return None;
    }
    let index_of = |label: &String| -> usize {
        let i = module
            .imported_modules
            .iter()
            .position(|m| &m.label == label)
            .expect("the verifier checks import labels");
        i + 1
    };
    let mut modules = vec![BinModule::Lib];
    let mut imports = vec![module.imports.iter().map(index_of).collect::<Vec<_>>()];
    for m in &module.imported_modules {
        modules.push(BinModule::Serialized {
            kind: m.kind.clone(),
            payload: m.payload.clone(),
        });
        imports.push(m.imports.iter().map(index_of).collect());
    }
    Some(LibraryBin { modules, imports })
}

/// Encodes the library blob of a verified module, or `None` when it imports nothing.
pub(super) fn encode(module: &ir::Module) -> Option<Vec<u8>> {
    library_bin(module).map(|bin| library_bin::encode(&bin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_of_the_imports_example_decodes_to_its_import_tree() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/ir/imports.scir"),
        )
        .unwrap();
        let module = ir::parse::parse(&text).unwrap();
        let bytes = encode(&module).unwrap();
        let bin = library_bin::decode(&bytes).unwrap();
        assert_eq!(bin.modules[0], BinModule::Lib);
        assert_eq!(bin.modules[1].kind(), "test_helpers");
        assert_eq!(bin.modules[2].kind(), "cuda");
        // The library imports `kernels` (2), which imports `helpers` (1).
        assert_eq!(bin.imports, vec![vec![2], vec![], vec![1]]);
    }
}
