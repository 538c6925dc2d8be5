//! `laneway router train | eval | calibrate`: the complexity classifier on your own data.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use laneway::classifier::data::{Dataset, LoadOptions, Split};
use laneway::classifier::eval::{self, Summary};
use laneway::classifier::train::{train, TrainOptions};
use laneway::classifier::Classifier;

#[derive(Debug, Subcommand)]
pub enum RouterCommand {
    /// Trains a classifier and writes the model file.
    Train(TrainArgs),
    /// Prints the quality-versus-cost curve, APGR and CPT of a model next to baselines.
    Eval(EvalArgs),
    /// Prints the loss threshold that meets a target on the data.
    Calibrate(CalibrateArgs),
}

/// Where the data comes from and how to read it.
#[derive(Debug, Args)]
pub struct DataArgs {
    /// CSV or JSONL files, or directories of CSV files (repeatable).
    #[arg(long = "data", required = true)]
    data: Vec<PathBuf>,
    /// JSONL files of prompts to drop (`prompt` or `eval_prompt`), e.g. contaminated prompts.
    #[arg(long)]
    exclude: Vec<PathBuf>,
    /// Variant order, cheapest first, comma-separated (default: by ascending pass rate).
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// Scores at or above this count as good enough (for score outcomes).
    #[arg(long)]
    pass_mark: Option<f64>,
    /// Which rows to use: train (80%), held-out (20%, by a hash of the prompt) or all.
    #[arg(long)]
    split: Option<Split>,
    /// Mix sources of different model pairs: each source's weakest and strongest variant (by
    /// its pass rates) become the `weak` and `strong` variants.
    #[arg(long, conflicts_with = "variants")]
    by_capability_order: bool,
}

impl DataArgs {
    /// Every row, in capability order when asked.
    fn load_all(&self) -> Result<Dataset> {
        let data = Dataset::load(
            &self.data,
            &LoadOptions {
                variants: self.variants.clone(),
                pass_mark: self.pass_mark,
                exclude: self.exclude.clone(),
            },
        )?;
        Ok(if self.by_capability_order {
            data.by_capability_order()
        } else {
            data
        })
    }

    /// The rows of `--split`, or of `default_split`.
    fn load(&self, default_split: Split) -> Result<Dataset> {
        Ok(self.load_all()?.split(self.split.unwrap_or(default_split)))
    }
}

#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The model file to write.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    training: TrainingArgs,
}

/// How to train (`router train`, and `router eval --leave-one-source-out`).
#[derive(Debug, Args)]
pub struct TrainingArgs {
    /// Word buckets are 2^bits.
    #[arg(long, default_value_t = 15)]
    bits: u32,
    /// Inverse regularisation strength.
    #[arg(long, default_value_t = 0.3)]
    c: f64,
    #[arg(long, default_value_t = 300)]
    steps: usize,
}

impl TrainingArgs {
    fn options(&self, seed: u64, trained_on: String) -> TrainOptions {
        TrainOptions {
            bits: self.bits,
            c: self.c,
            steps: self.steps,
            seed,
            trained_on,
            ..TrainOptions::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    data: DataArgs,
    /// A model file (default: the model built into Laneway).
    #[arg(long)]
    model: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// The honest protocol: for each source, train on every other source and evaluate on it
    /// (then in distribution: train on the 80% split, evaluate on the 20%), with APGR, CPT(50%)
    /// and the random and prompt-length baselines per source. Sources of different model pairs
    /// mix by capability order (weakest and strongest of each).
    #[arg(long, conflicts_with = "model")]
    leave_one_source_out: bool,
    /// Training options for --leave-one-source-out (as `router train`).
    #[command(flatten)]
    training: TrainingArgs,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    data: DataArgs,
    #[arg(long)]
    model: Option<PathBuf>,
    /// The largest share (0..1) of calls that may go to the strongest variant.
    #[arg(long, conflicts_with = "max_quality_loss")]
    max_strong_share: Option<f64>,
    /// The largest drop in the share of good answers, against always the strongest (0..1).
    #[arg(long)]
    max_quality_loss: Option<f64>,
}

pub fn run(cmd: RouterCommand) -> Result<()> {
    match cmd {
        RouterCommand::Train(a) => train_cmd(a),
        RouterCommand::Eval(a) => eval_cmd(a),
        RouterCommand::Calibrate(a) => calibrate_cmd(a),
    }
}

fn load_model(path: &Option<PathBuf>) -> Result<Classifier> {
    Ok(match path {
        Some(p) => Classifier::load(p)?,
        None => (*Classifier::builtin()).clone(),
    })
}

fn train_cmd(a: TrainArgs) -> Result<()> {
    let split = a.data.split.unwrap_or(Split::Train);
    let all = a.data.load_all()?;
    let rows = all.split(split);
    let sources = rows.sources().join(", ");
    eprintln!(
        "training on {} rows ({sources}; {} excluded), variants {} ...",
        rows.rows.len(),
        all.excluded,
        rows.variants.join(" < ")
    );
    let t = &a.training;
    let opts = t.options(
        a.seed,
        format!(
            "{} rows of {sources}, split {split:?}, bits {}, C {}, {} steps",
            rows.rows.len(),
            t.bits,
            t.c,
            t.steps
        ),
    );
    let mut model = train(&rows, &opts)?;
    if split == Split::Train {
        let held = all.split(Split::HeldOut);
        let summary = eval::evaluate(&held, &model, a.seed)?;
        print_summary(&summary);
        model.info.held_out = Some(summary.without_curves());
    }
    model.save(&a.out)?;
    let size = std::fs::metadata(&a.out).map(|m| m.len()).unwrap_or(0);
    eprintln!("wrote {} ({} KiB)", a.out.display(), size / 1024);
    Ok(())
}

fn eval_cmd(a: EvalArgs) -> Result<()> {
    if a.leave_one_source_out {
        return leave_one_source_out_cmd(&a);
    }
    let model = load_model(&a.model)?;
    let data = a.data.load(Split::HeldOut)?;
    let summary = eval::evaluate(&data, &model, a.seed)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary);
    }
    Ok(())
}

fn leave_one_source_out_cmd(a: &EvalArgs) -> Result<()> {
    let data = a.data.load(Split::All)?;
    let opts = a.training.options(a.seed, String::new());
    let sections = eval::leave_one_source_out(&data, &opts, a.seed)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "sections": sections }))?
        );
        return Ok(());
    }
    println!("each source held out in turn (trained on the others), then in distribution:\n");
    println!(
        "{:<18} {:>6} {:>6} {:>7} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9} {:>8}",
        "held out",
        "rows",
        "weak",
        "strong",
        "laneway",
        "model",
        "random",
        "length",
        "vs length",
        "CPT(50%)",
        "novelty"
    );
    for s in &sections {
        let apgr = |name: &str| s.router(name).map_or(f64::NAN, |r| r.apgr);
        let cpt = s.router("laneway").map_or(f64::NAN, |r| r.cpt50);
        let novelty = match s.novelty {
            Some(n) => format!("{n:.2}{}", if s.fell_back { "*" } else { "" }),
            None => "-".into(),
        };
        println!(
            "{:<18} {:>6} {:>6.3} {:>7.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>+10.3} {:>8.1}% {:>8}",
            s.name,
            s.rows,
            s.weak_quality,
            s.strong_quality,
            apgr("laneway"),
            apgr("model"),
            apgr("random"),
            apgr("prompt-length"),
            apgr("laneway") - apgr("prompt-length"),
            cpt * 100.0,
            novelty
        );
    }
    println!("\nlaneway: as routed (* novelty above {}: the prompt-length fallback); model: the model's scores alone", eval::NOVELTY_THRESHOLD);
    Ok(())
}

fn calibrate_cmd(a: CalibrateArgs) -> Result<()> {
    let model = load_model(&a.model)?;
    let data = a.data.load(Split::All)?;
    let (Some(weak), Some(strong)) = (
        model.head_of(&data.variants[0]),
        model.head_of(&data.variants[data.variants.len() - 1]),
    ) else {
        bail!(
            "the model's variants ({}) do not include the data's weakest and strongest",
            model.variants().collect::<Vec<_>>().join(", ")
        );
    };
    let mut scored: Vec<(f32, bool, bool)> = data
        .rows
        .iter()
        .filter_map(|r| {
            let (w, s) = (r.outcomes[0]?, r.outcomes[data.variants.len() - 1]?);
            let p = model.probabilities(&r.prompt);
            Some((p[strong] - p[weak], w, s))
        })
        .collect();
    if scored.is_empty() {
        bail!("no row has outcomes for both variants");
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    let n = scored.len() as f64;
    let strong_quality = scored.iter().filter(|r| r.2).count() as f64 / n;
    // Quality when the first k (highest loss) go to strong.
    let mut quality = scored.iter().filter(|r| r.1).count() as f64 / n;
    let mut best = None;
    for k in 0..=scored.len() {
        let share = k as f64 / n;
        let ok = match (a.max_strong_share, a.max_quality_loss) {
            (Some(max), _) => share <= max + 1e-12,
            (None, Some(max)) => strong_quality - quality <= max + 1e-12,
            (None, None) => bail!("give --max-strong-share or --max-quality-loss"),
        };
        // The policy keeps a call on the cheaper variant when its loss is at most the
        // threshold: the k highest losses must lie above it, the rest at or below.
        let threshold = match scored.get(k) {
            Some(next) => next.0,
            None => -1.0,
        };
        if a.max_strong_share.is_some() && ok {
            best = Some((threshold, share, quality));
        }
        if a.max_quality_loss.is_some() && ok {
            best = Some((threshold, share, quality));
            break;
        }
        if k < scored.len() {
            quality += (f64::from(u8::from(scored[k].2)) - f64::from(u8::from(scored[k].1))) / n;
        }
    }
    let Some((threshold, share, quality)) = best else {
        bail!("no threshold meets the target on this data");
    };
    // Calls whose expected loss exceeds the threshold go to the strongest variant.
    println!(
        "threshold {:.4}: {:.1}% of calls to {}, quality {:.3} (always {}: {:.3})",
        threshold,
        share * 100.0,
        data.variants[data.variants.len() - 1],
        quality,
        data.variants[data.variants.len() - 1],
        strong_quality
    );
    println!(
        "set it with:  router = {{ threshold = {threshold:.4} }}  in the family's configuration"
    );
    Ok(())
}

fn print_summary(s: &Summary) {
    println!(
        "routing between {} (weak) and {} (strong)",
        s.weak, s.strong
    );
    if s.heads_by_capability_order {
        println!("(not the model's variants: scored by its weakest and strongest heads, by capability order)");
    }
    for section in &s.sections {
        println!(
            "\n{}: {} prompts, weak quality {:.3}, strong quality {:.3}",
            section.name, section.rows, section.weak_quality, section.strong_quality
        );
        if let Some(n) = section.novelty {
            println!(
                "  novelty {n:.2}: laneway {}",
                if section.fell_back {
                    "falls back to prompt length"
                } else {
                    "routes by the model"
                }
            );
        }
        println!(
            "  {:<14} {:>6} {:>8} {:>8}",
            "router", "APGR", "CPT(50%)", "CPT(80%)"
        );
        for r in &section.routers {
            println!(
                "  {:<14} {:>6.3} {:>7.1}% {:>7.1}%",
                r.router,
                r.apgr,
                r.cpt50 * 100.0,
                r.cpt80 * 100.0
            );
        }
        if section.name == "all" {
            println!("  quality at each share of strong calls:");
            print!("  {:<14}", "strong calls");
            for (share, _, _) in &section.routers[0].curve {
                print!(" {:>5.0}%", share * 100.0);
            }
            println!();
            for r in &section.routers {
                print!("  {:<14}", r.router);
                for (_, _, pgr) in &r.curve {
                    print!(" {:>6.3}", eval::quality_at(section, *pgr));
                }
                println!();
            }
        }
    }
}
