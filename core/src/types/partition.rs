//! AWS partitions: which one a region is in, and the DNS suffixes its endpoints take, as the
//! AWS SDKs' `partitions.json` says (botocore `botocore/data/partitions.json`; the same entries
//! are in the Rust SDK's generated endpoint resolvers).

/// An AWS partition: its id and the DNS suffixes of its endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// Its id, as in ARNs: `aws`, `aws-cn`, `aws-us-gov`, `aws-eusc`, ...
    pub id: &'static str,
    /// The suffix of its regional endpoints (`bedrock-runtime.{region}.{dns_suffix}`).
    pub dns_suffix: &'static str,
    /// The suffix of its dual-stack endpoints (`bedrock-mantle.{region}.{dual_stack_suffix}`
    /// in the `aws` partition: `api.aws`).
    pub dual_stack_suffix: &'static str,
}

/// Each partition with the region-name prefix that places a region in it; the first that
/// matches wins (`us-gov-` and `us-iso` before the commercial `aws`, which takes the rest).
const PARTITIONS: [(&str, Partition); 6] = [
    (
        "cn-",
        Partition {
            id: "aws-cn",
            dns_suffix: "amazonaws.com.cn",
            dual_stack_suffix: "api.amazonwebservices.com.cn",
        },
    ),
    (
        "us-gov-",
        Partition {
            id: "aws-us-gov",
            dns_suffix: "amazonaws.com",
            dual_stack_suffix: "api.aws",
        },
    ),
    (
        "us-isob-",
        Partition {
            id: "aws-iso-b",
            dns_suffix: "sc2s.sgov.gov",
            dual_stack_suffix: "sc2s.sgov.gov",
        },
    ),
    (
        "us-iso-",
        Partition {
            id: "aws-iso",
            dns_suffix: "c2s.ic.gov",
            dual_stack_suffix: "c2s.ic.gov",
        },
    ),
    // The AWS European Sovereign Cloud: `eusc-de-east-1` (botocore 1.43, 2026-08; its
    // dual-stack suffix since 1.40.14).
    (
        "eusc-",
        Partition {
            id: "aws-eusc",
            dns_suffix: "amazonaws.eu",
            dual_stack_suffix: "api.amazonwebservices.eu",
        },
    ),
    (
        "",
        Partition {
            id: "aws",
            dns_suffix: "amazonaws.com",
            dual_stack_suffix: "api.aws",
        },
    ),
];

impl Partition {
    /// The partition `region` is in.
    ///
    /// ```
    /// use laneway::types::Partition;
    /// assert_eq!(Partition::of("eusc-de-east-1").dns_suffix, "amazonaws.eu");
    /// assert_eq!(Partition::of("us-gov-west-1").id, "aws-us-gov");
    /// assert_eq!(Partition::of("eu-central-1").id, "aws");
    /// ```
    pub fn of(region: &str) -> Partition {
        PARTITIONS
            .iter()
            .find(|(prefix, _)| region.starts_with(prefix))
            .map_or(PARTITIONS[PARTITIONS.len() - 1].1, |(_, p)| *p)
    }
}
