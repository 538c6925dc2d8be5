//! Amazon Resource Names, in every partition.

/// An Amazon Resource Name, `arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE`, read in place.
/// Every partition is accepted (`aws`, `aws-cn`, `aws-us-gov`, ...); the resource keeps its own
/// `:` and `/` (`default-prompt-router/anthropic.claude:1`).
///
/// ```
/// use laneway::types::Arn;
/// let arn = Arn::parse("arn:aws-cn:bedrock:cn-north-1:123456789012:application-inference-profile/a1").unwrap();
/// assert_eq!((arn.partition, arn.service, arn.region), ("aws-cn", "bedrock", "cn-north-1"));
/// assert_eq!(arn.resource_id("application-inference-profile"), Some("a1"));
/// assert!(Arn::parse("amazon.nova-lite-v1:0").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arn<'a> {
    /// `aws`, `aws-cn`, `aws-us-gov`, ...
    pub partition: &'a str,
    /// The service namespace (`bedrock`, `iam`, `s3`).
    pub service: &'a str,
    /// The region; empty for global resources (an IAM role).
    pub region: &'a str,
    /// The account id; empty for resources of no account (a foundation model).
    pub account: &'a str,
    /// The resource: `TYPE/ID`, `TYPE:ID` or a bare name.
    pub resource: &'a str,
}

impl<'a> Arn<'a> {
    /// Reads `text` as an ARN: six `:`-separated fields, the partition `aws` or `aws-...`, the
    /// service and the resource not empty. `None` for anything else (a model id, say).
    pub fn parse(text: &'a str) -> Option<Self> {
        let mut parts = text.strip_prefix("arn:")?.splitn(5, ':');
        let arn = Arn {
            partition: parts.next()?,
            service: parts.next()?,
            region: parts.next()?,
            account: parts.next()?,
            resource: parts.next()?,
        };
        let partition_ok = arn.partition == "aws"
            || arn.partition.strip_prefix("aws-").is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            });
        (partition_ok && !arn.service.is_empty() && !arn.resource.is_empty()).then_some(arn)
    }

    /// A Bedrock ARN (service `bedrock`) with its region set.
    pub fn parse_bedrock(text: &'a str) -> Option<Self> {
        Self::parse(text).filter(|a| a.service == "bedrock" && !a.region.is_empty())
    }

    /// The id of a `TYPE/ID` resource of type `kind`, if it is one and the id is not empty.
    pub fn resource_id(&self, kind: &str) -> Option<&'a str> {
        self.resource
            .strip_prefix(kind)?
            .strip_prefix('/')
            .filter(|id| !id.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_partition_is_read_and_other_text_is_not() {
        for partition in ["aws", "aws-cn", "aws-us-gov", "aws-iso-b"] {
            let text = format!("arn:{partition}:bedrock:r-1:123:guardrail/g1");
            let arn = Arn::parse(&text).unwrap();
            assert_eq!(arn.partition, partition);
            assert_eq!(arn.resource_id("guardrail"), Some("g1"));
        }
        for text in [
            "amazon.nova-lite-v1:0",
            "arn:azure:bedrock:r:1:x/y",
            "arn:aws-:bedrock:r:1:x/y",
            "arn:aws:bedrock:r:1",
            "arn:aws::r:1:x",
            "arn:aws:bedrock:r:1:",
        ] {
            assert_eq!(Arn::parse(text), None, "{text}");
        }
    }

    #[test]
    fn the_resource_keeps_its_colons_and_slashes() {
        let arn =
            Arn::parse("arn:aws:bedrock:us-east-1:1:default-prompt-router/anthropic.claude:1")
                .unwrap();
        assert_eq!(
            arn.resource_id("default-prompt-router"),
            Some("anthropic.claude:1")
        );
        assert_eq!(arn.resource_id("prompt-router"), None);
        let role = Arn::parse("arn:aws-us-gov:iam::123456789012:role/batch").unwrap();
        assert_eq!((role.region, role.resource_id("role")), ("", Some("batch")));
    }
}
