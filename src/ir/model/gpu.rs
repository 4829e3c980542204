//! The GPU items of the model: device binaries and kernel launches.

use super::Expr;

/// The format of a [`DeviceBinary`], as the CUDA driver's `cuLibraryLoadData` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryFormat {
    /// A CUDA ELF binary for one GPU architecture (`nvcc -cubin`).
    Cubin,
    /// A fat binary holding cubins and/or PTX for several architectures.
    Fatbin,
    /// PTX assembly, compiled by the driver at load time (the lowering appends the NUL the
    /// driver needs).
    Ptx,
}

impl BinaryFormat {
    /// The keyword of the text format (`cubin`, `fatbin`, `ptx`).
    pub fn keyword(self) -> &'static str {
        match self {
            BinaryFormat::Cubin => "cubin",
            BinaryFormat::Fatbin => "fatbin",
            BinaryFormat::Ptx => "ptx",
        }
    }

    /// The format named by `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<Self> {
        [BinaryFormat::Cubin, BinaryFormat::Fatbin, BinaryFormat::Ptx]
            .into_iter()
            .find(|f| f.keyword() == keyword)
    }
}

/// A GPU device binary embedded in the module; [`Stmt::Launch`](super::Stmt::Launch) launches
/// its kernels through the CUDA driver API, loading it once per process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceBinary {
    /// Name, unique among the module's device binaries.
    pub name: String,
    /// How `data` is encoded.
    pub format: BinaryFormat,
    /// The image (at least one byte).
    pub data: Vec<u8>,
    /// Entry names of the kernels it holds that the module launches (`.entry` names in PTX).
    pub kernels: Vec<String>,
}

/// A kernel launch: `launch BINARY.KERNEL[grid=(..), block=(..), ...](args);`.
///
/// Its expressions, in the order [`Launch::exprs`] lists them (the order of
/// [`source_map`](crate::ir::source_map) paths): grid dims, block dims, cluster dims, then
/// `shared_mem`, `stream` and `device` when given, then the kernel's arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The [`DeviceBinary`] holding the kernel.
    pub binary: String,
    /// The kernel's entry name (one of the binary's `kernels`).
    pub kernel: String,
    /// Grid dimensions in blocks, 1 to 3 integers (missing ones are 1).
    pub grid: Vec<Expr>,
    /// Block dimensions in threads, 1 to 3 integers (missing ones are 1).
    pub block: Vec<Expr>,
    /// Thread-block cluster dimensions (Hopper and later): none, or 1 to 3 integers.
    pub cluster: Vec<Expr>,
    /// Dynamic shared memory in bytes, an integer; 0 when absent.
    pub shared_mem: Option<Expr>,
    /// The CUDA stream, a `ptr`; when absent, the environment stream of the launch device
    /// (`TVMFFIEnvGetStream(kDLCUDA, device)`).
    pub stream: Option<Expr>,
    /// The CUDA device ordinal, an integer; when absent, the device id of the function's
    /// first CUDA tensor parameter.
    pub device: Option<Expr>,
    /// The kernel's parameters, passed by value: scalars of any IR scalar type and pointers.
    /// (Host-built structures such as TMA descriptors are a planned extension: a new
    /// argument kind here, passed by address like the scalars.)
    pub args: Vec<Expr>,
}

impl Launch {
    /// Every expression, in source-map order (see the type's docs).
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.grid
            .iter()
            .chain(&self.block)
            .chain(&self.cluster)
            .chain(&self.shared_mem)
            .chain(&self.stream)
            .chain(&self.device)
            .chain(&self.args)
    }
}
