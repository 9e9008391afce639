//! The filtering proxy on loopback, the way a sandbox uses it: client ->
//! TCP -> bridge (its own process, as in the sandbox) -> unix socket ->
//! proxy (its own process, as the supervisor) -> TCP -> origin.
//!
//! Prints: the throughput of one large download through the proxy against
//! the same download direct, and the floor of any relay (a bare relay
//! thread per direction over the same two connections, by `splice` and by
//! `read`/`write`); the latency a request gains (a new connection
//! per request, p50/p90); the resident memory of the proxy and the bridge
//! with 200 tunnels open.
//!
//! `cargo bench -p zot-supervisor --bench proxy -- [MEGABYTES] [REQUESTS]`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zot_policy::net::AllowList;
use zot_supervisor::proxy::{Proxy, ProxyConfig};

fn serve_proxy(socket: PathBuf, allow: &str) {
    let allow = AllowList::parse(&[allow]).unwrap();
    let proxy = Proxy::start(ProxyConfig::new(allow, socket)).unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    // Until the parent closes our stdin.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(proxy);
}

fn serve_bridge(socket: PathBuf) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    println!("{}", l.local_addr().unwrap().port());
    std::io::stdout().flush().unwrap();
    let stdin = std::io::stdin();
    zot_launcher::bridge::serve(l, &socket, Some(stdin.as_raw_fd())).unwrap();
}

/// An origin answering `GET /big` with `big` bytes and anything else with
/// a short body; `CONNECT`-free (it is the destination).
fn origin(big: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let chunk = vec![b'z'; 1 << 20];
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let chunk = chunk.clone();
            std::thread::spawn(move || {
                let _ = s.set_nodelay(true);
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut first = String::new();
                if r.read_line(&mut first).is_err() {
                    return;
                }
                loop {
                    let mut l = String::new();
                    if r.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                        break;
                    }
                }
                if first.contains(" /big ") {
                    let _ = write!(
                        s,
                        "HTTP/1.1 200 OK\r\nContent-Length: {big}\r\nConnection: close\r\n\r\n"
                    );
                    let mut left = big;
                    while left > 0 {
                        let n = left.min(chunk.len());
                        if s.write_all(&chunk[..n]).is_err() {
                            return;
                        }
                        left -= n;
                    }
                } else if first.starts_with("ECHO") {
                    let _ = s.write_all(b"ok\n");
                    let _ = std::io::copy(&mut r, &mut s);
                } else {
                    let _ = s.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                }
            });
        }
    });
    port
}

/// The floor for any relay: a listener whose connections are copied to
/// the origin and back by one blocking thread each, with `splice` through
/// a pipe or `read`/`write` through a buffer, and nothing else (no parsing,
/// no policy, no event loop). What the proxy costs above this is the
/// proxy's; what this costs above direct is the second TCP connection's.
fn bare_relay(origin_port: u16, by_splice: bool) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(c) = c else { continue };
            let o = TcpStream::connect(("127.0.0.1", origin_port)).unwrap();
            std::thread::spawn(move || {
                let up = (c.try_clone().unwrap(), o.try_clone().unwrap());
                let t = std::thread::spawn(move || bare_copy(up.0, up.1, by_splice));
                bare_copy(o, c, by_splice);
                let _ = t.join();
            });
        }
    });
    port
}

fn bare_copy(mut from: TcpStream, mut to: TcpStream, by_splice: bool) {
    const CHUNK: usize = 1 << 20;
    if !by_splice {
        let mut buf = vec![0u8; CHUNK];
        while let Ok(n @ 1..) = from.read(&mut buf) {
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    } else {
        let (r, w) = nix::unistd::pipe().unwrap();
        // SAFETY: fcntl on the pipe just made; best effort.
        unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, CHUNK as libc::c_int) };
        let splice = |a: i32, b: i32, n: usize| {
            // SAFETY: splice between descriptors this function holds open.
            unsafe {
                libc::splice(
                    a,
                    std::ptr::null_mut(),
                    b,
                    std::ptr::null_mut(),
                    n,
                    libc::SPLICE_F_MOVE,
                )
            }
        };
        loop {
            let mut n = splice(from.as_raw_fd(), w.as_raw_fd(), CHUNK);
            if n <= 0 {
                break;
            }
            while n > 0 {
                let k = splice(r.as_raw_fd(), to.as_raw_fd(), n as usize);
                if k <= 0 {
                    return;
                }
                n -= k;
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

fn get(port: u16, request: &str) -> usize {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) => panic!("{e}"),
        }
    }
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// CPU seconds (user + system) used so far by process `pid`, all threads.
fn cpu_s(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name's closing parenthesis; utime, stime are
    // the 14th and 15th fields of the line.
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // SAFETY: sysconf with a valid name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / hz
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn spawn(args: &[&str]) -> (Child, String) {
    let mut c = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(c.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    (c, line.trim().to_string())
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    match args.first().map(String::as_str) {
        Some("proxy-serve") => return serve_proxy(args[1].clone().into(), &args[2]),
        Some("bridge-serve") => return serve_bridge(args[1].clone().into()),
        _ => {}
    }
    let mb: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let requests: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let big = mb * 1_000_000;
    let port = origin(big);

    let dir = tempfile::tempdir().unwrap();
    let sdir = dir.path().join("s");
    std::fs::create_dir(&sdir).unwrap();
    std::fs::set_permissions(&sdir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let socket = sdir.join("proxy.sock");
    let sock = socket.to_str().unwrap();
    let (mut proxy, _) = spawn(&["proxy-serve", sock, &format!("127.0.0.1:{port}")]);
    let (mut bridge, bport) = spawn(&["bridge-serve", sock]);
    let bport: u16 = bport.parse().unwrap();

    // Throughput: direct and proxied downloads interleaved (the machine's
    // load changes over time; each pair sees about the same), 5 pairs;
    // medians, and the best of each.
    let direct_req = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n".to_string();
    let proxied_req = format!("GET http://127.0.0.1:{port}/big HTTP/1.1\r\nHost: x\r\n\r\n");
    // CPU time per byte too: on a loaded machine the wall time measures the
    // other load as much as the transfer. Each download's CPU is this
    // process's (client and origin) plus the proxy's.
    let me = std::process::id();
    let proxy_pid = proxy.id();
    let cpu = || cpu_s(me) + cpu_s(proxy_pid);
    let rate = |p: u16, req: &str| {
        let (t, c0, pc0) = (Instant::now(), cpu(), cpu_s(proxy_pid));
        let n = get(p, req);
        assert!(n >= big, "short download: {n}");
        let (c, pc) = (cpu() - c0, cpu_s(proxy_pid) - pc0);
        (
            n as f64 / t.elapsed().as_secs_f64() / 1e6,
            c * 1e9 / n as f64,
            pc * 1e9 / n as f64,
        )
    };
    let (mut dr, mut pr, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut dcpu, mut pcpu, mut proxy_cpu) = (Vec::new(), Vec::new(), Vec::new());
    // The floor, interleaved in the same rounds: bare relays by splice and
    // by copy (rate and CPU per byte, each over the direct of its round).
    let bare = [bare_relay(port, true), bare_relay(port, false)];
    let mut floor: [(Vec<f64>, Vec<f64>); 2] = Default::default();
    for _ in 0..5 {
        let (d, dc, _) = rate(port, &direct_req);
        let (p, pc, ppc) = rate(bport, &proxied_req);
        dr.push(d);
        pr.push(p);
        ratios.push(p / d);
        dcpu.push(dc);
        pcpu.push(pc);
        proxy_cpu.push(ppc);
        for (f, bp) in floor.iter_mut().zip(bare) {
            let (b, bc, _) = rate(bp, &direct_req);
            f.0.push(b / d);
            f.1.push(bc / dc);
        }
    }
    let (dc50, pc50, ppc50) = (
        pct(&mut dcpu, 0.5),
        pct(&mut pcpu, 0.5),
        pct(&mut proxy_cpu, 0.5),
    );
    println!(
        "cpu per byte (median): direct {dc50:.2} ns/B, through the proxy {pc50:.2} ns/B ({:.2}x direct, target <= 1.30x) of which the proxy process {ppc50:.2} ns/B; throughput at equal CPU, proxied / direct {:.2}; load average {}",
        pc50 / dc50,
        dc50 / pc50,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim()
    );
    let (dbest, pbest) = (
        dr.iter().cloned().fold(0.0, f64::max),
        pr.iter().cloned().fold(0.0, f64::max),
    );
    println!(
        "throughput ({mb} MB download, 5 interleaved pairs): direct median {:.0} MB/s (best {dbest:.0}), through the proxy median {:.0} MB/s (best {pbest:.0}); ratio median {:.2}, best/best {:.2} (target >= 0.80)",
        pct(&mut dr, 0.5),
        pct(&mut pr, 0.5),
        pct(&mut ratios, 0.5),
        pbest / dbest
    );
    let [(mut sr, mut sc), (mut cr, mut cc)] = floor;
    println!(
        "floor (a bare relay thread per direction, no proxy), over direct: by splice rate {:.2} cpu {:.2}x; by read/write rate {:.2} cpu {:.2}x (medians)",
        pct(&mut sr, 0.5),
        pct(&mut sc, 0.5),
        pct(&mut cr, 0.5),
        pct(&mut cc, 0.5),
    );

    // Latency: a new connection per request, alternating.
    let small_direct = "GET /small HTTP/1.1\r\nHost: x\r\n\r\n".to_string();
    let small_proxied = format!("GET http://127.0.0.1:{port}/small HTTP/1.1\r\nHost: x\r\n\r\n");
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        get(port, &small_direct);
        get(bport, &small_proxied);
    }
    for _ in 0..requests {
        let t = Instant::now();
        get(port, &small_direct);
        d.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        get(bport, &small_proxied);
        p.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (d50, p50) = (pct(&mut d, 0.5), pct(&mut p, 0.5));
    let (d90, p90) = (pct(&mut d, 0.9), pct(&mut p, 0.9));
    println!(
        "latency ({requests} requests, new connection each): direct p50 {d50:.3} ms p90 {d90:.3} ms; through the proxy p50 {p50:.3} ms p90 {p90:.3} ms; added p50 {:.3} ms (target < 1 ms)",
        p50 - d50
    );

    // Memory with 200 tunnels open (each has moved a little data).
    std::thread::sleep(Duration::from_millis(200));
    let (p0, b0) = (rss_kib(proxy.id()), rss_kib(bridge.id()));
    let mut tunnels = Vec::new();
    for _ in 0..200 {
        let mut s = TcpStream::connect(("127.0.0.1", bport)).unwrap();
        write!(s, "CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").unwrap();
        let mut head = [0u8; 39];
        s.read_exact(&mut head).unwrap();
        assert!(head.starts_with(b"HTTP/1.1 200"));
        s.write_all(b"ECHO\r\n\r\n").unwrap();
        let mut ok = [0u8; 3];
        s.read_exact(&mut ok).unwrap();
        s.write_all(&[b'e'; 16 * 1024]).unwrap();
        let mut back = vec![0u8; 16 * 1024];
        s.read_exact(&mut back).unwrap();
        tunnels.push(s);
    }
    std::thread::sleep(Duration::from_millis(200));
    let (p1, b1) = (rss_kib(proxy.id()), rss_kib(bridge.id()));
    println!(
        "memory with 200 tunnels open: proxy RSS {:.1} MiB (idle {:.1} MiB, {:.1} KiB per connection); bridge RSS {:.1} MiB (idle {:.1} MiB)",
        p1 as f64 / 1024.0,
        p0 as f64 / 1024.0,
        (p1.saturating_sub(p0)) as f64 / 200.0,
        b1 as f64 / 1024.0,
        b0 as f64 / 1024.0,
    );
    drop(tunnels);
    drop(proxy.stdin.take());
    drop(bridge.stdin.take());
    let _ = proxy.wait();
    let _ = bridge.wait();
}
