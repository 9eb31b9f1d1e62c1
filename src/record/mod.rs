//! Append-only records: one `record.json` per trial, beside the raw evidence it names.
//!
//! One record family: a shared header ([`header`]) and one file per suite holding its
//! record type, its loader and its re-derivation ([`qa`], [`challenge`],
//! [`scorecard`]), each implementing what every reader asks of a record
//! ([`suite::SuiteRecord`]); [`any`] reads a file of any suite and checks it. This file
//! only indexes them: the files below import one another, never this one, so they
//! import one way and each can be read knowing only what is below it.

pub mod any;
pub mod challenge;
pub mod digest;
pub mod files;
pub mod hackability;
pub mod header;
pub mod identity;
pub mod manifest;
pub mod merge;
pub mod origin;
pub mod qa;
pub mod raw;
pub mod rescore;
pub mod row;
pub mod schema;
pub mod scorecard;
mod stream;
pub mod suite;
pub mod unfinished;

pub use files::{create_trial_dir, find_records, is_trial_dir_of, write_new_json};
pub use header::{
    load_header, load_header_bytes, trial_of, trial_of_bytes, unsealed_tag, Header, RecordConfig,
    RecordError, RECORD_FILE, SCHEMA_VERSION,
};
pub use origin::{gauntlet_commit, replace_whole, run_file, run_id};
pub use qa::{load, load_bytes, summary_line, QaRecord, QaSpecRef};
pub use suite::SuiteRecord;
