//! `work.requests`: HTTP requests the app must have been sent, and by what kind of
//! client. A task done through a page (delete notes by clicking) is done by the
//! browser's requests; the same requests from curl are the work done around the page.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::manifest::BROWSER_PROGRAM;
use crate::spec::SpecError;

/// Requests the app must have been sent, each from a process of `client`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequiredRequest {
    pub id: String,
    /// The request's method, exactly (`DELETE`).
    pub method: String,
    /// A regular expression the request's target (path and query) must match
    /// (anchor it: `^/api/notes/`).
    pub path: String,
    /// Where every matching request must come from: [`BROWSER_PROGRAM`], the machine's
    /// browsers (a matching request from any other program fails the requirement).
    pub client: String,
    /// At least this many matching requests.
    #[serde(default = "one")]
    pub count: u64,
    /// [`APP_PAGE`]: every matching request must carry the app's own origin as its
    /// `Origin`, sent by a page the app served (a page of the agent's own, a `data:`
    /// or `file:` page, sends another). Absent: any page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The one page a required request's `origin` can name: the app's.
pub const APP_PAGE: &str = "app";

fn one() -> u64 {
    1
}

/// Check `work.requests` of the manifest at `file`.
pub fn validate(file: &Path, requests: &[RequiredRequest]) -> Result<(), SpecError> {
    for (i, r) in requests.iter().enumerate() {
        let field = format!("work.requests[{i}]");
        crate::spec::check_id(file, &format!("{field}.id"), &r.id)?;
        if requests[..i].iter().any(|o| o.id == r.id) {
            return Err(SpecError::invalid(
                file,
                format!("{field}.id"),
                format!("`{}` is used twice", r.id),
            ));
        }
        if r.method.is_empty() || !r.method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(SpecError::invalid(
                file,
                format!("{field}.method"),
                format!("`{}` is not an HTTP method (upper case, as sent)", r.method),
            ));
        }
        if let Err(e) = regex::Regex::new(&r.path) {
            return Err(SpecError::invalid(
                file,
                format!("{field}.path"),
                format!("not a regular expression: {e}"),
            ));
        }
        if r.client != BROWSER_PROGRAM {
            return Err(SpecError::invalid(
                file,
                format!("{field}.client"),
                format!(
                    "`{}` is not `{BROWSER_PROGRAM}`: only the machine's browsers are a client a challenge can require",
                    r.client
                ),
            ));
        }
        if let Some(o) = r.origin.as_deref().filter(|o| *o != APP_PAGE) {
            return Err(SpecError::invalid(
                file,
                format!("{field}.origin"),
                format!("`{o}` is not `{APP_PAGE}`: only the app's own page can be required"),
            ));
        }
        if r.count == 0 {
            return Err(SpecError::invalid(
                file,
                format!("{field}.count"),
                "0 requests are always observed: require at least 1",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(yaml: &str) -> Result<(), SpecError> {
        let r: Vec<RequiredRequest> = yaml_serde::from_str(yaml).expect("parses");
        validate(Path::new("c.yaml"), &r)
    }

    #[test]
    fn a_required_request_names_a_method_a_pattern_and_the_browser() {
        let good = "- {id: d, method: DELETE, path: '^/api/notes/', client: browser, count: 2}\n";
        assert!(one(good).is_ok());
        let r: Vec<RequiredRequest> =
            yaml_serde::from_str("- {id: d, method: GET, path: '^/', client: browser}\n")
                .expect("parses");
        assert_eq!(r[0].count, 1);
        for (yaml, field) in [
            (
                "- {id: d, method: delete, path: '^/', client: browser}\n",
                "method",
            ),
            (
                "- {id: d, method: DELETE, path: '(', client: browser}\n",
                "path",
            ),
            (
                "- {id: d, method: DELETE, path: '^/', client: curl}\n",
                "client",
            ),
            (
                "- {id: d, method: DELETE, path: '^/', client: browser, count: 0}\n",
                "count",
            ),
            (
                "- {id: d, method: DELETE, path: '^/', client: browser, origin: mine}\n",
                "origin",
            ),
        ] {
            let e = one(yaml).expect_err(yaml).to_string();
            assert!(e.contains(&format!("work.requests[0].{field}")), "{e}");
        }
        assert!(one(&format!("{good}{good}")).is_err());
    }
}
