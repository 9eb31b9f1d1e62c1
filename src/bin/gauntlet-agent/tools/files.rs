//! `write_file` and `read_file`, relative to the workspace. Absolute paths are honoured
//! as given: the shell tool can reach them anyway, so refusing them here would only
//! make the model work around it.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{truncate, ToolOutcome, READ_CAP};

#[derive(Debug, Deserialize)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Deserialize)]
pub struct ReadArgs {
    pub path: String,
}

fn resolve(cwd: &Path, path: &str) -> PathBuf {
    cwd.join(path)
}

pub fn write(cwd: &Path, args: &WriteArgs) -> ToolOutcome {
    if args.path.trim().is_empty() {
        return ToolOutcome::failed("write_file: `path` is empty");
    }
    let file = resolve(cwd, &args.path);
    if let Some(parent) = file.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            return ToolOutcome::failed(format!(
                "write_file: cannot create directory {}: {e}",
                parent.display()
            ));
        }
    }
    match std::fs::write(&file, &args.content) {
        Ok(()) => ToolOutcome::ok(format!(
            "wrote {} bytes to {}",
            args.content.len(),
            args.path
        )),
        Err(e) => ToolOutcome::failed(format!("write_file: cannot write {}: {e}", args.path)),
    }
}

pub fn read(cwd: &Path, args: &ReadArgs) -> ToolOutcome {
    match std::fs::read(resolve(cwd, &args.path)) {
        Ok(bytes) => ToolOutcome::ok(truncate(&bytes, bytes.len(), READ_CAP)),
        Err(e) => ToolOutcome::failed(format!("read_file: cannot read {}: {e}", args.path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_creates_parents_and_read_returns_content() {
        let dir = std::env::temp_dir().join(format!("ga-files-{}", std::process::id()));
        let w = write(
            &dir,
            &WriteArgs {
                path: "a/b/c.txt".into(),
                content: "hello".into(),
            },
        );
        assert!(!w.failed, "{}", w.output);
        let r = read(
            &dir,
            &ReadArgs {
                path: "a/b/c.txt".into(),
            },
        );
        assert_eq!(r, ToolOutcome::ok("hello"));
        let missing = read(
            &dir,
            &ReadArgs {
                path: "nope".into(),
            },
        );
        assert!(missing.failed && missing.output.contains("nope"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
