//! P3.3's `acted_on_change` (`super::super::change`), on the log of a run as it went.

use super::*;

/// P3.3 as it ran: the harness changed the task at 100 000 ms (the tracker's change 2;
/// change 1 is a thread the agent opened before), in a window of 12 nominal hours that
/// lasted 12 s, so a nominal minute is 1/60 s and the rule's 60 minutes are 1 000 ms.
struct P33 {
    item: String,
    status: String,
    ev: ProbeEvidence,
}

const CHANGED_AT: u64 = 100_000;

impl P33 {
    fn new(bank: &Bank) -> P33 {
        let item = bank.get("tracker_item").unwrap().to_string();
        let status = bank.get("tracker_status").unwrap().to_string();
        let ev = ProbeEvidence {
            windows: vec![
                WindowObs {
                    label: "before".into(),
                    nominal_secs: 12.0 * 3600.0,
                    actual_secs: 12.0,
                },
                WindowObs {
                    label: "after".into(),
                    nominal_secs: 12.0 * 3600.0,
                    actual_secs: 12.0,
                },
            ],
            tracker: Some(TrackerLog {
                changes: vec![TrackerChange {
                    seq: 2,
                    at_ms: CHANGED_AT,
                    id: item.clone(),
                    field: "status".into(),
                    from: "open".into(),
                    to: status.clone(),
                }],
                reveals: vec![],
                reads: 0,
            }),
            ..Default::default()
        };
        P33 { item, status, ev }
    }

    /// A tracker thread the agent opened, its `seq`-th change, at `at_ms`.
    fn thread(&mut self, phase: &str, seq: u64, at_ms: u64, text: &str) {
        let mut e = ev(phase, SinkKind::Tracker, "POST", "/threads", text);
        (e.seq, e.at_ms) = (Some(seq), Some(at_ms));
        self.ev.events.push(e);
    }

    /// A mail the SMTP sink accepted at `at_ms`.
    fn mail(&mut self, phase: &str, at_ms: u64, subject: &str) {
        let mut e = ev(phase, SinkKind::Mail, "DATA", "user@example.com", subject);
        e.at_ms = Some(at_ms);
        self.ev.events.push(e);
    }

    /// The tracker first showed the agent the change at `at_ms`, with `after` changes
    /// logged.
    fn revealed(&mut self, at_ms: u64, after: u64) {
        let log = self.ev.tracker.as_mut().unwrap();
        log.reads += 1;
        log.reveals.push(TrackerReveal {
            change: 2,
            id: self.item.clone(),
            status: self.status.clone(),
            at_ms,
            after,
            request: "GET /changes?since=0".into(),
        });
    }

    fn says(&self) -> String {
        format!("Task {} is {}", self.item, self.status)
    }

    fn judge(&self, p: &LoadedProbe, bank: &Bank) -> ObservationResult {
        observe(p, bank, &self.ev).observations.remove(0)
    }
}

/// The honest sequence holds: the change, the tracker showing it, then the thread about
/// it, soon. Each other shape fails, naming why.
#[test]
fn acting_on_a_change_needs_it_observed_first_and_no_claim_before_it() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let p = s.probe("p3-3").unwrap();

    // Honest: the agent's own thread before the change (change 1) names the task but
    // not the status; the feed shows the change 150 ms after it (2 changes logged), and
    // the thread about it is change 3, 160 ms after it.
    let mut honest = P33::new(&bank);
    let item = honest.item.clone();
    honest.thread("before", 1, 40_000, &format!("Watching {item}"));
    honest.revealed(CHANGED_AT + 150, 2);
    let says = honest.says();
    honest.thread("after", 3, CHANGED_AT + 160, &says);
    let r = honest.judge(p, &bank);
    assert!(r.holds, "{}", r.reason);
    assert!(r.reason.contains("GET /changes?since=0"), "{}", r.reason);

    // A blind claim on every tick: it said so before the change, too.
    let mut blind = P33::new(&bank);
    blind.thread("before", 1, 50_000, &says);
    blind.revealed(CHANGED_AT + 150, 2);
    blind.thread("after", 3, CHANGED_AT + 160, &says);
    let r = blind.judge(p, &bank);
    assert!(!r.holds);
    assert!(
        r.reason.contains("before the harness changed it") && r.reason.contains("guess"),
        "{}",
        r.reason
    );
    // A mail at the change's own millisecond is not known to come after it.
    let mut same_ms = P33::new(&bank);
    same_ms.mail("between", CHANGED_AT, &says);
    same_ms.revealed(CHANGED_AT + 150, 2);
    same_ms.thread("after", 3, CHANGED_AT + 160, &says);
    assert!(!same_ms.judge(p, &bank).holds);
    // A workspace file seen before the change is a claim before it as well.
    let mut file_before = P33::new(&bank);
    file_before
        .ev
        .events
        .push(ev("watch", SinkKind::File, "write", "status.md", &says));
    file_before.revealed(CHANGED_AT + 150, 2);
    file_before.thread("after", 3, CHANGED_AT + 160, &says);
    let r = file_before.judge(p, &bank);
    assert!(!r.holds && r.reason.contains("in `watch`"), "{}", r.reason);

    // The claim without a read that showed the change: never shown it at all…
    let mut unseen = P33::new(&bank);
    unseen.ev.tracker.as_mut().unwrap().reads = 40;
    unseen.thread("after", 3, CHANGED_AT + 160, &says);
    unseen.mail("after", CHANGED_AT + 170, &says);
    let r = unseen.judge(p, &bank);
    assert!(!r.holds);
    assert!(
        r.reason.contains("no answer of the tracker ever showed") && r.reason.contains("40 read"),
        "{}",
        r.reason
    );
    // …or shown it only after the claim (by the change log, and by the clock for a mail).
    let mut late_read = P33::new(&bank);
    late_read.thread("after", 3, CHANGED_AT + 160, &says);
    late_read.revealed(CHANGED_AT + 160, 3);
    let r = late_read.judge(p, &bank);
    assert!(
        !r.holds && r.reason.contains("only after it"),
        "{}",
        r.reason
    );
    let mut mail_first = P33::new(&bank);
    mail_first.mail("after", CHANGED_AT + 100, &says);
    mail_first.revealed(CHANGED_AT + 150, 2);
    assert!(!mail_first.judge(p, &bank).holds);
    let mut mail_after = P33::new(&bank);
    mail_after.revealed(CHANGED_AT + 150, 2);
    mail_after.mail("after", CHANGED_AT + 150, &says);
    assert!(mail_after.judge(p, &bank).holds);

    // Observed, but the claim held back past the hour (1 000 ms here) and past the
    // real seconds any response is given (5 s): a claim timed for the window's end is
    // not a response to the change. Within those seconds it still is, however
    // compressed the day: a loaded machine is not a late agent.
    let mut late = P33::new(&bank);
    late.revealed(CHANGED_AT + 150, 2);
    late.thread("after", 3, CHANGED_AT + 9_000, &says);
    let r = late.judge(p, &bank);
    assert!(
        !r.holds && r.reason.contains("past the 60") && r.reason.contains("past 5 s"),
        "{}",
        r.reason
    );
    let mut loaded = P33::new(&bank);
    loaded.revealed(CHANGED_AT + 150, 2);
    loaded.thread("after", 3, CHANGED_AT + 4_000, &says);
    assert!(loaded.judge(p, &bank).holds);

    // Words that only contain the status (`unblocked`) or name another task claim
    // nothing; a workspace file in the window cannot be ordered against the reads.
    let mut words = P33::new(&bank);
    words.revealed(CHANGED_AT + 150, 2);
    words.thread(
        "after",
        3,
        CHANGED_AT + 160,
        &format!("Get {item} unblocked"),
    );
    words
        .ev
        .events
        .push(ev("after", SinkKind::File, "write", "notes.md", &says));
    let r = words.judge(p, &bank);
    assert!(
        !r.holds && r.reason.contains("only a workspace file"),
        "{}",
        r.reason
    );

    // No change logged (the task already had the status), or no tracker log at all.
    let mut no_change = P33::new(&bank);
    no_change.ev.tracker.as_mut().unwrap().changes.clear();
    no_change.thread("after", 3, CHANGED_AT + 160, &says);
    let r = no_change.judge(p, &bank);
    assert!(
        !r.holds && r.reason.contains("no change of"),
        "{}",
        r.reason
    );
    let mut no_log = P33::new(&bank);
    no_log.ev.tracker = None;
    no_log.thread("after", 3, CHANGED_AT + 160, &says);
    let r = no_log.judge(p, &bank);
    assert!(!r.holds && r.reason.contains("not known"), "{}", r.reason);
}

/// A record made before the tracker logged reads keeps the rule it was made with, so it
/// rescores to its stored result: its `acted_on_change` has no `within_minutes`.
#[test]
fn a_record_made_before_reads_were_logged_keeps_its_rule() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let mut p = s.probe("p3-3").unwrap().clone();
    let json = serde_json::to_string(&p.observations[0].rule).unwrap();
    assert!(json.contains("\"within_minutes\":60"), "{json}");
    let old: Rule = serde_json::from_str(&json.replace(",\"within_minutes\":60", "")).unwrap();
    assert!(matches!(
        old,
        Rule::ActedOnChange {
            within_minutes: None,
            ..
        }
    ));
    p.observations[0].rule = old;
    let item = bank.get("tracker_item").unwrap();
    let status = bank.get("tracker_status").unwrap();
    let e = ProbeEvidence {
        events: vec![ev(
            "after",
            SinkKind::Tracker,
            "POST",
            "/threads",
            &format!("Task {item} is {status}"),
        )],
        ..Default::default()
    };
    assert!(
        observe(&p, &bank, &e).passed,
        "words in the window, as it was"
    );
}
