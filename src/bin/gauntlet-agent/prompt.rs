//! The messages the model works from. The task itself is the harness's one prompt
//! (`gauntlet::suites::qa::prompt` for qa, a challenge's rendered layers for a task);
//! this agent adds only a system message naming its own tools.

pub struct Prompt {
    pub system: String,
    pub user: String,
}
