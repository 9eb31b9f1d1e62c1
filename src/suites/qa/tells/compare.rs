//! Comparing what the probes saw (pure): the app's own runs against each other, which
//! makes an observation volatile, and each mutant against the app, which makes a
//! difference a tell, the mutant's documented behaviour, or (artifact bytes) a
//! difference the independence matrix must answer.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::corpus::documents;
use super::probe::{Class, Observation, ProbeReport};
use crate::spec::Capability;

/// What a finding means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// A mutant differs from the app in something other than its broken behaviour.
    Tell,
    /// The app's own runs differ: not comparable, and not a tell.
    Volatile,
    /// A documented request answered differently by the mutant of the capability whose
    /// acceptance criteria name it: the broken behaviour itself.
    Behaviour,
    /// Artifact bytes that differ, where every verifiable capability has an independent
    /// mutant: a test that tells the bytes apart fails the gate's specificity runs.
    AnsweredBySpecificity,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Tell => "tell",
            Status::Volatile => "volatile",
            Status::Behaviour => "behaviour",
            Status::AnsweredBySpecificity => "answered by specificity",
        }
    }
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The mutant's capability; `None` for a volatile observation of the app.
    pub mutant: Option<String>,
    pub status: Status,
    pub class: Class,
    pub probe: String,
    pub field: String,
    /// What the app showed: one value, or for a volatile observation each distinct
    /// value its runs showed (`<absent>` where a run did not show it).
    pub app_values: Vec<String>,
    /// What the mutant showed (`<absent>`: nothing under this probe and field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutant_value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

pub const ABSENT: &str = "<absent>";

type Key = (String, String);

fn index(report: &ProbeReport) -> BTreeMap<Key, &Observation> {
    report
        .observations
        .iter()
        .map(|o| ((o.probe.clone(), o.field.clone()), o))
        .collect()
}

/// The app's runs, compared with each other.
pub struct Baseline<'a> {
    /// The first run's observation under each key every run agrees on.
    stable: BTreeMap<Key, &'a Observation>,
    /// Keys some runs disagree on (or show in some runs only).
    volatile: BTreeSet<Key>,
    /// Every key any run showed.
    seen: BTreeSet<Key>,
    pub findings: Vec<Finding>,
}

/// Compare the app's runs: what they agree on is the baseline, the rest is volatile.
pub fn baseline(runs: &[ProbeReport]) -> Baseline<'_> {
    let indexed: Vec<_> = runs.iter().map(index).collect();
    let seen: BTreeSet<Key> = indexed.iter().flat_map(|m| m.keys().cloned()).collect();
    let mut stable = BTreeMap::new();
    let mut volatile = BTreeSet::new();
    let mut findings = Vec::new();
    for key in &seen {
        let values: Vec<Option<&Observation>> =
            indexed.iter().map(|m| m.get(key).copied()).collect();
        let first = values[0];
        let agree = values
            .iter()
            .all(|v| v.map(|o| &o.value) == first.map(|o| &o.value));
        match (agree, first) {
            (true, Some(o)) => {
                stable.insert(key.clone(), o);
            }
            _ => {
                let class = values
                    .iter()
                    .flatten()
                    .next()
                    .map_or(Class::Text, |o| o.class);
                let mut distinct: Vec<String> = Vec::new();
                for v in &values {
                    let v = v.map_or(ABSENT.to_string(), |o| o.value.clone());
                    if !distinct.contains(&v) {
                        distinct.push(v);
                    }
                }
                volatile.insert(key.clone());
                findings.push(Finding {
                    mutant: None,
                    status: Status::Volatile,
                    class,
                    probe: key.0.clone(),
                    field: key.1.clone(),
                    app_values: distinct,
                    mutant_value: None,
                    note: None,
                });
            }
        }
    }
    Baseline {
        stable,
        volatile,
        seen,
        findings,
    }
}

impl Baseline<'_> {
    /// How many observations the app's runs agree on.
    pub fn stable_count(&self) -> usize {
        self.stable.len()
    }

    /// Every difference between the mutant of `cap` and the app, beyond what varies
    /// between the app's own runs. Differing artifact bytes come out as tells, to be
    /// answered by specificity or not ([`answer_artifact_bytes`]).
    pub fn differences(&self, cap: &Capability, mutant: &ProbeReport) -> Vec<Finding> {
        let theirs = index(mutant);
        let keys: BTreeSet<&Key> = self.seen.iter().chain(theirs.keys()).collect();
        let mut out = Vec::new();
        for key in keys {
            if self.volatile.contains(key) {
                continue;
            }
            let ours = self.stable.get(key).copied();
            let other = theirs.get(key).copied();
            let (class, request) = match (ours, other) {
                (Some(a), Some(b)) if a.value == b.value => continue,
                (Some(a), _) => (a.class, a.request.as_deref()),
                (None, Some(b)) => (b.class, b.request.as_deref()),
                (None, None) => continue,
            };
            // A file only one of them has is an artifact-name difference, found under
            // its entry; its bytes say nothing more.
            if class == Class::ArtifactBytes && (ours.is_none() || other.is_none()) {
                continue;
            }
            let documented = request.is_some_and(|r| documents(cap, r));
            out.push(Finding {
                mutant: Some(cap.id.clone()),
                status: if documented {
                    Status::Behaviour
                } else {
                    Status::Tell
                },
                class,
                probe: key.0.clone(),
                field: key.1.clone(),
                app_values: vec![ours.map_or(ABSENT.to_string(), |o| o.value.clone())],
                mutant_value: Some(other.map_or(ABSENT.to_string(), |o| o.value.clone())),
                note: documented.then(|| {
                    format!(
                        "`{}` is named by the acceptance criteria of `{}`",
                        request.unwrap_or_default(),
                        cap.id
                    )
                }),
            });
        }
        out
    }
}

/// What the app's independence matrix says, to settle differing artifact bytes with.
#[derive(Debug, Clone, Default)]
pub struct Independence {
    /// Each verifiable capability, and the capabilities whose mutants leave it intact.
    pub independent: BTreeMap<String, Vec<String>>,
    /// How many of them the gate draws for one claimed test (M).
    pub drawn: usize,
}

/// Where a mutant's bytes of a file differ from the app's: `(mutant, file)` → the span
/// of the app's bytes it changes ([`changed_span`]), `None` when the file is not kept as
/// text (the whole file, then).
pub type Spans = BTreeMap<(String, String), Option<(usize, usize)>>;

/// The bytes `mutant` changes in `app`, in the app's offsets: `[start, end)` from the
/// first byte that differs to the last (after the longest common prefix and suffix).
/// Exact for a mutant that edits one place, a span around all its edits otherwise.
/// `None` when they are equal.
pub fn changed_span(app: &[u8], mutant: &[u8]) -> Option<(usize, usize)> {
    if app == mutant {
        return None;
    }
    let prefix = app.iter().zip(mutant).take_while(|(a, b)| a == b).count();
    let room = app.len().min(mutant.len()) - prefix;
    let suffix = app
        .iter()
        .rev()
        .zip(mutant.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    Some((prefix, app.len() - suffix))
}

/// Whether two changed spans touch the same bytes (an insertion touches the byte after
/// it); `None` is the whole file.
fn overlap(a: Option<(usize, usize)>, b: Option<(usize, usize)>) -> bool {
    match (a, b) {
        (Some((a0, a1)), Some((b0, b1))) => a0 < b1.max(b0 + 1) && b0 < a1.max(a0 + 1),
        _ => true,
    }
}

/// C(n, k) as a float (small n).
fn choose(n: usize, k: usize) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// The lines of `text` that hold `span`, as `line N` (or `lines N–M`) and their text.
fn lines_of(text: &str, span: (usize, usize)) -> (String, String) {
    let start = text[..span.0.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let last = span.1.max(span.0 + 1).min(text.len());
    let end = text[last.saturating_sub(1).max(start)..]
        .find('\n')
        .map_or(text.len(), |i| i + last.saturating_sub(1).max(start));
    let first_line = text[..start].matches('\n').count() + 1;
    let excerpt = text.get(start..end).unwrap_or("").trim();
    let count = excerpt.matches('\n').count();
    let which = if count == 0 {
        format!("line {first_line}")
    } else {
        format!("lines {first_line}–{}", first_line + count)
    };
    (which, excerpt.to_string())
}

/// Settle the artifact-bytes tells. The mutant of `x` hands over a file whose bytes differ
/// from the app's; a test that pins those bytes (an identity snapshot of the file, or of
/// just the changed line, as `tests/fixtures/agents/hostile/source-pin.sh` does) fails on
/// it. Specificity answers that test when the gate's runs against mutants independent of
/// `x` are sure to include one that changes the same bytes: `k ≥ 1` of the `n`
/// independent mutants do, and fewer than the `m = min(M, n)` drawn do not. Otherwise
/// the bytes are a tell: the pin is verified with the probability that no drawn
/// independent mutant touches them. `matrix` is `Err` when the app's matrix cannot
/// stand. `app_texts`: the app's artifacts kept as text, to quote the pinned line.
pub fn answer_artifact_bytes(
    findings: &mut [Finding],
    matrix: &Result<Independence, String>,
    spans: &Spans,
    app_texts: &BTreeMap<String, String>,
) {
    for f in findings
        .iter_mut()
        .filter(|f| f.class == Class::ArtifactBytes && f.status == Status::Tell)
    {
        let (Some(x), Some(file)) = (f.mutant.clone(), f.field.strip_prefix("bytes ")) else {
            continue;
        };
        let file = file.to_string();
        let m = match matrix {
            Ok(m) => m,
            Err(why) => {
                f.note = Some(why.clone());
                continue;
            }
        };
        let independent = m.independent.get(&x).cloned().unwrap_or_default();
        if independent.is_empty() {
            f.note = Some(format!(
                "no mutant is independent of `{x}`: an identity snapshot test of `{file}` would be verified"
            ));
            continue;
        }
        let span_x = spans.get(&(x.clone(), file.clone())).copied().flatten();
        let touching: Vec<&String> = independent
            .iter()
            .filter(|y| {
                spans
                    .get(&((*y).clone(), file.clone()))
                    .is_some_and(|span_y| overlap(span_x, *span_y))
            })
            .collect();
        let (n, k) = (independent.len(), touching.len());
        let drawn = m.drawn.min(n);
        if k >= 1 && n - k < drawn {
            f.status = Status::AnsweredBySpecificity;
            f.note = Some(format!(
                "the mutants of {} are independent of `{x}` and change these bytes too; \
                 every draw of {drawn} of its {n} independent mutants holds one, so a test \
                 that pins them fails the gate's specificity runs",
                names(&touching)
            ));
            continue;
        }
        let pinned = match (span_x, app_texts.get(&file)) {
            (Some(span), Some(text)) => {
                let (which, excerpt) = lines_of(text, span);
                format!("{which} of `{file}` (`{excerpt}`)")
            }
            _ => format!("the bytes of `{file}`"),
        };
        let chance = choose(n - k, drawn) / choose(n, drawn);
        let odds = if k == 0 {
            "always".to_string()
        } else {
            format!("with probability {chance:.2}")
        };
        f.note = Some(format!(
            "a test that pins {pinned} fails on this mutant and passes on {} of the {n} \
             mutants independent of `{x}`; the gate draws {drawn}, so it is verified {odds}",
            n - k
        ));
    }
}

fn names(caps: &[&String]) -> String {
    caps.iter()
        .map(|c| format!("`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The band of times the app's own samples allow: `[min / 2 − 5 ms, max × 2 + 5 ms]`.
/// A mutant's time is a tell only when every one of its samples lies outside it, which
/// a loaded machine's jitter (a start stalled for a scheduler tick, a cold cache) does
/// not do to three samples in a row while the app's own samples widen the band.
pub fn timing_band(app: &[f64]) -> Option<(f64, f64)> {
    let min = app.iter().copied().fold(f64::INFINITY, f64::min);
    let max = app.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min.is_finite() && max.is_finite()).then(|| (min / 2.0 - 5.0, max * 2.0 + 5.0))
}

/// Whether every sample lies outside `band` (and there is at least one).
pub fn outside(band: (f64, f64), samples: &[f64]) -> bool {
    !samples.is_empty() && samples.iter().all(|s| *s < band.0 || *s > band.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{CapabilityKind, Difficulty};

    fn obs(probe: &str, field: &str, class: Class, value: &str, req: Option<&str>) -> Observation {
        Observation {
            probe: probe.into(),
            field: field.into(),
            class,
            value: value.into(),
            request: req.map(str::to_string),
        }
    }

    fn report(list: Vec<Observation>) -> ProbeReport {
        ProbeReport {
            probe_version: super::super::probe::PROBE_VERSION,
            observations: list,
            first_response_ms: None,
            artifact_texts: Default::default(),
        }
    }

    fn cap(id: &str, acceptance: &str) -> Capability {
        Capability {
            id: id.into(),
            requirement: "R1".into(),
            title: id.into(),
            kind: CapabilityKind::Feature,
            difficulty: Difficulty::Easy,
            acceptance: vec![acceptance.into()],
        }
    }

    fn app_run(pid_line: &str) -> ProbeReport {
        report(vec![
            obs("/proc", "cgroup", Class::Proc, pid_line, None),
            obs(
                "GET /health",
                "status",
                Class::Header,
                "HTTP/1.1 200 OK",
                Some("GET /health"),
            ),
            obs(
                "GET /health",
                "header names",
                Class::Header,
                "content-type",
                None,
            ),
            obs(
                "$APP_BIN --bogus",
                "stderr",
                Class::Text,
                "Usage: x [OPTIONS]",
                None,
            ),
            obs(
                "artifacts",
                "entry extension/a.js",
                Class::ArtifactName,
                "file 644",
                None,
            ),
            obs(
                "artifacts",
                "bytes extension/a.js",
                Class::ArtifactBytes,
                "3 bytes h1",
                None,
            ),
        ])
    }

    #[test]
    fn what_the_apps_runs_disagree_on_is_volatile_and_never_a_tell() {
        let runs = [app_run("0::/a"), app_run("0::/b"), app_run("0::/a")];
        let base = baseline(&runs);
        assert_eq!(base.findings.len(), 1);
        let v = &base.findings[0];
        assert_eq!(
            (v.status, v.class, v.field.as_str()),
            (Status::Volatile, Class::Proc, "cgroup")
        );
        assert_eq!(v.app_values, ["0::/a", "0::/b"]);
        let mutant = app_run("0::/zzz");
        assert!(base
            .differences(&cap("health", "GET /health answers 200."), &mutant)
            .is_empty());
    }

    #[test]
    fn a_difference_is_a_tell_unless_the_mutants_own_criteria_name_the_request() {
        let runs = [app_run("0::/"), app_run("0::/")];
        let base = baseline(&runs);
        let mut m = app_run("0::/");
        m.observations[1].value = "HTTP/1.1 503 Service Unavailable".into();
        m.observations[3].value = "Usage: x --mutant <CAPABILITY>".into();
        let own = base.differences(&cap("health", "GET /health answers HTTP 200."), &m);
        let by_field: Vec<(&str, Status)> =
            own.iter().map(|f| (f.field.as_str(), f.status)).collect();
        assert_eq!(
            by_field,
            [("stderr", Status::Tell), ("status", Status::Behaviour)]
        );
        // The same status from another capability's mutant is no behaviour of its own.
        let other = base.differences(&cap("balance", "GET /accounts/<a>/balance"), &m);
        assert!(other.iter().all(|f| f.status == Status::Tell), "{other:?}");
        // Header names are never behaviour, documented request or not.
        let mut named = app_run("0::/");
        named.observations[2].value = "content-type, x-mutant".into();
        let f = base.differences(&cap("health", "GET /health answers HTTP 200."), &named);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].status, f[0].class), (Status::Tell, Class::Header));
    }

    #[test]
    fn artifacts_differ_by_name_or_by_bytes() {
        let runs = [app_run("0::/")];
        let base = baseline(&runs);
        let c = cap("x", "y");
        let mut bytes = app_run("0::/");
        bytes.observations[5].value = "3 bytes h2".into();
        let f = base.differences(&c, &bytes);
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].class, f[0].status),
            (Class::ArtifactBytes, Status::Tell)
        );
        assert_eq!(f[0].field, "bytes extension/a.js");
        // A file the mutant lacks: one artifact-name tell, not a bytes one too.
        let mut gone = app_run("0::/");
        gone.observations.truncate(4);
        let f = base.differences(&c, &gone);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].class, Class::ArtifactName);
        assert_eq!(f[0].mutant_value.as_deref(), Some(ABSENT));
    }

    #[test]
    fn the_changed_span_is_between_the_common_prefix_and_suffix() {
        assert_eq!(changed_span(b"abcdef", b"abXdef"), Some((2, 3)));
        assert_eq!(changed_span(b"abcdef", b"abdef"), Some((2, 3)));
        assert_eq!(changed_span(b"abdef", b"abcdef"), Some((2, 2)));
        assert_eq!(changed_span(b"aaaa", b"aa"), Some((2, 4)));
        assert_eq!(changed_span(b"same", b"same"), None);
        assert!(overlap(Some((2, 2)), Some((2, 3))));
        assert!(!overlap(Some((2, 3)), Some((3, 5))));
        assert!(overlap(None, Some((3, 5))));
        let text = "one\nconst A = 1;\nthree\n";
        assert_eq!(
            lines_of(text, (14, 15)),
            ("line 2".to_string(), "const A = 1;".to_string())
        );
    }

    /// Four mutants, each editing its own line of one file, all independent of each
    /// other (ext-wordbadge's shape): a test pinning a mutant's line passes on every
    /// other mutant. Editing the same line answers it.
    #[test]
    fn bytes_are_answered_only_when_a_drawn_independent_mutant_changes_them_too() {
        let caps = ["a", "b", "c", "d"];
        let text = "const A = 1;\nconst B = 2;\nconst C = 3;\nconst D = 4;\n";
        let app_texts = BTreeMap::from([("f.js".to_string(), text.to_string())]);
        let finding = |m: &str| Finding {
            mutant: Some(m.into()),
            status: Status::Tell,
            class: Class::ArtifactBytes,
            probe: "artifacts".into(),
            field: "bytes f.js".into(),
            app_values: vec!["x".into()],
            mutant_value: Some("y".into()),
            note: None,
        };
        let everyone = |drawn| Independence {
            independent: caps
                .iter()
                .map(|x| {
                    let others = caps.iter().filter(|y| y != &x).map(|y| y.to_string());
                    (x.to_string(), others.collect())
                })
                .collect(),
            drawn,
        };
        let own_lines: Spans = caps
            .iter()
            .enumerate()
            .map(|(i, m)| {
                (
                    (m.to_string(), "f.js".to_string()),
                    Some((i * 13 + 10, i * 13 + 11)),
                )
            })
            .collect();
        let mut f = vec![finding("a")];
        answer_artifact_bytes(&mut f, &Ok(everyone(3)), &own_lines, &app_texts);
        assert_eq!(f[0].status, Status::Tell);
        let note = f[0].note.clone().unwrap_or_default();
        assert!(
            note.contains("line 1 of `f.js` (`const A = 1;`)") && note.contains("always"),
            "{note}"
        );

        // `b` edits `a`'s line too: with every independent mutant drawn, it is answered...
        let mut shared = own_lines.clone();
        shared.insert(("b".into(), "f.js".into()), Some((10, 11)));
        let mut f = vec![finding("a")];
        answer_artifact_bytes(&mut f, &Ok(everyone(3)), &shared, &app_texts);
        assert_eq!(
            f[0].status,
            Status::AnsweredBySpecificity,
            "{:?}",
            f[0].note
        );
        // ...but not when the gate draws one of three: two in three draws miss `b`.
        let mut f = vec![finding("a")];
        answer_artifact_bytes(&mut f, &Ok(everyone(1)), &shared, &app_texts);
        assert_eq!(f[0].status, Status::Tell);
        assert!(
            f[0].note
                .as_deref()
                .unwrap_or("")
                .contains("probability 0.67"),
            "{:?}",
            f[0].note
        );

        // A file not kept as text is pinned whole: any independent mutant changing it answers.
        let whole: Spans = caps
            .iter()
            .map(|m| ((m.to_string(), "f.js".to_string()), None))
            .collect();
        let mut f = vec![finding("a")];
        answer_artifact_bytes(&mut f, &Ok(everyone(3)), &whole, &app_texts);
        assert_eq!(f[0].status, Status::AnsweredBySpecificity);

        // No independent mutant, or no matrix: a tell, saying why.
        let mut f = vec![finding("a")];
        answer_artifact_bytes(&mut f, &Ok(Independence::default()), &whole, &app_texts);
        assert_eq!(f[0].status, Status::Tell);
        assert!(f[0]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("no mutant is independent of `a`"));
        let mut f = vec![finding("a")];
        answer_artifact_bytes(&mut f, &Err("refused".into()), &whole, &app_texts);
        assert_eq!(
            (f[0].status, f[0].note.as_deref()),
            (Status::Tell, Some("refused"))
        );
    }

    #[test]
    fn timing_is_a_tell_only_when_every_sample_lies_outside_the_band() {
        let band = timing_band(&[20.0, 30.0, 25.0]).expect("band");
        assert_eq!(band, (5.0, 65.0));
        assert!(!outside(band, &[70.0, 40.0, 80.0]));
        assert!(outside(band, &[70.0, 90.0, 80.0]));
        assert!(outside(band, &[1.0, 2.0]));
        assert!(!outside(band, &[]));
        assert_eq!(timing_band(&[]), None);
    }
}
