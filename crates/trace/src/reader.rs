//! [`TraceReader`]: a trace's I/Os one at a time, from any byte stream, in constant memory.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use crate::error::{LineFault, Place, TraceError, TraceErrorKind};
use crate::fields::format_ns;
use crate::format::{Parser, TraceFormat};
use crate::input::{decompressed, sniff_tar, Bytes, Compression, TarMembers};
use crate::io::TraceIo;
use crate::record::RawIo;
use crate::stats::TraceStats;

/// The longest line read: fio reads an iolog's lines into 4096 bytes, and no record of the
/// other formats comes near. A longer one is refused, so a file with no line ends (a binary
/// given by mistake) cannot grow the buffer.
pub const MAX_LINE_BYTES: usize = 4096;

/// How far back in time a record may step before the reader refuses the trace, by default:
/// one second (a Tencent trace's times are whole seconds, and records of adjacent seconds
/// can interleave).
pub const DEFAULT_ORDER_TOLERANCE: Duration = Duration::from_secs(1);

/// How large a plain file's read buffer is.
const FILE_BUFFER_BYTES: usize = 256 << 10;

/// Where the lines come from: the whole stream, or a tar archive's members one by one.
enum Lines<'a> {
    Plain(Bytes<'a>),
    Tar {
        members: TarMembers<'a>,
        /// Whether a member is being read (false before the first and between members).
        in_member: bool,
        /// Whether the archive's end was reached.
        ended: bool,
    },
}

/// A trace's I/Os, read line by line from any byte stream: an iterator of
/// `Result<TraceIo, TraceError>` that ends after the first error.
///
/// - Compression is read from the stream's first bytes: gzip (one member or several) and
///   Zstandard (one frame or several) are decompressed as they are read, and a tar archive
///   (compressed or not, like Tencent's published `.tgz` files) is read member by member,
///   each line numbered within its member.
/// - Memory stays flat: one line buffer, the decompressor's window, the table of an iolog's
///   file names; nothing grows with the trace's length.
/// - Times are made relative to the first I/O, which is due at 0. A record earlier than one
///   before it is due with the latest before it (never before an I/O the trace lists
///   earlier): counted in [`TraceReader::late`], refused when it steps back by more than
///   the order tolerance ([`TraceReader::with_order_tolerance`], 1 s by default), since a
///   trace that far out of order is not sorted by time and no bounded look-ahead would
///   replay it faithfully.
/// - A line that is not a record of the format is a [`TraceError`] naming the trace, the
///   line and the fix. [`TraceReader::check`] reads the whole trace to find one before any
///   I/O is issued.
pub struct TraceReader<'a> {
    lines: Lines<'a>,
    format: TraceFormat,
    parser: Parser,
    compression: Compression,
    place: Place,
    /// Lines read in the current member (or the whole stream).
    line_number: u64,
    buf: Vec<u8>,
    tolerance_ns: u64,
    /// The first I/O's time in the format's clock, once there is one.
    first_ns: Option<u64>,
    /// The latest time in the format's clock so far, and the line it was on.
    latest_ns: u64,
    latest_line: u64,
    /// The tar member (counted from 1) the latest time was in.
    latest_member: u64,
    /// Tar members begun so far.
    members_read: u64,
    lines_read: u64,
    late: u64,
    max_step_back_ns: u64,
    done: bool,
}

impl<'a> TraceReader<'a> {
    /// A reader of `input` in `format`; `name` is what its errors call it (a path). Reads the
    /// first bytes to see how it is compressed and whether it is a tar archive.
    pub fn new(
        name: impl Into<String>,
        input: impl BufRead + Send + 'a,
        format: TraceFormat,
    ) -> Result<TraceReader<'a>, TraceError> {
        let place = Place {
            source_name: name.into(),
            member: None,
            line: None,
        };
        let wrapped = decompressed(Box::new(input)).and_then(|(bytes, compression)| {
            sniff_tar(bytes).map(|(bytes, tar)| (bytes, compression, tar))
        });
        let (bytes, compression, tar) = match wrapped {
            Ok(found) => found,
            Err(err) => return Err(TraceError::unreadable(&place, err)),
        };
        let lines = if tar {
            Lines::Tar {
                members: TarMembers::new(bytes),
                in_member: false,
                ended: false,
            }
        } else {
            Lines::Plain(bytes)
        };
        Ok(TraceReader {
            lines,
            format,
            parser: Parser::new(format),
            compression,
            place,
            line_number: 0,
            buf: Vec::with_capacity(MAX_LINE_BYTES),
            tolerance_ns: DEFAULT_ORDER_TOLERANCE.as_nanos() as u64,
            first_ns: None,
            latest_ns: 0,
            latest_line: 0,
            latest_member: 0,
            members_read: 0,
            lines_read: 0,
            late: 0,
            max_step_back_ns: 0,
            done: false,
        })
    }

    /// A reader of the file at `path` (plain, `.gz`, `.zst`, `.tar`, `.tgz`: its bytes
    /// say which), its errors naming the path.
    pub fn open(
        path: impl AsRef<Path>,
        format: TraceFormat,
    ) -> Result<TraceReader<'static>, TraceError> {
        let path = path.as_ref();
        let place = Place {
            source_name: path.display().to_string(),
            member: None,
            line: None,
        };
        let file =
            File::open(path).map_err(|e| TraceError::cannot(&place, "cannot be opened", e))?;
        TraceReader::new(
            place.source_name,
            BufReader::with_capacity(FILE_BUFFER_BYTES, file),
            format,
        )
    }

    /// How far back in time a record may step (it is then due with the latest before it)
    /// before the trace is refused as out of order.
    pub fn with_order_tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance_ns = u64::try_from(tolerance.as_nanos()).unwrap_or(u64::MAX);
        self
    }

    /// The format it reads.
    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// How the trace's bytes were compressed.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Whether the trace is a tar archive, read member by member.
    pub fn is_archive(&self) -> bool {
        matches!(self.lines, Lines::Tar { .. })
    }

    /// Lines read so far (all members'), records or not.
    pub fn lines_read(&self) -> u64 {
        self.lines_read
    }

    /// Records so far that were earlier than one before them (within the tolerance): each was
    /// made due with the latest before it.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// The largest step back in time among the [`late`](TraceReader::late) records, in
    /// nanoseconds.
    pub fn max_step_back_ns(&self) -> u64 {
        self.max_step_back_ns
    }

    /// Reads the whole trace, refusing it at its first fault, and returns what it holds:
    /// per device, the I/O count by kind, the end of the furthest I/O and the first and last
    /// times. What a replay checks before its first I/O, and plans its device mapping with.
    pub fn check(mut self) -> Result<TraceStats, TraceError> {
        let mut stats = TraceStats::new();
        for io in self.by_ref() {
            stats.record(&io?);
        }
        stats.lines = self.lines_read;
        stats.late = self.late;
        stats.max_step_back_ns = self.max_step_back_ns;
        Ok(stats)
    }

    /// The next record, parsed where its line lies in the input's buffer (copied into
    /// `self.buf` only when it straddles the buffer's end); `None` at the end of the input.
    fn next_record(&mut self) -> Result<Option<RawIo>, TraceError> {
        loop {
            let input: &mut dyn BufRead = match &mut self.lines {
                Lines::Plain(bytes) => bytes,
                Lines::Tar { ended: true, .. } => return Ok(None),
                Lines::Tar {
                    members,
                    in_member: true,
                    ..
                } => members,
                Lines::Tar { .. } => {
                    if self.next_member()? {
                        continue;
                    }
                    return Ok(None);
                }
            };
            let available = match input.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let mut at = self.place.clone();
                    at.line = Some(self.line_number + 1);
                    return Err(TraceError::unreadable(&at, e));
                }
            };
            if available.is_empty() {
                // The end of the stream or member: a last line with no line end is a line.
                if !self.buf.is_empty() {
                    match self.parse_gathered()? {
                        Some(raw) => return Ok(Some(raw)),
                        None => continue,
                    }
                }
                self.parser.at_end().map_err(|f| f.at(&self.place))?;
                if let Lines::Tar { in_member, .. } = &mut self.lines {
                    *in_member = false;
                    continue;
                }
                return Ok(None);
            }
            let Some(end) = memchr::memchr(b'\n', available) else {
                // A line that goes on past the buffer: gather it.
                let taken = available.len();
                if self.buf.len() + taken > MAX_LINE_BYTES {
                    return Err(self.too_long());
                }
                self.buf.extend_from_slice(available);
                input.consume(taken);
                continue;
            };
            let parsed = if self.buf.is_empty() {
                if end > MAX_LINE_BYTES {
                    return Err(self.too_long());
                }
                let parsed = parse_line(
                    &mut self.parser,
                    &mut self.place,
                    &mut self.line_number,
                    &mut self.lines_read,
                    &available[..end],
                );
                input.consume(end + 1);
                parsed
            } else {
                if self.buf.len() + end > MAX_LINE_BYTES {
                    return Err(self.too_long());
                }
                self.buf.extend_from_slice(&available[..end]);
                input.consume(end + 1);
                self.parse_gathered()
            };
            if let Some(raw) = parsed? {
                return Ok(Some(raw));
            }
        }
    }

    /// The line gathered in `self.buf` counted and parsed; the buffer kept for the next.
    fn parse_gathered(&mut self) -> Result<Option<RawIo>, TraceError> {
        let parsed = parse_line(
            &mut self.parser,
            &mut self.place,
            &mut self.line_number,
            &mut self.lines_read,
            &self.buf,
        );
        self.buf.clear();
        parsed
    }

    /// Moves to the archive's next member this format reads; false at its end.
    fn next_member(&mut self) -> Result<bool, TraceError> {
        let Lines::Tar {
            members,
            in_member,
            ended,
        } = &mut self.lines
        else {
            return Ok(false);
        };
        let format = self.format;
        let next = members
            .next_member(|path| format.reads_member(path))
            .map_err(|e| {
                let mut at = self.place.clone();
                at.line = None;
                TraceError::unreadable(&at, e)
            })?;
        let Some(path) = next else {
            *ended = true;
            return Ok(false);
        };
        *in_member = true;
        self.members_read += 1;
        self.place.member = Some(path);
        self.place.line = None;
        self.line_number = 0;
        self.parser = Parser::new(format);
        Ok(true)
    }

    fn too_long(&self) -> TraceError {
        let mut at = self.place.clone();
        at.line = Some(self.line_number + 1);
        LineFault::malformed(
            format!("a line longer than {MAX_LINE_BYTES} bytes"),
            format!(
                "no {} record is that long: is this a {} trace, and is it text?",
                self.format, self.format
            ),
        )
        .at(&at)
    }

    /// `raw` made relative to the first I/O, in order.
    fn timed(&mut self, raw: RawIo) -> Result<TraceIo, TraceError> {
        let first = match self.first_ns {
            Some(first) => first,
            None => {
                self.first_ns = Some(raw.time_ns);
                self.latest_ns = raw.time_ns;
                raw.time_ns
            }
        };
        if raw.time_ns >= self.latest_ns {
            self.latest_ns = raw.time_ns;
            self.latest_line = self.line_number;
            self.latest_member = self.members_read;
        } else {
            let back = self.latest_ns - raw.time_ns;
            if back > self.tolerance_ns {
                let what = format!(
                    "this record is {} earlier than the one on line {}{}",
                    format_ns(back),
                    self.latest_line,
                    if self.latest_member == self.members_read {
                        ""
                    } else {
                        " of an earlier member"
                    }
                );
                let fix = format!(
                    "sort the trace by time (a step back of up to {} is replayed with the I/O before it)",
                    format_ns(self.tolerance_ns)
                );
                return Err(TraceError::new(
                    &self.place,
                    TraceErrorKind::OutOfOrder,
                    what,
                    fix,
                ));
            }
            self.late += 1;
            self.max_step_back_ns = self.max_step_back_ns.max(back);
        }
        Ok(TraceIo::new(
            self.latest_ns - first,
            raw.device,
            raw.op,
            raw.offset,
            raw.len,
        ))
    }

    fn next_io(&mut self) -> Result<Option<TraceIo>, TraceError> {
        match self.next_record()? {
            Some(raw) => self.timed(raw).map(Some),
            None => Ok(None),
        }
    }
}

/// One line (without its `\n`, perhaps with a `\r`) counted and parsed: apart from the
/// reader's methods, so the line may be borrowed from the reader's own input.
fn parse_line(
    parser: &mut Parser,
    place: &mut Place,
    line_number: &mut u64,
    lines_read: &mut u64,
    line: &[u8],
) -> Result<Option<RawIo>, TraceError> {
    *line_number += 1;
    *lines_read += 1;
    place.line = Some(*line_number);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    parser
        .parse(line, *line_number)
        .map_err(|fault| fault.at(place))
}

impl Iterator for TraceReader<'_> {
    type Item = Result<TraceIo, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_io() {
            Ok(Some(io)) => Some(Ok(io)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(err) => {
                self.done = true;
                Some(Err(err))
            }
        }
    }
}

impl std::iter::FusedIterator for TraceReader<'_> {}
