//! Differential fuzzing of the risk gate against real bash:
//! `cargo +nightly fuzz run gate_diff`.
//!
//! Whatever the gate allows in allowlist mode is run by bash in a scratch
//! directory with a PATH holding only loggers: every listed program is a
//! stub that records its name (the wrappers `env`, `nice`, `timeout`,
//! `xargs`, `find` record and then run the real program, so what they run
//! is looked up in the same PATH; `sh` runs real bash), and anything else
//! bash tries to run is recorded by `command_not_found_handle`. The
//! property: bash ran only listed programs. The same shape as the
//! differential test in tests/e2e_gate.rs.
//!
//! Every logger also records the names of the variables in its
//! environment: a listed program may only see the environment bash was
//! started with and variables known to be inert (`LANG`, `LC_*`, `TZ`,
//! ...), never one that makes it run another program (`RUSTC_WRAPPER`,
//! `GOFLAGS`, `GIT_SSH_COMMAND`, ...). Launchers (`eatmydata`, `softlimit`)
//! run for real when installed, so the command they launch is logged too.
#![no_main]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use zot_policy::gate::{evaluate, Decision, GateMode};

const ALLOW: &[&str] = &[
    "git", "ls", "grep", "cat", "echo", "wc", "sh", "env", "xargs", "find", "nice", "sed", "sort",
    "tar", "awk", "timeout", "head", "cargo", "go", "make", "rsync", "pip", "curl", "eatmydata",
    "softlimit", "hyperfine", "uv", "npx",
];
const REAL_WRAPPERS: &[&str] = &["env", "nice", "timeout", "xargs", "find", "eatmydata", "softlimit"];

/// Variables bash and the oracle set, and the ones known to be inert (the
/// gate's list, policy/src/gate/vars.rs).
const BASELINE: &[&str] = &["PATH", "BASH_ENV", "HOME", "ZOT_LOG", "PWD", "SHLVL", "_", "OLDPWD"];
const INERT: &[&str] = &[
    "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR",
    "CLICOLOR_FORCE", "CI", "RUST_LOG", "RUST_BACKTRACE", "RUST_LIB_BACKTRACE",
    "RUST_TEST_THREADS", "RUST_TEST_NOCAPTURE", "RUST_MIN_STACK", "COLUMNS", "LINES",
    "CARGO_TERM_COLOR", "CARGO_TERM_VERBOSE", "CARGO_TERM_QUIET", "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS", "GOOS", "GOARCH", "GOMAXPROCS", "GOGC", "CGO_ENABLED", "NODE_ENV",
    "DEBIAN_FRONTEND", "SOURCE_DATE_EPOCH", "GREP_COLOR", "GREP_COLORS", "LS_COLORS",
    "TIME_STYLE", "QUOTING_STYLE", "POSIXLY_CORRECT", "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
    "RAYON_NUM_THREADS", "OMP_NUM_THREADS", "TERM_PROGRAM",
];

fn inert(name: &str) -> bool {
    BASELINE.contains(&name)
        || INERT.contains(&name)
        || (name.len() > 3
            && name.starts_with("LC_")
            && name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
}

struct Oracle {
    root: PathBuf,
    bash: PathBuf,
}

fn real(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

fn oracle() -> &'static Oracle {
    static O: OnceLock<Oracle> = OnceLock::new();
    O.get_or_init(|| {
        let bash = real("bash").expect("bash");
        let root = std::env::temp_dir().join(format!("zot-gate-diff-{}", std::process::id()));
        let bin = root.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        for name in ALLOW {
            let tail = if *name == "sh" {
                format!("exec {} \"$@\"", bash.display())
            } else if let Some(r) = REAL_WRAPPERS.contains(name).then(|| real(name)).flatten() {
                format!("exec {} \"$@\"", r.display())
            } else {
                "exit 0".to_string()
            };
            // The program's name, then `=NAME` for each exported variable.
            let script = format!(
                "#!{}\nprintf '%s\\n' {name} >> \"$ZOT_LOG\"\ncompgen -e | while read -r v; do printf '=%s\\n' \"$v\"; done >> \"$ZOT_LOG\"\n{tail}\n",
                bash.display()
            );
            let p = bin.join(name);
            std::fs::write(&p, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(
            root.join("bash_env"),
            "command_not_found_handle() { printf '%s\\n' \"${1##*/}\" >> \"$ZOT_LOG\"; return 127; }\n",
        )
        .unwrap();
        Oracle { root, bash }
    })
}

/// Programs bash ran for `cmd` (by name, as logged).
fn ran(o: &Oracle, cmd: &str) -> Vec<String> {
    let log = o.root.join("log");
    let _ = std::fs::remove_file(&log);
    let status = Command::new("/usr/bin/timeout")
        .args(["-s", "KILL", "3"])
        .arg(&o.bash)
        .arg("-c")
        .arg(cmd)
        .env_clear()
        .env("PATH", o.root.join("bin"))
        .env("BASH_ENV", o.root.join("bash_env"))
        .env("HOME", o.root.join("work"))
        .env("ZOT_LOG", &log)
        .current_dir(o.root.join("work"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(status.is_ok(), "cannot run bash");
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    if input.len() > 4096 || input.contains('\0') {
        return;
    }
    let allow: Vec<String> = ALLOW.iter().map(|s| s.to_string()).collect();
    let v = evaluate(input, GateMode::Allowlist, &allow);
    if v.decision != Decision::Allow {
        return;
    }
    // A real wrapper falling back to the system PATH (`env -i`, `env -u
    // PATH`, `command -p`) is outside what the loggers can see.
    if input.contains("-i") || input.contains("-u") || input.contains("-p") || input.contains("PATH") {
        return;
    }
    let o = oracle();
    let logged = ran(o, input);
    let (vars, programs): (Vec<String>, Vec<String>) =
        logged.into_iter().partition(|l| l.starts_with('='));
    for var in &vars {
        let name = &var[1..];
        assert!(
            inert(name),
            "allowlist mode allowed {input:?}, and a listed program saw the variable `{name}` (gate: {v:?})"
        );
    }
    for p in &programs {
        assert!(
            ALLOW.contains(&p.as_str()),
            "allowlist mode allowed {input:?}, and bash ran `{p}` (ran: {programs:?}; gate: {v:?})"
        );
    }
});
