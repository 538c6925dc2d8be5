//! The AWS settings every AWS backend's clients are built from, loaded when the router is
//! built or, for a router built without waiting ([`RouterBuilder::build_deferred`]), at the
//! first call that needs them.
//!
//! [`RouterBuilder::build_deferred`]: crate::RouterBuilder::build_deferred

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use super::{Backend, Call, EventStream};
use crate::types::Result;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::Credentials;

/// The router's AWS settings: the caller's own `SdkConfig`, else the default chain (or static
/// credentials) with `loader_region` for the loader only (each client gets its own region);
/// in both, the SDK's retries off (the router is the only retry loop), the connect timeout,
/// and the endpoint URL when one is given (the emulator, a VPC endpoint).
pub(crate) async fn sdk_config(
    given: Option<SdkConfig>,
    credentials: Option<(String, String)>,
    loader_region: &str,
    connect_timeout: Duration,
    endpoint_url: Option<String>,
) -> SdkConfig {
    let base = match given {
        Some(sdk) => sdk,
        None => {
            let mut loader = aws_config::defaults(BehaviorVersion::latest());
            if let Some((ak, sk)) = credentials {
                loader = loader.credentials_provider(Credentials::new(
                    ak,
                    sk,
                    None,
                    None,
                    "laneway-static",
                ));
            }
            loader = loader.region(aws_config::Region::new(loader_region.to_string()));
            loader.load().await
        }
    };
    // The router owns every time limit past the connection.
    let mut base = base
        .into_builder()
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            aws_config::timeout::TimeoutConfig::builder()
                .connect_timeout(connect_timeout)
                .build(),
        );
    if let Some(url) = endpoint_url {
        base = base.endpoint_url(url);
    }
    base.build()
}

/// What [`sdk_config`] is given, kept until the first call loads it.
#[derive(Debug, Clone)]
pub(crate) struct SdkSettings {
    pub(crate) given: Option<SdkConfig>,
    pub(crate) credentials: Option<(String, String)>,
    pub(crate) loader_region: String,
    pub(crate) connect_timeout: Duration,
    pub(crate) endpoint_url: Option<String>,
}

/// The router's AWS settings: loaded already, or loaded once at first use (every backend and
/// the batch lane share the one load).
#[derive(Debug)]
pub(crate) struct SdkSource {
    settings: Option<SdkSettings>,
    loaded: OnceCell<SdkConfig>,
}

impl SdkSource {
    /// Settings loaded already.
    pub(crate) fn ready(sdk: SdkConfig) -> Arc<Self> {
        Arc::new(Self {
            settings: None,
            loaded: OnceCell::new_with(Some(sdk)),
        })
    }

    /// Settings loaded at the first [`SdkSource::get`].
    pub(crate) fn deferred(settings: SdkSettings) -> Arc<Self> {
        Arc::new(Self {
            settings: Some(settings),
            loaded: OnceCell::new(),
        })
    }

    /// The settings, if they are loaded.
    pub(crate) fn loaded(&self) -> Option<&SdkConfig> {
        self.loaded.get()
    }

    /// The loaded settings, loading them first if no one has. A load given up midway (its call
    /// cancelled) is started again by the next caller, from the same settings.
    pub(crate) async fn get(&self) -> &SdkConfig {
        self.loaded
            .get_or_init(|| async {
                let s = self
                    .settings
                    .clone()
                    .expect("a source not loaded yet holds its settings");
                sdk_config(
                    s.given,
                    s.credentials,
                    &s.loader_region,
                    s.connect_timeout,
                    s.endpoint_url,
                )
                .await
            })
            .await
    }
}

/// A built-in backend made from the AWS settings at its first call, for a router built
/// without waiting for them.
pub(crate) struct Deferred {
    source: Arc<SdkSource>,
    make: MakeBackend,
    made: OnceCell<Arc<dyn Backend>>,
}

/// How a built-in backend is made from the AWS settings.
pub(crate) type MakeBackend = Box<dyn Fn(&SdkConfig) -> Arc<dyn Backend> + Send + Sync>;

impl Deferred {
    pub(crate) fn new(source: Arc<SdkSource>, make: MakeBackend) -> Self {
        Self {
            source,
            make,
            made: OnceCell::new(),
        }
    }

    async fn backend(&self) -> &Arc<dyn Backend> {
        self.made
            .get_or_init(|| async { (self.make)(self.source.get().await) })
            .await
    }
}

impl Backend for Deferred {
    fn generate<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<super::Completion>> {
        Box::pin(async move { self.backend().await.generate(call).await })
    }

    fn stream<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Result<EventStream>> {
        Box::pin(async move { self.backend().await.stream(call).await })
    }
}
