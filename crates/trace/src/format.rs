//! [`TraceFormat`]: the formats a [`TraceReader`](crate::TraceReader) reads, and the one
//! place a line is handed to its format's parser.

use std::fmt;
use std::str::FromStr;

use crate::error::LineFault;
use crate::io::DeviceKey;
use crate::iolog::IologState;
use crate::map::MapError;
use crate::record::RawIo;
use crate::{alibaba, tencent};

/// A trace format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceFormat {
    /// fio's iolog, version 2 or 3 (its first line says which): `write_iolog=` writes
    /// version 3, `read_iolog=` replays both. Devices are file names.
    FioIolog,
    /// Alibaba Cloud's block traces of 2020, `io_traces.csv`: devices are `device_id`s,
    /// times microseconds.
    Alibaba,
    /// Tencent's cloud block storage traces of 2018 (SNIA IOTTA): devices are `VolumeID`s,
    /// times whole seconds.
    Tencent,
}

impl TraceFormat {
    /// Every format, in the order of their names in messages.
    pub const ALL: [TraceFormat; 3] = [
        TraceFormat::FioIolog,
        TraceFormat::Alibaba,
        TraceFormat::Tencent,
    ];

    /// Its name: `fio-iolog`, `alibaba` or `tencent`.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::FioIolog => "fio-iolog",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::Tencent => "tencent",
        }
    }

    /// The finest step of its times, in nanoseconds: I/Os closer together than this are due
    /// at the same instant (a Tencent trace's I/Os of one second all come due at its start).
    pub fn time_resolution_ns(self) -> u64 {
        match self {
            TraceFormat::FioIolog | TraceFormat::Alibaba => 1_000,
            TraceFormat::Tencent => 1_000_000_000,
        }
    }

    /// The device key `text` names in this format: a file name in an iolog, a whole-number
    /// id in the others (what a `--map ID=DEVICE` pair's ID is).
    pub fn device_key(self, text: &str) -> Result<DeviceKey, MapError> {
        match self {
            TraceFormat::FioIolog => {
                if text.is_empty() || text.contains(char::is_whitespace) {
                    return Err(MapError::BadKey {
                        text: text.to_string(),
                        why: "an iolog's file names are not empty and have no spaces".into(),
                    });
                }
                Ok(DeviceKey::name(text))
            }
            TraceFormat::Alibaba | TraceFormat::Tencent => match text.parse::<u64>() {
                Ok(id) if !text.starts_with('+') => Ok(DeviceKey::Id(id)),
                _ => Err(MapError::BadKey {
                    text: text.to_string(),
                    why: format!("the {} trace's devices are whole-number ids", self.name()),
                }),
            },
        }
    }

    /// Whether a tar archive's member at `path` holds this format's I/O records: Alibaba's
    /// published tarball also carries `device_size.csv`.
    pub(crate) fn reads_member(self, path: &str) -> bool {
        let file = path.rsplit('/').next().unwrap_or(path);
        !(self == TraceFormat::Alibaba && file == "device_size.csv")
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of [`TraceFormat::ALL`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trace format {0:?} is not one of fio-iolog, alibaba, tencent")]
pub struct UnknownFormat(pub String);

impl FromStr for TraceFormat {
    type Err = UnknownFormat;

    fn from_str(text: &str) -> Result<TraceFormat, UnknownFormat> {
        TraceFormat::ALL
            .into_iter()
            .find(|f| f.name() == text)
            .ok_or_else(|| UnknownFormat(text.to_string()))
    }
}

/// A format's parser with what it keeps between lines (an iolog's version and files).
pub(crate) enum Parser {
    Iolog(IologState),
    Alibaba,
    Tencent,
}

impl Parser {
    pub fn new(format: TraceFormat) -> Parser {
        match format {
            TraceFormat::FioIolog => Parser::Iolog(IologState::default()),
            TraceFormat::Alibaba => Parser::Alibaba,
            TraceFormat::Tencent => Parser::Tencent,
        }
    }

    /// The record on `line` (without its line end), if it has one: a header, a blank line,
    /// a file action or a wait has none.
    pub fn parse(&mut self, line: &[u8], line_number: u64) -> Result<Option<RawIo>, LineFault> {
        match self {
            Parser::Iolog(state) => state.parse(line),
            Parser::Alibaba => {
                if line_number == 1 && is_columns(line, alibaba::COLUMNS) {
                    return Ok(None);
                }
                alibaba::parse(line)
            }
            Parser::Tencent => {
                if line_number == 1 && is_columns(line, tencent::COLUMNS) {
                    return Ok(None);
                }
                tencent::parse(line)
            }
        }
    }

    /// What is missing at the end of the input: an iolog with no version line.
    pub fn at_end(&self) -> Result<(), LineFault> {
        match self {
            Parser::Iolog(state) if !state.has_header() => Err(LineFault::header(
                "empty: no `fio version N iolog` line",
                "an fio iolog starts with `fio version 2 iolog` or `fio version 3 iolog`",
            )),
            _ => Ok(()),
        }
    }
}

fn is_columns(line: &[u8], columns: &str) -> bool {
    let line = line.trim_ascii();
    line.split(|&b| b == b',').count() == columns.split(',').count()
        && line
            .split(|&b| b == b',')
            .map(<[u8]>::trim_ascii)
            .zip(columns.split(','))
            .all(|(got, name)| got.eq_ignore_ascii_case(name.as_bytes()))
}
