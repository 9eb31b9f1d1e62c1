//! `gauntlet`: run trials, rescore records, write results pages (the commands are
//! [`gauntlet::cli`]).

fn main() -> std::process::ExitCode {
    gauntlet::cli::main()
}
