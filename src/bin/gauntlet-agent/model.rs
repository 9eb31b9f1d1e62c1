//! The model endpoint: an OpenAI-compatible `POST {base}/chat/completions`, configured
//! from the environment the harness sets (`OPENAI_BASE_URL`, `OPENAI_API_KEY`,
//! `OPENAI_MODEL`), so the same binary talks to the metering proxy or a real provider.

use std::io::BufRead;
use std::time::Duration;

use serde_json::{json, Value};

use crate::completion::{parse_completion, Completion, Unusable};
use crate::sse::StreamAssembler;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Retries after the first attempt, on connect errors and 5xx only: anything else
/// (4xx, a malformed body) will not get better by asking again.
const RETRIES: u32 = 2;
const BACKOFF: Duration = Duration::from_millis(500);
/// Long enough for a slow model to write a long answer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model request to {url} failed after {attempts} attempts: {reason}")]
    Unreachable {
        url: String,
        attempts: u32,
        reason: String,
    },
    #[error("model request to {url} returned http {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("model response from {url} is unusable: {reason}")]
    BadResponse {
        url: String,
        #[source]
        reason: Unusable,
    },
    #[error("cannot build http client for the model: {0}")]
    Client(#[source] reqwest::Error),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelConfig {
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
}

impl ModelConfig {
    /// Reads the three variables; empty values count as absent.
    pub fn from_env() -> ModelConfig {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        ModelConfig {
            base_url: var("OPENAI_BASE_URL")
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_string())
                .trim_end_matches('/')
                .to_string(),
            api_key: var("OPENAI_API_KEY"),
            model: var("OPENAI_MODEL").unwrap_or_else(|| DEFAULT_MODEL.to_string()),
        }
    }

    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn is_loopback(&self) -> bool {
        is_loopback_url(&self.base_url)
    }
}

/// Whether `url` points at this machine. Loopback traffic (the metering proxy, the app
/// under test) must never go through an `http_proxy` the harness may have set for the
/// agent's outside traffic, and reqwest does not exempt loopback by itself.
pub fn is_loopback_url(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .is_some_and(|h| h == "localhost" || h == "[::1]" || h == "::1" || h.starts_with("127."))
}

pub struct ChatClient {
    http: reqwest::blocking::Client,
    config: ModelConfig,
    stream: bool,
}

/// Why one attempt failed, and whether another attempt may help.
enum Attempt {
    Retry(String),
    Fatal(ModelError),
}

impl ChatClient {
    pub fn new(config: ModelConfig, stream: bool) -> Result<ChatClient, ModelError> {
        let mut builder = reqwest::blocking::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT);
        if config.is_loopback() {
            builder = builder.no_proxy();
        }
        Ok(ChatClient {
            http: builder.build().map_err(ModelError::Client)?,
            config,
            stream,
        })
    }

    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// One model turn: sends the conversation and the tools, returns the reply.
    pub fn complete(&self, messages: &[Value], tools: &Value) -> Result<Completion, ModelError> {
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": "auto",
            "stream": self.stream,
        });
        if self.stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        let url = self.config.endpoint();
        let mut last = String::new();
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                eprintln!("gauntlet-agent: retrying model request ({last})");
                std::thread::sleep(BACKOFF * attempt);
            }
            match self.attempt(&url, &body) {
                Ok(c) => return Ok(c),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry(reason)) => last = reason,
            }
        }
        Err(ModelError::Unreachable {
            url,
            attempts: RETRIES + 1,
            reason: last,
        })
    }

    fn attempt(&self, url: &str, body: &Value) -> Result<Completion, Attempt> {
        let mut req = self.http.post(url).json(body);
        if let Some(key) = &self.config.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.send().map_err(|e| {
            if e.is_connect() || e.is_timeout() {
                Attempt::Retry(format!("cannot connect: {e}"))
            } else {
                Attempt::Fatal(ModelError::Unreachable {
                    url: url.to_string(),
                    attempts: 1,
                    reason: e.to_string(),
                })
            }
        })?;
        let status = resp.status();
        if status.is_server_error() {
            return Err(Attempt::Retry(format!("http {}", status.as_u16())));
        }
        if !status.is_success() {
            let text = resp.text().unwrap_or_default();
            return Err(Attempt::Fatal(ModelError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                body: text.chars().take(2000).collect(),
            }));
        }
        let bad = |reason: Unusable| {
            Attempt::Fatal(ModelError::BadResponse {
                url: url.to_string(),
                reason,
            })
        };
        if self.stream {
            read_stream(resp).map_err(bad)
        } else {
            let value: Value = resp.json().map_err(|e| bad(Unusable::BodyNotJson(e)))?;
            parse_completion(&value).map_err(bad)
        }
    }
}

/// Reads SSE lines until `[DONE]` or the end of the body, which must come after the
/// stream said it was over.
fn read_stream(resp: reqwest::blocking::Response) -> Result<Completion, Unusable> {
    let mut reader = std::io::BufReader::new(resp);
    let mut assembler = StreamAssembler::default();
    let mut line = String::new();
    while !assembler.is_done() {
        line.clear();
        let n = reader.read_line(&mut line).map_err(Unusable::Cut)?;
        if n == 0 {
            break;
        }
        assembler.feed_line(&line)?;
    }
    if !assembler.ended_properly() {
        return Err(Unusable::Ended);
    }
    Ok(assembler.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_detected() {
        let cfg = |u: &str| ModelConfig {
            base_url: u.into(),
            api_key: None,
            model: "m".into(),
        };
        assert!(cfg("http://127.0.0.1:4000/v1").is_loopback());
        assert!(cfg("http://localhost:4000/v1").is_loopback());
        assert!(!cfg(DEFAULT_BASE_URL).is_loopback());
        assert_eq!(
            cfg("http://127.0.0.1:4000/v1").endpoint(),
            "http://127.0.0.1:4000/v1/chat/completions"
        );
    }
}
