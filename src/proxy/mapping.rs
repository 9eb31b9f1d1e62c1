//! Mapping a generic script step onto a tool the requesting agent actually offers.
//!
//! Scripts say "run this shell command" or "write this file"; agents name their tools
//! differently (`shell`, `bash`, `Bash`, `exec_command`; `write_file`, `write`,
//! `Write`) and name their arguments differently too. Where an offered tool's schema
//! says which argument name it wants, the schema wins over the defaults below.

use serde_json::{json, Map, Value};

use super::exchange::{OfferedTool, ToolCall};
use crate::spec::ScriptStep;

/// Shell tools, most preferred first.
const SHELL_TOOLS: &[&str] = &["shell", "bash", "Bash", "exec_command"];
const WRITE_TOOLS: &[&str] = &["write_file", "write", "Write"];
const READ_TOOLS: &[&str] = &["read_file", "read", "Read"];
/// Argument names a file tool may use for the path, in the order they are tried.
const PATH_KEYS: &[&str] = &["path", "filePath", "file_path"];

/// The tool call expressing step `k`, or why none of `tools` can express it.
pub(crate) fn tool_call(
    step: &ScriptStep,
    k: usize,
    tools: &[OfferedTool],
) -> Result<ToolCall, Unexpressible> {
    let (tool, args) = match step {
        ScriptStep::Shell { command, .. } => shell(tools, command),
        ScriptStep::WriteFile { path, content } => match find(tools, WRITE_TOOLS) {
            Some(tool) => Some((tool, file_args(tool, path, Some(content)))),
            None => shell(tools, &write_script(path, content)),
        },
        ScriptStep::ReadFile { path } => match find(tools, READ_TOOLS) {
            Some(tool) => Some((tool, file_args(tool, path, None))),
            None => shell(tools, &format!("cat -- {}", shell_words::quote(path))),
        },
        ScriptStep::Tool { name, arguments } => {
            tools.iter().find(|t| &t.name == name).map(|tool| {
                let args = match arguments {
                    Value::Object(map) => map.clone(),
                    _ => Map::new(),
                };
                (tool, args)
            })
        }
        ScriptStep::Final { .. } | ScriptStep::SayToolResult { .. } => None,
    }
    .ok_or_else(|| unexpressible(step, k, tools))?;
    let args = fill_required(tool, args, k);
    Ok(ToolCall {
        id: format!("call_{k}"),
        name: tool.name.clone(),
        arguments: Value::Object(args).to_string(),
    })
}

fn find<'t>(tools: &'t [OfferedTool], names: &[&str]) -> Option<&'t OfferedTool> {
    names
        .iter()
        .find_map(|name| tools.iter().find(|t| t.name == *name))
}

fn shell<'t>(
    tools: &'t [OfferedTool],
    command: &str,
) -> Option<(&'t OfferedTool, Map<String, Value>)> {
    let tool = find(tools, SHELL_TOOLS)?;
    let key = if tool.name == "exec_command" {
        "cmd"
    } else {
        "command"
    };
    // Codex-style shell tools take an argv array rather than a command line.
    let value = if property_type(tool, key) == Some("array") {
        json!(["bash", "-lc", command])
    } else {
        json!(command)
    };
    let mut args = Map::new();
    args.insert(key.to_owned(), value);
    Some((tool, args))
}

fn file_args(tool: &OfferedTool, path: &str, content: Option<&str>) -> Map<String, Value> {
    let default = match tool.name.as_str() {
        "write" | "read" => "filePath",
        "Write" | "Read" => "file_path",
        _ => "path",
    };
    let key = PATH_KEYS
        .iter()
        .copied()
        .find(|k| property_type(tool, k).is_some())
        .unwrap_or(default);
    let mut args = Map::new();
    args.insert(key.to_owned(), json!(path));
    if let Some(content) = content {
        args.insert("content".to_owned(), json!(content));
    }
    args
}

/// A shell command writing `content` to `path` byte for byte, creating parent dirs.
///
/// A quoted heredoc keeps the content literal; it always ends in a newline, so content
/// without a trailing newline is written with `printf '%s'` instead.
pub(crate) fn write_script(path: &str, content: &str) -> String {
    let target = shell_words::quote(path);
    let mkdir = match std::path::Path::new(path).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            format!(
                "mkdir -p -- {} && ",
                shell_words::quote(&dir.to_string_lossy())
            )
        }
        _ => String::new(),
    };
    if content.ends_with('\n') {
        let mut delimiter = String::from("GAUNTLET_EOF");
        while content.lines().any(|line| line == delimiter) {
            delimiter.push('_');
        }
        format!("{mkdir}cat > {target} <<'{delimiter}'\n{content}{delimiter}\n")
    } else {
        format!(
            "{mkdir}printf '%s' {} > {target}",
            shell_words::quote(content)
        )
    }
}

/// Some agents' tools require extra string arguments (OpenCode's `bash` wants a
/// `description`); fill each missing required string argument with a short note so the
/// agent does not reject the call.
fn fill_required(tool: &OfferedTool, mut args: Map<String, Value>, k: usize) -> Map<String, Value> {
    let required = tool
        .parameters
        .get("required")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        if !args.contains_key(name) && property_type(tool, name) == Some("string") {
            args.insert(
                name.to_owned(),
                json!(format!("gauntlet scripted step {k}")),
            );
        }
    }
    args
}

fn property_type<'t>(tool: &'t OfferedTool, name: &str) -> Option<&'t str> {
    let property = tool.parameters.get("properties")?.get(name)?;
    Some(
        property
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("any"),
    )
}

fn unexpressible(step: &ScriptStep, k: usize, tools: &[OfferedTool]) -> Unexpressible {
    let kind = match step {
        ScriptStep::Shell { .. } => "shell",
        ScriptStep::WriteFile { .. } => "write_file",
        ScriptStep::ReadFile { .. } => "read_file",
        ScriptStep::Tool { name, .. } => name.as_str(),
        ScriptStep::Final { .. } => "final",
        ScriptStep::SayToolResult { .. } => "say_tool_result",
    };
    Unexpressible {
        step: k,
        kind: kind.to_owned(),
        offered: tools.iter().map(|t| t.name.clone()).collect(),
    }
}

/// A script step none of the tools a request offers can carry out. Its message keeps
/// the words `flow step`, which usage logs hold and `evidence::usage` reads back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "flow step {step} ({kind}) needs a shell or file tool, but the request offers only: {}",
    .offered.join(", ")
)]
pub(crate) struct Unexpressible {
    pub step: usize,
    pub kind: String,
    pub offered: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, parameters: Value) -> OfferedTool {
        OfferedTool {
            name: name.into(),
            parameters,
        }
    }

    fn args(call: &ToolCall) -> Value {
        serde_json::from_str(&call.arguments).unwrap_or(Value::Null)
    }

    #[test]
    fn shell_prefers_the_listed_order_and_exec_command_takes_cmd() {
        let step = ScriptStep::Shell {
            command: "ls".into(),
            expect: None,
        };
        let tools = [tool("exec_command", Value::Null), tool("bash", Value::Null)];
        let call = tool_call(&step, 2, &tools).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((call.name.as_str(), call.id.as_str()), ("bash", "call_2"));
        assert_eq!(args(&call), json!({"command": "ls"}));
        let call = tool_call(&step, 0, &tools[..1]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(args(&call), json!({"cmd": "ls"}));
    }

    #[test]
    fn array_commands_and_required_strings_follow_the_schema() {
        let schema = json!({
            "properties": {"command": {"type": "array"}, "description": {"type": "string"}},
            "required": ["command", "description"]
        });
        let step = ScriptStep::Shell {
            command: "ls".into(),
            expect: None,
        };
        let call = tool_call(&step, 1, &[tool("shell", schema)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            args(&call),
            json!({"command": ["bash", "-lc", "ls"], "description": "gauntlet scripted step 1"})
        );
    }

    #[test]
    fn file_tools_use_their_own_path_names() {
        let step = ScriptStep::WriteFile {
            path: "a/b.txt".into(),
            content: "x".into(),
        };
        let call =
            tool_call(&step, 0, &[tool("Write", Value::Null)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(args(&call), json!({"file_path": "a/b.txt", "content": "x"}));
        let call =
            tool_call(&step, 0, &[tool("write", Value::Null)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(args(&call), json!({"filePath": "a/b.txt", "content": "x"}));
        let read = ScriptStep::ReadFile { path: "r".into() };
        let call = tool_call(&read, 0, &[tool("read_file", Value::Null)])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(args(&call), json!({"path": "r"}));
        let call =
            tool_call(&read, 0, &[tool("bash", Value::Null)]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(args(&call), json!({"command": "cat -- r"}));
    }

    #[test]
    fn write_scripts_reproduce_the_content_exactly() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for (i, content) in [
            "two\nlines\n",
            "no newline",
            "GAUNTLET_EOF\n'quote' $HOME\n",
            "",
        ]
        .iter()
        .enumerate()
        {
            let path = format!("sub/dir/f{i}.txt");
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(write_script(&path, content))
                .current_dir(dir.path())
                .status()
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(status.success());
            let written = std::fs::read_to_string(dir.path().join(&path)).unwrap_or_default();
            assert_eq!(&written, content);
        }
    }
}
