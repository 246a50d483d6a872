//! Integration tests live in `main.rs`.
