//! The tier-up thread: one per process, started on the first tier-up, which runs the queued
//! recompiles one at a time.

use std::sync::mpsc::Sender;
use std::sync::{Mutex, OnceLock};

/// A tier-up compile, run on the tier-up thread.
pub(super) type Job = Box<dyn FnOnce() + Send>;

/// Queues `job` for the process's one tier-up thread, started on the first job: a compile
/// then costs its caller a channel send rather than a thread start (about 50 µs on a 2-core
/// machine), and tier-ups run one at a time, on one core. Without a thread (it could not be
/// started) the job is dropped: there is no tier-up and the first tier's code keeps running.
pub(super) fn submit(job: Job) {
    static QUEUE: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (send, receive) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("safecall-tier-up".to_owned())
            .spawn(move || {
                for job in receive {
                    // A job catches its compile's panics; anything else that panics must not
                    // end the thread the later tier-ups need.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .ok()
            .map(|_| Mutex::new(send))
    });
    if let Some(queue) = queue {
        // A send fails only if the thread is gone (it never exits while the sender lives).
        let _ = queue.lock().unwrap_or_else(|p| p.into_inner()).send(job);
    }
}
