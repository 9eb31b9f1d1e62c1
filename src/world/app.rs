//! STUB
use std::path::Path;
use std::time::Duration;
pub struct AppProcess {
    url: String,
}
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("x")]
    X,
}
impl AppProcess {
    pub async fn start(
        _b: &Path,
        _a: &[String],
        _l: &Path,
        _label: &str,
        _s: Duration,
    ) -> Result<AppProcess, AppError> {
        Err(AppError::X)
    }
    pub fn url(&self) -> &str {
        &self.url
    }
    pub async fn stop(&mut self) {}
}
