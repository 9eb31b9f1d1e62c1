//! The commands that read runs: rescore, report, publish, leaderboard, compare, export
//! and merge. Each reads records and nothing else.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::ReportArgs;
use super::exit::error;
use crate::record;

pub(crate) fn rescore(path: &std::path::Path, expected: Option<&str>, partial: bool) -> ExitCode {
    use record::rescore::ManifestState;
    if let Some(d) = expected.filter(|d| !record::digest::is_digest(d)) {
        return error(format!(
            "--digest `{d}`: expected sha256: and 64 lowercase hex digits"
        ));
    }
    let r = or_exit!(record::rescore::rescore_path(path));
    let planned_nothing = !matches!(r.manifest, ManifestState::Present { .. });
    if r.rows.is_empty() && r.findings.is_empty() && planned_nothing && expected.is_none() {
        return error(format!("{}: no records found", path.display()));
    }
    print!("{}", record::rescore::render_run(&r));
    let mut ok = if partial { r.ok_partial() } else { r.ok() };
    if partial && !r.ok() && ok {
        println!("--partial: the run is incomplete, as its user said");
    }
    if let Some(want) = expected {
        if want == r.digest {
            println!("run digest matches --digest");
        } else {
            println!(
                "DIGEST MISMATCH: the records hash to {}, not {want}: the run was changed after it ended",
                r.digest
            );
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(crate) fn report(
    run_dir: &std::path::Path,
    out: Option<&std::path::Path>,
    args: &ReportArgs,
) -> ExitCode {
    let opts = or_exit!(args.options());
    let out = out.unwrap_or(run_dir);
    match crate::report::write_report(run_dir, out, &opts) {
        Ok(pages) => {
            for p in &pages.summary.problems {
                eprintln!("warning: {}: {}", run_dir.join(&p.file).display(), p.cause);
            }
            for name in [
                crate::report::REPORT_MD,
                crate::report::REPORT_HTML,
                crate::report::SUMMARY_JSON,
            ] {
                println!("{}", out.join(name).display());
            }
            if pages.summary.problems.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => error(e),
    }
}

pub(crate) fn publish(
    run_dir: &std::path::Path,
    label: &str,
    results: Option<PathBuf>,
    provider: Option<&std::path::Path>,
    args: &ReportArgs,
) -> ExitCode {
    let opts = or_exit!(args.options());
    let statement = match provider.map(crate::report::provider::read_toml).transpose() {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    let results = results.unwrap_or_else(crate::report::publish::default_results_dir);
    match crate::report::publish::publish(run_dir, &results, label, statement.as_ref(), &opts) {
        Ok(dest) => {
            println!("published {}", dest.display());
            println!(
                "pages     {}",
                results
                    .join(crate::report::publish::PUBLISHED_DIR)
                    .display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

pub(crate) fn regenerate_published(results: Option<PathBuf>, args: &ReportArgs) -> ExitCode {
    let opts = or_exit!(args.options());
    let results = results.unwrap_or_else(crate::report::publish::default_results_dir);
    match crate::report::publish::regenerate_published(&results, &opts) {
        Ok(pages) => {
            println!("pages     {}", pages.display());
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

pub(crate) fn leaderboard(run_dirs: &[PathBuf], out: &std::path::Path) -> ExitCode {
    use crate::report::leaderboard;
    let entries = or_exit!(leaderboard::collect(run_dirs));
    match leaderboard::append(out, entries) {
        Ok(all) => {
            print!("{}", leaderboard::render_markdown(&all));
            println!(
                "wrote {} and {}",
                out.join(leaderboard::LEADERBOARD_MD).display(),
                out.join(leaderboard::LEADERBOARD_JSON).display()
            );
            let flagged = all
                .iter()
                .any(|e| e.notes.iter().any(|n| n.starts_with("not reproducible")));
            if flagged {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => error(e),
    }
}

pub(crate) fn compare(
    baseline: &std::path::Path,
    candidate: &std::path::Path,
    out: Option<&std::path::Path>,
    args: &ReportArgs,
) -> ExitCode {
    use crate::report::compare;
    let opts = or_exit!(args.options());
    if let Some(out) = out {
        for run in [baseline, candidate] {
            if crate::report::is_within(out, run) {
                return error(format!(
                    "--out {}: inside the run {}, which a comparison must not change",
                    out.display(),
                    run.display()
                ));
            }
        }
    }
    let c = match compare::compare(baseline, candidate, &opts) {
        Ok(c) => c,
        // A candidate that cannot be read fails a gate like a regression would.
        Err(e) if e.fails_the_candidate() => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
        Err(e) => return error(e),
    };
    print!("{}", compare::render::markdown(&c));
    if let Some(out) = out {
        if let Err(e) = compare::render::write(&c, out) {
            return error(e);
        }
        for name in [
            compare::COMPARE_MD,
            compare::COMPARE_HTML,
            compare::COMPARE_JSON,
        ] {
            eprintln!("wrote {}", out.join(name).display());
        }
    }
    if c.regression {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

pub(crate) fn export(
    run_dir: &std::path::Path,
    format: crate::report::export::Format,
    out: &std::path::Path,
    args: &ReportArgs,
) -> ExitCode {
    let opts = or_exit!(args.options());
    match crate::report::export::export(run_dir, format, out, &opts) {
        Ok(done) => {
            for p in &done.problems {
                eprintln!(
                    "warning: {}: {} (left out of the export)",
                    run_dir.join(&p.file).display(),
                    p.cause
                );
            }
            for f in &done.files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}

pub(crate) fn merge(run_dirs: &[PathBuf], out: &std::path::Path, allow_missing: bool) -> ExitCode {
    let options = record::merge::MergeOptions {
        allow_missing_partitions: allow_missing,
    };
    match record::merge::merge_runs_with(run_dirs, out, options) {
        Ok(m) => {
            for i in &m.inputs {
                let placed = i.placement.as_ref().map_or(String::new(), |p| {
                    let part = p.partition.as_deref().unwrap_or("unpartitioned");
                    format!(" ({part} on {})", p.host)
                });
                println!("{}: {} trial directories{placed}", i.path, i.trial_dirs);
            }
            for p in &m.missing_partitions {
                println!("warning: partition {p} is missing from the merged run");
            }
            println!("merged into {}", out.display());
            ExitCode::SUCCESS
        }
        Err(e) => error(e),
    }
}
