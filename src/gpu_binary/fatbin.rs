//! Kernel parameters from a fat binary: the tables of its PTX and ELF members, which must agree
//! (the driver picks one member at load time).
//!
//! The container format is not documented by NVIDIA; the facts used here are those of the
//! open-source parsers VivekPanyam/cudaparsers (`src/fatbin.rs`), RWTH-OS/cricket
//! (`FatHeader_t`, `FatTextHeader_t`) and GrigoryEvko/nvopen-tools
//! (`fatbin/FORMAT_SPECIFICATION.md`), checked with `cuobjdump -lelf` (CUDA 12.9):
//! - a container is a 16-byte header `u32 magic 0xBA55ED50, u16 version 1, u16 header size,
//!   u64 size of the members`, then its members, little-endian; containers may follow each
//!   other;
//! - a member is a header `u16 kind (1 PTX, 2 ELF), u16 version, u32 header size, u32 padded
//!   payload size, u32 -, u32 payload size, u32 -, u16 minor, u16 major, u32 arch (sm_XX),
//!   u32 name offset, u32 name size, u64 flags, u64 -, u64 uncompressed size` (64 bytes or
//!   more), then the payload, padded;
//! - a payload is compressed when its flags have bit 12, 13 (LZ4) or 15 (Zstandard) set or
//!   the uncompressed size is not 0. Compressed members are not read: the table is unknown.

use std::collections::BTreeMap;
use std::fmt;

use super::{KernelParam, KernelTables, cubin, ptx, u16_at, u32_at, u64_at};

/// The magic number of a fat binary container.
pub const MAGIC: u32 = 0xBA55_ED50;
const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
const COMPRESSED_FLAGS: u64 = 1 << 12 | 1 << 13 | 1 << 15;
/// The smallest member header.
const MEMBER_HEADER: usize = 64;

/// One member, for messages: `member 1 (PTX for sm_90)`.
#[derive(Clone, Copy, Debug)]
struct Member {
    index: usize,
    kind: u16,
    arch: u32,
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            KIND_PTX => "PTX".to_owned(),
            KIND_ELF => "ELF".to_owned(),
            other => format!("kind {other}"),
        };
        write!(f, "member {} ({kind} for sm_{})", self.index, self.arch)
    }
}

/// The parameters of every kernel of every member of `data`; an unreadable member (compressed,
/// of an unknown kind, damaged) makes the whole table unknown.
pub fn read(data: &[u8]) -> Result<KernelTables, String> {
    let mut members = Vec::new();
    let mut at = 0;
    while at < data.len() {
        if data[at..].iter().all(|&b| b == 0) {
            break;
        }
        at = container(data, at, &mut members)?;
    }
    if members.is_empty() {
        return Err("the fat binary has no member".to_owned());
    }
    Ok(merge(&members))
}

/// Reads the container at `at` into `members`; returns where it ends.
fn container(
    data: &[u8],
    at: usize,
    members: &mut Vec<(Member, KernelTables)>,
) -> Result<usize, String> {
    let magic = u32_at(data, at).ok_or("the fat binary header is cut off")?;
    if magic != MAGIC {
        return Err(format!(
            "no fat binary header at byte {at} (magic {magic:#010x}, expected {MAGIC:#010x})"
        ));
    }
    let header = u16_at(data, at + 6).ok_or("the fat binary header is cut off")?;
    let size = u64_at(data, at + 8).ok_or("the fat binary header is cut off")?;
    let start = at + usize::from(header);
    let end = usize::try_from(size)
        .ok()
        .and_then(|s| start.checked_add(s))
        .filter(|&end| end <= data.len())
        .ok_or_else(|| {
            format!(
                "the container at byte {at} claims {size} bytes of members, past the end of \
                 the {}-byte image",
                data.len()
            )
        })?;
    let mut pos = start;
    while pos < end {
        let (member, payload, next) = member(data, pos, members.len(), end)?;
        let tables = match member.kind {
            KIND_PTX => ptx::read(payload.strip_suffix(&[0]).map_or(payload, trim_nuls)),
            KIND_ELF => cubin::read(payload),
            _ => Err("its kind is unknown".to_owned()),
        }
        .map_err(|e| format!("{member}: {e}"))?;
        members.push((member, tables));
        pos = next;
    }
    Ok(end)
}

/// PTX text without the NULs that pad it.
fn trim_nuls(text: &[u8]) -> &[u8] {
    let end = text.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &text[..end]
}

/// The member whose header is at `pos`: its description, payload and where the next begins.
fn member(
    data: &[u8],
    pos: usize,
    index: usize,
    end: usize,
) -> Result<(Member, &[u8], usize), String> {
    let cut = || format!("member {index}'s header is cut off");
    let head = data.get(pos..end).ok_or_else(cut)?;
    if head.len() < MEMBER_HEADER {
        return Err(cut());
    }
    let field32 = |at| u32_at(head, at).unwrap_or_default();
    let m = Member {
        index,
        kind: u16_at(head, 0).unwrap_or_default(),
        arch: field32(28),
    };
    let header = field32(4) as usize;
    let padded = field32(8) as usize;
    let size = field32(16) as usize;
    let flags = u64_at(head, 40).unwrap_or_default();
    let uncompressed = u64_at(head, 56).unwrap_or_default();
    if header < MEMBER_HEADER || size > padded {
        return Err(format!(
            "{m}: inconsistent header ({header}-byte header, {size}-byte payload padded to \
             {padded})"
        ));
    }
    let payload = head
        .get(header..header + size)
        .ok_or_else(|| format!("{m}: the payload runs past the container"))?;
    if flags & COMPRESSED_FLAGS != 0 || uncompressed != 0 {
        return Err(format!(
            "{m} is compressed (flags {flags:#x}); it is not read"
        ));
    }
    Ok((m, payload, pos + header + padded))
}

/// One table per kernel: the members' tables when they agree (a PTX member's, which has
/// types, when there is one), unknown when they do not.
fn merge(members: &[(Member, KernelTables)]) -> KernelTables {
    let mut by_kernel: BTreeMap<&str, Vec<(Member, &[KernelParam])>> = BTreeMap::new();
    let mut out = KernelTables::default();
    for (member, tables) in members {
        for (name, params) in &tables.kernels {
            by_kernel.entry(name).or_default().push((*member, params));
        }
        for (name, why) in &tables.unknown {
            out.unknown.insert(name.clone(), format!("{member}: {why}"));
        }
    }
    for (name, seen) in by_kernel {
        if out.unknown.contains_key(name) {
            continue;
        }
        let sizes = |params: &[KernelParam]| params.iter().map(|p| p.size).collect::<Vec<_>>();
        let (first, first_params) = seen[0];
        if let Some((other, params)) = seen[1..]
            .iter()
            .find(|(_, p)| sizes(p) != sizes(first_params))
        {
            out.unknown.insert(
                name.to_owned(),
                format!(
                    "the members disagree: {first} gives {}, {other} gives {}",
                    describe(first_params),
                    describe(params)
                ),
            );
            continue;
        }
        let best = seen
            .iter()
            .find(|(m, _)| m.kind == KIND_PTX)
            .map_or(first_params, |(_, p)| p);
        out.kernels.insert(name.to_owned(), best.to_vec());
    }
    out
}

/// `3 parameters (8-byte, 8-byte, 4-byte)`.
fn describe(params: &[KernelParam]) -> String {
    let list: Vec<String> = params.iter().map(|p| format!("{}-byte", p.size)).collect();
    format!("{} parameters ({})", params.len(), list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::super::ParamDecl;
    use super::*;

    const SCALE: &[u8] = include_bytes!("../../tests/kernel_params/scale.fatbin");
    const DISAGREE: &[u8] = include_bytes!("../../tests/kernel_params/disagree.fatbin");
    const COMPRESSED: &[u8] = include_bytes!("../../tests/kernel_params/compressed.fatbin");

    #[test]
    fn reads_every_member_and_prefers_ptx_types() {
        let t = read(SCALE).unwrap();
        let params = &t.kernels["scale"];
        assert_eq!(params.len(), 10);
        assert!(matches!(
            params[3].decl,
            ParamDecl::Ptx {
                ty: ptx::PtxType::F32,
                ..
            }
        ));
        assert!(t.unknown.is_empty());
    }

    #[test]
    fn members_that_disagree_leave_the_kernel_unknown() {
        let t = read(DISAGREE).unwrap();
        assert!(t.kernels.is_empty());
        let why = &t.unknown["scale"];
        assert!(
            why.contains("the members disagree: member 0 (ELF for sm_90) gives 10 parameters")
                && why.contains("member 1 (PTX for sm_90) gives 9 parameters"),
            "{why}"
        );
    }

    #[test]
    fn compressed_unknown_and_damaged_members_are_errors() {
        let e = read(COMPRESSED).unwrap_err();
        assert!(e.contains("member 0 (ELF for sm_90) is compressed"), "{e}");
        let mut unknown = SCALE.to_vec();
        unknown[16] = 7;
        let e = read(&unknown).unwrap_err();
        assert!(
            e.contains("member 0 (kind 7 for sm_90): its kind is unknown"),
            "{e}"
        );
        assert!(
            read(b".entry k() {}")
                .unwrap_err()
                .contains("no fat binary header")
        );
        let e = read(&SCALE[..SCALE.len() - 1]).unwrap_err();
        assert!(e.contains("past the end"), "{e}");
        let mut empty = SCALE[..16].to_vec();
        empty[8..16].fill(0);
        assert!(read(&empty).unwrap_err().contains("no member"));
        for n in 0..SCALE.len() {
            let _ = read(&SCALE[..n]);
        }
        // Trailing zeros (section padding) are not a container.
        let mut padded = SCALE.to_vec();
        padded.extend([0; 24]);
        assert_eq!(read(&padded).unwrap(), read(SCALE).unwrap());
    }
}
