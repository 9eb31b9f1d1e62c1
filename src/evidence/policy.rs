//! Policy evidence: which paths an agent touched, in which category, and whether the
//! trial's instruction profile allowed it.
//!
//! Best-effort and pure. Structured tool inputs (`read_file`'s `path`, Claude Code's
//! `file_path`, OpenCode's `filePath`…) give paths directly; shell commands are split
//! into simple commands and the recognised forms (`cat`, `ls`, `grep`, `sed`, `head`,
//! redirections, `cd`…) give their path arguments. A command whose paths cannot be read
//! out (command substitution, `eval`, an interpreter, a variable-expanded path) is kept
//! whole as audit evidence and makes the trial's validity `unauditable`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::normalize::ToolCallRecord;
use crate::spec::challenge::Profile;

/// Where a path lies, as far as the benchmark's rules are concerned.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum PathCategory {
    TrialWorkspace,
    SuppliedSkills,
    PublicDocs,
    Examples,
    Tests,
    ProductSource,
    /// Other trials' workspaces and results, published results.
    AdjacentResults,
    /// Agents' stored sessions and memories outside this trial.
    PriorStores,
    /// A task's answer key or reference solution: a challenge's manifest, flows and
    /// notes beyond what the trial hands the agent, the other challenges' directories,
    /// the scorecard's probes and rubric, the apps' reference tests, recorded solutions
    /// of the challenges; the repository's history, its tests and the rest of it that is
    /// neither docs nor product source. No profile allows it ([`answer_key`] says why).
    AnswerKey,
    /// Not under any root the harness knows (system files, elsewhere).
    Outside,
    /// What every run of the agent opens to run at all: system files, its own binary
    /// and packages, the app under test's locators. Only observed opens are put here
    /// ([`super::observed_policy`]); it is reported, never counted.
    Runtime,
}

impl PathCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            PathCategory::TrialWorkspace => "trial_workspace",
            PathCategory::SuppliedSkills => "supplied_skills",
            PathCategory::PublicDocs => "public_docs",
            PathCategory::Examples => "examples",
            PathCategory::Tests => "tests",
            PathCategory::ProductSource => "product_source",
            PathCategory::AdjacentResults => "adjacent_results",
            PathCategory::PriorStores => "prior_stores",
            PathCategory::AnswerKey => "answer_key",
            PathCategory::Outside => "outside",
            PathCategory::Runtime => "runtime",
        }
    }

    /// Whether touching this category is within the profile's rules. `outside` (system
    /// files such as `/usr/bin/curl`) is reported but never contaminates: it holds
    /// nothing about the product.
    pub fn allowed_under(self, profile: Profile) -> bool {
        match self {
            PathCategory::TrialWorkspace
            | PathCategory::SuppliedSkills
            | PathCategory::Outside
            | PathCategory::Runtime => true,
            PathCategory::PublicDocs => profile != Profile::None,
            // What is graded is never the agent's to read, whatever it may inspect.
            PathCategory::AnswerKey => false,
            _ => profile == Profile::All,
        }
    }

    /// Categories that mean the agent looked at how the product is built (an answer
    /// key's flows are examples too).
    pub fn is_implementation(self) -> bool {
        matches!(
            self,
            PathCategory::Examples
                | PathCategory::Tests
                | PathCategory::ProductSource
                | PathCategory::AnswerKey
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Search,
    Write,
    /// Named on a command line whose effect is not known (an argument of `cp`, `gauntlet`…).
    Referenced,
}

/// One path observed in one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ObservedPath {
    /// The tool call's ordinal (0-based, stream order).
    pub call: usize,
    /// As the agent wrote it.
    pub path: String,
    /// Absolute and lexically normalized.
    pub resolved: String,
    pub category: PathCategory,
    pub access: Access,
    pub allowed: bool,
}

/// A shell command whose paths could not be read out, kept whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpaqueCommand {
    pub call: usize,
    pub command: String,
    pub reason: String,
}

/// The roots a trial's paths are classified against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Roots {
    pub workspace: PathBuf,
    pub skills: PathBuf,
    /// The whole trial directory (workspace, scratch HOME, TMPDIR).
    pub trial_dir: PathBuf,
    /// Where every run's trial directories live.
    pub runs_dir: PathBuf,
    /// The gauntlet repository.
    pub repo: PathBuf,
    /// The agent's runtime inside the repository's tree: the harness's binaries and
    /// the pinned CLIs' packages the sandbox shows it. Absent in records from before
    /// opens were observed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<PathBuf>,
    /// The trial's own challenge. Present, the answer keys are classified
    /// [`PathCategory::AnswerKey`]; absent in records from before they were, which keep
    /// the rules they were made under when rescored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<OwnChallenge>,
}

/// The trial's own challenge, as far as what its agent may read is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OwnChallenge {
    /// Its directory (`challenges/<id>/`); its siblings are the other challenges.
    pub dir: PathBuf,
    /// What the trial hands the agent from it, relative to `dir`: its prompt (a layer
    /// of the rendered prompt) and its workspace template (copied into the workspace).
    /// Everything else in it is the answer key.
    pub handed: Vec<PathBuf>,
    /// Whether the answer keys reach past the challenges to the whole repository (its
    /// history, its tests, everything but docs, product source and the build files:
    /// [`answer_key`] says which). Absent (false) in records made before they did (red team
    /// round seven), which keep the rule they were made under when rescored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_repository: bool,
}

/// Directories under a challenges root that are shared, not a challenge: the skills
/// bundle and the profiles' fragments are handed by profile, the scorecard has rules of
/// its own.
const SHARED_CHALLENGE_DIRS: [&str; 3] = ["skills", "profiles", "scorecard"];

/// Why `p` (absolute, normalized) is an answer key no profile allows, or `None`. Only
/// roots that name their challenge ([`Roots::challenge`]) have answer keys.
///
/// What the trial hands the agent stays under the rules it had: the shared prompt
/// layers and the skills bundle (public docs), the challenge's own prompt and workspace
/// template (examples: the workspace has a copy), a listing of a challenges directory
/// (names only).
pub fn answer_key(roots: &Roots, p: &Path) -> Option<&'static str> {
    let own = roots.challenge.as_ref()?;
    let mut challenge_roots = vec![roots.repo.join("challenges")];
    if let Some(parent) = own.dir.parent() {
        if parent != challenge_roots[0] {
            challenge_roots.push(parent.to_path_buf());
        }
    }
    for root in &challenge_roots {
        let Ok(rel) = p.strip_prefix(root) else {
            continue;
        };
        let mut parts = rel.components();
        let Some(first) = parts.next() else {
            continue;
        };
        let rest = parts.as_path();
        if rest.as_os_str().is_empty() {
            // `challenges/<x>` itself: a listing of a directory, or a shared file.
            return None;
        }
        let first = first.as_os_str().to_string_lossy();
        if first == "scorecard" {
            return if rest.starts_with("probes") {
                Some("the scorecard's probes (what each probe plants, asks and checks)")
            } else if rest.starts_with("scorecard.json") {
                Some("the scorecard's rubric (which observations each level requires)")
            } else {
                None
            };
        }
        if SHARED_CHALLENGE_DIRS.contains(&first.as_ref()) {
            return None;
        }
        if root.join(first.as_ref()) != own.dir {
            return Some("another challenge's directory (its answer key and reference solution)");
        }
        if own.handed.iter().any(|h| rest.starts_with(h)) {
            return None;
        }
        return Some(if rest == Path::new("challenge.yaml") {
            "the challenge's answer key (challenge.yaml: its success assertions, required runs and expected world state)"
        } else if rest.starts_with("flows") {
            "the challenge's reference solution (its scripted flows)"
        } else {
            "the challenge's own files that the trial does not hand the agent (its README and notes on the solution)"
        });
    }
    let rel = p.strip_prefix(&roots.repo).ok()?;
    let parts: Vec<_> = rel.components().map(|c| c.as_os_str()).collect();
    match parts.as_slice() {
        [apps, _, flows, ..] if *apps == "apps" && *flows == "flows" => {
            Some("an app's reference tests (its scripted flows)")
        }
        [tests, fixtures, streams, _, ..]
            if *tests == "tests" && *fixtures == "fixtures" && *streams == "challenge-streams" =>
        {
            Some("recorded solutions of the challenges (agents' streams kept as test fixtures)")
        }
        _ if own.whole_repository => repository_key(roots, p, &parts),
        _ => None,
    }
}

/// What an agent may read of the repository outside `challenges/`, whatever its profile
/// lets it inspect: `docs/`, `src/`, `apps/` (all of an app but its flows), the Cargo
/// files, the README and the licence; and every top-level entry itself (a directory's
/// listing: names only; a top-level file: build and configuration, `.gitignore`).
const READABLE_IN_REPOSITORY: [&str; 7] = [
    "docs",
    "src",
    "apps",
    "Cargo.toml",
    "Cargo.lock",
    "README.md",
    "LICENSE",
];

/// The rest of the repository (`rel`: `p`'s components under it) is an answer key: its
/// history holds every challenge's key by another name (`git show HEAD:challenges/…`),
/// its tests pin the tasks' solutions (insta snapshots of the reference's runs,
/// fixtures, expected values), and the rest (benches, the red team's adversaries,
/// published results, configuration) is no product source or documentation either.
/// Kept as they were: the agent's runtime (its own script, the pinned CLIs'
/// `workspace/`, the harness's binaries: its command line is the harness's, never the
/// agent's choice; `.git` is never runtime), the runs directory (other trials, hidden by
/// the seal) and the ignore rules every search tool reads on its way up
/// (`.git/info/exclude`; the `.gitignore` files are top-level or in readable trees).
fn repository_key(roots: &Roots, p: &Path, rel: &[&std::ffi::OsStr]) -> Option<&'static str> {
    let [top, rest @ ..] = rel else {
        return None;
    };
    if *top == ".git" {
        return match rest {
            [] => None,
            [info, exclude] if *info == "info" && *exclude == "exclude" => None,
            _ => Some(
                "the repository's history (git objects, packs, refs and index: every challenge's answer key by another name)",
            ),
        };
    }
    if rest.is_empty()
        || READABLE_IN_REPOSITORY.iter().any(|r| *top == *r)
        || roots.runtime.iter().any(|r| p.starts_with(r))
        || (p.starts_with(&roots.runs_dir) && !roots.repo.starts_with(&roots.runs_dir))
    {
        return None;
    }
    Some(if *top == "tests" {
        "the test suite (its snapshots, fixtures and assertions record the tasks' solutions and expected values)"
    } else {
        "a repository file that is neither docs nor product source (readable: docs/, src/, apps/ but their flows, the Cargo files, the README)"
    })
}

/// Everything the policy assessment found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolicyFindings {
    pub paths: Vec<ObservedPath>,
    pub opaque_shell_commands: Vec<OpaqueCommand>,
    /// Resolved paths touched against the profile's rules, each once, in order.
    pub disallowed_reads: Vec<String>,
    /// Whether any example, test or product source was touched.
    pub escalated_to_product_code: bool,
    /// Distinct paths per category.
    pub by_category: BTreeMap<String, u64>,
    /// Shell commands seen (simple commands, after splitting).
    pub shell_commands: u64,
    /// Simple commands that drive the app under test (`curl`, `$APP_BIN`, `gauntlet flow`).
    pub app_commands: u64,
    /// What was found but not kept, and tool calls the assessment never saw (absent when
    /// nothing was dropped).
    #[serde(default, skip_serializing_if = "NotKept::is_empty")]
    pub not_kept: NotKept,
}

/// Counts of findings past [`MAX_FINDINGS`] of their list, and of tool calls the agent's
/// report did not keep: the assessment cannot see those, so a trial with any is
/// `unauditable`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotKept {
    pub paths: u64,
    pub disallowed_reads: u64,
    pub opaque_shell_commands: u64,
    /// Tool calls past the report's cap ([`MAX_ITEMS`](super::normalize::MAX_ITEMS)).
    pub tool_calls: u64,
}

impl NotKept {
    pub fn is_empty(&self) -> bool {
        *self == NotKept::default()
    }
}

/// Items kept of each list of findings (paths, disallowed reads, opaque commands); the
/// rest are counted in [`NotKept`], and `by_category` still counts every distinct path.
pub const MAX_FINDINGS: usize = 5000;

/// Tools whose input is a shell command, by name as agents call them.
fn is_shell_tool(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "shell" | "bash" | "exec_command" | "command_execution" | "local_shell"
    )
}

fn access_of_tool(name: &str) -> Access {
    let n = name.to_ascii_lowercase();
    if n.contains("write") || n.contains("edit") || n.contains("patch") || n == "file_change" {
        Access::Write
    } else if n.contains("grep")
        || n.contains("glob")
        || n.contains("search")
        || n == "list"
        || n == "ls"
    {
        Access::Search
    } else {
        Access::Read
    }
}

/// Assess every tool call of a run.
pub fn assess(calls: &[ToolCallRecord], roots: &Roots, profile: Profile) -> PolicyFindings {
    let mut f = PolicyFindings::default();
    let mut disallowed = std::collections::BTreeSet::new();
    let mut distinct: BTreeMap<&str, std::collections::BTreeSet<String>> = BTreeMap::new();
    for (i, call) in calls.iter().enumerate() {
        let mut found: Vec<(String, Access, PathBuf)> = Vec::new();
        if is_shell_tool(&call.name) {
            let Some(cmd) = shell_command(&call.input) else {
                continue;
            };
            match shell_paths(&cmd, &roots.workspace) {
                Ok(s) => {
                    f.shell_commands += s.commands;
                    f.app_commands += s.app_commands;
                    found.extend(s.paths);
                }
                Err(reason) => {
                    f.shell_commands += 1;
                    if f.opaque_shell_commands.len() < MAX_FINDINGS {
                        f.opaque_shell_commands.push(OpaqueCommand {
                            call: i,
                            command: crate::evidence::normalize::Preview::of(&cmd).text,
                            reason: reason.to_string(),
                        })
                    } else {
                        f.not_kept.opaque_shell_commands += 1;
                    }
                }
            }
        } else {
            let access = access_of_tool(&call.name);
            for p in structured_paths(&call.input) {
                let resolved = resolve(&roots.workspace, &p);
                found.push((p, access, resolved));
            }
        }
        for (path, access, resolved) in found {
            let category = classify(roots, &resolved);
            let allowed = category.allowed_under(profile);
            let resolved = resolved.to_string_lossy().into_owned();
            if !allowed && disallowed.insert(resolved.clone()) {
                if f.disallowed_reads.len() < MAX_FINDINGS {
                    f.disallowed_reads.push(resolved.clone());
                } else {
                    f.not_kept.disallowed_reads += 1;
                }
            }
            f.escalated_to_product_code |= category.is_implementation();
            distinct
                .entry(category.as_str())
                .or_default()
                .insert(resolved.clone());
            if f.paths.len() < MAX_FINDINGS {
                f.paths.push(ObservedPath {
                    call: i,
                    path,
                    resolved,
                    category,
                    access,
                    allowed,
                });
            } else {
                f.not_kept.paths += 1;
            }
        }
    }
    f.by_category = distinct
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.len() as u64))
        .collect();
    f
}

/// The command of a shell tool call, as [`shell_command`] reads it; `None` for any
/// other tool.
pub fn shell_command_of(call: &ToolCallRecord) -> Option<String> {
    is_shell_tool(&call.name)
        .then(|| shell_command(&call.input))
        .flatten()
}

/// The programs a command line names, one per simple command, as written (`curl`,
/// `./run.sh`, `$APP_BIN`): after variable assignments and redirections, and after
/// the words that only run what follows them (`exec`, `command`, `env`, `nohup`,
/// `time`). Heredoc bodies are data, not commands; the commands inside `$(…)` and
/// backquotes are read as commands of their own; a function the line defines is no
/// program; `command -v` only looks a name up. A segment that cannot be split is read
/// by whitespace: this is the account, and an odd one is still compared.
pub fn claimed_programs(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut defined = Vec::new();
    let mut queue = vec![without_heredocs(cmd)];
    let mut budget = 64;
    while let Some(cmd) = queue.pop() {
        budget -= 1;
        if budget == 0 {
            break;
        }
        let (outer, inner) = substitutions(&cmd);
        queue.extend(inner);
        for segment in split_unquoted(&outer) {
            if let Some(p) = segment_program(&segment, &mut defined) {
                out.push(p);
            }
        }
    }
    out.retain(|p| !defined.contains(p));
    out
}

/// The program one simple command runs, noting the name of a function it defines.
fn segment_program(segment: &str, defined: &mut Vec<String>) -> Option<String> {
    const RUNS_NEXT: &[&str] = &["exec", "command", "env", "nohup", "time", "sudo"];
    let segment = segment.trim_start().trim_start_matches(['(', '{', ' ']);
    let words = shell_words::split(segment)
        .unwrap_or_else(|_| segment.split_whitespace().map(str::to_owned).collect());
    if let Some(name) = words
        .first()
        .and_then(|w| w.strip_suffix("()"))
        .or_else(|| (words.first()? == "function").then(|| words.get(1).map(String::as_str))?)
    {
        defined.push(name.trim_end_matches("()").to_owned());
        // `f() { body; }`: the body's first command is in this segment too.
        let body: Vec<&String> = words.iter().skip_while(|w| *w != "{").skip(1).collect();
        return body.first().map(|w| w.to_string());
    }
    let mut words = words.into_iter().peekable();
    while let Some(w) = words.next() {
        if is_assignment(&w) {
            continue;
        }
        let (op, rest) = split_redirect(&w);
        if op.is_some() {
            // `> file` names its target in the next word.
            if rest.is_empty() {
                words.next();
            }
            continue;
        }
        if w == "command" && words.peek().is_some_and(|n| n == "-v" || n == "-V") {
            return None;
        }
        if RUNS_NEXT.contains(&w.as_str()) || w.starts_with('-') {
            continue;
        }
        return (!w.is_empty()).then_some(w);
    }
    None
}

/// `cmd` without the bodies of its heredocs (`<<WORD` … `WORD`, `<<-` too).
fn without_heredocs(cmd: &str) -> String {
    let mut out = String::new();
    let mut ending: Vec<(String, bool)> = Vec::new();
    for line in cmd.lines() {
        if let Some((word, tabs)) = ending.first() {
            let l = if *tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            if l == word {
                ending.remove(0);
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
        let mut rest = line;
        while let Some(at) = rest.find("<<") {
            let after = &rest[at + 2..];
            if let Some(here_string) = after.strip_prefix('<') {
                rest = here_string;
                continue;
            }
            let tabs = after.starts_with('-');
            let after = after.trim_start_matches('-').trim_start();
            let word: String = after
                .chars()
                .take_while(|c| !c.is_whitespace() && !";&|<>()".contains(*c))
                .filter(|c| *c != '\'' && *c != '"' && *c != '\\')
                .collect();
            if !word.is_empty() {
                ending.push((word, tabs));
            }
            rest = after;
        }
    }
    out
}

/// `cmd` with each `$(…)` and backquoted command replaced by a word, and those
/// commands.
fn substitutions(cmd: &str) -> (String, Vec<String>) {
    let chars: Vec<char> = cmd.chars().collect();
    let (mut outer, mut inner) = (String::new(), Vec::new());
    let (mut i, mut single) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            single = !single;
        }
        if !single && c == '$' && chars.get(i + 1) == Some(&'(') && chars.get(i + 2) != Some(&'(') {
            let (mut depth, mut j) = (1, i + 2);
            while j < chars.len() && depth > 0 {
                match chars[j] {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            inner.push(
                chars[i + 2..j.saturating_sub(1).max(i + 2)]
                    .iter()
                    .collect(),
            );
            outer.push('_');
            i = j;
            continue;
        }
        if !single && c == '`' {
            let end = chars[i + 1..].iter().position(|c| *c == '`');
            let j = end.map_or(chars.len(), |e| i + 1 + e);
            inner.push(chars[i + 1..j].iter().collect());
            outer.push('_');
            i = j + 1;
            continue;
        }
        outer.push(c);
        i += 1;
    }
    (outer, inner)
}

/// The command string of a shell tool's input, unwrapping `bash -lc '…'` (Codex).
fn shell_command(input: &Value) -> Option<String> {
    let raw = match input.get("command")? {
        Value::String(s) => s.clone(),
        Value::Array(a) => {
            let words: Vec<String> = a
                .iter()
                .filter_map(|w| w.as_str().map(str::to_owned))
                .collect();
            shell_words::join(words)
        }
        _ => return None,
    };
    if let Ok(words) = shell_words::split(&raw) {
        if words.len() == 3 {
            let prog = words[0].rsplit('/').next().unwrap_or("");
            if matches!(prog, "bash" | "sh" | "zsh") && matches!(words[1].as_str(), "-c" | "-lc") {
                return Some(words[2].clone());
            }
        }
    }
    Some(raw)
}

/// Paths named by a structured tool input.
fn structured_paths(input: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in [
        "path",
        "file_path",
        "filePath",
        "notebook_path",
        "dir",
        "directory",
    ] {
        if let Some(s) = input.get(key).and_then(Value::as_str) {
            out.push(s.to_owned());
        }
    }
    for key in ["paths", "changes"] {
        if let Some(a) = input.get(key).and_then(Value::as_array) {
            for v in a {
                if let Some(s) = v.as_str().or_else(|| v.get("path").and_then(Value::as_str)) {
                    out.push(s.to_owned());
                }
            }
        }
    }
    out
}

/// What a shell command was found to do.
#[derive(Debug, Default)]
pub struct ShellPaths {
    pub paths: Vec<(String, Access, PathBuf)>,
    pub commands: u64,
    pub app_commands: u64,
}

/// Programs whose non-option arguments are paths they read.
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "ls",
    "find",
    "wc",
    "stat",
    "file",
    "tree",
    "du",
    "diff",
    "sort",
    "uniq",
    "cut",
    "nl",
    "od",
    "xxd",
    "strings",
    "md5sum",
    "sha256sum",
    "realpath",
    "readlink",
];
/// Readers whose first non-option argument is a pattern or script, not a path.
const PATTERN_READERS: &[&str] = &["grep", "egrep", "fgrep", "rg", "sed", "awk", "jq"];
/// Programs that run code whose reads cannot be known from the command line.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "python", "python3", "node", "perl", "ruby", "eval", "source",
    ".", "xargs", "exec", "env", "php", "lua", "deno", "bun", "npx",
];

/// Why a shell command's reads cannot be known from its text: it is kept, and the
/// trial is unauditable rather than clean.
#[derive(Debug, thiserror::Error)]
pub enum Opaque {
    #[error("command substitution")]
    Substitution,
    #[error("cannot split: {0}")]
    Unsplittable(#[source] shell_words::ParseError),
    #[error("a variable-expanded path (`{0}`)")]
    Expanded(String),
    #[error("the program is a variable (`{0}`)")]
    VariableProgram(String),
    #[error("runs an interpreter (`{0}`)")]
    Interpreter(String),
}

/// Split `cmd` into simple commands and read out their paths, relative to `cwd`. `Err`
/// with the reason when the command is opaque.
pub fn shell_paths(cmd: &str, cwd: &Path) -> Result<ShellPaths, Opaque> {
    if cmd.contains("$(") || cmd.contains('`') {
        return Err(Opaque::Substitution);
    }
    let mut out = ShellPaths::default();
    let mut cwd = cwd.to_path_buf();
    for segment in split_unquoted(cmd) {
        let words = shell_words::split(&segment).map_err(Opaque::Unsplittable)?;
        let mut words: Vec<String> = words.into_iter().skip_while(|w| is_assignment(w)).collect();
        if words.is_empty() {
            continue;
        }
        out.commands += 1;
        // Redirections, wherever they are.
        let mut i = 0;
        while i < words.len() {
            let w = words[i].clone();
            let (op, rest) = split_redirect(&w);
            if let Some(op) = op {
                let target = if rest.is_empty() {
                    if i + 1 < words.len() {
                        words.remove(i + 1)
                    } else {
                        String::new()
                    }
                } else {
                    rest.to_owned()
                };
                words.remove(i);
                if target.starts_with('&') || target.is_empty() {
                    continue;
                }
                let access = if op == "<" {
                    Access::Read
                } else {
                    Access::Write
                };
                out.paths.push(path_arg(&cwd, &target, access)?);
                continue;
            }
            i += 1;
        }
        let Some(prog) = words.first().cloned() else {
            continue;
        };
        let name = prog.rsplit('/').next().unwrap_or("").to_owned();
        let args = &words[1..];
        if prog == "$APP_BIN"
            || prog == "${APP_BIN}"
            || name == "curl"
            || name == "wget"
            || name == "gauntlet"
        {
            out.app_commands += 1;
        }
        if prog.starts_with('$') && prog != "$APP_BIN" && prog != "${APP_BIN}" {
            return Err(Opaque::VariableProgram(prog.to_string()));
        }
        if INTERPRETERS.contains(&name.as_str()) {
            return Err(Opaque::Interpreter(name.to_string()));
        }
        if name == "cd" {
            if let Some(dir) = args.iter().find(|a| !a.starts_with('-')) {
                let (p, _, resolved) = path_arg(&cwd, dir, Access::Read)?;
                let _ = p;
                cwd = resolved;
            }
            continue;
        }
        let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
        if READERS.contains(&name.as_str()) {
            let operands: Vec<&String> = if name == "find" {
                args.iter().take_while(|a| !a.starts_with('-')).collect()
            } else {
                operands
            };
            let access = if name == "ls" || name == "find" || name == "tree" {
                Access::Search
            } else {
                Access::Read
            };
            if operands.is_empty() && (name == "ls" || name == "find" || name == "tree") {
                out.paths.push((".".into(), access, cwd.clone()));
            }
            for a in operands {
                out.paths.push(path_arg(&cwd, a, access)?);
            }
        } else if PATTERN_READERS.contains(&name.as_str()) {
            let with_e = args.iter().any(|a| a == "-e" || a == "-f");
            let skip = usize::from(!with_e);
            for a in operands.into_iter().skip(skip) {
                out.paths.push(path_arg(&cwd, a, Access::Search)?);
            }
        } else {
            // Any other program: arguments that look like paths are recorded as named.
            for a in operands {
                if looks_like_path(a) {
                    out.paths.push(path_arg(&cwd, a, Access::Referenced)?);
                }
            }
        }
    }
    Ok(out)
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// `>`, `>>`, `<`, `2>`, `&>` at the start of a word, and the rest of the word.
fn split_redirect(w: &str) -> (Option<&str>, &str) {
    for op in ["2>>", "&>>", "2>", "&>", ">>", ">", "<"] {
        if let Some(rest) = w.strip_prefix(op) {
            return (Some(op), rest);
        }
    }
    (None, w)
}

fn looks_like_path(a: &str) -> bool {
    if a.contains("://") || a.starts_with('{') || a.starts_with('[') || a.starts_with('$') {
        return false;
    }
    a.starts_with('/') || a.starts_with("./") || a.starts_with("../") || a.starts_with('~')
}

fn path_arg(cwd: &Path, a: &str, access: Access) -> Result<(String, Access, PathBuf), Opaque> {
    if a.contains('$') {
        return Err(Opaque::Expanded(a.to_owned()));
    }
    Ok((a.to_owned(), access, resolve(cwd, a)))
}

/// Split a command line at unquoted `;`, `&`, `|` and newlines.
fn split_unquoted(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in cmd.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' if !single => {
                escaped = true;
                cur.push(c);
            }
            '\'' if !double => {
                single = !single;
                cur.push(c);
            }
            '"' if !single => {
                double = !double;
                cur.push(c);
            }
            ';' | '&' | '|' | '\n' if !single && !double => {
                // `2>&1` and `&>` keep their `&`.
                if c == '&' && (cur.ends_with('>') || cur.ends_with("&")) {
                    cur.push(c);
                    continue;
                }
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                } else {
                    cur.clear();
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

/// `p` made absolute against `cwd` and normalized without touching the disk.
pub fn resolve(cwd: &Path, p: &str) -> PathBuf {
    let path = Path::new(p);
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The category of an absolute, normalized path.
pub fn classify(roots: &Roots, p: &Path) -> PathCategory {
    if p.starts_with(&roots.skills) {
        return PathCategory::SuppliedSkills;
    }
    if p.starts_with(&roots.trial_dir) {
        return PathCategory::TrialWorkspace;
    }
    if p.starts_with(&roots.runs_dir) {
        return PathCategory::AdjacentResults;
    }
    if answer_key(roots, p).is_some() {
        return PathCategory::AnswerKey;
    }
    let s = p.to_string_lossy();
    if [
        ".local/share/opencode",
        ".claude/projects",
        ".codex/sessions",
        ".gauntlet-agent",
    ]
    .iter()
    .any(|m| s.contains(m))
    {
        return PathCategory::PriorStores;
    }
    let Ok(rel) = p.strip_prefix(&roots.repo) else {
        return PathCategory::Outside;
    };
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let at = |i: usize| parts.get(i).map(String::as_str).unwrap_or("");
    match at(0) {
        "" => PathCategory::ProductSource,
        "docs" | "README.md" | "LICENSE" => PathCategory::PublicDocs,
        "tests" | "benches-as-tests" | "benches" => PathCategory::Tests,
        "results" | "target" => PathCategory::AdjacentResults,
        "challenges" => match at(1) {
            "skills" | "base-prompt.md" | "profiles" => PathCategory::PublicDocs,
            _ => PathCategory::Examples,
        },
        "apps" => match at(2) {
            "flows" => PathCategory::Examples,
            "corpus.json" | "app.json" => PathCategory::PublicDocs,
            _ => PathCategory::ProductSource,
        },
        _ => PathCategory::ProductSource,
    }
}

#[cfg(test)]
mod tests;
