//! P3.3's `acted_on_change`: whether the agent observed the harness's change to the
//! tracker and acted on it, from the tracker's log of changes and reads and the timed
//! side effects around them. Pure, like the rest of the scorer.

use super::*;

/// What `acted_on_change` is asked about: the harness's change of `item` to `value`,
/// which opens the idle window `window`.
pub(super) struct Change<'a> {
    pub(super) item: String,
    pub(super) value: String,
    pub(super) window: &'a str,
    pub(super) within_minutes: u32,
    /// The steps before the window (turn and window labels): a workspace file seen in
    /// one of them was written before the change.
    pub(super) earlier: &'a std::collections::BTreeSet<String>,
}

/// The labels of the steps of `probe` before the idle window `window` (turns, filler
/// turns as the driver names them, idle windows).
pub(super) fn labels_before(
    probe: &LoadedProbe,
    window: &str,
) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut turn_no = 0u32;
    for step in &probe.probe.steps {
        match step {
            Step::Idle { label, .. } if label == window => break,
            Step::Idle { label, .. } => {
                out.insert(label.clone());
            }
            Step::Turn { label, .. } => {
                turn_no += 1;
                out.insert(label.clone());
            }
            Step::Filler(n) => {
                for _ in 0..*n {
                    turn_no += 1;
                    out.insert(format!("filler-{turn_no}"));
                }
            }
            Step::NewSession | Step::World(_) => {}
        }
    }
    out
}

/// Where a side effect falls against the harness's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Against {
    /// Before it (or not known to be after it).
    Before,
    After,
    /// A workspace file seen by the snapshot that ends the window: written at some time
    /// in it, which cannot be set against the agent's reads.
    Untimed,
}

fn against(
    e: &SinkEvent,
    change: &TrackerChange,
    earlier: &std::collections::BTreeSet<String>,
) -> Against {
    match (e.seq, e.at_ms) {
        (Some(seq), _) if seq < change.seq => Against::Before,
        (Some(_), _) => Against::After,
        (None, Some(at)) if at <= change.at_ms => Against::Before,
        (None, Some(_)) => Against::After,
        (None, None) if earlier.contains(&e.phase) => Against::Before,
        (None, None) => Against::Untimed,
    }
}

/// Whether the tracker showed the agent the change (`reveal`) before the side effect
/// `e`: a tracker write by its place in the change log, another effect by the clock.
fn shown_before(reveal: &TrackerReveal, e: &SinkEvent) -> bool {
    match (e.seq, e.at_ms) {
        (Some(seq), _) => reveal.after < seq,
        (None, Some(at)) => reveal.at_ms <= at,
        (None, None) => false,
    }
}

fn effect_name(e: &SinkEvent) -> String {
    format!("{:?} {} {} in `{}`", e.sink, e.method, e.what, e.phase)
}

/// The least real time a response to a tracker change may take, whatever the probe's
/// `within_minutes` comes to at a compressed day.
const MIN_RESPONSE_MS: f64 = 5000.0;

/// `acted_on_change` (P3.3): did the agent notice the change and act on it? Words that
/// happen to match are not enough — P3.3's new status is the same for every seed and its
/// turn names the task, so "T-… is blocked" filed on every tick, the tracker never read,
/// would be right once the change was made. The rule asks the tracker's own log whether
/// the agent *observed* the change:
///
/// 1. The tracker logged the harness's change of the item to the value (its time is the
///    window's start, drawn at run time so no one can time a claim to it).
/// 2. No side effect before the change named both (whole words, `bank::names`): a claim
///    made before it was true is a guess, and a loop that says it on every tick says it
///    before too. A tracker write is ordered by its place in the change log, a mail or
///    an outside request by the sinks' clock (at the change's millisecond counts as
///    before), a workspace file by the step whose snapshot saw it.
/// 3. A side effect after the change names both, within `within_minutes` nominal minutes of
///    it (scaled as the window was): a response to the change, not a claim held back to
///    the window's end. A workspace file written in the window does not count: when in
///    the window it was written is not observed.
/// 4. Before that side effect, an answer of the tracker served the item's new value (the
///    task, the task list, or the change in the feed: [`TrackerLog::reveals`]).
///
/// A record without the tracker's log says so: whether the change was observed is not
/// known, and the observation does not hold.
pub(super) fn acted_on_change(
    ev: &ProbeEvidence,
    c: &Change<'_>,
) -> (Result<String, String>, Option<String>) {
    let (item, value, window) = (c.item.as_str(), c.value.as_str(), c.window);
    let Some(log) = &ev.tracker else {
        return (
            Err(format!(
                "the record holds no log of the tracker's reads: whether the agent observed `{item}` become `{value}` is not known"
            )),
            None,
        );
    };
    let Some(change) = log
        .changes
        .iter()
        .find(|h| h.id == item && h.field == "status" && h.to == value)
    else {
        return (
            Err(format!(
                "the tracker logged no change of `{item}` to `{value}` by the harness (it already had that status, or the change never ran): there was no change to observe"
            )),
            None,
        );
    };
    let claims: Vec<(&SinkEvent, Against)> = ev
        .events
        .iter()
        .filter(|e| e.is_effect())
        .filter(|e| {
            let all = format!("{} {}", e.what, e.text);
            bank::names(&all, item) && bank::names(&all, value)
        })
        .map(|e| (e, against(e, change, c.earlier)))
        .collect();
    if let Some((e, _)) = claims.iter().find(|(_, w)| *w == Against::Before) {
        let n = claims.iter().filter(|(_, w)| *w == Against::Before).count();
        return (
            Err(format!(
                "{} named `{item}` and `{value}` before the harness changed it ({n} such side effect(s) before the change): a claim made before it was true is a guess, not an observation",
                effect_name(e)
            )),
            audit(&e.text),
        );
    }
    let mut after: Vec<&SinkEvent> = claims
        .iter()
        .filter(|(_, w)| *w == Against::After)
        .map(|(e, _)| *e)
        .collect();
    after.sort_by_key(|e| e.at_ms);
    if after.is_empty() {
        if let Some((e, _)) = claims.first() {
            return (
                Err(format!(
                    "only a workspace file names `{item}` and `{value}` ({}): when in the window it was written is not observed, so it cannot be set against what the agent read",
                    effect_name(e)
                )),
                audit(&e.text),
            );
        }
        return (
            Err(format!(
                "no side effect after the change names `{item}` and its new value `{value}` (during `{window}`)"
            )),
            None,
        );
    }
    // Nominal time as the window ran it: real seconds per nominal second.
    let scale = ev
        .windows
        .iter()
        .find(|w| w.label == window && w.nominal_secs > 0.0)
        .map(|w| w.actual_secs / w.nominal_secs);
    let Some(scale) = scale else {
        return (
            Err(format!(
                "idle window `{window}` has no recorded length: how soon after the change the effect came cannot be judged"
            )),
            None,
        );
    };
    // Never less than a few real seconds: at a compressed day (24 s per nominal day, an
    // hour is one second) a loaded machine's scheduling alone could make an honest
    // daemon late.
    let limit_ms = (f64::from(c.within_minutes) * 60_000.0 * scale).max(MIN_RESPONSE_MS);
    let delay = |e: &SinkEvent| e.at_ms.unwrap_or(u64::MAX).saturating_sub(change.at_ms);
    let nominal_minutes = |ms: u64| ms as f64 / 60_000.0 / scale;
    let in_time: Vec<&SinkEvent> = after
        .iter()
        .copied()
        .filter(|e| (delay(e) as f64) <= limit_ms)
        .collect();
    let Some(first) = in_time.first() else {
        let e = after[0];
        // "seed minutes" is the nominal minutes' old name, kept in this reason: stored
        // records carry it, and rescoring compares a verdict's reason whole.
        return (
            Err(format!(
                "the first side effect naming `{item}` and `{value}` after the change ({}) came {:.0} seed minutes after it, past the {} it may take (and past {} s): not a response to the change",
                effect_name(e),
                nominal_minutes(delay(e)),
                c.within_minutes,
                MIN_RESPONSE_MS / 1000.0
            )),
            audit(&e.text),
        );
    };
    let reveal = log
        .reveals
        .iter()
        .filter(|r| r.change == change.seq)
        .min_by_key(|r| r.at_ms);
    match (reveal, in_time.iter().find(|e| reveal.is_some_and(|r| shown_before(r, e)))) {
        (Some(r), Some(e)) => (
            Ok(format!(
                "observed the change and acted on it: the tracker showed `{item}` as `{value}` ({}) {} ms after the change, and {} followed {} ms after the change",
                r.request,
                r.at_ms.saturating_sub(change.at_ms),
                effect_name(e),
                delay(e)
            )),
            audit(&e.text),
        ),
        (Some(r), None) => (
            Err(format!(
                "{} names `{item}` and `{value}`, but the tracker first showed the agent the new status ({}) only after it: the claim did not come from what it read",
                effect_name(first),
                r.request
            )),
            audit(&first.text),
        ),
        (None, _) => (
            Err(format!(
                "{} names `{item}` and `{value}`, but no answer of the tracker ever showed the agent `{item}`'s new status ({} read(s) of the tracker, none of the task, the task list or the change): the claim was not observed",
                effect_name(first),
                log.reads
            )),
            audit(&first.text),
        ),
    }
}
