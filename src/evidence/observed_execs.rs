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
use crate::spec::challenge::{RequiredRun, APP_PROGRAM, BROWSER_PROGRAM};

/// The most bytes of a claimed command kept beside its discrepancy.
const COMMAND_PREVIEW: usize = 400;

/// The programs a required run may name by a word: the app's program as the trial
/// handed it over (`$APP_BIN`, what `app` means in a required run and in a command)
/// and the file that path leads to (running that file by its own path is running the
/// app too), and the machine's browsers (`browser`).
#[derive(Debug, Clone, Copy, Default)]
pub struct AppProgram<'a> {
    pub path: Option<&'a str>,
    pub file: Option<&'a str>,
    pub browsers: &'a [String],
}

impl AppProgram<'_> {
    fn is(&self, path: &str) -> bool {
        Some(path) == self.path || Some(path) == self.file
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
    app: AppProgram<'_>,
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
        // anything with anything.
        let seen = program.as_ref().and_then(|want| {
            observation
                .execs
                .iter()
                .zip(&paths)
                .find(|(e, path)| {
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

    fn app() -> AppProgram<'static> {
        AppProgram {
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
        let f = assess(&o, &stats(), &[], app());
        assert_eq!(f.required[0].seen, None, "{f:?}");
        assert_eq!(f.by_program[APP], 1);

        for path in [
            "/run/gauntlet/target/bin/./cli-tally",
            "/run//gauntlet/target/bin/cli-tally",
            RELAY,
        ] {
            let o = observation(&[(path, &["t", "--json", "stats"])]);
            let f = assess(&o, &stats(), &[], app());
            assert!(f.required[0].seen.is_some(), "{path}: {f:?}");
        }
        // `..` may climb out of a link: no program is named through one.
        let o = observation(&[(
            "/ws/s/../../run/gauntlet/target/bin/cli-tally",
            &["t", "--json", "stats"],
        )]);
        assert!(assess(&o, &stats(), &[], app()).required[0].seen.is_none());
        // `stats` is the whole argument, not a part of one.
        let o = observation(&[(APP, &["t", "statsx"])]);
        assert!(assess(&o, &stats(), &[], app()).required[0].seen.is_none());
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
            assert!(assess(&o, &stats(), &[], app()).required[0].seen.is_none());
        }
        // Without the app's program, `app` meets nothing.
        let o = observation(&[(APP, &["t", "stats"])]);
        let f = assess(&o, &stats(), &[], AppProgram::default());
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
        let f = assess(&o, &[], &calls, app());
        let claims: Vec<(usize, &str)> = f
            .claimed_not_observed
            .iter()
            .map(|c| (c.call, c.program.as_str()))
            .collect();
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
        let f = assess(&o, &[], &calls, app());
        let claims: Vec<(usize, &str)> = f
            .claimed_not_observed
            .iter()
            .map(|c| (c.call, c.program.as_str()))
            .collect();
        assert_eq!(claims, [(4, "sort")], "{f:?}");
        // An observation that missed execs shows no program never ran.
        let mut o = o;
        o.execs_watched = false;
        let f = assess(&o, &[], &calls, app());
        assert!(f.incomplete.is_some() && f.claimed_not_observed.is_empty());
    }
}
