//! Raw evidence and the pure parsers that read it.
//!
//! Raw bytes (agent stdout/stderr, gate runs) are what records keep; everything else —
//! events, the final message, the claim — is derived from them by pure functions here,
//! at run time and again at rescore time.

pub mod claim;
pub mod events;
pub mod independence;
pub mod infra;
pub mod normalize;
pub mod observed;
pub mod observed_execs;
pub mod observed_policy;
pub mod observed_requests;
pub mod policy;
pub mod provider;
pub mod streams;
#[cfg(test)]
pub(crate) mod test_support;
pub mod tree;
pub mod usage;

use serde::{Deserialize, Serialize};

pub use claim::{parse_claims, Claim, ClaimStatus, ClaimTest, ClaimsFound};
pub use events::{parse_transcript, Event, Transcript};
pub use normalize::{AgentReport, Parsed, StreamParser};

/// A stream of bytes an observed process wrote, kept on disk beside the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RawFile {
    /// Path relative to the trial directory.
    pub path: String,
    /// Bytes kept on disk (at most the configured cap).
    pub bytes: u64,
    /// Bytes the process wrote in all; more than `bytes` means the rest was dropped.
    pub bytes_seen: u64,
    pub sha256: String,
}

impl RawFile {
    pub fn truncated(&self) -> bool {
        self.bytes_seen > self.bytes
    }
}

/// Read only from a JSON object naming each of its four members once, sizes written as
/// unsigned integers ([`raw_file_de`] says why).
impl<'de> Deserialize<'de> for RawFile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawFile, D::Error> {
        d.deserialize_map(raw_file_de::Object)
    }
}

/// How a record's raw file is read: stricter than serde's derive, which would also take
/// the array `[path, bytes, bytes_seen, sha256]`.
///
/// The raw-file check (`record::raw`) relies on it: it shows that the raw files a
/// typed record holds are every raw file its JSON names by counting the `"sha256"`
/// keys in the record's bytes, which holds only if each of those raw files was an
/// object with one `sha256` key and with sizes the check's JSON scan takes for sizes
/// (integers read as unsigned, whatever a JSON reader makes of `-0`).
mod raw_file_de {
    use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
    use serde::Deserialize;

    use super::RawFile;

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "snake_case")]
    enum Member {
        Path,
        Bytes,
        BytesSeen,
        Sha256,
        #[serde(other)]
        Other,
    }

    /// A size: a JSON integer read as unsigned, never a negative zero or a float.
    struct Size(u64);

    impl<'de> Deserialize<'de> for Size {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
            struct Unsigned;
            impl Visitor<'_> for Unsigned {
                type Value = Size;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an unsigned integer")
                }
                fn visit_u64<E: Error>(self, v: u64) -> Result<Size, E> {
                    Ok(Size(v))
                }
            }
            d.deserialize_u64(Unsigned)
        }
    }

    pub(super) struct Object;

    fn once<T, E: Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
        if slot.replace(value).is_some() {
            return Err(E::duplicate_field(name));
        }
        Ok(())
    }

    impl<'de> Visitor<'de> for Object {
        type Value = RawFile;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a raw file: an object with path, bytes, bytes_seen and sha256")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile, A::Error> {
            let (mut path, mut bytes, mut bytes_seen, mut sha256) = (None, None, None, None);
            while let Some(member) = map.next_key::<Member>()? {
                match member {
                    Member::Path => once(&mut path, map.next_value::<String>()?, "path")?,
                    Member::Bytes => once(&mut bytes, map.next_value::<Size>()?.0, "bytes")?,
                    Member::BytesSeen => {
                        once(&mut bytes_seen, map.next_value::<Size>()?.0, "bytes_seen")?
                    }
                    Member::Sha256 => once(&mut sha256, map.next_value::<String>()?, "sha256")?,
                    Member::Other => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(RawFile {
                path: path.ok_or_else(|| A::Error::missing_field("path"))?,
                bytes: bytes.ok_or_else(|| A::Error::missing_field("bytes"))?,
                bytes_seen: bytes_seen.ok_or_else(|| A::Error::missing_field("bytes_seen"))?,
                sha256: sha256.ok_or_else(|| A::Error::missing_field("sha256"))?,
            })
        }
    }
}

/// How an observed process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessEnd {
    /// Exit code when it exited; `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The harness killed it at its deadline.
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The harness killed it because the run was asked to stop (the signal's name,
    /// `SIGINT` or `SIGTERM`): what it wrote until then is kept, and it is judged on
    /// nothing, since it never had its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl ProcessEnd {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && self.interrupted.is_none()
    }

    /// How the process ended, in words.
    pub fn describe(&self) -> String {
        if let Some(signal) = &self.interrupted {
            format!(
                "stopped after {} ms: the run was interrupted ({signal})",
                self.duration_ms
            )
        } else if self.timed_out {
            format!("timed out after {} ms", self.duration_ms)
        } else if let Some(sig) = self.signal {
            format!("killed by signal {sig}")
        } else {
            match self.exit_code {
                Some(c) => format!("exited {c}"),
                None => "ended without an exit code".into(),
            }
        }
    }
}

/// One run of a claimed test, by the harness.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateRun {
    /// `app` for the frozen app, `mutant` for the capability's mutant, `independent`
    /// for the mutant of another capability that leaves this one intact.
    pub target: GateTarget,
    /// For an `independent` run: the capability whose mutant it ran against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutant_of: Option<String>,
    pub attempt: u32,
    pub command: String,
    pub end: ProcessEnd,
    pub stdout: RawFile,
    pub stderr: RawFile,
    /// The bounds the harness's processes for this run met, each named (a CLI app's
    /// run stopped at its input, time, memory or task bound): such a run failed,
    /// whatever the test made of it, since what it tested is not the app's behaviour.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceeded: Vec<String>,
}

impl GateRun {
    /// The test passed, and on an app that ran within its bounds.
    pub fn passed(&self) -> bool {
        self.end.success() && self.exceeded.is_empty()
    }

    /// How the run ended, in words, with the first bound it met.
    pub fn describe(&self) -> String {
        match self.exceeded.first() {
            Some(bound) => format!("{} ({bound})", self.end.describe()),
            None => self.end.describe(),
        }
    }
}

/// A required output file as the harness read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputObservation {
    pub id: String,
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Why it could not be read (missing, not a regular file, too long).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One run of a CLI app the relay made for a sandboxed process, as the relay saw it
/// outside the sandbox: what the app itself was given and what it answered. A run the
/// kernel saw asked for in the sandbox is only a request; this is the app running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RelayedRun {
    /// The arguments after the program, cut like an exec's (at most
    /// [`observed::MAX_ARGS`] of at most [`observed::MAX_ARG_BYTES`]).
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub args_cut: bool,
    /// Standard input passed to the app.
    pub stdin_bytes: u64,
    pub stdin_sha256: String,
    /// Standard output passed back to the caller.
    pub stdout_bytes: u64,
    pub stdout_sha256: String,
    /// The exit code (128 + the signal for a signal), as the caller got it.
    pub exit_code: i32,
    /// The bound it met, if it was stopped at one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exceeded: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GateTarget {
    App,
    Mutant,
    /// The mutant of another capability, one that leaves this capability intact
    /// ([`independence`]): a test of this capability must pass on it.
    Independent,
}

/// The gate's check that a claimed test tests its capability and not the app's build:
/// which mutants of other capabilities leave it intact, and which of those it ran on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Specificity {
    /// The app's independence matrix ([`independence::Matrix`]), kept in the trial
    /// directory: rescore reads the candidates from it again.
    pub matrix: RawFile,
    /// The capabilities whose mutants leave this one intact, per the matrix.
    pub independent: Vec<String>,
    /// At most this many of them are run (`GAUNTLET_INDEPENDENT_MUTANTS`).
    pub limit: u32,
    /// Those drawn for this gate, from the OS's entropy at run time, in the order they ran.
    pub drawn: Vec<String>,
}

/// What the harness observed when it re-ran the agent's claimed test.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Gate {
    /// N: how many green runs against the app were required.
    pub required: u32,
    pub runs: Vec<GateRun>,
    /// Why the gate could not run at all (test dir missing or escaping the workspace).
    pub not_run: Option<String>,
    /// The order the runs were planned in, drawn from the OS's entropy at run time (the
    /// mutant's place among the app's runs). Empty in records from before the draw.
    #[serde(default)]
    pub order: Vec<GateTarget>,
    /// The run was asked to stop (the signal's name) before every planned run was
    /// made: the gate is unfinished, not red.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// The runs against independent mutants, and what they were drawn from. Absent in
    /// records from before the gate checked specificity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specificity: Option<Specificity>,
}

impl Gate {
    pub fn app_runs(&self) -> impl Iterator<Item = &GateRun> {
        self.runs.iter().filter(|r| r.target == GateTarget::App)
    }
    pub fn mutant_run(&self) -> Option<&GateRun> {
        self.runs.iter().find(|r| r.target == GateTarget::Mutant)
    }
    /// The run against the mutant of `capability`, when it was drawn as independent.
    pub fn independent_run(&self, capability: &str) -> Option<&GateRun> {
        self.runs.iter().find(|r| {
            r.target == GateTarget::Independent && r.mutant_of.as_deref() == Some(capability)
        })
    }

    /// The signal that stopped the gate part-way, whether between runs or during one.
    pub fn interrupted(&self) -> Option<&str> {
        self.interrupted
            .as_deref()
            .or_else(|| self.runs.iter().find_map(|r| r.end.interrupted.as_deref()))
    }
}

/// The agent process as observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentRun {
    pub command: Vec<String>,
    pub end: ProcessEnd,
    pub stdout: RawFile,
    pub stderr: RawFile,
    /// Processes of the agent still alive after it ended, killed by the harness.
    pub stragglers_killed: u32,
}

impl AgentRun {
    /// The agent as recorded before it starts: empty output files, no exit. A trial
    /// whose setup fails keeps this, so its record still names files rescore can read.
    pub fn not_started() -> AgentRun {
        let empty = |path: &str| RawFile {
            path: path.into(),
            bytes: 0,
            bytes_seen: 0,
            sha256: crate::hash::sha256(b""),
        };
        AgentRun {
            command: vec![],
            end: ProcessEnd {
                exit_code: None,
                signal: None,
                timed_out: false,
                duration_ms: 0,
                interrupted: None,
            },
            stdout: empty("agent.stdout"),
            stderr: empty("agent.stderr"),
            stragglers_killed: 0,
        }
    }
}

/// Everything observed in one qa trial. Scoring reads this and the raw files it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QaEvidence {
    /// The prompt the harness gave the agent (`prompt.md` in the trial directory),
    /// hashed like every raw file; its copy in the workspace is the agent's. Absent in
    /// records from before the harness rendered one prompt for every agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<RawFile>,
    pub agent: AgentRun,
    pub gate: Option<Gate>,
    /// Every model call the proxy metered, in order.
    pub usage: Vec<usage::UsageEntry>,
    /// What the proxy relayed, call by call (`agent.calls.jsonl`: each request and
    /// response body, bounded), for reading; verdicts never depend on it. Absent when no
    /// call was made, and in records from before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<RawFile>,
    /// Why the trial could not complete setup (app failed to start, ...), if so.
    pub setup_error: Option<String>,
    /// The agent's own account of its run, normalized from its stdout: steps, tool
    /// calls, texts, errors, and the tokens and cost it reported. Derived evidence kept
    /// for reading and comparing; verdicts never depend on it, and the tokens gauntlet
    /// reports are the proxy's `usage`, never these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_report: Option<AgentReport>,
    /// The limit the trial hit, if any: the proxy's refusal once the token budget was
    /// spent, or the agent's wall-clock deadline. The trial is still scored from the
    /// evidence it has; this says why that evidence may be short.
    #[serde(default)]
    pub budget_hit: Option<String>,
    /// The app's and the mutants' logs (the agent's session and every gate run), hashed
    /// like every other raw file. Absent in records from before they were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub world_logs: Vec<RawFile>,
}

impl QaEvidence {
    /// Every raw file this evidence names, for the raw-file check to verify without
    /// scanning the record's JSON again (`record::raw`). A file left out here costs
    /// that check its shortcut, never a file unchecked: it counts the raw files the
    /// record's bytes name and scans them whenever the counts differ.
    pub fn raw_files(&self) -> Vec<&RawFile> {
        let mut out: Vec<&RawFile> = Vec::with_capacity(4 + 2 * self.world_logs.len());
        out.extend(&self.prompt);
        out.push(&self.agent.stdout);
        out.push(&self.agent.stderr);
        for run in self.gate.iter().flat_map(|g| &g.runs) {
            out.push(&run.stdout);
            out.push(&run.stderr);
        }
        out.extend(&self.calls);
        out.extend(&self.world_logs);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::RawFile;

    #[test]
    fn a_raw_file_is_read_only_from_an_object_naming_each_member_once() {
        let read = |json: &str| serde_json::from_str::<RawFile>(json).map_err(|e| e.to_string());
        let ok = read(r#"{"sha256":"s","x":[{"y":1}],"path":"p","bytes_seen":3,"bytes":2}"#);
        assert_eq!(
            ok,
            Ok(RawFile {
                path: "p".into(),
                bytes: 2,
                bytes_seen: 3,
                sha256: "s".into(),
            })
        );
        for (json, why) in [
            (r#"["p",2,3,"s"]"#, "invalid type: sequence"),
            (
                r#"{"path":"p","bytes":2,"bytes_seen":3}"#,
                "missing field `sha256`",
            ),
            (
                r#"{"path":"p","bytes":2,"bytes_seen":3,"sha256":"s","sha256":"t"}"#,
                "duplicate field `sha256`",
            ),
            (
                r#"{"path":"p","bytes":-0,"bytes_seen":3,"sha256":"s"}"#,
                "expected an unsigned integer",
            ),
            (
                r#"{"path":"p","bytes":-1,"bytes_seen":3,"sha256":"s"}"#,
                "expected an unsigned integer",
            ),
            (
                r#"{"path":"p","bytes":2.0,"bytes_seen":3,"sha256":"s"}"#,
                "expected an unsigned integer",
            ),
            (
                r#"{"path":1,"bytes":2,"bytes_seen":3,"sha256":"s"}"#,
                "expected a string",
            ),
        ] {
            let err = read(json).expect_err(json);
            assert!(err.contains(why), "{json}: {err}");
        }
    }
}
