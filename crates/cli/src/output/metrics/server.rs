//! [`MetricsServer`]: `GET /metrics` over HTTP/1.1 on a current-thread tokio runtime of its
//! own thread (never the I/O path's), one short connection per scrape.
//!
//! A scrape is one small GET, so the server reads the request head (at most
//! [`MAX_REQUEST_HEAD`] bytes, within [`REQUEST_TIMEOUT`]), answers with the body's length and
//! `Connection: close` (within [`RESPONSE_TIMEOUT`]), and closes: no keep-alive, bodies,
//! chunking or compression to get wrong. At most [`MAX_CONNECTIONS`] are open at once: one more
//! takes the place of the oldest that has not sent its whole request yet (or, when every one
//! is being answered, is closed at once), so clients that send half a request and wait hold at
//! most that many descriptors, never the ones the run and its reports need, and a scraper that
//! sends its request at once is still answered among them.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::board::Board;
use super::exposition::{render, Format};
use crate::error::BadInput;

/// The most of a request's head read (request line and headers).
pub const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// How long a client has to send its request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client has to take the response.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The most connections served at once (a scraper needs one; Prometheus' HA pairs a few).
pub const MAX_CONNECTIONS: usize = 16;

/// The path the metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// A running metrics server; [`MetricsServer::stop`] ends it.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `listen` (port 0: any free port) and serves `board`. A port in use, an
    /// address not of this host or a port that needs privileges is a [`BadInput`] naming the
    /// option and the fix.
    pub fn start(listen: SocketAddr, board: Arc<Board>) -> Result<MetricsServer, BadInput> {
        let listener = std::net::TcpListener::bind(listen).map_err(|e| bind_error(listen, &e))?;
        let cannot = |e: std::io::Error| {
            BadInput(format!(
                "--metrics-listen {listen}: cannot serve there ({e}): pick another address or port"
            ))
        };
        listener.set_nonblocking(true).map_err(cannot)?;
        let addr = listener.local_addr().map_err(cannot)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(cannot)?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("hostmax-metrics".into())
            .spawn(move || runtime.block_on(serve(listener, board, stopped)))
            .map_err(cannot)?;
        Ok(MetricsServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Where it listens (the port chosen when 0 was given).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops listening and waits for the server's thread (a scrape being answered is cut
    /// off).
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// The one-line refusal for a listen address that cannot be bound.
fn bind_error(listen: SocketAddr, e: &std::io::Error) -> BadInput {
    use std::io::ErrorKind;
    let why = match e.kind() {
        ErrorKind::AddrInUse => {
            "the port is in use by another program: pick a free port (0 takes any free one)"
                .to_string()
        }
        ErrorKind::AddrNotAvailable => {
            "no interface of this host has that address: use 127.0.0.1, 0.0.0.0 or an address of this host".to_string()
        }
        ErrorKind::PermissionDenied => {
            "not allowed to listen there (ports below 1024 need root): pick a port above 1023"
                .to_string()
        }
        _ => format!("cannot listen there ({e}): pick another address or port"),
    };
    BadInput(format!("--metrics-listen {listen}: {why}"))
}

async fn serve(
    listener: std::net::TcpListener,
    board: Arc<Board>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = TcpListener::from_std(listener) else {
        return;
    };
    // The connections open now, oldest first: each task's handle, and whether it still waits
    // for its request.
    let mut open: std::collections::VecDeque<(tokio::task::AbortHandle, Arc<AtomicBool>)> =
        std::collections::VecDeque::new();
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    open.retain(|(task, _)| !task.is_finished());
                    if open.len() >= MAX_CONNECTIONS {
                        match open.iter().position(|(_, waiting)| waiting.load(Ordering::Relaxed)) {
                            // The oldest still waiting for its request makes way (aborted:
                            // its socket closes).
                            Some(i) => {
                                if let Some((task, _)) = open.remove(i) {
                                    task.abort();
                                }
                            }
                            // Every one is being answered: this one is closed at once.
                            None => {
                                drop(stream);
                                continue;
                            }
                        }
                    }
                    let waiting = Arc::new(AtomicBool::new(true));
                    let task = tokio::spawn(answer(stream, board.clone(), waiting.clone()));
                    open.push_back((task.abort_handle(), waiting));
                }
                // Out of descriptors or the like: the connection stays in the backlog, so
                // pause rather than spin on it.
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            },
        }
    }
}

/// Reads one request and answers it; `waiting` is cleared once the request is in.
async fn answer(mut stream: TcpStream, board: Arc<Board>, waiting: Arc<AtomicBool>) {
    let head = match tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream)).await {
        Ok(Some(head)) => head,
        _ => return,
    };
    waiting.store(false, Ordering::Relaxed);
    let response = respond(&head, &board);
    let _ = tokio::time::timeout(RESPONSE_TIMEOUT, async {
        stream.write_all(&response).await?;
        stream.shutdown().await
    })
    .await;
}

/// The request head, up to its blank line; `None` if the client closed or sent too much.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            return Some(String::from_utf8_lossy(&buf).into_owned());
        }
        if buf.len() > MAX_REQUEST_HEAD {
            return None;
        }
    }
}

/// The whole response to a request head.
pub fn respond(head: &str, board: &Board) -> Vec<u8> {
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or_default().split_whitespace();
    let (method, target) = (request.next().unwrap_or_default(), request.next());
    let path = target.map(|t| t.split('?').next().unwrap_or_default());
    let accept = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case("accept")
            .then(|| value.trim())
    });
    let (status, content_type, body, extra) = match (method, path) {
        ("GET" | "HEAD", Some(METRICS_PATH)) => {
            let format = Format::negotiate(accept);
            let body = render(&board.scrape(Instant::now()), format);
            ("200 OK", format.content_type(), body, "")
        }
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            format!("hostmax serves its metrics at {METRICS_PATH}\n"),
            "",
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            format!("GET {METRICS_PATH}\n"),
            "Allow: GET, HEAD\r\n",
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if method != "HEAD" {
        response.extend_from_slice(body.as_bytes());
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn scrapes_are_answered_in_the_format_asked_for() {
        let board = Arc::new(Board::new("run"));
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), board).unwrap();
        let addr = server.addr();
        assert_ne!(addr.port(), 0);
        let open = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(open.starts_with("HTTP/1.1 200 OK\r\n"), "{open}");
        assert!(open.contains(
            "Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
        ));
        assert!(open.ends_with("# EOF\n"), "{open}");
        let body_len = open.split("\r\n\r\n").nth(1).unwrap().len();
        assert!(open.contains(&format!("Content-Length: {body_len}\r\n")));
        let plain = get(
            addr,
            "GET /metrics?x=1 HTTP/1.1\r\naccept: text/plain;version=0.0.4\r\n\r\n",
        );
        assert!(
            plain.contains("Content-Type: text/plain; version=0.0.4"),
            "{plain}"
        );
        assert!(
            plain.contains("# TYPE hostmax_ios_total counter"),
            "{plain}"
        );
        let head = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(head.ends_with("\r\n\r\n"), "{head}");
        assert!(get(addr, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        server.stop();
        assert!(std::net::TcpStream::connect(addr).is_err(), "stopped");
    }

    #[test]
    fn a_port_in_use_is_refused_naming_the_option_and_the_fix() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let err = MetricsServer::start(addr, Arc::new(Board::new("run"))).unwrap_err();
        assert_eq!(
            err.0,
            format!("--metrics-listen {addr}: the port is in use by another program: pick a free port (0 takes any free one)")
        );
    }
}
