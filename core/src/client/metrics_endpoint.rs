//! A small HTTP endpoint for scrapes: `GET /metrics` answers the Prometheus text exposition and
//! `GET /metrics.json` the [`MetricsSnapshot`](crate::telemetry::MetricsSnapshot) as JSON.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use super::Router;

/// The content type of the Prometheus text format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

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
    let text = router.clone();
    let json = router;
    let app = axum::Router::new()
        .route(
            "/metrics",
            get(move || {
                let body = text.metrics().prometheus();
                async move { ([(header::CONTENT_TYPE, PROMETHEUS_TEXT)], body).into_response() }
            }),
        )
        .route(
            "/metrics.json",
            get(move || {
                let snapshot = json.metrics();
                async move { axum::Json(snapshot).into_response() }
            }),
        );
    axum::serve(listener, app).await
}
