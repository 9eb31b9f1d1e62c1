use super::*;

fn write(dir: &Path, name: &str, body: &serde_json::Value) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, serde_json::to_vec_pretty(body).unwrap()).unwrap();
    f
}

#[test]
fn the_repository_suite_loads_with_sixteen_probes() {
    let suite = load_suite(&default_dir()).unwrap_or_else(|e| panic!("{e}"));
    let ids: Vec<&str> = suite.probes.iter().map(|p| p.probe.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "p1-1", "p1-2", "p1-3", "p2-1", "p2-2", "p3-1", "p3-2", "p3-3", "p4-1", "p4-2", "p4-3",
            "p5-1", "p5-2", "p5-3", "p5-4"
        ]
    );
    assert_eq!(
        suite.probe("p1-3").map(|p| p.trial_name()),
        Some("scorecard::memory::p1-3".into())
    );
}

#[test]
fn an_unknown_observation_fails_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "p9-1.json",
        &serde_json::json!({
            "id": "p9-1", "dimension": "memory", "wording": "x",
            "steps": [{"turn": {"label": "ask", "prompt": "hi"}}],
            "observations": [{"id": "vibes", "kind": "feels_right", "turn": "ask"}]
        }),
    );
    let err = load_probe(&f).unwrap_err().to_string();
    assert!(err.contains("p9-1.json"), "{err}");
    assert!(err.contains("observations[0].kind"), "{err}");
    assert!(err.contains("feels_right"), "{err}");
}

/// `acted_on_change` says how soon the effect must follow the change, and observes
/// the window the change opens.
#[test]
fn acted_on_change_needs_a_bound_and_the_window_the_change_opens() {
    let dir = tempfile::tempdir().unwrap();
    let probe = |observation: serde_json::Value, world_first: bool| {
        let change = serde_json::json!({"world": {"tracker_set": {
                "item": "{{tracker_item}}", "status": "{{tracker_status}}"}}});
        let before = serde_json::json!({"idle": {"label": "before", "nominal_hours": 12}});
        let after = serde_json::json!({"idle": {"label": "after", "nominal_hours": 12}});
        let steps = if world_first {
            vec![before, change, after]
        } else {
            vec![before, after, change]
        };
        let f = write(
            dir.path(),
            "p9-9.json",
            &serde_json::json!({
                "id": "p9-9", "dimension": "continuous", "wording": "x",
                "steps": steps, "observations": [observation]
            }),
        );
        load_probe(&f)
    };
    let obs = |extra: serde_json::Value| {
        let mut o = serde_json::json!({"id": "acted", "kind": "acted_on_change",
                "window": "after", "slots": ["tracker_item", "tracker_status"]});
        if let (Some(o), Some(extra)) = (o.as_object_mut(), extra.as_object()) {
            o.extend(extra.clone());
        }
        o
    };
    let loaded = probe(obs(serde_json::json!({"within_minutes": 60})), true).unwrap();
    assert!(matches!(
        &loaded.observations[0].rule,
        Rule::ActedOnChange {
            within_minutes: Some(60),
            ..
        }
    ));
    for (o, world_first, want) in [
        (
            obs(serde_json::json!({})),
            true,
            "observations[0].within_minutes",
        ),
        (
            obs(serde_json::json!({"within_minutes": 0})),
            true,
            "at least 1",
        ),
        (
            obs(serde_json::json!({"within_minutes": 60})),
            false,
            "right after the world change",
        ),
    ] {
        let err = probe(o, world_first).unwrap_err().to_string();
        assert!(
            err.contains("p9-9.json") && err.contains(want),
            "{want}: {err}"
        );
    }
}

#[test]
fn a_missing_turn_fails_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "p9-2.json",
        &serde_json::json!({
            "id": "p9-2", "dimension": "memory", "wording": "x",
            "steps": [{"turn": {"label": "plant", "prompt": "my color is {{color}}"}}],
            "observations": [{"id": "r", "kind": "recall", "turn": "ask", "slot": "color"}]
        }),
    );
    let err = load_probe(&f).unwrap_err().to_string();
    assert!(
        err.contains("p9-2.json") && err.contains("observations[0].turn"),
        "{err}"
    );
    assert!(err.contains("`ask`"), "{err}");
    let f = write(
        dir.path(),
        "p9-3.json",
        &serde_json::json!({
            "id": "p9-3", "dimension": "memory", "wording": "x",
            "steps": [{"turn": {"label": "a", "prompt": "{{favourite_colour}}"}}],
            "observations": [{"id": "r", "kind": "recall", "turn": "a", "slot": "color"}]
        }),
    );
    let err = load_probe(&f).unwrap_err().to_string();
    assert!(
        err.contains("steps[0].turn.prompt") && err.contains("favourite_colour"),
        "{err}"
    );
}

#[test]
fn an_answered_observation_takes_its_answer_from_a_bank_slot() {
    let dir = tempfile::tempdir().unwrap();
    let probe = |name: &str, o: serde_json::Value| {
        let id = name.trim_end_matches(".json");
        write(
            dir.path(),
            name,
            &serde_json::json!({
                "id": id, "dimension": "initiative", "wording": "x",
                "steps": [{"turn": {"label": "question", "prompt": "What is {{quiz_a}} plus {{quiz_b}}?"}}],
                "observations": [o]
            }),
        )
    };
    let f = probe(
        "p9-5.json",
        serde_json::json!({"id": "a", "kind": "answered", "turn": "question", "slot": "quiz_sum"}),
    );
    let p = load_probe(&f).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        p.observations[0].rule,
        Rule::Answered {
            turn: "question".into(),
            answer: Answer::Slot {
                slot: "quiz_sum".into()
            }
        }
    );
    for (name, o, field, why) in [
        // No slot, or one the bank does not fill.
        (
            "p9-6.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "question"}),
            "observations[0].slot",
            "is required",
        ),
        (
            "p9-7.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "question", "slot": "quiz_product"}),
            "observations[0].slot",
            "`quiz_product` is not a slot of the fact bank",
        ),
        // A literal answer is public, even beside a slot.
        (
            "p9-8.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "question", "answer": "366"}),
            "observations[0].answer",
            "a fixed answer is public",
        ),
        (
            "p9-9.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "question", "slot": "quiz_sum", "answer": "{{quiz_sum}}"}),
            "observations[0].answer",
            "name its slot in `slot`",
        ),
        // A turn the probe does not have.
        (
            "p9-11.json",
            serde_json::json!({"id": "a", "kind": "answered", "slot": "quiz_sum"}),
            "observations[0].turn",
            "is required",
        ),
        (
            "p9-12.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "ask", "slot": "quiz_sum"}),
            "observations[0].turn",
            "`ask`",
        ),
        // The question names its own answer: an echo answers it.
        (
            "p9-13.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "question", "slot": "quiz_a"}),
            "observations[0].slot",
            "an echo of the question",
        ),
        // A slot that is the same for every seed is a fixed answer again.
        (
            "p9-14.json",
            serde_json::json!({"id": "a", "kind": "answered", "turn": "question", "slot": "tracker_status"}),
            "observations[0].slot",
            "the same for every seed",
        ),
    ] {
        let err = load_probe(&probe(name, o)).unwrap_err().to_string();
        assert!(
            err.contains(name) && err.contains(field) && err.contains(why),
            "{name}: {err}"
        );
    }
    // A question that is the same for every seed has no answer drawn with it.
    let f = write(
        dir.path(),
        "p9-15.json",
        &serde_json::json!({
            "id": "p9-15", "dimension": "initiative", "wording": "x",
            "steps": [{"turn": {"label": "question", "prompt": "How many days does a leap year have?"}}],
            "observations": [{"id": "a", "kind": "answered", "turn": "question", "slot": "quiz_sum"}]
        }),
    );
    let err = load_probe(&f).unwrap_err().to_string();
    assert!(
        err.contains("p9-15.json")
            && err.contains("observations[0].turn")
            && err.contains("names no slot"),
        "{err}"
    );
    let err = load_probe(&probe(
        "p9-10.json",
        serde_json::json!({"id": "a", "kind": "answerd", "turn": "question", "slot": "quiz_sum"}),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("known: ") && err.contains("answered,"),
        "{err}"
    );
}

/// A record made while P4.1's answer was the literal 366 keeps that rule: it
/// deserializes as [`Answer::Literal`], and new rules serialize their slot.
#[test]
fn an_answered_rule_of_an_older_record_keeps_its_literal() {
    let old: Rule = serde_json::from_value(
        serde_json::json!({"answered": {"turn": "question", "answer": "366"}}),
    )
    .unwrap();
    assert_eq!(
        old,
        Rule::Answered {
            turn: "question".into(),
            answer: Answer::Literal("366".into())
        }
    );
    let new = Rule::Answered {
        turn: "question".into(),
        answer: Answer::Slot {
            slot: "quiz_sum".into(),
        },
    };
    let v = serde_json::to_value(&new).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"answered": {"turn": "question", "answer": {"slot": "quiz_sum"}}})
    );
    assert_eq!(serde_json::from_value::<Rule>(v).unwrap(), new);
}

#[test]
fn p4_1_observes_the_answer_and_its_levels_require_it() {
    let suite = load_suite(&default_dir()).unwrap_or_else(|e| panic!("{e}"));
    let p = suite.probe("p4-1").unwrap();
    assert!(p.observations.iter().any(|o| o.id == "answered"
        && o.rule
            == Rule::Answered {
                turn: "question".into(),
                answer: Answer::Slot {
                    slot: "quiz_sum".into()
                }
            }));
    // The question is drawn with the seed, not a fixed one with a public answer.
    assert!(matches!(
        &p.probe.steps[..],
        [Step::Turn { prompt, .. }] if prompt == "What is {{quiz_a}} plus {{quiz_b}}?"
    ));
    // Levels are cumulative: the answer is required from level 1, so neither the
    // "anything else?" nor the follow-up level is reached without it.
    let initiative = &suite.scorecard.dimensions[3];
    assert_eq!(initiative.id, "initiative");
    for l in &initiative.levels {
        if l.requires
            .iter()
            .any(|r| r == "p4-1.anything-else" || r == "p4-1.follow-up")
        {
            let from_1: Vec<&String> = initiative.levels[..usize::from(l.level)]
                .iter()
                .flat_map(|l| &l.requires)
                .collect();
            assert!(
                from_1.iter().any(|r| *r == "p4-1.answered"),
                "level {}",
                l.level
            );
        }
    }
}

#[test]
fn a_prior_thread_whose_prompt_names_the_topic_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        dir.path(),
        "p9-4.json",
        &serde_json::json!({
            "id": "p9-4", "dimension": "initiative", "wording": "x",
            "steps": [{"turn": {"label": "a", "prompt": "how is {{codename}}?"}}],
            "observations": [{"id": "r", "kind": "prior_thread", "turn": "a", "slot": "codename"}]
        }),
    );
    let err = load_probe(&f).unwrap_err().to_string();
    assert!(err.contains("reminder"), "{err}");
}

/// A probe written before record schema 2 names its wording `seed_text` and an idle
/// window's hours `seed_hours`: it loads as the same probe, and writes the new names.
#[test]
fn a_probe_with_the_old_field_names_loads_as_the_same_probe() {
    let dir = tempfile::tempdir().unwrap();
    let body = |wording: &str, hours: &str| {
        serde_json::json!({
            "id": "p9-16", "dimension": "continuous", wording: "after a day",
            "steps": [
                {"turn": {"label": "ask", "prompt": "hi"}},
                {"idle": {"label": "day", hours: 24}}
            ],
            "observations": [{"id": "did", "kind": "idle_effect", "window": "day"}]
        })
    };
    let old = load_probe(&write(
        dir.path(),
        "p9-16.json",
        &body("seed_text", "seed_hours"),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let new_dir = tempfile::tempdir().unwrap();
    let new = load_probe(&write(
        new_dir.path(),
        "p9-16.json",
        &body("wording", "nominal_hours"),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(old.probe, new.probe);
    assert_eq!(old.probe.wording, "after a day");
    assert!(matches!(
        old.probe.steps[1],
        Step::Idle { nominal_hours, .. } if nominal_hours == 24.0
    ));
    let written = serde_json::to_string(&old.probe).unwrap();
    assert!(written.contains("\"wording\"") && written.contains("\"nominal_hours\""));
    assert!(!written.contains("seed_"), "{written}");
}
