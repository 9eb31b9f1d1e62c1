//! Process control below every adapter: the sandbox each sealed process runs in.
//!
//! Nothing here knows about suites, agents or apps: it turns "run this program and
//! let it see exactly these paths" into Linux namespaces (see `docs/sealing.md`).

pub mod accept;
pub mod beneath;
pub mod cargo;
pub mod cgroup;
pub mod helpers;
pub mod lifeline;
pub mod nextest;
pub mod process;
pub mod sandbox;
pub mod shutdown;
pub mod spawned;
pub mod version;
pub mod walk;
pub mod warm;
