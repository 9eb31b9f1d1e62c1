//! Synthetic runs for tests and benchmarks: records written exactly as a real run
//! writes them — raw agent output on disk, hashes, gate runs — with the verdict
//! derived by the real scorer from that evidence, so they rescore and report through
//! the same code as real records. Only the agent is made up: its behaviour per trial
//! is drawn deterministically from a seed.

use std::path::{Path, PathBuf};

use crate::config::Mode;
use crate::evidence::streams::AgentKind;
use crate::evidence::usage::UsageEntry;
use crate::evidence::{AgentRun, Gate, GateRun, GateTarget, ProcessEnd, QaEvidence, RawFile};
use crate::record::rescore::derive_qa_verdict;
use crate::record::{self, QaRecord, QaSpecRef, RecordConfig};
use crate::spec::CapabilityKind;

/// The shape of a synthetic run.
#[derive(Debug, Clone)]
pub struct SyntheticRun {
    /// (app, [(capability, kind)])
    pub apps: Vec<(String, Vec<(String, CapabilityKind)>)>,
    /// K: repeats per capability.
    pub repeats: u32,
    /// N: green re-runs a verified claim needs.
    pub n: u32,
    pub seed: u64,
    pub run_id: String,
    pub model: String,
    pub mode: Mode,
}

impl SyntheticRun {
    /// The fixed run of the report snapshots: two apps, every kind, K = 3.
    pub fn fixed() -> SyntheticRun {
        use CapabilityKind::*;
        let caps = |v: &[(&str, CapabilityKind)]| {
            v.iter()
                .map(|(c, k)| (c.to_string(), *k))
                .collect::<Vec<_>>()
        };
        SyntheticRun {
            apps: vec![
                (
                    "api-ledger".into(),
                    caps(&[
                        ("balance", Feature),
                        ("health", Feature),
                        ("prompt-under-load", Ambiguous),
                        ("reject-invalid-amount", Negative),
                    ]),
                ),
                (
                    "cli-tally".into(),
                    caps(&[("count-words", Feature), ("reject-missing-file", Negative)]),
                ),
            ],
            repeats: 3,
            n: 3,
            seed: 7,
            run_id: "synthetic-run".into(),
            model: "synthetic-model".into(),
            mode: Mode::Byok,
        }
    }

    /// About `trials` trials over ten apps, K = 10 (the report benchmark's run).
    pub fn large(trials: usize) -> SyntheticRun {
        let per_app = trials.div_ceil(100).max(1);
        let kinds = [
            CapabilityKind::Feature,
            CapabilityKind::Negative,
            CapabilityKind::Ambiguous,
        ];
        SyntheticRun {
            apps: (0..10)
                .map(|a| {
                    (
                        format!("app-{a:02}"),
                        (0..per_app)
                            .map(|c| (format!("cap-{c:04}"), kinds[c % 3]))
                            .collect(),
                    )
                })
                .collect(),
            repeats: 10,
            n: 3,
            seed: 11,
            run_id: "synthetic-large".into(),
            model: "synthetic-model".into(),
            mode: Mode::Byok,
        }
    }

    /// Write every trial into `run_dir`; returns the record files in plan order.
    pub fn write(&self, run_dir: &Path) -> Result<Vec<PathBuf>, SyntheticError> {
        let mut files = Vec::new();
        let mut index = 0u64;
        for (app, caps) in &self.apps {
            for (cap, kind) in caps {
                for r in 1..=self.repeats {
                    let rec_dir = self.write_trial(run_dir, app, cap, *kind, r, index)?;
                    files.push(rec_dir.join(record::RECORD_FILE));
                    index += 1;
                }
            }
        }
        Ok(files)
    }

    fn write_trial(
        &self,
        run_dir: &Path,
        app: &str,
        cap: &str,
        kind: CapabilityKind,
        repeat: u32,
        index: u64,
    ) -> Result<PathBuf, SyntheticError> {
        let name = crate::plan::names::qa(app, cap, (self.repeats > 1).then_some(repeat));
        let h = draw(self.seed, &name);
        let dir = record::create_trial_dir(run_dir, &name)?;
        let behaviour = match (kind.is_verifiable(), h % 20) {
            (true, 0..=11) => Behaviour::Proves,
            (true, 12..=14) => Behaviour::Honest,
            (true, 15..=17) => Behaviour::WeakTest,
            (false, 0..=13) => Behaviour::Honest,
            (false, 14..=17) => Behaviour::Overclaims,
            _ => Behaviour::Crashes,
        };
        let claim = |status: &str, test: bool| {
            let test = if test {
                r#","test":{"dir":"t","command":"sh check.sh"}"#
            } else {
                ""
            };
            let body = format!(r#"{{"capability":"{cap}","status":"{status}"{test}}}"#);
            let text = format!("Done.\n```gauntlet-claim\n{body}\n```");
            serde_json::json!({"type": "final", "text": text}).to_string()
        };
        let mut stdout =
            serde_json::json!({"type": "start", "agent": "synthetic", "model": self.model})
                .to_string();
        stdout.push('\n');
        let mut exit = 0;
        match behaviour {
            Behaviour::Proves | Behaviour::WeakTest | Behaviour::Overclaims => {
                stdout.push_str(&claim("verified", true))
            }
            Behaviour::Honest => stdout.push_str(&claim("unverified", false)),
            Behaviour::Crashes => {
                stdout.push_str(r#"{"type":"error","message":"synthetic crash"}"#);
                exit = 1;
            }
        }
        stdout.push('\n');
        let raw = |rel: &str, bytes: &[u8]| -> Result<RawFile, SyntheticError> {
            let f = dir.join(rel);
            let io = |path: &Path| {
                let path = path.to_path_buf();
                move |source| SyntheticError::Io { path, source }
            };
            if let Some(p) = f.parent() {
                std::fs::create_dir_all(p).map_err(io(p))?;
            }
            std::fs::write(&f, bytes).map_err(io(&f))?;
            Ok(RawFile {
                path: rel.into(),
                bytes: bytes.len() as u64,
                bytes_seen: bytes.len() as u64,
                sha256: crate::hash::sha256(bytes),
            })
        };
        let wall_ms = 2_000 + (h >> 8) % 58_000;
        let end = |code: i32, ms: u64| ProcessEnd {
            exit_code: Some(code),
            signal: None,
            timed_out: false,
            duration_ms: ms,
            interrupted: None,
        };
        let gate = match behaviour {
            Behaviour::Proves | Behaviour::WeakTest if kind.is_verifiable() => {
                let mut runs = Vec::new();
                for attempt in 1..=self.n {
                    runs.push(GateRun {
                        target: GateTarget::App,
                        mutant_of: None,
                        attempt,
                        command: "sh check.sh".into(),
                        end: end(0, 40),
                        stdout: raw(&format!("gate/app-{attempt}.stdout"), b"ok\n")?,
                        stderr: raw(&format!("gate/app-{attempt}.stderr"), b"")?,
                        exceeded: vec![],
                    });
                }
                let mutant_code = if behaviour == Behaviour::Proves { 1 } else { 0 };
                runs.push(GateRun {
                    target: GateTarget::Mutant,
                    mutant_of: None,
                    attempt: 1,
                    command: "sh check.sh".into(),
                    end: end(mutant_code, 40),
                    stdout: raw("gate/mutant-1.stdout", b"")?,
                    stderr: raw("gate/mutant-1.stderr", b"")?,
                    exceeded: vec![],
                });
                Some(Gate {
                    order: vec![],
                    required: self.n,
                    runs,
                    not_run: None,
                    interrupted: None,
                    specificity: None,
                })
            }
            _ => None,
        };
        let calls = 1 + (h >> 16) % 4;
        let usage = (0..calls)
            .map(|seq| UsageEntry {
                seq,
                protocol: "chat".into(),
                path: "/v1/chat/completions".into(),
                model: Some(self.model.clone()),
                stream: true,
                status: 200,
                source: "upstream".into(),
                input_tokens: Some(800 + (h >> (20 + seq)) % 2_400),
                output_tokens: Some(60 + (h >> (30 + seq)) % 500),
                cached_input_tokens: Some(((h >> (40 + seq)) % 4) * 128),
                reasoning_tokens: None,
                duration_ms: 300 + (h >> 24) % 900,
                error: None,
                ..UsageEntry::default()
            })
            .collect();
        let evidence = QaEvidence {
            calls: None,
            prompt: None,
            agent: AgentRun {
                command: vec!["synthetic-agent".into()],
                end: end(exit, wall_ms - 500),
                stdout: raw("agent.stdout", stdout.as_bytes())?,
                stderr: raw("agent.stderr", b"")?,
                stragglers_killed: 0,
            },
            gate,
            usage,
            setup_error: None,
            agent_report: None,
            budget_hit: None,
            world_logs: vec![],
        };
        let spec = QaSpecRef {
            app: app.into(),
            capability: cap.into(),
            kind,
            app_content_hash: crate::hash::sha256(app.as_bytes()),
            capability_sha256: crate::hash::sha256(format!("{app}::{cap}").as_bytes()),
            script_sha256: None,
            matrix_sha256: None,
        };
        let verdict = derive_qa_verdict(&dir, AgentKind::Reference.name(), &spec, &evidence)?;
        // 2025-01-01T00:00:00Z: every synthetic run starts at the same instant.
        let base = chrono::DateTime::from_timestamp(1_735_689_600, 0)
            .unwrap_or_default()
            .fixed_offset();
        let started = base + chrono::Duration::seconds(60 * index as i64);
        let rec = QaRecord {
            header: record::Header {
                schema_version: record::SCHEMA_VERSION,
                suite: crate::spec::Suite::Qa,
                trial: name,
                run_id: self.run_id.clone(),
                gauntlet_version: "0.0.0-synthetic".into(),
                started_at: started.to_rfc3339(),
                finished_at: (started + chrono::Duration::milliseconds(wall_ms as i64))
                    .to_rfc3339(),
                wall_ms,
                config: RecordConfig {
                    sandbox: crate::config::Sandbox::Sealed,
                    agent: AgentKind::Command.name().into(),
                    agent_version: "synthetic 1.0".into(),
                    model: self.model.clone(),
                    mode: self.mode,
                    n: self.n,
                    timeout_secs: 600.0,
                    gate_timeout_secs: 60.0,
                    output_cap_bytes: 32 << 20,
                    upstream_url: (self.mode == Mode::Byok).then(|| "http://127.0.0.1:9/v1".into()),
                    max_tokens_per_trial: None,
                    scripted_latency_ms: None,
                    scripted_upstream: None,
                    provider_retry: None,
                    commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
                },
            },
            repeat,
            spec,
            evidence,
            verdict,
        };
        record::write_new_json(&dir, record::RECORD_FILE, &rec)?;
        Ok(dir)
    }
}

/// Why a synthetic run could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SyntheticError {
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error(transparent)]
    Score(#[from] record::rescore::RescoreError),
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    /// A real test: green on the app, red on the mutant.
    Proves,
    /// Claims unverified.
    Honest,
    /// A test that also passes on the mutant.
    WeakTest,
    /// Claims verified on an ambiguous capability.
    Overclaims,
    /// Exits 1 with no claim.
    Crashes,
}

/// A deterministic draw per trial, the same on every platform.
fn draw(seed: u64, name: &str) -> u64 {
    let h = crate::hash::sha256(format!("{seed}:{name}").as_bytes());
    u64::from_str_radix(&h["sha256:".len().."sha256:".len() + 16], 16).unwrap_or(seed)
}
