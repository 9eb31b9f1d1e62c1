//! A model's reply as the proxy relayed it — text and tool calls — from a response body
//! of any of the three wire protocols, streamed or not. For reading (transcripts,
//! exports): nothing here is scored, and a body it cannot read is an empty reply.

use serde_json::Value;

/// The most tool calls one reply is read with.
const MAX_CALLS: usize = 1024;

/// One tool call the model asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyCall {
    /// The model's id for the call (`call_…`, `toolu_…`); empty when the wire gave none.
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (a JSON text, possibly malformed).
    pub arguments: String,
}

/// What the model said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<ReplyCall>,
}

impl Reply {
    /// The text, then one `[tool call] name args` line per call.
    pub fn render(&self) -> String {
        let mut text = self.text.clone();
        for c in &self.calls {
            text.push_str(&format!("\n[tool call] {} {}", c.name, c.arguments));
        }
        text
    }
}

/// Read a response body: a stream when it is one (`data:` / `event:` lines), else one
/// JSON body.
pub fn parse(body: &str) -> Reply {
    let trimmed = body.trim_start();
    if trimmed.starts_with("data:") || trimmed.starts_with("event:") {
        streamed(body)
    } else {
        serde_json::from_str::<Value>(body)
            .map(|v| whole(&v))
            .unwrap_or_default()
    }
}

/// A whole (non-streamed) body: Chat's `choices[0].message`, Responses' `output[]`,
/// Messages' `content[]`.
fn whole(v: &Value) -> Reply {
    let mut r = Reply::default();
    if let Some(message) = v["choices"].get(0).map(|c| &c["message"]) {
        r.text = message["content"].as_str().unwrap_or("").to_owned();
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            r.calls.push(ReplyCall {
                id: call["id"].as_str().unwrap_or("").into(),
                name: call["function"]["name"].as_str().unwrap_or("").into(),
                arguments: call["function"]["arguments"].as_str().unwrap_or("").into(),
            });
        }
        return r;
    }
    for item in v["output"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    r.text.push_str(part["text"].as_str().unwrap_or(""));
                }
            }
            Some("function_call") => r.calls.push(ReplyCall {
                id: item["call_id"].as_str().unwrap_or("").into(),
                name: item["name"].as_str().unwrap_or("").into(),
                arguments: item["arguments"].as_str().unwrap_or("").into(),
            }),
            _ => {}
        }
    }
    for block in v["content"].as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => r.text.push_str(block["text"].as_str().unwrap_or("")),
            Some("tool_use") => r.calls.push(ReplyCall {
                id: block["id"].as_str().unwrap_or("").into(),
                name: block["name"].as_str().unwrap_or("").into(),
                arguments: block["input"].to_string(),
            }),
            _ => {}
        }
    }
    r
}

/// A streamed reply, from its events: Chat's `choices[].delta`, Responses' `*.delta`
/// events, Messages' `content_block_*`.
fn streamed(stream: &str) -> Reply {
    let mut r = Reply::default();
    for data in stream.lines().filter_map(|l| l.strip_prefix("data:")) {
        let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        // Chat Completions.
        for choice in event["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str() {
                r.text.push_str(t);
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                // An index is a position among a reply's calls: one past the last is a
                // new call, anything further is a stream no model sent.
                let index = call["index"].as_u64().unwrap_or(0) as usize;
                if index > r.calls.len() || index >= MAX_CALLS {
                    continue;
                }
                if index == r.calls.len() {
                    r.calls.push(ReplyCall::default());
                }
                let c = &mut r.calls[index];
                if let Some(id) = call["id"].as_str() {
                    c.id.push_str(id);
                }
                if let Some(n) = call["function"]["name"].as_str() {
                    c.name.push_str(n);
                }
                if let Some(a) = call["function"]["arguments"].as_str() {
                    c.arguments.push_str(a);
                }
            }
        }
        match event["type"].as_str() {
            // Responses.
            Some("response.output_text.delta") => {
                r.text.push_str(event["delta"].as_str().unwrap_or(""));
            }
            Some("response.output_item.added") if event["item"]["type"] == "function_call" => {
                r.calls.push(ReplyCall {
                    id: event["item"]["call_id"].as_str().unwrap_or("").into(),
                    name: event["item"]["name"].as_str().unwrap_or("").into(),
                    arguments: String::new(),
                });
            }
            Some("response.function_call_arguments.delta") => {
                if let Some(last) = r.calls.last_mut() {
                    last.arguments
                        .push_str(event["delta"].as_str().unwrap_or(""));
                }
            }
            // Messages.
            Some("content_block_start") if event["content_block"]["type"] == "tool_use" => {
                r.calls.push(ReplyCall {
                    id: event["content_block"]["id"].as_str().unwrap_or("").into(),
                    name: event["content_block"]["name"].as_str().unwrap_or("").into(),
                    arguments: String::new(),
                });
            }
            Some("content_block_delta") => {
                let delta = &event["delta"];
                if let Some(t) = delta["text"].as_str() {
                    r.text.push_str(t);
                }
                if let (Some(j), Some(last)) = (delta["partial_json"].as_str(), r.calls.last_mut())
                {
                    last.arguments.push_str(j);
                }
            }
            _ => {}
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_bodies_of_every_protocol_give_text_and_calls_with_their_ids() {
        let chat = r#"{"choices":[{"message":{"content":"ok","tool_calls":[{"id":"call_1","function":{"name":"bash","arguments":"{\"c\":1}"}}]}}]}"#;
        let r = parse(chat);
        assert_eq!(r.text, "ok");
        assert_eq!(
            r.calls,
            vec![ReplyCall {
                id: "call_1".into(),
                name: "bash".into(),
                arguments: "{\"c\":1}".into()
            }]
        );
        let responses = r#"{"output":[{"type":"message","content":[{"type":"output_text","text":"hi"}]},{"type":"function_call","call_id":"fc_1","name":"shell","arguments":"{}"}]}"#;
        let r = parse(responses);
        assert_eq!((r.text.as_str(), r.calls[0].id.as_str()), ("hi", "fc_1"));
        let messages = r#"{"content":[{"type":"text","text":"yo"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}"#;
        let r = parse(messages);
        assert_eq!(r.calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(parse("not json"), Reply::default());
    }

    #[test]
    fn a_stream_cannot_make_the_reader_allocate_calls_it_never_sent() {
        let s = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1000000000000000,\"function\":{\"name\":\"x\"}}]}}]}\n";
        assert!(parse(s).calls.is_empty());
    }

    #[test]
    fn streamed_chat_calls_keep_their_ids() {
        let s = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"}\"}}]}}]}\n\ndata: [DONE]\n";
        let r = parse(s);
        assert_eq!(r.calls[0].id, "call_9");
        assert_eq!(r.calls[0].arguments, "{}");
    }
}
