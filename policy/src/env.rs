//! `permissions.env.read`: which of the caller's variables an agent's
//! commands receive, besides the scrubbed base set. Entries are exact names
//! or `PREFIX_*`; a prefix is expanded against the caller's environment when
//! consent is asked, so consent (and the sandbox) covers exact names only.
//! Variables the caller marks as withheld (zot's provider keys) never pass
//! through a prefix; an exact entry naming one is the caller's to refuse.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One `permissions.env.read` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EnvName {
    /// An exact variable name.
    Exact(String),
    /// `PREFIX_*`: every variable whose name starts with `PREFIX_` (stored
    /// with the trailing `_`).
    Prefix(String),
}

/// Why an entry is not a variable name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvNameError {
    #[error("empty variable name")]
    Empty,
    #[error("{0:?} is not a variable name (letters, digits and `_`, not starting with a digit)")]
    Invalid(String),
    #[error("{0:?}: a prefix must end in `_*` after at least one other character (e.g. `MYAPP_*`)")]
    BadPrefix(String),
}

fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

impl EnvName {
    pub fn parse(s: &str) -> Result<EnvName, EnvNameError> {
        if s.is_empty() {
            return Err(EnvNameError::Empty);
        }
        if let Some(prefix) = s.strip_suffix('*') {
            let ok = prefix.len() >= 2
                && prefix.ends_with('_')
                && is_name(prefix)
                && prefix.bytes().any(|c| c != b'_');
            return if ok {
                Ok(EnvName::Prefix(prefix.to_string()))
            } else {
                Err(EnvNameError::BadPrefix(s.to_string()))
            };
        }
        if is_name(s) {
            Ok(EnvName::Exact(s.to_string()))
        } else {
            Err(EnvNameError::Invalid(s.to_string()))
        }
    }

    pub fn matches(&self, name: &str) -> bool {
        match self {
            EnvName::Exact(n) => n == name,
            EnvName::Prefix(p) => name.len() > p.len() && name.starts_with(p.as_str()),
        }
    }
}

impl fmt::Display for EnvName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvName::Exact(n) => f.write_str(n),
            EnvName::Prefix(p) => write!(f, "{p}*"),
        }
    }
}

impl Serialize for EnvName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EnvName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        EnvName::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// What an `env.read` list passes in one environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvExpansion {
    /// Exact names passed into the sandbox, sorted: every exact entry (set
    /// or not: a variable set later is passed too) and every present
    /// variable a prefix matches.
    pub pass: Vec<String>,
    /// Present variables a prefix matched that are withheld, sorted.
    pub withheld: Vec<String>,
}

/// Expand `entries` against the names present in the caller's environment.
/// `withheld` says which names never pass through a prefix. An exact entry
/// is passed as it is (the caller refuses exact entries it must withhold:
/// see [`exact_withheld`]).
pub fn expand<'a>(
    entries: &[EnvName],
    present: impl IntoIterator<Item = &'a str>,
    withheld: &dyn Fn(&str) -> bool,
) -> EnvExpansion {
    let mut out = EnvExpansion::default();
    for e in entries {
        if let EnvName::Exact(n) = e {
            out.pass.push(n.clone());
        }
    }
    for name in present {
        let by_prefix = entries
            .iter()
            .any(|e| matches!(e, EnvName::Prefix(_)) && e.matches(name));
        let exact = entries.iter().any(|e| matches!(e, EnvName::Exact(n) if n == name));
        if by_prefix && !exact {
            if withheld(name) {
                out.withheld.push(name.to_string());
            } else {
                out.pass.push(name.to_string());
            }
        }
    }
    out.pass.sort();
    out.pass.dedup();
    out.withheld.sort();
    out.withheld.dedup();
    out
}

/// The exact entries that name a withheld variable.
pub fn exact_withheld<'a>(entries: &'a [EnvName], withheld: &dyn Fn(&str) -> bool) -> Vec<&'a str> {
    entries
        .iter()
        .filter_map(|e| match e {
            EnvName::Exact(n) if withheld(n) => Some(n.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_prefixes() {
        assert_eq!(
            EnvName::parse("GITHUB_TOKEN").unwrap(),
            EnvName::Exact("GITHUB_TOKEN".into())
        );
        assert_eq!(
            EnvName::parse("_x1").unwrap(),
            EnvName::Exact("_x1".into())
        );
        assert_eq!(
            EnvName::parse("MYAPP_*").unwrap(),
            EnvName::Prefix("MYAPP_".into())
        );
        assert_eq!(EnvName::parse("MYAPP_*").unwrap().to_string(), "MYAPP_*");
        assert_eq!(EnvName::parse(""), Err(EnvNameError::Empty));
        for bad in ["1BAD", "A-B", "A B", "A=B", "Ä"] {
            assert_eq!(
                EnvName::parse(bad),
                Err(EnvNameError::Invalid(bad.into())),
                "{bad}"
            );
        }
        for bad in ["*", "_*", "__*", "MYAPP*", "A*", "1A_*", "A-B_*", "MY*APP_*"] {
            assert_eq!(
                EnvName::parse(bad),
                Err(EnvNameError::BadPrefix(bad.into())),
                "{bad}"
            );
        }
        let p = EnvName::parse("MYAPP_*").unwrap();
        assert!(p.matches("MYAPP_HOST"));
        assert!(!p.matches("MYAPP_"));
        assert!(!p.matches("MYAPPX"));
        assert!(!p.matches("myapp_host"));
    }

    #[test]
    fn expansion_is_exact_and_withholds_keys() {
        let entries: Vec<EnvName> = ["GITHUB_TOKEN", "OPENAI_*", "UNSET_VAR"]
            .iter()
            .map(|s| EnvName::parse(s).unwrap())
            .collect();
        let present = [
            "PATH",
            "GITHUB_TOKEN",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            "OPENAI_ORG_ID",
            "GITHUB_TOKEN_2",
        ];
        let withheld = |n: &str| n == "OPENAI_API_KEY";
        let x = expand(&entries, present, &withheld);
        assert_eq!(
            x.pass,
            vec!["GITHUB_TOKEN", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "UNSET_VAR"]
        );
        assert_eq!(x.withheld, vec!["OPENAI_API_KEY"]);
        assert!(exact_withheld(&entries, &withheld).is_empty());
        let entries = vec![EnvName::parse("OPENAI_API_KEY").unwrap()];
        assert_eq!(exact_withheld(&entries, &withheld), vec!["OPENAI_API_KEY"]);
    }
}
