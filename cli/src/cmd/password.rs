//! Where a signing password comes from: `ZOT_SIGNING_PASSWORD`, else a
//! prompt when zot runs on a terminal.

use std::io::IsTerminal;

/// The variable automation sets.
pub const ENV: &str = "ZOT_SIGNING_PASSWORD";

/// `ZOT_SIGNING_PASSWORD`, when set. Set but empty is an error: an empty
/// password protects nothing.
pub fn from_env() -> anyhow::Result<Option<String>> {
    match std::env::var_os(ENV) {
        None => Ok(None),
        Some(v) if v.is_empty() => anyhow::bail!("{ENV} is set but empty"),
        Some(v) => {
            Ok(Some(v.into_string().map_err(|_| {
                anyhow::anyhow!("{ENV} is not valid UTF-8")
            })?))
        }
    }
}

/// True when a password can be asked: stdin and stderr are terminals.
pub fn on_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}
