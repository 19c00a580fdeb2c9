//! The bytes under a trace's lines: gzip or zstd decompressed as their magic numbers say, and
//! a tar archive's members (the Tencent trace ships as `.tgz` files) read one after another.
//! Everything streams: nothing holds more than a buffer of the input.

use std::io::{self, BufRead, BufReader, Chain, Cursor, Read};

use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

/// How a decompressed stream is buffered: a few lines' worth is enough; 64 KiB keeps reads
/// few.
const BUFFER_BYTES: usize = 64 << 10;

/// A boxed byte stream a reader can be made from (any `BufRead` the caller gives).
pub(crate) type Bytes<'a> = Box<dyn BufRead + Send + 'a>;

/// How a trace's bytes were compressed, as its magic number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (one member or several, as `pigz` and `bgzip` write).
    Gzip,
    /// Zstandard (one frame or several).
    Zstd,
}

impl Compression {
    /// Its name: `none`, `gzip` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// A tar header's size, and where its `ustar` magic sits.
const TAR_BLOCK: usize = 512;
const TAR_MAGIC_AT: usize = 257;

/// Up to `n` bytes from the start of `input`, and `input` with them still unread. Where the
/// stream's buffer already holds them (the usual case) they are only looked at; otherwise
/// they are read and put back in front, through a `Chain` every later read passes.
fn peek<'a>(mut input: Bytes<'a>, n: usize) -> io::Result<(Vec<u8>, Bytes<'a>)> {
    let buffered = input.fill_buf()?;
    if buffered.len() >= n {
        let head = buffered[..n].to_vec();
        return Ok((head, input));
    }
    let mut head = Vec::with_capacity(n);
    (&mut input).take(n as u64).read_to_end(&mut head)?;
    let again: Chain<Cursor<Vec<u8>>, Bytes<'a>> = Cursor::new(head.clone()).chain(input);
    Ok((head, Box::new(again)))
}

/// `input` decompressed as its first bytes say.
pub(crate) fn decompressed(input: Bytes<'_>) -> io::Result<(Bytes<'_>, Compression)> {
    let (head, input) = peek(input, ZSTD_MAGIC.len())?;
    if head.starts_with(&GZIP_MAGIC) {
        let gzip = flate2::bufread::MultiGzDecoder::new(input);
        return Ok((
            Box::new(BufReader::with_capacity(BUFFER_BYTES, gzip)),
            Compression::Gzip,
        ));
    }
    if head.starts_with(&ZSTD_MAGIC) {
        let zstd = ZstdFrames::new(input);
        return Ok((
            Box::new(BufReader::with_capacity(BUFFER_BYTES, zstd)),
            Compression::Zstd,
        ));
    }
    Ok((input, Compression::None))
}

/// Every Zstandard frame of a stream, one after another (skippable frames skipped): ruzstd's
/// own streaming reader stops after the first.
struct ZstdFrames<R> {
    source: R,
    decoder: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> ZstdFrames<R> {
    fn new(source: R) -> Self {
        ZstdFrames {
            source,
            decoder: FrameDecoder::new(),
            in_frame: false,
        }
    }
}

fn zstd_error(err: FrameDecoderError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {err}"))
}

impl<R: BufRead> Read for ZstdFrames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if !self.in_frame {
                if self.source.fill_buf()?.is_empty() {
                    return Ok(0);
                }
                match self.decoder.reset(&mut self.source) {
                    Ok(()) => self.in_frame = true,
                    Err(FrameDecoderError::ReadFrameHeaderError(
                        ReadFrameHeaderError::SkipFrame { length, .. },
                    )) => {
                        let skipped =
                            io::copy(&mut (&mut self.source).take(length.into()), &mut io::sink())?;
                        if skipped < u64::from(length) {
                            return Err(io::ErrorKind::UnexpectedEof.into());
                        }
                        continue;
                    }
                    Err(err) => return Err(zstd_error(err)),
                }
            }
            while self.decoder.can_collect() == 0 && !self.decoder.is_finished() {
                self.decoder
                    .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBlocks(1))
                    .map_err(zstd_error)?;
            }
            let n = self.decoder.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            if self.decoder.is_finished() {
                self.in_frame = false;
            }
        }
    }
}

/// Whether `head` (a stream's first bytes) starts with a tar header: the `ustar` magic
/// (POSIX or GNU) and a header checksum that adds up.
pub(crate) fn is_tar(head: &[u8]) -> bool {
    head.len() >= TAR_BLOCK
        && &head[TAR_MAGIC_AT..TAR_MAGIC_AT + 5] == b"ustar"
        && checksum_ok(&head[..TAR_BLOCK])
}

/// `input` and whether it is a tar archive.
pub(crate) fn sniff_tar(input: Bytes<'_>) -> io::Result<(Bytes<'_>, bool)> {
    let (head, input) = peek(input, TAR_BLOCK)?;
    Ok((input, is_tar(&head)))
}

/// A tar header's checksum field against the sum of its bytes (the field itself counted as
/// spaces), unsigned or signed as old tars wrote it.
fn checksum_ok(header: &[u8]) -> bool {
    let Some(stored) = parse_octal(&header[148..156]) else {
        return false;
    };
    let (mut unsigned, mut signed) = (0u64, 0i64);
    for (i, &b) in header.iter().enumerate() {
        let b = if (148..156).contains(&i) { b' ' } else { b };
        unsigned += u64::from(b);
        signed += i64::from(b as i8);
    }
    stored == unsigned || i64::try_from(stored).is_ok_and(|s| s == signed)
}

/// An octal number field (leading spaces, ended by NUL or space), as tar writes them.
fn parse_octal(field: &[u8]) -> Option<u64> {
    let digits: &[u8] = {
        let start = field.iter().position(|&b| b != b' ')?;
        let rest = &field[start..];
        let end = rest
            .iter()
            .position(|&b| b == 0 || b == b' ')
            .unwrap_or(rest.len());
        &rest[..end]
    };
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        if !(b'0'..=b'7').contains(&d) {
            return None;
        }
        n.checked_mul(8)?.checked_add(u64::from(d - b'0'))
    })
}

/// A size field: octal, or base-256 (the high bit of its first byte set) for members of
/// 8 GiB and more, as GNU tar writes them (Alibaba's `io_traces.csv` is 751 GB).
fn parse_size(field: &[u8]) -> Option<u64> {
    if field[0] & 0x80 != 0 {
        let mut n = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            n = n.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(n);
    }
    parse_octal(field)
}

/// A NUL-terminated text field.
fn text_field(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// The data of a tar archive's regular-file members, one member at a time: reading returns
/// the current member's bytes and then end of file; [`TarMembers::next_member`] moves on.
pub(crate) struct TarMembers<'a> {
    inner: Bytes<'a>,
    /// The current member's bytes not read yet.
    left: u64,
    /// The padding after the current member's data, up to the next 512-byte block.
    pad: u64,
}

/// What a pax extended header says of the member after it.
#[derive(Default)]
struct PaxOverrides {
    path: Option<String>,
    size: Option<u64>,
}

impl<'a> TarMembers<'a> {
    pub fn new(inner: Bytes<'a>) -> Self {
        TarMembers {
            inner,
            left: 0,
            pad: 0,
        }
    }

    /// Skips `n` bytes of the archive.
    fn skip(&mut self, n: u64) -> io::Result<()> {
        let skipped = io::copy(&mut (&mut self.inner).take(n), &mut io::sink())?;
        if skipped < n {
            return Err(truncated());
        }
        Ok(())
    }

    /// A member's data whole (a long name, a pax header), at most 64 KiB.
    fn read_small(&mut self, size: u64) -> io::Result<Vec<u8>> {
        const LIMIT: u64 = 64 << 10;
        if size > LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("tar: a {size}-byte extended header (more than {LIMIT})"),
            ));
        }
        let mut data = vec![0; size as usize];
        self.inner.read_exact(&mut data).map_err(|_| truncated())?;
        self.skip(padding(size))?;
        Ok(data)
    }

    /// Moves to the next regular-file member that `wanted` takes (by its path) and returns
    /// its path; `None` at the archive's end.
    pub fn next_member(&mut self, wanted: impl Fn(&str) -> bool) -> io::Result<Option<String>> {
        self.skip(self.left.saturating_add(self.pad))?;
        self.left = 0;
        self.pad = 0;
        let mut long_name: Option<String> = None;
        let mut pax = PaxOverrides::default();
        loop {
            let mut header = [0u8; TAR_BLOCK];
            let got = read_full(&mut self.inner, &mut header)?;
            if got == 0 {
                // An archive cut right after a member: the end blocks are missing, nothing else.
                return Ok(None);
            }
            if got < TAR_BLOCK {
                return Err(truncated());
            }
            if header.iter().all(|&b| b == 0) {
                return Ok(None);
            }
            if !checksum_ok(&header) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "tar: a header whose checksum does not add up (a damaged archive)",
                ));
            }
            let size = match pax.size.take() {
                Some(size) => size,
                None => parse_size(&header[124..136]).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidData, "tar: a header with no size")
                })?,
            };
            match header[156] {
                // GNU's long name of the member after it.
                b'L' => {
                    let data = self.read_small(size)?;
                    long_name = Some(text_field(&data));
                }
                // A pax header of the member after it; a global one ('g') says nothing we use.
                b'x' => {
                    let data = self.read_small(size)?;
                    pax = parse_pax(&data);
                }
                b'0' | 0 | b'7' => {
                    let path = pax
                        .path
                        .take()
                        .or_else(|| long_name.take())
                        .unwrap_or_else(|| header_path(&header));
                    if wanted(&path) {
                        self.left = size;
                        self.pad = padding(size);
                        return Ok(Some(path));
                    }
                    self.skip(size.saturating_add(padding(size)))?;
                }
                // Directories, links, devices and anything else: no data of ours.
                _ => {
                    long_name = None;
                    pax = PaxOverrides::default();
                    self.skip(size.saturating_add(padding(size)))?;
                }
            }
        }
    }
}

fn truncated() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "tar: the archive ends inside a member",
    )
}

/// The bytes from `size` up to the next 512-byte block.
fn padding(size: u64) -> u64 {
    (TAR_BLOCK as u64 - size % TAR_BLOCK as u64) % TAR_BLOCK as u64
}

/// Reads until `buf` is full or the stream ends; how much it read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A ustar header's path: its prefix field (POSIX `ustar\0` only) and its name.
fn header_path(header: &[u8; TAR_BLOCK]) -> String {
    let name = text_field(&header[0..100]);
    if &header[TAR_MAGIC_AT..TAR_MAGIC_AT + 6] == b"ustar\0" {
        let prefix = text_field(&header[345..500]);
        if !prefix.is_empty() {
            return format!("{prefix}/{name}");
        }
    }
    name
}

/// The `path` and `size` records of a pax extended header (`LEN key=value\n` each).
fn parse_pax(mut data: &[u8]) -> PaxOverrides {
    let mut found = PaxOverrides::default();
    while let Some(space) = data.iter().position(|&b| b == b' ') {
        let Some(len) = std::str::from_utf8(&data[..space])
            .ok()
            .and_then(|l| l.parse::<usize>().ok())
        else {
            break;
        };
        if len <= space || len > data.len() {
            break;
        }
        let record = &data[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(eq) = record.iter().position(|&b| b == b'=') {
            let (key, value) = (&record[..eq], &record[eq + 1..]);
            match key {
                b"path" => found.path = Some(String::from_utf8_lossy(value).into_owned()),
                b"size" => {
                    found.size = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok())
                }
                _ => {}
            }
        }
        data = &data[len..];
    }
    found
}

impl Read for TarMembers<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for TarMembers<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.left == 0 {
            return Ok(&[]);
        }
        let left = self.left;
        let available = self.inner.fill_buf()?;
        if available.is_empty() {
            return Err(truncated());
        }
        let n = available
            .len()
            .min(usize::try_from(left).unwrap_or(usize::MAX));
        Ok(&available[..n])
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
        self.left -= amt as u64;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A ustar header for a regular file `name` of `size` bytes, its checksum filled in.
    pub fn tar_header(name: &str, size: u64, kind: u8) -> [u8; TAR_BLOCK] {
        let mut h = [0u8; TAR_BLOCK];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        h
    }

    /// A tar archive of `members` (name, data), with its two end blocks.
    pub fn tar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in members {
            out.extend_from_slice(&tar_header(name, data.len() as u64, b'0'));
            out.extend_from_slice(data);
            out.resize(out.len() + padding(data.len() as u64) as usize, 0);
        }
        out.resize(out.len() + 2 * TAR_BLOCK, 0);
        out
    }

    fn members_of(archive: Vec<u8>) -> Vec<(String, String)> {
        let mut tar = TarMembers::new(Box::new(Cursor::new(archive)));
        let mut found = Vec::new();
        while let Some(name) = tar.next_member(|p| !p.ends_with("skip.csv")).unwrap() {
            let mut text = String::new();
            tar.read_to_string(&mut text).unwrap();
            found.push((name, text));
        }
        found
    }

    #[test]
    fn members_are_read_in_order_and_unwanted_ones_skipped() {
        let archive = tar_of(&[
            ("a.csv", b"1,2\n3,4\n"),
            ("skip.csv", b"no"),
            ("b.csv", &[b'x'; 700]),
        ]);
        assert!(is_tar(&archive));
        let found = members_of(archive);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0], ("a.csv".into(), "1,2\n3,4\n".into()));
        assert_eq!(found[1].0, "b.csv");
        assert_eq!(found[1].1.len(), 700);
    }

    #[test]
    fn a_member_left_half_read_is_skipped_to_the_next() {
        let archive = tar_of(&[("a", &[b'a'; 1000]), ("b", b"bee")]);
        let mut tar = TarMembers::new(Box::new(Cursor::new(archive)));
        assert_eq!(tar.next_member(|_| true).unwrap().as_deref(), Some("a"));
        let mut some = [0u8; 10];
        tar.read_exact(&mut some).unwrap();
        assert_eq!(tar.next_member(|_| true).unwrap().as_deref(), Some("b"));
        let mut text = String::new();
        tar.read_to_string(&mut text).unwrap();
        assert_eq!(text, "bee");
        assert_eq!(tar.next_member(|_| true).unwrap(), None);
    }

    #[test]
    fn long_names_pax_paths_and_base256_sizes_are_read() {
        let long = "d/".repeat(80) + "trace.csv";
        let mut archive = Vec::new();
        archive.extend_from_slice(&tar_header("././@LongLink", long.len() as u64 + 1, b'L'));
        archive.extend_from_slice(long.as_bytes());
        archive.push(0);
        archive.resize(archive.len() + padding(long.len() as u64 + 1) as usize, 0);
        // A size in base-256 (as GNU tar writes 8 GiB and more), checksum redone.
        let mut h = tar_header("short", 0, b'0');
        h[124..136].copy_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]);
        h[148..156].copy_from_slice(b"        ");
        let sum: u64 = h.iter().map(|&b| u64::from(b)).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        archive.extend_from_slice(&h);
        archive.extend_from_slice(b"12345");
        archive.resize(archive.len() + padding(5) as usize, 0);
        // A pax header naming the next member and giving its size.
        let record = |k: &str, v: &str| {
            // The length counts the whole record, its own digits too.
            let body = format!(" {k}={v}\n");
            let mut len = body.len() + 1;
            while len.to_string().len() + body.len() != len {
                len = len.to_string().len() + body.len();
            }
            format!("{len}{body}")
        };
        let pax = record("path", "pax/name.csv") + &record("size", "3");
        archive.extend_from_slice(&tar_header("PaxHeader", pax.len() as u64, b'x'));
        archive.extend_from_slice(pax.as_bytes());
        archive.resize(archive.len() + padding(pax.len() as u64) as usize, 0);
        archive.extend_from_slice(&tar_header("ignored", 999, b'0'));
        archive.extend_from_slice(b"abc");
        archive.resize(archive.len() + padding(3) as usize, 0);
        archive.resize(archive.len() + 2 * TAR_BLOCK, 0);
        let found = members_of(archive);
        assert_eq!(
            found,
            vec![
                (long, "12345".into()),
                ("pax/name.csv".into(), "abc".into())
            ]
        );
    }

    #[test]
    fn a_damaged_header_is_an_error() {
        let mut archive = tar_of(&[("a", b"1")]);
        archive[10] ^= 1;
        let mut tar = TarMembers::new(Box::new(Cursor::new(archive)));
        let err = tar.next_member(|_| true).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn an_archive_cut_inside_a_member_is_an_error() {
        let mut archive = tar_of(&[("a", &[b'a'; 600])]);
        archive.truncate(TAR_BLOCK + 100);
        let mut tar = TarMembers::new(Box::new(Cursor::new(archive)));
        assert!(tar.next_member(|_| true).unwrap().is_some());
        let mut data = Vec::new();
        let err = tar.read_to_end(&mut data).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn zstd_frames_one_after_another_and_skippable_ones_are_read() {
        use ruzstd::encoding::{compress_to_vec, CompressionLevel};
        let mut stream = compress_to_vec(&b"first\n"[..], CompressionLevel::Fastest);
        // A skippable frame: magic 0x184D2A50, 4-byte length, that many bytes.
        stream.extend_from_slice(&0x184D_2A50u32.to_le_bytes());
        stream.extend_from_slice(&3u32.to_le_bytes());
        stream.extend_from_slice(b"xyz");
        stream.extend(compress_to_vec(&b"second\n"[..], CompressionLevel::Fastest));
        let (mut input, compression) = decompressed(Box::new(Cursor::new(stream))).unwrap();
        assert_eq!(compression, Compression::Zstd);
        let mut text = String::new();
        input.read_to_string(&mut text).unwrap();
        assert_eq!(text, "first\nsecond\n");
    }

    #[test]
    fn gzip_members_one_after_another_are_read() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let gz = |text: &[u8]| {
            let mut e = GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(text).unwrap();
            e.finish().unwrap()
        };
        let mut stream = gz(b"one\n");
        stream.extend(gz(b"two\n"));
        let (mut input, compression) = decompressed(Box::new(Cursor::new(stream))).unwrap();
        assert_eq!(compression, Compression::Gzip);
        let mut text = String::new();
        input.read_to_string(&mut text).unwrap();
        assert_eq!(text, "one\ntwo\n");
    }

    #[test]
    fn plain_text_is_passed_through_whole() {
        for text in ["", "a", "abcd", "abcdefgh\n"] {
            let (mut input, compression) =
                decompressed(Box::new(Cursor::new(text.as_bytes().to_vec()))).unwrap();
            assert_eq!(compression, Compression::None);
            let mut back = String::new();
            input.read_to_string(&mut back).unwrap();
            assert_eq!(back, text);
        }
    }
}
