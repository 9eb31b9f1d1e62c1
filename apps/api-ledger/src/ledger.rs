//! The ledger itself: transactions by id and amounts by account, in memory.
//!
//! Pure state, no I/O, so that every behaviour (and every mutant) is testable
//! without a socket. Amounts are integer cents and arrive here already validated.

use std::collections::HashMap;

use serde::Serialize;

use crate::mutant::Mutant;

/// One recorded transaction, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transaction {
    pub id: String,
    pub account: String,
    pub amount: i64,
}

#[derive(Debug)]
pub struct Ledger {
    mutant: Option<Mutant>,
    next_id: u64,
    by_id: HashMap<String, Transaction>,
    /// Amounts per account in the order they were recorded. Kept apart from `by_id`
    /// so that the `record-transaction` mutant (which corrupts the stored copy) does
    /// not also break balances.
    by_account: HashMap<String, Vec<i64>>,
}

impl Ledger {
    pub fn new(mutant: Option<Mutant>) -> Ledger {
        Ledger {
            mutant,
            next_id: 1,
            by_id: HashMap::new(),
            by_account: HashMap::new(),
        }
    }

    /// Record a transaction and return it as posted, with its new id.
    pub fn record(&mut self, account: String, amount: i64) -> Transaction {
        let id = format!("tx-{}", self.next_id);
        self.next_id += 1;
        let posted = Transaction {
            id: id.clone(),
            account,
            amount,
        };
        let mut stored = posted.clone();
        if self.mutant == Some(Mutant::RecordTransaction) {
            stored.amount = amount.wrapping_add(1);
        }
        self.by_account
            .entry(posted.account.clone())
            .or_default()
            .push(amount);
        self.by_id.insert(id, stored);
        posted
    }

    pub fn get(&self, id: &str) -> Option<&Transaction> {
        self.by_id.get(id)
    }

    /// Sum of the account's amounts; 0 for an account never seen.
    ///
    /// Saturates instead of overflowing: amounts are capped at 10^12 cents, so only
    /// millions of maximal transactions on one account could reach the `i64` limit.
    pub fn balance(&self, account: &str) -> i64 {
        let amounts = self.by_account.get(account).map_or(&[][..], Vec::as_slice);
        let counted = if self.mutant == Some(Mutant::Balance) {
            &amounts[..amounts.len().saturating_sub(1)]
        } else {
            amounts
        };
        counted.iter().fold(0i64, |sum, a| sum.saturating_add(*a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_sums_per_account() {
        let mut l = Ledger::new(None);
        let a = l.record("alice".into(), 500);
        let b = l.record("alice".into(), -200);
        l.record("bob".into(), 7);
        assert_ne!(a.id, b.id);
        assert_eq!(l.get(&a.id), Some(&a));
        assert_eq!(l.balance("alice"), 300);
        assert_eq!(l.balance("bob"), 7);
        assert_eq!(l.balance("carol"), 0);
        assert_eq!(l.get("tx-999"), None);
    }

    #[test]
    fn record_mutant_corrupts_the_stored_copy_but_not_the_balance() {
        let mut l = Ledger::new(Some(Mutant::RecordTransaction));
        let t = l.record("alice".into(), 500);
        assert_eq!(t.amount, 500, "the 201 answer still echoes the post");
        assert_eq!(l.get(&t.id).map(|s| s.amount), Some(501));
        assert_eq!(l.balance("alice"), 500);
    }

    #[test]
    fn balance_mutant_drops_the_most_recent_transaction() {
        let mut l = Ledger::new(Some(Mutant::Balance));
        assert_eq!(l.balance("alice"), 0);
        l.record("alice".into(), 500);
        l.record("alice".into(), 1000);
        assert_eq!(l.balance("alice"), 500);
        let t = l.record("bob".into(), 9);
        assert_eq!(l.get(&t.id), Some(&t), "records are untouched");
    }

    #[test]
    fn balance_saturates() {
        let mut l = Ledger::new(None);
        l.record("a".into(), i64::MAX);
        l.record("a".into(), 1);
        assert_eq!(l.balance("a"), i64::MAX);
    }
}
