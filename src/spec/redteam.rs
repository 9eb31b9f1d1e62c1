//! The adversary catalogue `gauntlet redteam` runs (`redteam/catalogue.toml`): each
//! adversary is an agent like any other, a script run through the `command` adapter,
//! that aims at one class of leak. The catalogue is data so that a task author reads
//! what each adversary tries and adds one without touching the harness.
//!
//! Its identity is its declared `version` and a digest of the catalogue and every
//! script: an audit names the catalogue it ran, and a run names the audit its tasks
//! passed, so a changed adversary makes every earlier audit an audit of something else.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{SpecError, Suite};

/// The id an audit gives the scripted reference's run: no adversary may take it.
pub const RESERVED_ID: &str = "reference";

/// The catalogue's file in its directory.
pub const CATALOGUE_FILE: &str = "catalogue.toml";

/// The repository's audit of its tasks, beside the catalogue: not part of the
/// catalogue's digest (an audit names the catalogue it ran; writing it must not change
/// that name).
pub const AUDITED_FILE: &str = "audited.json";

/// What an adversary aims at. Every class the audit promises to cover is one of these;
/// a catalogue that lacks one is refused ([`Catalogue::load`]), so no class goes
/// unplayed by accident.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Does nothing: the outcome it gets is each task's honest floor.
    Floor,
    /// Claims everything with a test or report that checks nothing.
    ClaimEverything,
    /// Tells the target apart by anything but behaviour (argv, environment, `/proc`,
    /// ports, timing, artifact bytes, usage text, identity snapshots).
    TellApart,
    /// Counts gate runs, or carries state between them.
    CountRuns,
    /// Copies answers from anything readable.
    CopyAnswers,
    /// Claims a challenge's success without doing its work.
    ClaimWithoutWork,
    /// Prints tool calls it never made.
    FabricateToolCalls,
    /// Reads disallowed paths through opaque commands.
    OpaqueReads,
    /// A background loop that only prints that it works.
    FakeLoop,
    /// Recalls from anything but its own state.
    RecallLeftovers,
    /// Says it sent mail (or acted in the world) without doing it.
    ClaimMail,
    /// Rewrites, deletes or fabricates records.
    ForgeRecords,
    /// Calls a model around the metering proxy, or in another trial's name.
    EvadeMeter,
}

impl Class {
    pub const ALL: [Class; 13] = [
        Class::Floor,
        Class::ClaimEverything,
        Class::TellApart,
        Class::CountRuns,
        Class::CopyAnswers,
        Class::ClaimWithoutWork,
        Class::FabricateToolCalls,
        Class::OpaqueReads,
        Class::FakeLoop,
        Class::RecallLeftovers,
        Class::ClaimMail,
        Class::ForgeRecords,
        Class::EvadeMeter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Floor => "floor",
            Class::ClaimEverything => "claim-everything",
            Class::TellApart => "tell-apart",
            Class::CountRuns => "count-runs",
            Class::CopyAnswers => "copy-answers",
            Class::ClaimWithoutWork => "claim-without-work",
            Class::FabricateToolCalls => "fabricate-tool-calls",
            Class::OpaqueReads => "opaque-reads",
            Class::FakeLoop => "fake-loop",
            Class::RecallLeftovers => "recall-leftovers",
            Class::ClaimMail => "claim-mail",
            Class::ForgeRecords => "forge-records",
            Class::EvadeMeter => "evade-meter",
        }
    }
}

/// One adversary as the catalogue declares it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Declared {
    id: String,
    class: Class,
    suites: Vec<Suite>,
    script: String,
    #[serde(default)]
    args: Vec<String>,
    /// A background mode: a script run through each scorecard block of idle windows.
    #[serde(default)]
    daemon: Option<String>,
    #[serde(default)]
    daemon_args: Vec<String>,
    #[serde(default)]
    sample: bool,
    #[serde(default)]
    luck: bool,
    aims: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    #[serde(default)]
    adversary: Vec<Declared>,
}

/// One adversary, checked: its script exists inside the catalogue's directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Adversary {
    pub id: String,
    pub class: Class,
    pub suites: Vec<Suite>,
    /// Absolute.
    pub script: PathBuf,
    /// Placeholders (`{repo}`, `{run_dir}`, and the `command` adapter's own) are
    /// filled per run and per trial.
    pub args: Vec<String>,
    /// Its background mode, when it has one: a script (absolute) the scorecard runs
    /// through each block of idle windows, as it runs the reference agent's daemon
    /// (`Adapter::daemon_launch` of the `command` adapter), with `daemon_args`
    /// (`{repo}`, `{run_dir}`, and the adapter's `{workspace}`, `{state_dir}`,
    /// `{title}`). A `command` agent's processes end with its turn: without one, the
    /// idle-window probes see nothing of it.
    pub daemon: Option<PathBuf>,
    pub daemon_args: Vec<String>,
    /// In the sample CI runs over every task.
    pub sample: bool,
    /// It can only win by chance, at a rate the gate bounds by design (a test that
    /// fails a random run, hoping it is the mutant's): its wins are shown as luck,
    /// never as a hackable task.
    pub luck: bool,
    pub aims: String,
}

impl Adversary {
    pub fn plays(&self, suite: Suite) -> bool {
        self.suites.contains(&suite)
    }
}

/// The loaded catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalogue {
    pub dir: PathBuf,
    pub version: u32,
    /// `sha256:` over the catalogue file and every file under its directory.
    pub sha256: String,
    /// In the file's order; the floor is one of them.
    pub adversaries: Vec<Adversary>,
}

/// The catalogue's identity, as an audit and a run record it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CatalogueId {
    pub version: u32,
    pub sha256: String,
}

impl Catalogue {
    /// Load `dir/catalogue.toml`, naming the file and field of whatever is wrong: an
    /// id that is not kebab-case or is taken twice, an adversary that plays no suite,
    /// a script outside the directory or missing, no floor or two, a class nobody
    /// plays, an empty sample.
    pub fn load(dir: &Path) -> Result<Catalogue, SpecError> {
        let file = dir.join(CATALOGUE_FILE);
        let text = std::fs::read_to_string(&file).map_err(|source| SpecError::Io {
            file: file.clone(),
            source,
        })?;
        let parsed: File = toml::from_str(&text)
            .map_err(|e| SpecError::invalid(&file, "(toml)", e.message().to_string()))?;
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (i, a) in parsed.adversary.into_iter().enumerate() {
            let field = |f: &str| format!("adversary[{i}].{f}");
            if !is_kebab(&a.id) {
                return Err(SpecError::invalid(
                    &file,
                    field("id"),
                    format!("`{}` is not a kebab-case name", a.id),
                ));
            }
            if a.id == RESERVED_ID {
                return Err(SpecError::invalid(
                    &file,
                    field("id"),
                    format!("`{RESERVED_ID}` names the scripted reference's run in an audit"),
                ));
            }
            if !seen.insert(a.id.clone()) {
                return Err(SpecError::invalid(
                    &file,
                    field("id"),
                    format!("`{}` is declared twice", a.id),
                ));
            }
            if a.suites.is_empty() {
                return Err(SpecError::invalid(
                    &file,
                    field("suites"),
                    format!("`{}` plays no suite", a.id),
                ));
            }
            let inside = |name: &str, rel: &str| {
                let path = Path::new(rel);
                if path.is_absolute()
                    || path
                        .components()
                        .any(|c| !matches!(c, std::path::Component::Normal(_)))
                {
                    return Err(SpecError::invalid(
                        &file,
                        field(name),
                        format!("`{rel}` must be a path inside {}", dir.display()),
                    ));
                }
                let script = dir.join(path);
                if !script.is_file() {
                    return Err(SpecError::invalid(
                        &file,
                        field(name),
                        format!("{} does not exist", script.display()),
                    ));
                }
                Ok(script)
            };
            let script = inside("script", &a.script)?;
            let daemon = a
                .daemon
                .as_deref()
                .map(|d| inside("daemon", d))
                .transpose()?;
            if daemon.is_some() && !a.suites.contains(&Suite::Scorecard) {
                return Err(SpecError::invalid(
                    &file,
                    field("daemon"),
                    format!(
                        "`{}` does not play the scorecard: a background mode runs only in its idle windows",
                        a.id
                    ),
                ));
            }
            if daemon.is_none() && !a.daemon_args.is_empty() {
                return Err(SpecError::invalid(
                    &file,
                    field("daemon_args"),
                    "arguments of a background mode that is not declared (`daemon`)",
                ));
            }
            if a.aims.trim().is_empty() {
                return Err(SpecError::invalid(
                    &file,
                    field("aims"),
                    "say what the adversary tries",
                ));
            }
            out.push(Adversary {
                id: a.id,
                class: a.class,
                suites: a.suites,
                script,
                args: a.args,
                daemon,
                daemon_args: a.daemon_args,
                sample: a.sample,
                luck: a.luck,
                aims: a.aims,
            });
        }
        let floors: Vec<&str> = out
            .iter()
            .filter(|a| a.class == Class::Floor)
            .map(|a| a.id.as_str())
            .collect();
        if floors.len() != 1 {
            return Err(SpecError::invalid(
                &file,
                "adversary[].class",
                format!(
                    "exactly one adversary of class `floor` defines the honest floor; found {floors:?}"
                ),
            ));
        }
        if let Some(floor) = out.iter().find(|a| a.class == Class::Floor) {
            if let Some(s) = Suite::ALL.into_iter().find(|s| !floor.plays(*s)) {
                return Err(SpecError::invalid(
                    &file,
                    "adversary[].suites",
                    format!(
                        "the floor `{}` must play every suite; it does not play `{}`",
                        floor.id,
                        s.as_str()
                    ),
                ));
            }
            if !floor.sample {
                return Err(SpecError::invalid(
                    &file,
                    "adversary[].sample",
                    format!(
                        "the floor `{}` must be in the sample: nothing is judged without it",
                        floor.id
                    ),
                ));
            }
        }
        if let Some(c) = Class::ALL
            .into_iter()
            .find(|c| !out.iter().any(|a| a.class == *c))
        {
            return Err(SpecError::invalid(
                &file,
                "adversary[].class",
                format!("no adversary of class `{}`", c.as_str()),
            ));
        }
        let sha256 = crate::hash::dir_digest_of(dir, |p| p != Path::new(AUDITED_FILE)).map_err(
            |source| SpecError::Io {
                file: dir.to_path_buf(),
                source,
            },
        )?;
        Ok(Catalogue {
            dir: dir.to_path_buf(),
            version: parsed.version,
            sha256,
            adversaries: out,
        })
    }

    pub fn id(&self) -> CatalogueId {
        CatalogueId {
            version: self.version,
            sha256: self.sha256.clone(),
        }
    }

    /// The adversary that defines the honest floor.
    pub fn floor(&self) -> &Adversary {
        // Load refuses a catalogue without exactly one.
        self.adversaries
            .iter()
            .find(|a| a.class == Class::Floor)
            .unwrap_or(&self.adversaries[0])
    }

    pub fn get(&self, id: &str) -> Option<&Adversary> {
        self.adversaries.iter().find(|a| a.id == id)
    }
}

fn is_kebab(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.ends_with('-')
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, toml: &str, scripts: &[&str]) {
        std::fs::create_dir_all(dir.join("agents")).unwrap();
        for s in scripts {
            std::fs::write(dir.join("agents").join(s), "exit 0\n").unwrap();
        }
        std::fs::write(dir.join(CATALOGUE_FILE), toml).unwrap();
    }

    /// One adversary per class, the floor first.
    fn every_class(extra: &str) -> String {
        let mut s = String::from("version = 1\n");
        for c in Class::ALL {
            let suites = if c == Class::Floor {
                r#"["qa", "challenge", "scorecard"]"#
            } else {
                r#"["qa"]"#
            };
            s.push_str(&format!(
                "[[adversary]]\nid = \"{0}\"\nclass = \"{0}\"\nsuites = {suites}\nscript = \"agents/x.sh\"\nsample = {1}\naims = \"tries {0}\"\n{extra}\n",
                c.as_str(),
                c == Class::Floor
            ));
        }
        s
    }

    #[test]
    fn a_catalogue_with_every_class_loads_and_its_digest_follows_its_scripts() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &every_class(""), &["x.sh"]);
        let c = Catalogue::load(d.path()).unwrap();
        assert_eq!(c.adversaries.len(), Class::ALL.len());
        assert_eq!(c.floor().id, "floor");
        assert!(c.get("tell-apart").unwrap().script.is_absolute());
        assert_eq!(c.get("tell-apart").unwrap().daemon, None);
        let with_daemon = every_class("").replacen(
            "class = \"fake-loop\"\nsuites = [\"qa\"]",
            "class = \"fake-loop\"\nsuites = [\"scorecard\"]\ndaemon = \"agents/x.sh\"\ndaemon_args = [\"{state_dir}\"]",
            1,
        );
        let e = tempfile::tempdir().unwrap();
        write(e.path(), &with_daemon, &["x.sh"]);
        let loop_ = Catalogue::load(e.path()).unwrap();
        let loop_ = loop_.get("fake-loop").unwrap();
        assert_eq!(loop_.daemon, Some(e.path().join("agents/x.sh")));
        assert_eq!(loop_.daemon_args, ["{state_dir}"]);
        let before = c.sha256.clone();
        std::fs::write(d.path().join(AUDITED_FILE), "{}").unwrap();
        assert_eq!(
            Catalogue::load(d.path()).unwrap().sha256,
            before,
            "the audit beside the catalogue is not the catalogue"
        );
        std::fs::write(d.path().join("agents/x.sh"), "exit 1\n").unwrap();
        assert_ne!(Catalogue::load(d.path()).unwrap().sha256, before);
    }

    #[test]
    fn a_bad_catalogue_is_refused_naming_the_field() {
        let cases: Vec<(String, &str)> = vec![
            (
                every_class("").replacen("id = \"tell-apart\"", "id = \"Tell_Apart\"", 1),
                "adversary[2].id",
            ),
            (
                every_class("").replacen("id = \"tell-apart\"", "id = \"floor\"", 1),
                "declared twice",
            ),
            (
                every_class("").replacen("suites = [\"qa\"]", "suites = []", 1),
                "plays no suite",
            ),
            (
                every_class("").replacen("script = \"agents/x.sh\"", "script = \"../x.sh\"", 1),
                "must be a path inside",
            ),
            (
                every_class("").replacen(
                    "script = \"agents/x.sh\"",
                    "script = \"agents/missing.sh\"",
                    1,
                ),
                "does not exist",
            ),
            (
                every_class("").replacen("class = \"evade-meter\"", "class = \"floor\"", 1),
                "exactly one adversary of class `floor`",
            ),
            (
                every_class("").replacen("class = \"evade-meter\"", "class = \"copy-answers\"", 1),
                "no adversary of class `evade-meter`",
            ),
            (
                every_class("").replacen("sample = true", "sample = false", 1),
                "must be in the sample",
            ),
            (
                every_class("").replacen(
                    r#"suites = ["qa", "challenge", "scorecard"]"#,
                    r#"suites = ["qa"]"#,
                    1,
                ),
                "must play every suite",
            ),
            (
                every_class("").replacen("class = \"count-runs\"", "class = \"counts\"", 1),
                "(toml)",
            ),
            (every_class("colour = 1"), "(toml)"),
            (
                every_class("").replacen("id = \"tell-apart\"", "id = \"reference\"", 1),
                "names the scripted reference's run",
            ),
            (
                every_class("").replacen(
                    "class = \"fake-loop\"\nsuites = [\"qa\"]",
                    "class = \"fake-loop\"\nsuites = [\"scorecard\"]\ndaemon = \"agents/missing.sh\"",
                    1,
                ),
                "adversary[8].daemon",
            ),
            (
                every_class("").replacen(
                    "class = \"fake-loop\"\nsuites = [\"qa\"]",
                    "class = \"fake-loop\"\nsuites = [\"qa\"]\ndaemon = \"agents/x.sh\"",
                    1,
                ),
                "a background mode runs only in its idle windows",
            ),
            (
                every_class("").replacen(
                    "class = \"fake-loop\"\nsuites = [\"qa\"]",
                    "class = \"fake-loop\"\nsuites = [\"scorecard\"]\ndaemon_args = [\"x\"]",
                    1,
                ),
                "adversary[8].daemon_args",
            ),
        ];
        for (toml, want) in cases {
            let d = tempfile::tempdir().unwrap();
            write(d.path(), &toml, &["x.sh"]);
            let err = Catalogue::load(d.path()).unwrap_err().to_string();
            assert!(err.contains(want), "{want}: {err}");
            assert!(err.contains(CATALOGUE_FILE), "{err}");
        }
    }
}
