//! Credential and resource-ID detection, `${ENV}` bindings, and the safe
//! public URL rule for MCP servers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Prefixes of well-known token formats.
const TOKEN_PREFIXES: [&str; 22] = [
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "xapp-",
    "AKIA",
    "ASIA",
    "AIza",
    "ya29.",
    "hf_",
];

/// True when a string value looks like a literal credential: a known token
/// format, a private key, a JWT, or an `Authorization`-style value with a
/// literal token.
pub fn looks_like_secret(value: &str) -> bool {
    let v = value.trim();
    if v.contains("-----BEGIN") && v.contains("PRIVATE KEY") {
        return true;
    }
    let words: Vec<&str> = v.split_whitespace().collect();
    for w in &words {
        if is_binding_word(w) {
            continue;
        }
        if TOKEN_PREFIXES
            .iter()
            .any(|p| w.starts_with(p) && w.len() >= p.len() + 12 && is_tokenish(&w[p.len()..]))
        {
            return true;
        }
        // JWT: three base64url parts, the first two starting with `eyJ`.
        let parts: Vec<&str> = w.split('.').collect();
        if parts.len() == 3 && parts[0].starts_with("eyJ") && parts[1].starts_with("eyJ") {
            return true;
        }
    }
    if words.len() == 2 {
        let scheme = words[0].to_ascii_lowercase();
        if matches!(scheme.as_str(), "bearer" | "basic" | "token" | "bot")
            && !is_binding_word(words[1])
            && words[1].len() >= 8
        {
            return true;
        }
    }
    false
}

fn is_tokenish(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

fn is_binding_word(w: &str) -> bool {
    w.strip_prefix("${")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|name| {
            let mut b = name.bytes();
            matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
        })
}

/// True when the value is an `${ENV_NAME}` binding, optionally after an
/// authorization scheme word (`Bearer ${TOKEN}`).
pub fn is_env_binding(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    match words.as_slice() {
        [one] => is_binding_word(one),
        [scheme, binding] => {
            matches!(
                scheme.to_ascii_lowercase().as_str(),
                "bearer" | "basic" | "token" | "bot"
            ) && is_binding_word(binding)
        }
        _ => false,
    }
}

/// Words that mark a header, environment or config key as credential-bearing.
const CREDENTIAL_WORDS: [&str; 17] = [
    "authorization",
    "auth",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "pass",
    "key",
    "apikey",
    "cookie",
    "credential",
    "credentials",
    "bearer",
    "signature",
    "jwt",
    "otp",
];

/// True when a header/env/config key name suggests its value is a credential
/// (`Authorization`, `X-Api-Key`, `OPENAI_API_KEY`, `bot_token`, `clientSecret`):
/// its last word is a credential word.
pub fn is_credential_key(key: &str) -> bool {
    key_words(key)
        .last()
        .is_some_and(|w| CREDENTIAL_WORDS.contains(&w.as_str()))
}

/// True when a config key names a destination or resource ID (`id`,
/// `channel_id`, `workspaceId`, `team_ids`).
pub fn is_id_key(key: &str) -> bool {
    key_words(key)
        .last()
        .is_some_and(|w| w == "id" || w == "ids")
}

/// Split `X-Api-Key`, `OPENAI_API_KEY`, `clientSecret` into lowercase words.
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// True when a value looks like a nonportable platform resource ID: a UUID,
/// a ULID, or `prefix_<20+ alphanumerics>`.
pub fn looks_like_resource_id(value: &str) -> bool {
    let v = value.trim();
    let is_uuid = v.len() == 36
        && v.bytes().enumerate().all(|(i, b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        });
    if is_uuid {
        return true;
    }
    let is_ulid = |s: &str| {
        s.len() == 26
            && s.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            && s.bytes().any(|b| b.is_ascii_digit())
    };
    if is_ulid(v) {
        return true;
    }
    if let Some((prefix, rest)) = v.split_once('_') {
        let prefix_ok = !prefix.is_empty()
            && prefix.len() <= 12
            && prefix.bytes().all(|b| b.is_ascii_lowercase());
        let rest_ok = rest.len() >= 20
            && rest.bytes().all(|b| b.is_ascii_alphanumeric())
            && rest.bytes().any(|b| b.is_ascii_digit());
        if prefix_ok && rest_ok {
            return true;
        }
    }
    false
}

/// Check that a URL is a safe public HTTP(S) URL: scheme http or https, a
/// host that is not local/private, no embedded credentials (userinfo or a
/// literal secret in the query).
pub fn check_public_url(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("URL contains whitespace or control characters".into());
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| "URL needs an http:// or https:// scheme".to_string())?;
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(format!("URL scheme `{scheme}` is not http or https"));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    let tail = &rest[end..];
    if authority.contains('@') {
        return Err("URL embeds credentials (user:password@); bind them at the destination".into());
    }
    let host = if let Some(h) = authority.strip_prefix('[') {
        let (h, after) = h
            .split_once(']')
            .ok_or_else(|| "URL has an unterminated IPv6 host".to_string())?;
        check_port(after)?;
        h.to_string()
    } else {
        let (h, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, format!(":{p}")),
            None => (authority, String::new()),
        };
        check_port(&port)?;
        h.to_ascii_lowercase()
    };
    if host.is_empty() {
        return Err("URL has no host".into());
    }
    let host = host.trim_end_matches('.');
    if let Ok(ip) = host.parse::<IpAddr>() {
        if !is_public_ip(ip) {
            return Err(format!("URL host `{host}` is not a public address"));
        }
    } else {
        if !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            return Err(format!("URL host `{host}` is not a valid host name"));
        }
        let local = host == "localhost"
            || [
                ".localhost",
                ".local",
                ".internal",
                ".lan",
                ".home.arpa",
                ".intranet",
                ".corp",
            ]
            .iter()
            .any(|s| host.ends_with(s))
            || !host.contains('.');
        if local {
            return Err(format!("URL host `{host}` is not a public host"));
        }
    }
    if let Some(query) = tail
        .split_once('?')
        .map(|(_, q)| q.split('#').next().unwrap_or(""))
    {
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            if (is_credential_key(k) && !v.is_empty() && !is_env_binding(v)) || looks_like_secret(v)
            {
                return Err(format!("URL query parameter `{k}` carries a literal credential; use a `${{ENV}}` binding"));
            }
        }
    }
    if looks_like_secret(tail) {
        return Err("URL carries a literal credential".into());
    }
    Ok(())
}

fn check_port(p: &str) -> Result<(), String> {
    match p.strip_prefix(':') {
        None if p.is_empty() => Ok(()),
        Some(n)
            if !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && n.parse::<u16>().is_ok_and(|v| v > 0) =>
        {
            Ok(())
        }
        _ => Err("URL has an invalid port".into()),
    }
}

fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let seg0 = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg0 & 0xfe00) == 0xfc00
                || (seg0 & 0xffc0) == 0xfe80
                || v6 == Ipv6Addr::from([0u8; 16]))
        }
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    !(v4.is_private()
        || v4.is_loopback()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || o[0] >= 240)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets() {
        for s in [
            "sk-abcdefghijklmnop1234",
            "ghp_ABCDEFGHIJKLMNOPQRSTUVWX",
            "Bearer abcdefgh12345678",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-1234567890-abcdefghij",
            "eyJhbGciOi.eyJzdWIiOi.sig",
            "-----BEGIN OPENSSH PRIVATE KEY-----",
        ] {
            assert!(looks_like_secret(s), "{s}");
        }
        for s in [
            "${TOKEN}",
            "Bearer ${TOKEN}",
            "generic",
            "Working…",
            "sk-short",
            "https://example.com",
        ] {
            assert!(!looks_like_secret(s), "{s}");
        }
    }

    #[test]
    fn bindings_and_keys() {
        assert!(is_env_binding("${DOCS_AUTHORIZATION}"));
        assert!(is_env_binding("Bearer ${T}"));
        assert!(!is_env_binding("${}"));
        assert!(!is_env_binding("abc ${T}"));
        assert!(!is_env_binding("x${T}"));
        for k in [
            "Authorization",
            "X-Api-Key",
            "OPENAI_API_KEY",
            "bot_token",
            "clientSecret",
            "Cookie",
        ] {
            assert!(is_credential_key(k), "{k}");
        }
        for k in [
            "Accept",
            "tool_visibility",
            "rate_limit_per_minute",
            "PATH",
            "keyboard",
            "auth_mode",
            "session_id",
        ] {
            assert!(!is_credential_key(k), "{k}");
        }
        assert!(is_id_key("channel_id") && is_id_key("workspaceId") && is_id_key("id"));
        assert!(!is_id_key("video") && !is_id_key("identity"));
    }

    #[test]
    fn urls() {
        assert!(check_public_url("https://example.com/mcp").is_ok());
        assert!(check_public_url("https://example.com:8443/mcp?x=${K}").is_ok());
        for bad in [
            "ftp://example.com",
            "https://user:pw@example.com",
            "http://localhost/mcp",
            "http://127.0.0.1/",
            "http://10.1.2.3/",
            "http://[::1]/",
            "http://169.254.169.254/latest",
            "https://printer.local/",
            "https://intranet/",
            "https://example.com/?api_key=abc123",
            "https://example.com:0/",
        ] {
            assert!(check_public_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resource_ids() {
        assert!(looks_like_resource_id(
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
        ));
        assert!(looks_like_resource_id("01ARZ3NDEKTSV4RRFFQ69G5FAV"));
        assert!(looks_like_resource_id("mcp_01hx5k2m3n4p5q6r7s8t9v"));
        assert!(!looks_like_resource_id("incident-desk"));
        assert!(!looks_like_resource_id("session_file_system"));
    }
}
