//! Prompt composition: base prompt, profile fragment, challenge prompt, in that order.
//! Each layer is kept as bytes with its path and SHA-256; the rendered prompt is their
//! concatenation and is hashed too, so a record shows which layer changed.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::spec::SpecError;

/// One layer: where it came from (relative to `challenges/`), its text and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PromptLayer {
    pub path: String,
    #[serde(skip)]
    pub text: String,
    pub sha256: String,
}

impl PromptLayer {
    pub fn load(root: &Path, rel: &str) -> Result<PromptLayer, SpecError> {
        let file = root.join(rel);
        let bytes = std::fs::read(&file).map_err(|source| SpecError::Io {
            file: file.clone(),
            source,
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|e| SpecError::invalid(&file, "(file)", format!("not UTF-8: {e}")))?;
        if text.trim().is_empty() {
            return Err(SpecError::invalid(
                &file,
                "(file)",
                "a prompt layer is empty",
            ));
        }
        Ok(PromptLayer::from_text(rel, text))
    }

    pub fn from_text(path: &str, text: String) -> PromptLayer {
        PromptLayer {
            path: path.to_owned(),
            sha256: crate::hash::sha256(text.as_bytes()),
            text,
        }
    }
}

/// The prompt one trial is given, and the provenance of each part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RenderedPrompt {
    pub base: PromptLayer,
    pub profile: PromptLayer,
    pub challenge: PromptLayer,
    #[serde(skip)]
    pub text: String,
    pub sha256: String,
    /// Where the rendered prompt was saved, relative to the trial directory.
    pub path: String,
}

/// The separator between layers: a rule, so each layer reads as its own section.
const SEPARATOR: &str = "\n\n---\n\n";

pub fn render(
    base: &PromptLayer,
    profile: &PromptLayer,
    challenge: &PromptLayer,
) -> RenderedPrompt {
    let text = [
        base.text.trim_end(),
        profile.text.trim_end(),
        challenge.text.as_str(),
    ]
    .join(SEPARATOR);
    RenderedPrompt {
        base: base.clone(),
        profile: profile.clone(),
        challenge: challenge.clone(),
        sha256: crate::hash::sha256(text.as_bytes()),
        text,
        path: format!("workspace/{}", super::RENDERED_PROMPT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_appear_in_order_and_the_challenge_layer_is_verbatim() {
        let l = |p: &str, t: &str| PromptLayer::from_text(p, t.into());
        let r = render(
            &l("b", "BASE\n"),
            &l("p", "PROFILE"),
            &l("c", "TASK\n  exact\n"),
        );
        assert_eq!(r.text, "BASE\n\n---\n\nPROFILE\n\n---\n\nTASK\n  exact\n");
        assert!(r.text.ends_with(&r.challenge.text));
        assert_eq!(r.sha256, crate::hash::sha256(r.text.as_bytes()));
    }
}
