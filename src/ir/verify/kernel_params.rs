//! Launch arguments against the kernel's own parameter list, as the device binary declares it
//! (docs/ir.md, "Launch arguments and the kernel's parameters").
//!
//! Each device binary is read once per module (`Verifier::kernel_tables`); a binary or
//! kernel whose table cannot be read is a warning, and its launches go unchecked. A launch of a
//! kernel with a known table must pass as many arguments as it has parameters, each of the
//! parameter's size, at most as aligned as the argument, and (PTX only, which gives types) of a
//! kind the type takes.

use super::super::model::{
    BinaryFormat, FloatType, Launch, ScalarType, TdmArg, tensormap_limits as limits,
};
use super::super::source_map::StmtPath;
use super::{DeviceBinaryPart, FnVerifier, Location, StmtFocus, Verifier, VerifyWarning};
use crate::gpu_binary::{
    self, KernelParam, KernelTables, Lookup, ParamDecl, PtxType, ptx::PtxClass,
};

/// What the driver sees of a launch argument: how many bytes, their alignment, what they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ArgLayout {
    size: u32,
    align: u32,
    kind: ArgKind,
}

/// What a launch argument's bytes hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArgKind {
    Bool,
    Int,
    Float(FloatType),
    Ptr,
    /// A TMA or TDM descriptor: opaque bytes.
    Bytes,
}

/// The type of a verified launch argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ArgType {
    /// A scalar or pointer.
    Scalar(ScalarType),
    /// A `tensormap(..)` descriptor.
    TensorMap,
    /// A `tdm(..)` descriptor of a tensor of this rank.
    Tdm {
        /// The tensor's rank, which decides the descriptor's size.
        rank: usize,
    },
}

impl std::fmt::Display for ArgType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArgType::Scalar(s) => write!(f, "{s}"),
            ArgType::TensorMap => write!(f, "tensormap"),
            ArgType::Tdm { rank } => write!(f, "rank-{rank} tdm"),
        }
    }
}

/// The layout of an argument of type `t`: the one place that maps IR argument types to what
/// a kernel receives.
fn arg_layout(t: ArgType) -> ArgLayout {
    let (size, kind) = match t {
        ArgType::Scalar(ScalarType::Bool) => (1, ArgKind::Bool),
        ArgType::Scalar(ScalarType::Int(i)) => (i.bits() / 8, ArgKind::Int),
        ArgType::Scalar(ScalarType::Float(f)) => (float_type(f).size(), ArgKind::Float(f)),
        ArgType::Scalar(ScalarType::Ptr) => (8, ArgKind::Ptr),
        ArgType::TensorMap => {
            return ArgLayout {
                size: limits::MAP_SIZE,
                align: limits::MAP_ALIGN,
                kind: ArgKind::Bytes,
            };
        }
        ArgType::Tdm { rank } => {
            return ArgLayout {
                size: TdmArg::param_size(rank),
                align: 4,
                kind: ArgKind::Bytes,
            };
        }
    };
    ArgLayout {
        size,
        align: size,
        kind,
    }
}

/// The PTX type of an IR float type.
fn float_type(f: FloatType) -> PtxType {
    match f {
        FloatType::F32 => PtxType::F32,
        FloatType::F64 => PtxType::F64,
        FloatType::F16 => PtxType::F16,
        FloatType::BF16 => PtxType::Bf16,
    }
}

/// Whether a PTX parameter of type `ty` takes an argument of `kind` (of the same size): an
/// integer or bool any integer or bits type, a float its own type or bits, a pointer `u64` or
/// `b64`.
fn takes(ty: PtxType, kind: ArgKind) -> bool {
    match kind {
        ArgKind::Bool | ArgKind::Int => ty.class() != PtxClass::Float,
        ArgKind::Float(f) => ty == float_type(f) || ty.class() == PtxClass::Bits,
        ArgKind::Ptr => matches!(ty, PtxType::U64 | PtxType::B64),
        ArgKind::Bytes => false,
    }
}

/// What a PTX parameter type takes, for messages.
fn what_it_takes(ty: PtxType) -> String {
    let bits = ty.size() * 8;
    if ty == PtxType::U64 {
        return "a 64-bit integer or a pointer".to_owned();
    }
    match ty.class() {
        PtxClass::Signed | PtxClass::Unsigned if bits == 8 => {
            "an 8-bit integer or a bool".to_owned()
        }
        PtxClass::Signed | PtxClass::Unsigned => format!("a {bits}-bit integer"),
        PtxClass::Float => format!("only {}", ty.keyword()),
        PtxClass::Bits => format!("any {}-byte value", ty.size()),
    }
}

/// Why argument `arg` does not fit parameter `p`, if it does not.
fn mismatch(p: &KernelParam, arg: ArgType) -> Option<String> {
    let a = arg_layout(arg);
    if p.size != a.size {
        return Some(format!(
            "is {arg} ({} bytes), but the kernel's parameter is {p} ({} bytes)",
            a.size, p.size
        ));
    }
    let ParamDecl::Ptx { ty, count, align } = p.decl else {
        return None;
    };
    if align > a.align {
        return Some(format!(
            "is {arg} (aligned to {} bytes), but the kernel's parameter is {p}, aligned to \
             {align} bytes",
            a.align
        ));
    }
    match count {
        Some(_) if ty.class() == PtxClass::Bits => None,
        None if a.kind == ArgKind::Bytes => Some(format!(
            "is a tensormap, but the kernel's parameter is {p}; a descriptor is `.param .align \
             64 .b8 NAME[128]`"
        )),
        Some(_) => Some(format!(
            "is {arg}, but the kernel's parameter is {p}, an array of {}",
            ty.keyword()
        )),
        None if takes(ty, a.kind) => None,
        None => Some(format!(
            "is {arg}, but the kernel's parameter is {p}, which takes {}",
            what_it_takes(ty)
        )),
    }
}

/// The kernel parameter tables of a device binary image of `format`: what the verifier checks
/// every launch of its kernels against. Beyond them it reads of an image only whether it is
/// empty and, for PTX, where a NUL byte is; so two non-empty cubins, fat binaries or code
/// objects whose tables agree for a kernel verify the same launches of it alike. An unreadable
/// image is an [`Err`] with the reason.
pub fn kernel_tables(format: BinaryFormat, data: &[u8]) -> Result<KernelTables, String> {
    match format {
        BinaryFormat::Ptx => gpu_binary::ptx::read(data),
        BinaryFormat::Cubin => gpu_binary::cubin::read(data),
        BinaryFormat::Fatbin => gpu_binary::fatbin::read(data),
        BinaryFormat::Hsaco => gpu_binary::hsaco::read(data),
        BinaryFormat::Hipfb => gpu_binary::offload_bundle::read(data),
    }
}

/// `u64, f32, b8[128] align 64`.
fn list<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Verifier<'_> {
    /// Reads every device binary's kernel parameter tables once; warns of each binary or
    /// listed kernel whose table is unknown.
    pub(super) fn kernel_tables(&mut self) {
        let m = self.m;
        for (index, b) in m.device_binaries.iter().enumerate() {
            let warn = |part, message| VerifyWarning {
                subject: format!("device_binary `{}`", b.name),
                location: Location::DeviceBinary { index, part },
                message,
            };
            if b.data.is_empty() {
                self.kernel_tables.push(None);
                continue;
            }
            let tables = match kernel_tables(b.format, &b.data) {
                Ok(t) => t,
                Err(why) => {
                    self.warnings.push(warn(
                        DeviceBinaryPart::Data,
                        format!(
                            "the kernel parameters of device binary `{}` ({}) cannot be read: \
                             {why}; its launches are not checked against them",
                            b.name,
                            b.format.keyword()
                        ),
                    ));
                    self.kernel_tables.push(None);
                    continue;
                }
            };
            for (k, kernel) in b.kernels.iter().enumerate() {
                let message = match tables.lookup(kernel) {
                    Lookup::Known(_) => continue,
                    Lookup::Unknown(why) => format!(
                        "the parameters of kernel `{kernel}` are unknown ({why}); its launches \
                         are not checked against them"
                    ),
                    Lookup::Absent => format!(
                        "kernel `{kernel}` is not in the parameter table of device binary `{}` \
                         ({} lists {}); its launches are not checked against it",
                        b.name,
                        b.format.keyword(),
                        tables.names()
                    ),
                };
                self.warnings
                    .push(warn(DeviceBinaryPart::Kernel(k), message));
            }
            self.kernel_tables.push(Some(tables));
        }
    }
}

impl FnVerifier<'_, '_> {
    /// Checks the arguments of launch `l` (each with the index of its first expression and
    /// its type) against the kernel's parameters, when its binary gives them.
    pub(super) fn kernel_args(
        &mut self,
        path: &StmtPath,
        l: &Launch,
        typed: &[(usize, Option<ArgType>)],
    ) {
        let binaries = &self.v.m.device_binaries;
        let Some(index) = binaries.iter().position(|b| b.name == l.binary) else {
            return;
        };
        let Some(Some(tables)) = self.v.kernel_tables.get(index) else {
            return;
        };
        let Lookup::Known(params) = tables.lookup(&l.kernel) else {
            return;
        };
        // An argument of a type the verifier already rejected is not checked again.
        let Some(args) = typed.iter().map(|a| a.1).collect::<Option<Vec<ArgType>>>() else {
            return;
        };
        if params.len() != args.len() {
            let message = format!(
                "kernel `{}` takes {} parameter{} ({} bytes: {}); the launch passes {} ({})",
                l.kernel,
                params.len(),
                if params.len() == 1 { "" } else { "s" },
                gpu_binary::buffer_size(params),
                list(params),
                args.len(),
                list(&args)
            );
            self.stmt_err(path, StmtFocus::Whole, message);
            return;
        }
        let found: Vec<(usize, String)> = params
            .iter()
            .zip(&args)
            .enumerate()
            .filter_map(|(k, (p, a))| mismatch(p, *a).map(|why| (k, why)))
            .collect();
        for (k, why) in found {
            let message = format!("kernel argument {k} of `{}` {why}", l.kernel);
            // A `tdm(..)` has no expression to point at: the statement is.
            let focus = match args[k] {
                ArgType::Tdm { .. } => StmtFocus::Whole,
                ArgType::Scalar(_) | ArgType::TensorMap => StmtFocus::Expr(vec![typed[k].0]),
            };
            self.stmt_err(path, focus, message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::model::IntType;
    use super::*;

    fn ptx(ty: PtxType) -> KernelParam {
        KernelParam {
            size: ty.size(),
            decl: ParamDecl::Ptx {
                ty,
                count: None,
                align: ty.size(),
            },
        }
    }

    #[test]
    fn compatibility_rules() {
        let i32_ = ScalarType::Int(IntType::I32);
        let f32_ = ScalarType::Float(FloatType::F32);
        let [i32_, f32_, ptr, bool_] =
            [i32_, f32_, ScalarType::Ptr, ScalarType::Bool].map(ArgType::Scalar);
        assert_eq!(mismatch(&ptx(PtxType::U64), ptr), None);
        assert_eq!(mismatch(&ptx(PtxType::B64), ptr), None);
        assert!(mismatch(&ptx(PtxType::S64), ptr).is_some());
        assert!(
            mismatch(&ptx(PtxType::U64), i32_)
                .unwrap()
                .contains("4 bytes")
        );
        assert_eq!(mismatch(&ptx(PtxType::U32), i32_), None);
        assert_eq!(mismatch(&ptx(PtxType::B32), f32_), None);
        assert!(
            mismatch(&ptx(PtxType::F32), i32_)
                .unwrap()
                .contains("takes only f32")
        );
        assert!(mismatch(&ptx(PtxType::U32), f32_).is_some());
        assert!(mismatch(&ptx(PtxType::F16x2), f32_).is_some());
        assert_eq!(mismatch(&ptx(PtxType::U8), bool_), None);
        let bytes = |count, align| KernelParam {
            size: count,
            decl: ParamDecl::Ptx {
                ty: PtxType::B8,
                count: Some(count),
                align,
            },
        };
        assert_eq!(mismatch(&bytes(8, 8), ptr), None);
        assert!(
            mismatch(&bytes(8, 16), ptr)
                .unwrap()
                .contains("aligned to 16")
        );
        let cubin = KernelParam {
            size: 4,
            decl: ParamDecl::Cubin { offset: 0 },
        };
        assert_eq!(mismatch(&cubin, f32_), None);
        assert!(mismatch(&cubin, ptr).is_some());
        assert_eq!(mismatch(&bytes(128, 64), ArgType::TensorMap), None);
        assert!(mismatch(&bytes(64, 64), ArgType::TensorMap).is_some());
        assert!(mismatch(&ptx(PtxType::U64), ArgType::TensorMap).is_some());
        let cubin_map = KernelParam {
            size: 128,
            decl: ParamDecl::Cubin { offset: 0 },
        };
        assert_eq!(mismatch(&cubin_map, ArgType::TensorMap), None);
    }
}
