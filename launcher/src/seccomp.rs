//! The seccomp filter, compiled separately from installing it (tests can
//! inspect or install it in a child). A deny list: everything not named is
//! allowed; the named calls fail with EPERM, `clone3` with ENOSYS (so libc
//! falls back to the filterable `clone`). A foreign architecture is killed,
//! and on x86_64 the x32 syscall range fails with ENOSYS.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::{LaunchError, SeccompSpec};

const NS_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    0x80, // CLONE_NEWTIME
];

/// ioctl requests refused: terminal input injection and console control.
#[allow(clippy::unnecessary_cast)] // the libc type differs between targets
const DENIED_IOCTLS: &[u64] = &[libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// Syscalls refused with EPERM whatever their arguments.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_setns,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_kexec_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_acct,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
];

fn arch() -> TargetArch {
    #[cfg(target_arch = "x86_64")]
    {
        TargetArch::x86_64
    }
    #[cfg(target_arch = "aarch64")]
    {
        TargetArch::aarch64
    }
    #[cfg(target_arch = "riscv64")]
    {
        TargetArch::riscv64
    }
}

fn cond(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, LaunchError> {
    SeccompCondition::new(arg, len, op, value).map_err(LaunchError::SeccompCompile)
}

fn rule(conds: Vec<SeccompCondition>) -> Result<SeccompRule, LaunchError> {
    SeccompRule::new(conds).map_err(LaunchError::SeccompCompile)
}

/// The EPERM filter and the ENOSYS filter for `spec`.
pub fn compile(spec: &SeccompSpec) -> Result<Vec<BpfProgram>, LaunchError> {
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in DENIED {
        eperm.insert(*nr, Vec::new());
    }
    // unshare / clone with any namespace flag.
    let ns_rules = |arg: u8| -> Result<Vec<SeccompRule>, LaunchError> {
        NS_FLAGS
            .iter()
            .map(|f| {
                rule(vec![cond(
                    arg,
                    SeccompCmpArgLen::Qword,
                    SeccompCmpOp::MaskedEq(*f),
                    *f,
                )?])
            })
            .collect()
    };
    eperm.insert(libc::SYS_unshare, ns_rules(0)?);
    eperm.insert(libc::SYS_clone, ns_rules(0)?);
    // ioctl: the request is compared as 32 bits (the kernel truncates it).
    let ioctl_rules = DENIED_IOCTLS
        .iter()
        .map(|req| {
            rule(vec![cond(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                *req,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    eperm.insert(libc::SYS_ioctl, ioctl_rules);
    if spec.deny_network {
        let not_unix = |nr: i64| -> Result<(i64, Vec<SeccompRule>), LaunchError> {
            Ok((
                nr,
                vec![rule(vec![cond(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    libc::AF_UNIX as u64,
                )?])?],
            ))
        };
        for nr in [libc::SYS_socket, libc::SYS_socketpair] {
            let (nr, r) = not_unix(nr)?;
            eperm.insert(nr, r);
        }
    }
    if spec.deny_unix_connect {
        eperm.insert(libc::SYS_connect, Vec::new());
        eperm.insert(
            libc::SYS_sendto,
            vec![rule(vec![cond(
                4,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::Ne,
                0,
            )?])?],
        );
    }
    let eperm = SeccompFilter::new(
        eperm,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch(),
    )
    .map_err(LaunchError::SeccompCompile)?;
    let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    enosys.insert(libc::SYS_clone3, Vec::new());
    let enosys = SeccompFilter::new(
        enosys,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch(),
    )
    .map_err(LaunchError::SeccompCompile)?;
    #[allow(unused_mut)] // pushed to on x86_64 only
    let mut progs: Vec<BpfProgram> = vec![
        eperm.try_into().map_err(LaunchError::SeccompCompile)?,
        enosys.try_into().map_err(LaunchError::SeccompCompile)?,
    ];
    #[cfg(target_arch = "x86_64")]
    progs.push(x32_filter());
    Ok(progs)
}

/// On x86_64, syscall numbers with the x32 bit set would bypass a filter
/// keyed on the 64-bit numbers: refuse that whole range.
#[cfg(target_arch = "x86_64")]
fn x32_filter() -> BpfProgram {
    use seccompiler::sock_filter;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_BIT: u32 = 0x4000_0000;
    let ld = |k| sock_filter {
        code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k, jt, jf| sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let jge = |k, jt, jf| sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let ret = |k| sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k,
    };
    vec![
        ld(4), // seccomp_data.arch
        jeq(AUDIT_ARCH_X86_64, 0, 3),
        ld(0), // seccomp_data.nr
        jge(X32_BIT, 0, 1),
        ret(libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        ret(libc::SECCOMP_RET_ALLOW),
    ]
}

/// Compile and install the filters on the calling thread (needs
/// no_new_privs or CAP_SYS_ADMIN).
pub fn install(spec: &SeccompSpec) -> Result<(), LaunchError> {
    for prog in compile(spec)? {
        seccompiler::apply_filter(&prog).map_err(LaunchError::Seccomp)?;
    }
    Ok(())
}

/// One line per rule, for `zot debug sandbox --explain`.
pub fn describe(spec: &SeccompSpec) -> Vec<String> {
    let mut out = vec![
        "architecture: other than the native one -> kill".to_string(),
        "clone3: ENOSYS (libc falls back to clone)".to_string(),
        "unshare, clone: EPERM with any namespace flag".to_string(),
        "ioctl TIOCSTI, TIOCLINUX: EPERM (request compared as 32 bits)".to_string(),
        "ptrace, process_vm_*, mount family, pivot_root, chroot, setns, keyctl/add_key/request_key, bpf, perf_event_open, \
         userfaultfd, io_uring_*, module/kexec/swap/reboot/acct: EPERM"
            .to_string(),
    ];
    #[cfg(target_arch = "x86_64")]
    out.push("x32 syscall numbers: ENOSYS".to_string());
    if spec.deny_network {
        out.push("socket, socketpair: EPERM unless AF_UNIX".to_string());
    }
    if spec.deny_unix_connect {
        out.push("connect, sendto with an address: EPERM".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Install the filter in a forked child (never in the test process) and
    /// check what the calls return there.
    fn in_child(spec: SeccompSpec, check: fn() -> bool) -> bool {
        // Compiled before fork: the child must not allocate (threads).
        let progs = compile(&spec).unwrap();
        // SAFETY: the child only makes raw syscalls and exits.
        match unsafe { libc::fork() } {
            0 => {
                unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
                let ok = progs.iter().all(|p| seccompiler::apply_filter(p).is_ok()) && check();
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            pid => {
                let mut st = 0;
                unsafe { libc::waitpid(pid, &mut st, 0) };
                libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0
            }
        }
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    #[test]
    fn denies_what_it_should() {
        let spec = SeccompSpec {
            deny_network: true,
            deny_unix_connect: false,
        };
        assert!(in_child(spec, || unsafe {
            let inet =
                libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) == -1 && errno() == libc::EPERM;
            let unix = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) >= 0;
            let clone3 = libc::syscall(libc::SYS_clone3, 0, 0) == -1 && errno() == libc::ENOSYS;
            let userns = libc::unshare(libc::CLONE_NEWUSER) == -1 && errno() == libc::EPERM;
            let files = libc::unshare(libc::CLONE_FILES) == 0;
            let tiocsti = libc::syscall(libc::SYS_ioctl, 0, (1u64 << 32) | libc::TIOCSTI as u64, 0)
                == -1
                && errno() == libc::EPERM;
            let x32 =
                libc::syscall(0x4000_0000 | libc::SYS_getpid) == -1 && errno() == libc::ENOSYS;
            inet && unix && clone3 && userns && files && tiocsti && x32
        }));
    }

    #[test]
    fn unix_connect_denial_is_optional() {
        let spec = SeccompSpec {
            deny_network: false,
            deny_unix_connect: true,
        };
        assert!(in_child(spec, || unsafe {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let mut addr: libc::sockaddr_un = std::mem::zeroed();
            addr.sun_family = libc::AF_UNIX as u16;
            let r = libc::connect(
                fd,
                &addr as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sa_family_t>() as u32 + 1,
            );
            r == -1 && errno() == libc::EPERM
        }));
    }
}
