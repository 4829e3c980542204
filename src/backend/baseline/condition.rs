//! The plan of a block's branch condition (`branch` makes and compiles it): its tree, and
//! the block's instructions it computes. Data only, kept by the function's compiler.

use super::asm::Label;
use crate::lir::{IntCC, Var};

/// How a block's branch is compiled.
#[derive(Clone, Copy, Debug)]
pub enum Plan {
    /// The condition is tested as it is.
    None,
    /// The block's last instruction, this comparison, is the condition: computed by the
    /// branch.
    LastCompare { cc: IntCC, a: Var, b: Var },
    /// The tree in [`BranchScratch::nodes`] computes the instructions in
    /// [`BranchScratch::absorbed`].
    Tree,
}

/// A node of a branch condition, in [`BranchScratch::nodes`].
#[derive(Clone, Copy, Debug)]
pub enum Node {
    /// Both hold (indices of the nodes).
    And(u32, u32),
    /// Either holds.
    Or(u32, u32),
    /// The node does not hold.
    Not(u32),
    /// A comparison computed at the branch.
    Cmp { cc: IntCC, a: Var, b: Var },
    /// A boolean variable tested at the branch.
    Test(Var),
}

/// What is left to compile of a condition.
#[derive(Clone, Copy)]
pub enum Work {
    /// The node, its targets when it holds and when not, and the label bound right after it
    /// (the fall-through), if known.
    Node(u32, Label, Label, Option<Label>),
    /// Binds the label here.
    Bind(Label),
}

/// The plan of one block's branch, in vectors kept for the whole function (a branch per block
/// allocates nothing once they have grown).
#[derive(Default)]
pub struct BranchScratch {
    /// The condition's tree, its root first.
    pub nodes: Vec<Node>,
    /// Variables of the tree not yet found, with their node.
    pub wanted: Vec<(Var, u32)>,
    /// Indices of the block's instructions the branch computes, ascending once planned.
    pub absorbed: Vec<u32>,
    /// Mutable variables assigned after the instruction being looked at.
    pub assigned_after: Vec<Var>,
    /// The work list of the branch's compilation.
    pub work: Vec<Work>,
}
