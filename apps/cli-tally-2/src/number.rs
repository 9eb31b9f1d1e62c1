//! Exact decimal numbers: what `cli-tally` accepts, adds and prints.
//!
//! Binary floating point would print `0.1 + 0.2` as `0.30000000000000004`; a tally
//! tool must not. Numbers are therefore fixed-point integers of millionths, which is
//! exact for every accepted input (at most 15 integer and 6 fractional digits) and
//! cannot overflow an `i128` for any realistic count of inputs.

use std::fmt;

/// Millionths per unit.
const SCALE: i128 = 1_000_000;
/// Most digits after the point an input may have.
pub const MAX_FRACTION_DIGITS: usize = 6;
/// Most digits before the point an input may have.
pub const MAX_INTEGER_DIGITS: usize = 15;

/// A decimal number, stored exactly as millionths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Decimal(i128);

impl Decimal {
    /// Parse `[+-]digits[.digits]`: 1 to 15 digits before the point, and 1 to 6
    /// after it when there is a point. Anything else (`1e3`, `0x10`, `.5`, `5.`,
    /// `1,5`, `NaN`, empty) is not a number.
    pub fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (int, frac) = match rest.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (rest, None),
        };
        let digits = |s: &str, max: usize| {
            !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())
        };
        if !digits(int, MAX_INTEGER_DIGITS) {
            return None;
        }
        let mut value = int.parse::<i128>().ok()? * SCALE;
        if let Some(f) = frac {
            if !digits(f, MAX_FRACTION_DIGITS) {
                return None;
            }
            let padded = format!("{f:0<6}");
            value += padded.parse::<i128>().ok()?;
        }
        Some(Decimal(if negative { -value } else { value }))
    }

    pub fn zero() -> Decimal {
        Decimal(0)
    }

    pub fn add(self, other: Decimal) -> Decimal {
        Decimal(self.0.saturating_add(other.0))
    }

    /// `self / count`, rounded to millionths, halves away from zero. `None` for 0.
    pub fn div_round(self, count: usize) -> Option<Decimal> {
        let n = i128::try_from(count).ok().filter(|n| *n > 0)?;
        let q = self.0 / n;
        let r = self.0 % n;
        let round_away = 2 * r.abs() >= n;
        Some(Decimal(if round_away { q + self.0.signum() } else { q }))
    }
}

/// The shortest exact form: no exponent, no trailing fractional zeros, no `-0`.
impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let scale = SCALE.unsigned_abs();
        let (int, frac) = (abs / scale, abs % scale);
        if frac == 0 {
            write!(f, "{sign}{int}")
        } else {
            let frac = format!("{frac:06}");
            write!(f, "{sign}{int}.{}", frac.trim_end_matches('0'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        match Decimal::parse(s) {
            Some(v) => v,
            None => panic!("{s} should parse"),
        }
    }

    #[test]
    fn parses_and_prints_exactly() {
        for (input, shown) in [
            ("0", "0"),
            ("-0", "0"),
            ("+7", "7"),
            ("12.50", "12.5"),
            ("-0.000001", "-0.000001"),
            ("007", "7"),
            ("999999999999999.999999", "999999999999999.999999"),
        ] {
            assert_eq!(d(input).to_string(), shown, "{input}");
        }
        assert_eq!(d("0.1").add(d("0.2")).to_string(), "0.3");
    }

    #[test]
    fn refuses_what_is_not_a_plain_decimal() {
        for bad in [
            "",
            "-",
            "+",
            "abc",
            "1e3",
            "0x10",
            ".5",
            "5.",
            "1,5",
            "1.2.3",
            "NaN",
            "inf",
            " 1",
            "1 ",
            "--1",
            "1.0000001",
            "1234567890123456",
        ] {
            assert_eq!(Decimal::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn division_rounds_half_away_from_zero() {
        assert_eq!(
            d("10").div_round(3).map(|v| v.to_string()),
            Some("3.333333".into())
        );
        assert_eq!(
            d("20").div_round(3).map(|v| v.to_string()),
            Some("6.666667".into())
        );
        assert_eq!(
            d("-20").div_round(3).map(|v| v.to_string()),
            Some("-6.666667".into())
        );
        assert_eq!(
            d("0.000001").div_round(2).map(|v| v.to_string()),
            Some("0.000001".into())
        );
        assert_eq!(d("5").div_round(0), None);
    }
}
