//! `foldbench fold`: the fold result of turns FROM..=TO of a transcript (a run's
//! `transcript.jsonl`), as the host writes it (`harness_core::fold::fold_transcript`).

use std::path::Path;

use harness_core::Message;

use crate::error::{Code, Error};

/// Runs `foldbench fold`.
pub fn cmd(path: &Path, from: u32, to: u32) -> Result<Code, Error> {
    // Sized and checked before it is read, as replay's inputs are: a regular file of at most
    // `MAX_TRANSCRIPT_BYTES`, never a FIFO or a device.
    let bytes = harness_import::read_regular(path, harness_import::MAX_TRANSCRIPT_BYTES).map_err(
        |source| Error::Read {
            what: path.display().to_string(),
            source,
        },
    )?;
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::Usage(format!(
            "{}: not UTF-8 text (byte {}); a transcript is JSON lines",
            path.display(),
            e.utf8_error().valid_up_to()
        ))
    })?;
    let mut messages = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        match serde_json::from_str::<Message>(line) {
            Ok(m) => messages.push(m.sealed()),
            Err(e) => {
                return Err(Error::Problems(vec![format!(
                    "{}:{}:{}: not a transcript message: {e}",
                    path.display(),
                    i + 1,
                    e.column()
                )]));
            }
        }
    }
    let result =
        harness_core::fold::fold_transcript(&path.display().to_string(), messages, from, to)
            .map_err(Error::refused)?;
    // The result quotes the transcript (the user's words, the closing message): each line is
    // shown with its control characters escaped, so a transcript cannot drive the terminal.
    let shown: Vec<String> = result
        .lines()
        .map(|l| harness_core::printable(l, usize::MAX))
        .collect();
    crate::out::line(&shown.join("\n"))?;
    Ok(Code::Ok)
}
