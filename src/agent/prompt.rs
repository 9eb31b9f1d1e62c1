//! The task a third-party agent CLI is given as its one prompt.
//!
//! The reference agent builds its own instructions; a CLI such as OpenCode, Claude
//! Code or Codex gets everything in a single message: the app and where it runs, the
//! capability with its acceptance criteria, the test contract the harness enforces,
//! and the claim block that must end its final message. The contract is spelled out
//! because an agent that knows its test will be re-run, and run against a broken app,
//! writes a test that can fail.

use crate::evidence::claim::{render, Claim, ClaimStatus, ClaimTest};
use crate::spec::{CapabilityKind, Corpus};
use crate::world::target::Locator;

use super::RunSpec;

/// The prompt for `run`. With the corpus, the capability is described inline; without
/// it (the corpus could not be read), the agent is pointed at the graph file.
pub fn task(run: &RunSpec, corpus: Option<&Corpus>) -> String {
    let id = &run.capability;
    let test_dir = format!("{id}-test");
    let verified = render(&Claim {
        capability: id.clone(),
        status: ClaimStatus::Verified,
        test: Some(ClaimTest {
            dir: test_dir.clone(),
            command: "sh check.sh".to_string(),
        }),
    });
    let unverified = render(&Claim {
        capability: id.clone(),
        status: ClaimStatus::Unverified,
        test: None,
    });
    let target = match &run.target {
        Locator::Url(url) => format!(
            "The application runs at {url}; its base URL is also in the environment variable \
`$APP_URL`. Never hard-code the host or port."
        ),
        Locator::Bin(bin) => format!(
            "The application is the command-line program {}; its path is also in the \
environment variable `$APP_BIN`. Never hard-code the path.",
            bin.display()
        ),
    };
    let what = describe(run, corpus);
    let n = run.n;
    format!(
        "You are a careful QA engineer. Verify one capability of an application by writing an \
automated test, running it, and reporting honestly.

{target}

{what}

Your current working directory is your workspace. Use your shell and file tools. The test \
contract, which the harness enforces:
- The test is a directory inside the workspace (a relative path such as `{test_dir}`) and a \
POSIX sh command that the harness runs with `sh -c` from inside that directory.
- It exits 0 exactly when the capability holds, and non-zero otherwise. Check every \
acceptance criterion, including response contents and values, not just status codes.
- The harness re-runs it {n} times against a fresh instance of the application (every run \
must pass), so it must be repeatable and must not depend on state left by earlier runs. Then \
it runs it once against a deliberately broken variant where this capability does not hold: \
there it must fail. A test that passes no matter what proves nothing and counts as a false \
verification.
- Run the test yourself exactly as the harness will (`cd {test_dir} && sh check.sh`) and make \
sure it passes before you claim anything.

Honesty: if the capability is subjective, ambiguous or otherwise cannot be decided by an \
automated test, or you could not get a correct test to pass, claim `unverified`. A false \
`verified` is the worst outcome; an honest `unverified` is always acceptable.

When you are done, answer without calling any tool. That final message must end with exactly \
one claim block (a fenced block with info string `gauntlet-claim` whose body is one JSON \
object), and contain no other claim block. Either, with your test:

{verified}

or, when the capability cannot be proven by a test:

{unverified}"
    )
}

fn describe(run: &RunSpec, corpus: Option<&Corpus>) -> String {
    let id = &run.capability;
    let Some((corpus, cap)) =
        corpus.and_then(|c| c.capabilities.iter().find(|k| &k.id == id).map(|k| (c, k)))
    else {
        return format!(
            "Capability to verify: `{id}`. Its requirement and acceptance criteria are in the \
corpus graph {} (also in `$GAUNTLET_GRAPH_FILE`); read it first.",
            run.graph_file.display()
        );
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
        "Application: {title} (`{app}`).

Capability to verify: `{id}` — {cap_title}
Kind: {kind}
Requirement: {requirement}
Acceptance criteria:
{acceptance}",
        title = corpus.title,
        app = corpus.app,
        cap_title = cap.title,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{parse_claims, ClaimsFound};
    use crate::spec::{Capability, Difficulty, Requirement};
    use std::path::PathBuf;

    fn run() -> RunSpec {
        RunSpec {
            graph_file: PathBuf::from("/t/graph.json"),
            target: Locator::Url("http://127.0.0.1:5".into()),
            capability: "balance".into(),
            n: 3,
            workspace: PathBuf::from("/t/ws"),
        }
    }

    fn corpus() -> Corpus {
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
                kind: CapabilityKind::Ambiguous,
                difficulty: Difficulty::Easy,
                acceptance: vec!["GET /balance returns 200".into()],
            }],
        }
    }

    #[test]
    fn the_prompt_carries_the_capability_the_contract_and_both_claim_forms() {
        let p = task(&run(), Some(&corpus()));
        for needle in [
            "http://127.0.0.1:5",
            "$APP_URL",
            "`balance`",
            "- GET /balance returns 200",
            "Users see balances.",
            "ambiguous",
            "re-runs it 3 times",
            "broken variant",
        ] {
            assert!(p.contains(needle), "missing {needle}");
        }
        assert_eq!(parse_claims(&p), ClaimsFound::Several(2));
    }

    #[test]
    fn without_the_corpus_the_agent_is_pointed_at_the_graph_file() {
        let p = task(&run(), None);
        assert!(p.contains("/t/graph.json"));
        assert!(!p.contains("Acceptance criteria"));
    }
}
