//! The provider a byok proxy forwards to, and the one place its API key is used.
//!
//! The key goes into the auth header of outgoing requests and nowhere else: every
//! message that could reach a usage entry or a log line passes through
//! [`Upstream::redact`] first, because provider errors sometimes echo the key back.

use std::future::Future;
use std::pin::Pin;
use std::sync::MutexGuard;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};

use super::error::CallError;

/// How the provider of a protocol takes its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>` (OpenAI and compatible providers).
    Bearer,
    /// `x-api-key: <key>` (Anthropic).
    XApiKey,
}

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

/// Why a provider's body stopped before its end (either client's error, boxed).
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// A provider's body as it arrives, chunk by chunk.
pub(crate) type ByteStream =
    std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// A provider's answer, from the shared client or from an agent connection's lane.
pub(crate) enum Answer {
    Shared(reqwest::Response),
    Lane(hyper::Response<hyper::body::Incoming>),
}

impl Answer {
    pub(crate) fn status(&self) -> hyper::StatusCode {
        match self {
            Answer::Shared(r) => r.status(),
            Answer::Lane(r) => r.status(),
        }
    }

    pub(crate) fn headers(&self) -> &HeaderMap {
        match self {
            Answer::Shared(r) => r.headers(),
            Answer::Lane(r) => r.headers(),
        }
    }

    /// The next chunk of the body; `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        match self {
            Answer::Shared(r) => Ok(r.chunk().await?),
            Answer::Lane(r) => {
                use http_body_util::BodyExt;
                loop {
                    match r.body_mut().frame().await {
                        None => return Ok(None),
                        Some(Err(e)) => return Err(e.into()),
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                return Ok(Some(data));
                            }
                        }
                    }
                }
            }
        }
    }

    /// The whole body.
    pub(crate) async fn bytes(self) -> Result<Bytes, BodyError> {
        match self {
            Answer::Shared(r) => Ok(r.bytes().await?),
            Answer::Lane(r) => {
                use http_body_util::BodyExt;
                Ok(r.into_body().collect().await?.to_bytes())
            }
        }
    }

    /// The rest of the body as a stream.
    pub(crate) fn into_stream(self) -> ByteStream {
        use futures_util::TryStreamExt;
        match self {
            Answer::Shared(r) => Box::pin(r.bytes_stream().map_err(BodyError::from)),
            Answer::Lane(r) => Box::pin(
                http_body_util::BodyDataStream::new(r.into_body()).map_err(BodyError::from),
            ),
        }
    }
}

/// One agent connection's own connection to a loopback provider (a local model
/// server), made at its first call and kept while both ends keep it.
///
/// An agent speaks HTTP/1.1 one call at a time per connection, so its calls need no
/// pool. The shared client's pool and request building were most of what the proxy
/// added to a call (`benches/proxy-race.sh`; the figures before and after lanes are in
/// README.md, "Status"). A provider across the network is reached through the
/// shared client, which honours the environment's HTTP proxy and speaks TLS.
///
/// The lane's connection is driven by the agent connection's own task
/// ([`Lane::drive`]), not a task of its own: the request, the answer and every chunk of
/// a stream then pass between the two connections without waking another task (and,
/// on a multi-threaded runtime, often another thread) each time.
#[derive(Default)]
pub(crate) struct Lane {
    sender: tokio::sync::Mutex<Option<LaneSender>>,
    driver: std::sync::Mutex<Driver>,
}

type LaneSender = hyper::client::conn::http1::SendRequest<http_body_util::Full<Bytes>>;
type LaneConnection = hyper::client::conn::http1::Connection<
    hyper_util::rt::TokioIo<tokio::net::TcpStream>,
    http_body_util::Full<Bytes>,
>;

/// The lane's open connection, and the task that drives it.
#[derive(Default)]
pub(crate) struct Driver {
    connection: Option<Pin<Box<LaneConnection>>>,
    task: Option<Waker>,
}

impl Lane {
    /// Drive the lane's connection, whichever it is at the time; never ends. The agent
    /// connection's task polls this beside the agent's own connection, so that a call
    /// waiting on the provider makes progress; dropping it drops the open connection.
    pub(crate) async fn drive(&self) {
        std::future::poll_fn(|cx: &mut Context<'_>| {
            let mut driver = self.poll_connection(cx);
            if !driver
                .task
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
            {
                driver.task = Some(cx.waker().clone());
            }
            Poll::<()>::Pending
        })
        .await
    }

    /// Let the lane's connection read, decode and write what it can now. Called by
    /// [`Lane::drive`], and by a stream's relay, which runs in the same task: after it,
    /// a body with no new chunk has none until more bytes arrive (see `relay`).
    pub(crate) fn poll_connection(&self, cx: &mut Context<'_>) -> MutexGuard<'_, Driver> {
        let mut driver = self
            .driver
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(connection) = driver.connection.as_mut() {
            // Ended: the provider hung up, or the sender was replaced. A call it was
            // answering sees the end through its own response or body.
            if connection.as_mut().poll(cx).is_ready() {
                driver.connection = None;
            }
        }
        driver
    }

    /// Hand a fresh connection to [`Lane::drive`] (the one it replaces is dropped).
    fn install(&self, connection: LaneConnection) {
        let mut driver = self
            .driver
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        driver.connection = Some(Box::pin(connection));
        if let Some(task) = &driver.task {
            task.wake_by_ref();
        }
    }
}

pub(crate) struct Upstream {
    base: String,
    /// `base` parsed once, so that a call's URL is this with its path set, not a
    /// string parsed again (host, IDNA and all) on every call.
    url: Option<reqwest::Url>,
    api_key: String,
    /// The search for the key in a provider's bytes, built once: every chunk the agent
    /// gets is searched, and building the searcher cost as much as the search.
    key_finder: memchr::memmem::Finder<'static>,
    /// The auth header values, built once (`None`: the key is not a valid header
    /// value, so each call builds it and fails as it always did).
    bearer: Option<HeaderValue>,
    x_api_key: Option<HeaderValue>,
    client: reqwest::Client,
    retry: super::settings::RetryPolicy,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    pub(crate) fn new(
        base: &str,
        api_key: &str,
        retry: super::settings::RetryPolicy,
    ) -> std::io::Result<Upstream> {
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
            key_finder: memchr::memmem::Finder::new(api_key.as_bytes()).into_owned(),
            client,
            retry,
        })
    }

    /// How a fault of this provider is met before the agent meets it.
    pub(crate) fn retry(&self) -> super::settings::RetryPolicy {
        self.retry
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

    /// A lane for one agent connection, when the provider is on loopback over plain
    /// HTTP ([`Lane`]).
    pub(crate) fn lane(&self) -> Option<Lane> {
        let url = self.url.as_ref()?;
        let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
        (url.scheme() == "http" && loopback).then(Lane::default)
    }

    /// POST a JSON body to `{base}/{path}` (path may carry a query) with the key, on
    /// `lane` when there is one and the path is a plain one. `attached`: headers of the
    /// proxy's own for the provider (a scripted answer it is to serve).
    pub(crate) async fn post(
        &self,
        path: &str,
        body: Bytes,
        client_headers: &HeaderMap,
        attached: Option<&HeaderMap>,
        auth: Auth,
        lane: Option<&Lane>,
    ) -> Result<Answer, CallError> {
        let mut headers = attached.cloned().unwrap_or_default();
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
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let (Some(lane), Some(url)) = (lane, self.fast_url(path)) {
            return self.send_on(lane, &url, headers, body, auth).await;
        }
        let request = self
            .request(reqwest::Method::POST, path)
            .headers(headers)
            .body(body);
        self.send(request, auth).await.map(Answer::Shared)
    }

    /// GET `{base}/{path}` with the key.
    pub(crate) async fn get(&self, path: &str) -> Result<Answer, CallError> {
        self.send(self.request(reqwest::Method::GET, path), Auth::Bearer)
            .await
            .map(Answer::Shared)
    }

    /// The call never reached the provider: no connection, or none it could be
    /// written on.
    fn unreachable(&self, e: impl std::fmt::Display) -> CallError {
        CallError::Unreachable {
            base: self.base.clone(),
            why: self.redact(&e.to_string()),
            sent: false,
        }
    }

    /// The call was written, or may have been, and no answer came: the provider may
    /// have served it.
    fn lost(&self, e: impl std::fmt::Display) -> CallError {
        CallError::Unreachable {
            base: self.base.clone(),
            why: self.redact(&e.to_string()),
            sent: true,
        }
    }

    /// [`Upstream::post`] on `lane`: connected first when it has no open connection
    /// (its first call, or the provider closed the last one between calls; a call
    /// already sent is never sent again).
    async fn send_on(
        &self,
        lane: &Lane,
        url: &reqwest::Url,
        mut headers: HeaderMap,
        body: Bytes,
        auth: Auth,
    ) -> Result<Answer, CallError> {
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(self.unreachable("the base url names no host"));
        };
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        headers.insert(
            hyper::header::HOST,
            HeaderValue::try_from(authority).map_err(|e| self.unreachable(e))?,
        );
        match (auth, &self.bearer, &self.x_api_key) {
            (Auth::Bearer, Some(value), _) => {
                headers.insert(AUTHORIZATION, value.clone());
            }
            (Auth::XApiKey, _, Some(value)) => {
                headers.insert("x-api-key", value.clone());
            }
            // A key that is no header value fails as the shared client fails on it.
            _ => return Err(self.unreachable("the api key is not a valid header value")),
        }
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let mut request = hyper::Request::post(target)
            .body(http_body_util::Full::new(body))
            .map_err(|e| self.unreachable(e))?;
        *request.headers_mut() = headers;
        let why = |e: &dyn std::fmt::Display| format!("error sending request for url ({url}): {e}");
        let failed = |e: &dyn std::fmt::Display| self.unreachable(why(e));
        let mut slot = lane.sender.lock().await;
        // A connection the provider closed between calls is replaced, and a call it
        // closed before the call was written is sent once more, on the new one.
        for fresh in [false, true] {
            let open = match slot.as_mut() {
                Some(sender) if !fresh => sender.ready().await.is_ok(),
                _ => false,
            };
            if !open {
                *slot = None;
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let stream = tokio::net::TcpStream::connect((host, port))
                    .await
                    .map_err(|e| failed(&e))?;
                let _ = stream.set_nodelay(true);
                let (sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await
                        .map_err(|e| failed(&e))?;
                // Driven by the agent connection's task; ends when the lane drops the
                // sender, or the provider hangs up.
                lane.install(connection);
                *slot = Some(sender);
            }
            let Some(sender) = slot.as_mut() else {
                break;
            };
            match sender.try_send_request(request).await {
                Ok(response) => return Ok(Answer::Lane(response)),
                Err(mut e) => match e.take_message() {
                    Some(unsent) if !fresh => request = unsent,
                    Some(_) => return Err(failed(&e.into_error())),
                    None => return Err(self.lost(why(&e.into_error()))),
                },
            }
        }
        Err(self.unreachable("the lane has no connection"))
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
        request.send().await.map_err(|e| {
            if e.is_connect() {
                self.unreachable(e)
            } else {
                self.lost(e)
            }
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
        if key.is_empty() || self.key_finder.find(&bytes).is_none() {
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = &bytes[..];
        while let Some(at) = self.key_finder.find(rest) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(REDACTED.as_bytes());
            rest = &rest[at + key.len()..];
        }
        out.extend_from_slice(rest);
        Bytes::from(out)
    }

    /// A provider's whole body as the agent may see it: [`Upstream::redact_bytes`],
    /// and, for a JSON body whose strings spell the key with escapes (`\u0073k-…`),
    /// those strings redacted as decoded (the body then re-serialized).
    pub(crate) fn redact_body(&self, bytes: Bytes) -> Bytes {
        let bytes = self.redact_bytes(bytes);
        if self.api_key.is_empty() || memchr::memchr(b'\\', &bytes).is_none() {
            return bytes;
        }
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(mut value) => {
                if self.redact_value(&mut value) {
                    Bytes::from(value.to_string())
                } else {
                    bytes
                }
            }
            Err(_) => bytes,
        }
    }

    /// Redact every string of `value` (keys of objects included) as decoded; whether
    /// any held the key.
    pub(crate) fn redact_value(&self, value: &mut serde_json::Value) -> bool {
        use serde_json::Value;
        if self.api_key.is_empty() {
            return false;
        }
        match value {
            Value::String(text) if text.contains(&self.api_key) => {
                *text = self.redact(text);
                true
            }
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |found, item| self.redact_value(item) | found),
            Value::Object(map) => {
                let mut found = false;
                if map.keys().any(|k| k.contains(&self.api_key)) {
                    let old = std::mem::take(map);
                    for (k, v) in old {
                        map.insert(self.redact(&k), v);
                    }
                    found = true;
                }
                map.values_mut()
                    .fold(found, |found, item| self.redact_value(item) | found)
            }
            _ => false,
        }
    }

    /// A provider's header value as the agent may see it.
    pub(crate) fn redact_header(&self, value: &HeaderValue) -> HeaderValue {
        let key = self.api_key.as_bytes();
        if key.is_empty() || self.key_finder.find(value.as_bytes()).is_none() {
            return value.clone();
        }
        let redacted = self.redact_bytes(Bytes::copy_from_slice(value.as_bytes()));
        HeaderValue::from_maybe_shared(redacted)
            .unwrap_or_else(|_| HeaderValue::from_static(REDACTED))
    }

    /// A provider's headers as the agent may see them: every value with the key in it
    /// redacted (a header named with the key is dropped).
    pub(crate) fn redact_headers(&self, headers: HeaderMap) -> HeaderMap {
        let key = self.api_key.as_bytes();
        if key.is_empty() {
            return headers;
        }
        let mut out = HeaderMap::with_capacity(headers.len());
        for (name, value) in headers.iter() {
            if self.key_finder.find(name.as_str().as_bytes()).is_some() {
                continue;
            }
            out.append(name.clone(), self.redact_header(value));
        }
        out
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
            let upstream =
                Upstream::new(base, "k", crate::proxy::RetryPolicy::NONE).expect("client");
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
