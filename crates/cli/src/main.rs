//! The `dsh` binary. Everything lives in the library; see [`dsh_cli::commands`].

fn main() -> std::process::ExitCode {
    dsh_cli::commands::main()
}
