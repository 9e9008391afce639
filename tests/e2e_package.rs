//! End-to-end tests (to be filled).
mod common;
