//! One external command as an argument vector, with optional standard input; rendering only.
//!
//! Commands are never passed through a shell on this machine. The rendering quotes each
//! argument the way a POSIX shell would read it back, so a dry run can be pasted into a
//! terminal; [`Command::shell_words`] is the same quoting, used where a remote side (SSH) only
//! accepts one command string.

use std::fmt;

/// An external command: program and arguments, plus bytes for its standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// `argv[0]` is the program (looked up in `PATH`), the rest its arguments.
    pub argv: Vec<String>,
    /// Text written to the command's standard input (a CLI session script, for instance).
    pub stdin: Option<String>,
}

impl Command {
    /// A command from its program and arguments.
    pub fn new<I, S>(argv: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Command {
            argv: argv.into_iter().map(Into::into).collect(),
            stdin: None,
        }
    }

    /// The same command, fed `text` on standard input.
    pub fn with_stdin(mut self, text: impl Into<String>) -> Command {
        self.stdin = Some(text.into());
        self
    }

    /// The program name (empty if the vector is empty).
    pub fn program(&self) -> &str {
        self.argv.first().map(String::as_str).unwrap_or("")
    }

    /// The arguments quoted for a POSIX shell and joined by spaces.
    pub fn shell_words(&self) -> String {
        self.argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
    }
}

/// Quotes one word for a POSIX shell: bare when it only holds safe characters, else in single
/// quotes with embedded single quotes closed, escaped and reopened.
fn quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%^".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shell_words())?;
        if let Some(input) = &self.stdin {
            write!(f, " <<'EOF'\n{}", input)?;
            if !input.ends_with('\n') {
                f.write_str("\n")?;
            }
            f.write_str("EOF")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_bare_and_others_are_quoted() {
        let c = Command::new(["tc", "-n", "pp-sw", "class", "change", "it's", "a b", ""]);
        assert_eq!(c.to_string(), r"tc -n pp-sw class change 'it'\''s' 'a b' ''");
    }

    #[test]
    fn stdin_is_rendered_as_a_here_document() {
        let c = Command::new(["ssh", "sw"]).with_stdin("configure\nend");
        assert_eq!(c.to_string(), "ssh sw <<'EOF'\nconfigure\nend\nEOF");
    }
}
