//! The filtering proxy: the sandbox's only way out when `net.allow` lists
//! hosts. It runs in the supervisor, outside the sandbox, on a
//! current-thread tokio runtime in a thread of its own, and listens on a
//! unix socket that the plan binds into the sandbox (where a bridge on
//! `127.0.0.1:PORT` forwards to it).
//!
//! One connection carries one of
//! - an HTTP/1.1 request in absolute form (`GET http://host/path HTTP/1.1`),
//!   forwarded in origin form with `Connection: close`;
//! - an HTTP `CONNECT host:port` tunnel (HTTPS, or anything else over TCP);
//! - a SOCKS5 `CONNECT` (no authentication; IPv4, IPv6 or a name the proxy
//!   resolves).
//!
//! Every request is decided by [`dial`]: the requested name against the
//! allow rules, then every address it resolves to, then a connection to an
//! address that passed. A refusal is an HTTP 403 with an
//! `X-Zot-Proxy-Reason` header (or a SOCKS "not allowed by ruleset"
//! reply); every decision is an [`audit::AuditRecord`].
//!
//! ```no_run
//! # use zot_supervisor::proxy::*;
//! let allow = zot_policy::net::AllowList::parse(&["example.com"]).unwrap();
//! let proxy = Proxy::start(ProxyConfig::new(allow, "/run/user/1000/zot-x/proxy.sock".into())).unwrap();
//! // ... run the sandbox ...
//! let records = proxy.stop();
//! ```

pub mod audit;
pub mod dial;
mod http;
mod relay;
mod socks;
mod splice;

use std::fs::OpenOptions;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UnixListener, UnixStream};
use zot_launcher::bridge;
use zot_policy::net::AllowList;

pub use audit::{AuditRecord, Decision, Proto};
pub use dial::{Denial, Failure, Resolve, SystemResolver};

use audit::Audit;

/// The header a refusal carries its reason in.
pub const REASON_HEADER: &str = "X-Zot-Proxy-Reason";

/// Per-connection limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// From accepting a connection to a complete request head (HTTP) or
    /// SOCKS request: a client slower than this is dropped (slow loris).
    pub handshake_timeout: Duration,
    pub resolve_timeout: Duration,
    pub connect_timeout: Duration,
    /// Largest HTTP request head accepted (431 beyond).
    pub max_head_bytes: usize,
    /// Connections open at once; more are refused.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            handshake_timeout: Duration::from_secs(10),
            resolve_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(15),
            max_head_bytes: 64 * 1024,
            max_connections: 4096,
        }
    }
}

/// What to start.
pub struct ProxyConfig {
    pub allow: AllowList,
    /// Where to listen. Its directory must exist, belong to this user and
    /// be private (no access for group or others): the socket is the
    /// sandbox's way out and nobody else's.
    pub socket: PathBuf,
    /// The JSONL audit log, appended to (created 0600 if missing).
    pub audit_log: Option<PathBuf>,
    pub limits: Limits,
    /// Name resolution (the system's by default).
    pub resolver: Arc<dyn Resolve>,
}

impl ProxyConfig {
    pub fn new(allow: AllowList, socket: PathBuf) -> ProxyConfig {
        ProxyConfig {
            allow,
            socket,
            audit_log: None,
            limits: Limits::default(),
            resolver: Arc::new(SystemResolver),
        }
    }
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("proxy socket directory {path}: {why}")]
    SocketDir { path: String, why: String },
    #[error("listening on {path}")]
    Listen {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("opening the proxy audit log {path}")]
    AuditLog {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("starting the proxy thread")]
    Thread(#[source] io::Error),
}

pub(crate) struct Shared {
    pub(crate) allow: AllowList,
    pub(crate) resolver: Arc<dyn Resolve>,
    /// This host's interface addresses (refused unless listed).
    pub(crate) own: Vec<IpAddr>,
    pub(crate) limits: Limits,
    pub(crate) audit: Audit,
    open: AtomicUsize,
}

/// A running proxy. Dropping it stops it too (without the records).
pub struct Proxy {
    socket: PathBuf,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn check_dir(dir: &Path) -> Result<(), ProxyError> {
    let bad = |why: String| ProxyError::SocketDir {
        path: dir.display().to_string(),
        why,
    };
    let md = std::fs::symlink_metadata(dir).map_err(|e| bad(e.to_string()))?;
    if !md.is_dir() {
        return Err(bad("not a directory".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if md.uid() != me {
        return Err(bad(format!("owned by uid {}, not {me}", md.uid())));
    }
    if md.permissions().mode() & 0o077 != 0 {
        return Err(bad(format!(
            "mode {:o} lets others in (0700 expected)",
            md.permissions().mode() & 0o7777
        )));
    }
    Ok(())
}

/// The addresses of this host's interfaces.
fn own_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    if let Ok(addrs) = nix::ifaddrs::getifaddrs() {
        for ifa in addrs {
            let Some(a) = ifa.address else { continue };
            let ip = if let Some(v4) = a.as_sockaddr_in() {
                IpAddr::V4(v4.ip())
            } else if let Some(v6) = a.as_sockaddr_in6() {
                IpAddr::V6(v6.ip())
            } else {
                continue;
            };
            let ip = ip.to_canonical();
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
    }
    out
}

impl Proxy {
    /// Bind the socket and start serving. The socket exists when this
    /// returns.
    pub fn start(cfg: ProxyConfig) -> Result<Proxy, ProxyError> {
        let dir = cfg
            .socket
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        check_dir(dir)?;
        let file = match &cfg.audit_log {
            None => None,
            Some(p) => Some(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .open(p)
                    .map_err(|source| ProxyError::AuditLog {
                        path: p.display().to_string(),
                        source,
                    })?,
            ),
        };
        let listen = |source| ProxyError::Listen {
            path: cfg.socket.display().to_string(),
            source,
        };
        let listener = std::os::unix::net::UnixListener::bind(&cfg.socket).map_err(listen)?;
        // The directory is private already; the socket is too.
        std::fs::set_permissions(&cfg.socket, std::fs::Permissions::from_mode(0o600))
            .map_err(listen)?;
        listener.set_nonblocking(true).map_err(listen)?;
        let shared = Arc::new(Shared {
            allow: cfg.allow,
            resolver: cfg.resolver,
            own: own_addresses(),
            limits: cfg.limits,
            audit: Audit::new(file),
            open: AtomicUsize::new(0),
        });
        let (tx, rx) = tokio::sync::oneshot::channel();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(ProxyError::Thread)?;
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("zot-proxy".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match UnixListener::from_std(listener) {
                        Ok(l) => l,
                        Err(_) => return,
                    };
                    tokio::select! {
                        _ = accept_loop(listener, sh) => {}
                        _ = rx => {}
                    }
                });
                // Dropping the runtime drops every connection's task (and
                // with it its sockets).
                drop(rt);
            })
            .map_err(|e| {
                let _ = std::fs::remove_file(&cfg.socket);
                ProxyError::Thread(e)
            })?;
        Ok(Proxy {
            socket: cfg.socket,
            shared,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// The records written since the last call.
    pub fn take_records(&self) -> Vec<AuditRecord> {
        self.shared.audit.take()
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::Relaxed)
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.socket);
    }

    /// Stop: the listener is closed and its socket removed, open
    /// connections are cut. Returns the records not taken yet (including
    /// those of the connections cut).
    pub fn stop(mut self) -> Vec<AuditRecord> {
        self.shutdown();
        self.shared.audit.take()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn accept_loop(listener: UnixListener, shared: Arc<Shared>) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of descriptors and the like: wait, don't spin.
                if e.raw_os_error() == Some(libc::EMFILE) || e.raw_os_error() == Some(libc::ENFILE)
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                continue;
            }
        };
        let sh = shared.clone();
        tokio::spawn(async move {
            let guard = OpenGuard::new(&sh);
            serve(&sh, stream, guard.over_limit).await;
        });
    }
}

struct OpenGuard<'a> {
    shared: &'a Shared,
    over_limit: bool,
}

impl<'a> OpenGuard<'a> {
    fn new(shared: &'a Shared) -> Self {
        let n = shared.open.fetch_add(1, Ordering::Relaxed) + 1;
        OpenGuard {
            shared,
            over_limit: n > shared.limits.max_connections,
        }
    }
}

impl Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.shared.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection asked for, once its handshake was read.
pub(crate) struct Request {
    pub(crate) proto: Proto,
    pub(crate) host: Option<zot_policy::net::Host>,
    pub(crate) port: Option<u16>,
}

impl Request {
    pub(crate) fn unknown() -> Request {
        Request {
            proto: Proto::Unknown,
            host: None,
            port: None,
        }
    }
}

/// One audit record for one decision.
pub(crate) fn record(
    req: &Request,
    decision: Decision,
    address: Option<std::net::SocketAddr>,
    rule: Option<String>,
    reason: Option<String>,
    counters: Option<&relay::Counters>,
    since: Instant,
) -> AuditRecord {
    let (up, down) = counters
        .map(|c| (c.up.load(Ordering::Relaxed), c.down.load(Ordering::Relaxed)))
        .unwrap_or((0, 0));
    AuditRecord {
        time: audit::now(),
        proto: req.proto,
        host: req.host.as_ref().map(|h| match h {
            zot_policy::net::Host::Name(n) => n.clone(),
            zot_policy::net::Host::Addr(a) => a.to_string(),
        }),
        port: req.port,
        address: address.map(|a| a.to_string()),
        decision,
        rule,
        reason,
        bytes_up: up,
        bytes_down: down,
        duration_ms: since.elapsed().as_millis() as u64,
    }
}

/// An allowed connection being relayed: its record is written when it
/// ends, however it ends (also when the proxy stops and cuts it).
pub(crate) struct Tunnel<'a> {
    shared: &'a Shared,
    req: Request,
    addr: std::net::SocketAddr,
    rule: String,
    pub(crate) counters: relay::Counters,
    since: Instant,
    ended: Option<Option<String>>,
}

impl<'a> Tunnel<'a> {
    pub(crate) fn new(
        shared: &'a Shared,
        req: Request,
        addr: std::net::SocketAddr,
        rule: String,
        since: Instant,
    ) -> Self {
        Tunnel {
            shared,
            req,
            addr,
            rule,
            counters: relay::Counters::default(),
            since,
            ended: None,
        }
    }

    pub(crate) fn finish(mut self, result: io::Result<()>) {
        self.ended = Some(result.err().map(|e| format!("connection ended: {e}")));
    }
}

impl Drop for Tunnel<'_> {
    fn drop(&mut self) {
        let reason = match self.ended.take() {
            Some(r) => r,
            None => Some("cut: the proxy stopped".to_string()),
        };
        self.shared.audit.write(record(
            &self.req,
            Decision::Allow,
            Some(self.addr),
            Some(std::mem::take(&mut self.rule)),
            reason,
            Some(&self.counters),
            self.since,
        ));
    }
}

/// A client connection: the unix socket itself, or the sandbox's TCP
/// connection the bridge handed over.
pub(crate) trait Client:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + relay::Socket
{
}
impl Client for UnixStream {}
impl Client for TcpStream {}

/// The first byte of a unix connection, and the descriptors that came
/// with it.
async fn recv_first(stream: &UnixStream) -> io::Result<(usize, u8, Vec<OwnedFd>)> {
    loop {
        stream.readable().await?;
        let got = stream.try_io(tokio::io::Interest::READABLE, || {
            let mut byte = [0u8; 1];
            let mut space = nix::cmsg_space!([RawFd; 4]);
            let mut iov = [io::IoSliceMut::new(&mut byte)];
            let msg = recvmsg::<()>(
                stream.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC | MsgFlags::MSG_DONTWAIT,
            )
            .map_err(io::Error::from)?;
            let n = msg.bytes;
            let mut fds = Vec::new();
            for c in msg.cmsgs().map_err(io::Error::from)? {
                if let ControlMessageOwned::ScmRights(v) = c {
                    // SAFETY: descriptors the kernel just installed for us.
                    fds.extend(v.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
                }
            }
            Ok((n, byte[0], fds))
        });
        match got {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            r => return r,
        }
    }
}

fn sockopt_int(fd: &OwnedFd, opt: libc::c_int) -> Option<libc::c_int> {
    crate::notify::sockopt_int(fd, opt).ok()
}

/// A handed-off descriptor, if it is a TCP stream socket.
fn handed_tcp(fd: OwnedFd) -> Option<TcpStream> {
    let domain = sockopt_int(&fd, libc::SO_DOMAIN)?;
    let ok = (domain == libc::AF_INET || domain == libc::AF_INET6)
        && sockopt_int(&fd, libc::SO_TYPE)? == libc::SOCK_STREAM
        && sockopt_int(&fd, libc::SO_PROTOCOL)? == libc::IPPROTO_TCP;
    if !ok {
        return None;
    }
    let s = std::net::TcpStream::from(fd);
    s.set_nonblocking(true).ok()?;
    let _ = s.set_nodelay(true);
    TcpStream::from_std(s).ok()
}

async fn serve(shared: &Shared, stream: UnixStream, busy: bool) {
    let deadline = tokio::time::Instant::now() + shared.limits.handshake_timeout;
    let (n, first, mut fds) = match tokio::time::timeout_at(deadline, recv_first(&stream)).await {
        Ok(Ok(got)) => got,
        // Nothing sent in time, or the client went away: no request, no
        // decision.
        _ => return,
    };
    if n == 0 {
        return;
    }
    if first == bridge::HANDOFF && fds.len() == 1 {
        // The bridge's: the sandbox's TCP connection itself.
        drop(stream);
        let Some(mut tcp) = handed_tcp(fds.remove(0)) else {
            shared.audit.write(record(
                &Request::unknown(),
                Decision::Deny,
                None,
                None,
                Some("the bridge handed over something that is not a TCP connection".into()),
                None,
                Instant::now(),
            ));
            return;
        };
        let mut b = [0u8; 1];
        if let Ok(Ok(1)) = tokio::time::timeout_at(deadline, tcp.read(&mut b)).await {
            dispatch(shared, tcp, b[0], deadline, busy).await;
        }
        return;
    }
    if !fds.is_empty() {
        // Descriptors sent any other way are closed, unread.
        return;
    }
    dispatch(shared, stream, first, deadline, busy).await
}

async fn dispatch(
    shared: &Shared,
    mut stream: impl Client,
    first: u8,
    deadline: tokio::time::Instant,
    busy: bool,
) {
    match first {
        5 => socks::serve(shared, stream, deadline, busy).await,
        4 => {
            // SOCKS4/4a: "request rejected".
            let _ = tokio::io::AsyncWriteExt::write_all(&mut stream, &[0, 0x5b, 0, 0, 0, 0, 0, 0])
                .await;
            shared.audit.write(record(
                &Request::unknown(),
                Decision::Deny,
                None,
                None,
                Some("SOCKS4 is not supported (use SOCKS5)".into()),
                None,
                Instant::now(),
            ));
        }
        b => http::serve(shared, stream, b, deadline, busy).await,
    }
}

#[cfg(test)]
mod tests;
