//! The layer table of docs/architecture.md, kept: every `crate::` path in `src/` (the
//! library; the binaries under `src/bin/` and `main.rs` reach it as `gauntlet::` from
//! outside) may only point down the table, never up, and sideways only where the
//! document allows it. The table is read from the document itself, so a module moved
//! between layers is moved in one place.

use std::collections::BTreeMap;
use std::path::Path;

use crate::support::root;

/// The layers, top first: each module (a folder or a file of `src/`) with the index of
/// its row.
fn layers(doc: &str) -> BTreeMap<String, usize> {
    let section = doc
        .split("## The folders are layers")
        .nth(1)
        .expect("docs/architecture.md has its layer table");
    let mut out = BTreeMap::new();
    let rows = section
        .lines()
        .skip_while(|l| !l.starts_with("| layer |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    for (i, row) in rows.enumerate() {
        let folders = row.split('|').nth(2).expect("a folder column");
        for name in folders.split('`').skip(1).step_by(2) {
            let module = name
                .split(['/', '{'])
                .next()
                .unwrap_or(name)
                .trim_end_matches(".rs");
            out.insert(module.to_owned(), i);
        }
    }
    out
}

/// Imports between modules of one layer that the document allows, with the sentence
/// that allows them there.
const SIDEWAYS: &[(&str, &str)] = &[
    ("agent", "world"),
    ("flowtest", "world"),
    ("redteam", "harness"),
    ("config", "spec"),
];

/// The row whose modules import nothing at all.
const LEAVES: &str = "leaves";

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src reads").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `crate::<module>` (and, under `suites`, `crate::suites::<suite>`) paths a file
/// names outside its comments and its unit tests (a file's `#[cfg(test)]` module, at
/// its end: test code may build its inputs with any layer's help, and is no arrow of
/// the library).
fn imports(text: &str) -> Vec<(String, Option<String>)> {
    let re = regex::Regex::new(r"\bcrate::([a-z_]+)(?:::([a-z_]+))?").expect("regex");
    let library = text
        .split("\n#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or(text);
    library
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .flat_map(|l| {
            re.captures_iter(l)
                .map(|c| (c[1].to_owned(), c.get(2).map(|m| m.as_str().to_owned())))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_import_in_src_points_down_the_layer_table() {
    let root = root();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("the doc");
    let table = layers(&doc);
    let leaves: Vec<&str> = {
        let section = doc.split("## The folders are layers").nth(1).unwrap_or("");
        section
            .lines()
            .find(|l| l.starts_with(&format!("| {LEAVES} |")))
            .expect("a row of leaves")
            .split('|')
            .nth(2)
            .unwrap_or("")
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|n| n.trim_end_matches(".rs"))
            .collect()
    };
    let src = root.join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut wrong = Vec::new();
    let mut seen = 0;
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src");
        let mut parts = rel.iter().map(|p| p.to_string_lossy().into_owned());
        let first = parts.next().unwrap_or_default();
        // The library's root and the binaries reach the library from outside.
        if first == "bin" || first == "lib.rs" || first == "main.rs" {
            continue;
        }
        let module = first.trim_end_matches(".rs").to_owned();
        let suite = (module == "suites")
            .then(|| parts.next())
            .flatten()
            .map(|p| p.trim_end_matches(".rs").to_owned())
            .filter(|p| p != "mod");
        let Some(&from) = table.get(&module) else {
            wrong.push(format!(
                "{}: module `{module}` is in no row of the layer table",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("a source file");
        for (to, sub) in imports(&text) {
            seen += 1;
            if to == module {
                // Within suites, one suite never reaches into another.
                if let (Some(a), Some(b)) = (&suite, &sub) {
                    let suites = ["qa", "challenge", "scorecard"];
                    if a != b && suites.contains(&a.as_str()) && suites.contains(&b.as_str()) {
                        wrong.push(format!(
                            "{}: suite `{a}` imports suite `{b}` (crate::suites::{b})",
                            rel.display()
                        ));
                    }
                }
                continue;
            }
            let Some(&target) = table.get(&to) else {
                wrong.push(format!(
                    "{}: `crate::{to}` is in no row of the layer table",
                    rel.display()
                ));
                continue;
            };
            if leaves.contains(&to.as_str()) && !leaves.contains(&module.as_str()) {
                // Leaves are for every layer.
                continue;
            }
            if leaves.contains(&module.as_str()) {
                wrong.push(format!(
                    "{}: the leaf `{module}` imports `crate::{to}`",
                    rel.display()
                ));
            } else if target < from {
                wrong.push(format!(
                    "{}: `{module}` imports `crate::{to}`, a layer above it",
                    rel.display()
                ));
            } else if target == from && !SIDEWAYS.contains(&(module.as_str(), to.as_str())) {
                wrong.push(format!(
                    "{}: `{module}` imports `crate::{to}`, sideways in its layer",
                    rel.display()
                ));
            }
        }
    }
    assert!(
        seen > 500,
        "only {seen} imports read: is the pattern right?"
    );
    assert!(
        wrong.is_empty(),
        "arrows that do not point down docs/architecture.md's table:\n{}",
        wrong.join("\n")
    );
}

/// The reader of the table and of imports, on a table and a file of its own: a test
/// that can fail.
#[test]
fn the_layer_check_reads_rows_and_imports_as_written() {
    let doc = "## The folders are layers\n\n| layer | folder | job |\n| --- | --- | --- |\n\
| entry | `main.rs`, `harness.rs` | x |\n| suites | `suites/{qa,challenge}` | x |\n\
| leaves | `hash.rs` | x |\n| records | `record/` | x |\n\nThree rules\n";
    let t = layers(doc);
    assert_eq!(t["harness"], 0);
    assert_eq!(t["suites"], 1);
    assert_eq!(t["hash"], 2);
    assert_eq!(t["record"], 3);
    assert!(!t.contains_key("Three"));
    let found = imports(
        "use crate::record::merge;\n// crate::harness in a comment\nlet x = crate::suites::qa::f();\n\
         \n#[cfg(test)]\nmod tests {\n    use crate::report::x;\n}\n",
    );
    assert_eq!(
        found,
        [
            ("record".to_owned(), Some("merge".to_owned())),
            ("suites".to_owned(), Some("qa".to_owned()))
        ]
    );
}
