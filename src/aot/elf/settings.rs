//! What the library records besides the object's contents (`DT_SONAME`, `DT_NEEDED`,
//! `DT_RUNPATH`), as the AOT link options ask for it.

/// What the library records besides the object's contents.
#[derive(Clone, Debug, Default)]
pub(crate) struct Settings {
    /// `DT_SONAME`.
    pub(crate) soname: Option<String>,
    /// `DT_NEEDED` entries (library names).
    pub(crate) needed: Vec<String>,
    /// More `DT_NEEDED` entries, each only when the object imports one of its symbols (what
    /// a linker's `--as-needed` does with `-lc`).
    pub(crate) as_needed: Vec<(String, Vec<String>)>,
    /// `DT_RUNPATH`.
    pub(crate) runpath: Option<String>,
}
