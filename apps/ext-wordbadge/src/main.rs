//! Placeholder until the app lands; no app.json, so gauntlet does not discover it.
fn main() {}
