//! Building [`Launch`] statements.

use super::super::model::{Expr, Launch};

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
        LaunchBuilder {
            launch: Launch {
                binary: binary.to_owned(),
                kernel: kernel.to_owned(),
                grid: vec![Expr::Int {
                    value: 1,
                    ty: crate::ir::IntType::I32,
                }],
                block: vec![Expr::Int {
                    value: 1,
                    ty: crate::ir::IntType::I32,
                }],
                cluster: Vec::new(),
                shared_mem: None,
                stream: None,
                device: None,
                args: Vec::new(),
            },
        }
    }

    /// Grid dimensions in blocks (1 to 3 integers).
    pub fn grid<E: Into<Expr>>(mut self, dims: impl IntoIterator<Item = E>) -> Self {
        self.launch.grid = dims.into_iter().map(Into::into).collect();
        self
    }

    /// Block dimensions in threads (1 to 3 integers).
    pub fn block<E: Into<Expr>>(mut self, dims: impl IntoIterator<Item = E>) -> Self {
        self.launch.block = dims.into_iter().map(Into::into).collect();
        self
    }

    /// Thread-block cluster dimensions (1 to 3 integers).
    pub fn cluster<E: Into<Expr>>(mut self, dims: impl IntoIterator<Item = E>) -> Self {
        self.launch.cluster = dims.into_iter().map(Into::into).collect();
        self
    }

    /// Dynamic shared memory in bytes (an integer).
    pub fn shared_mem(mut self, bytes: impl Into<Expr>) -> Self {
        self.launch.shared_mem = Some(bytes.into());
        self
    }

    /// The stream (a `ptr`) instead of the environment stream of the launch device.
    pub fn stream(mut self, stream: impl Into<Expr>) -> Self {
        self.launch.stream = Some(stream.into());
        self
    }

    /// The CUDA device ordinal (an integer) instead of the first CUDA tensor's device id.
    pub fn device(mut self, ordinal: impl Into<Expr>) -> Self {
        self.launch.device = Some(ordinal.into());
        self
    }

    /// The kernel's arguments (scalars and pointers, passed by value).
    pub fn args<E: Into<Expr>>(mut self, args: impl IntoIterator<Item = E>) -> Self {
        self.launch.args = args.into_iter().map(Into::into).collect();
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
