//! The proxy attempts of `--check`: a second sandbox whose only way out is
//! the filtering proxy, allowing one origin the check serves on the host's
//! loopback. An allowed request must get through (the control); an
//! unlisted host, a direct connection and a loopback address behind an
//! allowed name must not. The origin itself says what reached it, and the
//! proxy's audit records say what it refused, so neither an escape nor a
//! refusal rests on the runner's word alone.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zot_policy::net::AllowList;
use zot_policy::sandbox::{NetworkPolicy, SandboxPolicy};

use super::{attempt_run, outcome, AttemptOutcome, CheckLine, Feature, Fixture, ProxySpec};
use crate::proxy::{AuditRecord, Decision, REASON_HEADER};
use crate::resolve::Backend;

pub(super) const CONTROL: &str = "control: request an allowed host through the proxy";
pub(super) const UNLISTED: &str = "request an unlisted host through the proxy";
pub(super) const DIRECT: &str = "tcp connect to an allowed host without the proxy";
pub(super) const PRIVATE: &str = "request a loopback address behind an allowed name";

/// Every proxy attempt, in report order.
pub(super) const ATTEMPTS: [&str; 4] = [CONTROL, UNLISTED, DIRECT, PRIVATE];

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const READ_TIMEOUT: Duration = Duration::from_secs(5);

// ------------------------------------------------------- inside the sandbox

/// The proxy as the sandbox's tools find it: `HTTP_PROXY`.
pub(super) fn proxy_from_env() -> Result<SocketAddr, String> {
    let v = std::env::var("HTTP_PROXY")
        .or_else(|_| std::env::var("http_proxy"))
        .map_err(|_| "HTTP_PROXY is not set in the sandbox".to_string())?;
    let addr = v
        .strip_prefix("http://")
        .unwrap_or(&v)
        .trim_end_matches('/');
    addr.parse()
        .map_err(|e| format!("HTTP_PROXY={v} is not an address: {e}"))
}

/// The runner's side: each attempt `Ok` when it reached the origin.
pub(super) fn run_proxy_attempts(
    p: &ProxySpec,
    proxy: Result<SocketAddr, String>,
) -> Vec<AttemptOutcome> {
    let via = |url: &str| proxy.clone().and_then(|addr| http_get(addr, url));
    let control = via(&p.allowed_url).and_then(|r| {
        if r.status == 200 && r.body.contains(&p.token) {
            Ok(format!("{} through the proxy", r.summary()))
        } else {
            Err(r.summary())
        }
    });
    let attack = |url: &str| match via(url) {
        Ok(r) if r.body.contains(&p.token) => Ok(format!("reached the origin: {}", r.summary())),
        Ok(r) => Err(r.summary()),
        Err(e) => Err(e),
    };
    let direct = match TcpStream::connect_timeout(&p.direct, CONNECT_TIMEOUT) {
        Ok(mut s) => {
            let _ = s.write_all(b"GET /zot-check-direct HTTP/1.1\r\nConnection: close\r\n\r\n");
            Ok(format!("connected to {} without the proxy", p.direct))
        }
        Err(e) => Err(format!("{}: {e}", p.direct)),
    };
    vec![
        outcome(CONTROL, control),
        outcome(UNLISTED, attack(&p.unlisted_url)),
        outcome(DIRECT, direct),
        outcome(PRIVATE, attack(&p.private_url)),
    ]
}

/// A proxy's answer.
struct Reply {
    status: u16,
    reason: Option<String>,
    body: String,
}

impl Reply {
    fn summary(&self) -> String {
        match &self.reason {
            Some(r) => format!("HTTP {}, {REASON_HEADER}: {r}", self.status),
            None => format!("HTTP {}", self.status),
        }
    }
}

/// `GET url` through the HTTP proxy at `proxy` (an absolute-URI request).
fn http_get(proxy: SocketAddr, url: &str) -> Result<Reply, String> {
    let host = url
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .ok_or_else(|| format!("not an http URL: {url}"))?;
    let mut s = TcpStream::connect_timeout(&proxy, CONNECT_TIMEOUT)
        .map_err(|e| format!("the proxy at {proxy}: {e}"))?;
    s.set_read_timeout(Some(READ_TIMEOUT)).ok();
    s.set_write_timeout(Some(READ_TIMEOUT)).ok();
    write!(
        s,
        "GET {url} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("sending to the proxy: {e}"))?;
    let mut raw = Vec::new();
    // Everything up to the close (or the timeout), bounded.
    let _ = (&mut s).take(64 << 10).read_to_end(&mut raw);
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    let head = match resp.parse(&raw) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => {
            return Err(format!(
                "no HTTP answer from the proxy ({} bytes)",
                raw.len()
            ))
        }
    };
    let reason = resp
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(REASON_HEADER))
        .map(|h| String::from_utf8_lossy(h.value).into_owned());
    Ok(Reply {
        status: resp.code.unwrap_or(0),
        reason,
        body: String::from_utf8_lossy(&raw[head..]).into_owned(),
    })
}

// ------------------------------------------------------------ on the host

/// A loopback HTTP server on the host with three listeners; it answers
/// every request with `token` and remembers which listener saw what.
pub(super) struct Origin {
    pub allowed: SocketAddr,
    pub unlisted: SocketAddr,
    pub private: SocketAddr,
    seen: Arc<Mutex<Vec<(SocketAddr, String)>>>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Origin {
    pub fn start(token: &str) -> std::io::Result<Origin> {
        let lo = Ipv4Addr::LOCALHOST;
        // Never the port the sandbox's bridge listens on inside.
        let bind = |ip: Ipv4Addr, port: u16| -> std::io::Result<TcpListener> {
            loop {
                let l = TcpListener::bind((ip, port))?;
                if l.local_addr()?.port() != crate::planner::PROXY_PORT {
                    return Ok(l);
                }
            }
        };
        let allowed = bind(lo, 0)?;
        let p = allowed.local_addr()?.port();
        // Another host on the same port; any loopback port if that fails.
        let other = Ipv4Addr::new(127, 0, 0, 2);
        let unlisted = bind(other, p)
            .or_else(|_| bind(other, 0))
            .or_else(|_| bind(lo, 0))?;
        let private = bind(lo, 0)?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut o = Origin {
            allowed: allowed.local_addr()?,
            unlisted: unlisted.local_addr()?,
            private: private.local_addr()?,
            seen: seen.clone(),
            stop: stop.clone(),
            threads: Vec::new(),
        };
        for l in [allowed, unlisted, private] {
            l.set_nonblocking(true)?;
            let (seen, stop, token) = (seen.clone(), stop.clone(), token.to_string());
            o.threads
                .push(std::thread::spawn(move || serve(l, &seen, &stop, &token)));
        }
        Ok(o)
    }

    /// The request paths that reached `addr`.
    pub fn paths(&self, addr: SocketAddr) -> Vec<String> {
        self.seen
            .lock()
            .map(|s| {
                s.iter()
                    .filter(|(a, _)| *a == addr)
                    .map(|(_, p)| p.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn serve(l: TcpListener, seen: &Mutex<Vec<(SocketAddr, String)>>, stop: &AtomicBool, token: &str) {
    let Ok(me) = l.local_addr() else { return };
    while !stop.load(Ordering::Relaxed) {
        let mut s = match l.accept() {
            Ok((s, _)) => s,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        s.set_nonblocking(false).ok();
        s.set_read_timeout(Some(Duration::from_secs(2))).ok();
        let mut head = Vec::new();
        let mut b = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
            match s.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&b[..n]),
            }
        }
        // The request's path (the proxy forwards origin-form).
        let line = String::from_utf8_lossy(&head);
        let path = line
            .lines()
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .unwrap_or("")
            .to_string();
        if let Ok(mut v) = seen.lock() {
            v.push((me, path));
        }
        let _ = write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{token}",
            token.len()
        );
    }
}

/// The proxy refused `host:port` (its audit record's reason).
fn refusal<'a>(records: &'a [AuditRecord], host: &str, port: u16) -> Option<&'a str> {
    records
        .iter()
        .find(|r| {
            r.decision == Decision::Deny && r.host.as_deref() == Some(host) && r.port == Some(port)
        })
        .map(|r| r.reason.as_deref().unwrap_or("no reason recorded"))
}

fn line(name: &str, result: &str, detail: impl Into<String>) -> CheckLine {
    CheckLine {
        name: name.into(),
        feature: Feature::Net,
        result: result.into(),
        detail: detail.into(),
    }
}

/// The proxy lines of the check, for `base` (the check's policy) on
/// `backend`. Only the namespace backends can run a proxied network (zot
/// refuses allowed hosts elsewhere): there every line is `not-enforced`.
pub(super) fn proxy_lines(backend: &Backend, base: &SandboxPolicy, f: &Fixture) -> Vec<CheckLine> {
    let all = |result: &str, detail: &str| -> Vec<CheckLine> {
        ATTEMPTS.iter().map(|n| line(n, result, detail)).collect()
    };
    if !matches!(backend, Backend::Bwrap { .. } | Backend::Native) {
        return all(
            "not-enforced",
            &format!(
                "the {} backend has no network namespace: zot refuses allowed hosts there",
                backend.kind().as_str()
            ),
        );
    }
    let token = format!("{}-origin", f.token);
    let origin = match Origin::start(&token) {
        Ok(o) => o,
        Err(e) => return all("error", &format!("starting the loopback origin: {e}")),
    };
    let (allowed, unlisted, private) = (origin.allowed, origin.unlisted, origin.private);
    let allow =
        match AllowList::parse(&[allowed.to_string(), format!("localhost:{}", private.port())]) {
            Ok(a) => a,
            Err(e) => return all("error", &format!("the allow list: {e}")),
        };
    let mut policy = base.clone();
    policy.network = NetworkPolicy::Proxied {
        allow,
        socket_dir: None,
    };
    let mut spec = f.attempt_spec(None);
    spec.proxy = Some(ProxySpec {
        allowed_url: format!("http://{allowed}/zot-check-allowed"),
        unlisted_url: format!("http://{unlisted}/zot-check-unlisted"),
        private_url: format!("http://localhost:{}/zot-check-private", private.port()),
        direct: allowed,
        token,
    });
    let json = match serde_json::to_string(&spec) {
        Ok(j) => j,
        Err(e) => return all("error", &format!("encoding the attempt spec: {e}")),
    };
    let run = match crate::run(attempt_run(backend, policy, json)) {
        Ok(o) => o,
        Err(e) => {
            return all(
                "error",
                &format!(
                    "the proxied sandbox could not start: {}",
                    zot_launcher::error_chain(&e)
                ),
            )
        }
    };
    let outcomes: Vec<AttemptOutcome> = match serde_json::from_slice(&run.stdout) {
        Ok(v) => v,
        Err(_) => {
            let err = String::from_utf8_lossy(&run.stderr);
            return all(
                "error",
                &format!(
                    "attempt runner: exit code {}; {}",
                    run.exit_code,
                    err.lines().last().unwrap_or("no output")
                ),
            );
        }
    };
    evaluate(&outcomes, &run.proxy, &origin)
}

/// Judge the runner's outcomes against what the origin saw and what the
/// proxy recorded.
fn evaluate(
    outcomes: &[AttemptOutcome],
    records: &[AuditRecord],
    origin: &Origin,
) -> Vec<CheckLine> {
    let get = |n: &str| outcomes.iter().find(|o| o.name == n);
    let reached = |addr: SocketAddr, path: &str| origin.paths(addr).iter().any(|p| p == path);
    let mut lines = Vec::new();

    lines.push(match get(CONTROL) {
        None => line(CONTROL, "error", "no result from the runner"),
        Some(o) if o.succeeded && reached(origin.allowed, "/zot-check-allowed") => {
            line(CONTROL, "ok", &o.detail)
        }
        Some(o) if o.succeeded => line(
            CONTROL,
            "failed",
            format!("{} (but the origin saw no request)", o.detail),
        ),
        Some(o) => line(CONTROL, "failed", &o.detail),
    });

    // A refusal by the proxy must be its own: a 403 recorded for the host.
    let by_proxy = |name: &str, escaped: bool, host: &str, port: u16| match get(name) {
        None => line(name, "error", "no result from the runner"),
        Some(o) if o.succeeded || escaped => line(
            name,
            "allowed",
            format!("{} (the origin saw the request)", o.detail),
        ),
        Some(o) => match refusal(records, host, port) {
            Some(reason) if o.detail.contains(reason) => line(name, "refused", &o.detail),
            Some(reason) => line(
                name,
                "refused",
                format!("{} (recorded: {reason})", o.detail),
            ),
            None => line(
                name,
                "error",
                format!(
                    "the proxy recorded no refusal of {host}:{port}: {}",
                    o.detail
                ),
            ),
        },
    };
    let u = origin.unlisted;
    lines.push(by_proxy(
        UNLISTED,
        !origin.paths(u).is_empty(),
        &u.ip().to_string(),
        u.port(),
    ));
    lines.push(match get(DIRECT) {
        None => line(DIRECT, "error", "no result from the runner"),
        Some(o) if o.succeeded || reached(origin.allowed, "/zot-check-direct") => {
            line(DIRECT, "allowed", &o.detail)
        }
        Some(o) => line(
            DIRECT,
            "refused",
            format!(
                "{} (the sandbox's 127.0.0.1 is its own; the host's is not routed)",
                o.detail
            ),
        ),
    });
    let q = origin.private;
    lines.push(by_proxy(
        PRIVATE,
        !origin.paths(q).is_empty(),
        "localhost",
        q.port(),
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real proxy (and bridge) allowing `allow`, on the test's loopback.
    fn proxy(allow: &[String]) -> (crate::proxy::Proxy, SocketAddr, tempfile::TempDir) {
        let dir = tempfile::Builder::new()
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .unwrap();
        let socket = dir.path().join("proxy.sock");
        let cfg = crate::proxy::ProxyConfig::new(AllowList::parse(allow).unwrap(), socket.clone());
        let p = crate::proxy::Proxy::start(cfg).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || zot_launcher::bridge::serve(l, &socket, None));
        (p, addr, dir)
    }

    fn spec(o: &Origin, token: &str) -> ProxySpec {
        ProxySpec {
            allowed_url: format!("http://{}/zot-check-allowed", o.allowed),
            unlisted_url: format!("http://{}/zot-check-unlisted", o.unlisted),
            private_url: format!("http://localhost:{}/zot-check-private", o.private.port()),
            direct: o.allowed,
            token: token.into(),
        }
    }

    fn result<'a>(lines: &'a [CheckLine], name: &str) -> &'a str {
        &lines.iter().find(|l| l.name == name).unwrap().result
    }

    /// On the host (no sandbox), behind a proxy configured as the check's:
    /// the control works, the proxy refuses the unlisted host and the
    /// loopback address with a recorded reason, and the direct connection
    /// (which only a network namespace stops) is an escape.
    #[test]
    fn the_checks_proxy_refuses_and_a_direct_connection_is_caught() {
        let o = Origin::start("tok-1").unwrap();
        let (p, addr, _d) = proxy(&[
            o.allowed.to_string(),
            format!("localhost:{}", o.private.port()),
        ]);
        let out = run_proxy_attempts(&spec(&o, "tok-1"), Ok(addr));
        let records = p.stop();
        let lines = evaluate(&out, &records, &o);
        assert_eq!(result(&lines, CONTROL), "ok", "{lines:?}");
        assert_eq!(result(&lines, UNLISTED), "refused", "{lines:?}");
        assert_eq!(result(&lines, PRIVATE), "refused", "{lines:?}");
        let private = lines.iter().find(|l| l.name == PRIVATE).unwrap();
        assert!(private.detail.contains("loopback"), "{private:?}");
        assert!(private.detail.contains("403"), "{private:?}");
        assert_eq!(result(&lines, DIRECT), "allowed", "{lines:?}");
    }

    /// A proxy that lists everything the attempts aim at: every attack
    /// reaches the origin and is reported as an escape (the attempts can
    /// fail; nothing is hard-coded).
    #[test]
    fn a_proxy_without_the_protections_fails_every_attempt() {
        let o = Origin::start("tok-2").unwrap();
        let (p, addr, _d) = proxy(&[
            o.allowed.to_string(),
            o.unlisted.to_string(),
            format!("localhost:{}", o.private.port()),
            format!("127.0.0.1:{}", o.private.port()),
            format!("[::1]:{}", o.private.port()),
        ]);
        let out = run_proxy_attempts(&spec(&o, "tok-2"), Ok(addr));
        let lines = evaluate(&out, &p.stop(), &o);
        for n in [UNLISTED, DIRECT, PRIVATE] {
            assert_eq!(result(&lines, n), "allowed", "{n}: {lines:?}");
        }
        assert_eq!(o.paths(o.unlisted), ["/zot-check-unlisted"]);
    }

    /// No proxy in the environment: the control fails, and a refusal the
    /// proxy did not record is an error, never a pass.
    #[test]
    fn without_a_proxy_the_control_fails_and_nothing_passes_silently() {
        let o = Origin::start("tok-3").unwrap();
        let out = run_proxy_attempts(&spec(&o, "tok-3"), Err("HTTP_PROXY is not set".into()));
        let lines = evaluate(&out, &[], &o);
        assert_eq!(result(&lines, CONTROL), "failed");
        assert_eq!(result(&lines, UNLISTED), "error");
        assert_eq!(result(&lines, PRIVATE), "error");
    }
}
