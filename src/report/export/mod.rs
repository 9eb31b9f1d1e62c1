//! `gauntlet export <run dir> --format inspect|ctrf|atif --out <dir>`: a run in the
//! formats other tools read — Inspect AI's eval log (`inspect view`), a CTRF report (CI
//! dashboards), one ATIF trajectory per trial (Harbor's trajectory tools).
//!
//! A projection like every page: read with the report's one loader (every verdict
//! re-derived, every raw file checked; what could not be counted is left out and named),
//! built from the records and their raw files only — the prompt, the proxy's relayed
//! calls beside its metering, the agent's normalized tool calls — and written into a
//! directory that is not the run. The same run gives the same bytes.

mod atif;
mod ctrf;
mod inspect;
mod view;

use std::path::{Path, PathBuf};

use super::base::ReportError;
use super::load::{load_run, Problem};
use super::options::Options;

/// The formats `gauntlet export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Inspect AI eval logs, one per suite (`<created>_gauntlet-<suite>_<run>.json`).
    Inspect,
    /// One CTRF report (`ctrf-report.json`), one test per trial.
    Ctrf,
    /// One ATIF trajectory per trial (`<trial dir>.trajectory.json`).
    Atif,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("{run}: nothing to export: no record could be counted")]
    Empty { run: String },
    #[error("--out {out}: not empty; an export goes into a new or empty directory")]
    NotEmpty { out: String },
    #[error("--out {out}: inside the run {run}, which an export must not change")]
    InsideRun { out: String, run: String },
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What an export wrote, and what of the run it left out.
#[derive(Debug)]
pub struct Exported {
    pub files: Vec<PathBuf>,
    /// Files of the run the loader could not count (left out of the export).
    pub problems: Vec<Problem>,
}

/// Export `run_dir` as `format` into `out` (created if missing).
pub fn export(
    run_dir: &Path,
    format: Format,
    out: &Path,
    opts: &Options,
) -> Result<Exported, ExportError> {
    if super::is_within(out, run_dir) {
        return Err(ExportError::InsideRun {
            out: out.display().to_string(),
            run: run_dir.display().to_string(),
        });
    }
    // Into a new or empty directory only: files of an earlier export left beside these
    // would read as part of this run.
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(ExportError::NotEmpty {
            out: out.display().to_string(),
        });
    }
    let run = load_run(run_dir)?;
    let view = view::view(&run, opts);
    if view.trials.is_empty() {
        return Err(ExportError::Empty {
            run: run_dir.display().to_string(),
        });
    }
    std::fs::create_dir_all(out).map_err(|source| ExportError::Io {
        file: out.to_path_buf(),
        source,
    })?;
    let docs: Vec<(String, String)> = match format {
        Format::Inspect => inspect::logs(&view),
        Format::Ctrf => vec![(ctrf::FILE.to_owned(), ctrf::report(&view))],
        Format::Atif => atif::trajectories(&view),
    };
    let mut files = Vec::new();
    for (name, text) in docs {
        let file = out.join(name);
        std::fs::write(&file, text).map_err(|source| ExportError::Io {
            file: file.clone(),
            source,
        })?;
        files.push(file);
    }
    Ok(Exported {
        files,
        problems: run.problems.clone(),
    })
}
