//! Finding every raw-file reference in a record's bytes without building a JSON tree:
//! one pass of a deserializer that keeps only the members a reference is made of, in
//! the order, and with the duplicate-key rule, of a `serde_json::Value`.

use std::borrow::Cow;

/// A raw-file reference scanned from a record's bytes.
#[derive(Default)]
pub(super) struct Found<'a> {
    pub(super) path: Cow<'a, str>,
    pub(super) bytes: u64,
    pub(super) sha256: Cow<'a, str>,
}

/// Every raw-file reference in a record's JSON, as [`super::collect`] finds them in its
/// `Value`: an object with a string `path`, an unsigned `bytes` and `bytes_seen` and a
/// string `sha256` is one (and is not searched further); any other object is searched
/// in key order (the last of duplicate keys counting), arrays in order.
pub(super) fn scan(bytes: &[u8]) -> Result<Vec<Found<'_>>, serde_json::Error> {
    // As `crate::json::from_bytes` parses: text checked once is not checked per string.
    match std::str::from_utf8(bytes) {
        Ok(text) => scan_from(serde_json::Deserializer::from_str(text)),
        Err(_) => scan_from(serde_json::Deserializer::from_slice(bytes)),
    }
}

fn scan_from<'a, R: serde_json::de::Read<'a>>(
    mut de: serde_json::Deserializer<R>,
) -> Result<Vec<Found<'a>>, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut state = ScanState::default();
    Scan {
        state: &mut state,
        want: Want::Nothing,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(state.found)
}

/// What a scan has found so far, and the room it works in: one scan of a record visits
/// hundreds of objects, and each used to allocate its own list of members.
#[derive(Default)]
struct ScanState<'a> {
    found: Vec<Found<'a>>,
    /// The members of every object being scanned, innermost last.
    members: Vec<Member<'a>>,
    /// An object's members that found something, while it puts them in key order.
    order: Vec<usize>,
    /// An object's findings, while it puts them in key order.
    moved: Vec<Found<'a>>,
}

/// One member of a scanned object: its key, what its value is to the object, and the
/// findings below it (`found[from..to]`).
struct Member<'a> {
    key: Cow<'a, str>,
    value: Scalar<'a>,
    from: usize,
    to: usize,
}

/// What a scanned value is to the object holding it.
enum Scalar<'a> {
    Str(Cow<'a, str>),
    U64(u64),
    Other,
}

/// Which scalar the key of a scanned value asks for.
#[derive(Clone, Copy)]
enum Want {
    Str,
    U64,
    Nothing,
}

struct Scan<'s, 'a> {
    state: &'s mut ScanState<'a>,
    want: Want,
}

impl<'de, 's> serde::de::DeserializeSeed<'de> for Scan<'s, 'de> {
    type Value = Scalar<'de>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Scalar<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 's> serde::de::Visitor<'de> for Scan<'s, 'de> {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar<'de>, E> {
        Ok(match self.want {
            Want::U64 => Scalar::U64(v),
            _ => Scalar::Other,
        })
    }
    fn visit_f64<E>(self, _: f64) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Scalar<'de>, E> {
        Ok(match self.want {
            Want::Str => Scalar::Str(Cow::Borrowed(v)),
            _ => Scalar::Other,
        })
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar<'de>, E> {
        Ok(match self.want {
            Want::Str => Scalar::Str(Cow::Owned(v.to_owned())),
            _ => Scalar::Other,
        })
    }
    fn visit_unit<E>(self) -> Result<Scalar<'de>, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar<'de>, A::Error> {
        while seq
            .next_element_seed(Scan {
                state: &mut *self.state,
                want: Want::Nothing,
            })?
            .is_some()
        {}
        Ok(Scalar::Other)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Scalar<'de>, A::Error> {
        let st = self.state;
        // This object's members go on the shared list, its findings on `found` in the
        // order the record holds them; once the object is known they are kept (in key
        // order) or replaced by the reference the object is.
        let base = st.members.len();
        let start = st.found.len();
        while let Some(key) = map.next_key_seed(Key)? {
            let want = match key.as_ref() {
                "path" | "sha256" => Want::Str,
                "bytes" | "bytes_seen" => Want::U64,
                _ => Want::Nothing,
            };
            let from = st.found.len();
            let value = map.next_value_seed(Scan {
                state: &mut *st,
                want,
            })?;
            let to = st.found.len();
            st.members.push(Member {
                key,
                value,
                from,
                to,
            });
        }
        let mine = &st.members[base..];
        // The last of duplicate keys counts, as in a `Value`'s map.
        let live = |i: usize| !mine[i + 1..].iter().any(|m| m.key == mine[i].key);
        let last = |name: &str| mine.iter().rev().find(|m| m.key == name).map(|m| &m.value);
        let str_of = |name: &str| match last(name) {
            Some(Scalar::Str(s)) => Some(s.clone()),
            _ => None,
        };
        let u64_of = |name: &str| match last(name) {
            Some(Scalar::U64(n)) => Some(*n),
            _ => None,
        };
        if let (Some(path), Some(bytes), Some(_), Some(sha256)) = (
            str_of("path"),
            u64_of("bytes"),
            u64_of("bytes_seen"),
            str_of("sha256"),
        ) {
            st.found.truncate(start);
            st.found.push(Found {
                path,
                bytes,
                sha256,
            });
            st.members.truncate(base);
            return Ok(Scalar::Other);
        }
        // Findings of members that count, in key order: most objects have them in that
        // order already (or have one member with any), and are left as they are.
        st.order.clear();
        let mut dropped = false;
        for (i, m) in mine.iter().enumerate() {
            if m.from < m.to {
                if live(i) {
                    st.order.push(i);
                } else {
                    dropped = true;
                }
            }
        }
        let sorted = st.order.windows(2).all(|w| mine[w[0]].key < mine[w[1]].key);
        if dropped || !sorted {
            st.order.sort_by(|&a, &b| mine[a].key.cmp(&mine[b].key));
            st.moved.clear();
            st.moved.extend(st.found.drain(start..));
            for &i in &st.order {
                let m = &mine[i];
                for f in &mut st.moved[m.from - start..m.to - start] {
                    st.found.push(std::mem::take(f));
                }
            }
        }
        st.members.truncate(base);
        Ok(Scalar::Other)
    }
}

/// An object key, borrowed from the record's bytes when it has no escapes.
struct Key;

impl<'de> serde::de::DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::collect;
    use super::*;
    use serde_json::Value;

    /// Assert that the scan of `doc` names what the walk of its `Value` names, in the
    /// same order; how many references that is.
    fn scan_matches_walk(doc: &str) -> usize {
        let Ok(value) = serde_json::from_str::<Value>(doc) else {
            panic!("not JSON: {doc}");
        };
        let mut want = Vec::new();
        collect(&value, &mut want);
        let want: Vec<_> = want.iter().map(|n| (n.path, n.bytes, n.sha256)).collect();
        let found = scan(doc.as_bytes()).unwrap();
        let got: Vec<_> = found
            .iter()
            .map(|n| (n.path.as_ref(), n.bytes, n.sha256.as_ref()))
            .collect();
        assert_eq!(got, want, "{doc}");
        want.len()
    }

    #[test]
    fn the_scan_of_a_records_bytes_finds_what_its_value_holds_in_the_same_order() {
        let docs = [
            // Nested references, keys out of order, an array, escapes in a path.
            r#"{"z":{"path":"a\u0062.out","bytes":1,"bytes_seen":1,"sha256":"s1"},
                "a":[{"sha256":"s2","bytes_seen":0,"bytes":2,"path":"gate/x"},7,"str",null,true],
                "m":{"inner":{"path":"p3","bytes":3,"bytes_seen":3,"sha256":"s3"}}}"#,
            // A reference is not searched further; a near miss is.
            r#"{"r":{"path":"outer","bytes":1,"bytes_seen":1,"sha256":"o",
                     "x":{"path":"inner","bytes":1,"bytes_seen":1,"sha256":"i"}},
                "near":{"path":"n","bytes":-1,"bytes_seen":1,"sha256":"n",
                        "y":{"path":"deep","bytes":5,"bytes_seen":5,"sha256":"d"}},
                "float":{"path":"f","bytes":1.0,"bytes_seen":1,"sha256":"f"}}"#,
            // The last of duplicate keys counts.
            r#"{"d":{"path":1,"path":"late","bytes":4,"bytes_seen":4,"sha256":"l"},
                "d":{"path":"last","bytes":4,"bytes_seen":4,"sha256":"ll"},
                "e":{"path":"gone","path":2,"bytes":4,"bytes_seen":4,"sha256":"g"}}"#,
            r#"[{"path":"top","bytes":0,"bytes_seen":0,"sha256":"t"}]"#,
            // Members out of key order; a duplicate whose first holds findings, and
            // one whose last does; findings at several depths of one member.
            r#"{"z":{"path":"z1","bytes":1,"bytes_seen":1,"sha256":"z"},
                "b":[{"path":"b1","bytes":1,"bytes_seen":1,"sha256":"b"},
                     {"q":{"path":"b2","bytes":2,"bytes_seen":2,"sha256":"b"}}],
                "m":{"y":{"path":"m1","bytes":1,"bytes_seen":1,"sha256":"m"},
                     "x":{"path":"m2","bytes":1,"bytes_seen":1,"sha256":"m"}},
                "dup":{"path":"first","bytes":1,"bytes_seen":1,"sha256":"f"},
                "a":1,
                "dup":2,
                "again":{"path":"early","bytes":1,"bytes_seen":1,"sha256":"e"},
                "again":{"path":"later","bytes":1,"bytes_seen":1,"sha256":"l"}}"#,
            r#""just a string""#,
        ];
        for doc in docs {
            scan_matches_walk(doc);
        }
        for bad in ["{", "{} x", "[1,]"] {
            let v = serde_json::from_str::<Value>(bad).unwrap_err().to_string();
            assert_eq!(scan(bad.as_bytes()).err().map(|e| e.to_string()), Some(v));
        }
    }

    /// A random JSON text, written by hand so that it can hold what a `Value` cannot
    /// (duplicate keys), made of the keys and values a raw-file reference is made of.
    fn random_doc(rng: &mut u64, depth: u32, out: &mut String) {
        fn below(rng: &mut u64, n: u64) -> u64 {
            *rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = *rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        }
        let pick = below(rng, if depth == 0 { 4 } else { 7 });
        match pick {
            0 => out
                .push_str(["1", "0", "-1", "2.5", "18446744073709551615"][below(rng, 5) as usize]),
            1 => out.push_str(
                [r#""a""#, r#""p\u0031""#, r#""gate/x""#, r#""""#][below(rng, 4) as usize],
            ),
            2 => out.push_str(["null", "true"][below(rng, 2) as usize]),
            3 => out.push_str("{}"),
            4 => {
                // Mostly a reference, its members in any order, with near misses
                // (a wrong type, a duplicate key) and other members among them.
                let mut members: Vec<(&str, String)> = Vec::new();
                for key in ["path", "bytes", "bytes_seen", "sha256"] {
                    if below(rng, 8) == 0 {
                        continue;
                    }
                    let good = match key {
                        "path" => format!("\"f{}\"", below(rng, 3)),
                        "sha256" => format!("\"s{}\"", below(rng, 3)),
                        _ => below(rng, 3).to_string(),
                    };
                    let mut value = good;
                    if below(rng, 6) == 0 {
                        value.clear();
                        random_doc(rng, depth - 1, &mut value);
                    }
                    members.push((key, value));
                }
                for _ in 0..below(rng, 3) {
                    let keys = ["a", "z", "path", "bytes", "x"];
                    let mut value = String::new();
                    random_doc(rng, depth - 1, &mut value);
                    members.push((keys[below(rng, keys.len() as u64) as usize], value));
                }
                for i in (1..members.len()).rev() {
                    members.swap(i, below(rng, i as u64 + 1) as usize);
                }
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&format!("\"{key}\":{value}"));
                }
                out.push('}');
            }
            5 => {
                let keys = [
                    "path",
                    "bytes",
                    "bytes_seen",
                    "sha256",
                    "a",
                    "b",
                    "z",
                    "p\\u0061th",
                ];
                out.push('{');
                for i in 0..below(rng, 7) {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push('"');
                    out.push_str(keys[below(rng, keys.len() as u64) as usize]);
                    out.push_str("\":");
                    random_doc(rng, depth - 1, out);
                }
                out.push('}');
            }
            _ => {
                out.push('[');
                for i in 0..below(rng, 4) {
                    if i > 0 {
                        out.push(',');
                    }
                    random_doc(rng, depth - 1, out);
                }
                out.push(']');
            }
        }
    }

    #[test]
    fn the_scan_agrees_with_a_values_walk_on_thousands_of_random_documents() {
        let mut rng = 7u64;
        let mut refs = 0;
        for _ in 0..20_000 {
            let mut doc = String::new();
            random_doc(&mut rng, 4, &mut doc);
            refs += scan_matches_walk(&doc);
        }
        // The documents are not all near misses: many hold references.
        assert!(refs > 1000, "only {refs} references in 20,000 documents");
    }
}
