//! The launcher image: a static binary without libc that bubblewrap runs
//! inside the sandbox. It reads the encoded tail from fd 3, reports on fd 4
//! and runs [`tail::run`]: the same code the zot binary runs in-process.
//! Built by `build.rs` with the plain `rustc` and embedded in `zot`.

#![no_std]
#![no_main]

#[path = "../src/tail/mod.rs"]
mod tail;

use tail::sys;

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".globl _start",
    "_start:",
    "xor rbp, rbp",
    "mov rdi, rsp",
    "and rsp, -16",
    "call zot_stub_main",
    "ud2",
);

#[cfg(target_arch = "aarch64")]
core::arch::global_asm!(
    ".globl _start",
    "_start:",
    "mov x29, #0",
    "mov x30, #0",
    "mov x0, sp",
    "and sp, x0, #-16",
    "bl zot_stub_main",
    "brk #0",
);

#[cfg(target_arch = "riscv64")]
core::arch::global_asm!(
    ".globl _start",
    "_start:",
    ".option push",
    ".option norelax",
    "la gp, __global_pointer$",
    ".option pop",
    "mv a0, sp",
    "andi sp, sp, -16",
    "call zot_stub_main",
    "unimp",
);

const SPEC_FD: usize = 3;
const STATUS_FD: i32 = 4;

#[repr(C, align(8))]
struct Spec([u8; 4 << 20]);

static mut SPEC: Spec = Spec([0; 4 << 20]);

#[no_mangle]
unsafe extern "C" fn zot_stub_main(_sp: *const usize) -> ! {
    // SAFETY: single-threaded; nothing else touches the buffer.
    let buf: &mut [u8] = &mut *core::ptr::addr_of_mut!(SPEC.0);
    let mut len = 0;
    loop {
        let r = sys::syscall(
            sys::nr::READ,
            SPEC_FD,
            buf.as_mut_ptr().add(len) as usize,
            buf.len() - len,
            0,
            0,
            0,
        );
        match sys::check(r) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(sys::EINTR) => {}
            Err(_) => sys::exit(tail::EXIT_SETUP),
        }
        if len == buf.len() {
            sys::exit(tail::EXIT_SETUP); // larger than any launch
        }
    }
    sys::syscall(sys::nr::CLOSE, SPEC_FD, 0, 0, 0, 0, 0);
    let code = tail::run(&mut buf[..len], STATUS_FD);
    sys::exit(code)
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    sys::exit(tail::EXIT_SETUP)
}

// The memory functions the compiler may call (no libc to provide them).
// Volatile accesses keep the loops from being turned back into calls.

#[no_mangle]
unsafe extern "C" fn memcpy(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    let mut i = 0;
    while i < n {
        core::ptr::write_volatile(d.add(i), core::ptr::read_volatile(s.add(i)));
        i += 1;
    }
    d
}

#[no_mangle]
unsafe extern "C" fn memmove(d: *mut u8, s: *const u8, n: usize) -> *mut u8 {
    if (d as usize) < (s as usize) {
        memcpy(d, s, n)
    } else {
        let mut i = n;
        while i > 0 {
            i -= 1;
            core::ptr::write_volatile(d.add(i), core::ptr::read_volatile(s.add(i)));
        }
        d
    }
}

#[no_mangle]
unsafe extern "C" fn memset(d: *mut u8, c: i32, n: usize) -> *mut u8 {
    let mut i = 0;
    while i < n {
        core::ptr::write_volatile(d.add(i), c as u8);
        i += 1;
    }
    d
}

#[no_mangle]
unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i < n {
        let (x, y) = (
            core::ptr::read_volatile(a.add(i)),
            core::ptr::read_volatile(b.add(i)),
        );
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

#[no_mangle]
unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    memcmp(a, b, n)
}

#[no_mangle]
unsafe extern "C" fn strlen(s: *const u8) -> usize {
    let mut n = 0;
    while core::ptr::read_volatile(s.add(n)) != 0 {
        n += 1;
    }
    n
}

/// The precompiled `core` refers to it (it is built for unwinding); with
/// `panic=abort` nothing unwinds, so it is never called.
#[no_mangle]
extern "C" fn rust_eh_personality() {}
