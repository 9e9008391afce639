//! cgroup v2 limits: whether the host delegates a cgroup this process may
//! create children in. zot does not apply cgroup limits yet; the report
//! says why none are (the rlimits and tmpfs sizes of the plan apply
//! either way).

use std::path::{Path, PathBuf};

/// The unified-hierarchy path of this process (`0::/path`), if any.
fn own_cgroup(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// Why no cgroup limit applies, in a few words.
pub fn status() -> String {
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return "none (no cgroup information)".into();
    };
    if text.lines().any(|l| !l.starts_with("0::")) {
        return "none (the host uses cgroup v1 controllers)".into();
    }
    let Some(rel) = own_cgroup(&text) else {
        return "none (no cgroup v2 hierarchy)".into();
    };
    let dir = Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
    if !(has("pids") && has("memory")) {
        return "none (pids and memory controllers not delegated here)".into();
    }
    if !writable(&dir) {
        return format!("none ({} is not writable: not delegated)", dir.display());
    }
    "none (a delegated cgroup exists; this version does not use it)".into()
}

fn writable(p: &PathBuf) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    #[test]
    fn own_cgroup_line() {
        assert_eq!(
            super::own_cgroup("0::/user.slice/a.scope\n"),
            Some("/user.slice/a.scope")
        );
        assert_eq!(super::own_cgroup("4:memory:/x\n"), None);
    }
}
