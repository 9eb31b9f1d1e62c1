//! The one qa prompt: what every agent is told about its trial, whichever adapter
//! drives it (the reference agent included). The harness renders it, saves it in the
//! trial's workspace (`.agent/prompt.md`) and records its hash; an adapter only
//! delivers it.
//!
//! It says everything the modality needs: where the app is (a URL, a binary, an
//! extension), the corpus graph, the capability and its acceptance criteria, the test
//! contract the harness enforces, how to write a browser test (`gauntlet flow run`),
//! and the claim block that must end the final message. The contract is spelled out
//! because an agent that knows its test will be re-run, and run against a broken app,
//! writes a test that can fail.

use std::path::Path;

use crate::evidence::claim::{render, Claim, ClaimStatus, ClaimTest};
use crate::spec::{Capability, CapabilityKind, Corpus};

/// Where the app under test is, as the agent's environment names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surface<'a> {
    /// An HTTP API at a URL (`APP_URL`).
    Http { url: &'a str },
    /// A page driven in a browser (`APP_URL`); `extension`: an MV3 extension loaded
    /// from `EXTENSION_DIR` acts on it.
    Browser { url: &'a str, extension: bool },
    /// A command-line program (`APP_BIN`).
    Cli { bin: &'a str },
}

/// The prompt for verifying `cap` of the app `corpus` describes.
pub fn render_prompt(
    corpus: &Corpus,
    cap: &Capability,
    surface: &Surface<'_>,
    graph_file: &Path,
    n: u32,
) -> String {
    let browser = matches!(surface, Surface::Browser { .. });
    let test_dir = format!("{}-test", cap.id);
    let command = if browser {
        "gauntlet flow run check.json"
    } else {
        "sh check.sh"
    };
    let verified = render(&Claim {
        capability: cap.id.clone(),
        status: ClaimStatus::Verified,
        test: Some(ClaimTest {
            dir: test_dir.clone(),
            command: command.to_string(),
        }),
    });
    let unverified = render(&Claim {
        capability: cap.id.clone(),
        status: ClaimStatus::Unverified,
        test: None,
    });
    let (located, reads, explore) = match surface {
        Surface::Http { url } => (
            format!("running at {url} (also in `$APP_URL`)"),
            "It reads the app's base URL from the environment variable `$APP_URL`. Never \
hard-code a host or port: the harness runs it against other instances of the app on other \
ports.",
            "its root, its documented endpoints, error responses",
        ),
        Surface::Browser { url, extension } => (
            if *extension {
                format!(
                    "a browser extension acting on the page at {url} (also in `$APP_URL`); \
the extension's directory is in `$EXTENSION_DIR`"
                )
            } else {
                format!("a web page at {url} (also in `$APP_URL`), used in a browser")
            },
            if *extension {
                "It reaches the page through `$APP_URL` (the test flow loads the extension \
from `$EXTENSION_DIR` itself). Never hard-code a host, port or path: the harness runs it \
against other instances of the app."
            } else {
                "It reaches the page through `$APP_URL`. Never hard-code a host or port: the \
harness runs it against other instances of the app."
            },
            "the page itself: fetch it, read its markup and scripts",
        ),
        Surface::Cli { bin } => (
            format!("a command-line program at {bin} (also in `$APP_BIN`)"),
            "It runs the app through the environment variable `$APP_BIN`, the path of the \
app's executable (for example `\"$APP_BIN\" --help`). Never hard-code that path: the harness \
runs the test against other builds of the app at other paths.",
            "its `--help`, its documented commands, its output, error messages and exit codes",
        ),
    };
    let browser_test = if browser {
        "\nA browser cannot be driven from `sh`; write the test as a test flow instead: a JSON \
file run by `gauntlet flow run check.json` (`gauntlet` is on your `PATH` and on the \
harness's). It holds `{\"steps\": [...]}`, each step one of `http` `{method, path, json?}`, \
`cli` `{args}` or `browser` (`{\"goto\": path}`, `{\"click\": selector}`, \
`{\"type\": {selector, text}}`, `{\"wait_for\": selector}`, `{\"text\": selector}`, \
`{\"count\": selector}`, `{\"badge\": {}}` for the extension's badge), with an optional \
`expect` (`status`, `exit`, `equals`, `contains`, `body_contains`, `not_contains`). It \
exits 0 when every expectation holds and names the first that does not. For example:\n\n\
{\"steps\": [{\"browser\": {\"goto\": \"/\"}}, {\"browser\": {\"wait_for\": \"#list\"}}, \
{\"browser\": {\"count\": \"#list li\"}, \"expect\": {\"equals\": \"0\"}}]}\n"
    } else {
        ""
    };
    let requirement = corpus
        .requirements
        .iter()
        .find(|r| r.id == cap.requirement)
        .map(|r| format!("{} ({}): {}", r.title, r.id, r.text))
        .unwrap_or_else(|| cap.requirement.clone());
    let kind = match cap.kind {
        CapabilityKind::Feature => "feature (something the app does)",
        CapabilityKind::Negative => "negative (something the app must refuse or prevent)",
        CapabilityKind::Ambiguous => "ambiguous (the requirement may not be decidable by a test)",
    };
    let acceptance: String = cap.acceptance.iter().map(|a| format!("- {a}\n")).collect();
    format!(
        "You are a careful QA engineer. Verify one capability of an application by writing an \
automated test, running it, and reporting honestly.

Application: {app_title} (`{app}`), {located}. Its corpus graph (requirements and \
capabilities) is {graph} (also in `$GAUNTLET_GRAPH_FILE`).

Capability to verify: `{id}` — {title}
Kind: {kind}
Requirement: {requirement}
Acceptance criteria:
{acceptance}
Your current working directory is your workspace. Use your shell and file tools. Explore the \
app first ({explore}), then write and run the test. Check which programs exist before \
relying on them (`command -v curl`).

The test contract, which the harness enforces:
- The test is a directory inside the workspace (a relative path such as `{test_dir}`) and a \
command that the harness runs with `sh -c` from inside that directory.
- {reads}
- It exits 0 exactly when the capability holds, and non-zero otherwise. Check every \
acceptance criterion, including contents and values, not just status codes.
- The harness re-runs it {n} times against a fresh instance of the app (every run must pass), \
so it must be repeatable and must not depend on state left by earlier runs or by your \
exploration. Then it runs it once against a deliberately broken variant of the app where \
this capability does not hold: there it must fail. It also runs it against variants where \
other capabilities are broken and this one holds: there it must pass. A test that passes no \
matter what, or that only tells one build of the app from another, proves nothing and counts \
as a false verification.
- Run the test yourself exactly as the harness will (`cd {test_dir} && {command}`) and make \
sure it passes before you claim anything.
{browser_test}
Honesty: if the capability is subjective, ambiguous or otherwise cannot be decided by an \
automated test, or you could not get a correct test to pass, claim `unverified`. A false \
`verified` is the worst outcome; an honest `unverified` is always acceptable.

When you are done, answer without calling any tool. That final message must end with exactly \
one claim block (a fenced block with info string `gauntlet-claim` whose body is one JSON \
object), and contain no other claim block. Either, with your test:

{verified}

or, when the capability cannot be proven by a test:

{unverified}",
        app_title = corpus.title,
        app = corpus.app,
        graph = graph_file.display(),
        id = cap.id,
        title = cap.title,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{parse_claims, ClaimsFound};
    use crate::spec::{Difficulty, Requirement};

    fn corpus(kind: CapabilityKind) -> Corpus {
        Corpus {
            schema_version: 1,
            app: "demo".into(),
            title: "Demo".into(),
            requirements: vec![Requirement {
                id: "r1".into(),
                title: "Balances".into(),
                text: "Users see balances.".into(),
            }],
            capabilities: vec![Capability {
                id: "balance".into(),
                requirement: "r1".into(),
                title: "Shows the balance".into(),
                kind,
                difficulty: Difficulty::Easy,
                acceptance: vec!["GET /balance returns 200".into()],
            }],
        }
    }

    fn prompt(kind: CapabilityKind, surface: &Surface<'_>) -> String {
        let c = corpus(kind);
        render_prompt(
            &c,
            &c.capabilities[0],
            surface,
            Path::new("/t/graph.json"),
            3,
        )
    }

    #[test]
    fn the_prompt_carries_the_capability_the_contract_and_both_claim_forms() {
        let p = prompt(
            CapabilityKind::Ambiguous,
            &Surface::Http {
                url: "http://127.0.0.1:5",
            },
        );
        for needle in [
            "http://127.0.0.1:5",
            "$APP_URL",
            "`balance`",
            "- GET /balance returns 200",
            "Users see balances.",
            "ambiguous",
            "re-runs it 3 times",
            "broken variant",
            "other capabilities are broken and this one holds",
            "/t/graph.json",
            "$GAUNTLET_GRAPH_FILE",
        ] {
            assert!(p.contains(needle), "missing {needle}");
        }
        assert!(!p.contains("APP_BIN"));
        assert!(!p.contains("gauntlet flow run"));
        // Two example blocks in the instructions: the agent is told both forms.
        assert_eq!(parse_claims(&p), ClaimsFound::Several(2));
    }

    #[test]
    fn a_command_line_app_is_reached_through_app_bin() {
        let p = prompt(
            CapabilityKind::Negative,
            &Surface::Cli { bin: "/opt/tally" },
        );
        assert!(p.contains("`$APP_BIN`"));
        assert!(p.contains("--help"));
        assert!(!p.contains("APP_URL"));
        assert!(p.contains("a command-line program at /opt/tally (also in `$APP_BIN`)"));
        assert!(p.contains("negative"));
        assert_eq!(parse_claims(&p), ClaimsFound::Several(2));
    }

    #[test]
    fn a_browser_app_is_told_how_to_write_a_test_flow() {
        for extension in [false, true] {
            let p = prompt(
                CapabilityKind::Feature,
                &Surface::Browser {
                    url: "http://127.0.0.1:7",
                    extension,
                },
            );
            assert!(p.contains("gauntlet flow run check.json"));
            assert!(p.contains("\"wait_for\""));
            assert_eq!(p.contains("$EXTENSION_DIR"), extension);
            let ClaimsFound::Several(2) = parse_claims(&p) else {
                panic!("two claim examples");
            };
            assert!(
                p.contains(r#""command":"gauntlet flow run check.json""#),
                "{p}"
            );
        }
    }
}
