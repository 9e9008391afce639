//! `.zot` pack / inspect / verify / safe extraction, digests, and agent.toml
//! package loading.
