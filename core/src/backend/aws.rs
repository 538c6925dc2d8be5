//! The AWS settings every AWS backend's clients are built from.

use std::time::Duration;

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
