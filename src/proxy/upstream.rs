//! The provider a byok proxy forwards to, and the one place its API key is used.
//!
//! The key goes into the `Authorization` header of outgoing requests and nowhere else:
//! every message that could reach a usage entry or a log line passes through
//! [`Upstream::redact`] first, because provider errors sometimes echo the key back.

use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE};

pub(crate) struct Upstream {
    base: String,
    api_key: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    pub(crate) fn new(base: &str, api_key: &str) -> std::io::Result<Upstream> {
        let base = base.trim_end_matches('/').to_owned();
        let mut builder = reqwest::Client::builder();
        // A loopback upstream (a local model server, a test double) must never be sent
        // through whatever HTTP proxy the environment names.
        if let Ok(url) = reqwest::Url::parse(&base) {
            if matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")) {
                builder = builder.no_proxy();
            }
        }
        let client = builder.build().map_err(|e| {
            std::io::Error::other(format!("cannot build the upstream http client: {e}"))
        })?;
        Ok(Upstream {
            base,
            api_key: api_key.to_owned(),
            client,
        })
    }

    /// POST a JSON body to `{base}/{path}` with the configured key.
    pub(crate) async fn post(&self, path: &str, body: Bytes) -> Result<reqwest::Response, String> {
        let request = self
            .client
            .post(format!("{}/{path}", self.base))
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        self.send(request).await
    }

    /// GET `{base}/{path}` with the configured key.
    pub(crate) async fn get(&self, path: &str) -> Result<reqwest::Response, String> {
        self.send(self.client.get(format!("{}/{path}", self.base)))
            .await
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, String> {
        request
            .header(AUTHORIZATION, format!("Bearer {}", self.api_key))
            .send()
            .await
            .map_err(|e| self.redact(&format!("upstream {} unreachable: {e}", self.base)))
    }

    /// `text` with every occurrence of the API key replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.api_key.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.api_key, "[redacted]")
        }
    }
}
