//! Encoding a launch for the tail (std side): the layout [`super::run`]
//! decodes. Little-endian; strings with their NUL; string arrays leave
//! room for the pointer arrays `execve` needs.

use std::ffi::CString;

use landlock::{Access, AccessFs, BitFlags, Scope, ABI};

use crate::landlock_rules::{rights, TARGET_ABI};
use crate::plan::{LandlockCompat, LandlockPlan, LandlockScope, MountOp, Rlimit};

use super::{
    FLAG_NEW_SESSION, FLAG_NOTIFY, LANDLOCK_BEST_EFFORT, LANDLOCK_OFF, LANDLOCK_REQUIRED, MAGIC,
    MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY, MOUNT_BIND, MOUNT_SETATTR, MOUNT_TMPFS,
};

/// One of the view's last mounts as the tail makes it (see
/// [`MOUNT_BIND`](super::MOUNT_BIND)): kind, attr, src, dst, data, optional.
/// `None` for an op the tail cannot make from inside the view (a bind from
/// the host, a fresh /dev or /proc, a tmpfs the view is built on).
pub(crate) fn tail_mount(op: &MountOp) -> Option<(u32, u64, &[u8], &[u8], &'static str, bool)> {
    const RO: u64 = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    fn path(p: &std::path::Path) -> &[u8] {
        p.as_os_str().as_encoded_bytes()
    }
    let null: &[u8] = b"/dev/null";
    Some(match op {
        MountOp::Bind { src, dst, writable } => {
            let attr = if *writable {
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
            } else {
                RO
            };
            (MOUNT_BIND, attr, path(src), path(dst), "", false)
        }
        MountOp::BlockCreate { dst, .. } | MountOp::MaskFile { dst } => {
            (MOUNT_BIND, RO, null, path(dst), "", false)
        }
        MountOp::MaskSocket { dst } => (MOUNT_BIND, RO, null, path(dst), "", true),
        MountOp::MaskDir { dst } => {
            use super::sys::{MS_NODEV, MS_NOSUID, MS_RDONLY};
            (
                MOUNT_TMPFS,
                (MS_NOSUID | MS_NODEV | MS_RDONLY) as u64,
                b"",
                path(dst),
                "mode=0000,size=4096",
                false,
            )
        }
        MountOp::RemountRo { dst } => (MOUNT_SETATTR, MOUNT_ATTR_RDONLY, b"", path(dst), "", false),
        MountOp::Tmpfs { .. } | MountOp::Dev { .. } | MountOp::Proc { .. } => return None,
    })
}

struct W(Vec<u8>);

impl W {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn align8(&mut self) {
        while self.0.len() % 8 != 0 {
            self.0.push(0);
        }
    }
    fn cstring(&mut self, s: &[u8]) {
        self.u32(s.len() as u32 + 1);
        self.0.extend_from_slice(s);
        self.0.push(0);
    }
    fn strings(&mut self, v: &[CString]) {
        self.u32(v.len() as u32);
        self.align8();
        self.0.resize(self.0.len() + (v.len() + 2) * 8, 0);
        for s in v {
            self.cstring(s.as_bytes());
        }
    }
}

/// The rights each kernel ABI supports, ABI 1 first, up to ours.
fn supported_by_abi() -> Vec<u64> {
    [ABI::V1, ABI::V2, ABI::V3, ABI::V4, ABI::V5, ABI::V6]
        .into_iter()
        .map(|abi| AccessFs::from_all(abi).bits())
        .collect()
}

fn landlock(plan: &LandlockPlan) -> Vec<u8> {
    let mut w = W(Vec::new());
    let compat = match plan.compat {
        LandlockCompat::Off => {
            w.u32(LANDLOCK_OFF);
            return w.0;
        }
        LandlockCompat::BestEffort => LANDLOCK_BEST_EFFORT,
        LandlockCompat::Required => LANDLOCK_REQUIRED,
    };
    w.u32(compat);
    w.u64(AccessFs::from_all(TARGET_ABI).bits());
    let mut scopes: BitFlags<Scope> = BitFlags::empty();
    for s in &plan.scopes {
        scopes |= match s {
            LandlockScope::AbstractUnixSocket => Scope::AbstractUnixSocket,
            LandlockScope::Signal => Scope::Signal,
        };
    }
    w.u64(scopes.bits());
    let abis = supported_by_abi();
    w.u32(abis.len() as u32);
    for m in abis {
        w.u64(m);
    }
    w.u32(plan.rules.len() as u32);
    let file_rights = AccessFs::from_file(TARGET_ABI);
    for r in &plan.rules {
        let dir = rights(r.access);
        w.u64(dir.bits());
        w.u64((dir & file_rights).bits());
        w.u32(u32::from(r.must_exist));
        w.cstring(r.path.as_os_str().as_encoded_bytes());
    }
    w.0
}

/// Encode a launch: `argv`, the complete environment (`K=V`), whether to
/// start a new session, rlimits, the Landlock plan, the seccomp program and
/// whether it asks the supervisor (`notify`), the bridge to start (the
/// proxy's socket, the port) with a proxied network, the fd through which
/// the tail joins the run's cgroup, the view's last mounts (made by the
/// tail; each one [`tail_mount`] accepts).
#[allow(clippy::too_many_arguments)]
pub fn encode(
    argv: &[CString],
    env: &[CString],
    new_session: bool,
    notify: bool,
    rlimits: &[Rlimit],
    pid_max: Option<u64>,
    lock: &LandlockPlan,
    seccomp: &[seccompiler::sock_filter],
    bridge: Option<(&std::path::Path, u16)>,
    remounts: &[(std::path::PathBuf, u64, String, String)],
    cgroup_fd: Option<i32>,
    mounts: &[MountOp],
) -> Vec<u8> {
    let mut w = W(Vec::with_capacity(4096));
    w.0.extend_from_slice(MAGIC);
    let mut flags = 0;
    if new_session {
        flags |= FLAG_NEW_SESSION;
    }
    if notify {
        flags |= FLAG_NOTIFY;
    }
    w.u32(flags);
    w.u32(cgroup_fd.map_or(u32::MAX, |fd| fd as u32));
    w.strings(argv);
    w.strings(env);
    w.u32(rlimits.len() as u32);
    for l in rlimits {
        #[allow(clippy::unnecessary_cast)] // the libc type differs between targets
        w.u32(l.resource.raw() as u32);
        w.u64(l.soft.unwrap_or(u64::MAX));
        w.u64(l.hard.unwrap_or(u64::MAX));
    }
    w.u64(pid_max.unwrap_or(0));
    let lock = landlock(lock);
    w.u32(lock.len() as u32);
    w.0.extend_from_slice(&lock);
    w.u32(seccomp.len() as u32);
    for ins in seccomp {
        w.0.extend_from_slice(&ins.code.to_le_bytes());
        w.0.push(ins.jt);
        w.0.push(ins.jf);
        w.0.extend_from_slice(&ins.k.to_le_bytes());
    }
    match bridge {
        Some((socket, port)) if port != 0 => {
            w.u32(u32::from(port));
            w.cstring(socket.as_os_str().as_encoded_bytes());
        }
        _ => w.u32(0),
    }
    w.u32(remounts.len() as u32);
    for (dst, flags, data, fresh) in remounts {
        w.u64(*flags);
        w.cstring(dst.as_os_str().as_encoded_bytes());
        w.cstring(data.as_bytes());
        w.cstring(fresh.as_bytes());
    }
    let mounts: Vec<_> = mounts
        .iter()
        .map(|op| tail_mount(op).expect("only mounts the tail can make (tail_mounts_start)"))
        .collect();
    w.u32(mounts.len() as u32);
    for (kind, attr, src, dst, data, optional) in mounts {
        w.u32(kind);
        w.u64(attr);
        w.cstring(src);
        w.cstring(dst);
        w.cstring(data.as_bytes());
        w.u32(u32::from(optional));
    }
    w.0
}
