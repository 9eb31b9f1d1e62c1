//! `challenge.yaml`: the data the generic harness needs to run one challenge.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::spec::SpecError;

/// The manifest version this harness writes; it reads every version from 1 up to it.
/// Version 2 names the requests that set up the app `world.setup`; a version-1
/// manifest's `world.seed` is read as the same field, so old challenges still load.
pub const MANIFEST_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub version: u32,
    pub id: String,
    pub title: String,
    /// The gauntlet app the challenge acts on (a directory under `apps/`).
    pub app: String,
    /// The challenge prompt, relative to the challenge directory.
    pub prompt: String,
    /// Copied into every trial workspace.
    pub workspace_template: String,
    /// Overrides the harness's hard ceiling for this challenge's trials.
    #[serde(default)]
    pub timeout_secs: Option<f64>,
    pub report: ReportContract,
    #[serde(default)]
    pub world: WorldSpec,
    /// The work the agent must be seen doing, beside the world it must leave.
    #[serde(default)]
    pub work: WorkSpec,
    /// Scripted flows by profile (or `default`), relative to the challenge directory.
    #[serde(default, rename = "flows")]
    pub scripts: BTreeMap<String, String>,
}

/// What the agent's YAML self-report must hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportContract {
    pub required_fields: Vec<String>,
    /// Field → the value it must equal for the task to count as a success.
    #[serde(default)]
    pub success_assertions: BTreeMap<String, Value>,
}

/// The app's state: what the harness puts there first, and checks after the agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorldSpec {
    /// HTTP requests the harness sends the app before the agent starts: its setup.
    #[serde(default, alias = "seed")]
    pub setup: Vec<SetupRequest>,
    #[serde(default)]
    pub assertions: Vec<WorldAssertion>,
}

/// Work that only counts when gauntlet saw it done: a self-report or a file the agent
/// wrote can say anything, so a challenge names what the kernel must see.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkSpec {
    /// Programs the agent's sandbox must be seen executing.
    #[serde(default)]
    pub runs: Vec<RequiredRun>,
    /// Workspace files that must hold exactly what a required run of the app printed.
    #[serde(default)]
    pub outputs: Vec<RequiredOutput>,
    /// Requests the app must have been sent, and from what kind of client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<super::requests::RequiredRequest>,
}

/// A file the app must have written, through the agent: its bytes are the standard
/// output of one of the app's runs that met a required run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequiredOutput {
    pub id: String,
    /// Workspace-relative.
    pub file: String,
    /// The required run (of `app`) whose output it is.
    pub run: String,
}

/// The most bytes of a required output read (the relay passes on no more of a run's
/// output).
pub const MAX_OUTPUT_BYTES: u64 = 16 << 20;

/// A program that must have been executed, with arguments matching patterns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequiredRun {
    pub id: String,
    /// [`APP_PROGRAM`] (the app's program as the trial hands it over, `$APP_BIN`),
    /// [`BROWSER_PROGRAM`] (the machine's browser) or an absolute path.
    pub program: String,
    /// Regular expressions, each of which must match one whole argument after `argv[0]`
    /// of the same exec.
    #[serde(default)]
    pub args: Vec<String>,
    /// A file of the workspace template (relative to it) the run must have computed
    /// on, as the harness knows its bytes (an agent that edits its copy first reads
    /// other data): on standard input, with no arguments but the required ones, or as
    /// its arguments besides the required ones (the file's whitespace-separated words,
    /// in order). Only for [`APP_PROGRAM`], whose runs the relay logs with their input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
}

/// A required run's input as the harness read it from the workspace template when the
/// challenge was loaded, and keeps in the trial's record (a rescore needs no template).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInput {
    /// The required run's id.
    pub run: String,
    /// Relative to the workspace template (and so to the workspace).
    pub file: String,
    pub bytes: u64,
    pub sha256: String,
    /// The file's whitespace-separated words, in order, as they would be passed as
    /// arguments; `None` when they cannot be passed whole where the relay's log keeps
    /// them (more than [`MAX_INPUT_WORDS`] words, one longer than
    /// [`MAX_INPUT_WORD_BYTES`], or not UTF-8): then only standard input carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<Vec<String>>,
}

/// The most arguments of a run the relay's log keeps whole (`evidence::observed::MAX_ARGS`).
pub const MAX_INPUT_WORDS: usize = 64;
/// The longest argument the relay's log keeps whole (`evidence::observed::MAX_ARG_BYTES`).
pub const MAX_INPUT_WORD_BYTES: usize = 1024;

impl RunInput {
    /// The input of required run `run`, the template's file `file` holding `bytes`.
    pub fn of(run: &str, file: &str, bytes: &[u8]) -> RunInput {
        let words = std::str::from_utf8(bytes).ok().and_then(|text| {
            let words: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
            (words.len() <= MAX_INPUT_WORDS
                && words.iter().all(|w| w.len() <= MAX_INPUT_WORD_BYTES))
            .then_some(words)
        });
        RunInput {
            run: run.to_owned(),
            file: file.to_owned(),
            bytes: bytes.len() as u64,
            sha256: crate::hash::sha256(bytes),
            words,
        }
    }
}

/// The word for "the app's own program" in [`RequiredRun::program`].
pub const APP_PROGRAM: &str = "app";

/// The word for "the machine's browser" (the Chromium gauntlet drives, or its headless
/// shell) in [`RequiredRun::program`].
pub const BROWSER_PROGRAM: &str = "browser";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetupRequest {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub body: Option<Value>,
}

/// One check of the world after the trial, observed by the harness. (No
/// `deny_unknown_fields` here: serde does not combine it with `flatten`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorldAssertion {
    pub id: String,
    #[serde(flatten)]
    pub source: WorldSource,
    /// A JSON pointer into the observed JSON document; the whole document when absent.
    #[serde(default)]
    pub pointer: Option<String>,
    /// The observed value must equal this.
    #[serde(default)]
    pub equals: Option<Value>,
    /// The observed value must be an array of this many items (instead of `equals`).
    #[serde(default)]
    pub count: Option<u64>,
    /// Each item of an observed array of objects is cut down to these keys before it
    /// is compared (`equals` only): what the app adds of its own, such as ids, is not
    /// the agent's to match.
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// An observed array equals `equals` in any order (`equals` only): the order the
    /// agent did things in is its own.
    #[serde(default)]
    pub unordered: bool,
    /// The self-report field that claims the same value; a difference is a discrepancy.
    #[serde(default)]
    pub report_field: Option<String>,
}

/// Where an observation comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorldSource {
    /// `GET $APP_URL<path>`, parsed as JSON.
    HttpGet(String),
    /// `GET $APP_URL<path>` with `{n}` = 1, 2, … until the app answers anything but
    /// success (at most [`MAX_EACH`] requests): the JSON answers, as an array. How
    /// many things the app itself holds, where it has no list of them.
    HttpGetEach(String),
    /// A JSON file in the trial workspace (workspace-relative).
    File(String),
}

/// The most requests one `http_get_each` observation sends.
pub const MAX_EACH: u64 = 1000;

impl Manifest {
    /// Parse and validate `file`'s bytes.
    pub fn parse(file: &Path, bytes: &[u8]) -> Result<Manifest, SpecError> {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| SpecError::invalid(file, "(file)", format!("not UTF-8: {e}")))?;
        let m: Manifest = yaml_serde::from_str(text)
            .map_err(|e| SpecError::invalid(file, "(yaml)", e.to_string()))?;
        m.validate(file)?;
        Ok(m)
    }

    fn validate(&self, file: &Path) -> Result<(), SpecError> {
        if !(1..=MANIFEST_VERSION).contains(&self.version) {
            return Err(SpecError::invalid(
                file,
                "version",
                format!(
                    "{} is not a manifest version this harness reads (1 to {MANIFEST_VERSION})",
                    self.version
                ),
            ));
        }
        crate::spec::check_id(file, "id", &self.id)?;
        crate::spec::check_id(file, "app", &self.app)?;
        for (field, p) in [
            ("prompt", &self.prompt),
            ("workspace_template", &self.workspace_template),
        ] {
            relative(file, field, p)?;
        }
        for (k, p) in &self.scripts {
            relative(file, &format!("flows.{k}"), p)?;
        }
        if let Some(t) = self.timeout_secs {
            if !(t.is_finite() && t > 0.0) {
                return Err(SpecError::invalid(
                    file,
                    "timeout_secs",
                    "must be a positive number of seconds",
                ));
            }
        }
        if self.report.required_fields.is_empty() {
            return Err(SpecError::invalid(
                file,
                "report.required_fields",
                "must name at least one field",
            ));
        }
        for k in self.report.success_assertions.keys() {
            if !self.report.required_fields.contains(k) {
                return Err(SpecError::invalid(
                    file,
                    format!("report.success_assertions.{k}"),
                    "asserts a field that is not in report.required_fields",
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, a) in self.world.assertions.iter().enumerate() {
            let field = format!("world.assertions[{i}]");
            crate::spec::check_id(file, &format!("{field}.id"), &a.id)?;
            if !seen.insert(a.id.clone()) {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.id"),
                    format!("`{}` is used twice", a.id),
                ));
            }
            match &a.source {
                WorldSource::HttpGet(p) if !p.starts_with('/') => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.http_get"),
                        "must be a path starting with `/`",
                    ))
                }
                WorldSource::HttpGetEach(p) if !p.starts_with('/') || !p.contains("{n}") => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.http_get_each"),
                        "must be a path starting with `/` that holds `{n}`",
                    ))
                }
                WorldSource::File(p) => relative(file, &format!("{field}.file"), p)?,
                _ => {}
            }
            match (&a.equals, a.count) {
                (None, None) => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.equals"),
                        "an assertion needs the value it expects (`equals`, or `count`)",
                    ))
                }
                (Some(_), Some(_)) => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.count"),
                        "an assertion expects `equals` or `count`, not both",
                    ))
                }
                (None, Some(_)) if a.unordered || a.fields.is_some() => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.count"),
                        "`fields` and `unordered` shape what `equals` compares; a count has nothing to compare",
                    ))
                }
                _ => {}
            }
            if let Some(p) = &a.pointer {
                if !p.starts_with('/') {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.pointer"),
                        "a JSON pointer starts with `/`",
                    ));
                }
            }
            if let Some(f) = &a.report_field {
                if !self.report.required_fields.contains(f) {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.report_field"),
                        format!("`{f}` is not in report.required_fields"),
                    ));
                }
            }
        }
        for (i, r) in self.work.runs.iter().enumerate() {
            let field = format!("work.runs[{i}]");
            crate::spec::check_id(file, &format!("{field}.id"), &r.id)?;
            if self.work.runs[..i].iter().any(|o| o.id == r.id) {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.id"),
                    format!("`{}` is used twice", r.id),
                ));
            }
            if r.program != APP_PROGRAM
                && r.program != BROWSER_PROGRAM
                && !r.program.starts_with('/')
            {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.program"),
                    format!(
                        "`{}` is not `{APP_PROGRAM}`, `{BROWSER_PROGRAM}` or an absolute path",
                        r.program
                    ),
                ));
            }
            for (j, a) in r.args.iter().enumerate() {
                if let Err(e) = regex::Regex::new(a) {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.args[{j}]"),
                        format!("not a regular expression: {e}"),
                    ));
                }
            }
            if let Some(input) = &r.input {
                relative(file, &format!("{field}.input"), input)?;
                if r.program != APP_PROGRAM {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.input"),
                        format!(
                            "`{input}`: only a run of `{APP_PROGRAM}` can be held to its input (the relay logs what the app's runs read); `{}` is not the app",
                            r.program
                        ),
                    ));
                }
            }
        }
        for (i, o) in self.work.outputs.iter().enumerate() {
            let field = format!("work.outputs[{i}]");
            crate::spec::check_id(file, &format!("{field}.id"), &o.id)?;
            if self.work.outputs[..i].iter().any(|e| e.id == o.id) {
                return Err(SpecError::invalid(
                    file,
                    format!("{field}.id"),
                    format!("`{}` is used twice", o.id),
                ));
            }
            relative(file, &format!("{field}.file"), &o.file)?;
            match self.work.runs.iter().find(|r| r.id == o.run) {
                Some(r) if r.program == APP_PROGRAM => {}
                Some(_) => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.run"),
                        format!("`{}` is not a run of `{APP_PROGRAM}`: only the app's runs are relayed and seen printing", o.run),
                    ))
                }
                None => {
                    return Err(SpecError::invalid(
                        file,
                        format!("{field}.run"),
                        format!("`{}` is not in work.runs", o.run),
                    ))
                }
            }
        }
        super::requests::validate(file, &self.work.requests)?;
        // A success that rests only on what the agent wrote (its report, files in its
        // workspace) is a success any agent can claim: something must be observed.
        let observed_work = !self.work.runs.is_empty()
            || self.world.assertions.iter().any(|a| {
                matches!(
                    a.source,
                    WorldSource::HttpGet(_) | WorldSource::HttpGetEach(_)
                )
            });
        if !observed_work {
            return Err(SpecError::invalid(
                file,
                "work.runs",
                "the challenge requires no observed work: name a run of the app (`work.runs`) or an effect in the app's world (an `http_get` or `http_get_each` assertion), since files the agent wrote and its self-report prove nothing",
            ));
        }
        for (i, s) in self.world.setup.iter().enumerate() {
            if !s.path.starts_with('/') {
                return Err(SpecError::invalid(
                    file,
                    format!("world.setup[{i}].path"),
                    "must be a path starting with `/`",
                ));
            }
            if !["GET", "POST", "PUT", "DELETE"].contains(&s.method.as_str()) {
                return Err(SpecError::invalid(
                    file,
                    format!("world.setup[{i}].method"),
                    format!("`{}` is not GET, POST, PUT or DELETE", s.method),
                ));
            }
        }
        Ok(())
    }
}

/// A path inside the challenge directory: relative, no `..`.
pub(crate) fn relative(file: &Path, field: &str, p: &str) -> Result<(), SpecError> {
    let path = Path::new(p);
    if p.is_empty()
        || path.is_absolute()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(SpecError::invalid(
            file,
            field,
            format!("`{p}` is not a relative path inside the directory"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "version: 1\nid: demo\ntitle: Demo\napp: api-ledger\nprompt: challenge-prompt.md\nworkspace_template: workspace_template\nreport:\n  required_fields: [balance]\n  success_assertions:\n    balance: 5\nworld:\n  assertions:\n    - id: bal\n      http_get: /accounts/a/balance\n      pointer: /balance\n      equals: 5\n      report_field: balance\n";

    fn parse(s: &str) -> Result<Manifest, SpecError> {
        Manifest::parse(Path::new("c/challenge.yaml"), s.as_bytes())
    }

    #[test]
    fn a_good_manifest_loads() {
        let m = parse(GOOD).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            m.world.assertions[0].source,
            WorldSource::HttpGet("/accounts/a/balance".into())
        );
        assert_eq!(m.report.success_assertions["balance"], serde_json::json!(5));
        // A file assertion is fine beside a required run of the app.
        let ran = GOOD.replace("http_get: /accounts/a/balance", "file: balance.json")
            + "work:\n  runs:\n    - id: ran\n      program: app\n      args: ['--json', 'stats']\n";
        let m = parse(&ran).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.work.runs[0].args, ["--json", "stats"]);
        assert_eq!(m.work.runs[0].input, None);
        // A run of the app may name the template file it must compute on.
        let m = parse(&format!("{ran}      input: data/m.txt\n")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.work.runs[0].input.as_deref(), Some("data/m.txt"));
    }

    /// A version-1 manifest names the requests that set up the app `world.seed`: it
    /// still loads, the same as the version-2 manifest naming them `world.setup`, and a
    /// setup request is checked under the name the harness writes.
    #[test]
    fn a_version_1_manifest_with_world_seed_loads_as_world_setup() {
        let requests = "    - method: POST\n      path: /accounts\n      body: {id: a}\n";
        let old = GOOD.replace("world:\n", &format!("world:\n  seed:\n{requests}"));
        let new = GOOD
            .replace("version: 1", &format!("version: {MANIFEST_VERSION}"))
            .replace("world:\n", &format!("world:\n  setup:\n{requests}"));
        let (old, new) = (
            parse(&old).unwrap_or_else(|e| panic!("{e}")),
            parse(&new).unwrap_or_else(|e| panic!("{e}")),
        );
        assert_eq!(old.world, new.world);
        assert_eq!(old.world.setup[0].path, "/accounts");
        let err = parse(&GOOD.replace(
            "world:\n",
            "world:\n  seed:\n    - method: POST\n      path: accounts\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(err.contains("world.setup[0].path"), "{err}");
    }

    #[test]
    fn bad_manifests_name_the_file_and_field() {
        for (bad, field) in [
            (
                GOOD.replace("version: 1", &format!("version: {}", MANIFEST_VERSION + 1)),
                "version",
            ),
            (GOOD.replace("id: demo", "id: Demo!"), "id"),
            (
                GOOD.replace("prompt: challenge-prompt.md", "prompt: ../x.md"),
                "prompt",
            ),
            (
                GOOD.replace("required_fields: [balance]", "required_fields: [other]"),
                "success_assertions",
            ),
            (GOOD.replace("      equals: 5\n", ""), "equals"),
            (
                GOOD.replace("      equals: 5\n", "      equals: 5\n      count: 5\n"),
                "count",
            ),
            (
                GOOD.replace("http_get: /accounts/a/balance", "http_get_each: /tx/1"),
                "http_get_each",
            ),
            (
                GOOD.replace(
                    "      equals: 5\n",
                    "      count: 5\n      unordered: true\n",
                ),
                "count",
            ),
            (
                GOOD.replace("http_get: /accounts/a/balance", "file: balance.json"),
                "work.runs",
            ),
            (
                format!("{GOOD}work:\n  runs:\n    - id: r\n      program: tally\n"),
                "work.runs[0].program",
            ),
            (
                format!("{GOOD}work:\n  runs:\n    - id: r\n      program: app\n  outputs:\n    - id: o\n      file: a.json\n      run: r\n    - id: o\n      file: b.json\n      run: r\n"),
                "work.outputs[1].id",
            ),
            (
                format!("{GOOD}work:\n  runs:\n    - id: r\n      program: browser\n  outputs:\n    - id: o\n      file: a.json\n      run: r\n"),
                "work.outputs[0].run",
            ),
            (
                format!(
                    "{GOOD}work:\n  runs:\n    - id: r\n      program: app\n      args: ['(']\n"
                ),
                "work.runs[0].args[0]",
            ),
            (
                format!("{GOOD}work:\n  runs:\n    - id: r\n      program: app\n      input: ../m.txt\n"),
                "work.runs[0].input",
            ),
            (
                format!("{GOOD}work:\n  runs:\n    - id: r\n      program: browser\n      input: m.txt\n"),
                "work.runs[0].input",
            ),
            (
                format!("{GOOD}work:\n  runs:\n    - id: r\n      program: /usr/bin/awk\n      input: m.txt\n"),
                "work.runs[0].input",
            ),
            (
                GOOD.replace("title: Demo\n", "title: Demo\nsurprise: 1\n"),
                "surprise",
            ),
            ("version: [".to_string(), "yaml"),
        ] {
            let e = parse(&bad)
                .err()
                .unwrap_or_else(|| panic!("accepted: {bad}"))
                .to_string();
            assert!(
                e.contains("c/challenge.yaml") && e.contains(field),
                "{field}: {e}"
            );
        }
    }
}
