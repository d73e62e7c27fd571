//! Who the client is: the TCP peer, or, behind a proxy listed in `TRUSTED_PROXIES`, the address
//! that proxy read from `X-Forwarded-For`; and the key its budgets and caps are counted under
//! (an IPv6 client by its /64). The abuse limits, the connection caps and the live sockets'
//! caps all count by it.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use axum::http::HeaderMap;
use ipnet::IpNet;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The key of a client's budgets and caps: who sent `headers` over a connection from `peer`
/// ([`client_address`]), IPv6 reduced to its /64.
pub fn client_key(peer: IpAddr, headers: &HeaderMap, trusted_proxies: &[IpNet]) -> IpAddr {
    // A value that is not text cannot be an address: it stops the walk like any other junk.
    let forwarded = headers.get_all(X_FORWARDED_FOR).iter().map(|value| value.to_str().unwrap_or("?"));
    budget_key(client_address(peer, forwarded, trusted_proxies))
}

/// Who the client is. From an untrusted peer the peer itself, whatever its headers say. From a
/// trusted proxy, `X-Forwarded-For` (all its lines, in order) is read from the right, where
/// our own proxies appended what they saw: the first address that is not a trusted proxy is
/// the client. An entry that is not an address ends the walk at the last hop a trusted proxy
/// vouched for; so does running out of entries.
pub fn client_address<'a>(
    peer: IpAddr,
    forwarded_for: impl IntoIterator<Item = &'a str>,
    trusted_proxies: &[IpNet],
) -> IpAddr {
    let trusted = |address: &IpAddr| trusted_proxies.iter().any(|network| network.contains(address));
    let peer = peer.to_canonical();
    if !trusted(&peer) {
        return peer;
    }
    let entries: Vec<&str> = forwarded_for.into_iter().flat_map(|line| line.split(',')).collect();
    let mut client = peer;
    for entry in entries.into_iter().rev() {
        let Some(address) = parse_hop(entry) else { break };
        client = address;
        if !trusted(&address) {
            break;
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, or an address with a port as some proxies write.
fn parse_hop(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    let address = entry.parse::<IpAddr>().ok().or_else(|| entry.parse::<SocketAddr>().ok().map(|hop| hop.ip()))?;
    Some(address.to_canonical())
}

/// IPv6 addresses are counted by /64: one subscriber gets a whole /64 and could otherwise
/// spend a fresh budget on every address in it.
pub fn budget_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u64::MAX as u128))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|net| net.parse().expect("a network")).collect()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("198.51.100.9"), ["203.0.113.7"], &trusted), ip("198.51.100.9"));
        assert_eq!(client_address(ip("198.51.100.9"), [], &[]), ip("198.51.100.9"));
        assert_eq!(client_address(ip("127.0.0.1"), ["203.0.113.7"], &[]), ip("127.0.0.1"));
    }

    #[test]
    fn a_trusted_proxy_names_the_client_in_the_right_most_entry() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7"], &trusted), ip("203.0.113.7"));
        // A client may send its own X-Forwarded-For: the proxy appends, so the left is a lie.
        assert_eq!(client_address(ip("10.0.0.2"), ["1.1.1.1, 203.0.113.7"], &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn trusted_hops_are_skipped_from_the_right_across_header_lines() {
        let trusted = nets(&["10.0.0.0/8", "192.168.0.1/32"]);
        let forwarded = ["6.6.6.6, 203.0.113.7", "192.168.0.1, 10.1.2.3"];
        assert_eq!(client_address(ip("10.0.0.2"), forwarded, &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn a_trusted_proxy_without_a_forwarded_address_is_the_client() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), [], &trusted), ip("10.0.0.2"));
        assert_eq!(client_address(ip("10.0.0.2"), ["10.0.0.3"], &trusted), ip("10.0.0.3"));
    }

    #[test]
    fn junk_ends_the_walk_at_the_last_vouched_hop() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7, unknown"], &trusted), ip("10.0.0.2"));
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7, , 10.0.0.5"], &trusted), ip("10.0.0.5"));
        assert_eq!(client_address(ip("10.0.0.2"), ["?"], &trusted), ip("10.0.0.2"));
    }

    #[test]
    fn forwarded_entries_may_carry_ports_and_mapped_addresses() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7:51234"], &trusted), ip("203.0.113.7"));
        assert_eq!(client_address(ip("10.0.0.2"), ["[2001:db8::1]:443"], &trusted), ip("2001:db8::1"));
        // A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d; the IPv4 list still applies.
        assert_eq!(client_address(ip("::ffff:10.0.0.2"), ["::ffff:203.0.113.7"], &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn ipv6_clients_share_the_budget_of_their_64() {
        assert_eq!(budget_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(budget_key(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")), ip("2001:db8:1:2::"));
        assert_ne!(budget_key(ip("2001:db8:1:3::1")), budget_key(ip("2001:db8:1:2::1")));
        assert_eq!(budget_key(ip("203.0.113.7")), ip("203.0.113.7"));
    }
}
