//! Why a sandbox could not be built: the step that failed and its cause.
//!
//! The harness reads it as the text of the report's `setup_error` (or, before a report
//! file exists, of the helper's stderr), so the text names the step first: "mounting
//! /proc: EPERM".

/// A step of building or running the sandbox that failed.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {cause}")]
pub struct Failure {
    pub step: String,
    #[source]
    pub cause: Cause,
}

#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error(transparent)]
    Sys(#[from] nix::errno::Errno),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Filter(#[from] seccompiler::BackendError),
    #[error(transparent)]
    Seccomp(#[from] seccompiler::Error),
    /// What the helper itself refuses or finds wrong (a path with `..`, a NUL byte).
    #[error("{0}")]
    Refused(String),
}

impl Failure {
    /// A step that failed on the helper's own judgement, not a system call's.
    pub fn refused(step: impl Into<String>, why: impl Into<String>) -> Failure {
        Failure {
            step: step.into(),
            cause: Cause::Refused(why.into()),
        }
    }

    /// This failure as part of a larger step: "`outer`: `step`: cause".
    pub fn within(self, outer: impl std::fmt::Display) -> Failure {
        Failure {
            step: format!("{outer}: {}", self.step),
            cause: self.cause,
        }
    }
}

/// `.at("step")` on any result whose error is a [`Cause`].
pub trait At<T> {
    fn at(self, step: impl Into<String>) -> Result<T, Failure>;
}

impl<T, E: Into<Cause>> At<T> for Result<T, E> {
    fn at(self, step: impl Into<String>) -> Result<T, Failure> {
        self.map_err(|e| Failure {
            step: step.into(),
            cause: e.into(),
        })
    }
}
