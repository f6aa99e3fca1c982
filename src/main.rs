//! The `jarvis` binary: everything lives in the library.
fn main() -> std::process::ExitCode {
    jarvis::cli::main()
}
