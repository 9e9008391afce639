//! The sandbox's memory limit: a cgroup of its own where a controller is
//! usable here (the cgroup v1 memory controller as root, or a delegated
//! cgroup v2 subtree with the memory controller enabled for children);
//! otherwise the run reports the limit as not enforced.
//!
//! The process that runs the launcher's tail joins the cgroup itself,
//! through an fd the supervisor opened ([`Group::join_fd`]), while it is
//! single-threaded and before it forks or execs anything: the command and
//! everything it starts are born inside, with no window in which one could
//! start outside. The supervisor never moves. (Moving another process, or
//! a whole process, takes cgroup v1's global lock, which waits for an RCU
//! grace period: 7-14 ms on a 2-core VM, more than plain bwrap's whole
//! launch. A thread moving itself through `tasks` skips it: 0.1-0.5 ms.)

use std::path::{Path, PathBuf};

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

/// The usable memory controller, or why there is none; found once per
/// process (the supervisor never moves).
fn hierarchy() -> Result<Hierarchy, String> {
    static FOUND: std::sync::OnceLock<Result<Hierarchy, String>> = std::sync::OnceLock::new();
    FOUND.get_or_init(find_hierarchy).clone()
}

fn find_hierarchy() -> Result<Hierarchy, String> {
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
    hierarchy: Hierarchy,
    limit: u64,
}

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
        let v = limit.to_string();
        let g = Group {
            dir,
            hierarchy: h,
            limit,
        };
        match &g.hierarchy {
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

    /// The file through which a single-threaded process joins the group
    /// by writing `0` (itself): `tasks` on v1 (a thread moving itself
    /// skips the global lock), `cgroup.procs` on v2. Close-on-exec.
    pub fn join_fd(&self) -> Result<std::os::fd::OwnedFd, String> {
        let file = match self.hierarchy {
            Hierarchy::V1 { .. } => "tasks",
            Hierarchy::V2 { .. } => "cgroup.procs",
        };
        let p = self.dir.join(file);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .map(std::os::fd::OwnedFd::from)
            .map_err(|e| format!("opening {}: {e}", p.display()))
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
        for _ in 0..50 {
            let pids = self.pids();
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
    /// subtree), a process that joins through the fd, and what it forks
    /// then, are inside the group; the supervisor stays home.
    #[test]
    fn what_a_joined_process_forks_is_inside() {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        if super::memory_usable().is_err() {
            eprintln!("skip: {}", super::status());
            return;
        }
        let g = super::Group::create(1 << 30).unwrap();
        let join = g.join_fd().unwrap();
        let fd = join.as_raw_fd();
        let mut cmd = std::process::Command::new("sh");
        cmd.args([
            "-c",
            "echo 0 >&7 && exec 7>&- && sh -c 'cat /proc/self/cgroup'",
        ]);
        // SAFETY: dup2 in the child before exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, 7) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("/zot-"), "{text}");
        let me = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(!me.contains("/zot-"), "{me}");
        let dir = g.dir.clone();
        drop(join);
        drop(g);
        assert!(!dir.exists());
    }
}
