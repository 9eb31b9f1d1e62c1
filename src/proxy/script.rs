//! The scripted model: which reply a request gets, decided from its content alone.
//!
//! Agents send side requests (titles, summaries), retry, and may run several calls at
//! once, so request order says nothing about where the agent is in the script. What the
//! request carries does: whether it offers tools at all, and how many tool results the
//! conversation already holds. This module is protocol-neutral; each wire protocol
//! extracts an [`Asked`] from its own request shape.

use std::collections::HashMap;
use std::sync::Mutex;

use super::exchange::{Asked, Reply};
use super::mapping;
use crate::evidence::usage::script_note;
use crate::spec::Script;

/// What a side request (one that offers no tools) is answered with.
pub(crate) const SIDE_REPLY: &str = "ok";

/// A reply plus how it was chosen (recorded in the usage entry's `reply`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) reply: Reply,
    pub(crate) note: String,
}

/// A system prompt at most this long that mentions a title is a side request: agents'
/// main prompts run to many kilobytes, their title prompts to a few sentences.
const SIDE_PROMPT_MAX_BYTES: usize = 4096;

/// Choose the reply to a request.
///
/// A request is a side request (a title, a summary, a quota probe) when it offers no
/// tool, when its short system prompt asks for a title, or when none of its tools can
/// perform the script's next step: it gets a short text and advances nothing, because
/// agents such as Claude Code send side requests that offer tools too.
pub(crate) fn choose(script: &Script, asked: &Asked) -> Choice {
    let side = |why: String| Choice {
        reply: Reply::Text(SIDE_REPLY.to_owned()),
        note: script_note::side(&why),
    };
    if asked.tools.is_empty() {
        return side("no tools offered".to_owned());
    }
    if asks_for_a_title(&asked.system) {
        return side("the system prompt asks for a title".to_owned());
    }
    let k = asked.tool_results;
    if let Some((failed, why)) = failed_step(script, asked) {
        return Choice {
            reply: Reply::Text(format!(
                "gauntlet: scripted step {failed} failed ({why}); the script ends here."
            )),
            note: script_note::failed(failed, &why),
        };
    }
    let Some(step) = script.tool_steps().get(k) else {
        if script.says_tool_result() {
            let result = asked.last_tool_result.as_deref().unwrap_or("");
            return Choice {
                reply: Reply::Text(format!("{}{result}", script.final_text())),
                note: script_note::final_after(k, true),
            };
        }
        return Choice {
            reply: Reply::Text(script.final_text().to_owned()),
            note: script_note::final_after(k, false),
        };
    };
    match mapping::tool_call(step, k, &asked.tools) {
        Ok(mut call) => {
            call.id = format!("call_{}", asked.earlier_tool_results + k);
            Choice {
                note: script_note::step(k, &call.name),
                reply: Reply::ToolCall(call),
            }
        }
        Err(why) => side(why.to_string()),
    }
}

/// The tool step whose result the request carries, with why it failed, when it
/// declares what its result must contain (`expect`) and the result lacks it.
fn failed_step(script: &Script, asked: &Asked) -> Option<(usize, String)> {
    let k = asked.tool_results.checked_sub(1)?;
    let crate::spec::ScriptStep::Shell {
        expect: Some(expect),
        ..
    } = script.tool_steps().get(k)?
    else {
        return None;
    };
    let result = asked.last_tool_result.as_deref().unwrap_or("");
    if result.contains(expect.as_str()) {
        return None;
    }
    let excerpt: String = result.split_whitespace().collect::<Vec<_>>().join(" ");
    let excerpt: String = excerpt.chars().take(200).collect();
    Some((k, format!("its result lacks `{expect}`: {excerpt:?}")))
}

/// How often one tool step may be answered before the agent is taken to be unable to
/// carry it out: agents retry a call or two, but one whose tool refuses the step (Claude
/// Code's Write on a file it has not read, whose "interrupted" tool use leaves no tool
/// result) asks for the same step thousands of times until its deadline.
pub(crate) const MAX_STEP_REPEATS: u32 = 4;

/// How often each tool step of a script was answered, so that an agent whose tool
/// never runs the step (and which asks for it again and again) is told the script is
/// over instead of looping until its deadline.
#[derive(Debug, Default)]
pub(crate) struct Repeats(Mutex<HashMap<usize, u32>>);

impl Repeats {
    /// `choice`, unless it answers a tool step already answered [`MAX_STEP_REPEATS`]
    /// times: then a final text that says so, noted as abandoned, which a scorer reads
    /// as the harness's script failing on this agent.
    pub(crate) fn give_up_on_a_loop(&self, choice: Choice) -> Choice {
        let Some(k) = script_note::step_of(&choice.note) else {
            return choice;
        };
        let mut issued = match self.0.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let n = issued.entry(k).or_insert(0);
        *n += 1;
        if *n <= MAX_STEP_REPEATS {
            return choice;
        }
        Choice {
            reply: Reply::Text(format!(
                "gauntlet: scripted step {k} was asked for {n} times; the agent's tool never carried it out, so the script ends here."
            )),
            note: script_note::abandoned(k, *n),
        }
    }
}

fn asks_for_a_title(system: &str) -> bool {
    // A quoted `"title"` is a JSON field the prompt documents (an API body), not a
    // request for a title.
    system.len() <= SIDE_PROMPT_MAX_BYTES
        && system
            .to_ascii_lowercase()
            .replace("\"title\"", "")
            .contains("title")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::exchange::OfferedTool;
    use crate::spec::ScriptStep;
    use serde_json::json;

    fn script() -> Script {
        Script {
            capability: "c".into(),
            steps: vec![
                ScriptStep::Shell {
                    command: "true".into(),
                    expect: None,
                },
                ScriptStep::Final {
                    text: "done".into(),
                },
            ],
        }
    }

    fn asked(tools: &[&str], tool_results: usize, system: &str) -> Asked {
        Asked {
            tools: tools
                .iter()
                .map(|name| OfferedTool {
                    name: (*name).into(),
                    parameters: json!({}),
                })
                .collect(),
            tool_results,
            earlier_tool_results: 0,
            last_tool_result: None,
            system: system.into(),
        }
    }

    #[test]
    fn say_tool_result_repeats_what_the_tool_returned() {
        let script = Script {
            capability: "c".into(),
            steps: vec![
                ScriptStep::Tool {
                    name: "recall".into(),
                    arguments: json!({"query": "color"}),
                },
                ScriptStep::SayToolResult {
                    prefix: "I remember: ".into(),
                },
            ],
        };
        let first = choose(&script, &asked(&["shell", "recall"], 0, "agent"));
        assert!(
            matches!(first.reply, Reply::ToolCall(ref c) if c.name == "recall" && c.arguments.contains("color"))
        );
        let mut later = asked(&["shell", "recall"], 1, "agent");
        later.last_tool_result = Some("favorite_color: teal".into());
        assert_eq!(
            choose(&script, &later).reply,
            Reply::Text("I remember: favorite_color: teal".into())
        );
        // An agent without the tool gets a side reply, not a fabricated call.
        assert!(matches!(
            choose(&script, &asked(&["bash"], 0, "agent")).reply,
            Reply::Text(_)
        ));
    }

    #[test]
    fn no_tools_is_a_side_request() {
        let choice = choose(&script(), &asked(&[], 0, ""));
        assert_eq!(choice.reply, Reply::Text("ok".into()));
        assert!(choice.note.starts_with("side request"));
    }

    #[test]
    fn tool_results_pick_the_step() {
        let first = choose(&script(), &asked(&["bash"], 0, "you are an agent"));
        assert!(
            matches!(first.reply, Reply::ToolCall(ref c) if c.name == "bash" && c.id == "call_0")
        );
        assert_eq!(first.note, "step 0 as `bash`");
        for k in [1, 7] {
            let choice = choose(&script(), &asked(&["bash"], k, ""));
            assert_eq!(choice.reply, Reply::Text("done".into()));
        }
    }

    #[test]
    fn a_step_whose_result_lacks_what_it_expects_ends_the_script_as_failed() {
        let script = Script {
            capability: "c".into(),
            steps: vec![
                ScriptStep::Shell {
                    command: "printf 'x\\n' >> \"$GAUNTLET_STATE_DIR/m\" && echo stored".into(),
                    expect: Some("stored".into()),
                },
                ScriptStep::Shell {
                    command: "cat \"$GAUNTLET_STATE_DIR/m\"".into(),
                    expect: None,
                },
                ScriptStep::Final {
                    text: "done".into(),
                },
            ],
        };
        let mut after = asked(&["bash"], 1, "agent");
        after.last_tool_result = Some("sh: /m: Read-only file system".into());
        let choice = choose(&script, &after);
        assert_eq!(
            script_note::failed_reason(&choice.note),
            Some("step 0 its result lacks `stored`: \"sh: /m: Read-only file system\"")
        );
        assert!(matches!(choice.reply, Reply::Text(ref t) if t.contains("step 0 failed")));
        // The expected text present: the script goes on to the next step.
        after.last_tool_result = Some("stored\n".into());
        assert_eq!(choose(&script, &after).note, "step 1 as `bash`");
        // A step without `expect` is not judged: whatever `cat` printed, the final.
        let mut last = asked(&["bash"], 2, "agent");
        last.last_tool_result = Some("cat: no such file".into());
        assert_eq!(choose(&script, &last).reply, Reply::Text("done".into()));
    }

    #[test]
    fn a_resumed_session_gets_call_ids_its_history_does_not_hold() {
        // The step still comes from this turn's results; the id counts on past the
        // earlier turns' calls (`call_0`, `call_1`), which the agent has already seen.
        let mut resumed = asked(&["bash"], 0, "you are an agent");
        resumed.earlier_tool_results = 2;
        let choice = choose(&script(), &resumed);
        assert!(
            matches!(choice.reply, Reply::ToolCall(ref c) if c.id == "call_2"),
            "{:?}",
            choice.reply
        );
        assert_eq!(choice.note, "step 0 as `bash`");
    }

    #[test]
    fn an_unexpressible_step_is_a_side_request_naming_the_tools() {
        let choice = choose(&script(), &asked(&["web_search"], 0, ""));
        assert_eq!(choice.reply, Reply::Text("ok".into()));
        assert!(choice.note.contains("web_search"), "{}", choice.note);
    }

    #[test]
    fn a_short_title_prompt_with_tools_is_a_side_request() {
        let title = "Generate a concise title for this coding session.";
        let choice = choose(&script(), &asked(&["Bash"], 0, title));
        assert_eq!(choice.reply, Reply::Text("ok".into()));
        // A long main prompt that happens to mention titles is not a side request.
        let main = format!("{} Use the page title when useful.", "x".repeat(5000));
        let choice = choose(&script(), &asked(&["Bash"], 0, &main));
        assert!(matches!(choice.reply, Reply::ToolCall(_)));
        // A short main prompt documenting a `"title"` field is not a title request.
        let main = r#"You are an agent. POST /threads {"title","body"} opens a thread."#;
        let choice = choose(&script(), &asked(&["Bash"], 0, main));
        assert!(matches!(choice.reply, Reply::ToolCall(_)));
    }
}
