//! One validation finding, shared by the zotfile and agent.toml validators.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where (a manifest field path such as `permissions.bash.allow` or
/// `mcpServers.docs.url`, or a package file path; empty: the whole file) and
/// what is wrong. Displayed as `path: message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub path: String,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The known key closest to a misspelt `key` (case-insensitive Jaro-Winkler
/// similarity above 0.85), for "did you mean" hints.
pub fn suggest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| {
            (
                k,
                strsim::jaro_winkler(&key.to_ascii_lowercase(), &k.to_ascii_lowercase()),
            )
        })
        .filter(|(_, s)| *s > 0.85)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| *k)
}

/// `err` and its sources, `: `-separated: the one place an error chain is
/// joined into one message (events, validation reports, conversions).
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut chain = err.to_string();
    let mut src = err.source();
    while let Some(s) = src {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        src = s.source();
    }
    chain
}
