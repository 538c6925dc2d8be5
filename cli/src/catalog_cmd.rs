//! `laneway catalog prices --from OFFER.json`: the configured models' prices from AWS's own
//! price list (an offer file of the AWS Price List bulk API), as configuration rows.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use laneway::Config;
use laneway::cost::offer;

/// `laneway catalog ...`.
#[derive(Debug, Subcommand)]
pub(crate) enum CatalogCommand {
    /// Reads AWS Price List offer files for Bedrock (`AmazonBedrock`,
    /// `AmazonBedrockFoundationModels`, `AmazonBedrockService`: the JSON at
    /// https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/<offer>/current/index.json) and
    /// writes each configured model's price rows (per region, profile scope, tier, cache TTL
    /// and long-context band) as TOML to add to a configuration file.
    Prices(PricesArgs),
}

/// `laneway catalog prices --from OFFER.json [--from ...] [--config FILE] [--out FILE]`.
#[derive(Debug, Args)]
pub(crate) struct PricesArgs {
    /// An offer file (JSON); give one per offer.
    #[arg(long = "from", required = true)]
    from: Vec<PathBuf>,
    /// The configuration whose models are priced (the built-in catalog when absent).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where to write the rows (standard output when absent).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Input tokens above which a long-context price applies, for models whose configuration
    /// does not say (`price.long_context.above_input_tokens`): the offers do not.
    #[arg(long, default_value_t = 200_000)]
    long_context_above: u32,
}

pub(crate) fn run(command: CatalogCommand) -> anyhow::Result<()> {
    match command {
        CatalogCommand::Prices(args) => prices(args),
    }
}

fn prices(args: PricesArgs) -> anyhow::Result<()> {
    let config = match &args.config {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    let mut offers = Vec::new();
    for path in &args.from {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let read = offer::read_offer(&text).with_context(|| format!("in {}", path.display()))?;
        eprintln!(
            "{}: offer {} version {}: {} token prices, {} other usage types skipped",
            path.display(),
            read.offer_code,
            read.version,
            read.lines.len(),
            read.skipped.len()
        );
        offers.push(read);
    }
    let mut all = offer::Offer::default();
    for o in &offers {
        all.lines.extend(o.lines.iter().cloned());
    }
    let rows = offer::price_rows(&all, &config, args.long_context_above);
    let text = offer::rows_toml(&offers.iter().collect::<Vec<_>>(), &rows);
    // What is written must read back as configuration over the one it priced (a file's own
    // inline `price = { ... }` table cannot take rows appended after it: said, not hidden).
    let over = match &args.config {
        Some(path) => format!("{}\n{text}", std::fs::read_to_string(path)?),
        None => text.clone(),
    };
    Config::from_toml_str(&over).context(
        "the rows do not read back over the configuration (write a model's price as a [models.\"id\".price] table, not inline, to add rows to it)",
    )?;
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "wrote {} rows for {} models to {}",
                rows.rows.values().map(Vec::len).sum::<usize>(),
                rows.rows.len(),
                path.display()
            );
        }
        None => print!("{text}"),
    }
    Ok(())
}
