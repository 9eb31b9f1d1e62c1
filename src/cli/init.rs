//! `gauntlet init [DIR]`: a new repository that adopts gauntlet ([`crate::scaffold`]),
//! and what to run in it next.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::scaffold::{self, Dependency, Options};

pub(crate) fn init(dir: &Path, gauntlet_path: Option<&Path>) -> ExitCode {
    let gauntlet = match gauntlet_path {
        None => Dependency::Published,
        Some(p) => Dependency::Path(or_exit!(scaffold::checkout(p))),
    };
    let named = or_exit!(named_by(dir));
    let package = scaffold::package_name(
        &named
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let install = scaffold::install_command(&gauntlet);
    let files = scaffold::files(&Options { package, gauntlet });
    or_exit!(scaffold::write(dir, &files));
    println!(
        "gauntlet init: wrote {} files into {}",
        files.len(),
        dir.display()
    );
    println!("next, in {}:", dir.display());
    println!("  {install}    # gauntlet's programs, once");
    println!("  gauntlet run                      # every trial → a results page");
    println!("  cargo nextest run --profile ci    # the tests");
    ExitCode::SUCCESS
}

/// The directory `dir` names, absolute and with `.` and `..` resolved as far as it
/// exists, so that `gauntlet init .` names the package after the current directory.
fn named_by(dir: &Path) -> Result<PathBuf, String> {
    let abs = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => break,
        }
    }
    let mut out = existing
        .canonicalize()
        .map_err(|e| format!("{}: {e}", existing.display()))?;
    out.extend(rest.iter().rev());
    Ok(out)
}
