//! The lowered form: a small, backend-neutral, machine-level IR.
//!
//! [`crate::lower`] turns verified host IR into this form; every ABI rule (argument layouts,
//! type-index checks, error paths, ownership) has already been applied. A backend translates
//! it mechanically: typed variables, basic blocks, loads and stores at constant offsets, calls
//! to imported C functions or to other functions of the module, and data objects.
//!
//! Variables ([`Var`]) may be assigned more than once ([`VarDecl::mutable`]); a backend builds
//! SSA from them. A variable that is not `mutable` is assigned exactly once, by an instruction
//! that dominates all its uses, so a backend may map it straight to an SSA value.
//!
//! Booleans are `I8` values that are 0 or 1. Pointers are [`Ty::Ptr`] (64-bit).
//!
//! A sample dump (see [`display`]):
//!
//! ```text
//! function export __tvm_ffi_add_one(v0: ptr, v1: ptr, v2: i32, v3: ptr) -> i32 {
//! block0:
//!     ; check: number of arguments
//!     v4 = iconst.i32 2
//!     v5 = icmp ne v2, v4
//!     brif v5, block1, block2
//! block1 (cold):
//!     ...
//! ```

pub mod builder;
pub mod cfg;
pub mod display;
pub(crate) mod fold;
pub mod success_path;
pub mod verify;

use std::fmt;

/// Value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// 8-bit integer (also booleans).
    I8,
    /// 16-bit integer.
    I16,
    /// 32-bit integer.
    I32,
    /// 64-bit integer.
    I64,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 64-bit pointer.
    Ptr,
}

impl Ty {
    /// Size in bytes.
    pub fn bytes(self) -> u32 {
        match self {
            Ty::I8 => 1,
            Ty::I16 => 2,
            Ty::I32 | Ty::F32 => 4,
            Ty::I64 | Ty::F64 | Ty::Ptr => 8,
        }
    }

    /// Whether this is an integer type (not float, not pointer).
    pub fn is_int(self) -> bool {
        matches!(self, Ty::I8 | Ty::I16 | Ty::I32 | Ty::I64)
    }

    /// Whether this is a float type.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ty::I8 => "i8",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::Ptr => "ptr",
        })
    }
}

/// A variable of a [`Function`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub u32);

/// A basic block of a [`Function`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockId(pub u32);

/// A stack slot of a [`Function`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotId(pub u32);

/// A function of the [`Module`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FuncId(pub u32);

/// A data object of the [`Module`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataId(pub u32);

/// An imported (external) function of the [`Module`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImportId(pub u32);

/// Declaration of a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarDecl {
    /// Type.
    pub ty: Ty,
    /// Assigned more than once (or not in a dominating position).
    pub mutable: bool,
}

/// How a narrow integer argument or result is widened at a C call boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ext {
    /// No extension (64-bit values, floats, pointers, and calls between generated functions).
    #[default]
    None,
    /// Sign-extended (signed C integer types narrower than 32 bits).
    Sext,
    /// Zero-extended (unsigned C integer types and `bool` narrower than 32 bits).
    Uext,
}

/// A C calling-convention signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// Parameter types.
    pub params: Vec<Ty>,
    /// Return type, `None` for void.
    pub ret: Option<Ty>,
    /// Extension of each parameter (empty: none for all).
    pub param_ext: Vec<Ext>,
    /// Extension of the return value.
    pub ret_ext: Ext,
}

impl Signature {
    /// A signature without argument extensions.
    pub fn new(params: Vec<Ty>, ret: Option<Ty>) -> Self {
        Signature {
            params,
            ret,
            param_ext: Vec::new(),
            ret_ext: Ext::None,
        }
    }

    /// Extension of parameter `i`.
    pub fn param_ext(&self, i: usize) -> Ext {
        self.param_ext.get(i).copied().unwrap_or_default()
    }
}

/// Symbol visibility of a function or data object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// Exported from the object / library.
    Export,
    /// Local to the object.
    Local,
}

/// Integer and float binary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    /// Wrapping add.
    Iadd,
    /// Wrapping subtract.
    Isub,
    /// Wrapping multiply.
    Imul,
    /// Signed division; the divisor is never 0 and never -1 with a MIN dividend.
    Sdiv,
    /// Unsigned division; the divisor is never 0.
    Udiv,
    /// Signed remainder; the divisor is never 0 or -1.
    Srem,
    /// Unsigned remainder; the divisor is never 0.
    Urem,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise xor.
    Xor,
    /// Shift left; the amount is already below the bit width.
    Shl,
    /// Arithmetic shift right; the amount is already below the bit width.
    Sshr,
    /// Logical shift right; the amount is already below the bit width.
    Ushr,
    /// Signed minimum.
    Smin,
    /// Signed maximum.
    Smax,
    /// Unsigned minimum.
    Umin,
    /// Unsigned maximum.
    Umax,
    /// Float add.
    Fadd,
    /// Float subtract.
    Fsub,
    /// Float multiply.
    Fmul,
    /// Float divide.
    Fdiv,
    /// Float minimum, NaN if either operand is NaN.
    Fmin,
    /// Float maximum, NaN if either operand is NaN.
    Fmax,
}

/// Unary operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    /// Wrapping integer negation.
    Ineg,
    /// Bitwise not.
    Bnot,
    /// Float negation.
    Fneg,
}

/// Integer comparison conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntCC {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// signed `<`
    Slt,
    /// signed `<=`
    Sle,
    /// signed `>`
    Sgt,
    /// signed `>=`
    Sge,
    /// unsigned `<`
    Ult,
    /// unsigned `<=`
    Ule,
    /// unsigned `>`
    Ugt,
    /// unsigned `>=`
    Uge,
}

/// Float comparison conditions (IEEE: ordered, except `Ne` which is true for NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatCC {
    /// ordered `==`
    Eq,
    /// unordered or `!=`
    Ne,
    /// ordered `<`
    Lt,
    /// ordered `<=`
    Le,
    /// ordered `>`
    Gt,
    /// ordered `>=`
    Ge,
}

/// Conversions between types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvOp {
    /// Sign-extend to a wider integer.
    Sext,
    /// Zero-extend to a wider integer.
    Uext,
    /// Truncate to a narrower integer.
    Trunc,
    /// Float to signed integer, saturating, NaN to 0.
    FtoSsat,
    /// Float to unsigned integer, saturating, NaN to 0.
    FtoUsat,
    /// Signed integer to float, nearest.
    StoF,
    /// Unsigned integer to float, nearest.
    UtoF,
    /// f32 to f64.
    Fpromote,
    /// f64 to f32, nearest.
    Fdemote,
    /// Pointer to i64.
    PtrToInt,
    /// i64 to pointer.
    IntToPtr,
    /// Reinterpret bits (same size: i64 <-> f64, i32 <-> f32).
    Bitcast,
}

/// A symbol whose address can be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symbol {
    /// A data object of this module.
    Data(DataId),
    /// A function of this module.
    Func(FuncId),
}

/// What a call calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callee {
    /// An imported function (its signature is the import's).
    Import(ImportId),
    /// A function of this module (its signature is the function's).
    Func(FuncId),
    /// A function pointer with an explicit signature.
    Indirect(Var, Signature),
}

/// An instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    /// `dst = value` (an integer constant, truncated to `dst`'s type; a pointer constant for `Ptr`).
    Iconst {
        /// Destination.
        dst: Var,
        /// Value.
        value: i64,
    },
    /// `dst = float(bits)` (`f64` bits for both float types; f32 constants are exact).
    Fconst {
        /// Destination.
        dst: Var,
        /// `f64::to_bits` of the value.
        bits: u64,
    },
    /// `dst = src` (same type).
    Copy {
        /// Destination.
        dst: Var,
        /// Source.
        src: Var,
    },
    /// `dst = op src`.
    Unary {
        /// Destination.
        dst: Var,
        /// Operation.
        op: UnOp,
        /// Operand.
        src: Var,
    },
    /// `dst = a op b` (all the same type).
    Binary {
        /// Destination.
        dst: Var,
        /// Operation.
        op: BinOp,
        /// Left operand.
        a: Var,
        /// Right operand.
        b: Var,
    },
    /// `dst: i8 = a cc b` for integers or pointers.
    Icmp {
        /// Destination (`I8`).
        dst: Var,
        /// Condition.
        cc: IntCC,
        /// Left operand.
        a: Var,
        /// Right operand.
        b: Var,
    },
    /// `dst: i8 = a cc b` for floats.
    Fcmp {
        /// Destination (`I8`).
        dst: Var,
        /// Condition.
        cc: FloatCC,
        /// Left operand.
        a: Var,
        /// Right operand.
        b: Var,
    },
    /// `dst = cond != 0 ? a : b`.
    Select {
        /// Destination.
        dst: Var,
        /// An `I8` condition.
        cond: Var,
        /// Value when true.
        a: Var,
        /// Value when false.
        b: Var,
    },
    /// `dst = op(src)`, converting to `dst`'s type.
    Convert {
        /// Destination.
        dst: Var,
        /// Conversion.
        op: ConvOp,
        /// Operand.
        src: Var,
    },
    /// `dst = *(addr + offset)` of `dst`'s type.
    Load {
        /// Destination.
        dst: Var,
        /// Address (`Ptr`).
        addr: Var,
        /// Constant byte offset.
        offset: i32,
    },
    /// `*(addr + offset) = value`.
    Store {
        /// Address (`Ptr`).
        addr: Var,
        /// Constant byte offset.
        offset: i32,
        /// Stored value (its type is the stored type).
        value: Var,
    },
    /// `dst = ptr + offset` (`offset` an `I64` byte count, possibly negative).
    PtrAdd {
        /// Destination (`Ptr`).
        dst: Var,
        /// Base pointer.
        ptr: Var,
        /// Byte offset (`I64`).
        offset: Var,
    },
    /// `dst = &slot + offset`.
    StackAddr {
        /// Destination (`Ptr`).
        dst: Var,
        /// Slot.
        slot: SlotId,
        /// Byte offset.
        offset: i32,
    },
    /// `dst = &symbol`.
    SymbolAddr {
        /// Destination (`Ptr`).
        dst: Var,
        /// Symbol.
        symbol: Symbol,
    },
    /// A call.
    Call {
        /// Receives the return value.
        dst: Option<Var>,
        /// Target.
        callee: Callee,
        /// Arguments.
        args: Vec<Var>,
    },
    /// `dst = *addr; if dst == expected { *addr = replacement }`, atomically and sequentially
    /// consistent (`I64` operands and result, `addr` 8-byte aligned). Loads and stores are not
    /// moved across it.
    AtomicCas {
        /// Receives the value found at `addr`.
        dst: Var,
        /// Address (`Ptr`).
        addr: Var,
        /// The value compared with.
        expected: Var,
        /// The value stored when equal.
        replacement: Var,
    },
    /// The following instructions implement source item `index` of [`Function::sources`].
    Source(u32),
}

/// How a block ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Terminator {
    /// Unconditional jump.
    Jump(BlockId),
    /// `if cond != 0 { then } else { otherwise }`.
    Branch {
        /// An `I8` condition.
        cond: Var,
        /// Target when true.
        then_block: BlockId,
        /// Target when false.
        else_block: BlockId,
    },
    /// Return (with a value when the signature has one).
    Return(Option<Var>),
}

/// A basic block.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Instructions.
    pub insts: Vec<Inst>,
    /// Terminator.
    pub term: Terminator,
    /// Rarely executed (error paths): a backend lays it out of line.
    pub cold: bool,
}

/// A stack slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackSlot {
    /// Size in bytes.
    pub size: u32,
    /// Alignment in bytes (a power of two).
    pub align: u32,
}

/// A function.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// Symbol name.
    pub name: String,
    /// Visibility.
    pub linkage: Linkage,
    /// Signature; parameters arrive in `vars[0..params.len()]`.
    pub sig: Signature,
    /// Variables.
    pub vars: Vec<VarDecl>,
    /// Stack slots.
    pub slots: Vec<StackSlot>,
    /// Blocks; `blocks[0]` is the entry.
    pub blocks: Vec<Block>,
    /// The whole function is rarely called (error helpers).
    pub cold: bool,
    /// Source descriptions referenced by [`Inst::Source`] (for annotated dumps).
    pub sources: Vec<String>,
}

impl Function {
    /// Type of a variable.
    pub fn ty(&self, v: Var) -> Ty {
        self.vars[v.0 as usize].ty
    }
}

/// A relocation inside a data object: `contents[offset..offset + 8] = &symbol + addend`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataReloc {
    /// Byte offset in the data object.
    pub offset: u32,
    /// Target.
    pub symbol: Symbol,
    /// Addend.
    pub addend: i64,
}

/// A data object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Data {
    /// Symbol name.
    pub name: String,
    /// Visibility.
    pub linkage: Linkage,
    /// Written at run time (by the generated code or by a loader).
    pub writable: bool,
    /// Alignment in bytes.
    pub align: u32,
    /// Initial contents.
    pub contents: Vec<u8>,
    /// Pointers inside the contents.
    pub relocs: Vec<DataReloc>,
    /// Place in this section instead of the default data section (e.g. `.init_array`).
    pub section: Option<String>,
}

/// An external function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// Symbol name.
    pub name: String,
    /// Signature.
    pub sig: Signature,
}

/// A lowered module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Module {
    /// Module name.
    pub name: String,
    /// Functions.
    pub functions: Vec<Function>,
    /// Data objects.
    pub data: Vec<Data>,
    /// External functions.
    pub imports: Vec<Import>,
    /// Aliases: `(alias, target)` export `alias` at the address of function `target`.
    pub aliases: Vec<(String, FuncId)>,
}

impl Module {
    /// The function with this id.
    pub fn func(&self, id: FuncId) -> &Function {
        &self.functions[id.0 as usize]
    }

    /// The number of instructions in all blocks of all functions (terminators not counted):
    /// the size of the module, for sizing buffers and choosing how to compile it.
    pub fn inst_count(&self) -> usize {
        self.functions
            .iter()
            .flat_map(|f| &f.blocks)
            .map(|b| b.insts.len())
            .sum()
    }

    /// The data object with this id.
    pub fn data_object(&self, id: DataId) -> &Data {
        &self.data[id.0 as usize]
    }

    /// The import with this id.
    pub fn import(&self, id: ImportId) -> &Import {
        &self.imports[id.0 as usize]
    }

    /// Signature of a callee.
    pub fn callee_sig<'a>(&'a self, callee: &'a Callee) -> &'a Signature {
        match callee {
            Callee::Import(id) => &self.import(*id).sig,
            Callee::Func(id) => &self.func(*id).sig,
            Callee::Indirect(_, sig) => sig,
        }
    }
}
