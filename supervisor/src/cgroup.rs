//! The sandbox's memory limit: a cgroup of its own where a controller is
//! usable here (the cgroup v1 memory controller as root, or a delegated
//! cgroup v2 subtree with the memory controller enabled for children);
//! otherwise the run reports the limit as not enforced.
//!
//! The sandbox's first process is forked while the supervisor itself is in
//! the new cgroup (every path that starts a sandbox forks from here): what
//! it forks is born there, with no window in which a child could start
//! outside. The supervisor moves back right after the fork.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the memory controller is, and how its files are named.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Hierarchy {
    /// `/sys/fs/cgroup/memory/<path>`: `memory.limit_in_bytes`.
    V1 { own: PathBuf },
    /// `/sys/fs/cgroup/<path>`: `memory.max`.
    V2 { own: PathBuf },
}

/// The unified-hierarchy path of this process (`0::/path`), if any.
fn own_cgroup(text: &str) -> Option<&str> {
    text.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The v1 memory controller's path of this process (`N:memory:/path`).
fn own_v1_memory(text: &str) -> Option<&str> {
    text.lines().find_map(|l| {
        let mut it = l.splitn(3, ':');
        let (_, ctrls, path) = (it.next()?, it.next()?, it.next()?);
        ctrls.split(',').any(|c| c == "memory").then_some(path)
    })
}

fn writable(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The usable memory controller, or why there is none.
fn hierarchy() -> Result<Hierarchy, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|_| "no cgroup information".to_string())?;
    if let Some(rel) = own_v1_memory(&text) {
        let own = Path::new("/sys/fs/cgroup/memory").join(rel.trim_start_matches('/'));
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("the cgroup v1 memory controller needs root".into());
        }
        if !own.join("memory.limit_in_bytes").exists() {
            return Err(format!("{} has no memory controller files", own.display()));
        }
        if !writable(&own) {
            return Err(format!("{} is not writable", own.display()));
        }
        return Ok(Hierarchy::V1 { own });
    }
    let Some(rel) = own_cgroup(&text) else {
        return Err("no cgroup v2 hierarchy and no v1 memory controller".into());
    };
    let own = Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
    let sub = std::fs::read_to_string(own.join("cgroup.subtree_control")).unwrap_or_default();
    if !sub.split_whitespace().any(|c| c == "memory") {
        return Err(format!(
            "the memory controller is not enabled for the children of {} (not delegated)",
            own.display()
        ));
    }
    if !writable(&own) || !writable(&own.join("cgroup.procs")) {
        return Err(format!("{} is not writable: not delegated", own.display()));
    }
    Ok(Hierarchy::V2 { own })
}

/// Whether a memory limit can be set here (`Err`: why not).
pub fn memory_usable() -> Result<(), String> {
    hierarchy().map(|_| ())
}

/// What the report says of cgroups for a confined run.
pub fn status() -> String {
    match hierarchy() {
        Ok(Hierarchy::V1 { .. }) => "the cgroup v1 memory controller".into(),
        Ok(Hierarchy::V2 { .. }) => "a delegated cgroup v2 subtree".into(),
        Err(why) => format!("none ({why}): memory not enforced"),
    }
}

/// One run's cgroup, removed when dropped (its processes killed first).
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    /// The supervisor's own cgroup (it returns there after the fork).
    home: PathBuf,
    limit: u64,
}

/// Moves of the supervisor between cgroups: one run at a time.
static MOVING: Mutex<()> = Mutex::new(());

fn write(p: &Path, v: &str) -> Result<(), String> {
    std::fs::write(p, v).map_err(|e| format!("writing {}: {e}", p.display()))
}

impl Group {
    /// A new cgroup limited to `limit` bytes of memory (swap included
    /// where the host accounts it).
    pub fn create(limit: u64) -> Result<Group, String> {
        let h = hierarchy()?;
        let own = match &h {
            Hierarchy::V1 { own } | Hierarchy::V2 { own } => own.clone(),
        };
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = own.join(format!("zot-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let g = Group {
            dir,
            home: own,
            limit,
        };
        let v = limit.to_string();
        match h {
            Hierarchy::V1 { .. } => {
                write(&g.dir.join("memory.limit_in_bytes"), &v)?;
                let sw = g.dir.join("memory.memsw.limit_in_bytes");
                if sw.exists() {
                    write(&sw, &v)?;
                }
            }
            Hierarchy::V2 { .. } => {
                write(&g.dir.join("memory.max"), &v)?;
                let sw = g.dir.join("memory.swap.max");
                if sw.exists() {
                    write(&sw, "0")?;
                }
            }
        }
        Ok(g)
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Run `fork` (which starts the sandbox) with the supervisor inside
    /// the group: what it forks is born there. The supervisor moves back
    /// after (all its threads: `cgroup.procs`).
    pub fn around<T>(&self, fork: impl FnOnce() -> T) -> Result<T, String> {
        let _one = MOVING.lock().unwrap_or_else(|e| e.into_inner());
        let me = std::process::id().to_string();
        write(&self.dir.join("cgroup.procs"), &me)?;
        let r = fork();
        // Back home; should that fail, the supervisor stays limited, which
        // confines nothing less.
        let _ = write(&self.home.join("cgroup.procs"), &me);
        Ok(r)
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let me = std::process::id() as i32;
        for _ in 0..50 {
            let pids: Vec<i32> = self.pids().into_iter().filter(|p| *p != me).collect();
            if pids.is_empty() && std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            for p in pids {
                // SAFETY: a signal to a process of the run's own cgroup.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
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
        assert_eq!(
            super::own_v1_memory("5:devices:/\n4:memory:/p/q\n0::/\n"),
            Some("/p/q")
        );
        assert_eq!(super::own_v1_memory("4:cpu,memory:/r\n"), Some("/r"));
        assert_eq!(super::own_v1_memory("0::/\n"), None);
    }

    /// Where a controller is usable (root on a v1 host, a delegated v2
    /// subtree), a child forked inside the group is limited.
    #[test]
    fn a_group_limits_what_is_forked_inside_it() {
        if super::memory_usable().is_err() {
            eprintln!("skip: {}", super::status());
            return;
        }
        let g = super::Group::create(1 << 30).unwrap();
        let child = g
            .around(|| {
                std::process::Command::new("sh")
                    .args(["-c", "cat /proc/self/cgroup; sleep 0.2"])
                    .output()
                    .unwrap()
            })
            .unwrap();
        let text = String::from_utf8_lossy(&child.stdout);
        assert!(text.contains("/zot-"), "{text}");
        // The supervisor is home again.
        let me = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(!me.contains("/zot-"), "{me}");
        let dir = g.dir.clone();
        drop(g);
        assert!(!dir.exists());
    }
}
