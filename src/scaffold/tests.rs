use super::*;

fn published(package: &str) -> Options {
    Options {
        package: package.into(),
        gauntlet: Dependency::Published,
    }
}

/// The scaffold written into a fresh directory.
fn written(opts: &Options) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(tmp.path(), &files(opts)).expect("an empty directory takes the scaffold");
    tmp
}

fn contents<'a>(files: &'a [File], path: &str) -> &'a str {
    &files
        .iter()
        .find(|f| f.path == path)
        .unwrap_or_else(|| panic!("the scaffold has no {path}"))
        .contents
}

#[test]
fn every_template_is_listed_once_and_every_placeholder_is_filled() {
    let dir = crate::binaries::repo_root().join("templates/init");
    let mut on_disk = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .expect("templates/init reads")
            .flatten()
        {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                on_disk.push(e.path());
            }
        }
    }
    assert_eq!(
        on_disk.len(),
        templates::ALL.len(),
        "a file under {} that templates::ALL does not list is never written",
        dir.display()
    );
    let mut paths: Vec<&str> = templates::ALL.iter().map(|(p, _)| *p).collect();
    paths.sort_unstable();
    paths.dedup();
    assert_eq!(paths.len(), templates::ALL.len(), "a path listed twice");
    for opts in [
        published("shop"),
        Options {
            package: "shop".into(),
            gauntlet: Dependency::Path("/src/gauntlet".into()),
        },
    ] {
        for f in files(&opts) {
            assert!(
                !f.contents.contains("%%"),
                "{}: a placeholder is left",
                f.path
            );
        }
    }
}

#[test]
fn the_manifest_depends_on_this_version_or_on_the_checkout_named() {
    let manifest = |opts: &Options| -> toml::Value {
        toml::from_str(contents(&files(opts), "Cargo.toml")).expect("Cargo.toml is TOML")
    };
    let m = manifest(&published("shop"));
    assert_eq!(m["package"]["name"].as_str(), Some("shop"));
    assert_eq!(
        m["dev-dependencies"]["gauntlet"].as_str(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let m = manifest(&Options {
        package: "shop".into(),
        gauntlet: Dependency::Path(r#"/src/a "quoted" \ dir"#.into()),
    });
    assert_eq!(
        m["dev-dependencies"]["gauntlet"]["path"].as_str(),
        Some(r#"/src/a "quoted" \ dir"#)
    );
    // Each suite's target is gauntlet's harness.
    for t in m["test"].as_array().expect("test targets") {
        assert_eq!(t["harness"].as_bool(), Some(false), "{t}");
    }
}

#[test]
fn the_readmes_first_screen_holds_exactly_the_two_commands() {
    let readme = contents(&files(&published("shop")), "README.md").to_owned();
    let first = readme
        .split("\n---\n")
        .next()
        .expect("a first screen above the rule");
    assert!(first.lines().count() <= 24, "{first}");
    let blocks: Vec<&str> = first.split("```").skip(1).step_by(2).collect();
    assert_eq!(blocks.len(), 1, "one block of commands: {first}");
    let commands: Vec<&str> = blocks[0]
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(" #").next().unwrap_or(l).trim())
        .collect();
    assert_eq!(
        commands,
        ["gauntlet run", "cargo nextest run --profile ci"],
        "{first}"
    );
    // The install command is there, below the first screen.
    assert!(
        readme.contains(crate::binaries::INSTALL_HELPERS),
        "{readme}"
    );
    let from_checkout = contents(
        &files(&Options {
            package: "shop".into(),
            gauntlet: Dependency::Path("/src/my gauntlet".into()),
        }),
        "README.md",
    )
    .to_owned();
    assert!(
        from_checkout.contains("cargo install --locked --path '/src/my gauntlet'"),
        "{from_checkout}"
    );
}

#[test]
fn the_workflow_installs_the_published_programs_whatever_the_dependency() {
    let wf = contents(
        &files(&Options {
            package: "shop".into(),
            gauntlet: Dependency::Path("/src/gauntlet".into()),
        }),
        templates::WORKFLOW,
    )
    .to_owned();
    assert!(
        wf.contains(&format!(
            "{} --root \"$RUNNER_TEMP/gauntlet\"",
            crate::binaries::INSTALL_HELPERS
        )),
        "{wf}"
    );
    assert!(!wf.contains("/src/gauntlet"), "{wf}");
}

/// The sample app and the challenge load as gauntlet loads them before any trial: the
/// app's frozen hash holds, each capability has its script, the bundle's hashes hold,
/// and the challenge names the app.
#[test]
fn the_scaffolds_app_and_challenge_load_and_the_app_is_frozen_as_written() {
    let tmp = written(&published("shop"));
    let apps = crate::plan::load_apps_checked(&tmp.path().join("apps")).expect("apps load");
    assert_eq!(apps.len(), 1);
    let app = &apps[0];
    assert_eq!(app.app.name, APP);
    assert!(app.app.frozen);
    use crate::spec::CapabilityKind as K;
    for kind in [K::Feature, K::Negative, K::Ambiguous] {
        assert!(
            app.corpus.capabilities.iter().any(|c| c.kind == kind),
            "no {kind:?} capability"
        );
    }
    for c in &app.corpus.capabilities {
        assert!(app.scripts.contains_key(&c.id), "no script for {}", c.id);
    }
    let challenges =
        crate::spec::challenge::load(&tmp.path().join("challenges")).expect("challenges load");
    let ids: Vec<&str> = challenges
        .list
        .iter()
        .map(|c| c.manifest.id.as_str())
        .collect();
    assert_eq!(ids, [CHALLENGE]);
    assert_eq!(challenges.list[0].manifest.app, APP);

    // A changed byte of the app is refused by the loader, naming the field.
    let server = tmp.path().join("apps").join(APP).join("server.py");
    let mut text = std::fs::read_to_string(&server).expect("server.py");
    text.push('\n');
    std::fs::write(&server, text).expect("write");
    let e = crate::plan::load_apps_checked(&tmp.path().join("apps"))
        .expect_err("a changed frozen app")
        .to_string();
    assert!(e.contains("content_hash"), "{e}");
}

#[test]
fn a_directory_that_holds_anything_is_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("repo");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join(".keep"), "mine").expect("write");
    let e = write(&dir, &files(&published("repo"))).expect_err("not empty");
    let said = e.to_string();
    assert!(said.contains(&dir.display().to_string()), "{said}");
    assert!(
        said.contains("is not empty") && said.contains(".keep"),
        "{said}"
    );
    let left: Vec<_> = std::fs::read_dir(&dir).expect("read").flatten().collect();
    assert_eq!(left.len(), 1, "only the file that was there");
    assert_eq!(
        std::fs::read_to_string(dir.join(".keep")).expect("kept"),
        "mine"
    );

    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    let e = write(&file, &files(&published("x"))).expect_err("a file");
    assert!(e.to_string().contains("is not a directory"), "{e}");

    // A directory that does not exist yet is made, parents and all.
    let fresh = tmp.path().join("new/nested");
    write(&fresh, &files(&published("nested"))).expect("a new directory");
    assert!(fresh.join("Cargo.toml").is_file());
    assert!(fresh.join(".config/nextest.toml").is_file());
}

#[test]
fn a_package_name_is_made_from_any_directory_name() {
    for (dir, name) in [
        ("shop", "shop"),
        ("My Shop", "my-shop"),
        (".tmpAb3_x", "tmpab3_x"),
        ("42-things", "things"),
        ("gauntlet", "gauntlet-trials"),
        ("test", "test-trials"),
        ("fn", "fn-trials"),
        ("---", "agent-trials"),
        ("", "agent-trials"),
        ("café", "caf"),
    ] {
        assert_eq!(package_name(dir), name, "{dir:?}");
    }
}

#[test]
fn a_path_dependency_must_name_a_gauntlet_checkout() {
    let root = crate::binaries::repo_root();
    let abs = root.canonicalize().expect("the checkout, absolute");
    assert_eq!(checkout(&root).expect("this checkout"), abs);
    // No manifest, then another package's: each refused, naming why.
    let tmp = tempfile::tempdir().expect("tempdir");
    for (manifest, said) in [
        (None, "Cargo.toml"),
        (
            Some("[package]\nname = \"other\"\nversion = \"0.1.0\"\n"),
            "`package.name` is `other`",
        ),
        (Some("[workspace]\n"), "`package.name`: missing"),
    ] {
        if let Some(text) = manifest {
            std::fs::write(tmp.path().join("Cargo.toml"), text).expect("write");
        }
        let e = checkout(tmp.path()).expect_err(said).to_string();
        assert!(e.starts_with("--gauntlet-path") && e.contains(said), "{e}");
    }
}
