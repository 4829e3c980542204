//! System-library mode: functions registered at load time with
//! `TVMFFIEnvModRegisterSystemLibSymbol` by a constructor in `.init_array`, found by prefix
//! through the runtime's system-library module (`ffi.SystemLib`), in a shared library loaded
//! into this process and in an executable that links the objects and `libsafecall_runtime.a`
//! statically.

use crate::modules::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use cranelift_object::object::{self, Object, ObjectSection, ObjectSymbol, elf};
use safecall::aot::LinkOptions;
use safecall::lower::LowerOptions;
use safecall_runtime::{Any, AnyView, Module};

fn prefixed(prefix: &str) -> LowerOptions {
    LowerOptions {
        system_lib_prefix: Some(prefix.to_owned()),
        ..Default::default()
    }
}

/// Both system-library objects, built into `dir`.
fn objects(dir: &Path) -> [PathBuf; 2] {
    [
        support::build_object(
            dir,
            "syslib",
            &support::parse_file("syslib.scir"),
            prefixed("sc_sys."),
        ),
        support::build_object(
            dir,
            "syshelpers",
            &support::parse_file("syshelpers.scir"),
            prefixed("sc_helpers."),
        ),
    ]
}

#[test]
fn init_array_entry_is_a_retained_init_array_pointing_at_the_constructor() {
    let dir = support::out_dir("init_array");
    let [syslib, _] = objects(&dir);
    let bytes = std::fs::read(syslib).unwrap();
    let file = object::read::elf::ElfFile64::<object::Endianness>::parse(&*bytes).unwrap();
    let sections: Vec<_> = file
        .sections()
        .filter(|s| s.name() == Ok(".init_array"))
        .collect();
    assert_eq!(sections.len(), 1, "one .init_array section");
    let section = &sections[0];
    let object::SectionFlags::Elf { sh_flags } = section.flags() else {
        panic!("ELF flags")
    };
    assert_eq!(
        section.elf_section_header().sh_type.get(file.endianness()),
        elf::SHT_INIT_ARRAY,
        "the section type makes every linker treat it as an init array"
    );
    let wanted = u64::from(elf::SHF_ALLOC | elf::SHF_WRITE | elf::SHF_GNU_RETAIN);
    assert_eq!(sh_flags & wanted, wanted, "allocated, writable, retained");
    assert_eq!(section.size(), 8, "one pointer");
    let relocations: Vec<_> = section.relocations().collect();
    assert_eq!(relocations.len(), 1);
    let object::RelocationTarget::Symbol(target) = relocations[0].1.target() else {
        panic!("a symbol relocation")
    };
    let symbol = file.symbol_by_index(target).unwrap();
    assert_eq!(symbol.kind(), object::SymbolKind::Text, "points at code");
    // Nothing is exported: functions, getters, the blob and the context are all local.
    for sym in file.symbols() {
        if sym.is_global() && sym.is_definition() {
            panic!("system-library object exports {:?}", sym.name());
        }
    }
}

#[test]
fn shared_system_library_registers_every_function_at_load() {
    let dir = support::out_dir("system_lib_shared");
    let build = |file: &str, name: &str, prefix: &str| {
        support::build_so(
            &dir,
            name,
            &support::parse_file(file),
            prefixed(prefix),
            &LinkOptions::default(),
        )
    };
    let helpers = build("syshelpers.scir", "sc_syshelpers", "sc_helpers.");
    let syslib = build("syslib.scir", "sc_syslib", "sc_sys.");
    for lib in [&helpers, &syslib] {
        let exported = support::run(Command::new("nm").args(["-D", "--defined-only"]).arg(lib));
        assert!(
            !exported.contains("__tvm_ffi"),
            "{} exports TVM-FFI symbols:\n{exported}",
            lib.display()
        );
    }
    Module::register_loader(
        "sc_syslib_prefix",
        |payload| Module::system_lib(std::str::from_utf8(payload).expect("a prefix")),
        false,
    )
    .unwrap();
    for lib in [&helpers, &syslib] {
        // SAFETY: loading the test's own libraries; the constructors register their symbols.
        let handle = unsafe { libloading::Library::new(lib) }.expect("dlopen");
        // System libraries live as long as the process.
        std::mem::forget(handle);
    }
    let sys = Module::system_lib("sc_sys.").unwrap();
    let add = sys.get_function("sys_add").unwrap().expect("registered");
    assert_eq!(
        add.call(&[AnyView::from(41i64)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        42
    );
    let err = add.call(&[AnyView::from(-1i64)]).unwrap_err();
    assert_eq!(
        (err.kind().as_ref(), err.message().as_ref()),
        ("ValueError", "sys_add: x = -1 is negative")
    );
    assert_eq!(
        sys.function_doc("sys_add", false).unwrap().as_deref(),
        Some("x + 1; a ValueError for a negative x.")
    );
    let meta = sys.function_metadata("sys_add", false).unwrap().unwrap();
    assert!(meta.contains("type_schema"), "{meta}");
    assert!(sys.get_function("no_such_function").unwrap().is_none());

    // The import tree came from the blob; the import is the helpers' system library.
    let imports = sys.imports();
    assert_eq!(imports.len(), 1);
    assert_eq!(imports[0], Module::system_lib("sc_helpers.").unwrap());
    let import_call = sys.get_function("sys_import").unwrap().unwrap();
    assert_eq!(
        import_call
            .call(&[AnyView::from(5i64)])
            .unwrap()
            .cast::<i64>()
            .unwrap(),
        15
    );
    let err = import_call.call(&[AnyView::from(-5i64)]).unwrap_err();
    assert_eq!(
        (err.kind().as_ref(), err.message().as_ref()),
        ("KeyError", "triple: no key -5")
    );
    // The same module through the global function.
    let via_global = safecall_runtime::Function::get_global("ffi.SystemLib")
        .unwrap()
        .call(&[Any::from("sc_sys.").view()])
        .unwrap()
        .cast::<Module>()
        .unwrap();
    assert_eq!(via_global, sys);
}

#[test]
fn executable_links_system_library_objects_and_the_static_runtime() {
    let Some(peer) = support::peer("executable_links_system_library", false) else {
        return;
    };
    let dir = support::out_dir("system_lib_exe");
    let objects = objects(&dir);
    let runtime = support::runtime_libdir().join("libsafecall_runtime.a");
    let link = |exe: &Path, linker: Option<&str>| {
        let mut cmd = support::cc();
        cmd.args(["-std=gnu11", "-Wall", "-Werror", "-O1", "-I"])
            .arg(&peer.include)
            .arg(support::sources().join("system_lib_main.c"))
            .args(&objects)
            .arg(&runtime)
            // Unreferenced sections are dropped: the constructors must survive on their own.
            .arg("-Wl,--gc-sections")
            .args([
                "-ldl",
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-lc",
            ])
            .arg("-o")
            .arg(exe);
        if let Some(linker) = linker {
            cmd.arg(format!("-fuse-ld={linker}"));
        }
        support::run(&mut cmd);
    };
    let exe = dir.join("system_lib_main");
    link(&exe, None);
    let mut exes = vec![exe.clone()];
    // gold, when installed, goes by section type rather than name.
    if Command::new("ld.gold").arg("--version").output().is_ok() {
        let gold = dir.join("system_lib_main_gold");
        link(&gold, Some("gold"));
        exes.push(gold);
    }
    // The program depends on no TVM-FFI shared library.
    let needed = support::run(Command::new("readelf").arg("-d").arg(&exe));
    assert!(
        !needed.contains("tvm_ffi") && !needed.contains("safecall"),
        "{needed}"
    );
    for exe in exes {
        let out = support::run(Command::new(&exe).arg("sc_sys."));
        assert_eq!(
            out,
            "module type index 73\n\
             sys_add(41) = 42\n\
             sys_add(-1) raised ValueError: sys_add: x = -1 is negative\n\
             doc: x + 1; a ValueError for a negative x.\n\
             sys_import(5) = 15\n\
             sys_import(-5) raised KeyError: triple: no key -5\n\
             missing function is None: 1\n\
             done\n",
            "{}",
            exe.display()
        );
    }
}
