//! The scaffold's files, embedded: one `include_str!` per file, so that the list is
//! explicit (a template nobody lists is never written) and every file the scaffold
//! needs is a file `cargo package` must ship (`templates/init/`). A file's place in the
//! new repository is its path under `templates/init/`, but for names a package of this
//! repository must not carry as they are: a leading `.` (`config/` is `.config/`,
//! `github/` is `.github/`, `gitignore` is `.gitignore`), and `.tmpl` on the files
//! that hold placeholders (a `Cargo.toml` below this package would be a package of its
//! own to cargo, and left out of this one).

/// The CI workflow, whose install command is always the published one.
pub(super) const WORKFLOW: &str = ".github/workflows/gauntlet.yml";

/// Every file, by its path in the new repository.
pub(super) const ALL: &[(&str, &str)] = &[
    (
        ".config/nextest.toml",
        include_str!("../../templates/init/config/nextest.toml"),
    ),
    (
        ".github/workflows/gauntlet.yml",
        include_str!("../../templates/init/github/workflows/gauntlet.yml.tmpl"),
    ),
    (".gitignore", include_str!("../../templates/init/gitignore")),
    (
        "Cargo.toml",
        include_str!("../../templates/init/Cargo.toml.tmpl"),
    ),
    (
        "README.md",
        include_str!("../../templates/init/README.md.tmpl"),
    ),
    (
        "apps/pantry/app.json",
        include_str!("../../templates/init/apps/pantry/app.json"),
    ),
    (
        "apps/pantry/corpus.json",
        include_str!("../../templates/init/apps/pantry/corpus.json"),
    ),
    (
        "apps/pantry/flows/add-item.json",
        include_str!("../../templates/init/apps/pantry/flows/add-item.json"),
    ),
    (
        "apps/pantry/flows/fast-under-load.json",
        include_str!("../../templates/init/apps/pantry/flows/fast-under-load.json"),
    ),
    (
        "apps/pantry/flows/health.json",
        include_str!("../../templates/init/apps/pantry/flows/health.json"),
    ),
    (
        "apps/pantry/flows/reject-invalid.json",
        include_str!("../../templates/init/apps/pantry/flows/reject-invalid.json"),
    ),
    (
        "apps/pantry/server.py",
        include_str!("../../templates/init/apps/pantry/server.py"),
    ),
    (
        "benches-as-tests/challenge.rs",
        include_str!("../../templates/init/benches-as-tests/challenge.rs"),
    ),
    (
        "benches-as-tests/qa.rs",
        include_str!("../../templates/init/benches-as-tests/qa.rs"),
    ),
    (
        "challenges/base-prompt.md",
        include_str!("../../templates/init/challenges/base-prompt.md"),
    ),
    (
        "challenges/pantry-restock/README.md",
        include_str!("../../templates/init/challenges/pantry-restock/README.md"),
    ),
    (
        "challenges/pantry-restock/challenge-prompt.md",
        include_str!("../../templates/init/challenges/pantry-restock/challenge-prompt.md"),
    ),
    (
        "challenges/pantry-restock/challenge.yaml",
        include_str!("../../templates/init/challenges/pantry-restock/challenge.yaml"),
    ),
    (
        "challenges/pantry-restock/flows/default.json",
        include_str!("../../templates/init/challenges/pantry-restock/flows/default.json"),
    ),
    (
        "challenges/pantry-restock/workspace_template/delivery.csv",
        include_str!(
            "../../templates/init/challenges/pantry-restock/workspace_template/delivery.csv"
        ),
    ),
    (
        "challenges/profiles/all.md",
        include_str!("../../templates/init/challenges/profiles/all.md"),
    ),
    (
        "challenges/profiles/none.md",
        include_str!("../../templates/init/challenges/profiles/none.md"),
    ),
    (
        "challenges/profiles/skills.md",
        include_str!("../../templates/init/challenges/profiles/skills.md"),
    ),
    (
        "challenges/skills/README.md",
        include_str!("../../templates/init/challenges/skills/README.md"),
    ),
    (
        "challenges/skills/bundle.yaml",
        include_str!("../../templates/init/challenges/skills/bundle.yaml"),
    ),
    (
        "challenges/skills/pantry.md",
        include_str!("../../templates/init/challenges/skills/pantry.md"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/init/src/lib.rs"),
    ),
];
