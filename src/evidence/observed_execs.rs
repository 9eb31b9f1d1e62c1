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
use crate::spec::challenge::{RequiredOutput, RequiredRun, RunInput, APP_PROGRAM, BROWSER_PROGRAM};

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
    /// What the required runs that name an input must have computed on, as the
    /// workspace template held it (the record's provenance).
    pub inputs: &'a [RunInput],
}

/// The input required run `r` must have computed on: `None` when it names none,
/// `Some(Err)` when it names one the record does not hold.
fn input_of<'a>(r: &RequiredRun, inputs: &'a [RunInput]) -> Option<Result<&'a RunInput, String>> {
    let file = r.input.as_ref()?;
    Some(inputs.iter().find(|i| i.run == r.id).ok_or_else(|| {
        format!("`{file}` as the workspace template held it is not in the record: what the run read cannot be checked")
    }))
}

/// The arguments of `args` no pattern matches whole: what is left once the required
/// arguments are set aside, less one leading `--` (the end of the options).
fn other_args<'a>(args: &'a [String], patterns: &[regex::Regex]) -> Vec<&'a str> {
    let mut rest: Vec<&str> = args
        .iter()
        .filter(|a| !patterns.iter().any(|p| p.is_match(a)))
        .map(String::as_str)
        .collect();
    if rest.first() == Some(&"--") {
        rest.remove(0);
    }
    rest
}

/// Whether the app's run `run` computed on `input`: its arguments besides the required
/// ones (those `patterns` match) are the file's words in order, or there are none and
/// its standard input is the file's bytes. `Err`: what it computed on instead.
pub fn reads_input(
    run: &RelayedRun,
    patterns: &[regex::Regex],
    input: &RunInput,
) -> Result<(), String> {
    if run.args_cut {
        return Err("its arguments were cut short in the relay's log".into());
    }
    let rest = other_args(&run.args, patterns);
    if rest.is_empty() {
        if run.stdin_sha256 == input.sha256 && run.stdin_bytes == input.bytes {
            return Ok(());
        }
        return Err(format!(
            "its standard input was {} byte(s) ({}), not {}'s {} byte(s) ({})",
            run.stdin_bytes,
            if run.stdin_sha256.is_empty() {
                "not hashed"
            } else {
                &run.stdin_sha256
            },
            input.file,
            input.bytes,
            input.sha256
        ));
    }
    match &input.words {
        Some(words) if !words.is_empty() && rest.iter().eq(words.iter()) => Ok(()),
        Some(words) => Err(format!(
            "its arguments besides the required ones are `{}`, not the {} word(s) of {}",
            Preview::bounded_to(&rest.join(" "), COMMAND_PREVIEW).text,
            words.len(),
            input.file
        )),
        None => Err(format!(
            "its arguments besides the required ones are `{}`, and {} cannot be passed whole as arguments",
            Preview::bounded_to(&rest.join(" "), COMMAND_PREVIEW).text,
            input.file
        )),
    }
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
    let run = required.iter().find(|r| r.id == o.run);
    let patterns: Vec<regex::Regex> = run
        .into_iter()
        .flat_map(|r| &r.args)
        .filter_map(|a| regex::Regex::new(&format!("^(?:{a})$")).ok())
        .collect();
    // A file that is what a run on other data printed is no report of the input.
    let input = run.and_then(|r| input_of(r, world.inputs));
    let ran = checks.iter().any(|c| c.id == o.run && c.seen.is_some());
    let printed = runs.iter().any(|r| {
        !r.args_cut
            && r.exceeded.is_none()
            && r.stdout_sha256 == sha
            && patterns
                .iter()
                .all(|p| r.args.iter().any(|a| p.is_match(a)))
            && match &input {
                None => true,
                Some(Ok(i)) => reads_input(r, &patterns, i).is_ok(),
                Some(Err(_)) => false,
            }
    });
    let on = match &input {
        Some(Ok(i)) => format!(" on {}", i.file),
        _ => String::new(),
    };
    match (ran, printed) {
        (true, true) => verdict(
            true,
            format!("`{}` is what a run of `{}` printed", o.file, o.run),
        ),
        (false, _) => verdict(false, format!("`{}` was never seen run", o.run)),
        (true, false) => verdict(
            false,
            format!(
                "`{}` holds what none of the app's {} run(s) matching `{}`{on} printed{}",
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
    /// The workspace template's file the run must have computed on
    /// (`work.runs[].input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// Why a run of the program with those arguments, which the app ran, does not meet
    /// it: it computed on other input. `None` when met, or when no such run was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_met: Option<String>,
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
        // that path, never reached the app; and, where the run names an input, with a
        // run of the app that computed on it.
        let input = input_of(r, world.inputs).filter(|_| app_run);
        let mut not_met: Option<String> = None;
        let mut found: Option<(Exec, Option<RelayedRun>)> = None;
        let candidates: Vec<&Exec> = match &program {
            None => Vec::new(),
            Some(want) => observation
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
                .map(|(e, _)| e)
                .collect(),
        };
        for e in candidates {
            let runs = match world.relayed.filter(|_| app_run) {
                Some(runs) => runs,
                None => match &input {
                    // Nothing shows what it read.
                    Some(_) => {
                        not_met.get_or_insert_with(|| {
                            "the app's runs were not relayed into the record: what it read cannot be checked".into()
                        });
                        continue;
                    }
                    None => {
                        found = Some((e.clone(), None));
                        break;
                    }
                },
            };
            let args = &e.argv[1.min(e.argv.len())..];
            let same: Vec<&RelayedRun> = runs
                .iter()
                .filter(|r| !r.args_cut && r.args[..] == *args)
                .collect();
            let hit = match &input {
                None => same.first().copied(),
                Some(Err(why)) => {
                    if !same.is_empty() {
                        not_met.get_or_insert_with(|| why.clone());
                    }
                    None
                }
                Some(Ok(i)) => {
                    let hit = same
                        .iter()
                        .copied()
                        .find(|r| reads_input(r, &patterns, i).is_ok());
                    if let (None, Some(first)) = (hit, same.first()) {
                        not_met.get_or_insert_with(|| {
                            let why = reads_input(first, &patterns, i).err().unwrap_or_default();
                            format!(
                                "ran `{}`, but on other input than {}: {why}{}",
                                Preview::bounded_to(&args.join(" "), COMMAND_PREVIEW).text,
                                i.file,
                                if same.len() > 1 {
                                    format!(" ({} such run(s), none on it)", same.len())
                                } else {
                                    String::new()
                                }
                            )
                        });
                    }
                    hit
                }
            };
            if let Some(run) = hit {
                found = Some((e.clone(), Some(run.clone())));
                break;
            }
        }
        let (seen, relayed) = match found {
            Some((e, r)) => {
                not_met = None;
                (Some(e), r)
            }
            None => (None, None),
        };
        out.required.push(RunCheck {
            id: r.id.clone(),
            program,
            args: r.args.clone(),
            seen,
            relayed,
            input: r.input.clone(),
            not_met,
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
    use crate::evidence::test_support;
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
            lines.push(Line::Exec(test_support::exec(
                i as u64,
                10 + i as i32,
                path,
                argv,
            )));
        }
        lines.push(Line::End(End::default()));
        let bytes: Vec<u8> = lines.iter().flat_map(observed::line).collect();
        observed::parse(&mut &bytes[..])
    }

    fn shell(cmd: &str) -> ToolCallRecord {
        test_support::tool_call("c", "bash", json!({ "command": cmd }))
    }

    fn stats() -> Vec<RequiredRun> {
        vec![RequiredRun {
            id: "stats".into(),
            program: APP_PROGRAM.into(),
            args: vec!["stats".into()],
            input: None,
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
                    inputs: &[],
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

    fn on_stdin(args: &[&str], stdin: &[u8], stdout: &str) -> RelayedRun {
        RelayedRun {
            stdin_bytes: stdin.len() as u64,
            stdin_sha256: crate::hash::sha256(stdin),
            ..relayed(args, stdout)
        }
    }

    #[test]
    fn a_run_that_names_an_input_is_met_only_by_a_run_of_the_app_on_the_templates_data() {
        const DATA: &[u8] = b"12.5 7\n3.25 10\n-2.75\n";
        let required = vec![RequiredRun {
            id: "stats".into(),
            program: APP_PROGRAM.into(),
            args: vec!["--json".into(), "stats".into()],
            input: Some("m.txt".into()),
        }];
        let inputs = [RunInput::of("stats", "m.txt", DATA)];
        assert_eq!(
            inputs[0].words.as_deref(),
            Some(&["12.5", "7", "3.25", "10", "-2.75"].map(String::from)[..])
        );
        let report = [RequiredOutput {
            id: "report".into(),
            file: "r.json".into(),
            run: "stats".into(),
        }];
        let file = [OutputObservation {
            id: "report".into(),
            file: "r.json".into(),
            sha256: Some("sha256:right".into()),
            bytes: Some(1),
            error: None,
        }];
        let judge = |execs: &[&[&str]], runs: &[RelayedRun], inputs: &[RunInput]| {
            let execs: Vec<(&str, &[&str])> = execs.iter().map(|a| (APP, *a)).collect();
            assess(
                &observation(&execs),
                &required,
                &[],
                app(),
                AppWorld {
                    relayed: Some(runs),
                    relayed_dropped: 0,
                    outputs: &file,
                    required: &report,
                    inputs,
                },
            )
        };
        let json_stats: &[&str] = &[APP, "--json", "stats"];
        // The template's bytes on standard input: met, and the file is what it printed.
        let f = judge(
            &[json_stats],
            &[on_stdin(&["--json", "stats"], DATA, "sha256:right")],
            &inputs,
        );
        assert!(
            f.required[0].seen.is_some() && f.required[0].not_met.is_none(),
            "{f:?}"
        );
        assert_eq!(f.required[0].input.as_deref(), Some("m.txt"));
        assert!(f.outputs[0].holds, "{f:?}");
        // The file's words as the arguments (`stats $(cat m.txt)`), `--` or not: met.
        for args in [
            &["--json", "stats", "12.5", "7", "3.25", "10", "-2.75"][..],
            &["stats", "--json", "--", "12.5", "7", "3.25", "10", "-2.75"][..],
        ] {
            let argv: Vec<&str> = std::iter::once(APP).chain(args.iter().copied()).collect();
            let f = judge(&[&argv], &[on_stdin(args, b"", "sha256:right")], &inputs);
            assert!(f.required[0].seen.is_some(), "{args:?}: {f:?}");
            assert!(f.outputs[0].holds, "{args:?}: {f:?}");
        }
        // Other data on standard input (r6's `printf '30 0 0 0 0\n' | …`), the file
        // edited before the run, the data's words reordered or one more number, the
        // file on standard input beside numbers of its own (which the app reads
        // instead): not met, and the reason names the input.
        for (args, stdin) in [
            (&["--json", "stats"][..], &b"30 0 0 0 0\n"[..]),
            (
                &["--json", "stats"][..],
                &b"12.5 7\n3.25 10\n-2.75\n100\n"[..],
            ),
            (
                &["--json", "stats", "7", "12.5", "3.25", "10", "-2.75"][..],
                &b""[..],
            ),
            (
                &["--json", "stats", "12.5", "7", "3.25", "10", "-2.75", "0"][..],
                &b""[..],
            ),
            (&["--json", "stats", "30", "0", "0", "0", "0"][..], DATA),
        ] {
            let argv: Vec<&str> = std::iter::once(APP).chain(args.iter().copied()).collect();
            let f = judge(&[&argv], &[on_stdin(args, stdin, "sha256:right")], &inputs);
            assert!(f.required[0].seen.is_none(), "{args:?}: {f:?}");
            let why = f.required[0].not_met.as_deref().unwrap_or("");
            assert!(
                why.starts_with(&format!(
                    "ran `{}`, but on other input than m.txt: ",
                    args.join(" ")
                )),
                "{args:?}: {why}"
            );
            assert!(!f.outputs[0].holds, "{args:?}: {f:?}");
        }
        // A run on the data met it; a later run on other data printed the file: the
        // run is met, the output is not the report of the input.
        let f = judge(
            &[json_stats, json_stats],
            &[
                on_stdin(&["--json", "stats"], DATA, "sha256:data"),
                on_stdin(&["--json", "stats"], b"30 0 0 0 0\n", "sha256:right"),
            ],
            &inputs,
        );
        assert!(
            f.required[0].seen.is_some()
                && f.required[0]
                    .relayed
                    .as_ref()
                    .is_some_and(|r| r.stdout_sha256 == "sha256:data"),
            "{f:?}"
        );
        assert!(
            !f.outputs[0].holds && f.outputs[0].why.contains("on m.txt"),
            "{f:?}"
        );
        // A record without the template's input cannot show what the run read.
        let f = judge(
            &[json_stats],
            &[on_stdin(&["--json", "stats"], DATA, "sha256:right")],
            &[],
        );
        assert!(f.required[0].seen.is_none(), "{f:?}");
        assert!(f.required[0]
            .not_met
            .as_deref()
            .unwrap_or("")
            .contains("not in the record"));
        assert!(!f.outputs[0].holds);
        // Words past what the relay's log keeps whole go on standard input only.
        let long = "1 ".repeat(crate::spec::challenge::MAX_INPUT_WORDS + 1);
        assert_eq!(RunInput::of("r", "f", long.as_bytes()).words, None);
        assert_eq!(
            (
                crate::spec::challenge::MAX_INPUT_WORDS,
                crate::spec::challenge::MAX_INPUT_WORD_BYTES
            ),
            (
                crate::evidence::observed::MAX_ARGS,
                crate::evidence::observed::MAX_ARG_BYTES
            )
        );
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
