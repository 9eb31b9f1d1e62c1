//! The conversation driver: walks a probe's steps against one agent.
//!
//! A prompted turn runs the agent once through its adapter's `prompt_launch` with a
//! [`SessionTurn`]: the same session id for every turn of a session, `resume` after
//! its first turn, and the agent's state directory kept across sessions (a new
//! session is a new id, the same directory). A fresh agent is a new trial: a new,
//! empty state directory, checked empty before the first turn.
//!
//! An idle window is real time (the probe's nominal hours scaled by the configured day): the
//! agent's background mode, when it has one, runs through it unprompted and the sinks
//! keep observing; an agent without one is simply left alone and scores what it does.
//! The harness changes the world between windows (P3.3) through the sinks' mutation API,
//! at a time drawn when the block starts ([`window_hours`]): the probe's windows give the
//! block's length, not the change's time.
//!
//! What outlives a turn is the agent's own: its state directory, and the workspace (a
//! world sink: a file written there is a side effect the probe observes, P5.4 re-runs
//! a write against it). Everything else a process of the probe can write or read is
//! [`Scratch`](super::scratch::Scratch): a fresh HOME and TMPDIR per turn (and per
//! background run), where the adapter puts the turn's prompt file and config, removed
//! when the process is over.
//! The harness writes nothing into the workspace or the state directory for a
//! `command` or `reference` agent, and its own files (streams, proxy calls, sink logs)
//! lie outside every directory a sealed process sees: a stateless agent that reads
//! every file it can reach finds nothing of an earlier turn (issue 45,
//! `scorecard::a_stateless_agent_reading_what_the_harness_left_recalls_nothing`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::{PromptRun, SessionTurn};
use crate::evidence::usage::UsageEntry;
use crate::score::scorecard::{FileObs, ProbeEvidence, SinkEvent, TurnObs, WindowObs};
use crate::spec::scorecard::{Step, WorldChange};
use crate::spec::ScriptStep;
use crate::sys::process;
use crate::trial::{mkdir, Job, SetupError, Streams};
use crate::world::sinks::{now_ms, WorkspaceSnapshot};

use super::background::{self, BackgroundRun};
use super::observe::{file_obs, workspace_events, Phase};
use super::processes::Driver;
use crate::record::scorecard::{reply_of, ProcessRaw};

/// The prompt of a filler turn ("wait N turns").
pub fn filler_prompt(k: u32, n: u32) -> String {
    format!("Just checking in ({k} of {n}); nothing to do. A short reply is fine.")
}

/// What the driver observed, filled in as it goes so that a failure part-way keeps
/// everything before it.
#[derive(Debug, Default)]
pub struct Observed {
    pub evidence: ProbeEvidence,
    pub processes: Vec<ProcessRaw>,
    pub phases: Vec<Phase>,
    pub usage: Vec<UsageEntry>,
    /// Workspace events per step (network events are added from the sinks' logs).
    pub file_events: Vec<SinkEvent>,
}

impl Driver<'_> {
    /// Run every step. Returns `Err` with the reason when the probe cannot go on
    /// (setup failure, the agent died); what was observed until then stays in `obs`.
    pub async fn run(&self, obs: &mut Observed) -> Result<(), SetupError> {
        let mut session = 0u32;
        let mut turn_in_session = 0u32;
        let mut snapshot = self.snapshot(None)?;
        if let Some(cut) = &snapshot.cut {
            return Err(snapshot_cut("before the first step", cut));
        }
        let steps = &self.probe.probe.steps;
        let mut i = 0;
        let mut turn_no = 0u32;
        while i < steps.len() {
            // A run asked to stop starts no further turn or idle window.
            if let Some(stop) = crate::sys::shutdown::requested() {
                return Err(SetupError::Interrupted {
                    signal: stop.name(),
                    before: format!("step {} of {}", i + 1, steps.len()),
                });
            }
            match &steps[i] {
                Step::Turn { label, prompt } => {
                    if session == 0 {
                        session = 1;
                    }
                    turn_no += 1;
                    let prompt = self.bank.render(prompt);
                    self.turn(
                        obs,
                        &mut snapshot,
                        label,
                        &prompt,
                        session,
                        turn_in_session,
                        turn_no,
                    )
                    .await?;
                    turn_in_session += 1;
                }
                Step::Filler(n) => {
                    if session == 0 {
                        session = 1;
                    }
                    for k in 1..=*n {
                        turn_no += 1;
                        let label = format!("filler-{turn_no}");
                        let prompt = filler_prompt(k, *n);
                        self.turn(
                            obs,
                            &mut snapshot,
                            &label,
                            &prompt,
                            session,
                            turn_in_session,
                            turn_no,
                        )
                        .await?;
                        turn_in_session += 1;
                    }
                }
                Step::NewSession => {
                    session = session.max(1) + 1;
                    turn_in_session = 0;
                    snapshot = self.new_session(session)?;
                }
                Step::Idle { .. } | Step::World(_) => {
                    // A block of idle windows (with world changes between them) runs
                    // with one background process across the whole block.
                    let end = steps[i..]
                        .iter()
                        .position(|s| !matches!(s, Step::Idle { .. } | Step::World(_)))
                        .map(|k| i + k)
                        .unwrap_or(steps.len());
                    self.idle_block(obs, &mut snapshot, &steps[i..end]).await?;
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// A new session carries nothing from the earlier one but the state dir: the
    /// workspace the earlier session left is set aside (renamed, kept for the record,
    /// never read again) and a fresh one takes its place, and the tracker is as it
    /// started. Otherwise notes in the workspace or on the tracker would pass for
    /// memory. Returns the fresh workspace's snapshot.
    fn new_session(&self, session: u32) -> Result<WorkspaceSnapshot, SetupError> {
        let earlier = self
            .trial_dir
            .join(format!("workspace.session-{}", session.saturating_sub(1)));
        std::fs::rename(self.workspace, &earlier).map_err(SetupError::io(&earlier))?;
        mkdir(self.workspace)?;
        self.sinks.tracker.new_session();
        self.snapshot(None)
    }

    /// The workspace now, against `before` when given. The walk is bounded in bytes
    /// (`world::sinks::workspace::LIMITS`) and in time: it may last as long as one turn
    /// of the agent may (the trial's deadline, `GAUNTLET_TIMEOUT_SECS`), so whatever the
    /// agent left there, observing it never costs the trial more than another turn.
    /// A snapshot that stopped short carries its `cut`: the caller records what it saw,
    /// then ends the probe with [`snapshot_cut`].
    fn snapshot(
        &self,
        before: Option<&WorkspaceSnapshot>,
    ) -> Result<WorkspaceSnapshot, SetupError> {
        let deadline = std::time::Instant::now() + self.cfg.timeout;
        WorkspaceSnapshot::take_until(self.workspace, before, Some(deadline))
            .map_err(SetupError::Observer)
    }

    /// The workspace files a turn's record keeps, and what it does not hold of `snap`.
    ///
    /// Each kept file carries its text (up to `FILE_TEXT_CAP`), so an ordinary
    /// workspace of many files (a checkout, `node_modules`) would make every turn's
    /// record that large: past `KEPT` files in name order, the rest are left out and
    /// counted (`FilesIncomplete::left_out`). The files the probe is judged on are
    /// never among them: every path its observations read
    /// (`score::scorecard::watched_files`) and every path its scripted turns write is
    /// kept first, wherever it falls in name order, so leaving files out changes no
    /// verdict. A snapshot that stopped short says so (`FilesIncomplete::cut`), so a
    /// named file it never reached is "not seen", never "does not exist".
    fn files_after(
        &self,
        snap: &WorkspaceSnapshot,
    ) -> (
        BTreeMap<String, FileObs>,
        Option<crate::score::scorecard::FilesIncomplete>,
    ) {
        use crate::score::scorecard::FilesIncomplete;
        const KEPT: usize = 500;
        let mut named = crate::score::scorecard::watched_files(self.probe, self.bank);
        if let Some(profile) = self.profile {
            named.extend(profile.written_paths(&self.probe.probe.id, self.bank));
        }
        let obs = |(p, e): (&String, &crate::world::sinks::workspace::FileEntry)| {
            (p.clone(), file_obs(self.workspace, p, e))
        };
        let mut files: BTreeMap<String, FileObs> = named
            .iter()
            .filter_map(|p| snap.files.get_key_value(p))
            .map(obs)
            .collect();
        let others: Vec<_> = snap
            .files
            .iter()
            .filter(|(p, _)| !files.contains_key(*p))
            .take(KEPT)
            .map(obs)
            .collect();
        files.extend(others);
        let left_out = snap.files.len().saturating_sub(files.len()) as u64;
        let incomplete = (left_out > 0 || snap.cut.is_some()).then(|| FilesIncomplete {
            left_out,
            cut: snap.cut.clone(),
        });
        (files, incomplete)
    }

    #[allow(clippy::too_many_arguments)]
    async fn turn(
        &self,
        obs: &mut Observed,
        snapshot: &mut WorkspaceSnapshot,
        label: &str,
        prompt: &str,
        session: u32,
        turn_in_session: u32,
        turn_no: u32,
    ) -> Result<(), SetupError> {
        let session_id = format!("{}-s{session}", self.probe.probe.id);
        let script = self
            .profile
            .map(|p| p.turn_script(&self.probe.probe.id, label, self.bank));
        let tool_steps = script.as_ref().map(|f| f.tool_steps().len());
        let writes: Vec<(String, String)> = script
            .iter()
            .flat_map(|f| f.tool_steps())
            .filter_map(|s| match s {
                ScriptStep::WriteFile { path, content } => Some((path.clone(), content.clone())),
                _ => None,
            })
            .collect();
        let start_ms = now_ms();
        let mut t = TurnObs {
            label: label.to_string(),
            session,
            prompt: prompt.to_string(),
            reply: None,
            problem: None,
            files_after: BTreeMap::new(),
            files_incomplete: None,
            script_failure: None,
        };
        let proxy = match self.proxy(script, &format!("turn `{label}`")).await {
            Ok(p) => p,
            Err(e) => {
                t.problem = Some(e.to_string());
                obs.evidence.turns.push(t);
                return Err(e);
            }
        };
        let stem = format!("turn-{turn_no:02}-{label}");
        let scratch = match self.scratch(&stem) {
            Ok(s) => s,
            Err(e) => {
                obs.usage.extend(proxy.shutdown().await);
                t.problem = Some(e.to_string());
                obs.evidence.turns.push(t);
                return Err(e);
            }
        };
        let proxy_url = proxy.base_url();
        let run = PromptRun {
            title: self.trial.to_string(),
            prompt: prompt.to_string(),
            workspace: self.workspace.to_path_buf(),
            session: Some(SessionTurn {
                id: session_id.clone(),
                resume: turn_in_session > 0,
                state_dir: self.state_dir.to_path_buf(),
            }),
        };
        let launch = self
            .kernel(&scratch)
            .prepare(self.adapter, Job::Prompt(&run), &proxy_url);
        let launch = match launch {
            Ok(l) => l,
            Err(e) => {
                obs.usage.extend(proxy.shutdown().await);
                let e = SetupError::from(e);
                t.problem = Some(e.to_string());
                obs.evidence.turns.push(t);
                return Err(e);
            }
        };
        let command = launch.invocation.command_line();
        let streams = Streams {
            stem: &stem,
            tag: Some(&stem),
        };
        let observation = self.observation_file(&stem);
        let spec = self.kernel(&scratch).agent_spec(
            launch,
            self.agent_env(),
            &proxy_url,
            &streams,
            self.view(&scratch, &observation),
        );
        let outcome = process::run(spec).await;
        let observation = crate::record::raw::harness_file(&observation, self.trial_dir);
        // The turn is over (its process group with it): nothing of its HOME or TMPDIR,
        // the prompt file included, is left for a later turn to read.
        let cleared = scratch.remove();
        let (usage, calls) = crate::trial::finish_proxy(self.trial_dir, proxy, &stem).await;
        let ended_cleanly = outcome.as_ref().is_ok_and(|o| o.end.success());
        t.script_failure = tool_steps
            .filter(|_| ended_cleanly)
            .and_then(|n| crate::evidence::usage::script_failure(n, &usage));
        let usage_range = [obs.usage.len(), obs.usage.len() + usage.len()];
        obs.usage.extend(usage);
        let end_ms = now_ms();
        obs.phases.push(Phase {
            label: label.to_string(),
            start_ms,
            end_ms,
        });
        let after = self.snapshot(Some(snapshot))?;
        obs.file_events
            .extend(workspace_events(self.workspace, label, snapshot, &after));
        (t.files_after, t.files_incomplete) = self.files_after(&after);
        // A scripted write missing from a snapshot that stopped short is not known to
        // be missing: the probe ends on the cut instead.
        if ended_cleanly
            && tool_steps.is_some()
            && t.script_failure.is_none()
            && after.cut.is_none()
        {
            t.script_failure = crate::score::scorecard::unwritten(&writes, &t.files_after);
        }
        let cut = after.cut.clone();
        *snapshot = after;
        if let Err(e) = cleared {
            t.problem = Some(e.to_string());
            obs.evidence.turns.push(t);
            return Err(e);
        }
        let outcome = match outcome {
            Ok(o) => o,
            Err(source) => {
                let e = SetupError::RunAt {
                    turn: label.into(),
                    source,
                };
                t.problem = Some(e.to_string());
                obs.evidence.turns.push(t);
                return Err(e);
            }
        };
        let parsed = self
            .adapter
            .read(&self.trial_dir.join(&outcome.stdout.path))
            .ok();
        t.reply = reply_of(
            &outcome.end,
            parsed.and_then(|p| p.transcript.final_message),
        );
        let died = !outcome.end.success();
        if died {
            t.problem = Some(outcome.end.describe());
        } else if t.reply.is_none() {
            t.problem = Some("the agent ended without a final message".into());
        }
        obs.processes.push(ProcessRaw {
            label: label.to_string(),
            session: Some(session_id),
            command,
            end: outcome.end.clone(),
            stdout: outcome.stdout,
            stderr: outcome.stderr,
            calls,
            usage_range: Some(usage_range),
            observation,
        });
        obs.evidence.turns.push(t);
        if died {
            return Err(SetupError::Died {
                turn: label.into(),
                end: outcome.end.describe(),
            });
        }
        match cut {
            Some(cut) => Err(snapshot_cut(&format!("after turn `{label}`"), &cut)),
            None => Ok(()),
        }
    }

    /// Idle windows (and the world changes between them), with the agent's background
    /// mode running through the whole block when it has one.
    async fn idle_block(
        &self,
        obs: &mut Observed,
        snapshot: &mut WorkspaceSnapshot,
        block: &[Step],
    ) -> Result<(), SetupError> {
        let day = self.cfg.idle_day().as_secs_f64();
        let scaled = |hours: f64| Duration::from_secs_f64(hours * 3600.0 / 86_400.0 * day);
        // When each world change happens is drawn now, so nothing the agent knows times it.
        let hours = window_hours(block, random_unit);
        let total: Duration = hours.iter().map(|h| scaled(*h)).sum();
        let nominal_hours_total: f64 = hours.iter().sum();
        // The background mode, if the agent has one, through the whole block.
        let bg = background::start(&BackgroundRun {
            driver: self,
            duration: total,
            nominal_hours: nominal_hours_total,
        })
        .await;
        let bg = match bg {
            Ok(bg) => bg,
            Err(e) => {
                obs.evidence.background = Some(format!("background mode failed to start: {e}"));
                None
            }
        };
        if let Some(b) = &bg {
            obs.evidence.background = Some(b.describe());
        } else if obs.evidence.background.is_none() {
            obs.evidence.background = Some(crate::score::scorecard::no_background_mode(
                self.adapter.name(),
            ));
        }
        let mut result = Ok(());
        for (step, nominal_hours) in block.iter().zip(&hours) {
            match step {
                Step::Idle { label, .. } => {
                    let d = scaled(*nominal_hours);
                    let start_ms = now_ms();
                    let t0 = std::time::Instant::now();
                    let stopped = tokio::select! {
                        () = tokio::time::sleep(d) => None,
                        stop = crate::sys::shutdown::stopping() => Some(stop),
                    };
                    let end_ms = now_ms();
                    obs.phases.push(Phase {
                        label: label.clone(),
                        start_ms,
                        end_ms,
                    });
                    obs.evidence.windows.push(WindowObs {
                        label: label.clone(),
                        nominal_secs: nominal_hours * 3600.0,
                        actual_secs: t0.elapsed().as_secs_f64(),
                    });
                    match self.snapshot(Some(snapshot)) {
                        Ok(after) => {
                            obs.file_events.extend(workspace_events(
                                self.workspace,
                                label,
                                snapshot,
                                &after,
                            ));
                            let cut = after.cut.clone();
                            *snapshot = after;
                            if let Some(cut) = cut {
                                result = Err(snapshot_cut(
                                    &format!("after idle window `{label}`"),
                                    &cut,
                                ));
                                break;
                            }
                        }
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                    // The window as far as it went is observed; the rest is not waited.
                    if let Some(stop) = stopped {
                        result = Err(SetupError::Interrupted {
                            signal: stop.name(),
                            before: format!("the end of idle window `{label}`"),
                        });
                        break;
                    }
                }
                Step::World(WorldChange::TrackerSet { item, status }) => {
                    let item = self.bank.render(item);
                    let status_text = self.bank.render(status);
                    let change =
                        serde_json::from_value(serde_json::Value::String(status_text.clone()))
                            .map_err(|e| format!("tracker status `{status_text}`: {e}"))
                            .and_then(|s| {
                                self.sinks
                                    .tracker
                                    .set_task_status(&item, s)
                                    .map_err(|e| e.to_string())
                            })
                            .map_err(SetupError::World);
                    match change {
                        Ok(_) => obs
                            .evidence
                            .world_changes
                            .push(format!("tracker: task {item} status -> {status_text}")),
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(b) = bg {
            let (raw, usage) = b.stop().await;
            let usage_range = [obs.usage.len(), obs.usage.len() + usage.len()];
            obs.usage.extend(usage);
            if let Some(mut raw) = raw {
                raw.usage_range = Some(usage_range);
                obs.processes.push(raw);
            }
        }
        result
    }
}

/// How long each step of a block of idle windows lasts, in nominal hours (0 for a world
/// change), with the time of each world change drawn (`draw`: uniform in `[0, 1)`).
///
/// A world change between two windows of `a` and `b` nominal hours happens anywhere from a
/// quarter of the way into the first to three quarters of the way into the second: the
/// first window then lasts `a/4 + u·3(a+b)/4`, the second the rest of `a + b`. The
/// block's length is the probe's; only the change moves. Were it always at the same
/// point (P3.3: twelve hours in), a claim held back until just after that point would
/// look like a response to the change without anything having been observed.
pub fn window_hours(block: &[Step], mut draw: impl FnMut() -> f64) -> Vec<f64> {
    let mut hours: Vec<f64> = block
        .iter()
        .map(|s| match s {
            Step::Idle { nominal_hours, .. } => *nominal_hours,
            _ => 0.0,
        })
        .collect();
    for k in 1..block.len().saturating_sub(1) {
        let between = matches!(
            (&block[k - 1], &block[k], &block[k + 1]),
            (Step::Idle { .. }, Step::World(_), Step::Idle { .. })
        );
        if !between {
            continue;
        }
        let (a, b) = (hours[k - 1], hours[k + 1]);
        let u = draw().clamp(0.0, 1.0);
        let first = a / 4.0 + u * 0.75 * (a + b);
        hours[k - 1] = first;
        hours[k + 1] = (a + b - first).max(0.0);
    }
    hours
}

/// A number in `[0, 1)` from the OS's entropy (the clock's low bits without it): drawn at
/// run time, never from the seed, which is public.
fn random_unit() -> f64 {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    let n = match std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)) {
        Ok(()) => u64::from_le_bytes(bytes),
        Err(_) => u64::from(chrono::Utc::now().timestamp_subsec_nanos()),
    };
    (n >> 11) as f64 / (1u64 << 53) as f64
}

/// Why the probe ends after a workspace snapshot `at` a step stopped short: stopped
/// by the run's own stop, it is interrupted like any step so stopped; otherwise (its
/// deadline, its entry or depth limit, all the agent's doing) the probe ends with the
/// cut as its error, a finished record that is not run again on resume.
fn snapshot_cut(at: &str, cut: &crate::evidence::tree::Cut) -> SetupError {
    match (&cut.why, crate::sys::shutdown::requested()) {
        (crate::evidence::tree::CutWhy::Shutdown { .. }, Some(stop)) => SetupError::Interrupted {
            signal: stop.name(),
            before: format!("the end of the workspace snapshot {at}"),
        },
        _ => SetupError::SnapshotCut {
            at: at.to_string(),
            cut: cut.clone(),
        },
    }
}

/// Entries of a fresh agent's state directory that [`planted_entries`] names; past
/// them, it says only that there were more.
const PLANTED_NAMES: usize = 100;

/// A fresh agent's state directory: it must exist and be empty. Whatever is in it is
/// planted memory, listed by name (through `sys::beneath`, at most [`PLANTED_NAMES`]).
pub fn planted_entries(state_dir: &Path) -> Vec<String> {
    let listed =
        crate::sys::beneath::Dir::open(state_dir).and_then(|d| d.entries_at_most(PLANTED_NAMES));
    match listed {
        Ok((entries, more)) => {
            let mut out: Vec<String> = entries
                .into_iter()
                .map(|e| e.name.to_string_lossy().into_owned())
                .collect();
            if more {
                out.push(format!("(more than {PLANTED_NAMES} entries)"));
            }
            out
        }
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => vec![format!("(unreadable: {e})")],
    }
}

/// The trial's directories: workspace, where each process's scratch is made, and the
/// agent's state.
pub fn trial_dirs(trial_dir: &Path) -> Result<[PathBuf; 3], SetupError> {
    let mk = |name: &str| mkdir(&trial_dir.join(name));
    Ok([mk("workspace")?, mk("scratch")?, mk("state")?])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::scorecard::WorldChange;

    fn idle(label: &str, nominal_hours: f64) -> Step {
        Step::Idle {
            label: label.into(),
            nominal_hours,
        }
    }

    /// P3.3's block, 12 + 12 nominal hours around the change: the change falls anywhere
    /// from 3 to 21 hours in, as drawn, and the block keeps its 24 hours.
    #[test]
    fn a_world_change_between_two_windows_happens_when_the_draw_says() {
        let block = [
            idle("before", 12.0),
            Step::World(WorldChange::TrackerSet {
                item: "{{tracker_item}}".into(),
                status: "{{tracker_status}}".into(),
            }),
            idle("after", 12.0),
        ];
        for (u, first) in [(0.0, 3.0), (0.5, 12.0), (0.999_999, 21.0)] {
            let h = window_hours(&block, || u);
            assert!((h[0] - first).abs() < 1e-3, "{u}: {h:?}");
            assert_eq!(h[1], 0.0);
            assert!((h[0] + h[2] - 24.0).abs() < 1e-9, "{h:?}");
        }
        // A window with no change beside it keeps its length, and nothing is drawn.
        let alone = [idle("day", 24.0)];
        assert_eq!(window_hours(&alone, || panic!("drawn")), vec![24.0]);
        let u = random_unit();
        assert!((0.0..1.0).contains(&u), "{u}");
    }
}
