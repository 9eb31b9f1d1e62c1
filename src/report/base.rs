//! What every file of the report folder shares and nothing else: the names of the
//! pages, the error, how an agent's account is read again from its raw stdout, and
//! path checks. It imports no file of the folder.

use std::path::{Path, PathBuf};

/// The files `gauntlet report` writes.
pub const REPORT_MD: &str = "report.md";
pub const REPORT_HTML: &str = "report.html";
pub const SUMMARY_JSON: &str = "summary.json";
/// The audit's pages, which `gauntlet report` also writes into a run directory whose
/// run was checked against an audit.
pub const HACKABILITY_MD: &str = "hackability.md";
pub const HACKABILITY_HTML: &str = "hackability.html";

/// Why a run could not be loaded, rendered, exported or published (`gauntlet report`,
/// `compare`, `publish`); a challenge trial's own report files fail with
/// [`ChallengeReportError`](challenge::ChallengeReportError).
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {reason}")]
    Invalid { file: PathBuf, reason: String },
    #[error("{0}")]
    Refused(String),
}

pub(crate) fn io(file: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io {
        file: file.to_path_buf(),
        source,
    }
}

/// The agent's normalized account of one process (its final message and report),
/// derived again from its raw stdout with the parser of the agent that made it, read
/// the way rescore reads raw files; `None` for an agent without a parser or a stdout
/// that cannot be read so.
pub(crate) fn agent_report(
    agent: &str,
    dir: &Path,
    stdout: &crate::evidence::RawFile,
) -> Option<(Option<String>, crate::evidence::normalize::AgentReport)> {
    let parser = crate::evidence::streams::AgentKind::from_name(agent)
        .map(crate::evidence::streams::parser)?;
    let file = crate::record::raw::open_plain_file(dir, &stdout.path)?;
    let parsed = parser(&mut std::io::BufReader::new(file));
    Some((parsed.transcript.final_message, parsed.report))
}

/// Whether `path` is `dir` or lies below it, by where they really are: both made
/// absolute and `..` resolved, then the longest part that exists resolved through its
/// links, so that an `--out` that does not exist yet, is given relative, or runs through
/// a link cannot slip into a run a page or an export must not change.
pub fn is_within(path: &Path, dir: &Path) -> bool {
    fn resolve(p: &Path) -> PathBuf {
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().unwrap_or_default().join(p)
        };
        let mut lexical = PathBuf::new();
        for c in abs.components() {
            match c {
                std::path::Component::ParentDir => {
                    lexical.pop();
                }
                std::path::Component::CurDir => {}
                other => lexical.push(other),
            }
        }
        let mut existing = lexical.clone();
        let mut rest = Vec::new();
        while !existing.exists() {
            match (
                existing.file_name().map(|n| n.to_owned()),
                existing.parent(),
            ) {
                (Some(name), Some(parent)) => {
                    rest.push(name);
                    existing = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let mut out = existing.canonicalize().unwrap_or(existing);
        for name in rest.iter().rev() {
            out.push(name);
        }
        out
    }
    resolve(path).starts_with(resolve(dir))
}

/// The relative path from directory `from` to directory `to`, ending in `/` (empty
/// when they are the same directory).
pub fn relative_dir(from: &Path, to: &Path) -> String {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (canon(from), canon(to));
    let a: Vec<_> = from.components().collect();
    let b: Vec<_> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = String::new();
    for _ in common..a.len() {
        out.push_str("../");
    }
    for c in &b[common..] {
        out.push_str(&c.as_os_str().to_string_lossy());
        out.push('/');
    }
    out
}
