//! Geographies ([`Geography`]) and the scope of a cross-region inference profile
//! ([`ProfileScope`]): names that configuration defines, not a fixed list.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A geography: the name of a set of regions that a geographic inference profile keeps
/// requests in, and its profiles' id prefix (`us`, `eu`, `apac`, `jp`, `au`, `ca`, `us-gov`, or
/// one you configure under `[geographies]`).
///
/// A name is 1 to 16 lowercase ASCII letters, digits and hyphens, and not `global` (that is
/// the global profile, which keeps requests in no geography).
///
/// ```
/// use laneway::Geography;
/// let jp: Geography = "jp".parse().unwrap();
/// assert_eq!(jp.as_str(), "jp");
/// assert!(Geography::new("global").is_err());
/// assert!(Geography::new("US").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Geography(Arc<str>);

/// Why a string is not a geography's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a geography name: {why}")]
pub struct GeographyNameError {
    /// The string given.
    pub name: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl Geography {
    /// The geography of this name.
    pub fn new(name: &str) -> Result<Self, GeographyNameError> {
        let fail = |why| {
            Err(GeographyNameError {
                name: name.to_string(),
                why,
            })
        };
        if name.is_empty() || name.len() > 16 {
            return fail("a name has 1 to 16 characters");
        }
        if name == "global" {
            return fail("`global` is the global profile, which keeps requests in no geography");
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return fail("a name has only lowercase ASCII letters, digits and hyphens");
        }
        Ok(Self(Arc::from(name)))
    }

    /// The name, which is also its geographic profiles' id prefix (`jp` for
    /// `jp.anthropic.claude-sonnet-4-6`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Geography {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Geography {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Geography {
    type Err = GeographyNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for Geography {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Self::new(&name).map_err(serde::de::Error::custom)
    }
}

/// A cross-region inference profile's scope: a geography's profile (`us.`, `jp.`, ...) or the
/// global one (`global.`, any commercial region).
///
/// ```
/// use laneway::{Geography, ProfileScope};
/// let jp = ProfileScope::Geographic(Geography::new("jp").unwrap());
/// assert_eq!(jp.prefix(), "jp");
/// assert_eq!(ProfileScope::Global.prefix(), "global");
/// assert_eq!("global".parse::<ProfileScope>().unwrap(), ProfileScope::Global);
/// assert_eq!("jp".parse::<ProfileScope>().unwrap(), jp);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProfileScope {
    /// A geographic profile: requests stay in the geography's regions.
    Geographic(Geography),
    /// The global profile: any commercial region.
    Global,
}

impl ProfileScope {
    /// The id prefix, e.g. `us`.
    pub fn prefix(&self) -> &str {
        match self {
            ProfileScope::Geographic(g) => g.as_str(),
            ProfileScope::Global => "global",
        }
    }

    /// The geography a geographic profile keeps requests in; `None` for global.
    pub fn geography(&self) -> Option<&Geography> {
        match self {
            ProfileScope::Geographic(g) => Some(g),
            ProfileScope::Global => None,
        }
    }

    /// Whether this is the global profile.
    pub fn is_global(&self) -> bool {
        matches!(self, ProfileScope::Global)
    }
}

impl fmt::Display for ProfileScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

impl FromStr for ProfileScope {
    type Err = GeographyNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "global" => Ok(ProfileScope::Global),
            name => Geography::new(name).map(ProfileScope::Geographic),
        }
    }
}

impl From<Geography> for ProfileScope {
    fn from(g: Geography) -> Self {
        ProfileScope::Geographic(g)
    }
}

impl Serialize for ProfileScope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.prefix())
    }
}

impl<'de> Deserialize<'de> for ProfileScope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde() {
        for name in ["us", "eu", "apac", "jp", "au", "ca", "us-gov"] {
            let g: Geography = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(serde_json::to_value(&g).unwrap(), serde_json::json!(name));
            let p: ProfileScope = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(p.geography(), Some(&g));
        }
        let bad = serde_json::from_value::<Geography>(serde_json::json!("U S")).unwrap_err();
        assert!(bad.to_string().contains("lowercase"), "{bad}");
        assert!(serde_json::from_value::<Geography>(serde_json::json!("")).is_err());
        assert!(serde_json::from_value::<Geography>(serde_json::json!("global")).is_err());
    }
}
