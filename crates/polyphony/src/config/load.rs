//! Reading a configuration file: parse, resolve relative paths against the file's directory,
//! validate, and load the scenario it names.

use super::{ConfigError, DaemonConfig, LoadedConfig, WorkloadSource};
use std::path::{Path, PathBuf};

/// The 1-based line of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl DaemonConfig {
    /// Parses TOML text; `path` names it in errors. Does not validate.
    pub fn parse(text: &str, path: &str) -> Result<DaemonConfig, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let mut why = e.message().trim().replace('\n', " ");
            // Quote the offending text when the message does not ("invalid socket address
            // syntax" says what, not which value).
            if let Some(at) = e.span().and_then(|r| text.get(r)).map(str::trim) {
                if !at.is_empty() && at.len() <= 80 && !at.contains('\n') && !why.contains(at) {
                    why = format!("{why}: {at}");
                }
            }
            ConfigError::Parse {
                path: path.into(),
                line: e.span().map(|r| line_of(text, r.start)).unwrap_or(0),
                why,
            }
        })
    }

    /// Reads, parses, resolves relative paths against the file's directory, validates, and
    /// loads the scenario the workload source names.
    pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        let mut config = DaemonConfig::parse(&text, &shown)?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        config.resolve_paths(&base);
        let scenario = config.validate(&shown)?;
        Ok(LoadedConfig {
            config,
            path: path.to_path_buf(),
            scenario,
        })
    }

    fn resolve_paths(&mut self, base: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        fix(&mut self.state_dir);
        if let Some(t) = &mut self.http.token_file {
            fix(t);
        }
        match &mut self.workload {
            WorkloadSource::Scenario { scenario } => fix(scenario),
            WorkloadSource::Trace { path } => fix(path),
            WorkloadSource::Workfeed { key_file, .. } => {
                if let Some(k) = key_file {
                    fix(k);
                }
            }
            WorkloadSource::Nats {
                key_file,
                password_file,
                token_file,
                credentials_file,
                ..
            } => {
                for f in [key_file, password_file, token_file, credentials_file]
                    .into_iter()
                    .flatten()
                {
                    fix(f);
                }
            }
        }
    }
}
