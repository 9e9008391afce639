//! Resource limits of a sandbox: the size of each private tmpfs, the number
//! of processes, the size of a file written, core dumps. Pure data; the
//! planner turns it into tmpfs sizes and rlimits.

use serde::{Deserialize, Serialize};

/// 512 MiB: the default size of each private tmpfs (`/tmp`, `/var/tmp`,
/// `/run`, `/dev/shm`).
pub const DEFAULT_TMP_SIZE: u64 = 512 << 20;
/// The default number of processes (threads included) of the sandbox.
pub const DEFAULT_MAX_PROCS: u64 = 1024;
/// 16 GiB: the default largest file the command may write.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 16 << 30;
/// Files and directories each private tmpfs may hold (`nr_inodes`): the
/// size limit alone lets empty files fill the kernel's memory.
pub const DEFAULT_TMP_INODES: u64 = 65536;
/// The smallest inode limit accepted.
pub const MIN_TMP_INODES: u64 = 64;
/// The memory a sandbox's processes may use together (a cgroup limit,
/// where the host has a controller zot may use).
pub const DEFAULT_MEMORY: u64 = 8 << 30;
/// The smallest memory limit accepted.
pub const MIN_MEMORY: u64 = 16 << 20;
/// Smallest accepted tmpfs size (1 MiB) and process count (16).
pub const MIN_TMP_SIZE: u64 = 1 << 20;
pub const MIN_MAX_PROCS: u64 = 16;

/// The limits a sandbox enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Bytes of each private tmpfs.
    pub tmp_size: u64,
    /// Processes and threads of the sandbox's user (in its user namespace).
    pub max_procs: u64,
    /// Largest file the command may write (`RLIMIT_FSIZE`).
    pub max_file_size: u64,
    /// Memory of all the sandbox's processes together (bytes).
    #[serde(default = "default_memory")]
    pub memory: u64,
    /// Inodes of each private tmpfs.
    #[serde(default = "default_tmp_inodes")]
    pub tmp_inodes: u64,
}

fn default_tmp_inodes() -> u64 {
    DEFAULT_TMP_INODES
}

fn default_memory() -> u64 {
    DEFAULT_MEMORY
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            tmp_size: DEFAULT_TMP_SIZE,
            max_procs: DEFAULT_MAX_PROCS,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            memory: DEFAULT_MEMORY,
            tmp_inodes: DEFAULT_TMP_INODES,
        }
    }
}

/// Parse a size: bytes, or a number with a `K`, `M`, `G` or `T` suffix
/// (powers of 1024; `KiB`, `MB`... accepted alike). `what` names the field
/// in the error.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a size such as 512M or 1G, got {s:?}"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("unknown size unit in {s:?} (use K, M, G or T)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

/// A size for humans: `512 MiB`, `16 GiB`, `4096 bytes`.
pub fn format_size(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n >= 1 << shift && n % (1 << shift) == 0 {
            return format!("{} {unit}", n >> shift);
        }
    }
    format!("{n} bytes")
}

/// Check a tmpfs or file size (at least 1 MiB).
pub fn check_tmp_size(n: u64) -> Result<u64, String> {
    if n < MIN_TMP_SIZE {
        return Err(format!("must be at least 1M, got {n} bytes"));
    }
    Ok(n)
}

/// Check a tmpfs inode count.
pub fn check_tmp_inodes(n: u64) -> Result<u64, String> {
    if n < MIN_TMP_INODES {
        return Err(format!("must be at least {MIN_TMP_INODES}, got {n}"));
    }
    Ok(n)
}

/// Check a memory limit (at least 16 MiB).
pub fn check_memory(n: u64) -> Result<u64, String> {
    if n < MIN_MEMORY {
        return Err(format!("must be at least 16M, got {n} bytes"));
    }
    Ok(n)
}

/// Check a process count.
pub fn check_max_procs(n: u64) -> Result<u64, String> {
    if n < MIN_MAX_PROCS {
        return Err(format!("must be at least {MIN_MAX_PROCS}, got {n}"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 3 k "), Ok(3072));
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert_eq!(format_size(512 << 20), "512 MiB");
        assert_eq!(format_size(16 << 30), "16 GiB");
        assert_eq!(format_size(1000), "1000 bytes");
    }

    #[test]
    fn bounds() {
        assert!(check_tmp_size(1 << 19).unwrap_err().contains("at least 1M"));
        assert!(check_max_procs(15).is_err());
        assert_eq!(check_max_procs(50), Ok(50));
    }
}
