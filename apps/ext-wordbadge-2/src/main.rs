//! `ext-wordbadge-2`: a frozen sample app for gauntlet's qa suite (modality
//! `browser-extension`), the second version of `ext-wordbadge`.
//!
//! The app under test is a Manifest V3 extension whose action badge shows the word
//! count of the page in its tab. This binary serves the test pages it is tried on
//! (127.0.0.1, port 0 by default) and, given `--extension-out DIR`, first writes the
//! extension into DIR; with `--mutant <capability>` the written extension has exactly
//! that capability broken. The listening line is printed only once the extension is
//! on disk, so whoever waits for it can load the extension at once.
//!
//! What is new in this version: the first wrote the same bytes on every start, and a
//! mutant's differed from them in one line, so a test could tell a mutant by that line
//! without ever loading the extension. This one writes the scripts anew on every start
//! from fresh OS entropy (random names, order, padding and spelling of every value;
//! see `extension`), so nothing about their bytes is the same on two starts of the app,
//! and only what the extension does tells a mutant.
//!
//! The app stands alone: it never uses the `gauntlet` library.

mod extension;
mod forms;
mod mutant;
mod pages;
mod rng;
mod server;

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::mutant::Mutant;

/// Command line. clap exits with code 2 on a bad argument, which is also the code
/// for an unknown or ambiguous `--mutant` (its value parser refuses those).
#[derive(Debug, Parser)]
#[command(
    name = "ext-wordbadge-2",
    about = "Test pages for the frozen Word Badge extension, and the extension itself"
)]
struct Cli {
    /// Port to bind on 127.0.0.1; 0 lets the OS choose (the chosen port is printed).
    #[arg(long, default_value_t = 0)]
    port: u16,

    /// Write the unpacked extension into this directory before serving.
    #[arg(long, value_name = "DIR")]
    extension_out: Option<PathBuf>,

    /// Break exactly this capability in the written extension (used by the harness
    /// to test the tests).
    #[arg(long, value_name = "CAPABILITY", value_parser = mutant::parse)]
    mutant: Option<Mutant>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(dir) = &cli.extension_out {
        if let Err(e) = extension::write(dir, cli.mutant) {
            eprintln!("ext-wordbadge-2: {e}");
            return ExitCode::FAILURE;
        }
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, cli.port));
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ext-wordbadge-2: cannot bind {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ext-wordbadge-2: cannot read the bound address: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The harness waits for exactly this line; flush so that it is not stuck in a
    // pipe buffer while the server is already accepting.
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "listening on http://{bound}").and_then(|()| out.flush()) {
        eprintln!("ext-wordbadge-2: cannot write the listening line to stdout: {e}");
        return ExitCode::FAILURE;
    }
    drop(out);
    server::serve(listener).await;
    ExitCode::SUCCESS
}
