//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Where the tests keep their fixtures: the target's temp dir, unless it
/// lies in a temp dir the host shares with sandboxes (`/tmp`, `/var/tmp`,
/// `/dev/shm`: a checkout under /tmp). The landlock backend leaves those
/// writable and the others give the command a private /tmp, so fixtures
/// there would be reachable or invisible rather than protected. Then, as
/// root, a directory of the tests' own under /var/lib (0755).
pub fn fixture_root() -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let t = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let real = t.canonicalize().unwrap_or_else(|_| t.clone());
    let shared = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .any(|s| real.starts_with(s));
    // SAFETY: geteuid has no preconditions.
    if shared && unsafe { libc::geteuid() } == 0 {
        let own = PathBuf::from("/var/lib/zot-tests");
        if std::fs::create_dir_all(&own).is_ok()
            && std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).is_ok()
        {
            return own;
        }
    }
    t
}

/// The `zot` binary under test.
pub fn zot_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_zot"))
}

/// The one runner of the end-to-end tests: the binary under test, as the
/// test's user, with the test's environment. Each test adds the arguments,
/// environment and directory it needs; [`as_user`] runs zot (or a copy of
/// it) as uid 65534, [`run::World::cmd`] in a private world.
pub fn zot() -> Command {
    Command::new(zot_bin())
}

/// `zot ARGS` through [`zot`], waited for.
pub fn zot_output(args: &[&str]) -> Output {
    zot().args(args).output().expect("run zot")
}

/// The `setpriv` that switches tests to uid 65534.
pub const SETPRIV: &str = "/usr/bin/setpriv";

/// `program` as uid/gid 65534 (through [`SETPRIV`], no supplementary
/// groups; the test runs as root) when `nobody`, else as the test's user.
pub fn as_user(program: impl AsRef<OsStr>, nobody: bool) -> Command {
    if nobody {
        let mut c = Command::new(SETPRIV);
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// True when CI demands that every kernel-feature test really runs.
pub fn must_work() -> bool {
    std::env::var("ZOT_TEST_MUST_WORK").is_ok_and(|v| v == "1")
}

/// Call at the top of a test that needs a host feature. Returns false (and
/// prints why) when the test should be skipped; panics instead when
/// `ZOT_TEST_MUST_WORK=1`, so a skip can never hide a regression in CI.
pub fn require(feature: &str, available: bool, reason: &str) -> bool {
    if available {
        return true;
    }
    if must_work() {
        panic!("ZOT_TEST_MUST_WORK=1 but {feature} is unavailable: {reason}");
    }
    eprintln!("SKIP: {feature} unavailable: {reason}");
    false
}

pub mod fake_llm;
pub mod pty;
pub mod run;

/// Live processes whose command line is exactly `argv`.
pub fn processes(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| [a.as_bytes(), b"\0"].concat()).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

/// An HTTP server on the host's 127.0.0.1 answering every request with
/// `body`.
pub fn origin(body: &'static str) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}
