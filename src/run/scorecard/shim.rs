//! The reference agent's session and background launches, for as long as the adapter
//! seam lacks them: the adapters' own `prompt_launch` (sessions) and `daemon_launch`
//! come from the agent-side branch; until an adapter answers, the harness builds the
//! reference agent's documented command lines (`gauntlet-agent chat --state-dir D
//! --session S [--resume] --prompt P`, `gauntlet-agent daemon --state-dir D --config F`)
//! itself. Any other adapter's `Unsupported` stands, and the probe records it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::agent::{Adapter, AdapterError, Invocation, Launch, LaunchContext, PromptRun};

/// The adapter's launch for a session turn, or the reference agent's `chat`.
pub fn prompt_launch(
    adapter: &dyn Adapter,
    run: &PromptRun,
    ctx: &LaunchContext<'_>,
) -> Result<Launch, AdapterError> {
    match adapter.prompt_launch(run, ctx) {
        Err(AdapterError::Unsupported { .. }) if adapter.name() == "reference" => {
            let Some(s) = &run.session else {
                return Err(AdapterError::Unsupported {
                    agent: "reference".into(),
                    what: "run a one-shot prompt without a session here".into(),
                });
            };
            let mut args = vec![
                "chat".to_string(),
                "--state-dir".into(),
                s.state_dir.to_string_lossy().into_owned(),
                "--session".into(),
                s.id.clone(),
            ];
            if s.resume {
                args.push("--resume".into());
            }
            args.push("--prompt".into());
            args.push(run.prompt.clone());
            Ok(Launch {
                invocation: Invocation {
                    program: crate::binaries::bin_path("gauntlet-agent"),
                    args,
                },
                env: BTreeMap::new(),
            })
        }
        other => other,
    }
}

/// The reference agent's background mode with `config`; `None` for an agent without
/// one (or a profile without a daemon config).
pub fn daemon_launch(
    adapter: &dyn Adapter,
    state_dir: &Path,
    config: Option<&Path>,
) -> Option<Launch> {
    let config = config?;
    (adapter.name() == "reference").then(|| Launch {
        invocation: Invocation {
            program: crate::binaries::bin_path("gauntlet-agent"),
            args: vec![
                "daemon".into(),
                "--state-dir".into(),
                state_dir.to_string_lossy().into_owned(),
                "--config".into(),
                config.to_string_lossy().into_owned(),
            ],
        },
        env: BTreeMap::new(),
    })
}
