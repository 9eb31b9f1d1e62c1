//! The notes themselves, in memory: pure state, no I/O, so that every behaviour (and
//! every mutant) is testable without a socket.

use serde::Serialize;

use crate::mutant::Mutant;

/// Longest accepted note, in characters.
pub const MAX_CHARS: usize = 500;
/// Where the `add-note` mutant cuts a note's text.
pub const TRUNCATE_AT: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    pub id: u64,
    pub text: String,
}

/// Why a note was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("note text is empty")]
    Empty,
    #[error("note text is longer than 500 characters")]
    TooLong,
}

#[derive(Debug)]
pub struct Notes {
    mutant: Option<Mutant>,
    next_id: u64,
    /// Oldest first.
    notes: Vec<Note>,
    /// Notes added since the last clear: what the `count-notes` mutant reports.
    added_since_clear: usize,
}

impl Notes {
    pub fn new(mutant: Option<Mutant>) -> Notes {
        Notes {
            mutant,
            next_id: 1,
            notes: Vec::new(),
            added_since_clear: 0,
        }
    }

    /// Add a note; its text is stored without surrounding whitespace.
    pub fn add(&mut self, text: &str) -> Result<Note, Refusal> {
        let stored = text.trim();
        let empty = if self.mutant == Some(Mutant::RejectEmptyNote) {
            text.is_empty()
        } else {
            stored.is_empty()
        };
        if empty {
            return Err(Refusal::Empty);
        }
        if stored.chars().count() > MAX_CHARS {
            return Err(Refusal::TooLong);
        }
        let stored = if self.mutant == Some(Mutant::AddNote) {
            stored.chars().take(TRUNCATE_AT).collect()
        } else {
            stored.to_string()
        };
        let note = Note {
            id: self.next_id,
            text: stored,
        };
        self.next_id += 1;
        self.added_since_clear += 1;
        self.notes.push(note.clone());
        Ok(note)
    }

    /// How many notes are stored.
    pub fn count(&self) -> usize {
        if self.mutant == Some(Mutant::CountNotes) {
            self.added_since_clear
        } else {
            self.notes.len()
        }
    }

    /// Notes whose text contains `query`, ignoring case; all notes for an empty query.
    pub fn search(&self, query: &str) -> Vec<Note> {
        let sensitive = self.mutant == Some(Mutant::Search);
        let needle = if sensitive {
            query.to_string()
        } else {
            query.to_lowercase()
        };
        self.notes
            .iter()
            .filter(|n| {
                if sensitive {
                    n.text.contains(&needle)
                } else {
                    n.text.to_lowercase().contains(&needle)
                }
            })
            .cloned()
            .collect()
    }

    /// Delete the note `id`; `false` when there is none.
    pub fn delete(&mut self, id: u64) -> bool {
        let Some(pos) = self.notes.iter().position(|n| n.id == id) else {
            return false;
        };
        if self.mutant == Some(Mutant::DeleteNote) {
            self.notes.pop();
        } else {
            self.notes.remove(pos);
        }
        true
    }

    /// Delete every note; returns how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.notes.len();
        self.notes.clear();
        self.added_since_clear = 0;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(n: &mut Notes, text: &str) -> Note {
        n.add(text)
            .unwrap_or_else(|e| panic!("{text:?} refused: {e}"))
    }

    #[test]
    fn adds_counts_searches_deletes_and_clears() {
        let mut n = Notes::new(None);
        let a = add(&mut n, "  Buy MILK ");
        assert_eq!(a.text, "Buy MILK");
        let b = add(&mut n, "milk shake");
        add(&mut n, "walk the dog");
        assert_ne!(a.id, b.id);
        assert_eq!(n.count(), 3);
        let hits: Vec<u64> = n.search("mIlK").iter().map(|x| x.id).collect();
        assert_eq!(hits, vec![a.id, b.id]);
        assert_eq!(n.search("").len(), 3);
        assert!(n.delete(a.id));
        assert!(!n.delete(a.id));
        assert_eq!(n.count(), 2);
        assert_eq!(n.search("buy"), vec![]);
        assert_eq!(n.clear(), 2);
        assert_eq!(n.count(), 0);
    }

    #[test]
    fn refuses_empty_and_overlong_notes() {
        let mut n = Notes::new(None);
        for empty in ["", "   ", "\n\t "] {
            assert_eq!(n.add(empty), Err(Refusal::Empty), "{empty:?}");
        }
        assert_eq!(n.add(&"x".repeat(501)), Err(Refusal::TooLong));
        assert!(n.add(&"é".repeat(500)).is_ok());
        assert_eq!(n.count(), 1);
    }

    #[test]
    fn each_mutant_breaks_its_capability() {
        let mut m = Notes::new(Some(Mutant::AddNote));
        assert_eq!(
            add(&mut m, "call the plumber about the sink").text,
            "call the plumber"
        );
        assert_eq!(add(&mut m, "short note").text, "short note");

        let mut m = Notes::new(Some(Mutant::CountNotes));
        let a = add(&mut m, "a");
        add(&mut m, "b");
        assert!(m.delete(a.id));
        assert_eq!((m.count(), m.search("").len()), (2, 1));

        let mut m = Notes::new(Some(Mutant::Search));
        add(&mut m, "Buy MILK");
        assert_eq!(m.search("milk").len(), 0);

        let mut m = Notes::new(Some(Mutant::DeleteNote));
        let a = add(&mut m, "a");
        add(&mut m, "b");
        assert!(m.delete(a.id));
        assert_eq!(m.search("")[0].text, "a");

        let mut m = Notes::new(Some(Mutant::RejectEmptyNote));
        assert_eq!(m.add(""), Err(Refusal::Empty));
        assert_eq!(m.add("   ").map(|n| n.text), Ok(String::new()));
        assert_eq!(add(&mut m, " x ").text, "x");
    }
}
