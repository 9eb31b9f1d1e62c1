//! The test pages the extension is tried on. Fixed HTML: what they hold is part of
//! the frozen app, so the word counts a test expects never drift.

/// The page served at `path`, if any.
pub fn page(path: &str) -> Option<&'static str> {
    match path {
        "/" => Some(include_str!("pages/index.html")),
        "/plain" => Some(include_str!("pages/plain.html")),
        "/decoy" => Some(include_str!("pages/decoy.html")),
        "/dynamic" => Some(include_str!("pages/dynamic.html")),
        "/empty" => Some(include_str!("pages/empty.html")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_linked_page_exists_and_nothing_is_fetched_from_elsewhere() {
        let index = page("/").unwrap_or_default();
        for path in ["/plain", "/decoy", "/dynamic", "/empty"] {
            assert!(
                index.contains(&format!("href=\"{path}\"")),
                "{path} not linked"
            );
            let html = page(path).unwrap_or_else(|| panic!("{path} missing"));
            for external in ["http://", "https://", "src="] {
                assert!(!html.contains(external), "{path} loads {external}");
            }
        }
        assert_eq!(page("/nope"), None);
    }
}
