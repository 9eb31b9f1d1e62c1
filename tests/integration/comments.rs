//! Comments say why, not how fast: a comment in `src/` keeps the reason or the
//! invariant, and a figure someone measured (a duration in ms, µs or ns, a ratio such
//! as 0.39×, a percentage) lives in the docs or in a bench's output, where it carries
//! its conditions and is re-measured (docs/results.md, docs/sealing.md,
//! docs/test-flows.md, docs/challenges.md, README.md's proxy figures).
//!
//! What is not a measurement: a bound or a period the code keeps ("at most 5 ms",
//! "every 200 µs"), anything in backticks (a formula, a format), the 95% of an interval,
//! and a unit test's description of its own fixture (`tests.rs`, `tests/`). Seconds are
//! not looked for: they are mostly deadlines.

use std::path::Path;

use crate::support::root;

/// Words that make the figure after them a bound the code keeps, not a measurement.
const BOUND_WORDS: &[&str] = &[
    "at most ",
    "at least ",
    "up to ",
    "no more than ",
    "every ",
    "within ",
];

/// Bounds said some other way, by file and the words around them.
const ALLOWED: &[(&str, &str)] = &[
    // KILL_ROUNDS' round: 25 looks, 200 µs apart.
    ("src/bin/gauntlet-reap/main.rs", "at most one round (5 ms)"),
    // The sandbox's disk floor: a fraction of the filesystem, a bound.
    (
        "src/bin/gauntlet-seal/limits.rs",
        "The floor is 5% of the filesystem",
    ),
];

/// The comment part of `line` (`//`, `///`, `//!` at its start), without its
/// backticked spans.
fn comment_text(line: &str) -> Option<String> {
    let text = line.trim_start().strip_prefix("//")?;
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    Some(out)
}

/// Where in `text` a measured figure starts: a number followed by ms, µs, us or ns, or
/// directly by × or x (a ratio) or %.
fn figures(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_number =
            bytes[i].is_ascii_digit() && !text[..i].chars().next_back().is_some_and(is_word);
        if !starts_number {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        let number = text[start..i].trim_end_matches('.');
        let rest = &text[start + number.len()..];
        let unit = rest.strip_prefix(' ').unwrap_or(rest);
        let ends = |s: &str, u: &str| {
            s.strip_prefix(u)
                .is_some_and(|after| !after.starts_with(is_word))
        };
        // A ratio's × or x is written against its number; `4 × n` is a product.
        let measured = ["ms", "µs", "us", "ns"].iter().any(|u| ends(unit, u))
            || ["×", "x", "%"].iter().any(|u| ends(rest, u));
        if measured && number != "95" {
            found.push((start, text[start..].chars().take(24).collect()));
        }
    }
    found
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a directory of src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn comments_in_src_carry_no_measured_figures() {
    let root = root();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    let mut offending = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.ends_with("/tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let source = std::fs::read_to_string(file).expect("read a source file");
        for (n, line) in source.lines().enumerate() {
            let Some(text) = comment_text(line) else {
                continue;
            };
            if ALLOWED
                .iter()
                .any(|(path, words)| rel == *path && line.contains(words))
            {
                continue;
            }
            for (at, figure) in figures(&text) {
                let before = text[..at].to_lowercase();
                if BOUND_WORDS.iter().any(|w| before.ends_with(w)) {
                    continue;
                }
                offending.push(format!("{rel}:{}: {figure:?} in {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "comments narrate measurements; keep the reason in the comment and move the \
         figure to docs/ or a bench's output:\n{}",
        offending.join("\n")
    );
}

#[test]
fn the_pattern_finds_figures_and_passes_bounds() {
    let found = |s: &str| figures(&comment_text(s).unwrap()).len();
    assert_eq!(found("/// from +0.041 ms to +0.019 ms"), 2);
    assert_eq!(found("//! from 0.39x the relay's to 0.53×, 40 µs later"), 3);
    assert_eq!(found("// 3–7% more calls"), 1);
    assert_eq!(found("/// `[min / 2 − 5 ms, max × 2 + 5 ms]`"), 0);
    assert_eq!(found("/// its 95% interval, 0x1f, 64 KiB, 30 s"), 0);
    assert_eq!(found("/// v2 ms3 x86, 4 × every weight"), 0);
}
