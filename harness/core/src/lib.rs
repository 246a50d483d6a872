//! x
pub mod message;
pub mod request;
pub mod spec;
pub mod tokens;
pub mod yaml;
