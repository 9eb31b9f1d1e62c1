//! `gauntlet proxy`: the metering proxy as a process of its own.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::ProxyModeArg;
use super::exit::error;
use crate::config::Config;

pub(crate) fn proxy(
    mode: ProxyModeArg,
    script: Option<PathBuf>,
    upstream: Option<String>,
    listen: std::net::SocketAddr,
    usage_log: Option<PathBuf>,
    max_tokens: Option<u64>,
    threads: Option<std::num::NonZeroUsize>,
) -> ExitCode {
    use crate::proxy::{Budget, Proxy, ProxyMode};
    let cfg = or_exit!(Config::from_env());
    let mode = match mode {
        ProxyModeArg::Scripted => {
            let Some(file) = script else {
                return error("--mode scripted needs --flow");
            };
            match crate::spec::Script::load(&file) {
                Ok(script) => match &cfg.scripted_upstream {
                    Some(upstream) => ProxyMode::ScriptedVia {
                        script,
                        model: cfg.model.clone(),
                        upstream: upstream.clone(),
                        retry: crate::trial::retry_policy(&cfg),
                    },
                    None => ProxyMode::Scripted {
                        script,
                        model: cfg.model.clone(),
                        latency: cfg.scripted_latency,
                    },
                },
                Err(e) => return error(e),
            }
        }
        ProxyModeArg::Byok => match cfg.provider_key() {
            Ok(api_key) => ProxyMode::Byok {
                upstream: upstream
                    .map(|u| u.trim_end_matches('/').to_owned())
                    .unwrap_or_else(|| cfg.upstream_url.clone()),
                api_key,
                retry: crate::trial::retry_policy(&cfg),
            },
            Err(e) => return error(e),
        },
    };
    // Created before the proxy starts, and never over an earlier log.
    let log_file = match &usage_log {
        Some(f) => match std::fs::OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(f)
        {
            Ok(file) => Some(file),
            Err(e) => return error(format!("--usage-log {}: {e}", f.display())),
        },
        None => None,
    };
    let threads = threads.unwrap_or_else(|| {
        std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN)
    });
    // Accepting and waiting for a signal only: the proxy serves on threads of its own.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return error(format!("cannot start the runtime: {e}")),
    };
    rt.block_on(async move {
        use std::io::Write;
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return error("cannot listen for SIGINT and SIGTERM");
        };
        let p = match Proxy::start_on(listen, mode, Budget { max_tokens }, threads).await {
            Ok(p) => p,
            Err(e) => return error(format!("--listen {listen}: {e}")),
        };
        // The usage log is this command's record; no transcript is written, so no
        // bodies are kept for one.
        p.keep_no_calls();
        if let Some(file) = log_file {
            p.log_usage_to(file);
        }
        println!("gauntlet proxy listening on {}", p.root_url());
        println!("OPENAI_BASE_URL={}", p.base_url());
        println!("ANTHROPIC_BASE_URL={}", p.root_url());
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        let (totals, log_error) = p.shutdown_with_totals().await;
        print!("{totals}");
        if let Some(f) = &usage_log {
            println!("usage log: {}", f.display());
        }
        match log_error {
            Some(e) => {
                eprintln!(
                    "error: --usage-log: a write failed ({e}); the summary above counts every call"
                );
                ExitCode::FAILURE
            }
            None => ExitCode::SUCCESS,
        }
    })
}
