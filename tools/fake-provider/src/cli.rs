//! The command line of `gauntlet-fake-provider`: a config file, and flags that set
//! any of its values over it, so that a bench script can say one knob without a file.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;

use crate::config::{Config, ConfigError};
use crate::latency::Latency;

#[derive(Debug, Parser)]
#[command(
    name = "gauntlet-fake-provider",
    about = "A fake model provider on loopback with a real provider's latency, rate limits and failures",
    after_help = "Prints `listening on http://127.0.0.1:PORT` once bound; serves until SIGINT or SIGTERM, then writes the ledger (`--ledger`). The ledger is also at GET /_fake/ledger.\n\nA call may carry the answer to return instead of a generated one: `x-gauntlet-answer` (the exact body, standard base64 with padding) and `x-gauntlet-answer-type` (`application/json` or `text/event-stream`). It is delivered with the same latency and faults as any answer, billed the usage it states, and refused with a 400 naming the header when malformed."
)]
pub struct Flags {
    /// A config file (TOML, or JSON when it ends in `.json`); the flags below set
    /// values over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where to listen: a loopback address.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Write the ledger here as JSON on SIGINT or SIGTERM (the file must not exist).
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Time to the first byte: `none`, `MS`, `uniform:MIN:MAX`, `lognormal:MEDIAN:SIGMA`.
    #[arg(long, value_name = "LATENCY")]
    pub latency: Option<Latency>,
    /// Between a stream's events, spelled as `--latency`.
    #[arg(long, value_name = "LATENCY")]
    pub chunk_latency: Option<Latency>,
    /// Time to the first byte of a 429 or 5xx, spelled as `--latency` (default: the
    /// answer's latency).
    #[arg(long, value_name = "LATENCY")]
    pub fault_latency: Option<Latency>,
    /// Calls each key may make in any 60 seconds.
    #[arg(long, value_name = "N")]
    pub requests_per_minute: Option<u32>,
    /// Probability of a 429 whatever the key's budget.
    #[arg(long, value_name = "P")]
    pub rate_limited: Option<f64>,
    /// The `retry-after` of those 429s.
    #[arg(long, value_name = "SECS")]
    pub retry_after_secs: Option<u64>,
    /// Probability of a 5xx.
    #[arg(long, value_name = "P")]
    pub server_error: Option<f64>,
    /// The 5xx statuses drawn from, comma-separated.
    #[arg(long, value_name = "STATUSES", value_delimiter = ',')]
    pub server_error_statuses: Option<Vec<u16>>,
    /// Probability that an answer is cut: a stream before its terminating event, a
    /// whole answer short of its content-length.
    #[arg(long, value_name = "P")]
    pub disconnect: Option<f64>,
    /// How many events a cut stream sends (drawn when not given).
    #[arg(long, value_name = "N")]
    pub disconnect_after_events: Option<usize>,
    /// Probability that a stream ends with its protocol's error event in place of its
    /// terminating one.
    #[arg(long, value_name = "P")]
    pub stream_error: Option<f64>,
    /// Content pieces (output tokens) of every generated answer.
    #[arg(long, value_name = "N")]
    pub answer_chunks: Option<u32>,
}

impl Flags {
    /// The config file's values (or the defaults) with the flags' over them, checked.
    pub fn config(&self) -> Result<Config, ConfigError> {
        let mut c = match &self.config {
            Some(file) => Config::load(file)?,
            None => Config::default(),
        };
        let f = &mut c.faults;
        set(&mut c.seed, self.seed);
        set(&mut c.latency, self.latency);
        set(&mut c.chunk_latency, self.chunk_latency);
        if self.fault_latency.is_some() {
            c.fault_latency = self.fault_latency;
        }
        set(&mut f.rate_limited, self.rate_limited);
        set(&mut f.retry_after_secs, self.retry_after_secs);
        set(&mut f.server_error, self.server_error);
        set(
            &mut f.server_error_statuses,
            self.server_error_statuses.clone(),
        );
        set(&mut f.disconnect, self.disconnect);
        set(&mut f.stream_error, self.stream_error);
        if self.disconnect_after_events.is_some() {
            f.disconnect_after_events = self.disconnect_after_events;
        }
        if self.requests_per_minute.is_some() {
            c.requests_per_minute = self.requests_per_minute;
        }
        set(&mut c.answer_chunks, self.answer_chunks);
        let origin = match &self.config {
            Some(file) => format!("{} with flags", file.display()),
            None => "flags".to_owned(),
        };
        c.check(&origin)?;
        Ok(c)
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_set_values_over_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("fake.toml");
        std::fs::write(&file, "seed = 1\n[faults]\ndisconnect = 0.5\n").expect("write");
        let flags = Flags::try_parse_from([
            "gauntlet-fake-provider",
            "--config",
            &file.display().to_string(),
            "--seed",
            "9",
            "--latency",
            "lognormal:2000:0.5",
            "--server-error-statuses",
            "500,529",
            "--fault-latency",
            "uniform:10:20",
            "--stream-error",
            "0.25",
        ])
        .expect("flags parse");
        let c = flags.config().expect("config");
        assert_eq!(c.seed, 9);
        assert_eq!(c.faults.disconnect, 0.5);
        assert_eq!(c.faults.server_error_statuses, vec![500, 529]);
        assert_eq!(c.faults.stream_error, 0.25);
        assert_eq!(
            c.fault_latency,
            Some(Latency::Uniform {
                min_ms: 10,
                max_ms: 20
            })
        );
        assert_eq!(
            c.latency,
            Latency::Lognormal {
                median_ms: 2000.0,
                sigma: 0.5
            }
        );
        let bad = Flags::try_parse_from(["gauntlet-fake-provider", "--disconnect", "2"])
            .expect("flags parse");
        let err = bad.config().expect_err("not a probability").to_string();
        assert!(err.starts_with("flags: `faults.disconnect`"), "{err}");
        let both = Flags::try_parse_from([
            "gauntlet-fake-provider",
            "--disconnect",
            "0.6",
            "--stream-error",
            "0.6",
        ])
        .expect("flags parse");
        let err = both.config().expect_err("more than certain").to_string();
        assert!(err.starts_with("flags: `faults.stream_error`"), "{err}");
        assert!(Flags::try_parse_from(["gauntlet-fake-provider", "--latency", "soon"]).is_err());
    }
}
