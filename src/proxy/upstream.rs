//! The provider a byok proxy forwards to, and the one place its API key is used.
//!
//! The key goes into the auth header of outgoing requests and nowhere else: every
//! message that could reach a usage entry or a log line passes through
//! [`Upstream::redact`] first, because provider errors sometimes echo the key back.

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};

use super::wire::{Auth, CallError};

/// What the key is replaced with wherever a provider's words carry it.
const REDACTED: &str = "[redacted]";

/// The Messages API version sent when the client named none.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Client headers a provider needs to answer as the client expects (API version and
/// beta features), per auth style (that is, per provider family); everything else, the
/// client's own placeholder key included, stays with the proxy.
fn passed_client_headers(auth: Auth) -> &'static [&'static str] {
    match auth {
        Auth::Bearer => &["openai-beta"],
        Auth::XApiKey => &["anthropic-version", "anthropic-beta"],
    }
}

pub(crate) struct Upstream {
    base: String,
    /// `base` parsed once, so that a call's URL is this with its path set, not a
    /// string parsed again (host, IDNA and all) on every call.
    url: Option<reqwest::Url>,
    api_key: String,
    /// The auth header values, built once (`None`: the key is not a valid header
    /// value, so each call builds it and fails as it always did).
    bearer: Option<HeaderValue>,
    x_api_key: Option<HeaderValue>,
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
        // A redirect is the provider's answer, relayed as such: followed, reqwest would
        // carry the `x-api-key` header to whatever host the redirect names.
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
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
        let sensitive = |value: String| {
            HeaderValue::try_from(value).ok().map(|mut v| {
                v.set_sensitive(true);
                v
            })
        };
        Ok(Upstream {
            url: reqwest::Url::parse(&base)
                .ok()
                .filter(|u| !u.cannot_be_a_base()),
            bearer: sensitive(format!("Bearer {api_key}")),
            x_api_key: sensitive(api_key.to_owned()),
            base,
            api_key: api_key.to_owned(),
            client,
        })
    }

    /// `{base}/{path}`. A plain path (every route the proxy serves, without a query)
    /// is set on the parsed base; anything else is parsed whole, as it always was.
    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    fn fast_url(&self, path: &str) -> Option<reqwest::Url> {
        let plain = path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-'));
        if !plain || path.contains("//") {
            return None;
        }
        let mut url = self.url.clone()?;
        let full = format!("{}/{path}", url.path().trim_end_matches('/'));
        url.set_path(&full);
        Some(url)
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        match self.fast_url(path) {
            Some(url) => self.client.request(method, url),
            None => self.client.request(method, self.url(path)),
        }
    }

    /// POST a JSON body to `{base}/{path}` (path may carry a query) with the key.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: Bytes,
        client_headers: &HeaderMap,
        auth: Auth,
    ) -> Result<reqwest::Response, CallError> {
        let mut headers = HeaderMap::new();
        for name in passed_client_headers(auth) {
            for value in client_headers.get_all(*name) {
                headers.append(HeaderName::from_static(name), value.clone());
            }
        }
        if auth == Auth::XApiKey && !headers.contains_key("anthropic-version") {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        let request = self
            .request(reqwest::Method::POST, path)
            .headers(headers)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        self.send(request, auth).await
    }

    /// GET `{base}/{path}` with the key.
    pub(crate) async fn get(&self, path: &str) -> Result<reqwest::Response, CallError> {
        self.send(self.request(reqwest::Method::GET, path), Auth::Bearer)
            .await
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        auth: Auth,
    ) -> Result<reqwest::Response, CallError> {
        let request = match (auth, &self.bearer, &self.x_api_key) {
            (Auth::Bearer, Some(value), _) => request.header(AUTHORIZATION, value.clone()),
            (Auth::Bearer, None, _) => {
                request.header(AUTHORIZATION, format!("Bearer {}", self.api_key))
            }
            (Auth::XApiKey, _, Some(value)) => request.header("x-api-key", value.clone()),
            (Auth::XApiKey, _, None) => request.header("x-api-key", &self.api_key),
        };
        request.send().await.map_err(|e| CallError::Unreachable {
            base: self.base.clone(),
            why: self.redact(&e.to_string()),
        })
    }

    /// `text` with every occurrence of the API key replaced.
    pub(crate) fn redact(&self, text: &str) -> String {
        if self.api_key.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.api_key, REDACTED)
        }
    }

    /// A provider's body as the agent may see it: every occurrence of the key replaced
    /// (a provider that echoes the key in an error would otherwise hand it to the agent
    /// the proxy exists to keep it from). The body itself when it holds none: no copy.
    pub(crate) fn redact_bytes(&self, bytes: Bytes) -> Bytes {
        let key = self.api_key.as_bytes();
        if key.is_empty() || memchr::memmem::find(&bytes, key).is_none() {
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = &bytes[..];
        while let Some(at) = memchr::memmem::find(rest, key) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(REDACTED.as_bytes());
            rest = &rest[at + key.len()..];
        }
        out.extend_from_slice(rest);
        Bytes::from(out)
    }

    /// How many of the last bytes of `bytes` could be the start of the key: a stream
    /// holds them back until the next bytes show whether the key follows.
    pub(crate) fn key_start_at_end(&self, bytes: &[u8]) -> usize {
        let key = self.api_key.as_bytes();
        (1..key.len().min(bytes.len() + 1))
            .rev()
            .find(|&n| bytes.ends_with(&key[..n]))
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_path_is_set_on_the_parsed_base_as_parsing_would() {
        for base in [
            "http://127.0.0.1:9/v1",
            "https://api.example.com/v1/",
            "http://h",
        ] {
            let upstream = Upstream::new(base, "k").expect("client");
            for path in [
                "chat/completions",
                "messages",
                "models",
                "messages/count_tokens",
            ] {
                let fast = upstream.fast_url(path).map(|u| u.to_string());
                let parsed = reqwest::Url::parse(&upstream.url(path)).map(|u| u.to_string());
                assert_eq!(fast, parsed.ok(), "{base} {path}");
            }
            for odd in ["messages?beta=true", "a/../b", "a//b", "x%2e"] {
                assert_eq!(upstream.fast_url(odd), None, "{odd}");
            }
        }
    }
}
