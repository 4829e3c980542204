//! Code-generation options shared by `build` and `run`: the backend, its optimization level,
//! the target, and their translation into [`safecall::Options`] / [`safecall::jit::JitOptions`].

use clap::ValueEnum;
use safecall::Backend;
use safecall::backend::cranelift::CraneliftOptions;
use safecall::backend::llvm::LlvmOptions;

use crate::failure::Failure;

/// The code generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// Cranelift: fast compiles (the default).
    Cranelift,
    /// LLVM 19: optimized code (needs a safecall built with the cargo feature `llvm`).
    Llvm,
}

/// `--backend`, `--opt`, `--target`, `--cpu`, `--target-features`.
#[derive(Clone, Debug, clap::Args)]
pub struct CodegenArgs {
    /// Code generator
    #[arg(long, value_enum, default_value_t = BackendArg::Cranelift)]
    pub backend: BackendArg,

    /// Optimization level: Cranelift `none`, `speed` (default) or `speed_and_size`; LLVM `0`,
    /// `1`, `2` (default) or `3`
    #[arg(long, value_name = "LEVEL")]
    pub opt: Option<String>,

    /// Target triple. Both backends generate code for the host only: `host` or the host's
    /// triple (any vendor), e.g. `x86_64-unknown-linux-gnu`; anything else is an error
    #[arg(long, value_name = "TRIPLE")]
    pub target: Option<String>,

    /// LLVM only: target CPU, `native` (default: the host CPU with all its features),
    /// `generic`, `x86-64-v3`, `skylake`, ... (Cranelift always uses the host CPU)
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<String>,

    /// LLVM only: extra target features, e.g. `+avx2,-fma`
    #[arg(long, value_name = "FEATURES", allow_hyphen_values = true)]
    pub target_features: Option<String>,
}

/// Validated settings of both backends.
pub struct Codegen {
    /// The chosen backend.
    pub backend: Backend,
    /// Cranelift settings.
    pub cranelift: CraneliftOptions,
    /// LLVM settings.
    pub llvm: LlvmOptions,
}

impl CodegenArgs {
    /// Checks the options against the backend and translates them.
    pub fn settings(&self) -> Result<Codegen, Failure> {
        if let Some(target) = &self.target {
            check_target(target)?;
        }
        let mut cranelift = CraneliftOptions::default();
        let mut llvm = LlvmOptions::default();
        let backend = match self.backend {
            BackendArg::Cranelift => {
                for (flag, value) in [
                    ("--cpu", &self.cpu),
                    ("--target-features", &self.target_features),
                ] {
                    if value.is_some() {
                        return Err(Failure::usage(format!(
                            "{flag} applies to the LLVM backend; Cranelift compiles for the host CPU"
                        ))
                        .help("add `--backend llvm`"));
                    }
                }
                if let Some(opt) = &self.opt {
                    if !["none", "speed", "speed_and_size"].contains(&opt.as_str()) {
                        return Err(Failure::usage(format!(
                            "`--opt {opt}` is not a Cranelift optimization level: use `none`, \
                             `speed` or `speed_and_size`"
                        )));
                    }
                    cranelift.opt_level = opt.clone();
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
                Backend::Llvm
            }
        };
        Ok(Codegen {
            backend,
            cranelift,
            llvm,
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

/// Architecture and the parts after the vendor (`x86_64`, `linux-gnu`): vendors differ between
/// tools (`unknown`, `pc`) for the same target.
fn triple_key(triple: &str) -> (String, String) {
    let parts: Vec<&str> = triple.split('-').collect();
    let arch = parts.first().copied().unwrap_or_default().to_owned();
    let rest = match parts.len() {
        0 | 1 => String::new(),
        2 | 3 => parts[1..].join("-"),
        _ => parts[2..].join("-"),
    };
    (arch, rest)
}

fn check_target(target: &str) -> Result<(), Failure> {
    let host = host_triple();
    if target == "host" || target == "native" || triple_key(target) == triple_key(&host) {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "cannot generate code for `{target}`: safecall generates code for the host only ({host})"
    ))
    .help("omit --target, or compile on a machine of the target architecture"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_compare_without_the_vendor() {
        assert_eq!(
            triple_key("x86_64-unknown-linux-gnu"),
            triple_key("x86_64-pc-linux-gnu")
        );
        assert_eq!(
            triple_key("x86_64-linux-gnu"),
            triple_key("x86_64-pc-linux-gnu")
        );
        assert_ne!(
            triple_key("aarch64-unknown-linux-gnu"),
            triple_key("x86_64-unknown-linux-gnu")
        );
        assert!(check_target("host").is_ok());
        assert!(check_target(&host_triple()).is_ok());
        assert!(check_target("riscv64gc-unknown-linux-gnu").is_err());
    }
}
