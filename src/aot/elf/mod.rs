//! The in-process linker: a shared library from one relocatable object of ours, with no C
//! compiler or system linker.
//!
//! **Why our own, and not a linker crate.** `libwild` 0.10 (the Wild linker as a library)
//! builds here with Rust 1.95 and links our objects, but it is a whole general-purpose linker:
//! about 60 000 lines, 121 crates to compile (rayon, tracing, blake3, sha2, serde_yaml, a
//! symbol demangler, a second `object` version; zstd's C library by default), about 5 minutes
//! of CPU for a release build here, and 6.9 MB of stripped binary for a program that only
//! calls it. Its entry point parses a linker command line, reads its inputs through a file
//! system and runs in a rayon pool. Our input is much smaller: one object from one of two
//! backends we control, with a fixed set of relocation kinds ([`relocs`]), no archives, no
//! COMDAT, no TLS, no version scripts. So this module writes the library with the `object`
//! crate's ELF writer (the `object` 0.39 that cranelift-object already builds: no new
//! crate), in about 1 700 lines; it adds about 40 KB of code to the `safecall` binary and a
//! few seconds to the crate's build.
//!
//! The library it writes:
//! - three `PT_LOAD` segments (read-only headers, tables, data and `.eh_frame`; code and the
//!   import stubs; writable `.init_array`, `.dynamic`, `.got`, `.data`, `.bss`), aligned for
//!   64 KiB pages on AArch64 and 4 KiB on x86-64, without padding the file;
//! - `.dynsym`/`.dynstr`/`.gnu.hash` with the object's defined global symbols of default
//!   visibility (the `__tvm_ffi_*` functions and data) and the undefined symbols it uses,
//!   which the dynamic loader resolves from whatever the process has loaded;
//! - a GOT entry per symbol whose address is loaded through the GOT, with `GLOB_DAT` for
//!   imports and `RELATIVE` for our own symbols (bound locally), and a 16-byte stub per
//!   imported function that is called directly (`jmp *GOT` / `adrp; ldr; br`); no lazy
//!   binding (`DF_BIND_NOW`, `DF_1_NOW`), no text relocations (an absolute pointer outside
//!   writable data is an error);
//! - `.init_array` (the system-library registration constructor) with `RELATIVE` entries;
//! - `.eh_frame` with a `.eh_frame_hdr` and `PT_GNU_EH_FRAME`, `PT_GNU_STACK` (not
//!   executable), `PT_GNU_RELRO` over `.init_array`, `.dynamic` and `.got`;
//! - `DT_SONAME` (the output's file name), `DT_NEEDED` of libc when the code imports libc's
//!   functions (GPU launches), optionally `DT_NEEDED` + `DT_RUNPATH` of safecall-runtime;
//! - a static `.symtab` (local symbols too, such as a system library's `__tvm_ffi__library_bin`).
//!
//! Left out, compared with `cc`: symbol versions (libc's functions are bound unversioned, to
//! the default version), `.note.gnu.build-id`, the C start files (`_init`/`_fini`,
//! `__cxa_finalize` registration) and lazy binding (everything is bound at load, as `-z now`
//! asks anyway).

mod eh_frame_hdr;
mod input;
mod out;
mod relocs;
mod resolve;
mod settings;
#[cfg(test)]
mod tests;
mod write;

pub(crate) use settings::Settings;

/// Links the relocatable object `object` into the bytes of a shared library; an error names
/// what in the object could not be linked.
pub(crate) fn link(object: &[u8], settings: &Settings) -> Result<Vec<u8>, String> {
    let input = input::read(object)?;
    write::write(input, settings)
}
