//! HTTP/1.1 forward proxying: absolute-URI requests and `CONNECT` tunnels.
//!
//! A forwarded request is rewritten to origin form, its hop-by-hop headers
//! (`Connection` and the ones it names, `Proxy-*`, `Keep-Alive`,
//! `Upgrade`) dropped, `Host` set to the requested authority, and sent with
//! `Connection: close`: one connection, one request, one decision. The body
//! and the response are relayed as they come.

use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant as Deadline;
use zot_policy::net::Host;

use super::dial::{self, Denial, Dialed, Failure};
use std::sync::atomic::Ordering;

use super::relay;
use super::{record, Client, Decision, Proto, Request, Shared, Tunnel, REASON_HEADER};

const MAX_HEADERS: usize = 128;

fn head_end(buf: &[u8], from: usize) -> Option<usize> {
    let start = from.saturating_sub(3);
    buf[start..]
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| start + i + 4)
}

/// A header value or reason made safe for a header line.
fn header_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii() && !c.is_ascii_control() {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// Callers record the decision first: the answer lingers (below), and a
/// run that ends meanwhile stops the proxy, which would cut the record.
async fn respond(stream: &mut impl Client, status: u16, text: &str, reason: &str) {
    let body = format!("zot proxy: {reason}\n");
    let head = format!(
        "HTTP/1.1 {status} {text}\r\n{REASON_HEADER}: {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        header_safe(reason),
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
    // Read (and drop) what the client still sends, for a moment: closing
    // with unread data would reset the connection, and the client could
    // lose the answer.
    let mut sink = [0u8; 4096];
    let mut left = 256 * 1024usize;
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
        while left > 0 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    })
    .await;
}

/// Why a request head is refused before any policy question.
struct BadRequest {
    status: u16,
    text: &'static str,
    reason: String,
}

fn bad(reason: impl Into<String>) -> BadRequest {
    BadRequest {
        status: 400,
        text: "Bad Request",
        reason: reason.into(),
    }
}

struct Parsed {
    connect: bool,
    host: Host,
    port: u16,
    /// The head to send upstream (empty for CONNECT).
    upstream_head: Vec<u8>,
}

fn parse(head: &[u8]) -> Result<Parsed, BadRequest> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(bad("incomplete request head")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(BadRequest {
                status: 431,
                text: "Request Header Fields Too Large",
                reason: format!("more than {MAX_HEADERS} header fields"),
            })
        }
        Err(e) => return Err(bad(format!("malformed request: {e}"))),
    }
    let method = req.method.unwrap_or_default();
    let target = req.path.unwrap_or_default();
    let minor = req.version.unwrap_or(1);
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = Host::parse_authority(target, None)
            .map_err(|e| bad(format!("CONNECT {target}: {e}")))?;
        return Ok(Parsed {
            connect: true,
            host,
            port,
            upstream_head: Vec::new(),
        });
    }
    let rest = match target.get(..7) {
        Some(s) if s.eq_ignore_ascii_case("http://") => &target[7..],
        _ => {
            let why = if target
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"))
            {
                "https:// URLs go through a CONNECT tunnel, not a plain request".to_string()
            } else if target.starts_with('/') {
                format!("{target:?} is not a proxy request (expected an absolute http:// URL or CONNECT)")
            } else {
                format!("unsupported request target {target:?} (expected http://host/path)")
            };
            return Err(bad(why));
        }
    };
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.contains('@') {
        return Err(bad("credentials in the URL's authority are not forwarded"));
    }
    let (host, port) = Host::parse_authority(authority, Some(80))
        .map_err(|e| bad(format!("http://{authority}: {e}")))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    // Hop-by-hop headers, and those `Connection` names.
    let mut drop: Vec<String> = vec![
        "connection".into(),
        "proxy-connection".into(),
        "keep-alive".into(),
        "proxy-authorization".into(),
        "proxy-authenticate".into(),
        "upgrade".into(),
        "host".into(),
    ];
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for t in String::from_utf8_lossy(h.value).split(',') {
                drop.push(t.trim().to_ascii_lowercase());
            }
        }
    }
    let mut out = Vec::with_capacity(head.len() + 64);
    out.extend_from_slice(format!("{method} {path} HTTP/1.{minor}\r\n").as_bytes());
    out.extend_from_slice(format!("Host: {authority}\r\n").as_bytes());
    for h in req.headers.iter() {
        if drop.iter().any(|d| h.name.eq_ignore_ascii_case(d)) {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Parsed {
        connect: false,
        host,
        port,
        upstream_head: out,
    })
}

pub(crate) async fn serve(
    shared: &Shared,
    mut stream: impl Client,
    first: u8,
    deadline: Deadline,
    busy: bool,
) {
    let since = Instant::now();
    let limit = shared.limits.max_head_bytes;
    let mut buf = Vec::with_capacity(4096);
    buf.push(first);
    let end = loop {
        if let Some(end) = head_end(&buf, 0) {
            break end;
        }
        if buf.len() >= limit {
            let reason = format!("request head larger than {limit} bytes");
            deny(
                shared,
                &Request::http_unknown(),
                None,
                reason.clone(),
                since,
            );
            respond(&mut stream, 431, "Request Header Fields Too Large", &reason).await;
            return;
        }
        let old = buf.len();
        buf.resize(old + 4096.min(limit - old).max(1), 0);
        match tokio::time::timeout_at(deadline, stream.read(&mut buf[old..])).await {
            Ok(Ok(0)) | Ok(Err(_)) => return,
            Ok(Ok(n)) => buf.truncate(old + n),
            Err(_) => {
                let reason = format!(
                    "request head not complete within {}s",
                    shared.limits.handshake_timeout.as_secs_f32()
                );
                deny(
                    shared,
                    &Request::http_unknown(),
                    None,
                    reason.clone(),
                    since,
                );
                respond(&mut stream, 408, "Request Timeout", &reason).await;
                return;
            }
        }
    };
    let p = match parse(&buf[..end]) {
        Ok(p) => p,
        Err(b) => {
            deny(
                shared,
                &Request::http_unknown(),
                None,
                b.reason.clone(),
                since,
            );
            respond(&mut stream, b.status, b.text, &b.reason).await;
            return;
        }
    };
    let req = Request {
        proto: if p.connect {
            Proto::Connect
        } else {
            Proto::Http
        },
        host: Some(p.host.clone()),
        port: Some(p.port),
    };
    if busy {
        let reason = Denial::Busy.to_string();
        deny(shared, &req, None, reason.clone(), since);
        respond(&mut stream, 503, "Service Unavailable", &reason).await;
        return;
    }
    let (upstream, addr, rule) = match dial::dial(shared, &p.host, p.port).await {
        Dialed::Connected { stream, addr, rule } => (stream, addr, rule),
        Dialed::Denied { denial, rule } => {
            let reason = denial.to_string();
            deny(shared, &req, rule, reason.clone(), since);
            respond(&mut stream, 403, "Forbidden", &reason).await;
            return;
        }
        Dialed::Failed { failure, rule } => {
            let reason = failure.to_string();
            let (status, text) = match failure {
                Failure::Timeout { .. } => (504, "Gateway Timeout"),
                _ => (502, "Bad Gateway"),
            };
            shared.audit.write(record(
                &req,
                Decision::Allow,
                None,
                Some(rule),
                Some(reason.clone()),
                None,
                since,
            ));
            respond(&mut stream, status, text, &reason).await;
            return;
        }
    };
    let tunnel = Tunnel::new(shared, req, addr, rule, since);
    let mut upstream = upstream;
    let up = &tunnel.counters.up;
    let result = async {
        if p.connect {
            stream
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
        } else {
            upstream.write_all(&p.upstream_head).await?;
            up.fetch_add(p.upstream_head.len() as u64, Ordering::Relaxed);
        }
        // Whatever the client sent after the head (a body, a TLS hello).
        let extra = &buf[end..];
        if !extra.is_empty() {
            upstream.write_all(extra).await?;
            up.fetch_add(extra.len() as u64, Ordering::Relaxed);
        }
        relay::relay(&stream, &upstream, &tunnel.counters).await
    }
    .await;
    tunnel.finish(result);
}

fn deny(shared: &Shared, req: &Request, rule: Option<String>, reason: String, since: Instant) {
    shared.audit.write(record(
        req,
        Decision::Deny,
        None,
        rule,
        Some(reason),
        None,
        since,
    ));
}

impl Request {
    fn http_unknown() -> Request {
        Request {
            proto: Proto::Http,
            host: None,
            port: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_form_is_rewritten() {
        let p = parse(
            b"GET http://Example.COM:8080/a?b HTTP/1.1\r\nHost: evil.test\r\nProxy-Connection: keep-alive\r\nConnection: x-foo\r\nX-Foo: 1\r\nAccept: */*\r\n\r\n",
        )
        .ok()
        .unwrap();
        assert!(!p.connect);
        assert_eq!(p.host, Host::Name("example.com".into()));
        assert_eq!(p.port, 8080);
        let head = String::from_utf8(p.upstream_head).unwrap();
        assert_eq!(
            head,
            "GET /a?b HTTP/1.1\r\nHost: Example.COM:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn default_port_and_empty_path() {
        let p = parse(b"GET http://example.com HTTP/1.0\r\n\r\n")
            .ok()
            .unwrap();
        assert_eq!(p.port, 80);
        assert!(p.upstream_head.starts_with(b"GET / HTTP/1.0\r\n"));
    }

    #[test]
    fn connect_needs_a_port() {
        let p = parse(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n").ok().unwrap();
        assert!(p.connect);
        assert_eq!(p.host, Host::Addr("::1".parse().unwrap()));
        assert_eq!(p.port, 443);
        let e = parse(b"CONNECT example.com HTTP/1.1\r\n\r\n")
            .err()
            .unwrap();
        assert_eq!(e.status, 400);
        assert!(e.reason.contains("port"), "{}", e.reason);
    }

    #[test]
    fn refused_forms() {
        for (req, needle) in [
            (&b"GET / HTTP/1.1\r\n\r\n"[..], "not a proxy request"),
            (b"GET https://example.com/ HTTP/1.1\r\n\r\n", "CONNECT"),
            (b"GET ftp://example.com/ HTTP/1.1\r\n\r\n", "unsupported"),
            (
                b"GET http://u:p@example.com/ HTTP/1.1\r\n\r\n",
                "credentials",
            ),
            (b"GET http://exa mple.com/ HTTP/1.1\r\n\r\n", "malformed"),
            (b"\x16\x03\x01\x02\x00\r\n\r\n", "malformed"),
        ] {
            let e = parse(req).err().unwrap();
            assert!(
                e.reason.contains(needle),
                "{:?}: {}",
                String::from_utf8_lossy(req),
                e.reason
            );
        }
    }

    #[test]
    fn reasons_are_header_safe() {
        assert_eq!(header_safe("a\r\nb\u{e9}"), "a??b?");
    }
}
