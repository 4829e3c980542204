//! Fuzzes the `__tvm_ffi__library_bin` decoder: any input is either an error or a blob that
//! encodes back to exactly the bytes it was read from (the format has one encoding per blob).
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run library_bin` (from the workspace root).

#![no_main]

use libfuzzer_sys::fuzz_target;
use safecall_runtime::library_bin::{LIB_KIND, decode, encode};

fuzz_target!(|data: &[u8]| {
    match decode(data) {
        Ok(bin) => {
            let nbytes = u64::from_le_bytes(data[..8].try_into().expect("decoded a header"));
            let read = &data[..8 + nbytes as usize];
            assert_eq!(encode(&bin), read, "decode/encode is not the identity");
            assert_eq!(bin.imports.len(), bin.modules.len());
            assert_eq!(
                bin.modules.iter().filter(|m| m.kind() == LIB_KIND).count(),
                1
            );
            for children in &bin.imports {
                assert!(children.iter().all(|&c| c < bin.modules.len()));
            }
        }
        Err(error) => {
            // Messages are built without panicking, and name the offset.
            assert!(error.to_string().starts_with("malformed __tvm_ffi__library_bin at byte "));
        }
    }
});
