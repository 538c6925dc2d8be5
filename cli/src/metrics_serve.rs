//! `--metrics-addr` and `--metrics-linger`: the routers' metrics served while a command runs
//! (`laneway demo`, `laneway bench`), for a Prometheus and Grafana to watch the lanes move.

use std::sync::{Arc, Mutex};

use laneway::{Router, Scrape};

/// Where and how long to serve the metrics.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct MetricsServeArgs {
    /// Serve the router's metrics at `http://ADDR/metrics` (Prometheus text) and
    /// `/metrics.json` while the command runs, for a Prometheus and Grafana to watch the lanes
    /// move (`127.0.0.1:9464`, say).
    #[arg(long, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// With `--metrics-addr`: keep serving this many seconds after the run ends, so that a
    /// scraper reads its last figures.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS")]
    pub metrics_linger: f64,
}

/// The router being served now, with the labels that tell it from the ones before.
type Current = Arc<Mutex<Option<(Router, Vec<(&'static str, String)>)>>>;

/// The endpoint while it serves.
pub(crate) struct MetricsServer {
    current: Current,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    linger: std::time::Duration,
}

impl MetricsServeArgs {
    /// Binds the address and serves (printing where), if one was given.
    pub(crate) async fn start(&self) -> anyhow::Result<Option<MetricsServer>> {
        anyhow::ensure!(
            self.metrics_linger >= 0.0 && self.metrics_linger.is_finite(),
            "--metrics-linger must be >= 0 seconds, got {}",
            self.metrics_linger
        );
        let Some(addr) = self.metrics_addr else {
            return Ok(None);
        };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("--metrics-addr {addr}: {e}"))?;
        println!(
            "metrics: http://{}/metrics",
            listener.local_addr().unwrap_or(addr)
        );
        let current: Current = Arc::default();
        let source = Arc::clone(&current);
        let task = tokio::spawn(laneway::serve_scrapes(
            move || {
                let now = source.lock().unwrap_or_else(|p| p.into_inner()).clone();
                now.map_or_else(Scrape::default, |(router, labels)| Scrape {
                    snapshot: router.metrics(),
                    labels,
                })
            },
            listener,
        ));
        Ok(Some(MetricsServer {
            current,
            task,
            linger: std::time::Duration::from_secs_f64(self.metrics_linger),
        }))
    }
}

impl MetricsServer {
    /// Serves `router`'s metrics from now on, each series labelled with `labels`.
    pub(crate) fn serve(&self, router: &Router, labels: Vec<(&'static str, String)>) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Some((router.clone(), labels));
    }

    /// Serves no router (between two): an empty page, not a router that has been shut down.
    pub(crate) fn clear(&self) {
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Keeps serving for the linger, then stops.
    pub(crate) async fn finish(self) {
        tokio::time::sleep(self.linger).await;
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        // Also when the run failed before `finish`: the listener and the router are let go.
        self.task.abort();
    }
}
