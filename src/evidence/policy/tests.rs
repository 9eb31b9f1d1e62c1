use super::*;
use serde_json::json;

fn roots() -> Roots {
    Roots {
        workspace: "/out/run/t/workspace".into(),
        skills: "/out/run/t/workspace/.agent/skills".into(),
        trial_dir: "/out/run/t".into(),
        runs_dir: "/out".into(),
        repo: "/repo".into(),
        runtime: vec![],
        challenge: None,
    }
}

fn call(name: &str, input: Value) -> ToolCallRecord {
    crate::evidence::test_support::tool_call("c", name, input)
}

#[test]
fn paths_are_categorized() {
    let r = roots();
    for (p, cat) in [
        ("/out/run/t/workspace/x.csv", PathCategory::TrialWorkspace),
        (
            "/out/run/t/workspace/.agent/skills/README.md",
            PathCategory::SuppliedSkills,
        ),
        ("/out/run/other/workspace/x", PathCategory::AdjacentResults),
        ("/repo/docs/agent-protocol.md", PathCategory::PublicDocs),
        (
            "/repo/apps/api-ledger/flows/balance.json",
            PathCategory::Examples,
        ),
        (
            "/repo/challenges/ledger-reconcile/flows/default.json",
            PathCategory::Examples,
        ),
        ("/repo/tests/integration/main.rs", PathCategory::Tests),
        (
            "/repo/apps/api-ledger/src/main.rs",
            PathCategory::ProductSource,
        ),
        ("/repo/src/lib.rs", PathCategory::ProductSource),
        ("/repo/results/runs/x", PathCategory::AdjacentResults),
        (
            "/home/u/.local/share/opencode/storage",
            PathCategory::PriorStores,
        ),
        ("/usr/bin/curl", PathCategory::Outside),
    ] {
        assert_eq!(classify(&r, Path::new(p)), cat, "{p}");
    }
}

#[test]
fn reading_product_source_contaminates_none_and_skills_but_not_all() {
    let calls = [
        call("read_file", json!({"path": "transactions.csv"})),
        call(
            "Read",
            json!({"file_path": "/repo/apps/api-ledger/src/main.rs"}),
        ),
    ];
    for (profile, clean) in [
        (Profile::None, false),
        (Profile::Skills, false),
        (Profile::All, true),
    ] {
        let f = assess(&calls, &roots(), profile);
        assert_eq!(f.disallowed_reads.is_empty(), clean, "{profile}");
        assert!(f.escalated_to_product_code);
        assert_eq!(f.paths.len(), 2);
        assert_eq!(f.paths[0].category, PathCategory::TrialWorkspace);
    }
    // Docs: allowed from `skills` on.
    let docs = [call("read", json!({"filePath": "/repo/docs/x.md"}))];
    assert!(!assess(&docs, &roots(), Profile::None)
        .disallowed_reads
        .is_empty());
    assert!(assess(&docs, &roots(), Profile::Skills)
        .disallowed_reads
        .is_empty());
}

#[test]
fn recognised_shell_forms_give_their_paths() {
    let ws = Path::new("/out/run/t/workspace");
    let s = shell_paths(
        "cat a.csv | grep -n ops ../../other/x && cd /repo && ls src",
        ws,
    )
    .unwrap();
    let got: Vec<String> = s
        .paths
        .iter()
        .map(|p| p.2.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        got,
        [
            "/out/run/t/workspace/a.csv",
            "/out/run/other/x",
            "/repo/src"
        ]
    );
    let s = shell_paths("\"$APP_BIN\" --json stats < m.txt > r.json 2>&1", ws).unwrap();
    assert_eq!(s.app_commands, 1);
    assert_eq!(s.paths.len(), 2);
    assert_eq!(s.paths[0].1, Access::Read);
    assert_eq!(s.paths[1].1, Access::Write);
    let s = shell_paths("curl -sf -d '{\"a\":1;\"b\"}' \"$APP_URL/x\"", ws).unwrap();
    assert!(s.paths.is_empty());
    assert_eq!((s.commands, s.app_commands), (1, 1));
}

#[test]
fn opaque_shell_is_kept_and_unauditable() {
    let ws = Path::new("/w");
    for cmd in [
        "cat $(find / -name '*.rs')",
        "python3 -c 'open(\"/repo/src/lib.rs\").read()'",
        "cat \"$DIR/secret\"",
        "echo x | sh",
        "eval \"$X\"",
    ] {
        assert!(shell_paths(cmd, ws).is_err(), "{cmd}");
    }
    let f = assess(
        &[call("bash", json!({"command": "cat `ls`"}))],
        &roots(),
        Profile::None,
    );
    assert_eq!(f.opaque_shell_commands.len(), 1);
    assert_eq!(f.opaque_shell_commands[0].command, "cat `ls`");
    // Codex wraps commands in `bash -lc`.
    let f = assess(
        &[call(
            "command_execution",
            json!({"command": "/bin/bash -lc 'cat /repo/src/lib.rs'"}),
        )],
        &roots(),
        Profile::Skills,
    );
    assert_eq!(f.disallowed_reads, ["/repo/src/lib.rs"]);
}
