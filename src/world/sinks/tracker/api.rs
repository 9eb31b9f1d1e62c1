//! The tracker's HTTP API (the table in the module's docs): each request routed to
//! the state, answered, and logged as a read when it changed nothing, with the task
//! statuses its answer showed (what P3.3 asks the agent saw).

use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{json, Value};

use super::*;
use crate::world::sinks::serve::Received;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewThread {
    title: String,
    body: Option<String>,
    author: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    body: String,
    author: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTask {
    title: String,
    status: Option<TaskStatus>,
    priority: Option<Priority>,
}

fn bad(what: String) -> (u16, Value) {
    (400, json!({ "error": what }))
}

fn parse<T: serde::de::DeserializeOwned>(
    received: &Received,
    what: &str,
) -> Result<T, (u16, Value)> {
    serde_json::from_slice(&received.body)
        .map_err(|e| bad(format!("{what}: body is not the expected JSON: {e}")))
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

pub(super) fn route(state: &Mutex<State>, received: &Received) -> (u16, Value) {
    let mut guard = state.lock().unwrap_or_else(|p| p.into_inner());
    let state = &mut *guard;
    let logged = state.changes.len();
    let (status, body) = answer(state, received);
    let request = format!(
        "{} {}",
        received.parts.method,
        received
            .parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
    );
    if state.changes.len() == logged {
        state.read(&request, status);
    }
    // What the answer showed of the tasks' statuses: a task, a list of them, or the
    // change feed's status changes.
    if status < 300 {
        let shown: Vec<(String, String, Option<u64>)> = match &body {
            Value::Array(items) => items.iter().filter_map(shown_status).collect(),
            item => shown_status(item).into_iter().collect(),
        };
        for (id, s, change) in shown {
            state.served(&request, &id, &s, change);
        }
    }
    (status, body)
}

/// The task status an answer's item shows: a task (`id`, `status`), or a status change
/// of the feed (`id`, `to`, and its `seq`).
fn shown_status(item: &Value) -> Option<(String, String, Option<u64>)> {
    let id = item.get("id")?.as_str()?.to_string();
    if item.get("kind").and_then(Value::as_str) == Some("task_updated") {
        if item.get("field").and_then(Value::as_str) != Some("status") {
            return None;
        }
        let to = item.get("to")?.as_str()?.to_string();
        return Some((id, to, item.get("seq").and_then(Value::as_u64)));
    }
    let status = item.get("status")?.as_str()?.to_string();
    item.get("priority")?;
    Some((id, status, None))
}

fn answer(state: &mut State, received: &Received) -> (u16, Value) {
    let method = received.parts.method.as_str();
    let path = received.parts.uri.path().trim_end_matches('/');
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let missing = |e: SinkError| (404, json!({ "error": e.to_string() }));
    let result: Result<(u16, Value), (u16, Value)> = (|| match (method, segments.as_slice()) {
        ("GET", []) => Ok((
            200,
            json!({
                "threads": state.threads.len(),
                "tasks": state.tasks.len(),
                "changes": state.changes.len(),
                "api": {
                    "GET /threads": "all threads with their messages",
                    "POST /threads": {"title": "string", "body": "string (optional)", "author": "string (optional)"},
                    "GET /threads/{id}": "one thread",
                    "POST /threads/{id}/messages": {"body": "string", "author": "string (optional)"},
                    "GET /tasks": "all tasks",
                    "POST /tasks": {"title": "string", "status": "open|in_progress|blocked|done", "priority": "low|medium|high|urgent"},
                    "GET /tasks/{id}": "one task",
                    "PATCH /tasks/{id}": {"status": "optional", "priority": "optional", "title": "optional"},
                    "GET /changes?since=N": "state changes with seq > N, each with actor and at_ms"
                }
            }),
        )),
        ("GET", ["threads"]) => Ok((200, to_value(&state.current().threads))),
        ("POST", ["threads"]) => {
            let new: NewThread = parse(received, "POST /threads")?;
            if new.title.trim().is_empty() {
                return Err(bad("POST /threads: `title` is empty".into()));
            }
            let author = new.author.unwrap_or_else(|| AGENT.into());
            Ok((
                201,
                to_value(&state.add_thread(AGENT, new.title, author, new.body)),
            ))
        }
        ("GET", ["threads", id]) => state
            .threads
            .get(*id)
            .map(|t| (200, to_value(t)))
            .ok_or_else(|| {
                missing(SinkError::UnknownItem {
                    what: "thread",
                    id: id.to_string(),
                })
            }),
        ("POST", ["threads", id, "messages"]) => {
            let new: NewMessage = parse(received, "POST /threads/{id}/messages")?;
            let author = new.author.unwrap_or_else(|| AGENT.into());
            state
                .post(AGENT, id, author, new.body)
                .map(|t| (201, to_value(&t)))
                .map_err(missing)
        }
        ("GET", ["tasks"]) => Ok((200, to_value(&state.current().tasks))),
        ("POST", ["tasks"]) => {
            let new: NewTask = parse(received, "POST /tasks")?;
            if new.title.trim().is_empty() {
                return Err(bad("POST /tasks: `title` is empty".into()));
            }
            let task = state.add_task(
                AGENT,
                new.title,
                new.status.unwrap_or_default(),
                new.priority.unwrap_or_default(),
            );
            Ok((201, to_value(&task)))
        }
        ("GET", ["tasks", id]) => {
            state
                .tasks
                .get(*id)
                .map(|t| (200, to_value(t)))
                .ok_or_else(|| {
                    missing(SinkError::UnknownItem {
                        what: "task",
                        id: id.to_string(),
                    })
                })
        }
        ("PATCH" | "POST" | "PUT", ["tasks", id]) => {
            let update: TaskUpdate = parse(received, "PATCH /tasks/{id}")?;
            state
                .update_task(AGENT, id, update)
                .map(|t| (200, to_value(&t)))
                .map_err(missing)
        }
        ("GET", ["changes"]) => {
            let since = received
                .parts
                .uri
                .query()
                .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("since=")))
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| bad(format!("GET /changes: `since` is not a number: {v}")))
                })
                .transpose()?
                .unwrap_or(0);
            let changes: Vec<&Change> = state.changes.iter().filter(|c| c.seq > since).collect();
            Ok((200, to_value(&changes)))
        }
        _ => Err((
            404,
            json!({"error": format!("no route {method} {path} (see GET /threads, /tasks, /changes)")}),
        )),
    })();
    result.unwrap_or_else(|e| e)
}
