//! The proxy against servers on loopback, reached the way the sandbox
//! reaches it: a TCP connection to the bridge, which forwards to the
//! proxy's unix socket. Names are resolved by a table (so `origin.test` can
//! point at loopback, or at a private address, on demand).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

struct Table {
    names: HashMap<String, Vec<IpAddr>>,
    lookups: Arc<AtomicUsize>,
}

impl Resolve for Table {
    fn lookup(
        &self,
        name: &str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = io::Result<Vec<IpAddr>>> + Send>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let r = self
            .names
            .get(name)
            .cloned()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such name"));
        Box::pin(async move { r })
    }
}

struct Harness {
    _dir: tempfile::TempDir,
    proxy: Option<Proxy>,
    port: u16,
    log: PathBuf,
    lookups: Arc<AtomicUsize>,
    stop: Option<OwnedFd>,
    bridge: Option<std::thread::JoinHandle<io::Result<()>>>,
}

impl Harness {
    fn new(allow: &[&str], names: &[(&str, &str)], limits: Limits) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let sdir = dir.path().join("s");
        std::fs::create_dir(&sdir).unwrap();
        std::fs::set_permissions(&sdir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let socket = sdir.join("proxy.sock");
        let log = dir.path().join("audit.jsonl");
        let lookups = Arc::new(AtomicUsize::new(0));
        let mut table = HashMap::new();
        for (n, a) in names {
            table
                .entry(n.to_string())
                .or_insert_with(Vec::new)
                .push(a.parse::<IpAddr>().unwrap());
        }
        let mut cfg = ProxyConfig::new(AllowList::parse(allow).unwrap(), socket.clone());
        cfg.audit_log = Some(log.clone());
        cfg.limits = limits;
        cfg.resolver = Arc::new(Table {
            names: table,
            lookups: lookups.clone(),
        });
        let proxy = Proxy::start(cfg).unwrap();
        let tl = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = tl.local_addr().unwrap().port();
        let (r, w) = nix::unistd::pipe().unwrap();
        let bridge = std::thread::spawn(move || {
            let r = r;
            zot_launcher::bridge::serve(tl, &socket, Some(r.as_raw_fd()))
        });
        Harness {
            _dir: dir,
            proxy: Some(proxy),
            port,
            log,
            lookups,
            stop: Some(w),
            bridge: Some(bridge),
        }
    }

    fn proxy(&self) -> &Proxy {
        self.proxy.as_ref().unwrap()
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    }

    fn records(&self) -> Vec<AuditRecord> {
        audit::read_log(&self.log).unwrap()
    }

    /// Records, waiting for at least `n` (connections write theirs as
    /// they close).
    fn wait_records(&self, n: usize) -> Vec<AuditRecord> {
        let t = Instant::now();
        loop {
            let r = self.records();
            if r.len() >= n || t.elapsed() > Duration::from_secs(10) {
                return r;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(b) = self.bridge.take() {
            let _ = b.join();
        }
    }
}

/// An HTTP server answering every request with `body` (and the request
/// head it got in `X-Seen-*` form: the head is echoed in the body when
/// `echo_head`).
struct Origin {
    port: u16,
    heads: Arc<std::sync::Mutex<Vec<String>>>,
}

fn origin(bind: &str, body: Vec<u8>) -> Origin {
    let l = TcpListener::bind(bind).unwrap();
    let port = l.local_addr().unwrap().port();
    let heads = Arc::new(std::sync::Mutex::new(Vec::new()));
    let h = heads.clone();
    let body = Arc::new(body);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let h = h.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push_str(&line);
                    if line == "\r\n" {
                        break;
                    }
                }
                h.lock().unwrap().push(head);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(&body);
            });
        }
    });
    Origin { port, heads }
}

/// A TCP server echoing what it reads.
fn echo(bind: &str) -> u16 {
    let l = TcpListener::bind(bind).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut r = s.try_clone().unwrap();
                let _ = std::io::copy(&mut r, &mut s);
            });
        }
    });
    port
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    fn reason(&self) -> &str {
        self.header(REASON_HEADER).unwrap_or("")
    }
}

fn read_response(s: &mut TcpStream) -> Response {
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let end = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(&all)))
        + 4;
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut r = httparse::Response::new(&mut headers);
    r.parse(&all[..end]).unwrap();
    Response {
        status: r.code.unwrap(),
        headers: r
            .headers
            .iter()
            .map(|h| {
                (
                    h.name.to_string(),
                    String::from_utf8_lossy(h.value).into_owned(),
                )
            })
            .collect(),
        body: all[end..].to_vec(),
    }
}

fn http_get(h: &Harness, url: &str) -> Response {
    let mut s = h.connect();
    write!(
        s,
        "GET {url} HTTP/1.1\r\nHost: ignored\r\nUser-Agent: t\r\n\r\n"
    )
    .unwrap();
    read_response(&mut s)
}

/// CONNECT, then a plain HTTP request inside the tunnel.
fn connect_get(h: &Harness, authority: &str) -> Response {
    let mut s = h.connect();
    write!(
        s,
        "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut b).unwrap() == 0 {
            break;
        }
        head.push(b[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    if !text.starts_with("HTTP/1.1 200") {
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        head.extend_from_slice(&rest);
        let all = head;
        let end = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut headers);
        r.parse(&all[..end]).unwrap();
        return Response {
            status: r.code.unwrap(),
            headers: r
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_string(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect(),
            body: all[end..].to_vec(),
        };
    }
    write!(s, "GET / HTTP/1.1\r\nHost: {authority}\r\n\r\n").unwrap();
    read_response(&mut s)
}

/// A SOCKS5 CONNECT: the reply code, and the stream after it.
fn socks(h: &Harness, target: SocksTarget<'_>, port: u16) -> (u8, TcpStream) {
    let mut s = h.connect();
    s.write_all(&[5, 1, 0]).unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).unwrap();
    assert_eq!(m, [5, 0]);
    let mut req = vec![5, 1, 0];
    match target {
        SocksTarget::Name(n) => {
            req.push(3);
            req.push(n.len() as u8);
            req.extend_from_slice(n.as_bytes());
        }
        SocksTarget::Addr(IpAddr::V4(a)) => {
            req.push(1);
            req.extend_from_slice(&a.octets());
        }
        SocksTarget::Addr(IpAddr::V6(a)) => {
            req.push(4);
            req.extend_from_slice(&a.octets());
        }
    }
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(rep[0], 5);
    (rep[1], s)
}

enum SocksTarget<'a> {
    Name(&'a str),
    Addr(IpAddr),
}

fn socks_get(h: &Harness, target: SocksTarget<'_>, port: u16) -> Result<Response, u8> {
    let (code, mut s) = socks(h, target, port);
    if code != 0 {
        return Err(code);
    }
    write!(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    Ok(read_response(&mut s))
}

fn quick() -> Limits {
    Limits {
        handshake_timeout: Duration::from_secs(1),
        ..Limits::default()
    }
}

#[test]
fn listed_name_over_http_connect_and_socks5() {
    let o = origin("127.0.0.1:0", b"hello".to_vec());
    let rule = format!("origin.test:{}", o.port);
    let lo = format!("127.0.0.1:{}", o.port);
    let h = Harness::new(&[&rule, &lo], &[("origin.test", "127.0.0.1")], quick());

    let r = http_get(&h, &format!("http://ORIGIN.test:{}/path?q=1", o.port));
    assert_eq!(r.status, 200, "{}", r.reason());
    assert_eq!(r.body, b"hello");
    let head = o.heads.lock().unwrap().last().unwrap().clone();
    assert!(head.starts_with("GET /path?q=1 HTTP/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("Host: ORIGIN.test:{}\r\n", o.port)),
        "{head}"
    );
    assert!(head.contains("Connection: close\r\n"), "{head}");

    let r = connect_get(&h, &format!("origin.test:{}", o.port));
    assert_eq!(r.status, 200, "{}", r.reason());
    assert_eq!(r.body, b"hello");

    let r = socks_get(&h, SocksTarget::Name("origin.test"), o.port).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello");

    let recs = h.wait_records(3);
    assert_eq!(recs.len(), 3, "{recs:?}");
    let protos: Vec<Proto> = recs.iter().map(|r| r.proto).collect();
    assert!(
        protos.contains(&Proto::Http)
            && protos.contains(&Proto::Connect)
            && protos.contains(&Proto::Socks5)
    );
    for r in &recs {
        assert_eq!(r.decision, Decision::Allow);
        assert_eq!(r.host.as_deref(), Some("origin.test"));
        assert_eq!(r.port, Some(o.port));
        assert_eq!(r.address.as_deref(), Some(lo.as_str()));
        assert_eq!(r.rule.as_deref(), Some(rule.as_str()));
        assert!(r.bytes_down > 5 && r.bytes_up > 10, "{r:?}");
    }
    // One resolution per request, by the proxy.
    assert_eq!(h.lookups.load(Ordering::Relaxed), 3);
}

#[test]
fn unlisted_host_and_port_are_refused_with_the_reason() {
    let o = origin("127.0.0.1:0", b"secret".to_vec());
    let rule = format!("origin.test:{}", o.port);
    let h = Harness::new(
        &[&rule, "127.0.0.0/8"],
        &[("origin.test", "127.0.0.1"), ("other.test", "127.0.0.1")],
        quick(),
    );
    let r = http_get(&h, &format!("http://other.test:{}/", o.port));
    assert_eq!(r.status, 403);
    assert!(
        r.reason().contains("is not in the sandbox's allowed hosts"),
        "{}",
        r.reason()
    );
    assert!(!String::from_utf8_lossy(&r.body).contains("secret"));

    let r = http_get(&h, "http://origin.test:1/");
    assert_eq!(r.status, 403);
    assert!(
        r.reason().contains(&format!(
            "port 1 is not allowed for origin.test (allowed: {})",
            o.port
        )),
        "{}",
        r.reason()
    );
    // Default ports 80/443 only when the rule has none.
    let r = connect_get(&h, "origin.test:443");
    assert_eq!(r.status, 403, "{}", r.reason());

    let r = connect_get(&h, &format!("other.test:{}", o.port));
    assert_eq!(r.status, 403);
    assert_eq!(
        socks_get(&h, SocksTarget::Name("other.test"), o.port).err(),
        Some(2)
    );
    // An unlisted name is never resolved.
    assert_eq!(h.lookups.load(Ordering::Relaxed), 0);

    let recs = h.wait_records(5);
    assert_eq!(recs.len(), 5);
    assert!(recs
        .iter()
        .all(|r| r.decision == Decision::Deny && r.reason.is_some()));
    let socks = recs.iter().find(|r| r.proto == Proto::Socks5).unwrap();
    assert!(socks.reason.as_ref().unwrap().contains("other.test"));
    let s = audit::summarize(&recs);
    assert_eq!((s.allowed, s.denied), (0, 5));
}

#[test]
fn allowed_name_resolving_to_a_private_address_is_refused_unless_listed() {
    let o = origin("127.0.0.1:0", b"inside".to_vec());
    let rule = format!("origin.test:{}", o.port);
    let names = [
        ("origin.test", "127.0.0.1"),
        ("meta.test", "169.254.169.254"),
        ("lan.test", "10.1.2.3"),
        ("ula.test", "fd00::1"),
        ("mixed.test", "10.9.9.9"),
        ("mixed.test", "127.0.0.1"),
    ];
    let h = Harness::new(
        &[&rule, "meta.test", "lan.test", "ula.test", "*.test"],
        &names,
        quick(),
    );
    let r = http_get(&h, &format!("http://origin.test:{}/", o.port));
    assert_eq!(r.status, 403);
    assert!(
        r.reason()
            .contains("127.0.0.1 is loopback (127.0.0.0/8), not listed"),
        "{}",
        r.reason()
    );
    let r = http_get(&h, "http://meta.test/latest/meta-data/");
    assert_eq!(r.status, 403);
    assert!(r.reason().contains("link-local"), "{}", r.reason());
    let r = connect_get(&h, "lan.test:443");
    assert!(
        r.status == 403 && r.reason().contains("private"),
        "{}",
        r.reason()
    );
    let r = connect_get(&h, "ula.test:443");
    assert!(
        r.status == 403 && r.reason().contains("unique-local"),
        "{}",
        r.reason()
    );
    assert_eq!(
        socks_get(&h, SocksTarget::Name("meta.test"), 80).err(),
        Some(2)
    );
    // Literal addresses too.
    let r = http_get(&h, "http://169.254.169.254/");
    assert_eq!(r.status, 403);
    drop(h);

    // Listing the address (or range) lets it through; a name with several
    // addresses goes to one that passed the check, never to the others.
    let lo = format!("127.0.0.1:{}", o.port);
    let mixed = format!("mixed.test:{}", o.port);
    let h = Harness::new(&[&rule, &mixed, &lo], &names, quick());
    let r = http_get(&h, &format!("http://origin.test:{}/", o.port));
    assert_eq!(r.status, 200, "{}", r.reason());
    let r = http_get(&h, &format!("http://mixed.test:{}/", o.port));
    assert_eq!(r.status, 200, "{}", r.reason());
    let recs = h.wait_records(2);
    assert!(
        recs.iter()
            .all(|r| r.address.as_deref() == Some(lo.as_str())),
        "{recs:?}"
    );
}

#[test]
fn ipv6_literals() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        if std::env::var("ZOT_TEST_MUST_WORK").as_deref() == Ok("1") {
            panic!("no IPv6 loopback");
        }
        eprintln!("skipped: no IPv6 loopback");
        return;
    }
    let o = origin("[::1]:0", b"six".to_vec());
    let rule = format!("[::1]:{}", o.port);
    let h = Harness::new(&[&rule], &[], quick());
    let r = http_get(&h, &format!("http://[::1]:{}/", o.port));
    assert_eq!(r.status, 200, "{}", r.reason());
    assert_eq!(r.body, b"six");
    let r = connect_get(&h, &format!("[::1]:{}", o.port));
    assert_eq!(r.status, 200, "{}", r.reason());
    let r = socks_get(&h, SocksTarget::Addr("::1".parse().unwrap()), o.port).unwrap();
    assert_eq!(r.body, b"six");
    // IPv4-mapped loopback is loopback, and not the listed [::1].
    let r = connect_get(&h, &format!("[::ffff:127.0.0.1]:{}", o.port));
    assert_eq!(r.status, 403);
    let recs = h.wait_records(4);
    assert_eq!(
        recs[0].address.as_deref(),
        Some(format!("[::1]:{}", o.port).as_str())
    );
    drop(h);
    // Unlisted, [::1] is loopback: refused.
    let h = Harness::new(&["*.test"], &[("v6.test", "::1")], quick());
    let r = connect_get(&h, "v6.test:443");
    assert!(
        r.status == 403 && r.reason().contains("::1 is loopback"),
        "{}",
        r.reason()
    );
}

#[test]
fn slow_and_malformed_clients_do_not_stall_others() {
    let o = origin("127.0.0.1:0", b"ok".to_vec());
    let lo = format!("127.0.0.1:{}", o.port);
    let h = Harness::new(&[&lo], &[], quick());
    let url = format!("http://127.0.0.1:{}/", o.port);
    // Slow loris: heads that never end, a byte at a time.
    let mut slow: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = h.connect();
            s.write_all(b"GET http://127.0.0.1/ HTTP/1.1\r\nX-A: ")
                .unwrap();
            s
        })
        .collect();
    // A SOCKS client that stops after the greeting.
    let mut half_socks = h.connect();
    half_socks.write_all(&[5, 1, 0]).unwrap();
    // Malformed and oversized requests.
    let mut garbage = h.connect();
    garbage
        .write_all(b"\x16\x03\x01\x00\xa5garbage\r\n\r\n")
        .unwrap();
    let mut huge = h.connect();
    let _ = huge.write_all(&vec![b'a'; 70 * 1024]);

    let t = Instant::now();
    for _ in 0..20 {
        // A byte now and then, until shortly before the deadline.
        if t.elapsed() < Duration::from_millis(400) {
            for s in &mut slow {
                let _ = s.write_all(b"a");
            }
        }
        let r = http_get(&h, &url);
        assert_eq!(r.status, 200);
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

    assert_eq!(read_response(&mut garbage).status, 400);
    assert_eq!(read_response(&mut huge).status, 431);
    // The slow ones are cut at the handshake deadline.
    let r = read_response(&mut slow[0]);
    assert_eq!(r.status, 408, "{}", r.reason());
    let mut rest = Vec::new();
    let _ = half_socks.read_to_end(&mut rest);
    assert_eq!(&rest[..2], &[5, 0]);
    assert_eq!(rest.len(), 2, "closed after the greeting's answer");
    let recs = h.wait_records(20 + 20 + 3);
    let reasons: Vec<&str> = recs.iter().filter_map(|r| r.reason.as_deref()).collect();
    assert!(
        reasons.iter().any(|r| r.contains("malformed")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("larger than")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("not complete within")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("SOCKS handshake not complete")),
        "{reasons:?}"
    );
}

#[test]
fn two_hundred_concurrent_tunnels() {
    let port = echo("127.0.0.1:0");
    let lo = format!("127.0.0.1:{port}");
    let h = Harness::new(&[&lo], &[], Limits::default());
    let mut conns = Vec::new();
    for i in 0..200 {
        let (code, s) = if i % 2 == 0 {
            socks(&h, SocksTarget::Addr("127.0.0.1".parse().unwrap()), port)
        } else {
            let mut s = h.connect();
            write!(s, "CONNECT {lo} HTTP/1.1\r\n\r\n").unwrap();
            let mut head = [0u8; 39];
            s.read_exact(&mut head).unwrap();
            assert!(head.starts_with(b"HTTP/1.1 200"));
            (0, s)
        };
        assert_eq!(code, 0);
        conns.push(s);
    }
    assert!(h.proxy().open_connections() >= 200);
    for (i, s) in conns.iter_mut().enumerate() {
        writeln!(s, "ping {i}").unwrap();
    }
    for (i, s) in conns.iter_mut().enumerate() {
        let mut line = String::new();
        BufReader::new(&*s).read_line(&mut line).unwrap();
        assert_eq!(line, format!("ping {i}\n"));
    }
    for s in &conns {
        s.shutdown(Shutdown::Write).unwrap();
    }
    for s in &mut conns {
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    }
    let recs = h.wait_records(200);
    assert_eq!(recs.len(), 200);
    assert!(recs
        .iter()
        .all(|r| r.decision == Decision::Allow && r.bytes_up >= 7 && r.bytes_down >= 7));
}

#[test]
fn stop_cuts_connections_and_leaves_no_listener() {
    let port = echo("127.0.0.1:0");
    let lo = format!("127.0.0.1:{port}");
    let mut h = Harness::new(&[&lo], &[], quick());
    let (code, mut s) = socks(&h, SocksTarget::Addr("127.0.0.1".parse().unwrap()), port);
    assert_eq!(code, 0);
    s.write_all(b"x\n").unwrap();
    let mut b = [0u8; 2];
    s.read_exact(&mut b).unwrap();
    let socket = h.proxy().socket_path().to_path_buf();
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());
    let proxy = h.proxy.take().unwrap();
    let recs = proxy.stop();
    assert!(!socket.exists(), "socket file removed");
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_err());
    // The tunnel was cut, and its record says so.
    let mut rest = Vec::new();
    assert_eq!(s.read_to_end(&mut rest).unwrap_or(0), 0);
    let rec = recs
        .iter()
        .find(|r| r.proto == Proto::Socks5)
        .expect("cut tunnel's record");
    assert_eq!(rec.reason.as_deref(), Some("cut: the proxy stopped"));
    assert_eq!((rec.bytes_up, rec.bytes_down), (2, 2));
    assert_eq!(h.records().len(), 1, "also in the log file");
}

#[test]
fn socket_directory_must_be_private() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = Proxy::start(ProxyConfig::new(
        AllowList::default(),
        dir.path().join("p.sock"),
    ))
    .err()
    .unwrap();
    assert!(e.to_string().contains("0700 expected"), "{e}");
    assert!(!dir.path().join("p.sock").exists());
}

#[test]
fn socks_refuses_other_commands_and_auth_only_clients() {
    let h = Harness::new(&["127.0.0.1"], &[], quick());
    let mut s = h.connect();
    s.write_all(&[5, 1, 2]).unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).unwrap();
    assert_eq!(m, [5, 0xff]);
    let mut s = h.connect();
    s.write_all(&[5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 80])
        .unwrap();
    let mut rep = [0u8; 12];
    s.read_exact(&mut rep).unwrap();
    assert_eq!(&rep[2..4], &[5, 7], "UDP ASSOCIATE: command not supported");
    let recs = h.wait_records(2);
    assert!(recs
        .iter()
        .any(|r| r.reason.as_deref().unwrap_or("").contains("UDP ASSOCIATE")));
}

fn curl() -> Option<std::process::Command> {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        if std::env::var("ZOT_TEST_MUST_WORK").as_deref() == Ok("1") {
            panic!("curl is not installed");
        }
        eprintln!("skipped: curl is not installed");
        return None;
    }
    let mut c = std::process::Command::new("curl");
    c.args(["-sS", "--max-time", "20", "--noproxy", ""]);
    c.env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("all_proxy")
        .env_remove("no_proxy");
    c.env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .env_remove("NO_PROXY");
    Some(c)
}

#[test]
fn curl_through_http_proxy_tunnel_and_socks5h() {
    let o = origin("127.0.0.1:0", b"from curl".to_vec());
    let rule = format!("origin.test:{}", o.port);
    let lo = format!("127.0.0.1:{}", o.port);
    let h = Harness::new(&[&rule, &lo], &[("origin.test", "127.0.0.1")], quick());
    let url = format!("http://origin.test:{}/", o.port);
    let proxy = format!("http://127.0.0.1:{}", h.port);
    let socks = format!("socks5h://127.0.0.1:{}", h.port);
    for extra in [
        vec!["-x", &proxy],
        vec!["-p", "-x", &proxy],
        vec!["-x", &socks],
    ] {
        let Some(mut c) = curl() else { return };
        let out = c.args(&extra).arg(&url).output().unwrap();
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout, b"from curl", "{extra:?}");
    }
    // Refused: curl shows the 403 and its reason header.
    let Some(mut c) = curl() else { return };
    let out = c
        .args(["-i", "-x", &proxy, "http://not-listed.test/"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("HTTP/1.1 403"), "{text}");
    assert!(
        text.contains(
            "X-Zot-Proxy-Reason: not-listed.test:80 is not in the sandbox's allowed hosts"
        ),
        "{text}"
    );
    // IDNA: a Unicode name is matched in its ASCII form.
    let Some(mut c) = curl() else { return };
    let out = c
        .args(["-i", "-x", &proxy, "http://BÜCHER.test/"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("xn--bcher-kva.test:80 is not in"), "{text}");
}

#[test]
fn a_handed_over_descriptor_must_be_a_tcp_connection() {
    let h = Harness::new(&["127.0.0.1"], &[], quick());
    let (r, _w) = nix::unistd::pipe().unwrap();
    // The bridge's hand-off, with a pipe instead of a socket.
    zot_launcher::bridge::hand_off(&r, h.proxy().socket_path()).unwrap();
    let recs = h.wait_records(1);
    assert_eq!(recs.len(), 1);
    assert!(recs[0]
        .reason
        .as_deref()
        .unwrap()
        .contains("not a TCP connection"));
}

#[test]
fn clients_may_speak_to_the_unix_socket_directly() {
    let o = origin("127.0.0.1:0", b"direct".to_vec());
    let lo = format!("127.0.0.1:{}", o.port);
    let h = Harness::new(&[&lo], &[], quick());
    let mut s = std::os::unix::net::UnixStream::connect(h.proxy().socket_path()).unwrap();
    write!(s, "GET http://{lo}/ HTTP/1.1\r\n\r\n").unwrap();
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    assert!(all.starts_with(b"HTTP/1.1 200") && all.ends_with(b"direct"));
}
