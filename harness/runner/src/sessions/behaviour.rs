//! The behaviour profile's file ([`harness_core::behaviour::Profile`]): read with every problem
//! placed — the file, the line and column, what is wrong, what to do — and written whole or not
//! at all.

use std::path::{Path, PathBuf};

use harness_core::behaviour::{End, Profile, ProfileError};

use crate::file_error::FileError;

/// A profile that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum BehaviourError {
    /// The file cannot be opened, read or written.
    #[error(transparent)]
    File(#[from] FileError),
    /// The file is not a profile this build reads: `FILE:LINE:COL: what; what to do`.
    #[error("{}:{problem}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// Where and what (the refusal itself, not a cause: the message is `FILE:` and it).
        problem: ProfileError,
    },
    /// The file is not UTF-8 text.
    #[error("{}: not UTF-8 text; a behaviour profile is a JSON file (docs/replay.md, \"The behaviour profile\")", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

/// Reads the profile at `path`.
pub fn read(path: &Path) -> Result<Profile, BehaviourError> {
    let bytes = std::fs::read(path).map_err(FileError::on("read", path))?;
    let text = String::from_utf8(bytes).map_err(|_| BehaviourError::NotText {
        path: path.to_path_buf(),
    })?;
    Profile::parse(&text).map_err(|problem| BehaviourError::Bad {
        path: path.to_path_buf(),
        problem,
    })
}

/// The profile at `path` (`--behaviour FILE`), else the one foldbench ships.
pub fn read_or_shipped(path: Option<&Path>) -> Result<Profile, BehaviourError> {
    match path {
        Some(p) => read(p),
        None => Ok(Profile::shipped().clone()),
    }
}

/// How a record names the profile the sim followed: its name, and the end of its intervals
/// when not the point (`fixtures`, `mine at high`).
pub fn describe(profile: Profile, end: End) -> String {
    match end {
        End::Point => profile.name,
        End::Low => format!("{} at low", profile.name),
        End::High => format!("{} at high", profile.name),
    }
}

/// Writes `profile` to `path` (a temporary file renamed into place).
pub fn write(path: &Path, profile: &Profile) -> Result<(), BehaviourError> {
    crate::atomic::write(path, profile.to_json().as_bytes())
        .map_err(FileError::on("write", path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_file_the_shipped_profile_is_named_with_the_end_read() {
        let shipped = read_or_shipped(None).unwrap();
        assert_eq!(shipped.name, Profile::shipped().name);
        let name = shipped.name.clone();
        assert_eq!(describe(shipped.clone(), End::Point), name);
        assert_eq!(
            describe(shipped.clone(), End::Low),
            format!("{name} at low")
        );
        assert_eq!(describe(shipped, End::High), format!("{name} at high"));
    }

    #[test]
    fn a_bad_file_says_file_line_column_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b.json");
        std::fs::write(
            &p,
            "{\n  \"format\": \"foldbench-behaviour\",\n  \"version\": 7,\n",
        )
        .unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:4:", p.display())), "{e}");
        assert!(e.contains("--behaviour-out FILE"), "{e}");
        let shipped = Profile::shipped();
        let mut wrong = shipped.clone();
        wrong.version = 7;
        std::fs::write(&p, wrong.to_json()).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains(":3:3: version 7 is not one this build reads"),
            "{e}"
        );
        write(&p, shipped).unwrap();
        assert_eq!(read(&p).unwrap(), *shipped);
        let missing = dir.path().join("none.json");
        let e = read(&missing).unwrap_err();
        assert!(e.to_string().contains("none.json"), "{e}");
        std::fs::write(&p, [0xff, 0xfe, 0x00]).unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("not UTF-8"));
    }
}
