//! Executable memory for JIT-compiled code (Cranelift's JIT modules and the baseline
//! compiler's), recycled between modules.
//!
//! cranelift-jit's default provider maps fresh pages for every module and unmaps them when the
//! module is freed: each compile pays `mmap`, a page fault per touched page and `munmap`, and
//! the code and read-only data get separate mappings. A DSL compiler compiles and drops many
//! small modules, so [`PooledMemory`] keeps freed chunks in a process-wide pool instead:
//! compiling a module takes a chunk, writes code and read-only data into it and seals it
//! read+execute (one `mprotect`); freeing the module makes the chunk read-write again (one
//! `mprotect`, so freed code cannot run) and returns it to the pool.
//!
//! Writable and executable never hold at once (W^X). Read-only data shares the chunk of the
//! code, so it is executable too; it is never writable after sealing.
//!
//! x86-64 and aarch64 hosts (others use cranelift-jit's own provider). On aarch64 the
//! instruction cache is not coherent with data writes: sealing cleans the written lines to the
//! point of unification and invalidates them in the instruction cache (`clear_cache`), and
//! then flushes the pipelines of every thread of the process (`pipeline_flush_mt`, a
//! `membarrier`), so no core runs stale instructions from a reused chunk. On x86-64 both are
//! no-ops. Branch target identification (BTI) pages are not supported: a module asking for
//! branch protection is refused.

use std::io;
use std::sync::Mutex;

use cranelift_jit::{BranchProtection, JITMemoryKind, JITMemoryProvider};
use cranelift_module::{ModuleError, ModuleResult};
use wasmtime_internal_jit_icache_coherence as icache;

/// Size of a pooled chunk: a few launchers' code and data.
const CHUNK_BYTES: usize = 64 * 1024;

/// Most bytes of free chunks the pool keeps; chunks freed beyond it are unmapped.
const POOL_LIMIT_BYTES: usize = 8 * 1024 * 1024;

/// A page-aligned mapping, read-write or read-execute.
struct Chunk {
    region: region::Allocation,
    /// Whether the pages are read+execute (they hold sealed code).
    sealed: bool,
}

// SAFETY: the chunk owns its mapping; moving the owner between threads is harmless.
unsafe impl Send for Chunk {}

impl Chunk {
    fn len(&self) -> usize {
        self.region.len()
    }

    fn ptr(&mut self) -> *mut u8 {
        self.region.as_mut_ptr::<u8>()
    }

    /// Makes the pages read-write (if they are not), so they can be written.
    fn unseal(&mut self) -> io::Result<()> {
        if self.sealed {
            let (ptr, len) = (self.ptr(), self.len());
            // SAFETY: the pages are this chunk's own mapping, and no code in them can run: a
            // chunk is only unsealed when the module that sealed it is freed.
            unsafe { region::protect(ptr, len, region::Protection::READ_WRITE) }
                .map_err(io::Error::other)?;
            self.sealed = false;
        }
        Ok(())
    }

    /// Makes the pages read+execute, with the instruction cache made coherent with what was
    /// written (the caller flushes the pipelines once all chunks are sealed).
    fn seal(&mut self) -> io::Result<()> {
        let (ptr, len) = (self.ptr(), self.len());
        // SAFETY: the range is this chunk's own mapping, readable and written by this module.
        unsafe { icache::clear_cache(ptr.cast_const().cast(), len) }.map_err(|e| {
            io::Error::other(format!(
                "cannot clear the instruction cache of JIT code: {e}"
            ))
        })?;
        // SAFETY: the pages are this chunk's own mapping; nothing writes them after this.
        unsafe { region::protect(ptr, len, region::Protection::READ_EXECUTE) }.map_err(|e| {
            io::Error::other(format!(
                "cannot make JIT memory readable and executable: {e}"
            ))
        })?;
        self.sealed = true;
        Ok(())
    }
}

/// Free chunks of the process, for any module to take.
static POOL: Mutex<Vec<Chunk>> = Mutex::new(Vec::new());

/// A chunk of at least `bytes` bytes, read-write: the smallest pooled one that fits, else a new
/// mapping.
fn take_chunk(bytes: usize) -> io::Result<Chunk> {
    let pooled = smallest_fitting(&mut lock_pool(), bytes);
    match pooled {
        // Pooled chunks are read-write (see `Arena::release`).
        Some(chunk) => Ok(chunk),
        None => Ok(Chunk {
            region: region::alloc(bytes.max(CHUNK_BYTES), region::Protection::READ_WRITE)
                .map_err(io::Error::other)?,
            sealed: false,
        }),
    }
}

fn lock_pool() -> std::sync::MutexGuard<'static, Vec<Chunk>> {
    POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Removes from `pool` the smallest chunk of at least `bytes` bytes.
fn smallest_fitting(pool: &mut Vec<Chunk>, bytes: usize) -> Option<Chunk> {
    let i = pool
        .iter()
        .enumerate()
        .filter(|(_, c)| c.len() >= bytes)
        .min_by_key(|(_, c)| c.len())?
        .0;
    Some(pool.swap_remove(i))
}

/// Adds `chunks` to `pool` while it holds at most [`POOL_LIMIT_BYTES`]; the others are dropped,
/// which unmaps them.
fn keep_within_limit(pool: &mut Vec<Chunk>, chunks: impl Iterator<Item = Chunk>) {
    let mut held: usize = pool.iter().map(Chunk::len).sum();
    for chunk in chunks {
        if held + chunk.len() <= POOL_LIMIT_BYTES {
            held += chunk.len();
            pool.push(chunk);
        }
    }
}

/// Where one kind of allocation goes: the chunks taken so far, the last one being filled.
#[derive(Default)]
struct Arena {
    chunks: Vec<Chunk>,
    /// Bytes used in the last chunk.
    used: usize,
    /// How many of `chunks` are sealed (the rest are still being written).
    sealed: usize,
}

impl Arena {
    fn allocate(&mut self, size: usize, align: u64) -> io::Result<*mut u8> {
        let align = usize::try_from(align)
            .ok()
            .filter(|a| a.is_power_of_two())
            .ok_or_else(|| io::Error::other(format!("bad JIT alignment {align}")))?;
        if self.chunks.len() > self.sealed {
            let start = self.used.next_multiple_of(align);
            let last = self.chunks.last_mut().expect("an open chunk");
            if start.checked_add(size).is_some_and(|end| end <= last.len()) {
                self.used = start + size;
                // SAFETY: `start + size` is within the chunk's mapping.
                return Ok(unsafe { last.ptr().add(start) });
            }
        }
        // Page alignment covers every alignment Cranelift asks for.
        let mut chunk = take_chunk(size)?;
        let ptr = chunk.ptr();
        self.chunks.push(chunk);
        self.used = size;
        Ok(ptr)
    }

    /// Seals every chunk written since the last seal.
    fn seal(&mut self) -> io::Result<()> {
        if self.sealed == self.chunks.len() {
            return Ok(());
        }
        for chunk in &mut self.chunks[self.sealed..] {
            chunk.seal()?;
        }
        self.sealed = self.chunks.len();
        // Other threads may run the new code: discard instructions they prefetched.
        icache::pipeline_flush_mt().map_err(|e| {
            io::Error::other(format!(
                "cannot flush the pipelines after writing JIT code: {e}"
            ))
        })
    }

    /// Returns the chunks to the pool, read-write again: code freed can no longer run, so a
    /// call through a stale pointer faults instead of running whatever is there. A chunk that
    /// cannot be made writable is unmapped instead.
    fn release(&mut self) {
        self.sealed = 0;
        self.used = 0;
        let writable = self
            .chunks
            .drain(..)
            .filter_map(|mut c| c.unseal().is_ok().then_some(c));
        keep_within_limit(&mut lock_pool(), writable);
    }
}

/// A [`JITMemoryProvider`] drawing on the process-wide pool of chunks.
///
/// Memory is returned to the pool by [`JITMemoryProvider::free_memory`]; a provider dropped
/// without it leaks its chunks, so that function pointers into them stay valid (the behaviour
/// of cranelift-jit's own providers).
#[derive(Default)]
pub struct PooledMemory {
    /// Code and read-only data (sealed read+execute).
    code: Arena,
    /// Writable data (never executable).
    writable: Arena,
}

impl JITMemoryProvider for PooledMemory {
    fn allocate(&mut self, size: usize, align: u64, kind: JITMemoryKind) -> io::Result<*mut u8> {
        match kind {
            JITMemoryKind::Executable | JITMemoryKind::ReadOnly => self.code.allocate(size, align),
            JITMemoryKind::Writable => self.writable.allocate(size, align),
        }
    }

    unsafe fn free_memory(&mut self) {
        self.code.release();
        self.writable.release();
    }

    fn finalize(&mut self, branch_protection: BranchProtection) -> ModuleResult<()> {
        if branch_protection != BranchProtection::None {
            return Err(ModuleError::Backend(
                io::Error::other("pooled JIT memory does not support branch protection").into(),
            ));
        }
        self.code.seal().map_err(|e| ModuleError::Backend(e.into()))
    }
}

impl Drop for PooledMemory {
    fn drop(&mut self) {
        // Code may still be referenced: leak rather than unmap (see the type's docs).
        for chunk in self
            .code
            .chunks
            .drain(..)
            .chain(self.writable.chunks.drain(..))
        {
            std::mem::forget(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mov eax, value; ret`.
    #[cfg(target_arch = "x86_64")]
    fn return_const(value: u8) -> Vec<u8> {
        vec![0xB8, value, 0, 0, 0, 0xC3]
    }

    /// `movz w0, #value; ret` (on a reused chunk this is the code that would be stale in the
    /// instruction cache without maintenance).
    #[cfg(target_arch = "aarch64")]
    fn return_const(value: u8) -> Vec<u8> {
        let movz = 0x5280_0000_u32 | (u32::from(value) << 5);
        [movz, 0xD65F_03C0]
            .iter()
            .flat_map(|i| i.to_le_bytes())
            .collect()
    }

    /// Writes `code` at `ptr`.
    fn write(ptr: *mut u8, code: &[u8]) {
        // SAFETY: `ptr` is a fresh allocation of at least `code.len()` writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), ptr, code.len()) };
    }

    /// Calls the sealed code at `ptr`.
    fn run(ptr: *mut u8) -> u32 {
        // SAFETY: `ptr` holds `return_const`'s code, sealed read+execute.
        unsafe { std::mem::transmute::<*mut u8, extern "C" fn() -> u32>(ptr)() }
    }

    #[test]
    fn sealed_code_runs_and_its_chunk_is_reused_writable_after_free() {
        // A size no other allocation asks for, so the chunk cannot go anywhere else.
        let size = 3 * CHUNK_BYTES + 4096;
        let mut first = PooledMemory::default();
        let a = first.allocate(size, 16, JITMemoryKind::Executable).unwrap();
        write(a, &return_const(42));
        first.finalize(BranchProtection::None).unwrap();
        assert_eq!(run(a), 42);
        // SAFETY: the code at `a` is not used any more.
        unsafe { first.free_memory() };
        let freed = region::query(a).unwrap().protection();
        assert_eq!(
            freed,
            region::Protection::READ_WRITE,
            "freed code cannot run"
        );

        let mut second = PooledMemory::default();
        let b = second
            .allocate(size, 16, JITMemoryKind::Executable)
            .unwrap();
        assert_eq!(b, a, "the freed chunk is taken again");
        // Writing would fault if the chunk were still read+execute.
        write(b, &return_const(7));
        second.finalize(BranchProtection::None).unwrap();
        assert_eq!(run(b), 7);
        // SAFETY: as above.
        unsafe { second.free_memory() };
    }

    #[test]
    fn read_only_data_shares_the_code_chunk_and_writable_data_does_not() {
        let mut memory = PooledMemory::default();
        let code = memory.allocate(64, 16, JITMemoryKind::Executable).unwrap() as usize;
        let data = memory.allocate(100, 8, JITMemoryKind::ReadOnly).unwrap() as usize;
        let writable = memory.allocate(8, 8, JITMemoryKind::Writable).unwrap();
        assert_eq!(data, code + 64, "packed after the code, 8-aligned");
        let w = writable as usize;
        assert!(
            w + 8 <= code || w >= code + CHUNK_BYTES,
            "writable data has its own chunk"
        );
        memory.finalize(BranchProtection::None).unwrap();
        // Writable data stays writable after sealing.
        // SAFETY: 8 writable bytes.
        unsafe { writable.cast::<u64>().write(5) };
        // SAFETY: nothing runs from this memory.
        unsafe { memory.free_memory() };
    }

    #[test]
    fn allocations_are_aligned_and_one_after_sealing_gets_a_writable_chunk() {
        let mut memory = PooledMemory::default();
        let a = memory.allocate(3, 1, JITMemoryKind::Executable).unwrap();
        let b = memory.allocate(8, 32, JITMemoryKind::Executable).unwrap();
        assert_eq!(b as usize % 32, 0);
        assert!(b as usize > a as usize);
        write(a, &[0xC3]);
        memory.finalize(BranchProtection::None).unwrap();
        let c = memory.allocate(6, 16, JITMemoryKind::Executable).unwrap();
        write(c, &return_const(9));
        memory.finalize(BranchProtection::None).unwrap();
        assert_eq!(run(c), 9);
        assert!(
            memory.allocate(1, 3, JITMemoryKind::Executable).is_err(),
            "alignment 3"
        );
        // SAFETY: nothing runs from this memory any more.
        unsafe { memory.free_memory() };
    }

    #[test]
    fn branch_protection_is_refused() {
        let mut memory = PooledMemory::default();
        let err = memory.finalize(BranchProtection::BTI).unwrap_err();
        assert!(err.to_string().contains("branch protection"), "{err}");
    }

    fn chunk(bytes: usize) -> Chunk {
        Chunk {
            region: region::alloc(bytes, region::Protection::READ_WRITE).unwrap(),
            sealed: false,
        }
    }

    #[test]
    fn a_pool_keeps_at_most_its_limit_and_hands_out_the_best_fit() {
        let mut pool = Vec::new();
        let half = POOL_LIMIT_BYTES / 2;
        keep_within_limit(&mut pool, [half, half, half].into_iter().map(chunk));
        assert_eq!(pool.len(), 2, "the third chunk is over the limit");
        let mut pool = vec![
            chunk(4 * CHUNK_BYTES),
            chunk(CHUNK_BYTES),
            chunk(2 * CHUNK_BYTES),
        ];
        let taken = smallest_fitting(&mut pool, CHUNK_BYTES + 1).unwrap();
        assert_eq!(taken.len(), 2 * CHUNK_BYTES);
        assert!(smallest_fitting(&mut pool, 5 * CHUNK_BYTES).is_none());
        assert_eq!(pool.len(), 2);
    }
}
