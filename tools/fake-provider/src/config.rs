//! What a fake provider is started with, from a TOML or JSON file, command-line flags,
//! or code; every value is checked before it serves, and a bad one is named with
//! where it came from and its field.
//!
//! ```toml
//! seed = 7
//! answer_chunks = 8
//! latency = { kind = "lognormal", median_ms = 2000, sigma = 0.5 }
//! chunk_latency = { kind = "fixed", ms = 20 }
//! fault_latency = { kind = "fixed", ms = 100 }
//! requests_per_minute = 600
//!
//! [faults]
//! rate_limited = 0.05
//! retry_after_secs = 1
//! server_error = 0.01
//! server_error_statuses = [500, 502, 503, 529]
//! disconnect = 0.01
//! stream_error = 0.01
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::latency::Latency;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Every call's latency and fault are drawn from this seed and the call's number.
    pub seed: u64,
    /// Time to the first byte: a whole answer's, and a stream's response head.
    pub latency: Latency,
    /// Between one event of a stream and the next.
    pub chunk_latency: Latency,
    /// Time to the first byte of a 429 or a 5xx. `None`: the call's `latency`, as a
    /// provider that fails after working on the call. A gateway that refuses calls
    /// before any model sees them answers far sooner, which this models.
    pub fault_latency: Option<Latency>,
    /// Calls each API key may make in any 60 seconds; the next is answered 429 with a
    /// `retry-after` of the seconds until the oldest leaves the window. `None`: no limit.
    pub requests_per_minute: Option<u32>,
    pub faults: Faults,
    /// Content pieces of every answer, each one output token (and one event of a
    /// stream): the output tokens a call is billed.
    pub answer_chunks: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            seed: 0,
            latency: Latency::None,
            chunk_latency: Latency::None,
            fault_latency: None,
            requests_per_minute: None,
            faults: Faults::default(),
            answer_chunks: 8,
        }
    }
}

/// Failures drawn per call, whatever the key's budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Probability that a call is answered 429 (a provider out of capacity for
    /// everyone), with `retry-after: retry_after_secs`.
    pub rate_limited: f64,
    pub retry_after_secs: u64,
    /// Probability that a call is answered with one of `server_error_statuses`, drawn
    /// evenly; 529 is Anthropic's "overloaded" and is 503 in the OpenAI protocols,
    /// which have no 529.
    pub server_error: f64,
    pub server_error_statuses: Vec<u16>,
    /// Probability that an answer answered 200 is cut: a stream's connection closed
    /// after some of its events and before its terminating one, a whole answer's after
    /// part of its body (drawn evenly, its full `content-length` declared).
    pub disconnect: f64,
    /// How many events a cut stream sends (at most all but its last); `None`: drawn
    /// evenly from 1 to all but the last.
    pub disconnect_after_events: Option<usize>,
    /// Probability that a stream answered 200 fails mid-stream: after some of its
    /// events (drawn evenly from 1 to all but the last) it sends its protocol's error
    /// event in place of its terminating one, and ends. Whole answers are not touched.
    pub stream_error: f64,
}

impl Default for Faults {
    fn default() -> Faults {
        Faults {
            rate_limited: 0.0,
            retry_after_secs: 1,
            server_error: 0.0,
            server_error_statuses: vec![500, 502, 503, 529],
            disconnect: 0.0,
            disconnect_after_events: None,
            stream_error: 0.0,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not a fake provider config: {reason}")]
    Parse { file: PathBuf, reason: String },
    /// `origin` is the file, or `flags`.
    #[error("{origin}: `{field}`: {reason}")]
    Invalid {
        origin: String,
        field: &'static str,
        reason: String,
    },
}

impl Config {
    /// A config file: JSON when its name ends in `.json`, TOML otherwise. Checked.
    pub fn load(file: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        let parse = |reason: String| ConfigError::Parse {
            file: file.to_path_buf(),
            reason,
        };
        let config: Config = if file.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| parse(e.to_string()))?
        } else {
            toml::from_str(&text).map_err(|e| parse(e.message().to_owned()))?
        };
        config.check(&file.display().to_string())?;
        Ok(config)
    }

    /// Whether every value can be served; `origin` names where they came from.
    pub fn check(&self, origin: &str) -> Result<(), ConfigError> {
        let invalid = |field: &'static str, reason: String| ConfigError::Invalid {
            origin: origin.to_owned(),
            field,
            reason,
        };
        for (field, latency) in [
            ("latency", &self.latency),
            ("chunk_latency", &self.chunk_latency),
            (
                "fault_latency",
                self.fault_latency.as_ref().unwrap_or(&Latency::None),
            ),
        ] {
            if let Some(problem) = latency.problem() {
                return Err(invalid(field, problem));
            }
        }
        if self.requests_per_minute == Some(0) {
            return Err(invalid(
                "requests_per_minute",
                "0 would refuse every call; leave it out for no limit".into(),
            ));
        }
        if !(1..=10_000).contains(&self.answer_chunks) {
            return Err(invalid(
                "answer_chunks",
                format!("{} is not between 1 and 10000", self.answer_chunks),
            ));
        }
        let f = &self.faults;
        for (field, p) in [
            ("faults.rate_limited", f.rate_limited),
            ("faults.server_error", f.server_error),
            ("faults.disconnect", f.disconnect),
            ("faults.stream_error", f.stream_error),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(invalid(field, format!("{p} is not a probability (0 to 1)")));
            }
        }
        // One draw decides between each pair: together they cannot exceed certainty.
        for ((first, p), (second, q)) in [
            (
                ("faults.rate_limited", f.rate_limited),
                ("faults.server_error", f.server_error),
            ),
            (
                ("faults.disconnect", f.disconnect),
                ("faults.stream_error", f.stream_error),
            ),
        ] {
            if p + q > 1.0 {
                return Err(invalid(
                    second,
                    format!("{q} with {first} {p} is more than 1"),
                ));
            }
        }
        if f.server_error > 0.0 && f.server_error_statuses.is_empty() {
            return Err(invalid(
                "faults.server_error_statuses",
                "is empty while faults.server_error is above 0".into(),
            ));
        }
        if let Some(bad) = f
            .server_error_statuses
            .iter()
            .find(|s| !(500..=599).contains(*s))
        {
            return Err(invalid(
                "faults.server_error_statuses",
                format!("{bad} is not a 5xx status"),
            ));
        }
        if f.disconnect_after_events == Some(0) {
            return Err(invalid(
                "faults.disconnect_after_events",
                "0: a cut stream sends at least one event".into(),
            ));
        }
        if f.retry_after_secs > 3600 {
            return Err(invalid(
                "faults.retry_after_secs",
                format!("{} is over an hour", f.retry_after_secs),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_toml_file_and_a_json_file_say_the_same() {
        let dir = tempfile::tempdir().expect("tempdir");
        let toml = dir.path().join("fake.toml");
        std::fs::write(
            &toml,
            r#"
seed = 7
latency = { kind = "lognormal", median_ms = 2000, sigma = 0.5 }
chunk_latency = { kind = "fixed", ms = 20 }
fault_latency = { kind = "fixed", ms = 100 }
requests_per_minute = 600
[faults]
rate_limited = 0.05
disconnect = 0.01
stream_error = 0.02
"#,
        )
        .expect("write");
        let json = dir.path().join("fake.json");
        std::fs::write(
            &json,
            r#"{"seed": 7, "latency": {"kind": "lognormal", "median_ms": 2000, "sigma": 0.5},
                "chunk_latency": {"kind": "fixed", "ms": 20}, "requests_per_minute": 600,
                "fault_latency": {"kind": "fixed", "ms": 100},
                "faults": {"rate_limited": 0.05, "disconnect": 0.01, "stream_error": 0.02}}"#,
        )
        .expect("write");
        let a = Config::load(&toml).expect("toml loads");
        assert_eq!(a, Config::load(&json).expect("json loads"));
        assert_eq!(a.faults.retry_after_secs, 1);
        assert_eq!(a.answer_chunks, 8);
        assert_eq!(a.fault_latency, Some(Latency::Fixed { ms: 100 }));
        assert_eq!(a.faults.stream_error, 0.02);
        assert_eq!(
            a.latency,
            Latency::Lognormal {
                median_ms: 2000.0,
                sigma: 0.5
            }
        );
    }

    #[test]
    fn a_bad_value_is_named_with_its_file_and_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("fake.toml");
        for (text, field) in [
            ("[faults]\ndisconnect = 1.5\n", "`faults.disconnect`"),
            (
                "[faults]\nrate_limited = 0.6\nserver_error = 0.6\n",
                "`faults.server_error`",
            ),
            (
                "[faults]\nserver_error_statuses = [404]\n",
                "`faults.server_error_statuses`",
            ),
            (
                "latency = { kind = \"uniform\", min_ms = 9, max_ms = 1 }\n",
                "`latency`",
            ),
            ("requests_per_minute = 0\n", "`requests_per_minute`"),
            (
                "[faults]\ndisconnect = 0.5\nstream_error = 0.6\n",
                "`faults.stream_error`",
            ),
            (
                "fault_latency = { kind = \"fixed\", ms = 3600001 }\n",
                "`fault_latency`",
            ),
        ] {
            std::fs::write(&file, text).expect("write");
            let err = Config::load(&file).expect_err(text).to_string();
            assert!(err.starts_with(&file.display().to_string()), "{err}");
            assert!(err.contains(field), "{err}");
        }
        std::fs::write(&file, "latencyy = 3\n").expect("write");
        let err = Config::load(&file).expect_err("unknown key").to_string();
        assert!(err.contains("latencyy"), "{err}");
        std::fs::write(&file, "latency = { kind = \"gamma\" }\n").expect("write");
        assert!(Config::load(&file).is_err());
    }
}
