//! The `laneway-emulator` binary prints its URL and serves the control API over plain HTTP,
//! so tests in any language can drive it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let status = resp[9..12].parse().unwrap();
    let body = resp
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    (status, body)
}

#[test]
fn binary_serves_control_api() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_laneway-emulator"))
        .args(["--scenario", "fast", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = Running(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("http://")
        .expect("first line is the URL")
        .to_string();

    assert_eq!(http(&addr, "GET", "/__laneway/health", "").0, 200);
    let (status, body) = http(
        &addr,
        "POST",
        "/__laneway/faults",
        r#"{"kind":"outage","region":"us-east-1","count":2}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (_, listed) = http(&addr, "GET", "/__laneway/faults", "");
    assert!(listed.contains("outage"), "{listed}");
    let (status, _) = http(&addr, "POST", "/__laneway/faults", r#"{"kind":"meteor"}"#);
    assert_eq!(status, 422, "unknown fault kinds are refused");
    assert_eq!(http(&addr, "DELETE", "/__laneway/faults", "").0, 204);
    let (_, listed) = http(&addr, "GET", "/__laneway/faults", "");
    assert!(!listed.contains("outage"), "{listed}");
    let (status, counters) = http(&addr, "GET", "/__laneway/counters", "");
    assert_eq!((status, counters.as_str()), (200, r#"{"counters":[]}"#));

    // An unsigned Bedrock call gets AWS's 403.
    let (status, body) = http(&addr, "POST", "/model/amazon.nova-lite-v1:0/converse", "{}");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Missing Authentication Token"), "{body}");
}

#[test]
fn unknown_scenario_file_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_laneway-emulator"))
        .args(["--scenario", "/nonexistent/scenario.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/scenario.toml"));
}
