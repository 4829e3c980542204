//! The code a JIT compile makes: [`JitCode`] (its memory and what must outlive it), and what a
//! tier hands back ([`Built`], with the [`Switch`]es a tier-up rewrites).

use std::any::Any;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use crate::backend::{JitOutput, LoadedCode};

/// Executable memory of one compiled module; freed when the last reference goes.
pub struct JitCode {
    /// The module's code: the first tier's, then the code of a tier-up.
    pub(super) module: Mutex<Vec<Box<dyn LoadedCode>>>,
    /// What the code refers to by address and must outlive it: the lazy explanations of the
    /// module's functions (boxed, so they do not move). Dropped after the code (field order).
    pub(super) _keep: Vec<Box<dyn Any>>,
    /// A tier-up that waits for [`JitCode::request_tier_up`] ([`TierUp::OnRequest`](
    /// super::TierUp::OnRequest)).
    pub(super) pending: Mutex<Option<super::worker::Job>>,
}

// SAFETY: after finalization the code is only touched again by `Drop`, which runs once, when
// the last reference is gone; the mutex serializes that access anyway.
unsafe impl Send for JitCode {}
// SAFETY: as above.
unsafe impl Sync for JitCode {}

impl JitCode {
    /// Whether a [tier-up](super::JitOptions::tier_up) has switched the module's functions to
    /// the upper tier's code.
    pub fn tiered_up(&self) -> bool {
        self.module.lock().unwrap_or_else(|p| p.into_inner()).len() > 1
    }

    /// Starts the tier-up a module compiled with [`TierUp::OnRequest`](super::TierUp::OnRequest)
    /// waits for: Cranelift compiles it again on the tier-up thread, and the functions switch
    /// to that code when it is ready. `true` when this call started it; `false` when it was
    /// started before or the module has none to start.
    pub fn request_tier_up(&self) -> bool {
        let job = self
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        match job {
            Some(job) => {
                super::worker::submit(job);
                true
            }
            None => false,
        }
    }
}

impl Drop for JitCode {
    fn drop(&mut self) {
        let codes = std::mem::take(self.module.get_mut().unwrap_or_else(|p| p.into_inner()));
        // Upper tiers first: their code may be what the first tier's entries jump to. No
        // function of this module can run any more: every `Function` made from it holds an
        // `Arc<JitCode>`, and this is the last one.
        for code in codes.into_iter().rev() {
            drop(code);
        }
    }
}

/// The pointer a switchable entry of baseline code jumps through (in the module's writable
/// memory).
pub(crate) struct Switch(pub(crate) *const AtomicU64);

// SAFETY: an aligned atomic in memory that lives as long as the module's `JitCode`; the tier-up
// thread writes it only while it holds a strong reference to that code.
unsafe impl Send for Switch {}

/// The code of one compile and the switches of its entries (baseline code with a tier-up).
pub(crate) struct Built {
    pub(super) out: JitOutput,
    pub(super) switches: Vec<Switch>,
    /// Where the first tier placed the module's data objects (in module order), for its
    /// tier-up to use; empty from the other compiles.
    pub(super) data: Vec<*const u8>,
}
