//! How many requests a server takes at once.
//!
//! A server on this machine (a loopback host: `127.0.0.0/8`, `localhost`, `[::1]`) is taken to
//! have one slot: llama-cpp-python's server computes one request at a time and queues the others
//! behind a lock, and a request waiting in that queue is on the clock of its HTTP time-out: with
//! four in flight, the fourth waits for three answers before its own starts, times out, is
//! retried, and queues again behind the abandoned ones (the server still computes those). So
//! requests to a loopback server queue in foldbench, holding no connection, and each one's
//! time-out starts when it is sent. `FOLDBENCH_SERVER_SLOTS=N` says a server takes N at once (a
//! llama.cpp `llama-server -np N`, a local vLLM); the cap is never above `--jobs`.

/// The environment variable that overrides the slot count of a loopback server.
pub(crate) const SLOTS_VAR: &str = "FOLDBENCH_SERVER_SLOTS";

/// Whether `base_url` names a host on this machine.
pub(crate) fn is_loopback(base_url: &str) -> bool {
    let rest = base_url
        .trim()
        .split_once("://")
        .map_or(base_url.trim(), |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    let host = host.to_ascii_lowercase();
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Requests in flight to the server at `base_url` when the run allows `cap`: for a loopback
/// server, `slots` (the value of [`SLOTS_VAR`], when set to a positive number) or 1, never more
/// than `cap`; `cap` for any other server.
pub(crate) fn in_flight_cap(base_url: &str, cap: usize, slots: Option<&str>) -> usize {
    let cap = cap.max(1);
    if !is_loopback(base_url) {
        return cap;
    }
    let slots = slots
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    slots.min(cap)
}

/// [`in_flight_cap`] with [`SLOTS_VAR`] read from the environment.
pub(crate) fn in_flight_cap_from_env(base_url: &str, cap: usize) -> usize {
    in_flight_cap(base_url, cap, std::env::var(SLOTS_VAR).ok().as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for u in [
            "http://127.0.0.1:8089/v1",
            "http://127.0.0.2/v1",
            "http://localhost:8000",
            "https://LOCALHOST/v1",
            "http://[::1]:8089/v1",
            "http://user@127.0.0.1:1/v1",
            "127.0.0.1:8089/v1",
        ] {
            assert!(is_loopback(u), "{u}");
        }
        for u in [
            "https://api.openai.com/v1",
            "http://10.0.0.5:8089/v1",
            "http://127.0.0.1.example.com/v1",
            "http://[2001:db8::1]:80/v1",
            "",
        ] {
            assert!(!is_loopback(u), "{u}");
        }
    }

    #[test]
    fn a_loopback_server_gets_one_request_at_a_time_unless_told() {
        let local = "http://127.0.0.1:8089/v1";
        assert_eq!(in_flight_cap(local, 4, None), 1);
        assert_eq!(in_flight_cap(local, 4, Some("2")), 2);
        assert_eq!(in_flight_cap(local, 4, Some("9")), 4, "never above --jobs");
        assert_eq!(in_flight_cap(local, 4, Some("0")), 1);
        assert_eq!(in_flight_cap(local, 4, Some("many")), 1);
        assert_eq!(in_flight_cap("https://api.openai.com/v1", 4, None), 4);
        assert_eq!(in_flight_cap("https://api.openai.com/v1", 4, Some("1")), 4);
    }
}
