//! Checking a step's expectations against what it yielded. Pure: no I/O.

use super::spec::Expect;

/// What a step yielded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    pub status: Option<u16>,
    pub exit: Option<i32>,
    /// The http body or the cli stdout.
    pub stdout: String,
    pub stderr: String,
    /// The value `contains`, `equals` and `not_contains` look at: the http body, the
    /// cli stdout, or the browser step's text.
    pub value: String,
}

/// An expectation of a step that did not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected {field} {want}, saw {saw}")]
pub struct Unmet {
    /// The expectation's field in the flow file (`status`, `contains`, …).
    pub field: &'static str,
    pub want: String,
    pub saw: String,
}

/// The first expectation that does not hold.
///
/// `equals` compares exactly, except that a trailing line break of a body or stdout
/// is not part of the value (`echo 3` yields `3`).
pub fn check(expect: &Expect, seen: &Observed) -> Result<(), Unmet> {
    let unmet = |field, want: String, saw: String| Err(Unmet { field, want, saw });
    if let Some(want) = expect.status {
        if seen.status != Some(want) {
            return unmet(
                "status",
                want.to_string(),
                opt(seen.status.map(|s| s.to_string())),
            );
        }
    }
    if let Some(want) = expect.exit {
        if seen.exit != Some(want) {
            return unmet(
                "exit",
                want.to_string(),
                opt(seen.exit.map(|s| s.to_string())),
            );
        }
    }
    let contains = |field, want: &Option<String>, hay: &str| match want {
        Some(w) if !hay.contains(w.as_str()) => unmet(field, format!("{w:?}"), excerpt(hay)),
        _ => Ok(()),
    };
    contains("body_contains", &expect.body_contains, &seen.stdout)?;
    contains("stdout_contains", &expect.stdout_contains, &seen.stdout)?;
    contains("stderr_contains", &expect.stderr_contains, &seen.stderr)?;
    contains("contains", &expect.contains, &seen.value)?;
    if let Some(want) = &expect.equals {
        let v = seen.value.trim_end_matches(['\n', '\r']);
        if v != want {
            return unmet("equals", format!("{want:?}"), excerpt(v));
        }
    }
    if let Some(unwanted) = &expect.not_contains {
        if seen.value.contains(unwanted.as_str()) {
            return unmet(
                "not_contains",
                format!("{unwanted:?}"),
                excerpt(&seen.value),
            );
        }
    }
    Ok(())
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "nothing".into())
}

/// A quoted value, cut to stay readable in one stderr line.
pub fn excerpt(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return format!("{s:?}");
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?} (… {} bytes in all)", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(value: &str) -> Observed {
        Observed {
            status: Some(201),
            exit: None,
            stdout: value.into(),
            stderr: String::new(),
            value: value.into(),
        }
    }

    #[test]
    fn each_expectation_can_fail() {
        let ok = Expect {
            status: Some(201),
            body_contains: Some("milk".into()),
            contains: Some("mi".into()),
            not_contains: Some("eggs".into()),
            ..Expect::default()
        };
        assert_eq!(check(&ok, &seen("milk")), Ok(()));
        let e = check(
            &Expect {
                status: Some(200),
                ..Expect::default()
            },
            &seen("x"),
        );
        assert_eq!(
            e.map_err(|u| u.to_string()),
            Err("expected status 200, saw 201".into())
        );
        let e = check(
            &Expect {
                exit: Some(0),
                ..Expect::default()
            },
            &seen("x"),
        );
        assert_eq!(
            e.map_err(|u| u.to_string()),
            Err("expected exit 0, saw nothing".into())
        );
        let e = check(
            &Expect {
                equals: Some("1".into()),
                ..Expect::default()
            },
            &seen("0"),
        );
        assert_eq!(
            e.map_err(|u| u.to_string()),
            Err(r#"expected equals "1", saw "0""#.into())
        );
        let e = check(
            &Expect {
                not_contains: Some("il".into()),
                ..Expect::default()
            },
            &seen("milk"),
        );
        assert!(e.is_err());
    }

    #[test]
    fn equals_ignores_only_a_trailing_line_break() {
        let eq = |w: &str| Expect {
            equals: Some(w.into()),
            ..Expect::default()
        };
        assert_eq!(check(&eq("3"), &seen("3\n")), Ok(()));
        assert!(check(&eq("3"), &seen(" 3\n")).is_err());
        assert!(check(&eq("3"), &seen("33")).is_err());
    }
}
