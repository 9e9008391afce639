//! `.zot` packages: pack, inspect, verify, safe extraction, digests, and
//! agent.toml package loading (see [`agent_toml`]).
//!
//! A `.zot` file is a zstd-compressed canonical tar of an agent directory
//! (see [`pack`]). [`open`] loads a directory or an archive into an
//! [`Agent`]; archives go through the streaming loader in [`extract`] into a
//! fresh private temp dir that is removed when the `Agent` is dropped.
//!
//! Digests: a directory's is the sha256 of its canonical uncompressed tar;
//! an archive's is the sha256 of the archive bytes. They are not expected
//! to match each other.

pub mod agent_toml;
pub mod error;
pub mod extract;
pub mod output;
pub mod signature;

mod agent;
mod checks;
mod digest;
mod inspect;
mod limits;
mod manifest;
mod open;
mod pack;
mod secrets;
mod signed;
mod tree;
mod unpack;

pub use agent::{Agent, BundledExtension, SourceKind, SKILLS_DIR};
pub use digest::digest_dir;
pub use error::{ArchiveError, PackageError};
pub use extract::{
    extract_reader, extract_tar_gz_limited, validate_reader, EntryInfo, EntryKind, Extracted,
};
pub use inspect::{inspect, inspect_with, Summary};
pub use limits::{
    Limits, MAX_COMPRESSED_SIZE, MAX_ENTRY_SIZE, MAX_MANIFEST_SIZE, MAX_METADATA_SIZE,
    MAX_TOTAL_SIZE,
};
pub use open::{open, open_in, open_with};
pub use pack::{
    pack, pack_with, pack_with_progress, PackOptions, PackOutcome, ZSTD_LEVEL, ZSTD_WORKERS,
};
pub use signed::{check_claims, inspect_signed, open_signed, sign};
pub use unpack::unpack;
