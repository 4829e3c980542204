//! Kernel parameters from a cubin (a CUDA ELF64 file): the `EIATTR_KPARAM_INFO` records of
//! each kernel's `.nv.info.NAME` section.
//!
//! The record format is not documented by NVIDIA; the facts used here are those of the
//! open-source parsers VivekPanyam/cudaparsers (`src/cubin.rs`, `NVInfoItem` and its
//! `KParamInfoValue`) and RWTH-OS/cricket (its `EIATTR_*`/`EIFMT_*` constants), checked against
//! `cuobjdump -elf` of ptxas 12.9 sm_90 cubins (tests/kernel_params/README.md):
//! - a section is a sequence of records `u8 format, u8 attribute, ...`, little-endian;
//!   format `EIFMT_NVAL` (1), `EIFMT_BVAL` (2) and `EIFMT_HVAL` (3) records carry a `u16`
//!   value, `EIFMT_SVAL` (4) records a `u16` size and that many bytes;
//! - `EIATTR_KPARAM_INFO` (0x17) is an `SVAL` of 12 bytes: `u32` index, `u16` ordinal, `u16`
//!   offset in the parameter buffer, and a `u32` whose bits 18..32 are the size in bytes
//!   (the low bits hold the pointee's log alignment, the space and the constant bank);
//! - `EIATTR_CBANK_PARAM_SIZE` (0x19) is an `HVAL`: the parameter buffer's size.
//!
//! Newer tools also emit `EIATTR_KPARAM_INFO_V2` (0x45), whose layout is not read here: such
//! a kernel's table is unknown rather than guessed.

use object::read::elf::ElfFile64;
use object::{LittleEndian, Object, ObjectSection};

use super::{KernelParam, KernelTables, ParamDecl, u16_at, u32_at};

const EIFMT_NVAL: u8 = 1;
const EIFMT_BVAL: u8 = 2;
const EIFMT_HVAL: u8 = 3;
const EIFMT_SVAL: u8 = 4;
const EIATTR_KPARAM_INFO: u8 = 0x17;
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const EIATTR_KPARAM_INFO_V2: u8 = 0x45;

/// The prefix of the per-kernel information sections.
const INFO_PREFIX: &str = ".nv.info.";

/// The parameters of every kernel with a `.nv.info.NAME` section in `data`.
pub fn read(data: &[u8]) -> Result<KernelTables, String> {
    let file = ElfFile64::<LittleEndian>::parse(data)
        .map_err(|e| format!("not a little-endian ELF64 file ({e})"))?;
    let machine = file.elf_header().e_machine.get(LittleEndian);
    if machine != object::elf::EM_CUDA {
        return Err(format!(
            "an ELF file for machine {machine}, not CUDA ({})",
            object::elf::EM_CUDA
        ));
    }
    let mut tables = KernelTables::default();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        let Some(kernel) = name.strip_prefix(INFO_PREFIX) else {
            continue;
        };
        let bytes = section
            .data()
            .map_err(|e| format!("section `{name}` cannot be read ({e})"))?;
        match kernel_params(bytes) {
            Ok(params) => {
                tables.kernels.insert(kernel.to_owned(), params);
            }
            Err(why) => {
                tables
                    .unknown
                    .insert(kernel.to_owned(), format!("section `{name}`: {why}"));
            }
        }
    }
    Ok(tables)
}

/// One parameter record: its ordinal and where it lives.
struct Record {
    ordinal: u16,
    offset: u16,
    size: u32,
}

/// The parameters listed by the records of one `.nv.info.NAME` section, in ordinal order.
fn kernel_params(bytes: &[u8]) -> Result<Vec<KernelParam>, String> {
    let mut records = Vec::new();
    let mut buffer_size = None;
    let mut at = 0;
    while at < bytes.len() {
        let (format, attribute) = (bytes[at], bytes.get(at + 1).copied());
        let value =
            u16_at(bytes, at + 2).ok_or_else(|| format!("record at offset {at} is cut off"))?;
        at += 4;
        match (format, attribute) {
            (EIFMT_SVAL, Some(attribute)) => {
                let body = bytes
                    .get(at..at + usize::from(value))
                    .ok_or_else(|| format!("record at offset {} is cut off", at - 4))?;
                at += body.len();
                match attribute {
                    EIATTR_KPARAM_INFO => records.push(kparam_info(body)?),
                    EIATTR_KPARAM_INFO_V2 => {
                        return Err(
                            "it holds EIATTR_KPARAM_INFO_V2 records, which are not read".to_owned()
                        );
                    }
                    _ => {}
                }
            }
            (EIFMT_HVAL, Some(EIATTR_CBANK_PARAM_SIZE)) => buffer_size = Some(value),
            (EIFMT_NVAL | EIFMT_BVAL | EIFMT_HVAL, _) => {}
            (other, _) => {
                return Err(format!(
                    "record at offset {} has the unknown format {other}",
                    at - 4
                ));
            }
        }
    }
    records.sort_by_key(|r| r.ordinal);
    for (i, r) in records.iter().enumerate() {
        if usize::from(r.ordinal) != i {
            return Err(format!(
                "the parameter ordinals are not 0 to {} (found {} at position {i})",
                records.len() - 1,
                r.ordinal
            ));
        }
    }
    let params: Vec<KernelParam> = records
        .iter()
        .map(|r| KernelParam {
            size: r.size,
            decl: ParamDecl::Cubin {
                offset: u32::from(r.offset),
            },
        })
        .collect();
    if let Some(total) = buffer_size {
        let end = super::buffer_size(&params);
        if end > u64::from(total) {
            return Err(format!(
                "the parameters end at byte {end}, past the {total}-byte parameter buffer"
            ));
        }
        if params.is_empty() && total > 0 {
            return Err(format!(
                "a {total}-byte parameter buffer, but no EIATTR_KPARAM_INFO record"
            ));
        }
    }
    Ok(params)
}

/// The body of an `EIATTR_KPARAM_INFO` record.
fn kparam_info(body: &[u8]) -> Result<Record, String> {
    if body.len() != 12 {
        return Err(format!(
            "an EIATTR_KPARAM_INFO record of {} bytes (12 expected)",
            body.len()
        ));
    }
    let field = |at| u16_at(body, at).unwrap_or_default();
    let bits = u32_at(body, 8).unwrap_or_default();
    Ok(Record {
        ordinal: field(4),
        offset: field(6),
        size: bits >> 18,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCALE: &[u8] = include_bytes!("../../tests/kernel_params/scale_sm90.cubin");
    const EMPTY: &[u8] = include_bytes!("../../tests/kernel_params/empty_sm90.cubin");

    fn sizes(t: &KernelTables, kernel: &str) -> Vec<(u32, u32)> {
        t.kernels[kernel]
            .iter()
            .map(|p| match p.decl {
                ParamDecl::Cubin { offset } => (offset, p.size),
                other => panic!("not a cubin's parameter: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn reads_a_triton_cubin() {
        // (ptr, ptr, i32, fp32, fp64, i8, i16, i64) and Triton's two scratch pointers.
        let t = read(SCALE).unwrap();
        assert_eq!(
            sizes(&t, "scale"),
            [
                (0, 8),
                (8, 8),
                (16, 4),
                (20, 4),
                (24, 8),
                (32, 1),
                (34, 2),
                (40, 8),
                (48, 8),
                (56, 8)
            ]
        );
        assert!(t.unknown.is_empty());
        let t = read(EMPTY).unwrap();
        assert_eq!(sizes(&t, "empty"), [(0, 4), (8, 8), (16, 8)]);
    }

    #[test]
    fn damaged_cubins_are_errors_or_unknown_tables() {
        assert!(
            read(b"FAKE")
                .unwrap_err()
                .contains("not a little-endian ELF64 file")
        );
        for n in 0..SCALE.len() {
            // Never a panic; a cut-off file may still read when the cut spares the tables.
            let _ = read(&SCALE[..n]);
        }
        let mut other_machine = SCALE.to_vec();
        other_machine[18] = 62; // EM_X86_64
        assert!(
            read(&other_machine)
                .unwrap_err()
                .contains("machine 62, not CUDA")
        );
    }

    #[test]
    fn records_are_checked() {
        let record = |ordinal: u16, offset: u16, size: u32| {
            let mut r = vec![EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
            r.extend(ordinal.to_le_bytes());
            r.extend(offset.to_le_bytes());
            r.extend((size << 18 | 0x1f000).to_le_bytes());
            r
        };
        let mut two = record(1, 8, 4);
        two.extend(record(0, 0, 8));
        two.extend([EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE, 12, 0]);
        let params = kernel_params(&two).unwrap();
        assert_eq!(
            params.iter().map(|p| p.size).collect::<Vec<_>>(),
            [8, 4],
            "sorted by ordinal"
        );
        let mut gap = record(0, 0, 8);
        gap.extend(record(2, 8, 4));
        assert!(
            kernel_params(&gap)
                .unwrap_err()
                .contains("ordinals are not 0 to 1")
        );
        let mut small = two.clone();
        let n = small.len();
        small[n - 2..].copy_from_slice(&[8, 0]);
        assert!(
            kernel_params(&small)
                .unwrap_err()
                .contains("past the 8-byte")
        );
        let none = [EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE, 8, 0];
        assert!(
            kernel_params(&none)
                .unwrap_err()
                .contains("no EIATTR_KPARAM_INFO")
        );
        let v2 = [EIFMT_SVAL, EIATTR_KPARAM_INFO_V2, 0, 0];
        assert!(kernel_params(&v2).unwrap_err().contains("V2"));
        assert!(
            kernel_params(&[9, 0, 0, 0])
                .unwrap_err()
                .contains("unknown format 9")
        );
        assert!(kernel_params(&two[..14]).unwrap_err().contains("cut off"));
        let short = [EIFMT_SVAL, EIATTR_KPARAM_INFO, 4, 0, 0, 0, 0, 0];
        assert!(kernel_params(&short).unwrap_err().contains("of 4 bytes"));
    }
}
