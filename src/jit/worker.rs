//! The tier-up thread: one per process, started on the first tier-up, which runs the queued
//! recompiles one at a time.

use std::sync::Mutex;
use std::sync::mpsc::Sender;

/// A tier-up compile, run on the tier-up thread.
pub(super) type Job = Box<dyn FnOnce() + Send>;

/// Queues `job` for the process's one tier-up thread, started on the first job: a compile
/// then costs its caller a channel send rather than a thread start (about 50 µs on a 2-core
/// machine), and tier-ups run one at a time, on one core. A process forked after the thread
/// started has no such thread (`fork` copies only the calling one): its first job starts its
/// own. Without a thread (it could not be started) the job is dropped: there is no tier-up and
/// the first tier's code keeps running.
pub(super) fn submit(job: Job) {
    /// The thread's queue and the process it was started in.
    static QUEUE: Mutex<Option<(u32, Sender<Job>)>> = Mutex::new(None);
    let mut queue = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if queue
        .as_ref()
        .is_none_or(|(started_in, _)| *started_in != pid)
    {
        // A parent's queue is left as it is, not dropped: its thread may have held the
        // channel's locks when the process forked.
        std::mem::forget(queue.take());
        *queue = start().map(|send| (pid, send));
    }
    if let Some((_, send)) = queue.as_ref() {
        // A send fails only if the thread is gone (it never exits while the sender lives).
        let _ = send.send(job);
    }
}

/// Starts a tier-up thread; its queue's sender, or `None` if no thread could be started.
fn start() -> Option<Sender<Job>> {
    let (send, receive) = std::sync::mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("safecall-tier-up".to_owned())
        .spawn(move || {
            for job in receive {
                // A job catches its compile's panics; anything else that panics must not end
                // the thread the later tier-ups need.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })
        .ok()
        .map(|_| send)
}
