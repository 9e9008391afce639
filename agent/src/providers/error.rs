//! What can go wrong talking to a provider, with the retry rules.

use std::time::Duration;

use super::stream::StreamError;

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Sending the request until the response headers.
    FirstByte,
    /// Silence inside a streamed response.
    Idle,
}

/// A failed model request. Messages never contain the API key: server
/// texts are excerpts, cleaned with [`ProviderError::redact`], and an
/// authentication failure names only the variable.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("{}", auth_message(*.status, .key_env.as_deref(), .model))]
    Auth {
        status: u16,
        key_env: Option<String>,
        model: String,
    },
    #[error("model `{model}` was not found (HTTP 404: {detail}); check --model and the provider's models")]
    ModelNotFound { model: String, detail: String },
    #[error("{url} answered HTTP 404 ({detail}); check the provider's base URL")]
    NotFound { url: String, detail: String },
    #[error(
        "the conversation is longer than the model's context window (HTTP {status}: {message})"
    )]
    ContextLength { status: u16, message: String },
    #[error("HTTP {status}{}: {message}", kind_suffix(.kind))]
    Http {
        status: u16,
        kind: String,
        message: String,
        retry_after: Option<Duration>,
        /// The server's `x-should-retry` header, when it sent one.
        should_retry: Option<bool>,
    },
    #[error("could not connect to {url}")]
    Connect {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{}", timeout_message(*.phase, *.after))]
    Timeout {
        phase: TimeoutPhase,
        after: Duration,
    },
    #[error("the connection to {url} failed")]
    Transport {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("the connection broke while the response was streaming")]
    Broken {
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} did not answer with an event stream (content type {content_type}); check the provider's base URL")]
    NotAStream { url: String, content_type: String },
    #[error(transparent)]
    Stream(#[from] StreamError),
    #[error("gave up after {attempts} attempts")]
    Exhausted {
        attempts: u32,
        #[source]
        last: Box<ProviderError>,
    },
    #[error("the provider asks to retry after {} s, longer than zot waits", .after.as_secs())]
    RetryTooLate {
        after: Duration,
        #[source]
        last: Box<ProviderError>,
    },
    #[error("{0}")]
    Setup(String),
    #[error("cancelled")]
    Cancelled,
    #[error("interrupted by signal {0}")]
    Interrupted(i32),
}

fn auth_message(status: u16, key_env: Option<&str>, model: &str) -> String {
    match (status, key_env) {
        (403, Some(v)) => format!(
            "the key in {v} is not allowed to use model `{model}` (HTTP 403)"
        ),
        (_, Some(v)) => format!("the key in {v} was rejected (HTTP {status}); check {v}"),
        (_, None) => format!(
            "the server requires a key (HTTP {status}); set `api_key_env` for this provider in the config file"
        ),
    }
}

fn kind_suffix(kind: &str) -> String {
    if kind.is_empty() {
        String::new()
    } else {
        format!(" {kind}")
    }
}

fn timeout_message(phase: TimeoutPhase, after: Duration) -> String {
    let s = secs(after);
    match phase {
        TimeoutPhase::FirstByte => format!("no response within {s} (first-byte timeout)"),
        TimeoutPhase::Idle => format!("the response stalled for {s} (idle timeout)"),
    }
}

/// `2 s`, `0.5 s`, `1.3 s`.
pub fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if (s - s.round()).abs() < 0.05 {
        format!("{} s", s.round() as u64)
    } else {
        format!("{s:.1} s")
    }
}

impl ProviderError {
    /// Whether another attempt may succeed (before anything was shown).
    pub fn retryable(&self) -> bool {
        match self {
            ProviderError::Http {
                should_retry: Some(r),
                ..
            } => *r,
            ProviderError::Http { status, .. } => {
                matches!(status, 408 | 409 | 429) || *status >= 500
            }
            ProviderError::Connect { .. }
            | ProviderError::Timeout { .. }
            | ProviderError::Transport { .. }
            | ProviderError::Broken { .. } => true,
            ProviderError::Stream(StreamError::Incomplete(_)) => true,
            ProviderError::Stream(StreamError::Server { retryable, .. }) => *retryable,
            _ => false,
        }
    }

    /// How long the server asked to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A few words for "retrying in 2 s (...)".
    pub fn reason(&self) -> String {
        match self {
            ProviderError::Http { status, .. } => {
                let what = match status {
                    408 => "request timeout",
                    409 => "conflict",
                    429 => "rate limited",
                    502 => "bad gateway",
                    503 => "service unavailable",
                    504 => "gateway timeout",
                    529 => "overloaded",
                    _ => "server error",
                };
                format!("{status} {what}")
            }
            ProviderError::Connect { .. } => "connection failed".into(),
            ProviderError::Transport { .. } => "connection error".into(),
            ProviderError::Broken { .. } => "connection broke".into(),
            ProviderError::Timeout {
                phase: TimeoutPhase::FirstByte,
                after,
            } => format!("no response within {}", secs(*after)),
            ProviderError::Timeout { after, .. } => format!("stalled for {}", secs(*after)),
            ProviderError::Stream(StreamError::Incomplete(_)) => "stream cut".into(),
            ProviderError::Stream(StreamError::Server { kind, .. }) => kind.clone(),
            other => other.to_string(),
        }
    }

    /// Remove every occurrence of `secret` from the texts this error
    /// carries from the server.
    pub fn redact(self, secret: &str) -> Self {
        if secret.len() < 8 {
            return self;
        }
        let r = |s: String| s.replace(secret, "[redacted]");
        match self {
            ProviderError::ModelNotFound { model, detail } => ProviderError::ModelNotFound {
                model,
                detail: r(detail),
            },
            ProviderError::NotFound { url, detail } => ProviderError::NotFound {
                url,
                detail: r(detail),
            },
            ProviderError::ContextLength { status, message } => ProviderError::ContextLength {
                status,
                message: r(message),
            },
            ProviderError::Http {
                status,
                kind,
                message,
                retry_after,
                should_retry,
            } => ProviderError::Http {
                status,
                kind: r(kind),
                message: r(message),
                retry_after,
                should_retry,
            },
            ProviderError::Stream(StreamError::Server {
                kind,
                message,
                retryable,
            }) => ProviderError::Stream(StreamError::Server {
                kind: r(kind),
                message: r(message),
                retryable,
            }),
            ProviderError::Stream(StreamError::Protocol { format, detail }) => {
                ProviderError::Stream(StreamError::Protocol {
                    format,
                    detail: r(detail),
                })
            }
            ProviderError::Exhausted { attempts, last } => ProviderError::Exhausted {
                attempts,
                last: Box::new(last.redact(secret)),
            },
            other => other,
        }
    }
}
