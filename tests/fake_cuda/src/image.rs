//! Device images as the double reads them: the kernels an image declares, with each kernel's
//! parameter sizes (what a launch record's `args` are cut by) and static shared memory.
//!
//! Two kinds of image, told apart by the ELF magic:
//! - **PTX text** (or any NUL-terminated text holding `.entry NAME(.param ...)` declarations):
//!   read by `parse_entries`, static shared memory from the `.shared ... [BYTES];`
//!   declarations in each kernel's body.
//! - **A cubin** (a 64-bit little-endian ELF, as `ptxas` writes for one architecture). The
//!   driver API passes no length with an image, so the length is where the ELF's last part ends
//!   (its section or program header table, or the furthest section). An ELF whose `e_machine`
//!   is not `EM_CUDA` (190) is invalid, as for the driver. Each kernel has a `.nv.info.NAME`
//!   section: a list of records `u8 format, u8 attribute, ...`; formats 1 to 3 carry a `u16`
//!   value (4 bytes in all), format 4 (`EIFMT_SVAL`) a `u16` byte count and that many bytes.
//!   Attribute 0x17 (`EIATTR_KPARAM_INFO`, an SVAL of 12 bytes) describes one parameter:
//!   `u32 index, u16 ordinal, u16 offset, u32 flags` with the size in bytes in bits 18..31 of
//!   `flags`. The record layout is the one decoded by VivekPanyam/cudaparsers
//!   (`src/cubin.rs`, `NVInfoSvalValue::KParamInfoValue`), and matches what `ptxas` 13 (bundled
//!   with Triton 3.9) writes for Triton kernels: a kernel `(ptr, ptr, i32, f32, i1, ptr, ptr)`
//!   gets ordinals 0..6 with sizes 8, 8, 4, 4, 1, 8, 8 at offsets 0, 8, 16, 20, 24, 32, 40.
//!   Static shared memory is the size of `.nv.shared.NAME` plus the `.nv.shared.reserved.*`
//!   sections (shared memory `ptxas` reserves, e.g. for Hopper's barriers; a cubin of several
//!   kernels counts it for each: the double's approximation).

use std::ffi::{CStr, c_char};

use object::elf::{FileHeader64, SHT_NOBITS};
use object::read::elf::{FileHeader, SectionHeader};
use object::{Endian, Endianness, LittleEndian};

/// A kernel declared by an image.
#[derive(Debug, PartialEq)]
pub(crate) struct ImageKernel {
    pub name: String,
    /// Parameter sizes in bytes, in ordinal order.
    pub params: Vec<usize>,
    /// Static shared memory in bytes.
    pub static_shared: u32,
}

/// What the double read from an image.
pub(crate) struct Image {
    /// A short description for the load record: the first 40 characters of a text image, or
    /// `cubin` for an ELF.
    pub summary: String,
    /// The image's length in bytes (without a text's NUL).
    pub len: usize,
    /// `None` when the image is invalid (it fails to load with `CUDA_ERROR_INVALID_IMAGE`):
    /// a text containing `FAKE_INVALID_IMAGE`, or an ELF whose kernels cannot be read.
    pub kernels: Option<Vec<ImageKernel>>,
}

/// `e_machine` of a cubin.
const EM_CUDA: u16 = 190;
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
/// The size of a 64-bit ELF header.
const ELF64_HEADER: usize = 64;
/// A cubin larger than this is taken for garbage rather than read.
const MAX_CUBIN: u64 = 1 << 30;

/// `EIFMT_SVAL`: a record with a size and a payload.
const EIFMT_SVAL: u8 = 4;
/// `EIATTR_KPARAM_INFO`.
const EIATTR_KPARAM_INFO: u8 = 0x17;
/// The size of a `KPARAM_INFO` payload.
const KPARAM_INFO_LEN: usize = 12;

/// Reads the image a driver call was given.
///
/// # Safety
/// `image` points at a NUL-terminated text or at a complete ELF file (as for the driver).
pub(crate) unsafe fn read(image: *const c_char) -> Image {
    // SAFETY: every image has at least 4 readable bytes or a NUL before them; a text shorter
    // than 4 bytes is read up to its NUL only.
    let head = unsafe { CStr::from_ptr(image) }.to_bytes();
    if head.len() >= ELF_MAGIC.len() && head[..4] == ELF_MAGIC {
        // SAFETY: an ELF image is a complete ELF file.
        return unsafe { read_elf(image.cast()) };
    }
    let text = String::from_utf8_lossy(head).into_owned();
    let kernels = (!text.contains("FAKE_INVALID_IMAGE")).then(|| {
        super::ptx::parse_entries(&text)
            .into_iter()
            .map(|e| ImageKernel {
                name: e.name,
                params: e.params,
                static_shared: e.static_shared,
            })
            .collect()
    });
    Image {
        summary: text.chars().take(40).collect(),
        len: text.len(),
        kernels,
    }
}

/// # Safety
/// `image` points at a complete ELF file.
unsafe fn read_elf(image: *const u8) -> Image {
    // SAFETY: the ELF header is readable; then everything up to the end the header and the
    // section headers give.
    let bytes =
        unsafe { elf_len(image) }.map(|len| unsafe { std::slice::from_raw_parts(image, len) });
    Image {
        summary: "cubin".to_owned(),
        len: bytes.map_or(0, <[u8]>::len),
        kernels: bytes.and_then(cubin_kernels),
    }
}

/// Where a 64-bit little-endian ELF ends: the furthest of its section header table, its
/// program header table (`ptxas` writes it last) and its sections.
///
/// # Safety
/// `image` points at a complete ELF file.
unsafe fn elf_len(image: *const u8) -> Option<usize> {
    // SAFETY: an ELF file has a full header.
    let head = unsafe { std::slice::from_raw_parts(image, ELF64_HEADER) };
    let header = FileHeader64::<Endianness>::parse(head).ok()?;
    let endian = header.endian().ok()?;
    if !endian.is_little_endian() {
        return None;
    }
    let table_end =
        |offset: u64, count: u16, size: u16| offset.checked_add(u64::from(count) * u64::from(size));
    let sections_end = table_end(
        header.e_shoff(endian),
        header.e_shnum(endian),
        header.e_shentsize(endian),
    )?;
    let programs_end = table_end(
        header.e_phoff(endian),
        header.e_phnum(endian),
        header.e_phentsize(endian),
    )?;
    if sections_end > MAX_CUBIN || programs_end > MAX_CUBIN {
        return None;
    }
    // SAFETY: the section header table lies inside the file.
    let upto_table = unsafe { std::slice::from_raw_parts(image, sections_end as usize) };
    let sections = header.section_headers(endian, upto_table).ok()?;
    let mut end = sections_end.max(programs_end).max(ELF64_HEADER as u64);
    for s in sections {
        if s.sh_type(endian) != SHT_NOBITS {
            end = end.max(s.sh_offset(endian).checked_add(s.sh_size(endian))?);
        }
    }
    (end <= MAX_CUBIN).then_some(end as usize)
}

/// The kernels of a cubin: one per `.nv.info.NAME` section. `None` when the ELF or a kernel's
/// parameter table cannot be read.
pub(crate) fn cubin_kernels(bytes: &[u8]) -> Option<Vec<ImageKernel>> {
    let header = FileHeader64::<LittleEndian>::parse(bytes).ok()?;
    let endian = LittleEndian;
    // A real driver refuses an ELF for another machine than CUDA's (`CUDA_ERROR_INVALID_IMAGE`).
    if header.e_machine(endian) != EM_CUDA {
        return None;
    }
    let sections = header.sections(endian, bytes).ok()?;
    let mut shared = Vec::new();
    let mut reserved = 0u64;
    let mut infos = Vec::new();
    for s in sections.iter() {
        let name = std::str::from_utf8(sections.section_name(endian, s).ok()?).ok()?;
        if let Some(kernel) = name.strip_prefix(".nv.info.") {
            infos.push((kernel.to_owned(), s.data(endian, bytes).ok()?));
        } else if name.starts_with(".nv.shared.reserved.") {
            reserved += s.sh_size(endian);
        } else if let Some(kernel) = name.strip_prefix(".nv.shared.") {
            shared.push((kernel.to_owned(), s.sh_size(endian)));
        }
    }
    infos
        .into_iter()
        .map(|(name, info)| {
            let own = shared
                .iter()
                .find(|(k, _)| *k == name)
                .map_or(0, |(_, size)| *size);
            Some(ImageKernel {
                params: kparam_sizes(info)?,
                static_shared: u32::try_from(own + reserved).ok()?,
                name,
            })
        })
        .collect()
}

/// Parameter sizes from a `.nv.info.NAME` section's `EIATTR_KPARAM_INFO` records, by ordinal;
/// `None` when a record is cut short or the ordinals are not 0..n, each once.
fn kparam_sizes(info: &[u8]) -> Option<Vec<usize>> {
    let mut params: Vec<(u16, usize)> = Vec::new();
    let mut rest = info;
    while !rest.is_empty() {
        let [format, attribute, a, b, ..] = *rest else {
            return None;
        };
        let value = u16::from_le_bytes([a, b]) as usize;
        if format != EIFMT_SVAL {
            rest = &rest[4..];
            continue;
        }
        let payload = rest.get(4..4 + value)?;
        rest = &rest[4 + value..];
        if attribute == EIATTR_KPARAM_INFO {
            if payload.len() != KPARAM_INFO_LEN {
                return None;
            }
            let ordinal = u16::from_le_bytes([payload[4], payload[5]]);
            let flags = u32::from_le_bytes([payload[8], payload[9], payload[10], payload[11]]);
            params.push((ordinal, ((flags >> 18) & 0x3fff) as usize));
        }
    }
    params.sort_unstable();
    params
        .iter()
        .enumerate()
        .all(|(i, (ordinal, _))| usize::from(*ordinal) == i)
        .then(|| params.into_iter().map(|(_, size)| size).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `KPARAM_INFO` record (format 4, attribute 0x17, 12 bytes).
    fn kparam(ordinal: u16, offset: u16, size: u32) -> Vec<u8> {
        let mut r = vec![EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
        r.extend(ordinal.to_le_bytes());
        r.extend(offset.to_le_bytes());
        r.extend((0x1f000 | (size << 18)).to_le_bytes());
        r
    }

    #[test]
    fn kparam_records_give_sizes_by_ordinal_among_other_records() {
        // As ptxas writes them: other records around, parameters from the last ordinal down.
        let mut info = vec![4, 0x37, 4, 0, 0x86, 0, 0, 0];
        info.extend(kparam(2, 12, 1));
        info.extend([3, 0x1b, 0xff, 0]);
        info.extend(kparam(1, 8, 4));
        info.extend(kparam(0, 0, 8));
        info.extend([2, 0x6d, 0, 0]);
        assert_eq!(kparam_sizes(&info), Some(vec![8, 4, 1]));
        assert_eq!(kparam_sizes(&[3, 0x1b, 0xff, 0]), Some(vec![]));
    }

    #[test]
    fn unreadable_parameter_tables_are_refused() {
        let mut gap = kparam(0, 0, 8);
        gap.extend(kparam(2, 8, 8));
        assert_eq!(kparam_sizes(&gap), None, "ordinal 1 is missing");
        let cut = kparam(0, 0, 8);
        assert_eq!(kparam_sizes(&cut[..10]), None, "a record cut short");
        assert_eq!(kparam_sizes(&[3, 0x1b]), None, "a header cut short");
    }

    #[test]
    fn a_text_image_is_read_up_to_its_nul() {
        let image = read_text(c".entry k(.param .u64 p, .param .u8 b)");
        assert_eq!(image.summary, ".entry k(.param .u64 p, .param .u8 b)");
        let kernels = image.kernels.expect("valid");
        assert_eq!(
            (kernels[0].name.as_str(), kernels[0].params.as_slice()),
            ("k", &[8, 1][..])
        );
        assert!(read_text(c"FAKE_INVALID_IMAGE").kernels.is_none());
    }

    /// A minimal cubin-shaped ELF: kernel `k` with parameters of 8 and 4 bytes, 100 bytes of
    /// its own static shared memory and 1024 reserved, and (as `ptxas` writes it) the program
    /// header table after the section header table, at the very end.
    fn synthetic_cubin() -> Vec<u8> {
        let names = b"\0.shstrtab\0.nv.info.k\0.nv.shared.k\0.nv.shared.reserved.0\0";
        let mut info = kparam(1, 8, 4);
        info.extend(kparam(0, 0, 8));
        let (names_at, info_at) = (64u64, 64 + names.len() as u64);
        let shoff = info_at + info.len() as u64;
        // (name offset, type, offset, size): null, .shstrtab, .nv.info.k, two NOBITS sections.
        let sections: [(u32, u32, u64, u64); 5] = [
            (0, 0, 0, 0),
            (1, 3, names_at, names.len() as u64),
            (11, 0x7000_0000, info_at, info.len() as u64),
            (22, 8, shoff, 100),
            (35, 8, shoff, 1024),
        ];
        let phoff = shoff + 64 * sections.len() as u64;
        let mut elf = vec![
            0x7f, b'E', b'L', b'F', 2, 1, 1, 0x33, 7, 0, 0, 0, 0, 0, 0, 0,
        ];
        elf.extend(2u16.to_le_bytes()); // e_type
        elf.extend(190u16.to_le_bytes()); // e_machine: EM_CUDA
        elf.extend(1u32.to_le_bytes());
        elf.extend(0u64.to_le_bytes()); // e_entry
        elf.extend(phoff.to_le_bytes());
        elf.extend(shoff.to_le_bytes());
        elf.extend(0u32.to_le_bytes()); // e_flags
        for half in [64u16, 56, 1, 64, sections.len() as u16, 1] {
            elf.extend(half.to_le_bytes()); // ehsize, phentsize, phnum, shentsize, shnum, shstrndx
        }
        elf.extend(names);
        elf.extend(&info);
        for (name, kind, offset, size) in sections {
            elf.extend(name.to_le_bytes());
            elf.extend(kind.to_le_bytes());
            elf.extend([0u64, 0, offset, size].iter().flat_map(|v| v.to_le_bytes()));
            elf.extend([0u32, 0].iter().flat_map(|v| v.to_le_bytes()));
            elf.extend([1u64, 0].iter().flat_map(|v| v.to_le_bytes()));
        }
        elf.extend([0u8; 56]); // one program header
        elf
    }

    #[test]
    fn a_cubin_is_read_to_its_end_with_its_kernels() {
        let cubin = synthetic_cubin();
        // SAFETY: a complete ELF file.
        let image = unsafe { read(cubin.as_ptr().cast()) };
        assert_eq!((image.summary.as_str(), image.len), ("cubin", cubin.len()));
        let expected = ImageKernel {
            name: "k".to_owned(),
            params: vec![8, 4],
            static_shared: 1124,
        };
        assert_eq!(image.kernels, Some(vec![expected]));
        let mut cut = cubin.clone();
        let record = kparam(1, 8, 4);
        let at = cubin
            .windows(record.len())
            .position(|w| w == record)
            .expect("in the cubin");
        cut[at + 8] = 9; // ordinal 1 becomes 9: the table cannot be read
        assert_eq!(cubin_kernels(&cut), None);
    }

    #[test]
    fn an_elf_for_another_machine_is_an_invalid_image() {
        let mut elf = synthetic_cubin();
        elf[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        assert_eq!(cubin_kernels(&elf), None);
    }

    fn read_text(text: &CStr) -> Image {
        // SAFETY: a NUL-terminated text.
        unsafe { read(text.as_ptr()) }
    }
}
