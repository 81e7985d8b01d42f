//! Support for the actuator crates' golden tests: a runner that refuses to run anything (so a
//! test proves that planning is pure) and the comparison of a rendering with its committed
//! golden file, regenerated on request with `UPDATE_GOLDEN=1`.

use crate::{Command, Output, RunError, Runner};
use std::path::Path;

/// A runner that fails the calling test if asked to run anything: planning must not.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCommands;

impl Runner for NoCommands {
    fn run(&self, cmd: &Command) -> Result<Output, RunError> {
        panic!("planning ran a command: {cmd}");
    }
}

/// Asserts that `actual` equals the golden file `dir/name`; with `UPDATE_GOLDEN` set in the
/// environment, writes `actual` there instead (review the diff before committing).
pub fn assert_golden(dir: &Path, name: &str, actual: &str) {
    let path = dir.join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap_or_else(|e| panic!("{}: cannot write: {e}", path.display()));
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1 to create it", path.display()));
    assert_eq!(
        actual, want,
        "rendering of {name} changed; review and regenerate with UPDATE_GOLDEN=1"
    );
}
