//! The first tier's compile: the baseline compiler where `options` select it, else the
//! backend's own JIT.

use super::code::Built;
use super::options::JitOptions;
#[cfg(target_arch = "x86_64")]
use super::options::uses_baseline;
use super::symbols::Resolver;
use crate::error::Error;
use crate::lir;

/// Compiles a lowered module with the compiler `options` choose; returns the code and the
/// addresses of the functions named `entries`.
pub(super) fn build_code(
    module: &lir::Module,
    entries: &[String],
    resolver: &Resolver,
    options: &JitOptions,
) -> Result<Built, Error> {
    #[cfg(target_arch = "x86_64")]
    if uses_baseline(options) {
        return super::tier::build_baseline(module, entries, resolver, options.tier_up);
    }
    super::direct::build(module, entries, resolver, options, &[])
}
