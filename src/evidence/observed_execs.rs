//! Execs from observation: the programs the kernel saw a trial's processes execute,
//! the runs a challenge requires found among them, and the comparison with the
//! agent's account (the programs its shell tool calls name).
//!
//! Pure. A required run decides the task's outcome only through what was observed: a
//! report that says the app ran, or a tool call the agent printed, is the account, and
//! where the account names a program the kernel never saw executed, that is listed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::normalize::{Preview, ToolCallRecord};
use super::observed::{Exec, Observation};
use super::policy::{claimed_programs, resolve, shell_command_of, MAX_FINDINGS};
use crate::spec::challenge::{RequiredRun, APP_PROGRAM};

/// The most bytes of a claimed command kept beside its discrepancy.
const COMMAND_PREVIEW: usize = 400;

/// The app's program as the trial handed it over: what `app` means in a required run
/// and `$APP_BIN` in a command.
pub type AppProgram<'a> = Option<&'a str>;

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
    "cd", "echo", "printf", "test", "[", "[[", "true", "false", "export", "set", "unset", "read",
    "exit", "return", "source", ".", "eval", "type", "wait", "trap", "shift", "alias", "local",
    "declare", "pwd", "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
    "case", "esac", "function", "!", "{", "}", "(", ")", "ulimit", "umask", "let", "break",
    "continue", "shopt", "hash", "builtin", "readonly", "times", "getopts", "kill", "jobs", "fg",
    "bg", "disown", "history", "pushd", "popd", "dirs", ":",
];

/// Assess the execs of `observation` against the required runs and the account.
pub fn assess(
    observation: &Observation,
    required: &[RequiredRun],
    calls: &[ToolCallRecord],
    app: AppProgram<'_>,
) -> ExecFindings {
    let mut out = ExecFindings {
        incomplete: observation.execs_incomplete(),
        ..ExecFindings::default()
    };
    let normal = |p: &str| resolve(Path::new("/"), p).to_string_lossy().into_owned();
    let paths: Vec<String> = observation.execs.iter().map(|e| normal(&e.path)).collect();
    for (e, path) in observation.execs.iter().zip(&paths) {
        *out.by_program.entry(path.clone()).or_default() += 1;
        if out.execs.len() < MAX_FINDINGS {
            out.execs.push(e.clone());
        } else {
            out.execs_not_kept += 1;
        }
    }
    for r in required {
        let program = if r.program == APP_PROGRAM {
            app.map(normal)
        } else {
            Some(normal(&r.program))
        };
        let patterns: Vec<regex::Regex> = r
            .args
            .iter()
            .filter_map(|a| regex::Regex::new(&format!("^(?:{a})$")).ok())
            .collect();
        let seen = program.as_ref().and_then(|want| {
            observation
                .execs
                .iter()
                .zip(&paths)
                .find(|(e, path)| {
                    *path == want
                        && patterns
                            .iter()
                            .all(|p| e.argv.iter().skip(1).any(|a| p.is_match(a)))
                })
                .map(|(e, _)| e.clone())
        });
        out.required.push(RunCheck {
            id: r.id.clone(),
            program,
            args: r.args.clone(),
            seen,
        });
    }
    // Only an observation that saw every exec can show that a program never ran.
    if out.incomplete.is_none() {
        let names: std::collections::BTreeSet<&str> = paths
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or(p))
            .collect();
        let app = app.map(normal);
        for (i, call) in calls.iter().enumerate() {
            let Some(cmd) = shell_command_of(call) else {
                continue;
            };
            for program in claimed_programs(&cmd) {
                let seen = if program == "$APP_BIN" || program == "${APP_BIN}" {
                    match &app {
                        Some(a) => paths.contains(a),
                        None => continue,
                    }
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
        let f = assess(&o, &stats(), &[], Some(APP));
        assert_eq!(f.required[0].seen, None, "{f:?}");
        assert_eq!(f.by_program[APP], 1);

        let o = observation(&[(
            "/run/gauntlet/target/bin/../bin/cli-tally",
            &["t", "--json", "stats"],
        )]);
        let f = assess(&o, &stats(), &[], Some(APP));
        assert!(f.required[0].seen.is_some(), "{f:?}");
        // `stats` is the whole argument, not a part of one.
        let o = observation(&[(APP, &["t", "statsx"])]);
        assert!(assess(&o, &stats(), &[], Some(APP)).required[0]
            .seen
            .is_none());
        // Without the app's program, `app` meets nothing.
        let o = observation(&[(APP, &["t", "stats"])]);
        let f = assess(&o, &stats(), &[], None);
        assert_eq!(
            (f.required[0].program.as_deref(), &f.required[0].seen),
            (None, &None)
        );
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
        let f = assess(&o, &[], &calls, Some(APP));
        let claims: Vec<(usize, &str)> = f
            .claimed_not_observed
            .iter()
            .map(|c| (c.call, c.program.as_str()))
            .collect();
        assert_eq!(claims, [(0, "jq"), (1, "$APP_BIN")], "{f:?}");
        // An observation that missed execs shows no program never ran.
        let mut o = o;
        o.execs_watched = false;
        let f = assess(&o, &[], &calls, Some(APP));
        assert!(f.incomplete.is_some() && f.claimed_not_observed.is_empty());
    }
}
