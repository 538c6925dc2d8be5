//! The model file: `LANEWAYC`, a format version, a JSON header (variants and [`ModelInfo`]),
//! each head's bias and weights as little-endian `f32`, and an XXH3-64 checksum of all that.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::{Classifier, ClassifierError, DENSE, Head, ModelInfo};

const MAGIC: &[u8; 8] = b"LANEWAYC";
/// The format version written and read by this build.
pub(super) const FORMAT_VERSION: u16 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    variants: Vec<String>,
    info: ModelInfo,
    /// A gap head follows the variants' heads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    gap: bool,
}

fn corrupt(why: impl Into<String>) -> ClassifierError {
    ClassifierError::Corrupt(why.into())
}

impl Classifier {
    /// The model as a file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = serde_json::to_vec(&Header {
            variants: self.heads.iter().map(|h| h.variant.clone()).collect(),
            info: self.info.clone(),
            gap: self.gap.is_some(),
        })
        .expect("the header serialises");
        let mut out = Vec::with_capacity(
            22 + header.len()
                + self
                    .heads
                    .iter()
                    .map(|h| 4 + 4 * h.weights.len())
                    .sum::<usize>(),
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        for h in self.heads.iter().chain(&self.gap) {
            out.extend_from_slice(&h.bias.to_le_bytes());
            for w in &h.weights {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        let sum = xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Reads a model from a file's bytes, checking everything: magic, version, checksum,
    /// header, sizes, and that every number is finite.
    pub fn from_bytes(bytes: &[u8]) -> Result<Classifier, ClassifierError> {
        if bytes.len() < 22 || &bytes[..8] != MAGIC {
            return Err(corrupt("it does not start with the LANEWAYC signature"));
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != FORMAT_VERSION {
            return Err(ClassifierError::Version {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        if xxh3_64(body).to_le_bytes() != sum {
            return Err(corrupt(
                "checksum mismatch: the file is damaged or truncated",
            ));
        }
        let header_len = u32::from_le_bytes(body[10..14].try_into().expect("4 bytes")) as usize;
        let header_bytes = body
            .get(14..14 + header_len)
            .ok_or_else(|| corrupt("the header is longer than the file"))?;
        let header: Header =
            serde_json::from_slice(header_bytes).map_err(|e| corrupt(format!("header: {e}")))?;
        let mut info = header.info;
        if let Some(b) = &mut info.blend {
            // Out of range is refused below, unchanged.
            let (weight, math) = (b.model_weight, b.math_weight);
            if (0.0..=1.0).contains(&weight) && math.is_none_or(|w| (0.0..=1.0).contains(&w)) {
                b.set_weights(weight, math);
            }
        }
        if info.features != super::FEATURES_VERSION {
            return Err(ClassifierError::Features {
                found: info.features,
                supported: super::FEATURES_VERSION,
            });
        }
        if !(8..=24).contains(&info.bits) {
            return Err(corrupt(format!("bits = {} is outside 8..=24", info.bits)));
        }
        if let Some(n) = &info.novelty {
            if n.seen.len() != (1usize << info.bits).div_ceil(64) {
                return Err(corrupt(format!(
                    "the novelty bitset holds {} words where 2^{} buckets need {}",
                    n.seen.len(),
                    info.bits,
                    (1usize << info.bits).div_ceil(64)
                )));
            }
            if n.calibration
                .is_some_and(|c| c.iter().any(|x| !x.is_finite()))
            {
                return Err(corrupt("the novelty calibration has a non-finite weight"));
            }
        }
        if header.variants.len() < 2 {
            return Err(corrupt("a model needs at least two variants"));
        }
        let embedding_dims = match &info.embedding {
            None => 0,
            Some(e) => {
                let table = super::StaticTable::builtin();
                if e.table != format!("{:016x}", table.id()) {
                    return Err(ClassifierError::Table {
                        found: e.table.clone(),
                        shipped: format!("{:016x}", table.id()),
                    });
                }
                if e.dims() != table.dims() || e.std.len() != e.dims() {
                    return Err(corrupt(format!(
                        "an embedding block of {} means and {} deviations for a table of {} dimensions",
                        e.dims(),
                        e.std.len(),
                        table.dims()
                    )));
                }
                if !e.mean.iter().chain(&e.std).all(|x| x.is_finite()) {
                    return Err(corrupt("the embedding block holds a non-finite number"));
                }
                e.dims()
            }
        };
        let per_head = (1usize << info.bits) + DENSE + embedding_dims;
        let mut rest = &body[14 + header_len..];
        let stored = header.variants.len() + usize::from(header.gap);
        if rest.len() != stored * (per_head + 1) * 4 {
            return Err(corrupt(format!(
                "{} bytes of weights where {stored} heads x {} values need {}",
                rest.len(),
                per_head + 1,
                stored * (per_head + 1) * 4
            )));
        }
        let mut take = || {
            let (v, tail) = rest.split_at(4);
            rest = tail;
            f32::from_le_bytes(v.try_into().expect("4 bytes"))
        };
        let mut heads = Vec::with_capacity(stored);
        let gap = header.gap.then(|| "gap".to_string());
        for variant in header.variants.into_iter().chain(gap) {
            let bias = take();
            let weights: Vec<f32> = (0..per_head).map(|_| take()).collect();
            if !bias.is_finite() || weights.iter().any(|w| !w.is_finite()) {
                return Err(corrupt(format!("head {variant:?} has a non-finite weight")));
            }
            heads.push(Head {
                variant,
                bias,
                weights,
            });
        }
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !finite(&info.dense_mean) || !finite(&info.dense_std) || !finite(&info.loss_percentiles)
        {
            return Err(corrupt("the header holds a non-finite number"));
        }
        if let Some(b) = &info.blend {
            let ok = |x: f32| (0.0..=1.0).contains(&x);
            if !ok(b.model_weight)
                || !b.math_weight.is_none_or(ok)
                || !b.ranks.iter().all(|(l, n)| ok(*l) && ok(*n))
            {
                return Err(corrupt("the blend holds a value outside 0..=1"));
            }
            if !b.math.is_empty() && b.math.len() != b.ranks.len() {
                return Err(corrupt("the blend's kinds do not match its ranks"));
            }
        }
        if info
            .novelty_threshold
            .is_some_and(|t| !(0.0..=1.0).contains(&t))
        {
            return Err(corrupt("the novelty threshold is outside 0..=1"));
        }
        if !finite(&info.quality_lost_by_share) {
            return Err(corrupt("the header holds a non-finite quality loss"));
        }
        if info.loss_percentiles.windows(2).any(|w| w[0] > w[1]) {
            return Err(corrupt("loss percentiles are not in order"));
        }
        let gap = if header.gap { heads.pop() } else { None };
        Ok(Classifier {
            info,
            heads,
            gap,
            reads_words: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// A model file with bytes flipped, cut or inserted anywhere: refused with a reason
        /// (the checksum, the header, a length), never loaded wrong and never a panic.
        #[test]
        fn mutated_model_files_are_refused_not_panicked_on(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        ) {
            let good = tiny().to_bytes();
            let mut bytes = good.clone();
            for (at, byte, op) in edits {
                let i = at.index(bytes.len().max(1));
                match op {
                    0 if !bytes.is_empty() => bytes[i] ^= byte | 1,
                    1 => bytes.truncate(i),
                    _ => bytes.insert(i.min(bytes.len()), byte),
                }
            }
            if bytes != good {
                prop_assert!(Classifier::from_bytes(&bytes).is_err());
            }
        }
    }

    fn tiny() -> Classifier {
        let per_head = (1 << 8) + DENSE;
        Classifier {
            info: ModelInfo {
                features: crate::classifier::FEATURES_VERSION,
                bits: 8,
                dense_mean: [0.0; DENSE],
                dense_std: [1.0; DENSE],
                trained_on: "test".into(),
                rows: 2,
                seed: 7,
                loss_percentiles: vec![-0.1, 0.0, 0.2],
                held_out: None,
                length_percentiles: vec![1.0, 2.0, 3.0],
                novelty: Some(crate::classifier::Novelty {
                    seen: vec![u64::MAX, 0, 1, 2],
                    calibration: Some([-1.0, 2.0, 0.5]),
                }),
                quality_lost_by_share: vec![0.2, 0.1, 0.0],
                quality_lost_measured_on: "test".into(),
                blend: Some(crate::classifier::Blend::new(
                    0.5,
                    Some(0.2),
                    vec![(0.1, 0.9), (0.5, 0.5)],
                    vec![false, true],
                )),
                novelty_threshold: Some(0.7),
                embedding: None,
            },
            heads: vec![
                Head {
                    variant: "small".into(),
                    bias: 0.5,
                    weights: vec![0.25; per_head],
                },
                Head {
                    variant: "large".into(),
                    bias: 1.5,
                    weights: vec![-0.25; per_head],
                },
            ],
            gap: Some(Head {
                variant: "gap".into(),
                bias: -0.5,
                weights: vec![0.125; per_head],
            }),
            reads_words: Default::default(),
        }
    }

    #[test]
    fn round_trips() {
        let m = tiny();
        assert_eq!(Classifier::from_bytes(&m.to_bytes()).unwrap(), m);
    }

    #[test]
    fn damage_is_detected_and_named() {
        let bytes = tiny().to_bytes();
        let mut flipped = bytes.clone();
        flipped[40] ^= 0x10;
        let e = Classifier::from_bytes(&flipped).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
        let e = Classifier::from_bytes(&bytes[..bytes.len() / 2])
            .unwrap_err()
            .to_string();
        assert!(e.contains("checksum"), "{e}");
        let e = Classifier::from_bytes(b"{\"not\": \"a model\"}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("signature"), "{e}");
        let mut newer = bytes.clone();
        newer[8] = 9;
        assert_eq!(
            Classifier::from_bytes(&newer).unwrap_err(),
            ClassifierError::Version {
                found: 9,
                supported: FORMAT_VERSION
            }
        );
    }

    #[test]
    fn a_model_of_another_feature_extractor_is_refused() {
        let mut m = tiny();
        m.info.features = 1;
        let e = Classifier::from_bytes(&m.to_bytes()).unwrap_err();
        assert_eq!(
            e,
            ClassifierError::Features {
                found: 1,
                supported: crate::classifier::FEATURES_VERSION
            }
        );
        assert!(e.to_string().contains("retrain"), "{e}");
    }

    #[test]
    fn a_valid_checksum_over_bad_content_is_still_refused() {
        let mut m = tiny();
        m.heads[1].weights[3] = f32::NAN;
        let e = Classifier::from_bytes(&m.to_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("non-finite"), "{e}");
        let mut m = tiny();
        m.heads.pop();
        let e = Classifier::from_bytes(&m.to_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("two variants"), "{e}");
    }
}
