//! `tensormap(..)` launch arguments (docs/ir.md, "TMA descriptors"), one job per file: the
//! encoder's inputs read from the tensor ([`prepare`]), every rule of
//! `cuTensorMapEncodeTiled` checked ([`rules`]), the driver's encoder called ([`encode`]) on a
//! miss of the launch site's cache ([`cache`]), and what a failure releases ([`cleanup`]).

pub(super) mod cache;
pub(super) mod cleanup;
mod encode;
mod prepare;
mod rules;

pub(super) use encode::storage;
pub(super) use prepare::{Prepared, prepare};
