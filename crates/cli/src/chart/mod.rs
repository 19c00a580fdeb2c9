//! SVG charts: a [`LineChart`] of named [`Series`] (solid, dashed or points) and horizontal
//! [`Band`]s, on linear or logarithmic axes, rendered by [`LineChart::to_svg`].
//!
//! Drawn with plotters' SVG backend and its built-in text layout (no `ttf` feature): the
//! output is a self-contained SVG string and nothing on the host (fonts, libraries) is read.
//! Used by `hostmax sweep --svg` (IOPS against volumes with the ideal line) and meant for any
//! other chart the tool draws (IOPS against block size on log axes, a steady-state window
//! drawn as a band with a slope line).

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeriesStyle {
    /// A solid line through the points, with a small mark on each.
    #[default]
    Solid,
    /// A dashed line (an ideal or a fitted line).
    Dashed,
    /// Marks only, no line.
    Points,
}

/// One named series of (x, y) points, drawn in the given order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The name shown in the legend.
    pub name: String,
    /// The points, (x, y).
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: SeriesStyle,
}

/// A horizontal band from `lower` to `upper` on the y axis, across the whole x range (e.g. the
/// ±10% window around a steady-state mean).
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// The name shown in the legend.
    pub name: String,
    /// Lower y edge.
    pub lower: f64,
    /// Upper y edge.
    pub upper: f64,
}

/// How tick labels on an axis are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TickFormat {
    /// Decimal with k/M/G suffixes (1000-based): 25k, 1.5M.
    #[default]
    Decimal,
    /// Bytes with k/m/g suffixes (1024-based), as block sizes are given: 4k, 1m.
    Bytes,
    /// Whole numbers only (counts such as volumes): ticks between them get no label.
    Count,
}

/// A chart of lines on one pair of axes.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// The caption above the chart.
    pub title: String,
    /// The x axis's label.
    pub x_label: String,
    /// The y axis's label.
    pub y_label: String,
    /// Logarithmic x axis (every x must be positive).
    pub x_log: bool,
    /// Logarithmic y axis (every y, and every band edge, must be positive).
    pub y_log: bool,
    /// How x tick labels are written.
    pub x_ticks: TickFormat,
    /// How y tick labels are written.
    pub y_ticks: TickFormat,
    /// The series, drawn in order; at least one, none empty.
    pub series: Vec<Series>,
    /// Horizontal bands, drawn under the series.
    pub bands: Vec<Band>,
    /// Where the legend goes (put it where the lines are not).
    pub legend: LegendCorner,
    /// Size in pixels (width, height).
    pub size: (u32, u32),
}

/// The corner of the plot the legend is drawn in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LegendCorner {
    /// Top left.
    #[default]
    UpperLeft,
    /// Top right.
    UpperRight,
    /// Bottom left.
    LowerLeft,
    /// Bottom right.
    LowerRight,
}

impl Default for LineChart {
    fn default() -> Self {
        LineChart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            x_log: false,
            y_log: false,
            x_ticks: TickFormat::Decimal,
            y_ticks: TickFormat::Decimal,
            series: Vec::new(),
            bands: Vec::new(),
            legend: LegendCorner::UpperLeft,
            size: (800, 500),
        }
    }
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ChartError {
    /// A chart needs at least one series.
    #[error("the chart '{0}' has no series: add at least one")]
    NoSeries(String),
    /// A series has no points.
    #[error("series '{0}' has no points")]
    EmptySeries(String),
    /// A value is NaN or infinite.
    #[error("series or band '{0}' has a value that is not a finite number")]
    NotFinite(String),
    /// A value on a log axis is zero or negative.
    #[error("'{name}' has {axis} = {value} on a logarithmic {axis} axis: every value there must be positive")]
    NotPositiveOnLogAxis {
        /// The series or band.
        name: String,
        /// "x" or "y".
        axis: &'static str,
        /// The offending value.
        value: f64,
    },
    /// A band whose lower edge is above its upper edge.
    #[error("band '{0}' has its lower edge above its upper edge")]
    InvertedBand(String),
    /// plotters failed (it should not with an in-memory SVG).
    #[error("drawing the chart failed: {0}")]
    Draw(String),
}

/// The colours series are drawn in, in order (repeating).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

impl LineChart {
    /// Renders the chart as an SVG document.
    pub fn to_svg(&self) -> Result<String, ChartError> {
        self.check()?;
        let (x_range, y_range) = self.ranges();
        // Byte sizes step in powers of two, so their log axis does too.
        let x_log = x_range.clone().log_scale().base(log_base(self.x_ticks));
        let y_log = y_range.clone().log_scale().base(log_base(self.y_ticks));
        match (self.x_log, self.y_log) {
            (false, false) => self.render(x_range, y_range),
            (true, false) => self.render(x_log, y_range),
            (false, true) => self.render(x_range, y_log),
            (true, true) => self.render(x_log, y_log),
        }
    }

    /// Refuses what cannot be drawn, before drawing anything.
    fn check(&self) -> Result<(), ChartError> {
        if self.series.is_empty() {
            return Err(ChartError::NoSeries(self.title.clone()));
        }
        for s in &self.series {
            if s.points.is_empty() {
                return Err(ChartError::EmptySeries(s.name.clone()));
            }
            for &(x, y) in &s.points {
                if !x.is_finite() || !y.is_finite() {
                    return Err(ChartError::NotFinite(s.name.clone()));
                }
                check_log(&s.name, "x", x, self.x_log)?;
                check_log(&s.name, "y", y, self.y_log)?;
            }
        }
        for b in &self.bands {
            if !b.lower.is_finite() || !b.upper.is_finite() {
                return Err(ChartError::NotFinite(b.name.clone()));
            }
            if b.lower > b.upper {
                return Err(ChartError::InvertedBand(b.name.clone()));
            }
            check_log(&b.name, "y", b.lower, self.y_log)?;
        }
        Ok(())
    }

    /// The axes' ranges: the data's extent with a margin; a linear y axis starts at 0 when
    /// every value is non-negative (rates are read against zero).
    fn ranges(&self) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
        let xs = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(self.bands.iter().flat_map(|b| [b.lower, b.upper]));
        let (x0, x1) = extent(xs);
        let (y0, y1) = extent(ys);
        let x_range = pad(x0, x1, self.x_log, false);
        let y_range = pad(y0, y1, self.y_log, true);
        (x_range, y_range)
    }

    fn render<X, Y>(&self, x: X, y: Y) -> Result<String, ChartError>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            root.fill(&WHITE).map_err(draw_err)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(&self.title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(44)
                .y_label_area_size(72)
                .build_cartesian_2d(x, y)
                .map_err(draw_err)?;
            let x_ticks = self.x_ticks;
            let y_ticks = self.y_ticks;
            let x_fmt = move |v: &f64| format_tick(*v, x_ticks);
            let y_fmt = move |v: &f64| format_tick(*v, y_ticks);
            chart
                .configure_mesh()
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(draw_err)?;

            let (x_lo, x_hi) = {
                let r = chart.x_range();
                (r.start, r.end)
            };
            for (i, band) in self.bands.iter().enumerate() {
                let color = PALETTE[(PALETTE.len() - 1 - i) % PALETTE.len()];
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x_lo, band.lower), (x_hi, band.upper)],
                        color.mix(0.15).filled(),
                    )))
                    .map_err(draw_err)?
                    .label(band.name.as_str())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 18, y + 5)], color.mix(0.3).filled())
                    });
            }
            for (i, series) in self.series.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                let line = color.stroke_width(2);
                let points = series.points.clone();
                let drawn = match series.style {
                    SeriesStyle::Solid => {
                        chart
                            .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                            .map_err(draw_err)?;
                        chart
                            .draw_series(LineSeries::new(points, line))
                            .map_err(draw_err)?
                    }
                    SeriesStyle::Dashed => chart
                        .draw_series(DashedLineSeries::new(points, 8, 5, line))
                        .map_err(draw_err)?,
                    SeriesStyle::Points => chart
                        .draw_series(
                            points
                                .into_iter()
                                .map(|p| Circle::new(p, 4, color.filled())),
                        )
                        .map_err(draw_err)?,
                };
                drawn.label(series.name.as_str()).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            }
            chart
                .configure_series_labels()
                .position(match self.legend {
                    LegendCorner::UpperLeft => SeriesLabelPosition::UpperLeft,
                    LegendCorner::UpperRight => SeriesLabelPosition::UpperRight,
                    LegendCorner::LowerLeft => SeriesLabelPosition::LowerLeft,
                    LegendCorner::LowerRight => SeriesLabelPosition::LowerRight,
                })
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK.mix(0.4))
                .draw()
                .map_err(draw_err)?;
            root.present().map_err(draw_err)?;
        }
        Ok(svg)
    }
}

fn log_base(format: TickFormat) -> f64 {
    match format {
        TickFormat::Decimal | TickFormat::Count => 10.0,
        TickFormat::Bytes => 2.0,
    }
}

fn check_log(name: &str, axis: &'static str, value: f64, log: bool) -> Result<(), ChartError> {
    if log && value <= 0.0 {
        return Err(ChartError::NotPositiveOnLogAxis {
            name: name.to_string(),
            axis,
            value,
        });
    }
    Ok(())
}

fn draw_err<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Draw(e.to_string())
}

fn extent(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// A range around [lo, hi] with some room: multiplicative on a log axis, additive on a linear
/// one (from 0 when `from_zero` and nothing is negative). A single value gets a range around it.
fn pad(lo: f64, hi: f64, log: bool, from_zero: bool) -> std::ops::Range<f64> {
    if log {
        let (lo, hi) = if lo == hi {
            (lo / 2.0, hi * 2.0)
        } else {
            (lo, hi)
        };
        return lo / 1.2..hi * 1.2;
    }
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    let start = if from_zero && lo >= 0.0 {
        0.0
    } else {
        lo - span * 0.05
    };
    start..hi + span * 0.08
}

/// A tick label: 25k, 1.5M (decimal), 4k, 1m (bytes), or 3 and nothing for 2.5 (count).
pub fn format_tick(value: f64, format: TickFormat) -> String {
    let (base, suffixes): (f64, [&str; 4]) = match format {
        TickFormat::Count if value != value.round() => return String::new(),
        TickFormat::Decimal | TickFormat::Count => (1000.0, ["", "k", "M", "G"]),
        TickFormat::Bytes => (1024.0, ["", "k", "m", "g"]),
    };
    let mut v = value;
    let mut i = 0;
    while v.abs() >= base && i < suffixes.len() - 1 {
        v /= base;
        i += 1;
    }
    let text = if v == v.round() || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!("{text}{}", suffixes[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep_chart() -> LineChart {
        LineChart {
            title: "IOPS against volumes".into(),
            x_label: "volumes".into(),
            y_label: "IOPS".into(),
            series: vec![
                Series {
                    name: "measured".into(),
                    points: vec![(1.0, 2000.0), (2.0, 4000.0), (4.0, 5000.0)],
                    style: SeriesStyle::Solid,
                },
                Series {
                    name: "ideal (sum of caps)".into(),
                    points: vec![(1.0, 2000.0), (4.0, 8000.0)],
                    style: SeriesStyle::Dashed,
                },
            ],
            bands: vec![Band {
                name: "ceiling within 5%".into(),
                lower: 4750.0,
                upper: 5250.0,
            }],
            legend: LegendCorner::LowerRight,
            ..LineChart::default()
        }
    }

    /// Checks that the text is one SVG element with balanced tags (a small well-formedness
    /// check: every `<x ...>` has its `</x>` in order, self-closing tags aside).
    fn assert_well_formed_svg(svg: &str) {
        let svg = svg.trim();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.ends_with("</svg>"));
        let mut stack: Vec<&str> = Vec::new();
        let mut rest = svg;
        while let Some(open) = rest.find('<') {
            let close = rest[open..].find('>').expect("unclosed tag") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if tag.starts_with('?') || tag.starts_with('!') || tag.ends_with('/') {
                continue;
            }
            let name = tag
                .trim_start_matches('/')
                .split_whitespace()
                .next()
                .unwrap();
            if tag.starts_with('/') {
                assert_eq!(stack.pop(), Some(name), "mismatched </{name}>");
            } else {
                stack.push(name);
            }
        }
        assert!(stack.is_empty(), "unclosed: {stack:?}");
    }

    #[test]
    fn svg_is_one_well_formed_element_naming_series_bands_and_axes() {
        let svg = sweep_chart().to_svg().unwrap();
        assert_well_formed_svg(&svg);
        for text in [
            "IOPS against volumes",
            "volumes",
            "IOPS",
            "measured",
            "ideal (sum of caps)",
            "ceiling within 5%",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        // The dashed series is drawn as several separate segments.
        assert!(svg.matches("<polyline").count() > 3);
    }

    #[test]
    fn log_scales_take_block_sizes_and_rates() {
        let chart = LineChart {
            title: "IOPS by block size".into(),
            x_label: "block size".into(),
            y_label: "IOPS".into(),
            x_log: true,
            y_log: true,
            x_ticks: TickFormat::Bytes,
            legend: LegendCorner::UpperRight,
            series: ["100/0", "50/50", "0/100"]
                .iter()
                .enumerate()
                .map(|(i, name)| Series {
                    name: name.to_string(),
                    points: [4096.0, 8192.0, 65536.0, 1048576.0]
                        .iter()
                        .map(|&bs| (bs, 3.0e6 / (bs / 4096.0) / (i as f64 + 1.0)))
                        .collect(),
                    style: SeriesStyle::Solid,
                })
                .collect(),
            ..LineChart::default()
        };
        let svg = chart.to_svg().unwrap();
        assert_well_formed_svg(&svg);
        for name in ["100/0", "50/50", "0/100", "block size"] {
            assert!(svg.contains(name), "missing {name}");
        }
    }

    #[test]
    fn refuses_what_it_cannot_draw() {
        let empty = LineChart {
            series: vec![Series {
                name: "nothing".into(),
                points: vec![],
                style: SeriesStyle::Solid,
            }],
            ..sweep_chart()
        };
        assert_eq!(
            empty.to_svg(),
            Err(ChartError::EmptySeries("nothing".into()))
        );
        let none = LineChart {
            series: vec![],
            ..sweep_chart()
        };
        assert!(matches!(none.to_svg(), Err(ChartError::NoSeries(_))));
        let mut zero_on_log = sweep_chart();
        zero_on_log.y_log = true;
        zero_on_log.series[0].points.push((8.0, 0.0));
        let err = zero_on_log.to_svg().unwrap_err();
        assert!(
            matches!(&err, ChartError::NotPositiveOnLogAxis { name, axis: "y", .. } if name == "measured"),
            "{err}"
        );
        let mut nan = sweep_chart();
        nan.series[1].points[0].1 = f64::NAN;
        assert_eq!(
            nan.to_svg(),
            Err(ChartError::NotFinite("ideal (sum of caps)".into()))
        );
        let mut inverted = sweep_chart();
        inverted.bands[0].lower = 6000.0;
        assert!(matches!(
            inverted.to_svg(),
            Err(ChartError::InvertedBand(_))
        ));
    }

    #[test]
    fn a_single_point_still_draws() {
        let chart = LineChart {
            series: vec![Series {
                name: "one".into(),
                points: vec![(1.0, 1.0)],
                style: SeriesStyle::Points,
            }],
            x_log: true,
            y_log: true,
            ..LineChart::default()
        };
        assert_well_formed_svg(&chart.to_svg().unwrap());
    }

    #[test]
    fn tick_labels() {
        assert_eq!(format_tick(25_000.0, TickFormat::Decimal), "25k");
        assert_eq!(format_tick(1_500_000.0, TickFormat::Decimal), "1.5M");
        assert_eq!(format_tick(2.5, TickFormat::Decimal), "2.5");
        assert_eq!(format_tick(4096.0, TickFormat::Bytes), "4k");
        assert_eq!(format_tick(1048576.0, TickFormat::Bytes), "1m");
        assert_eq!(format_tick(512.0, TickFormat::Bytes), "512");
        assert_eq!(format_tick(3.0, TickFormat::Count), "3");
        assert_eq!(format_tick(2.5, TickFormat::Count), "");
    }
}
