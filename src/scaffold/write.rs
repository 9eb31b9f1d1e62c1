//! Writing a scaffold: only into a directory that is new or empty, so that `gauntlet
//! init` never overwrites, or mixes its files with, what someone already has there.

use std::path::{Path, PathBuf};

use super::file::File;

#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("{dir}: is not empty (it holds `{entry}`): gauntlet init writes only into a new or empty directory, and wrote nothing")]
    NotEmpty { dir: PathBuf, entry: String },
    #[error("{dir}: is not a directory: gauntlet init wrote nothing")]
    NotADirectory { dir: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ScaffoldError + '_ {
    move |source| ScaffoldError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Write `files` into `dir`, which is created when it does not exist. A `dir` that
/// holds anything, a hidden file included, is refused before anything is written.
pub fn write(dir: &Path, files: &[File]) -> Result<(), ScaffoldError> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => {
            let mut entries = std::fs::read_dir(dir).map_err(io(dir))?;
            if let Some(entry) = entries.next() {
                let entry = entry.map_err(io(dir))?;
                return Err(ScaffoldError::NotEmpty {
                    dir: dir.to_path_buf(),
                    entry: entry.file_name().to_string_lossy().into_owned(),
                });
            }
        }
        Ok(_) => {
            return Err(ScaffoldError::NotADirectory {
                dir: dir.to_path_buf(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        Err(e) => return Err(io(dir)(e)),
    }
    for f in files {
        let path = dir.join(f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        // A new file: nothing of anyone else's is overwritten, even by a race.
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io(&path))?;
        std::io::Write::write_all(&mut out, f.contents.as_bytes()).map_err(io(&path))?;
    }
    Ok(())
}
