//! Latency histograms as text: HdrHistogram's V2 + DEFLATE encoding in base64, the form the
//! Java and C HdrHistogram tools read and write (it starts with `HISTFAAA`).
//!
//! [`encode_histogram`] and [`decode_histogram`] are inverses: a decoded histogram is equal,
//! bin for bin and in its bounds, to the one encoded. [`EncodedHistograms`] is the
//! `"histograms":{"read":...,"write":...,"trim":...}` object a report carries per device and for the host.

use std::borrow::Borrow;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{
    DeserializeError, Deserializer, Serializer, V2DeflateSerializeError, V2DeflateSerializer,
};
use hdrhistogram::Histogram;
use hostmax_engine::{new_latency_histogram, PerOp};
use serde::{Deserialize, Serialize};

use crate::latency::add_exact;

/// Why a histogram could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistogramCodecError {
    /// The histogram could not be serialized (a count above `i64::MAX`).
    #[error("cannot encode the histogram: {0}")]
    Encode(#[from] V2DeflateSerializeError),
    /// The text is not base64.
    #[error("histogram is not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not a V2 (optionally DEFLATE-compressed) HdrHistogram.
    #[error("not an HdrHistogram V2 encoding: {0}")]
    Decode(#[from] DeserializeError),
}

/// Encodes `histogram` as base64 of its V2 + DEFLATE serialization.
pub fn encode_histogram(histogram: &Histogram<u64>) -> Result<String, HistogramCodecError> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(histogram, &mut bytes)?;
    Ok(STANDARD.encode(bytes))
}

/// Decodes what [`encode_histogram`] (or HdrHistogram's Java/C `encodeIntoCompressedByteBuffer`
/// plus base64) made; surrounding whitespace is ignored. The histogram keeps the bounds it was
/// encoded with.
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramCodecError> {
    let bytes = STANDARD.decode(text.trim())?;
    Ok(Deserializer::new().deserialize(&mut bytes.as_slice())?)
}

/// Decodes `text` and adds it into a histogram of hostmax's shared bin layout
/// ([`new_latency_histogram`]: growing as larger values come), so that histograms from any
/// source add to each other (exactly when they share the layout; see [`add_exact`]). A decoded
/// histogram alone keeps the fixed range it was encoded with and cannot take larger values.
pub fn decode_latency_histogram(text: &str) -> Result<Histogram<u64>, HistogramCodecError> {
    let decoded = decode_histogram(text)?;
    let mut histogram = new_latency_histogram();
    add_exact(&mut histogram, &decoded);
    Ok(histogram)
}

/// Each kind's latency histogram of a device or of the host, encoded ([`encode_histogram`]):
/// the `histograms` object of the JSON report (`{"read": .., "write": .., "trim": ..}`). A
/// kind missing from an older report reads as empty.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EncodedHistograms(pub PerOp<String>);

impl EncodedHistograms {
    /// Encodes every kind's histogram; owned or borrowed (`PerOp<&Histogram>`, so that a
    /// caller holding them elsewhere need not copy them).
    pub fn encode<H: Borrow<Histogram<u64>>>(
        histograms: &PerOp<H>,
    ) -> Result<EncodedHistograms, HistogramCodecError> {
        let mut encoded = PerOp::<String>::default();
        for (op, h) in histograms.iter() {
            encoded[op] = encode_histogram(h.borrow())?;
        }
        Ok(EncodedHistograms(encoded))
    }

    /// Decodes every kind into hostmax's shared layout ([`decode_latency_histogram`]); a
    /// kind an older report does not carry is an empty histogram.
    pub fn decode(&self) -> Result<PerOp<Histogram<u64>>, HistogramCodecError> {
        let mut decoded = PerOp::<Histogram<u64>>::from_fn(|_| new_latency_histogram());
        for (op, text) in self.0.iter() {
            if !text.is_empty() {
                decoded[op] = decode_latency_histogram(text)?;
            }
        }
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostmax_engine::OpKind;

    /// Widely spread deterministic latencies, 100 ns to about 10 s.
    fn spread(seed: u64, n: usize) -> Histogram<u64> {
        let mut h = new_latency_histogram();
        let mut x = seed | 1;
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h.record(100 + (x >> 40) % 1000 * (1 << (x % 24))).unwrap();
        }
        h
    }

    #[test]
    fn round_trip_gives_an_identical_histogram() {
        for h in [spread(1, 100_000), spread(7, 3), new_latency_histogram(), {
            let mut h = new_latency_histogram();
            h.record_n(1, 5).unwrap();
            h.record(hostmax_engine::LATENCY_HIGHEST_NS).unwrap();
            h
        }] {
            let text = encode_histogram(&h).unwrap();
            let back = decode_histogram(&text).unwrap();
            assert_eq!(back, h);
            assert_eq!(back.len(), h.len());
            assert_eq!(back.high(), h.high());
            assert_eq!(back.low(), h.low());
            assert_eq!(back.sigfig(), h.sigfig());
            for q in [0.0, 0.5, 0.99, 0.9999, 1.0] {
                assert_eq!(back.value_at_quantile(q), h.value_at_quantile(q));
            }
            assert_eq!(decode_latency_histogram(&text).unwrap(), h);
        }
    }

    #[test]
    fn encoding_is_the_java_compressed_base64_form() {
        let text = encode_histogram(&spread(3, 1000)).unwrap();
        // The V2 compressed cookie 0x1c849304 in base64: what HdrHistogram's tools expect.
        assert!(text.starts_with("HISTFAAA"), "{}", &text[..16]);
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)));
    }

    #[test]
    fn foreign_bounds_are_added_into_the_shared_ones() {
        let mut narrow: Histogram<u64> = Histogram::new_with_bounds(1000, 1_000_000, 2).unwrap();
        narrow.record_n(5000, 10).unwrap();
        narrow.record(900_000).unwrap();
        let text = encode_histogram(&narrow).unwrap();
        let wide = decode_latency_histogram(&text).unwrap();
        assert_eq!(wide.len(), 11);
        assert_eq!(wide.low(), 1);
        assert_eq!(wide.sigfig(), hostmax_engine::LATENCY_SIGFIG);
        // It still takes values far beyond the source's range.
        let mut wide = wide;
        wide.record(60_000_000_000).unwrap();
        // In the source's bin of 5000 (its lowest discernible value 1000 makes bins 512 wide).
        let median = wide.value_at_quantile(0.5);
        assert!(narrow.equivalent(median, 5000), "median {median}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(
            decode_histogram("not base64 at all!"),
            Err(HistogramCodecError::Base64(_))
        ));
        assert!(matches!(
            decode_histogram(&STANDARD.encode(b"plain bytes, no cookie")),
            Err(HistogramCodecError::Decode(_))
        ));
        let text = encode_histogram(&spread(2, 100)).unwrap();
        let truncated = &text[..text.len() / 2];
        let cut = &truncated[..truncated.len() / 4 * 4];
        assert!(decode_histogram(cut).is_err());
    }

    #[test]
    fn encoded_pair_round_trips() {
        let (r, w) = (spread(11, 500), spread(12, 50));
        let ops = PerOp::from_fn(|_| new_latency_histogram())
            .with(OpKind::Read, r)
            .with(OpKind::Write, w);
        let pair = EncodedHistograms::encode(&ops).unwrap();
        assert_eq!(pair.decode().unwrap(), ops);
        let json = serde_json::to_value(&pair).unwrap();
        assert!(json["read"].as_str().unwrap().starts_with("HISTFAAA"));
    }
}
