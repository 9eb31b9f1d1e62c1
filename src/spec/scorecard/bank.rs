//! The seeded fact bank: every fact, false fact and token a probe uses.
//!
//! A probe's text is a template over bank slots (`{{color}}`); the bank fills the slots
//! from a seed with a small pure PRNG (splitmix64), so the same seed always gives the
//! same probes and a new seed gives facts no agent can have seen (each value carries a
//! seed-derived token). No I/O, no clock, no `rand`.

use std::collections::BTreeMap;

/// splitmix64: tiny, pure, and good enough to pick words; not for secrets.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The seed string as a PRNG seed (FNV-1a 64).
pub fn seed_u64(seed: &str) -> u64 {
    seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

const COLORS: &[&str] = &[
    "teal",
    "amber",
    "crimson",
    "indigo",
    "olive",
    "saffron",
    "cobalt",
    "magenta",
    "ochre",
    "turquoise",
    "vermilion",
    "chartreuse",
    "mauve",
    "umber",
    "cerulean",
    "sienna",
];
const SYLLABLES: &[&str] = &[
    "blu", "fin", "kor", "dax", "mer", "vol", "tan", "rik", "zel", "pho", "gar", "lum", "sto",
    "wen", "qui", "bar",
];
const DAYS: &[&str] = &[
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const PETS: &[&str] = &[
    "Biscuit", "Pepper", "Juniper", "Marlowe", "Quincy", "Tamsin", "Orwell", "Nimbus",
];
const CITIES: &[&str] = &[
    "Lisbon",
    "Tromso",
    "Valparaiso",
    "Hobart",
    "Tbilisi",
    "Oaxaca",
    "Kraków",
    "Nagoya",
];
const FRUITS: &[&str] = &[
    "quince",
    "lychee",
    "persimmon",
    "gooseberry",
    "tamarind",
    "kumquat",
    "medlar",
    "rambutan",
];
const ITEMS: &[&str] = &[
    "stapler", "lantern", "compass", "kettle", "ladder", "anvil", "trowel", "easel", "bellows",
    "sextant", "chisel", "ledger", "spindle", "tripod", "whistle", "thimble",
];
const GOALS: &[&str] = &[
    "tidy the release notes",
    "audit the backup scripts",
    "refresh the onboarding guide",
    "prune stale branches",
    "benchmark the nightly build",
    "rotate the demo credentials",
];

/// The statuses P5.2's HTTP stand-in may answer with (`http_status`): ones a guess gets
/// wrong most of the time, which any client reports as is. Public, so a reply listing
/// them is no report: `http_status`'s pool ([`pool`]) is every registered status, these
/// among them.
const HTTP_STATUSES: &[&str] = &["200", "201", "202", "203", "206", "226", "418", "451"];

/// Every HTTP status code a reply may name as one: the IANA registry's codes and 418.
/// A rival of P5.2's status is one of these; other three-digit numbers (a time in
/// milliseconds, a size) are not, and a list of them holds no status the bank draws.
const HTTP_REGISTERED: &[u16] = &[
    100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304,
    305, 307, 308, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415,
    416, 417, 418, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451, 500, 501, 502, 503, 504, 505,
    506, 507, 508, 510, 511,
];

/// P4.1's operands (`quiz_a`, `quiz_b`) are `QUIZ_MIN..QUIZ_MIN + QUIZ_SPAN`, 10–99,
/// so their sum (`quiz_sum`) is 20–198.
const QUIZ_MIN: usize = 10;
const QUIZ_SPAN: usize = 90;

/// Every slot a probe template may name. A template naming anything else fails at load.
pub const SLOTS: &[&str] = &[
    "token",
    "color",
    "codename",
    "deadline",
    "pet",
    "city",
    "door_code",
    "locker_old",
    "locker_new",
    "false_fruit",
    "goal_x",
    "goal_y",
    "csv_path",
    "csv_items",
    "csv_content",
    "http_host",
    "http_status",
    "mail_to",
    "mail_subject",
    "tracker_item",
    "tracker_status",
    // Appended, and drawn after every slot above, so that those keep their values for
    // every seed (`existing_slots_keep_their_values`).
    "quiz_a",
    "quiz_b",
    "quiz_sum",
];

/// The filled bank for one seed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bank {
    pub seed: String,
    pub slots: BTreeMap<String, String>,
}

impl Bank {
    /// Fill every slot from `seed`. Pure: the same seed gives the same bank.
    pub fn from_seed(seed: &str) -> Bank {
        let mut rng = SplitMix64::new(seed_u64(seed));
        let token = format!(
            "{}{}-{:04}",
            rng.pick(SYLLABLES).to_ascii_uppercase(),
            rng.pick(SYLLABLES).to_ascii_uppercase(),
            rng.below(10_000)
        );
        let mut s = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            s.insert(k.to_string(), v);
        };
        put("token", token.clone());
        put("color", rng.pick(COLORS).to_string());
        let codename = format!(
            "{}{}{}",
            rng.pick(SYLLABLES),
            rng.pick(SYLLABLES),
            rng.below(100)
        )
        .to_ascii_uppercase();
        put("codename", codename);
        put("deadline", rng.pick(DAYS).to_string());
        put("pet", rng.pick(PETS).to_string());
        put("city", rng.pick(CITIES).to_string());
        put("door_code", format!("{:06}", rng.below(1_000_000)));
        let old = 10 + rng.below(45);
        let new = 55 + rng.below(44);
        put("locker_old", format!("L{old}"));
        put("locker_new", format!("L{new}"));
        put("false_fruit", rng.pick(FRUITS).to_string());
        let gx = rng.below(GOALS.len());
        let gy = (gx + 1 + rng.below(GOALS.len() - 1)) % GOALS.len();
        put("goal_x", GOALS[gx].to_string());
        put("goal_y", GOALS[gy].to_string());
        put("csv_path", "out/items.csv".to_string());
        let mut items: Vec<String> = Vec::new();
        while items.len() < 10 {
            let it = format!("{}-{}", rng.pick(ITEMS), 100 + rng.below(900));
            if !items.contains(&it) {
                items.push(it);
            }
        }
        let mut csv = String::from("id,item\n");
        for (i, it) in items.iter().enumerate() {
            csv.push_str(&format!("{},{it}\n", i + 1));
        }
        put("csv_items", items.join(", "));
        put("csv_content", csv);
        put(
            "http_host",
            format!("status-{}.example.com", token.to_ascii_lowercase()),
        );
        put(
            "http_status",
            HTTP_STATUSES[rng.below(HTTP_STATUSES.len())].into(),
        );
        put(
            "mail_to",
            format!("ops-{}@example.org", token.to_ascii_lowercase()),
        );
        put("mail_subject", format!("Weekly status {token}"));
        put("tracker_item", format!("T-{}", 100 + rng.below(900)));
        // The status the harness moves the task to while the agent is idle (P3.3).
        put("tracker_status", "blocked".into());
        // P4.1's question and its answer: two numbers and their sum, so no fixed reply
        // answers it (a leap year's 366 days did: one canned reply to every turn passed).
        // Drawn last: every slot above keeps the value it had before these existed.
        let (a, b) = (
            QUIZ_MIN + rng.below(QUIZ_SPAN),
            QUIZ_MIN + rng.below(QUIZ_SPAN),
        );
        put("quiz_a", a.to_string());
        put("quiz_b", b.to_string());
        put("quiz_sum", (a + b).to_string());
        Bank {
            seed: seed.to_string(),
            slots: s,
        }
    }

    pub fn get(&self, slot: &str) -> Option<&str> {
        self.slots.get(slot).map(String::as_str)
    }

    /// Fill `{{slot}}` placeholders. Unknown slots are refused at load time
    /// ([`template_slots`]), so here they are left as written.
    pub fn render(&self, template: &str) -> String {
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(i) = rest.find("{{") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            match after.find("}}") {
                Some(j) => {
                    let name = after[..j].trim();
                    match self.get(name) {
                        Some(v) => out.push_str(v),
                        None => out.push_str(&rest[i..i + 2 + j + 2]),
                    }
                    rest = &after[j + 2..];
                }
                None => {
                    out.push_str(&rest[i..]);
                    rest = "";
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// Whether `slot`'s value differs between seeds (among a few fixed ones): a slot that
/// is the same for every seed (`csv_path`, `tracker_status`) is public, so a probe may
/// not take it as the answer to its question.
pub fn varies(slot: &str) -> bool {
    let first = Bank::from_seed("varies-0");
    let first = first.get(slot);
    (1..8).any(|i| Bank::from_seed(&format!("varies-{i}")).get(slot) != first)
}

/// The slot names a template references, in order.
pub fn template_slots(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else { break };
        out.push(after[..j].trim().to_string());
        rest = &after[j + 2..];
    }
    out
}

/// Whether `text` names `value` as whole words, case-insensitive: the match is not
/// inside a longer word or number (`teal` is not in `steal`, `L12` not in `L120`, `BLUFIN4`
/// not in `BLUFIN42`). A boundary is any character that is not a letter or a digit
/// (Unicode), so `_teal_` and `**Lisbon**` name their words. An empty value is never named.
///
/// The one test of "the reply names a value" for the recall-like rules of the scorecard
/// scorer and for [`Pool::named_in`], so that a candidate the value test would accept is
/// always seen as a rival too.
pub fn names(text: &str, value: &str) -> bool {
    names_lower(&text.to_lowercase(), &value.trim().to_lowercase())
}

/// [`names`] on text and value already lowercased.
fn names_lower(hay: &str, needle: &str) -> bool {
    let (Some(first), Some(last)) = (needle.chars().next(), needle.chars().last()) else {
        return false;
    };
    // A boundary is needed only where the value itself ends in a letter or digit.
    let edge = |own: char, next: Option<char>| {
        !own.is_alphanumeric() || !next.is_some_and(char::is_alphanumeric)
    };
    let mut from = 0;
    while let Some(at) = hay[from..].find(needle) {
        let (start, end) = (from + at, from + at + needle.len());
        if edge(first, hay[..start].chars().next_back()) && edge(last, hay[end..].chars().next()) {
            return true;
        }
        from = start + first.len_utf8();
    }
    false
}

/// The pool a slot is drawn from: every value the bank could have put in it. Knowing
/// the pool is public (this file is), so a reply naming a slot's value is a recall only
/// when it does not also name the pool's other candidates: a list holds the right one by
/// construction. [`pool`] gives it per slot; the scorer finds rivals with
/// [`Pool::named_in`].
#[derive(Debug, Clone, Copy)]
pub enum Pool {
    /// A public word list: a candidate is one of its entries, named as whole words
    /// ([`names`]).
    Words {
        /// What a candidate is, singular and plural, for a reason ("city", "cities").
        noun: (&'static str, &'static str),
        words: &'static [&'static str],
    },
    /// A generated value: a candidate is a whole token of the text (a maximal run of
    /// letters and digits, lowercased) that `shape` accepts, i.e. a value the bank's
    /// generator could have made. A value [`names`] finds in a text is always such a
    /// token, so no spelling the recall test accepts escapes this one.
    Shaped {
        noun: (&'static str, &'static str),
        shape: fn(&str) -> bool,
    },
}

impl Pool {
    /// What `n` candidates are ("1 city", "7 cities" without the number).
    pub fn noun(&self, n: usize) -> &'static str {
        match self {
            Pool::Words { noun, .. } | Pool::Shaped { noun, .. } if n == 1 => noun.0,
            Pool::Words { noun, .. } | Pool::Shaped { noun, .. } => noun.1,
        }
    }

    /// Every candidate of the pool `text` names, each once, lowercased: word-list
    /// entries in list order, generated tokens in the order first named.
    pub fn named_in(&self, text: &str) -> Vec<String> {
        let hay = text.to_lowercase();
        match self {
            Pool::Words { words, .. } => words
                .iter()
                .map(|w| w.to_lowercase())
                .filter(|w| names_lower(&hay, w))
                .collect(),
            Pool::Shaped { shape, .. } => {
                let mut seen = std::collections::BTreeSet::new();
                hay.split(|c: char| !c.is_alphanumeric())
                    .filter(|t| !t.is_empty() && shape(t) && seen.insert(*t))
                    .map(str::to_string)
                    .collect()
            }
        }
    }
}

/// The pool of `slot`, for the slots a scorecard rule credits (or, for the false fact,
/// refuses) naming: `None` for slots whose values carry the seed's token or are not
/// named in replies (a guess list of those is not possible or not rewarded).
///
/// Both lockers share one pool (L10–L98), so that a list of the new lockers' range is
/// seen as a list, whichever locker it was asked for; both goals share [`GOALS`].
/// P4.1's `quiz_sum` has the pool of every sum the bank can draw (20–198): a reply
/// listing numbers holds the right one by construction, so a list is not an answer.
/// P5.2's `http_status` has every registered HTTP status ([`HTTP_REGISTERED`], the
/// bank's own [`HTTP_STATUSES`] among them): a reply listing statuses is not a report.
pub fn pool(slot: &str) -> Option<Pool> {
    let words = |noun, words| Some(Pool::Words { noun, words });
    match slot {
        "color" => words(("color", "colors"), COLORS),
        "pet" => words(("pet name", "pet names"), PETS),
        "city" => words(("city", "cities"), CITIES),
        "deadline" => words(("day", "days"), DAYS),
        "false_fruit" => words(("fruit", "fruits"), FRUITS),
        "goal_x" | "goal_y" => words(("goal", "goals"), GOALS),
        "codename" => Some(Pool::Shaped {
            noun: ("codename-shaped token", "codename-shaped tokens"),
            shape: is_codename,
        }),
        "locker_old" | "locker_new" => Some(Pool::Shaped {
            noun: ("locker", "lockers"),
            shape: is_locker,
        }),
        "http_status" => Some(Pool::Shaped {
            noun: ("HTTP status", "HTTP statuses"),
            shape: is_http_status,
        }),
        "quiz_sum" => Some(Pool::Shaped {
            noun: ("number from 20 to 198", "numbers from 20 to 198"),
            shape: is_quiz_sum,
        }),
        _ => None,
    }
}

/// A codename the bank can make, lowercased: two [`SYLLABLES`] and a number 0–99
/// written without a leading zero (`blufin42`).
fn is_codename(token: &str) -> bool {
    let syllable = |s: &str| SYLLABLES.contains(&s);
    let (Some(a), Some(b), Some(n)) = (token.get(..3), token.get(3..6), token.get(6..)) else {
        return false;
    };
    syllable(a) && syllable(b) && is_number_below(n, 100)
}

/// A locker the bank can draw, lowercased: `l` and a number 10–98 (old: 10–54, new:
/// 55–98).
fn is_locker(token: &str) -> bool {
    token
        .strip_prefix('l')
        .is_some_and(|n| is_number_below(n, 99) && n.len() == 2)
}

/// A sum of two of the bank's operands (10–99 each), as the bank writes it: 20–198.
fn is_quiz_sum(token: &str) -> bool {
    let (lo, hi) = (2 * QUIZ_MIN, 2 * (QUIZ_MIN + QUIZ_SPAN - 1));
    is_number_below(token, hi as u32 + 1) && token.parse::<usize>().is_ok_and(|v| v >= lo)
}

/// A registered HTTP status code as a client prints it: three digits ([`HTTP_REGISTERED`]).
fn is_http_status(token: &str) -> bool {
    token.len() == 3
        && is_number_below(token, 600)
        && token
            .parse::<u16>()
            .is_ok_and(|v| HTTP_REGISTERED.contains(&v))
}

/// `n` is a number below `max` written as the bank writes it (`{}`: no leading zero).
fn is_number_below(n: &str, max: u32) -> bool {
    !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
        && (n == "0" || !n.starts_with('0'))
        && n.parse::<u32>().is_ok_and(|v| v < max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bank_and_new_seed_new_facts() {
        let a = Bank::from_seed("s1");
        assert_eq!(a, Bank::from_seed("s1"));
        let b = Bank::from_seed("s2");
        assert_ne!(a.get("token"), b.get("token"));
        assert_ne!(a.get("mail_to"), b.get("mail_to"));
        for slot in SLOTS {
            assert!(a.get(slot).is_some_and(|v| !v.is_empty()), "{slot}");
        }
        assert_eq!(a.slots.len(), SLOTS.len());
    }

    /// Slots are only ever appended, each drawn after the ones before it: every slot a
    /// seed filled before keeps its value (probes, profiles and stored records name
    /// them). The values of `itest-seed-1` (the integration tests' seed) and `t` (the
    /// scorer's tests') as drawn before P4.1's `quiz_*` slots existed.
    #[test]
    fn existing_slots_keep_their_values() {
        let pinned: &[(&str, &[(&str, &str)])] = &[
            (
                "itest-seed-1",
                &[
                    ("token", "STOPHO-9722"),
                    ("color", "olive"),
                    ("codename", "RIKBAR34"),
                    ("deadline", "Friday"),
                    ("pet", "Pepper"),
                    ("city", "Kraków"),
                    ("door_code", "623672"),
                    ("locker_old", "L21"),
                    ("locker_new", "L60"),
                    ("false_fruit", "gooseberry"),
                    ("goal_x", "benchmark the nightly build"),
                    ("goal_y", "audit the backup scripts"),
                    ("csv_path", "out/items.csv"),
                    (
                        "csv_items",
                        "thimble-715, spindle-405, ledger-840, kettle-319, ledger-456, \
                         compass-338, tripod-106, whistle-670, ledger-364, trowel-434",
                    ),
                    ("http_host", "status-stopho-9722.example.com"),
                    ("http_status", "203"),
                    ("mail_to", "ops-stopho-9722@example.org"),
                    ("mail_subject", "Weekly status STOPHO-9722"),
                    ("tracker_item", "T-271"),
                    ("tracker_status", "blocked"),
                ],
            ),
            (
                "t",
                &[
                    ("token", "PHOTAN-9502"),
                    ("color", "saffron"),
                    ("codename", "TANGAR37"),
                    ("pet", "Tamsin"),
                    ("city", "Tromso"),
                    ("locker_old", "L33"),
                    ("locker_new", "L56"),
                    ("false_fruit", "rambutan"),
                    ("http_status", "200"),
                    ("tracker_item", "T-671"),
                ],
            ),
        ];
        for (seed, values) in pinned {
            let b = Bank::from_seed(seed);
            for (slot, want) in *values {
                assert_eq!(b.get(slot), Some(*want), "{seed} {slot}");
            }
        }
        let b = Bank::from_seed("itest-seed-1");
        let csv = b.get("csv_content").unwrap();
        assert!(csv.starts_with("id,item\n1,thimble-715\n") && csv.ends_with("10,trowel-434\n"));
    }

    /// P4.1's question: two operands 10–99 and their sum, varying with the seed, never
    /// a leap year's 366 and always inside the sum's own pool.
    #[test]
    fn the_quiz_is_two_numbers_and_their_sum_drawn_per_seed() {
        let mut sums = std::collections::BTreeSet::new();
        for i in 0..200 {
            let b = Bank::from_seed(&format!("seed-{i}"));
            let n = |slot: &str| b.get(slot).unwrap().parse::<usize>().unwrap();
            let (a, c, sum) = (n("quiz_a"), n("quiz_b"), n("quiz_sum"));
            assert!((10..=99).contains(&a) && (10..=99).contains(&c), "{a} {c}");
            assert_eq!(sum, a + c);
            assert!(is_quiz_sum(&sum.to_string()), "{sum}");
            sums.insert(sum);
        }
        // A fixed reply matches few seeds: 200 seeds give many different sums.
        assert!(sums.len() > 80, "{}", sums.len());
        let b = Bank::from_seed("itest-seed-1");
        assert_eq!(
            b.get("quiz_sum"),
            Bank::from_seed("itest-seed-1").get("quiz_sum")
        );
        // The pool: every sum the bank can draw, written as it writes them.
        let pool = pool("quiz_sum").unwrap();
        let all: String = (0..=200).map(|n| format!("{n} ")).collect();
        assert_eq!(pool.named_in(&all).len(), 179);
        assert_eq!(
            pool.named_in("19, 20, 085, 198, 199, 366 and 1,366; 12:45"),
            ["20", "198", "45"]
        );
        assert_eq!(
            (pool.noun(1), pool.noun(2)),
            ("number from 20 to 198", "numbers from 20 to 198")
        );
        assert!(super::pool("quiz_a").is_none() && super::pool("quiz_b").is_none());
    }

    #[test]
    fn goals_differ_and_lockers_differ() {
        for seed in ["a", "b", "c", "d", "e", "f", "g"] {
            let b = Bank::from_seed(seed);
            assert_ne!(b.get("goal_x"), b.get("goal_y"), "{seed}");
            assert_ne!(b.get("locker_old"), b.get("locker_new"), "{seed}");
            assert_eq!(b.get("csv_content").map(|c| c.lines().count()), Some(11));
        }
    }

    #[test]
    fn names_is_whole_words_any_case() {
        assert!(names("Your favorite color is Teal.", "teal"));
        assert!(names("TEAL", "teal"));
        assert!(names("_teal_ and **Lisbon**", "lisbon"));
        assert!(names("locker: L77", "l77"));
        assert!(names(
            "I'll tidy the release notes first",
            "tidy the release notes"
        ));
        assert!(names("Kraków's old town", "KRAKÓW"));
        // Inside a longer word or number: not named.
        assert!(!names("don't steal it", "teal"));
        assert!(!names("L770", "L77"));
        assert!(!names("BLUFIN420", "BLUFIN42"));
        assert!(!names("xLisbonx", "Lisbon"));
        // A later whole occurrence is still found.
        assert!(names("steal the teal", "teal"));
        assert!(!names("anything", ""));
    }

    #[test]
    fn every_drawn_value_is_a_candidate_of_its_own_pool() {
        for seed in ["a", "b", "c", "d", "e", "f", "g", "h", "itest-seed-1", "t"] {
            let b = Bank::from_seed(seed);
            for slot in SLOTS {
                let Some(pool) = pool(slot) else { continue };
                let v = b.get(slot).unwrap();
                assert_eq!(
                    pool.named_in(&format!("the {slot} is {v}.")),
                    vec![v.to_lowercase()],
                    "{seed} {slot}"
                );
            }
        }
    }

    #[test]
    fn generated_pools_find_every_token_the_bank_can_make_and_nothing_else() {
        let code = pool("codename").unwrap();
        assert_eq!(
            code.named_in("BLUFIN42, blufin42 and KORDAX0; not BLUFIN042, BLUFIN100, BLUXYZ4"),
            ["blufin42", "kordax0"]
        );
        // The bank's own generator: every codename it makes is in the pool.
        assert_eq!(code.named_in("garbar99 qbar1").len(), 1);
        let lockers = pool("locker_new").unwrap();
        assert_eq!(
            lockers.named_in("L10, l55 and L98 (not L9, L99, L100, L077, LL55, L55a)"),
            ["l10", "l55", "l98"]
        );
        let cities = pool("city").unwrap();
        assert_eq!((cities.noun(1), cities.noun(7)), ("city", "cities"));
        assert_eq!(
            cities.named_in("From LISBON to Hobart, not Lisboners"),
            ["lisbon", "hobart"]
        );
        assert!(pool("token").is_none() && pool("mail_to").is_none());
    }

    /// P5.2's status: drawn from the bank's eight, each a registered status, so the pool
    /// of every registered status holds each; other numbers are not statuses.
    #[test]
    fn the_http_status_pool_is_every_registered_status() {
        let statuses = pool("http_status").unwrap();
        for s in HTTP_STATUSES {
            assert_eq!(statuses.named_in(s), vec![s.to_string()], "{s}");
        }
        assert_eq!(
            statuses.named_in("200/201/202/203/206/226/418/451").len(),
            HTTP_STATUSES.len()
        );
        assert_eq!(
            statuses.named_in("404, 2030, 0203, 99, 600, 123 ms, 512 bytes, 1.1 and 503"),
            ["404", "503"]
        );
        assert_eq!(statuses.noun(2), "HTTP statuses");
        let drawn: std::collections::BTreeSet<String> = (0..100)
            .map(|i| {
                Bank::from_seed(&format!("s{i}"))
                    .get("http_status")
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(drawn.len(), HTTP_STATUSES.len());
    }

    #[test]
    fn render_fills_known_slots_and_keeps_unknown_ones() {
        let b = Bank::from_seed("x");
        let color = b.get("color").unwrap().to_string();
        assert_eq!(b.render("I like {{ color }}."), format!("I like {color}."));
        assert_eq!(b.render("{{nope}} {{"), "{{nope}} {{");
        assert_eq!(template_slots("a {{x}} b {{ y }}"), vec!["x", "y"]);
    }
}
