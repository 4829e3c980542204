//! Code-generation targets: the machines whose objects and shared libraries safecall can
//! write (Linux with glibc on x86-64 and AArch64), whichever of them the compiler runs on.
//!
//! Everything target-specific follows the [`Target`]: the backends' instruction set (and with
//! it the calling convention, PIC relocations and `.eh_frame` registers), the data layout, the
//! object file's architecture, and the C compiler that links a shared library.

/// An instruction-set architecture safecall generates code for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86-64 (AMD64).
    X86_64,
    /// AArch64 (Arm64: NVIDIA Grace, AWS Graviton, ...).
    Aarch64,
}

impl Arch {
    /// The architecture's name in target triples (`x86_64`, `aarch64`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The architecture this program was compiled for, if safecall supports it.
    pub fn host() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }
}

/// A target: an architecture on Linux with glibc (`<arch>-unknown-linux-gnu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    arch: Arch,
}

/// The triples [`Target::parse`] accepts (besides `host`), for messages.
pub const SUPPORTED_TARGETS: [&str; 2] = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];

impl Target {
    /// The target for `arch`.
    pub fn new(arch: Arch) -> Target {
        Target { arch }
    }

    /// The machine safecall runs on, if it is a supported target.
    pub fn host() -> Option<Target> {
        Arch::host().map(Target::new)
    }

    /// Parses a target triple: `host` (or `native`), or `<arch>-<vendor>-linux-gnu` /
    /// `<arch>-linux-gnu` with `arch` one of `x86_64`, `aarch64` (any vendor: tools spell the
    /// same target `unknown`, `pc` or nothing).
    pub fn parse(text: &str) -> Result<Target, UnsupportedTarget> {
        let unsupported = || UnsupportedTarget {
            given: text.to_owned(),
        };
        if text == "host" || text == "native" {
            return Target::host().ok_or_else(unsupported);
        }
        let parts: Vec<&str> = text.split('-').collect();
        let (arch, rest) = match parts.as_slice() {
            [arch, _vendor, os, env] => (*arch, [*os, *env]),
            [arch, os, env] => (*arch, [*os, *env]),
            _ => return Err(unsupported()),
        };
        if rest != ["linux", "gnu"] {
            return Err(unsupported());
        }
        let arch = match arch {
            "x86_64" => Arch::X86_64,
            "aarch64" => Arch::Aarch64,
            _ => return Err(unsupported()),
        };
        Ok(Target::new(arch))
    }

    /// The architecture.
    pub fn arch(self) -> Arch {
        self.arch
    }

    /// The canonical triple, e.g. `aarch64-unknown-linux-gnu`.
    pub fn triple(self) -> &'static str {
        match self.arch {
            Arch::X86_64 => SUPPORTED_TARGETS[0],
            Arch::Aarch64 => SUPPORTED_TARGETS[1],
        }
    }

    /// Whether this is the machine safecall runs on (code for it can be loaded in-process).
    pub fn is_host(self) -> bool {
        Target::host() == Some(self)
    }

    /// The C compiler driver that links shared libraries for this target when none is given:
    /// `None` for the host (the caller uses `$CC`, else `cc`), else the GNU cross compiler
    /// `<arch>-linux-gnu-gcc` (Debian's `gcc-aarch64-linux-gnu` package and its peers).
    pub fn default_cross_cc(self) -> Option<String> {
        if self.is_host() {
            None
        } else {
            Some(format!("{}-linux-gnu-gcc", self.arch.name()))
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.triple())
    }
}

/// A target triple safecall cannot generate code for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedTarget {
    /// The triple as given.
    pub given: String,
}

impl std::fmt::Display for UnsupportedTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot generate code for `{}`: the supported targets are {} (or `host`)",
            self.given,
            SUPPORTED_TARGETS.join(", ")
        )
    }
}

impl std::error::Error for UnsupportedTarget {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_parse_with_any_vendor() {
        for text in [
            "aarch64-unknown-linux-gnu",
            "aarch64-linux-gnu",
            "aarch64-nvidia-linux-gnu",
        ] {
            assert_eq!(Target::parse(text).unwrap().arch(), Arch::Aarch64, "{text}");
        }
        assert_eq!(
            Target::parse("x86_64-pc-linux-gnu").unwrap().triple(),
            "x86_64-unknown-linux-gnu"
        );
        assert_eq!(Target::parse("host").ok(), Target::host());
    }

    #[test]
    fn unsupported_targets_are_errors_listing_the_supported_ones() {
        for text in [
            "riscv64gc-unknown-linux-gnu",
            "aarch64-apple-darwin",
            "x86_64-unknown-linux-musl",
            "aarch64",
            "",
        ] {
            let e = Target::parse(text).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "cannot generate code for `{text}`: the supported targets are \
                     x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu (or `host`)"
                )
            );
        }
    }

    #[test]
    fn foreign_targets_link_with_the_gnu_cross_compiler() {
        let aarch64 = Target::new(Arch::Aarch64);
        let x86 = Target::new(Arch::X86_64);
        let (foreign, host) = if aarch64.is_host() {
            (x86, aarch64)
        } else {
            (aarch64, x86)
        };
        assert_eq!(host.default_cross_cc(), None);
        assert_eq!(
            foreign.default_cross_cc().unwrap(),
            format!("{}-linux-gnu-gcc", foreign.arch().name())
        );
    }
}
