//! `http_request`: one request, so the model can explore the app without depending on
//! whether curl exists in the environment.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::{truncate, ToolOutcome, OUTPUT_CAP};
use crate::model::is_loopback_url;

/// One client that honours the proxy environment (outside hosts) and one that goes
/// direct (loopback: the app under test).
pub struct Clients {
    proxied: reqwest::blocking::Client,
    direct: reqwest::blocking::Client,
}

impl Clients {
    pub fn new(timeout: Duration) -> reqwest::Result<Clients> {
        Ok(Clients {
            proxied: reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()?,
            direct: reqwest::blocking::Client::builder()
                .timeout(timeout)
                .no_proxy()
                .build()?,
        })
    }

    fn for_url(&self, url: &str) -> &reqwest::blocking::Client {
        if is_loopback_url(url) {
            &self.direct
        } else {
            &self.proxied
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct Args {
    pub method: String,
    pub url: String,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
}

pub fn call(clients: &Clients, args: &Args) -> ToolOutcome {
    let method = match reqwest::Method::from_bytes(args.method.trim().to_uppercase().as_bytes()) {
        Ok(m) => m,
        Err(_) => {
            return ToolOutcome::failed(format!(
                "http_request: `{}` is not an http method",
                args.method
            ))
        }
    };
    let mut req = clients.for_url(&args.url).request(method, &args.url);
    for (k, v) in args.headers.iter().flatten() {
        req = req.header(k, v);
    }
    if let Some(body) = &args.body {
        req = req.body(body.clone());
    }
    let resp = match req.send() {
        Ok(r) => r,
        Err(e) => return ToolOutcome::failed(format!("http_request to {}: {e}", args.url)),
    };
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    match resp.bytes() {
        Ok(body) => ToolOutcome::ok(format!(
            "HTTP {}\ncontent-type: {content_type}\n\n{}",
            status.as_u16(),
            truncate(&body, body.len(), OUTPUT_CAP)
        )),
        Err(e) => ToolOutcome::failed(format!(
            "http_request to {}: http {} but the body could not be read: {e}",
            args.url,
            status.as_u16()
        )),
    }
}
