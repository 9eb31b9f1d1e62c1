//! The claim block: the one statement of the agent's that gauntlet reads, and only from
//! its final message. Parsing is pure and total: it reports what it found, it never fails.

use serde::{Deserialize, Serialize};

pub const FENCE: &str = "```gauntlet-claim";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimStatus {
    Verified,
    Unverified,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimTest {
    /// Relative to the agent's workspace.
    pub dir: String,
    /// Run with `sh -c` in `dir`; exits 0 exactly when the capability holds.
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    pub capability: String,
    pub status: ClaimStatus,
    #[serde(default)]
    pub test: Option<ClaimTest>,
}

/// What the claim blocks in one text amount to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimsFound {
    None,
    One(Claim),
    /// A block was there but its body is not a claim.
    Malformed(String),
    /// More than one block: no claim.
    Several(usize),
}

/// Find every claim block in `text`.
pub fn parse_claims(text: &str) -> ClaimsFound {
    let mut bodies = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(FENCE) {
        let after = &rest[start + FENCE.len()..];
        // The info string must end the line.
        let Some(nl) = after.find('\n') else {
            bodies.push(Err("claim block is not closed".to_string()));
            break;
        };
        if !after[..nl].trim().is_empty() {
            rest = &after[nl..];
            continue;
        }
        let body_and_more = &after[nl + 1..];
        match find_closing_fence(body_and_more) {
            Some((body_end, next)) => {
                bodies.push(Ok(&body_and_more[..body_end]));
                rest = &body_and_more[next..];
            }
            None => {
                bodies.push(Err("claim block is not closed".to_string()));
                break;
            }
        }
    }
    match bodies.len() {
        0 => ClaimsFound::None,
        1 => match bodies.remove(0) {
            Err(e) => ClaimsFound::Malformed(e),
            Ok(body) => match serde_json::from_str::<Claim>(body) {
                Ok(c) => ClaimsFound::One(c),
                Err(e) => ClaimsFound::Malformed(format!("claim block is not a claim: {e}")),
            },
        },
        n => ClaimsFound::Several(n),
    }
}

/// Position of a line that is exactly "```" (after trimming), and where the text after
/// it starts.
fn find_closing_fence(s: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    for line in s.split_inclusive('\n') {
        if line.trim() == "```" {
            return Some((offset, offset + line.len()));
        }
        offset += line.len();
    }
    None
}

/// Render a claim block (used by the reference agent's instructions and by tests).
pub fn render(claim: &Claim) -> String {
    let body = serde_json::to_string(claim).unwrap_or_default();
    format!("{FENCE}\n{body}\n```")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_parses() {
        let text = "Done.\n```gauntlet-claim\n{\"capability\":\"balance\",\"status\":\"verified\",\"test\":{\"dir\":\"t\",\"command\":\"sh c.sh\"}}\n```\n";
        match parse_claims(text) {
            ClaimsFound::One(c) => {
                assert_eq!(c.capability, "balance");
                assert_eq!(c.status, ClaimStatus::Verified);
                assert_eq!(c.test.unwrap().command, "sh c.sh");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn two_blocks_are_not_a_claim() {
        let block = "```gauntlet-claim\n{\"capability\":\"a\",\"status\":\"unverified\"}\n```\n";
        assert_eq!(
            parse_claims(&format!("{block}{block}")),
            ClaimsFound::Several(2)
        );
    }

    #[test]
    fn bad_json_and_unclosed_are_malformed() {
        assert!(matches!(
            parse_claims("```gauntlet-claim\n{not json}\n```"),
            ClaimsFound::Malformed(_)
        ));
        assert!(matches!(
            parse_claims("```gauntlet-claim\n{}"),
            ClaimsFound::Malformed(_)
        ));
    }

    #[test]
    fn no_block_is_none_and_render_round_trips() {
        assert_eq!(parse_claims("I could not verify it."), ClaimsFound::None);
        let c = Claim {
            capability: "x".into(),
            status: ClaimStatus::Unverified,
            test: None,
        };
        assert_eq!(parse_claims(&render(&c)), ClaimsFound::One(c));
    }
}
