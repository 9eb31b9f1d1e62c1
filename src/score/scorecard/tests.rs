use super::*;
use crate::spec::scorecard::{default_dir, load_suite, ScorecardSuite};

fn suite() -> ScorecardSuite {
    load_suite(&default_dir()).unwrap_or_else(|e| panic!("{e}"))
}

fn turn(label: &str, reply: &str) -> TurnObs {
    TurnObs {
        label: label.into(),
        session: 1,
        prompt: String::new(),
        reply: Some(reply.into()),
        problem: None,
        files_after: BTreeMap::new(),
        files_incomplete: None,
        script_failure: None,
    }
}

fn ev(phase: &str, sink: SinkKind, method: &str, what: &str, text: &str) -> SinkEvent {
    SinkEvent {
        sink,
        phase: phase.into(),
        what: what.into(),
        method: method.into(),
        text: text.into(),
        at_ms: None,
        seq: None,
    }
}

#[test]
fn anything_else_and_follow_up_are_different_rules() {
    assert!(rule_anything_else("366. Anything else?"));
    assert!(!rule_follow_up("366. Anything else?"));
    assert!(rule_follow_up(
        "366. Would you like me to list the next leap years?"
    ));
    assert!(!rule_anything_else("366."));
    assert!(!rule_follow_up("366."));
}

#[test]
fn an_answer_counts_only_as_a_whole_word_or_number() {
    // Present, anywhere, in any case, at either end of the reply.
    assert!(rule_answered("A leap year has 366 days.", "366"));
    assert!(rule_answered("366", "366"));
    assert!(rule_answered("Days: 366. Anything else?", "366"));
    assert!(rule_answered("(366)", "366"));
    assert!(rule_answered("366-day years", "366"));
    assert!(rule_answered("The capital is PARIS.", "Paris"));
    assert!(rule_answered("paris", "PARIS"));
    // Absent.
    assert!(!rule_answered(
        "Done, everything is handled. Anything else? Would you like me to help further?",
        "366"
    ));
    assert!(!rule_answered("", "366"));
    assert!(!rule_answered("366", ""));
    assert!(!rule_answered("366", "   "));
    // Inside a longer number or word, or part of a number with a separator.
    assert!(!rule_answered("13660", "366"));
    assert!(!rule_answered("It has 3660 or 1366 days", "366"));
    assert!(!rule_answered("1,366 days", "366"));
    assert!(!rule_answered("366.5 days", "366"));
    assert!(!rule_answered("id_366", "366"));
    assert!(!rule_answered("Parisian", "paris"));
    // An embedded occurrence before a whole one does not hide the whole one.
    assert!(rule_answered("13660? No: 366.", "366"));
    // Not ASCII: boundaries are characters, not bytes.
    assert!(rule_answered("Réponse : 366 jours", "366"));
    assert!(!rule_answered("é366é", "366"));
}

#[test]
fn p4_1_needs_the_answer_not_only_the_offer() {
    let s = suite();
    let p = s.probe("p4-1").unwrap();
    let bank = Bank::from_seed("t");
    let (a, b, sum) = (
        bank.get("quiz_a").unwrap(),
        bank.get("quiz_b").unwrap(),
        bank.get("quiz_sum").unwrap(),
    );
    let run = |reply: &str| {
        observe(
            p,
            &bank,
            &ProbeEvidence {
                turns: vec![turn("question", reply)],
                ..Default::default()
            },
        )
    };
    let answered = |r: &ProbeResult| {
        r.observations
            .iter()
            .find(|o| o.id == "answered")
            .cloned()
            .unwrap()
    };
    let offer_only =
        run("Done, everything is handled. Anything else? Would you like me to do more?");
    assert!(!offer_only.passed);
    let ans = answered(&offer_only);
    assert!(!ans.holds);
    assert_eq!(ans.reason, format!("does not answer: no `{sum}`"));
    assert!(ans.audit.is_some());
    assert!(
        offer_only
            .reason
            .contains(&format!("answered: does not answer: no `{sum}`")),
        "{}",
        offer_only.reason
    );
    // The offers themselves still hold: only the answer is missing.
    assert!(offer_only
        .observations
        .iter()
        .filter(|o| o.id != "answered")
        .all(|o| o.holds));
    // The initiative dimension reaches no level without the answer.
    let card = score_card(&s.scorecard, &holds_of("p4-1", &offer_only, false));
    assert_eq!(card.level("initiative"), 0);
    assert!(card.dimensions[3]
        .missing
        .as_deref()
        .is_some_and(|m| m.contains("p4-1.answered")));

    // The operands are told: naming them beside the sum is an answer, not a list.
    let good = run(&format!(
        "{a} plus {b} is {sum}. Would you like me to add up another pair of numbers?"
    ));
    assert!(good.passed, "{}", good.reason);
    assert_eq!(answered(&good).reason, format!("answers `{sum}`"));
    let card = score_card(&s.scorecard, &holds_of("p4-1", &good, false));
    assert_eq!(card.level("initiative"), 2);
}

/// The red team's `canned-words`: one reply to every turn, with a leap year's 366 in it.
/// P4.1's question is drawn with the seed, so the canned number answers nothing.
#[test]
fn p4_1_a_canned_number_does_not_answer_the_drawn_question() {
    let s = suite();
    let p = s.probe("p4-1").unwrap();
    let canned = "366.\n\nMy goals right now:\n- keep our work moving\n- keep you informed\n\n\
                  Would you like me to draft a plan for the next step? Let me know if there is anything else.";
    for seed in ["t", "itest-seed-1", "a", "b", "c", "d", "e", "f", "g", "h"] {
        let bank = Bank::from_seed(seed);
        let sum = bank.get("quiz_sum").unwrap();
        assert_ne!(sum, "366");
        let r = observe(
            p,
            &bank,
            &ProbeEvidence {
                turns: vec![turn("question", canned)],
                ..Default::default()
            },
        );
        assert!(!r.passed, "{seed}: {}", r.reason);
        let ans = r.observations.iter().find(|o| o.id == "answered").unwrap();
        assert!(!ans.holds);
        assert_eq!(ans.reason, format!("does not answer: no `{sum}`"), "{seed}");
    }
}

/// A reply listing every number the sum could be (0 to 200) holds the right one by
/// construction: a list is not an answer, even beside the question's own operands.
#[test]
fn p4_1_a_list_of_numbers_is_not_an_answer() {
    let s = suite();
    let p = s.probe("p4-1").unwrap();
    let bank = Bank::from_seed("t");
    let (a, b, sum) = (
        bank.get("quiz_a").unwrap(),
        bank.get("quiz_b").unwrap(),
        bank.get("quiz_sum").unwrap(),
    );
    let run = |reply: &str| {
        let r = observe(
            p,
            &bank,
            &ProbeEvidence {
                turns: vec![turn("question", reply)],
                ..Default::default()
            },
        );
        let ans = r.observations.iter().find(|o| o.id == "answered").cloned();
        (r, ans.unwrap())
    };
    let numbers: Vec<String> = (0..=200).map(|n| n.to_string()).collect();
    for list in [numbers.join(", "), numbers.join(" "), numbers.join("\n")] {
        let (r, ans) = run(&format!(
            "{a} plus {b} is one of: {list}. Would you like me to narrow it down?"
        ));
        assert!(!r.passed && !ans.holds, "{}", ans.reason);
        // Every sum the bank can draw but the right one, less the two told operands
        // that fall in the pool's range.
        let told = std::collections::BTreeSet::from([a, b])
            .into_iter()
            .filter(|n| n.parse::<u32>().is_ok_and(|n| n >= 20))
            .count();
        assert!(
            ans.reason.starts_with(&format!(
                "names `{sum}` and {} other numbers from 20 to 198 (",
                178 - told
            )) && ans.reason.ends_with("): a list is not an answer"),
            "{}",
            ans.reason
        );
    }
    // One guess beside the answer is enough: two answers are not an answer.
    let rival = if sum == "20" { "21" } else { "20" };
    let (_, ans) = run(&format!("It is {sum}, or maybe {rival}."));
    assert_eq!(
        ans.reason,
        format!(
            "names `{sum}` and 1 other number from 20 to 198 (`{rival}`): a list is not an answer"
        )
    );
    // Numbers outside what the bank draws are no rivals ("2 numbers", a year).
    let (_, ans) = run(&format!(
        "Adding the 2 numbers: {a} + {b} = {sum} (checked 2026)."
    ));
    assert!(ans.holds, "{}", ans.reason);
    // A list without the answer says both.
    let (_, ans) = run("Maybe 20 or 21?");
    if sum != "20" && sum != "21" {
        assert!(
            ans.reason
                .starts_with(&format!("does not answer: no `{sum}`; names ")),
            "{}",
            ans.reason
        );
    }
}

/// A record made while P4.1's answer was the literal 366 rescores with it: found as a
/// whole number, no rival check.
#[test]
fn an_answered_rule_with_a_literal_keeps_the_rule_it_was_made_with() {
    use crate::spec::scorecard::{Answer, Observation};
    let mut p = suite().probe("p4-1").unwrap().clone();
    p.observations = vec![Observation {
        id: "answered".into(),
        rule: Rule::Answered {
            turn: "question".into(),
            answer: Answer::Literal("366".into()),
        },
        note: None,
    }];
    let bank = Bank::from_seed("t");
    let run = |reply: &str| {
        observe(
            &p,
            &bank,
            &ProbeEvidence {
                turns: vec![turn("question", reply)],
                ..Default::default()
            },
        )
    };
    let r = run("A leap year has 366 days, not 365.");
    assert!(r.passed && r.observations[0].reason == "answers `366`");
    let r = run("1,366");
    assert_eq!(r.observations[0].reason, "does not answer: no `366`");
}

#[test]
fn goals_must_be_named_and_listed() {
    assert!(rule_goals_stated(
        "My goals:\n- tidy notes\n- prune branches"
    ));
    assert!(rule_goals_stated("Goals:\n1. tidy notes"));
    assert!(!rule_goals_stated("I have no goals."));
    assert!(!rule_goals_stated("- tidy notes\n- prune branches"));
}

#[test]
fn priority_order_needs_both_in_order() {
    assert!(rule_priority_order("1. b\n2. a", "b", "a"));
    assert!(!rule_priority_order("1. a\n2. b", "b", "a"));
    assert!(!rule_priority_order("1. b", "b", "a"));
}

#[test]
fn hallucination_is_any_value_for_a_never_told_item() {
    let ok = "pet: Rex\nfavorite fruit: unknown";
    assert!(rule_no_hallucination(ok, "favorite fruit", "quince").is_ok());
    assert!(rule_no_hallucination("pet: Rex", "favorite fruit", "quince").is_ok());
    let made_up = rule_no_hallucination("favorite fruit: mango", "favorite fruit", "quince");
    assert!(made_up.is_err_and(|e| e.to_string().contains("mango")));
    let planted = rule_no_hallucination("I think you like quince", "favorite fruit", "quince");
    assert!(planted.is_err_and(|e| e.to_string().contains("planted")));
}

#[test]
fn recall_and_decay_on_the_real_p1_3() {
    let s = suite();
    let p = s.probe("p1-3").unwrap();
    let bank = Bank::from_seed("t");
    let g = |k: &str| bank.get(k).unwrap().to_string();
    let good = format!(
        "pet: {}\ncity: {}\ndoor code: unknown\nlocker: {}\nfavorite fruit: unknown",
        g("pet"),
        g("city"),
        g("locker_new")
    );
    let r = observe(
        p,
        &bank,
        &ProbeEvidence {
            turns: vec![turn("recall", &good)],
            ..Default::default()
        },
    );
    assert!(r.passed, "{}", r.reason);
    assert_eq!(r.recall_score, 3);
    // Remembers everything, expired and superseded included, and makes up a fruit.
    let bad = format!(
        "pet: {}\ncity: {}\ndoor code: {}\nlocker: {} (was {})\nfavorite fruit: mango",
        g("pet"),
        g("city"),
        g("door_code"),
        g("locker_new"),
        g("locker_old")
    );
    let r = observe(
        p,
        &bank,
        &ProbeEvidence {
            turns: vec![turn("recall", &bad)],
            ..Default::default()
        },
    );
    assert!(!r.passed);
    assert_eq!(r.recall_score, 3 - 3);
    let failed: Vec<&str> = r
        .observations
        .iter()
        .filter(|o| !o.holds)
        .map(|o| o.id.as_str())
        .collect();
    assert_eq!(
        failed,
        [
            "superseded-dropped",
            "expired-forgotten",
            "no-hallucination"
        ]
    );
    assert!(r.observations.iter().all(|o| o.audit.is_some()));
}

#[test]
fn a_background_loop_that_only_logs_scores_nothing() {
    let s = suite();
    let p = s.probe("p3-2").unwrap();
    let bank = Bank::from_seed("t");
    let mut e = ProbeEvidence {
        turns: vec![turn("hello", "ok")],
        events: vec![
            ev(
                "day",
                SinkKind::File,
                "write",
                "logs/loop.log",
                "tick\ntick\n",
            ),
            ev("day", SinkKind::File, "write", "agent.log", "checked\n"),
            ev("day", SinkKind::Tracker, "GET", "/items", ""),
        ],
        ..Default::default()
    };
    let r = observe(p, &bank, &e);
    assert!(!r.passed);
    assert!(r.reason.contains("only log lines"), "{}", r.reason);
    e.events
        .push(ev("day", SinkKind::File, "write", "status.md", "all green"));
    assert!(observe(p, &bank, &e).passed);
    // An effect in another phase is not in the window.
    e.events.pop();
    e.events.push(ev(
        "hello",
        SinkKind::File,
        "write",
        "status.md",
        "all green",
    ));
    assert!(!observe(p, &bank, &e).passed);
}

#[test]
fn planted_state_fails_the_probe_and_zeroes_its_observations() {
    let s = suite();
    let p = s.probe("p1-1").unwrap();
    let bank = Bank::from_seed("t");
    let e = ProbeEvidence {
        turns: vec![turn("ask", bank.get("color").unwrap())],
        planted_state: vec!["memory.json".into()],
        ..Default::default()
    };
    let r = observe(p, &bank, &e);
    assert!(!r.passed && r.reason.contains("planted"), "{}", r.reason);
    assert!(holds_of("p1-1", &r, true).values().all(|h| !h));
}

#[test]
fn a_dead_agent_scores_zero_with_the_reason() {
    let s = suite();
    let p = s.probe("p2-2").unwrap();
    let bank = Bank::from_seed("t");
    let mut dead = turn("pin", "");
    dead.reply = None;
    dead.problem = Some("agent exited with signal 9".into());
    let e = ProbeEvidence {
        turns: vec![dead],
        setup_error: Some("the agent died at turn `pin`".into()),
        ..Default::default()
    };
    let r = observe(p, &bank, &e);
    assert!(!r.passed);
    assert!(r.observations.iter().all(|o| !o.holds));
    assert!(
        r.reason.contains("never ran: the agent died"),
        "{}",
        r.reason
    );
}

#[test]
fn levels_are_cumulative_and_autonomy_needs_every_dimension() {
    let s = suite();
    let mut holds = BTreeMap::new();
    // Every observation of levels 3 and 4 of memory, none of level 1 or 2.
    for l in &s.scorecard.dimensions[0].levels[2..] {
        for r in &l.requires {
            holds.insert(r.clone(), true);
        }
    }
    let c = score_card(&s.scorecard, &holds);
    assert_eq!(c.level("memory"), 0);
    assert_eq!(c.total, 0.0);
    assert_eq!(c.classification, "Stub");
    // Everything but the world dimension: 16/20, yet not autonomous.
    let mut all: BTreeMap<String, bool> = s
        .scorecard
        .dimensions
        .iter()
        .flat_map(|d| d.levels.iter().flat_map(|l| l.requires.clone()))
        .map(|r| (r, true))
        .collect();
    for r in s.scorecard.dimensions[4]
        .levels
        .iter()
        .flat_map(|l| &l.requires)
    {
        all.insert(r.clone(), false);
    }
    let c = score_card(&s.scorecard, &all);
    assert_eq!(c.total, 16.0);
    // 16 ≥ 15, but world is 0: not "autonomous", so the highest row without that rule.
    assert_eq!(c.classification, "Proactive");
    assert!(!c.autonomous);
    assert!(c.dimensions[4]
        .missing
        .as_deref()
        .is_some_and(|m| m.contains("p5-1.csv-written")));
    for v in all.values_mut() {
        *v = true;
    }
    let c = score_card(&s.scorecard, &all);
    assert_eq!((c.total, c.autonomous), (20.0, true));
    assert_eq!(c.classification, "Fully Autonomous");
}

#[test]
fn classification_follows_the_seed_table() {
    let s = suite();
    for (total, class) in [
        (0.0, "Stub"),
        (4.0, "Stub"),
        (5.0, "Reactive"),
        (9.0, "Reactive"),
        (10.0, "Proactive"),
        (14.0, "Proactive"),
        (15.0, "Autonomous"),
        (19.0, "Autonomous"),
        (20.0, "Fully Autonomous"),
    ] {
        assert_eq!(classify(&s.scorecard, total, true).0, class, "{total}");
    }
    assert_eq!(classify(&s.scorecard, 19.0, false).0, "Proactive");
    assert_eq!(classify(&s.scorecard, 9.0, false).0, "Reactive");
    assert_eq!(max_total(&s.scorecard), 20.0);
}

#[test]
fn an_agents_own_statement_of_its_score_is_ignored() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let boast =
        "My autonomy scorecard: D1 4, D2 4, D3 4, D4 4, D5 4 = **20/20**, Fully Autonomous.";
    let mut holds = BTreeMap::new();
    for p in &s.probes {
        let turns = p
            .turn_labels()
            .into_iter()
            .map(|l| turn(l, boast))
            .collect();
        let r = observe(
            p,
            &bank,
            &ProbeEvidence {
                turns,
                ..Default::default()
            },
        );
        holds.extend(holds_of(&p.probe.id, &r, false));
    }
    let c = score_card(&s.scorecard, &holds);
    assert!(c.total <= 1.0, "{c:?}");
    assert_eq!(c.classification, "Stub");
}

#[test]
fn world_observations_read_the_sinks_not_the_reply() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let p = s.probe("p5-3").unwrap();
    let claim = turn("send", "Email sent!");
    let mut e = ProbeEvidence {
        turns: vec![claim],
        ..Default::default()
    };
    assert!(!observe(p, &bank, &e).passed);
    e.events.push(ev(
        "send",
        SinkKind::Mail,
        "DATA",
        bank.get("mail_to").unwrap(),
        bank.get("mail_subject").unwrap(),
    ));
    assert!(observe(p, &bank, &e).passed);

    let p = s.probe("p5-2").unwrap();
    let status = bank.get("http_status").unwrap();
    let mut e = ProbeEvidence {
        turns: vec![turn("run", &format!("The status was {status}."))],
        ..Default::default()
    };
    assert!(
        !observe(p, &bank, &e).passed,
        "a reported status without a request"
    );
    e.events.push(ev(
        "run",
        SinkKind::Http,
        "GET",
        &format!("GET {}/", bank.get("http_host").unwrap()),
        "",
    ));
    assert!(observe(p, &bank, &e).passed);
}

#[test]
fn idempotency_compares_the_file_after_each_run() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let p = s.probe("p5-4").unwrap();
    let csv = bank.get("csv_content").unwrap().to_string();
    let path = bank.get("csv_path").unwrap().to_string();
    let file = |text: &str| FileObs {
        sha256: crate::hash::sha256(text.as_bytes()),
        bytes: text.len() as u64,
        text: Some(text.into()),
        partial: None,
    };
    let mut first = turn("first", "done");
    first.files_after.insert(path.clone(), file(&csv));
    let mut again = turn("again", "done");
    again.files_after.insert(path.clone(), file(&csv));
    let e = ProbeEvidence {
        turns: vec![first.clone(), again],
        ..Default::default()
    };
    assert!(observe(p, &bank, &e).passed);
    let mut appended = turn("again", "done");
    appended
        .files_after
        .insert(path, file(&format!("{csv}{}", &csv[8..])));
    let r = observe(
        p,
        &bank,
        &ProbeEvidence {
            turns: vec![first, appended],
            ..Default::default()
        },
    );
    assert!(
        !r.passed && r.reason.contains("re-run changed"),
        "{}",
        r.reason
    );
}

#[test]
fn a_prior_thread_must_be_brought_up_unprompted() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let p = s.probe("p4-2").unwrap();
    let city = bank.get("city").unwrap();
    let e = |reply: &str| ProbeEvidence {
        turns: vec![turn("hello", reply)],
        ..Default::default()
    };
    assert!(
        observe(
            p,
            &bank,
            &e(&format!("Morning! How is the {city} packing plan?"))
        )
        .passed
    );
    assert!(!observe(p, &bank, &e("Good morning. How can I help?")).passed);
}

/// P3.3 as it ran: the harness changed the task at 100 000 ms (the tracker's change 2;
/// change 1 is a thread the agent opened before), in a window of 12 seed hours that
/// lasted 12 s, so a seed minute is 1/60 s and the rule's 60 minutes are 1 000 ms.
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
                    seed_secs: 12.0 * 3600.0,
                    actual_secs: 12.0,
                },
                WindowObs {
                    label: "after".into(),
                    seed_secs: 12.0 * 3600.0,
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

#[test]
fn a_new_thread_is_a_tracker_post_to_threads() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let p = s.probe("p4-3").unwrap();
    let mut e = ProbeEvidence {
        turns: vec![turn("hello", "ok")],
        events: vec![
            ev("quiet", SinkKind::Tracker, "GET", "/threads", ""),
            ev(
                "quiet",
                SinkKind::Tracker,
                "POST",
                "/threads/thread-1/messages",
                "hi",
            ),
        ],
        ..Default::default()
    };
    assert!(
        !observe(p, &bank, &e).passed,
        "a reply in an existing thread is not a new one"
    );
    e.events.push(ev(
        "quiet",
        SinkKind::Tracker,
        "POST",
        "/threads",
        "Idle check-in",
    ));
    assert!(observe(p, &bank, &e).passed);
}

#[test]
fn a_goal_file_counts_only_with_another_effect() {
    let bank = Bank::from_seed("t");
    let rule = Rule::GoalFile { window: "w".into() };
    let s = suite();
    let probe = s.probe("p2-1").unwrap();
    let goal = ev("w", SinkKind::File, "write", "goals.md", "- tidy notes");
    let mut e = ProbeEvidence {
        events: vec![goal],
        ..Default::default()
    };
    assert!(eval(probe, &rule, &bank, &e, &Default::default())
        .0
        .is_err());
    e.events
        .push(ev("w", SinkKind::File, "write", "logs/goal.log", "acted"));
    assert!(
        eval(probe, &rule, &bank, &e, &Default::default())
            .0
            .is_err(),
        "a log line is not acting"
    );
    e.events
        .push(ev("w", SinkKind::File, "write", "notes/tidy.md", "done"));
    assert!(eval(probe, &rule, &bank, &e, &Default::default()).0.is_ok());
}

#[test]
fn a_scripted_write_the_workspace_does_not_hold_is_named() {
    let file = |text: Option<&str>| FileObs {
        sha256: String::new(),
        bytes: text.map_or(0, |t| t.len() as u64),
        text: text.map(str::to_owned),
        partial: None,
    };
    let writes = vec![("out/items.csv".to_string(), "a,b\n".to_string())];
    let held = BTreeMap::from([("out/items.csv".to_string(), file(Some("a,b\n")))]);
    assert_eq!(unwritten(&writes, &held), None);
    let other = BTreeMap::from([("out/items.csv".to_string(), file(Some("a,b\na,b\n")))]);
    assert!(unwritten(&writes, &other)
        .is_some_and(|why| why.contains("other content") && why.contains("out/items.csv")));
    assert!(unwritten(&writes, &BTreeMap::new()).is_some_and(|why| why.contains("left no")));
    assert_eq!(unwritten(&[], &BTreeMap::new()), None);
}

/// The paths the probes' file observations read are the ones a turn's record keeps
/// whatever it leaves out: P5.1's CSV, P5.4's CSV, nothing for a memory probe.
#[test]
fn watched_files_are_the_paths_file_observations_read() {
    let s = suite();
    let bank = Bank::from_seed("t");
    let csv = bank.get("csv_path").unwrap().to_string();
    for id in ["p5-1", "p5-4"] {
        let watched = watched_files(s.probe(id).unwrap(), &bank);
        assert_eq!(watched.iter().collect::<Vec<_>>(), [&csv], "{id}");
    }
    assert!(watched_files(s.probe("p1-1").unwrap(), &bank).is_empty());
}

/// A file absent from a cut snapshot was not seen, and the reason says so (the red
/// team's round five: it said "does not exist"); absent from a whole one, it does not.
#[test]
fn a_file_missing_from_a_cut_snapshot_is_not_seen_not_absent() {
    use crate::evidence::tree::{Cut, CutWhy};
    let s = suite();
    let bank = Bank::from_seed("t");
    let path = bank.get("csv_path").unwrap().to_string();
    let cut = Cut {
        why: CutWhy::Entries { limit: 50_000 },
        after_entries: 50_000,
    };
    let reason = |probe: &str, turns: Vec<TurnObs>| {
        let e = ProbeEvidence {
            turns,
            ..Default::default()
        };
        observe(s.probe(probe).unwrap(), &bank, &e).reason
    };
    let whole = reason("p5-1", vec![turn("write", "done")]);
    assert!(
        whole.contains(&format!("{path} does not exist after `write`")),
        "{whole}"
    );
    let mut short = turn("write", "done");
    short.files_incomplete = Some(FilesIncomplete {
        left_out: 0,
        cut: Some(cut.clone()),
    });
    let r = reason("p5-1", vec![short.clone()]);
    assert!(
        r.contains(&format!(
            "{path} was not seen after `write`: the workspace snapshot was cut \
             (stopped at the limit of 50000 entries after 50000 entries)"
        )) && !r.contains("does not exist"),
        "{r}"
    );
    // P5.4: the first run whole, the re-run's snapshot cut.
    let file = FileObs {
        sha256: crate::hash::sha256(b"x"),
        bytes: 1,
        text: Some("x".into()),
        partial: None,
    };
    let mut first = turn("first", "done");
    first.files_after.insert(path.clone(), file);
    let mut again = short;
    again.label = "again".into();
    let r = reason("p5-4", vec![first.clone(), again]);
    assert!(
        r.contains(&format!("{path} was not seen after `again`")),
        "{r}"
    );
    let r = reason("p5-4", vec![first, turn("again", "done")]);
    assert!(
        r.contains(&format!("{path} does not exist after `again`")),
        "{r}"
    );
}

/// `probe`'s result on one turn `label` answering `reply`.
fn one_turn(id: &str, label: &str, reply: &str, bank: &Bank) -> ProbeResult {
    let s = suite();
    observe(
        s.probe(id).unwrap(),
        bank,
        &ProbeEvidence {
            turns: vec![turn(label, reply)],
            ..Default::default()
        },
    )
}

fn obs<'a>(r: &'a ProbeResult, id: &str) -> &'a ObservationResult {
    r.observations
        .iter()
        .find(|o| o.id == id)
        .unwrap_or_else(|| panic!("no observation `{id}`"))
}

/// Every other entry of a word list, as a list a guesser would write.
fn all_but(list: &[&str], value: &str) -> Vec<String> {
    list.iter()
        .filter(|w| !w.eq_ignore_ascii_case(value))
        .map(|w| w.to_string())
        .collect()
}

/// The word list the bank draws `slot` from.
fn words(slot: &str) -> &'static [&'static str] {
    match crate::spec::scorecard::bank::pool(slot) {
        Some(crate::spec::scorecard::bank::Pool::Words { words, .. }) => words,
        _ => panic!("{slot} has no word list"),
    }
}

#[test]
fn a_recall_is_the_value_alone_not_the_value_among_its_rivals() {
    let bank = Bank::from_seed("t");
    let color = bank.get("color").unwrap();
    let ask = |reply: &str| one_turn("p1-1", "ask", reply, &bank);
    // The value alone, in any case, however it is marked up.
    for reply in [
        format!("Your favorite color is {color}."),
        format!("{}!", color.to_uppercase()),
        format!("It is _{color}_ (you told me earlier)."),
    ] {
        let r = ask(&reply);
        assert!(r.passed, "{reply}: {}", r.reason);
        assert_eq!(r.recall_score, 1);
        assert_eq!(
            obs(&r, "within-session-recall").reason,
            format!("recalls `{color}`")
        );
    }
    // The value among every other color: a list.
    let mut list = all_but(words("color"), color);
    list.insert(5, color.to_string());
    let r = ask(&format!("Your favorite color: {}", list.join(", ")));
    assert!(!r.passed);
    assert_eq!(r.recall_score, 0);
    let o = obs(&r, "within-session-recall");
    assert!(
        o.reason
            .starts_with(&format!("names `{color}` and 15 other colors (`")),
        "{}",
        o.reason
    );
    assert!(
        o.reason.ends_with(": a list is not a recall"),
        "{}",
        o.reason
    );
    assert!(o.audit.is_some());
    // One rival is enough: two guesses are not a recall either.
    let other = all_but(words("color"), color).remove(0);
    let o = ask(&format!("Either {color} or {other}."));
    assert!(!o.passed, "{}", o.reason);
    assert!(
        o.reason
            .contains(&format!("names `{color}` and 1 other color (`{other}`)")),
        "{}",
        o.reason
    );
    // Word boundaries, both ways: a color inside a longer word is neither the value
    // nor a rival.
    let r = ask(&format!(
        "Your favorite color is {color}. I won't steal or tamber it."
    ));
    assert!(r.passed, "{}", r.reason);
    let r = ask(&format!("Not sure: {color}ish?"));
    assert!(!r.passed);
    assert_eq!(
        obs(&r, "within-session-recall").reason,
        format!("does not recall `{color}`")
    );
    // Rivals without the value: said, still not a recall.
    let r = ask(&format!("It is {other}."));
    assert_eq!(
        obs(&r, "within-session-recall").reason,
        format!("does not recall `{color}`; names 1 color never told (`{other}`)")
    );
}

#[test]
fn generated_values_have_rivals_too_codenames_and_lockers() {
    let bank = Bank::from_seed("t");
    let (code, day) = (bank.get("codename").unwrap(), bank.get("deadline").unwrap());
    let good = one_turn(
        "p1-2",
        "ask",
        &format!("Open projects: codename {code}, due {day}."),
        &bank,
    );
    assert!(good.passed, "{}", good.reason);
    assert_eq!(good.recall_score, 2);
    // The codename among other codename-shaped tokens, the day among every day.
    let rival = if code == "KORDAX7" {
        "TANRIK3"
    } else {
        "KORDAX7"
    };
    let r = one_turn(
        "p1-2",
        "ask",
        &format!(
            "Projects: {code}, {rival}, blufin1. Deadlines: Monday, Tuesday, Wednesday, \
             Thursday, Friday, Saturday, Sunday."
        ),
        &bank,
    );
    assert!(!r.passed);
    assert_eq!(r.recall_score, 0);
    let c = obs(&r, "cross-session-codename");
    assert!(!c.holds);
    assert!(
        c.reason.starts_with(&format!(
            "names `{code}` and 2 other codename-shaped tokens (`{}`, `blufin1`)",
            rival.to_lowercase()
        )),
        "{}",
        c.reason
    );
    let d = obs(&r, "cross-session-deadline");
    assert!(
        d.reason
            .starts_with(&format!("names `{day}` and 6 other days")),
        "{}",
        d.reason
    );
    // A token that only looks close is no rival: other words, a longer number.
    let r = one_turn(
        "p1-2",
        "ask",
        &format!("Project {code} (ticket ABC123, build {code}0), deadline {day}."),
        &bank,
    );
    assert!(r.passed, "{}", r.reason);
}

/// P1.3's locker was superseded: the old one was told, so an honest reply that names it
/// as the former locker still recalls the new one (`superseded-newest`) and fails only
/// `superseded-dropped`, the rule about the old one. Lockers the agent was never told
/// are rivals: the range of new lockers is a list.
#[test]
fn p1_3_told_values_are_not_rivals_but_the_pool_is() {
    let bank = Bank::from_seed("t");
    let g = |k: &str| bank.get(k).unwrap().to_string();
    let reply = |locker: &str| {
        format!(
            "pet: {}\ncity: {}\ndoor code: unknown\nlocker: {locker}\nfavorite fruit: unknown",
            g("pet"),
            g("city")
        )
    };
    let r = one_turn("p1-3", "recall", &reply(&g("locker_new")), &bank);
    assert!(r.passed, "{}", r.reason);
    assert_eq!(r.recall_score, 3);

    let moved = format!("moved from {} to {}", g("locker_old"), g("locker_new"));
    let r = one_turn("p1-3", "recall", &reply(&moved), &bank);
    assert!(obs(&r, "superseded-newest").holds, "{}", r.reason);
    assert!(!obs(&r, "superseded-dropped").holds);
    assert_eq!(r.recall_score, 3 - 1);

    // Every new locker but the old ones, as enumerate-bank writes it.
    let range: Vec<String> = (55..99).map(|n| format!("L{n}")).collect();
    let r = one_turn("p1-3", "recall", &reply(&range.join(", ")), &bank);
    let newest = obs(&r, "superseded-newest");
    assert!(!newest.holds);
    assert!(
        newest
            .reason
            .starts_with(&format!("names `{}` and 43 other lockers", g("locker_new"))),
        "{}",
        newest.reason
    );
    assert!(obs(&r, "superseded-dropped").holds, "silence gets it too");
    assert_eq!(r.recall_score, 2);

    // Every pet and every city: neither is recalled.
    let (pets, cities) = (words("pet").join(", "), words("city").join(", "));
    let list = format!(
        "pet: {pets}\ncity: {cities}\ndoor code: unknown\nlocker: {}\nfavorite fruit: unknown",
        range.join(" ")
    );
    let r = one_turn("p1-3", "recall", &list, &bank);
    assert!(!r.passed);
    assert_eq!(r.recall_score, 0);
    let city = obs(&r, "correct-city");
    assert!(
        city.reason
            .starts_with(&format!("names `{}` and 7 other cities (`", g("city"))),
        "{}",
        city.reason
    );
    assert!(obs(&r, "correct-pet")
        .reason
        .contains("and 7 other pet names"));

    // A list of every fruit names the never-told one: planted, and said to be a list.
    let fruits = words("false_fruit").join(", ");
    let r = one_turn(
        "p1-3",
        "recall",
        &format!("{}\nfruits I know: {fruits}", reply(&g("locker_new"))),
        &bank,
    );
    let h = obs(&r, "no-hallucination");
    assert!(!h.holds);
    assert!(
        h.reason
            .starts_with(&format!("names `{}` and 7 other fruits", g("false_fruit")))
            && h.reason
                .ends_with("a list of guesses, and `favorite fruit` was never told"),
        "{}",
        h.reason
    );
}

#[test]
fn a_prior_thread_is_the_one_city_not_every_city() {
    let bank = Bank::from_seed("t");
    let city = bank.get("city").unwrap();
    let hello = |reply: &str| one_turn("p4-2", "hello", reply, &bank);
    assert!(
        hello(&format!(
            "Good morning! Shall I draft the {city} packing plan?"
        ))
        .passed
    );
    let cities = words("city").join(", ");
    let r = hello(&format!("Good morning! Trips I could plan: {cities}."));
    assert!(!r.passed);
    let o = obs(&r, "prior-thread");
    assert!(
        o.reason
            .starts_with(&format!("names `{city}` and 7 other cities"))
            && o.reason.ends_with("a list is not a thread brought up"),
        "{}",
        o.reason
    );
}

#[test]
fn p2_2_the_two_pinned_goals_are_told_every_goal_is_a_list() {
    let bank = Bank::from_seed("t");
    let s = suite();
    let p = s.probe("p2-2").unwrap();
    let (x, y) = (bank.get("goal_x").unwrap(), bank.get("goal_y").unwrap());
    let run = |ask: &str, order: &str| {
        observe(
            p,
            &bank,
            &ProbeEvidence {
                turns: vec![turn("ask", ask), turn("order", order)],
                ..Default::default()
            },
        )
    };
    let r = run(
        &format!("My goals:\n1. {x}\n2. {y}"),
        &format!("My goals by priority:\n1. {y}\n2. {x}"),
    );
    assert!(r.passed, "{}", r.reason);
    let all = words("goal_x");
    // Every goal, the pinned ones in the right order at the top.
    let mut order = vec![y, x];
    order.extend(all.iter().filter(|g| **g != x && **g != y));
    let listed = |gs: &[&str]| {
        format!(
            "My goals:\n{}",
            gs.iter().map(|g| format!("- {g}\n")).collect::<String>()
        )
    };
    let r = run(&listed(all), &listed(&order));
    assert!(!obs(&r, "pinned-x").holds && !obs(&r, "pinned-y").holds);
    let o = obs(&r, "reprioritized");
    assert!(!o.holds);
    assert!(
        o.reason.starts_with("names 4 other goals besides")
            && o.reason.ends_with("a list of every goal is not an order"),
        "{}",
        o.reason
    );
}

/// P5.2 with the request seen and `reply` as the report, under seed `t` (status 200).
fn p5_2_with(reply: &str) -> ObservationResult {
    let s = suite();
    let p = s.probe("p5-2").unwrap();
    let bank = Bank::from_seed("t");
    let e = ProbeEvidence {
        turns: vec![turn("run", reply)],
        events: vec![ev(
            "run",
            SinkKind::Http,
            "GET",
            &format!("GET {}/", bank.get("http_host").unwrap()),
            "",
        )],
        ..Default::default()
    };
    let r = observe(p, &bank, &e);
    r.observations
        .into_iter()
        .find(|o| o.id == "shell-invoked")
        .expect("shell-invoked")
}

/// The status alone reports it; a list of the bank's statuses (red team round seven,
/// `status-list`) or any second status does not; a status inside a longer number is not
/// named; a status the reply contrasts with is neither the report nor a rival.
#[test]
fn p5_2_reports_the_status_alone_not_a_list_of_statuses() {
    assert_eq!(Bank::from_seed("t").get("http_status"), Some("200"));
    for ok in [
        "The status code was 200.",
        "200",
        "HTTP/1.1 200 OK",
        "`200`",
        "It returned 200 (not 404).",
        "It returned 200, not the usual 418 I expected.",
        "200 rather than 201, instead of 451; unlike 203 it has a body. It isn't 500.",
    ] {
        let o = p5_2_with(ok);
        assert!(o.holds, "{ok:?}: {}", o.reason);
        assert_eq!(
            o.reason,
            format!("requested {} and reported 200", bank_host())
        );
    }
    let o = p5_2_with("Done. Status: 200/201/202/203/206/226/418/451 (one of these).");
    assert!(!o.holds);
    assert_eq!(
        o.reason,
        format!(
            "requested {} but names `200` and 7 other HTTP statuses (`201`, `202`, `203`, …): a list is not a status report",
            bank_host()
        )
    );
    for list in [
        "200 or 404",
        "Status 200. Earlier it said 503.",
        "200 (201?)",
    ] {
        let o = p5_2_with(list);
        assert!(
            !o.holds && o.reason.ends_with("a list is not a status report"),
            "{list:?}: {}",
            o.reason
        );
    }
    // Inside a longer number, or with a leading zero: not the status.
    for longer in ["Status: 2000", "Status 1200", "0200", "status-200x"] {
        let o = p5_2_with(longer);
        assert!(!o.holds, "{longer:?}");
        assert_eq!(
            o.reason,
            format!("requested {} but did not report status 200", bank_host())
        );
    }
    // Contrasted only: not reported.
    let o = p5_2_with("It was not 200.");
    assert!(!o.holds);
    assert!(
        o.reason
            .ends_with("it names `200` only as a status it was not"),
        "{}",
        o.reason
    );
    // Another status alone: a wrong report, said as such.
    let o = p5_2_with("It returned 206 (not 200).");
    assert!(!o.holds);
    assert!(
        o.reason.ends_with("; reports 1 other HTTP status (`206`)"),
        "{}",
        o.reason
    );
    // Numbers that are no registered status are not rivals (a time, a size).
    assert!(p5_2_with("200 after 123 ms, 512 bytes").holds);
}

fn bank_host() -> String {
    Bank::from_seed("t").get("http_host").unwrap().to_string()
}

/// Every contrasted status is skipped, so a list can pass only by reporting one status:
/// contrasting all but the seeded one is a guess that fails every other seed.
#[test]
fn contrasting_every_status_but_one_is_a_guess_not_a_report() {
    let reply = "Status 451 (not 200, not 201, not 202, not 203, not 206, not 226, not 418).";
    let r = reported_statuses(reply, "451");
    assert_eq!(r.reported, ["451"]);
    assert_eq!(r.contrasted.len(), 7);
    assert!(!p5_2_with(reply).holds);
    let none = reported_statuses("not 200, not 201 and not 451", "200");
    assert!(none.reported.is_empty());
    assert!(!p5_2_with("not 200, not 201 and not 451").holds);
    // Only contrast words right before the status (fillers between) count.
    let r = reported_statuses(
        "Not 200 but 206; expected HTTP 200; instead of the 418",
        "206",
    );
    assert_eq!(
        (r.reported, r.contrasted),
        (
            vec!["206".to_string()],
            vec!["200".to_string(), "418".to_string()]
        )
    );
    let r = reported_statuses("Not exactly: 200, then 206", "200");
    assert_eq!(r.reported, ["200", "206"]);
}
