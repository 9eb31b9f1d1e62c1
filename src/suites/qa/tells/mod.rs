//! The tell finder (`gauntlet tells`): does anything but the broken behaviour tell a
//! mutant from its app?
//!
//! For each app, the app is started R times and each mutant once, every time freshly
//! and exactly as the gate starts a target for a claimed test ([`GateContext::prepare`]),
//! and probed from inside the gate's own sandbox ([`GateContext::run`], with the hidden
//! `gauntlet tells-probe` as the test command: [`probe`]). What the app's own runs
//! disagree on is volatile; every other difference between the app and a mutant is a
//! finding ([`compare`]), classed by what it is about and judged:
//!
//! - `text`, `header`, `exit`, `env`, `proc`, `artifact-name`, `timing`: a tell, unless
//!   it is the answer to a documented request that the mutant's own capability's
//!   acceptance criteria name (`behaviour`).
//! - `artifact-bytes` (a file both hand over, with other bytes): answered by specificity
//!   when the gate's runs against mutants independent of the capability (the app's
//!   independence matrix) are sure to include one that changes the same bytes, so that
//!   a test pinning them (an identity snapshot of the file, or of just the changed line)
//!   fails there; a tell otherwise ([`compare::answer_artifact_bytes`]). Every verifiable
//!   capability must have at least one independent mutant for that.
//!
//! Timing: the time from start to the target being ready (around
//! [`GateContext::prepare`]: for a server, its `listening on` line) and the probe's first
//! response. A mutant whose sample lies outside `[app min / 2 − 5 ms, app max × 2 + 5 ms]`
//! is sampled twice more, beside two more runs of the app; it is a tell only when all
//! three of its samples lie outside the band of all the app's samples.
//!
//! docs/adding-an-app.md, "Finding tells", says what an app author does about each.

pub mod compare;
pub mod corpus;
pub mod probe;

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use self::compare::{Finding, Status};
use self::probe::{Class, ProbeReport};
use crate::config::Config;
use crate::evidence::{ClaimTest, GateTarget};
use crate::spec::{LoadedApp, Modality};
use crate::suites::qa::gate_run::{GateContext, GateSlot};
use crate::sys::sandbox::TARGET_MOUNT;

/// The format of [`Report`] as `--json` writes it.
pub const REPORT_VERSION: u32 = 1;

/// Extra samples of a mutant whose time lies outside the app's band, and of the app
/// beside them.
const TIMING_CONFIRMATIONS: usize = 2;

/// Every app's findings.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema_version: u32,
    /// Runs of each app (`--runs`).
    pub runs: u32,
    pub apps: Vec<AppTells>,
}

/// One app's findings.
#[derive(Debug, Clone, Serialize)]
pub struct AppTells {
    pub app: String,
    pub modality: Modality,
    /// The mutants probed (the verifiable capabilities), in corpus order.
    pub mutants: Vec<String>,
    /// The documented requests and subcommand words handed to the probe.
    pub endpoints: Vec<String>,
    pub words: Vec<String>,
    /// Observations the app's runs agree on: what each mutant was compared on.
    pub compared: usize,
    /// What the app's first run showed, every observation: what the probe sees.
    pub observed: Vec<probe::Observation>,
    /// Start-up and first-response times, in ms: the app's samples, each mutant's.
    pub timing: Vec<TimingSamples>,
    pub findings: Vec<Finding>,
    /// Why the app could not be probed (it failed to start, the probe failed, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimingSamples {
    /// `None`: the app.
    pub mutant: Option<String>,
    pub startup_ms: Vec<f64>,
    pub first_response_ms: Vec<f64>,
}

impl AppTells {
    pub fn tells(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.status == Status::Tell)
            .count()
    }

    fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }
}

impl Report {
    pub fn tells(&self) -> usize {
        self.apps.iter().map(AppTells::tells).sum()
    }

    pub fn errors(&self) -> impl Iterator<Item = (&str, &str)> {
        self.apps
            .iter()
            .filter_map(|a| a.error.as_deref().map(|e| (a.app.as_str(), e)))
    }

    /// 2 when some app could not be probed, 1 when some app has a tell, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.errors().next().is_some() {
            2
        } else if self.tells() > 0 {
            1
        } else {
            0
        }
    }
}

/// The apps `names` asks for, in that order; all apps that are not superseded when
/// `names` is empty.
pub fn select(apps: Vec<LoadedApp>, names: &[String]) -> Result<Vec<LoadedApp>, String> {
    if names.is_empty() {
        return Ok(apps
            .into_iter()
            .filter(|a| a.app.superseded_by.is_none())
            .collect());
    }
    names
        .iter()
        .map(|n| {
            apps.iter()
                .find(|a| &a.app.name == n)
                .cloned()
                .ok_or_else(|| {
                    let all: Vec<&str> = apps.iter().map(|a| a.app.name.as_str()).collect();
                    format!("no app `{n}` (there are: {})", all.join(", "))
                })
        })
        .collect()
}

/// Probe every app in `apps` (one after the other: timings are compared) and compare.
/// An app that cannot be probed is reported with its error; the others still are.
pub async fn find(apps: &[LoadedApp], cfg: &Config, runs: u32) -> Report {
    let mut out = Vec::new();
    for app in apps {
        out.push(find_in_app(app, cfg, runs.max(1)).await);
    }
    Report {
        schema_version: REPORT_VERSION,
        runs: runs.max(1),
        apps: out,
    }
}

/// One probe run: what it saw, and how long its target took to start.
struct Sample {
    report: ProbeReport,
    startup_ms: f64,
}

impl Sample {
    fn first_response_ms(&self) -> f64 {
        self.report.first_response_ms.unwrap_or(f64::NAN)
    }
}

/// Where one app's probe runs live: a directory of the tell finder's own, removed when
/// it is dropped. Every run uses the same paths (the test directory, the run's target
/// and logs), removed after it, so nothing a run sees names the run.
struct Work {
    root: PathBuf,
}

impl Work {
    fn new(app: &str) -> std::io::Result<Work> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let root = std::env::temp_dir().join(format!(
            "gauntlet-tells-{}-{nanos:08x}/{app}",
            std::process::id()
        ));
        std::fs::create_dir_all(root.join("probe"))?;
        std::fs::create_dir_all(root.join("logs"))?;
        Ok(Work { root })
    }

    fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Remove what a run left (its target, its streams, the app's logs and scratch).
    fn clear(&self) -> std::io::Result<()> {
        for d in ["gate", "logs"] {
            match std::fs::remove_dir_all(self.dir(d)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        std::fs::create_dir_all(self.dir("logs"))
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        if let Some(parent) = self.root.parent() {
            let _ = std::fs::remove_dir_all(parent);
        }
    }
}

/// The probe's command line: the same for the app and every mutant.
fn probe_command(endpoints: &[String], words: &[String]) -> String {
    let mut argv: Vec<String> = vec![
        "gauntlet".into(),
        "tells-probe".into(),
        "--artifacts".into(),
        TARGET_MOUNT.into(),
    ];
    for e in endpoints {
        argv.extend(["--endpoint".into(), e.clone()]);
    }
    for w in words {
        argv.extend(["--word".into(), w.clone()]);
    }
    shell_words::join(argv)
}

async fn find_in_app(app: &LoadedApp, cfg: &Config, runs: u32) -> AppTells {
    let mutants: Vec<String> = app
        .corpus
        .capabilities
        .iter()
        .filter(|c| c.kind.is_verifiable())
        .map(|c| c.id.clone())
        .collect();
    let http = app.app.modality != Modality::Cli;
    let endpoints = if http { corpus::endpoints(app) } else { vec![] };
    let words = if http { vec![] } else { corpus::words(app) };
    let mut tells = AppTells {
        app: app.app.name.clone(),
        modality: app.app.modality,
        mutants: mutants.clone(),
        endpoints: endpoints.clone(),
        words: words.clone(),
        compared: 0,
        observed: vec![],
        timing: vec![],
        findings: vec![],
        error: None,
    };
    if !cfg.sandbox.sealed() {
        tells.error = Some(
            "the sandbox is off (GAUNTLET_SANDBOX=off): the tell finder probes from inside the gate's sandbox"
                .into(),
        );
        return tells;
    }
    if let Err(e) = compare_app(app, cfg, runs, &mutants, &mut tells).await {
        tells.error = Some(e);
    }
    tells
}

async fn compare_app(
    app: &LoadedApp,
    cfg: &Config,
    runs: u32,
    mutants: &[String],
    tells: &mut AppTells,
) -> Result<(), String> {
    let work = Work::new(&app.app.name).map_err(|e| format!("a work directory: {e}"))?;
    let test = ClaimTest {
        dir: "probe".into(),
        command: probe_command(&tells.endpoints, &tells.words),
    };
    let probe_dir = work.dir("probe");
    let (trial_dir, gate_dir, logs) = (work.root.clone(), work.dir("gate"), work.dir("logs"));
    let ctx = GateContext {
        app,
        test: &test,
        dir: &probe_dir,
        cfg,
        trial_dir: &trial_dir,
        gate_dir: &gate_dir,
        logs: &logs,
    };
    let prober = Prober { ctx, work: &work };

    // The app's runs spread among the mutants' (app, mutant, app, mutant, ...), so that
    // the app's samples see the machine as the mutants' do.
    let mut app_samples: Vec<Sample> = Vec::new();
    let mut mutant_samples: Vec<(String, Vec<Sample>)> = Vec::new();
    let rounds = (runs as usize).max(mutants.len());
    for i in 0..rounds {
        if i < runs as usize {
            app_samples.push(prober.sample(None).await?);
        }
        if let Some(m) = mutants.get(i) {
            mutant_samples.push((m.clone(), vec![prober.sample(Some(m)).await?]));
        }
    }

    let reports: Vec<ProbeReport> = app_samples.iter().map(|s| s.report.clone()).collect();
    let base = compare::baseline(&reports);
    tells.compared = base.stable_count();
    tells.observed = reports[0].observations.clone();
    let mut findings = base.findings.clone();
    for (m, samples) in &mutant_samples {
        let cap = app
            .capability(m)
            .ok_or_else(|| format!("no capability `{m}`"))?;
        findings.extend(base.differences(cap, &samples[0].report));
    }

    // Timing: a mutant outside the app's band is sampled again, beside the app.
    type Metric = fn(&Sample) -> f64;
    let metrics: [(&str, Metric); 2] = [
        ("start-up", |s| s.startup_ms),
        ("first response", Sample::first_response_ms),
    ];
    let suspect = |app_s: &[Sample], ms: &[Sample]| {
        metrics.iter().any(|(_, f)| {
            let a: Vec<f64> = app_s.iter().map(f).filter(|x| x.is_finite()).collect();
            let m: Vec<f64> = ms.iter().map(f).filter(|x| x.is_finite()).collect();
            compare::timing_band(&a).is_some_and(|b| compare::outside(b, &m))
        })
    };
    for (m, samples) in mutant_samples.iter_mut() {
        if !suspect(&app_samples, samples) {
            continue;
        }
        for _ in 0..TIMING_CONFIRMATIONS {
            app_samples.push(prober.sample(None).await?);
            samples.push(prober.sample(Some(m)).await?);
        }
    }
    for (m, samples) in &mutant_samples {
        for (name, f) in &metrics {
            let a: Vec<f64> = app_samples
                .iter()
                .map(f)
                .filter(|x| x.is_finite())
                .collect();
            let s: Vec<f64> = samples.iter().map(f).filter(|x| x.is_finite()).collect();
            let Some(band) = compare::timing_band(&a) else {
                continue;
            };
            if compare::outside(band, &s) {
                findings.push(Finding {
                    mutant: Some(m.clone()),
                    status: Status::Tell,
                    class: Class::Timing,
                    probe: (*name).into(),
                    field: "ms".into(),
                    app_values: vec![format!("{} ms", spread(&a))],
                    mutant_value: Some(format!("{} ms", list(&s))),
                    note: Some(format!(
                        "every sample outside [{:.1}, {:.1}] ms",
                        band.0, band.1
                    )),
                });
            }
        }
    }
    tells.timing = std::iter::once((None, &app_samples))
        .chain(mutant_samples.iter().map(|(m, s)| (Some(m.clone()), s)))
        .map(|(mutant, s)| TimingSamples {
            mutant,
            startup_ms: s.iter().map(|x| round(x.startup_ms)).collect(),
            first_response_ms: s.iter().map(|x| round(x.first_response_ms())).collect(),
        })
        .collect();

    // Artifact bytes: answered by the independence matrix, or tells.
    if findings
        .iter()
        .any(|f| f.class == Class::ArtifactBytes && f.status == Status::Tell)
    {
        let app_texts = &app_samples[0].report.artifact_texts;
        let mut spans = compare::Spans::new();
        for f in &findings {
            let (Some(m), Some(file), true) = (
                &f.mutant,
                f.field.strip_prefix("bytes "),
                f.class == Class::ArtifactBytes,
            ) else {
                continue;
            };
            let theirs = mutant_samples
                .iter()
                .find(|(c, _)| c == m)
                .and_then(|(_, s)| s[0].report.artifact_texts.get(file));
            let span = match (app_texts.get(file), theirs) {
                (Some(a), Some(b)) => compare::changed_span(a.as_bytes(), b.as_bytes()),
                _ => None,
            };
            spans.insert((m.clone(), file.to_string()), span);
        }
        let matrix = independence(app, cfg).await?;
        compare::answer_artifact_bytes(&mut findings, &matrix, &spans, app_texts);
    }
    tells.findings = findings;
    Ok(())
}

/// The app's independence matrix as [`compare::answer_artifact_bytes`] reads it;
/// `Ok(Err(why))` when the matrix cannot stand (then every capability's identity snapshot
/// would be verified), `Err` when it could not be derived (the app's error).
async fn independence(
    app: &LoadedApp,
    cfg: &Config,
) -> Result<Result<compare::Independence, String>, String> {
    let (matrix, _) = crate::suites::qa::independence::matrix_for(app, cfg)
        .await
        .map_err(|e| format!("deriving its independence matrix: {e}"))?;
    let problems = matrix.problems();
    if !problems.is_empty() {
        let all: Vec<String> = problems.iter().map(ToString::to_string).collect();
        return Ok(Err(format!(
            "the independence matrix is refused ({}): an identity snapshot test would be verified",
            all.join("; ")
        )));
    }
    Ok(Ok(compare::Independence {
        independent: matrix
            .capabilities
            .iter()
            .map(|c| (c.clone(), matrix.independent_of(c)))
            .collect(),
        drawn: cfg.independent_mutants as usize,
    }))
}

struct Prober<'a> {
    ctx: GateContext<'a>,
    work: &'a Work,
}

impl Prober<'_> {
    /// Start the target (the app, or the mutant of `mutant`) as a gate run does, probe
    /// it from inside the gate's sandbox, stop it, and clear what the run left.
    async fn sample(&self, mutant: Option<&str>) -> Result<Sample, String> {
        let who = mutant.map_or("the app".to_string(), |m| format!("the mutant of `{m}`"));
        let slot = GateSlot {
            position: 0,
            target: if mutant.is_some() {
                GateTarget::Mutant
            } else {
                GateTarget::App
            },
            mutant: mutant.map(str::to_string),
            attempt: 1,
        };
        let t0 = Instant::now();
        let mut target = self
            .ctx
            .prepare(&slot)
            .await
            .map_err(|e| format!("{who}: {e}"))?;
        let startup_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let run = self.ctx.run(&slot, &target).await;
        target.stop(self.ctx.trial_dir).await;
        let run = run.map_err(|e| format!("{who}: the probe did not run: {e}"))?;
        let read = |rel: &str| std::fs::read(self.ctx.trial_dir.join(rel)).unwrap_or_default();
        let (stdout, stderr) = (read(&run.stdout.path), read(&run.stderr.path));
        self.work
            .clear()
            .map_err(|e| format!("clearing {}: {e}", self.work.root.display()))?;
        if !run.end.success() {
            return Err(format!(
                "{who}: the probe {}; its stderr ends: {}",
                run.end.describe(),
                tail(&stderr)
            ));
        }
        let report: ProbeReport = serde_json::from_slice(&stdout)
            .map_err(|e| format!("{who}: the probe's report is not JSON ({e})"))?;
        if report.probe_version != probe::PROBE_VERSION {
            return Err(format!(
                "{who}: the probe reports version {}, expected {}",
                report.probe_version,
                probe::PROBE_VERSION
            ));
        }
        Ok(Sample { report, startup_ms })
    }
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" / ")
}

fn round(ms: f64) -> f64 {
    (ms * 10.0).round() / 10.0
}

fn spread(xs: &[f64]) -> String {
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.1}–{max:.1}")
}

fn list(xs: &[f64]) -> String {
    xs.iter()
        .map(|x| format!("{x:.1}"))
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------

/// Longest value shown in a table cell.
const CELL: usize = 48;

/// The findings as a table (app, mutant, status, class, probe, app value → mutant
/// value, shortened to the first line where they differ), each app's summary after
/// its rows, and the total.
pub fn render_table(report: &Report) -> String {
    let mut rows: Vec<[String; 6]> = Vec::new();
    // A tell's note (why bytes are not answered, the timing band), under its row.
    let mut notes: Vec<Option<String>> = Vec::new();
    for a in &report.apps {
        for f in &a.findings {
            let values = match &f.mutant_value {
                Some(m) => {
                    let (x, y) = first_difference(&f.app_values[0], m);
                    let (x, y) = from_difference(&x, &y);
                    format!("{} → {}", short(&x), short(&y))
                }
                None => f
                    .app_values
                    .iter()
                    .map(|v| short(v))
                    .collect::<Vec<_>>()
                    .join(" | "),
            };
            rows.push([
                a.app.clone(),
                f.mutant.clone().unwrap_or_else(|| "(app runs)".into()),
                f.status.as_str().into(),
                f.class.as_str().into(),
                format!("{} {}", f.probe, f.field),
                values,
            ]);
            notes.push(f.note.clone().filter(|_| f.status == Status::Tell));
        }
    }
    let mut out = String::new();
    if !rows.is_empty() {
        let head = ["APP", "MUTANT", "STATUS", "CLASS", "PROBE", "APP → MUTANT"].map(String::from);
        let mut widths = [0usize; 5];
        for r in std::iter::once(&head).chain(&rows) {
            for (w, cell) in widths.iter_mut().zip(r.iter()) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let noted = std::iter::once(&None).chain(&notes);
        for (r, note) in std::iter::once(&head).chain(&rows).zip(noted) {
            let mut line = String::new();
            for (w, cell) in widths.iter().zip(r.iter()) {
                line.push_str(cell);
                line.push_str(&" ".repeat(w - cell.chars().count() + 2));
            }
            line.push_str(&r[5]);
            out.push_str(line.trim_end());
            out.push('\n');
            if let Some(note) = note {
                out.push_str(&format!("    ↳ {note}\n"));
            }
        }
        out.push('\n');
    }
    for a in &report.apps {
        match &a.error {
            Some(e) => out.push_str(&format!("{}: error: {e}\n", a.app)),
            None => out.push_str(&format!(
                "{}: {} run(s) of the app, {} mutant(s), {} observations compared: {} tell(s), {} volatile, {} behaviour, {} answered by specificity\n",
                a.app,
                report.runs,
                a.mutants.len(),
                a.compared,
                a.tells(),
                a.count(Status::Volatile),
                a.count(Status::Behaviour),
                a.count(Status::AnsweredBySpecificity),
            )),
        }
    }
    let with_tells: Vec<&str> = report
        .apps
        .iter()
        .filter(|a| a.tells() > 0)
        .map(|a| a.app.as_str())
        .collect();
    if with_tells.is_empty() {
        out.push_str("no tells\n");
    } else {
        out.push_str(&format!(
            "{} tell(s) in {}\n",
            report.tells(),
            with_tells.join(", ")
        ));
    }
    out
}

/// The first line where `a` and `b` differ (each whole when they are one line).
pub fn first_difference(a: &str, b: &str) -> (String, String) {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    if la.len() <= 1 && lb.len() <= 1 {
        return (a.to_string(), b.to_string());
    }
    for i in 0..la.len().max(lb.len()) {
        let (x, y) = (la.get(i), lb.get(i));
        if x != y {
            let show = |l: Option<&&str>| match l {
                Some(l) => format!("line {}: {l}", i + 1),
                None => format!("line {}: (none)", i + 1),
            };
            return (show(x), show(y));
        }
    }
    // Equal lines, other line ends.
    (format!("{a:?}"), format!("{b:?}"))
}

/// Both texts from a little before the first character where they differ, when that
/// is far in.
fn from_difference(a: &str, b: &str) -> (String, String) {
    const KEEP: usize = 12;
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    if common <= KEEP + 8 {
        return (a.to_string(), b.to_string());
    }
    let cut = |s: &str| format!("…{}", s.chars().skip(common - KEEP).collect::<String>());
    (cut(a), cut(b))
}

fn short(v: &str) -> String {
    let v: String = v
        .trim_end_matches('\n')
        .chars()
        .map(|c| if c.is_control() { '·' } else { c })
        .collect();
    if v.is_empty() {
        return "(empty)".into();
    }
    if v.chars().count() <= CELL {
        v
    } else {
        let cut: String = v.chars().take(CELL - 1).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_shows_the_first_line_that_differs() {
        assert_eq!(
            first_difference(
                "error\n\nUsage: a [OPTIONS]\n",
                "error\n\nUsage: a --mutant <C>\n"
            ),
            (
                "line 3: Usage: a [OPTIONS]".into(),
                "line 3: Usage: a --mutant <C>".into()
            )
        );
        assert_eq!(first_difference("1", "2"), ("1".into(), "2".into()));
        assert_eq!(short(""), "(empty)");
        assert_eq!(short("cli-tally 2.3.0\n"), "cli-tally 2.3.0");
        assert_eq!(
            from_difference(
                "line 3: Count words, or write them in upper case.",
                "line 3: Count words, or write them in upper case. (mutant build)"
            ),
            (
                "… upper case.".into(),
                "… upper case. (mutant build)".into()
            )
        );
        assert_eq!(from_difference("ab", "ac"), ("ab".into(), "ac".into()));
        assert_eq!(short(&"x".repeat(100)).chars().count(), CELL);
    }

    #[test]
    fn the_probe_command_quotes_what_the_corpus_wrote() {
        let c = probe_command(&["GET /api/notes?q=<query>".into()], &["sum".into()]);
        assert_eq!(
            c,
            "gauntlet tells-probe --artifacts /run/gauntlet/target --endpoint 'GET /api/notes?q=<query>' --word sum"
        );
    }
}
