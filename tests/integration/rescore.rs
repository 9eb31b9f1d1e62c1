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
