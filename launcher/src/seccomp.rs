//! The seccomp filter of a [`SeccompPlan`], compiled here (before any
//! fork) and installed last by the tail (tests install it in a child). The plan is a
//! deny list: everything not named is allowed. Rules are grouped by action
//! into one BPF program each; a foreign architecture and, on x86_64, the x32
//! syscall range get their own checks. [`describe`] renders the same rules.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use crate::plan::{ArgCmp, ArgOp, ArgWidth, SeccompAction, SeccompPlan};
use crate::LaunchError;

/// Syscall names a plan may use, with their numbers on this architecture.
const SYSCALLS: &[(&str, i64)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("setns", libc::SYS_setns),
    ("unshare", libc::SYS_unshare),
    ("clone", libc::SYS_clone),
    ("clone3", libc::SYS_clone3),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("fanotify_init", libc::SYS_fanotify_init),
    ("fanotify_mark", libc::SYS_fanotify_mark),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("kexec_load", libc::SYS_kexec_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("acct", libc::SYS_acct),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("ioctl", libc::SYS_ioctl),
    ("socket", libc::SYS_socket),
    ("socketpair", libc::SYS_socketpair),
    ("connect", libc::SYS_connect),
    ("sendto", libc::SYS_sendto),
    ("sendmsg", libc::SYS_sendmsg),
    ("sendmmsg", libc::SYS_sendmmsg),
    ("shmget", libc::SYS_shmget),
    ("shmat", libc::SYS_shmat),
    ("shmdt", libc::SYS_shmdt),
    ("shmctl", libc::SYS_shmctl),
    ("semget", libc::SYS_semget),
    ("semop", libc::SYS_semop),
    ("semtimedop", libc::SYS_semtimedop),
    ("semctl", libc::SYS_semctl),
    ("msgget", libc::SYS_msgget),
    ("msgsnd", libc::SYS_msgsnd),
    ("msgrcv", libc::SYS_msgrcv),
    ("msgctl", libc::SYS_msgctl),
];

/// The number of syscall `name` here.
pub fn syscall_number(name: &str) -> Option<i64> {
    SYSCALLS.iter().find(|(n, _)| *n == name).map(|(_, nr)| *nr)
}

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

/// seccompiler has no user-notification action: its programs return
/// `SECCOMP_RET_TRACE | NOTIFY_MARK` for it, rewritten to
/// `SECCOMP_RET_USER_NOTIF` after compiling ([`mark_to_notify`]).
const NOTIFY_MARK: u32 = 0x2a07;

fn action(a: SeccompAction) -> seccompiler::SeccompAction {
    match a {
        SeccompAction::Eperm => seccompiler::SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Enosys => seccompiler::SeccompAction::Errno(libc::ENOSYS as u32),
        SeccompAction::KillProcess => seccompiler::SeccompAction::KillProcess,
        SeccompAction::Notify => seccompiler::SeccompAction::Trace(NOTIFY_MARK),
    }
}

fn mark_to_notify(prog: &mut BpfProgram) {
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    for ins in prog.iter_mut() {
        if ins.code == ret && ins.k == libc::SECCOMP_RET_TRACE | NOTIFY_MARK {
            ins.k = libc::SECCOMP_RET_USER_NOTIF;
        }
    }
}

/// The plan stops some calls for the supervisor (seccomp user
/// notification): the tail installs the filter with a listener and passes
/// it on.
pub fn notifies(plan: &SeccompPlan) -> bool {
    plan.enabled && plan.rules.iter().any(|r| r.action == SeccompAction::Notify)
}

fn condition(c: &ArgCmp) -> Result<SeccompCondition, LaunchError> {
    let len = match c.width {
        ArgWidth::Bits32 => SeccompCmpArgLen::Dword,
        ArgWidth::Bits64 => SeccompCmpArgLen::Qword,
    };
    let op = match c.op {
        ArgOp::Eq => SeccompCmpOp::Eq,
        ArgOp::Ne => SeccompCmpOp::Ne,
        ArgOp::MaskedEq { mask } => SeccompCmpOp::MaskedEq(mask),
    };
    SeccompCondition::new(c.arg, len, op, c.value).map_err(LaunchError::SeccompCompile)
}

/// The BPF programs for `plan`, in installation order (empty when the plan
/// installs nothing). Fails on a syscall name this architecture lacks.
pub fn compile(plan: &SeccompPlan) -> Result<Vec<BpfProgram>, LaunchError> {
    compile_with(plan, true)
}

/// [`compile`], `search`: with [`dispatcher`] in front of the rules (x86_64).
fn compile_with(plan: &SeccompPlan, search: bool) -> Result<Vec<BpfProgram>, LaunchError> {
    #[cfg(not(target_arch = "x86_64"))]
    let _ = search; // only x86_64 has the search
    if !plan.enabled {
        return Ok(Vec::new());
    }
    // One filter per action; a syscall named twice with one action gets the
    // union of its conditions ("always" absorbs the rest).
    // Per syscall: None = always, Some(conditions) = any of them.
    type Rules = BTreeMap<i64, Option<Vec<SeccompRule>>>;
    let mut by_action: Vec<(SeccompAction, Rules)> = Vec::new();
    for rule in &plan.rules {
        let idx = match by_action.iter().position(|(a, _)| *a == rule.action) {
            Some(i) => i,
            None => {
                by_action.push((rule.action, BTreeMap::new()));
                by_action.len() - 1
            }
        };
        let map = &mut by_action[idx].1;
        for name in &rule.syscalls {
            let nr =
                syscall_number(name).ok_or_else(|| LaunchError::UnknownSyscall(name.clone()))?;
            let entry = map.entry(nr).or_insert_with(|| Some(Vec::new()));
            if rule.any_of.is_empty() {
                *entry = None; // always
            } else if let Some(rules) = entry {
                for c in &rule.any_of {
                    rules.push(
                        SeccompRule::new(vec![condition(c)?])
                            .map_err(LaunchError::SeccompCompile)?,
                    );
                }
            }
        }
    }
    // The supervisor is asked last: a call another rule refuses never
    // reaches it (as the kernel orders ERRNO before USER_NOTIF).
    by_action.sort_by_key(|(a, _)| *a == SeccompAction::Notify);
    let mut named: Vec<i64> = by_action
        .iter()
        .flat_map(|(_, m)| m.keys().copied())
        .collect();
    named.sort_unstable();
    named.dedup();
    let mut progs = Vec::new();
    for (act, map) in by_action {
        if map.is_empty() {
            continue;
        }
        let rules: BTreeMap<i64, Vec<SeccompRule>> = map
            .into_iter()
            .map(|(nr, r)| (nr, r.unwrap_or_default()))
            .collect();
        let filter = SeccompFilter::new(
            rules,
            seccompiler::SeccompAction::Allow,
            action(act),
            arch(),
        )
        .map_err(LaunchError::SeccompCompile)?;
        let mut prog: BpfProgram = filter.try_into().map_err(LaunchError::SeccompCompile)?;
        if act == SeccompAction::Notify {
            mark_to_notify(&mut prog);
        }
        progs.push(prog);
    }
    // seccompiler's filters kill on a foreign architecture; any other
    // action for it would need a filter of our own.
    if plan.foreign_arch != SeccompAction::KillProcess {
        return Err(LaunchError::Unsupported(
            "seccomp: only kill is supported for a foreign architecture",
        ));
    }
    #[cfg(target_arch = "x86_64")]
    {
        let rest = chain(progs);
        let mut head = Vec::new();
        if let Some(a) = plan.x32 {
            head.push(x32_filter(a));
        }
        match dispatcher(&named).filter(|_| search) {
            Some(d) => head.push(d),
            None => return Ok(vec![chain(head.into_iter().chain([rest]).collect())]),
        }
        let mut out = chain(head);
        out.extend(rest);
        Ok(vec![out])
    }
    #[cfg(not(target_arch = "x86_64"))]
    Ok(vec![chain(progs)])
}

/// A binary search over the syscall numbers the rules name, run first: a
/// native call named by no rule is allowed after a handful of compares
/// instead of falling through every rule's compare, and the rest go on to
/// the rules (as does every call of another architecture, which they
/// kill). The kernel decides at install time which calls a filter always
/// allows by running it for every syscall number of every architecture
/// it knows: with the rules alone that walk was a few hundred instructions
/// per number, a quarter of a millisecond per launch. `None` when a jump
/// would not fit (more numbers than a filter of this shape holds).
#[cfg(target_arch = "x86_64")]
fn dispatcher(named: &[i64]) -> Option<BpfProgram> {
    use bpf::{ja, jump, ld, ret};
    /// Placeholder `k` of a jump to the end of the dispatcher (resolved below).
    const TO_RULES: u32 = u32::MAX;
    let nrs: Vec<u32> = named.iter().map(|&n| u32::try_from(n).ok()).collect::<Option<_>>()?;
    // Numbers in nrs[..]: a jump to the rules when nr is one, else allow.
    fn tree(nrs: &[u32], out: &mut Vec<seccompiler::sock_filter>) -> Option<()> {
        if nrs.len() <= 3 {
            let m = nrs.len();
            for (i, &nr) in nrs.iter().enumerate() {
                // jt: to the `ja` after the `ret` below.
                out.push(jump(libc::BPF_JEQ, nr, (m - i) as u8, 0));
            }
            out.push(ret(libc::SECCOMP_RET_ALLOW));
            out.push(ja(TO_RULES));
            return Some(());
        }
        let mid = nrs.len() / 2;
        let at = out.len();
        out.push(jump(libc::BPF_JGE, nrs[mid], 0, 0));
        tree(&nrs[..mid], out)?;
        // nr >= nrs[mid]: over the lower half.
        out[at].jt = u8::try_from(out.len() - at - 1).ok()?;
        tree(&nrs[mid..], out)
    }
    let mut out = vec![
        ld(4), // seccomp_data.arch
        jump(libc::BPF_JEQ, bpf::AUDIT_ARCH_X86_64, 1, 0),
        ja(TO_RULES),
        ld(0), // seccomp_data.nr
    ];
    tree(&nrs, &mut out)?;
    let len = out.len();
    let to_rules = ja(TO_RULES);
    for (i, x) in out.iter_mut().enumerate() {
        if (x.code, x.k) == (to_rules.code, to_rules.k) {
            x.k = (len - i - 1) as u32;
        }
    }
    Some(out)
}

/// The cBPF instructions the x86_64 programs here are written with.
#[cfg(target_arch = "x86_64")]
mod bpf {
    use seccompiler::sock_filter;

    pub const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;

    /// Load the 32-bit word at offset `k` of `seccomp_data`.
    pub fn ld(k: u32) -> sock_filter {
        sock_filter {
            code: (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// Compare with `k` (`op`: `BPF_JEQ`, `BPF_JGE`...), then skip `jt`
    /// instructions when true, `jf` when false.
    pub fn jump(op: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
        sock_filter {
            code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        }
    }

    /// Skip `k` instructions.
    pub fn ja(k: u32) -> sock_filter {
        jump(libc::BPF_JA, k, 0, 0)
    }

    /// Return `k` (a `SECCOMP_RET_*` action).
    pub fn ret(k: u32) -> sock_filter {
        sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k,
        }
    }
}

/// One program that runs `progs` in turn: each `ret ALLOW` of a program
/// but the last becomes a jump to the start of the next one. One filter to
/// install (and to run on every syscall of the command) instead of several.
fn chain(progs: Vec<BpfProgram>) -> BpfProgram {
    let ret_allow = (libc::BPF_RET | libc::BPF_K) as u16;
    let ja = (libc::BPF_JMP | libc::BPF_JA) as u16;
    let count = progs.len();
    let mut out = Vec::new();
    for (n, mut prog) in progs.into_iter().enumerate() {
        if n + 1 < count {
            let len = prog.len();
            for (i, ins) in prog.iter_mut().enumerate() {
                if ins.code == ret_allow && ins.k == libc::SECCOMP_RET_ALLOW {
                    ins.code = ja;
                    ins.jt = 0;
                    ins.jf = 0;
                    ins.k = (len - i - 1) as u32;
                }
            }
        }
        out.extend(prog);
    }
    out
}

/// On x86_64, syscall numbers with the x32 bit set would bypass a filter
/// keyed on the 64-bit numbers: refuse that whole range.
#[cfg(target_arch = "x86_64")]
fn x32_filter(a: SeccompAction) -> BpfProgram {
    use bpf::{jump, ld, ret};
    const X32_BIT: u32 = 0x4000_0000;
    let ret_action = match a {
        SeccompAction::Eperm => libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        SeccompAction::Enosys => libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        SeccompAction::KillProcess => libc::SECCOMP_RET_KILL_PROCESS,
        SeccompAction::Notify => libc::SECCOMP_RET_USER_NOTIF,
    };
    vec![
        ld(4), // seccomp_data.arch
        jump(libc::BPF_JEQ, bpf::AUDIT_ARCH_X86_64, 0, 3),
        ld(0), // seccomp_data.nr
        jump(libc::BPF_JGE, X32_BIT, 0, 1),
        ret(ret_action),
        ret(libc::SECCOMP_RET_ALLOW),
    ]
}

fn describe_cmp(c: &ArgCmp) -> String {
    let width = match c.width {
        ArgWidth::Bits32 => " (32-bit)",
        ArgWidth::Bits64 => "",
    };
    match c.op {
        ArgOp::Eq => format!("arg{}{width} == {}", c.arg, c.name),
        ArgOp::Ne => format!("arg{}{width} != {}", c.arg, c.name),
        ArgOp::MaskedEq { .. } => format!("arg{}{width} has {}", c.arg, c.name),
    }
}

/// One line per rule of `plan`, for `zot debug sandbox --explain`.
pub fn describe(plan: &SeccompPlan) -> Vec<String> {
    if !plan.enabled {
        return Vec::new();
    }
    let mut out = vec![format!(
        "other architectures: {}",
        plan.foreign_arch.as_str()
    )];
    if let Some(a) = plan.x32 {
        out.push(format!("x32 syscall numbers: {}", a.as_str()));
    }
    for r in &plan.rules {
        let mut line = format!("{}: {}", r.syscalls.join(", "), r.action.as_str());
        if !r.any_of.is_empty() {
            let conds: Vec<String> = r.any_of.iter().map(describe_cmp).collect();
            line.push_str(" when ");
            line.push_str(&conds.join(" or "));
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::SeccompRule as Rule;

    /// Install the filter in a forked child (never in the test process) and
    /// check what the calls return there.
    fn in_child(plan: SeccompPlan, check: fn() -> bool) -> bool {
        // Compiled before fork: the child must not allocate (threads).
        let progs = compile(&plan).unwrap();
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

    fn cmp(arg: u8, width: ArgWidth, op: ArgOp, value: u64, name: &str) -> ArgCmp {
        ArgCmp {
            arg,
            width,
            op,
            value,
            name: name.into(),
        }
    }

    /// `EPERM` for `syscalls` when their first argument asks for a new user
    /// namespace (a 64-bit masked compare).
    fn new_user_rule(syscalls: &[&str]) -> Rule {
        Rule {
            syscalls: syscalls.iter().map(|s| s.to_string()).collect(),
            action: SeccompAction::Eperm,
            any_of: vec![cmp(
                0,
                ArgWidth::Bits64,
                ArgOp::MaskedEq {
                    mask: libc::CLONE_NEWUSER as u64,
                },
                libc::CLONE_NEWUSER as u64,
                "CLONE_NEWUSER",
            )],
        }
    }

    fn plan(rules: Vec<Rule>) -> SeccompPlan {
        SeccompPlan {
            enabled: true,
            foreign_arch: SeccompAction::KillProcess,
            x32: cfg!(target_arch = "x86_64").then_some(SeccompAction::Enosys),
            rules,
        }
    }

    #[test]
    fn rules_compile_and_apply_as_described() {
        let p = plan(vec![
            Rule {
                syscalls: vec!["socket".into()],
                action: SeccompAction::Eperm,
                any_of: vec![cmp(
                    0,
                    ArgWidth::Bits32,
                    ArgOp::Ne,
                    libc::AF_UNIX as u64,
                    "AF_UNIX",
                )],
            },
            Rule {
                syscalls: vec!["clone3".into()],
                action: SeccompAction::Enosys,
                any_of: vec![],
            },
            new_user_rule(&["unshare"]),
            Rule {
                syscalls: vec!["ioctl".into()],
                action: SeccompAction::Eperm,
                #[allow(clippy::unnecessary_cast)]
                any_of: vec![cmp(
                    1,
                    ArgWidth::Bits32,
                    ArgOp::Eq,
                    libc::TIOCSTI as u64,
                    "TIOCSTI",
                )],
            },
        ]);
        assert_eq!(compile(&p).unwrap().len(), 1, "one chained program");
        assert!(in_child(p.clone(), || unsafe {
            let inet =
                libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) == -1 && errno() == libc::EPERM;
            let unix = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) >= 0;
            let clone3 = libc::syscall(libc::SYS_clone3, 0, 0) == -1 && errno() == libc::ENOSYS;
            let userns = libc::unshare(libc::CLONE_NEWUSER) == -1 && errno() == libc::EPERM;
            let files = libc::unshare(libc::CLONE_FILES) == 0;
            #[allow(clippy::unnecessary_cast)]
            let tiocsti = libc::syscall(libc::SYS_ioctl, 0, (1u64 << 32) | libc::TIOCSTI as u64, 0)
                == -1
                && errno() == libc::EPERM;
            #[cfg(target_arch = "x86_64")]
            let x32 =
                libc::syscall(0x4000_0000 | libc::SYS_getpid) == -1 && errno() == libc::ENOSYS;
            #[cfg(not(target_arch = "x86_64"))]
            let x32 = true;
            inet && unix && clone3 && userns && files && tiocsti && x32
        }));
        let d = describe(&p);
        assert!(
            d.contains(&"socket: EPERM when arg0 (32-bit) != AF_UNIX".to_string()),
            "{d:?}"
        );
        assert!(d.contains(&"clone3: ENOSYS".to_string()), "{d:?}");
        assert!(
            d.contains(&"unshare: EPERM when arg0 has CLONE_NEWUSER".to_string()),
            "{d:?}"
        );
    }

    /// The notify rules return SECCOMP_RET_USER_NOTIF, and only for what
    /// they name: without a listener the kernel answers those with ENOSYS.
    #[test]
    fn notify_rules_stop_only_what_they_name() {
        let p = plan(vec![
            Rule {
                syscalls: vec!["ptrace".into()],
                action: SeccompAction::Eperm,
                any_of: vec![],
            },
            Rule {
                syscalls: vec!["connect".into(), "sendmsg".into()],
                action: SeccompAction::Notify,
                any_of: vec![],
            },
            Rule {
                syscalls: vec!["sendto".into()],
                action: SeccompAction::Notify,
                any_of: vec![cmp(4, ArgWidth::Bits64, ArgOp::Ne, 0, "NULL")],
            },
        ]);
        assert!(notifies(&p));
        let prog = &compile(&p).unwrap()[0];
        assert!(prog
            .iter()
            .any(|i| i.k == libc::SECCOMP_RET_USER_NOTIF && i.code == 6));
        assert!(!prog
            .iter()
            .any(|i| i.k & libc::SECCOMP_RET_ACTION_FULL == libc::SECCOMP_RET_TRACE));
        assert!(in_child(p.clone(), || unsafe {
            let mut sv = [0; 2];
            libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, sv.as_mut_ptr());
            let plain = libc::send(sv[0], b"x".as_ptr().cast(), 1, 0) == 1;
            let addr: libc::sockaddr_un = std::mem::zeroed();
            let to = libc::sendto(
                sv[0],
                b"x".as_ptr().cast(),
                1,
                0,
                (&addr as *const libc::sockaddr_un).cast(),
                2,
            ) == -1
                && errno() == libc::ENOSYS;
            let conn = libc::connect(sv[0], (&addr as *const libc::sockaddr_un).cast(), 2) == -1
                && errno() == libc::ENOSYS;
            let ptrace =
                libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) == -1 && errno() == libc::EPERM;
            plain && to && conn && ptrace
        }));
        assert!(describe(&p).contains(&"connect, sendmsg: the supervisor decides".to_string()));
    }

    /// What classic BPF `prog` returns for one `seccomp_data` (nr, arch,
    /// instruction pointer, args), as the kernel runs it. Panics on an
    /// instruction the filters here do not use.
    /// Also returns how many instructions it ran.
    fn run_bpf(prog: &[seccompiler::sock_filter], data: &[u32; 16]) -> (u32, usize) {
        let (mut a, mut x, mut mem, mut pc) = (0u32, 0u32, [0u32; 16], 0usize);
        let mut steps = 0;
        loop {
            let i = &prog[pc];
            pc += 1;
            steps += 1;
            let code = u32::from(i.code);
            let src = if code & libc::BPF_X != 0 { x } else { i.k };
            match code & 0x07 {
                libc::BPF_LD if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    a = data[i.k as usize / 4]
                }
                libc::BPF_LD if code == libc::BPF_LD | libc::BPF_MEM => a = mem[i.k as usize],
                libc::BPF_LDX if code == libc::BPF_LDX | libc::BPF_MEM => x = mem[i.k as usize],
                libc::BPF_ST => mem[i.k as usize] = a,
                libc::BPF_STX => mem[i.k as usize] = x,
                libc::BPF_ALU if (code & 0xf0) == libc::BPF_AND => a &= src,
                libc::BPF_JMP if (code & 0xf0) == libc::BPF_JA => pc += i.k as usize,
                libc::BPF_JMP => {
                    let taken = match code & 0xf0 {
                        libc::BPF_JEQ => a == src,
                        libc::BPF_JGT => a > src,
                        libc::BPF_JGE => a >= src,
                        libc::BPF_JSET => a & src != 0,
                        op => panic!("jump op {op:#x}"),
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                libc::BPF_RET => return (i.k, steps),
                libc::BPF_MISC if code == libc::BPF_MISC | libc::BPF_TAX => x = a,
                libc::BPF_MISC if code == libc::BPF_MISC | libc::BPF_TXA => a = x,
                _ => panic!("instruction {code:#x}"),
            }
        }
    }

    /// The search in front of the rules changes no answer: every syscall
    /// number (and x32's, and another architecture's), with arguments that
    /// meet and miss each condition, gets what the rules alone give; and
    /// most numbers are decided in a few instructions.
    #[test]
    fn the_dispatcher_changes_no_decision() {
        let mut p = plan(vec![
            Rule {
                syscalls: ["ptrace", "mount", "bpf", "setns", "open_tree", "reboot", "keyctl"]
                    .map(String::from)
                    .to_vec(),
                action: SeccompAction::Eperm,
                any_of: vec![],
            },
            new_user_rule(&["unshare", "clone"]),
            Rule {
                syscalls: vec!["socket".into()],
                action: SeccompAction::Eperm,
                any_of: vec![cmp(0, ArgWidth::Bits32, ArgOp::Ne, 1, "AF_UNIX")],
            },
            Rule {
                syscalls: vec!["clone3".into()],
                action: SeccompAction::Enosys,
                any_of: vec![],
            },
            Rule {
                syscalls: vec!["connect".into(), "sendmsg".into()],
                action: SeccompAction::Notify,
                any_of: vec![],
            },
        ]);
        // Every name the table knows: the largest plan there can be.
        p.rules.push(Rule {
            syscalls: SYSCALLS.iter().map(|(n, _)| n.to_string()).collect(),
            action: SeccompAction::Eperm,
            any_of: vec![cmp(2, ArgWidth::Bits32, ArgOp::Eq, 7, "7")],
        });
        let mut fewer = p.clone();
        fewer.rules.pop();
        for plan in [p, fewer] {
            let with = compile_with(&plan, true).unwrap().remove(0);
            let without = compile_with(&plan, false).unwrap().remove(0);
            assert!(with.len() > without.len(), "the search is in front");
            let (mut unnamed, mut worst) = (0, 0);
            for arch in [0xC000_003Eu32, 0x4000_0003] {
                for nr in (0..600u32).chain([0x4000_0000, 0x4000_0001, 0x4000_0101]) {
                    for (a0, a2) in [(0u64, 0u32), (libc::CLONE_NEWUSER as u64, 7), (1, 0), (2, 7)] {
                        let mut d = [0u32; 16];
                        d[0] = nr;
                        d[1] = arch;
                        d[4] = a0 as u32;
                        d[5] = (a0 >> 32) as u32;
                        d[8] = a2;
                        let (got, steps) = run_bpf(&with, &d);
                        assert_eq!(
                            got,
                            run_bpf(&without, &d).0,
                            "nr {nr:#x} arch {arch:#x} args {a0:#x} {a2}"
                        );
                        let named = plan.rules.iter().any(|r| {
                            r.syscalls.iter().any(|n| syscall_number(n) == Some(i64::from(nr)))
                        });
                        if arch == 0xC000_003E && nr < 600 && !named {
                            assert_eq!(got, libc::SECCOMP_RET_ALLOW);
                            unnamed += 1;
                            worst = worst.max(steps);
                        }
                    }
                }
            }
            assert!(unnamed > 1000, "most numbers are named by no rule ({unnamed})");
            assert!(worst <= 20, "an unnamed number ran {worst} instructions");
        }
    }

    #[test]
    fn unknown_syscall_fails_closed() {
        let p = plan(vec![Rule {
            syscalls: vec!["no_such_call".into()],
            action: SeccompAction::Eperm,
            any_of: vec![],
        }]);
        assert!(matches!(compile(&p), Err(LaunchError::UnknownSyscall(_))));
    }

    #[test]
    fn disabled_plan_installs_nothing() {
        let mut p = plan(vec![]);
        p.enabled = false;
        assert!(compile(&p).unwrap().is_empty());
        assert!(describe(&p).is_empty());
    }
}
