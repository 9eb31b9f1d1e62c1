//! The one naming scheme: `<suite>::<what>::<variant>`, stable at list time, so that
//! `cargo nextest run -E 'test(api-ledger)'` and a run's manifest mean the same trial
//! on every machine. Scorecard probes name themselves
//! ([`crate::spec::scorecard::LoadedProbe::trial_name`]): `scorecard::<dimension>::<probe>`.

use crate::spec::challenge::Profile;

/// A qa trial: `qa::<app>::<capability>`, and `::r<k>` for repeat k when a capability
/// is run more than once.
pub fn qa(app: &str, capability: &str, repeat: Option<u32>) -> String {
    match repeat {
        None => format!("qa::{app}::{capability}"),
        Some(k) => format!("qa::{app}::{capability}::r{k}"),
    }
}

/// A challenge trial: `challenge::<id>::<profile>`.
pub fn challenge(id: &str, profile: Profile) -> String {
    format!("challenge::{id}::{profile}")
}
