//! The policies a replay runs: those named (`--policy`), else the arms of a matrix profile
//! (`--profile`), else [`default_policies`].

/// The policies a replay takes without `--policy` or a profile: foldbench's own
/// ([`policies::POLICIES`]) but fold+strategies — a recorded session holds no strategy, so it
/// would fold as fold does ([`crate::caveat_notes`] says so when it is named).
pub fn default_policies() -> Vec<&'static str> {
    policies::POLICIES
        .into_iter()
        .filter(|p| *p != "fold+strategies")
        .collect()
}

/// The policy texts a replay runs: `named` when any, else what `profile` gives (the arms of a
/// matrix profile; asked only then, since it reads a file), else [`default_policies`].
pub fn policy_texts<E>(
    named: &[String],
    profile: impl FnOnce() -> Result<Option<Vec<String>>, E>,
) -> Result<Vec<String>, E> {
    if !named.is_empty() {
        return Ok(named.to_vec());
    }
    Ok(profile()?.unwrap_or_else(|| default_policies().into_iter().map(str::to_string).collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_policies_go_over_the_profile_and_the_profile_over_the_defaults() {
        assert_eq!(default_policies(), ["none", "trim", "compact", "fold"]);
        let named = vec!["trim".to_string()];
        let unread = || -> Result<Option<Vec<String>>, ()> { panic!("the profile is not read") };
        assert_eq!(policy_texts(&named, unread).unwrap(), named);
        let profile = || Ok::<_, ()>(Some(vec!["fold".to_string()]));
        assert_eq!(policy_texts(&[], profile).unwrap(), ["fold"]);
        let none = || Ok::<_, ()>(None);
        assert_eq!(policy_texts(&[], none).unwrap(), default_policies());
        assert_eq!(
            policy_texts(&[], || Err::<Option<Vec<String>>, _>(7)),
            Err(7)
        );
    }
}
