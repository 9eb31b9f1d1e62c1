//! A recall is the value alone: the rival values of a slot (the bank's pool, the told
//! values, the statuses) named beside it make a list, not an answer.

use super::*;

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
