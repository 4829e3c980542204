//! Kernel parameters from an AMDGPU code object (an HSACO: an ELF64 file for machine
//! `EM_AMDGPU`), read from its metadata note.
//!
//! The facts, from LLVM's AMDGPU usage document ("Code Object V3 to V6 Metadata") and checked
//! against Triton 3.9's gfx942 code objects (tests/kernel_params/README.md):
//! - the metadata is the descriptor of a note of owner `AMDGPU` and type
//!   `NT_AMDGPU_METADATA` (32), a MessagePack map;
//! - its `amdhsa.kernels` is an array with one map per kernel: `.name` (the kernel's name, the
//!   one `hipModuleGetFunction` takes) and `.args`, an array with one map per argument of the
//!   kernel argument segment, each with `.offset`, `.size` and `.value_kind`;
//! - arguments whose value kind starts with `hidden_` are filled by the runtime, not passed by
//!   the caller: they are not part of the table.

use std::collections::BTreeMap;

use object::LittleEndian;
use object::read::elf::{ElfFile64, FileHeader};
use rmpv::Value;

pub use super::value_kind::ValueKind;
use super::{KernelParam, KernelTables, ParamDecl};

/// The note type of the code object metadata.
pub const NT_AMDGPU_METADATA: u32 = 32;
/// The note owner of the code object metadata.
const NOTE_OWNER: &[u8] = b"AMDGPU";

/// The parameters of every kernel of the code object `data`.
pub fn read(data: &[u8]) -> Result<KernelTables, String> {
    let file = ElfFile64::<LittleEndian>::parse(data)
        .map_err(|e| format!("not a little-endian ELF64 file ({e})"))?;
    let header = file.elf_header();
    let machine = header.e_machine.get(LittleEndian);
    if machine != object::elf::EM_AMDGPU {
        return Err(format!(
            "an ELF file for machine {machine}, not AMDGPU ({})",
            object::elf::EM_AMDGPU
        ));
    }
    let metadata = metadata_note(header, data)?;
    let value = rmpv::decode::read_value(&mut &metadata[..])
        .map_err(|e| format!("its metadata note is not MessagePack ({e})"))?;
    kernel_tables(&value)
}

/// The descriptor of the `AMDGPU` metadata note.
fn metadata_note<'d>(
    header: &object::elf::FileHeader64<LittleEndian>,
    data: &'d [u8],
) -> Result<&'d [u8], String> {
    let endian = LittleEndian;
    let segments = header
        .program_headers(endian, data)
        .map_err(|e| format!("its program headers cannot be read ({e})"))?;
    let sections = header
        .sections(endian, data)
        .map_err(|e| format!("its section headers cannot be read ({e})"))?;
    let mut notes = Vec::new();
    for section in sections.iter() {
        if let Ok(Some(it)) = object::read::elf::SectionHeader::notes(section, endian, data) {
            notes.push(it);
        }
    }
    if notes.is_empty() {
        for segment in segments {
            if let Ok(Some(it)) = object::read::elf::ProgramHeader::notes(segment, endian, data) {
                notes.push(it);
            }
        }
    }
    for mut it in notes {
        while let Ok(Some(note)) = it.next() {
            if note.name() == NOTE_OWNER && note.n_type(endian) == NT_AMDGPU_METADATA {
                return Ok(note.desc());
            }
        }
    }
    Err("it has no AMDGPU metadata note (NT_AMDGPU_METADATA)".to_owned())
}

/// `amdhsa.kernels` as tables.
fn kernel_tables(metadata: &Value) -> Result<KernelTables, String> {
    let kernels = field(metadata, "amdhsa.kernels")
        .and_then(Value::as_array)
        .ok_or("its metadata has no `amdhsa.kernels` array")?;
    let mut tables = KernelTables::default();
    for (i, kernel) in kernels.iter().enumerate() {
        let name = field(kernel, ".name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("kernel #{i} of its metadata has no `.name`"))?;
        match kernel_params(kernel) {
            Ok(params) => {
                tables.kernels.insert(name.to_owned(), params);
            }
            Err(why) => {
                tables.unknown.insert(name.to_owned(), why);
            }
        }
    }
    Ok(tables)
}

/// The caller's arguments of one kernel, in argument-segment order.
fn kernel_params(kernel: &Value) -> Result<Vec<KernelParam>, String> {
    let Some(args) = field(kernel, ".args") else {
        // A kernel without arguments has no `.args`.
        return Ok(Vec::new());
    };
    let args = args.as_array().ok_or("its `.args` is not an array")?;
    let mut params = BTreeMap::new();
    for (i, arg) in args.iter().enumerate() {
        let number = |key: &str| {
            field(arg, key)
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| format!("argument #{i} has no `{key}` that fits 32 bits"))
        };
        let kind = field(arg, ".value_kind")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("argument #{i} has no `.value_kind`"))?;
        if kind.starts_with("hidden_") {
            continue;
        }
        let kind = ValueKind::from_name(kind)
            .ok_or_else(|| format!("argument #{i} has the unknown value kind `{kind}`"))?;
        let (offset, size) = (number(".offset")?, number(".size")?);
        if params.insert(offset, (size, kind)).is_some() {
            return Err(format!("two arguments at offset {offset}"));
        }
    }
    Ok(params
        .into_iter()
        .map(|(offset, (size, kind))| KernelParam {
            size,
            decl: ParamDecl::Hsaco { offset, kind },
        })
        .collect())
}

/// The value of `key` in the map `map`.
fn field<'v>(map: &'v Value, key: &str) -> Option<&'v Value> {
    map.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Triton 3.9's `scale` for gfx942 (tests/kernel_params/README.md).
    const SCALE: &[u8] = include_bytes!("../../tests/kernel_params/scale_gfx942.hsaco");

    fn params(tables: &KernelTables, kernel: &str) -> Vec<(u32, u32, ValueKind)> {
        tables.kernels[kernel]
            .iter()
            .map(|p| match p.decl {
                ParamDecl::Hsaco { offset, kind } => (offset, p.size, kind),
                other => panic!("not an HSACO parameter: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn tritons_code_object_lists_its_arguments() {
        use ValueKind::{ByValue, GlobalBuffer};
        let tables = read(SCALE).expect("readable");
        assert_eq!(tables.names(), "scale");
        // x, y, n, a, b, flag, h, big, then Triton's two scratch pointers.
        assert_eq!(
            params(&tables, "scale"),
            [
                (0, 8, GlobalBuffer),
                (8, 8, GlobalBuffer),
                (16, 4, ByValue),
                (20, 4, ByValue),
                (24, 8, ByValue),
                (32, 1, ByValue),
                (34, 2, ByValue),
                (40, 8, ByValue),
                (48, 8, GlobalBuffer),
                (56, 8, GlobalBuffer),
            ]
        );
    }

    /// Seven hand-written kernels in one code object (tests/kernel_params/README.md).
    const KERNELS: &[u8] = include_bytes!("../../tests/kernel_params/kernels_gfx942.hsaco");

    #[test]
    fn every_kernel_of_a_code_object_lists_its_explicit_arguments() {
        use ValueKind::{ByValue, GlobalBuffer};
        let tables = read(KERNELS).expect("readable");
        assert_eq!(
            tables.names(),
            "add_one, empty, halves, scale, staticky, tdm2, tdm3"
        );
        assert!(tables.unknown.is_empty(), "{:?}", tables.unknown);
        assert_eq!(
            params(&tables, "add_one"),
            [(0, 8, GlobalBuffer), (8, 8, GlobalBuffer), (16, 4, ByValue)]
        );
        // p: ptr, a: float, flag: i8, b: double, h: i16, each at its natural alignment.
        assert_eq!(
            params(&tables, "scale"),
            [
                (0, 8, GlobalBuffer),
                (8, 4, ByValue),
                (12, 1, ByValue),
                (16, 8, ByValue),
                (24, 2, ByValue),
            ]
        );
        assert_eq!(params(&tables, "empty"), []);
        assert_eq!(params(&tables, "staticky"), [(0, 8, GlobalBuffer)]);
        // TDM descriptors by value: 48 bytes (rank 2) and 80 (rank 3).
        assert_eq!(
            params(&tables, "tdm2"),
            [(0, 48, ByValue), (48, 4, ByValue)]
        );
        assert_eq!(
            params(&tables, "tdm3"),
            [(0, 80, ByValue), (80, 8, GlobalBuffer)]
        );
        // h: half, g: bfloat, flag: i8, k: half.
        assert_eq!(
            params(&tables, "halves"),
            [
                (0, 2, ByValue),
                (2, 2, ByValue),
                (4, 1, ByValue),
                (6, 2, ByValue)
            ]
        );
    }

    #[test]
    fn other_files_are_refused_with_the_reason() {
        assert!(
            read(b"not an elf")
                .unwrap_err()
                .starts_with("not a little-endian ELF64 file")
        );
        let cubin = include_bytes!("../../tests/kernel_params/scale_sm90.cubin");
        assert_eq!(
            read(cubin).unwrap_err(),
            "an ELF file for machine 190, not AMDGPU (224)"
        );
    }

    #[test]
    fn damaged_code_objects_are_errors_or_tables_never_panics() {
        // Every truncation, and every byte of the file (the metadata note included) set to
        // 0xff in turn: the reader answers each without panicking.
        for len in 0..SCALE.len() {
            let _ = read(&SCALE[..len]);
        }
        let mut damaged = SCALE.to_vec();
        for at in 0..damaged.len() {
            let kept = damaged[at];
            damaged[at] = 0xff;
            let _ = read(&damaged);
            damaged[at] = kept;
        }
    }

    fn kernel(args: Vec<Value>) -> Value {
        Value::Map(vec![
            (".name".into(), "k".into()),
            (".args".into(), Value::Array(args)),
        ])
    }

    fn arg(offset: u64, size: u64, kind: &str) -> Value {
        Value::Map(vec![
            (".offset".into(), offset.into()),
            (".size".into(), size.into()),
            (".value_kind".into(), kind.into()),
        ])
    }

    fn metadata(kernels: Vec<Value>) -> Value {
        Value::Map(vec![("amdhsa.kernels".into(), Value::Array(kernels))])
    }

    #[test]
    fn hidden_arguments_are_the_runtimes_and_not_listed() {
        let m = metadata(vec![kernel(vec![
            arg(0, 8, "global_buffer"),
            arg(8, 4, "by_value"),
            arg(16, 4, "hidden_block_count_x"),
            arg(24, 8, "hidden_global_offset_x"),
        ])]);
        let tables = kernel_tables(&m).unwrap();
        assert_eq!(
            params(&tables, "k"),
            [(0, 8, ValueKind::GlobalBuffer), (8, 4, ValueKind::ByValue)]
        );
    }

    #[test]
    fn a_table_that_cannot_be_read_is_unknown_not_guessed() {
        let m = metadata(vec![kernel(vec![arg(0, 8, "mystery")])]);
        let tables = kernel_tables(&m).unwrap();
        assert_eq!(
            tables.lookup("k"),
            super::super::Lookup::Unknown("argument #0 has the unknown value kind `mystery`")
        );
        let m = metadata(vec![kernel(vec![
            arg(0, 8, "by_value"),
            arg(0, 4, "by_value"),
        ])]);
        assert_eq!(
            kernel_tables(&m).unwrap().unknown["k"],
            "two arguments at offset 0"
        );
        assert_eq!(
            kernel_tables(&Value::Map(vec![])).unwrap_err(),
            "its metadata has no `amdhsa.kernels` array"
        );
    }
}
