//! A launch's settings, sorted by one exhaustive `match` over [`LaunchSetting`] (docs/STYLE:
//! "lowering matches, it does not pick"). A new setting does not compile until it has a field
//! here; [`super::operands`] takes [`Settings`] apart without `..`, so the field does not
//! compile until it is lowered, and [`super::config`] takes the lowered operands apart the
//! same way, so the operand does not compile until it reaches the launch configuration. The
//! order the operands are lowered and checked in is `operands`' own (the order its messages
//! promise), not the settings' kind order.

use crate::ir::{ClusterPolicy, Expr, Launch, LaunchSetting};

/// Every setting of one launch, by its role (absent ones empty or `None`).
#[derive(Default)]
pub(super) struct Settings<'a> {
    /// `grid=` dims.
    pub grid: &'a [Expr],
    /// `block=` dims.
    pub block: &'a [Expr],
    /// `cluster=` dims.
    pub cluster: &'a [Expr],
    /// `preferred_cluster=` dims.
    pub preferred_cluster: &'a [Expr],
    /// `cluster_policy=`.
    pub cluster_policy: Option<ClusterPolicy>,
    /// `shared_mem=`.
    pub shared_mem: Option<&'a Expr>,
    /// `stream=`.
    pub stream: Option<&'a Expr>,
    /// `device=`.
    pub device: Option<&'a Expr>,
    /// `pdl=`.
    pub pdl: Option<&'a Expr>,
    /// `cooperative=`.
    pub cooperative: Option<&'a Expr>,
    /// `priority=`.
    pub priority: Option<&'a Expr>,
    /// `function=`.
    pub function: Option<&'a Expr>,
}

/// The settings of `l`.
pub(super) fn settings(l: &Launch) -> Settings<'_> {
    let mut s = Settings::default();
    for setting in l.settings.iter() {
        match setting {
            LaunchSetting::Grid(dims) => s.grid = dims,
            LaunchSetting::Block(dims) => s.block = dims,
            LaunchSetting::Cluster(dims) => s.cluster = dims,
            LaunchSetting::PreferredCluster(dims) => s.preferred_cluster = dims,
            LaunchSetting::ClusterPolicy(policy) => s.cluster_policy = Some(*policy),
            LaunchSetting::SharedMem(e) => s.shared_mem = Some(e),
            LaunchSetting::Stream(e) => s.stream = Some(e),
            LaunchSetting::Device(e) => s.device = Some(e),
            LaunchSetting::Pdl(e) => s.pdl = Some(e),
            LaunchSetting::Cooperative(e) => s.cooperative = Some(e),
            LaunchSetting::Priority(e) => s.priority = Some(e),
            LaunchSetting::Function(e) => s.function = Some(e),
        }
    }
    s
}
