//! Shared helpers of the tests: the check suite's case format (`tests/check_suite.rs`),
//! arguments built from descriptors, result comparison, the delivery paths under test, skips,
//! diagnostics and running programs.

pub mod allocator;
pub mod aot;
pub mod args;
pub mod array;
pub mod big_int_text;
pub mod built;
pub mod cases;
pub mod command;
pub mod compare;
pub mod contract;
pub mod delivery;
pub mod diagnostics;
pub mod libs;
pub mod metadata;
pub mod runner;
pub mod skip;
pub mod tensor;
