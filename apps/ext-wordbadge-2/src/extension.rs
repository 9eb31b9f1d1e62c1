//! The extension, written anew on every start, and how `--extension-out` writes it —
//! with a mutant, with exactly one value of its scripts broken.
//!
//! `apps/ext-wordbadge-2/extension/` holds the manifest (written verbatim) and the two
//! scripts as templates: `@@name@@` is a name of the script, `@@DECLS@@` the place of
//! its constants. Each start draws fresh OS entropy and from it
//!
//! - a random name for every `@@name@@` (both scripts share them),
//! - the constants in a random order, each declared `const`, `let` or `var`, its value
//!   one of several equivalent values (the word separator `\s+` or `[\s]+` …; a mutant's
//!   broken value likewise one of several) spelled in a random form (`forms`),
//! - a random indentation, random comment lines between the lines (random text and
//!   decoy values, several KB in all), and a random comment at the end of every line.
//!
//! So no file of a script, no line, no token and no size is the same on two starts of
//! the app, and a mutant differs from the app only in what one value evaluates to: the
//! bytes of the extension cannot name a mutant, only its behaviour can. `manifest.json`
//! and the set of file names are the same for the app and every mutant.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::forms::{self, Value};
use crate::mutant::Mutant;
use crate::rng::{Rng, Seeds};

/// Every file of the extension: (name, template).
pub const TEMPLATES: [(&str, &str); 3] = [
    ("manifest.json", include_str!("../extension/manifest.json")),
    ("content.js", include_str!("../extension/content.js")),
    ("worker.js", include_str!("../extension/worker.js")),
];

/// A constant of the scripts whose value is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    /// What splits the visible text into words (a regular expression).
    Separator,
    /// Which elements hold decoy text (a selector list).
    Decoy,
    /// Whether the page is recounted when it changes.
    Watch,
    /// How long changes settle before a recount (ms).
    Settle,
    /// The type of the message that carries a count to the worker (random per start).
    Message,
    /// The `dataset` key of <html> the count is recorded in.
    Attribute,
    /// The badge's text for a page without words.
    ZeroText,
    /// The badge's background colour.
    Color,
}

impl Slot {
    pub const ALL: [Slot; 8] = [
        Slot::Separator,
        Slot::Decoy,
        Slot::Watch,
        Slot::Settle,
        Slot::Message,
        Slot::Attribute,
        Slot::ZeroText,
        Slot::Color,
    ];

    fn index(self) -> usize {
        Slot::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// The name of the constant in the templates (`@@SEPARATOR@@`).
    pub fn key(self) -> &'static str {
        match self {
            Slot::Separator => "SEPARATOR",
            Slot::Decoy => "DECOY",
            Slot::Watch => "WATCH",
            Slot::Settle => "SETTLE",
            Slot::Message => "MESSAGE",
            Slot::Attribute => "ATTRIBUTE",
            Slot::ZeroText => "ZERO",
            Slot::Color => "COLOR",
        }
    }

    /// The mutant that breaks this value, if any.
    pub fn broken_by(self) -> Option<Mutant> {
        match self {
            Slot::Separator => Some(Mutant::ExactCount),
            Slot::Decoy => Some(Mutant::DecoyExclusion),
            Slot::Watch => Some(Mutant::LiveUpdate),
            Slot::ZeroText => Some(Mutant::EmptyPage),
            _ => None,
        }
    }

    fn comment(self) -> &'static [&'static str] {
        match self {
            Slot::Separator => {
                &["// A word is a maximal run of non-whitespace characters of the visible text."]
            }
            Slot::Decoy => {
                &["// Text inside these elements is decoration or a trap, not content: never counted."]
            }
            Slot::Watch => &["// Recount when the page changes after it has loaded."],
            Slot::Settle => &["// Changes usually come in bursts: recount once they have settled."],
            Slot::Message => &["// The type of the message that carries a count to the service worker."],
            Slot::Attribute => &["// The data attribute of <html> that records the count the badge shows."],
            Slot::ZeroText => &[
                "// What the badge says for a page without words: a visible zero, not a blank badge",
                "// that would look as if the extension were not working.",
            ],
            Slot::Color => &["// A muted grey, so that the badge informs without drawing the eye."],
        }
    }
}

/// The constants each script declares.
fn decls_of(file: &str) -> &'static [Slot] {
    match file {
        "content.js" => &[
            Slot::Separator,
            Slot::Decoy,
            Slot::Watch,
            Slot::Settle,
            Slot::Message,
            Slot::Attribute,
        ],
        "worker.js" => &[Slot::ZeroText, Slot::Color, Slot::Message],
        _ => &[],
    }
}

/// Word separators: a maximal run of whitespace (the app), or of whitespace and hyphens
/// (the exact-count mutant: `well-known` is two words).
const SEPARATORS: [&str; 4] = [r"\s+", r"[\s]+", r"\s{1,}", r"(?:\s)+"];
const BROKEN_SEPARATORS: [&str; 4] = [r"[\s-]+", r"[-\s]+", r"[\s\-]+", r"(?:\s|-)+"];

/// Decoy selectors: `data-decoy` and `aria-hidden="true"` (the app), or `data-decoy`
/// alone (the decoy-exclusion mutant).
const SELECTORS: [&str; 5] = [
    r#"[data-decoy], [aria-hidden="true"]"#,
    r#"[aria-hidden="true"], [data-decoy]"#,
    r"[data-decoy],[aria-hidden='true']",
    r"[data-decoy] , [aria-hidden=true]",
    r#"*[data-decoy], *[aria-hidden="true"]"#,
];
const BROKEN_SELECTORS: [&str; 4] = [
    "[data-decoy]",
    "[data-decoy], [data-decoy]",
    "*[data-decoy]",
    "[data-decoy],*[data-decoy]",
];

const COLORS: [&str; 2] = ["#6b7280", "#6B7280"];

/// Every value a slot may hold, the app's or a mutant's: the decoys of conditional
/// forms and of padding comments (the same whichever of them the start holds).
fn pool(slot: Slot) -> Vec<Value> {
    let strs = |xs: &[&str]| xs.iter().map(|s| Value::Str(s.to_string())).collect();
    match slot {
        Slot::Separator => SEPARATORS
            .iter()
            .chain(&BROKEN_SEPARATORS)
            .map(|s| Value::Regex(s.to_string()))
            .collect(),
        Slot::Decoy => strs(&[&SELECTORS[..], &BROKEN_SELECTORS[..]].concat()),
        Slot::Watch => vec![Value::Bool(true), Value::Bool(false)],
        Slot::Settle => vec![Value::Num(100), Value::Num(0), Value::Num(1000)],
        Slot::Message => strs(&["word-count", "count", "words"]),
        Slot::Attribute => strs(&["wordbadge", "wordBadge", "wordcount", "badge"]),
        Slot::ZeroText => strs(&["0", ""]),
        Slot::Color => strs(&["#6b7280", "#000000", "#ffffff"]),
    }
}

/// The value `slot` holds on this start of `mutant` (none: the app), and its decoys.
fn slot_value(slot: Slot, mutant: Option<Mutant>, rng: &mut Rng) -> (Value, Vec<Value>) {
    let broken = mutant.is_some() && slot.broken_by() == mutant;
    let mut decoys = pool(slot);
    let value = match slot {
        Slot::Separator => {
            let pick = if broken {
                rng.pick(&BROKEN_SEPARATORS)
            } else {
                rng.pick(&SEPARATORS)
            };
            Value::Regex(pick.to_string())
        }
        Slot::Decoy => {
            let pick = if broken {
                rng.pick(&BROKEN_SELECTORS[..])
            } else {
                rng.pick(&SELECTORS[..])
            };
            Value::Str(pick.to_string())
        }
        Slot::Watch => Value::Bool(!broken),
        Slot::Settle => Value::Num(100),
        Slot::Message => {
            let stem = *rng.pick(&["word-count", "count", "words", "wc"]);
            let len = rng.range(4, 10);
            let v = format!("{stem}-{}", forms::alnum(rng, len));
            decoys.push(Value::Str(format!("{stem}-{}", forms::alnum(rng, len))));
            Value::Str(v)
        }
        Slot::Attribute => Value::Str("wordbadge".into()),
        Slot::ZeroText => Value::Str(if broken { "" } else { "0" }.into()),
        Slot::Color => Value::Str(rng.pick(&COLORS).to_string()),
    };
    (value, decoys)
}

#[derive(Debug, thiserror::Error)]
pub enum ExtensionError {
    #[error("cannot read fresh randomness from the OS: {0}")]
    Entropy(#[source] std::io::Error),
    /// A template names something the generator does not know: a build defect,
    /// reported rather than writing a broken extension.
    #[error("{file}: {problem}")]
    Template { file: &'static str, problem: String },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Streams: the layout's, then one per slot.
const STREAMS: usize = 1 + Slot::ALL.len();

/// The `@@…@@` keys of `template`, in order of appearance.
fn keys(file: &'static str, template: &str) -> Result<Vec<String>, ExtensionError> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("@@") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("@@") else {
            return Err(ExtensionError::Template {
                file,
                problem: "an unclosed @@".into(),
            });
        };
        let key = &after[..end];
        let valid = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            return Err(ExtensionError::Template {
                file,
                problem: format!("bad key {key:?}"),
            });
        }
        out.push(key.to_string());
        rest = &after[end + 2..];
    }
    Ok(out)
}

/// One start's extension: its files, and (for the tests) the expression each script
/// spells each of its constants with.
#[derive(Debug, Clone)]
pub struct Written {
    pub files: Vec<(&'static str, String)>,
    /// (file, constant, expression), in the order of the files' lines; read by tests.
    #[cfg_attr(not(test), allow(dead_code))]
    pub exprs: Vec<(&'static str, Slot, String)>,
}

/// What is written into comment lines: random words, and now and then a decoy value.
fn padding_line(layout: &mut Rng, len: usize) -> String {
    let mut line = String::from("//");
    while line.len() < len {
        line.push(' ');
        if layout.chance(1, 6) {
            let slot = *layout.pick(&Slot::ALL);
            let value = layout.pick(&pool(slot)).clone();
            line.push_str(&match value {
                Value::Str(s) => format!("{s:?}"),
                Value::Regex(s) => format!("/{s}/"),
                Value::Bool(b) => b.to_string(),
                Value::Num(n) => n.to_string(),
            });
        } else {
            let n = layout.range(1, 12);
            line.push_str(&forms::alnum(layout, n));
        }
    }
    line
}

/// The extension for `mutant` (none: the app), drawn from `seeds`.
pub fn render(seeds: &Seeds, mutant: Option<Mutant>) -> Result<Written, ExtensionError> {
    let mut layout = seeds.stream(0);
    let mut slot_rngs: Vec<Rng> = (0..Slot::ALL.len()).map(|i| seeds.stream(1 + i)).collect();
    let values: Vec<(Value, Vec<Value>)> = Slot::ALL
        .iter()
        .map(|s| slot_value(*s, mutant, &mut slot_rngs[s.index()]))
        .collect();

    // Names: one per key of either script, all different.
    let mut wanted = BTreeSet::new();
    for (file, template) in TEMPLATES {
        wanted.extend(keys(file, template)?.into_iter().filter(|k| k != "DECLS"));
    }
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut used = BTreeSet::new();
    for key in wanted {
        let name = loop {
            let n = forms::ident(&mut layout, 3, 14);
            if used.insert(n.clone()) {
                break n;
            }
        };
        names.insert(key, name);
    }

    let mut files = Vec::new();
    let mut exprs = Vec::new();
    for (file, template) in TEMPLATES {
        if file == "manifest.json" {
            files.push((file, template.to_string()));
            continue;
        }
        let mut decls = decls_of(file).to_vec();
        layout.shuffle(&mut decls);
        // Template lines with the names put in; the constants' lines drawn in place.
        let mut lines: Vec<(usize, String)> = Vec::new();
        for line in template.lines() {
            if line.trim() == "@@DECLS@@" {
                for slot in &decls {
                    let kw = *layout.pick(&["const", "let", "var"]);
                    let (value, decoys) = &values[slot.index()];
                    let expr = forms::expr(&mut slot_rngs[slot.index()], value, decoys);
                    for c in slot.comment() {
                        lines.push((0, c.to_string()));
                    }
                    let Some(name) = names.get(slot.key()) else {
                        return Err(ExtensionError::Template {
                            file,
                            problem: format!("no name for {}", slot.key()),
                        });
                    };
                    lines.push((0, format!("{kw} {name} = {expr};")));
                    exprs.push((file, *slot, expr));
                }
                continue;
            }
            let indent = line.len() - line.trim_start_matches(' ').len();
            let mut text = String::new();
            let mut rest = line.trim_start_matches(' ');
            while let Some(start) = rest.find("@@") {
                text.push_str(&rest[..start]);
                let after = &rest[start + 2..];
                let end = after.find("@@").unwrap_or(after.len());
                let key = &after[..end];
                let Some(name) = names.get(key) else {
                    return Err(ExtensionError::Template {
                        file,
                        problem: format!("@@{key}@@ out of place"),
                    });
                };
                text.push_str(name);
                rest = after.get(end + 2..).unwrap_or("");
            }
            text.push_str(rest);
            lines.push((indent / 2, text));
        }
        // Comment lines of random text, several KB in all, between random lines.
        let budget = layout.range(0, 6000);
        let mut spent = 0;
        while spent < budget {
            let len = layout.range(8, 120);
            let at = layout.range(0, lines.len());
            let level = layout.range(0, 3);
            let line = padding_line(&mut layout, len);
            spent += line.len();
            lines.insert(at, (level, line));
        }
        // A random indentation, and a random comment at the end of every line.
        let unit = *layout.pick(&["  ", "    ", "\t", " ", "   ", "\t "]);
        let mut out = String::new();
        for (level, text) in lines {
            out.push_str(&unit.repeat(level));
            out.push_str(&text);
            if !text.is_empty() {
                out.push_str(&" ".repeat(layout.range(1, 3)));
            }
            let len = layout.range(4, 16);
            out.push_str("/* ");
            out.push_str(&forms::alnum(&mut layout, len));
            out.push_str(" */\n");
        }
        files.push((file, out));
    }
    Ok(Written { files, exprs })
}

/// The extension's files as one start writes them for `mutant` (none: the app).
pub fn files(mutant: Option<Mutant>) -> Result<Vec<(&'static str, String)>, ExtensionError> {
    let seeds = Seeds::from_os(STREAMS).map_err(ExtensionError::Entropy)?;
    Ok(render(&seeds, mutant)?.files)
}

/// Write the extension into `dir` (created if missing; its files overwritten).
pub fn write(dir: &Path, mutant: Option<Mutant>) -> Result<(), ExtensionError> {
    let files = files(mutant)?;
    std::fs::create_dir_all(dir).map_err(|source| ExtensionError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ExtensionError::Write { path, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::tests::{evaluate, node};

    fn seeds(n: u64) -> Seeds {
        let mut rng = Rng::new([n, n ^ 0xdead_beef, 7, 9]);
        Seeds::from_seeds(
            (0..STREAMS)
                .map(|_| {
                    [
                        rng.next_u64(),
                        rng.next_u64(),
                        rng.next_u64(),
                        rng.next_u64(),
                    ]
                })
                .collect(),
        )
    }

    fn rendered(seeds: &Seeds, mutant: Option<Mutant>) -> Written {
        render(seeds, mutant).unwrap_or_else(|e| panic!("{e}"))
    }

    fn file<'a>(w: &'a Written, name: &str) -> &'a str {
        w.files
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("no {name}"))
    }

    /// One start's files, by name.
    type Files = Vec<(&'static str, String)>;

    fn os_start(mutant: Option<Mutant>) -> Files {
        files(mutant).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_templates_name_only_known_things() {
        for (file, template) in TEMPLATES {
            let keys = keys(file, template).unwrap_or_else(|e| panic!("{e}"));
            if file == "manifest.json" {
                assert!(keys.is_empty());
                continue;
            }
            assert_eq!(keys.iter().filter(|k| *k == "DECLS").count(), 1, "{file}");
            for slot in decls_of(file) {
                assert!(keys.iter().any(|k| k == slot.key()), "{file}: {slot:?}");
            }
        }
        assert!(keys("x", "a @@b").is_err());
        assert!(keys("x", "a @@b c@@").is_err());
    }

    #[test]
    fn the_manifest_is_json_and_names_the_scripts() {
        let manifest: serde_json::Value = match serde_json::from_str(TEMPLATES[0].1) {
            Ok(v) => v,
            Err(e) => panic!("manifest.json: {e}"),
        };
        assert_eq!(manifest["manifest_version"], 3);
        assert_eq!(manifest["background"]["service_worker"], "worker.js");
        assert_eq!(manifest["content_scripts"][0]["js"][0], "content.js");
    }

    /// 50 starts of the app: every script differs from every other start's, and so
    /// does every line of it; the scripts' sizes spread; the manifest and the file
    /// names never change. Each mutant's starts are as different from each other and
    /// from the app's.
    #[test]
    fn no_two_starts_write_the_same_scripts() {
        let mut starts: Vec<(String, Files)> = (0..50)
            .map(|i| (format!("app #{i}"), os_start(None)))
            .collect();
        for m in Mutant::ALL {
            for i in 0..5 {
                starts.push((format!("{} #{i}", m.id()), os_start(Some(m))));
            }
        }
        let names: Vec<&str> = TEMPLATES.iter().map(|(n, _)| *n).collect();
        for (label, files) in &starts {
            assert_eq!(
                files.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
                names,
                "{label}"
            );
            assert_eq!(files[0].1, TEMPLATES[0].1, "{label}: manifest.json");
        }
        for script in ["content.js", "worker.js"] {
            let texts: Vec<(&String, &str)> = starts
                .iter()
                .map(|(label, files)| {
                    let text = files
                        .iter()
                        .find(|(n, _)| *n == script)
                        .map(|(_, t)| t.as_str())
                        .unwrap_or_default();
                    (label, text)
                })
                .collect();
            let lines: Vec<BTreeSet<&str>> =
                texts.iter().map(|(_, t)| t.lines().collect()).collect();
            for i in 0..texts.len() {
                for j in i + 1..texts.len() {
                    assert_ne!(
                        texts[i].1, texts[j].1,
                        "{script}: {} and {}",
                        texts[i].0, texts[j].0
                    );
                    let shared: Vec<&&str> = lines[i].intersection(&lines[j]).collect();
                    assert!(
                        shared.is_empty(),
                        "{script}: {} and {} share the lines {shared:?}",
                        texts[i].0,
                        texts[j].0
                    );
                }
            }
            let sizes: BTreeSet<usize> = texts[..50].iter().map(|(_, t)| t.len()).collect();
            assert!(
                sizes.len() >= 45,
                "{script}: only {} sizes in 50 starts",
                sizes.len()
            );
        }
    }

    /// From the same seeds, a mutant's extension is the app's but for the expression of
    /// the one constant it breaks.
    #[test]
    fn a_mutant_differs_from_the_app_in_one_expression_alone() {
        for n in 0..40 {
            let seeds = seeds(n);
            let app = rendered(&seeds, None);
            for m in Mutant::ALL {
                let mutant = rendered(&seeds, Some(m));
                let mut changed = Vec::new();
                for ((file, slot, a), (_, _, b)) in app.exprs.iter().zip(&mutant.exprs) {
                    if a != b {
                        changed.push((*file, *slot, a.clone(), b.clone()));
                    }
                }
                let slot = Slot::ALL
                    .into_iter()
                    .find(|s| s.broken_by() == Some(m))
                    .unwrap_or_else(|| panic!("{m:?}: no slot"));
                let file = if slot == Slot::ZeroText {
                    "worker.js"
                } else {
                    "content.js"
                };
                assert_eq!(
                    changed.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(),
                    vec![(file, slot)],
                    "{m:?} seeds {n}"
                );
                let (a, b) = (&changed[0].2, &changed[0].3);
                for (name, text) in &app.files {
                    let other = file_of(&mutant, name);
                    if *name != file {
                        assert_eq!(text, other, "{m:?} {name}");
                        continue;
                    }
                    let diff: Vec<(&str, &str)> = text
                        .lines()
                        .zip(other.lines())
                        .filter(|(x, y)| x != y)
                        .collect();
                    assert_eq!(text.lines().count(), other.lines().count());
                    assert_eq!(diff.len(), 1, "{m:?} {name}: {diff:?}");
                    let (x, y) = diff[0];
                    assert!(x.contains(&format!(" = {a}; ")), "{x}");
                    assert_eq!(x.replacen(&format!(" = {a}; "), &format!(" = {b}; "), 1), y);
                }
            }
        }
    }

    fn file_of<'a>(w: &'a Written, name: &str) -> &'a str {
        file(w, name)
    }

    /// Every spelling of every value a start can draw, evaluated by node: the app's
    /// values are the app's, each mutant's broken value is its own, whatever the form.
    #[test]
    fn every_drawn_constant_evaluates_to_its_value() {
        let mut cases: Vec<(Option<Mutant>, Slot, String)> = Vec::new();
        for n in 0..60 {
            let seeds = seeds(1000 + n);
            for mutant in std::iter::once(None).chain(Mutant::ALL.map(Some)) {
                for (_, slot, e) in rendered(&seeds, mutant).exprs {
                    cases.push((mutant, slot, e));
                }
            }
        }
        let exprs: Vec<String> = cases.iter().map(|c| c.2.clone()).collect();
        let Some(got) = evaluate(&exprs) else {
            return;
        };
        let mut wrong = Vec::new();
        for ((mutant, slot, e), g) in cases.iter().zip(&got) {
            let broken = mutant.is_some() && slot.broken_by() == *mutant;
            let ok = match slot {
                Slot::Separator => {
                    let set: &[&str] = if broken {
                        &BROKEN_SEPARATORS
                    } else {
                        &SEPARATORS
                    };
                    g["flags"] == "" && set.iter().any(|s| g["re"] == *s)
                }
                Slot::Decoy => {
                    let set: &[&str] = if broken {
                        &BROKEN_SELECTORS
                    } else {
                        &SELECTORS
                    };
                    set.iter().any(|s| g["s"] == *s)
                }
                Slot::Watch => g["b"] == !broken,
                Slot::Settle => g["n"] == 100,
                Slot::Message => g["s"].as_str().is_some_and(|s| s.contains('-')),
                Slot::Attribute => g["s"] == "wordbadge",
                Slot::ZeroText => g["s"] == if broken { "" } else { "0" },
                Slot::Color => g["s"].as_str().map(str::to_lowercase).as_deref() == Some("#6b7280"),
            };
            if !ok {
                wrong.push(format!("{mutant:?} {slot:?}: `{e}` gives {g}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// What each whole start does, run by node with the browser's and Chrome's APIs
    /// stubbed (`behaviour.js`): the app always the same; a mutant the same but for its
    /// own capability.
    #[test]
    fn a_mutant_behaves_as_the_app_but_for_its_capability() {
        let mut sets = Vec::new();
        let mut labels = Vec::new();
        for n in 0..30 {
            // Half from fixed seeds (a mutant beside the app of the same seeds), half
            // fresh.
            let (app, mutants): (Files, Vec<Files>) = if n % 2 == 0 {
                let s = seeds(5000 + n);
                (
                    rendered(&s, None).files,
                    Mutant::ALL
                        .iter()
                        .map(|m| rendered(&s, Some(*m)).files)
                        .collect(),
                )
            } else {
                (
                    os_start(None),
                    Mutant::ALL.iter().map(|m| os_start(Some(*m))).collect(),
                )
            };
            for (label, files) in
                std::iter::once(("app", app)).chain(Mutant::ALL.iter().map(|m| m.id()).zip(mutants))
            {
                let get = |name: &str| {
                    files
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, t)| t.clone())
                        .unwrap_or_default()
                };
                sets.push(
                    serde_json::json!({"content": get("content.js"), "worker": get("worker.js")}),
                );
                labels.push(format!("{label} #{n}"));
            }
        }
        let input = serde_json::to_string(&sets).unwrap_or_default();
        let Some(out) = node(BEHAVIOUR, &input) else {
            return;
        };
        let got: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_else(|e| {
            let start: String = out.chars().take(400).collect();
            panic!("{e}: {start}…")
        });
        assert_eq!(got.len(), labels.len());
        let app = app_behaviour();
        let mut wrong = Vec::new();
        for (label, g) in labels.iter().zip(&got) {
            let mutant = Mutant::ALL.into_iter().find(|m| label.starts_with(m.id()));
            let mut want = app.clone();
            if let Some(m) = mutant {
                let (field, value) = broken_behaviour(m);
                want[field] = value;
            }
            if *g != want {
                wrong.push(format!("{label}: {g}\n  expected {want}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// The stubbed run of `behaviour.js`.
    const BEHAVIOUR: &str = include_str!("behaviour.js");

    /// What the app does under `behaviour.js`.
    fn app_behaviour() -> serde_json::Value {
        serde_json::json!({
            "words": 7,
            "decoys": ["[aria-hidden=true]", "[data-decoy]"],
            "watch": 100,
            "recorded": ["wordbadge"],
            "zero": "0",
            "badges": [[7, "5"]],
            "color": "#6b7280",
            "foreign": false,
        })
    }

    /// The one field of the behaviour a mutant changes, and its value there.
    fn broken_behaviour(m: Mutant) -> (&'static str, serde_json::Value) {
        match m {
            Mutant::ExactCount => ("words", serde_json::json!(8)),
            Mutant::DecoyExclusion => ("decoys", serde_json::json!(["[data-decoy]"])),
            Mutant::LiveUpdate => ("watch", serde_json::Value::Null),
            Mutant::EmptyPage => ("zero", serde_json::json!("")),
        }
    }

    #[test]
    fn the_os_seeds_every_start() {
        let a = os_start(None);
        let b = os_start(None);
        assert_ne!(a, b);
    }
}
