//! The `foldbench` binary: the command line of the `foldbench` library with the built-in
//! policies (clap, one module per command, the exit codes; see `lib.rs`).

fn main() -> std::process::ExitCode {
    foldbench::main()
}
