//! The test-flow file (docs/test-flows.md), parsed strictly.
//!
//! A flow is written by an agent and re-run by the harness as its proof, so a typo
//! must not quietly turn a check into nothing: unknown fields are refused, an
//! expectation that cannot apply to its step is refused, and every error names the
//! file and the field path (`steps[2].expect.status`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum TestFlowError {
    #[error("{file}: {reason}")]
    Read { file: PathBuf, reason: String },
    #[error("{file}: {field}: {reason}")]
    Invalid {
        file: PathBuf,
        field: String,
        reason: String,
    },
}

/// A parsed flow.
#[derive(Debug, Clone, PartialEq)]
pub struct TestFlow {
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub expect: Option<Expect>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Http(HttpStep),
    Cli(CliStep),
    Browser(BrowserStep),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpStep {
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub json: Option<Value>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub headers: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliStep {
    pub args: Vec<String>,
    #[serde(default)]
    pub stdin: Option<String>,
}

/// One browser action: exactly one key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BrowserStep {
    Goto(String),
    Click(String),
    Type(TypeArgs),
    WaitFor(String),
    Text(String),
    Count(String),
    Badge(BadgeArgs),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeArgs {
    pub selector: String,
    pub text: String,
}

/// `{}`: the badge of the current tab; no options yet, and none are accepted.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadgeArgs {}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub status: Option<u16>,
    pub exit: Option<i32>,
    pub body_contains: Option<String>,
    pub stdout_contains: Option<String>,
    pub stderr_contains: Option<String>,
    pub contains: Option<String>,
    pub equals: Option<String>,
    pub not_contains: Option<String>,
}

impl Expect {
    /// The names of the expectations that are set, in a fixed order.
    pub fn set_fields(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |name, set: bool| {
            if set {
                out.push(name)
            }
        };
        add("status", self.status.is_some());
        add("exit", self.exit.is_some());
        add("body_contains", self.body_contains.is_some());
        add("stdout_contains", self.stdout_contains.is_some());
        add("stderr_contains", self.stderr_contains.is_some());
        add("contains", self.contains.is_some());
        add("equals", self.equals.is_some());
        add("not_contains", self.not_contains.is_some());
        out
    }
}

impl BrowserStep {
    /// Whether the step yields a value an expectation can look at.
    pub fn yields_value(&self) -> bool {
        matches!(
            self,
            BrowserStep::Text(_) | BrowserStep::Count(_) | BrowserStep::Badge(_)
        )
    }
}

impl Action {
    /// The expectations that make sense on this step's value.
    fn allowed_expectations(&self) -> &'static [&'static str] {
        const VALUE: &[&str] = &["contains", "equals", "not_contains"];
        match self {
            Action::Http(_) => &[
                "status",
                "body_contains",
                "contains",
                "equals",
                "not_contains",
            ],
            Action::Cli(_) => &[
                "exit",
                "stdout_contains",
                "stderr_contains",
                "contains",
                "equals",
                "not_contains",
            ],
            Action::Browser(b) if b.yields_value() => VALUE,
            Action::Browser(_) => &[],
        }
    }
}

impl TestFlow {
    pub fn load(file: &Path) -> Result<TestFlow, TestFlowError> {
        let text = std::fs::read_to_string(file).map_err(|e| TestFlowError::Read {
            file: file.to_path_buf(),
            reason: e.to_string(),
        })?;
        TestFlow::parse(file, &text)
    }

    /// Parse `text` as the flow in `file` (the name is only used in errors).
    pub fn parse(file: &Path, text: &str) -> Result<TestFlow, TestFlowError> {
        let invalid = |field: &str, reason: String| TestFlowError::Invalid {
            file: file.to_path_buf(),
            field: field.into(),
            reason,
        };
        let root: Value =
            serde_json::from_str(text).map_err(|e| invalid("(json)", e.to_string()))?;
        let Value::Object(root) = root else {
            return Err(invalid("(json)", "a flow is a JSON object".into()));
        };
        if let Some(k) = root.keys().find(|k| k.as_str() != "steps") {
            return Err(invalid(k, "unknown field; a flow has only `steps`".into()));
        }
        let steps = match root.get("steps") {
            None => return Err(invalid("steps", "is missing".into())),
            Some(Value::Array(a)) if a.is_empty() => {
                return Err(invalid(
                    "steps",
                    "is empty: a flow must check something".into(),
                ))
            }
            Some(Value::Array(a)) => a,
            Some(_) => return Err(invalid("steps", "is not an array".into())),
        };
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, v)| parse_step(&format!("steps[{i}]"), v).map_err(|(f, r)| invalid(&f, r)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(TestFlow { steps })
    }
}

/// One step, or (field path, reason).
fn parse_step(at: &str, v: &Value) -> Result<Step, (String, String)> {
    let Value::Object(obj) = v else {
        return Err((at.into(), "a step is a JSON object".into()));
    };
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "http" | "cli" | "browser" | "expect"))
    {
        return Err((
            format!("{at}.{k}"),
            "unknown field; a step has one of `http`, `cli`, `browser`, and an optional `expect`"
                .into(),
        ));
    }
    let kinds: Vec<&str> = ["http", "cli", "browser"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    let action = match kinds.as_slice() {
        ["http"] => {
            let h: HttpStep = field(at, "http", &obj["http"])?;
            if h.json.is_some() && h.body.is_some() {
                return Err((
                    format!("{at}.http"),
                    "`json` and `body` are exclusive".into(),
                ));
            }
            Action::Http(h)
        }
        ["cli"] => Action::Cli(field(at, "cli", &obj["cli"])?),
        ["browser"] => Action::Browser(field(at, "browser", &obj["browser"])?),
        [] => return Err((at.into(), "has none of `http`, `cli`, `browser`".into())),
        many => {
            return Err((
                at.into(),
                format!("has {} (exactly one per step)", many.join(" and ")),
            ))
        }
    };
    let expect: Option<Expect> = match obj.get("expect") {
        None => None,
        Some(e) => Some(field(at, "expect", e)?),
    };
    if let Some(e) = &expect {
        let allowed = action.allowed_expectations();
        if let Some(bad) = e.set_fields().into_iter().find(|f| !allowed.contains(f)) {
            let why = if allowed.is_empty() {
                "this step yields no value to expect anything of".to_string()
            } else {
                format!(
                    "does not apply to this step (it takes {})",
                    allowed.join(", ")
                )
            };
            return Err((format!("{at}.expect.{bad}"), why));
        }
    }
    Ok(Step { action, expect })
}

fn field<T: DeserializeOwned>(at: &str, name: &str, v: &Value) -> Result<T, (String, String)> {
    serde_json::from_value(v.clone()).map_err(|e| (format!("{at}.{name}"), e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<TestFlow, String> {
        TestFlow::parse(Path::new("f.json"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn the_documented_example_parses() {
        let doc = include_str!("../../docs/test-flows.md");
        let start = doc.find("```json\n").expect("example") + 8;
        let end = start + doc[start..].find("```").expect("end");
        let flow = parse(&doc[start..end]).expect("the doc's example is a valid flow");
        assert_eq!(flow.steps.len(), 9);
        assert_eq!(
            flow.steps[8].action,
            Action::Browser(BrowserStep::Badge(BadgeArgs {}))
        );
        assert!(matches!(
            &flow.steps[2].action,
            Action::Browser(BrowserStep::Goto(p)) if p == "/"
        ));
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let cases = [
            ("{", "f.json: (json)"),
            (r##"{"steps": [], "x": 1}"##, "f.json: x: unknown field"),
            (r##"{"steps": []}"##, "steps: is empty"),
            (
                r##"{"steps": [{"htp": {}}]}"##,
                "steps[0].htp: unknown field",
            ),
            (
                r##"{"steps": [{"http": {"method": "GET"}}]}"##,
                "steps[0].http: missing field `path`",
            ),
            (
                r##"{"steps": [{"http": {"method": "GET", "path": "/", "metod": 1}}]}"##,
                "steps[0].http: unknown field `metod`",
            ),
            (
                r##"{"steps": [{"cli": {"args": []}, "http": {"method": "GET", "path": "/"}}]}"##,
                "steps[0]: has http and cli",
            ),
            (
                r##"{"steps": [{"browser": {"goto": "/"}, "expect": {"equals": "x"}}]}"##,
                "steps[0].expect.equals: this step yields no value",
            ),
            (
                r##"{"steps": [{"cli": {"args": []}, "expect": {"status": 200}}]}"##,
                "steps[0].expect.status: does not apply",
            ),
            (
                r##"{"steps": [{"browser": {"text": "#a"}, "expect": {"equal": "1"}}]}"##,
                "steps[0].expect: unknown field `equal`",
            ),
            (
                r##"{"steps": [{"browser": {"badge": {"tab": 1}}}]}"##,
                "steps[0].browser: unknown field `tab`",
            ),
            (
                r##"{"steps": [{"browser": {"hover": "#a"}}]}"##,
                "steps[0].browser: unknown variant `hover`",
            ),
        ];
        for (text, want) in cases {
            let err = parse(text).expect_err(text);
            assert!(err.contains(want), "{text}: got `{err}`, want `{want}`");
        }
    }
}
