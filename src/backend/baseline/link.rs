//! Placing an [`Image`] in executable memory: code and read-only data in one sealed
//! (read+execute) allocation, writable data in another, relocations resolved in between.

use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider};

use super::error::BaselineError;
use super::image::{Image, RelocKind};
use crate::lir::{self, Symbol};

/// Where a linked module's functions start.
pub struct Linked {
    /// Address of each function of the module (its stub, for the functions that have one).
    pub functions: Vec<*const u8>,
    /// The pointer each stub jumps through, in the order of [`Image::stubs`]; it holds the
    /// function's own code at first.
    pub switches: Vec<*const std::sync::atomic::AtomicU64>,
    /// Address of each data object of the module.
    pub data: Vec<*const u8>,
}

/// Offsets of the data objects: `(writable, offset in its allocation)` each, and the bytes of
/// each allocation.
struct DataLayout {
    place: Vec<(bool, usize)>,
    read_only_end: usize,
    writable_bytes: usize,
    writable_align: usize,
}

fn layout_data(module: &lir::Module, code_len: usize) -> DataLayout {
    let mut read_only_end = code_len;
    let mut writable_bytes = 0usize;
    let mut writable_align = 8usize;
    let place = module
        .data
        .iter()
        .map(|d| {
            let align = (d.align.max(1) as usize).next_power_of_two();
            if d.writable {
                writable_align = writable_align.max(align);
                let at = writable_bytes.next_multiple_of(align);
                writable_bytes = at + d.contents.len();
                (true, at)
            } else {
                let at = read_only_end.next_multiple_of(align);
                read_only_end = at + d.contents.len();
                (false, at)
            }
        })
        .collect();
    DataLayout {
        place,
        read_only_end,
        writable_bytes,
        writable_align,
    }
}

fn backend(e: impl std::fmt::Display) -> BaselineError {
    BaselineError(format!("JIT memory: {e}"))
}

impl Image {
    /// Copies the code and `module`'s data into memory from `memory`, resolves relocations and
    /// seals the code read+execute.
    pub fn link(
        mut self,
        module: &lir::Module,
        memory: &mut dyn JITMemoryProvider,
    ) -> Result<Linked, BaselineError> {
        let mut layout = layout_data(module, self.code.len());
        // The stubs' pointers go after the writable data.
        let switches_at = layout.writable_bytes.next_multiple_of(8);
        if !self.stubs.is_empty() {
            layout.writable_bytes = switches_at + 8 * self.stubs.len();
        }
        let code_base = memory
            .allocate(layout.read_only_end.max(1), 16, JITMemoryKind::Executable)
            .map_err(backend)? as usize;
        let writable_base = if layout.writable_bytes > 0 {
            memory
                .allocate(
                    layout.writable_bytes,
                    layout.writable_align as u64,
                    JITMemoryKind::Writable,
                )
                .map_err(backend)? as usize
        } else {
            0
        };
        let data_address = |id: lir::DataId| {
            let (writable, at) = layout.place[id.0 as usize];
            if writable {
                writable_base + at
            } else {
                code_base + at
            }
        };
        let func_address = |id: lir::FuncId| code_base + self.func_offsets[id.0 as usize] as usize;
        for r in &self.relocs {
            let at = r.at as usize;
            match r.kind {
                RelocKind::CallFunc(f) => {
                    let target = self.func_offsets[f.0 as usize] as i64;
                    let rel = i32::try_from(target - (at as i64 + 4))
                        .map_err(|_| BaselineError("code larger than 2 GiB".to_owned()))?;
                    self.code[at..at + 4].copy_from_slice(&rel.to_le_bytes());
                }
                RelocKind::AbsFunc(f) => {
                    let a = func_address(f) as u64;
                    self.code[at..at + 8].copy_from_slice(&a.to_le_bytes());
                }
                RelocKind::AbsData(d) => {
                    let a = data_address(d) as u64;
                    self.code[at..at + 8].copy_from_slice(&a.to_le_bytes());
                }
                RelocKind::CallImport(_) | RelocKind::GotAddress(_) => {
                    return Err(BaselineError(
                        "relocatable code (PLT or GOT relocations) cannot be placed in memory \
                         by the JIT"
                            .to_owned(),
                    ));
                }
            }
        }
        let mut switches = Vec::with_capacity(self.stubs.len());
        for (k, stub) in self.stubs.iter().enumerate() {
            let pointer = writable_base + switches_at + 8 * k;
            let at = stub.slot_imm as usize;
            self.code[at..at + 8].copy_from_slice(&(pointer as u64).to_le_bytes());
            let body = (func_address(stub.func) as u64).to_le_bytes();
            // SAFETY: the layout reserved 8 bytes for this pointer in the fresh writable
            // allocation.
            unsafe { write(pointer, &body) };
            switches.push(pointer as *const std::sync::atomic::AtomicU64);
        }
        // SAFETY: `code_base` is a fresh writable allocation of `read_only_end` bytes, of which
        // the code takes the first `code.len()`.
        unsafe { write(code_base, &self.code) };
        for (d, &(writable, at)) in module.data.iter().zip(&layout.place) {
            let base = if writable { writable_base } else { code_base };
            if d.relocs.is_empty() {
                // Most bytes (a device binary of 100 KB, strings) have no pointers to patch:
                // they go in place without a copy.
                // SAFETY: the layout reserved `contents.len()` bytes at `base + at` in a fresh
                // writable allocation.
                unsafe { write(base + at, &d.contents) };
                continue;
            }
            let mut contents = d.contents.clone();
            for r in &d.relocs {
                let target = match r.symbol {
                    Symbol::Data(t) => data_address(t),
                    Symbol::Func(f) => func_address(f),
                } as i64;
                let at = r.offset as usize;
                let bytes = target.wrapping_add(r.addend).to_le_bytes();
                let slot = contents.get_mut(at..at + 8).ok_or_else(|| {
                    BaselineError(format!(
                        "relocation at {at} is outside the {} bytes of `{}`",
                        d.contents.len(),
                        d.name
                    ))
                })?;
                slot.copy_from_slice(&bytes);
            }
            // SAFETY: the layout reserved `contents.len()` bytes at `base + at` in a fresh
            // writable allocation.
            unsafe { write(base + at, &contents) };
        }
        memory
            .finalize(BranchProtection::None)
            .map_err(|e| BaselineError(format!("sealing JIT code: {e}")))?;
        let mut functions: Vec<*const u8> = (0..self.func_offsets.len())
            .map(|i| func_address(lir::FuncId(i as u32)) as *const u8)
            .collect();
        for stub in &self.stubs {
            functions[stub.func.0 as usize] = (code_base + stub.at as usize) as *const u8;
        }
        let data = (0..module.data.len())
            .map(|i| data_address(lir::DataId(i as u32)) as *const u8)
            .collect();
        Ok(Linked {
            functions,
            switches,
            data,
        })
    }
}

/// Copies `bytes` to `address`.
///
/// # Safety
/// `address..address + bytes.len()` must be writable memory that nothing else uses.
unsafe fn write(address: usize, bytes: &[u8]) {
    // SAFETY: guaranteed by the caller.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), address as *mut u8, bytes.len()) };
}
