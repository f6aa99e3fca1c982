//! Which network addresses a paper fetch may connect to.
//!
//! Owns: the rule that a DOI or web-address add never reaches this machine
//! or its local network unless the user allowed it — checked on the
//! addresses each connection actually uses (ureq resolves through
//! [`GuardedResolver`]), so a public page that redirects to
//! `http://127.0.0.1:8000/taxes.pdf`, or a name that resolves to a private
//! address (DNS rebinding), is refused like a literal local address. Without
//! this, an instruction injected into a note could make the agent store a
//! local service's private PDF as public text a cloud model can search.
//! The configured service endpoints (`papers.crossref_url`,
//! `papers.unpaywall_url`, `digest.biorxiv_url`) are trusted by host name,
//! so a self-hosted mirror or a test stand-in on loopback keeps working.
//! Must not: make requests itself, or decide anything about visibility.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

/// Why a connection was not made: the host's address is local.
#[derive(Debug, thiserror::Error)]
#[error("{host} is at {ip}, an address on this machine or its local network")]
pub struct LocalAddress {
    pub host: String,
    pub ip: IpAddr,
}

/// Whether `ip` is a public, globally routed address — not loopback,
/// private (RFC 1918, unique local), link-local, carrier-grade NAT,
/// unspecified, multicast, broadcast or reserved for documentation.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // 100.64.0.0/10, carrier-grade NAT (and Tailscale's addresses).
        || (a == 100 && (64..128).contains(&b))
        // 192.0.0.0/24, IETF protocol assignments.
        || (a == 192 && b == 0 && c == 0)
        // 198.18.0.0/15, benchmarking; 240.0.0.0/4, reserved.
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // fc00::/7 unique local, fe80::/10 link-local, 2001:db8::/32 documentation.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // ::/96 IPv4-compatible (deprecated) and 64:ff9b:1::/48 local NAT64.
        || (ip.segments()[..6].iter().all(|s| *s == 0))
        || (first == 0x0064 && ip.segments()[1] == 0xff9b && ip.segments()[2] == 1))
}

/// ureq's resolver, refusing local addresses for every host but the
/// trusted ones.
#[derive(Debug)]
pub struct GuardedResolver {
    inner: DefaultResolver,
    /// Host names (lower case, no port) that may resolve anywhere.
    trusted: Vec<String>,
    /// `papers.allow_local_urls`: the user lets any address through.
    allow_all: bool,
}

impl GuardedResolver {
    pub fn new(trusted: Vec<String>, allow_all: bool) -> Self {
        GuardedResolver {
            inner: DefaultResolver::default(),
            trusted: trusted.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
            allow_all,
        }
    }
}

impl Resolver for GuardedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_ascii_lowercase();
        if self.allow_all || self.trusted.contains(&host) {
            return Ok(addrs);
        }
        // One local address among several is enough to refuse: a rebinding
        // name answers with both, and the connector may pick either.
        if let Some(a) = addrs.iter().find(|a| !is_public(a.ip())) {
            return Err(ureq::Error::Other(Box::new(LocalAddress { host, ip: a.ip() })));
        }
        Ok(addrs)
    }
}

/// The host name (lower case, no port, no brackets) of an http(s) URL.
pub fn host_name(url: &str) -> Option<String> {
    let hp = super::web::host_of(url)?;
    let name = if let Some(rest) = hp.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default().to_string()
    } else {
        hp.rsplit_once(':').map_or(hp.clone(), |(h, _)| h.to_string())
    };
    (!name.is_empty()).then_some(name)
}

/// Whether an address the user (or the model) gave points at this machine
/// or its network: a literal local address, `localhost`, or a name that
/// resolves to one. A name that does not resolve is not local (the fetch
/// itself will then fail and say so).
pub fn names_local_address(url: &str) -> bool {
    use std::net::ToSocketAddrs;
    let Some(host) = host_name(url) else {
        return false;
    };
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return !is_public(ip);
    }
    match (host.as_str(), 80).to_socket_addrs() {
        Ok(mut addrs) => addrs.any(|a| !is_public(a.ip())),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_and_reserved_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:192.168.0.1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip} counted as public");
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip} counted as local");
        }
    }

    #[test]
    fn host_names_drop_ports_and_brackets() {
        assert_eq!(host_name("http://127.0.0.1:8080/x").as_deref(), Some("127.0.0.1"));
        assert_eq!(host_name("https://[::1]:8443/x").as_deref(), Some("::1"));
        assert_eq!(host_name("https://user@Example.org/x").as_deref(), Some("example.org"));
        assert_eq!(host_name("file:///etc/passwd"), None);
    }

    #[test]
    fn local_urls_are_recognised_without_a_network() {
        for u in [
            "http://127.0.0.1:8000/taxes.pdf",
            "http://localhost/x.pdf",
            "http://printer.localhost/x.pdf",
            "http://[::1]/x.pdf",
            "http://192.168.0.10/scan.pdf",
            "http://169.254.169.254/latest/meta-data",
        ] {
            assert!(names_local_address(u), "{u}");
        }
        assert!(!names_local_address("https://8.8.8.8/paper.pdf"));
        assert!(!names_local_address("not a url"));
    }
}
