//! The scrape endpoint (`metrics-http` feature) answered over real HTTP on loopback.

use crate::common;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn metrics_are_served_as_prometheus_text_and_json() {
    let emu = common::emulator().await;
    let router = common::router(&emu).await;
    router
        .generate(
            laneway::GenerateRequest::user("hello")
                .family("nova")
                .max_tokens(8),
        )
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(laneway::serve_prometheus(router.clone(), listener));

    let text = get(addr, "/metrics").await;
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let scrape = prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).unwrap();
    assert!(
        scrape
            .samples
            .iter()
            .any(|s| s.metric == "gen_ai_client_operation_duration_seconds_count")
    );

    let json = get(addr, "/metrics.json").await;
    let (head, body) = json.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["lanes"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["in_flight"], 0);

    assert!(get(addr, "/nope").await.starts_with("HTTP/1.1 404"));
    server.abort();
    emu.shutdown().await;
}
