//! Device images as the double reads them: the kernels of a code object, each with its explicit
//! arguments' sizes (what a launch record's `args` are cut by) and what `hipFuncGetAttribute`
//! reports.
//!
//! Three kinds of image, told apart by their first bytes (`hipModuleLoadData` passes no length,
//! so each kind's length comes from its own headers):
//! - **a code object**: a 64-bit little-endian ELF (`EM_AMDGPU`); its length is where its last
//!   part ends (section or program header table, or the furthest section or segment). One for
//!   another processor than the devices' (`e_flags`; gfx942 unless the thread chose another:
//!   `runtime::ARCHS`) is `hipErrorNoBinaryForGpu`. Its metadata note
//!   (`NT_AMDGPU_METADATA`, MessagePack) lists the kernels: `.name`, `.args` (the explicit ones
//!   are those whose `.value_kind` does not start with `hidden_`; the runtime fills the
//!   others), `.group_segment_fixed_size` (static LDS), `.private_segment_fixed_size`,
//!   `.vgpr_count` and `.max_flat_workgroup_size`.
//! - **a clang offload bundle** (`__CLANG_OFFLOAD_BUNDLE__`): the double loads the first entry
//!   whose target fits its devices: a `hip`/`hipv4` entry for `amdgcn-amd-amdhsa` whose target
//!   id is the devices' processor (`gfx942`), with no feature or only the devices' own (`sramecc+`, `xnack-`), as
//!   `hipv4-amdgcn-amd-amdhsa--gfx942` or `hipv4-amdgcn-amd-amdhsa--gfx942:xnack-`. None fits:
//!   `hipErrorNoBinaryForGpu`.
//! - anything else (read up to its first NUL): `hipErrorInvalidImage`.
//!
//! Any image containing the bytes `FAKE_INVALID_IMAGE` is `hipErrorInvalidImage`, and so is a
//! code object whose headers or metadata cannot be read.

use std::ffi::CStr;

use object::LittleEndian;
use object::elf::{FileHeader64, SHT_NOBITS};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use rmpv::Value;

use super::abi::{self, HipError, hipErrorInvalidImage, hipErrorNoBinaryForGpu};

/// What `hipFuncGetAttribute` reports of a kernel (from its metadata).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct KernelInfo {
    /// `.group_segment_fixed_size`: static LDS in bytes.
    pub static_lds: u32,
    /// `.private_segment_fixed_size`: scratch per work-item in bytes.
    pub private_size: u32,
    /// `.vgpr_count`.
    pub vgprs: u32,
    /// `.max_flat_workgroup_size`.
    pub max_threads: u32,
}

/// A kernel of a code object.
#[derive(Debug, PartialEq)]
pub(crate) struct ImageKernel {
    pub name: String,
    /// Explicit argument sizes in bytes, in argument order.
    pub params: Vec<usize>,
    pub info: KernelInfo,
}

/// What the double read from an image.
pub(crate) struct Image {
    /// `code object`, `offload bundle` or `other`, for the load record.
    pub kind: &'static str,
    /// The image's length in bytes, as its headers give it (0 when they cannot be read).
    pub len: usize,
    /// Its kernels, or the error loading it returns.
    pub kernels: Result<Vec<ImageKernel>, HipError>,
}

const ELF_MAGIC: &[u8] = b"\x7fELF";
/// The size of an ELF64 header.
const ELF64_HEADER: usize = 64;
/// An image larger than this is taken for garbage rather than read.
const MAX_IMAGE: u64 = 1 << 30;
/// More bundle entries or a longer entry id than this is taken for garbage.
const MAX_ENTRIES: u64 = 1024;
const MAX_ID: u64 = 4096;
const INVALID_MARK: &[u8] = b"FAKE_INVALID_IMAGE";

/// Reads the image a `hipModuleLoadData` call was given.
///
/// # Safety
/// `image` is null or points at a complete image (as for HIP): a code object, an offload
/// bundle, or NUL-terminated bytes.
pub(crate) unsafe fn read(image: *const u8) -> Image {
    if image.is_null() {
        let kernels = Err(abi::hipErrorInvalidValue);
        return Image {
            kind: "other",
            len: 0,
            kernels,
        };
    }
    // SAFETY: both magics are free of NUL bytes, so an image that starts with one is read no
    // further than its own first NUL, and any other image is NUL-terminated.
    let head = unsafe { CStr::from_ptr(image.cast()) }.to_bytes();
    let (kind, len) = if head.starts_with(ELF_MAGIC) {
        // SAFETY: an ELF image is a complete code object.
        ("code object", unsafe { elf_len(image) })
    } else if head.starts_with(abi::OFFLOAD_BUNDLE_MAGIC) {
        // SAFETY: a bundle is complete.
        ("offload bundle", unsafe { bundle_len(image) })
    } else {
        ("other", Some(head.len()))
    };
    let Some(len) = len else {
        return Image {
            kind,
            len: 0,
            kernels: Err(hipErrorInvalidImage),
        };
    };
    // SAFETY: `len` is the image's length as its own headers give it.
    let bytes = unsafe { std::slice::from_raw_parts(image, len) };
    let kernels = if bytes.windows(INVALID_MARK.len()).any(|w| w == INVALID_MARK) {
        Err(hipErrorInvalidImage)
    } else if kind == "code object" {
        code_object(bytes)
    } else if kind == "offload bundle" {
        bundle_entry(bytes).and_then(code_object)
    } else {
        Err(hipErrorInvalidImage)
    };
    Image { kind, len, kernels }
}

/// Where a code object ends: the furthest of its header tables, sections and segments.
///
/// # Safety
/// `image` points at a complete ELF file.
unsafe fn elf_len(image: *const u8) -> Option<usize> {
    let e = LittleEndian;
    // SAFETY: an ELF file has a whole header.
    let head = unsafe { std::slice::from_raw_parts(image, ELF64_HEADER) };
    let h = FileHeader64::<LittleEndian>::parse(head).ok()?;
    let table =
        |offset: u64, count: u16, size: u16| offset.checked_add(u64::from(count) * u64::from(size));
    let tables = table(h.e_shoff.get(e), h.e_shnum.get(e), h.e_shentsize.get(e))?
        .max(table(
            h.e_phoff.get(e),
            h.e_phnum.get(e),
            h.e_phentsize.get(e),
        )?)
        .max(ELF64_HEADER as u64);
    if tables > MAX_IMAGE {
        return None;
    }
    // SAFETY: both header tables lie inside the file.
    let data = unsafe { std::slice::from_raw_parts(image, tables as usize) };
    let mut end = tables;
    for s in h.section_headers(e, data).ok()? {
        if s.sh_type(e) != SHT_NOBITS {
            end = end.max(s.sh_offset(e).checked_add(s.sh_size(e))?);
        }
    }
    for p in h.program_headers(e, data).ok()? {
        end = end.max(p.p_offset(e).checked_add(p.p_filesz(e))?);
    }
    (end <= MAX_IMAGE).then_some(end as usize)
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let b = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// Where an offload bundle ends: after its entry table and its furthest entry.
///
/// # Safety
/// `image` points at a complete offload bundle.
unsafe fn bundle_len(image: *const u8) -> Option<usize> {
    // SAFETY: a bundle's header and entry table are readable, in the order they are read.
    let peek = |at: usize, n: usize| unsafe { std::slice::from_raw_parts(image.add(at), n) };
    let magic = abi::OFFLOAD_BUNDLE_MAGIC.len();
    let count = u64_at(peek(magic, 8), 0)?;
    if count > MAX_ENTRIES {
        return None;
    }
    let (mut at, mut end) = (magic + 8, 0u64);
    for _ in 0..count {
        let entry = peek(at, 24);
        let (offset, size, id_len) = (u64_at(entry, 0)?, u64_at(entry, 8)?, u64_at(entry, 16)?);
        if id_len > MAX_ID {
            return None;
        }
        at += 24 + id_len as usize;
        end = end.max(offset.checked_add(size)?);
    }
    let len = end.max(at as u64);
    (len <= MAX_IMAGE).then_some(len as usize)
}

/// The code object of the first bundle entry whose target fits the double's devices.
fn bundle_entry(bundle: &[u8]) -> Result<&[u8], HipError> {
    let invalid = hipErrorInvalidImage;
    let magic = abi::OFFLOAD_BUNDLE_MAGIC.len();
    let count = u64_at(bundle, magic).ok_or(invalid)?;
    let mut at = magic + 8;
    for _ in 0..count {
        let field = |i: usize| u64_at(bundle, at + 8 * i).ok_or(invalid);
        let (offset, size, id_len) = (field(0)?, field(1)?, field(2)? as usize);
        let id = bundle.get(at + 24..at + 24 + id_len).ok_or(invalid)?;
        at += 24 + id_len;
        if fits(&String::from_utf8_lossy(id)) {
            let start = usize::try_from(offset).map_err(|_| invalid)?;
            let end = start.checked_add(size as usize).ok_or(invalid)?;
            return bundle.get(start..end).ok_or(invalid);
        }
    }
    Err(hipErrorNoBinaryForGpu)
}

/// Whether a bundle entry id names code for the double's devices.
pub(crate) fn fits(id: &str) -> bool {
    const TRIPLE: &str = "amdgcn-amd-amdhsa-";
    let Some(at) = id.find(TRIPLE) else {
        return false;
    };
    if !id.starts_with("hip") {
        return false;
    }
    let mut target = id[at + TRIPLE.len()..].trim_start_matches('-').split(':');
    let mut device = super::runtime::arch().name.split(':');
    let processor = device.next();
    let device_features: Vec<&str> = device.collect();
    target.next() == processor && target.all(|f| device_features.contains(&f))
}

/// The kernels of a code object for the devices' processor.
pub(crate) fn code_object(data: &[u8]) -> Result<Vec<ImageKernel>, HipError> {
    let e = LittleEndian;
    let h = FileHeader64::<LittleEndian>::parse(data).map_err(|_| hipErrorInvalidImage)?;
    if h.e_machine.get(e) != object::elf::EM_AMDGPU {
        return Err(hipErrorInvalidImage);
    }
    if h.e_flags.get(e) & abi::EF_AMDGPU_MACH != super::runtime::arch().mach {
        return Err(hipErrorNoBinaryForGpu);
    }
    let note = metadata_note(h, data).ok_or(hipErrorInvalidImage)?;
    let metadata = rmpv::decode::read_value(&mut &note[..]).map_err(|_| hipErrorInvalidImage)?;
    kernels(&metadata).ok_or(hipErrorInvalidImage)
}

/// The descriptor of the `AMDGPU` metadata note (from the sections, else the segments).
fn metadata_note<'d>(h: &FileHeader64<LittleEndian>, data: &'d [u8]) -> Option<&'d [u8]> {
    let e = LittleEndian;
    let mut notes = Vec::new();
    for s in h.section_headers(e, data).ok()? {
        notes.extend(s.notes(e, data).ok().flatten());
    }
    if notes.is_empty() {
        for p in h.program_headers(e, data).ok()? {
            notes.extend(p.notes(e, data).ok().flatten());
        }
    }
    for mut it in notes {
        while let Ok(Some(note)) = it.next() {
            if note.name() == abi::NOTE_OWNER && note.n_type(e) == abi::NT_AMDGPU_METADATA {
                return Some(note.desc());
            }
        }
    }
    None
}

/// `amdhsa.kernels`, or `None` if any kernel cannot be read.
fn kernels(metadata: &Value) -> Option<Vec<ImageKernel>> {
    let list = field(metadata, "amdhsa.kernels")?.as_array()?;
    list.iter().map(kernel).collect()
}

fn kernel(k: &Value) -> Option<ImageKernel> {
    let name = field(k, ".name")?.as_str()?.to_owned();
    let no_args = Vec::new();
    let args = field(k, ".args").map_or(Some(&no_args), Value::as_array)?;
    let mut explicit = Vec::new();
    for a in args {
        if field(a, ".value_kind")?.as_str()?.starts_with("hidden_") {
            continue;
        }
        let size = usize::try_from(field(a, ".size")?.as_u64()?).ok()?;
        explicit.push((field(a, ".offset")?.as_u64()?, size));
    }
    explicit.sort_unstable();
    let number = |key| {
        field(k, key)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    let info = KernelInfo {
        static_lds: number(".group_segment_fixed_size").unwrap_or(0),
        private_size: number(".private_segment_fixed_size").unwrap_or(0),
        vgprs: number(".vgpr_count").unwrap_or(0),
        max_threads: number(".max_flat_workgroup_size").unwrap_or(1024),
    };
    let params = explicit.into_iter().map(|(_, size)| size).collect();
    Some(ImageKernel { name, params, info })
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

    const KERNELS: &[u8] = include_bytes!("../../kernel_params/kernels_gfx942.hsaco");

    #[test]
    fn a_code_object_lists_each_kernels_explicit_arguments_and_lds() {
        let kernels = code_object(KERNELS).unwrap();
        let by_name = |n: &str| kernels.iter().find(|k| k.name == n).unwrap();
        assert_eq!(by_name("add_one").params, [8, 8, 4]);
        assert_eq!(by_name("scale").params, [8, 4, 1, 8, 2]);
        assert_eq!(by_name("empty").params, [0usize; 0]);
        assert_eq!(by_name("halves").params, [2, 2, 1, 2]);
        assert_eq!(by_name("staticky").info.static_lds, 1024);
        assert_eq!(by_name("add_one").info.static_lds, 0);
        assert_eq!(by_name("add_one").info.max_threads, 1024);
        assert!(by_name("add_one").info.vgprs > 0);
    }

    #[test]
    fn bundle_targets_fit_by_processor_and_features() {
        assert!(fits("hipv4-amdgcn-amd-amdhsa--gfx942"));
        assert!(fits("hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"));
        assert!(fits("hipv4-amdgcn-amd-amdhsa--gfx942:xnack-"));
        assert!(!fits("hipv4-amdgcn-amd-amdhsa--gfx942:xnack+"));
        assert!(!fits("hipv4-amdgcn-amd-amdhsa--gfx90a"));
        assert!(!fits("hipv4-amdgcn-amd-amdhsa--gfx9420"));
        assert!(!fits("host-x86_64-unknown-linux-gnu-"));
        assert!(!fits("openmp-amdgcn-amd-amdhsa--gfx942"));
    }

    #[test]
    fn damaged_code_objects_are_errors_never_panics() {
        for len in 0..KERNELS.len() {
            let _ = code_object(&KERNELS[..len]);
        }
        let mut damaged = KERNELS.to_vec();
        for at in (0..damaged.len()).step_by(7) {
            let kept = damaged[at];
            damaged[at] = 0xff;
            let _ = code_object(&damaged);
            damaged[at] = kept;
        }
    }
}
