//! The adapter seam: how gauntlet starts an agent and reads what it did.
//!
//! An adapter builds a command line from a [`RunSpec`] and parses the agent's own raw
//! output into a [`Transcript`]. Everything else — workspaces, the environment, the
//! deadline, process groups — is the harness's ([`process`]), the same for every agent.

pub mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::AgentChoice;
use crate::evidence::{parse_transcript, Transcript};
use crate::world::target::Locator;

/// What one qa trial asks of an agent.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub graph_file: PathBuf,
    /// What the agent is pointed at: the app's URL, or a CLI app's binary.
    pub target: Locator,
    pub capability: String,
    pub n: u32,
    pub workspace: PathBuf,
}

/// A command line, before the harness adds its environment and bounds.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<String>,
}

pub trait Adapter: Send + Sync {
    /// Stable name written into records (`reference`, `command`).
    fn name(&self) -> &str;
    /// The agent's version, recorded per run.
    fn version(&self) -> String;
    fn invocation(&self, run: &RunSpec) -> Invocation;
    /// Parse the agent's raw stdout.
    fn parse(&self, stdout: &Path) -> std::io::Result<Transcript> {
        let file = std::fs::File::open(stdout)?;
        Ok(parse_transcript(std::io::BufReader::new(file)))
    }
}

/// `gauntlet-agent`, built by this package.
pub struct Reference {
    pub program: PathBuf,
}

impl Adapter for Reference {
    fn name(&self) -> &str {
        "reference"
    }
    fn version(&self) -> String {
        format!("gauntlet-agent {}", crate::VERSION)
    }
    fn invocation(&self, run: &RunSpec) -> Invocation {
        Invocation {
            program: self.program.clone(),
            args: vec![
                "qa".into(),
                "--graph-file".into(),
                run.graph_file.to_string_lossy().into_owned(),
                match &run.target {
                    Locator::Url(_) => "--url".into(),
                    Locator::Bin(_) => "--bin".into(),
                },
                run.target.to_string(),
                "--capability".into(),
                run.capability.clone(),
                "--n".into(),
                run.n.to_string(),
            ],
        }
    }
}

/// Any executable that speaks docs/agent-protocol.md on stdout. Placeholders in its
/// arguments (`{graph_file}`, `{target}` — the URL or the binary —, `{url}`, `{bin}`,
/// `{capability}`, `{n}`, `{workspace}`) are filled per trial; the same values are in
/// its environment either way.
pub struct Command {
    pub argv: Vec<String>,
}

impl Adapter for Command {
    fn name(&self) -> &str {
        "command"
    }
    fn version(&self) -> String {
        format!("command: {}", shell_words::join(&self.argv))
    }
    fn invocation(&self, run: &RunSpec) -> Invocation {
        let fill = |s: &String| {
            let (url, bin) = match &run.target {
                Locator::Url(u) => (u.clone(), String::new()),
                Locator::Bin(b) => (String::new(), b.to_string_lossy().into_owned()),
            };
            s.replace("{graph_file}", &run.graph_file.to_string_lossy())
                .replace("{target}", &run.target.to_string())
                .replace("{url}", &url)
                .replace("{bin}", &bin)
                .replace("{capability}", &run.capability)
                .replace("{n}", &run.n.to_string())
                .replace("{workspace}", &run.workspace.to_string_lossy())
        };
        let mut argv = self.argv.iter().map(fill);
        Invocation {
            program: PathBuf::from(argv.next().unwrap_or_default()),
            args: argv.collect(),
        }
    }
}

/// The adapter for a configured agent.
pub fn adapter_for(choice: &AgentChoice) -> Box<dyn Adapter> {
    match choice {
        AgentChoice::Reference => Box::new(Reference {
            program: crate::binaries::bin_path("gauntlet-agent"),
        }),
        AgentChoice::Command { argv } => Box::new(Command { argv: argv.clone() }),
    }
}

/// The scrubbed environment every agent starts from: nothing of the caller's leaks in
/// but a sane PATH (gauntlet's binaries first) and locale; the trial adds what the
/// agent needs.
pub fn base_env(home: &Path, tmp: &Path) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    // gauntlet's own binaries come first, so that a claimed test can be
    // `gauntlet flow run check.json` (docs/test-flows.md).
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    env.insert(
        "PATH".into(),
        format!("{}:{path}", crate::binaries::bin_dir().display()),
    );
    // The browser the harness was told to use is the one its flow runs use too.
    if let Ok(chromium) = std::env::var("GAUNTLET_CHROMIUM") {
        env.insert("GAUNTLET_CHROMIUM".into(), chromium);
    }
    env.insert("HOME".into(), home.to_string_lossy().into_owned());
    env.insert("TMPDIR".into(), tmp.to_string_lossy().into_owned());
    env.insert("LANG".into(), "C.UTF-8".into());
    env
}
