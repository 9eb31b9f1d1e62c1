//! What the tell finder reads in an app's corpus graph: the requests it documents
//! (probed for status and headers), the subcommand words of a CLI, and whether a
//! capability's acceptance criteria name a request (then its mutant may answer that
//! request differently: that is the broken behaviour, not a tell).
//!
//! The corpus holds no list of endpoints, only prose: a request is a token starting
//! with `/` and a letter (`/health`, `/transactions/<id>`, `/api/notes?q=<query>`),
//! with the HTTP method before it when there is one (`GET /health`; a bare `/plain` is
//! requested with GET). A CLI's words are the second tokens of the `code spans` that
//! start with the program's name (`cli-tally sum 1 2`).

use std::collections::BTreeMap;

use crate::spec::{Capability, LoadedApp};

const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// Every text of the corpus, requirements first.
fn texts(app: &LoadedApp) -> Vec<&str> {
    let c = &app.corpus;
    let mut out: Vec<&str> = c.requirements.iter().map(|r| r.text.as_str()).collect();
    for cap in &c.capabilities {
        out.push(&cap.title);
        out.extend(cap.acceptance.iter().map(String::as_str));
    }
    out
}

/// A word of prose without the quoting and punctuation around it.
fn strip(token: &str) -> &str {
    token
        .trim_start_matches(['`', '"', '\'', '(', '['])
        .trim_end_matches(['`', '"', '\'', ')', ']', ',', '.', ';', ':'])
}

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace().map(strip).filter(|t| !t.is_empty())
}

fn is_path(token: &str) -> bool {
    let mut chars = token.chars();
    chars.next() == Some('/')
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_/<>?=&.%".contains(c))
}

/// The requests the corpus documents, `METHOD /path` or a bare `/path`, each once, in
/// the order they first appear.
pub fn endpoints(app: &LoadedApp) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for text in texts(app) {
        let toks: Vec<&str> = tokens(text).collect();
        for (i, t) in toks.iter().enumerate() {
            if !is_path(t) {
                continue;
            }
            let request = match i.checked_sub(1).map(|j| toks[j]) {
                Some(m) if METHODS.contains(&m) => format!("{m} {t}"),
                _ => t.to_string(),
            };
            if !out.contains(&request) {
                out.push(request);
            }
        }
    }
    // A bare path also written with GET is probed once.
    let with_get: Vec<String> = out
        .iter()
        .filter_map(|r| r.strip_prefix("GET ").map(str::to_string))
        .collect();
    out.retain(|r| !with_get.contains(r));
    out
}

/// The `code spans` of a text.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// A CLI's subcommand words, as its corpus writes them after the program's name.
pub fn words(app: &LoadedApp) -> Vec<String> {
    let spans: Vec<Vec<&str>> = texts(app)
        .into_iter()
        .flat_map(code_spans)
        .map(|s| s.split_whitespace().collect::<Vec<_>>())
        .filter(|t| t.len() >= 2)
        .collect();
    // The program: the harness's names for it, and the name most spans start with.
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &spans {
        *count.entry(s[0]).or_default() += 1;
    }
    let most = count
        .iter()
        .max_by_key(|(name, n)| (**n, std::cmp::Reverse(**name)))
        .map(|(name, _)| name.to_string());
    let names = [
        Some(app.app.name.clone()),
        Some(app.app.bin_name()),
        Some("$APP_BIN".to_string()),
        Some("\"$APP_BIN\"".to_string()),
        most,
    ];
    let mut out: Vec<String> = Vec::new();
    for s in &spans {
        if !names.iter().flatten().any(|n| n == s[0]) {
            continue;
        }
        let w = s[1];
        let word = w.starts_with(|c: char| c.is_ascii_lowercase())
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if word && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// Whether `cap`'s title or acceptance criteria name `request`: its path (a request
/// `METHOD /path` or `/path`) or its words (`--version`, `sum`) as whole tokens.
pub fn documents(cap: &Capability, request: &str) -> bool {
    let wanted: Vec<&str> = match request.split_once(' ') {
        Some((m, path)) if METHODS.contains(&m) => vec![path],
        _ => request.split_whitespace().collect(),
    };
    if wanted.is_empty() {
        return false;
    }
    std::iter::once(cap.title.as_str())
        .chain(cap.acceptance.iter().map(String::as_str))
        .any(|text| {
            let toks: Vec<&str> = tokens(text).collect();
            toks.windows(wanted.len()).any(|w| w == wanted.as_slice())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str) -> LoadedApp {
        crate::spec::load_app(&crate::binaries::repo_root().join("apps").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn the_documented_requests_of_the_http_apps() {
        assert_eq!(
            endpoints(&app("api-ledger")),
            [
                "GET /health",
                "POST /transactions",
                "GET /transactions/<id>",
                "GET /accounts/<account>/balance"
            ]
        );
        assert_eq!(
            endpoints(&app("browser-notes")),
            [
                "GET /api/notes?q=<query>",
                "POST /api/notes",
                "DELETE /api/notes/<id>",
                "DELETE /api/notes",
                "GET /api/notes"
            ]
        );
        assert_eq!(
            endpoints(&app("ext-wordbadge")),
            ["/plain", "/decoy", "/dynamic", "/empty"]
        );
    }

    #[test]
    fn the_words_of_the_cli_app() {
        assert_eq!(words(&app("cli-tally")), ["sum", "stats"]);
        assert!(words(&app("api-ledger")).is_empty());
    }

    #[test]
    fn a_capability_documents_the_requests_its_criteria_name() {
        let ledger = app("api-ledger");
        let cap = |id: &str| ledger.capability(id).expect("capability").clone();
        assert!(documents(&cap("health"), "GET /health"));
        assert!(!documents(&cap("balance"), "GET /health"));
        assert!(documents(
            &cap("reject-unknown-id"),
            "GET /transactions/<id>"
        ));
        assert!(!documents(&cap("reject-unknown-id"), "POST /transactions"));
        let tally = app("cli-tally");
        let cap = |id: &str| tally.capability(id).expect("capability").clone();
        assert!(documents(&cap("version"), "--version"));
        assert!(documents(&cap("version"), "-V"));
        assert!(!documents(&cap("sum"), "--version"));
        assert!(documents(&cap("sum"), "sum"));
        assert!(!documents(&cap("sum"), ""));
    }
}
