//! Nothing here: cargo builds a package only around a library or a binary, and this
//! one exists for its test targets (`benches-as-tests/`), which run the trials of the
//! apps under `apps/` and the challenges under `challenges/`.
