//! The `modules_*` tests' helpers; their IR, C and C++ sources sit beside this file.

pub mod support;
