//! The Cranelift backend's settings: [`CraneliftOptions`] and the enum settings it holds.

use crate::target::Target;

/// Cranelift's optimization level (its `opt_level` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OptLevel {
    /// No mid-end optimization: the fastest compiles. The code costs more instructions per
    /// call than with [`OptLevel::Speed`]: 149 against 144 inside add_one with 4 elements
    /// (`benches/instruction_count.sh`), and 433 against 339 for a launch with every launch
    /// setting (`benches/gpu_launch_count.sh`), both counted by callgrind.
    None,
    /// Optimize for speed (the default): the mid-end's e-graph rewrites and alias analysis
    /// (about 0.4 ms more for `examples/ir/launcher.scir`).
    #[default]
    Speed,
    /// Optimize for speed and code size.
    SpeedAndSize,
}

/// Cranelift's register allocator (its `regalloc_algorithm` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Regalloc {
    /// The backtracking allocator: better code (the default).
    #[default]
    Backtracking,
    /// The single-pass allocator: faster compiles, somewhat slower code.
    SinglePass,
}

/// A setting's value that is not one of its names, as [`std::str::FromStr`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSetting {
    /// The setting (`opt_level`, `regalloc`).
    pub setting: &'static str,
    /// The value given.
    pub value: String,
    /// The names the setting takes.
    pub expected: &'static [&'static str],
}

impl std::fmt::Display for UnknownSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.expected.iter().map(|n| format!("`{n}`")).collect();
        write!(
            f,
            "`{}` is not a Cranelift {}: use {}",
            self.value,
            self.setting,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownSetting {}

/// Names and values of an enum setting, in one table for parsing and printing.
macro_rules! named_setting {
    ($t:ident, $setting:literal, $($variant:ident = $name:literal),+) => {
        impl $t {
            /// The names the setting takes, as Cranelift spells them.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// Cranelift's name of the value.
            pub fn name(self) -> &'static str {
                match self { $($t::$variant => $name),+ }
            }
        }

        impl std::str::FromStr for $t {
            type Err = UnknownSetting;

            fn from_str(s: &str) -> Result<Self, UnknownSetting> {
                match s {
                    $($name => Ok($t::$variant),)+
                    _ => Err(UnknownSetting {
                        setting: $setting,
                        value: s.to_owned(),
                        expected: $t::NAMES,
                    }),
                }
            }
        }
    };
}

/// Which code generator compiles the functions of an object file that run only when a call
/// fails ([`CraneliftOptions::cold`]; the CLI and Python always
/// use the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ColdFunctions {
    /// The baseline compiler (the default): one pass, several times faster to compile; the code
    /// is larger and slower, on the error path only. x86-64 only: other targets use Cranelift.
    #[default]
    Baseline,
    /// Cranelift, with the settings of the rest of the module.
    Cranelift,
}

named_setting!(
    OptLevel,
    "optimization level",
    None = "none",
    Speed = "speed",
    SpeedAndSize = "speed_and_size"
);
named_setting!(
    ColdFunctions,
    "cold-function compiler",
    Baseline = "baseline",
    Cranelift = "cranelift"
);
named_setting!(
    Regalloc,
    "register allocator",
    Backtracking = "backtracking",
    SinglePass = "single_pass"
);

/// Code generation settings of the Cranelift backend. The defaults are those of objects and
/// shared libraries (the JIT's own are [`JitOptions::cranelift`](crate::jit::JitOptions)):
/// optimized for speed, the backtracking register allocator (the single-pass one makes
/// argument checks much slower: 268 instructions per add_one call against 170), the error paths
/// by the baseline compiler. `opt_level: OptLevel::None` (`--opt none`) trades slower checks
/// and launches for a faster compile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CraneliftOptions {
    /// The optimization level.
    pub opt_level: OptLevel,
    /// Run Cranelift's IR verifier on every function (always on in debug builds).
    pub verify: bool,
    /// The register allocator.
    pub regalloc: Regalloc,
    /// The target: `None` (the default) is the host with its CPU's features; another
    /// [`Target`] gets its architecture's baseline features (AOT only: the JIT refuses a
    /// foreign target).
    pub target: Option<Target>,
    /// Objects only: the compiler of the functions that run only when a call fails (the
    /// baseline compiler by default on x86-64; see [`ColdFunctions`]).
    pub cold: ColdFunctions,
}

impl Default for CraneliftOptions {
    fn default() -> Self {
        CraneliftOptions {
            opt_level: OptLevel::Speed,
            verify: false,
            regalloc: Regalloc::Backtracking,
            target: None,
            cold: ColdFunctions::default(),
        }
    }
}

impl CraneliftOptions {
    /// Settings for the shortest compile time: no mid-end optimization and the single-pass
    /// register allocator (the code is somewhat slower).
    pub fn fast_compile() -> Self {
        CraneliftOptions {
            opt_level: OptLevel::None,
            verify: false,
            regalloc: Regalloc::SinglePass,
            target: None,
            cold: ColdFunctions::default(),
        }
    }
}
