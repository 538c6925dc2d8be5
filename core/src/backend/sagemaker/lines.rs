//! Re-buffering of a byte stream into lines: containers' lines can be split across, or packed
//! into, SageMaker payload parts.

/// Collects bytes and hands out complete lines (without `\n` or `\r\n`), skipping empty ones.
#[derive(Debug, Default)]
pub struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    /// Adds bytes; returns the lines they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(bytes);
        let mut lines = Vec::new();
        while let Some(pos) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            let text = text.trim_end_matches('\r');
            if !text.is_empty() {
                lines.push(text.to_string());
            }
        }
        lines
    }

    /// The unterminated rest, once the stream has ended.
    pub fn finish(&mut self) -> Option<String> {
        let rest = String::from_utf8_lossy(&std::mem::take(&mut self.pending))
            .trim()
            .to_string();
        (!rest.is_empty()).then_some(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn joins_split_lines_and_splits_packed_ones() {
        let mut b = LineBuffer::default();
        assert!(b.push(b"data:{\"a\"").is_empty());
        assert_eq!(
            b.push(b":1}\n\ndata:2\r\ndata:"),
            vec!["data:{\"a\":1}", "data:2"]
        );
        assert_eq!(b.finish().as_deref(), Some("data:"));
    }

    #[test]
    fn multibyte_characters_split_across_parts_survive() {
        let mut b = LineBuffer::default();
        let s = "data:héllo\n".as_bytes();
        assert!(b.push(&s[..7]).is_empty());
        assert_eq!(b.push(&s[7..]), vec!["data:héllo"]);
    }

    proptest! {
        #[test]
        fn any_split_gives_the_same_lines(lines in proptest::collection::vec("[a-z:{}\" ]{1,20}", 1..8), cuts in proptest::collection::vec(0usize..200, 0..6)) {
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            let bytes = text.as_bytes();
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut b = LineBuffer::default();
            let mut got = Vec::new();
            let mut last = 0;
            for p in points.into_iter().chain([bytes.len()]) {
                got.extend(b.push(&bytes[last..p]));
                last = p;
            }
            let want: Vec<String> = lines.iter().map(|l| l.trim_end_matches('\r').to_string()).filter(|l| !l.is_empty()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
