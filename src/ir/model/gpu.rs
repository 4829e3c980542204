//! The GPU items of the model: device binaries and kernel launches.

use super::{Expr, LaunchArg};

keyword_enum! {
    /// The format of a [`DeviceBinary`], as the CUDA driver's `cuLibraryLoadData` or the HIP
    /// runtime's `hipModuleLoadData` takes it ([`BinaryFormat::platform`]).
    BinaryFormat {
        /// A CUDA ELF binary for one GPU architecture (`nvcc -cubin`).
        Cubin = "cubin",
        /// A fat binary holding cubins and/or PTX for several architectures.
        Fatbin = "fatbin",
        /// PTX assembly, compiled by the driver at load time (the lowering appends the NUL the
        /// driver needs).
        Ptx = "ptx",
        /// An AMDGPU code object (ELF for machine `EM_AMDGPU`, as `clang --offload-arch` or
        /// Triton's AMD backend links it), launched through the HIP runtime.
        Hsaco = "hsaco",
        /// A clang offload bundle of AMDGPU code objects for several targets (`.hipfb`, as
        /// `clang --offload-arch=gfx942 --offload-arch=gfx90a` embeds it): the HIP runtime
        /// loads the one for the device.
        Hipfb = "hipfb",
    }
}

/// The GPU API that loads and launches a device binary's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Platform {
    /// NVIDIA GPUs, through the CUDA driver API (`libcuda.so.1`); tensors `device=cuda`.
    Cuda,
    /// AMD GPUs, through the HIP runtime (`libamdhip64.so`); tensors `device=rocm`.
    Hip,
}

impl Platform {
    /// The DLPack device type of the platform's device memory (`kDLCUDA`, `kDLROCM`).
    pub fn device_type(self) -> i32 {
        match self {
            Platform::Cuda => safecall_runtime::abi::device_type::CUDA,
            Platform::Hip => safecall_runtime::abi::device_type::ROCM,
        }
    }

    /// The platform's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Cuda => "CUDA",
            Platform::Hip => "HIP",
        }
    }

    /// The device word of tensor types (`device=cuda`, `device=rocm`).
    pub fn device_keyword(self) -> &'static str {
        match self {
            Platform::Cuda => "cuda",
            Platform::Hip => "rocm",
        }
    }
}

impl BinaryFormat {
    /// The API that loads binaries of this format.
    pub fn platform(self) -> Platform {
        match self {
            BinaryFormat::Cubin | BinaryFormat::Fatbin | BinaryFormat::Ptx => Platform::Cuda,
            BinaryFormat::Hsaco | BinaryFormat::Hipfb => Platform::Hip,
        }
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
/// [`source_map`](crate::ir::source_map) paths): each setting's in [`LaunchSettingKind::ALL`]
/// order, then the kernel's arguments' ([`LaunchArg::exprs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The [`DeviceBinary`] holding the kernel.
    pub binary: String,
    /// The kernel's entry name (one of the binary's `kernels`).
    pub kernel: String,
    /// The launch configuration: `grid` and `block` (required) and the optional settings.
    pub settings: LaunchSettings,
    /// The kernel's parameters, passed by value: scalars of any IR scalar type and pointers,
    /// and TMA descriptors ([`LaunchArg::TensorMap`]).
    pub args: Vec<LaunchArg>,
}

impl Launch {
    /// Every expression, in source-map order (see the type's docs).
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.settings
            .iter()
            .flat_map(LaunchSetting::exprs)
            .chain(self.args.iter().flat_map(LaunchArg::exprs))
    }

    /// Grid dimensions in blocks (empty when `grid` is missing, which the verifier rejects).
    pub fn grid(&self) -> &[Expr] {
        self.settings.dims(LaunchSettingKind::Grid)
    }

    /// Block dimensions in threads (empty when `block` is missing).
    pub fn block(&self) -> &[Expr] {
        self.settings.dims(LaunchSettingKind::Block)
    }

    /// Thread-block cluster dimensions (empty when no cluster is set).
    pub fn cluster(&self) -> &[Expr] {
        self.settings.dims(LaunchSettingKind::Cluster)
    }

    /// Preferred cluster dimensions (empty when not set).
    pub fn preferred_cluster(&self) -> &[Expr] {
        self.settings.dims(LaunchSettingKind::PreferredCluster)
    }

    /// The expression of a single-expression setting (`shared_mem`, `stream`, `device`,
    /// `pdl`, `cooperative`, `priority`), when given.
    pub fn expr(&self, kind: LaunchSettingKind) -> Option<&Expr> {
        self.settings.expr(kind)
    }

    /// The cluster scheduling policy, when given.
    pub fn cluster_policy(&self) -> Option<ClusterPolicy> {
        self.settings.iter().find_map(|s| match s {
            LaunchSetting::ClusterPolicy(p) => Some(*p),
            _ => None,
        })
    }
}

/// The kinds of launch settings, in the order a launch keeps, prints and verifies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaunchSettingKind {
    /// `grid=(x[, y[, z]])`: grid dimensions in blocks (required).
    Grid,
    /// `block=(x[, y[, z]])`: block dimensions in threads (required).
    Block,
    /// `cluster=(x[, y[, z]])`: thread-block cluster dimensions (Hopper and later).
    Cluster,
    /// `shared_mem=BYTES`: dynamic shared memory, an integer.
    SharedMem,
    /// `stream=PTR`: the CUDA stream instead of the environment stream.
    Stream,
    /// `device=ORDINAL`: the CUDA device instead of the first CUDA tensor's.
    Device,
    /// `pdl=BOOL`: programmatic dependent launch
    /// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`).
    Pdl,
    /// `cooperative=BOOL`: a cooperative grid (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`).
    Cooperative,
    /// `cluster_policy=default|spread|load_balancing`
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE`).
    ClusterPolicy,
    /// `preferred_cluster=(x[, y[, z]])` (`CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`,
    /// CUDA 12.8 and later); needs `cluster`, a multiple of it in each dimension.
    PreferredCluster,
    /// `priority=INT`: the launch's priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`).
    Priority,
}

/// How a setting's value is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingShape {
    /// `(e1[, e2[, e3]])`: 1 to 3 integer expressions.
    Dims,
    /// One expression.
    Expr,
    /// One of a fixed set of words.
    Keyword(&'static [&'static str]),
}

impl LaunchSettingKind {
    /// Every kind, in order.
    pub const ALL: [LaunchSettingKind; 11] = [
        LaunchSettingKind::Grid,
        LaunchSettingKind::Block,
        LaunchSettingKind::Cluster,
        LaunchSettingKind::SharedMem,
        LaunchSettingKind::Stream,
        LaunchSettingKind::Device,
        LaunchSettingKind::Pdl,
        LaunchSettingKind::Cooperative,
        LaunchSettingKind::ClusterPolicy,
        LaunchSettingKind::PreferredCluster,
        LaunchSettingKind::Priority,
    ];

    /// The keyword of the text format.
    pub fn keyword(self) -> &'static str {
        match self {
            LaunchSettingKind::Grid => "grid",
            LaunchSettingKind::Block => "block",
            LaunchSettingKind::Cluster => "cluster",
            LaunchSettingKind::SharedMem => "shared_mem",
            LaunchSettingKind::Stream => "stream",
            LaunchSettingKind::Device => "device",
            LaunchSettingKind::Pdl => "pdl",
            LaunchSettingKind::Cooperative => "cooperative",
            LaunchSettingKind::ClusterPolicy => "cluster_policy",
            LaunchSettingKind::PreferredCluster => "preferred_cluster",
            LaunchSettingKind::Priority => "priority",
        }
    }

    /// The kind named by `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.keyword() == keyword)
    }

    /// How its value is written.
    pub fn shape(self) -> SettingShape {
        match self {
            LaunchSettingKind::Grid
            | LaunchSettingKind::Block
            | LaunchSettingKind::Cluster
            | LaunchSettingKind::PreferredCluster => SettingShape::Dims,
            LaunchSettingKind::SharedMem
            | LaunchSettingKind::Stream
            | LaunchSettingKind::Device
            | LaunchSettingKind::Pdl
            | LaunchSettingKind::Cooperative
            | LaunchSettingKind::Priority => SettingShape::Expr,
            LaunchSettingKind::ClusterPolicy => SettingShape::Keyword(ClusterPolicy::KEYWORDS),
        }
    }

    /// Whether every launch has it (`grid` and `block`).
    pub fn required(self) -> bool {
        matches!(self, LaunchSettingKind::Grid | LaunchSettingKind::Block)
    }
}

keyword_enum! {
    /// A cluster scheduling policy (`CUclusterSchedulingPolicy`).
    ClusterPolicy, CUclusterSchedulingPolicy_enum {
        /// `default`: the driver's choice.
        Default = "default" => CU_CLUSTER_SCHEDULING_POLICY_DEFAULT,
        /// `spread`: spread the blocks of a cluster over the GPU (what Triton asks for).
        Spread = "spread" => CU_CLUSTER_SCHEDULING_POLICY_SPREAD,
        /// `load_balancing`: pack clusters for load balance.
        LoadBalancing = "load_balancing" => CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING,
    }
}

/// One setting of a launch, carrying its value.
#[derive(Clone, Debug, PartialEq)]
pub enum LaunchSetting {
    /// See [`LaunchSettingKind::Grid`].
    Grid(Vec<Expr>),
    /// See [`LaunchSettingKind::Block`].
    Block(Vec<Expr>),
    /// See [`LaunchSettingKind::Cluster`].
    Cluster(Vec<Expr>),
    /// See [`LaunchSettingKind::SharedMem`].
    SharedMem(Expr),
    /// See [`LaunchSettingKind::Stream`].
    Stream(Expr),
    /// See [`LaunchSettingKind::Device`].
    Device(Expr),
    /// See [`LaunchSettingKind::Pdl`].
    Pdl(Expr),
    /// See [`LaunchSettingKind::Cooperative`].
    Cooperative(Expr),
    /// See [`LaunchSettingKind::ClusterPolicy`].
    ClusterPolicy(ClusterPolicy),
    /// See [`LaunchSettingKind::PreferredCluster`].
    PreferredCluster(Vec<Expr>),
    /// See [`LaunchSettingKind::Priority`].
    Priority(Expr),
}

/// A setting's value, by [`SettingShape`] (what the parser reads and the printer writes).
#[derive(Clone, Debug, PartialEq)]
pub enum SettingValue {
    /// Dimensions.
    Dims(Vec<Expr>),
    /// One expression.
    Expr(Expr),
    /// A keyword.
    Keyword(String),
}

impl LaunchSetting {
    /// A setting of `kind` with `value`; `Err` names what the shape of `kind` expects.
    pub fn new(kind: LaunchSettingKind, value: SettingValue) -> Result<Self, String> {
        use LaunchSettingKind as K;
        Ok(match (kind, value) {
            (K::Grid, SettingValue::Dims(d)) => LaunchSetting::Grid(d),
            (K::Block, SettingValue::Dims(d)) => LaunchSetting::Block(d),
            (K::Cluster, SettingValue::Dims(d)) => LaunchSetting::Cluster(d),
            (K::PreferredCluster, SettingValue::Dims(d)) => LaunchSetting::PreferredCluster(d),
            (K::SharedMem, SettingValue::Expr(e)) => LaunchSetting::SharedMem(e),
            (K::Stream, SettingValue::Expr(e)) => LaunchSetting::Stream(e),
            (K::Device, SettingValue::Expr(e)) => LaunchSetting::Device(e),
            (K::Pdl, SettingValue::Expr(e)) => LaunchSetting::Pdl(e),
            (K::Cooperative, SettingValue::Expr(e)) => LaunchSetting::Cooperative(e),
            (K::Priority, SettingValue::Expr(e)) => LaunchSetting::Priority(e),
            (K::ClusterPolicy, SettingValue::Keyword(w)) => match ClusterPolicy::from_keyword(&w) {
                Some(p) => LaunchSetting::ClusterPolicy(p),
                None => {
                    return Err(format!(
                        "unknown cluster policy `{w}`; expected one of {}",
                        ClusterPolicy::KEYWORDS.join(", ")
                    ));
                }
            },
            (kind, _) => {
                let expected = match kind.shape() {
                    SettingShape::Dims => "dimensions `(x[, y[, z]])`".to_owned(),
                    SettingShape::Expr => "an expression".to_owned(),
                    SettingShape::Keyword(words) => format!("one of {}", words.join(", ")),
                };
                return Err(format!("`{}` takes {expected}", kind.keyword()));
            }
        })
    }

    /// Its kind.
    pub fn kind(&self) -> LaunchSettingKind {
        use LaunchSettingKind as K;
        match self {
            LaunchSetting::Grid(_) => K::Grid,
            LaunchSetting::Block(_) => K::Block,
            LaunchSetting::Cluster(_) => K::Cluster,
            LaunchSetting::SharedMem(_) => K::SharedMem,
            LaunchSetting::Stream(_) => K::Stream,
            LaunchSetting::Device(_) => K::Device,
            LaunchSetting::Pdl(_) => K::Pdl,
            LaunchSetting::Cooperative(_) => K::Cooperative,
            LaunchSetting::ClusterPolicy(_) => K::ClusterPolicy,
            LaunchSetting::PreferredCluster(_) => K::PreferredCluster,
            LaunchSetting::Priority(_) => K::Priority,
        }
    }

    /// Its value, by shape.
    pub fn value(&self) -> SettingValue {
        match self {
            LaunchSetting::Grid(d)
            | LaunchSetting::Block(d)
            | LaunchSetting::Cluster(d)
            | LaunchSetting::PreferredCluster(d) => SettingValue::Dims(d.clone()),
            LaunchSetting::SharedMem(e)
            | LaunchSetting::Stream(e)
            | LaunchSetting::Device(e)
            | LaunchSetting::Pdl(e)
            | LaunchSetting::Cooperative(e)
            | LaunchSetting::Priority(e) => SettingValue::Expr(e.clone()),
            LaunchSetting::ClusterPolicy(p) => SettingValue::Keyword(p.keyword().to_owned()),
        }
    }

    /// Its expressions, in order.
    pub fn exprs(&self) -> &[Expr] {
        match self {
            LaunchSetting::Grid(d)
            | LaunchSetting::Block(d)
            | LaunchSetting::Cluster(d)
            | LaunchSetting::PreferredCluster(d) => d,
            LaunchSetting::SharedMem(e)
            | LaunchSetting::Stream(e)
            | LaunchSetting::Device(e)
            | LaunchSetting::Pdl(e)
            | LaunchSetting::Cooperative(e)
            | LaunchSetting::Priority(e) => std::slice::from_ref(e),
            LaunchSetting::ClusterPolicy(_) => &[],
        }
    }
}

/// The settings of a launch: at most one of each kind, kept in [`LaunchSettingKind::ALL`]
/// order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchSettings(Vec<LaunchSetting>);

impl LaunchSettings {
    /// No settings.
    pub fn new() -> Self {
        LaunchSettings(Vec::new())
    }

    /// Adds `setting` in its place; a second setting of the same kind is refused and
    /// returned.
    pub fn insert(&mut self, setting: LaunchSetting) -> Result<(), LaunchSetting> {
        match self
            .0
            .binary_search_by_key(&setting.kind(), LaunchSetting::kind)
        {
            Ok(_) => Err(setting),
            Err(at) => {
                self.0.insert(at, setting);
                Ok(())
            }
        }
    }

    /// Sets `setting`, replacing one of the same kind (what builders do).
    pub fn replace(&mut self, setting: LaunchSetting) {
        match self
            .0
            .binary_search_by_key(&setting.kind(), LaunchSetting::kind)
        {
            Ok(at) => self.0[at] = setting,
            Err(at) => self.0.insert(at, setting),
        }
    }

    /// The setting of `kind`, when given.
    pub fn get(&self, kind: LaunchSettingKind) -> Option<&LaunchSetting> {
        self.0.iter().find(|s| s.kind() == kind)
    }

    /// The settings, in order.
    pub fn iter(&self) -> impl Iterator<Item = &LaunchSetting> {
        self.0.iter()
    }

    /// Where the expressions of the setting of `kind` start in [`Launch::exprs`] order (the
    /// source map's), when it is given.
    pub fn expr_offset(&self, kind: LaunchSettingKind) -> Option<usize> {
        let mut at = 0;
        for s in &self.0 {
            if s.kind() == kind {
                return Some(at);
            }
            at += s.exprs().len();
        }
        None
    }

    /// The dimensions of a [`SettingShape::Dims`] setting; empty when not given.
    pub fn dims(&self, kind: LaunchSettingKind) -> &[Expr] {
        self.get(kind).map(LaunchSetting::exprs).unwrap_or_default()
    }

    /// The expression of a [`SettingShape::Expr`] setting, when given.
    pub fn expr(&self, kind: LaunchSettingKind) -> Option<&Expr> {
        match kind.shape() {
            SettingShape::Expr => self.get(kind).and_then(|s| s.exprs().first()),
            SettingShape::Dims | SettingShape::Keyword(_) => None,
        }
    }
}
