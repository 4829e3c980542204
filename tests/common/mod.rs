//! Shared helpers of the check suite (`tests/check_suite.rs`): the case format, arguments
//! built from descriptors, result comparison, and the delivery paths under test.

pub mod allocator;
pub mod aot;
pub mod args;
pub mod array;
pub mod cases;
pub mod compare;
pub mod contract;
pub mod libs;
pub mod metadata;
pub mod runner;
pub mod skip;
pub mod tensor;
