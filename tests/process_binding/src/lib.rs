//! Holds no code: the package exists for its integration test
//! (`tests/real_runtime.rs`), which needs a binary linked without `-rdynamic`.
