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
    let mut progs: Vec<BpfProgram> = Vec::new();
    progs.push(eperm.try_into().map_err(LaunchError::SeccompCompile)?);
    progs.push(enosys.try_into().map_err(LaunchError::SeccompCompile)?);
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
