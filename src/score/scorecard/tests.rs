use super::*;
use crate::spec::scorecard::{default_dir, load_suite, ScorecardSuite};

mod change;
mod rivals;

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
fn classification_follows_the_scorecard_table() {
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
