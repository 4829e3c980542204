//! Functions and modules: [`FunctionBuilder`] and [`ModuleBuilder`].

use std::ops;

use super::super::model::*;
use super::super::verify::{VerifiedModule, VerifyError};
use super::block::BlockBuilder;
use super::expr::var;
use super::tensor::TensorRef;

/// Builds a [`Function`]. Derefs to the [`BlockBuilder`] of its body.
///
/// ```
/// use safecall::ir::build::*;
/// use safecall::ir::{IntType, ParamType, RetType};
/// let mut f = FunctionBuilder::new("clamp");
/// let n = f.param("n", ParamType::Int(IntType::I64));
/// f.returns(RetType::Scalar(I64));
/// f.ret(n.min(int(100)).max(int(0)));
/// let func = f.finish();
/// assert_eq!(func.params.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct FunctionBuilder {
    func: Function,
    body: BlockBuilder,
}

impl FunctionBuilder {
    /// A function with no parameters, returning none, with an empty body.
    pub fn new(name: &str) -> Self {
        FunctionBuilder {
            func: Function {
                name: name.to_owned(),
                doc: String::new(),
                params: vec![],
                constraints: vec![],
                ret: RetType::None,
                body: vec![],
            },
            body: BlockBuilder::new(),
        }
    }

    /// Sets the doc string.
    pub fn doc(&mut self, doc: &str) -> &mut Self {
        self.func.doc = doc.to_owned();
        self
    }

    /// Sets the return type.
    pub fn returns(&mut self, ret: RetType) -> &mut Self {
        self.func.ret = ret;
        self
    }

    /// Adds a parameter; returns it as an expression.
    pub fn param(&mut self, name: &str, ty: impl Into<ParamType>) -> Expr {
        self.func.params.push(Param {
            name: name.to_owned(),
            ty: ty.into(),
        });
        var(name)
    }

    /// Adds a tensor parameter.
    pub fn tensor(&mut self, name: &str, spec: impl Into<TensorSpec>) -> TensorRef {
        self.func.params.push(Param {
            name: name.to_owned(),
            ty: ParamType::Tensor(spec.into()),
        });
        TensorRef::new(name)
    }

    /// Adds an optional tensor parameter (a tensor or None).
    pub fn optional_tensor(&mut self, name: &str, spec: impl Into<TensorSpec>) -> TensorRef {
        self.func.params.push(Param {
            name: name.to_owned(),
            ty: ParamType::Tensor(spec.into()).optional(),
        });
        TensorRef::new(name)
    }

    /// Adds the constraint `var % divisor == 0`.
    pub fn divisible(&mut self, var: &str, divisor: u64) -> &mut Self {
        self.func.constraints.push(Constraint::Divisible {
            var: var.to_owned(),
            divisor,
        });
        self
    }

    /// The function.
    pub fn finish(self) -> Function {
        Function {
            body: self.body.into_stmts(),
            ..self.func
        }
    }
}

impl ops::Deref for FunctionBuilder {
    type Target = BlockBuilder;
    fn deref(&self) -> &BlockBuilder {
        &self.body
    }
}

impl ops::DerefMut for FunctionBuilder {
    fn deref_mut(&mut self) -> &mut BlockBuilder {
        &mut self.body
    }
}

/// Builds a [`Module`].
#[derive(Clone, Debug)]
pub struct ModuleBuilder {
    module: Module,
}

impl ModuleBuilder {
    /// An empty module.
    pub fn new(name: &str) -> Self {
        ModuleBuilder {
            module: Module::new(name),
        }
    }

    /// Registers functions as system-library symbols `__tvm_ffi_<prefix><name>`.
    pub fn system_lib_prefix(&mut self, prefix: &str) -> &mut Self {
        self.module.system_lib_prefix = Some(prefix.to_owned());
        self
    }

    /// Declares an extern C function.
    pub fn extern_fn(
        &mut self,
        name: &str,
        params: impl IntoIterator<Item = ScalarType>,
        ret: Option<ScalarType>,
        errors: ErrorConvention,
    ) -> &mut Self {
        self.module.externs.push(ExternFn {
            name: name.to_owned(),
            params: params.into_iter().collect(),
            ret,
            errors,
        });
        self
    }

    /// Embeds a module in the library blob.
    pub fn imported_module<'a>(
        &mut self,
        label: &str,
        kind: &str,
        payload: impl Into<Vec<u8>>,
        imports: impl IntoIterator<Item = &'a str>,
    ) -> &mut Self {
        self.module.imported_modules.push(ImportedModule {
            label: label.to_owned(),
            kind: kind.to_owned(),
            payload: payload.into(),
            imports: imports.into_iter().map(str::to_owned).collect(),
        });
        self
    }

    /// Embeds a GPU device binary whose `kernels` [`Stmt::Launch`] can launch.
    pub fn device_binary<'a>(
        &mut self,
        name: &str,
        format: BinaryFormat,
        data: impl Into<Vec<u8>>,
        kernels: impl IntoIterator<Item = &'a str>,
    ) -> &mut Self {
        self.module.device_binaries.push(DeviceBinary {
            name: name.to_owned(),
            format,
            data: data.into(),
            kernels: kernels.into_iter().map(str::to_owned).collect(),
        });
        self
    }

    /// Makes this library import the imported module `label` directly.
    pub fn import(&mut self, label: &str) -> &mut Self {
        self.module.imports.push(label.to_owned());
        self
    }

    /// Adds a function.
    pub fn function(&mut self, f: Function) -> &mut Self {
        self.module.functions.push(f);
        self
    }

    /// Builds a function with a closure and adds it.
    pub fn build_function(
        &mut self,
        name: &str,
        build: impl FnOnce(&mut FunctionBuilder),
    ) -> &mut Self {
        let mut f = FunctionBuilder::new(name);
        build(&mut f);
        self.function(f.finish())
    }

    /// The module (unverified).
    pub fn build(&self) -> Module {
        self.module.clone()
    }

    /// The module, verified.
    pub fn build_verified(&self) -> Result<VerifiedModule<'static>, Vec<VerifyError>> {
        VerifiedModule::new(self.build())
    }

    /// The module (unverified), without copying it: [`build`](Self::build) for a builder
    /// not used again (a module holds its device binaries, which can be large).
    pub fn finish(self) -> Module {
        self.module
    }

    /// The module, verified, without copying it (see [`finish`](Self::finish)).
    ///
    /// ```
    /// use safecall::ir::build::*;
    /// use safecall::ir::{IntType, ParamType};
    ///
    /// let mut m = ModuleBuilder::new("m");
    /// m.build_function("f", |f| {
    ///     f.param("n", ParamType::Int(IntType::I64));
    /// });
    /// let verified = m.finish_verified().expect("valid IR");
    /// assert_eq!(verified.functions[0].name, "f");
    /// ```
    pub fn finish_verified(self) -> Result<VerifiedModule<'static>, Vec<VerifyError>> {
        VerifiedModule::new(self.finish())
    }
}
