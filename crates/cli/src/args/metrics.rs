//! `--metrics-listen`, the live metrics option every measuring command takes
//! ([`MetricsArgs`]).

use std::net::SocketAddr;

const EXAMPLE: &str = "give an IP address and a port, such as 127.0.0.1:9464 or [::1]:9464";

/// clap's value parser for `--metrics-listen`: an IP address and a port. Whether the port is
/// free is found when the command binds it (before any I/O).
pub fn parse_listen(input: &str) -> Result<SocketAddr, String> {
    input
        .trim()
        .parse()
        .map_err(|_| format!("'{input}' is not ADDR:PORT; {EXAMPLE}"))
}

/// The live metrics of a measuring command (run, verify, sweep, curve, suite, demo).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MetricsArgs {
    /// Serve live metrics in OpenMetrics text (Prometheus text when asked) at
    /// http://ADDR:PORT/metrics while the command runs: I/Os, bytes and errors per device
    /// and kind, a latency histogram, the run's phase, step and progress, the workers' CPU.
    /// Port 0 takes a free port (the line on stderr names it).
    #[arg(long, value_name = "ADDR:PORT", value_parser = parse_listen)]
    pub metrics_listen: Option<SocketAddr>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses_are_ip_and_port() {
        assert_eq!(
            parse_listen("127.0.0.1:9464").unwrap(),
            "127.0.0.1:9464".parse::<SocketAddr>().unwrap()
        );
        assert!(parse_listen("[::1]:0").is_ok());
        for bad in ["9464", "localhost:9464", "127.0.0.1", "127.0.0.1:99999", ""] {
            let err = parse_listen(bad).unwrap_err();
            assert!(
                err.contains("not ADDR:PORT") && err.contains("127.0.0.1:9464"),
                "{err}"
            );
        }
    }
}
