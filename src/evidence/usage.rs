//! What the metering proxy saw of each model call: the token evidence every suite's
//! record keeps. It lives with the evidence, not the proxy, so that scoring and
//! records read usage without depending on the server that produced it.

use serde::{Deserialize, Serialize};

use super::provider::{ProviderFault, Retry};

/// One metered model call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UsageEntry {
    /// Order in which the proxy received the call (0-based).
    pub seq: u64,
    /// Wire protocol: `chat` (OpenAI Chat Completions), `responses` (OpenAI Responses),
    /// `messages` (Anthropic Messages); `unsupported` for a POST to a path no protocol
    /// serves (answered 404).
    pub protocol: String,
    /// Request path as received, e.g. `/v1/chat/completions`.
    pub path: String,
    pub model: Option<String>,
    /// Whether the answer came as a stream; for a call that got no answer (refused,
    /// cut, unreachable), whether its request may have asked for one.
    pub stream: bool,
    /// HTTP status returned to the agent.
    pub status: u16,
    /// `scripted` when the proxy answered, `upstream` when the call went to a provider
    /// (answered, or cut before its answer was read: `error` says so); in byok mode
    /// `proxy` when the proxy answered without reaching the provider (bad request body,
    /// provider unreachable); `budget` when the proxy refused the call because the
    /// trial's token budget was spent.
    pub source: String,
    /// All input tokens of the call, cached and cache-written ones included, so the
    /// figure means the same in every protocol: Chat's `prompt_tokens`, Responses'
    /// `input_tokens`, and Anthropic's `input_tokens + cache_read_input_tokens +
    /// cache_creation_input_tokens` (Anthropic counts the three apart).
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    pub cached_input_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    /// Of `input_tokens`, those written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
    pub duration_ms: u64,
    /// What went wrong, as observed (bad request body, upstream error, cut stream,
    /// token budget spent).
    pub error: Option<String>,
    /// Scripted mode: what the scripted model chose and why (`step 1 (shell) as bash`,
    /// `final`, `side request: ...`), so a flow that does not fit a real CLI's requests
    /// can be diagnosed from the record.
    #[serde(default)]
    pub reply: Option<String>,
    /// What the provider did wrong on this call, as the proxy saw it and passed it on
    /// to the agent (`None`: nothing, or what went wrong was not the provider's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<ProviderFault>,
    /// Answers the proxy absorbed before this one by retrying the call, oldest first
    /// (docs/provider-faults.md): the agent saw only the last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<Retry>,
}

/// How the scripted model's choices are written in [`UsageEntry::reply`]: made by the
/// proxy, read back by the scorers, so that both sides agree on one format.
pub mod script_note {
    /// A call answered with the script's tool step `k`, as the offered tool `tool`.
    pub fn step(k: usize, tool: &str) -> String {
        format!("step {k} as `{tool}`")
    }

    /// A call answered with the script's final text after `k` tool results.
    pub fn final_after(k: usize, from_tool_result: bool) -> String {
        if from_tool_result {
            format!("final from the last tool result (after {k} tool results)")
        } else {
            format!("final (after {k} tool results)")
        }
    }

    /// A call answered with a short text that advances nothing.
    pub fn side(why: &str) -> String {
        format!("{SIDE}{why}")
    }

    const SIDE: &str = "side request: ";
    const ABANDONED: &str = "abandoned: ";
    const FAILED: &str = "failed: ";

    /// A call whose conversation shows tool step `k` failed (`why`), answered with a
    /// final text that ends the script.
    pub fn failed(k: usize, why: &str) -> String {
        format!("{FAILED}step {k} {why}")
    }

    /// What a failed step's note says, if the note is one.
    pub fn failed_reason(note: &str) -> Option<&str> {
        note.strip_prefix(FAILED)
    }

    /// A call asking for tool step `k` the `n`th time, answered with a final text that
    /// ends the script: the agent's tool never carried the step out.
    pub fn abandoned(k: usize, n: u32) -> String {
        format!("{ABANDONED}step {k} asked for {n} times and never carried out")
    }

    /// What an abandoned step's note says, if the note is one.
    pub fn abandoned_reason(note: &str) -> Option<&str> {
        note.strip_prefix(ABANDONED)
    }

    /// The tool step a note says was carried out, if it says one was.
    pub fn step_of(note: &str) -> Option<usize> {
        note.strip_prefix("step ")?.split(' ').next()?.parse().ok()
    }

    /// Whether the note is the script's final reply.
    pub fn is_final(note: &str) -> bool {
        note.starts_with("final")
    }

    /// Why a side request was answered as one, if the note is one.
    pub fn side_reason(note: &str) -> Option<&str> {
        note.strip_prefix(SIDE)
    }
}

/// Scripted mode: why a turn's script did not run as written on the agent, from the
/// proxy's notes of the turn's calls, or `None` when it did: each of its `tool_steps`
/// tool steps was answered as a call of one of the agent's tools, and its final reply
/// was given. A step no offered tool can carry out is then the harness's failure, named
/// with the proxy's reason, and never a low score of the agent.
pub fn script_failure(tool_steps: usize, entries: &[UsageEntry]) -> Option<String> {
    let notes: Vec<&str> = entries.iter().filter_map(|e| e.reply.as_deref()).collect();
    let carried: std::collections::BTreeSet<usize> = notes
        .iter()
        .filter_map(|n| script_note::step_of(n))
        .collect();
    let why_not = || {
        notes
            .iter()
            .filter_map(|n| script_note::side_reason(n))
            // `flow step`: the words of `proxy::mapping::Unexpressible`, kept in usage logs.
            .find(|why| why.starts_with("flow step"))
            .map(|why| format!(": {why}"))
            .unwrap_or_default()
    };
    if let Some(why) = notes.iter().find_map(|n| script_note::failed_reason(n)) {
        return Some(format!("scripted {why}"));
    }
    if let Some(why) = notes.iter().find_map(|n| script_note::abandoned_reason(n)) {
        return Some(format!("scripted {why} by the agent's tool"));
    }
    if let Some(k) = (0..tool_steps).find(|k| !carried.contains(k)) {
        return Some(format!(
            "scripted step {k} of {tool_steps} was never carried out{}",
            why_not()
        ));
    }
    if !notes.iter().any(|n| script_note::is_final(n)) {
        return Some(format!(
            "the script's final reply was never asked for (after {tool_steps} tool steps){}",
            why_not()
        ));
    }
    None
}

/// The first budget refusal in a usage log, if any: what a record keeps as the limit
/// the trial hit.
pub fn budget_hit(entries: &[UsageEntry]) -> Option<String> {
    entries.iter().find(|e| e.source == "budget").map(|e| {
        e.error
            .clone()
            .unwrap_or_else(|| "token budget spent".to_owned())
    })
}

/// How many models [`Totals`] counts apart; calls to any further model are counted
/// together. The model name is the agent's to choose, so a hostile agent naming a new
/// one in every call would otherwise grow the totals with its calls.
const MODELS_APART: usize = 64;

/// How much of a model's name [`Totals`] keeps, for the same reason: names longer than
/// this are counted under their start.
const MODEL_NAME_CHARS: usize = 120;

/// A usage log in a few lines, added up call by call: calls (streamed, failed, refused
/// by the budget) and tokens, in all and per model. What the standalone proxy prints
/// when it stops; kept instead of the entries by a proxy that may run for days, so that
/// its memory does not grow with its calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    all: Sum,
    streamed: usize,
    failed: usize,
    refused: usize,
    by_model: std::collections::BTreeMap<String, Sum>,
    /// Calls to models beyond the first [`MODELS_APART`].
    other_models: Option<Sum>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sum {
    calls: usize,
    input: u64,
    output: u64,
    cached: u64,
}

impl Sum {
    fn add(&mut self, e: &UsageEntry) {
        self.calls += 1;
        self.input = self.input.saturating_add(e.input_tokens.unwrap_or(0));
        self.output = self.output.saturating_add(e.output_tokens.unwrap_or(0));
        self.cached = self
            .cached
            .saturating_add(e.cached_input_tokens.unwrap_or(0));
    }
}

impl Totals {
    pub fn add(&mut self, e: &UsageEntry) {
        self.all.add(e);
        self.streamed += usize::from(e.stream);
        self.failed += usize::from(e.error.is_some());
        self.refused += usize::from(e.source == "budget");
        let model = e.model.as_deref().unwrap_or("(no model)");
        let model = match model.char_indices().nth(MODEL_NAME_CHARS) {
            Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &model[..cut])),
            None => std::borrow::Cow::Borrowed(model),
        };
        if let Some(sum) = self.by_model.get_mut(model.as_ref()) {
            sum.add(e);
        } else if self.by_model.len() < MODELS_APART {
            self.by_model.entry(model.into_owned()).or_default().add(e);
        } else {
            self.other_models.get_or_insert_with(Sum::default).add(e);
        }
    }

    /// Calls added so far.
    pub fn calls(&self) -> usize {
        self.all.calls
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Totals {
            all,
            streamed,
            failed,
            refused,
            ..
        } = self;
        writeln!(
            f,
            "{} calls ({streamed} streamed, {failed} with an error, {refused} refused by the token budget); tokens in / out / cached: {} / {} / {}",
            all.calls, all.input, all.output, all.cached
        )?;
        let other = self
            .other_models
            .as_ref()
            .map(|s| (format!("(other models beyond the first {MODELS_APART})"), s));
        for (model, s) in self
            .by_model
            .iter()
            .map(|(m, s)| (m.clone(), s))
            .chain(other)
        {
            writeln!(
                f,
                "  {model}: {} calls, tokens in / out / cached: {} / {} / {}",
                s.calls, s.input, s.output, s.cached
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noted(notes: &[&str]) -> Vec<UsageEntry> {
        notes
            .iter()
            .map(|n| UsageEntry {
                reply: Some((*n).to_owned()),
                ..UsageEntry::default()
            })
            .collect()
    }

    #[test]
    fn a_script_that_ran_passes_and_one_that_could_not_is_named() {
        let ran = noted(&[
            &script_note::side("no tools offered"),
            &script_note::step(0, "Bash"),
            &script_note::step(1, "Write"),
            &script_note::final_after(2, false),
        ]);
        assert_eq!(script_failure(2, &ran), None);
        let unexpressible = noted(&[
            &script_note::side(
                "flow step 0 (remember) needs a shell or file tool, but the request offers only: Bash",
            ),
            &script_note::side("no tools offered"),
        ]);
        let why = script_failure(1, &unexpressible).unwrap();
        assert!(
            why.starts_with("scripted step 0 of 1 was never carried out: flow step 0 (remember)"),
            "{why}"
        );
        // A final text alone is a script too: it must have been asked for.
        assert_eq!(
            script_failure(0, &noted(&[&script_note::final_after(0, true)])),
            None
        );
        assert!(script_failure(0, &noted(&[&script_note::side("no tools offered")])).is_some());
        // A step asked for again and again was never carried out, whatever came after.
        let looped = noted(&[
            &script_note::step(0, "Write"),
            &script_note::abandoned(0, 5),
            &script_note::final_after(1, false),
        ]);
        let why = script_failure(1, &looped).unwrap();
        assert!(why.contains("step 0 asked for 5 times"), "{why}");
        // One step skipped is as bad as none carried out.
        let skipped = noted(&[
            &script_note::step(1, "Bash"),
            &script_note::final_after(2, false),
        ]);
        assert!(script_failure(2, &skipped)
            .unwrap()
            .starts_with("scripted step 0 of 2"));
        // A step carried out whose tool failed: named with the proxy's reason.
        let failed = noted(&[
            &script_note::step(0, "exec_command"),
            &script_note::failed(0, "its result lacks `stored`: \"Read-only file system\""),
        ]);
        let why = script_failure(1, &failed).unwrap();
        assert!(
            why.starts_with("scripted step 0 its result lacks `stored`")
                && why.contains("Read-only"),
            "{why}"
        );
    }

    #[test]
    fn a_summary_counts_calls_and_tokens_per_model() {
        let e = |model: &str, i: u64, o: u64, source: &str| UsageEntry {
            model: Some(model.into()),
            input_tokens: Some(i),
            output_tokens: Some(o),
            source: source.into(),
            error: (source == "budget").then(|| "token budget spent".into()),
            ..UsageEntry::default()
        };
        let mut totals = Totals::default();
        for entry in [
            e("a", 10, 1, "upstream"),
            e("b", 5, 2, "upstream"),
            e("a", 0, 0, "budget"),
        ] {
            totals.add(&entry);
        }
        let s = totals.to_string();
        assert!(s.starts_with("3 calls (0 streamed, 1 with an error, 1 refused by the token budget); tokens in / out / cached: 15 / 3 / 0"), "{s}");
        assert!(
            s.contains("  a: 2 calls, tokens in / out / cached: 10 / 1 / 0"),
            "{s}"
        );
    }

    #[test]
    fn totals_count_a_flood_of_model_names_together_past_a_bound() {
        let mut totals = Totals::default();
        for i in 0..1000 {
            totals.add(&UsageEntry {
                model: Some(format!("model-{i:04}")),
                input_tokens: Some(1),
                ..UsageEntry::default()
            });
        }
        let s = totals.to_string();
        assert_eq!(totals.calls(), 1000);
        assert!(s.starts_with("1000 calls"), "{s}");
        assert_eq!(s.lines().count(), 1 + MODELS_APART + 1, "{s}");
        assert!(
            s.contains("(other models beyond the first 64): 936 calls, tokens in / out / cached: 936 / 0 / 0"),
            "{s}"
        );
    }

    #[test]
    fn totals_keep_only_the_start_of_a_long_model_name() {
        let mut totals = Totals::default();
        for tail in ["a", "b"] {
            totals.add(&UsageEntry {
                model: Some(format!("{}{tail}", "é".repeat(MODEL_NAME_CHARS))),
                ..UsageEntry::default()
            });
        }
        let s = totals.to_string();
        assert!(
            s.contains(&format!("  {}…: 2 calls", "é".repeat(MODEL_NAME_CHARS))),
            "{s}"
        );
    }
}
