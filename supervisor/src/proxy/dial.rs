//! From a requested host and port to a connected socket: the name is
//! matched against the allow rules as requested (an unlisted name is never
//! resolved), resolved once by the proxy, every address is checked, and the
//! connection goes to an address that passed the check: the one checked,
//! never a second resolution of the name.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::time::Duration;

use tokio::net::TcpStream;
use zot_policy::net::{AddressVerdict, Host, NameVerdict};

use super::Shared;

/// Name resolution, as the proxy does it (a trait so tests can point a
/// name anywhere).
pub trait Resolve: Send + Sync + 'static {
    /// Every address of `name` (an IDNA-normalised host name).
    fn lookup(&self, name: &str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>>;
}

/// The system resolver (`getaddrinfo` on tokio's blocking pool).
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup(&self, name: &str) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>> {
        let name = name.to_string();
        Box::pin(async move {
            Ok(tokio::net::lookup_host((name.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// Why a request is refused by policy (HTTP 403, SOCKS "not allowed by
/// ruleset").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The host does not parse.
    BadHost(String),
    NotListed {
        host: String,
        port: u16,
    },
    PortNotListed {
        host: String,
        port: u16,
        ports: Vec<u16>,
    },
    /// Every address the host has is refused (or the literal is).
    Addresses {
        host: String,
        refused: Vec<String>,
    },
    /// The audit log cannot be written: nothing is allowed.
    AuditBroken,
    /// More connections than the limit are open.
    Busy,
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denial::BadHost(why) => write!(f, "{why}"),
            Denial::NotListed { host, port } => {
                write!(f, "{host}:{port} is not in the sandbox's allowed hosts")
            }
            Denial::PortNotListed { host, port, ports } => {
                let ports: Vec<String> = ports.iter().map(u16::to_string).collect();
                write!(
                    f,
                    "port {port} is not allowed for {host} (allowed: {})",
                    ports.join(", ")
                )
            }
            Denial::Addresses { host, refused } => write!(
                f,
                "{host} resolves only to refused addresses: {}",
                refused.join("; ")
            ),
            Denial::AuditBroken => {
                f.write_str("the audit log cannot be written, so nothing is allowed")
            }
            Denial::Busy => f.write_str("too many connections through the proxy"),
        }
    }
}

/// An allowed destination that could not be reached (HTTP 502/504, SOCKS
/// host unreachable / connection refused / TTL expired).
#[derive(Debug)]
pub enum Failure {
    Resolve { host: String, source: io::Error },
    NoAddress { host: String },
    Connect { addr: SocketAddr, source: io::Error },
    Timeout { what: String },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Resolve { host, source } => write!(f, "cannot resolve {host}: {source}"),
            Failure::NoAddress { host } => write!(f, "{host} has no address"),
            Failure::Connect { addr, source } => write!(f, "connecting to {addr}: {source}"),
            Failure::Timeout { what } => write!(f, "{what} timed out"),
        }
    }
}

pub enum Dialed {
    Connected {
        stream: TcpStream,
        addr: SocketAddr,
        rule: String,
    },
    Denied {
        denial: Denial,
        rule: Option<String>,
    },
    Failed {
        failure: Failure,
        rule: String,
    },
}

/// Decide and, when allowed, connect.
pub(crate) async fn dial(shared: &Shared, host: &Host, port: u16) -> Dialed {
    if shared.audit.is_broken() {
        return Dialed::Denied {
            denial: Denial::AuditBroken,
            rule: None,
        };
    }
    let shown = host.to_string();
    let rule = match shared.allow.check(host, port) {
        NameVerdict::Allowed(r) => r.to_string(),
        NameVerdict::PortNotListed { ports } => {
            return Dialed::Denied {
                denial: Denial::PortNotListed {
                    host: shown,
                    port,
                    ports,
                },
                rule: None,
            }
        }
        NameVerdict::NotListed => {
            return Dialed::Denied {
                denial: Denial::NotListed { host: shown, port },
                rule: None,
            }
        }
    };
    let addrs = match host {
        Host::Addr(a) => vec![*a],
        Host::Name(n) => {
            let lookup = shared.resolver.lookup(n);
            match tokio::time::timeout(shared.limits.resolve_timeout, lookup).await {
                Err(_) => {
                    return Dialed::Failed {
                        failure: Failure::Timeout {
                            what: format!("resolving {n}"),
                        },
                        rule,
                    }
                }
                Ok(Err(source)) => {
                    return Dialed::Failed {
                        failure: Failure::Resolve {
                            host: shown,
                            source,
                        },
                        rule,
                    }
                }
                Ok(Ok(a)) => a,
            }
        }
    };
    let mut ok: Vec<IpAddr> = Vec::new();
    let mut refused = Vec::new();
    for a in addrs {
        let a = a.to_canonical();
        if ok.contains(&a) {
            continue;
        }
        match shared.allow.check_address(a, port, shared.own.contains(&a)) {
            AddressVerdict::Public | AddressVerdict::Listed(..) => ok.push(a),
            AddressVerdict::Refused(range) => refused.push(format!("{a} is {range}, not listed")),
            AddressVerdict::OwnAddress => {
                refused.push(format!("{a} is an address of this host, not listed"))
            }
        }
    }
    if ok.is_empty() {
        if refused.is_empty() {
            return Dialed::Failed {
                failure: Failure::NoAddress { host: shown },
                rule,
            };
        }
        refused.dedup();
        return Dialed::Denied {
            denial: Denial::Addresses {
                host: shown,
                refused,
            },
            rule: Some(rule),
        };
    }
    let mut last = None;
    for a in ok {
        let addr = SocketAddr::new(a, port);
        match connect(addr, shared.limits.connect_timeout).await {
            Ok(stream) => {
                return Dialed::Connected { stream, addr, rule };
            }
            Err(f) => last = Some(f),
        }
    }
    Dialed::Failed {
        failure: last.expect("at least one address was tried"),
        rule,
    }
}

async fn connect(addr: SocketAddr, limit: Duration) -> Result<TcpStream, Failure> {
    match tokio::time::timeout(limit, TcpStream::connect(addr)).await {
        Err(_) => Err(Failure::Timeout {
            what: format!("connecting to {addr}"),
        }),
        Ok(Err(source)) => Err(Failure::Connect { addr, source }),
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(s)
        }
    }
}
