//! Latency histograms as text: HdrHistogram's V2 + DEFLATE encoding in base64, the form the
//! Java and C HdrHistogram tools read and write (it starts with `HISTFAAA`).
//!
//! [`encode_histogram`] and [`decode_histogram`] are inverses: a decoded histogram is equal,
//! bin for bin and in its bounds, to the one encoded. [`EncodedHistograms`] is the
//! `"histograms":{"read":...,"write":...,"trim":...}` object a report carries per device and for the host.
//!
//! Decoding trusts nothing the text claims: the compressed and the decoded payload lengths are
//! checked against the bytes actually there, inflating stops at what hostmax's own bin layout
//! can need, and a header whose range or precision goes beyond that layout is refused before
//! any histogram is allocated ([`HistogramCodecError::Hostile`]).

use std::borrow::Borrow;
use std::io::Read as _;
use std::sync::OnceLock;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::{
    DeserializeError, Deserializer, Serializer, V2DeflateSerializeError, V2DeflateSerializer,
};
use hdrhistogram::Histogram;
use hostmax_engine::{new_latency_histogram, PerOp, LATENCY_HIGHEST_NS, LATENCY_SIGFIG};
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
    /// The encoding claims more than it carries or more than any hostmax histogram can hold
    /// (a payload longer than its bytes, a range or precision beyond hostmax's bin layout):
    /// refused before anything of the claimed size is allocated.
    #[error("not a histogram hostmax wrote: {0}")]
    Hostile(String),
}

/// The V2 cookies (HdrHistogram's `V2_COOKIE` and `V2_COMPRESSED_COOKIE`).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The V2 header: cookie, payload length, normalizing offset, significant figures (4 bytes
/// each), lowest and highest trackable value, integer-to-double ratio (8 bytes each).
const V2_HEADER_LEN: usize = 40;
/// The longest a LEB128 count of the V2 payload can be.
const MAX_VARINT_LEN: usize = 9;

/// The widest histogram hostmax makes: [`new_latency_histogram`] grown to hold
/// [`LATENCY_HIGHEST_NS`], as (highest trackable value, number of bins).
fn widest_layout() -> (u64, usize) {
    static WIDEST: OnceLock<(u64, usize)> = OnceLock::new();
    *WIDEST.get_or_init(|| {
        let mut h = new_latency_histogram();
        // Growing to hold the highest value only allocates; it cannot fail.
        let _ = h.record(LATENCY_HIGHEST_NS);
        (h.high(), h.distinct_values())
    })
}

/// The most bytes a V2 encoding of a hostmax histogram can take, header included: every bin
/// of the widest layout as a full-length count.
fn max_encoded_len() -> usize {
    V2_HEADER_LEN + widest_layout().1 * MAX_VARINT_LEN
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
///
/// What the text claims is checked before it is believed: a payload length beyond the bytes
/// there, an inflated size beyond what hostmax's widest histogram needs, a range beyond
/// [`LATENCY_HIGHEST_NS`] (as hostmax's growing histograms round it) or a precision beyond
/// [`LATENCY_SIGFIG`] is [`HistogramCodecError::Hostile`].
pub fn decode_histogram(text: &str) -> Result<Histogram<u64>, HistogramCodecError> {
    let text = text.trim();
    // Base64 carries 3 bytes in 4 characters; allow a compressed form a little larger than
    // the plain one (DEFLATE's worst case adds a few bytes per 16 KiB block).
    let max_text = (max_encoded_len() + 1024) / 3 * 4 + 8;
    if text.len() > max_text {
        return Err(hostile(format!(
            "{} characters of base64, more than the {max_text} any hostmax histogram takes",
            text.len()
        )));
    }
    let bytes = STANDARD.decode(text)?;
    let plain = plain_v2(&bytes)?;
    check_v2(&plain)?;
    Ok(Deserializer::new().deserialize(&mut plain.as_slice())?)
}

fn hostile(why: String) -> HistogramCodecError {
    HistogramCodecError::Hostile(why)
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The uncompressed V2 encoding in `bytes`: as it is, or inflated from the compressed form,
/// never more than [`max_encoded_len`] bytes of it.
fn plain_v2(bytes: &[u8]) -> Result<Vec<u8>, HistogramCodecError> {
    match be_u32(bytes, 0) {
        Some(V2_COOKIE) => Ok(bytes.to_vec()),
        Some(V2_COMPRESSED_COOKIE) => {
            let claimed = be_u32(bytes, 4)
                .ok_or_else(|| hostile("the compressed form ends before its length".to_string()))?;
            let present = bytes.len() - 8;
            if claimed as usize > present {
                return Err(hostile(format!(
                    "it claims a {claimed}-byte compressed payload and carries {present} bytes"
                )));
            }
            let limit = max_encoded_len();
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(&bytes[8..8 + claimed as usize])
                .take(limit as u64 + 1)
                .read_to_end(&mut plain)
                .map_err(|e| HistogramCodecError::Decode(DeserializeError::IoError(e)))?;
            if plain.len() > limit {
                return Err(hostile(format!(
                    "it inflates to more than {limit} bytes, more than any hostmax histogram takes"
                )));
            }
            Ok(plain)
        }
        _ => Err(HistogramCodecError::Decode(DeserializeError::InvalidCookie)),
    }
}

/// Checks the header of an uncompressed V2 encoding against the bytes there and hostmax's
/// bin layout, and its counts against what the decoder can take, so that decoding allocates
/// no more than hostmax's widest histogram.
fn check_v2(plain: &[u8]) -> Result<(), HistogramCodecError> {
    let truncated = || hostile(format!("{} bytes, shorter than the V2 header", plain.len()));
    if be_u32(plain, 0) != Some(V2_COOKIE) {
        return Err(HistogramCodecError::Decode(DeserializeError::InvalidCookie));
    }
    let claimed = be_u32(plain, 4).ok_or_else(truncated)? as usize;
    let sigfig = be_u32(plain, 12).ok_or_else(truncated)?;
    let low = be_u64(plain, 16).ok_or_else(truncated)?;
    let high = be_u64(plain, 24).ok_or_else(truncated)?;
    be_u64(plain, 32).ok_or_else(truncated)?;
    let present = plain.len() - V2_HEADER_LEN;
    if claimed > present {
        return Err(hostile(format!(
            "it claims a {claimed}-byte payload and carries {present} bytes"
        )));
    }
    let (widest_high, _) = widest_layout();
    if sigfig > u32::from(LATENCY_SIGFIG) || low == 0 || high > widest_high {
        return Err(hostile(format!(
            "values {low} to {high} at {sigfig} significant figures, beyond hostmax's bins (1 to {widest_high} at {LATENCY_SIGFIG})"
        )));
    }
    check_counts(&plain[V2_HEADER_LEN..V2_HEADER_LEN + claimed])
}

/// Walks the payload's zig-zag LEB128 numbers as HdrHistogram's decoder reads them, refusing
/// the one it cannot negate (a run of `i64::MIN` zeros) and counts whose sum overflows.
fn check_counts(payload: &[u8]) -> Result<(), HistogramCodecError> {
    let mut total: u64 = 0;
    let mut rest = payload;
    while !rest.is_empty() {
        let mut value: u64 = 0;
        let mut used = 0;
        for (i, &b) in rest.iter().take(MAX_VARINT_LEN).enumerate() {
            used = i + 1;
            if i == MAX_VARINT_LEN - 1 {
                value |= u64::from(b) << 56;
                break;
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                break;
            }
        }
        rest = &rest[used..];
        let signed = ((value >> 1) as i64) ^ -((value & 1) as i64);
        if signed == i64::MIN {
            return Err(hostile(
                "a run of zeros longer than any histogram".to_string(),
            ));
        }
        if signed > 0 {
            total = total
                .checked_add(signed as u64)
                .ok_or_else(|| hostile("its counts add up to more than 2^64 - 1".to_string()))?;
        }
    }
    Ok(())
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

    /// A V2 header (payload length, significant figures, range) and payload, compressed
    /// with the compressed form's own length as `outer` (the true length when `None`).
    fn forged(
        claimed: u32,
        sigfig: u32,
        low: u64,
        high: u64,
        payload: &[u8],
        outer: Option<u32>,
    ) -> String {
        use std::io::Write as _;
        let mut plain = Vec::new();
        plain.extend(V2_COOKIE.to_be_bytes());
        plain.extend(claimed.to_be_bytes());
        plain.extend(0u32.to_be_bytes());
        plain.extend(sigfig.to_be_bytes());
        plain.extend(low.to_be_bytes());
        plain.extend(high.to_be_bytes());
        plain.extend(1.0f64.to_be_bytes());
        plain.extend(payload);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(&plain).unwrap();
        let deflated = z.finish().unwrap();
        let mut bytes = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
        bytes.extend(outer.unwrap_or(deflated.len() as u32).to_be_bytes());
        bytes.extend(deflated);
        STANDARD.encode(bytes)
    }

    fn hostile_why(text: &str) -> String {
        match decode_histogram(text) {
            Err(HistogramCodecError::Hostile(why)) => why,
            Err(other) => panic!("refused, but not as hostile: {other}"),
            Ok(h) => panic!("decoded, {} values", h.len()),
        }
    }

    #[test]
    fn a_header_claiming_a_huge_payload_is_refused_before_allocating_it() {
        // 56 characters that once made the decoder allocate 1 GiB (4 GiB: abort).
        for claimed in [1 << 30, u32::MAX] {
            let text = forged(claimed, 3, 1, 2048, &[], None);
            assert!(text.len() <= 60, "{} characters", text.len());
            let why = hostile_why(&text);
            assert!(
                why.contains(&format!(
                    "claims a {claimed}-byte payload and carries 0 bytes"
                )),
                "{why}"
            );
        }
        // The compressed form's own length, beyond the bytes there.
        let text = forged(0, 3, 1, 2048, &[], Some(1 << 30));
        assert!(hostile_why(&text).contains("compressed payload"));
    }

    #[test]
    fn a_range_or_precision_beyond_hostmax_bins_is_refused() {
        for (sigfig, low, high) in [
            (5, 1, u64::MAX),
            (3, 1, u64::MAX / 2),
            (4, 1, 2048),
            (3, 0, 2048),
        ] {
            let why = hostile_why(&forged(0, sigfig, low, high, &[], None));
            assert!(why.contains("beyond hostmax's bins"), "{why}");
        }
        // The widest histogram hostmax makes still decodes.
        let mut widest = new_latency_histogram();
        hostmax_engine::record_latency(&mut widest, u64::MAX);
        assert_eq!(
            decode_histogram(&encode_histogram(&widest).unwrap()).unwrap(),
            widest
        );
    }

    #[test]
    fn a_deflate_bomb_stops_at_the_widest_layout() {
        let zeros = vec![0u8; 64 << 20];
        let why = hostile_why(&forged(zeros.len() as u32, 3, 1, 2048, &zeros, None));
        assert!(why.contains("inflates to more than"), "{why}");
    }

    #[test]
    fn counts_the_decoder_cannot_take_are_refused() {
        // u64::MAX zig-zag decodes to i64::MIN, a run of zeros the decoder would negate.
        let min = [0xff; 9];
        assert!(hostile_why(&forged(9, 3, 1, 2048, &min, None)).contains("run of zeros"));
        // Three counts of i64::MAX: their sum overflows.
        let max = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        let thrice = [max, max, max].concat();
        assert!(hostile_why(&forged(27, 3, 1, 2048, &thrice, None)).contains("more than 2^64 - 1"));
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
