//! `browser-notes`: a frozen sample app for gauntlet's qa suite (modality
//! `browser-flow`).
//!
//! A notes page (one HTML file, inline CSS and JS, nothing fetched from elsewhere) and
//! the JSON API it is built on (`/api/notes`), served over HTTP on 127.0.0.1. The
//! harness starts it on port 0 and reads the one line it prints to learn the URL; QA
//! agents then drive the page in a browser against the acceptance criteria in
//! `corpus.json`. With `--mutant <capability>` the same program breaks exactly that
//! capability, so that a claimed test can be shown to fail when the capability does
//! not hold.
//!
//! The app stands alone: it uses the package's dependencies but never the `gauntlet`
//! library, so nothing the harness does can change what the app is.

mod api;
mod mutant;
mod notes;
mod server;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;

use crate::api::App;
use crate::mutant::Mutant;

/// Command line. clap exits with code 2 on a bad argument, which is also the code
/// for an unknown or ambiguous `--mutant` (its value parser refuses those).
#[derive(Debug, Parser)]
#[command(name = "browser-notes", about = "A frozen notes page and its JSON API")]
struct Cli {
    /// Port to bind on 127.0.0.1; 0 lets the OS choose (the chosen port is printed).
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// Break exactly this capability (used by the harness to test the tests).
    #[arg(long, value_name = "CAPABILITY", value_parser = mutant::parse)]
    mutant: Option<Mutant>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, cli.port));
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("browser-notes: cannot bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("browser-notes: cannot read the bound address: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The harness waits for exactly this line; flush so that it is not stuck in a
    // pipe buffer while the server is already accepting.
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "listening on http://{bound}").and_then(|()| out.flush()) {
        eprintln!("browser-notes: cannot write the listening line to stdout: {e}");
        return ExitCode::FAILURE;
    }
    drop(out);
    server::serve(listener, Arc::new(App::new(cli.mutant))).await;
    ExitCode::SUCCESS
}
