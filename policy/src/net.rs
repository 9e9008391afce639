//! Network allow rules: the one parser of `permissions.net.allow` entries
//! and `zot sandbox --allow-host`, the matcher the filtering proxy asks, and
//! the special-purpose address ranges it refuses. Pure: nothing here
//! resolves a name or opens a socket.
//!
//! A rule is one of
//!
//! | form | matches |
//! |---|---|
//! | `example.com` | that name |
//! | `*.example.com` | names below it (`a.example.com`, `a.b.example.com`), not `example.com` itself |
//! | `192.0.2.7`, `[2001:db8::1]`, `2001:db8::1` | that address |
//! | `10.0.0.0/8`, `fd00::/8` | addresses in that range |
//!
//! optionally followed by `:PORT` (for IPv6 and IPv6 ranges in brackets:
//! `[::1]:8080`, `[fd00::/8]:443`). Without a port a rule allows 80 and 443.
//! Names are compared case-insensitively after IDNA (UTS #46) mapping to
//! their ASCII form, without a trailing dot.
//!
//! A name is matched as it was requested; the addresses it resolves to are
//! then checked one by one ([`AllowList::check_address`]): loopback,
//! link-local (cloud metadata services at 169.254.169.254), private,
//! unique-local and the other special-purpose ranges are refused unless an
//! address or range rule lists the address (and port).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Ports a rule without `:PORT` allows.
pub const DEFAULT_PORTS: [u16; 2] = [80, 443];

/// Why a host, an authority or a rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("empty host")]
    Empty,
    #[error("this is a URL: give the host name (and :port), e.g. `example.com:443`")]
    Url(String),
    #[error("{0:?} is not allowed in a host (give a host name or address, optionally with :port)")]
    BadChar(char),
    #[error("not a valid host name (dot-separated labels of letters, digits, `-` and `_`)")]
    BadName(String),
    #[error("label {0:?} is longer than 63 characters")]
    LongLabel(String),
    #[error("the name is longer than 253 characters")]
    LongName,
    #[error("this looks like an IPv4 address in a non-standard form; write it as a.b.c.d")]
    NumericName(String),
    #[error("not a valid IPv6 address")]
    BadIpv6(String),
    #[error("port {0:?} is not a number from 1 to 65535")]
    BadPort(String),
    #[error("a port is required (host:port)")]
    MissingPort,
    #[error("`*` is only allowed as a leading `*.` (e.g. `*.example.com`)")]
    BadWildcard,
    #[error("not an address range (ADDRESS/PREFIX-LENGTH)")]
    BadRange(String),
    #[error("the range has bits set after the prefix length (did you mean {network}?)")]
    HostBits { given: String, network: String },
    #[error("a wildcard or range is not a host to connect to")]
    NotAHost,
}

/// A host as requested: a normalised name or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// ASCII, lower-case, IDNA-mapped, no trailing dot.
    Name(String),
    /// IPv4-mapped IPv6 addresses are stored as IPv4.
    Addr(IpAddr),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Addr(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Addr(a) => write!(f, "{a}"),
        }
    }
}

impl Host {
    /// Parse a host without a port: a name, an IPv4 address, an IPv6
    /// address with or without brackets.
    pub fn parse(s: &str) -> Result<Host, HostError> {
        if s.is_empty() {
            return Err(HostError::Empty);
        }
        if let Some(inner) = s.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| HostError::BadIpv6(s.to_string()))?;
            return parse_v6(inner).map(|a| Host::Addr(canonical(IpAddr::V6(a))));
        }
        if s.contains(':') {
            return parse_v6(s).map(|a| Host::Addr(canonical(IpAddr::V6(a))));
        }
        if let Ok(a) = s.parse::<Ipv4Addr>() {
            return Ok(Host::Addr(IpAddr::V4(a)));
        }
        normalize_name(s).map(Host::Name)
    }

    /// Parse `host:port` (`[v6]:port`); the port is required when
    /// `default_port` is `None`.
    pub fn parse_authority(s: &str, default_port: Option<u16>) -> Result<(Host, u16), HostError> {
        let (host, port) = split_port(s)?;
        let port = match (port, default_port) {
            (Some(p), _) => parse_port(p)?,
            (None, Some(d)) => d,
            (None, None) => return Err(HostError::MissingPort),
        };
        Ok((Host::parse(host)?, port))
    }
}

fn parse_v6(s: &str) -> Result<Ipv6Addr, HostError> {
    // Zone ids (`fe80::1%eth0`) name an interface of this host: refused.
    s.parse::<Ipv6Addr>()
        .map_err(|_| HostError::BadIpv6(s.to_string()))
}

/// IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is that IPv4 address.
pub fn canonical(a: IpAddr) -> IpAddr {
    a.to_canonical()
}

fn parse_port(p: &str) -> Result<u16, HostError> {
    match p.parse::<u16>() {
        Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(HostError::BadPort(p.to_string())),
    }
}

/// Split `host[:port]`, `[v6][:port]`; a bare IPv6 address (two or more
/// colons, no brackets) has no port.
fn split_port(s: &str) -> Result<(&str, Option<&str>), HostError> {
    if s.starts_with('[') {
        let end = s.find(']').ok_or_else(|| HostError::BadIpv6(s.to_string()))?;
        let (host, rest) = s.split_at(end + 1);
        return match rest {
            "" => Ok((host, None)),
            r => match r.strip_prefix(':') {
                Some(p) => Ok((host, Some(p))),
                None => Err(HostError::BadIpv6(s.to_string())),
            },
        };
    }
    match s.matches(':').count() {
        0 => Ok((s, None)),
        1 => {
            let (h, p) = s.split_once(':').expect("one colon");
            Ok((h, Some(p)))
        }
        _ => Ok((s, None)),
    }
}

/// IDNA-map a host name to its ASCII form and check its syntax.
pub fn normalize_name(s: &str) -> Result<String, HostError> {
    if let Some(c) = s.chars().find(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(c, '/' | '\\' | '@' | '?' | '#' | '%' | '[' | ']' | ':' | '*')
    }) {
        return Err(HostError::BadChar(c));
    }
    let s = s.strip_suffix('.').unwrap_or(s);
    let ascii = idna::uts46::Uts46::new()
        .to_ascii(
            s.as_bytes(),
            idna::uts46::AsciiDenyList::URL,
            idna::uts46::Hyphens::Allow,
            idna::uts46::DnsLength::Ignore,
        )
        .map_err(|_| HostError::BadName(s.to_string()))?;
    let ascii = ascii.strip_suffix('.').unwrap_or(&ascii).to_string();
    if ascii.is_empty() {
        return Err(HostError::Empty);
    }
    if ascii.len() > 253 {
        return Err(HostError::LongName);
    }
    for label in ascii.split('.') {
        if label.is_empty()
            || !label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(HostError::BadName(s.to_string()));
        }
        if label.len() > 63 {
            return Err(HostError::LongLabel(label.to_string()));
        }
    }
    // A last label that is a number makes the whole name an IPv4 address
    // to URL parsers and inet_aton (`2130706433`, `0x7f.1`, `127.1`).
    let last = ascii.rsplit('.').next().unwrap_or("");
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || (last.starts_with("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return Err(HostError::NumericName(s.to_string()));
    }
    Ok(ascii)
}

/// What a rule matches, before the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One name (normalised).
    Name(String),
    /// Names strictly below this one (`*.example.com`: the suffix
    /// `example.com`).
    Subdomains(String),
    Addr(IpAddr),
    Range(IpNet),
}

/// One allow rule (see the module documentation for the forms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    pub pattern: HostPattern,
    /// `None`: [`DEFAULT_PORTS`].
    pub port: Option<u16>,
}

impl HostRule {
    /// The ports this rule allows.
    pub fn ports(&self) -> &[u16] {
        match &self.port {
            Some(p) => std::slice::from_ref(p),
            None => &DEFAULT_PORTS,
        }
    }

    fn allows_port(&self, port: u16) -> bool {
        self.ports().contains(&port)
    }

    /// Does the pattern (ignoring the port) match this requested host?
    pub fn matches_host(&self, host: &Host) -> bool {
        match (&self.pattern, host) {
            (HostPattern::Name(n), Host::Name(h)) => n == h,
            (HostPattern::Subdomains(suffix), Host::Name(h)) => h
                .strip_suffix(suffix.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (HostPattern::Addr(a), Host::Addr(h)) => a == h,
            (HostPattern::Range(n), Host::Addr(h)) => n.contains(h),
            _ => false,
        }
    }

    /// Does this address rule cover `addr` (a resolved address)?
    fn covers_addr(&self, addr: IpAddr) -> bool {
        match &self.pattern {
            HostPattern::Addr(a) => *a == addr,
            HostPattern::Range(n) => n.contains(&addr),
            _ => false,
        }
    }

    /// Where a connection matching this rule may go (`host:port` form of a
    /// name or address rule; wildcards and ranges have none).
    pub fn is_address_rule(&self) -> bool {
        matches!(self.pattern, HostPattern::Addr(_) | HostPattern::Range(_))
    }
}

impl FromStr for HostRule {
    type Err = HostError;

    fn from_str(s: &str) -> Result<Self, HostError> {
        if s.is_empty() {
            return Err(HostError::Empty);
        }
        if s.contains("://") {
            return Err(HostError::Url(s.to_string()));
        }
        if let Some(c) = s
            .chars()
            .find(|c| c.is_whitespace() || c.is_control() || matches!(c, '\\' | '@' | '?' | '#'))
        {
            return Err(HostError::BadChar(c));
        }
        // `[fd00::/8]:443` and `[::1]:80`: brackets hold an IPv6 address or range.
        let (host, port) = if s.starts_with('[') {
            split_port(s)?
        } else if s.contains('/') {
            // `10.0.0.0/8`, `10.0.0.0/8:443`, `fd00::/8` (no port without brackets)
            let (net, after) = s.split_once('/').expect("has a slash");
            match after.split_once(':') {
                Some((len, port)) if !net.contains(':') => {
                    (&s[..net.len() + 1 + len.len()], Some(port))
                }
                _ => (s, None),
            }
        } else {
            split_port(s)?
        };
        let port = port.map(parse_port).transpose()?;
        let inner = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let pattern = if inner.contains('/') {
            HostPattern::Range(parse_range(inner)?)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            HostPattern::Subdomains(normalize_name(suffix).map_err(|e| match e {
                HostError::BadChar('*') => HostError::BadWildcard,
                e => e,
            })?)
        } else if host.contains('*') {
            return Err(HostError::BadWildcard);
        } else {
            match Host::parse(host)? {
                Host::Name(n) => HostPattern::Name(n),
                Host::Addr(a) => HostPattern::Addr(a),
            }
        };
        Ok(HostRule { pattern, port })
    }
}

fn parse_range(s: &str) -> Result<IpNet, HostError> {
    let net: IpNet = s.parse().map_err(|_| HostError::BadRange(s.to_string()))?;
    let net = match net {
        IpNet::V6(n) if n.addr().to_ipv4_mapped().is_some() && n.prefix_len() >= 96 => {
            IpNet::V4(Ipv4Net::new(n.addr().to_ipv4_mapped().unwrap(), n.prefix_len() - 96).unwrap())
        }
        n => n,
    };
    if net.trunc() != net {
        return Err(HostError::HostBits {
            given: s.to_string(),
            network: net.trunc().to_string(),
        });
    }
    Ok(net)
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = matches!(
            self.pattern,
            HostPattern::Addr(IpAddr::V6(_)) | HostPattern::Range(IpNet::V6(_))
        );
        let body = match &self.pattern {
            HostPattern::Name(n) => n.clone(),
            HostPattern::Subdomains(s) => format!("*.{s}"),
            HostPattern::Addr(a) => a.to_string(),
            HostPattern::Range(n) => n.to_string(),
        };
        match (self.port, v6) {
            (None, _) => f.write_str(&body),
            (Some(p), true) => write!(f, "[{body}]:{p}"),
            (Some(p), false) => write!(f, "{body}:{p}"),
        }
    }
}

impl Serialize for HostRule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An entry that did not parse, with its position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{entry:?}: {source}")]
pub struct RuleError {
    pub index: usize,
    pub entry: String,
    #[source]
    pub source: HostError,
}

/// The rules of one sandbox, in the order given (duplicates removed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AllowList {
    rules: Vec<HostRule>,
}

/// How a requested host and port fare against the name rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameVerdict<'a> {
    Allowed(&'a HostRule),
    /// The host is listed, for other ports.
    PortNotListed { ports: Vec<u16> },
    NotListed,
}

/// A special-purpose range an address lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialRange {
    /// The range, e.g. `169.254.0.0/16`.
    pub net: IpNet,
    /// What it is, e.g. `link-local`.
    pub what: &'static str,
}

impl fmt::Display for SpecialRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.what, self.net)
    }
}

/// How a resolved (or literal) address fares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressVerdict<'a> {
    /// A public address: fine for any matching name.
    Public,
    /// Special-purpose, but this address or range rule lists it.
    Listed(&'a HostRule, SpecialRange),
    /// Special-purpose and not listed.
    Refused(SpecialRange),
    /// One of this host's own addresses, not listed.
    OwnAddress,
}

impl AllowList {
    pub fn new(mut rules: Vec<HostRule>) -> AllowList {
        let mut seen = Vec::new();
        rules.retain(|r| {
            let dup = seen.contains(r);
            if !dup {
                seen.push(r.clone());
            }
            !dup
        });
        AllowList { rules }
    }

    /// Parse every entry; the first that fails is the error.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<AllowList, RuleError> {
        let rules = entries
            .iter()
            .enumerate()
            .map(|(index, e)| {
                e.as_ref().parse().map_err(|source| RuleError {
                    index,
                    entry: e.as_ref().to_string(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowList::new(rules))
    }

    pub fn rules(&self) -> &[HostRule] {
        &self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first rule allowing `host` on `port`.
    pub fn check(&self, host: &Host, port: u16) -> NameVerdict<'_> {
        let mut ports = Vec::new();
        for r in &self.rules {
            if r.matches_host(host) {
                if r.allows_port(port) {
                    return NameVerdict::Allowed(r);
                }
                ports.extend_from_slice(r.ports());
            }
        }
        if ports.is_empty() {
            NameVerdict::NotListed
        } else {
            ports.sort_unstable();
            ports.dedup();
            NameVerdict::PortNotListed { ports }
        }
    }

    /// May a connection to `addr:port` be made? `own` says whether `addr`
    /// is one of this host's own interface addresses (refused like the
    /// special-purpose ranges).
    pub fn check_address(&self, addr: IpAddr, port: u16, own: bool) -> AddressVerdict<'_> {
        let addr = canonical(addr);
        let listed = || {
            self.rules
                .iter()
                .find(|r| r.covers_addr(addr) && r.allows_port(port))
        };
        match special_range(addr) {
            Some(range) => match listed() {
                Some(r) => AddressVerdict::Listed(r, range),
                None => AddressVerdict::Refused(range),
            },
            None if own => match listed() {
                Some(r) => AddressVerdict::Listed(
                    r,
                    SpecialRange {
                        net: IpNet::from(addr),
                        what: "an address of this host",
                    },
                ),
                None => AddressVerdict::OwnAddress,
            },
            None => AddressVerdict::Public,
        }
    }
}

impl fmt::Display for AllowList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8, what: &'static str) -> (IpNet, &'static str) {
    (
        IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)),
        what,
    )
}

const fn v6(segs: [u16; 8], len: u8, what: &'static str) -> (IpNet, &'static str) {
    let [a, b, c, d, e, f, g, h] = segs;
    (
        IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), len)),
        what,
    )
}

/// Addresses that are not reachable public hosts (IANA special-purpose
/// registries), most specific first.
pub const SPECIAL_RANGES: &[(IpNet, &str)] = &[
    v4(0, 0, 0, 0, 8, "\"this network\""),
    v4(10, 0, 0, 0, 8, "private"),
    v4(100, 64, 0, 0, 10, "shared address space (carrier-grade NAT)"),
    v4(127, 0, 0, 0, 8, "loopback"),
    v4(169, 254, 0, 0, 16, "link-local (cloud metadata services)"),
    v4(172, 16, 0, 0, 12, "private"),
    v4(192, 0, 0, 0, 24, "IETF protocol assignments"),
    v4(192, 0, 2, 0, 24, "documentation"),
    v4(192, 88, 99, 0, 24, "6to4 relay anycast"),
    v4(192, 168, 0, 0, 16, "private"),
    v4(198, 18, 0, 0, 15, "benchmarking"),
    v4(198, 51, 100, 0, 24, "documentation"),
    v4(203, 0, 113, 0, 24, "documentation"),
    v4(224, 0, 0, 0, 4, "multicast"),
    v4(240, 0, 0, 0, 4, "reserved"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified"),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"),
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96, "IPv4-compatible (deprecated)"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, "IETF protocol assignments (Teredo, ...)"),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "segment routing (SRv6)"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique-local"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local (deprecated)"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
];

const NAT64: Ipv6Net = Ipv6Net::new_assert(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);

/// The special-purpose range `addr` lies in, if any. IPv4-mapped addresses
/// are judged as IPv4; a NAT64 address (64:ff9b::/96) as the IPv4 address
/// it embeds.
pub fn special_range(addr: IpAddr) -> Option<SpecialRange> {
    let addr = canonical(addr);
    if let IpAddr::V6(a) = addr {
        if NAT64.contains(&a) {
            let o = a.octets();
            let inner = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
            return special_range(IpAddr::V4(inner)).map(|r| SpecialRange {
                net: IpNet::V6(NAT64),
                what: r.what,
            });
        }
    }
    SPECIAL_RANGES
        .iter()
        .find(|(net, _)| net.contains(&addr))
        .map(|&(net, what)| SpecialRange { net, what })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(s: &str) -> HostRule {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn list(v: &[&str]) -> AllowList {
        AllowList::parse(v).unwrap()
    }

    fn host(s: &str) -> Host {
        Host::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn rule_forms_round_trip() {
        for (given, shown, ports) in [
            ("example.com", "example.com", &[80, 443][..]),
            ("Example.COM.", "example.com", &[80, 443]),
            ("example.com:8443", "example.com:8443", &[8443]),
            ("*.example.com", "*.example.com", &[80, 443]),
            ("*.Example.com:22", "*.example.com:22", &[22]),
            ("192.0.2.7", "192.0.2.7", &[80, 443]),
            ("192.0.2.7:5432", "192.0.2.7:5432", &[5432]),
            ("::1", "::1", &[80, 443]),
            ("[::1]", "::1", &[80, 443]),
            ("[::1]:8080", "[::1]:8080", &[8080]),
            ("[::ffff:127.0.0.1]:80", "127.0.0.1:80", &[80]),
            ("10.0.0.0/8", "10.0.0.0/8", &[80, 443]),
            ("10.0.0.0/8:5432", "10.0.0.0/8:5432", &[5432]),
            ("fd00::/8", "fd00::/8", &[80, 443]),
            ("[fd00::/8]:443", "[fd00::/8]:443", &[443]),
            ("bücher.example", "xn--bcher-kva.example", &[80, 443]),
            ("BÜCHER.example", "xn--bcher-kva.example", &[80, 443]),
            ("xn--bcher-kva.example", "xn--bcher-kva.example", &[80, 443]),
            ("ｅｘａｍｐｌｅ。com", "example.com", &[80, 443]),
            ("_srv.example.com", "_srv.example.com", &[80, 443]),
        ] {
            let r = rule(given);
            assert_eq!(r.to_string(), shown, "{given}");
            assert_eq!(r.ports(), ports, "{given}");
            assert_eq!(rule(shown), r, "{shown} re-parses");
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<HostRule>(&json).unwrap(), r);
        }
    }

    #[test]
    fn bad_rules_say_why() {
        for (given, want) in [
            ("", HostError::Empty),
            ("http://example.com", HostError::Url("http://example.com".into())),
            ("example.com/x", HostError::BadRange("example.com/x".into())),
            ("user@example.com", HostError::BadChar('@')),
            ("exa mple.com", HostError::BadChar(' ')),
            ("example.com:0", HostError::BadPort("0".into())),
            ("example.com:65536", HostError::BadPort("65536".into())),
            ("example.com:+80", HostError::BadPort("+80".into())),
            ("example.com:", HostError::BadPort("".into())),
            ("*", HostError::BadWildcard),
            ("*.", HostError::Empty),
            ("a*.example.com", HostError::BadWildcard),
            ("*.*.example.com", HostError::BadWildcard),
            ("x.*.example.com", HostError::BadWildcard),
            ("2130706433", HostError::NumericName("2130706433".into())),
            ("127.1", HostError::NumericName("127.1".into())),
            ("0x7f.0.0.1", HostError::NumericName("0x7f.0.0.1".into())),
            ("example..com", HostError::BadName("example..com".into())),
            ("ex!ample.com", HostError::BadName("ex!ample.com".into())),
            ("[::1", HostError::BadIpv6("[::1".into())),
            ("[::1]x", HostError::BadIpv6("[::1]x".into())),
            ("[example.com]", HostError::BadIpv6("example.com".into())),
            ("fe80::1%eth0", HostError::BadIpv6("fe80::1%eth0".into())),
            (
                "10.1.0.0/8",
                HostError::HostBits {
                    given: "10.1.0.0/8".into(),
                    network: "10.0.0.0/8".into(),
                },
            ),
            ("10.0.0.0/33", HostError::BadRange("10.0.0.0/33".into())),
        ] {
            assert_eq!(given.parse::<HostRule>(), Err(want), "{given}");
        }
        let long = format!("{}.com", "a".repeat(64));
        assert!(matches!(
            long.parse::<HostRule>(),
            Err(HostError::LongLabel(_))
        ));
        let e = AllowList::parse(&["ok.example", "bad host"]).unwrap_err();
        assert_eq!(e.index, 1);
        assert_eq!(e.to_string(), "\"bad host\": ' ' is not allowed in a host (give a host name or address, optionally with :port)");
    }

    #[test]
    fn names_match_case_insensitively_after_idna() {
        let l = list(&["api.example.com", "*.cdn.example.com", "bücher.example:8080"]);
        for (h, port) in [
            ("api.example.com", 443),
            ("API.Example.Com", 80),
            ("api.example.com.", 443),
            ("a.cdn.example.com", 443),
            ("a.b.cdn.example.com", 80),
            ("BÜCHER.example", 8080),
            ("xn--bcher-kva.example", 8080),
        ] {
            assert!(
                matches!(l.check(&host(h), port), NameVerdict::Allowed(_)),
                "{h}:{port}"
            );
        }
        for (h, port) in [
            ("cdn.example.com", 443),
            ("xcdn.example.com", 443),
            ("example.com", 443),
            ("api.example.com.evil.test", 443),
            ("evilapi.example.com", 443),
        ] {
            assert_eq!(l.check(&host(h), port), NameVerdict::NotListed, "{h}");
        }
        assert_eq!(
            l.check(&host("api.example.com"), 8080),
            NameVerdict::PortNotListed { ports: vec![80, 443] }
        );
        assert_eq!(
            l.check(&host("bücher.example"), 443),
            NameVerdict::PortNotListed { ports: vec![8080] }
        );
    }

    #[test]
    fn addresses_match_only_address_rules() {
        let l = list(&["192.0.2.7:80", "[2001:db8::1]:443", "10.0.0.0/8:5432", "example.com"]);
        assert!(matches!(l.check(&host("192.0.2.7"), 80), NameVerdict::Allowed(_)));
        assert!(matches!(l.check(&host("[2001:db8::1]"), 443), NameVerdict::Allowed(_)));
        assert!(matches!(l.check(&host("2001:db8::1"), 443), NameVerdict::Allowed(_)));
        assert!(matches!(l.check(&host("[2001:DB8:0::1]"), 443), NameVerdict::Allowed(_)));
        assert!(matches!(l.check(&host("10.20.30.40"), 5432), NameVerdict::Allowed(_)));
        assert!(matches!(
            l.check(&host("[::ffff:10.1.1.1]"), 5432),
            NameVerdict::Allowed(_)
        ));
        assert_eq!(l.check(&host("192.0.2.8"), 80), NameVerdict::NotListed);
        assert_eq!(
            l.check(&host("192.0.2.7"), 443),
            NameVerdict::PortNotListed { ports: vec![80] }
        );
        // a name rule never matches an address, nor an address rule a name
        assert_eq!(l.check(&host("93.184.215.14"), 443), NameVerdict::NotListed);
        let l = list(&["192.0.2.7"]);
        assert_eq!(l.check(&host("x.example.com"), 443), NameVerdict::NotListed);
    }

    #[test]
    fn special_ranges_are_refused_unless_listed() {
        let none = AllowList::default();
        for (a, what) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("169.254.169.254", "link-local (cloud metadata services)"),
            ("10.1.2.3", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("100.100.100.200", "shared address space (carrier-grade NAT)"),
            ("0.0.0.0", "\"this network\""),
            ("255.255.255.255", "reserved"),
            ("224.0.0.1", "multicast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "link-local (cloud metadata services)"),
            ("::127.0.0.1", "IPv4-compatible (deprecated)"),
            ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata services)"),
            ("64:ff9b::7f00:1", "loopback"),
            ("fd12:3456::1", "unique-local"),
            ("fc00::1", "unique-local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::5", "documentation"),
            ("2001::1", "IETF protocol assignments (Teredo, ...)"),
            ("2002:7f00:1::", "6to4"),
        ] {
            let ip: IpAddr = a.parse().unwrap();
            match none.check_address(ip, 443, false) {
                AddressVerdict::Refused(r) => assert_eq!(r.what, what, "{a}"),
                v => panic!("{a}: {v:?}"),
            }
        }
        for a in ["93.184.215.14", "1.1.1.1", "2606:4700::1111", "64:ff9b::5db8:d70e", "172.32.0.1", "11.0.0.1"] {
            let ip: IpAddr = a.parse().unwrap();
            assert_eq!(none.check_address(ip, 443, false), AddressVerdict::Public, "{a}");
        }
        assert_eq!(
            none.check_address("93.184.215.14".parse().unwrap(), 443, true),
            AddressVerdict::OwnAddress
        );
        let l = list(&["127.0.0.1:8080", "10.0.0.0/8", "[::1]:8080", "myhost.example:8080"]);
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(matches!(l.check_address(lo, 8080, false), AddressVerdict::Listed(..)));
        assert!(matches!(
            l.check_address("::ffff:127.0.0.1".parse().unwrap(), 8080, false),
            AddressVerdict::Listed(..)
        ));
        assert!(matches!(l.check_address(lo, 8081, false), AddressVerdict::Refused(_)));
        assert!(matches!(
            l.check_address("127.0.0.2".parse().unwrap(), 8080, false),
            AddressVerdict::Refused(_)
        ));
        assert!(matches!(
            l.check_address("10.9.9.9".parse().unwrap(), 443, false),
            AddressVerdict::Listed(..)
        ));
        assert!(matches!(
            l.check_address("10.9.9.9".parse().unwrap(), 22, false),
            AddressVerdict::Refused(_)
        ));
        assert!(matches!(
            l.check_address("::1".parse().unwrap(), 8080, false),
            AddressVerdict::Listed(..)
        ));
        assert!(matches!(
            l.check_address("169.254.169.254".parse().unwrap(), 80, false),
            AddressVerdict::Refused(_)
        ));
    }

    #[test]
    fn authorities() {
        assert_eq!(
            Host::parse_authority("Example.com:8080", None).unwrap(),
            (Host::Name("example.com".into()), 8080)
        );
        assert_eq!(
            Host::parse_authority("example.com", Some(80)).unwrap(),
            (Host::Name("example.com".into()), 80)
        );
        assert_eq!(
            Host::parse_authority("[::1]:443", None).unwrap(),
            (Host::Addr("::1".parse().unwrap()), 443)
        );
        assert_eq!(
            Host::parse_authority("[::1]", Some(80)).unwrap(),
            (Host::Addr("::1".parse().unwrap()), 80)
        );
        assert_eq!(
            Host::parse_authority("example.com", None),
            Err(HostError::MissingPort)
        );
        assert_eq!(
            Host::parse_authority("example.com:x", None),
            Err(HostError::BadPort("x".into()))
        );
        assert!(Host::parse_authority("a b:80", None).is_err());
        assert!(Host::parse_authority("*.example.com:80", None).is_err());
        assert_eq!(host("[::1]").to_string(), "[::1]");
    }

    #[test]
    fn duplicates_collapse() {
        let l = list(&["Example.com", "example.com", "example.com:443"]);
        assert_eq!(l.to_string(), "example.com, example.com:443");
    }
}
