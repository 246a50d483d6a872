//! foldbench's integration tests: one binary, topic files beside it, insta snapshots in
//! `snapshots/`.

mod helpers;

mod architecture;
mod cli;
mod folds;
mod hidden;
mod judge;
mod matrix;
mod snapshots;
mod suite;
