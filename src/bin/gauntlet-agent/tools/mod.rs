//! The agent's tools: what the model may ask for, and how each request is carried out.
//!
//! Every failure here — an unknown tool, arguments that are not the right JSON, a
//! command that cannot start — becomes a tool result the model can read and react to;
//! nothing a model asks for may crash the agent.

mod browser;
mod files;
mod http;
mod shell;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// Output kept from a shell command or an HTTP body: enough to read, small enough for
/// the model's context.
pub const OUTPUT_CAP: usize = 16 * 1024;
/// What `read_file` returns at most.
pub const READ_CAP: usize = 64 * 1024;
pub const SHELL_TIMEOUT: Duration = Duration::from_secs(120);
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// What a tool call produced, as shown to the model and recorded in the event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutcome {
    pub output: String,
    /// The tool could not do what was asked (or the command exited non-zero).
    pub failed: bool,
}

impl ToolOutcome {
    pub fn ok(output: impl Into<String>) -> Self {
        ToolOutcome {
            output: output.into(),
            failed: false,
        }
    }
    pub fn failed(output: impl Into<String>) -> Self {
        ToolOutcome {
            output: output.into(),
            failed: true,
        }
    }
}

/// The function-tool schemas offered to the model.
pub fn definitions() -> Value {
    let function = |name: &str, description: &str, parameters: Value| {
        json!({"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters,
        }})
    };
    json!([
        function(
            "shell",
            "Run a POSIX shell command with `sh -c` in the workspace (your current directory). \
             APP_URL is set in its environment. Returns combined stdout+stderr (truncated to 16 KiB) \
             and the exit code. Times out after 120 s.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "the shell command"}
            }, "required": ["command"]}),
        ),
        function(
            "write_file",
            "Write a file (path relative to the workspace), creating parent directories. \
             Overwrites an existing file.",
            json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            }, "required": ["path", "content"]}),
        ),
        function(
            "read_file",
            "Read a file (path relative to the workspace); truncated to 64 KiB.",
            json!({"type": "object", "properties": {
                "path": {"type": "string"}
            }, "required": ["path"]}),
        ),
        function(
            "http_request",
            "Send one HTTP request and return the status, the content type and the body \
             (truncated to 16 KiB). Times out after 30 s.",
            json!({"type": "object", "properties": {
                "method": {"type": "string", "description": "GET, POST, PUT, PATCH, DELETE, ..."},
                "url": {"type": "string", "description": "absolute URL"},
                "body": {"type": "string", "description": "request body, sent as is"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"},
                            "description": "extra request headers"}
            }, "required": ["method", "url"]}),
        ),
        function(
            "browser",
            "Drive one headless Chromium tab (started on first use, kept for the whole run; the \
             extension in EXTENSION_DIR is loaded when that is set). Actions: `goto` (url; a path \
             is joined to the app URL; waits for the page to load), `click` (selector), `type` \
             (selector, text), `text` (selector: the first match's innerText), `count` (selector: \
             how many match), `badge` (the extension's action badge text for this tab). New \
             console errors of the page are appended to each result. For a test the harness can \
             re-run, write a flow file and run it with `gauntlet flow run check.json`: \
             {\"steps\": [{\"browser\": {\"goto\": \"/\"}}, {\"browser\": {\"click\": \"#add\"}}, \
             {\"browser\": {\"text\": \"#count\"}, \"expect\": {\"equals\": \"1\"}}, \
             {\"browser\": {\"badge\": {}}, \"expect\": {\"equals\": \"3\"}}]} (also `type`, \
             `wait_for`, `count`, and `http`/`cli` steps; see `gauntlet flow run --help`); it exits 0 \
             when every expectation holds.",
            json!({"type": "object", "properties": {
                "action": {"type": "string", "enum": ["goto", "click", "type", "text", "count", "badge"]},
                "url": {"type": "string", "description": "for goto"},
                "selector": {"type": "string", "description": "a CSS selector, for click, type, text, count"},
                "text": {"type": "string", "description": "for type"}
            }, "required": ["action"]}),
        ),
    ])
}

/// Carries out tool calls in one workspace.
pub struct Toolbox {
    cwd: PathBuf,
    app_url: String,
    http: Option<http::Clients>,
    shell_timeout: Duration,
    browser: Mutex<browser::Session>,
}

impl Toolbox {
    /// `app_url` is exported as `APP_URL` to shell commands so that the test the model
    /// writes can be run exactly as the harness will run it.
    pub fn new(cwd: PathBuf, app_url: String) -> Toolbox {
        let http = http::Clients::new(HTTP_TIMEOUT)
            .map_err(|e| eprintln!("gauntlet-agent: http_request tool unavailable: {e}"))
            .ok();
        let extension_dir = std::env::var_os("EXTENSION_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Toolbox {
            browser: Mutex::new(browser::Session::new(app_url.clone(), extension_dir)),
            cwd,
            app_url,
            http,
            shell_timeout: SHELL_TIMEOUT,
        }
    }

    /// Runs the tool `name` with the raw JSON `arguments` string the model wrote.
    pub fn run(&self, name: &str, arguments: &str) -> ToolOutcome {
        match name {
            "shell" => match parse_args::<shell::Args>(name, arguments) {
                Ok(a) => shell::call(&self.cwd, &self.app_url, self.shell_timeout, &a),
                Err(e) => e,
            },
            "write_file" => match parse_args::<files::WriteArgs>(name, arguments) {
                Ok(a) => files::write(&self.cwd, &a),
                Err(e) => e,
            },
            "read_file" => match parse_args::<files::ReadArgs>(name, arguments) {
                Ok(a) => files::read(&self.cwd, &a),
                Err(e) => e,
            },
            "http_request" => match (parse_args::<http::Args>(name, arguments), &self.http) {
                (Err(e), _) => e,
                (Ok(_), None) => ToolOutcome::failed("http_request: no http client available"),
                (Ok(a), Some(clients)) => http::call(clients, &a),
            },
            "browser" => match (parse_args::<browser::Args>(name, arguments), self.browser.lock()) {
                (Err(e), _) => e,
                (Ok(_), Err(_)) => ToolOutcome::failed("browser: unavailable after an earlier crash"),
                (Ok(a), Ok(mut session)) => session.call(&a),
            },
            other => ToolOutcome::failed(format!(
                "unknown tool `{other}`; the tools are shell, write_file, read_file, http_request, browser"
            )),
        }
    }
}

/// Decodes a tool's arguments; an empty string counts as `{}`.
fn parse_args<T: DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ToolOutcome> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text).map_err(|e| {
        ToolOutcome::failed(format!(
            "bad arguments for `{tool}`: {e}; expected a JSON object matching the tool's schema"
        ))
    })
}

/// The arguments as JSON for the event stream: the parsed object, or the raw string
/// when it does not parse (the evidence keeps what the model really sent).
pub fn input_value(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_string()))
}

/// Lossy text of at most `cap` bytes of `bytes`, noting how much of `total` was cut.
pub fn truncate(bytes: &[u8], total: usize, cap: usize) -> String {
    let kept = &bytes[..bytes.len().min(cap)];
    let mut text = String::from_utf8_lossy(kept).into_owned();
    if total > kept.len() {
        text.push_str(&format!(
            "\n[... truncated: {} of {total} bytes shown]",
            kept.len()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toolbox(dir: &std::path::Path) -> Toolbox {
        Toolbox::new(dir.to_path_buf(), "http://127.0.0.1:9".into())
    }

    #[test]
    fn unknown_tools_and_bad_arguments_are_failed_results() {
        let dir = std::env::temp_dir();
        let tb = toolbox(&dir);
        let r = tb.run("teleport", "{}");
        assert!(r.failed && r.output.contains("unknown tool `teleport`"));
        let r = tb.run("shell", "not json");
        assert!(r.failed && r.output.contains("bad arguments for `shell`"));
        let r = tb.run("shell", "{}");
        assert!(r.failed && r.output.contains("command"), "{}", r.output);
    }

    #[test]
    fn definitions_name_the_five_tools() {
        let defs = definitions();
        let names: Vec<&str> = defs
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "shell",
                "write_file",
                "read_file",
                "http_request",
                "browser"
            ]
        );
    }

    #[test]
    fn truncation_notes_the_cut() {
        assert_eq!(truncate(b"abc", 3, 10), "abc");
        let t = truncate(b"abcdef", 100, 3);
        assert!(t.starts_with("abc\n[... truncated: 3 of 100 bytes"), "{t}");
        assert_eq!(input_value("nope"), Value::String("nope".into()));
        assert_eq!(input_value(""), json!({}));
    }
}
