//! Standard base64 (RFC 4648, section 4) with padding, decoded strictly: the answer
//! header's one encoding. A dozen lines rather than a dependency, which would change
//! the workspace's lock file for one function.

/// Why a text is not standard, padded base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotBase64 {
    #[error("its length {0} is not a multiple of 4 (standard base64 is padded with `=`)")]
    Length(usize),
    #[error("byte {at} ({byte:?}) is not in the standard base64 alphabet")]
    Alphabet { at: usize, byte: char },
    #[error("padding `=` inside the text, not only at its end")]
    Padding,
    #[error("the last character carries bits beyond the data (not canonical base64)")]
    TrailingBits,
}

fn value(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

pub(crate) fn decode(text: &[u8]) -> Result<Vec<u8>, NotBase64> {
    if text.len() % 4 != 0 {
        return Err(NotBase64::Length(text.len()));
    }
    let pad = text.iter().rev().take_while(|b| **b == b'=').count();
    if pad > 2 {
        return Err(NotBase64::Padding);
    }
    let data = &text[..text.len() - pad];
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for (at, byte) in data.iter().enumerate() {
        let v = match value(*byte) {
            Some(v) => v,
            None if *byte == b'=' => return Err(NotBase64::Padding),
            None => {
                return Err(NotBase64::Alphabet {
                    at,
                    byte: char::from(*byte),
                })
            }
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if acc != 0 {
        return Err(NotBase64::TrailingBits);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_vectors_decode() {
        for (text, bytes) in [
            ("", ""),
            ("Zg==", "f"),
            ("Zm8=", "fo"),
            ("Zm9v", "foo"),
            ("Zm9vYg==", "foob"),
            ("Zm9vYmE=", "fooba"),
            ("Zm9vYmFy", "foobar"),
        ] {
            assert_eq!(
                decode(text.as_bytes()),
                Ok(bytes.as_bytes().to_vec()),
                "{text}"
            );
        }
        assert_eq!(decode(b"+/8="), Ok(vec![0xfb, 0xff]));
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(decode(b"Zg"), Err(NotBase64::Length(2)));
        assert_eq!(decode(b"Zm9"), Err(NotBase64::Length(3)));
        assert_eq!(
            decode(b"Zm-v"),
            Err(NotBase64::Alphabet { at: 2, byte: '-' })
        );
        assert_eq!(
            decode(b"Zm9v Zg="),
            Err(NotBase64::Alphabet { at: 4, byte: ' ' })
        );
        assert_eq!(decode(b"Z==="), Err(NotBase64::Padding));
        assert_eq!(decode(b"Zg==Zg=="), Err(NotBase64::Padding));
        assert_eq!(decode(b"Zh=="), Err(NotBase64::TrailingBits));
    }
}
