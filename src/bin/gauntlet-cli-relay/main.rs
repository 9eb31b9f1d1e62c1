//! `gauntlet-cli-relay`: what a claimed test runs as `APP_BIN`.
//!
//! It forwards its arguments and standard input to the harness's relay for the target
//! (the socket in `GAUNTLET_APP_SOCKET`), copies back the app's standard output and
//! standard error, and exits as the app did. The same binary stands for the app and
//! for every mutant; see `world::cli_relay` for why and for the wire format.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

use gauntlet::world::cli_relay::{
    short_socket_path, EXIT, HEADER, MAX_FRAME, STDERR, STDIN, STDOUT,
};

/// Exit code when the relay cannot be reached: the app was never run.
const NO_RELAY: i32 = 125;

fn main() {
    std::process::exit(match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gauntlet-cli-relay: {e}");
            NO_RELAY
        }
    })
}

fn run() -> Result<i32, String> {
    // Standing in for an app, every argument is the app's (`$APP_BIN --version` asks
    // the app); only outside a trial does the relay say its own version, which a run
    // asks before it starts.
    if std::env::var_os("GAUNTLET_APP_SOCKET").is_none()
        && std::env::args().nth(1).as_deref() == Some("--version")
    {
        println!("gauntlet-cli-relay {}", env!("CARGO_PKG_VERSION"));
        return Ok(0);
    }
    let socket = std::env::var_os("GAUNTLET_APP_SOCKET")
        .ok_or("GAUNTLET_APP_SOCKET is not set: this is the harness's stand-in for an app, run it as $APP_BIN")?;
    let (_dir, short) = short_socket_path(std::path::Path::new(&socket))
        .map_err(|e| format!("cannot reach the app at {}: {e}", socket.to_string_lossy()))?;
    let mut stream = UnixStream::connect(&short)
        .map_err(|e| format!("cannot reach the app at {}: {e}", socket.to_string_lossy()))?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let header = serde_json::to_vec(&args).map_err(|e| e.to_string())?;
    write_frame(&mut stream, HEADER, &header).map_err(|e| e.to_string())?;

    let mut input = stream.try_clone().map_err(|e| e.to_string())?;
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if write_frame(&mut input, STDIN, &buf[..n]).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = write_frame(&mut input, STDIN, &[]);
    });

    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    loop {
        let mut head = [0u8; 5];
        stream
            .read_exact(&mut head)
            .map_err(|e| format!("the app's relay hung up before the app exited: {e}"))?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        if len > MAX_FRAME {
            return Err(format!(
                "frame of {len} bytes from the relay is over the limit"
            ));
        }
        let mut body = vec![0u8; len as usize];
        stream.read_exact(&mut body).map_err(|e| e.to_string())?;
        match head[0] {
            STDOUT => {
                let _ = stdout.write_all(&body);
            }
            STDERR => {
                let _ = stderr.write_all(&body);
            }
            EXIT => {
                let _ = stdout.flush();
                let _ = stderr.flush();
                let code = body
                    .get(..4)
                    .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                    .unwrap_or(1);
                return Ok(code);
            }
            other => return Err(format!("unknown frame {other} from the relay")),
        }
    }
}

fn write_frame(w: &mut impl Write, tag: u8, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut frame = Vec::with_capacity(5 + body.len());
    frame.push(tag);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(body);
    w.write_all(&frame)
}
