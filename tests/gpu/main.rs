//! The GPU launch tests, in a process of their own: they load the CUDA and HIP driver test
//! doubles (tests/fake_cuda, tests/fake_hip) and point `SAFECALL_LIBCUDA_PATH` and
//! `SAFECALL_LIBAMDHIP64_PATH` at them while tests run, which the other tests' driver lookups
//! and the programs they start must not see.

mod alloc;
#[allow(dead_code)] // the shared helpers: these tests use the allocator and the delivery paths
#[path = "../common/mod.rs"]
mod common;
mod handles;
mod hip_double;
mod hip_launch;
mod hip_tdm;
mod launch;
mod python;
mod settings;
mod shared_runtimes;
mod support;
mod tensormap;
mod tensormap_three;
// The baseline compiler, the only tier that tiers up, is x86-64's.
#[cfg(target_arch = "x86_64")]
mod tier_up;
