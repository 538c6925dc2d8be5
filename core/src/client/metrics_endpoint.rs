//! A small HTTP endpoint for scrapes: `GET /metrics` answers the Prometheus text exposition and
//! `GET /metrics.json` the [`MetricsSnapshot`](crate::telemetry::MetricsSnapshot) as JSON.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use super::Router;

/// The content type of the Prometheus text format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What an endpoint serves at one scrape: a snapshot, and labels added to its every series.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    /// The figures.
    pub snapshot: crate::telemetry::MetricsSnapshot,
    /// Labels on every series (`("laneway.bench.candidate", name)`), none for one router.
    pub labels: Vec<(&'static str, String)>,
}

/// Serves the router's metrics on `listener` until the returned future is dropped or fails.
///
/// Run it as a task next to your application; bind the listener where your scraper reaches it.
///
/// ```no_run
/// # async fn f(router: laneway::Router) -> std::io::Result<()> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9464").await?;
/// tokio::spawn(laneway::serve_prometheus(router.clone(), listener));
/// # Ok(()) }
/// ```
pub async fn serve_prometheus(
    router: Router,
    listener: tokio::net::TcpListener,
) -> std::io::Result<()> {
    serve_scrapes(
        move || Scrape {
            snapshot: router.metrics(),
            labels: Vec::new(),
        },
        listener,
    )
    .await
}

/// Serves what `scrape` gives at each request, as [`serve_prometheus`] serves one router's
/// metrics: for a program that runs several routers in turn (`laneway bench`, one per
/// candidate), labelled so that a scraper tells them apart.
pub async fn serve_scrapes(
    scrape: impl Fn() -> Scrape + Clone + Send + Sync + 'static,
    listener: tokio::net::TcpListener,
) -> std::io::Result<()> {
    let text = scrape.clone();
    let json = scrape;
    let app = axum::Router::new()
        .route(
            "/metrics",
            get(move || {
                let s = text();
                let labels: Vec<(&'static str, &str)> =
                    s.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let body = s.snapshot.prometheus_labelled(&labels);
                async move { ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], body).into_response() }
            }),
        )
        .route(
            "/metrics.json",
            get(move || {
                let snapshot = json().snapshot;
                async move { axum::Json(snapshot).into_response() }
            }),
        );
    axum::serve(listener, app).await
}
