//! Building [`Launch`] statements.

use super::super::model::{ClusterPolicy, Expr, Launch, LaunchArg, LaunchSetting, LaunchSettings};

/// Builds a [`Launch`]: `launch BINARY.KERNEL[grid=.., block=.., ...](args);`.
///
/// ```
/// use safecall::ir::build::*;
///
/// let launch = LaunchBuilder::new("kernels", "add_one")
///     .grid([ceil_div(var("n"), 256)])
///     .block([int(256)])
///     .args([var("x_data"), var("n")]);
/// let mut body = BlockBuilder::new();
/// body.launch(launch);
/// assert_eq!(body.stmts().len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct LaunchBuilder {
    launch: Launch,
}

impl LaunchBuilder {
    /// A launch of `kernel` from the device binary `binary`, on a grid and block of one.
    pub fn new(binary: &str, kernel: &str) -> Self {
        let one = || {
            vec![Expr::Int {
                value: 1,
                ty: crate::ir::IntType::I32,
            }]
        };
        let mut settings = LaunchSettings::new();
        settings.replace(LaunchSetting::Grid(one()));
        settings.replace(LaunchSetting::Block(one()));
        LaunchBuilder {
            launch: Launch {
                binary: binary.to_owned(),
                kernel: kernel.to_owned(),
                settings,
                args: Vec::new(),
            },
        }
    }

    /// Sets `setting`, replacing an earlier one of the same kind.
    pub fn setting(mut self, setting: LaunchSetting) -> Self {
        self.launch.settings.replace(setting);
        self
    }

    /// Grid dimensions in blocks (1 to 3 integers).
    pub fn grid<E: Into<Expr>>(self, dims: impl IntoIterator<Item = E>) -> Self {
        self.setting(LaunchSetting::Grid(collect(dims)))
    }

    /// Block dimensions in threads (1 to 3 integers).
    pub fn block<E: Into<Expr>>(self, dims: impl IntoIterator<Item = E>) -> Self {
        self.setting(LaunchSetting::Block(collect(dims)))
    }

    /// Thread-block cluster dimensions (1 to 3 integers).
    pub fn cluster<E: Into<Expr>>(self, dims: impl IntoIterator<Item = E>) -> Self {
        self.setting(LaunchSetting::Cluster(collect(dims)))
    }

    /// Preferred cluster dimensions (1 to 3 integers, each a multiple of the cluster's;
    /// CUDA 12.8 and later).
    pub fn preferred_cluster<E: Into<Expr>>(self, dims: impl IntoIterator<Item = E>) -> Self {
        self.setting(LaunchSetting::PreferredCluster(collect(dims)))
    }

    /// The cluster scheduling policy.
    pub fn cluster_policy(self, policy: ClusterPolicy) -> Self {
        self.setting(LaunchSetting::ClusterPolicy(policy))
    }

    /// Dynamic shared memory in bytes (an integer).
    pub fn shared_mem(self, bytes: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::SharedMem(bytes.into()))
    }

    /// The stream (a `ptr`) instead of the environment stream of the launch device.
    pub fn stream(self, stream: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::Stream(stream.into()))
    }

    /// The CUDA device ordinal (an integer) instead of the first CUDA tensor's device id.
    pub fn device(self, ordinal: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::Device(ordinal.into()))
    }

    /// Programmatic dependent launch (a `bool`).
    pub fn pdl(self, on: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::Pdl(on.into()))
    }

    /// A cooperative grid (a `bool`).
    pub fn cooperative(self, on: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::Cooperative(on.into()))
    }

    /// The launch priority (an integer).
    pub fn priority(self, priority: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::Priority(priority.into()))
    }

    /// The kernel's handle (a `ptr`: a `CUfunction` or `CUkernel`, or a `hipFunction_t`) that
    /// the caller loaded from the binary, launched instead of the module loading the binary
    /// itself (see docs/ir.md).
    pub fn function(self, handle: impl Into<Expr>) -> Self {
        self.setting(LaunchSetting::Function(handle.into()))
    }

    /// The kernel's arguments (scalars and pointers, passed by value), replacing earlier ones.
    pub fn args<E: Into<Expr>>(mut self, args: impl IntoIterator<Item = E>) -> Self {
        self.launch.args = collect(args).into_iter().map(LaunchArg::Value).collect();
        self
    }

    /// Appends one argument: a value, or a descriptor from [`tensormap`](super::tensormap).
    pub fn arg(mut self, arg: impl Into<LaunchArg>) -> Self {
        self.launch.args.push(arg.into());
        self
    }

    /// The launch.
    pub fn finish(self) -> Launch {
        self.launch
    }
}

impl From<LaunchBuilder> for Launch {
    fn from(b: LaunchBuilder) -> Launch {
        b.finish()
    }
}

fn collect<E: Into<Expr>>(items: impl IntoIterator<Item = E>) -> Vec<Expr> {
    items.into_iter().map(Into::into).collect()
}
