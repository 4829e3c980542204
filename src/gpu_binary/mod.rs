//! Kernel parameter tables read from GPU device binaries, for the verifier's check of launch
//! arguments (docs/ir.md, "Launch arguments and the kernel's parameters").
//!
//! Each reader takes the raw image of one [`BinaryFormat`](crate::ir::BinaryFormat) and
//! returns the parameters of every kernel it declares, or why it cannot tell:
//! - [`ptx`]: the `.entry NAME(.param ...)` declarations: type, size and alignment;
//! - [`cubin`]: the `.nv.info.NAME` sections of a CUDA ELF file: offset and size only;
//! - [`fatbin`]: every member of a fat binary (PTX or ELF), which must agree;
//! - [`hsaco`]: the metadata note of an AMDGPU code object: offset, size and value kind;
//! - [`offload_bundle`]: every code object of a clang offload bundle, which must agree.
//!
//! The readers know nothing of the IR: they turn bytes into tables, and never panic on
//! damaged input (an unreadable image is an [`Err`] with the reason).

use std::collections::BTreeMap;
use std::fmt;

pub mod cubin;
pub mod fatbin;
pub mod hsaco;
pub mod offload_bundle;
pub mod ptx;
mod ptx_type;
mod value_kind;

pub use ptx_type::PtxType;

/// One kernel parameter as a binary declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelParam {
    /// Its size in bytes.
    pub size: u32,
    /// What else the binary says of it.
    pub decl: ParamDecl,
}

/// What a binary says of a parameter beyond its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamDecl {
    /// PTX: `.param [.align ALIGN] .TYPE name[[COUNT]]`.
    Ptx {
        /// The declared type (of each element, for an array).
        ty: PtxType,
        /// The element count of an array parameter (`p[128]`), `None` for a scalar.
        count: Option<u32>,
        /// The alignment in bytes: the `.align` given, or the type's size.
        align: u32,
    },
    /// A cubin's `EIATTR_KPARAM_INFO`: only where the parameter lives in the parameter
    /// buffer.
    Cubin {
        /// Its offset in the kernel's parameter buffer, in bytes.
        offset: u32,
    },
    /// An AMDGPU code object's metadata: where the argument lives in the kernel argument
    /// segment, and what kind of value it is.
    Hsaco {
        /// Its offset in the kernel argument segment, in bytes.
        offset: u32,
        /// Its `.value_kind`.
        kind: value_kind::ValueKind,
    },
}

impl fmt::Display for KernelParam {
    /// `u64`, `b8[128] align 64`, (a cubin's) `8-byte`, or (a code object's)
    /// `8-byte global_buffer`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.decl {
            ParamDecl::Ptx { ty, count, align } => {
                write!(f, "{}", ty.keyword())?;
                if let Some(n) = count {
                    write!(f, "[{n}]")?;
                }
                if align != ty.size() {
                    write!(f, " align {align}")?;
                }
                Ok(())
            }
            ParamDecl::Cubin { .. } => write!(f, "{}-byte", self.size),
            ParamDecl::Hsaco { kind, .. } => write!(f, "{}-byte {}", self.size, kind.name()),
        }
    }
}

/// The size in bytes of a kernel's parameter buffer: each parameter at its offset (a cubin's)
/// or at the next multiple of its alignment (PTX's layout).
pub fn buffer_size(params: &[KernelParam]) -> u64 {
    let mut end = 0u64;
    for p in params {
        let start = match p.decl {
            ParamDecl::Cubin { offset } | ParamDecl::Hsaco { offset, .. } => u64::from(offset),
            ParamDecl::Ptx { align, .. } => end.next_multiple_of(u64::from(align.max(1))),
        };
        end = end.max(start + u64::from(p.size));
    }
    end
}

/// The parameter tables of one device binary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelTables {
    /// Each kernel's parameters, by entry name.
    pub kernels: BTreeMap<String, Vec<KernelParam>>,
    /// Kernels whose table is unknown although the binary was read (fat binary members that
    /// disagree), with the reason.
    pub unknown: BTreeMap<String, String>,
}

impl KernelTables {
    /// What the binary says of `kernel`.
    pub fn lookup(&self, kernel: &str) -> Lookup<'_> {
        if let Some(params) = self.kernels.get(kernel) {
            Lookup::Known(params)
        } else if let Some(why) = self.unknown.get(kernel) {
            Lookup::Unknown(why)
        } else {
            Lookup::Absent
        }
    }

    /// The names of the kernels with a known table, for messages.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.kernels.keys().map(String::as_str).collect();
        if names.is_empty() {
            "no kernel".to_owned()
        } else {
            names.join(", ")
        }
    }
}

/// What [`KernelTables::lookup`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// The kernel's parameters.
    Known(&'a [KernelParam]),
    /// The binary holds the kernel but its table is unknown, for this reason.
    Unknown(&'a str),
    /// The binary's table does not list the kernel.
    Absent,
}

/// Reads `N` little-endian bytes at `at`, or `None` past the end.
fn bytes_at<const N: usize>(data: &[u8], at: usize) -> Option<[u8; N]> {
    data.get(at..at.checked_add(N)?)?.try_into().ok()
}

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    bytes_at(data, at).map(u16::from_le_bytes)
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    bytes_at(data, at).map(u32::from_le_bytes)
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    bytes_at(data, at).map(u64::from_le_bytes)
}
