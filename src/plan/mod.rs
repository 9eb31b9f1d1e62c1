//! Planning trials: every suite's data, loaded and validated, becomes one list of
//! [`Trial`]s with stable names, each decided at list time to run or to be ignored
//! with its reason.
//!
//! Listing parses data only (manifests, corpora, flows): no process, socket or
//! workspace exists until a trial runs, because nextest lists every test binary before
//! each run and then runs each trial in its own process. What the machine lacks (a
//! browser) is asked by the caller and handed in, so planning stays a function of its
//! inputs.

pub mod names;
pub mod partition;

use std::any::Any;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use crate::spec::{CapabilityKind, LoadedApp, Modality, SpecError, Suite};

/// One planned trial of any suite.
#[derive(Debug, Clone)]
pub struct Trial {
    /// Stable test name (see [`names`]).
    pub name: String,
    pub suite: Suite,
    pub unit: Unit,
    /// The kind of capability the trial checks, for a suite whose tasks have kinds (the
    /// live progress counts ambiguous ones apart).
    pub kind: Option<CapabilityKind>,
    /// Decided at list time, with the reason, so that a skipped trial is reported as
    /// ignored and never as a silent pass.
    pub skip: Option<String>,
}

/// What a trial runs, in its suite's own terms (which app and capability, which
/// challenge and profile, which probe): the suite that planned it reads it back with
/// [`Unit::get`], and no other code looks inside, so a new suite brings its own unit
/// without a change here. Shared: the run loop clones each trial into its lane, and a
/// clone copies a pointer.
#[derive(Clone)]
pub struct Unit(Arc<dyn UnitData>);

/// What a suite's unit type must be: any plain data.
trait UnitData: Any + Debug + Send + Sync {}
impl<T: Any + Debug + Send + Sync> UnitData for T {}

impl Unit {
    pub fn new<T: Any + Debug + Send + Sync>(unit: T) -> Unit {
        Unit(Arc::new(unit))
    }

    /// The unit as the suite that planned it wrote it; `None` for another suite's.
    pub fn get<T: Any>(&self) -> Option<&T> {
        let any: &dyn Any = &*self.0;
        any.downcast_ref()
    }
}

impl Debug for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Everything the suites run on, loaded and checked before anything starts: each
/// suite's data in a type of its own, put in by the suite's loader and read back by
/// the suite with [`Suites::get`].
#[derive(Default)]
pub struct Suites {
    loaded: Vec<Box<dyn Any + Send + Sync>>,
}

impl Suites {
    /// Hold `data`, replacing any held of its type.
    pub fn insert<T: Any + Send + Sync>(&mut self, data: T) {
        self.loaded.retain(|d| !d.is::<T>());
        self.loaded.push(Box::new(data));
    }

    /// The data of type `T`, if a suite loaded it.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.loaded.iter().find_map(|d| d.downcast_ref())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A setting names data the suite does not have.
    #[error("{setting}=`{value}`: {source}")]
    Setting {
        setting: &'static str,
        value: String,
        #[source]
        source: SpecError,
    },
}

/// Apps driven through Chromium: their trials need a browser on the machine.
pub fn needs_browser(m: Modality) -> bool {
    matches!(m, Modality::BrowserFlow | Modality::BrowserExtension)
}

/// Why browser trials are ignored here, if they are: no Chromium, outside CI. In CI
/// they run, and the missing browser is the trial's `error`, naming it.
pub fn browser_skip(available: Option<&Path>, wanted: &Path, ci: bool) -> Option<String> {
    (available.is_none() && !ci).then(|| {
        format!(
            "chromium not found at {} (install Debian's `chromium` package or set GAUNTLET_CHROMIUM)",
            wanted.display()
        )
    })
}

/// Load apps and refuse any frozen app whose content no longer matches its hash.
pub fn load_apps_checked(dir: &Path) -> Result<Vec<LoadedApp>, SpecError> {
    let apps = crate::spec::load_apps(dir)?;
    for a in &apps {
        if a.app.frozen {
            let now = a.app.compute_content_hash()?;
            if now != a.app.content_hash {
                return Err(SpecError::Invalid {
                    file: a.app.dir.join("app.json"),
                    field: "content_hash".into(),
                    reason: format!(
                        "frozen app changed: content hashes to {now}; changing a frozen app's behaviour means a new app"
                    ),
                });
            }
        }
    }
    Ok(apps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_and_a_suite_s_data_read_back_only_as_their_own_type() {
        #[derive(Debug, PartialEq)]
        struct Probe(usize);
        let unit = Unit::new(Probe(3));
        assert_eq!(unit.get::<Probe>(), Some(&Probe(3)));
        assert_eq!(unit.get::<usize>(), None);
        assert_eq!(format!("{unit:?}"), "Probe(3)");
        let mut suites = Suites::default();
        suites.insert(Probe(1));
        suites.insert(Probe(2));
        suites.insert(7usize);
        assert_eq!(suites.get::<Probe>(), Some(&Probe(2)));
        assert_eq!(suites.get::<usize>(), Some(&7));
        assert_eq!(suites.get::<u32>(), None);
    }

    #[test]
    fn a_missing_browser_is_ignored_with_its_path_except_in_ci() {
        let wanted = Path::new("/nope/chromium");
        let why = browser_skip(None, wanted, false).expect("ignored outside CI");
        assert!(why.contains("/nope/chromium"), "{why}");
        assert_eq!(browser_skip(None, wanted, true), None);
        assert_eq!(browser_skip(Some(wanted), wanted, false), None);
        assert!(needs_browser(Modality::BrowserExtension) && needs_browser(Modality::BrowserFlow));
        assert!(!needs_browser(Modality::HttpApi) && !needs_browser(Modality::Cli));
    }
}
