//! Durations and counts at Laneway's edges: bounded, never wrapping.

/// The longest duration Laneway accepts anywhere (a deadline, a back-off, a Retry-After): a
/// year. Longer values are refused (or clamped, where a service sent them), so that adding one
/// to an instant can never overflow.
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(366 * 24 * 3600);

/// Milliseconds as a [`std::time::Duration`], or why not: negative, not finite, or above
/// [`MAX_DURATION`].
pub fn duration_from_millis(ms: f64) -> std::result::Result<std::time::Duration, String> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(format!(
            "milliseconds must be a finite number >= 0, got {ms}"
        ));
    }
    if ms > MAX_DURATION.as_secs_f64() * 1000.0 {
        return Err(format!(
            "milliseconds must be at most {} (a year), got {ms}",
            MAX_DURATION.as_millis()
        ));
    }
    Ok(std::time::Duration::from_secs_f64(ms / 1000.0))
}

/// Seconds a service sent (a `Retry-After` header), clamped into `[0, MAX_DURATION]`.
pub fn clamped_secs(secs: f64) -> Option<std::time::Duration> {
    if secs.is_nan() {
        return None;
    }
    Some(std::time::Duration::from_secs_f64(
        secs.clamp(0.0, MAX_DURATION.as_secs_f64()),
    ))
}

/// A token count a service sent, saturated into `u32` (a count beyond it is nonsense, never a
/// reason to wrap or panic).
pub fn token_count(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Durations as milliseconds (a float), in configuration files and the bindings' schema.
pub mod serde_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes a duration as milliseconds (a float).
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    /// Reads milliseconds (a float) as a duration, refusing what
    /// [`duration_from_millis`](super::duration_from_millis) refuses.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        crate::types::units::duration_from_millis(ms).map_err(serde::de::Error::custom)
    }
}

/// Optional durations as milliseconds.
pub mod serde_opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes a duration as milliseconds (a float), and `None` as none (`null` in JSON).
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_secs_f64() * 1000.0)),
            None => s.serialize_none(),
        }
    }

    /// Reads milliseconds (a float), or none, as an optional duration, refusing what
    /// [`duration_from_millis`](super::duration_from_millis) refuses.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let ms: Option<f64> = Option::deserialize(d)?;
        ms.map(crate::types::units::duration_from_millis)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}
