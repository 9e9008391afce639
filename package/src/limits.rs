//! The loader's size limits.

const MIB: u64 = 1024 * 1024;
/// Largest accepted compressed `.zot` file.
pub const MAX_COMPRESSED_SIZE: u64 = 100 * MIB;
/// Largest accepted single extracted entry.
pub const MAX_ENTRY_SIZE: u64 = 64 * MIB;
/// Largest accepted total of extracted content.
pub const MAX_TOTAL_SIZE: u64 = 256 * MIB;
/// Tar headers and padding allowed on top of [`MAX_TOTAL_SIZE`] in the
/// decompressed stream (bounds the entry count too).
pub const MAX_METADATA_SIZE: u64 = 32 * MIB;
/// Largest accepted `manifest.json`.
pub const MAX_MANIFEST_SIZE: u64 = MIB;

/// Loader limits. [`Limits::DEFAULT`] holds the spec's values; smaller
/// ones are for tests and callers that want to be stricter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub compressed: u64,
    pub entry: u64,
    pub total: u64,
    pub metadata: u64,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        compressed: MAX_COMPRESSED_SIZE,
        entry: MAX_ENTRY_SIZE,
        total: MAX_TOTAL_SIZE,
        metadata: MAX_METADATA_SIZE,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}
