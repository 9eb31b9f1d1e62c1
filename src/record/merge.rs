//! Merging runs split across machines (nextest `--partition`) into one run.
//!
//! Partitions of one run differ only in which trials they hold (and in nextest's run
//! id). Merging copies every trial directory into a new run directory and refuses,
//! naming the difference, when the inputs were not made with the same harness
//! config and the same specs — their figures would not mean one thing. The inputs are
//! never changed, and the output must be new. The inputs' run manifests are joined into
//! the merged run's, so rescore checks the merged run against every partition's plan.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::files::write_new_json;
use super::header::{Header, RecordConfig, RecordError, RECORD_FILE};
use super::identity::{self, RunIdentity, IDENTITY_FILE};
use super::manifest::MANIFEST_FILE;
use super::suite::SuiteRecord;
use crate::plan::partition::Partition;

/// The manifest a merged run carries: where its trials came from.
pub const MERGE_FILE: &str = "merge.json";

/// Files a run directory may hold that are generated from it, not part of it.
const GENERATED: &[&str] = &["report.md", "report.html", "summary.json", MERGE_FILE];

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{file}: {source}")]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Refused(String),
}

fn io(file: &Path) -> impl FnOnce(std::io::Error) -> MergeError + '_ {
    move |source| MergeError::Io {
        file: file.to_path_buf(),
        source,
    }
}

/// Where two records that should belong to one run differ: the first field that
/// does, in both places.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Mismatch(pub String);

/// Checks that records belong to one run: one gauntlet version and one harness config
/// per suite ([`HeaderCheck`]), and one version of everything its trials were made
/// from (each record's [`SuiteRecord::subjects`]: an app's content hash, a
/// capability's spec, a challenge's manifest, a probe).
///
/// A run's loader checks every record of the run, so a record that matches what was
/// seen before costs no copy of its place: that is only written out when a subject is
/// first seen or named in a mismatch.
#[derive(Default)]
pub struct IdentityCheck {
    headers: HeaderCheck,
    /// Per kind of subject and field ([`super::suite::Subject::what`] and
    /// [`super::suite::Subject::field`]), per subject's name: where it was first seen,
    /// and its digest there. Keyed in two steps so that a record whose subjects were
    /// seen before is looked up by the names it borrows, with no key built for it.
    subjects: HashMap<(&'static str, &'static str), FirstSeen>,
}

/// Per subject's name: where it was first seen, and its digest there.
type FirstSeen = HashMap<String, (String, String)>;

impl IdentityCheck {
    /// `place` names the record in messages (a trial directory, an input run). A
    /// record that differs leaves nothing of itself behind to check the next against.
    pub fn check(
        &mut self,
        place: &dyn std::fmt::Display,
        rec: &dyn SuiteRecord,
    ) -> Result<(), Mismatch> {
        self.headers.check(place, rec.header())?;
        let subjects = rec.subjects();
        let mut new = Vec::new();
        for s in &subjects {
            let seen = self
                .subjects
                .get(&(s.what, s.field))
                .and_then(|names| names.get(s.name.as_ref()));
            match seen {
                Some((first, digest)) if *digest != *s.digest => {
                    return Err(Mismatch(format!(
                        "{} `{}`: {} `{}` in {place} vs `{digest}` in {first}",
                        s.what, s.name, s.field, s.digest
                    )))
                }
                Some(_) => {}
                None => new.push(s),
            }
        }
        for s in new {
            self.subjects.entry((s.what, s.field)).or_default().insert(
                s.name.to_string(),
                (place.to_string(), s.digest.to_string()),
            );
        }
        Ok(())
    }
}

/// Checks that records of every suite belong to one run: one gauntlet version, and one
/// harness config per suite (a challenge's config carries its own ceiling).
#[derive(Default)]
pub struct HeaderCheck {
    version: Option<(String, String)>,
    configs: BTreeMap<crate::spec::Suite, (String, RecordConfig)>,
}

impl HeaderCheck {
    pub fn check(&mut self, place: &dyn std::fmt::Display, rec: &Header) -> Result<(), Mismatch> {
        match &self.version {
            Some((p, v)) if *v != rec.gauntlet_version => {
                return Err(Mismatch(format!(
                    "gauntlet_version `{}` in {place} vs `{v}` in {p}",
                    rec.gauntlet_version
                )))
            }
            Some(_) => {}
            None => self.version = Some((place.to_string(), rec.gauntlet_version.clone())),
        }
        match self.configs.get(&rec.suite) {
            Some((p, config)) => {
                if let Some(d) = value_difference(config, &rec.config) {
                    return Err(Mismatch(format!(
                        "{} config.{d} in {place} vs {p}",
                        rec.suite
                    )));
                }
            }
            None => {
                self.configs
                    .insert(rec.suite, (place.to_string(), rec.config.clone()));
            }
        }
        Ok(())
    }
}

/// The first field where two values' JSON differ: "field `a` vs `b`". Equal values are
/// told apart without their JSON: a run's ten thousand records all carry the first's
/// config, and building two JSON trees per record to find that out was most of the cost
/// of checking a run's identity.
fn value_difference<T: Serialize + PartialEq>(a: &T, b: &T) -> Option<String> {
    if a == b {
        return None;
    }
    let a = serde_json::to_value(a).ok()?;
    let b = serde_json::to_value(b).ok()?;
    match (&a, &b) {
        (serde_json::Value::Object(ma), serde_json::Value::Object(mb)) => {
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let (va, vb) = (ma.get(k), mb.get(k));
                (va != vb).then(|| {
                    let show = |v: Option<&serde_json::Value>| {
                        v.map(|v| v.to_string()).unwrap_or_else(|| "absent".into())
                    };
                    format!("`{k}`: {} vs {}", show(vb), show(va))
                })
            })
        }
        _ => (a != b).then(|| format!("{b} vs {a}")),
    }
}

/// What a merge did.
#[derive(Debug, Clone, Serialize)]
pub struct MergeManifest {
    pub format: &'static str,
    pub inputs: Vec<MergeInput>,
    /// Partitions of the run that no input held (only with
    /// [`MergeOptions::allow_missing_partitions`]): the merged run is not the whole run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_partitions: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MergeInput {
    pub path: String,
    pub run_ids: Vec<String>,
    pub trial_dirs: usize,
    /// Where the input ran, from its `run.json` (absent in runs made before it existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<identity::Placement>,
}

/// How strict a merge is.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    /// Merge partitions of a run although some partition is missing (a machine of the
    /// matrix failed), saying so in `merge.json`, instead of refusing.
    pub allow_missing_partitions: bool,
}

/// Merge `inputs` into the new run directory `out`, refusing a missing partition.
pub fn merge_runs(inputs: &[PathBuf], out: &Path) -> Result<MergeManifest, MergeError> {
    merge_runs_with(inputs, out, MergeOptions::default())
}

/// What the inputs' `run.json` files say together: the run's identity (`None` when no
/// input has one), where each input ran, and the partitions none of them holds.
struct CheckedIdentities {
    run: Option<RunIdentity>,
    placements: Vec<identity::Placement>,
    missing: Vec<String>,
}

/// The identities of `inputs` (their `run.json`), checked to be one run's: the same
/// config, specs and harness, every partition from the same nextest archive, and —
/// when the inputs are partitions — each partition once and none missing. Returns the
/// run's identity (without a placement) and the partitions missing; no identity when no
/// input has one (runs made before `run.json`, synthetic runs).
fn check_identities(
    inputs: &[PathBuf],
    options: MergeOptions,
) -> Result<CheckedIdentities, MergeError> {
    let mut found: Vec<(&PathBuf, RunIdentity)> = Vec::new();
    for input in inputs {
        if let Some(id) = identity::read(input).map_err(|e| MergeError::Refused(e.to_string()))? {
            found.push((input, id));
        }
    }
    let Some((first_dir, first)) = found.first() else {
        return Ok(CheckedIdentities {
            run: None,
            placements: Vec::new(),
            missing: Vec::new(),
        });
    };
    if found.len() != inputs.len() {
        let without = inputs
            .iter()
            .find(|i| !found.iter().any(|(d, _)| d == i))
            .map(|i| i.display().to_string())
            .unwrap_or_default();
        return Err(MergeError::Refused(format!(
            "{without}/{IDENTITY_FILE}: missing, while other inputs have one: these are not partitions of one run"
        )));
    }
    let (first_dir, first) = (*first_dir, first.clone());
    let placements: Vec<identity::Placement> = found
        .iter()
        .map(|(_, id)| {
            id.placement.clone().unwrap_or(identity::Placement {
                host: "unknown".into(),
                partition: None,
                archive: None,
            })
        })
        .collect();
    for (dir, id) in &found[1..] {
        let (a, b) = (
            format!("in {}", first_dir.display()),
            format!("in {}", dir.display()),
        );
        if let Some(d) = first.compare(id, &a, &b) {
            return Err(MergeError::Refused(format!(
                "runs made with different configs or specs cannot merge: {d}"
            )));
        }
    }
    // One archive: partitions built separately are two harnesses, however alike.
    for ((dir, _), p) in found.iter().zip(&placements).skip(1) {
        if p.archive != placements[0].archive {
            let show = |a: &Option<String>| a.clone().unwrap_or_else(|| "none".into());
            return Err(MergeError::Refused(format!(
                "partitions from different nextest archives cannot merge: `placement.archive`: {} in {} vs {} in {}",
                show(&placements[0].archive),
                first_dir.display(),
                show(&p.archive),
                dir.display()
            )));
        }
    }
    let missing = check_partitions(&found, &placements, options)?;
    let mut merged = first;
    merged.placement = None;
    Ok(CheckedIdentities {
        run: Some(merged),
        placements,
        missing,
    })
}

/// Every input a partition of one split (one scheme, one count), each index once;
/// the indexes no input holds, refused unless the options allow them.
fn check_partitions(
    found: &[(&PathBuf, RunIdentity)],
    placements: &[identity::Placement],
    options: MergeOptions,
) -> Result<Vec<String>, MergeError> {
    let named: Vec<(&PathBuf, Option<&String>)> = found
        .iter()
        .zip(placements)
        .map(|((dir, _), p)| (*dir, p.partition.as_ref()))
        .collect();
    if named.iter().all(|(_, p)| p.is_none()) {
        return Ok(Vec::new());
    }
    let mut parts: Vec<(&PathBuf, Partition)> = Vec::new();
    for (dir, text) in &named {
        let Some(text) = text else {
            return Err(MergeError::Refused(format!(
                "{}: not a partition (its run.json names none), while other inputs are: merge the partitions of one run",
                dir.display()
            )));
        };
        let part = Partition::parse(text).ok_or_else(|| {
            MergeError::Refused(format!(
                "{}/{IDENTITY_FILE}: `placement.partition`: `{text}` is not `<scheme>:<index>/<count>`",
                dir.display()
            ))
        })?;
        parts.push((dir, part));
    }
    let (first_dir, first) = (parts[0].0, parts[0].1.clone());
    let mut held: BTreeMap<u64, &PathBuf> = BTreeMap::new();
    for (dir, p) in &parts {
        if p.scheme != first.scheme || p.count != first.count {
            return Err(MergeError::Refused(format!(
                "partitions of different splits cannot merge: `placement.partition`: `{first}` in {} vs `{p}` in {}",
                first_dir.display(),
                dir.display()
            )));
        }
        if let Some(other) = held.insert(p.index, dir) {
            return Err(MergeError::Refused(format!(
                "partition `{p}` is in both {} and {}",
                other.display(),
                dir.display()
            )));
        }
    }
    let missing: Vec<String> = (1..=first.count)
        .filter(|i| !held.contains_key(i))
        .map(|index| {
            Partition {
                index,
                ..first.clone()
            }
            .to_string()
        })
        .collect();
    if !missing.is_empty() && !options.allow_missing_partitions {
        return Err(MergeError::Refused(format!(
            "partition {} of the run is missing (no input holds it): merge every partition, or pass --allow-missing to merge these {} and say so in {MERGE_FILE}",
            missing.join(", "),
            parts.len()
        )));
    }
    Ok(missing)
}

/// Merge `inputs` into the new run directory `out`.
pub fn merge_runs_with(
    inputs: &[PathBuf],
    out: &Path,
    options: MergeOptions,
) -> Result<MergeManifest, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::Refused(
            "merge needs at least one run directory".into(),
        ));
    }
    if out.exists() {
        let empty = out.is_dir() && std::fs::read_dir(out).map_err(io(out))?.next().is_none();
        if !empty {
            return Err(MergeError::Refused(format!(
                "{}: exists and is not empty; a merge only writes a new run directory",
                out.display()
            )));
        }
    }
    let CheckedIdentities {
        run: run_identity,
        placements,
        missing,
    } = check_identities(inputs, options)?;
    let mut identity = IdentityCheck::default();
    let mut owner: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut copies: Vec<(PathBuf, String)> = Vec::new();
    let mut manifest = MergeManifest {
        format: "gauntlet-merge/1",
        inputs: vec![],
        missing_partitions: missing,
    };
    // Each partition planned its own trials; the merged run planned them all.
    let mut plans: Vec<Vec<u8>> = Vec::new();
    for input in inputs {
        let plan = input.join(MANIFEST_FILE);
        match std::fs::read(&plan) {
            Ok(bytes) => plans.push(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&plan)(e)),
        }
    }
    if !plans.is_empty() && plans.len() != inputs.len() {
        return Err(MergeError::Refused(format!(
            "{} of {} inputs have a run manifest ({MANIFEST_FILE}): these are not partitions of one run",
            plans.len(),
            inputs.len()
        )));
    }
    for (n, input) in inputs.iter().enumerate() {
        let mut entries: Vec<_> = std::fs::read_dir(input)
            .map_err(io(input))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(io(input))?;
        entries.sort_by_key(|e| e.file_name());
        let mut run_ids = Vec::new();
        let mut trial_dirs = 0;
        let mut trials_here = BTreeMap::new();
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let skipped = GENERATED.contains(&name.as_str())
                || name == MANIFEST_FILE
                || name == IDENTITY_FILE;
            if name.starts_with('.') || (!path.is_dir() && skipped) {
                continue;
            }
            if !path.is_dir() {
                return Err(MergeError::Refused(format!(
                    "{}: foreign file in a run directory; remove it or merge without it",
                    path.display()
                )));
            }
            let file = path.join(RECORD_FILE);
            if file.is_file() {
                let refused = |e: RecordError| MergeError::Refused(e.to_string());
                let any = super::any::load_any(&file).map_err(refused)?;
                let differs = |d: Mismatch| {
                    MergeError::Refused(format!(
                        "runs made with different configs or specs cannot merge: {d}"
                    ))
                };
                identity
                    .check(&input.display(), any.as_suite())
                    .map_err(differs)?;
                let rec = any.header();
                if let Some(other) = owner.get(&rec.trial) {
                    if other != input {
                        return Err(MergeError::Refused(format!(
                            "trial `{}` is in both {} and {}: these are not partitions of one run",
                            rec.trial,
                            other.display(),
                            input.display()
                        )));
                    }
                }
                owner.insert(rec.trial.clone(), input.clone());
                trials_here.insert(rec.trial.clone(), ());
                run_ids.push(rec.run_id.clone());
            }
            if copies.iter().any(|(_, n)| *n == name) {
                return Err(MergeError::Refused(format!(
                    "trial directory `{name}` is in more than one input"
                )));
            }
            copies.push((path, name));
            trial_dirs += 1;
        }
        run_ids.sort();
        run_ids.dedup();
        manifest.inputs.push(MergeInput {
            path: input.display().to_string(),
            run_ids,
            trial_dirs,
            placement: placements.get(n).cloned(),
        });
    }
    if owner.is_empty() {
        return Err(MergeError::Refused("no records in any input".into()));
    }

    // Build the merged run beside `out` and move it into place in one step, so that
    // a failure half-way leaves no half-merged run behind.
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let staging = parent.join(format!(
        ".merge-{}-{}",
        std::process::id(),
        out.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let result = (|| {
        std::fs::create_dir(&staging).map_err(io(&staging))?;
        for (src, name) in &copies {
            copy_tree(src, &staging.join(name))?;
        }
        if !plans.is_empty() {
            let m = staging.join(MANIFEST_FILE);
            let mut all = Vec::new();
            for p in &plans {
                all.extend_from_slice(p);
                if !all.is_empty() && !all.ends_with(b"\n") {
                    all.push(b'\n');
                }
            }
            std::fs::write(&m, all).map_err(io(&m))?;
        }
        if let Some(id) = &run_identity {
            write_new_json(&staging, IDENTITY_FILE, id)
                .map_err(|e| MergeError::Refused(e.to_string()))?;
        }
        let m = staging.join(MERGE_FILE);
        let text = serde_json::to_string_pretty(&manifest).unwrap_or_default() + "\n";
        std::fs::write(&m, text).map_err(io(&m))?;
        if out.exists() {
            std::fs::remove_dir(out).map_err(io(out))?;
        }
        std::fs::rename(&staging, out).map_err(io(out))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result.map(|()| manifest)
}

/// Copy a directory tree; symbolic links are copied as links, never followed, so a
/// link an agent left in its workspace cannot pull outside files into a run; sockets,
/// FIFOs and devices are left out.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<(), MergeError> {
    std::fs::create_dir(dst).map_err(io(dst))?;
    let mut entries: Vec<_> = std::fs::read_dir(src)
        .map_err(io(src))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(io(src))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let from = e.path();
        let to = dst.join(e.file_name());
        let ty = e.file_type().map_err(io(&from))?;
        if ty.is_symlink() {
            let target = std::fs::read_link(&from).map_err(io(&from))?;
            std::os::unix::fs::symlink(target, &to).map_err(io(&to))?;
        } else if ty.is_dir() {
            copy_tree(&from, &to)?;
        } else if ty.is_file() {
            std::fs::copy(&from, &to).map_err(io(&from))?;
        }
        // Sockets and FIFOs (an app's locator socket, one an agent left in its
        // workspace) are not evidence, and a copy would open them: skipped.
    }
    Ok(())
}
