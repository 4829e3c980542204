//! The System V x86-64 argument registers, which both the frame layout (which parameters and
//! arguments are passed on the stack) and the calling convention's code read.

use super::asm::reg::{R8, R9, RCX, RDI, RDX, RSI};

/// Integer argument registers, in order.
pub const INT_ARG_REGS: [u8; 6] = [RDI, RSI, RDX, RCX, R8, R9];

/// Float argument registers (`xmm0`..`xmm7`), in order.
pub const FLOAT_ARG_REGS: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
