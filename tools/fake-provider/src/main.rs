//! `gauntlet-fake-provider`: the fake provider as a process of its own, for benches
//! that run gauntlet against it as separate processes (see the library's docs).

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use gauntlet_fake_provider::cli::Flags;
use gauntlet_fake_provider::{FakeProvider, SystemClock};

fn fail(why: impl std::fmt::Display) -> ExitCode {
    eprintln!("gauntlet-fake-provider: {why}");
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let flags = Flags::parse();
    let config = match flags.config() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    // Created before serving, and never over an earlier ledger: a bench must not read
    // another run's.
    let mut ledger_file = match &flags.ledger {
        Some(path) => match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(f) => Some(f),
            Err(e) => return fail(format!("--ledger {}: {e}", path.display())),
        },
        None => None,
    };
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start the runtime: {e}")),
    };
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return fail("cannot listen for SIGINT and SIGTERM");
        };
        let clock = std::sync::Arc::new(SystemClock::default());
        let provider = match FakeProvider::start_on(flags.listen, config, clock).await {
            Ok(p) => p,
            Err(e) => return fail(e),
        };
        let mut out = std::io::stdout();
        if let Err(e) =
            writeln!(out, "listening on http://{}", provider.addr()).and_then(|()| out.flush())
        {
            return fail(format!("cannot write to stdout: {e}"));
        }
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        let ledger = provider.shutdown().await;
        if let Some(file) = ledger_file.as_mut() {
            let text = match serde_json::to_string_pretty(&ledger) {
                Ok(t) => t,
                Err(e) => return fail(format!("cannot write the ledger: {e}")),
            };
            if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
                return fail(format!("cannot write the ledger: {e}"));
            }
        }
        ExitCode::SUCCESS
    })
}
