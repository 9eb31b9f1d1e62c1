//! STUB (replaced by the helper's implementation)
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    pub deadline: Duration,
    pub stdout_path: PathBuf,
    pub stderr_path: PathBuf,
    pub rel_base: PathBuf,
    pub output_cap: u64,
    pub marker: String,
}
pub struct ProcessOutcome {
    pub end: crate::evidence::ProcessEnd,
    pub stdout: crate::evidence::RawFile,
    pub stderr: crate::evidence::RawFile,
    pub stragglers_killed: u32,
}
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("x")]
    X,
}
pub async fn run(_spec: ProcessSpec) -> Result<ProcessOutcome, ProcessError> {
    Err(ProcessError::X)
}
