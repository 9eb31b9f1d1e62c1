//! A stateful tracker: the "real system downstream" an agent can change (dimension 5,
//! level 4), where it can open a new thread (P4.3), and which the harness changes
//! while the agent is idle (P3.3). JSON over HTTP on loopback; every state change is
//! logged with its actor and time.
//!
//! # HTTP API (what the agent calls, at `GAUNTLET_TRACKER_URL`)
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /threads` | | `[Thread]` |
//! | `POST /threads` | `{"title", "body"?, "author"?}` | `201 Thread` |
//! | `GET /threads/{id}` | | `Thread` |
//! | `POST /threads/{id}/messages` | `{"body", "author"?}` | `201 Thread` |
//! | `GET /tasks` | | `[Task]` |
//! | `POST /tasks` | `{"title", "status"?, "priority"?}` | `201 Task` |
//! | `GET /tasks/{id}` | | `Task` |
//! | `PATCH /tasks/{id}` (or `POST`) | `{"status"?, "priority"?, "title"?}` | `Task` |
//! | `GET /changes?since=N` | | `[Change]` with `seq > N` |
//!
//! Status: `open | in_progress | blocked | done`; priority: `low | medium | high |
//! urgent`. Errors are `{"error": "..."}` with 400 (naming the field) or 404. Every
//! change made over HTTP has actor `agent` (a client cannot claim to be the harness);
//! the harness's own mutations (Rust API) have actor `harness`.
//!
//! Reads are logged too, because what the agent was shown is evidence: whether it could
//! have observed a change before it acted on one (P3.3). Every read counts
//! ([`TrackerObservation::reads`], the first [`READS_KEPT`] listed), and the first answer
//! that served the status a change set — `GET /tasks`, `GET /tasks/{id}`, the task a
//! write answers with, or the change itself in `GET /changes` — is kept as that change's
//! [`Reveal`], with the place it took in the change log.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::serve::{self, Server};
use super::{now_ms, SinkError};
/// The first answer that served the status a change set (of any actor): the scorer
/// reads it as it is kept.
pub use crate::score::scorecard::TrackerReveal as Reveal;

mod api;
use api::route;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    #[default]
    Open,
    InProgress,
    Blocked,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    Low,
    #[default]
    Medium,
    High,
    Urgent,
}

impl std::str::FromStr for TaskStatus {
    type Err = String;
    /// `open`, `in_progress`, `blocked`, `done` (as probe data spells them).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(Value::String(s.to_string()))
            .map_err(|_| format!("`{s}` is not a task status (open, in_progress, blocked, done)"))
    }
}

impl std::str::FromStr for Priority {
    type Err = String;
    /// `low`, `medium`, `high`, `urgent`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(Value::String(s.to_string()))
            .map_err(|_| format!("`{s}` is not a priority (low, medium, high, urgent)"))
    }
}

fn label<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub title: String,
    pub status: TaskStatus,
    pub priority: Priority,
    pub updated_at_ms: u64,
    pub updated_by: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub at_ms: u64,
    pub author: String,
    /// Who made the request: `agent`, `harness` or `initial` (the tracker's starting
    /// data; records before schema 2 say `seed`). `author` is free text.
    pub actor: String,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    pub id: String,
    pub title: String,
    pub created_by: String,
    pub created_at_ms: u64,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    ThreadCreated,
    MessagePosted,
    TaskCreated,
    TaskUpdated,
}

/// One logged state change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// 1, 2, 3, … in order of application.
    pub seq: u64,
    pub at_ms: u64,
    /// `agent` (over HTTP) or `harness` (the Rust API).
    pub actor: String,
    pub kind: ChangeKind,
    /// The thread's or task's id.
    pub id: String,
    /// For `task_updated`: the field, its old and new value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// A task the tracker starts with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitialTask {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default)]
    pub priority: Priority,
}

/// A thread the tracker starts with (the user's queue).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitialThread {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub messages: Vec<String>,
}

/// The tracker's initial state; not logged as changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrackerStart {
    #[serde(default)]
    pub threads: Vec<InitialThread>,
    #[serde(default)]
    pub tasks: Vec<InitialTask>,
}

/// The tracker's state and full change log, as a record keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrackerObservation {
    pub threads: Vec<Thread>,
    pub tasks: Vec<Task>,
    pub changes: Vec<Change>,
    /// How many requests the tracker answered that changed nothing (`GET`s, and
    /// requests it refused). Absent (0) in logs from before reads were counted.
    #[serde(default)]
    pub reads: u64,
    /// The first [`READS_KEPT`] of them.
    #[serde(default)]
    pub read_log: Vec<Read>,
    /// For each status change, the first answer that served the status it set: when
    /// the agent could first have seen it. A change no answer served has none.
    #[serde(default)]
    pub reveals: Vec<Reveal>,
}

/// Reads the tracker lists one by one ([`TrackerObservation::read_log`]); past them it
/// counts. A client polling as fast as it can is bounded in what it costs the record.
pub const READS_KEPT: usize = 1000;

/// One request that changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Read {
    pub at_ms: u64,
    /// `GET /tasks/T-1`, with its query.
    pub request: String,
    /// The answer's status code.
    pub status: u16,
}

impl TrackerObservation {
    /// Threads opened by the agent (not the initial ones, not the harness's): P4.3.
    pub fn threads_by(&self, actor: &str) -> Vec<&Thread> {
        self.threads
            .iter()
            .filter(|t| t.created_by == actor)
            .collect()
    }

    /// Changes made by `actor` at or after `since_ms`.
    pub fn changes_by(&self, actor: &str, since_ms: u64) -> Vec<&Change> {
        self.changes
            .iter()
            .filter(|c| c.actor == actor && c.at_ms >= since_ms)
            .collect()
    }
}

#[derive(Debug, Default)]
struct State {
    threads: BTreeMap<String, Thread>,
    tasks: BTreeMap<String, Task>,
    /// Creation order (ids are not ordered by value).
    thread_order: Vec<String>,
    task_order: Vec<String>,
    changes: Vec<Change>,
    next_id: u64,
    /// What the tracker started with: what a new session finds again.
    initial: TrackerStart,
    /// Threads and tasks as earlier sessions left them: observed, never served.
    earlier_threads: Vec<Thread>,
    earlier_tasks: Vec<Task>,
    reads: u64,
    read_log: Vec<Read>,
    reveals: Vec<Reveal>,
    /// Per task, the status change no answer has served yet (its `seq`).
    unrevealed: BTreeMap<String, u64>,
}

impl State {
    fn starting_with(initial: TrackerStart) -> State {
        let mut state = State {
            initial: initial.clone(),
            ..State::default()
        };
        state.plant(initial);
        state
    }

    /// A new session: what the agent made of the tracker is set aside (kept for the
    /// record) and the tracker is as it started, so that nothing the agent wrote
    /// here in an earlier session is there to be read back as memory. The change log
    /// and the id counter go on.
    fn new_session(&mut self) {
        let threads = std::mem::take(&mut self.thread_order);
        for id in threads {
            if let Some(t) = self.threads.remove(&id) {
                self.earlier_threads.push(t);
            }
        }
        let tasks = std::mem::take(&mut self.task_order);
        for id in tasks {
            if let Some(t) = self.tasks.remove(&id) {
                self.earlier_tasks.push(t);
            }
        }
        // The initial tasks are served again, as they started: no change of theirs is
        // pending.
        self.unrevealed.clear();
        self.plant(self.initial.clone());
    }

    fn plant(&mut self, initial: TrackerStart) {
        let state = self;
        let at = now_ms();
        for t in initial.threads {
            let messages = t
                .messages
                .into_iter()
                .map(|body| Message {
                    at_ms: at,
                    author: "user".into(),
                    actor: INITIAL.into(),
                    body,
                })
                .collect();
            state.thread_order.push(t.id.clone());
            state.threads.insert(
                t.id.clone(),
                Thread {
                    id: t.id,
                    title: t.title,
                    created_by: INITIAL.into(),
                    created_at_ms: at,
                    messages,
                },
            );
        }
        for t in initial.tasks {
            state.task_order.push(t.id.clone());
            state.tasks.insert(
                t.id.clone(),
                Task {
                    id: t.id,
                    title: t.title,
                    status: t.status,
                    priority: t.priority,
                    updated_at_ms: at,
                    updated_by: INITIAL.into(),
                },
            );
        }
    }

    fn fresh_id(&mut self, prefix: &str) -> String {
        loop {
            self.next_id += 1;
            let id = format!("{prefix}-{}", self.next_id);
            if !self.threads.contains_key(&id) && !self.tasks.contains_key(&id) {
                return id;
            }
        }
    }

    fn log(
        &mut self,
        actor: &str,
        kind: ChangeKind,
        id: &str,
        field: Option<(&str, String, String)>,
    ) {
        let seq = self.changes.len() as u64 + 1;
        let (field, from, to) = match field {
            Some((f, from, to)) => (Some(f.to_string()), Some(from), Some(to)),
            None => (None, None, None),
        };
        self.changes.push(Change {
            seq,
            at_ms: now_ms(),
            actor: actor.into(),
            kind,
            id: id.into(),
            field,
            from,
            to,
        });
    }

    fn add_thread(
        &mut self,
        actor: &str,
        title: String,
        author: String,
        body: Option<String>,
    ) -> Thread {
        let id = self.fresh_id("thread");
        let at = now_ms();
        let messages = body
            .map(|body| Message {
                at_ms: at,
                author,
                actor: actor.into(),
                body,
            })
            .into_iter()
            .collect();
        let thread = Thread {
            id: id.clone(),
            title,
            created_by: actor.into(),
            created_at_ms: at,
            messages,
        };
        self.thread_order.push(id.clone());
        self.threads.insert(id.clone(), thread.clone());
        self.log(actor, ChangeKind::ThreadCreated, &id, None);
        thread
    }

    fn post(
        &mut self,
        actor: &str,
        id: &str,
        author: String,
        body: String,
    ) -> Result<Thread, SinkError> {
        let thread = self
            .threads
            .get_mut(id)
            .ok_or_else(|| SinkError::UnknownItem {
                what: "thread",
                id: id.into(),
            })?;
        thread.messages.push(Message {
            at_ms: now_ms(),
            author,
            actor: actor.into(),
            body,
        });
        let thread = thread.clone();
        self.log(actor, ChangeKind::MessagePosted, id, None);
        Ok(thread)
    }

    fn add_task(
        &mut self,
        actor: &str,
        title: String,
        status: TaskStatus,
        priority: Priority,
    ) -> Task {
        let id = self.fresh_id("task");
        let task = Task {
            id: id.clone(),
            title,
            status,
            priority,
            updated_at_ms: now_ms(),
            updated_by: actor.into(),
        };
        self.task_order.push(id.clone());
        self.tasks.insert(id.clone(), task.clone());
        self.log(actor, ChangeKind::TaskCreated, &id, None);
        task
    }

    fn update_task(
        &mut self,
        actor: &str,
        id: &str,
        update: TaskUpdate,
    ) -> Result<Task, SinkError> {
        let task = self
            .tasks
            .get_mut(id)
            .ok_or_else(|| SinkError::UnknownItem {
                what: "task",
                id: id.into(),
            })?;
        let mut changed = Vec::new();
        if let Some(status) = update.status.filter(|s| *s != task.status) {
            changed.push(("status", label(&task.status), label(&status)));
            task.status = status;
        }
        if let Some(priority) = update.priority.filter(|p| *p != task.priority) {
            changed.push(("priority", label(&task.priority), label(&priority)));
            task.priority = priority;
        }
        if let Some(title) = update.title.filter(|t| *t != task.title) {
            changed.push(("title", task.title.clone(), title.clone()));
            task.title = title;
        }
        if !changed.is_empty() {
            task.updated_at_ms = now_ms();
            task.updated_by = actor.into();
        }
        let task = task.clone();
        for c in changed {
            let status = c.0 == "status";
            self.log(actor, ChangeKind::TaskUpdated, id, Some(c));
            if status {
                self.unrevealed
                    .insert(id.to_string(), self.changes.len() as u64);
            }
        }
        Ok(task)
    }

    /// A request that changed nothing: counted, and listed while there is room.
    fn read(&mut self, request: &str, status: u16) {
        self.reads += 1;
        if self.read_log.len() < READS_KEPT {
            self.read_log.push(Read {
                at_ms: now_ms(),
                request: request.to_string(),
                status,
            });
        }
    }

    /// An answer to `request` served `id`'s status `status`, or (`change`) the status
    /// change numbered so: if it is the task's status change nobody was shown yet, this
    /// answer is when it was first revealed.
    fn served(&mut self, request: &str, id: &str, status: &str, change: Option<u64>) {
        let Some(&pending) = self.unrevealed.get(id) else {
            return;
        };
        let set = self
            .changes
            .get(pending.saturating_sub(1) as usize)
            .and_then(|c| c.to.clone())
            .unwrap_or_default();
        if change.is_some_and(|c| c != pending) || set != status {
            return;
        }
        self.unrevealed.remove(id);
        self.reveals.push(Reveal {
            change: pending,
            id: id.to_string(),
            status: status.to_string(),
            at_ms: now_ms(),
            after: self.changes.len() as u64,
            request: request.to_string(),
        });
    }

    /// What the tracker serves now: the current session's threads and tasks.
    fn current(&self) -> TrackerObservation {
        TrackerObservation {
            threads: self
                .thread_order
                .iter()
                .filter_map(|id| self.threads.get(id).cloned())
                .collect(),
            tasks: self
                .task_order
                .iter()
                .filter_map(|id| self.tasks.get(id).cloned())
                .collect(),
            changes: self.changes.clone(),
            reads: self.reads,
            read_log: self.read_log.clone(),
            reveals: self.reveals.clone(),
        }
    }

    /// Everything, for the record: earlier sessions' threads and tasks first.
    fn observe(&self) -> TrackerObservation {
        let now = self.current();
        TrackerObservation {
            threads: self
                .earlier_threads
                .iter()
                .cloned()
                .chain(now.threads)
                .collect(),
            tasks: self
                .earlier_tasks
                .iter()
                .cloned()
                .chain(now.tasks)
                .collect(),
            changes: now.changes,
            reads: now.reads,
            read_log: now.read_log,
            reveals: now.reveals,
        }
    }
}

/// A partial update of a task.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskUpdate {
    pub status: Option<TaskStatus>,
    pub priority: Option<Priority>,
    pub title: Option<String>,
}

/// A running tracker.
pub struct Tracker {
    server: Server,
    state: Arc<Mutex<State>>,
}

const HARNESS: &str = "harness";
const AGENT: &str = "agent";
/// The actor of what the tracker starts with.
const INITIAL: &str = "initial";

impl Tracker {
    pub async fn start(initial: TrackerStart) -> Result<Tracker, SinkError> {
        let state = Arc::new(Mutex::new(State::starting_with(initial)));
        let shared = Arc::clone(&state);
        let server = serve::start("tracker", move |received| {
            let (status, body) = route(&shared, &received);
            async move { serve::json(status, &body) }
        })
        .await?;
        Ok(Tracker { server, state })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    pub fn observe(&self) -> TrackerObservation {
        self.with(|s| s.observe())
    }

    /// Start a new session of the agent (see `State::new_session`).
    pub fn new_session(&self) {
        self.with(|s| s.new_session())
    }

    /// Harness mutation: a task's status changes (e.g. flips to `blocked` while the
    /// agent is idle, P3.3).
    pub fn set_task_status(&self, id: &str, status: TaskStatus) -> Result<Task, SinkError> {
        self.with(|s| {
            s.update_task(
                HARNESS,
                id,
                TaskUpdate {
                    status: Some(status),
                    ..TaskUpdate::default()
                },
            )
        })
    }

    /// Harness mutation: a task's priority changes.
    pub fn set_task_priority(&self, id: &str, priority: Priority) -> Result<Task, SinkError> {
        self.with(|s| {
            s.update_task(
                HARNESS,
                id,
                TaskUpdate {
                    priority: Some(priority),
                    ..TaskUpdate::default()
                },
            )
        })
    }

    /// Harness mutation: a new task appears.
    pub fn add_task(&self, title: &str, status: TaskStatus, priority: Priority) -> Task {
        self.with(|s| s.add_task(HARNESS, title.into(), status, priority))
    }

    /// Harness mutation: a new thread appears in the user's queue.
    pub fn add_thread(&self, title: &str, body: Option<&str>) -> Thread {
        self.with(|s| {
            s.add_thread(
                HARNESS,
                title.into(),
                "user".into(),
                body.map(str::to_string),
            )
        })
    }

    /// Harness mutation: the user writes in a thread.
    pub fn post_message(&self, thread: &str, body: &str) -> Result<Thread, SinkError> {
        self.with(|s| s.post(HARNESS, thread, "user".into(), body.into()))
    }

    pub async fn shutdown(self) -> TrackerObservation {
        let Tracker { server, state } = self;
        server.shutdown().await;
        let observation = state.lock().unwrap_or_else(|p| p.into_inner()).observe();
        observation
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        // A poisoned lock only means a handler panicked mid-request; the state is
        // still the best evidence there is.
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::sinks::serve::Received;

    fn initial() -> TrackerStart {
        TrackerStart {
            threads: vec![],
            tasks: vec![InitialTask {
                id: "task-a".into(),
                title: "ship".into(),
                status: TaskStatus::Open,
                priority: Priority::High,
            }],
        }
    }

    #[test]
    fn updates_log_one_change_per_field_and_none_for_no_op() {
        let mut s = State::starting_with(initial());
        let update = TaskUpdate {
            status: Some(TaskStatus::Blocked),
            priority: Some(Priority::High),
            title: None,
        };
        s.update_task(HARNESS, "task-a", update)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.changes.len(), 1);
        assert_eq!(s.changes[0].from.as_deref(), Some("open"));
        assert_eq!(s.changes[0].to.as_deref(), Some("blocked"));
        assert_eq!(s.changes[0].actor, "harness");
        assert!(s.update_task(AGENT, "nope", TaskUpdate::default()).is_err());
    }

    fn request(state: &Mutex<State>, method: &str, uri: &str, body: &str) -> (u16, Value) {
        let (parts, ()) = hyper::http::Request::builder()
            .method(method)
            .uri(uri)
            .body(())
            .unwrap_or_else(|e| panic!("{e}"))
            .into_parts();
        let received = Received {
            parts,
            body: bytes::Bytes::from(body.to_string()),
            truncated: false,
        };
        route(state, &received)
    }

    /// Every request that changes nothing is a read; the first answer that shows the
    /// status a change set — the change in the feed, the task, the task list, the task a
    /// write answers with — is that change's reveal, once, with how many changes were
    /// logged by then.
    #[test]
    fn reads_are_counted_and_the_first_answer_showing_a_change_reveals_it() {
        let state = Mutex::new(State::starting_with(initial()));
        let with = |f: &mut dyn FnMut(&mut State)| f(&mut state.lock().unwrap());
        // Before the change: reads, a thread; nothing to reveal.
        request(&state, "GET", "/tasks/task-a", "");
        request(&state, "POST", "/threads", r#"{"title":"watching task-a"}"#);
        request(&state, "GET", "/", "");
        with(&mut |s| {
            s.update_task(
                HARNESS,
                "task-a",
                TaskUpdate {
                    status: Some(TaskStatus::Blocked),
                    ..TaskUpdate::default()
                },
            )
            .map(|_| ())
            .unwrap_or_else(|e| panic!("{e}"))
        });
        // The root's counts and the thread list show no status: no reveal.
        request(&state, "GET", "/", "");
        request(&state, "GET", "/threads", "");
        request(&state, "GET", "/changes?since=2", "");
        with(&mut |s| assert!(s.reveals.is_empty(), "{:?}", s.reveals));
        // The change feed from the start shows it.
        request(&state, "GET", "/changes?since=0", "");
        request(&state, "GET", "/tasks", "");
        let seen = state.lock().unwrap().observe();
        assert_eq!(seen.reads, 7, "{:?}", seen.read_log);
        assert_eq!(seen.read_log[0].request, "GET /tasks/task-a");
        assert_eq!(seen.reveals.len(), 1, "{:?}", seen.reveals);
        let r = &seen.reveals[0];
        assert_eq!((r.change, r.after), (2, 2));
        assert_eq!((r.id.as_str(), r.status.as_str()), ("task-a", "blocked"));
        assert_eq!(r.request, "GET /changes?since=0");

        // The task alone reveals a later change, and so does a write's answer.
        for (method, uri, body) in [
            ("GET", "/tasks/task-a", ""),
            ("PATCH", "/tasks/task-a", r#"{"priority":"urgent"}"#),
        ] {
            with(&mut |s| {
                let next = if s.tasks["task-a"].status == TaskStatus::Done {
                    TaskStatus::Open
                } else {
                    TaskStatus::Done
                };
                s.update_task(
                    HARNESS,
                    "task-a",
                    TaskUpdate {
                        status: Some(next),
                        ..TaskUpdate::default()
                    },
                )
                .map(|_| ())
                .unwrap_or_else(|e| panic!("{e}"))
            });
            request(&state, method, uri, body);
        }
        let seen = state.lock().unwrap().observe();
        let shown: Vec<(&str, &str)> = seen
            .reveals
            .iter()
            .map(|r| (r.status.as_str(), r.request.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("blocked", "GET /changes?since=0"),
                ("done", "GET /tasks/task-a"),
                ("open", "PATCH /tasks/task-a"),
            ]
        );
        // The write is no read.
        assert_eq!(seen.reads, 8);
    }

    /// A client polling as fast as it can costs the record a count past the list.
    #[test]
    fn the_read_log_is_bounded_and_the_count_goes_on() {
        let state = Mutex::new(State::starting_with(initial()));
        for _ in 0..READS_KEPT + 5 {
            request(&state, "GET", "/tasks", "");
        }
        let seen = state.lock().unwrap().observe();
        assert_eq!(seen.reads, READS_KEPT as u64 + 5);
        assert_eq!(seen.read_log.len(), READS_KEPT);
    }

    #[test]
    fn statuses_parse_as_probe_data_spells_them() {
        assert_eq!("blocked".parse::<TaskStatus>(), Ok(TaskStatus::Blocked));
        assert_eq!(
            "in_progress".parse::<TaskStatus>(),
            Ok(TaskStatus::InProgress)
        );
        assert!("Blocked!"
            .parse::<TaskStatus>()
            .is_err_and(|e| e.contains("Blocked!")));
        assert_eq!("urgent".parse::<Priority>(), Ok(Priority::Urgent));
    }

    #[test]
    fn fresh_ids_never_collide_with_initial_ones() {
        let mut s = State::starting_with(TrackerStart {
            threads: vec![InitialThread {
                id: "thread-1".into(),
                title: "t".into(),
                messages: vec![],
            }],
            tasks: vec![],
        });
        let t = s.add_thread(AGENT, "new".into(), "agent".into(), None);
        assert_ne!(t.id, "thread-1");
        assert_eq!(s.observe().threads_by("agent").len(), 1);
    }

    #[test]
    fn a_new_session_finds_the_tracker_as_it_started_and_the_record_keeps_the_earlier_one() {
        let mut s = State::starting_with(TrackerStart {
            threads: vec![InitialThread {
                id: "thread-1".into(),
                title: "initial".into(),
                messages: vec!["hello".into()],
            }],
            tasks: vec![],
        });
        let note = s.add_thread(AGENT, "my notes: Kraków".into(), "agent".into(), None);
        s.post(
            AGENT,
            "thread-1",
            "agent".into(),
            "remember STOLUM78".into(),
        )
        .expect("post");
        s.new_session();
        // What the agent reads: the initial thread, untouched, and none of its notes.
        let served = s.current();
        assert_eq!(served.threads.len(), 1);
        assert_eq!(served.threads[0].messages.len(), 1);
        assert!(!serde_json::to_string(&served.threads)
            .unwrap_or_default()
            .contains("STOLUM78"));
        // What the record keeps: all of it, and new ids still never collide.
        let all = s.observe();
        assert_eq!(all.threads_by("agent").len(), 1);
        assert!(all.changes.len() >= 2);
        let again = s.add_thread(AGENT, "new".into(), "agent".into(), None);
        assert_ne!(again.id, note.id);
    }
}
