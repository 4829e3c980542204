//! What the drivers ([AOT](crate::compile_object) and [JIT](crate::jit::compile())) accept: a
//! module to verify, or one verified already. The first stage of the pipeline both drivers
//! share.

use std::borrow::Cow;

use crate::error::Error;
use crate::ir;

/// What the driver functions ([`compile_object`](crate::compile_object),
/// [`build_shared_library`](crate::build_shared_library), [`emit`](crate::emit),
/// [`jit::compile`](crate::jit::compile())) accept:
/// an [`ir::Module`], verified on the way, or an [`ir::VerifiedModule`], which is lowered
/// without verifying it again. Sealed: the two are the only kinds.
pub trait ModuleInput: sealed::Sealed {
    /// The module as verified, or every problem the verifier found.
    fn verified(&self) -> Result<Cow<'_, ir::VerifiedModule<'_>>, Error>;

    /// The module.
    fn module(&self) -> &ir::Module;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::ir::Module {}
    impl Sealed for crate::ir::VerifiedModule<'_> {}
}

impl ModuleInput for ir::Module {
    fn verified(&self) -> Result<Cow<'_, ir::VerifiedModule<'_>>, Error> {
        Ok(Cow::Owned(ir::verify(self)?))
    }

    fn module(&self) -> &ir::Module {
        self
    }
}

impl ModuleInput for ir::VerifiedModule<'_> {
    fn verified(&self) -> Result<Cow<'_, ir::VerifiedModule<'_>>, Error> {
        Ok(Cow::Borrowed(self))
    }

    fn module(&self) -> &ir::Module {
        ir::VerifiedModule::module(self)
    }
}
