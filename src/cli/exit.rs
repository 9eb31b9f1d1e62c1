//! How a command ends when something it needs fails: its cause on stderr, exit code 2.

/// The value of a `Result`, or the command's end with its error (exit code 2).
macro_rules! or_exit {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return $crate::cli::exit::error(e),
        }
    };
}

/// A command that could not run: its cause, and exit code 2.
pub(crate) fn error(msg: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("error: {msg}");
    std::process::ExitCode::from(2)
}
