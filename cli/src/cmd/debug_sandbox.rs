//! `zot debug sandbox --check | --explain`: the deployment gate and the
//! audit view of the sandbox on this host.
//!
//! `--check` exits 0 only when every required feature is fully enforced and
//! every escape attempt was refused; 1 otherwise. `--explain` runs nothing.

use std::path::PathBuf;

use anyhow::Context;
use zot_policy::sandbox::SandboxMode;
use zot_supervisor::check::{self, CheckReport, CheckRequest, Feature};
use zot_supervisor::explain::{self, Explanation};
use zot_supervisor::BackendChoice;

#[derive(clap::Args, Debug)]
#[command(
    group(clap::ArgGroup::new("action").required(true).args(["check", "explain", "run_attempts"])),
    // The internal --run-attempts stays out of the usage line too.
    override_usage = "zot debug sandbox [OPTIONS] <--check|--explain> [REF]"
)]
pub struct Args {
    /// Probe the host, resolve the backend and run real escape attempts
    #[arg(long)]
    check: bool,
    /// Show what a mode (or an agent) resolves to here; runs nothing
    #[arg(long)]
    explain: bool,
    /// Sandbox mode (default: workspace-write for --check, read-only for --explain)
    #[arg(long)]
    mode: Option<SandboxMode>,
    /// auto, bwrap, native or landlock
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// Features that must be fully enforced (comma-separated: fs,net,pid,seccomp,landlock)
    #[arg(long, value_delimiter = ',', requires = "check")]
    require: Vec<Feature>,
    /// Working directory to explain a mode for (default: the current directory)
    #[arg(long, requires = "explain")]
    cwd: Option<PathBuf>,
    /// With --explain: the plan with connections allowed to HOST[:PORT] only,
    /// through the filtering proxy (repeatable; as `zot sandbox --allow-host`)
    #[arg(
        long = "allow-host",
        value_name = "HOST[:PORT]",
        requires = "explain",
        conflicts_with = "reference"
    )]
    allow_hosts: Vec<String>,
    /// Print a JSON document
    #[arg(long)]
    json: bool,
    /// An agent (directory, .zot, name or GitHub reference) to explain
    #[arg(value_name = "REF", requires = "explain", conflicts_with = "mode")]
    reference: Option<String>,
    /// Internal: run the escape attempts inside the sandbox
    #[arg(long = "run-attempts", hide = true, value_name = "JSON")]
    run_attempts: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if let Some(json) = &args.run_attempts {
        let spec: check::AttemptSpec =
            serde_json::from_str(json).context("invalid attempt spec")?;
        let out = check::run_attempts(&spec);
        println!("{}", serde_json::to_string(&out)?);
        return Ok(0);
    }
    if args.check {
        return run_check(&args);
    }
    run_explain(&args)
}

fn run_check(args: &Args) -> anyhow::Result<u8> {
    let req = CheckRequest {
        mode: args.mode.unwrap_or(SandboxMode::WorkspaceWrite),
        backend: args.backend,
        require: args.require.clone(),
        zot_exe: std::env::current_exe().context("cannot find the zot executable")?,
    };
    let report = check::check(&req).context("sandbox check")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", check_text(&report));
    }
    Ok(if report.ok { 0 } else { 1 })
}

fn check_text(r: &CheckReport) -> String {
    let mut s = format!(
        "zot sandbox check: mode {}, backend {}\n",
        r.mode, r.backend
    );
    for reason in &r.backend_reasons {
        s.push_str(&format!("  note: {reason}\n"));
    }
    let enforced: Vec<String> = r.enforced.iter().map(|(k, v)| format!("{k} {v}")).collect();
    if !enforced.is_empty() {
        s.push_str(&format!("  enforced: {}\n", enforced.join(", ")));
    }
    let req: Vec<&str> = r.required.iter().map(|f| f.as_str()).collect();
    s.push_str(&format!("  required: {}\n", req.join(", ")));
    if !r.checks.is_empty() {
        s.push_str(&format!(
            "  {:<13} {:<9} {}\n",
            "RESULT", "FEATURE", "ATTEMPT"
        ));
        for c in &r.checks {
            s.push_str(&format!(
                "  {:<13} {:<9} {}",
                c.result,
                c.feature.as_str(),
                c.name
            ));
            if matches!(
                c.result.as_str(),
                "allowed" | "failed" | "error" | "not-enforced"
            ) {
                s.push_str(&format!("  ({})", c.detail));
            }
            s.push('\n');
        }
    }
    if r.ok {
        s.push_str(&format!(
            "ok: everything required is enforced ({} ms)\n",
            r.duration_ms
        ));
    } else {
        let mut why = Vec::new();
        if !r.missing.is_empty() {
            let m: Vec<&str> = r.missing.iter().map(|f| f.as_str()).collect();
            why.push(format!("not fully enforced: {}", m.join(", ")));
        }
        let bad = r
            .checks
            .iter()
            .filter(|c| matches!(c.result.as_str(), "allowed" | "failed" | "error"))
            .count();
        if bad > 0 {
            why.push(format!("{bad} attempt(s) not refused or controls failed"));
        }
        s.push_str(&format!(
            "FAILED: {} ({} ms)\n",
            why.join("; "),
            r.duration_ms
        ));
    }
    s
}

fn run_explain(args: &Args) -> anyhow::Result<u8> {
    let config = match &args.reference {
        Some(_) => None,
        None => Some(super::sandbox::load_config()?),
    };
    // The agent's bundled extensions run under policies of their own.
    let mut extensions = Vec::new();
    let policy = match &args.reference {
        Some(reference) => {
            let here = std::env::current_dir().context("cannot read the current directory")?;
            let ws = args.cwd.as_ref().map(|c| here.join(c)).unwrap_or(here);
            let ws = std::fs::canonicalize(&ws)
                .with_context(|| format!("workspace {}", ws.display()))?;
            let (p, exts) = zot_agent::compile_policies(reference, &ws)
                .with_context(|| format!("agent {reference}"))?;
            extensions = exts;
            p
        }
        None => super::sandbox::policy_from_args(
            config.as_ref().expect("loaded without a reference"),
            args.mode.unwrap_or(SandboxMode::ReadOnly),
            args.cwd.as_deref(),
            &[],
            &[],
            &[],
            false,
            &[],
        )?,
    };
    let mut policy = policy;
    if let Some(config) = &config {
        policy.limits = super::sandbox::limits(config, &Default::default());
        match super::sandbox::proxied_network(policy.mode, &args.allow_hosts) {
            Ok(Some(n)) => policy.network = n,
            Ok(None) => {}
            Err(e) => {
                eprintln!("zot: {e}");
                return Ok(super::USAGE);
            }
        }
    }
    let ex = explain::explain(&policy, args.backend);
    let exts: Vec<(String, Explanation)> = extensions
        .iter()
        .map(|(name, p)| (name.clone(), explain::explain(p, args.backend)))
        .collect();
    if args.json {
        let mut v = serde_json::to_value(&ex)?;
        if let (Some(obj), false) = (v.as_object_mut(), exts.is_empty()) {
            let list: Vec<serde_json::Value> = exts
                .iter()
                .map(|(n, e)| serde_json::json!({"name": n, "explanation": e}))
                .collect();
            obj.insert("extensions".into(), list.into());
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", explain_text(&ex));
        for (name, e) in &exts {
            print!(
                "\nextension {name}: the agent's policy, plus its directory readable (the working directory) and its data dir writable; environment HOME, TMPDIR, PATH, LANG, TERM, TZ and env.read\n{}",
                explain_text(e)
            );
        }
    }
    let failed = ex.error.is_some() || exts.iter().any(|(_, e)| e.error.is_some());
    Ok(if failed { 1 } else { 0 })
}

/// The human `--explain`, rendered from the plan (the same data `--json`
/// prints and a run executes).
fn explain_text(e: &Explanation) -> String {
    use zot_launcher::{landlock_rules, seccomp};
    let mut s = format!("mode {}: backend {}\n", e.mode, e.backend);
    if let Some(err) = &e.error {
        s.push_str(&format!("  error: {err}\n"));
    }
    for r in &e.reasons {
        s.push_str(&format!("  note: {r}\n"));
    }
    if let Some(rep) = &e.enforced {
        s.push_str(&format!(
            "enforced: filesystem {}, network {}, pid {}, seccomp {}, landlock {}\n",
            rep.filesystem, rep.network, rep.pid, rep.seccomp, rep.landlock
        ));
        s.push_str(&format!(
            "limits: {} ({})\n",
            rep.limits,
            rep.limit_values.to_text()
        ));
    }
    let Some(plan) = &e.plan else {
        return s;
    };
    s.push_str(&format!("working directory: {}\n", plan.cwd.display()));
    if !plan.namespaces.is_empty() {
        let ns: Vec<&str> = plan.namespaces.iter().map(|n| n.as_str()).collect();
        s.push_str(&format!("namespaces: {}\n", ns.join(", ")));
    }
    if !plan.mounts.is_empty() {
        s.push_str("mounts (in order):\n");
        for (i, m) in plan.mounts.iter().enumerate() {
            s.push_str(&format!("  {:>2}. {}\n", i + 1, m.describe()));
        }
    }
    let socks: Vec<String> = plan
        .mounts
        .iter()
        .filter_map(|m| match m {
            zot_launcher::plan::MountOp::MaskSocket { dst } => Some(dst.display().to_string()),
            _ => None,
        })
        .collect();
    s.push_str(&format!(
        "host unix sockets masked: {}\n",
        if !socks.is_empty() {
            socks.join(" ")
        } else if zot_launcher::seccomp::notifies(&plan.seccomp) {
            "(none needed: the supervisor refuses connects to them)".to_string()
        } else {
            "(none visible)".to_string()
        }
    ));
    if plan.isolation == zot_launcher::plan::Isolation::Namespaces {
        s.push_str(if zot_launcher::seccomp::notifies(&plan.seccomp) {
            "unix sockets bound later or elsewhere: connect/sendto/sendmsg checked by the supervisor (only sockets the sandbox bound are reached)\n"
        } else {
            "unix sockets bound later or elsewhere: not checked (no seccomp user notification here)\n"
        });
    }
    if let Some(b) = &e.bwrap {
        s.push_str(&format!(
            "bwrap: {} {} -- (launcher)\n",
            b.path.display(),
            b.args.join(" ")
        ));
        if b.launcher_mounts > 0 {
            s.push_str(&format!(
                "launcher: makes the view's last {} mounts inside it (new mount API; bwrap alone: the view args of --json)\n",
                b.launcher_mounts
            ));
        }
    }
    // Only entries that apply here (existing deny-read paths, protected
    // paths inside a writable root) come with their origin.
    let shown: Vec<&zot_policy::sandbox::Origin> = e
        .origins
        .iter()
        .filter(|o| {
            if o.rule == "deny-read" {
                o.path.exists()
            } else {
                plan.protected.contains(&o.path)
            }
        })
        .collect();
    if !shown.is_empty() {
        s.push_str("where paths come from:\n");
        for o in shown {
            s.push_str(&format!("  {} {}: {}\n", o.rule, o.path.display(), o.from));
        }
    }
    let rules = landlock_rules::describe(&plan.landlock);
    if !rules.is_empty() {
        s.push_str(&format!(
            "landlock rules ({}):\n",
            match plan.landlock.compat {
                zot_launcher::plan::LandlockCompat::Required => "ABI v1 required",
                _ => "best effort",
            }
        ));
        for r in rules {
            s.push_str(&format!("  {r}\n"));
        }
    }
    let rules = seccomp::describe(&plan.seccomp);
    if !rules.is_empty() {
        s.push_str("seccomp (everything else allowed; installed last):\n");
        for r in rules {
            s.push_str(&format!("  {r}\n"));
        }
        s.push_str("  no_new_privs set; every capability dropped (bounding set first)\n");
    }
    for l in &plan.rlimits {
        let v = |x: Option<u64>| {
            x.map(|n| n.to_string())
                .unwrap_or_else(|| "unlimited".into())
        };
        s.push_str(&format!(
            "rlimit {:?}: soft {}, hard {}\n",
            l.resource,
            v(l.soft),
            v(l.hard)
        ));
    }
    s.push_str(&format!(
        "env passed: {}\n",
        if plan.env.pass.is_empty() {
            "(none)".into()
        } else {
            plan.env.pass.join(" ")
        }
    ));
    let set: Vec<String> = plan
        .env
        .set
        .iter()
        .map(|v| format!("{}={}", v.name, v.value))
        .collect();
    s.push_str(&format!("env set: {}\n", set.join(" ")));
    let network = match (&plan.network, plan.has(zot_launcher::plan::Namespace::Net)) {
        (zot_launcher::plan::NetworkPlan::Off, true) => "off: own network namespace with loopback only; seccomp refuses non-AF_UNIX sockets".to_string(),
        (zot_launcher::plan::NetworkPlan::Off, false) => "off: seccomp refuses non-AF_UNIX sockets, connect and addressed sendto".to_string(),
        (zot_launcher::plan::NetworkPlan::Host, _) => "host network".to_string(),
        (zot_launcher::plan::NetworkPlan::Proxied { socket, port, allow }, _) => format!(
            "proxied: own network namespace with loopback only, no DNS server; the filtering proxy (outside) allows {allow}; reached through its socket {} (bound in) and a bridge on 127.0.0.1:{port} that the launcher starts before the command, under its restrictions; HTTP_PROXY, HTTPS_PROXY, ALL_PROXY (and lower case) point at it, NO_PROXY is empty",
            socket.display()
        ),
    };
    s.push_str(&format!("network: {network}\n"));
    for g in &plan.unenforced {
        s.push_str(&format!("not enforced: {}\n", g.describe()));
    }
    s
}
