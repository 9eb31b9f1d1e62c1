//! The layer table of docs/architecture.md, kept: every `crate::` path in `src/` (the
//! library; the binaries under `src/bin/` and `main.rs` reach it as `gauntlet::` from
//! outside) may only point down the table, never up, and sideways only where the
//! document allows it. The table is read from the document itself, so a module moved
//! between layers is moved in one place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src reads").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's text without its inline `#[cfg(test)]` modules, whatever their name or
/// visibility (`mod tests`, `pub(crate) mod test_rows`): test code may build its
/// inputs with any layer's help, and is no arrow of the library. A module is cut by
/// its braces, so library code after it is still read; one whose braces never close
/// takes the rest of the file with it.
fn library_code(text: &str) -> String {
    let re = regex::Regex::new(r"(?m)^#\[cfg\(test\)\]\n(?:pub(?:\([a-z]+\))? )?mod [a-z_0-9]+ \{")
        .expect("regex");
    let mut kept = String::new();
    let mut rest = text;
    while let Some(m) = re.find(rest) {
        kept.push_str(&rest[..m.start()]);
        let mut depth = 1usize;
        let body = &rest[m.end()..];
        let close = body.char_indices().find_map(|(i, c)| {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i + 1)
        });
        match close {
            Some(end) => rest = &body[end..],
            None => return kept,
        }
    }
    kept.push_str(rest);
    kept
}

/// The `crate::<module>` (and, under `suites`, `crate::suites::<suite>`) paths a file
/// names outside its comments and its unit tests (a file's `#[cfg(test)]` module, at
/// its end: test code may build its inputs with any layer's help, and is no arrow of
/// the library).
fn imports(text: &str) -> Vec<(String, Option<String>)> {
    let re = regex::Regex::new(r"\bcrate::([a-z_]+)(?:::([a-z_]+))?").expect("regex");
    let library = library_code(text);
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
    let fixtures = imports(
        "#[cfg(test)]\npub(crate) mod test_rows {\n    fn f() { let _ = format!(\"{}\", 1); }\n    \
         use crate::report::x;\n}\n\npub fn after() { crate::spec::g(); }\n",
    );
    assert_eq!(fixtures, [("spec".to_owned(), Some("g".to_owned()))]);
    assert_eq!(
        found,
        [
            ("record".to_owned(), Some("merge".to_owned())),
            ("suites".to_owned(), Some("qa".to_owned()))
        ]
    );
}

/// A module's path below its crate's root (`proxy::chat::usage` is
/// `["proxy", "chat", "usage"]`): a `mod.rs` is its folder's module, and a binary's
/// `main.rs` is its crate's root.
fn module_of(rel: &Path) -> Vec<String> {
    let mut path: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if path.last().is_some_and(|last| last == "mod") || path == ["main"] {
        path.pop();
    }
    path
}

/// The paths of a `use` tree, its braces spelled out: `super::{a, b::{self, C}}` is
/// `super::a`, `super::b` and `super::b::C`.
fn use_paths(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    let join = |rest: &str| match (prefix.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}::{rest}"),
    };
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        let path = path.trim_end_matches("::*").trim_end_matches("::self");
        if !path.is_empty() && path != "self" && path != "*" {
            out.push(join(path));
        } else if path == "self" {
            out.push(prefix.to_owned());
        }
        return;
    };
    let head = join(tree[..open].trim().trim_end_matches("::"));
    let inner = tree[open + 1..].trim_end().trim_end_matches('}');
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                use_paths(&head, &inner[start..i], out);
                start = i + 1;
            }
            _ => {}
        }
    }
    use_paths(&head, &inner[start..], out);
}

/// The files of one folder of `src/` that a file's library code names, by module path:
/// through `use` (braces spelled out), `crate::`, `super::` and `self::` paths, and a
/// `mod.rs`'s own child modules named bare (`log::UsageLog`). A `mod x;` declaration
/// is no arrow: it places a file, it takes nothing from it.
fn file_imports(
    module: &[String],
    text: &str,
    modules: &BTreeMap<Vec<String>, String>,
) -> Vec<(String, String)> {
    let library = library_code(text);
    let code: String = library
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let declared =
        regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;")
            .expect("regex");
    let children: Vec<String> = declared
        .captures_iter(&code)
        .map(|c| c[1].to_owned())
        .collect();
    let mut paths = Vec::new();
    let uses = regex::Regex::new(r"\buse\s+([^;]+);").expect("regex");
    for c in uses.captures_iter(&code) {
        use_paths("", &c[1], &mut paths);
    }
    let inline =
        regex::Regex::new(r"\b(?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+").expect("regex");
    paths.extend(inline.find_iter(&code).map(|m| m.as_str().to_owned()));
    let bare = regex::Regex::new(r"(?:^|[^:\w])([a-z_][a-z0-9_]*)::").expect("regex");
    paths.extend(
        bare.captures_iter(&code)
            .map(|c| c[1].to_owned())
            .filter(|name| children.contains(name)),
    );
    let mut out = Vec::new();
    for path in paths {
        let mut segments = path.split("::").map(str::trim).peekable();
        let mut at: Vec<String> = match segments.peek().copied() {
            Some("crate") => Vec::new(),
            Some("self") => module.to_vec(),
            Some("super") => {
                let mut at = module.to_vec();
                while segments.peek() == Some(&"super") {
                    segments.next();
                    at.pop();
                }
                at
            }
            Some(name) if children.iter().any(|c| c == name) => module.to_vec(),
            _ => continue,
        };
        if matches!(segments.peek().copied(), Some("crate" | "self")) {
            segments.next();
        }
        for segment in segments {
            let mut deeper = at.clone();
            deeper.push(segment.to_owned());
            if !modules.contains_key(&deeper) {
                break;
            }
            at = deeper;
        }
        if let Some(file) = modules.get(&at) {
            if at != module {
                out.push((file.clone(), path));
            }
        }
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// The loops among `files` (path below `src/` and text): each loop's files, and the
/// arrows among them with the path that draws each.
fn cycles(files: &BTreeMap<String, String>) -> Vec<Vec<String>> {
    let modules: BTreeMap<Vec<String>, String> = files
        .keys()
        .map(|rel| (module_of(Path::new(rel)), rel.clone()))
        .collect();
    let arrows: BTreeMap<&str, Vec<(String, String)>> = files
        .iter()
        .map(|(rel, text)| {
            let module = module_of(Path::new(rel));
            (rel.as_str(), file_imports(&module, text, &modules))
        })
        .collect();
    // Which files each file reaches, by any number of arrows.
    let reach = |from: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(file) = todo.pop() {
            for (to, _) in arrows.get(file.as_str()).into_iter().flatten() {
                if seen.insert(to.clone()) {
                    todo.push(to.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&str, _> = files.keys().map(|f| (f.as_str(), reach(f))).collect();
    let mut loops: Vec<Vec<String>> = Vec::new();
    for file in files.keys() {
        if !reached[file.as_str()].contains(file) || loops.iter().any(|l| l.contains(file)) {
            continue;
        }
        // The files that reach this one and that it reaches: one loop.
        let members: Vec<&String> = files
            .keys()
            .filter(|other| {
                other == &file
                    || (reached[file.as_str()].contains(*other)
                        && reached[other.as_str()].contains(file))
            })
            .collect();
        let mut described: Vec<String> = members.iter().map(|m| (*m).clone()).collect();
        for from in &members {
            for (to, path) in &arrows[from.as_str()] {
                if members.contains(&to) {
                    described.push(format!("  {from} -> {to} ({path})"));
                }
            }
        }
        loops.push(described);
    }
    loops
}

/// Every file of `folder` but unit-test files, by path below `root`, the crate's root
/// that its `crate::` paths start from.
fn folder_files(root: &Path, folder: &Path) -> BTreeMap<String, String> {
    let mut files = Vec::new();
    sources(folder, &mut files);
    files
        .into_iter()
        .filter(|f| !f.iter().any(|p| p == "tests" || p == "tests.rs"))
        .map(|f| {
            let rel = f.strip_prefix(root).expect("under its crate's root");
            let text = std::fs::read_to_string(&f).expect("a source file");
            (rel.to_string_lossy().into_owned(), text)
        })
        .collect()
}

/// Every folder of `src/`, each with the root of its crate: the library's folders
/// (`src/<folder>/`, below `src/`), and each binary's under `src/bin/`, a crate of its
/// own whose `crate::` paths start at its `main.rs`. Read from the disk, so a new
/// folder is checked without being named here.
fn src_folders() -> Vec<(PathBuf, PathBuf)> {
    let src = root().join("src");
    let dirs = |dir: &Path| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("a folder reads")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        found.sort();
        found
    };
    let mut out = Vec::new();
    for dir in dirs(&src) {
        if dir.file_name().is_some_and(|n| n == "bin") {
            out.extend(dirs(&dir).into_iter().map(|bin| (bin.clone(), bin)));
        } else {
            out.push((src.clone(), dir));
        }
    }
    out
}

/// Shared types live in files that import none of their neighbours, so that the
/// files of a folder import each other one way only: each can be read, and moved,
/// knowing only what is below it. Each loop is described with the arrows that draw it.
fn loops_in(root: &Path, folder: &Path) -> Vec<String> {
    let files = folder_files(root, folder);
    let repo = crate::support::root();
    let shown = folder.strip_prefix(&repo).unwrap_or(folder);
    cycles(&files)
        .iter()
        .map(|l| format!("in {}/:\n{}", shown.display(), l.join("\n")))
        .collect()
}

/// Folders whose files still import each other in a loop, each with its loop's shape.
/// The check below reads them all the same, and fails once one of them has no loop left,
/// so that it is taken off this list and checked from then on.
const STILL_LOOPING: &[&str] = &[
    // Each adapter imports `Adapter` or `AdapterError` from agent/mod.rs, which names
    // every adapter.
    "agent",
    // Its modes take `AGENT_NAME` from main.rs, which starts them; the files of tools/
    // take their caps and `ToolOutcome` from tools/mod.rs.
    "bin/gauntlet-agent",
    // Each stream parser takes `AgentKind` and `each_event` from evidence/streams/mod.rs,
    // which picks the parser.
    "evidence",
    // score/scorecard/{change,rules}.rs import score/scorecard.rs, which calls them.
    "score",
    // spec/{app,corpus,script}.rs take `SpecError` or `Corpus` from spec/mod.rs; the
    // files of spec/challenge/ import their parent or each other.
    "spec",
    // The files of world/browser/ take `BrowserError` from world/browser.rs, those of
    // world/sinks/ `SinkError` from world/sinks/mod.rs.
    "world",
];

/// Every folder of `src/`, nested folders with their parent's files: a loop through a
/// subfolder is a loop of the folder it is in.
#[test]
fn the_files_of_every_folder_of_src_import_each_other_one_way() {
    let folders = src_folders();
    let name = |(root, dir): &(PathBuf, PathBuf)| {
        let base = if root == dir { "bin/" } else { "" };
        format!(
            "{base}{}",
            dir.file_name().unwrap_or_default().to_string_lossy()
        )
    };
    let names: Vec<String> = folders.iter().map(name).collect();
    for expected in [
        "proxy",
        "record",
        "harness",
        "cli",
        "report",
        "suites",
        "sys",
        "trial",
        "bin/gauntlet-seal",
    ]
    .into_iter()
    .chain(STILL_LOOPING.iter().copied())
    {
        assert!(
            names.iter().any(|n| n == expected),
            "src/{expected} not among the folders read: {names:?}"
        );
    }
    let mut read = 0;
    let mut wrong = Vec::new();
    for folder in &folders {
        let (root, dir) = folder;
        read += folder_files(root, dir).len();
        let loops = loops_in(root, dir);
        let name = name(folder);
        match (STILL_LOOPING.contains(&name.as_str()), loops.is_empty()) {
            (true, true) => wrong.push(format!(
                "src/{name}/ has no loop left: take it off STILL_LOOPING"
            )),
            (false, false) => wrong.extend(loops),
            _ => {}
        }
    }
    assert!(read > 200, "only {read} files read in the folders of src/");
    assert!(
        wrong.is_empty(),
        "files of a folder of src/ that import each other in a loop:\n{}",
        wrong.join("\n\n")
    );
}

/// The loop finder on files of its own: `use` trees, `super::`, `self::`, a parent's
/// bare child paths and a child naming its parent's own items all draw arrows.
#[test]
fn the_cycle_check_reads_every_kind_of_path() {
    let file = |rel: &str, text: &str| (rel.to_owned(), text.to_owned());
    let files: BTreeMap<String, String> = [
        file("p/mod.rs", "mod a;\nmod b;\nmod c;\npub struct Top;\nfn f() { a::g(); }\n"),
        file("p/a.rs", "use super::{b::{self, B}, Top};\n"),
        file("p/b.rs", "pub struct B;\nfn h() -> crate::p::c::C { todo!() }\n"),
        file("p/c.rs", "// use super::a;\npub struct C;\n#[cfg(test)]\nmod tests {\n    use super::super::a::*;\n}\n"),
    ]
    .into_iter()
    .collect();
    let found = cycles(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0][..2], ["p/a.rs".to_owned(), "p/mod.rs".to_owned()]);
    assert!(
        found[0].contains(&"  p/a.rs -> p/mod.rs (super::Top)".to_owned()),
        "{found:?}"
    );
    assert!(
        found[0].contains(&"  p/mod.rs -> p/a.rs (a)".to_owned()),
        "{found:?}"
    );
    // A binary's `main.rs` is its crate's root: `crate::fail` names it.
    let binary: BTreeMap<String, String> = [
        file(
            "main.rs",
            "mod run;\npub fn fail() {}\nfn main() { run::go(); }\n",
        ),
        file("run.rs", "pub fn go() { crate::fail(); }\n"),
    ]
    .into_iter()
    .collect();
    let found = cycles(&binary);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains(&"  run.rs -> main.rs (crate::fail)".to_owned()),
        "{found:?}"
    );
    let mut paths = Vec::new();
    use_paths("", "super::{b::{self, B}, c as d, e::*}", &mut paths);
    assert_eq!(paths, ["super::b", "super::b::B", "super::c", "super::e"]);
}
