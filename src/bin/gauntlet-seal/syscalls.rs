//! System calls the program may not make, refused by a seccomp filter installed just
//! before it runs.
//!
//! Namespaces separate what the kernel keeps per namespace; a few things it keeps per
//! user, and every sandbox runs as the same one. The kernel keyring is one of them: a
//! key a program adds to its user's keyring is there for the next sandbox, which would
//! let a claimed test count its gate runs. So `keyctl`, `add_key` and `request_key` fail
//! with ENOSYS, as in Docker's default profile: programs treat the keyring as absent.
//!
//! Two calls reach into another process of the same user, which is every process of
//! the sandbox: `pidfd_getfd` copies a descriptor out of it (a browser's connection to
//! the app, written on by another program after the relay named the browser as its
//! holder), and `process_vm_writev` writes into its memory. No program of a trial needs
//! either to do its work; both fail with ENOSYS as well.
//!
//! User namespaces stay allowed: Codex runs each of its tool commands in a bubblewrap
//! sandbox of its own, which needs one (docs/sealing.md says what that leaves open).

use crate::failure::{At, Failure};
use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule, TargetArch};

/// The filter, compiled before the fork (compiling allocates) and applied in the
/// program's process after `no_new_privs`.
pub struct Filters {
    absent: BpfProgram,
}

impl Filters {
    pub fn compile() -> Result<Filters, Failure> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .at(format!("seccomp for {}", std::env::consts::ARCH))?;
        let absent: BTreeMap<i64, Vec<SeccompRule>> = [
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_pidfd_getfd,
            libc::SYS_process_vm_writev,
        ]
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
        let absent = SeccompFilter::new(
            absent,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::ENOSYS as u32),
            arch,
        )
        .and_then(BpfProgram::try_from)
        .at("compiling the seccomp filter")?;
        Ok(Filters { absent })
    }

    /// Install it on the calling thread (which must have `no_new_privs`).
    pub fn apply(&self) -> Result<(), Failure> {
        seccompiler::apply_filter(&self.absent).at("seccomp")
    }
}
