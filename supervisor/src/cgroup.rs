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

/// One run's cgroup: a slot of a small per-user pool, kept for the next
/// run when this one ends, or a group of its own, removed then, when every
/// slot is in use. Either way its processes are killed when it is dropped.
///
/// The pool exists for speed and for the host's sake: creating and
/// removing a memory cgroup costs about 0.14 ms of every launch, and each
/// removed group lingers in the kernel as a dying memcg while pages it was
/// charged for stay cached.
#[derive(Debug)]
pub struct Group {
    dir: PathBuf,
    hierarchy: Hierarchy,
    limit: u64,
    /// The slot's directory, locked (`flock`) while this run has it;
    /// `None` for a one-off group.
    slot: Option<std::os::fd::OwnedFd>,
}

fn write(p: &Path, v: &str) -> Result<(), String> {
    std::fs::write(p, v).map_err(|e| format!("writing {}: {e}", p.display()))
}

/// How many pooled groups a user has at most: as many runs at once reuse
/// groups; one more gets a group of its own.
const POOL: usize = 8;

/// A slot whose memory charge (pages its earlier runs left in the page
/// cache) is above this is replaced by a fresh group rather than reused,
/// so a run starts with almost all of its limit free.
const RECYCLE_ABOVE: u64 = 16 << 20;

impl Hierarchy {
    fn own(&self) -> &Path {
        match self {
            Hierarchy::V1 { own } | Hierarchy::V2 { own } => own,
        }
    }

    /// The file holding a group's current charge.
    fn usage_file(&self) -> &'static str {
        match self {
            Hierarchy::V1 { .. } => "memory.usage_in_bytes",
            Hierarchy::V2 { .. } => "memory.current",
        }
    }
}

/// The value of a cgroup file, whitespace trimmed.
fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Writes `v` unless the file already says it (`now`: what it says; a
/// reused slot usually has the same limit).
fn set(p: &Path, now: Option<&str>, v: &str) -> Result<(), String> {
    if now == Some(v) {
        return Ok(());
    }
    write(p, v)
}

fn pids_in(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Kills every process in the group until none is left (`false`: some
/// were still there after half a second).
fn empty(dir: &Path) -> bool {
    for _ in 0..50 {
        let pids = pids_in(dir);
        if pids.is_empty() {
            return true;
        }
        for p in pids {
            // SAFETY: a signal to a process of a zot run's own cgroup.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    pids_in(dir).is_empty()
}

impl Group {
    /// A cgroup limited to `limit` bytes of memory (swap included where
    /// the host accounts it): a free pooled slot when there is one.
    pub fn create(limit: u64) -> Result<Group, String> {
        let h = hierarchy()?;
        for k in 0..POOL {
            if let Some(g) = Group::slot(&h, k, limit) {
                return Ok(g);
            }
        }
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = h.own().join(format!("zot-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let g = Group {
            dir,
            hierarchy: h,
            limit,
            slot: None,
        };
        g.set_limit()?;
        Ok(g)
    }

    /// Pool slot `k`, if it is free and usable: locked, owned by this
    /// user, holding no process (a crashed run's are killed) and little
    /// charge (else replaced by a fresh group), with the limit set.
    /// `None` sends the caller to the next slot; nothing here is an error,
    /// since a one-off group is always the way out.
    fn slot(h: &Hierarchy, k: usize, limit: u64) -> Option<Group> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        // SAFETY: no preconditions.
        let uid = unsafe { libc::geteuid() };
        let dir = h.own().join(format!("zot-pool-{uid}-{k}"));
        // Twice at most: the second time in a group that replaced one
        // holding too much charge.
        for _ in 0..2 {
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(_) => return None,
            }
            let fd = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
                .open(&dir)
                .ok()?;
            // SAFETY: an fd this function owns.
            if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                return None;
            }
            // The directory locked is the one named (a run that replaced
            // it in between has its own lock on the new one), and it is
            // this user's.
            let (held, named) = (fd.metadata().ok()?, std::fs::symlink_metadata(&dir).ok()?);
            if held.ino() != named.ino() || held.dev() != named.dev() || held.uid() != uid {
                return None;
            }
            if !empty(&dir) {
                return None;
            }
            let charge = read(&dir.join(h.usage_file())).and_then(|v| v.parse::<u64>().ok());
            if charge.is_none_or(|c| c > RECYCLE_ABOVE) {
                // Removed while locked: the next run to try it creates a
                // fresh one, as this loop does now.
                std::fs::remove_dir(&dir).ok()?;
                continue;
            }
            let g = Group {
                dir,
                hierarchy: h.clone(),
                limit,
                slot: Some(fd.into()),
            };
            return g.set_limit().is_ok().then_some(g);
        }
        None
    }

    /// Sets the limit, writing only what differs. On v1 the swap-inclusive
    /// limit may never be below the memory limit, so the order of the two
    /// writes follows the direction of the change.
    fn set_limit(&self) -> Result<(), String> {
        let v = self.limit.to_string();
        match &self.hierarchy {
            Hierarchy::V1 { .. } => {
                let mem = self.dir.join("memory.limit_in_bytes");
                let sw = self.dir.join("memory.memsw.limit_in_bytes");
                let mem_now = read(&mem);
                if !sw.exists() {
                    return set(&mem, mem_now.as_deref(), &v);
                }
                let sw_now = read(&sw);
                let lowering = mem_now
                    .as_deref()
                    .and_then(|c| c.parse::<u64>().ok())
                    .is_none_or(|c| self.limit <= c);
                if lowering {
                    set(&mem, mem_now.as_deref(), &v)?;
                    set(&sw, sw_now.as_deref(), &v)
                } else {
                    set(&sw, sw_now.as_deref(), &v)?;
                    set(&mem, mem_now.as_deref(), &v)
                }
            }
            Hierarchy::V2 { .. } => {
                let max = self.dir.join("memory.max");
                set(&max, read(&max).as_deref(), &v)?;
                let sw = self.dir.join("memory.swap.max");
                if sw.exists() {
                    set(&sw, read(&sw).as_deref(), "0")?;
                }
                Ok(())
            }
        }
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
}

impl Drop for Group {
    fn drop(&mut self) {
        // A slot stays for the next run (its lock goes with `self.slot`).
        if !empty(&self.dir) || self.slot.is_some() {
            return;
        }
        // A one-off group is removed; the kernel may refuse for a moment
        // while its last process exits.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
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

    /// Runs `script` with the group's join file as fd 7 (`echo 0 >&7`
    /// joins), returning the child.
    fn spawn_joined(g: &super::Group, script: &str) -> std::process::Child {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let join = g.join_fd().unwrap();
        let fd = join.as_raw_fd();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script])
            .stdout(std::process::Stdio::piped());
        // SAFETY: dup2/fcntl in the child before exec.
        unsafe {
            cmd.pre_exec(move || {
                // Already 7 (other tests' fds come and go): dup2 would keep
                // its close-on-exec flag, and the shell would have no fd 7.
                let r = if fd == 7 {
                    libc::fcntl(7, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, 7)
                };
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.spawn().unwrap()
    }

    fn usable() -> Option<super::Hierarchy> {
        match super::hierarchy() {
            Ok(h) => Some(h),
            Err(why) => {
                // CI sets ZOT_TEST_MUST_WORK=1: a skip there is a failure.
                assert!(
                    std::env::var("ZOT_TEST_MUST_WORK").as_deref() != Ok("1"),
                    "no usable memory cgroup ({why}), and ZOT_TEST_MUST_WORK is set"
                );
                eprintln!("skip: no usable memory cgroup: {why}");
                None
            }
        }
    }

    /// Where a controller is usable (root on a v1 host, a delegated v2
    /// subtree), a process that joins through the fd, and what it forks
    /// then, are inside the group; the supervisor stays home; nothing of
    /// the run is left when the group is dropped.
    #[test]
    fn what_a_joined_process_forks_is_inside() {
        if usable().is_none() {
            return;
        }
        let g = super::Group::create(1 << 30).unwrap();
        let child = spawn_joined(
            &g,
            "echo 0 >&7 && exec 7>&- && sh -c 'cat /proc/self/cgroup; sleep 60 >/dev/null &'",
        );
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("/zot-"), "{text}");
        let me = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        assert!(!me.contains("/zot-"), "{me}");
        // The background sleep is still in the group until the drop.
        assert!(!super::pids_in(&g.dir).is_empty());
        let (dir, pooled) = (g.dir.clone(), g.slot.is_some());
        drop(g);
        assert!(super::pids_in(&dir).is_empty());
        // A slot is kept for the next run; a one-off group is removed.
        assert_eq!(dir.exists(), pooled, "{}", dir.display());
    }

    /// Slot `k`, waiting a moment if it is busy: while a test thread
    /// forks, the child shares (until its exec) every open file of this
    /// process, slot locks included. A run that meets this takes the
    /// next slot; a test that wants this one waits.
    fn take(h: &super::Hierarchy, k: usize, limit: u64) -> Option<super::Group> {
        for _ in 0..100 {
            if let Some(g) = super::Group::slot(h, k, limit) {
                return Some(g);
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        None
    }

    /// Removes a test's slot when the test ends, passed or not.
    struct Gone(std::path::PathBuf);

    impl Drop for Gone {
        fn drop(&mut self) {
            super::empty(&self.0);
            let _ = std::fs::remove_dir(&self.0);
        }
    }

    /// A slot is locked while a run has it, reused after, and replaced
    /// when it still holds a large charge; the limit is the new run's.
    #[test]
    fn a_slot_is_held_reused_and_replaced() {
        use std::os::unix::fs::MetadataExt;
        let Some(h) = usable() else { return };
        // Slots past the pool's size: no other run or test takes them.
        let k = 100 + std::process::id() as usize % 1000;
        let a = take(&h, k, 64 << 20).expect("a free slot");
        let _gone = Gone(a.dir.clone());
        assert!(super::Group::slot(&h, k, 64 << 20).is_none(), "locked");
        let dir = a.dir.clone();
        let ino = std::fs::metadata(&dir).unwrap().ino();
        drop(a);
        let b = take(&h, k, 96 << 20).expect("free again");
        assert_eq!(
            std::fs::metadata(&dir).unwrap().ino(),
            ino,
            "the same group"
        );
        let limit = match &h {
            super::Hierarchy::V1 { .. } => "memory.limit_in_bytes",
            super::Hierarchy::V2 { .. } => "memory.max",
        };
        assert_eq!(
            super::read(&dir.join(limit)).unwrap(),
            (96u64 << 20).to_string()
        );
        // Charge the group with 32 MiB of tmpfs pages that outlive the
        // process.
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        let f = shm.path().join("charge");
        let script = format!(
            "echo 0 >&7 && exec 7>&- && head -c 33554432 /dev/zero > {}",
            f.display()
        );
        assert!(spawn_joined(&b, &script).wait().unwrap().success());
        let charge: u64 = super::read(&dir.join(h.usage_file()))
            .unwrap()
            .parse()
            .unwrap();
        assert!(charge > super::RECYCLE_ABOVE, "{charge}");
        drop(b);
        let c = take(&h, k, 64 << 20).expect("replaced");
        assert_ne!(std::fs::metadata(&dir).unwrap().ino(), ino, "a fresh group");
        let charge: u64 = super::read(&dir.join(h.usage_file()))
            .unwrap()
            .parse()
            .unwrap();
        assert!(charge <= super::RECYCLE_ABOVE, "{charge}");
        drop(c);
    }

    /// What a crashed run left in a slot is killed before the slot is
    /// used again, so it cannot share the next run's group.
    #[test]
    fn a_crashed_runs_processes_are_killed_before_reuse() {
        let Some(h) = usable() else { return };
        let k = 2000 + std::process::id() as usize % 1000;
        let mut a = take(&h, k, 64 << 20).expect("a free slot");
        let _gone = Gone(a.dir.clone());
        let mut left = spawn_joined(&a, "echo 0 >&7 && exec 7>&- && exec sleep 60");
        let dir = a.dir.clone();
        for _ in 0..100 {
            if !super::pids_in(&dir).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(super::pids_in(&dir), vec![left.id() as i32]);
        // The run "crashes": its lock goes, its Drop never runs.
        drop(a.slot.take());
        std::mem::forget(a);
        let b = take(&h, k, 64 << 20).expect("the slot");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(left.wait().unwrap().signal(), Some(libc::SIGKILL));
        assert!(super::pids_in(&b.dir).is_empty());
        drop(b);
    }
}
