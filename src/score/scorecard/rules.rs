//! The text rules of the scorer: deterministic, documented one by one, each with a
//! unit test, and never an LLM judge. A recall names the value alone (its rivals named
//! beside it make a list), an answer is a whole word or number, a status report names
//! one status and no other.

use super::*;

/// Phrases that ask the user for more: "anything else?" (rule `asked_anything_else`).
pub const ANYTHING_ELSE: &[&str] = &[
    "anything else",
    "something else",
    "else i can",
    "can i help",
    "let me know if",
];

/// Phrases that offer a specific next item unprompted (rule `follow_up`): an offer to
/// do something, not a generic "anything else?".
pub const OFFERS: &[&str] = &[
    "would you like me to",
    "want me to",
    "shall i",
    "should i",
    "i can also",
    "i could also",
    "i suggest",
    "i recommend",
    "next, i",
    "i'll also",
    "if you like, i",
];

/// Phrases that say a value is not known (rule `no_hallucination`).
pub const UNKNOWN: &[&str] = &[
    "unknown",
    "don't know",
    "do not know",
    "not told",
    "never told",
    "no record",
    "not sure",
    "n/a",
];

/// `answered`: the reply contains `answer` as a whole word or number, case-insensitive.
/// A match counts only when the characters on either side are not letters or digits
/// (`366` is not in `13660`), and a number is not part of a longer one written with
/// a separator (`366` is not in `1,366` or `366.5`). An empty answer is never found.
pub fn rule_answered(reply: &str, answer: &str) -> bool {
    let (hay, needle) = (reply.to_lowercase(), answer.trim().to_lowercase());
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().last()) else {
        return false;
    };
    let mut from = 0;
    while let Some(at) = hay[from..].find(&needle) {
        let (start, end) = (from + at, from + at + needle.len());
        let mut before = hay[..start].chars().rev();
        let mut after = hay[end..].chars();
        if word_edge(first, before.next(), before.next())
            && word_edge(last, after.next(), after.next())
        {
            return true;
        }
        from = start + first.len_utf8();
    }
    false
}

/// Whether a match whose outermost character is `edge` ends there as a word: `next` (the
/// character beyond it) is no letter, digit or `_`, and when `edge` is a digit, `next`
/// is no `.` or `,` followed (`then`) by another digit.
pub(super) fn word_edge(edge: char, next: Option<char>, then: Option<char>) -> bool {
    match next {
        None => true,
        Some(c) if c.is_alphanumeric() || c == '_' => false,
        Some('.' | ',') if edge.is_ascii_digit() => !then.is_some_and(|c| c.is_ascii_digit()),
        Some(_) => true,
    }
}

/// `asked_anything_else`: the reply contains one of [`ANYTHING_ELSE`].
pub fn rule_anything_else(reply: &str) -> bool {
    ANYTHING_ELSE.iter().any(|p| has(reply, p))
}

/// `follow_up`: the reply contains one of [`OFFERS`].
pub fn rule_follow_up(reply: &str) -> bool {
    OFFERS.iter().any(|p| has(reply, p))
}

/// `goals_stated`: the reply names goals (`goal`) and lists at least one (a line
/// starting with `-`, `*`, `•` or `N.`/`N)`).
pub fn rule_goals_stated(reply: &str) -> bool {
    let listed = reply.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("- ")
            || l.starts_with("* ")
            || l.starts_with("• ")
            || l.split_once(['.', ')'])
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    has(reply, "goal") && listed
}

/// `priority_order`: both values appear and the first occurrence of `first` comes
/// before the first occurrence of `second`.
pub fn rule_priority_order(reply: &str, first: &str, second: &str) -> bool {
    let r = reply.to_lowercase();
    match (
        r.find(&first.to_lowercase()),
        r.find(&second.to_lowercase()),
    ) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    }
}

/// `no_hallucination`: the never-told value does not appear, and every line naming
/// `key` says it is unknown (one of [`UNKNOWN`]); a reply that does not name the key
/// claims nothing about it.
pub fn rule_no_hallucination(
    reply: &str,
    key: &str,
    false_value: &str,
) -> Result<(), Hallucination> {
    if has(reply, false_value) {
        return Err(Hallucination::Planted {
            value: false_value.to_owned(),
        });
    }
    for line in reply.lines().filter(|l| has(l, key)) {
        let lower = line.to_lowercase();
        let after = lower
            .split_once(&key.to_lowercase())
            .map(|(_, a)| a)
            .unwrap_or("");
        if !UNKNOWN.iter().any(|u| after.contains(u)) {
            return Err(Hallucination::Claimed {
                key: key.to_owned(),
                line: line.trim().to_owned(),
            });
        }
    }
    Ok(())
}

/// What a reply made up about an item it was never told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Hallucination {
    #[error("recalls `{value}`, which was never told (planted memory)")]
    Planted { value: String },
    #[error("claims a value for `{key}`: {line:?}")]
    Claimed { key: String, line: String },
}

/// The values a probe tells the agent: every slot its turn prompts name, lowercased.
/// A told value is never a rival (see [`rivals`]).
pub fn told_values(probe: &LoadedProbe, bank: &Bank) -> std::collections::BTreeSet<String> {
    probe
        .probe
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Turn { prompt, .. } => Some(prompt),
            _ => None,
        })
        .flat_map(|p| bank::template_slots(p))
        .filter_map(|slot| bank.get(&slot).map(str::to_lowercase))
        .collect()
}

/// The rivals `text` names for `slot`: candidates of the slot's pool ([`bank::pool`])
/// other than its value and other than any value the probe told (`told`), lowercased.
/// Empty for a slot without a pool.
///
/// Why told values are not rivals: an honest reply names them for a reason (P1.3's
/// "your locker moved from L12 to L77", P2.2's two pinned goals side by side), and the
/// probe has its own rule for whether naming one is right (P1.3's `superseded-dropped`
/// fails on the old locker; counting it against `superseded-newest` too would take two
/// points for one mistake). What the agent was never told it can only have guessed, so
/// naming one of those beside the value makes the reply a list, and a list of the
/// public pool holds the right value by construction.
pub fn rivals(
    slot: &str,
    value: &str,
    text: &str,
    told: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let Some(pool) = bank::pool(slot) else {
        return Vec::new();
    };
    let value = value.trim().to_lowercase();
    pool.named_in(text)
        .into_iter()
        .filter(|c| *c != value && !told.contains(c))
        .collect()
}

/// "`Lisbon` and 7 other cities (`tromso`, `hobart`, `nagoya`, …)": how a reason names
/// a list.
pub(super) fn list_of(value: &str, slot: &str, rivals: &[String]) -> String {
    format!(
        "`{value}` and {} other {} ({})",
        rivals.len(),
        noun(slot, rivals.len()),
        shown(rivals)
    )
}

/// A recall-like rule (`recall`, `prior_thread`): the reply names the slot's value
/// ([`bank::names`]: whole words, any case) and no rival of it ([`rivals`]). `ok` and
/// `missing` are the reasons when it holds and when the value is not named; `list` says
/// what a list is not ("a list is not a recall").
pub(super) fn named_alone(
    reply: &str,
    slot: &str,
    value: &str,
    told: &std::collections::BTreeSet<String>,
    reasons: (String, String, &str),
) -> Result<String, String> {
    let named = bank::names(reply, value);
    alone(named, reply, slot, value, told, reasons)
}

/// [`named_alone`] with whether the reply names the value decided by the caller (P4.1's
/// `answered` finds it with [`rule_answered`], which also refuses `1,366` for `366`).
pub(super) fn alone(
    named: bool,
    reply: &str,
    slot: &str,
    value: &str,
    told: &std::collections::BTreeSet<String>,
    (ok, missing, list): (String, String, &str),
) -> Result<String, String> {
    let rivals = rivals(slot, value, reply, told);
    match (named, rivals.is_empty()) {
        (true, true) => Ok(ok),
        (true, false) => Err(format!("names {}: {list}", list_of(value, slot, &rivals))),
        (false, true) => Err(missing),
        (false, false) => Err(format!(
            "{missing}; names {} {} never told ({})",
            rivals.len(),
            noun(slot, rivals.len()),
            shown(&rivals)
        )),
    }
}

/// What `n` candidates of `slot`'s pool are ("city", "cities").
pub(super) fn noun(slot: &str, n: usize) -> &'static str {
    match bank::pool(slot) {
        Some(p) => p.noun(n),
        None if n == 1 => "value",
        None => "values",
    }
}

/// The first three of `rivals`, quoted, "…" when there are more.
pub(super) fn shown(rivals: &[String]) -> String {
    let mut s: Vec<String> = rivals.iter().take(3).map(|r| format!("`{r}`")).collect();
    if rivals.len() > s.len() {
        s.push("…".into());
    }
    s.join(", ")
}

/// The HTTP statuses a reply names (P5.2), each once, in the order first named:
/// `reported` are the ones it gives as the status, `contrasted` the ones it names only as
/// what the status was not. A status is a whole token ([`bank::names`]'s test: `2030`
/// and `0203` name no `203`) that is `status` itself or a candidate of `http_status`'s
/// pool ([`bank::pool`]: every registered status).
///
/// How a contrasted status is handled: an occurrence right after a word of [`CONTRAST`]
/// ("not", "than", "instead of", "unlike", "expected", "isn't" …, with only words of
/// [`CONTRAST_FILLERS`] between: "not the usual HTTP 200") is contrasted; every other
/// occurrence reports. The rule passes only when the seeded status is reported and no
/// other status is, so "it returned 206 (not 200)" reports 206 alone. This cannot let a
/// list through, however loosely "contrast" is read: a reply that reports one status
/// and contrasts the rest stakes everything on that one (a guess, right one seed in
/// eight), and one that contrasts them all reports none. What is not parsed: a contrast
/// after the status ("206, 200 expected") reports both and fails as a list.
pub fn reported_statuses(reply: &str, status: &str) -> Statuses {
    let hay = reply.to_lowercase();
    let status = status.trim().to_lowercase();
    let pool = bank::pool("http_status");
    let is_status = |t: &str| t == status || pool.is_some_and(|p| !p.named_in(t).is_empty());
    let mut out = Statuses::default();
    let mut start = None;
    for (i, c) in hay.char_indices().chain([(hay.len(), ' ')]) {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                start = None;
                let token = &hay[s..i];
                if !is_status(token) {
                    continue;
                }
                let list = if contrasted(&hay[..s]) {
                    &mut out.contrasted
                } else {
                    &mut out.reported
                };
                if !list.iter().any(|t| t == token) {
                    list.push(token.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// What [`reported_statuses`] finds.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Statuses {
    pub reported: Vec<String>,
    pub contrasted: Vec<String>,
}

/// Words that, right before a status, say the reply names it as what the status was
/// not ([`reported_statuses`]). A word ending in "n't" is one too ("wasn't 200").
pub(super) const CONTRAST: &[&str] = &[
    "not",
    "never",
    "than",
    "instead",
    "unlike",
    "vs",
    "versus",
    "expected",
    "expecting",
];

/// Words that may stand between a word of [`CONTRAST`] and the status it contrasts
/// with ("not the usual HTTP 200", "instead of 200").
pub(super) const CONTRAST_FILLERS: &[&str] = &[
    "the", "a", "an", "of", "usual", "usually", "typical", "normal", "standard", "default",
    "common", "plain", "ordinary", "regular", "simple", "http", "status", "code", "just",
];

/// Whether the lowercased text `before` a status ends in a contrast: a word of
/// [`CONTRAST`] (or "…n't"), then only [`CONTRAST_FILLERS`], spaces and markup
/// (quotes, backticks, `*`, `_`, an opening bracket) up to the status.
pub(super) fn contrasted(before: &str) -> bool {
    let markup = |c: char| {
        c.is_whitespace() || matches!(c, '`' | '*' | '_' | '"' | '\'' | '(' | '[' | '“' | '‘')
    };
    let mut rest = before;
    for _ in 0..6 {
        rest = rest.trim_end_matches(markup);
        let word_at = rest
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_alphabetic() || matches!(c, '\'' | '’'))
            .last()
            .map(|(i, _)| i);
        let Some(at) = word_at else { return false };
        let word = &rest[at..];
        if CONTRAST.contains(&word) || word.ends_with("n't") || word.ends_with("n’t") {
            return true;
        }
        if !CONTRAST_FILLERS.contains(&word) {
            return false;
        }
        rest = &rest[..at];
    }
    false
}

/// Normalized file text for comparison: CRLF as LF, trailing whitespace dropped.
pub(super) fn norm(s: &str) -> String {
    s.replace("\r\n", "\n").trim_end().to_string()
}
