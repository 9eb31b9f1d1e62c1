//! JavaScript expressions that evaluate to a given value, each spelled in one of many
//! equivalent forms drawn at random: a string as a literal (any quote, some characters
//! escaped), pieces added up, character codes (plain, or masked and padded with junk
//! that a filter drops), reversed, split around random markers, sliced out of junk, or a
//! conditional whose branch not taken holds a decoy; a regular expression as a literal
//! or built from any such string; a boolean as a literal, a negated number, a comparison
//! of random numbers or lengths; a number in decimal, hex, a sum, a difference, a
//! product, a length or a parsed string. Forms nest, so no token, line or length of the
//! result is tied to the value: telling two values apart means evaluating them.
//!
//! Every form is one line, and uses no name of the script around it (arrow parameters
//! are its own, and hold a `_`, `$` or digit, so that they can be no keyword).

use crate::rng::Rng;

/// A value a constant of the extension holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Str(String),
    /// A regular expression's source; no flags.
    Regex(String),
    Bool(bool),
    Num(u32),
}

/// How deep forms nest (a conditional or a regular expression's string goes one down).
const DEPTH: u32 = 2;

/// An expression that evaluates to `value`. `decoys` are values that may be spelled in
/// a branch never taken (those of `value`'s kind are used).
pub fn expr(rng: &mut Rng, value: &Value, decoys: &[Value]) -> String {
    at(rng, value, decoys, DEPTH)
}

fn at(rng: &mut Rng, value: &Value, decoys: &[Value], depth: u32) -> String {
    match value {
        Value::Str(s) => string(rng, s, decoys, depth),
        Value::Regex(src) => regex(rng, src, decoys, depth),
        Value::Bool(b) => boolean(rng, *b, depth),
        Value::Num(n) => number(rng, *n, decoys, depth),
    }
}

fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// `(test ? a : b)`, the value on the branch taken and a decoy of its kind on the other.
fn conditional(rng: &mut Rng, value: &Value, decoys: &[Value], depth: u32) -> String {
    let depth = depth.saturating_sub(1);
    let others: Vec<&Value> = decoys
        .iter()
        .filter(|d| same_kind(d, value) && *d != value)
        .collect();
    let decoy = if others.is_empty() {
        value.clone()
    } else {
        (*rng.pick(&others)).clone()
    };
    let real_first = rng.chance(1, 2);
    let test = boolean(rng, real_first, depth);
    let real = at(rng, value, decoys, depth);
    let fake = at(rng, &decoy, decoys, depth);
    if real_first {
        format!("({test} ? {real} : {fake})")
    } else {
        format!("({test} ? {fake} : {real})")
    }
}

// ---------------------------------------------------------------------------
// Names and numbers
// ---------------------------------------------------------------------------

const IDENT_START: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$";
const IDENT_REST: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$";
const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// A random identifier of `min..=max` characters (`min` >= 2) holding at least one `_`,
/// `$` or digit: no JavaScript keyword and no global of a browser or worker has one, so
/// it shadows nothing that matters.
pub fn ident(rng: &mut Rng, min: usize, max: usize) -> String {
    loop {
        let len = rng.range(min.max(2), max.max(2));
        let mut s = String::with_capacity(len);
        s.push(char::from(*rng.pick(IDENT_START)));
        for _ in 1..len {
            s.push(char::from(*rng.pick(IDENT_REST)));
        }
        if s.bytes()
            .any(|b| b == b'_' || b == b'$' || b.is_ascii_digit())
        {
            return s;
        }
    }
}

/// `len` random letters and digits.
pub fn alnum(rng: &mut Rng, len: usize) -> String {
    (0..len).map(|_| char::from(*rng.pick(ALNUM))).collect()
}

/// A non-negative integer literal: decimal or hex.
fn num_lit(rng: &mut Rng, n: u64) -> String {
    match rng.below(4) {
        0 => format!("0x{n:x}"),
        1 => format!("0X{n:X}"),
        _ => n.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Strings
// ---------------------------------------------------------------------------

/// A string literal of `s`: a random quote, and each character that need not be escaped
/// escaped anyway at a rate drawn for the literal.
pub fn literal(rng: &mut Rng, s: &str) -> String {
    let quote = *rng.pick(&['"', '\'', '`']);
    let rate = *rng.pick(&[0usize, 0, 1, 2, 4]);
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        let special = c == '\\' || c == quote || (quote == '`' && c == '$');
        let unprintable = c.is_control() || !c.is_ascii();
        if special && rng.chance(1, 2) {
            out.push('\\');
            out.push(c);
        } else if special || unprintable || rng.chance(rate, 4) {
            out.push_str(&char_escape(rng, c));
        } else {
            out.push(c);
        }
    }
    out.push(quote);
    out
}

/// `c` as an escape sequence: `\xHH`, `\uHHHH` or `\u{H…}`, hex digits in either case.
fn char_escape(rng: &mut Rng, c: char) -> String {
    let code = u32::from(c);
    let upper = rng.chance(1, 2);
    let hex = |width: usize| {
        let h = format!("{code:0width$x}");
        if upper {
            h.to_uppercase()
        } else {
            h
        }
    };
    match rng.below(3) {
        0 if code < 0x100 => format!("\\x{}", hex(2)),
        1 if code < 0x10000 => format!("\\u{}", hex(4)),
        _ => format!("\\u{{{}}}", hex(rng.range(1, 4))),
    }
}

/// `s` cut into `pieces` pieces at random places (empty pieces allowed).
fn cut(rng: &mut Rng, s: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut at: Vec<usize> = (1..pieces).map(|_| rng.range(0, chars.len())).collect();
    at.sort_unstable();
    let mut out = Vec::with_capacity(pieces);
    let mut from = 0;
    for to in at.into_iter().chain(std::iter::once(chars.len())) {
        out.push(chars[from..to].iter().collect());
        from = to;
    }
    out
}

/// Characters random junk is made of (escaped by `literal` where they must be).
const JUNK: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -+*/[](){}:;,.=?!~_#'\"\\";

fn junk(rng: &mut Rng, len: usize) -> String {
    (0..len).map(|_| char::from(*rng.pick(JUNK))).collect()
}

/// Characters a marker is made of: none occurs in a value of the extension (a value
/// that holds one is simply not marked with it).
const MARKERS: &[u8] = b"~^!%;&#";

fn string(rng: &mut Rng, s: &str, decoys: &[Value], depth: u32) -> String {
    // Plain literals are rare: a value should take evaluating more than reading.
    let weights = [
        1,                             // literal
        2,                             // pieces added up
        2,                             // character codes
        3,                             // masked character codes
        1,                             // reversed
        2,                             // markers
        1,                             // sliced out of junk
        1,                             // array joined
        if depth > 0 { 4 } else { 0 }, // conditional
    ];
    match rng.weighted(&weights) {
        0 => literal(rng, s),
        1 => {
            let n = rng.range(2, 4);
            let pieces: Vec<String> = cut(rng, s, n).iter().map(|p| literal(rng, p)).collect();
            format!("({})", pieces.join(" + "))
        }
        2 => {
            let codes: Vec<String> = s
                .encode_utf16()
                .map(|c| num_lit(rng, u64::from(c)))
                .collect();
            format!("String.fromCharCode({})", codes.join(", "))
        }
        3 => masked_codes(rng, s),
        4 => {
            let rev: String = s.chars().rev().collect();
            let lit = literal(rng, &rev);
            let empty = literal(rng, "");
            // `split("")` cuts between UTF-16 units: only where each character is one.
            let bmp = s.chars().all(|c| u32::from(c) < 0x10000);
            match rng.below(3) {
                0 if bmp => format!("{lit}.split({}).reverse().join({empty})", literal(rng, "")),
                1 => format!("[...{lit}].reverse().join({empty})"),
                _ => format!("Array.from({lit}).reverse().join({empty})"),
            }
        }
        5 => marked(rng, s),
        6 => {
            let (l, r) = (rng.range(0, 8), rng.range(0, 8));
            let n = s.encode_utf16().count();
            let padded = format!("{}{s}{}", junk(rng, l), junk(rng, r));
            let lit = literal(rng, &padded);
            let (a, b, len) = (
                num_lit(rng, l as u64),
                num_lit(rng, (l + n) as u64),
                n as u64,
            );
            match rng.below(4) {
                0 => format!("{lit}.slice({a}, {b})"),
                1 => format!("{lit}.substring({a}, {b})"),
                2 => format!("{lit}.substr({a}, {})", num_lit(rng, len)),
                _ if r > 0 => format!("{lit}.slice({a}, -{})", num_lit(rng, r as u64)),
                _ => format!("{lit}.slice({a})"),
            }
        }
        7 => {
            let n = rng.range(1, 4);
            let pieces: Vec<String> = cut(rng, s, n).iter().map(|p| literal(rng, p)).collect();
            format!("[{}].join({})", pieces.join(", "), literal(rng, ""))
        }
        _ => conditional(rng, &Value::Str(s.to_string()), decoys, depth),
    }
}

/// `String.fromCharCode(...[codes and junk].filter(drop the junk).map(unmask))`.
fn masked_codes(rng: &mut Rng, s: &str) -> String {
    let key = rng.range(1, 0x7fff) as u32;
    let xor = rng.chance(1, 2);
    let mut codes: Vec<u32> = s
        .encode_utf16()
        .map(|c| {
            if xor {
                u32::from(c) ^ key
            } else {
                u32::from(c) + key
            }
        })
        .collect();
    let junk = loop {
        let j = rng.range(0, 0xffff) as u32;
        if !codes.contains(&j) {
            break j;
        }
    };
    for _ in 0..rng.range(1, 4) {
        let at = rng.range(0, codes.len());
        codes.insert(at, junk);
    }
    let p = ident(rng, 2, 4);
    let q = ident(rng, 2, 4);
    let list: Vec<String> = codes.iter().map(|c| num_lit(rng, u64::from(*c))).collect();
    let ne = *rng.pick(&["!==", "!="]);
    let unmask = if xor { "^" } else { "-" };
    format!(
        "String.fromCharCode(...[{}].filter(({p}) => {p} {ne} {}).map(({q}) => {q} {unmask} {}))",
        list.join(", "),
        num_lit(rng, u64::from(junk)),
        num_lit(rng, u64::from(key))
    )
}

/// `s` with a random marker put in at random places, and taken out again.
fn marked(rng: &mut Rng, s: &str) -> String {
    let usable: Vec<u8> = MARKERS
        .iter()
        .copied()
        .filter(|m| !s.contains(char::from(*m)))
        .collect();
    if usable.is_empty() {
        return literal(rng, s);
    }
    let marker: String = (0..rng.range(1, 3))
        .map(|_| char::from(*rng.pick(&usable)))
        .collect();
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut placed = false;
    for i in 0..=chars.len() {
        // At least one marker, at the last gap if none was placed before.
        let copies = if rng.chance(1, 3) || (i == chars.len() && !placed) {
            rng.range(1, 2)
        } else {
            0
        };
        for _ in 0..copies {
            out.push_str(&marker);
            placed = true;
        }
        if let Some(c) = chars.get(i) {
            out.push(*c);
        }
    }
    let lit = literal(rng, &out);
    let m = literal(rng, &marker);
    let empty = literal(rng, "");
    if rng.chance(1, 2) {
        format!("{lit}.split({m}).join({empty})")
    } else {
        format!("{lit}.replaceAll({m}, {empty})")
    }
}

// ---------------------------------------------------------------------------
// Regular expressions, booleans, numbers
// ---------------------------------------------------------------------------

fn regex(rng: &mut Rng, src: &str, decoys: &[Value], depth: u32) -> String {
    let weights = [1, 3, 2, 1, if depth > 0 { 3 } else { 0 }];
    // A regular expression built from a string: that string's decoys are the other
    // regular expressions' sources.
    let as_strings: Vec<Value> = decoys
        .iter()
        .filter_map(|d| match d {
            Value::Regex(s) => Some(Value::Str(s.clone())),
            _ => None,
        })
        .collect();
    let inner = depth.saturating_sub(1);
    match rng.weighted(&weights) {
        0 => format!("/{src}/"),
        1 => format!("new RegExp({})", string(rng, src, &as_strings, inner)),
        2 => format!("RegExp({})", string(rng, src, &as_strings, inner)),
        3 => {
            let s = string(rng, src, &as_strings, inner);
            format!("new RegExp({s}, {})", string(rng, "", &[], 0))
        }
        _ => conditional(rng, &Value::Regex(src.to_string()), decoys, depth),
    }
}

fn boolean(rng: &mut Rng, b: bool, depth: u32) -> String {
    let weights = [
        1,
        1,
        1,
        5,
        3,
        if depth > 0 { 3 } else { 0 },
        if depth > 0 { 2 } else { 0 },
    ];
    match rng.weighted(&weights) {
        0 => b.to_string(),
        1 => {
            let n = if b { 0 } else { rng.range(1, 999) as u64 };
            format!("!{}", num_lit(rng, n))
        }
        2 => {
            let n = if b { rng.range(1, 999) as u64 } else { 0 };
            format!("!!{}", num_lit(rng, n))
        }
        3 | 4 => {
            let op = *rng.pick(&["<", ">", "<=", ">=", "===", "!==", "==", "!="]);
            let (left, right) = loop {
                let a = rng.range(0, 999) as u64;
                let c = if rng.chance(1, 3) {
                    a
                } else {
                    rng.range(0, 999) as u64
                };
                let holds = match op {
                    "<" => a < c,
                    ">" => a > c,
                    "<=" => a <= c,
                    ">=" => a >= c,
                    "===" | "==" => a == c,
                    _ => a != c,
                };
                if holds == b {
                    break (a, c);
                }
            };
            let left = if rng.chance(1, 2) && left <= 40 {
                let s = junk(rng, left as usize);
                format!("{}.length", literal(rng, &s))
            } else {
                num_lit(rng, left)
            };
            format!("{left} {op} {}", num_lit(rng, right))
        }
        5 => conditional(rng, &Value::Bool(b), &[Value::Bool(!b)], depth),
        _ => format!("!({})", boolean(rng, !b, depth - 1)),
    }
}

fn number(rng: &mut Rng, n: u32, decoys: &[Value], depth: u32) -> String {
    let n64 = u64::from(n);
    let factor = (2..=n.min(50)).filter(|f| n % f == 0).collect::<Vec<_>>();
    let weights = [
        2,
        1,
        2,
        1,
        if factor.is_empty() { 0 } else { 1 },
        if n <= 200 { 1 } else { 0 },
        1,
        if depth > 0 { 2 } else { 0 },
    ];
    match rng.weighted(&weights) {
        0 => n.to_string(),
        1 => num_lit(rng, n64),
        2 => {
            let a = rng.range(0, n as usize) as u64;
            format!("({} + {})", num_lit(rng, a), num_lit(rng, n64 - a))
        }
        3 => {
            let b = rng.range(1, 999) as u64;
            format!("({} - {})", num_lit(rng, n64 + b), num_lit(rng, b))
        }
        4 => {
            let f = u64::from(*rng.pick(&factor));
            format!("({} * {})", num_lit(rng, f), num_lit(rng, n64 / f))
        }
        5 => {
            let s = junk(rng, n as usize);
            format!("{}.length", literal(rng, &s))
        }
        6 => {
            let s = string(rng, &n.to_string(), &[], 0);
            if rng.chance(1, 2) {
                format!("Number({s})")
            } else {
                format!("parseInt({s}, {})", num_lit(rng, 10))
            }
        }
        _ => conditional(rng, &Value::Num(n), decoys, depth),
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Run `script` with node (stdin `input`) and return its stdout; `None` (with the
    /// reason printed) when node is not on PATH.
    pub fn node(script: &str, input: &str) -> Option<String> {
        let child = Command::new("node")
            .arg("-e")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("skipped: node is not on PATH, so no JavaScript is evaluated here");
                return None;
            }
            Err(e) => panic!("node: {e}"),
        };
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .unwrap_or_else(|e| panic!("node stdin: {e}"));
        }
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("node: {e}"));
        assert!(
            out.status.success(),
            "node failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// What node makes of each expression: `{"s":…}`, `{"re":…,"flags":…}`, `{"b":…}`,
    /// `{"n":…}`, or `{"error":…}`.
    pub fn evaluate(exprs: &[String]) -> Option<Vec<serde_json::Value>> {
        let script = r#"
"use strict";
const exprs = JSON.parse(require("fs").readFileSync(0, "utf8"));
const vm = require("vm");
const out = exprs.map((e) => {
  try {
    const v = vm.runInNewContext("(" + e + "\n)", {});
    if (typeof v === "string") return { s: v };
    if (typeof v === "boolean") return { b: v };
    if (typeof v === "number") return { n: v };
    if (Object.prototype.toString.call(v) === "[object RegExp]") return { re: v.source, flags: v.flags };
    return { error: "unexpected " + typeof v };
  } catch (err) {
    return { error: String(err) };
  }
});
process.stdout.write(JSON.stringify(out));
"#;
        let input = serde_json::to_string(exprs).unwrap_or_default();
        let out = node(script, &input)?;
        Some(serde_json::from_str(&out).unwrap_or_else(|e| {
            let around: String = out
                .chars()
                .skip(e.column().saturating_sub(200))
                .take(400)
                .collect();
            panic!("node's answer: {e}: …{around}…")
        }))
    }

    fn expected(v: &Value) -> serde_json::Value {
        match v {
            Value::Str(s) => serde_json::json!({ "s": s }),
            Value::Regex(s) => serde_json::json!({ "re": s, "flags": "" }),
            Value::Bool(b) => serde_json::json!({ "b": b }),
            Value::Num(n) => serde_json::json!({ "n": n }),
        }
    }

    fn values() -> Vec<Value> {
        let mut vs: Vec<Value> = [
            "",
            "0",
            "#6b7280",
            "wordbadge",
            "[data-decoy], [aria-hidden=\"true\"]",
            "[data-decoy],[aria-hidden='true']",
            "a`b${c}d\\e\"f'g~^!%;&#",
            "\u{e9}\u{1F600}\n\t",
        ]
        .iter()
        .map(|s| Value::Str(s.to_string()))
        .collect();
        vs.extend(
            [r"\s+", r"[\s-]+", r"(?:\s|-)+", r"\s{1,}"]
                .iter()
                .map(|s| Value::Regex(s.to_string())),
        );
        vs.extend([Value::Bool(true), Value::Bool(false)]);
        vs.extend([0, 1, 100, 97, 65535].into_iter().map(Value::Num));
        vs
    }

    #[test]
    fn forms_are_one_line_and_vary() {
        let mut rng = Rng::new([11, 12, 13, 14]);
        for v in values() {
            let decoys = values();
            let spelled: std::collections::BTreeSet<String> =
                (0..200).map(|_| expr(&mut rng, &v, &decoys)).collect();
            assert!(spelled
                .iter()
                .all(|e| !e.contains('\n') && !e.contains('\r')));
            assert!(spelled.len() > 60, "{v:?}: {} forms", spelled.len());
        }
        for _ in 0..1000 {
            let id = ident(&mut rng, 2, 6);
            assert!(id
                .bytes()
                .any(|b| b == b'_' || b == b'$' || b.is_ascii_digit()));
            assert!(!id.as_bytes()[0].is_ascii_digit());
        }
    }

    /// Every form of every value evaluates, in node, to that value.
    #[test]
    fn every_form_evaluates_to_its_value() {
        let mut rng = Rng::new([1, 2, 3, 4]);
        let decoys = values();
        let mut cases = Vec::new();
        for v in values() {
            for _ in 0..300 {
                cases.push((v.clone(), expr(&mut rng, &v, &decoys)));
            }
        }
        let exprs: Vec<String> = cases.iter().map(|(_, e)| e.clone()).collect();
        let Some(got) = evaluate(&exprs) else {
            return;
        };
        assert_eq!(got.len(), cases.len());
        let wrong: Vec<String> = cases
            .iter()
            .zip(&got)
            .filter(|((v, _), g)| expected(v) != **g)
            .map(|((v, e), g)| format!("{v:?}: `{e}` gives {g}"))
            .take(10)
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
