//! SOCKS5 (RFC 1928), `CONNECT` only, no authentication. A name sent with
//! address type 3 is resolved by the proxy (`socks5h://`), after the allow
//! rules said yes to it. The reply never tells the client an address of
//! this host (`BND.ADDR` is 0.0.0.0:0); the reason of a refusal is in the
//! audit log, the client gets the SOCKS reply code.

use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant as Deadline;
use zot_policy::net::Host;

use super::dial::{self, Denial, Dialed, Failure};
use super::relay;
use super::{record, Client, Decision, Proto, Request, Shared, Tunnel};

const SUCCEEDED: u8 = 0;
const GENERAL_FAILURE: u8 = 1;
const NOT_ALLOWED: u8 = 2;
const NETWORK_UNREACHABLE: u8 = 3;
const HOST_UNREACHABLE: u8 = 4;
const CONNECTION_REFUSED: u8 = 5;
const TTL_EXPIRED: u8 = 6;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 8;

async fn reply(stream: &mut impl Client, code: u8) {
    let _ = stream.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await;
}

enum Handshake {
    Request {
        cmd: u8,
        host: Result<Host, String>,
        port: u16,
    },
    /// Answered already (no acceptable method, bad version, address type).
    Refused { code: Option<u8>, reason: String },
}

async fn handshake(stream: &mut impl Client) -> std::io::Result<Handshake> {
    let n = stream.read_u8().await? as usize;
    let mut methods = vec![0u8; n];
    stream.read_exact(&mut methods).await?;
    if !methods.contains(&0) {
        stream.write_all(&[5, 0xff]).await?;
        return Ok(Handshake::Refused {
            code: None,
            reason: "SOCKS5 client offers no method without authentication".into(),
        });
    }
    stream.write_all(&[5, 0]).await?;
    let mut h = [0u8; 4];
    stream.read_exact(&mut h).await?;
    let [ver, cmd, _rsv, atyp] = h;
    if ver != 5 {
        return Ok(Handshake::Refused {
            code: Some(GENERAL_FAILURE),
            reason: format!("SOCKS request with version {ver}"),
        });
    }
    let host = match atyp {
        1 => {
            let mut a = [0u8; 4];
            stream.read_exact(&mut a).await?;
            Ok(Host::Addr(std::net::Ipv4Addr::from(a).into()))
        }
        4 => {
            let mut a = [0u8; 16];
            stream.read_exact(&mut a).await?;
            Ok(Host::Addr(
                std::net::IpAddr::from(std::net::Ipv6Addr::from(a)).to_canonical(),
            ))
        }
        3 => {
            let n = stream.read_u8().await? as usize;
            let mut name = vec![0u8; n];
            stream.read_exact(&mut name).await?;
            match String::from_utf8(name) {
                Ok(s) => Host::parse(&s).map_err(|e| format!("{s:?}: {e}")),
                Err(_) => Err("the requested name is not UTF-8".to_string()),
            }
        }
        t => {
            return Ok(Handshake::Refused {
                code: Some(ADDRESS_TYPE_NOT_SUPPORTED),
                reason: format!("SOCKS address type {t}"),
            })
        }
    };
    let port = stream.read_u16().await?;
    Ok(Handshake::Request { cmd, host, port })
}

pub(crate) async fn serve(
    shared: &Shared,
    mut stream: impl Client,
    deadline: Deadline,
    busy: bool,
) {
    let since = Instant::now();
    let unknown = Request {
        proto: Proto::Socks5,
        host: None,
        port: None,
    };
    let deny = |req: &Request, rule: Option<String>, reason: String| {
        shared.audit.write(record(
            req,
            Decision::Deny,
            None,
            rule,
            Some(reason),
            None,
            since,
        ));
    };
    let (cmd, host, port) = match tokio::time::timeout_at(deadline, handshake(&mut stream)).await {
        Err(_) => {
            deny(
                &unknown,
                None,
                format!(
                    "SOCKS handshake not complete within {}s",
                    shared.limits.handshake_timeout.as_secs_f32()
                ),
            );
            return;
        }
        // The client went away or sent too little.
        Ok(Err(_)) => return,
        Ok(Ok(Handshake::Refused { code, reason })) => {
            if let Some(c) = code {
                reply(&mut stream, c).await;
            }
            deny(&unknown, None, reason);
            return;
        }
        Ok(Ok(Handshake::Request { cmd, host, port })) => (cmd, host, port),
    };
    let host = match host {
        Ok(h) => h,
        Err(why) => {
            reply(&mut stream, NOT_ALLOWED).await;
            deny(&unknown, None, Denial::BadHost(why).to_string());
            return;
        }
    };
    let req = Request {
        proto: Proto::Socks5,
        host: Some(host.clone()),
        port: Some(port),
    };
    if cmd != 1 {
        reply(&mut stream, COMMAND_NOT_SUPPORTED).await;
        let what = match cmd {
            2 => "BIND",
            3 => "UDP ASSOCIATE",
            _ => "unknown",
        };
        deny(
            &req,
            None,
            format!("SOCKS command {cmd} ({what}) is not supported, only CONNECT"),
        );
        return;
    }
    if port == 0 {
        reply(&mut stream, NOT_ALLOWED).await;
        deny(&req, None, "port 0".into());
        return;
    }
    if busy {
        reply(&mut stream, GENERAL_FAILURE).await;
        deny(&req, None, Denial::Busy.to_string());
        return;
    }
    let (upstream, addr, rule) = match dial::dial(shared, &host, port).await {
        Dialed::Connected { stream, addr, rule } => (stream, addr, rule),
        Dialed::Denied { denial, rule } => {
            reply(&mut stream, NOT_ALLOWED).await;
            deny(&req, rule, denial.to_string());
            return;
        }
        Dialed::Failed { failure, rule } => {
            let code = match &failure {
                Failure::Resolve { .. } | Failure::NoAddress { .. } => HOST_UNREACHABLE,
                Failure::Timeout { .. } => TTL_EXPIRED,
                Failure::Connect { source, .. } => match source.raw_os_error() {
                    Some(libc::ECONNREFUSED) => CONNECTION_REFUSED,
                    Some(libc::ENETUNREACH) => NETWORK_UNREACHABLE,
                    Some(libc::EHOSTUNREACH) => HOST_UNREACHABLE,
                    _ => GENERAL_FAILURE,
                },
            };
            reply(&mut stream, code).await;
            shared.audit.write(record(
                &req,
                Decision::Allow,
                None,
                Some(rule),
                Some(failure.to_string()),
                None,
                since,
            ));
            return;
        }
    };
    reply(&mut stream, SUCCEEDED).await;
    let tunnel = Tunnel::new(shared, req, addr, rule, since);
    let result = relay::relay(&stream, &upstream, &tunnel.counters).await;
    tunnel.finish(result);
}
