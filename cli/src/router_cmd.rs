//! `laneway router train | eval | calibrate`: the complexity classifier on your own data.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use laneway::classifier::Classifier;
use laneway::classifier::data::{Dataset, LoadOptions, Split};
use laneway::classifier::eval::{self, Summary};
use laneway::classifier::train::{TrainOptions, train};

#[derive(Debug, Subcommand)]
pub(crate) enum RouterCommand {
    /// Trains a classifier and writes the model file.
    Train(TrainArgs),
    /// Prints the quality-versus-cost curve, APGR and CPT of a model next to baselines.
    Eval(EvalArgs),
    /// Prints the loss threshold that meets a target on the data.
    Calibrate(CalibrateArgs),
    /// Prints what families in shadow mode (`router = { shadow = true }`) would have done
    /// routed, from a metrics JSON file (`Router::metrics()` or `Router::shadow_report()`
    /// serialised; `-` reads standard input).
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ReportArgs {
    /// The JSON file: a metrics snapshot with a `shadow` section, or a shadow report.
    file: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// Where the data comes from and how to read it.
#[derive(Debug, Args)]
pub(crate) struct DataArgs {
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
pub(crate) struct TrainArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The model file to write.
    #[arg(long)]
    out: PathBuf,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    training: TrainingArgs,
    #[command(flatten)]
    operating: OperatingArgs,
}

/// How to train (`router train`, and `router eval --leave-one-source-out`).
#[derive(Debug, Args)]
pub(crate) struct TrainingArgs {
    /// Word buckets are 2^bits.
    #[arg(long, default_value_t = 15)]
    bits: u32,
    /// Inverse regularisation strength.
    #[arg(long, default_value_t = TrainOptions::default().c)]
    c: f64,
    #[arg(long, default_value_t = TrainOptions::default().steps)]
    steps: usize,
    /// Leave out the static sentence vector (the MiniLM token table).
    #[arg(long)]
    no_embedding: bool,
    /// Read the hashed word counts too (they fit the training sources' vocabulary and, held
    /// out, routed worse).
    #[arg(long)]
    words: bool,
    /// Weigh every row alike, not every source alike.
    #[arg(long)]
    no_source_balance: bool,
    /// Score the weakest variant by the difference of the two variants' heads, not by a gap
    /// head (P(only the strongest answers well)).
    #[arg(long)]
    no_gap: bool,
    /// Read every dense feature (shape and cue-word counts), not only the prompt's length.
    #[arg(long)]
    all_dense: bool,
}

impl TrainingArgs {
    fn options(&self, seed: u64, trained_on: String) -> TrainOptions {
        TrainOptions {
            bits: self.bits,
            c: self.c,
            steps: self.steps,
            seed,
            trained_on,
            embedding: !self.no_embedding,
            words: self.words,
            balance_sources: !self.no_source_balance,
            gap: !self.no_gap,
            length_only: !self.all_dense,
            ..TrainOptions::default()
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
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
    #[command(flatten)]
    operating: OperatingArgs,
}

/// Where the router's default threshold sits and what a call costs.
#[derive(Debug, Args)]
pub(crate) struct OperatingArgs {
    /// The quality loss (0..1, against always the strongest variant) the default threshold
    /// is chosen within, as a family's `quality_loss_budget`.
    #[arg(long, default_value_t = eval::DEFAULT_QUALITY_LOSS_BUDGET)]
    quality_loss_budget: f64,
    /// A call to the weak variant costs this share of one to the strong (for "cost saved").
    #[arg(long, default_value_t = eval::DEFAULT_COST_RATIO)]
    cost_ratio: f64,
}

#[derive(Debug, Args)]
pub(crate) struct CalibrateArgs {
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

pub(crate) fn run(cmd: RouterCommand) -> Result<()> {
    match cmd {
        RouterCommand::Train(a) => train_cmd(a),
        RouterCommand::Eval(a) => eval_cmd(a),
        RouterCommand::Calibrate(a) => calibrate_cmd(a),
        RouterCommand::Report(a) => report_cmd(a),
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
    // What each share of strong calls costs in quality, measured on data the model did not
    // see: each source held out in turn when there are several, else the held-out split.
    let eval_opts = eval::Options {
        seed: a.seed,
        default_share: None,
        cost_ratio: a.operating.cost_ratio,
    };
    let by_source = all.by_capability_order().sources().len();
    if by_source >= 2 {
        eprintln!(
            "measuring held-out quality by share: each of {by_source} sources held out in turn ..."
        );
        let found =
            eval::leave_one_source_out(&all, &opts, &eval_opts, a.operating.quality_loss_budget)?;
        print_held_out_by_source(&found, &eval_opts);
        model.info.quality_lost_by_share = found.mean_curve().iter().map(|x| *x as f32).collect();
        eval::set_blend(&mut model, &found.blend);
        model.info.quality_lost_measured_on = format!(
            "leave-one-source-out over {} (each source alike; the heads' weakest and strongest variants)",
            found
                .curves
                .iter()
                .map(|(s, _)| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    } else if split == Split::Train {
        let held = all.split(Split::HeldOut);
        model.info.quality_lost_by_share = eval::quality_lost_by_share(&held, &model)?
            .iter()
            .map(|x| *x as f32)
            .collect();
        model.info.quality_lost_measured_on = "the 20% held-out split".into();
    }
    if split == Split::Train {
        let held = all.split(Split::HeldOut);
        let options = eval::Options {
            default_share: model.share_for_quality_loss(a.operating.quality_loss_budget as f32),
            ..eval_opts.clone()
        };
        let summary = eval::evaluate_with(&held, &model, &options)?;
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
    let options = eval::Options {
        seed: a.seed,
        default_share: model.share_for_quality_loss(a.operating.quality_loss_budget as f32),
        cost_ratio: a.operating.cost_ratio,
    };
    let summary = eval::evaluate_with(&data, &model, &options)?;
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
    let eval_opts = eval::Options {
        seed: a.seed,
        default_share: None,
        cost_ratio: a.operating.cost_ratio,
    };
    let found =
        eval::leave_one_source_out(&data, &opts, &eval_opts, a.operating.quality_loss_budget)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&found)?);
        return Ok(());
    }
    print_held_out_by_source(&found, &eval_opts);
    Ok(())
}

/// The leave-one-source-out tables: the curves' summaries, then the default threshold.
fn print_held_out_by_source(found: &eval::HeldOutBySource, opts: &eval::Options) {
    println!("each source held out in turn (trained on the others), then in distribution:\n");
    println!(
        "{:<18} {:>6} {:>6} {:>7} {:>8} {:>8} {:>8} {:>8} {:>10} {:>9} {:>8} {:>10}",
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
        "novelty",
        "blend"
    );
    for s in &found.sections {
        let apgr = |name: &str| s.router(name).map_or(f64::NAN, |r| r.apgr);
        let cpt = s.router("laneway").map_or(f64::NAN, |r| r.cpt50);
        let novelty = match s.novelty {
            Some(n) => format!("{n:.2}{}", if s.fell_back { "*" } else { "" }),
            None => "-".into(),
        };
        println!(
            "{:<18} {:>6} {:>6.3} {:>7.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>+10.3} {:>8.1}% {:>8} {:>10}",
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
            novelty,
            s.blend.map_or("-".into(), |b| format!(
                "{:.1} / {:.1} / {:.1}",
                b.model_weight, b.math_weight, b.novelty_threshold
            ))
        );
    }
    println!(
        "\nblend: the model's weight against prompt length / its weight for prompts of the math kind / the novelty above which length alone routes, chosen on the other sources"
    );
    println!(
        "\nlaneway: as routed (* novelty above {}: the prompt-length fallback); model: the model's scores alone",
        eval::NOVELTY_THRESHOLD
    );
    println!(
        "\nat the default threshold (the smallest share of training prompts to strong whose mean held-out loss over the \
         other sources is within {:.3}; in distribution, over all of them: {:.0}%), a weak call costing {:.2} of a strong one:\n",
        found.budget,
        found.default_share * 100.0,
        opts.cost_ratio
    );
    print_operating_header();
    for s in &found.sections {
        print_operating_row(s);
    }
}

fn print_operating_header() {
    println!(
        "{:<18} {:>9} {:>9} {:>8} {:>8} {:>9} {:>10} {:>11} {:>11} {:>11}",
        "rows of",
        "threshold",
        "to strong",
        "quality",
        "best one",
        "lost",
        "cost saved",
        "random lost",
        "length lost",
        "vs length"
    );
}

fn print_operating_row(s: &eval::Section) {
    let Some(p) = &s.at_default else {
        return;
    };
    println!(
        "{:<18} {:>8.0}% {:>8.1}% {:>8.3} {:>8.3} {:>+9.3} {:>9.1}% {:>+11.3} {:>+11.3} {:>+11.3}",
        s.name,
        p.training_share * 100.0,
        p.strong_share * 100.0,
        p.quality,
        s.weak_quality.max(s.strong_quality),
        p.quality_lost,
        p.cost_saved * 100.0,
        p.random_quality_lost,
        p.length_quality_lost,
        p.length_quality_lost - p.quality_lost
    );
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
            let scored = model.score(&r.prompt);
            Some((scored.loss(weak, strong), w, s))
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
        println!(
            "(not the model's variants: scored by its weakest and strongest heads, by capability order)"
        );
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
        if let Some(p) = &section.at_default {
            println!(
                "  at the default threshold ({:.0}% of training prompts to strong): {:.1}% to strong, quality {:.3}, lost {:+.3} (random at that share {:+.3}, length {:+.3}), cost saved {:.1}%",
                p.training_share * 100.0,
                p.strong_share * 100.0,
                p.quality,
                p.quality_lost,
                p.random_quality_lost,
                p.length_quality_lost,
                p.cost_saved * 100.0
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

fn report_cmd(a: ReportArgs) -> Result<()> {
    use laneway::telemetry::shadow::ShadowReport;
    let text = if a.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(&a.file)
            .map_err(|e| anyhow::anyhow!("{}: {e}", a.file.display()))?
    };
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", a.file.display()))?;
    let shadow = value.get("shadow").cloned().unwrap_or(value);
    let report: ShadowReport = if shadow.as_object().is_some_and(|o| o.is_empty()) {
        ShadowReport::default()
    } else {
        serde_json::from_value(shadow).map_err(|e| {
            anyhow::anyhow!(
                "{}: neither a metrics snapshot with a shadow section nor a shadow report: {e}",
                a.file.display()
            )
        })?
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print!("{}", crate::report::shadow_table(&report));
    Ok(())
}
