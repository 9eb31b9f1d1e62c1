//! One file of a scaffold, shared by what makes the scaffold and what writes it.

/// Where a file goes, relative to the new repository, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: &'static str,
    pub contents: String,
}
