//! What a report is computed with besides the records.

use super::prices::PriceTable;
use super::thresholds::Thresholds;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub prices: PriceTable,
    pub thresholds: Thresholds,
}
