//! Verification of GPU items: `device_binary` items and `launch` statements.

use std::collections::HashMap;

use super::super::model::{
    BinaryFormat, Expr, Launch, LaunchArg, LaunchSetting, LaunchSettingKind, Platform, ScalarType,
    Type,
};
use super::super::source_map::StmtPath;
use super::super::syntax::is_identifier;
use super::kernel_params::ArgType;
use super::{DeviceBinaryPart, FnVerifier, Location, StmtFocus, Verifier};

/// Most dimensions of a grid, block or cluster.
const MAX_DIMS: usize = 3;

impl Verifier<'_> {
    /// Device binaries: unique identifier names, a non-empty image (PTX without NUL bytes
    /// before its end), at least one kernel, kernel names that are unique identifiers.
    pub(super) fn device_binaries(&mut self) {
        let m = self.m;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (index, b) in m.device_binaries.iter().enumerate() {
            let at = |part| Location::DeviceBinary { index, part };
            let subject = format!("device_binary `{}`", b.name);
            if !is_identifier(&b.name) {
                self.err(
                    subject.clone(),
                    at(DeviceBinaryPart::Name),
                    format!("device binary name `{}` is not an identifier", b.name),
                );
            }
            if let Some(first) = seen.insert(&b.name, index) {
                self.err(
                    subject.clone(),
                    at(DeviceBinaryPart::Name),
                    format!(
                        "duplicate device binary `{}` (item {first} has the same name)",
                        b.name
                    ),
                );
            }
            if b.data.is_empty() {
                self.err(
                    subject.clone(),
                    at(DeviceBinaryPart::Data),
                    "the device binary's image is empty".to_owned(),
                );
            }
            if b.format == BinaryFormat::Ptx {
                let text = b.data.strip_suffix(&[0]).unwrap_or(&b.data);
                if let Some(pos) = text.iter().position(|&c| c == 0) {
                    self.err(
                        subject.clone(),
                        at(DeviceBinaryPart::Data),
                        format!(
                            "PTX text has a NUL byte at offset {pos}; only a final NUL is allowed"
                        ),
                    );
                }
            }
            if b.kernels.is_empty() {
                self.err(
                    subject.clone(),
                    at(DeviceBinaryPart::Name),
                    "a device binary lists at least one kernel (`kernels [NAME, ...]`)".to_owned(),
                );
            }
            let mut kernels: HashMap<&str, usize> = HashMap::new();
            for (k, name) in b.kernels.iter().enumerate() {
                if !is_identifier(name) {
                    self.err(
                        subject.clone(),
                        at(DeviceBinaryPart::Kernel(k)),
                        format!("kernel name `{name}` is not an identifier"),
                    );
                }
                if kernels.insert(name, k).is_some() {
                    self.err(
                        subject.clone(),
                        at(DeviceBinaryPart::Kernel(k)),
                        format!("kernel `{name}` is listed twice"),
                    );
                }
            }
        }
    }
}

impl FnVerifier<'_, '_> {
    /// A launch: a known binary and kernel, then each setting ([`Self::launch_setting`]),
    /// a device to launch on, and scalar or pointer arguments that match the kernel's
    /// parameters where the binary gives them.
    pub(super) fn launch(&mut self, path: &StmtPath, l: &Launch) {
        self.launch_target(path, l);
        for kind in LaunchSettingKind::ALL.into_iter().filter(|k| k.required()) {
            if l.settings.get(kind).is_none() {
                self.stmt_err(
                    path,
                    StmtFocus::Whole,
                    format!("the launch has no `{}=(...)`", kind.keyword()),
                );
            }
        }
        let mut index = 0;
        for setting in l.settings.iter() {
            self.launch_setting(path, index, setting);
            index += setting.exprs().len();
        }
        self.cluster_constants(path, l);
        let platform = self.launch_platform(l);
        if platform == Platform::Hip {
            self.hip_settings(path, l);
        }
        if l.expr(LaunchSettingKind::Device).is_none() && self.f.first_tensor_on(platform).is_none()
        {
            self.stmt_err(
                path,
                StmtFocus::Whole,
                format!(
                    "the launch has no `device=`, and `{}` has no {} tensor parameter \
                     (`device={}`) to take the device from",
                    self.f.name,
                    platform.name(),
                    platform.device_keyword()
                ),
            );
        }
        let mut arg_types = Vec::with_capacity(l.args.len());
        for (k, arg) in l.args.iter().enumerate() {
            let ty = match arg {
                LaunchArg::Value(e) => self.value_arg(path, index, k, e).map(ArgType::Scalar),
                LaunchArg::TensorMap(_) if platform == Platform::Hip => {
                    self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![index]),
                        format!(
                            "kernel argument {k} is a TMA descriptor (`tensormap`), which AMD \
                             GPUs do not have (device binary `{}` is an AMDGPU code object)",
                            l.binary
                        ),
                    );
                    None
                }
                LaunchArg::TensorMap(t) => self
                    .tensormap_arg(path, index, k, t)
                    .then_some(ArgType::TensorMap),
                LaunchArg::Tdm(_) if platform == Platform::Cuda => {
                    self.stmt_err(
                        path,
                        StmtFocus::Whole,
                        format!(
                            "kernel argument {k} is an AMD TDM descriptor (`tdm`), which CUDA \
                             kernels do not take (device binary `{}` is a CUDA binary; use \
                             `tensormap`)",
                            l.binary
                        ),
                    );
                    None
                }
                LaunchArg::Tdm(t) => self.tdm_arg(path, k, t).map(|rank| ArgType::Tdm { rank }),
            };
            arg_types.push((index, ty));
            index += arg.expr_count();
        }
        self.kernel_args(path, l, &arg_types);
    }

    /// Value argument `k` (expression `index`): a scalar or a pointer.
    fn value_arg(
        &mut self,
        path: &StmtPath,
        index: usize,
        k: usize,
        e: &Expr,
    ) -> Option<ScalarType> {
        match self.expr(path, index, e) {
            Some(Type::Scalar(s)) => Some(s),
            None => None,
            Some(t) => {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(vec![index]),
                    format!(
                        "kernel argument {k} must be a scalar or a pointer, found {t} \
                         (pass a tensor's `.data`)"
                    ),
                );
                None
            }
        }
    }

    /// The platform of the launch's device binary (CUDA when the binary is unknown, which is
    /// reported on its own).
    fn launch_platform(&self, l: &Launch) -> Platform {
        self.v
            .m
            .device_binaries
            .iter()
            .find(|b| b.name == l.binary)
            .map_or(Platform::Cuda, |b| b.format.platform())
    }

    /// The settings a HIP launch cannot take: HIP has clusters (`hipDrvLaunchKernelEx`) but
    /// no preferred cluster and no cluster scheduling policy, no programmatic dependent launch
    /// and no per-launch priority.
    fn hip_settings(&mut self, path: &StmtPath, l: &Launch) {
        let mut index = 0;
        for setting in l.settings.iter() {
            let kind = setting.kind();
            let unsupported = match kind {
                LaunchSettingKind::PreferredCluster => Some("preferred cluster dimensions"),
                LaunchSettingKind::ClusterPolicy => Some("cluster scheduling policies"),
                LaunchSettingKind::Pdl => Some("programmatic dependent launch"),
                LaunchSettingKind::Priority => {
                    Some("per-launch priorities (stream priorities only)")
                }
                LaunchSettingKind::Grid
                | LaunchSettingKind::Block
                | LaunchSettingKind::SharedMem
                | LaunchSettingKind::Stream
                | LaunchSettingKind::Device
                | LaunchSettingKind::Cooperative
                | LaunchSettingKind::Cluster
                | LaunchSettingKind::Function => None,
            };
            if let Some(what) = unsupported {
                let focus = if setting.exprs().is_empty() {
                    StmtFocus::Whole
                } else {
                    StmtFocus::Expr(vec![index])
                };
                self.stmt_err(
                    path,
                    focus,
                    format!(
                        "`{}` has no HIP equivalent: device binary `{}` is an AMDGPU code \
                         object, and HIP launches have no {what}",
                        kind.keyword(),
                        l.binary
                    ),
                );
            }
            index += setting.exprs().len();
        }
    }

    /// The device binary and kernel a launch names exist.
    fn launch_target(&mut self, path: &StmtPath, l: &Launch) {
        let binaries = &self.v.m.device_binaries;
        match binaries.iter().find(|b| b.name == l.binary) {
            None if binaries.is_empty() => self.stmt_err(
                path,
                StmtFocus::Name,
                format!(
                    "`launch` needs a device binary, but the module declares none \
                     (add `device_binary {} {{ format ...; data ...; kernels [{}]; }}`)",
                    l.binary, l.kernel
                ),
            ),
            None => {
                let known: Vec<&str> = binaries.iter().map(|b| b.name.as_str()).collect();
                self.stmt_err(
                    path,
                    StmtFocus::Name,
                    format!(
                        "unknown device binary `{}`; the module declares {}",
                        l.binary,
                        known.join(", ")
                    ),
                );
            }
            Some(b) if !b.kernels.contains(&l.kernel) => {
                let message = format!(
                    "unknown kernel `{}`: device binary `{}` lists {}",
                    l.kernel,
                    b.name,
                    b.kernels.join(", ")
                );
                self.stmt_err(path, StmtFocus::Name, message);
            }
            Some(_) => {}
        }
    }

    /// One setting whose expressions start at `index`: its dimension count and the type of
    /// each expression.
    fn launch_setting(&mut self, path: &StmtPath, index: usize, setting: &LaunchSetting) {
        let what = setting.kind().keyword();
        match setting {
            LaunchSetting::Grid(dims)
            | LaunchSetting::Block(dims)
            | LaunchSetting::Cluster(dims)
            | LaunchSetting::PreferredCluster(dims) => {
                if dims.is_empty() || dims.len() > MAX_DIMS {
                    self.stmt_err(
                        path,
                        StmtFocus::Whole,
                        format!(
                            "{what} has {} dimensions; it takes 1 to {MAX_DIMS}",
                            dims.len()
                        ),
                    );
                }
                for (i, e) in dims.iter().enumerate() {
                    self.expect_integer(path, index + i, e, &format!("{what}[{i}]"));
                }
            }
            LaunchSetting::Device(e) => self.expect_integer(path, index, e, "the device"),
            LaunchSetting::SharedMem(e) => self.expect_integer(path, index, e, what),
            LaunchSetting::Priority(e) => {
                self.expect_integer(path, index, e, what);
                if let Some(v) = int_literal(e).filter(|v| i32::try_from(*v).is_err()) {
                    self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![index]),
                        format!("priority is {v}; it must fit in an i32"),
                    );
                }
            }
            LaunchSetting::Stream(e) => {
                let ptr = Type::Scalar(ScalarType::Ptr);
                self.expect_type(path, index, e, &ptr, "the stream");
            }
            LaunchSetting::Function(e) => {
                let ptr = Type::Scalar(ScalarType::Ptr);
                self.expect_type(path, index, e, &ptr, "the kernel's handle");
            }
            LaunchSetting::Pdl(e) | LaunchSetting::Cooperative(e) => {
                let b = Type::Scalar(ScalarType::Bool);
                self.expect_type(path, index, e, &b, what);
            }
            LaunchSetting::ClusterPolicy(_) => {}
        }
    }

    /// What constants decide about clusters: dimensions of at least 1, and a preferred
    /// cluster that has a cluster and is a multiple of it in each dimension (as the driver
    /// requires).
    fn cluster_constants(&mut self, path: &StmtPath, l: &Launch) {
        let start = |kind| l.settings.expr_offset(kind).unwrap_or_default();
        let cluster = l.cluster();
        for (kind, dims) in [
            (LaunchSettingKind::Cluster, cluster),
            (LaunchSettingKind::PreferredCluster, l.preferred_cluster()),
        ] {
            for (i, e) in dims.iter().enumerate() {
                if let Some(v) = int_literal(e).filter(|v| *v < 1) {
                    self.stmt_err(
                        path,
                        StmtFocus::Expr(vec![start(kind) + i]),
                        format!("{}[{i}] is {v}; it must be at least 1", kind.keyword()),
                    );
                }
            }
        }
        let preferred = l.preferred_cluster();
        if preferred.is_empty() {
            return;
        }
        let at = start(LaunchSettingKind::PreferredCluster);
        if cluster.is_empty() {
            self.stmt_err(
                path,
                StmtFocus::Expr(vec![at]),
                "`preferred_cluster` needs a `cluster` (the preferred dimensions are \
                 multiples of the cluster's)"
                    .to_owned(),
            );
            return;
        }
        for i in 0..MAX_DIMS {
            let dim = |d: &[Expr]| d.get(i).map_or(Some(1), int_literal);
            if let (Some(p), Some(c)) = (dim(preferred), dim(cluster))
                && p >= 1
                && c >= 1
                && p % c != 0
            {
                self.stmt_err(
                    path,
                    StmtFocus::Expr(vec![at + i.min(preferred.len() - 1)]),
                    format!("preferred_cluster[{i}] is {p}, not a multiple of cluster[{i}] ({c})"),
                );
            }
        }
    }

    /// Checks that `e` is of an integer type.
    fn expect_integer(&mut self, path: &StmtPath, index: usize, e: &Expr, what: &str) {
        match self.expr(path, index, e) {
            Some(Type::Scalar(ScalarType::Int(_))) | None => {}
            Some(t) => self.stmt_err(
                path,
                StmtFocus::Expr(vec![index]),
                format!("{what} must be an integer, found {t}"),
            ),
        }
    }
}

/// The value of an integer literal.
fn int_literal(e: &Expr) -> Option<i64> {
    if let Expr::Int { value, .. } = e {
        Some(*value)
    } else {
        None
    }
}
