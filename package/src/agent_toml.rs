//! Everruns `agent.toml` package loading (owned by H5; to be filled).
