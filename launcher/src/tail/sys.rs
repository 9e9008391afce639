//! Raw Linux syscalls (no libc: this module also runs in the launcher image,
//! a static binary without one). Numbers per architecture.

use core::arch::asm;

#[cfg(target_arch = "x86_64")]
pub mod nr {
    pub const READ: usize = 0;
    pub const WRITE: usize = 1;
    pub const CLOSE: usize = 3;
    pub const RT_SIGACTION: usize = 13;
    pub const RT_SIGPROCMASK: usize = 14;
    pub const GETPID: usize = 39;
    pub const EXECVE: usize = 59;
    pub const FCNTL: usize = 72;
    pub const GETUID: usize = 102;
    pub const GETEUID: usize = 107;
    pub const GETPPID: usize = 110;
    pub const SETSID: usize = 112;
    pub const GETSID: usize = 124;
    pub const CAPGET: usize = 125;
    pub const CAPSET: usize = 126;
    pub const PRCTL: usize = 157;
    pub const EXIT_GROUP: usize = 231;
    pub const OPENAT: usize = 257;
    pub const PRLIMIT64: usize = 302;
    pub const SECCOMP: usize = 317;
    pub const CLOSE_RANGE: usize = 436;
    pub const LANDLOCK_CREATE_RULESET: usize = 444;
    pub const LANDLOCK_ADD_RULE: usize = 445;
    pub const LANDLOCK_RESTRICT_SELF: usize = 446;
    pub const SOCKET: usize = 41;
    pub const CONNECT: usize = 42;
    pub const SENDMSG: usize = 46;
    pub const BIND: usize = 49;
    pub const LISTEN: usize = 50;
    pub const CLONE: usize = 56;
    pub const WAIT4: usize = 61;
    pub const PPOLL: usize = 271;
    pub const ACCEPT4: usize = 288;
    pub const PIDFD_OPEN: usize = 434;
    pub const PIPE2: usize = 293;
    pub const MOUNT: usize = 165;
    pub const UNSHARE: usize = 272;
    pub const OPEN_TREE: usize = 428;
    pub const MOVE_MOUNT: usize = 429;
    pub const MOUNT_SETATTR: usize = 442;
}

#[cfg(any(target_arch = "aarch64", target_arch = "riscv64"))]
pub mod nr {
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const CLOSE: usize = 57;
    pub const RT_SIGACTION: usize = 134;
    pub const RT_SIGPROCMASK: usize = 135;
    pub const GETPID: usize = 172;
    pub const EXECVE: usize = 221;
    pub const FCNTL: usize = 25;
    pub const GETUID: usize = 174;
    pub const GETEUID: usize = 175;
    pub const GETPPID: usize = 173;
    pub const SETSID: usize = 157;
    pub const GETSID: usize = 156;
    pub const CAPGET: usize = 90;
    pub const CAPSET: usize = 91;
    pub const PRCTL: usize = 167;
    pub const EXIT_GROUP: usize = 94;
    pub const OPENAT: usize = 56;
    pub const PRLIMIT64: usize = 261;
    pub const SECCOMP: usize = 277;
    pub const CLOSE_RANGE: usize = 436;
    pub const LANDLOCK_CREATE_RULESET: usize = 444;
    pub const LANDLOCK_ADD_RULE: usize = 445;
    pub const LANDLOCK_RESTRICT_SELF: usize = 446;
    pub const SOCKET: usize = 198;
    pub const CONNECT: usize = 203;
    pub const SENDMSG: usize = 211;
    pub const BIND: usize = 200;
    pub const LISTEN: usize = 201;
    pub const CLONE: usize = 220;
    pub const WAIT4: usize = 260;
    pub const PPOLL: usize = 73;
    pub const ACCEPT4: usize = 242;
    pub const PIDFD_OPEN: usize = 434;
    pub const PIPE2: usize = 59;
    pub const MOUNT: usize = 40;
    pub const UNSHARE: usize = 97;
    pub const OPEN_TREE: usize = 428;
    pub const MOVE_MOUNT: usize = 429;
    pub const MOUNT_SETATTR: usize = 442;
}

/// `syscall(n, a..f)`: the result, or `-errno`.
///
/// # Safety
/// The arguments must be valid for syscall `n`.
#[inline]
pub unsafe fn syscall(
    n: usize,
    a: usize,
    b: usize,
    c: usize,
    d: usize,
    e: usize,
    f: usize,
) -> isize {
    let r: isize;
    #[cfg(target_arch = "x86_64")]
    asm!(
        "syscall",
        inlateout("rax") n as isize => r,
        in("rdi") a, in("rsi") b, in("rdx") c, in("r10") d, in("r8") e, in("r9") f,
        lateout("rcx") _, lateout("r11") _,
        options(nostack)
    );
    #[cfg(target_arch = "aarch64")]
    asm!(
        "svc 0",
        in("x8") n,
        inlateout("x0") a as isize => r,
        in("x1") b, in("x2") c, in("x3") d, in("x4") e, in("x5") f,
        options(nostack)
    );
    #[cfg(target_arch = "riscv64")]
    asm!(
        "ecall",
        in("a7") n,
        inlateout("a0") a as isize => r,
        in("a1") b, in("a2") c, in("a3") d, in("a4") e, in("a5") f,
        options(nostack)
    );
    r
}

/// A syscall result: the value, or the errno.
#[inline]
pub fn check(r: isize) -> Result<usize, i32> {
    if (-4095..0).contains(&r) {
        Err((-r) as i32)
    } else {
        Ok(r as usize)
    }
}

pub const EINTR: i32 = 4;
pub const EPERM: i32 = 1;
pub const ENOENT: i32 = 2;
pub const EACCES: i32 = 13;
pub const ENOEXEC: i32 = 8;
pub const EINVAL: i32 = 22;
pub const ENOSYS: i32 = 38;
pub const EOPNOTSUPP: i32 = 95;
pub const EBADF: i32 = 9;
pub const EPIPE: i32 = 32;
pub const EAGAIN: i32 = 11;
pub const ECHILD: i32 = 10;

pub const AT_FDCWD: isize = -100;
pub const CLONE_NEWNS: usize = 0x0002_0000;
pub const MS_RDONLY: usize = 1;
pub const MS_NOSUID: usize = 2;
pub const MS_NODEV: usize = 4;
pub const AT_EMPTY_PATH: usize = 0x1000;
pub const AT_RECURSIVE: usize = 0x8000;
pub const OPEN_TREE_CLONE: usize = 1;
pub const MOVE_MOUNT_F_EMPTY_PATH: usize = 4;
pub const O_PATH: usize = 0o10000000;
pub const O_CLOEXEC: usize = 0o2000000;
pub const O_WRONLY: usize = 0o1;
pub const F_SETFD: usize = 2;
pub const FD_CLOEXEC: usize = 1;
pub const CLOSE_RANGE_CLOEXEC: usize = 1 << 2;

pub const PR_SET_PDEATHSIG: usize = 1;
pub const PR_CAPBSET_READ: usize = 23;
pub const PR_CAPBSET_DROP: usize = 24;
pub const PR_SET_NO_NEW_PRIVS: usize = 38;
pub const PR_CAP_AMBIENT: usize = 47;
pub const PR_CAP_AMBIENT_CLEAR_ALL: usize = 4;
pub const SIGKILL: usize = 9;
pub const SIGCHLD: usize = 17;
pub const SIG_SETMASK: usize = 2;
pub const RLIMIT_NOFILE: usize = 7;

pub const AF_UNIX: usize = 1;
pub const AF_INET: usize = 2;
pub const SOCK_STREAM: usize = 1;
pub const SOCK_NONBLOCK: usize = 0o4000;
pub const SOCK_CLOEXEC: usize = 0o2000000;
pub const SOL_SOCKET: i32 = 1;
pub const SCM_RIGHTS: i32 = 1;
pub const MSG_NOSIGNAL: usize = 0x4000;
pub const POLLIN: i16 = 1;

pub const SECCOMP_SET_MODE_FILTER: usize = 1;
pub const SECCOMP_FILTER_FLAG_NEW_LISTENER: usize = 1 << 3;
pub const SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: usize = 1 << 5;

pub const AF_NETLINK: usize = 16;
pub const SOCK_RAW: usize = 3;
pub const NETLINK_SOCK_DIAG: usize = 4;
pub const CLONE_FILES: usize = 0x400;
pub const CLONE_VM: usize = 0x100;
pub const LANDLOCK_CREATE_RULESET_VERSION: usize = 1;
pub const LANDLOCK_RULE_PATH_BENEATH: usize = 1;

/// `clone(flags)` with the child on `stack`, running `f(arg)` there (it
/// must not return). With `CLONE_VM` the child shares this address space,
/// so no page table is copied: the cheap way to start a helper from a
/// process with a large memory map (x86_64; other architectures get a
/// fork-like clone). Returns the child's pid.
///
/// # Safety
/// `stack` must stay untouched by this process while the child runs (the
/// caller waits for it before the stack's frame ends), and `f` may use only
/// raw syscalls and memory that outlives the child (no locks, no libc).
pub unsafe fn clone_on(
    flags: usize,
    stack: &mut [u8],
    f: extern "C" fn(usize) -> !,
    arg: usize,
) -> Result<usize, i32> {
    // The top of the buffer, 16-byte aligned as every ABI here wants.
    let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
    let r: isize;
    // The child returns from the call on `top` and calls `f(arg)` from
    // registers the kernel copied; the parent falls through.
    #[cfg(target_arch = "x86_64")]
    asm!(
        "syscall",
        "test rax, rax",
        "jnz 2f",
        "mov rdi, r12",
        "call r13",
        "ud2",
        "2:",
        inlateout("rax") nr::CLONE as isize => r,
        in("rdi") flags, in("rsi") top, in("rdx") 0usize, in("r10") 0usize, in("r8") 0usize,
        in("r12") arg, in("r13") f as usize,
        lateout("rcx") _, lateout("r11") _,
    );
    // Elsewhere without the stack switch (not exercised here): a fork-like
    // clone, the child on its own copy of this stack.
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = top;
        r = syscall(nr::CLONE, flags & !CLONE_VM, 0, 0, 0, 0, 0);
        if r == 0 {
            f(arg)
        }
    }
    check(r)
}

pub fn exit(code: i32) -> ! {
    // SAFETY: exit_group takes an integer and does not return.
    unsafe {
        syscall(nr::EXIT_GROUP, code as usize, 0, 0, 0, 0, 0);
    }
    #[allow(clippy::empty_loop)]
    loop {}
}

/// `write(fd, buf)` until done; errors are ignored (nothing to report them to).
pub fn write_all(fd: i32, mut buf: &[u8]) {
    while !buf.is_empty() {
        // SAFETY: a valid buffer.
        let r = unsafe {
            syscall(
                nr::WRITE,
                fd as usize,
                buf.as_ptr() as usize,
                buf.len(),
                0,
                0,
                0,
            )
        };
        match check(r) {
            Ok(0) => return,
            Ok(n) => buf = &buf[n..],
            Err(EINTR) => {}
            Err(_) => return,
        }
    }
}
