//! `tensormap(..)` launch arguments (docs/ir.md, "TMA descriptors"), one job per file: the
//! encoder's inputs read from the tensor ([`prepare`]), and on a miss of the launch site's
//! cache ([`cache`], its entries [`entry`]) the module's miss function of the descriptor's
//! kind ([`miss`], built in a [`miss_fn`]): every rule of `cuTensorMapEncodeTiled` checked
//! ([`rules`]), the driver's encoder called ([`encode`]); and what a failure releases
//! ([`cleanup`]).

pub(super) mod cache;
pub(super) mod cleanup;
mod encode;
mod entry;
mod miss;
mod miss_fn;
mod prepare;
mod rules;

pub(super) use encode::storage;
pub(super) use prepare::{Prepared, prepare};

#[cfg(test)]
mod tests;
