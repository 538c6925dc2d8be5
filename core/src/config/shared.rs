//! `[shared]`: state shared with other replicas through Redis.

use super::{Deserialize, Duration, Serialize};

/// Where replicas share their state: a Redis server or cluster. Its `Debug` output hides the
/// URL's password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedConfig {
    /// `redis://[user:password@]host:port[/db]`, or `rediss://` for TLS.
    pub redis_url: String,
    /// Prefix of every key, one per application sharing the server.
    pub key_prefix: String,
    /// How many replicas share the reservation: while Redis is unreachable each admits only
    /// this share of it.
    pub replicas: u32,
    /// Longest wait for Redis on a call's path before falling back to local state (ms).
    #[serde(with = "crate::types::units::serde_millis")]
    pub timeout: Duration,
    /// How often breaker states are read from Redis (ms).
    #[serde(with = "crate::types::units::serde_millis")]
    pub sync_interval: Duration,
    /// A Redis Cluster (cluster-mode ElastiCache or MemoryDB, ElastiCache Serverless, Valkey in
    /// cluster mode): `redis_url` is any node or the configuration endpoint, and the client
    /// follows the cluster's slots (every key shares one slot: `{key_prefix}` is a hash tag).
    #[serde(default)]
    pub cluster: bool,
}

/// What a short-lived process (a serverless function, a batch job, a CLI run) keeps between
/// runs without Redis (`[local_state]`): its targets' latency summaries and its ejected
/// regions, in a small JSON file read when the router is built and written while it runs and
/// when it is dropped. A file older than `max_age` (or unreadable, or another version's) is
/// ignored, never an error; it holds at most a few hundred targets.
///
/// ```
/// let c = laneway::Config::from_toml_str("[local_state]\npath = \"/tmp/laneway-state.json\"\n").unwrap();
/// let s = c.local_state.unwrap();
/// assert_eq!(s.max_age, std::time::Duration::from_secs(3600));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalStateConfig {
    /// The file (created, with its directory, when first written).
    pub path: std::path::PathBuf,
    /// What was learnt longer ago than this is ignored (milliseconds; default an hour).
    #[serde(with = "crate::types::units::serde_millis")]
    pub max_age: Duration,
    /// How often the file is written while the router learns (milliseconds; default 5 s).
    #[serde(with = "crate::types::units::serde_millis")]
    pub save_every: Duration,
}

impl std::fmt::Debug for SharedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedConfig")
            .field("redis_url", &redact_url(&self.redis_url))
            .field("key_prefix", &self.key_prefix)
            .field("replicas", &self.replicas)
            .field("timeout", &self.timeout)
            .field("sync_interval", &self.sync_interval)
            .field("cluster", &self.cluster)
            .finish()
    }
}

/// A URL with the password of its user information replaced by `***` (all of it, when it is
/// not `user:password`), for logs and error messages.
///
/// ```
/// use laneway::config::redact_url;
/// assert_eq!(redact_url("redis://app:s3cret@cache:6379/0"), "redis://app:***@cache:6379/0");
/// assert_eq!(redact_url("rediss://:s3cret@cache"), "rediss://:***@cache");
/// assert_eq!(redact_url("redis://cache:6379"), "redis://cache:6379");
/// ```
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    let user = match rest[..at].split_once(':') {
        Some((user, _password)) => format!("{user}:***"),
        None => "***".to_string(),
    };
    format!("{scheme}://{user}{}", &rest[at..])
}
