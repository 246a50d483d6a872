//! foldbench's integration tests: one binary, topic files beside it, insta snapshots in
//! `snapshots/`.

mod helpers;

mod agents_run;
mod architecture;
mod behaviour;
mod cache;
mod caveats;
mod cli;
mod conformance;
mod delegate;
mod determinism;
mod driver;
mod exec_policy;
mod folds;
mod hidden;
mod history;
mod hostile;
mod html;
mod install;
mod judge;
mod loss;
mod matrix;
mod output;
mod outside;
mod peers;
mod planted;
mod policy_authors;
mod policy_docs;
mod proxy;
mod runs;
mod sandbox_view;
mod snapshots;
mod subagents;
mod suite;
mod widths;
