//! The kinds of argument an AMDGPU kernel's metadata names.

/// What an argument of an AMDGPU kernel is, as its metadata's `.value_kind` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// `by_value`: the argument's bytes.
    ByValue,
    /// `global_buffer`: a pointer to global memory.
    GlobalBuffer,
    /// `dynamic_shared_pointer`: a pointer to group (shared) memory.
    DynamicSharedPointer,
    /// `image`, `sampler`, `pipe`, `queue`: OpenCL objects, passed as handles.
    Handle,
}

impl ValueKind {
    /// The kind named `name` (`None` for a hidden argument or an unknown kind).
    pub(super) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "by_value" => ValueKind::ByValue,
            "global_buffer" => ValueKind::GlobalBuffer,
            "dynamic_shared_pointer" => ValueKind::DynamicSharedPointer,
            "image" | "sampler" | "pipe" | "queue" => ValueKind::Handle,
            _ => return None,
        })
    }

    /// The name the metadata uses (`by_value`, ...; `handle` for the OpenCL objects).
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::ByValue => "by_value",
            ValueKind::GlobalBuffer => "global_buffer",
            ValueKind::DynamicSharedPointer => "dynamic_shared_pointer",
            ValueKind::Handle => "handle",
        }
    }
}
