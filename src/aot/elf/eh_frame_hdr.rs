//! `.eh_frame_hdr`: the sorted table of the functions' frame descriptions that unwinders find
//! through `PT_GNU_EH_FRAME` (libgcc's `_Unwind_Find_FDE`, and with it C++ exceptions and
//! backtraces through generated code).

/// `DW_EH_PE_pcrel | DW_EH_PE_sdata4`: the pointer encoding our backends' CIEs declare.
const PCREL_SDATA4: u8 = 0x1b;
/// `DW_EH_PE_udata4`.
const UDATA4: u8 = 0x03;
/// `DW_EH_PE_datarel | DW_EH_PE_sdata4`.
const DATAREL_SDATA4: u8 = 0x3b;

/// The number of FDEs [`build`] finds in `eh_frame`, for sizing the header before addresses
/// are known.
pub(super) fn count(eh_frame: &[u8]) -> Result<usize, String> {
    Ok(records(eh_frame)?
        .iter()
        .filter(|r| r.cie_pointer != 0)
        .count())
}

/// The header for the relocated `eh_frame` at address `eh_frame_addr`, placed at `hdr_addr`.
pub(super) fn build(eh_frame: &[u8], eh_frame_addr: u64, hdr_addr: u64) -> Result<Vec<u8>, String> {
    let records = records(eh_frame)?;
    let mut table = Vec::new();
    for fde in records.iter().filter(|r| r.cie_pointer != 0) {
        let cie_at = (fde.start + 4)
            .checked_sub(fde.cie_pointer as usize)
            .ok_or_else(|| {
                format!(
                    ".eh_frame: the FDE at {:#x} points before the section",
                    fde.start
                )
            })?;
        let cie = records
            .iter()
            .find(|r| r.start == cie_at && r.cie_pointer == 0)
            .ok_or_else(|| {
                format!(
                    ".eh_frame: the FDE at {:#x} has no CIE at {cie_at:#x}",
                    fde.start
                )
            })?;
        let encoding = fde_encoding(&eh_frame[cie.start..cie.end])
            .map_err(|e| format!(".eh_frame: the CIE at {cie_at:#x}: {e}"))?;
        if encoding != PCREL_SDATA4 {
            return Err(format!(
                ".eh_frame: the CIE at {cie_at:#x} encodes addresses as {encoding:#x}; only \
                 pc-relative 32-bit ({PCREL_SDATA4:#x}) is supported"
            ));
        }
        let field = fde.start + 8;
        let Some(bytes) = eh_frame.get(field..field + 4) else {
            return Err(format!(
                ".eh_frame: the FDE at {:#x} is truncated",
                fde.start
            ));
        };
        let offset = i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let pc = (eh_frame_addr + field as u64).wrapping_add_signed(i64::from(offset));
        table.push((pc, eh_frame_addr + fde.start as u64));
    }
    table.sort_unstable();
    let rel = |addr: u64| -> Result<[u8; 4], String> {
        i32::try_from(addr.wrapping_sub(hdr_addr) as i64)
            .map(i32::to_le_bytes)
            .map_err(|_| "the .eh_frame_hdr is too far from the code".to_owned())
    };
    let mut out = vec![1, PCREL_SDATA4, UDATA4, DATAREL_SDATA4];
    // The eh_frame pointer is relative to its own field (hdr + 4).
    let own = (eh_frame_addr.wrapping_sub(hdr_addr + 4)) as i64;
    let own = i32::try_from(own).map_err(|_| "the .eh_frame is too far from its header")?;
    out.extend_from_slice(&own.to_le_bytes());
    out.extend_from_slice(&(table.len() as u32).to_le_bytes());
    for (pc, fde) in table {
        out.extend_from_slice(&rel(pc)?);
        out.extend_from_slice(&rel(fde)?);
    }
    Ok(out)
}

/// The header's size for `fdes` entries.
pub(super) fn size(fdes: usize) -> usize {
    12 + 8 * fdes
}

/// One CIE or FDE: its byte range and its CIE pointer (0 for a CIE).
struct Record {
    start: usize,
    end: usize,
    cie_pointer: u32,
}

fn records(eh_frame: &[u8]) -> Result<Vec<Record>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= eh_frame.len() {
        let length = u32::from_le_bytes(eh_frame[at..at + 4].try_into().expect("4 bytes"));
        if length == 0 {
            break; // the terminator
        }
        if length == u32::MAX {
            return Err(format!(
                ".eh_frame: 64-bit record at {at:#x} is not supported"
            ));
        }
        let end = at + 4 + length as usize;
        if end > eh_frame.len() || length < 4 {
            return Err(format!(
                ".eh_frame: the record at {at:#x} runs past the section's end"
            ));
        }
        let cie_pointer = u32::from_le_bytes(eh_frame[at + 4..at + 8].try_into().expect("4 bytes"));
        out.push(Record {
            start: at,
            end,
            cie_pointer,
        });
        at = end;
    }
    Ok(out)
}

/// The FDE pointer encoding of a CIE (its `R` augmentation; absolute if none).
fn fde_encoding(cie: &[u8]) -> Result<u8, String> {
    let truncated = || "truncated".to_owned();
    let version = *cie.get(8).ok_or_else(truncated)?;
    let mut at = 9;
    let aug_end = at
        + cie[at..]
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(truncated)?;
    let augmentation = &cie[at..aug_end];
    at = aug_end + 1;
    if !augmentation.starts_with(b"z") {
        return Ok(0);
    }
    at = skip_leb128(cie, at).ok_or_else(truncated)?; // code alignment
    at = skip_leb128(cie, at).ok_or_else(truncated)?; // data alignment
    at = if version == 1 {
        at + 1
    } else {
        skip_leb128(cie, at).ok_or_else(truncated)?
    }; // return register
    at = skip_leb128(cie, at).ok_or_else(truncated)?; // augmentation data length
    for &c in &augmentation[1..] {
        match c {
            b'R' => return cie.get(at).copied().ok_or_else(truncated),
            b'L' => at += 1,
            b'P' => {
                let encoding = *cie.get(at).ok_or_else(truncated)?;
                at += 1 + pointer_size(encoding)?;
            }
            b'S' | b'B' => {}
            other => return Err(format!("unknown augmentation `{}`", other as char)),
        }
    }
    Ok(0)
}

fn pointer_size(encoding: u8) -> Result<usize, String> {
    match encoding & 0x0f {
        0x00 => Ok(8),
        0x02 | 0x0a => Ok(2),
        0x03 | 0x0b => Ok(4),
        0x04 | 0x0c => Ok(8),
        other => Err(format!("pointer encoding {other:#x} is not supported")),
    }
}

fn skip_leb128(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let b = *bytes.get(at)?;
        at += 1;
        if b & 0x80 == 0 {
            return Some(at);
        }
    }
}
