//! `gauntlet-agent`: the reference QA agent. A plain OpenAI-compatible tool-calling
//! agent; it knows the corpus graph and the claim contract, and nothing about how the
//! harness scripts or scores it — with a real model it does real QA.
//!
//! Events go to stdout as JSONL (docs/agent-protocol.md); diagnostics go to stderr.
//! Exit 0 after the `final` event; exit 1 after an `error` event.

mod agent_loop;
mod chat;
mod completion;
mod daemon;
mod events;
mod goals;
mod memory;
mod model;
mod prompt;
mod sse;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gauntlet::evidence::Event;
use gauntlet::spec::Corpus;

use crate::agent_loop::{AgentLoop, LoopError};
use crate::events::Emitter;
use crate::model::{ChatClient, ModelConfig, ModelError};
use crate::tools::Toolbox;
use gauntlet::suites::qa::prompt::{render_prompt, Surface};

const AGENT_NAME: &str = "gauntlet-agent";

#[derive(Debug, Parser)]
#[command(
    name = "gauntlet-agent",
    version,
    about = "gauntlet's reference QA agent"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Verify one capability of a running app and end with a claim block.
    Qa(QaArgs),
    /// One prompted turn of a multi-turn conversation kept in a state directory.
    Chat(chat::ChatArgs),
    /// The background mode: a long-running loop whose actions a config file sets.
    Daemon(daemon::DaemonArgs),
    /// Carry out a free-form task given as a prompt file (challenges): the same tool
    /// loop and event stream, every line stamped with `ts_ms`.
    Task(TaskArgs),
}

#[derive(Debug, clap::Args)]
struct TaskArgs {
    /// The whole task, as the user message.
    #[arg(long)]
    prompt_file: PathBuf,
    /// Model calls allowed before giving up.
    #[arg(long, default_value_t = 60)]
    max_turns: u32,
    /// Ask the model for server-sent events and reassemble them.
    #[arg(long)]
    stream: bool,
}

#[derive(Debug, clap::Args)]
struct QaArgs {
    /// The task as the harness rendered it (`<workspace>/.agent/prompt.md`); without
    /// it (run by hand) the same prompt is rendered here from the corpus graph.
    #[arg(long)]
    prompt_file: Option<PathBuf>,
    /// The corpus graph (corpus.json).
    #[arg(long)]
    graph_file: PathBuf,
    /// Base URL of the app under test (HTTP, browser and extension apps).
    #[arg(long, required_unless_present = "bin", conflicts_with = "bin")]
    url: Option<String>,
    /// Path of the app's binary (command-line apps); exported as `APP_BIN`.
    #[arg(long)]
    bin: Option<PathBuf>,
    /// The capability id to verify.
    #[arg(long)]
    capability: String,
    /// How many times the harness re-runs a claimed test.
    #[arg(long)]
    n: u32,
    /// Model calls allowed before giving up.
    #[arg(long, default_value_t = 40)]
    max_turns: u32,
    /// Ask the model for server-sent events and reassemble them.
    #[arg(long)]
    stream: bool,
}

#[derive(Debug, thiserror::Error)]
enum AgentError {
    #[error("cannot load the corpus graph: {0}")]
    Graph(#[from] gauntlet::spec::SpecError),
    #[error("{file}: capability `{id}` is not in the corpus graph")]
    UnknownCapability { file: String, id: String },
    #[error("cannot determine the workspace (current directory): {0}")]
    Cwd(#[source] std::io::Error),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Loop(#[from] LoopError),
    #[error("cannot write an event to stdout: {0}")]
    Emit(#[from] std::io::Error),
    #[error("{file}: cannot read the prompt file: {source}")]
    PromptFile {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        Command::Qa(args) => {
            let mut emitter = Emitter::new(std::io::stdout().lock());
            let r = qa(args, &mut emitter);
            finish(r, &mut emitter)
        }
        Command::Task(args) => {
            let mut emitter = Emitter::with_timestamps(std::io::stdout().lock());
            let r = task(args, &mut emitter);
            finish(r, &mut emitter)
        }
        // Scorecard turns and idle windows: timestamped, like challenge runs.
        Command::Chat(args) => {
            let mut emitter = Emitter::with_timestamps(std::io::stdout().lock());
            let r = chat::chat(args, &mut emitter);
            finish(r, &mut emitter)
        }
        Command::Daemon(args) => {
            let mut emitter = Emitter::with_timestamps(std::io::stdout().lock());
            let r = daemon::daemon(args, &mut emitter);
            finish(r, &mut emitter)
        }
    }
}

/// Exit 0, or report the error on stderr and as an `error` event and exit 1.
fn finish<E: std::fmt::Display, W: std::io::Write>(
    result: Result<(), E>,
    emitter: &mut Emitter<W>,
) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{AGENT_NAME}: {e}");
            if let Err(emit_err) = emitter.emit(&Event::Error {
                message: e.to_string(),
            }) {
                eprintln!("{AGENT_NAME}: cannot write the error event: {emit_err}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Generic instructions for a free-form task: what the tools are, and that the final
/// answer is a message without a tool call. The task itself (rules, report contract)
/// is entirely the prompt file's.
/// What this agent adds to the harness's qa prompt: its own tools.
const QA_SYSTEM: &str = "You are a careful QA engineer working in a POSIX shell environment. \
Your current working directory is your workspace. Tools: `shell` (runs `sh -c` in the workspace, \
with the environment you were started with: `APP_URL` or `APP_BIN` is set), `write_file`, \
`read_file`, `http_request`. Follow the task's test contract exactly. When you are done, answer \
with your final message without calling any tool.";

const TASK_SYSTEM: &str = "You are a capable software agent working in a POSIX shell environment. \
Your current working directory is your workspace. Tools: `shell` (runs `sh -c` in the workspace, \
with the environment you were started with), `write_file`, `read_file`, `http_request`. Follow the \
task's rules exactly. When you are done, answer with your final message without calling any tool.";

fn task<W: std::io::Write>(args: &TaskArgs, emitter: &mut Emitter<W>) -> Result<(), AgentError> {
    let config = ModelConfig::from_env();
    emitter.emit(&Event::Start {
        agent: AGENT_NAME.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        model: config.model.clone(),
    })?;
    let user =
        std::fs::read_to_string(&args.prompt_file).map_err(|source| AgentError::PromptFile {
            file: args.prompt_file.display().to_string(),
            source,
        })?;
    let cwd = std::env::current_dir().map_err(AgentError::Cwd)?;
    let toolbox = Toolbox::new(cwd, std::env::var("APP_URL").unwrap_or_default());
    let client = ChatClient::new(config, args.stream)?;
    eprintln!(
        "{AGENT_NAME}: task {} with model {}",
        args.prompt_file.display(),
        client.model()
    );
    let final_text = AgentLoop {
        client: &client,
        toolbox: &toolbox,
        emitter,
        max_turns: args.max_turns,
    }
    .run(&prompt::Prompt {
        system: TASK_SYSTEM.to_string(),
        user,
    })?;
    emitter.emit(&Event::Final { text: final_text })?;
    Ok(())
}

fn qa<W: std::io::Write>(args: &QaArgs, emitter: &mut Emitter<W>) -> Result<(), AgentError> {
    let config = ModelConfig::from_env();
    emitter.emit(&Event::Start {
        agent: AGENT_NAME.to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        model: config.model.clone(),
    })?;
    let corpus = Corpus::load(&args.graph_file)?;
    let capability = corpus
        .capabilities
        .iter()
        .find(|c| c.id == args.capability)
        .ok_or_else(|| AgentError::UnknownCapability {
            file: args.graph_file.display().to_string(),
            id: args.capability.clone(),
        })?;
    let bin = args.bin.as_ref().map(|b| b.display().to_string());
    if let Some(bin) = &args.bin {
        // Shell commands (and so the test the model writes) inherit this process's
        // environment: exporting APP_BIN here makes them run exactly as the harness
        // will run the claimed test, even when the agent is started by hand.
        // Nothing else runs yet, so no other thread can be reading the environment.
        std::env::set_var("APP_BIN", bin);
    }
    let user = match &args.prompt_file {
        Some(file) => std::fs::read_to_string(file).map_err(|source| AgentError::PromptFile {
            file: file.display().to_string(),
            source,
        })?,
        None => {
            let surface = match (&bin, &args.url) {
                (Some(bin), _) => Surface::Cli { bin },
                (None, url) => Surface::Http {
                    url: url.as_deref().unwrap_or(""),
                },
            };
            render_prompt(&corpus, capability, &surface, &args.graph_file, args.n)
        }
    };
    let prompt = prompt::Prompt {
        system: QA_SYSTEM.to_string(),
        user,
    };
    let cwd = std::env::current_dir().map_err(AgentError::Cwd)?;
    // A command-line app has no URL: APP_URL is exported empty rather than stale.
    let toolbox = Toolbox::new(cwd, args.url.clone().unwrap_or_default());
    let client = ChatClient::new(config, args.stream)?;
    eprintln!(
        "{AGENT_NAME}: verifying `{}` with model {}",
        capability.id,
        client.model()
    );
    let final_text = AgentLoop {
        client: &client,
        toolbox: &toolbox,
        emitter,
        max_turns: args.max_turns,
    }
    .run(&prompt)?;
    emitter.emit(&Event::Final { text: final_text })?;
    Ok(())
}
