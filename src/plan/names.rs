//! The one naming scheme: `<suite>::<what>::<variant>`, stable at list time, so that
//! `cargo nextest run -E 'test(api-ledger)'` and a run's manifest mean the same trial
//! on every machine. Scorecard probes name themselves
//! ([`crate::spec::scorecard::LoadedProbe::trial_name`]): `scorecard::<dimension>::<probe>`.

use crate::spec::challenge::Profile;

/// A qa trial: `qa::<app>::<capability>`, and `::r<k>` for repeat k when a capability
/// is run more than once.
pub fn qa(app: &str, capability: &str, repeat: Option<u32>) -> String {
    // Built by hand, not with `format!`: a 10,000-trial plan names every trial each time
    // nextest lists the binary, and the formatting machinery was most of the naming.
    let mut name = String::with_capacity(4 + app.len() + 2 + capability.len() + 14);
    name.push_str("qa::");
    name.push_str(app);
    name.push_str("::");
    name.push_str(capability);
    if let Some(k) = repeat {
        name.push_str("::r");
        name.push_str(itoa::Buffer::new().format(k));
    }
    name
}

/// A trial's group — its name without the `::r<k>` of a repeat — and its repeat (1
/// when the name has none): what reports count a capability's repeats under.
pub fn group_of(trial: &str) -> (&str, u32) {
    if let Some((head, tail)) = trial.rsplit_once("::r") {
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(k) = tail.parse() {
                return (head, k);
            }
        }
    }
    (trial, 1)
}

/// A challenge trial: `challenge::<id>::<profile>`.
pub fn challenge(id: &str, profile: Profile) -> String {
    format!("challenge::{id}::{profile}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qa_names_spell_app_capability_and_repeat() {
        assert_eq!(qa("api-ledger", "balance", None), "qa::api-ledger::balance");
        for k in [0, 1, 9, 10, 99, 100, 4_294_967_295] {
            let name = qa("a", "b", Some(k));
            assert_eq!(name, format!("qa::a::b::r{k}"));
            assert_eq!(group_of(&name), ("qa::a::b", k));
        }
    }

    #[test]
    fn a_repeat_suffix_names_the_group() {
        assert_eq!(group_of("qa::a::b::r12"), ("qa::a::b", 12));
        assert_eq!(group_of("qa::a::b"), ("qa::a::b", 1));
        assert_eq!(group_of("challenge::x::none"), ("challenge::x::none", 1));
        assert_eq!(group_of("qa::a::r"), ("qa::a::r", 1));
        assert_eq!(group_of("qa::a::rx"), ("qa::a::rx", 1));
    }
}
