//! A real redis-server on a free loopback port, for the shared-state tests. `scripts/test.sh`
//! installs Debian's `redis-server`; `LANEWAY_REDIS_SERVER` names another binary.

#![allow(dead_code)] // shared by test binaries and a bench, each using part of it

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) struct RedisServer {
    pub port: u16,
    child: Option<Child>,
}

fn binary() -> String {
    std::env::var("LANEWAY_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// Polls (bounded: 10 s) until a server started as another process listens on `port`. The
/// process gives no other sign, so this waits on it, 20 ms between tries; no test measures
/// this time.
fn wait_for_port(port: u16) {
    poll_until("redis-server to listen", Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
}

/// Asks `condition` of another process (each ask a connection or a `redis-cli` run) until it
/// holds, 20 ms between asks; panics after `within`.
#[allow(clippy::disallowed_methods)] // Another process's progress: the wall clock.
fn poll_until(what: &str, within: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "waited {within:?} for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl RedisServer {
    /// Starts a server without persistence and waits until it answers.
    pub(crate) fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut s = Self { port, child: None };
        s.restart();
        s
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Starts (again) on the same port.
    pub(crate) fn restart(&mut self) {
        let child = Command::new(binary())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {} ({e}): scripts/test.sh installs it (apt-get install redis-server)",
                    binary()
                )
            });
        self.child = Some(child);
        wait_for_port(self.port);
    }

    /// Kills the server (SIGKILL: no goodbye to clients).
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl RedisServer {
    /// Freezes the server (SIGSTOP): connections stay open and nothing answers, as a hung
    /// server or a network partition looks to its clients.
    pub(crate) fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen server run again (SIGCONT).
    pub(crate) fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill").args([signal, &pid]).status().unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Redis Cluster of `masters` nodes without replicas on loopback, as cluster-mode
/// ElastiCache answers (MOVED for another node's slots): each node's data and bus ports are
/// free ones, its `nodes.conf` in a directory of its own so that it rejoins after a restart.
pub(crate) struct RedisCluster {
    pub nodes: Vec<ClusterNode>,
}

pub(crate) struct ClusterNode {
    pub port: u16,
    bus_port: u16,
    dir: std::path::PathBuf,
    child: Option<Child>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run redis-cli ({e}): scripts/test.sh installs it"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl ClusterNode {
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Starts (again) on the same ports, with the same cluster configuration.
    pub(crate) fn restart(&mut self) {
        let child = Command::new(binary())
            .current_dir(&self.dir)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
            ])
            .args(["--cluster-port", &self.bus_port.to_string()])
            .args(["--cluster-node-timeout", "1000"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {} ({e})", binary()));
        self.child = Some(child);
        wait_for_port(self.port);
    }

    /// Kills the node (SIGKILL).
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// This node's view of the cluster's state (`ok` or `fail`).
    pub(crate) fn cluster_state(&self) -> String {
        cli(self.port, &["cluster", "info"])
            .lines()
            .find_map(|l| l.strip_prefix("cluster_state:"))
            .unwrap_or("")
            .trim()
            .to_string()
    }

    /// Runs a command on this node (`-c`: following MOVED to the node that holds the key).
    pub(crate) fn command(&self, args: &[&str]) -> String {
        let mut all = vec!["-c"];
        all.extend_from_slice(args);
        cli(self.port, &all).trim().to_string()
    }
}

impl RedisCluster {
    /// Starts `masters` nodes, joins them into one cluster covering every slot and waits
    /// until every node says the cluster is ok.
    pub(crate) fn start(masters: usize) -> Self {
        let base = std::env::temp_dir().join(format!(
            "laneway-redis-cluster-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut nodes: Vec<ClusterNode> = (0..masters)
            .map(|i| {
                let dir = base.join(i.to_string());
                std::fs::create_dir_all(&dir).unwrap();
                let mut n = ClusterNode {
                    port: free_port(),
                    bus_port: free_port(),
                    dir,
                    child: None,
                };
                n.restart();
                n
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let cluster = Self {
            nodes: std::mem::take(&mut nodes),
        };
        cluster.wait_ok();
        cluster
    }

    /// Waits (bounded) until every running node says the cluster is ok.
    pub(crate) fn wait_ok(&self) {
        poll_until("the cluster to be ok", Duration::from_secs(30), || {
            self.nodes
                .iter()
                .filter(|n| n.child.is_some())
                .all(|n| n.cluster_state() == "ok")
        });
    }

    /// The index of the node serving `key`'s slot.
    pub(crate) fn owner_of(&self, key: &str) -> usize {
        let slot: u16 = cli(self.nodes[0].port, &["cluster", "keyslot", key])
            .trim()
            .parse()
            .expect("a slot number");
        let nodes = cli(self.nodes[0].port, &["cluster", "nodes"]);
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let port: u16 = fields[1]
                .split(['@', ':'])
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let serves = fields[8..].iter().any(|range| match range.split_once('-') {
                Some((a, b)) => {
                    (a.parse().unwrap_or(u16::MAX)..=b.parse().unwrap_or(0)).contains(&slot)
                }
                None => range.parse() == Ok(slot),
            });
            if serves {
                return self.nodes.iter().position(|n| n.port == port).unwrap();
            }
        }
        panic!("no node serves slot {slot}: {nodes}")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            n.kill();
        }
        if let Some(dir) = self.nodes.first().and_then(|n| n.dir.parent()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
