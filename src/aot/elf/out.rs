//! The output sections of the library, which receive the object's allocated sections: shared by
//! the reader ([`super::input`]), the relocations ([`super::relocs`]) and the writer.

/// The sections of the library that receive the object's allocated sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Out {
    /// Read-only data (`.rodata*`, allocated notes).
    Rodata,
    /// Call-frame information.
    EhFrame,
    /// Code (then the import stubs).
    Text,
    /// Pointers to the load-time constructors.
    InitArray,
    /// Writable data.
    Data,
    /// Zero-initialized writable data (no file bytes).
    Bss,
}

impl Out {
    /// Every output section, in the library's address order.
    pub(super) const ALL: [Out; 6] = [
        Out::Rodata,
        Out::EhFrame,
        Out::Text,
        Out::InitArray,
        Out::Data,
        Out::Bss,
    ];

    /// Whether the loaded library may write the section (where absolute pointers can live).
    pub(super) fn writable(self) -> bool {
        match self {
            Out::Rodata | Out::EhFrame | Out::Text => false,
            Out::InitArray | Out::Data | Out::Bss => true,
        }
    }
}
