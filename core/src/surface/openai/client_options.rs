//! What the `openai`-shaped facades of the bindings take from the official clients' options
//! and what they do with them: one set of rules for Python's and JavaScript's facades.

/// The official `openai` SDK a facade stands in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiSdk {
    /// The Python SDK (`openai.OpenAI`, `AsyncOpenAI`).
    Python,
    /// The JavaScript SDK (`new OpenAI(...)`).
    JavaScript,
}

impl OpenAiSdk {
    /// The client's constructor options that a facade accepts and does not use: Laneway
    /// chooses the endpoint, retries and connections itself. A facade warns of each one given
    /// ([`not_used`]) and refuses any option neither Laneway's nor in this list.
    pub fn unused_client_options(self) -> &'static [&'static str] {
        match self {
            Self::Python => &[
                "organization",
                "project",
                "base_url",
                "websocket_base_url",
                "max_retries",
                "default_headers",
                "default_query",
                "http_client",
                "webhook_secret",
            ],
            Self::JavaScript => &[
                "organization",
                "project",
                "baseURL",
                "maxRetries",
                "defaultHeaders",
                "defaultQuery",
                "fetch",
                "fetchOptions",
                "httpAgent",
                "dangerouslyAllowBrowser",
                "webhookSecret",
                "logLevel",
                "logger",
            ],
        }
    }

    /// A call's per-request options that a facade does not use (Laneway retries and fails
    /// over itself): warned of. (Headers and query parameters go in the body, and the call's
    /// decision says they were not sent; the timeout is the call's deadline.)
    pub fn unused_request_options(self) -> &'static [&'static str] {
        match self {
            // `create` takes no retry option in Python (`with_options` makes a client).
            Self::Python => &[],
            Self::JavaScript => &["maxRetries", "idempotencyKey", "fetchOptions"],
        }
    }
}

/// The warning a facade gives for `options` it took and does not use (client options, or a
/// call's), with why.
///
/// ```
/// use laneway::surface::openai::not_used;
/// assert_eq!(
///     not_used(&["max_retries"]),
///     "max_retries not used: Laneway chooses the endpoint, retries and fails over itself"
/// );
/// ```
pub fn not_used(options: &[&str]) -> String {
    format!(
        "{} not used: Laneway chooses the endpoint, retries and fails over itself",
        options.join(", ")
    )
}

/// The body key under which a facade passes the SDK's `timeout` for a call, in milliseconds:
/// the call's deadline, unless Laneway's own options (`laneway.deadline_ms`) set one.
pub const TIMEOUT_KEY: &str = "timeout_ms";
