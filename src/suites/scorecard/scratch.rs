//! A process's scratch HOME and TMPDIR: each turn and each background run makes one,
//! so it sits below both, and nothing of either is needed to make or remove it.

use std::path::{Path, PathBuf};

use crate::trial::{mkdir, SetupError};

/// One process's scratch HOME and TMPDIR (`scratch/<stem>/home`, `…/tmp`), new and empty
/// when it starts and removed when it is over ([`Scratch::remove`], or on drop when a
/// turn ends early): what the harness writes there for a turn (the prompt file, an
/// adapter's config) and what the agent leaves there never reach a later turn.
pub struct Scratch {
    root: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    removed: bool,
}

impl Scratch {
    pub(super) fn new(parent: &Path, stem: &str) -> Result<Scratch, SetupError> {
        let root = parent.join(stem);
        // `create_dir`, not `create_dir_all`: a directory already there is not fresh.
        std::fs::create_dir(&root).map_err(SetupError::io(&root))?;
        let home = mkdir(&root.join("home"))?;
        let tmp = mkdir(&root.join("tmp"))?;
        Ok(Scratch {
            root,
            home,
            tmp,
            removed: false,
        })
    }

    /// Remove it all; an error when something of it is left.
    pub fn remove(mut self) -> Result<(), SetupError> {
        self.removed = true;
        remove_tree(&self.root).map_err(SetupError::io(&self.root))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_tree(&self.root);
        }
    }
}

/// `remove_dir_all`, and when that fails (an agent that ran as the harness's user may
/// have taken its own permissions off a directory), again after giving every directory
/// back to its owner. Symlinks are removed, never followed.
fn remove_tree(root: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(root) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(_) => {}
    }
    fn reopen(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                reopen(&e.path());
            }
        }
    }
    reopen(root);
    std::fs::remove_dir_all(root)
}
