//! Verification of GPU items: `device_binary` items and `launch` statements.

use std::collections::HashMap;

use super::super::model::{BinaryFormat, Launch, ScalarType, Type};
use super::super::source_map::StmtPath;
use super::super::syntax::is_identifier;
use super::{FnVerifier, Location, StmtFocus, Verifier};

/// A part of a `device_binary` item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceBinaryPart {
    /// The name.
    Name,
    /// The format.
    Format,
    /// The image (`data` or `file`).
    Data,
    /// Kernel name `i`.
    Kernel(usize),
}

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
    /// A launch: a known binary and kernel, 1 to 3 integer grid and block dims, 0 to 3
    /// integer cluster dims, an integer `shared_mem`, a `ptr` stream, an integer device (or
    /// a CUDA tensor parameter to take it from), and scalar or pointer arguments that match
    /// the kernel's parameters where the binary gives them.
    pub(super) fn launch(&mut self, path: &StmtPath, l: &Launch) {
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
        let mut index = 0;
        for (what, dims, min) in [
            ("grid", &l.grid, 1),
            ("block", &l.block, 1),
            ("cluster", &l.cluster, 0),
        ] {
            if dims.len() < min || dims.len() > MAX_DIMS {
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
                self.expect_integer(path, index, e, &format!("{what}[{i}]"));
                index += 1;
            }
        }
        if let Some(e) = &l.shared_mem {
            self.expect_integer(path, index, e, "shared_mem");
            index += 1;
        }
        if let Some(e) = &l.stream {
            let ptr = Type::Scalar(ScalarType::Ptr);
            self.expect_type(path, index, e, &ptr, "the stream");
            index += 1;
        }
        if let Some(e) = &l.device {
            self.expect_integer(path, index, e, "the device");
            index += 1;
        } else if self.f.first_cuda_tensor().is_none() {
            self.stmt_err(
                path,
                StmtFocus::Whole,
                format!(
                    "the launch has no `device=`, and `{}` has no CUDA tensor parameter \
                     (`device=cuda`) to take the device from",
                    self.f.name
                ),
            );
        }
        let first_arg = index;
        let mut arg_types = Vec::with_capacity(l.args.len());
        for (k, e) in l.args.iter().enumerate() {
            let scalar = match self.expr(path, index, e) {
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
            };
            arg_types.push(scalar);
            index += 1;
        }
        self.kernel_args(path, l, first_arg, &arg_types);
    }

    /// Checks that `e` is of an integer type.
    fn expect_integer(
        &mut self,
        path: &StmtPath,
        index: usize,
        e: &super::super::model::Expr,
        what: &str,
    ) {
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
