//! What a program says to `--version`, bounded: an agent's CLI named in a record, and
//! gauntlet's own programs checked before a run. A program that hangs meets a deadline,
//! one that floods is read no further than a version line needs, and neither reads or
//! writes the caller's home.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The first non-empty line `program --version` prints, at most 200 characters, or
/// why there is none (it could not start, answered nothing within `deadline`, exited
/// with a failure, or printed nothing).
pub fn first_line(program: &Path, deadline: Duration) -> Result<String, String> {
    // A scratch HOME: a version probe must not read or write the caller's config.
    let home = std::env::temp_dir().join(format!(
        "gauntlet-version-{}-{}",
        std::process::id(),
        program
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    let mut cmd = Command::new(program);
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env("HOME", &home);
    let spawned = super::lifeline::spawn_std(cmd);
    let result = spawned.map_err(|e| e.to_string()).and_then(|mut child| {
        let until = Instant::now() + deadline;
        // A version line fits in the pipe buffer, so waiting before reading cannot
        // deadlock on a well-behaved program; a misbehaving one meets the deadline.
        let status = loop {
            match child.try_wait().map_err(|e| e.to_string())? {
                Some(status) => break status,
                None if Instant::now() >= until => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("no answer within {deadline:?}"));
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        let mut text = String::new();
        if let Some(out) = child.stdout.as_mut() {
            out.take(64 << 10)
                .read_to_string(&mut text)
                .map_err(|e| e.to_string())?;
        }
        let line = text.lines().map(str::trim).find(|l| !l.is_empty());
        match (status.success(), line) {
            (true, Some(line)) => Ok(line.chars().take(200).collect()),
            (true, None) => Err("printed nothing".into()),
            (false, _) => Err(format!("exited with {status}")),
        }
    });
    let _ = std::fs::remove_dir_all(&home);
    result
}
