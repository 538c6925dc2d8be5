//! `[[regions]]` and `[geographies]`: where calls may go, and the questions asked of them
//! (which geography a region is in, which profile scope a prefix names, what keeps a call
//! within a residency).

use super::{BTreeSet, Config, Deserialize, Geography, ProfileScope, Residency, Serialize};

/// A region calls start in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegionConfig {
    /// The region's name (`us-east-1`).
    pub name: String,
    /// A geography this region belongs to besides those whose `[geographies]` entry lists it
    /// (for a region the built-in table does not know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geography: Option<Geography>,
}

/// A geography: the regions its geographic inference profiles keep requests in, which are
/// also the regions that may call them. A region may be in several (Tokyo is in `jp` and in
/// `apac`); a request whose residency names a geography stays in its regions and profiles
/// whose regions it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeographyConfig {
    /// Its regions: where its geographic profiles keep requests, and which may call them.
    pub regions: Vec<String>,
}

impl Config {
    /// Whether calls may start in `region` (it is under `[[regions]]`).
    pub fn is_configured_region(&self, region: &str) -> bool {
        self.regions.iter().any(|r| r.name == region)
    }

    /// Whether `region` is configured or in a geography: a name a model may list.
    pub fn is_known_region(&self, region: &str) -> bool {
        self.is_configured_region(region)
            || self
                .geographies
                .values()
                .any(|g| g.regions.iter().any(|r| r == region))
    }

    /// Whether `region` belongs to `geography` (by its `[geographies]` entry or its own
    /// `[[regions]]` entry).
    ///
    /// ```
    /// let config = laneway::Config::default();
    /// let jp = laneway::Geography::new("jp").unwrap();
    /// let apac = laneway::Geography::new("apac").unwrap();
    /// assert!(config.in_geography("ap-northeast-1", &jp) && config.in_geography("ap-northeast-1", &apac));
    /// assert!(!config.in_geography("us-east-1", &jp));
    /// ```
    pub fn in_geography(&self, region: &str, geography: &Geography) -> bool {
        self.geographies
            .get(geography)
            .is_some_and(|g| g.regions.iter().any(|r| r == region))
            || self
                .regions
                .iter()
                .any(|r| r.name == region && r.geography.as_ref() == Some(geography))
    }

    /// Whether every region of `inner` is in `outer`: a profile of `inner` keeps a request
    /// within `outer` (`jp` within `apac`).
    pub fn geography_within(&self, inner: &Geography, outer: &Geography) -> bool {
        if inner == outer {
            return true;
        }
        let mut regions = self.geography_regions(inner).peekable();
        regions.peek().is_some() && regions.all(|r| self.in_geography(r, outer))
    }

    /// Whether `target` keeps a request within `residency`: under a geography, a region of it
    /// and no profile, or a geographic profile whose regions it holds (`jp.` keeps a request
    /// within `apac`, `global.` keeps none); under a list of regions, one of them and no
    /// profile.
    ///
    /// ```
    /// use laneway::{Geography, Residency, Target};
    /// let config = laneway::Config::default();
    /// let eu = Residency::Geography(Geography::new("eu").unwrap());
    /// let frankfurt = Target::bedrock("eu-central-1", "amazon.nova-lite-v1:0", None);
    /// let virginia = Target::bedrock("us-east-1", "amazon.nova-lite-v1:0", None);
    /// assert!(config.keeps_within(&frankfurt, &eu));
    /// assert!(!config.keeps_within(&virginia, &eu));
    /// ```
    pub fn keeps_within(&self, target: &crate::types::Target, residency: &Residency) -> bool {
        match residency {
            Residency::Geography(g) => {
                self.in_geography(target.region(), g)
                    && match target.profile() {
                        None => true,
                        Some(p) => p
                            .geography()
                            .is_some_and(|inner| self.geography_within(inner, g)),
                    }
            }
            Residency::Regions(list) => {
                target.profile().is_none() && list.iter().any(|r| r == target.region())
            }
        }
    }

    /// The regions of a geography.
    pub fn geography_regions<'a>(&'a self, g: &'a Geography) -> impl Iterator<Item = &'a str> {
        let listed = self.geographies.get(g).map(|c| c.regions.as_slice());
        listed.into_iter().flatten().map(String::as_str).chain(
            self.regions
                .iter()
                .filter(move |r| r.geography.as_ref() == Some(g))
                .map(|r| r.name.as_str()),
        )
    }

    /// Whether a geography of this name is configured (under `[geographies]` or by a region).
    pub fn is_known_geography(&self, g: &Geography) -> bool {
        self.geographies.contains_key(g)
            || self.regions.iter().any(|r| r.geography.as_ref() == Some(g))
    }

    /// The profile scope an id prefix names: `global` or a configured geography.
    ///
    /// ```
    /// let config = laneway::Config::default();
    /// assert_eq!(config.profile_scope("global"), Some(laneway::ProfileScope::Global));
    /// assert_eq!(config.profile_scope("jp").unwrap().prefix(), "jp");
    /// assert_eq!(config.profile_scope("anthropic"), None);
    /// ```
    pub fn profile_scope(&self, prefix: &str) -> Option<ProfileScope> {
        match prefix.parse::<ProfileScope>().ok()? {
            ProfileScope::Global => Some(ProfileScope::Global),
            ProfileScope::Geographic(g) => self
                .is_known_geography(&g)
                .then_some(ProfileScope::Geographic(g)),
        }
    }

    /// The configured geographies' names, comma-separated (for error messages).
    pub(crate) fn known_geographies(&self) -> String {
        let mut names: BTreeSet<&str> = self.geographies.keys().map(Geography::as_str).collect();
        names.extend(
            self.regions
                .iter()
                .filter_map(|r| r.geography.as_ref().map(Geography::as_str)),
        );
        names.into_iter().collect::<Vec<_>>().join(", ")
    }
}
