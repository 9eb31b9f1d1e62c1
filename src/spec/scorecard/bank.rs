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
        // Statuses a guess gets wrong most of the time, which any client reports as is.
        let statuses = ["200", "201", "202", "203", "206", "226", "418", "451"];
        put("http_status", statuses[rng.below(statuses.len())].into());
        put(
            "mail_to",
            format!("ops-{}@example.org", token.to_ascii_lowercase()),
        );
        put("mail_subject", format!("Weekly status {token}"));
        put("tracker_item", format!("T-{}", 100 + rng.below(900)));
        // The status the harness moves the task to while the agent is idle (P3.3).
        put("tracker_status", "blocked".into());
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
    fn render_fills_known_slots_and_keeps_unknown_ones() {
        let b = Bank::from_seed("x");
        let color = b.get("color").unwrap().to_string();
        assert_eq!(b.render("I like {{ color }}."), format!("I like {color}."));
        assert_eq!(b.render("{{nope}} {{"), "{{nope}} {{");
        assert_eq!(template_slots("a {{x}} b {{ y }}"), vec!["x", "y"]);
    }
}
