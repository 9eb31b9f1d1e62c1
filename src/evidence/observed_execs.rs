//! Execs from observation: the programs the kernel saw a trial's processes execute,
//! the runs a challenge requires found among them, and the comparison with the
//! agent's account (the programs its shell tool calls name).
//!
//! Pure. A required run decides the task's outcome only through what was observed: a
//! report that says the app ran, or a tool call the agent printed, is the account, and
//! where the account names a program the kernel never saw executed, that is listed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::normalize::{Preview, ToolCallRecord};
use super::observed::{Exec, Observation};
use super::policy::{claimed_programs, shell_command_of, MAX_FINDINGS};
use super::{OutputObservation, RelayedRun};
use crate::spec::challenge::{RequiredOutput, RequiredRun, APP_PROGRAM, BROWSER_PROGRAM};

/// The most bytes of a claimed command kept beside its discrepancy.
const COMMAND_PREVIEW: usize = 400;

/// The programs a required run may name by a word: the app's program as the trial
/// handed it over (`$APP_BIN`, what `app` means in a required run and in a command)
/// and the file that path leads to (running that file by its own path is running the
/// app too), and the machine's browsers (`browser`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NamedPrograms<'a> {
    pub path: Option<&'a str>,
    pub file: Option<&'a str>,
    pub browsers: &'a [String],
}

impl NamedPrograms<'_> {
    fn is(&self, path: &str) -> bool {
        Some(path) == self.path || Some(path) == self.file
    }
}

/// What the app's own world shows of the agent's runs of it: the runs the relay made
/// (a CLI app), and the required output files as the harness found them.
#[derive(Debug, Clone, Copy, Default)]
pub struct AppWorld<'a> {
    /// `None`: the app is not relayed (a served app, or an old record).
    pub relayed: Option<&'a [RelayedRun]>,
    pub relayed_dropped: u64,
    pub outputs: &'a [OutputObservation],
    pub required: &'a [RequiredOutput],
}

/// Whether the file `o` names holds what a relayed run meeting its required run printed:
/// any of them (the agent may have run it more than once), judged on the relay's log
/// and the file's hash, both the harness's.
fn output_check(
    o: &RequiredOutput,
    required: &[RequiredRun],
    checks: &[RunCheck],
    world: AppWorld<'_>,
) -> OutputCheck {
    let verdict = |holds: bool, why: String| OutputCheck {
        id: o.id.clone(),
        file: o.file.clone(),
        run: o.run.clone(),
        holds,
        decidable: true,
        why,
    };
    let file = world.outputs.iter().find(|f| f.id == o.id);
    let Some(sha) = file.and_then(|f| f.sha256.as_deref()) else {
        let why = file
            .and_then(|f| f.error.clone())
            .unwrap_or_else(|| "it was not read".into());
        return verdict(false, format!("`{}` cannot be compared: {why}", o.file));
    };
    let Some(runs) = world.relayed else {
        return OutputCheck {
            decidable: false,
            ..verdict(
                false,
                "the app's runs were not relayed into the record".into(),
            )
        };
    };
    let patterns: Vec<regex::Regex> = required
        .iter()
        .find(|r| r.id == o.run)
        .into_iter()
        .flat_map(|r| &r.args)
        .filter_map(|a| regex::Regex::new(&format!("^(?:{a})$")).ok())
        .collect();
    let ran = checks.iter().any(|c| c.id == o.run && c.seen.is_some());
    let printed = runs.iter().any(|r| {
        !r.args_cut
            && r.exceeded.is_none()
            && r.stdout_sha256 == sha
            && patterns
                .iter()
                .all(|p| r.args.iter().any(|a| p.is_match(a)))
    });
    match (ran, printed) {
        (true, true) => verdict(
            true,
            format!("`{}` is what a run of `{}` printed", o.file, o.run),
        ),
        (false, _) => verdict(false, format!("`{}` was never seen run", o.run)),
        (true, false) => verdict(
            false,
            format!(
                "`{}` holds what none of the app's {} run(s) matching `{}` printed{}",
                o.file,
                runs.len(),
                o.run,
                if world.relayed_dropped > 0 {
                    format!(
                        " ({} run(s) past the relay's log not compared)",
                        world.relayed_dropped
                    )
                } else {
                    String::new()
                }
            ),
        ),
    }
}

/// `path` with its `.` components and repeated slashes gone. `..` stays: what it
/// climbs out of depends on links the text does not show, so a path that holds one
/// is no program's name.
fn tidy(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// Everything the observed execs show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ExecFindings {
    /// Why the observation cannot show every exec; `None`: it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// The execs in order, the first [`MAX_FINDINGS`].
    pub execs: Vec<Exec>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub execs_not_kept: u64,
    /// How often each program (by path) was executed.
    pub by_program: BTreeMap<String, u64>,
    /// Each run the challenge requires, and the first exec that met it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<RunCheck>,
    /// Each output the challenge requires, and whether a run of the app printed it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputCheck>,
    /// Programs the agent's tool calls name that the kernel never saw executed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claimed_not_observed: Vec<UnobservedClaim>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub claims_not_kept: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A required run, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunCheck {
    pub id: String,
    /// The program's path, `app` resolved; `None` when `app` could not be (the trial
    /// had no app program).
    pub program: Option<String>,
    pub args: Vec<String>,
    /// The first exec that met it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<Exec>,
    /// For a relayed app: the app's own run of that exec (the same arguments), which
    /// shows the app ran and did not merely get asked for. `seen` is only set with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relayed: Option<RelayedRun>,
}

/// A required output, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputCheck {
    pub id: String,
    pub file: String,
    pub run: String,
    /// The file holds exactly what one of the run's relayed runs printed.
    pub holds: bool,
    /// Whether the evidence can decide it: not when the app's runs were never
    /// relayed into the record.
    #[serde(default = "yes")]
    pub decidable: bool,
    pub why: String,
}

fn yes() -> bool {
    true
}

/// A program a shell tool call names, never seen executed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UnobservedClaim {
    /// The tool call's index in the agent's report.
    pub call: usize,
    /// The program as the command names it.
    pub program: String,
    /// The command, bounded.
    pub command: String,
}

/// Shell words that are no program of their own: builtins and keywords run inside the
/// shell, whose own exec is what the kernel sees.
const NOT_PROGRAMS: &[&str] = &[
    "cd",
    "echo",
    "printf",
    "test",
    "[",
    "[[",
    "true",
    "false",
    "export",
    "set",
    "unset",
    "read",
    "exit",
    "return",
    "source",
    ".",
    "eval",
    "type",
    "wait",
    "trap",
    "shift",
    "alias",
    "local",
    "declare",
    "pwd",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "for",
    "while",
    "until",
    "do",
    "done",
    "case",
    "esac",
    "function",
    "!",
    "{",
    "}",
    "(",
    ")",
    "ulimit",
    "umask",
    "let",
    "break",
    "continue",
    "shopt",
    "hash",
    "builtin",
    "readonly",
    "times",
    "getopts",
    "kill",
    "jobs",
    "fg",
    "bg",
    "disown",
    "history",
    "pushd",
    "popd",
    "dirs",
    ":",
    "mapfile",
    "readarray",
    "typeset",
    "compgen",
    "complete",
    "enable",
    "help",
    "caller",
    "bind",
    "coproc",
    "select",
    "_",
];

/// Assess the execs of `observation` against the required runs and the account.
pub fn assess(
    observation: &Observation,
    required: &[RequiredRun],
    calls: &[ToolCallRecord],
    app: NamedPrograms<'_>,
    world: AppWorld<'_>,
) -> ExecFindings {
    let mut out = ExecFindings {
        incomplete: observation.execs_incomplete(),
        ..ExecFindings::default()
    };
    let paths: Vec<String> = observation.execs.iter().map(|e| tidy(&e.path)).collect();
    for (e, path) in observation.execs.iter().zip(&paths) {
        *out.by_program.entry(path.clone()).or_default() += 1;
        if out.execs.len() < MAX_FINDINGS {
            out.execs.push(e.clone());
        } else {
            out.execs_not_kept += 1;
        }
    }
    for r in required {
        let app_run = r.program == APP_PROGRAM;
        let browser_run = r.program == BROWSER_PROGRAM;
        let program = if app_run {
            app.path.map(tidy)
        } else if browser_run {
            app.browsers.first().map(|b| tidy(b))
        } else {
            Some(tidy(&r.program))
        };
        let patterns: Vec<regex::Regex> = r
            .args
            .iter()
            .filter_map(|a| regex::Regex::new(&format!("^(?:{a})$")).ok())
            .collect();
        // Only an exec read whole counts: one cut short or unreadable may have run
        // anything with anything. A relayed app's exec counts with the app's own run
        // of the same arguments: an exec that failed, or a program of the agent's at
        // that path, never reached the app.
        let relayed_of = |e: &Exec| -> Option<Option<RelayedRun>> {
            match world.relayed.filter(|_| app_run) {
                None => Some(None),
                Some(runs) => runs
                    .iter()
                    .find(|r| !r.args_cut && r.args[..] == e.argv[1.min(e.argv.len())..])
                    .map(|r| Some(r.clone())),
            }
        };
        let found = program.as_ref().and_then(|want| {
            observation
                .execs
                .iter()
                .zip(&paths)
                .filter(|(e, path)| {
                    let named = *path == want
                        || (app_run && app.is(path))
                        || (browser_run && app.browsers.iter().any(|b| b == *path));
                    named
                        && !e.refused
                        && !e.own_root
                        && !e.argv_cut
                        && e.unreadable.is_none()
                        && patterns
                            .iter()
                            .all(|p| e.argv.iter().skip(1).any(|a| p.is_match(a)))
                })
                .find_map(|(e, _)| relayed_of(e).map(|r| (e.clone(), r)))
        });
        let (seen, relayed) = match found {
            Some((e, r)) => (Some(e), r),
            None => (None, None),
        };
        out.required.push(RunCheck {
            id: r.id.clone(),
            program,
            args: r.args.clone(),
            seen,
            relayed,
        });
    }
    for o in world.required {
        out.outputs
            .push(output_check(o, required, &out.required, world));
    }
    // Only an observation that saw every exec can show that a program never ran.
    if out.incomplete.is_none() {
        let names: std::collections::BTreeSet<&str> = paths
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .collect();
        for (i, call) in calls.iter().enumerate() {
            let Some(cmd) = shell_command_of(call) else {
                continue;
            };
            for program in claimed_programs(&cmd) {
                let seen = if program == "$APP_BIN" || program == "${APP_BIN}" {
                    if app.path.is_none() {
                        continue;
                    }
                    paths.iter().any(|p| app.is(p))
                } else if program.starts_with('$') || NOT_PROGRAMS.contains(&program.as_str()) {
                    continue;
                } else {
                    names.contains(program.rsplit('/').next().unwrap_or(&program))
                };
                if seen {
                    continue;
                }
                if out.claimed_not_observed.len() < MAX_FINDINGS {
                    out.claimed_not_observed.push(UnobservedClaim {
                        call: i,
                        program,
                        command: Preview::bounded_to(&cmd, COMMAND_PREVIEW).text,
                    });
                } else {
                    out.claims_not_kept += 1;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::observed::{self, End, Line};
    use serde_json::json;

    const APP: &str = "/run/gauntlet/target/bin/cli-tally";
    const RELAY: &str = "/repo/target/debug/gauntlet-cli-relay";

    fn app() -> NamedPrograms<'static> {
        NamedPrograms {
            path: Some(APP),
            file: Some(RELAY),
            browsers: &[],
        }
    }

    fn observation(execs: &[(&str, &[&str])]) -> Observation {
        let mut lines = vec![Line::Start {
            watched: vec!["/".into()],
            unwatched: vec![],
            execs: true,
        }];
        for (i, (path, argv)) in execs.iter().enumerate() {
            lines.push(Line::Exec(Exec {
                ms: i as u64,
                pid: 10 + i as i32,
                path: (*path).into(),
                argv: argv.iter().map(|a| a.to_string()).collect(),
                argv_cut: false,
                unreadable: None,
                refused: false,
                own_root: false,
            }));
        }
        lines.push(Line::End(End::default()));
        let bytes: Vec<u8> = lines.iter().flat_map(observed::line).collect();
        observed::parse(&mut &bytes[..])
    }

    fn shell(cmd: &str) -> ToolCallRecord {
        ToolCallRecord {
            id: "c".into(),
            name: "bash".into(),
            status: "completed".into(),
            failed: false,
            input: json!({ "command": cmd }),
            input_preview: None,
            output: None,
            started_ms: None,
            ended_ms: None,
            title: None,
            metadata: None,
        }
    }

    fn stats() -> Vec<RequiredRun> {
        vec![RequiredRun {
            id: "stats".into(),
            program: APP_PROGRAM.into(),
            args: vec!["stats".into()],
        }]
    }

    #[test]
    fn a_required_run_is_met_only_by_an_exec_of_that_program_with_those_arguments() {
        let o = observation(&[
            ("/bin/sh", &["sh", "-c", "x"]),
            (APP, &[APP, "--help"]),
            ("/tmp/cli-tally", &["cli-tally", "stats"]),
            ("/usr/bin/echo", &["echo", "stats"]),
        ]);
        let f = assess(&o, &stats(), &[], app(), AppWorld::default());
        assert_eq!(f.required[0].seen, None, "{f:?}");
        assert_eq!(f.by_program[APP], 1);

        for path in [
            "/run/gauntlet/target/bin/./cli-tally",
            "/run//gauntlet/target/bin/cli-tally",
            RELAY,
        ] {
            let o = observation(&[(path, &["t", "--json", "stats"])]);
            let f = assess(&o, &stats(), &[], app(), AppWorld::default());
            assert!(f.required[0].seen.is_some(), "{path}: {f:?}");
        }
        // `..` may climb out of a link: no program is named through one.
        let o = observation(&[(
            "/ws/s/../../run/gauntlet/target/bin/cli-tally",
            &["t", "--json", "stats"],
        )]);
        assert!(
            assess(&o, &stats(), &[], app(), AppWorld::default()).required[0]
                .seen
                .is_none()
        );
        // `stats` is the whole argument, not a part of one.
        let o = observation(&[(APP, &["t", "statsx"])]);
        assert!(
            assess(&o, &stats(), &[], app(), AppWorld::default()).required[0]
                .seen
                .is_none()
        );
        // An exec refused, in a root of the caller's own, cut short or not read
        // whole meets nothing.
        let spoilers: [fn(&mut Exec); 4] = [
            |e| e.refused = true,
            |e| e.own_root = true,
            |e| e.argv_cut = true,
            |e| e.unreadable = Some("argument 3: Bad address".into()),
        ];
        for spoil in spoilers {
            let mut o = observation(&[(APP, &["t", "stats"])]);
            spoil(&mut o.execs[0]);
            assert!(
                assess(&o, &stats(), &[], app(), AppWorld::default()).required[0]
                    .seen
                    .is_none()
            );
        }
        // Without the app's program, `app` meets nothing.
        let o = observation(&[(APP, &["t", "stats"])]);
        let f = assess(
            &o,
            &stats(),
            &[],
            NamedPrograms::default(),
            AppWorld::default(),
        );
        assert_eq!(
            (f.required[0].program.as_deref(), &f.required[0].seen),
            (None, &None)
        );
    }

    fn relayed(args: &[&str], stdout: &str) -> RelayedRun {
        RelayedRun {
            args: args.iter().map(|a| a.to_string()).collect(),
            args_cut: false,
            stdin_bytes: 0,
            stdin_sha256: String::new(),
            stdout_bytes: 1,
            stdout_sha256: stdout.into(),
            exit_code: 0,
            exceeded: None,
        }
    }

    #[test]
    fn a_relayed_apps_run_counts_only_with_the_apps_own_run_and_prints_the_file() {
        let o = observation(&[(APP, &[APP, "--json", "stats"])]);
        let required = [RequiredOutput {
            id: "report".into(),
            file: "r.json".into(),
            run: "stats".into(),
        }];
        let file = |sha: &str| OutputObservation {
            id: "report".into(),
            file: "r.json".into(),
            sha256: Some(sha.into()),
            bytes: Some(1),
            error: None,
        };
        let judge = |runs: &[RelayedRun], sha: &str| {
            let outputs = [file(sha)];
            assess(
                &o,
                &stats(),
                &[],
                app(),
                AppWorld {
                    relayed: Some(runs),
                    relayed_dropped: 0,
                    outputs: &outputs,
                    required: &required,
                },
            )
        };
        // The exec was asked for and the app never ran it (a failed exec, a program
        // of the agent's own at the path): not seen.
        let f = judge(&[], "sha256:a");
        assert!(f.required[0].seen.is_none(), "{f:?}");
        // The app ran other arguments than the exec: not this exec's run.
        let f = judge(&[relayed(&["--help"], "sha256:a")], "sha256:a");
        assert!(f.required[0].seen.is_none(), "{f:?}");
        // The app ran it, and printed what the file holds.
        let f = judge(&[relayed(&["--json", "stats"], "sha256:a")], "sha256:a");
        assert!(f.required[0].seen.is_some() && f.required[0].relayed.is_some());
        assert!(f.outputs[0].holds, "{f:?}");
        // The file holds something else: typed after a run on nothing.
        let f = judge(&[relayed(&["--json", "stats"], "sha256:empty")], "sha256:a");
        assert!(f.required[0].seen.is_some());
        assert!(!f.outputs[0].holds && f.outputs[0].why.contains("none of the app's 1 run"));
        // Another run's output that does not meet the required arguments is no match.
        let f = judge(
            &[
                relayed(&["--json", "stats"], "sha256:b"),
                relayed(&["--version"], "sha256:a"),
            ],
            "sha256:a",
        );
        assert!(!f.outputs[0].holds, "{f:?}");
    }

    fn claims_of(f: &ExecFindings) -> Vec<(usize, &str)> {
        f.claimed_not_observed
            .iter()
            .map(|c| (c.call, c.program.as_str()))
            .collect()
    }

    #[test]
    fn a_claimed_program_never_executed_is_listed_and_builtins_are_not() {
        let o = observation(&[
            ("/bin/sh", &["sh", "-c", "x"]),
            ("/usr/bin/curl", &["curl", "-sf", "u"]),
        ]);
        let calls = [
            shell("cd /x && curl -sf u | jq . > out.json"),
            shell("\"$APP_BIN\" --json stats < m.txt > r.json"),
            shell("FOO=1 echo hi; export A=b; $HOME/bin/tool"),
        ];
        let f = assess(&o, &[], &calls, app(), AppWorld::default());
        let claims = claims_of(&f);
        assert_eq!(claims, [(0, "jq"), (1, "$APP_BIN")], "{f:?}");
        // Ordinary shell is no claim of anything it does not run: heredoc bodies,
        // lookups, functions, builtins; what runs inside `$(…)` is.
        let o = observation(&[
            ("/bin/bash", &["bash", "-c", "x"]),
            ("/usr/bin/cat", &["cat"]),
            ("/usr/bin/wc", &["wc"]),
            ("/usr/bin/python3", &["python3"]),
        ]);
        let calls = [
            shell("cat > t.py <<'EOF'\nimport os\nout = 1\nEOF\npython3 t.py"),
            shell("command -v jq >/dev/null 2>&1 || echo 'no jq'"),
            shell("count() { wc -w < m.txt; }; count"),
            shell("mapfile -t lines < m.txt; echo ${#lines[@]}"),
            shell("n=$(cat m.txt | wc -w); echo $n; m=`sort m.txt`"),
        ];
        let f = assess(&o, &[], &calls, app(), AppWorld::default());
        let claims = claims_of(&f);
        assert_eq!(claims, [(4, "sort")], "{f:?}");
        // An observation that missed execs shows no program never ran.
        let mut o = o;
        o.execs_watched = false;
        let f = assess(&o, &[], &calls, app(), AppWorld::default());
        assert!(f.incomplete.is_some() && f.claimed_not_observed.is_empty());
    }
}
