//! Live metrics (`--metrics-listen ADDR:PORT`): while a measuring command runs, its figures
//! are served at `http://ADDR:PORT/metrics` in OpenMetrics text (Prometheus' text when a
//! scraper asks for it), for Prometheus and Grafana to watch long runs.
//!
//! One live source, two views: the runs' one-second intervals that feed the live view on
//! stderr also feed a [`board::Board`] (`crate::measure` and the suite's runner look it up
//! with [`board::live`]); the engine counts nothing more for it. [`server::MetricsServer`]
//! answers scrapes from the board; [`exposition`] writes the text; [`worker_cpu`] reads the
//! worker threads' CPU time while they run.
//!
//! The server is bound before any I/O (a port in use is bad input, exit 2) and stops when the
//! command ends, after one more scrape has read the final figures ([`LiveMetrics::finish`]).

pub mod board;
pub mod exposition;
pub mod server;
pub mod worker_cpu;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use board::Board;
use server::MetricsServer;

use crate::error::BadInput;

/// The shortest wait for the final scrape (when the scrapes so far came closer together, or
/// only one came).
pub const FINAL_SCRAPE_WAIT_MIN: Duration = Duration::from_secs(2);

/// The longest wait for the final scrape after the command ended.
pub const FINAL_SCRAPE_WAIT_MAX: Duration = Duration::from_secs(60);

/// The metrics of the command running now: its board and the server answering from it.
#[derive(Debug)]
pub struct LiveMetrics {
    board: Arc<Board>,
    server: Option<MetricsServer>,
}

/// Starts serving `command`'s metrics on `listen` (nothing when `None`), and says where on
/// stderr. A listen address that cannot be bound is refused before any I/O.
pub fn serve(
    listen: Option<SocketAddr>,
    command: &'static str,
) -> Result<Option<LiveMetrics>, BadInput> {
    let Some(listen) = listen else {
        return Ok(None);
    };
    let board = Arc::new(Board::new(command));
    let server = MetricsServer::start(listen, board.clone())?;
    crate::errln!(
        "serving live metrics at http://{}{} until the {command} ends",
        server.addr(),
        server::METRICS_PATH
    );
    board::set_live(Some(board.clone()));
    Ok(Some(LiveMetrics {
        board,
        server: Some(server),
    }))
}

impl LiveMetrics {
    /// The command ended: marks the figures final, keeps serving until a scrape has read
    /// them (when anything scraped during the command: at most twice the longest gap seen
    /// between scrapes, within [`FINAL_SCRAPE_WAIT_MIN`]..[`FINAL_SCRAPE_WAIT_MAX`]; a signal
    /// ends the wait), then stops the server.
    pub fn finish(mut self) {
        self.board.command_ended();
        if let Some(wait) = self.board.final_scrape_wait() {
            let until = Instant::now() + wait;
            while !self.board.final_scraped() && Instant::now() < until {
                if crate::signals::watch()
                    .wait_for_signal(Duration::from_millis(50))
                    .is_some()
                {
                    break;
                }
            }
        }
        self.stop();
    }

    fn stop(&mut self) {
        board::set_live(None);
        if let Some(server) = self.server.take() {
            server.stop();
        }
    }
}

impl Drop for LiveMetrics {
    /// A command that ended in an error: stop at once.
    fn drop(&mut self) {
        self.stop();
    }
}
