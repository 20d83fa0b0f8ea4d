//! Reads the `strace -f -e trace=connect` files `hack/node.sh` writes for containerd and
//! the kubelet (and everything they start: shims, runc, the pods) and sorts every connect
//! into allowed or not: IPv4 in 127.0.0.0/8, IPv6 `::1` or a v4-mapped loopback address,
//! unix sockets, and the two families that reach no peer (netlink: the kernel; AF_UNSPEC:
//! undoing a UDP association). Anything else, an address strace could not decode
//! included, is a [`Connect`] the test reports.
//!
//! It does not run strace, nor judge syscalls other than connect. Entry point: [`read`].

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

/// One connect call as strace printed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Connect {
    /// The traced process (strace's first column).
    pub pid: u32,
    pub target: Target,
    /// The whole line, for the failure message.
    pub line: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Ip(IpAddr, u16),
    Unix(String),
    /// netlink and AF_UNSPEC: no peer on any network.
    NoPeer(String),
    /// A family this module does not know, or an address strace printed as a pointer.
    Undecoded(String),
}

impl Target {
    pub fn allowed(&self) -> bool {
        match self {
            Target::Ip(IpAddr::V4(ip), _) => ip.is_loopback(),
            Target::Ip(IpAddr::V6(ip), _) => ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()),
            Target::Unix(_) | Target::NoPeer(_) => true,
            Target::Undecoded(_) => false,
        }
    }
}

/// Every connect in the trace file `path`.
pub fn read(path: &Path) -> Vec<Connect> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("trace {} unreadable: {e}", path.display()));
    text.lines().filter_map(parse).collect()
}

/// A connect line (`PID connect(FD, {sa_family=...}, LEN) = ...`, possibly `<unfinished ...>`);
/// `None` for other lines, such as `<... connect resumed>`, which repeat no address.
pub fn parse(line: &str) -> Option<Connect> {
    let (pid, call) = line.trim().split_once(char::is_whitespace)?;
    let pid = pid.parse().ok()?;
    let args = call.trim_start().strip_prefix("connect(")?;
    let target = match between(args, "sa_family=", &[',', '}']) {
        None => Target::Undecoded(args.to_string()),
        Some("AF_INET") => ipv4(args).unwrap_or_else(|| Target::Undecoded(args.to_string())),
        Some("AF_INET6") => ipv6(args).unwrap_or_else(|| Target::Undecoded(args.to_string())),
        Some("AF_UNIX") => Target::Unix(between(args, "sun_path=", &[',', '}']).unwrap_or("").trim_matches('"').to_string()),
        Some(family @ ("AF_NETLINK" | "AF_UNSPEC")) => Target::NoPeer(family.to_string()),
        Some(other) => Target::Undecoded(other.to_string()),
    };
    Some(Connect { pid, target, line: line.to_string() })
}

/// `sin_port=htons(443), sin_addr=inet_addr("127.0.0.1")`
fn ipv4(args: &str) -> Option<Target> {
    let ip: Ipv4Addr = between(args, "inet_addr(\"", &['"'])?.parse().ok()?;
    Some(Target::Ip(IpAddr::V4(ip), port(args)?))
}

/// `sin6_port=htons(443), ..., inet_pton(AF_INET6, "::1", &sin6_addr)`
fn ipv6(args: &str) -> Option<Target> {
    let ip: Ipv6Addr = between(args, "inet_pton(AF_INET6, \"", &['"'])?.parse().ok()?;
    Some(Target::Ip(IpAddr::V6(ip), port(args)?))
}

fn port(args: &str) -> Option<u16> {
    between(args, "port=htons(", &[')'])?.parse().ok()
}

/// The text after `start` up to the first of `ends`.
fn between<'a>(text: &'a str, start: &str, ends: &[char]) -> Option<&'a str> {
    let rest = &text[text.find(start)? + start.len()..];
    Some(&rest[..rest.find(ends)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(line: &str) -> Target {
        parse(line).expect("a connect line").target
    }

    #[test]
    fn accepts_loopback_ipv4_anywhere_in_127_slash_8() {
        let t =
            target(r#"345 connect(8, {sa_family=AF_INET, sin_port=htons(443), sin_addr=inet_addr("127.0.100.1")}, 16 <unfinished ...>"#);
        assert_eq!(t, Target::Ip("127.0.100.1".parse().unwrap(), 443));
        assert!(t.allowed());
    }

    #[test]
    fn rejects_the_cloud_metadata_address() {
        let t = target(
            r#"12 connect(3, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("169.254.169.254")}, 16) = -1 EINPROGRESS (Operation now in progress)"#,
        );
        assert_eq!(t, Target::Ip("169.254.169.254".parse().unwrap(), 80));
        assert!(!t.allowed());
    }

    #[test]
    fn rejects_a_udp_connect_to_a_resolver() {
        let t = target(r#"7 connect(9, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.2.3")}, 16) = 0"#);
        assert!(!t.allowed(), "{t:?}");
    }

    #[test]
    fn accepts_ipv6_loopback_and_v4_mapped_loopback_only() {
        let line = |ip: &str| {
            format!(
                r#"9 connect(5, {{sa_family=AF_INET6, sin6_port=htons(5000), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "{ip}", &sin6_addr), sin6_scope_id=0}}, 28) = 0"#
            )
        };
        assert!(target(&line("::1")).allowed());
        assert!(target(&line("::ffff:127.0.0.1")).allowed());
        assert!(!target(&line("::ffff:10.1.2.3")).allowed());
        assert!(!target(&line("2001:db8::1")).allowed());
        assert_eq!(target(&line("::1")), Target::Ip("::1".parse().unwrap(), 5000));
    }

    #[test]
    fn accepts_unix_sockets_netlink_and_unspec() {
        let unix =
            target(r#"20 connect(7, {sa_family=AF_UNIX, sun_path="/var/run/docker.sock"}, 23) = -1 ENOENT (No such file or directory)"#);
        assert_eq!(unix, Target::Unix("/var/run/docker.sock".into()));
        assert!(unix.allowed());
        assert!(target(r#"20 connect(7, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 0"#).allowed());
        assert!(target(r#"20 connect(7, {sa_family=AF_UNSPEC, sa_data="\0\0\0\0\0\0\0\0\0\0\0\0\0\0"}, 16) = 0"#).allowed());
    }

    #[test]
    fn rejects_what_it_cannot_decode() {
        assert!(!target("20 connect(7, 0x7ffd5c2a1b20, 16) = -1 EFAULT (Bad address)").allowed());
        assert!(!target(r#"20 connect(7, {sa_family=AF_PACKET, sll_protocol=htons(ETH_P_ALL)}, 20) = 0"#).allowed());
        assert!(!target(r#"20 connect(7, {sa_family=AF_INET, sin_port=htons(80), sin_addr=???}, 16) = 0"#).allowed());
    }

    #[test]
    fn skips_resumed_halves_and_other_lines() {
        assert_eq!(parse("345 <... connect resumed>) = 0"), None);
        assert_eq!(parse("345 +++ exited with 0 +++"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse(r#"12 connect(3, {sa_family=AF_UNIX, sun_path="/x"}, 5) = 0"#).map(|c| c.pid), Some(12));
    }
}
