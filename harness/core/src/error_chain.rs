//! An error and its causes as text. A message says what failed and keeps its cause as
//! [`Error::source`] without repeating the cause's words, so the whole story is the chain:
//! the CLI prints it one cause to a line, and where an error's text is data (a record's
//! `error`, a tool result the model reads, a policy's failure reason) [`one_line`] joins it.

use std::error::Error;

/// The error's message, then each cause in turn (its `source`, that one's `source`, …).
pub fn chain<'a>(
    error: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(error), |e: &&'a (dyn Error + 'static)| (*e).source())
}

/// The error and its causes on one line, each after `: `:
/// `cannot read src/a.py: No such file or directory (os error 2)`.
pub fn one_line(error: &(dyn Error + 'static)) -> String {
    let mut line = String::new();
    for (i, e) in chain(error).enumerate() {
        if i > 0 {
            line.push_str(": ");
        }
        line.push_str(&e.to_string());
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read {path}")]
    struct Read {
        path: &'static str,
        #[source]
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("setup")]
    struct Setup(#[source] Read);

    #[test]
    fn one_line_joins_the_message_and_each_cause() {
        let e = Setup(Read {
            path: "a.py",
            source: std::io::Error::other("gone"),
        });
        assert_eq!(one_line(&e), "setup: cannot read a.py: gone");
        assert_eq!(chain(&e).count(), 3);
        assert_eq!(one_line(&std::io::Error::other("alone")), "alone");
    }
}
