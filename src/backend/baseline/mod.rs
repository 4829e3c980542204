//! The baseline compiler: lowered modules to x86-64 machine code in one pass, for the JIT's
//! first tier.
//!
//! Every lowered instruction becomes a short fixed sequence of machine instructions (see
//! `isel`): operands are read from the variables' stack slots (or are immediates, for
//! variables defined by a constant), the result is computed in a scratch register and written
//! back to its slot. There is no register allocator, no SSA construction and no global
//! optimization, only local rules, each decided from what one pass over the function counted
//! (`frame`): constants become immediates; a result read once by the next instruction stays
//! in its register; a branch on comparisons combined by `&&`, `||` and `!` becomes a jump per
//! comparison (`branch`), and one on a comparison the flags still hold needs no `test`; a
//! comparison of a variable with a constant reads its slot in place, and a load read once by
//! such a comparison is not emitted (the comparison reads the memory); the last address loaded
//! through stays in `r10` while nothing can have changed it; instructions whose results nothing
//! reads are left out; a jump to a block that only returns a constant returns in place; cold
//! blocks are laid out after the others.
//! Instructions are encoded by `cranelift-assembler-x64`, the encoder Cranelift's own x64
//! backend uses (already built with Cranelift, and tested against XED and capstone).
//!
//! The output is an [`Image`](image::Image): the code of every function in one buffer, the data
//! objects, and the relocations that [`Image::link`](image::Image::link) resolves when it
//! copies them into executable memory; `jit` does that in the pooled memory the JIT uses.
//!
//! x86-64 (System V) only.

mod abi;
mod asm;
mod branch;
mod call;
mod compile;
mod condition;
mod error;
mod float;
mod frame;
mod image;
mod isel;
mod jit;
mod link;
mod relocatable;
#[cfg(test)]
mod rule_tests;
#[cfg(test)]
mod tests;

pub use image::RelocKind;
pub(crate) use jit::jit;
pub(crate) use relocatable::{FRAME_SETUP, FrameStep, compile_relocatable};
