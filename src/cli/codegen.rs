//! Code-generation options shared by `build` and `run`: the backend, its optimization level,
//! the target, and their translation into [`safecall::Options`] / [`safecall::jit::JitOptions`].

use clap::ValueEnum;
use safecall::Backend;
use safecall::backend::cranelift::CraneliftOptions;
use safecall::backend::llvm::LlvmOptions;
use safecall::target::Target;

use crate::failure::Failure;

/// The code generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// Cranelift: fast compiles (the default).
    Cranelift,
    /// LLVM 19: optimized code (needs a safecall built with the cargo feature `llvm`).
    Llvm,
}

/// `--backend`, `--opt`, `--target`, `--cpu`, `--target-features`, `--omit-frame-pointer`.
#[derive(Clone, Debug, clap::Args)]
pub struct CodegenArgs {
    /// Code generator
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    pub backend: BackendArg,

    /// Optimization level: Cranelift `none` (the fastest compiles), `speed` (default: slightly
    /// faster argument checks) or `speed_and_size`; LLVM `0`, `1`, `2` (default) or `3`
    #[arg(long, value_name = "LEVEL")]
    pub opt: Option<String>,

    /// Target triple (`build` only; `run` compiles for the host): `host` (default),
    /// `x86_64-unknown-linux-gnu` or `aarch64-unknown-linux-gnu` (any vendor). A `.so` for
    /// another machine is linked with `<arch>-linux-gnu-gcc` unless `--cc` names a compiler
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,

    /// LLVM only: target CPU, `native` (default: the host CPU with all its features),
    /// `generic`, `x86-64-v3`, `skylake`, ... (`generic` for another target's machine; Cranelift
    /// always uses the host CPU, or the baseline CPU of another target)
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,

    /// LLVM only: extra target features, e.g. `+avx2,-fma`
    #[arg(long, value_name = "FEATURES", allow_hyphen_values = true)]
    pub target_features: Option<String>,

    /// LLVM only: let functions that need no frame set up none, as C compilers do at `-O2`
    /// (the default keeps a frame pointer in every function, as Cranelift does, for profilers
    /// that walk frame pointers; unwinders have `.eh_frame` either way)
    #[arg(long)]
    pub omit_frame_pointer: bool,
}

/// Validated settings of both backends.
pub struct Codegen {
    /// The chosen backend.
    pub backend: Backend,
    /// Cranelift settings.
    pub cranelift: CraneliftOptions,
    /// LLVM settings.
    pub llvm: LlvmOptions,
    /// The target, when given and not the host.
    pub target: Option<Target>,
}

impl CodegenArgs {
    /// Checks the options against the backend and translates them.
    pub fn settings(&self) -> Result<Codegen, Failure> {
        let target = match &self.target {
            Some(text) => Some(Target::parse(text).map_err(|e| {
                Failure::usage(e.to_string()).help(format!(
                    "omit --target to compile for the host ({})",
                    host_triple()
                ))
            })?)
            .filter(|t| !t.is_host()),
            None => None,
        };
        let mut cranelift = CraneliftOptions {
            target,
            ..CraneliftOptions::default()
        };
        let mut llvm = LlvmOptions {
            target,
            ..LlvmOptions::default()
        };
        let backend = match self.backend {
            BackendArg::Cranelift => {
                let cpu = "Cranelift compiles for the host CPU";
                for (flag, given, why) in [
                    ("--cpu", self.cpu.is_some(), cpu),
                    ("--target-features", self.target_features.is_some(), cpu),
                    (
                        "--omit-frame-pointer",
                        self.omit_frame_pointer,
                        "Cranelift keeps a frame pointer in every function",
                    ),
                ] {
                    if given {
                        return Err(Failure::usage(format!(
                            "{flag} applies to the LLVM backend; {why}"
                        ))
                        .help("add `--backend llvm`"));
                    }
                }
                if let Some(opt) = &self.opt {
                    cranelift.opt_level = opt.parse().map_err(|_| {
                        Failure::usage(format!(
                            "`--opt {opt}` is not a Cranelift optimization level: use `none`, \
                             `speed` or `speed_and_size`"
                        ))
                    })?;
                }
                Backend::Cranelift
            }
            BackendArg::Llvm => {
                if let Some(opt) = &self.opt {
                    llvm.opt_level = match opt.as_str() {
                        "0" => 0,
                        "1" => 1,
                        "2" => 2,
                        "3" => 3,
                        _ => {
                            return Err(Failure::usage(format!(
                                "`--opt {opt}` is not an LLVM optimization level: use 0, 1, 2 or 3"
                            )));
                        }
                    };
                }
                if let Some(cpu) = &self.cpu {
                    llvm.cpu = cpu.clone();
                }
                if let Some(features) = &self.target_features {
                    llvm.features = features.clone();
                }
                llvm.frame_pointers = !self.omit_frame_pointer;
                Backend::Llvm
            }
        };
        Ok(Codegen {
            backend,
            cranelift,
            llvm,
            target,
        })
    }
}

/// The host's target triple, as Cranelift names it.
pub fn host_triple() -> String {
    match cranelift_native::builder() {
        Ok(builder) => builder.triple().to_string(),
        Err(e) => format!("unsupported host ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_into_both_backends() {
        let args = |target: &str| CodegenArgs {
            backend: BackendArg::Cranelift,
            opt: None,
            target: Some(target.to_owned()),
            cpu: None,
            target_features: None,
            omit_frame_pointer: false,
        };
        let host = args("host").settings().unwrap();
        assert_eq!(host.target, None);
        assert_eq!(args(&host_triple()).settings().unwrap().target, None);
        let foreign = if cfg!(target_arch = "aarch64") {
            "x86_64-unknown-linux-gnu"
        } else {
            "aarch64-unknown-linux-gnu"
        };
        let codegen = args(foreign).settings().unwrap();
        let expected = Target::parse(foreign).ok();
        assert_eq!(codegen.target, expected);
        assert_eq!(codegen.cranelift.target, expected);
        assert_eq!(codegen.llvm.target, expected);
        assert!(args("riscv64gc-unknown-linux-gnu").settings().is_err());
    }
}
