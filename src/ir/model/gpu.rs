//! The GPU items of the model: device binaries and kernel launches.

use super::expr::Expr;
use super::tensormap::LaunchArg;

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

/// Declares the launch settings from one list, each kind with its keyword, whether every
/// launch has it, and the type of its value, which decides its [`SettingShape`]
/// ([`SettingPayload`]): `Vec<Expr>` dimensions, one `Expr`, or a keyword enum. From that list
/// come [`LaunchSettingKind`] (with `ALL`, `keyword`, `from_keyword`, `shape`, `required`)
/// and [`LaunchSetting`] (with `new`, `kind`, `value`, `exprs`): a new setting is one line
/// here, and every `match` over `LaunchSetting` in src/ir/verify and src/lower then fails to
/// compile until it handles it.
macro_rules! launch_settings {
    (
        $(
            $(#[$doc:meta])*
            $variant:ident = $word:literal $(($required:ident))?: $payload:ty,
        )+
    ) => {
        /// The kinds of launch settings, in the order a launch keeps, prints and verifies them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum LaunchSettingKind {
            $($(#[$doc])* $variant,)+
        }

        impl LaunchSettingKind {
            /// Every kind, in order.
            pub const ALL: [LaunchSettingKind; [$($word),+].len()] =
                [$(LaunchSettingKind::$variant),+];

            /// The keyword of the text format.
            pub fn keyword(self) -> &'static str {
                match self {
                    $(LaunchSettingKind::$variant => $word,)+
                }
            }

            /// How its value is written.
            pub fn shape(self) -> SettingShape {
                match self {
                    $(LaunchSettingKind::$variant => <$payload as SettingPayload>::SHAPE,)+
                }
            }

            /// Whether every launch has it (`grid` and `block`).
            pub fn required(self) -> bool {
                match self {
                    $(LaunchSettingKind::$variant => launch_settings!(@required $($required)?),)+
                }
            }
        }

        /// One setting of a launch, carrying its value.
        #[derive(Clone, Debug, PartialEq)]
        pub enum LaunchSetting {
            $(
                #[doc = concat!("See [`LaunchSettingKind::", stringify!($variant), "`].")]
                $variant($payload),
            )+
        }

        impl LaunchSetting {
            /// A setting of `kind` with `value`; `Err` names what the shape of `kind` expects.
            pub fn new(kind: LaunchSettingKind, value: SettingValue) -> Result<Self, String> {
                match kind {
                    $(LaunchSettingKind::$variant => {
                        <$payload as SettingPayload>::from_value(value)
                            .ok_or_else(|| kind.shape_mismatch())?
                            .map(LaunchSetting::$variant)
                    })+
                }
            }

            /// Its kind.
            pub fn kind(&self) -> LaunchSettingKind {
                match self {
                    $(LaunchSetting::$variant(_) => LaunchSettingKind::$variant,)+
                }
            }

            /// Its value, by shape.
            pub fn value(&self) -> SettingValue {
                match self {
                    $(LaunchSetting::$variant(v) => v.to_value(),)+
                }
            }

            /// Its expressions, in order.
            pub fn exprs(&self) -> &[Expr] {
                match self {
                    $(LaunchSetting::$variant(v) => v.exprs(),)+
                }
            }
        }
    };
    (@required required) => { true };
    (@required) => { false };
}

launch_settings! {
    /// `grid=(x[, y[, z]])`: grid dimensions in blocks (required).
    Grid = "grid" (required): Vec<Expr>,
    /// `block=(x[, y[, z]])`: block dimensions in threads (required).
    Block = "block" (required): Vec<Expr>,
    /// `cluster=(x[, y[, z]])`: thread-block cluster dimensions (Hopper and later).
    Cluster = "cluster": Vec<Expr>,
    /// `shared_mem=BYTES`: dynamic shared memory, an integer.
    SharedMem = "shared_mem": Expr,
    /// `stream=PTR`: the CUDA stream instead of the environment stream.
    Stream = "stream": Expr,
    /// `device=ORDINAL`: the CUDA device instead of the first CUDA tensor's.
    Device = "device": Expr,
    /// `pdl=BOOL`: programmatic dependent launch
    /// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`).
    Pdl = "pdl": Expr,
    /// `cooperative=BOOL`: a cooperative grid (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`).
    Cooperative = "cooperative": Expr,
    /// `cluster_policy=default|spread|load_balancing`
    /// (`CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE`).
    ClusterPolicy = "cluster_policy": ClusterPolicy,
    /// `preferred_cluster=(x[, y[, z]])` (`CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`,
    /// CUDA 12.8 and later); needs `cluster`, a multiple of it in each dimension.
    PreferredCluster = "preferred_cluster": Vec<Expr>,
    /// `priority=INT`: the launch's priority (`CU_LAUNCH_ATTRIBUTE_PRIORITY`).
    Priority = "priority": Expr,
    /// `function=PTR`: the kernel's handle, loaded by the caller from this binary (a
    /// `CUfunction` or `CUkernel`, a `hipFunction_t` for HIP), launched as it is: the module
    /// neither loads the binary nor sets the kernel's attributes.
    Function = "function": Expr,
}

impl LaunchSettingKind {
    /// The kind named by `keyword`.
    pub fn from_keyword(keyword: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.keyword() == keyword)
    }

    /// The message for a value of another shape than this kind's.
    fn shape_mismatch(self) -> String {
        let expected = match self.shape() {
            SettingShape::Dims => "dimensions `(x[, y[, z]])`".to_owned(),
            SettingShape::Expr => "an expression".to_owned(),
            SettingShape::Keyword(words) => format!("one of {}", words.join(", ")),
        };
        format!("`{}` takes {expected}", self.keyword())
    }
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

/// The type of a setting's value, which decides its shape: what `launch_settings!` needs to
/// read, print and enumerate a setting without a list of its own.
trait SettingPayload: Sized {
    /// How a value of this type is written.
    const SHAPE: SettingShape;
    /// The value's expressions, in order.
    fn exprs(&self) -> &[Expr];
    /// The value by shape.
    fn to_value(&self) -> SettingValue;
    /// The value, if `value` has this type's shape (`Some(Err)`: an unknown keyword).
    fn from_value(value: SettingValue) -> Option<Result<Self, String>>;
}

impl SettingPayload for Vec<Expr> {
    const SHAPE: SettingShape = SettingShape::Dims;

    fn exprs(&self) -> &[Expr] {
        self
    }

    fn to_value(&self) -> SettingValue {
        SettingValue::Dims(self.clone())
    }

    fn from_value(value: SettingValue) -> Option<Result<Self, String>> {
        match value {
            SettingValue::Dims(d) => Some(Ok(d)),
            SettingValue::Expr(_) | SettingValue::Keyword(_) => None,
        }
    }
}

impl SettingPayload for Expr {
    const SHAPE: SettingShape = SettingShape::Expr;

    fn exprs(&self) -> &[Expr] {
        std::slice::from_ref(self)
    }

    fn to_value(&self) -> SettingValue {
        SettingValue::Expr(self.clone())
    }

    fn from_value(value: SettingValue) -> Option<Result<Self, String>> {
        match value {
            SettingValue::Expr(e) => Some(Ok(e)),
            SettingValue::Dims(_) | SettingValue::Keyword(_) => None,
        }
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

impl SettingPayload for ClusterPolicy {
    const SHAPE: SettingShape = SettingShape::Keyword(ClusterPolicy::KEYWORDS);

    fn exprs(&self) -> &[Expr] {
        &[]
    }

    fn to_value(&self) -> SettingValue {
        SettingValue::Keyword(self.keyword().to_owned())
    }

    fn from_value(value: SettingValue) -> Option<Result<Self, String>> {
        match value {
            SettingValue::Keyword(w) => Some(ClusterPolicy::from_keyword(&w).ok_or_else(|| {
                format!(
                    "unknown cluster policy `{w}`; expected one of {}",
                    ClusterPolicy::KEYWORDS.join(", ")
                )
            })),
            SettingValue::Dims(_) | SettingValue::Expr(_) => None,
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
