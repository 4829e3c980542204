//! Kernel parameters from a clang offload bundle (what `clang --offload-arch=gfx942
//! --offload-arch=gfx90a` embeds for HIP, `.hipfb`): the tables of its AMDGPU code objects,
//! which must agree.
//!
//! The layout, from LLVM's `clang-offload-bundler` documentation ("Bundled Binary File
//! Layout"): the magic `__CLANG_OFFLOAD_BUNDLE__` (24 bytes), the number of entries (u64), then
//! per entry its offset and size in the file (u64 each), the length of its id (u64) and the id
//! (`hipv4-amdgcn-amd-amdhsa--gfx942`, `host-x86_64-unknown-linux-gnu-`; all little-endian).
//! Entries whose id names an `amdgcn` target are code objects ([`hsaco`]); the
//! host entry is empty for HIP. Compressed bundles (magic `CCOB`, clang's
//! `--offload-compress`) are not read.

use std::collections::BTreeMap;

use super::{KernelParam, KernelTables, hsaco, u64_at};

/// The magic of an uncompressed bundle.
pub const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
/// The magic of a compressed bundle.
pub const COMPRESSED_MAGIC: &[u8] = b"CCOB";

/// One entry: its id and its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'d> {
    /// The target id (`hipv4-amdgcn-amd-amdhsa--gfx942`).
    pub id: &'d str,
    /// The entry's bytes.
    pub data: &'d [u8],
}

/// The entries of the bundle `data`.
pub fn entries(data: &[u8]) -> Result<Vec<Entry<'_>>, String> {
    if data.starts_with(COMPRESSED_MAGIC) {
        return Err("it is a compressed offload bundle (CCOB), which is not read".to_owned());
    }
    if !data.starts_with(MAGIC) {
        return Err("it does not start with `__CLANG_OFFLOAD_BUNDLE__`".to_owned());
    }
    let truncated = || "its entry table is truncated".to_owned();
    let count = u64_at(data, MAGIC.len()).ok_or_else(truncated)?;
    let mut at = MAGIC.len() + 8;
    let mut out = Vec::new();
    for i in 0..count {
        let field = |k: usize| u64_at(data, at + 8 * k).ok_or_else(truncated);
        let (offset, size, id_len) = (field(0)?, field(1)?, field(2)?);
        let id_start = at + 24;
        let id = usize::try_from(id_len)
            .ok()
            .and_then(|n| data.get(id_start..id_start.checked_add(n)?))
            .ok_or_else(truncated)?;
        let id = std::str::from_utf8(id).map_err(|_| format!("entry {i}'s id is not UTF-8"))?;
        let bytes = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(o, s)| data.get(o..o.checked_add(s)?))
            .ok_or_else(|| format!("entry {i} (`{id}`) lies outside the file"))?;
        out.push(Entry { id, data: bytes });
        at = id_start + id.len();
    }
    Ok(out)
}

/// Whether an entry id names an AMDGPU target.
pub fn is_amdgpu(id: &str) -> bool {
    id.contains("amdgcn-")
}

/// The parameters of every kernel of the bundle's code objects.
pub fn read(data: &[u8]) -> Result<KernelTables, String> {
    let objects: Vec<Entry<'_>> = entries(data)?
        .into_iter()
        .filter(|e| is_amdgpu(e.id))
        .collect();
    if objects.is_empty() {
        return Err("it holds no AMDGPU code object".to_owned());
    }
    let mut tables = Vec::new();
    for e in &objects {
        let t = hsaco::read(e.data).map_err(|why| format!("its entry `{}`: {why}", e.id))?;
        tables.push((e.id, t));
    }
    Ok(merge(&tables))
}

/// One table per kernel when the code objects agree on its parameter sizes; unknown when not.
fn merge(objects: &[(&str, KernelTables)]) -> KernelTables {
    let mut by_kernel: BTreeMap<&str, Vec<(&str, &[KernelParam])>> = BTreeMap::new();
    for (id, t) in objects {
        for (name, params) in &t.kernels {
            by_kernel.entry(name).or_default().push((id, params));
        }
    }
    let mut out = KernelTables::default();
    let sizes = |p: &[KernelParam]| p.iter().map(|p| p.size).collect::<Vec<_>>();
    for (name, seen) in by_kernel {
        let (first, params) = seen[0];
        match seen[1..].iter().find(|(_, p)| sizes(p) != sizes(params)) {
            Some((other, p)) => {
                out.unknown.insert(
                    name.to_owned(),
                    format!(
                        "the code objects disagree: `{first}` gives {} parameters, `{other}` gives {}",
                        params.len(),
                        p.len()
                    ),
                );
            }
            None => {
                out.kernels.insert(name.to_owned(), params.to_vec());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HSACO: &[u8] = include_bytes!("../../tests/kernel_params/kernels_gfx942.hsaco");
    const SCALE: &[u8] = include_bytes!("../../tests/kernel_params/scale_gfx942.hsaco");

    /// A bundle of `entries` (id, bytes), laid out as clang-offload-bundler writes it.
    pub(crate) fn bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut head = MAGIC.to_vec();
        head.extend((entries.len() as u64).to_le_bytes());
        let table: usize = entries.iter().map(|(id, _)| 24 + id.len()).sum();
        let mut offset = (head.len() + table).next_multiple_of(4096);
        let mut body = Vec::new();
        for (id, data) in entries {
            head.extend((offset as u64).to_le_bytes());
            head.extend((data.len() as u64).to_le_bytes());
            head.extend((id.len() as u64).to_le_bytes());
            head.extend(id.as_bytes());
            body.push((offset, *data));
            offset = (offset + data.len()).next_multiple_of(4096);
        }
        let mut out = head;
        for (at, data) in body {
            out.resize(at, 0);
            out.extend(data);
        }
        out
    }

    #[test]
    fn reads_the_code_objects_and_skips_the_host_entry() {
        let b = bundle(&[
            ("host-x86_64-unknown-linux-gnu-", &[]),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", HSACO),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", HSACO),
        ]);
        let ids: Vec<&str> = entries(&b).unwrap().iter().map(|e| e.id).collect();
        assert_eq!(ids.len(), 3);
        let t = read(&b).unwrap();
        assert_eq!(t, hsaco::read(HSACO).unwrap());
        assert_eq!(t.kernels["add_one"].len(), 3);
    }

    #[test]
    fn code_objects_that_disagree_leave_the_kernel_unknown() {
        // The same name `scale` with 10 parameters in one and 5 in the other.
        let b = bundle(&[
            ("hipv4-amdgcn-amd-amdhsa--gfx942", SCALE),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", HSACO),
        ]);
        let t = read(&b).unwrap();
        assert!(
            t.unknown["scale"].contains(
                "the code objects disagree: `hipv4-amdgcn-amd-amdhsa--gfx942` gives 10 \
                 parameters, `hipv4-amdgcn-amd-amdhsa--gfx90a` gives 5"
            ),
            "{:?}",
            t.unknown
        );
        assert_eq!(t.kernels["add_one"].len(), 3, "only in one: known");
    }

    #[test]
    fn damaged_bundles_are_errors() {
        let good = bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx942", HSACO)]);
        for cut in [0, 10, MAGIC.len() + 4, MAGIC.len() + 20, 100, 5000] {
            assert!(read(&good[..cut.min(good.len())]).is_err(), "cut at {cut}");
        }
        assert!(read(b"CCOB\x01\x00").unwrap_err().contains("compressed"));
        let host_only = bundle(&[("host-x86_64-unknown-linux-gnu-", &[])]);
        assert_eq!(
            read(&host_only).unwrap_err(),
            "it holds no AMDGPU code object"
        );
    }
}
