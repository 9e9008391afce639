//! The supervisor's side of seccomp user notification: the sandbox's
//! `connect`, `sendmsg`, `sendmmsg` and addressed `sendto` stop, and this
//! server decides ([`call`] says how, and why it is race-free).
//!
//! The launcher installs the filter with a listener and passes it, with a
//! netlink socket of the sandbox's network namespace, on the status socket
//! before `execve` (`SCM_RIGHTS`, see the tail's `install_notify`). One
//! thread reads the status socket (the status lines are collected for the
//! run's report), takes the listener when it comes and answers
//! notifications. A call that may block (a blocking `connect`, a send that
//! must wait) is handed to a worker thread, so one slow peer never stalls
//! the others; workers are started as needed.
//!
//! The thread ends by itself once the status socket is at EOF and the
//! listener's processes are gone; the run calls [`Server::finish`] when
//! the sandbox ended: the thread stops if it has not, calls still in
//! progress on a worker are shut down.

mod call;
mod own;
mod sys;

pub(crate) use sys::sockopt_int;

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

use call::{Msg, Sent, Sock, State, Target};
use sys::Reply;

/// What the server saw, for the run's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Served {
    /// The launcher's status lines, as written.
    pub status: Vec<u8>,
    /// The listener arrived (the sandbox's calls were checked).
    pub listener: bool,
    /// Calls answered.
    pub calls: u64,
    /// Calls refused: a unix socket the sandbox did not bind.
    pub refused: u64,
    /// Internal failures (the calls concerned failed).
    pub errors: Vec<String>,
}

/// A running server.
pub(crate) struct Server {
    stop: OwnedFd,
    thread: JoinHandle<Served>,
}

impl Server {
    /// Serve the sandbox whose launcher reports on `status` (our end of the
    /// status socket); `shared_net`: it uses the host's network namespace;
    /// `allowed`: host sockets it may reach (the filtering proxy's), opened
    /// now.
    pub(crate) fn start(
        status: OwnedFd,
        shared_net: bool,
        session: Option<i32>,
        allowed: &[&std::path::Path],
    ) -> std::io::Result<Server> {
        let allowed = allowed
            .iter()
            .map(|p| {
                std::fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_PATH)
                    .open(p)
                    .map(OwnedFd::from)
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let (stop_r, stop_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let thread = std::thread::Builder::new()
            .name("zot-notify".into())
            .spawn(move || serve(status, stop_r, shared_net, session, allowed))?;
        Ok(Server {
            stop: stop_w,
            thread,
        })
    }

    /// Stop (the sandbox is gone) and return what was seen.
    pub(crate) fn finish(self) -> Served {
        drop(self.stop);
        self.thread.join().unwrap_or_default()
    }
}

/// A call handed to a worker.
struct Job {
    id: u64,
    /// Shut down when the server stops with the call still running.
    sock: Arc<OwnedFd>,
    run: Box<dyn FnOnce() -> Reply + Send>,
}

/// Worker threads for calls that may block.
struct Pool {
    listener: Arc<OwnedFd>,
    tx: Option<mpsc::Sender<Job>>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    /// Workers waiting for a job, and jobs not taken yet.
    idle: Arc<AtomicUsize>,
    queued: Arc<AtomicUsize>,
    threads: usize,
    running: Arc<Mutex<HashMap<u64, Arc<OwnedFd>>>>,
}

/// Workers at most; beyond, calls wait for one to finish.
const WORKERS_MAX: usize = 256;

impl Pool {
    fn new(listener: Arc<OwnedFd>) -> Pool {
        let (tx, rx) = mpsc::channel();
        Pool {
            listener,
            tx: Some(tx),
            rx: Arc::new(Mutex::new(rx)),
            idle: Arc::new(AtomicUsize::new(0)),
            queued: Arc::new(AtomicUsize::new(0)),
            threads: 0,
            running: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn submit(&mut self, job: Job) {
        let Some(tx) = &self.tx else { return };
        let queued = self.queued.fetch_add(1, Ordering::SeqCst) + 1;
        if queued > self.idle.load(Ordering::SeqCst) && self.threads < WORKERS_MAX {
            let (rx, idle, q, running, listener) = (
                self.rx.clone(),
                self.idle.clone(),
                self.queued.clone(),
                self.running.clone(),
                self.listener.clone(),
            );
            let spawned = std::thread::Builder::new()
                .name("zot-notify-call".into())
                .spawn(move || worker(rx, idle, q, running, listener));
            if spawned.is_ok() {
                self.threads += 1;
            }
        }
        if let Ok(mut r) = self.running.lock() {
            r.insert(job.id, job.sock.clone());
        }
        let _ = tx.send(job);
    }

    /// Stop taking jobs; calls still running are shut down (their caller
    /// is gone with the sandbox).
    fn stop(&mut self) {
        self.tx = None;
        if let Ok(r) = self.running.lock() {
            for s in r.values() {
                // SAFETY: shutdown on our own fd.
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
    }
}

fn worker(
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    idle: Arc<AtomicUsize>,
    queued: Arc<AtomicUsize>,
    running: Arc<Mutex<HashMap<u64, Arc<OwnedFd>>>>,
    listener: Arc<OwnedFd>,
) {
    sys::drop_thread_capabilities();
    loop {
        idle.fetch_add(1, Ordering::SeqCst);
        let job = rx.lock().ok().and_then(|r| r.recv().ok());
        idle.fetch_sub(1, Ordering::SeqCst);
        let Some(job) = job else { return };
        queued.fetch_sub(1, Ordering::SeqCst);
        let run = job.run;
        // Never leave a call without an answer (its caller would wait
        // until killed).
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
            .unwrap_or(Reply::Err(libc::EIO));
        if let Ok(mut r) = running.lock() {
            r.remove(&job.id);
        }
        sys::send(&listener, job.id, reply);
    }
}

/// The listener and what serving it needs.
struct Serving {
    listener: Arc<OwnedFd>,
    state: State,
    pool: Pool,
    calls: u64,
}

fn serve(
    status: OwnedFd,
    stop: OwnedFd,
    shared_net: bool,
    session: Option<i32>,
    allowed: Vec<OwnedFd>,
) -> Served {
    let mut allowed = Some(allowed);
    sys::drop_thread_capabilities();
    let mut out = Served::default();
    let mut status_open = true;
    let mut serving: Option<Serving> = None;
    loop {
        // The status socket at EOF (the listener comes on it, or never
        // will) and no listener, or its filter's processes all gone:
        // nothing is left to serve, and the run's `finish` finds the thread
        // done instead of waking it.
        if !status_open && serving.is_none() {
            break;
        }
        let listener_fd = serving.as_ref().map_or(-1, |s| s.listener.as_raw_fd());
        let mut p = [
            pollfd(if status_open { status.as_raw_fd() } else { -1 }),
            pollfd(listener_fd),
            pollfd(stop.as_raw_fd()),
        ];
        // SAFETY: valid pollfds (negative fds are skipped).
        let r = unsafe { libc::poll(p.as_mut_ptr(), 3, -1) };
        if r < 0 {
            if sys::errno() == libc::EINTR {
                continue;
            }
            break;
        }
        if p[2].revents != 0 {
            break;
        }
        if p[0].revents != 0 {
            match read_status(&status, &mut out.status) {
                Some(Some((listener, diag))) if serving.is_none() => {
                    sys::sync_wake_up(&listener);
                    let listener = Arc::new(listener);
                    out.listener = true;
                    serving = Some(Serving {
                        pool: Pool::new(listener.clone()),
                        listener,
                        state: State::new({
                            let mut own =
                                own::Own::new(diag, shared_net, allowed.take().unwrap_or_default());
                            own.session = session;
                            own
                        }),
                        calls: 0,
                    });
                }
                Some(_) => {}
                None => status_open = false,
            }
        }
        if p[1].revents & libc::POLLIN != 0 {
            if let Some(s) = serving.as_mut() {
                match sys::recv(&s.listener) {
                    Ok(n) => {
                        s.calls += 1;
                        let handled =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.handle(&n)));
                        match handled {
                            Ok(Some(reply)) => sys::send(&s.listener, n.id, reply),
                            Ok(None) => {}
                            Err(_) => {
                                s.state.error("the check of a call failed (a bug)".into());
                                sys::send(&s.listener, n.id, Reply::Err(libc::EIO));
                            }
                        }
                    }
                    Err(libc::ENOENT) => {}
                    Err(e) => {
                        s.state.error(format!(
                            "receiving a notification failed ({})",
                            std::io::Error::from_raw_os_error(e)
                        ));
                    }
                }
            }
        } else if p[1].revents & (libc::POLLHUP | libc::POLLERR) != 0 {
            // Every process of the filter is gone.
            if let Some(mut s) = serving.take() {
                s.pool.stop();
                out.merge(s);
            }
        }
    }
    if let Some(mut s) = serving.take() {
        s.pool.stop();
        out.merge(s);
    }
    if status_open {
        let _ = nix::fcntl::fcntl(
            &status,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        );
        while let Some(_more) = read_status(&status, &mut out.status) {}
    }
    out
}

impl Served {
    fn merge(&mut self, s: Serving) {
        self.calls += s.calls;
        self.refused += s.state.refused;
        self.errors.extend(s.state.errors);
    }
}

fn pollfd(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Read what the status socket has: the bytes are appended to `out`; the
/// two fds of the listener message, when they came. `None`: EOF (or an
/// error; also when nothing is left to read without blocking).
fn read_status(status: &OwnedFd, out: &mut Vec<u8>) -> Option<Option<(OwnedFd, OwnedFd)>> {
    let mut buf = [0u8; 4096];
    // Room for a few fds (only two are expected; more are closed).
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: zeroed, then pointed at our buffers.
    let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
    h.msg_iov = &mut iov;
    h.msg_iovlen = 1;
    h.msg_control = control.as_mut_ptr().cast();
    h.msg_controllen = std::mem::size_of_val(&control) as _;
    let n = loop {
        // SAFETY: receiving into our buffers.
        let n = unsafe { libc::recvmsg(status.as_raw_fd(), &mut h, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && sys::errno() == libc::EINTR {
            continue;
        }
        break n;
    };
    if n <= 0 {
        return None;
    }
    if out.len() < 1 << 20 {
        out.extend_from_slice(&buf[..n as usize]);
    }
    let mut fds: Vec<OwnedFd> = Vec::new();
    // SAFETY: walking the control buffer the kernel filled.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const libc::c_int;
                let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / 4;
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&h, c);
        }
    }
    if fds.len() == 2 {
        let diag = fds.pop().unwrap();
        let listener = fds.pop().unwrap();
        return Some(Some((listener, diag)));
    }
    Some(None)
}

const MSG_BYTES: u64 = 64; // struct mmsghdr: msghdr (56) + msg_len + padding

impl Serving {
    /// Answer now, or hand the call to a worker (`None`). Every error is
    /// an answer: one for a caller already gone is dropped by the kernel.
    fn handle(&mut self, n: &sys::Notif) -> Option<Reply> {
        // Of the caller if the call is still pending after: checked once
        // everything is read (`still_pending`), before the call is made.
        let pidfd = match sys::pidfd_open(n.tid) {
            Ok(p) => p,
            Err(e) => return Some(Reply::Err(e)),
        };
        let t = Target {
            id: n.id,
            tid: n.tid,
            pidfd,
        };
        let r = match n.nr {
            libc::SYS_connect => self.connect(t, &n.args),
            libc::SYS_sendto => self.sendto(t, &n.args),
            libc::SYS_sendmsg => self.sendmsg(t, &n.args),
            libc::SYS_sendmmsg => self.sendmmsg(t, &n.args),
            _ => Err(libc::ENOSYS),
        };
        match r {
            Ok(reply) => reply,
            Err(e) => Some(Reply::Err(e)),
        }
    }

    /// Everything was read: the copies (and the pidfd, the caller's
    /// `/proc` entries) are the caller's if its call is still pending: it
    /// was then blocked in the call all along, so its thread id was never
    /// another's. The kernel never reuses a notification id.
    fn still_pending(&self, t: &Target) -> Result<(), i32> {
        if sys::id_valid(&self.listener, t.id) {
            Ok(())
        } else {
            Err(libc::ESRCH)
        }
    }

    fn connect(&mut self, t: Target, a: &[u64; 6]) -> Result<Option<Reply>, i32> {
        let sock = self.state.socket(&t, a[0])?;
        let len = a[2] as u32 as i32;
        if !(0..=128).contains(&len) {
            return Err(libc::EINVAL);
        }
        let raw = sys::read_mem(t.tid, a[1], len as usize)?;
        let addr = self.state.address(&t, &self.listener, &sock, raw, true)?;
        self.still_pending(&t)?;
        if sock.nonblock {
            return Ok(Some(call::connect(&sock.fd, &addr)));
        }
        let fd = Arc::new(sock.fd);
        let f = fd.clone();
        self.pool.submit(Job {
            id: t.id,
            sock: fd,
            run: Box::new(move || call::connect(&f, &addr)),
        });
        Ok(None)
    }

    fn sendto(&mut self, t: Target, a: &[u64; 6]) -> Result<Option<Reply>, i32> {
        let sock = self.state.socket(&t, a[0])?;
        let flags = a[3] as u32 as i32;
        let len = (a[2] as usize).min(i32::MAX as usize);
        if len > call::DATA_MAX && sock.kind != libc::SOCK_STREAM {
            return Err(libc::EMSGSIZE);
        }
        let data = sys::read_mem(t.tid, a[1], len.min(call::DATA_MAX))?;
        let alen = a[5] as u32 as i32;
        if !(0..=128).contains(&alen) {
            return Err(libc::EINVAL);
        }
        let raw = sys::read_mem(t.tid, a[4], alen as usize)?;
        let addr = self.state.address(&t, &self.listener, &sock, raw, false)?;
        self.still_pending(&t)?;
        let m = Msg {
            data,
            addr,
            control: Vec::new(),
            fds: Vec::new(),
        };
        Ok(self.send_one(t, sock, m, flags))
    }

    fn sendmsg(&mut self, t: Target, a: &[u64; 6]) -> Result<Option<Reply>, i32> {
        let sock = self.state.socket(&t, a[0])?;
        let flags = a[2] as u32 as i32;
        let m = self.state.message(&t, &self.listener, &sock, a[1])?;
        self.still_pending(&t)?;
        Ok(self.send_one(t, sock, m, flags))
    }

    /// Send now when that cannot block, else on a worker.
    fn send_one(&mut self, t: Target, sock: Sock, m: Msg, flags: i32) -> Option<Reply> {
        let blocking = !sock.nonblock && flags & libc::MSG_DONTWAIT == 0;
        match call::send_now(&sock, &m, flags, blocking) {
            Sent::Done(reply) => {
                call::sigpipe(&t, reply, flags);
                Some(reply)
            }
            Sent::Block(sent) => {
                let sock = Arc::new(sock);
                let fd = Arc::new(sock.fd.try_clone().ok()?);
                self.pool.submit(Job {
                    id: t.id,
                    sock: fd,
                    run: Box::new(move || {
                        let reply = call::send_blocking(&sock, &m, sent, flags);
                        call::sigpipe(&t, reply, flags);
                        reply
                    }),
                });
                None
            }
        }
    }

    fn sendmmsg(&mut self, t: Target, a: &[u64; 6]) -> Result<Option<Reply>, i32> {
        let sock = self.state.socket(&t, a[0])?;
        let flags = a[3] as u32 as i32;
        let vlen = (a[2] as u32 as u64).min(1024);
        if vlen == 0 {
            return Ok(Some(Reply::Val(0)));
        }
        // Messages up to the first one that cannot be read or is refused
        // (the kernel would send those before failing at it).
        let mut msgs = Vec::new();
        let mut first_err = 0;
        for i in 0..vlen {
            match self
                .state
                .message(&t, &self.listener, &sock, a[1] + i * MSG_BYTES)
            {
                Ok(m) => msgs.push(m),
                Err(e) => {
                    first_err = e;
                    break;
                }
            }
        }
        if msgs.is_empty() {
            return Err(first_err);
        }
        self.still_pending(&t)?;
        let base = a[1];
        let blocking = !sock.nonblock && flags & libc::MSG_DONTWAIT == 0;
        let run = move |sock: &Sock, t: &Target| -> Reply {
            let mut sent = 0u64;
            for (i, m) in msgs.iter().enumerate() {
                let r = if blocking {
                    call::send_blocking(sock, m, 0, flags)
                } else {
                    match call::send(&sock.fd, m, 0, flags) {
                        Ok(n) => Reply::Val(n as i64),
                        Err(e) => Reply::Err(e),
                    }
                };
                match r {
                    Reply::Val(n) => {
                        let at = base + i as u64 * MSG_BYTES + 56;
                        if sys::write_mem(t.tid, at, &(n as u32).to_ne_bytes()).is_err() {
                            return if sent == 0 {
                                Reply::Err(libc::EFAULT)
                            } else {
                                Reply::Val(sent as i64)
                            };
                        }
                        sent += 1;
                    }
                    Reply::Err(e) if sent == 0 => {
                        call::sigpipe(t, r, flags);
                        return Reply::Err(e);
                    }
                    Reply::Err(_) => break,
                }
            }
            Reply::Val(sent as i64)
        };
        if !blocking {
            return Ok(Some(run(&sock, &t)));
        }
        let fd = Arc::new(sock.fd.try_clone().map_err(|_| libc::EMFILE)?);
        self.pool.submit(Job {
            id: t.id,
            sock: fd,
            run: Box::new(move || run(&sock, &t)),
        });
        Ok(None)
    }
}

/// The status channel of a launch whose supervisor serves notifications:
/// a socket pair (the launcher passes fds on it); ours, theirs.
pub(crate) fn status_socket() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
    let (a, b) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    Ok((a, b))
}
