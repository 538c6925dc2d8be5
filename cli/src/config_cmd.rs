//! `laneway check` and `laneway plan`: a user's own configuration, validated and explained,
//! and a request's plan with every reason, without sending anything.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use laneway::config::ModelConfig;
use laneway::{Config, GenerateRequest};

/// `laneway check --config FILE`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The configuration file (TOML), merged over the built-in defaults.
    #[arg(long)]
    config: PathBuf,
    /// Prints the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// `laneway plan --config FILE [request options]`.
#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// The configuration file (TOML), merged over the built-in defaults; the defaults alone
    /// when absent.
    #[arg(long)]
    config: Option<PathBuf>,
    /// The whole request as JSON (the bindings' shape, as `Request.to_dict()` prints it);
    /// the options below change it.
    #[arg(long)]
    request: Option<PathBuf>,
    /// The user message (when no --request is given).
    #[arg(long, default_value = "Hello")]
    prompt: String,
    /// A configured model id (or a profile id of one).
    #[arg(long, conflicts_with = "family")]
    model: Option<String>,
    /// A family, whose variant the classifier picks.
    #[arg(long)]
    family: Option<String>,
    /// interactive, standard, background or batch.
    #[arg(long)]
    slo_class: Option<String>,
    /// Forces a tier: priority, standard, flex or reserved.
    #[arg(long)]
    tier: Option<String>,
    #[arg(long)]
    max_tokens: Option<i64>,
    /// Time to first token target, in milliseconds.
    #[arg(long)]
    ttft_target_ms: Option<u64>,
    /// Deadline for the whole call, in milliseconds.
    #[arg(long)]
    deadline_ms: Option<u64>,
    /// Keeps the request in a configured geography (us, eu, apac, jp, au, ca, us-gov, ...) or,
    /// comma-separated, in regions.
    #[arg(long)]
    residency: Option<String>,
    /// A task id (multi-step tasks cache their prefixes).
    #[arg(long)]
    task: Option<String>,
    /// Prints the plan as JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn load(path: &std::path::Path) -> anyhow::Result<Config> {
    Ok(Config::from_file(path)?)
}

/// Validates the configuration and prints each model's tiers, targets, prices and quotas.
pub(crate) fn check(args: CheckArgs) -> anyhow::Result<()> {
    let config = load(&args.config)?;
    let catalog = laneway::plan::Catalog::new(&config);
    let mut models = Vec::new();
    for (name, model) in &config.models {
        let targets: Vec<serde_json::Value> = catalog
            .candidates(name)
            .unwrap_or_default()
            .iter()
            .map(|c| serde_json::json!({ "region": c.target.region(), "id": c.target.id() }))
            .collect();
        models.push(describe(name, model, targets));
    }
    let report = serde_json::json!({
        "config": args.config.display().to_string(),
        "valid": true,
        "slo_tiers": config.slo_tiers,
        "families": config.families.iter().map(|(n, f)| (n.clone(), serde_json::json!(f.variants))).collect::<serde_json::Map<_, _>>(),
        "models": models,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!("{}: valid", args.config.display());
    println!(
        "SLO classes -> tiers: {}",
        serde_json::to_string(&config.slo_tiers)?
    );
    for m in report["models"].as_array().into_iter().flatten() {
        println!(
            "\n{} ({})",
            m["name"].as_str().unwrap_or(""),
            m["provider"].as_str().unwrap_or("")
        );
        for key in [
            "tiers",
            "price",
            "quota",
            "output_burndown",
            "max_output_tokens",
            "reserved",
            "prompt_cache",
            "end_of_life",
        ] {
            if !m[key].is_null() {
                println!("  {key:<18} {}", m[key]);
            }
        }
        let targets: Vec<String> = m["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                format!(
                    "{} in {}",
                    t["id"].as_str().unwrap_or(""),
                    t["region"].as_str().unwrap_or("")
                )
            })
            .collect();
        println!("  {:<18} {}", "targets", targets.join(", "));
    }
    Ok(())
}

fn describe(name: &str, model: &ModelConfig, targets: Vec<serde_json::Value>) -> serde_json::Value {
    let mut v = serde_json::json!({
        "name": name,
        "provider": model.provider().as_str(),
        "price": model.price(),
        "targets": targets,
    });
    if let ModelConfig::Bedrock(b) = model {
        v["tiers"] = serde_json::json!(b.tiers);
        v["quota"] = serde_json::json!(b.quota);
        v["output_burndown"] = serde_json::json!(b.output_burndown);
        v["max_output_tokens"] = serde_json::json!(b.max_output_tokens);
        v["reserved"] = serde_json::json!(b.reserved);
        v["prompt_cache"] = serde_json::json!(b.prompt_cache);
        v["end_of_life"] = serde_json::json!(b.end_of_life);
    }
    v
}

/// Plans one request with the configuration and a router that has seen nothing, and prints
/// the attempts and every reason; nothing is sent.
pub(crate) fn plan(args: PlanArgs) -> anyhow::Result<()> {
    let config = match &args.config {
        Some(path) => load(path)?,
        None => Config::default(),
    };
    let request = request_of(&args, &config)?;
    let plan = laneway::plan(&request, &config, &laneway::plan::Fresh(Instant::now()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&plan)?);
        return Ok(());
    }
    println!("model: {} ({})", plan.model, plan.provider);
    if let Some(f) = &plan.family {
        println!("family: {f}");
    }
    println!("attempts, in order:");
    for (i, a) in plan.attempts.iter().enumerate() {
        let tier = a.tier.map_or("-".to_string(), |t| t.to_string());
        println!(
            "  {}. {} in {} (model {}, tier {tier}{})",
            i + 1,
            a.target.id(),
            a.target.region(),
            a.model,
            if a.latency_optimized {
                ", latency-optimized"
            } else {
                ""
            }
        );
    }
    if !plan.cache.checkpoints.is_empty() {
        println!("cache checkpoints: {}", plan.cache.checkpoints.len());
    }
    println!("reasons:");
    for r in &plan.reasons {
        println!("  - {r}");
    }
    Ok(())
}

/// A snake_case name of one of the request's enums, as in its JSON shape.
fn enum_of<T: serde::de::DeserializeOwned>(what: &str, s: &str) -> anyhow::Result<T> {
    serde_json::from_value(serde_json::json!(s)).with_context(|| format!("--{what} {s:?}"))
}

fn request_of(args: &PlanArgs, config: &Config) -> anyhow::Result<GenerateRequest> {
    let mut request = match &args.request {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read --request {}", path.display()))?;
            serde_json::from_str::<GenerateRequest>(&text)
                .with_context(|| format!("--request {} is not a request", path.display()))?
        }
        None => GenerateRequest::user(args.prompt.clone()),
    };
    if let Some(m) = &args.model {
        request = request.model(m.clone());
    }
    if let Some(f) = &args.family {
        request = request.family(f.clone());
    }
    if let Some(c) = &args.slo_class {
        request = request.slo_class(enum_of("slo-class", c)?);
    }
    if let Some(t) = &args.tier {
        request = request.tier(enum_of("tier", t)?);
    }
    if let Some(n) = args.max_tokens {
        request = request.max_tokens(n);
    }
    if let Some(ms) = args.ttft_target_ms {
        request = request.ttft_target(Duration::from_millis(ms));
    }
    if let Some(ms) = args.deadline_ms {
        request = request.deadline(Duration::from_millis(ms));
    }
    if let Some(r) = &args.residency {
        // A configured geography's name, else regions (`us-east-1` is a well-formed name too).
        let residency = match laneway::Geography::new(r) {
            Ok(geography) if config.is_known_geography(&geography) => {
                laneway::Residency::Geography(geography)
            }
            _ => laneway::Residency::Regions(r.split(',').map(|s| s.trim().to_string()).collect()),
        };
        request = request.residency(residency);
    }
    if let Some(t) = &args.task {
        request = request.task(t.clone());
    }
    Ok(request)
}
