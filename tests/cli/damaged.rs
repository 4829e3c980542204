//! Damaged libraries (a fresh `safecall build`, then bytes flipped, a word replaced, a range
//! cut, code overwritten): `inspect` and `run --preload` report each with exit code 4 and a
//! message naming what is wrong, and never crash or hang themselves. What the file says is
//! still shown when loading crashes.

use cranelift_object::object::{self, Object, ObjectSection, ObjectSymbol, elf};

use super::support::{Dir, Run};

/// `add_one.scir` built as `add_one.so`: its bytes.
fn fresh_library(dir: &Dir) -> Vec<u8> {
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&["build", &file, "-o", "add_one.so"])
        .expect(0);
    std::fs::read(dir.path("add_one.so")).expect("the built library")
}

/// The file range of the section `name`.
fn section_range(bytes: &[u8], name: &str) -> (usize, usize) {
    let file = object::File::parse(bytes).expect("an ELF file");
    let section = file
        .section_by_name(name)
        .unwrap_or_else(|| panic!("a {name} section"));
    let (offset, size) = section.file_range().expect("bytes in the file");
    (offset as usize, size as usize)
}

/// The file offset of the code of the dynamic symbol `name`.
fn symbol_offset(bytes: &[u8], name: &str) -> usize {
    let file = object::File::parse(bytes).expect("an ELF file");
    let sym = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("the symbol {name}"));
    let section = file
        .section_by_index(sym.section_index().expect("a defined symbol"))
        .expect("its section");
    (sym.address() - section.address() + section.file_range().expect("in the file").0) as usize
}

/// The file offset of the value of the first dynamic entry with `tag`.
fn dynamic_value_offset(bytes: &[u8], tag: i64) -> usize {
    let (offset, size) = section_range(bytes, ".dynamic");
    (offset..offset + size)
        .step_by(16)
        .find(|&at| i64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) == tag)
        .map(|at| at + 8)
        .unwrap_or_else(|| panic!("dynamic tag {tag}"))
}

/// Writes `bytes` as `name` and runs `safecall inspect name` with `extra` options.
fn inspect(dir: &Dir, name: &str, bytes: &[u8], extra: &[&str]) -> Run {
    std::fs::write(dir.path(name), bytes).expect("write the damaged copy");
    let mut args = vec!["inspect"];
    args.extend_from_slice(extra);
    args.push(name);
    dir.safecall(&args)
}

#[test]
fn flipped_bytes_in_a_relocation_are_found_before_loading() {
    let dir = Dir::new("damaged_flip");
    let mut bytes = fresh_library(&dir);
    // The top byte of the first relocation's target address.
    let (rela, _) = section_range(&bytes, ".rela.dyn");
    bytes[rela + 7] ^= 0x40;
    let out = inspect(&dir, "flipped.so", &bytes, &[]).expect(4);
    let target = u64::from_le_bytes(bytes[rela..rela + 8].try_into().unwrap());
    assert_eq!(
        out.stderr,
        format!(
            "error: flipped.so is damaged: relocation 0 of DT_RELA: it writes at 0x{target:x}, \
             in no loaded segment\n  it was not loaded: none of its code ran\n"
        )
    );
    // What the file says is shown all the same.
    assert!(
        out.stdout.contains(
            "  not loaded: the file is damaged (see the error)\n\nfunctions (1):\n  add_one\n"
        ),
        "{}",
        out.stdout
    );
    // --no-load reads the file only, and finds the same damage.
    inspect(&dir, "flipped.so", &bytes, &["--no-load"]).expect(4);
}

#[test]
fn a_replaced_word_in_the_dynamic_section_is_found_before_loading() {
    let dir = Dir::new("damaged_word");
    let mut bytes = fresh_library(&dir);
    let at = dynamic_value_offset(&bytes, elf::DT_STRTAB);
    bytes[at..at + 8].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
    let out = inspect(&dir, "word.so", &bytes, &[]).expect(4);
    assert_eq!(
        out.stderr,
        "error: word.so is damaged: the dynamic section's DT_STRTAB (0x7fff0000) is in no \
         loaded segment\n  it was not loaded: none of its code ran\n"
    );

    // A GNU hash table without buckets would make the loader divide by zero.
    let mut bytes = fresh_library(&dir);
    let (hash, _) = section_range(&bytes, ".gnu.hash");
    bytes[hash..hash + 4].copy_from_slice(&0u32.to_le_bytes());
    let out = inspect(&dir, "hash.so", &bytes, &[]).expect(4);
    assert_eq!(
        out.stderr,
        format!(
            "error: hash.so is damaged: the GNU hash table (DT_GNU_HASH 0x{hash:x}): no \
             buckets\n  it was not loaded: none of its code ran\n"
        )
    );
}

#[test]
fn a_cut_range_is_found_before_loading() {
    let dir = Dir::new("damaged_cut");
    let original = fresh_library(&dir);
    // 0x100 bytes cut out of the code, the section header offset moved with them so that the
    // headers still parse: everything after the cut (the dynamic section among it) is read
    // 0x100 bytes off.
    let (text, _) = section_range(&original, ".text");
    let mut bytes = original.clone();
    bytes.drain(text + 0x10..text + 0x110);
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) - 0x100;
    bytes[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    let out = inspect(&dir, "cut.so", &bytes, &[]).expect(4);
    assert!(
        out.stderr.starts_with("error: cut.so is damaged: ")
            && out
                .stderr
                .ends_with("\n  it was not loaded: none of its code ran\n"),
        "{}",
        out.stderr
    );

    // The end cut off (the section headers with it): not an ELF file any more.
    let out = inspect(&dir, "short.so", &original[..original.len() / 2], &[]).expect(4);
    assert!(
        out.stderr
            .starts_with("error: `short.so` is not a library: not an object file: "),
        "{}",
        out.stderr
    );
}

/// Machine code that reads address 0 (SIGSEGV).
#[cfg(target_arch = "x86_64")]
const CRASH: &[u8] = &[0x31, 0xc0, 0x8b, 0x00]; // xor eax, eax; mov eax, [rax]
#[cfg(target_arch = "aarch64")]
const CRASH: &[u8] = &[0x00, 0x00, 0x80, 0xd2, 0x00, 0x00, 0x40, 0xf9]; // mov x0, 0; ldr x0, [x0]

/// Machine code that jumps to itself.
#[cfg(target_arch = "x86_64")]
const SPIN: &[u8] = &[0xeb, 0xfe]; // jmp .
#[cfg(target_arch = "aarch64")]
const SPIN: &[u8] = &[0x00, 0x00, 0x00, 0x14]; // b .

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn damaged_code_that_crashes_when_loaded_is_reported_after_what_the_file_says() {
    let dir = Dir::new("damaged_crash");
    let original = fresh_library(&dir);

    // The metadata getter's code, which inspect calls.
    let mut bytes = original.clone();
    let at = symbol_offset(&bytes, "__tvm_ffi__metadata_add_one");
    bytes[at..at + CRASH.len()].copy_from_slice(CRASH);
    let out = inspect(&dir, "getter.so", &bytes, &[]).expect(4);
    assert_eq!(
        out.stderr,
        "error: loading getter.so crashed (SIGSEGV): the library is damaged or not a TVM-FFI \
         library\n"
    );
    assert!(
        out.stdout.starts_with(
            "getter.so: shared library, x86_64\n  not loaded (loading crashed (SIGSEGV)): no \
             signatures or docs\n\nfunctions (1):\n  add_one\n"
        ) || !cfg!(target_arch = "x86_64"),
        "{}",
        out.stdout
    );
    let out = inspect(&dir, "getter.so", &bytes, &["--json"]).expect(4);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(v["loaded"], false);
    assert_eq!(v["functions"][0]["name"], "add_one");

    // `_init` (from the C compiler's start files), which the loader calls when it loads the
    // library.
    let file = dir.copy("examples/ir/add_one.scir");
    dir.safecall(&["build", &file, "-o", "cc.so", "--linker", "cc"])
        .expect(0);
    let mut bytes = std::fs::read(dir.path("cc.so")).expect("the built library");
    let (init, _) = section_range(&bytes, ".init");
    bytes[init..init + CRASH.len()].copy_from_slice(CRASH);
    let out = inspect(&dir, "init.so", &bytes, &[]).expect(4);
    assert_eq!(
        out.stderr,
        "error: loading init.so crashed (SIGSEGV): the library is damaged or not a TVM-FFI \
         library\n"
    );

    // `run --preload` loads it in a child first, and stops there.
    let file = dir.copy("examples/ir/add_one.scir");
    let out = dir
        .safecall(&[
            "run",
            "--preload",
            "init.so",
            &file,
            "add_one",
            "float32[2]",
            "float32[2]",
        ])
        .expect(4);
    assert_eq!(
        out.stderr,
        "error: loading init.so crashed (SIGSEGV): the library is damaged or not a TVM-FFI \
         library\n"
    );
    // And refuses a file that fails the checks without loading it.
    let mut bytes = original;
    let at = dynamic_value_offset(&bytes, elf::DT_SYMTAB);
    bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(dir.path("symtab.so"), &bytes).unwrap();
    let out = dir
        .safecall(&[
            "run",
            "--preload",
            "symtab.so",
            &file,
            "add_one",
            "float32[2]",
            "float32[2]",
        ])
        .expect(4);
    assert_eq!(
        out.stderr,
        "error: symtab.so is damaged: the dynamic section's DT_SYMTAB (0xffffffffffffffff) is \
         in no loaded segment\n  it was not loaded: none of its code ran\n"
    );
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn damaged_code_that_hangs_is_stopped_at_the_time_limit() {
    let dir = Dir::new("damaged_hang");
    let mut bytes = fresh_library(&dir);
    let at = symbol_offset(&bytes, "__tvm_ffi__doc_add_one");
    bytes[at..at + SPIN.len()].copy_from_slice(SPIN);
    let out = inspect(&dir, "spin.so", &bytes, &["--load-timeout", "0.5"]).expect(4);
    assert_eq!(
        out.stderr,
        "error: loading spin.so did not finish within 0.5 s and was stopped: the library hangs \
         in its initializers or its getters\n"
    );
    assert!(
        out.stdout.contains(
            "  not loaded (loading did not finish within 0.5 s): no signatures or docs\n"
        ),
        "{}",
        out.stdout
    );
}

#[test]
fn an_intact_library_is_loaded_in_the_child_and_shows_its_signature() {
    let dir = Dir::new("damaged_none");
    let bytes = fresh_library(&dir);
    let out = inspect(&dir, "intact.so", &bytes, &[]).expect(0);
    assert_eq!(out.stderr, "");
    assert!(
        out.stdout
            .contains("  add_one(x: Tensor, y: Tensor) -> None\n"),
        "{}",
        out.stdout
    );
}
