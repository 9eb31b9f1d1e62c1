//! A partition of a run, as nextest names it (`--partition count:2/3`): planning
//! and merging both speak of which part of the trials a run directory holds, so the
//! type lives with the plan, below the records that merge parts.

/// A partition as nextest writes it, `<scheme>:<index>/<count>` (index from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub scheme: String,
    pub index: u64,
    pub count: u64,
}

impl Partition {
    pub fn parse(text: &str) -> Option<Partition> {
        let (scheme, rest) = text.split_once(':')?;
        let (index, count) = rest.split_once('/')?;
        let (index, count) = (index.trim().parse().ok()?, count.trim().parse().ok()?);
        (index >= 1 && index <= count).then(|| Partition {
            scheme: scheme.to_string(),
            index,
            count,
        })
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}/{}", self.scheme, self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_parse_only_when_their_index_is_in_range() {
        let p = Partition::parse("count:2/4").unwrap();
        assert_eq!((p.scheme.as_str(), p.index, p.count), ("count", 2, 4));
        assert_eq!(p.to_string(), "count:2/4");
        assert_eq!(Partition::parse("count:5/4"), None);
        assert_eq!(Partition::parse("count:0/4"), None);
        assert_eq!(Partition::parse("count"), None);
    }
}
