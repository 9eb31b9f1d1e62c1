//! Challenges: `challenges/<id>/` directories that hold data only.
//!
//! A challenge is a versioned manifest (`challenge.yaml`), a challenge prompt, a README,
//! a workspace template and, for scripted mode, scripts. Shared by all challenges:
//! `challenges/base-prompt.md`, one policy fragment per instruction profile
//! (`challenges/profiles/<profile>.md`) and the skills bundle
//! (`challenges/skills/bundle.yaml`, which lists every file it supplies with its
//! SHA-256). Everything is loaded and validated here, at list time, before any
//! workspace exists: a bad manifest never costs a trial directory.

pub mod bundle;
pub mod manifest;
pub mod prompt;
pub mod requests;

use schemars::JsonSchema;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use bundle::{Bundle, BundleFile};
pub use manifest::{
    Manifest, ReportContract, RequiredOutput, RequiredRun, RunInput, SetupRequest, WorkSpec,
    WorldAssertion, WorldSource, APP_PROGRAM, BROWSER_PROGRAM, MAX_EACH, MAX_INPUT_WORDS,
    MAX_INPUT_WORD_BYTES, MAX_OUTPUT_BYTES,
};
pub use prompt::{PromptLayer, RenderedPrompt};

use super::{Script, SpecError};

/// The instruction profile of one trial: exactly one per invocation.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Base and challenge prompt only; public surfaces of the app.
    None,
    /// Plus the skills bundle under `.agent/skills/`.
    Skills,
    /// The bundle, and repository inspection allowed (and still reported).
    All,
}

impl Profile {
    pub const ALL: [Profile; 3] = [Profile::None, Profile::Skills, Profile::All];

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::None => "none",
            Profile::Skills => "skills",
            Profile::All => "all",
        }
    }

    /// Whether the skills bundle is copied into the trial workspace.
    pub fn supplies_skills(self) -> bool {
        !matches!(self, Profile::None)
    }
}

impl std::fmt::Display for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Profile, UnknownProfile> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| UnknownProfile(s.to_owned()))
    }
}

/// A name that is not one of [`Profile::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not an instruction profile (none, skills, all)")]
pub struct UnknownProfile(pub String);

/// Where the skills bundle is copied inside a trial workspace.
pub const SKILLS_DIR: &str = ".agent/skills";
/// The rendered prompt's file name inside the trial workspace.
pub const RENDERED_PROMPT: &str = ".agent/prompt.md";

/// One challenge, loaded and validated.
#[derive(Debug, Clone)]
pub struct Challenge {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// SHA-256 of `challenge.yaml` as written.
    pub manifest_sha256: String,
    /// The challenge prompt's bytes: the same for every profile.
    pub prompt: PromptLayer,
    /// Scripts by profile name, or `default` for every profile.
    pub scripts: BTreeMap<String, Script>,
    /// The input of each required run that names one (`work.runs[].input`), read from
    /// the workspace template at load time, in the order of the runs.
    pub inputs: Vec<RunInput>,
}

impl Challenge {
    /// The script a profile runs: its own, else the default.
    pub fn script_for(&self, profile: Profile) -> Option<&Script> {
        self.scripts
            .get(profile.as_str())
            .or_else(|| self.scripts.get("default"))
    }

    pub fn template_dir(&self) -> PathBuf {
        self.dir.join(&self.manifest.workspace_template)
    }
}

/// Everything under `challenges/`: the shared layers and every challenge.
#[derive(Debug, Clone)]
pub struct Challenges {
    pub root: PathBuf,
    pub base: PromptLayer,
    /// The policy fragment of each profile.
    pub fragments: BTreeMap<Profile, PromptLayer>,
    pub bundle: Bundle,
    /// Sorted by id.
    pub list: Vec<Challenge>,
}

impl Challenges {
    pub fn get(&self, id: &str) -> Option<&Challenge> {
        self.list.iter().find(|c| c.manifest.id == id)
    }

    pub fn fragment(&self, profile: Profile) -> &PromptLayer {
        // Loading fails unless all three exist.
        &self.fragments[&profile]
    }

    /// The prompt a trial of `challenge` under `profile` is given.
    pub fn render(&self, challenge: &Challenge, profile: Profile) -> RenderedPrompt {
        prompt::render(&self.base, self.fragment(profile), &challenge.prompt)
    }
}

/// Directories under `challenges/` that are shared data, not challenges.
const SHARED_DIRS: [&str; 3] = ["profiles", "skills", "scorecard"];

/// Load `root` (normally `challenges/` at the repository root).
pub fn load(root: &Path) -> Result<Challenges, SpecError> {
    let base = PromptLayer::load(root, "base-prompt.md")?;
    let mut fragments = BTreeMap::new();
    for p in Profile::ALL {
        fragments.insert(
            p,
            PromptLayer::load(root, &format!("profiles/{}.md", p.as_str()))?,
        );
    }
    let bundle = Bundle::load(&root.join("skills"))?;
    let entries = std::fs::read_dir(root).map_err(|source| SpecError::Io {
        file: root.to_path_buf(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !SHARED_DIRS.contains(&n) && !n.starts_with('.'))
        })
        .collect();
    dirs.sort();
    let mut list = Vec::new();
    for dir in dirs {
        list.push(load_one(root, &dir)?);
    }
    Ok(Challenges {
        root: root.to_path_buf(),
        base,
        fragments,
        bundle,
        list,
    })
}

/// Load one challenge directory.
pub fn load_one(root: &Path, dir: &Path) -> Result<Challenge, SpecError> {
    let file = dir.join("challenge.yaml");
    let bytes = std::fs::read(&file).map_err(|source| SpecError::Io {
        file: file.clone(),
        source,
    })?;
    let manifest = Manifest::parse(&file, &bytes)?;
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if manifest.id != name {
        return Err(SpecError::invalid(
            &file,
            "id",
            format!("`{}` differs from the directory name `{name}`", manifest.id),
        ));
    }
    for required in ["README.md"] {
        if !dir.join(required).is_file() {
            return Err(SpecError::invalid(
                &file,
                "README.md",
                "every challenge has a README.md beside its manifest",
            ));
        }
    }
    if !dir.join(&manifest.workspace_template).is_dir() {
        return Err(SpecError::invalid(
            &file,
            "workspace_template",
            format!("`{}` is not a directory", manifest.workspace_template),
        ));
    }
    let inputs = run_inputs(&file, &dir.join(&manifest.workspace_template), &manifest)?;
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let prompt = PromptLayer::load(root, &rel.join(&manifest.prompt).to_string_lossy())?;
    let mut scripts = BTreeMap::new();
    for (key, path) in &manifest.scripts {
        if key != "default" && key.parse::<Profile>().is_err() {
            return Err(SpecError::invalid(
                &file,
                format!("flows.{key}"),
                "a script is keyed by a profile (none, skills, all) or `default`",
            ));
        }
        let script_file = dir.join(path);
        let script = Script::load(&script_file)?;
        if script.capability != manifest.id {
            return Err(SpecError::invalid(
                &script_file,
                "capability",
                format!(
                    "`{}` is not the challenge id `{}`",
                    script.capability, manifest.id
                ),
            ));
        }
        scripts.insert(key.clone(), script);
    }
    Ok(Challenge {
        dir: dir.to_path_buf(),
        manifest,
        manifest_sha256: crate::hash::sha256(&bytes),
        prompt,
        scripts,
        inputs,
    })
}

/// Each required run's input (`work.runs[].input`): a regular file of the workspace
/// template, read now so that what the run must have computed on is the template's,
/// not whatever the agent's copy holds by then.
fn run_inputs(file: &Path, template: &Path, m: &Manifest) -> Result<Vec<RunInput>, SpecError> {
    let mut out = Vec::new();
    for (i, r) in m.work.runs.iter().enumerate() {
        let Some(input) = &r.input else {
            continue;
        };
        let bad = |why: String| {
            SpecError::invalid(
                file,
                format!("work.runs[{i}].input"),
                format!("`{input}` is not a file of the workspace template: {why}"),
            )
        };
        let path = template.join(input);
        let meta = std::fs::symlink_metadata(&path).map_err(|e| bad(e.to_string()))?;
        if !meta.is_file() {
            return Err(bad("not a regular file".into()));
        }
        // No link among its directories leads out of the template.
        let inside = std::fs::canonicalize(&path)
            .ok()
            .zip(std::fs::canonicalize(template).ok())
            .is_some_and(|(p, t)| p.starts_with(t));
        if !inside {
            return Err(bad("it lies outside the template".into()));
        }
        let bytes = std::fs::read(&path).map_err(|e| bad(e.to_string()))?;
        out.push(RunInput::of(&r.id, input, &bytes));
    }
    Ok(out)
}

/// `challenges/` at the repository root (`GAUNTLET_CHALLENGES_DIR` overrides it in
/// `Config::challenges_dir`).
pub fn default_root() -> PathBuf {
    crate::binaries::repo_root().join("challenges")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A challenge directory `c` under a fresh root whose run of the app names `input`.
    fn challenge_with_input(input: &str) -> (tempfile::TempDir, PathBuf) {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("c");
        std::fs::create_dir_all(dir.join("workspace_template/sub")).expect("mkdir");
        std::fs::write(dir.join("workspace_template/m.txt"), "12.5 7\n-2.75\n").expect("write");
        std::fs::write(dir.join("README.md"), "# c\n").expect("write");
        std::fs::write(dir.join("challenge-prompt.md"), "Do it.\n").expect("write");
        std::fs::write(
            dir.join("challenge.yaml"),
            format!("version: 1\nid: c\ntitle: C\napp: cli-tally\nprompt: challenge-prompt.md\nworkspace_template: workspace_template\nreport:\n  required_fields: [count]\nwork:\n  runs:\n    - id: ran\n      program: app\n      args: ['stats']\n      input: {input}\n"),
        )
        .expect("write");
        (root, dir)
    }

    #[test]
    fn a_required_runs_input_is_read_from_the_workspace_template_at_load_time() {
        let (root, dir) = challenge_with_input("m.txt");
        let c = load_one(root.path(), &dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            c.inputs,
            [RunInput {
                run: "ran".into(),
                file: "m.txt".into(),
                bytes: 13,
                sha256: crate::hash::sha256(b"12.5 7\n-2.75\n"),
                words: Some(vec!["12.5".into(), "7".into(), "-2.75".into()]),
            }]
        );
    }

    #[test]
    fn an_input_that_is_not_a_file_of_the_template_is_refused_naming_the_file_and_field() {
        for input in ["missing.txt", "sub", "link.txt"] {
            let (root, dir) = challenge_with_input(input);
            std::os::unix::fs::symlink("/etc/hostname", dir.join("workspace_template/link.txt"))
                .expect("symlink");
            let e = load_one(root.path(), &dir)
                .err()
                .unwrap_or_else(|| panic!("{input}: accepted"))
                .to_string();
            assert!(
                e.contains("c/challenge.yaml")
                    && e.contains("work.runs[0].input")
                    && e.contains(&format!(
                        "`{input}` is not a file of the workspace template"
                    )),
                "{input}: {e}"
            );
        }
    }
}
