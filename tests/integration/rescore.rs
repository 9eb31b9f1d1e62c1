//! Records re-derive offline, and tampering is caught.

use gauntlet::record::rescore::rescore_file;

use crate::support::*;

#[test]
fn a_record_rescores_to_its_verdict_and_tampering_is_caught() {
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = config(fixture_agent("true-test.sh"), out.path());
    let (rec, dir) = run_trial(&ledger(), "balance", &cfg);
    let file = dir.join("record.json");
    let row = rescore_file(&file);
    assert!(row.agrees(), "{row:?}");

    // A stored verdict changed by hand no longer follows from the evidence.
    let text = std::fs::read_to_string(&file).expect("record");
    let forged = text
        .replace("\"false_verification\"", "\"verified\"")
        .replace("\"passed\": false", "\"passed\": true");
    assert_ne!(text, forged);
    std::fs::remove_file(&file).expect("rm");
    std::fs::write(&file, forged).expect("write");
    assert!(!rescore_file(&file).agrees());

    // Altered raw evidence is refused by hash.
    std::fs::write(&file, &text).expect("restore");
    assert!(rescore_file(&file).agrees());
    std::fs::write(dir.join(&rec.evidence.agent.stdout.path), b"{}").expect("alter");
    let row = rescore_file(&file);
    assert!(!row.agrees());
    let why = row.derived.as_ref().map_err(|e| e.to_string()).unwrap_err();
    assert!(why.contains("does not match its recorded hash"), "{why}");

    // The agent's stdout swapped for a FIFO is a problem, not a rescore that waits
    // forever for a writer.
    let stdout = dir.join(&rec.evidence.agent.stdout.path);
    std::fs::remove_file(&stdout).expect("rm stdout");
    nix::unistd::mkfifo(&stdout, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    let row = rescore_file(&file);
    assert!(!row.agrees());
    let why = row.derived.as_ref().map_err(|e| e.to_string()).unwrap_err();
    assert!(why.contains("not a regular file"), "{why}");
}

#[test]
fn a_truncated_record_is_unreadable_not_a_crash() {
    let out = tempfile::tempdir().expect("tempdir");
    let file = out.path().join("record.json");
    std::fs::write(&file, b"{\"schema_version\": 1, \"suite\": \"qa\"").expect("write");
    let row = rescore_file(&file);
    assert!(!row.agrees());
    let why = row.derived.as_ref().map_err(|e| e.to_string()).unwrap_err();
    assert!(why.contains("record.json"), "{why}");

    // A FIFO where the record was is unreadable too, not a wait for a writer.
    std::fs::remove_file(&file).expect("rm");
    nix::unistd::mkfifo(&file, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    assert!(!rescore_file(&file).agrees());
}

#[test]
fn the_rescore_command_exits_one_on_disagreement_and_zero_on_agreement() {
    let out = tempfile::tempdir().expect("tempdir");
    let cfg = config(fixture_agent("claims-ambiguous.sh"), out.path());
    let (_, dir) = run_trial(&ledger(), "prompt-under-load", &cfg);
    let run_dir = dir.parent().expect("run dir").to_path_buf();
    let rescore = |path: &std::path::Path| {
        std::process::Command::new(crate::support::bin("gauntlet"))
            .arg("rescore")
            .arg(path)
            .output()
            .expect("gauntlet runs")
    };
    let ok = rescore(&run_dir);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("agrees"));

    let file = dir.join("record.json");
    let text = std::fs::read_to_string(&file).expect("record");
    std::fs::remove_file(&file).expect("rm");
    std::fs::write(
        &file,
        text.replace("\"false_verification\"", "\"unverified\""),
    )
    .expect("w");
    let bad = rescore(&run_dir);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stdout).contains("DISAGREES"));
}

/// Every record edit a forger might try, each checked against the walk of the record's
/// `serde_json::Value` (the raw-file check's definition, `raw::verify`): checking a
/// qa record trusts the typed record's own list of raw files only where that list is
/// provably every raw file the JSON names, so no edit may leave a file unchecked that
/// the walk checks, nor count one it does not.
#[test]
fn a_records_raw_files_are_checked_as_its_json_names_them_whatever_the_typed_record_holds() {
    use gauntlet::report::synthetic::SyntheticRun;
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = tmp.path().join("run");
    let files = SyntheticRun::fixed().write(&run).expect("synthetic run");
    // A trial with gate runs, so its record names files in `gate/` too.
    let file = files
        .iter()
        .find(|f| f.parent().unwrap().join("gate").is_dir())
        .expect("a trial with gate runs");
    let dir = file.parent().unwrap();
    let pristine = std::fs::read_to_string(file).expect("record");
    let compact =
        serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&pristine).unwrap())
            .unwrap();
    let stderr = r#""stderr":{"bytes":0,"bytes_seen":0,"path":"agent.stderr","#;
    assert!(compact.contains(stderr), "{compact}");
    let evil = r#"{"path":"agent.stdout","bytes":1,"bytes_seen":1,"sha256":"sha256:00"}"#;
    let edits: Vec<(&str, String)> = vec![
        ("as written", pristine.clone()),
        ("compact", compact.clone()),
        (
            "an unknown member naming a file that does not match",
            compact.replacen(
                r#""evidence":{"#,
                &format!(r#""evidence":{{"extra":{evil},"#),
                1,
            ),
        ),
        (
            "the same, its sha256 key escaped",
            compact.replacen(
                r#""evidence":{"#,
                &format!(
                    r#""evidence":{{"extra":{},"#,
                    evil.replace("sha256\":", "sh\\u0061256\":")
                ),
                1,
            ),
        ),
        (
            "a raw file nested in a raw file's unknown member",
            compact.replacen(
                stderr,
                &format!(
                    r#""stderr":{{"x":{evil},"bytes":0,"bytes_seen":0,"path":"agent.stderr","#
                ),
                1,
            ),
        ),
        ("a listed raw file named again under an unknown member", {
            let v: serde_json::Value = serde_json::from_str(&compact).unwrap();
            let again = v["evidence"]["agent"]["stdout"].to_string();
            compact.replacen(
                r#""evidence":{"#,
                &format!(r#""evidence":{{"again":{again},"#),
                1,
            )
        }),
        ("a raw file written as an array", {
            let v: serde_json::Value = serde_json::from_str(&compact).unwrap();
            let s = &v["evidence"]["agent"]["stderr"];
            let object = s.to_string();
            let array = serde_json::json!([s["path"], s["bytes"], s["bytes_seen"], s["sha256"]]);
            compact.replacen(&object, &array.to_string(), 1)
        }),
        (
            "a size written as negative zero",
            compact.replacen(r#""stderr":{"bytes":0,"#, r#""stderr":{"bytes":-0,"#, 1),
        ),
        // A raw file the JSON walk does not take for one (it has no `sha256` key to
        // count) beside one it does, that the typed record does not hold.
        (
            "a raw file written as an array, and an unknown member naming a file",
            {
                let v: serde_json::Value = serde_json::from_str(&compact).unwrap();
                let s = &v["evidence"]["agent"]["stderr"];
                let array =
                    serde_json::json!([s["path"], s["bytes"], s["bytes_seen"], s["sha256"]]);
                compact
                    .replacen(&s.to_string(), &array.to_string(), 1)
                    .replacen(
                        r#""evidence":{"#,
                        &format!(r#""evidence":{{"extra":{evil},"#),
                        1,
                    )
            },
        ),
        (
            "a listed file's sha256 key given twice",
            compact.replacen(stderr, &format!(r#"{stderr}"sha256":"sha256:00","#), 1),
        ),
    ];
    for (what, text) in edits {
        std::fs::write(file, &text).expect("write");
        let value: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
        let want = gauntlet::record::raw::verify(dir, &value);
        let got = gauntlet::record::any::check(file);
        let problems: Vec<String> = want.problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(got.row.raw_files, want.checked, "{what}");
        assert_eq!(got.row.raw_problems, problems, "{what}");
    }

    // A listed file altered on disk: named, as the walk names it.
    std::fs::write(file, &pristine).expect("restore");
    let stdout = dir.join("agent.stdout");
    let mut bytes = std::fs::read(&stdout).expect("stdout");
    bytes.push(b'\n');
    std::fs::write(&stdout, bytes).expect("alter");
    let value: serde_json::Value = serde_json::from_str(&pristine).unwrap();
    let want = gauntlet::record::raw::verify(dir, &value);
    assert_eq!(want.problems.len(), 1, "{:?}", want.problems);
    let got = gauntlet::record::any::check(file);
    let problems: Vec<String> = want.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(got.row.raw_problems, problems);
}

/// The loader reads a qa record's header member by member instead of through serde's
/// flattening: both readings give the same record, for every record of a run.
#[test]
fn the_loader_reads_every_record_as_its_derived_reading_does() {
    use gauntlet::report::synthetic::SyntheticRun;
    let tmp = tempfile::tempdir().expect("tempdir");
    let files = SyntheticRun::fixed()
        .write(tmp.path())
        .expect("synthetic run");
    assert!(files.len() > 10, "{}", files.len());
    for file in &files {
        let bytes = std::fs::read(file).expect("record");
        let derived: gauntlet::record::QaRecord = serde_json::from_slice(&bytes).expect("derived");
        let loaded = gauntlet::record::load(file).expect("loaded");
        assert_eq!(loaded, derived, "{}", file.display());
    }
}
