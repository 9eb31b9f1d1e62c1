//! The fake provider's answers, shared by the in-process proxy bench and the race
//! helper so that both measure the proxy on the same bodies.

use bytes::Bytes;

/// The non-streaming answer, usage block included.
pub const WHOLE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench upstream."},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":8,"total_tokens":128,"prompt_tokens_details":{"cached_tokens":64}}}"#;

/// Twenty content chunks, the usage chunk and `[DONE]`, each its own frame.
pub fn stream_events() -> Vec<Bytes> {
    let mut events: Vec<Bytes> = (0..20)
        .map(|i| {
            Bytes::from(format!(
                "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token{i} \"}},\"finish_reason\":null}}]}}\n\n"
            ))
        })
        .collect();
    events.push(Bytes::from_static(
        b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":20,\"total_tokens\":140}}\n\n",
    ));
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    events
}
