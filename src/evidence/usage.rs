//! What the metering proxy saw of each model call: the token evidence every suite's
//! record keeps. It lives with the evidence, not the proxy, so that scoring and
//! records read usage without depending on the server that produced it.

use serde::{Deserialize, Serialize};

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
    pub stream: bool,
    /// HTTP status returned to the agent.
    pub status: u16,
    /// `scripted` when the proxy answered, `upstream` when a provider did; in byok mode
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

/// A usage log in a few lines: calls (streamed, failed, refused by the budget) and
/// tokens, in all and per model. What the standalone proxy prints when it stops.
pub fn summary(entries: &[UsageEntry]) -> String {
    use std::collections::BTreeMap;
    #[derive(Default)]
    struct Sum {
        calls: usize,
        input: u64,
        output: u64,
        cached: u64,
    }
    let add = |s: &mut Sum, e: &UsageEntry| {
        s.calls += 1;
        s.input = s.input.saturating_add(e.input_tokens.unwrap_or(0));
        s.output = s.output.saturating_add(e.output_tokens.unwrap_or(0));
        s.cached = s.cached.saturating_add(e.cached_input_tokens.unwrap_or(0));
    };
    let mut all = Sum::default();
    let mut by_model: BTreeMap<&str, Sum> = BTreeMap::new();
    for e in entries {
        add(&mut all, e);
        add(
            by_model
                .entry(e.model.as_deref().unwrap_or("(no model)"))
                .or_default(),
            e,
        );
    }
    let streamed = entries.iter().filter(|e| e.stream).count();
    let failed = entries.iter().filter(|e| e.error.is_some()).count();
    let refused = entries.iter().filter(|e| e.source == "budget").count();
    let mut out = format!(
        "{} calls ({streamed} streamed, {failed} with an error, {refused} refused by the token budget); tokens in / out / cached: {} / {} / {}\n",
        all.calls, all.input, all.output, all.cached
    );
    for (model, s) in &by_model {
        out.push_str(&format!(
            "  {model}: {} calls, tokens in / out / cached: {} / {} / {}\n",
            s.calls, s.input, s.output, s.cached
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let s = summary(&[
            e("a", 10, 1, "upstream"),
            e("b", 5, 2, "upstream"),
            e("a", 0, 0, "budget"),
        ]);
        assert!(s.starts_with("3 calls (0 streamed, 1 with an error, 1 refused by the token budget); tokens in / out / cached: 15 / 3 / 0"), "{s}");
        assert!(
            s.contains("  a: 2 calls, tokens in / out / cached: 10 / 1 / 0"),
            "{s}"
        );
    }
}
