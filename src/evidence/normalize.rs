//! Normalized evidence from an agent's own event stream.
//!
//! Every agent CLI narrates its run in its own JSONL dialect (OpenCode's `--format
//! json`, Claude Code's `stream-json`, Codex's `exec --json`). Adapters translate each
//! dialect, line by line, through one [`Normalizer`], which builds two things at once:
//!
//! - the [`Transcript`] the pure scorer reads (the final message, tool outputs), with
//!   whole texts, derived again at rescore time from the raw bytes;
//! - the [`AgentReport`] kept in the record: steps, tool calls with bounded output
//!   previews (size and SHA-256 of the whole output), texts, errors, and the tokens and
//!   cost the agent *says* it spent — beside the proxy's metered figures, never instead.
//!
//! Nothing here trusts the stream: unknown event types are kept and counted, lines that
//! are not JSON objects are counted, and every text kept in the report is bounded.
//!
//! Bounded whatever the agent prints: the report keeps at most [`MAX_ITEMS`] of each
//! list (tool calls, texts, errors, per-step usage) and at most [`TEXT_BUDGET`] bytes of
//! text in all (past it a preview keeps only the size and hash of its text), counts
//! every event type by name up to [`MAX_TYPES`] names of at most [`NAME_BYTES`] bytes,
//! and counts in [`Dropped`] everything it did not keep. The transcript keeps a bounded
//! number of events ([`MAX_EVENTS`](super::events::MAX_EVENTS)). Memory and record size
//! then depend on these caps, not on how many events the agent wrote: a flood of tiny
//! events costs counters.

use std::collections::BTreeMap;
use std::io::BufRead;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::{read_line_bounded, Event, Transcript};

/// Bytes of a tool output or text kept in a preview; the rest is hashed and counted.
pub const PREVIEW_BYTES: usize = 2048;
/// A tool input whose JSON is longer than this is kept as a preview, not whole.
pub const INPUT_BYTES: usize = 8192;
/// Items a report keeps of each list (tool calls, texts, errors, per-step usage); the
/// rest are counted in [`Dropped`]. The final message is always kept.
pub const MAX_ITEMS: usize = 1000;
/// Bytes of text a report keeps in all (previews, inputs, titles, metadata); past it,
/// previews keep only the size and SHA-256 of their text.
pub const TEXT_BUDGET: usize = 2 << 20;
/// Event type names a report counts by name; objects of further types are counted in
/// [`Dropped::event_types`].
pub const MAX_TYPES: usize = 256;
/// Bytes kept of a name the stream gives (event type, tool name, call id, session id,
/// version, model).
pub const NAME_BYTES: usize = 128;

/// The first [`PREVIEW_BYTES`] of a text, with the size and hash of all of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Preview {
    pub text: String,
    /// Bytes of the whole text.
    pub bytes: u64,
    /// SHA-256 of the whole text.
    pub sha256: String,
    pub truncated: bool,
}

impl Preview {
    pub fn of(text: &str) -> Preview {
        Preview::bounded(text, PREVIEW_BYTES)
    }

    /// The first `limit` bytes of `text` (on a char boundary), with its size and hash.
    pub fn bounded_to(text: &str, limit: usize) -> Preview {
        Preview::bounded(text, limit)
    }

    pub(crate) fn bounded(text: &str, limit: usize) -> Preview {
        let mut end = text.len().min(limit);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Preview {
            text: text[..end].to_owned(),
            bytes: text.len() as u64,
            sha256: crate::hash::sha256(text.as_bytes()),
            truncated: end < text.len(),
        }
    }
}

/// One tool call as the agent reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCallRecord {
    /// The agent's id for the call (`call_0`, `toolu_…`, `item_1`).
    pub id: String,
    /// The tool's name as the agent calls it (`bash`, `Bash`, `command_execution`).
    pub name: String,
    /// The agent's own status word (`completed`, `failed`, `error`, …); `pending` when
    /// the stream ended before a result.
    pub status: String,
    pub failed: bool,
    /// The input, whole when its JSON is at most [`INPUT_BYTES`], otherwise `null` and
    /// `input_preview` holds its bounded form.
    pub input: Value,
    pub input_preview: Option<Preview>,
    pub output: Option<Preview>,
    /// Milliseconds since the Unix epoch, where the agent's stream says.
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    /// The agent's own title for the call (OpenCode's `state.title`), if it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The agent's metadata for the call (exit code, truncation…), bounded like inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A text the agent wrote (not tool output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TextRecord {
    pub text: Preview,
    /// Whether this is the final message, the only one a claim may come from.
    #[serde(rename = "final")]
    pub is_final: bool,
    pub at_ms: Option<i64>,
}

/// Tokens and cost as the agent itself reported them. Not metered: the proxy's usage
/// log is what gauntlet reports; these are kept to compare against it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportedUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
    /// In US dollars, exactly as the agent wrote it (a JSON number, summed over steps).
    pub cost_usd: Option<serde_json::Number>,
}

impl ReportedUsage {
    fn add(&mut self, other: &ReportedUsage) {
        fn sum(a: &mut Option<u64>, b: Option<u64>) {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0).saturating_add(b));
            }
        }
        sum(&mut self.input_tokens, other.input_tokens);
        sum(&mut self.output_tokens, other.output_tokens);
        sum(&mut self.cache_read_tokens, other.cache_read_tokens);
        sum(&mut self.cache_write_tokens, other.cache_write_tokens);
        sum(&mut self.reasoning_tokens, other.reasoning_tokens);
        if let Some(b) = &other.cost_usd {
            self.cost_usd = match &self.cost_usd {
                // One report: keep the agent's number exactly as written.
                None => Some(b.clone()),
                Some(a) => serde_json::Number::from_f64(
                    a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0),
                ),
            };
        }
    }

    fn is_empty(&self) -> bool {
        *self == ReportedUsage::default()
    }
}

/// The normalized evidence of one agent run, derived from its stdout.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentReport {
    /// Which dialect was read: `gauntlet`, `opencode`, `claude-code`, `codex`.
    pub format: String,
    pub session_id: Option<String>,
    /// The version the stream itself names, if it does.
    pub agent_version: Option<String>,
    pub model: Option<String>,
    /// Model turns (steps) the agent reported.
    pub steps: u64,
    pub tool_calls: Vec<ToolCallRecord>,
    pub failed_tool_calls: u64,
    pub texts: Vec<TextRecord>,
    pub errors: Vec<String>,
    /// What the agent says it spent, summed over the run.
    pub reported_usage: ReportedUsage,
    /// The same, per step, in stream order: each step's token object and cost as the
    /// agent reported it, so the sums can be audited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_usage: Vec<ReportedUsage>,
    /// JSON objects read, by their type.
    pub event_types: BTreeMap<String, u64>,
    /// Objects of a type the adapter does not know, by type; kept raw in the transcript.
    pub unknown_events: BTreeMap<String, u64>,
    /// Lines that were not JSON objects, or were too long to keep.
    pub garbage_lines: u64,
    /// What the report did not keep, by kind (absent when it kept everything).
    #[serde(default, skip_serializing_if = "Dropped::is_empty")]
    pub dropped: Dropped,
}

/// What a report counted but did not keep, so that a bounded report still says how
/// much there was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Dropped {
    /// Tool calls past [`MAX_ITEMS`] (`steps` and `failed_tool_calls` still count them).
    pub tool_calls: u64,
    /// Results of tool calls that were not kept.
    pub tool_results: u64,
    /// Texts past [`MAX_ITEMS`].
    pub texts: u64,
    /// Errors past [`MAX_ITEMS`].
    pub errors: u64,
    /// Per-step usage entries past [`MAX_ITEMS`] (`reported_usage` still sums them).
    pub step_usage: u64,
    /// Objects whose type was not counted by name in `event_types`: past [`MAX_TYPES`]
    /// names.
    pub event_types: u64,
    /// The same for `unknown_events`.
    pub unknown_event_types: u64,
    /// Bytes of text not kept in previews once [`TEXT_BUDGET`] was spent (their size and
    /// hash are kept).
    pub text_bytes: u64,
}

impl Dropped {
    pub fn is_empty(&self) -> bool {
        *self == Dropped::default()
    }
}

/// The first [`NAME_BYTES`] of a name, on a char boundary.
fn name(s: &str) -> String {
    let mut end = s.len().min(NAME_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// Count one object under `ty` in `map`, or in `overflow` once the map has
/// [`MAX_TYPES`] names.
fn count_type(map: &mut BTreeMap<String, u64>, overflow: &mut u64, ty: &str) {
    let key = name(ty);
    if let Some(n) = map.get_mut(&key) {
        *n += 1;
    } else if map.len() < MAX_TYPES {
        map.insert(key, 1);
    } else {
        *overflow += 1;
    }
}

/// What a stream parser produces: the transcript for scoring, the report for the record.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    pub transcript: Transcript,
    pub report: AgentReport,
}

/// A pure parser of one dialect. Never fails: a bad line is evidence, not an error.
pub type StreamParser = fn(&mut dyn BufRead) -> Parsed;

/// Read a JSONL stream, handing each JSON object to `on_object` and counting the rest
/// as garbage in `n`. Stops at the first I/O error with what was read.
pub fn for_each_object<R: BufRead + ?Sized>(
    reader: &mut R,
    n: &mut Normalizer,
    mut on_object: impl FnMut(&mut Normalizer, Value),
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(reader, &mut line) {
            Ok(None) | Err(_) => break,
            Ok(Some(false)) => n.garbage(),
            Ok(Some(true)) => {
                let trimmed = line.trim_ascii();
                if trimmed.is_empty() {
                    continue;
                }
                match crate::json::from_bytes::<Value>(trimmed) {
                    Ok(v @ Value::Object(_)) => on_object(n, v),
                    _ => n.garbage(),
                }
            }
        }
    }
}

/// Builds a [`Parsed`] from the calls an adapter's parser makes while reading a stream.
///
/// Texts are held as *pending* until it is clear whether they are the final message: a
/// tool call, or a text of another message, turns them into intermediate messages; what
/// is pending when the stream ends is the final message.
#[derive(Debug, Default)]
pub struct Normalizer {
    transcript: Transcript,
    report: AgentReport,
    /// Tool call id → index in `report.tool_calls` (kept calls only).
    open: BTreeMap<String, usize>,
    /// The pending texts of one message, joined by newlines as they come.
    pending: Option<String>,
    pending_key: Option<String>,
    /// Bytes of text the report may still keep ([`TEXT_BUDGET`] at the start).
    budget: usize,
    pending_at: Option<i64>,
    final_override: Option<String>,
    /// The dialect marks its final message explicitly; pending text is never final.
    explicit_final: bool,
}

impl Normalizer {
    pub fn new(format: &str) -> Normalizer {
        Normalizer {
            report: AgentReport {
                format: format.to_owned(),
                ..AgentReport::default()
            },
            budget: TEXT_BUDGET,
            ..Normalizer::default()
        }
    }

    /// A preview of `text` of at most `limit` bytes, within what is left of the budget.
    fn preview(&mut self, text: &str, limit: usize) -> Preview {
        let wanted = text.len().min(limit);
        let p = Preview::bounded(text, wanted.min(self.budget));
        self.budget -= p.text.len();
        self.report.dropped.text_bytes += (wanted - p.text.len()) as u64;
        p
    }

    /// `value` whole when its JSON fits [`INPUT_BYTES`] (and, if `budgeted`, what is
    /// left of the budget), otherwise `null` and a bounded preview of its JSON. A tool
    /// call's input is never refused for the budget — the policy assessment reads paths
    /// out of it — so inputs are bounded by [`INPUT_BYTES`] × [`MAX_ITEMS`] instead.
    fn bounded_value(&mut self, value: &Value, budgeted: bool) -> (Value, Option<Preview>) {
        let json = value.to_string();
        if json.len() <= INPUT_BYTES && (!budgeted || json.len() <= self.budget) {
            self.budget = self.budget.saturating_sub(json.len());
            (value.clone(), None)
        } else {
            (Value::Null, Some(self.preview(&json, PREVIEW_BYTES)))
        }
    }

    /// Count one object of type `ty` (known or not).
    pub fn seen(&mut self, ty: &str) {
        count_type(
            &mut self.report.event_types,
            &mut self.report.dropped.event_types,
            ty,
        );
    }

    /// An object of a type the adapter does not know: kept raw (up to a bound) and
    /// counted.
    pub fn unknown(&mut self, ty: &str, raw: Value) {
        count_type(
            &mut self.report.unknown_events,
            &mut self.report.dropped.unknown_event_types,
            ty,
        );
        self.transcript.push_unknown(raw);
    }

    pub fn garbage(&mut self) {
        self.report.garbage_lines += 1;
        self.transcript.garbage_lines += 1;
    }

    pub fn step(&mut self) {
        self.report.steps += 1;
    }

    pub fn session(&mut self, id: Option<&str>) {
        if self.report.session_id.is_none() {
            self.report.session_id = id.map(name);
        }
    }

    pub fn start(&mut self, version: Option<&str>, model: Option<&str>) {
        if let Some(v) = version {
            self.report.agent_version = Some(name(v));
        }
        if let Some(m) = model {
            self.report.model = Some(name(m));
        }
    }

    /// A tool call began (or was announced). Calling it again for the same id updates
    /// the input and keeps the first start time. Past [`MAX_ITEMS`] calls a new call is
    /// counted, in the transcript too, but not kept in the report.
    pub fn tool_call(&mut self, id: &str, tool: &str, input: &Value, at_ms: Option<i64>) {
        self.flush_pending();
        match self.open.get(id).copied() {
            Some(i) => {
                let (input, input_preview) = self.bounded_value(input, false);
                let call = &mut self.report.tool_calls[i];
                if !input.is_null() || input_preview.is_some() {
                    call.input = input;
                    call.input_preview = input_preview;
                }
                call.started_ms = call.started_ms.or(at_ms);
            }
            None if self.report.tool_calls.len() >= MAX_ITEMS => {
                self.report.dropped.tool_calls += 1;
                self.transcript.tool_calls += 1;
                self.transcript.push_event(Event::ToolCall {
                    id: name(id),
                    tool: name(tool),
                    input: Value::Null,
                });
            }
            None => {
                let (input, input_preview) = self.bounded_value(input, false);
                self.open
                    .insert(id.to_owned(), self.report.tool_calls.len());
                self.report.tool_calls.push(ToolCallRecord {
                    id: name(id),
                    name: name(tool),
                    status: "pending".into(),
                    failed: false,
                    input: input.clone(),
                    input_preview,
                    output: None,
                    started_ms: at_ms,
                    ended_ms: None,
                    title: None,
                    metadata: None,
                });
                self.transcript.tool_calls += 1;
                self.transcript.push_event(Event::ToolCall {
                    id: name(id),
                    tool: name(tool),
                    input,
                });
            }
        }
    }

    /// The agent's title and metadata for call `id` (already announced and kept).
    pub fn tool_meta(&mut self, id: &str, title: Option<&str>, metadata: Option<&Value>) {
        let Some(i) = self.open.get(id).copied() else {
            return;
        };
        let title = title
            .filter(|t| !t.is_empty())
            .map(|t| self.preview(t, PREVIEW_BYTES).text);
        let metadata = metadata.filter(|m| !m.is_null()).map(|m| {
            let (kept, preview) = self.bounded_value(m, true);
            match preview {
                Some(p) => {
                    serde_json::json!({ "preview": p.text, "bytes": p.bytes, "sha256": p.sha256 })
                }
                None => kept,
            }
        });
        let call = &mut self.report.tool_calls[i];
        if title.is_some() {
            call.title = title;
        }
        if metadata.is_some() {
            call.metadata = metadata;
        }
    }

    /// A tool call ended. A result for an id never announced is recorded as a call too
    /// (while the report has room; past it, the result is counted).
    pub fn tool_result(
        &mut self,
        id: &str,
        status: &str,
        output: &str,
        failed: bool,
        at_ms: Option<i64>,
    ) {
        if failed {
            self.report.failed_tool_calls += 1;
            self.transcript.failed_tool_calls += 1;
        }
        if !self.open.contains_key(id) && self.report.tool_calls.len() < MAX_ITEMS {
            self.tool_call(id, "", &Value::Null, None);
        }
        let Some(i) = self.open.get(id).copied() else {
            self.report.dropped.tool_results += 1;
            self.transcript.push_event(Event::ToolResult {
                id: name(id),
                tool: String::new(),
                output: output.to_owned(),
                failed,
            });
            return;
        };
        let preview = self.preview(output, PREVIEW_BYTES);
        let call = &mut self.report.tool_calls[i];
        call.status = name(status);
        call.failed = failed;
        call.output = Some(preview);
        call.ended_ms = at_ms;
        let tool = call.name.clone();
        self.transcript.push_event(Event::ToolResult {
            id: name(id),
            tool,
            output: output.to_owned(),
            failed,
        });
    }

    /// Assistant text belonging to message `key`. Texts of one message are joined; a
    /// text of another message makes the pending ones intermediate.
    pub fn text(&mut self, key: &str, text: &str, at_ms: Option<i64>) {
        if text.is_empty() {
            return;
        }
        if self.pending_key.as_deref() != Some(key) {
            self.flush_pending();
            self.pending_key = Some(key.to_owned());
            self.pending_at = at_ms;
        }
        match &mut self.pending {
            Some(p) => {
                p.push('\n');
                p.push_str(text);
            }
            None => self.pending = Some(text.to_owned()),
        }
    }

    /// For dialects whose final message is only ever an explicit event (the gauntlet
    /// protocol's `final`): text still pending at the end is intermediate.
    pub fn explicit_final_only(mut self) -> Normalizer {
        self.explicit_final = true;
        self
    }

    /// The agent named its final message explicitly (Claude Code's `result`).
    pub fn final_message(&mut self, text: &str) {
        self.final_override = Some(text.to_owned());
    }

    pub fn error(&mut self, message: &str) {
        if self.report.errors.len() < MAX_ITEMS {
            let text = self.preview(message, PREVIEW_BYTES).text;
            self.report.errors.push(text);
        } else {
            self.report.dropped.errors += 1;
        }
        self.transcript.push_event(Event::Error {
            message: message.to_owned(),
        });
    }

    pub fn usage(&mut self, usage: &ReportedUsage) {
        if usage.is_empty() {
            return;
        }
        self.report.reported_usage.add(usage);
        if self.report.step_usage.len() < MAX_ITEMS {
            self.report.step_usage.push(usage.clone());
        } else {
            self.report.dropped.step_usage += 1;
        }
        self.transcript.push_event(Event::Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
    }

    fn flush_pending(&mut self) {
        self.pending_key = None;
        let Some(text) = self.pending.take() else {
            return;
        };
        let at_ms = self.pending_at.take();
        if self.report.texts.len() < MAX_ITEMS {
            let text = self.preview(&text, PREVIEW_BYTES);
            self.report.texts.push(TextRecord {
                text,
                is_final: false,
                at_ms,
            });
        } else {
            self.report.dropped.texts += 1;
        }
        self.transcript.push_event(Event::Message { text });
    }

    pub fn finish(mut self) -> Parsed {
        if self.explicit_final {
            self.flush_pending();
        }
        let final_text = match (self.final_override.take(), self.pending.take()) {
            (Some(stated), Some(pending)) if stated == pending => Some(stated),
            (Some(stated), Some(pending)) => {
                self.pending = Some(pending);
                self.flush_pending();
                Some(stated)
            }
            (Some(stated), None) => Some(stated),
            (None, Some(pending)) => Some(pending),
            (None, None) => None,
        };
        if let Some(text) = final_text {
            // The final message is kept whatever the caps: it is the one a claim may
            // come from.
            let preview = self.preview(&text, PREVIEW_BYTES);
            self.report.texts.push(TextRecord {
                text: preview,
                is_final: true,
                at_ms: self.pending_at.take(),
            });
            self.transcript
                .push_event(Event::Final { text: text.clone() });
            self.transcript.final_message = Some(text);
        }
        Parsed {
            transcript: self.transcript,
            report: self.report,
        }
    }
}

/// The normalized evidence of a gauntlet-protocol stream (docs/agent-protocol.md): the
/// reference agent and `command` agents. The transcript is exactly
/// [`parse_transcript`](super::parse_transcript)'s, so verdicts do not change with it.
pub fn parse_gauntlet(reader: &mut dyn BufRead) -> Parsed {
    let mut n = Normalizer::new("gauntlet").explicit_final_only();
    let mut t = Transcript::default();
    let mut k = 0u64;
    for_each_object(reader, &mut n, |n, v| {
        let ty = v
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        n.seen(&ty);
        // `gauntlet-agent task` stamps each line; other speakers of the protocol may not.
        let at = v.get("ts_ms").and_then(Value::as_i64);
        let event = match serde_json::from_value::<Event>(v.clone()) {
            Ok(event) => event,
            Err(_) => {
                t.push_unknown(v.clone());
                n.unknown(&ty, v);
                return;
            }
        };
        match &event {
            Event::Start {
                agent,
                version,
                model,
            } => {
                let version = format!("{agent} {version}");
                n.start(
                    Some(version.trim()),
                    Some(model.as_str()).filter(|m| !m.is_empty()),
                );
            }
            Event::ToolCall { id, tool, input } => {
                t.tool_calls += 1;
                n.step();
                n.tool_call(id, tool, input, at);
            }
            Event::ToolResult {
                id, output, failed, ..
            } => {
                if *failed {
                    t.failed_tool_calls += 1;
                }
                let status = if *failed { "failed" } else { "completed" };
                n.tool_result(id, status, output, *failed, at);
            }
            Event::Message { text } => {
                k += 1;
                n.text(&format!("message-{k}"), text, at);
            }
            Event::Usage {
                input_tokens,
                output_tokens,
            } => n.usage(&ReportedUsage {
                input_tokens: *input_tokens,
                output_tokens: *output_tokens,
                ..ReportedUsage::default()
            }),
            Event::Error { message } => n.error(message),
            Event::Final { text } => {
                t.final_message = Some(text.clone());
                n.final_message(text);
            }
        }
        t.push_event(event);
    });
    let mut parsed = n.finish();
    t.garbage_lines = parsed.report.garbage_lines;
    parsed.transcript = t;
    parsed
}

/// Milliseconds since the epoch from an RFC 3339 timestamp.
pub fn rfc3339_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// A JSON field as u64, if it is a non-negative integer.
pub fn u64_at(v: &Value, pointer: &str) -> Option<u64> {
    v.pointer(pointer).and_then(Value::as_u64)
}

/// A JSON field as &str.
pub fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_bounded_on_char_boundaries_and_hash_the_whole() {
        let long = "é".repeat(PREVIEW_BYTES);
        let p = Preview::of(&long);
        assert!(p.truncated);
        assert!(p.text.len() <= PREVIEW_BYTES);
        assert_eq!(p.bytes, long.len() as u64);
        assert_eq!(p.sha256, crate::hash::sha256(long.as_bytes()));
        let short = Preview::of("ok");
        assert!(!short.truncated);
        assert_eq!(short.text, "ok");
    }

    #[test]
    fn pending_text_becomes_intermediate_on_a_tool_call_and_final_at_the_end() {
        let mut n = Normalizer::new("t");
        n.text("m1", "looking", None);
        n.tool_call("c1", "bash", &serde_json::json!({"command": "ls"}), Some(5));
        n.tool_result("c1", "completed", "a\nb", false, Some(9));
        n.text("m2", "part one", None);
        n.text("m2", "part two", None);
        let p = n.finish();
        assert_eq!(
            p.transcript.final_message.as_deref(),
            Some("part one\npart two")
        );
        assert_eq!(
            p.transcript.tool_outputs().collect::<Vec<_>>(),
            vec!["looking", "a\nb"]
        );
        assert_eq!(p.report.texts.len(), 2);
        assert!(p.report.texts[1].is_final && !p.report.texts[0].is_final);
        let call = &p.report.tool_calls[0];
        assert_eq!((call.started_ms, call.ended_ms), (Some(5), Some(9)));
        assert_eq!(call.output.as_ref().map(|o| o.bytes), Some(3));
    }

    #[test]
    fn a_stated_final_message_wins_and_other_pending_text_is_intermediate() {
        let mut n = Normalizer::new("t");
        n.text("m1", "draft", None);
        n.final_message("the end");
        let p = n.finish();
        assert_eq!(p.transcript.final_message.as_deref(), Some("the end"));
        assert_eq!(
            p.transcript.tool_outputs().collect::<Vec<_>>(),
            vec!["draft"]
        );
    }

    #[test]
    fn big_inputs_are_previews_and_usage_sums() {
        let mut n = Normalizer::new("t");
        let big = serde_json::json!({"content": "x".repeat(INPUT_BYTES)});
        n.tool_call("c", "write", &big, None);
        let one = ReportedUsage {
            input_tokens: Some(3),
            cost_usd: serde_json::Number::from_f64(0.5),
            ..ReportedUsage::default()
        };
        n.usage(&one);
        n.usage(&one);
        let p = n.finish();
        assert!(p.report.tool_calls[0].input.is_null());
        assert!(p.report.tool_calls[0]
            .input_preview
            .as_ref()
            .is_some_and(|i| i.truncated));
        assert_eq!(p.report.tool_calls[0].status, "pending");
        assert_eq!(p.report.reported_usage.input_tokens, Some(6));
        assert_eq!(
            p.report.reported_usage.cost_usd.and_then(|c| c.as_f64()),
            Some(1.0)
        );
    }

    #[test]
    fn a_flood_is_counted_and_the_report_stays_bounded() {
        let n = 50_000;
        let mut input = Vec::new();
        for i in 0..n {
            input.extend_from_slice(br#"{"type":"message","text":"x"}"#);
            input.push(b'\n');
            if i % 10 == 0 {
                let call = format!(
                    r#"{{"type":"tool_call","id":"c{i}","tool":"shell","input":{{"command":"ls"}}}}
{{"type":"tool_result","id":"c{i}","output":"{}","failed":true}}
{{"type":"t{i}"}}
{{"type":"error","message":"e"}}
{{"type":"usage","input_tokens":1}}
"#,
                    "o".repeat(3000)
                );
                input.extend_from_slice(call.as_bytes());
            }
        }
        input.extend_from_slice(br#"{"type":"final","text":"the end"}"#);
        let p = parse_gauntlet(&mut &input[..]);
        let r = &p.report;
        let calls = (n / 10) as u64;
        assert_eq!(
            r.texts.len(),
            MAX_ITEMS + 1,
            "the final message beyond the cap"
        );
        assert!(r
            .texts
            .last()
            .is_some_and(|t| t.is_final && t.text.text == "the end"));
        assert_eq!(r.dropped.texts, n as u64 - MAX_ITEMS as u64);
        assert_eq!(r.tool_calls.len(), MAX_ITEMS);
        assert_eq!(r.dropped.tool_calls, calls - MAX_ITEMS as u64);
        assert_eq!(r.dropped.tool_results, calls - MAX_ITEMS as u64);
        assert_eq!(r.failed_tool_calls, calls, "every failure is counted");
        assert_eq!(r.steps, calls);
        assert_eq!(r.errors.len(), MAX_ITEMS);
        assert_eq!(r.step_usage.len(), MAX_ITEMS);
        assert_eq!(r.reported_usage.input_tokens, Some(calls));
        assert_eq!(r.unknown_events.len(), MAX_TYPES);
        assert_eq!(r.dropped.unknown_event_types, calls - MAX_TYPES as u64);
        assert_eq!(r.event_types.len(), MAX_TYPES);
        assert_eq!(r.event_types.get("message"), Some(&(n as u64)));
        // Whatever the outputs, the previews kept stay within the text budget.
        let kept: usize = r
            .tool_calls
            .iter()
            .filter_map(|c| c.output.as_ref())
            .map(|o| o.text.len())
            .sum();
        assert!(kept <= TEXT_BUDGET, "{kept}");
        assert!(r
            .tool_calls
            .iter()
            .all(|c| c.output.as_ref().is_some_and(|o| o.bytes == 3000)));
        let json = serde_json::to_vec(r).unwrap();
        assert!(json.len() < 4 << 20, "{} bytes", json.len());
        // The transcript is bounded too, and still scores the final message.
        assert_eq!(
            p.transcript.events.len(),
            crate::evidence::events::MAX_EVENTS
        );
        assert_eq!(p.transcript.final_message.as_deref(), Some("the end"));
        assert_eq!(p.transcript.tool_calls, calls);
    }

    #[test]
    fn long_names_are_cut_and_the_text_budget_leaves_size_and_hash() {
        let mut n = Normalizer::new("t");
        let long = "n".repeat(10 * NAME_BYTES);
        n.seen(&long);
        n.session(Some(&long));
        n.tool_call(&long, &long, &Value::Null, None);
        n.budget = 10;
        n.text("m1", "0123456789abcdef", None);
        n.text("m2", "more", None);
        let p = n.finish();
        let r = &p.report;
        assert!(r.event_types.keys().all(|k| k.len() == NAME_BYTES));
        assert_eq!(r.session_id.as_ref().map(String::len), Some(NAME_BYTES));
        assert_eq!(r.tool_calls[0].name.len(), NAME_BYTES);
        assert_eq!(r.texts[0].text.text, "0123456789");
        assert_eq!(r.texts[1].text.text, "");
        assert_eq!(r.texts[1].text.sha256, crate::hash::sha256(b"more"));
        assert_eq!(r.dropped.text_bytes, 6 + 4);
    }

    #[test]
    fn gauntlet_streams_normalize_like_the_transcript() {
        let input = b"{\"type\":\"start\",\"agent\":\"gauntlet-agent\",\"version\":\"0.1.0\",\"model\":\"m\"}\n\
{\"type\":\"tool_call\",\"id\":\"1\",\"tool\":\"shell\",\"input\":{\"command\":\"ls\"}}\n\
{\"type\":\"tool_result\",\"id\":\"1\",\"tool\":\"shell\",\"output\":\"x\",\"failed\":true}\n\
{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":2}\n\
{\"type\":\"mystery\"}\nnot json\n{\"type\":\"final\",\"text\":\"done\"}\n";
        let p = parse_gauntlet(&mut &input[..]);
        let t = crate::evidence::parse_transcript(&input[..]);
        assert_eq!(p.transcript, t);
        assert_eq!(p.report.garbage_lines, 1);
        assert_eq!(p.report.unknown_events.get("mystery"), Some(&1));
        assert_eq!(
            p.report.agent_version.as_deref(),
            Some("gauntlet-agent 0.1.0")
        );
        assert_eq!(p.report.reported_usage.input_tokens, Some(5));
        assert_eq!(p.report.tool_calls[0].status, "failed");
    }
}
