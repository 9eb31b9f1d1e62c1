//! Deterministic token metering for scripted replies.
//!
//! A scripted model has no tokenizer; counting bytes / 4 (rounded up) is close to what
//! real tokenizers give for English and code, and depends only on content, so the same
//! trial meters the same tokens on every run and machine.

use super::log::Tokens;

/// Tokens for `bytes` bytes of content: ceil(bytes / 4).
pub(crate) fn tokens_for_bytes(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(4)).unwrap_or(u64::MAX)
}

/// Scripted usage: input from the request's messages, output from the reply.
pub(crate) fn scripted(input_bytes: usize, output_bytes: usize) -> Tokens {
    Tokens {
        input: Some(tokens_for_bytes(input_bytes)),
        output: Some(tokens_for_bytes(output_bytes)),
        cached_input: None,
        reasoning: None,
        cache_write: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_to_whole_tokens() {
        assert_eq!(tokens_for_bytes(0), 0);
        assert_eq!(tokens_for_bytes(1), 1);
        assert_eq!(tokens_for_bytes(4), 1);
        assert_eq!(tokens_for_bytes(5), 2);
    }
}
