//! Training and evaluation data: prompts with, per variant, whether its answer was good enough.
//!
//! Two shapes are read:
//! - CSV with a `prompt` column and one column per variant holding `True`/`False` (or a score,
//!   with a pass mark), as in RouteLLM's evaluation data; other columns (response texts) are
//!   ignored. A directory stands for the `.csv` files in it.
//! - JSONL, one object per line: `{"prompt": "...", "outcomes": {"small": false, "large": 8.5}}`.
//!
//! Rows can be split deterministically by a hash of the prompt ([`is_held_out`]).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::ClassifierError;

/// One prompt and what each variant made of it (`None`: not measured).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The prompt, as read.
    pub prompt: String,
    /// Per variant of the [`Dataset`], in its order.
    pub outcomes: Vec<Option<bool>>,
    /// Which input it came from (a directory's or file's name), for per-source figures.
    pub source: String,
}

/// Rows with their variants, cheapest (weakest) first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    /// The variants' names, cheapest (weakest) first: the order of each row's `outcomes`.
    pub variants: Vec<String>,
    /// The rows, in the order read (excluded ones left out).
    pub rows: Vec<Row>,
    /// Rows dropped because their prompt was in an exclusion list.
    pub excluded: usize,
}

/// How to read data.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Variant order, cheapest first; by default, ascending share of good outcomes.
    pub variants: Option<Vec<String>>,
    /// Scores at or above this are good enough; required when outcomes are scores.
    pub pass_mark: Option<f64>,
    /// JSONL files of prompts to drop (`prompt` or `eval_prompt` fields), such as RouteLLM's
    /// `contaminated_prompts.jsonl`.
    pub exclude: Vec<PathBuf>,
}

/// Which part of the data to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Split {
    /// The 80% not held out.
    #[default]
    Train,
    /// The 20% held out, by [`is_held_out`].
    HeldOut,
    /// Every row.
    All,
}

impl std::str::FromStr for Split {
    type Err = ClassifierError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "train" => Ok(Split::Train),
            "held-out" | "heldout" | "test" => Ok(Split::HeldOut),
            "all" => Ok(Split::All),
            other => Err(ClassifierError::Data(format!(
                "unknown split {other:?}: expected train, held-out or all"
            ))),
        }
    }
}

/// Whether a prompt is in the held-out 20%: the first eight bytes of its SHA-256, as a
/// big-endian integer, modulo 100, below 20.
pub fn is_held_out(prompt: &str) -> bool {
    let d = Sha256::digest(prompt.as_bytes());
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes")) % 100 < 20
}

impl Dataset {
    /// Reads every path (a CSV or JSONL file, or a directory of CSV files).
    pub fn load(paths: &[PathBuf], opts: &LoadOptions) -> Result<Dataset, ClassifierError> {
        let excluded = exclusions(&opts.exclude)?;
        let mut raw: Vec<RawRow> = Vec::new();
        for path in paths {
            let source = path
                .file_name()
                .map(|s| s.to_string_lossy())
                .map(|s| {
                    let s = s.strip_suffix(".gz").unwrap_or(&s);
                    match s.rsplit_once('.') {
                        Some((stem, _)) if !path.is_dir() => stem.to_string(),
                        _ => s.to_string(),
                    }
                })
                .unwrap_or_default();
            for file in files_of(path)? {
                let text = read_text(&file)?;
                let name = file.display().to_string();
                // `x.jsonl.gz` is read as `x.jsonl`.
                let inner = if file.extension().is_some_and(|e| e == "gz") {
                    file.with_extension("")
                } else {
                    file.clone()
                };
                let is_jsonl = inner
                    .extension()
                    .is_some_and(|e| e == "jsonl" || e == "json");
                let rows = if is_jsonl {
                    read_jsonl(&text, &name, opts.pass_mark)?
                } else {
                    read_csv(&text, &name, opts.pass_mark)?
                };
                raw.extend(rows.into_iter().map(|(prompt, outcomes)| RawRow {
                    prompt,
                    outcomes,
                    source: source.clone(),
                }));
            }
        }
        let before = raw.len();
        raw.retain(|r| !excluded.contains(&r.prompt));
        let dropped = before - raw.len();
        let variants = order_variants(&raw, opts.variants.as_deref())?;
        let rows = raw
            .into_iter()
            .map(|r| Row {
                outcomes: variants
                    .iter()
                    .map(|v| r.outcomes.get(v).copied())
                    .collect(),
                prompt: r.prompt,
                source: r.source,
            })
            .collect();
        Ok(Dataset {
            variants,
            rows,
            excluded: dropped,
        })
    }

    /// The rows of one split.
    pub fn split(&self, split: Split) -> Dataset {
        Dataset {
            variants: self.variants.clone(),
            rows: self
                .rows
                .iter()
                .filter(|r| match split {
                    Split::All => true,
                    Split::Train => !is_held_out(&r.prompt),
                    Split::HeldOut => is_held_out(&r.prompt),
                })
                .cloned()
                .collect(),
            excluded: self.excluded,
        }
    }

    /// The same rows over two variants, `weak` and `strong`: each row's outcomes of its own
    /// source's weakest and strongest variant (by that source's pass rates). Heads map to
    /// variants by capability order, so outcomes of different model pairs train and evaluate
    /// one two-head model. Rows of a source with fewer than two variants are left out.
    pub fn by_capability_order(&self) -> Dataset {
        let mut rows = Vec::new();
        for source in self.sources() {
            let of_source: Vec<&Row> = self.rows.iter().filter(|r| r.source == source).collect();
            let mut rated: Vec<(f64, usize)> = (0..self.variants.len())
                .filter_map(|v| {
                    let seen: Vec<bool> = of_source.iter().filter_map(|r| r.outcomes[v]).collect();
                    (!seen.is_empty()).then(|| {
                        let good = seen.iter().filter(|g| **g).count();
                        (good as f64 / seen.len() as f64, v)
                    })
                })
                .collect();
            if rated.len() < 2 {
                continue;
            }
            rated.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let (weak, strong) = (rated[0].1, rated[rated.len() - 1].1);
            rows.extend(of_source.into_iter().map(|r| Row {
                prompt: r.prompt.clone(),
                outcomes: vec![r.outcomes[weak], r.outcomes[strong]],
                source: r.source.clone(),
            }));
        }
        Dataset {
            variants: vec!["weak".into(), "strong".into()],
            rows,
            excluded: self.excluded,
        }
    }

    /// The rows of every source but `source`, and of `source` alone.
    pub fn without_source(&self, source: &str) -> (Dataset, Dataset) {
        let part = |keep: bool| Dataset {
            variants: self.variants.clone(),
            rows: self
                .rows
                .iter()
                .filter(|r| (r.source == source) != keep)
                .cloned()
                .collect(),
            excluded: self.excluded,
        };
        (part(true), part(false))
    }

    /// The sources, in order of first appearance.
    pub fn sources(&self) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        for r in &self.rows {
            if !seen.contains(&r.source) {
                seen.push(r.source.clone());
            }
        }
        seen
    }
}

/// A prompt and its outcomes by variant name, as read.
type ParsedRow = (String, BTreeMap<String, bool>);

struct RawRow {
    prompt: String,
    outcomes: BTreeMap<String, bool>,
    source: String,
}

/// A data file's text; a `.gz` file is gunzipped.
fn read_text(file: &Path) -> Result<String, ClassifierError> {
    let io = |e: std::io::Error| ClassifierError::Io {
        path: file.display().to_string(),
        reason: e.to_string(),
    };
    let bytes = std::fs::read(file).map_err(io)?;
    if file.extension().is_some_and(|e| e == "gz") {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .map_err(io)?;
        return Ok(text);
    }
    String::from_utf8(bytes).map_err(|e| ClassifierError::Io {
        path: file.display().to_string(),
        reason: format!("not UTF-8 text: {e}"),
    })
}

fn files_of(path: &Path) -> Result<Vec<PathBuf>, ClassifierError> {
    let io = |e: std::io::Error| ClassifierError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    if !path.is_dir() {
        if !path.exists() {
            return Err(ClassifierError::Io {
                path: path.display().to_string(),
                reason: "no such file or directory".into(),
            });
        }
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ClassifierError::Data(format!(
            "{}: the directory holds no .csv files",
            path.display()
        )));
    }
    Ok(files)
}

fn exclusions(files: &[PathBuf]) -> Result<HashSet<String>, ClassifierError> {
    let mut out = HashSet::new();
    for file in files {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).map_err(|e| ClassifierError::Io {
            path: name.clone(),
            reason: e.to_string(),
        })?;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let row_err = |reason: String| ClassifierError::Row {
                file: name.clone(),
                line: i + 1,
                reason,
            };
            let v: serde_json::Value =
                serde_json::from_str(line).map_err(|e| row_err(e.to_string()))?;
            let prompt = v
                .get("eval_prompt")
                .or_else(|| v.get("prompt"))
                .and_then(|p| p.as_str())
                .ok_or_else(|| row_err("no \"prompt\" or \"eval_prompt\" string".into()))?;
            out.insert(prompt.to_string());
        }
    }
    Ok(out)
}

fn outcome(value: &str, pass_mark: Option<f64>) -> Result<bool, String> {
    match value.trim() {
        "True" | "true" | "TRUE" => return Ok(true),
        "False" | "false" | "FALSE" => return Ok(false),
        _ => {}
    }
    let score: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("{value:?} is neither a boolean nor a score"))?;
    let mark = pass_mark.ok_or_else(|| {
        format!("{value:?} is a score: give the pass mark (--pass-mark) that counts as good enough")
    })?;
    Ok(score >= mark)
}

fn read_csv(
    text: &str,
    file: &str,
    pass_mark: Option<f64>,
) -> Result<Vec<ParsedRow>, ClassifierError> {
    let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
    let headers = reader
        .headers()
        .map_err(|e| ClassifierError::Row {
            file: file.into(),
            line: 1,
            reason: e.to_string(),
        })?
        .clone();
    let prompt_col =
        headers
            .iter()
            .position(|h| h == "prompt")
            .ok_or_else(|| ClassifierError::Row {
                file: file.into(),
                line: 1,
                reason: format!(
                    "no \"prompt\" column (columns: {})",
                    headers.iter().collect::<Vec<_>>().join(", ")
                ),
            })?;
    let mut outcome_cols: Option<Vec<usize>> = None;
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        // Line numbers count the header as row 1.
        let line = record
            .as_ref()
            .ok()
            .and_then(|r| r.position())
            .map_or(i + 2, |p| p.line() as usize);
        let row_err = |reason: String| ClassifierError::Row {
            file: file.into(),
            line,
            reason,
        };
        let record = record.map_err(|e| row_err(e.to_string()))?;
        // The outcome columns are those whose first row holds a boolean or a number.
        let cols = outcome_cols.get_or_insert_with(|| {
            (0..record.len())
                .filter(|&c| c != prompt_col)
                .filter(|&c| outcome(&record[c], Some(0.0)).is_ok())
                .collect()
        });
        if cols.is_empty() {
            return Err(row_err(
                "no outcome columns (True/False or scores) after the prompt".into(),
            ));
        }
        let prompt = record.get(prompt_col).unwrap_or_default().to_string();
        let mut outcomes = BTreeMap::new();
        for &c in cols.iter() {
            let v = record
                .get(c)
                .ok_or_else(|| row_err(format!("column {:?} is missing", &headers[c])))?;
            let good = outcome(v, pass_mark)
                .map_err(|e| row_err(format!("column {:?}: {e}", &headers[c])))?;
            outcomes.insert(headers[c].to_string(), good);
        }
        rows.push((prompt, outcomes));
    }
    Ok(rows)
}

fn read_jsonl(
    text: &str,
    file: &str,
    pass_mark: Option<f64>,
) -> Result<Vec<ParsedRow>, ClassifierError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row_err = |reason: String| ClassifierError::Row {
            file: file.into(),
            line: i + 1,
            reason,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| row_err(e.to_string()))?;
        let prompt = v
            .get("prompt")
            .and_then(|p| p.as_str())
            .ok_or_else(|| row_err("no \"prompt\" string".into()))?;
        let map = v
            .get("outcomes")
            .and_then(|o| o.as_object())
            .ok_or_else(|| {
                row_err("no \"outcomes\" object (variant -> boolean or score)".into())
            })?;
        let mut outcomes = BTreeMap::new();
        for (variant, value) in map {
            let good = match value {
                serde_json::Value::Bool(b) => *b,
                serde_json::Value::Number(n) => outcome(&n.to_string(), pass_mark)
                    .map_err(|e| row_err(format!("{variant:?}: {e}")))?,
                other => {
                    return Err(row_err(format!(
                        "{variant:?}: {other} is neither a boolean nor a score"
                    )));
                }
            };
            outcomes.insert(variant.clone(), good);
        }
        rows.push((prompt.to_string(), outcomes));
    }
    Ok(rows)
}

fn order_variants(
    rows: &[RawRow],
    given: Option<&[String]>,
) -> Result<Vec<String>, ClassifierError> {
    let mut stats: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in rows {
        for (v, good) in &r.outcomes {
            let s = stats.entry(v.as_str()).or_default();
            s.0 += usize::from(*good);
            s.1 += 1;
        }
    }
    if rows.is_empty() {
        return Err(ClassifierError::Data("the data holds no rows".into()));
    }
    let variants: Vec<String> = match given {
        Some(order) => {
            for v in order {
                if !stats.contains_key(v.as_str()) {
                    return Err(ClassifierError::Data(format!(
                        "variant {v:?} is not in the data (variants: {})",
                        stats.keys().copied().collect::<Vec<_>>().join(", ")
                    )));
                }
            }
            order.to_vec()
        }
        None => {
            let mut v: Vec<(&str, f64)> = stats
                .iter()
                .map(|(name, (good, n))| (*name, *good as f64 / *n as f64))
                .collect();
            v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
            v.into_iter().map(|(n, _)| n.to_string()).collect()
        }
    };
    if variants.len() < 2 {
        return Err(ClassifierError::Data(format!(
            "the data has {} variant(s); routing needs at least two",
            variants.len()
        )));
    }
    Ok(variants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("laneway-data-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn csv_in_routellm_shape_ignores_text_columns_and_orders_by_pass_rate() {
        let d = tmp("csv");
        let f = write(
            &d,
            "g.csv",
            "prompt,strong,weak,strong_response\n\"Q1, with comma\",True,False,\"long\ntext\"\nQ2,True,True,x\n",
        );
        let data = Dataset::load(&[f], &LoadOptions::default()).unwrap();
        assert_eq!(data.variants, ["weak", "strong"]);
        assert_eq!(data.rows[0].prompt, "Q1, with comma");
        assert_eq!(data.rows[0].outcomes, [Some(false), Some(true)]);
        assert_eq!(data.rows[1].source, "g");
    }

    #[test]
    fn jsonl_scores_need_a_pass_mark_and_errors_name_the_row() {
        let d = tmp("jsonl");
        let f = write(
            &d,
            "r.jsonl",
            "{\"prompt\": \"a\", \"outcomes\": {\"s\": true, \"l\": 8}}\n\n{\"prompt\": \"b\", \"outcomes\": {\"s\": 3, \"l\": 9.5}}\n",
        );
        let e = Dataset::load(std::slice::from_ref(&f), &LoadOptions::default()).unwrap_err();
        assert!(matches!(e, ClassifierError::Row { line: 1, .. }), "{e}");
        assert!(e.to_string().contains("pass mark"), "{e}");
        let opts = LoadOptions {
            pass_mark: Some(7.0),
            variants: Some(vec!["s".into(), "l".into()]),
            ..Default::default()
        };
        let data = Dataset::load(std::slice::from_ref(&f), &opts).unwrap();
        assert_eq!(data.rows[1].outcomes, [Some(false), Some(true)]);

        let bad = write(
            &d,
            "bad.jsonl",
            "{\"prompt\": \"a\", \"outcomes\": {\"s\": true, \"l\": true}}\n{\"prompt\": 5}\n",
        );
        let e = Dataset::load(&[bad], &LoadOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}, row 2: no \"prompt\" string",
                d.join("bad.jsonl").display()
            )
        );
    }

    #[test]
    fn a_malformed_csv_value_names_row_and_column() {
        let d = tmp("badcsv");
        let f = write(&d, "m.csv", "prompt,a,b\nQ1,True,False\nQ2,True,maybe\n");
        let e = Dataset::load(&[f], &LoadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("row 3") && e.contains("\"b\"") && e.contains("maybe"),
            "{e}"
        );
    }

    #[test]
    fn exclusions_drop_prompts_and_unknown_variants_are_named() {
        let d = tmp("excl");
        let f = write(
            &d,
            "x.csv",
            "prompt,a,b\nkeep,True,False\ndrop me,True,True\n",
        );
        let x = write(
            &d,
            "c.jsonl",
            "{\"eval_prompt\": \"drop me\", \"train_prompt\": \"z\"}\n",
        );
        let opts = LoadOptions {
            exclude: vec![x],
            ..Default::default()
        };
        let data = Dataset::load(std::slice::from_ref(&f), &opts).unwrap();
        assert_eq!((data.rows.len(), data.excluded), (1, 1));
        let opts = LoadOptions {
            variants: Some(vec!["a".into(), "c".into()]),
            ..Default::default()
        };
        let e = Dataset::load(&[f], &opts).unwrap_err().to_string();
        assert!(e.contains("\"c\" is not in the data"), "{e}");
    }

    #[test]
    fn the_split_is_stable_and_about_a_fifth() {
        let held = (0..5000)
            .filter(|i| is_held_out(&format!("prompt {i}")))
            .count();
        assert!((900..1100).contains(&held), "{held}");
        assert_eq!(is_held_out("prompt 1"), is_held_out("prompt 1"));
    }
}
