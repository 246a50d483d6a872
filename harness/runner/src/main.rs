//! The `foldbench` binary: glue that calls [`harness_runner::cli::main`].

fn main() {
    std::process::exit(harness_runner::cli::main());
}
