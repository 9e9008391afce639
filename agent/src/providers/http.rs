//! The network side of a model request: one HTTP client per run (reqwest on
//! a single-threaded tokio runtime, rustls with the system's roots), the
//! timeouts, the retry loop and cancellation.
//!
//! Why async under a blocking `Model::respond`: dropping the request future
//! closes its connection at once, whatever it is waiting for (connect, the
//! first byte, the next chunk, a backoff sleep), so Ctrl-C and every
//! timeout are a `select!` away, and the provider stops generating for a
//! cancelled turn. The runtime lives on the calling thread; the only other
//! thread is reqwest's resolver worker. Bash commands are still started by
//! exec'ing the single-threaded launcher, so no sandbox work ever happens
//! after a fork of this process.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, CONTENT_TYPE};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::error::{ProviderError, TimeoutPhase};
use super::stream::{Delta, StreamParser};
use super::{ModelEvent, RetryNotice};
use crate::message::AssistantTurn;
use zot_policy::config::HttpSettings;
use zot_process::Cancel;

/// Resolved network settings of one provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
    pub max_attempts: u32,
}

impl Timeouts {
    pub const DEFAULT: Timeouts = Timeouts {
        connect: Duration::from_secs(10),
        first_byte: Duration::from_secs(120),
        idle: Duration::from_secs(120),
        max_attempts: 4,
    };

    pub fn from_settings(s: HttpSettings) -> Timeouts {
        let d = Timeouts::DEFAULT;
        Timeouts {
            connect: s.connect_timeout.unwrap_or(d.connect),
            first_byte: s.first_byte_timeout.unwrap_or(d.first_byte),
            idle: s.idle_timeout.unwrap_or(d.idle),
            max_attempts: s.max_attempts.unwrap_or(d.max_attempts).max(1),
        }
    }
}

/// The first backoff delay, doubled per attempt up to [`MAX_BACKOFF`].
const BASE_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);
/// A `retry-after` longer than this is not waited for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Bytes of an error response body read for its message.
const ERROR_BODY_CAP: usize = 64 << 10;

/// One request to send (the body is sent again on each attempt).
pub struct Call<'a> {
    pub url: &'a str,
    pub headers: &'a HeaderMap,
    pub body: bytes::Bytes,
    pub parser: &'a dyn Fn() -> Box<dyn StreamParser>,
    /// Turns a non-2xx status and its body into an error.
    pub classify: &'a dyn Fn(u16, &[u8]) -> ProviderError,
}

pub struct Http {
    rt: tokio::runtime::Runtime,
    client: reqwest::Client,
    t: Timeouts,
}

fn tls_config(https: bool) -> Result<rustls::ClientConfig, ProviderError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ProviderError::Setup(format!("TLS: {e}")))?;
    let builder = if https {
        // The system's roots (honouring SSL_CERT_FILE / SSL_CERT_DIR); the
        // bundled Mozilla roots only when the system has none.
        match rustls_platform_verifier::Verifier::new(provider) {
            Ok(v) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(v)),
            Err(_) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
                builder.with_root_certificates(roots)
            }
        }
    } else {
        builder.with_root_certificates(rustls::RootCertStore::empty())
    };
    Ok(builder.with_no_client_auth())
}

impl Http {
    /// A client for `base_url` (TLS roots are loaded only for https).
    pub fn new(base_url: &str, t: Timeouts) -> Result<Http, ProviderError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| ProviderError::Setup(format!("starting the HTTP runtime: {e}")))?;
        let tls = tls_config(base_url.starts_with("https://"))?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(t.connect)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(60))
            .user_agent(concat!("zot/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Setup(format!("building the HTTP client: {e}")))?;
        Ok(Http { rt, client, t })
    }

    /// Send `call`, retrying what may succeed on another attempt (while
    /// nothing of the response was shown), until it succeeds, fails for
    /// good, `cancel` fires, or a signal arrives (with `signals`).
    pub fn call(
        &self,
        call: Call,
        cancel: &Cancel,
        signals: bool,
        sink: &mut dyn FnMut(ModelEvent),
    ) -> Result<AssistantTurn, ProviderError> {
        let _route = signals.then(|| zot_process::signals::wake(cancel));
        let interrupted = || match zot_process::signals::received() {
            Some(sig) if signals => ProviderError::Interrupted(sig),
            _ => ProviderError::Cancelled,
        };
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let body = call.body.clone();
        let mut rng = Jitter::new();
        let mut attempt = 1;
        loop {
            let mut shown = false;
            let result = self.rt.block_on(async {
                tokio::select! {
                    biased;
                    _ = wait_readable(cancel.wake_fd()) => Err(interrupted()),
                    r = self.attempt(&call, body.clone(), &mut shown, sink) => r,
                }
            });
            let err = match result {
                Ok(turn) => return Ok(turn),
                Err(e) => e,
            };
            self.settle();
            if matches!(
                err,
                ProviderError::Cancelled | ProviderError::Interrupted(_)
            ) {
                return Err(err);
            }
            if shown || !err.retryable() {
                return Err(err);
            }
            if let Some(after) = err.retry_after().filter(|a| *a > MAX_RETRY_AFTER) {
                return Err(ProviderError::RetryTooLate {
                    after,
                    last: Box::new(err),
                });
            }
            if attempt >= self.t.max_attempts {
                if attempt == 1 {
                    return Err(err);
                }
                return Err(ProviderError::Exhausted {
                    attempts: attempt,
                    last: Box::new(err),
                });
            }
            let delay = err
                .retry_after()
                .unwrap_or_else(|| backoff(attempt, &mut rng));
            attempt += 1;
            sink(ModelEvent::Retry(&RetryNotice {
                attempt,
                max_attempts: self.t.max_attempts,
                delay,
                reason: err.reason(),
            }));
            let slept = self.rt.block_on(async {
                tokio::select! {
                    biased;
                    _ = wait_readable(cancel.wake_fd()) => false,
                    _ = tokio::time::sleep(delay) => true,
                }
            });
            if !slept {
                self.settle();
                return Err(interrupted());
            }
        }
    }

    /// Let the connection tasks run after a request was dropped (cancelled,
    /// timed out, failed), so they close its connection now (the provider
    /// then stops generating) rather than at the next request.
    fn settle(&self) {
        self.rt.block_on(async {
            for _ in 0..8 {
                tokio::task::yield_now().await;
            }
        });
    }

    async fn attempt(
        &self,
        call: &Call<'_>,
        body: bytes::Bytes,
        shown: &mut bool,
        sink: &mut dyn FnMut(ModelEvent),
    ) -> Result<AssistantTurn, ProviderError> {
        let req = self
            .client
            .post(call.url)
            .headers(call.headers.clone())
            .body(body);
        let mut resp = match tokio::time::timeout(self.t.first_byte, req.send()).await {
            Err(_) => {
                return Err(ProviderError::Timeout {
                    phase: TimeoutPhase::FirstByte,
                    after: self.t.first_byte,
                })
            }
            Ok(Err(e)) => return Err(transport(call.url, e, self.t)),
            Ok(Ok(r)) => r,
        };
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = retry_after(resp.headers());
            let should_retry = resp
                .headers()
                .get("x-should-retry")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| match v {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                });
            let mut text = Vec::new();
            while text.len() < ERROR_BODY_CAP {
                match tokio::time::timeout(self.t.idle, resp.chunk()).await {
                    Ok(Ok(Some(c))) => text.extend_from_slice(&c),
                    _ => break,
                }
            }
            text.truncate(ERROR_BODY_CAP);
            return Err(match (call.classify)(status, &text) {
                ProviderError::Http {
                    status,
                    kind,
                    message,
                    ..
                } => ProviderError::Http {
                    status,
                    kind,
                    message,
                    retry_after,
                    should_retry,
                },
                other => other,
            });
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("text/html") {
            return Err(ProviderError::NotAStream {
                url: call.url.to_string(),
                content_type,
            });
        }
        let mut parser = (call.parser)();
        let mut deltas = Vec::new();
        let (mut streamed_text, mut streamed_thinking) = (false, false);
        loop {
            let chunk = match tokio::time::timeout(self.t.idle, resp.chunk()).await {
                Err(_) => {
                    return Err(ProviderError::Timeout {
                        phase: TimeoutPhase::Idle,
                        after: self.t.idle,
                    })
                }
                Ok(Err(e)) => return Err(ProviderError::Broken { source: e }),
                Ok(Ok(None)) => break,
                Ok(Ok(Some(c))) => c,
            };
            parser.feed(&chunk, &mut deltas)?;
            for d in deltas.drain(..) {
                *shown = true;
                match &d {
                    Delta::Text(t) => {
                        streamed_text = true;
                        sink(ModelEvent::Text(t))
                    }
                    Delta::Thinking(t) => {
                        streamed_thinking = true;
                        sink(ModelEvent::Thinking(t))
                    }
                }
            }
            if parser.is_complete() {
                break;
            }
        }
        let turn = parser.finish()?;
        // A server that sent a plain JSON body: show what it said at once.
        if !streamed_thinking {
            for th in turn.thinking.iter().filter(|t| !t.text.is_empty()) {
                sink(ModelEvent::Thinking(&th.text));
            }
        }
        if !streamed_text && !turn.text.is_empty() {
            sink(ModelEvent::Text(&turn.text));
        }
        Ok(turn)
    }
}

fn transport(url: &str, e: reqwest::Error, t: Timeouts) -> ProviderError {
    if e.is_connect() {
        if e.is_timeout() {
            return ProviderError::Timeout {
                phase: TimeoutPhase::FirstByte,
                after: t.connect,
            };
        }
        return ProviderError::Connect {
            url: url.to_string(),
            source: e,
        };
    }
    ProviderError::Transport {
        url: url.to_string(),
        source: e,
    }
}

/// `retry-after-ms`, or `retry-after` in seconds (an HTTP date is not
/// honoured: the computed backoff applies).
fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let get = |k: &str| h.get(k).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let s = get("retry-after")?.parse::<f64>().ok()?;
    (0.0..1e9).contains(&s).then(|| Duration::from_secs_f64(s))
}

/// Exponential backoff with jitter: 0.5 s, 1 s, 2 s, ... capped at 8 s,
/// each scaled by a random factor in [0.75, 1).
fn backoff(attempt: u32, rng: &mut Jitter) -> Duration {
    let exp = BASE_BACKOFF.saturating_mul(1 << (attempt - 1).min(16));
    exp.min(MAX_BACKOFF).mul_f64(0.75 + 0.25 * rng.next())
}

/// A small xorshift generator for backoff jitter (not for secrets).
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        Jitter(t ^ (u64::from(std::process::id()) << 32) | 1)
    }

    /// A number in [0, 1).
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Resolves when `fd` becomes readable (the cancel pipe).
async fn wait_readable(fd: RawFd) {
    // SAFETY: `fd` is the read end of a `Cancel`'s pipe, which the caller
    // borrows for the whole request, so it stays open (and is not reused)
    // while registered; `Fd` never closes it.
    match unsafe { AsyncFd::register_with_interest(Fd(fd), Interest::READABLE) } {
        Ok(a) => {
            let _ = a.readable().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let mut r = Jitter::new();
        for (attempt, max) in [(1, 0.5), (2, 1.0), (3, 2.0), (5, 8.0), (30, 8.0)] {
            let d = backoff(attempt, &mut r).as_secs_f64();
            assert!(d >= max * 0.75 && d < max, "{attempt}: {d}");
        }
        let mut h = HeaderMap::new();
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "1500".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(1500)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
    }
}
