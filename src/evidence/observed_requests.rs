//! Requests from observation: the HTTP requests a trial's processes sent the app
//! through the sandbox's forwarded port, each with the process that made its
//! connection (as the seal's helper found it, [`super::observed::Connection`]), and
//! the requests a challenge requires found among them (`work.requests`).
//!
//! Pure. A required request holds when at least `count` requests matching its method
//! and path were observed and every one came from a process of the required client
//! (the machine's browsers): a matching request from another program (curl, python)
//! fails it, naming the program, whatever else was seen. Where a matching request may
//! have gone unseen or unattributed (the observation is incomplete, a connection's
//! client could not be named, bytes of another program's connection could not be
//! read as requests), it cannot be shown to hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::observed::{Connection, Observation};
use crate::spec::challenge::requests::RequiredRequest;

/// A required request, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestCheck {
    pub id: String,
    pub method: String,
    pub path: String,
    pub client: String,
    pub count: u64,
    /// Matching requests that came from the required client.
    pub from_client: u64,
    pub outcome: RequestOutcome,
    /// Why it holds, fails or cannot be decided.
    pub why: String,
}

/// Whether a required request holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequestOutcome {
    Met,
    /// A matching request came from another program, or too few came at all.
    Failed,
    /// What was observed cannot show it either way.
    Unknown,
}

/// Everything the observed requests show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestFindings {
    /// Why the observation cannot show every connection and request; `None`: it can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Requests to the app, by the program that made them (its executable), by
    /// method: how many.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_program: BTreeMap<String, BTreeMap<String, u64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<RequestCheck>,
}

/// What the kernel showed of one connection's client.
enum Client {
    /// Every process holding it is one of these programs (executables), all of them
    /// the required client's.
    Browser(String),
    /// A process holding it runs this other program, or a browser altered (why).
    Other(String, i32, Option<String>),
    /// Nobody could be named: why.
    Unknown(String),
}

/// The program of each process holding `c`'s socket: its executable, else what the
/// process last executed.
fn client_of(c: &Connection, observation: &Observation, browsers: &[String]) -> Client {
    if let Some(why) = &c.unattributed {
        return Client::Unknown(format!("its client could not be named: {why}"));
    }
    if c.clients.is_empty() {
        return Client::Unknown("no process was named for it".into());
    }
    let mut programs = Vec::new();
    for p in &c.clients {
        // What the process last executed: it runs that program, loaded as the call's
        // environment told the loader.
        let exec = observation.execs.iter().rev().find(|e| e.pid == p.pid);
        let program = p.exe.clone().or_else(|| exec.map(|e| e.path.clone()));
        let loaded = exec.and_then(|e| {
            super::observed::loader_alters(e).or_else(|| {
                (!e.carried.is_empty()).then(|| {
                    format!(
                        "it was executed holding connections it had not made (to port {:?})",
                        e.carried
                    )
                })
            })
        });
        match program {
            None => {
                return Client::Unknown(format!(
                    "the program of process {} holding it could not be read",
                    p.pid
                ))
            }
            Some(path) if !browsers.contains(&path) => return Client::Other(path, p.pid, None),
            // A browser's name on a process that may run other code is not a browser.
            Some(path) if !p.altered.is_empty() || loaded.is_some() => {
                let why: Vec<&str> = loaded
                    .iter()
                    .map(String::as_str)
                    .chain(p.altered.iter().map(String::as_str))
                    .collect();
                return Client::Other(path, p.pid, Some(why.join("; ")));
            }
            Some(path) => programs.push(path),
        }
    }
    Client::Browser(programs.swap_remove(0))
}

/// The port of an `http://host:port` URL.
fn port_of(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split('/').next()?;
    host.rsplit_once(':')?.1.parse().ok()
}

/// The origin (`http://host:port`) of a URL, as a browser's `Origin` header says it.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    (!host.is_empty()).then(|| {
        format!(
            "{}://{}",
            scheme.to_ascii_lowercase(),
            host.to_ascii_lowercase()
        )
    })
}

/// Assess the requests of `observation` against the required ones. `app_url`: the
/// trial's `APP_URL`, whose port alone is the app's (`None`: every forwarded port
/// counts); `browsers`: the machine's browsers, as the sandbox names them.
pub fn assess(
    observation: &Observation,
    required: &[RequiredRequest],
    app_url: Option<&str>,
    browsers: &[String],
) -> RequestFindings {
    let incomplete = observation.requests_incomplete();
    let app_port = app_url.and_then(port_of);
    let to_app = |c: &Connection| app_port.is_none_or(|p| p == c.port);
    let conns: BTreeMap<u64, &Connection> = observation
        .connections
        .iter()
        .filter(|c| to_app(c))
        .map(|c| (c.conn, c))
        .collect();
    let other_ports: Vec<u64> = observation
        .connections
        .iter()
        .filter(|c| !to_app(c))
        .map(|c| c.conn)
        .collect();
    let mut by_program: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    // The app's requests, each with its client; a request whose connection line is
    // missing (and not one to another port) has none that can be named.
    let mut requests = Vec::new();
    for r in &observation.requests {
        if other_ports.contains(&r.conn) {
            continue;
        }
        let client = match conns.get(&r.conn) {
            Some(c) => client_of(c, observation, browsers),
            None => Client::Unknown("its connection was not recorded".into()),
        };
        let name = match &client {
            Client::Browser(p) | Client::Other(p, _, _) => p.clone(),
            Client::Unknown(_) => "(unknown)".into(),
        };
        *by_program
            .entry(name)
            .or_default()
            .entry(r.method.clone())
            .or_default() += 1;
        requests.push((r, client));
    }
    // Bytes of the app's connections that were not read as requests, and whose client
    // is not a browser: any request may have been among them.
    let unread = observation.unparsed.iter().find_map(|u| {
        let c = conns.get(&u.conn)?;
        match client_of(c, observation, browsers) {
            Client::Browser(_) => None,
            Client::Other(p, _, _) => Some(format!(
                "bytes `{p}` sent the app could not be read as requests ({})",
                u.why
            )),
            Client::Unknown(why) => Some(format!(
                "bytes sent the app could not be read as requests ({}), on a connection whose {why}",
                u.why
            )),
        }
    });
    let app_origin = app_url.and_then(origin_of);
    let required = required
        .iter()
        .map(|want| {
            let page = want.origin.is_some();
            let path = regex::Regex::new(&want.path).ok();
            let matches = |method: &str, p: &str| {
                method == want.method && path.as_ref().is_some_and(|re| re.is_match(p))
            };
            let mut from_client = 0u64;
            let mut other = None;
            let mut unknown = None;
            for (r, client) in &requests {
                // A target cut short may have matched whole.
                let may_match = r.path_cut && r.method == want.method;
                if !matches(&r.method, &r.path) && !may_match {
                    continue;
                }
                let what = format!("{} {}", r.method, r.path);
                match client {
                    // Sent by a page that is not the app's: the work was done
                    // around the app's page, not through it.
                    Client::Browser(_) if page && app_origin.is_some() && r.origin != app_origin => {
                        other.get_or_insert(format!(
                            "`{what}` came from a page at `{}`, not from the app's page ({})",
                            r.origin.as_deref().unwrap_or("(no Origin)"),
                            app_origin.as_deref().unwrap_or_default()
                        ));
                    }
                    Client::Browser(_) if page && app_origin.is_none() => {
                        unknown.get_or_insert(format!(
                            "`{what}`: the app's URL was not recorded, so its page cannot be told"
                        ));
                    }
                    Client::Browser(_) if !r.path_cut => from_client += 1,
                    Client::Browser(_) => {}
                    Client::Other(p, pid, None) => {
                        other.get_or_insert(format!(
                            "`{what}` came from `{p}` (pid {pid}), not from a {}",
                            want.client
                        ));
                    }
                    Client::Other(p, pid, Some(why)) => {
                        other.get_or_insert(format!(
                            "`{what}` came from `{p}` (pid {pid}), which is not a {} as shipped: {why}",
                            want.client
                        ));
                    }
                    Client::Unknown(why) => {
                        unknown.get_or_insert(format!("`{what}`: {why}"));
                    }
                }
            }
            let (outcome, why) = if let Some(o) = other {
                (RequestOutcome::Failed, o)
            } else if let Some(why) = incomplete.clone().or(unknown).or(unread.clone()) {
                (RequestOutcome::Unknown, why)
            } else if from_client < want.count {
                (
                    RequestOutcome::Failed,
                    format!(
                        "{from_client} {} request(s) matching {} from a {} were observed, fewer than {}",
                        want.method, want.path, want.client, want.count
                    ),
                )
            } else {
                (
                    RequestOutcome::Met,
                    format!(
                        "{from_client} {} request(s) matching {}, every one from a {}",
                        want.method, want.path, want.client
                    ),
                )
            };
            RequestCheck {
                id: want.id.clone(),
                method: want.method.clone(),
                path: want.path.clone(),
                client: want.client.clone(),
                count: want.count,
                from_client,
                outcome,
                why,
            }
        })
        .collect();
    RequestFindings {
        incomplete,
        by_program,
        required,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::observed::{self, Client as Holder, End, Exec, Line, Request, Unparsed};
    use crate::evidence::test_support;

    const CHROMIUM: &str = "/usr/lib/chromium/chromium";
    const APP: &str = "http://127.0.0.1:8080";

    fn conn(conn: u64, port: u16, exe: Option<&str>) -> Line {
        Line::Connection(Connection {
            ms: 1,
            conn,
            port,
            clients: vec![Holder {
                pid: 10 + conn as i32,
                exe: exe.map(str::to_owned),
                altered: vec![],
            }],
            unattributed: None,
        })
    }

    fn req(conn: u64, method: &str, path: &str) -> Line {
        Line::Request(Request {
            ms: 2,
            conn,
            method: method.into(),
            path: path.into(),
            path_cut: false,
            origin: None,
        })
    }

    fn observation(lines: &[Line]) -> Observation {
        let mut all = vec![
            Line::Start {
                watched: vec!["/".into()],
                unwatched: vec![],
                execs: true,
            },
            Line::Relaying {
                ports: vec![8080, 9090],
            },
        ];
        all.extend_from_slice(lines);
        all.push(Line::End(End::default()));
        let bytes: Vec<u8> = all.iter().flat_map(observed::line).collect();
        observed::parse(&mut &bytes[..])
    }

    fn deletes(count: u64) -> RequiredRequest {
        RequiredRequest {
            id: "deleted-in-the-page".into(),
            method: "DELETE".into(),
            path: "^/api/notes/".into(),
            client: "browser".into(),
            count,
            origin: None,
        }
    }

    fn check(lines: &[Line], count: u64) -> RequestCheck {
        let o = observation(lines);
        let f = assess(&o, &[deletes(count)], Some(APP), &[CHROMIUM.into()]);
        f.required[0].clone()
    }

    #[test]
    fn deletes_from_the_browser_hold_and_reads_with_curl_do_not_count_against_it() {
        let c = check(
            &[
                conn(0, 8080, Some("/usr/bin/curl")),
                req(0, "GET", "/api/notes"),
                conn(1, 8080, Some(CHROMIUM)),
                req(1, "GET", "/"),
                req(1, "DELETE", "/api/notes/3"),
                req(1, "DELETE", "/api/notes/4"),
                // The agent's model calls, on its proxy's port.
                conn(2, 9090, Some("/usr/bin/node")),
                req(2, "POST", "/v1/messages"),
                Line::Unparsed(Unparsed {
                    ms: 3,
                    conn: 2,
                    why: "the connection asked to switch protocols".into(),
                }),
            ],
            2,
        );
        assert_eq!(
            (c.outcome, c.from_client),
            (RequestOutcome::Met, 2),
            "{}",
            c.why
        );
        // Too few from the browser: failed.
        let c = check(
            &[
                conn(1, 8080, Some(CHROMIUM)),
                req(1, "DELETE", "/api/notes/3"),
            ],
            2,
        );
        assert_eq!(c.outcome, RequestOutcome::Failed, "{}", c.why);
    }

    #[test]
    fn a_delete_from_curl_fails_it_naming_curl_even_beside_the_browsers() {
        let c = check(
            &[
                conn(0, 8080, Some(CHROMIUM)),
                req(0, "DELETE", "/api/notes/3"),
                req(0, "DELETE", "/api/notes/4"),
                conn(1, 8080, Some("/usr/bin/curl")),
                req(1, "DELETE", "/api/notes/5"),
            ],
            2,
        );
        assert_eq!(c.outcome, RequestOutcome::Failed);
        assert!(c.why.contains("/usr/bin/curl"), "{}", c.why);
        // A socket shared by a browser and another program is the other program's.
        let shared = Line::Connection(Connection {
            ms: 1,
            conn: 0,
            port: 8080,
            clients: vec![
                Holder {
                    pid: 7,
                    exe: Some(CHROMIUM.into()),
                    altered: vec![],
                },
                Holder {
                    pid: 8,
                    exe: Some("/usr/bin/python3.11".into()),
                    altered: vec![],
                },
            ],
            unattributed: None,
        });
        let c = check(&[shared, req(0, "DELETE", "/api/notes/3")], 1);
        assert_eq!(c.outcome, RequestOutcome::Failed);
        assert!(c.why.contains("python3.11"), "{}", c.why);
        // The executable unread: what the process last executed names it.
        let exec = Line::Exec(test_support::exec(0, 10, "/usr/bin/wget", &["wget"]));
        let c = check(
            &[exec, conn(0, 8080, None), req(0, "DELETE", "/api/notes/3")],
            1,
        );
        assert!(c.why.contains("wget"), "{}", c.why);
    }

    /// A DELETE from a page at `origin`.
    fn from_page(conn: u64, path: &str, origin: Option<&str>) -> Line {
        Line::Request(Request {
            ms: 2,
            conn,
            method: "DELETE".into(),
            path: path.into(),
            path_cut: false,
            origin: origin.map(str::to_owned),
        })
    }

    #[test]
    fn through_the_page_means_from_the_apps_own_origin() {
        let o = |lines: &[Line]| {
            let want = RequiredRequest {
                origin: Some(crate::spec::challenge::requests::APP_PAGE.into()),
                ..deletes(2)
            };
            let f = assess(&observation(lines), &[want], Some(APP), &[CHROMIUM.into()]);
            f.required[0].clone()
        };
        let c = o(&[
            conn(0, 8080, Some(CHROMIUM)),
            req(0, "GET", "/"),
            from_page(0, "/api/notes/3", Some(APP)),
            from_page(0, "/api/notes/4", Some(APP)),
        ]);
        assert_eq!(
            (c.outcome, c.from_client),
            (RequestOutcome::Met, 2),
            "{}",
            c.why
        );
        // A data: or file: page of the agent's own, a page elsewhere, none, or two.
        for page in [
            Some("null"),
            Some("http://localhost:8080"),
            Some("http://127.0.0.1:8081"),
            None,
            Some("http://127.0.0.1:8080, null"),
        ] {
            let c = o(&[
                conn(0, 8080, Some(CHROMIUM)),
                from_page(0, "/api/notes/3", Some(APP)),
                from_page(0, "/api/notes/4", page),
            ]);
            assert_eq!(c.outcome, RequestOutcome::Failed, "{page:?}: {}", c.why);
            assert!(c.why.contains("not from the app's page"), "{}", c.why);
        }
        // The app's URL unknown: its page cannot be told.
        let want = RequiredRequest {
            origin: Some("app".into()),
            ..deletes(1)
        };
        let f = assess(
            &observation(&[
                conn(0, 8080, Some(CHROMIUM)),
                from_page(0, "/api/notes/3", Some(APP)),
            ]),
            &[want],
            None,
            &[CHROMIUM.into()],
        );
        assert_eq!(f.required[0].outcome, RequestOutcome::Unknown);
    }

    #[test]
    fn a_browser_that_may_run_other_code_is_not_a_browser() {
        let altered = Line::Connection(Connection {
            ms: 1,
            conn: 0,
            port: 8080,
            clients: vec![Holder {
                pid: 7,
                exe: Some(CHROMIUM.into()),
                altered: vec!["LD_PRELOAD is set in its environment".into()],
            }],
            unattributed: None,
        });
        let c = check(
            &[
                altered,
                req(0, "DELETE", "/api/notes/3"),
                req(0, "DELETE", "/api/notes/4"),
            ],
            2,
        );
        assert_eq!(c.outcome, RequestOutcome::Failed);
        assert!(
            c.why.contains("not a browser as shipped: LD_PRELOAD"),
            "{}",
            c.why
        );
    }

    #[test]
    fn a_browser_executed_with_a_preload_is_not_a_browser_whatever_it_did_to_its_environment_since()
    {
        let exec = |loader: &[&str], unread: Option<&str>| {
            Line::Exec(Exec {
                loader: loader.iter().map(|s| s.to_string()).collect(),
                loader_unread: unread.map(str::to_owned),
                ..test_support::exec(0, 10, CHROMIUM, &["chromium"])
            })
        };
        let lines = |e: Line| {
            vec![
                e,
                conn(0, 8080, Some(CHROMIUM)),
                req(0, "DELETE", "/api/notes/3"),
            ]
        };
        for (e, cause) in [
            (
                exec(&["LD_PRELOAD=/work/w/.e.so"], None),
                "executed with LD_PRELOAD",
            ),
            (
                exec(&["LD_AUDIT=/tmp/a.so"], None),
                "executed with LD_AUDIT",
            ),
            (
                exec(
                    &["LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/work/w/lib"],
                    None,
                ),
                "LD_LIBRARY_PATH",
            ),
            (
                exec(&[], Some("more than 4096 environment variables")),
                "not all read",
            ),
            (
                exec(&["LD_LIBRARY_PATH=/usr/../tmp/x"], None),
                "LD_LIBRARY_PATH=/usr/../tmp/x",
            ),
            (exec(&["LD_LIBRARY_PATH=lib"], None), "LD_LIBRARY_PATH=lib"),
        ] {
            let c = check(&lines(e), 1);
            assert_eq!(c.outcome, RequestOutcome::Failed, "{}", c.why);
            assert!(c.why.contains(cause), "{}", c.why);
        }
        // The system's own library path, an empty preload, other loader variables.
        // Executed holding a connection it did not make.
        let Line::Exec(mut racing) = exec(&[], None) else {
            unreachable!()
        };
        racing.carried = vec![8080];
        let c = check(&lines(Line::Exec(racing)), 1);
        assert_eq!(c.outcome, RequestOutcome::Failed, "{}", c.why);
        assert!(c.why.contains("connections it had not made"), "{}", c.why);
        for e in [
            exec(&["LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu:/lib"], None),
            exec(&["LD_PRELOAD=", "LD_BIND_NOW=1"], None),
        ] {
            let c = check(&lines(e), 1);
            assert_eq!(c.outcome, RequestOutcome::Met, "{}", c.why);
        }
    }

    #[test]
    fn what_may_hide_a_matching_request_leaves_it_unknown() {
        let unattributed = Line::Connection(Connection {
            ms: 1,
            conn: 1,
            port: 8080,
            clients: vec![],
            unattributed: Some("closed before the relay looked".into()),
        });
        let base = || {
            vec![
                conn(0, 8080, Some(CHROMIUM)),
                req(0, "DELETE", "/api/notes/3"),
                req(0, "DELETE", "/api/notes/4"),
            ]
        };
        let mut lines = base();
        lines.extend([unattributed, req(1, "DELETE", "/api/notes/5")]);
        assert_eq!(check(&lines, 2).outcome, RequestOutcome::Unknown);
        // Unreadable bytes from curl to the app.
        let mut lines = base();
        lines.extend([
            conn(1, 8080, Some("/usr/bin/curl")),
            Line::Unparsed(Unparsed {
                ms: 3,
                conn: 1,
                why: "not an HTTP/1 request".into(),
            }),
        ]);
        let c = check(&lines, 2);
        assert_eq!(c.outcome, RequestOutcome::Unknown);
        assert!(c.why.contains("curl"), "{}", c.why);
        // A request whose connection line is missing.
        let mut lines = base();
        lines.push(req(9, "DELETE", "/api/notes/5"));
        assert_eq!(check(&lines, 2).outcome, RequestOutcome::Unknown);
        // An observation without connections (an old file), or with lines dropped.
        let o = observed::parse(
            &mut &br#"{"kind":"start","watched":["/"],"unwatched":[],"execs":true}
{"kind":"end","events":0,"distinct":0,"dropped":0,"overflow":false,"read_errors":0}
"#[..],
        );
        let f = assess(&o, &[deletes(1)], Some(APP), &[CHROMIUM.into()]);
        assert_eq!(f.required[0].outcome, RequestOutcome::Unknown);
        let mut o = observation(&base());
        if let Some(end) = o.end.as_mut() {
            end.requests_dropped = 1;
        }
        let f = assess(&o, &[deletes(1)], Some(APP), &[CHROMIUM.into()]);
        assert_eq!(f.required[0].outcome, RequestOutcome::Unknown);
        // But a request from curl, seen, fails it whatever was not seen.
        let mut lines = base();
        lines.extend([
            conn(1, 8080, Some("/usr/bin/curl")),
            req(1, "DELETE", "/api/notes/5"),
        ]);
        let mut o = observation(&lines);
        if let Some(end) = o.end.as_mut() {
            end.requests_dropped = 1;
        }
        let f = assess(&o, &[deletes(1)], Some(APP), &[CHROMIUM.into()]);
        assert_eq!(f.required[0].outcome, RequestOutcome::Failed);
    }
}
