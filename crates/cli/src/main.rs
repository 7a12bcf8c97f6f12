//! The `dsh` binary. Everything lives in the library; see [`dsh_cli::commands`].

/// See [`dsh_cli::allocator`] for why.
#[global_allocator]
static GLOBAL: dsh_cli::allocator::Allocator = dsh_cli::allocator::Allocator;

fn main() -> std::process::ExitCode {
    dsh_cli::commands::main()
}
