//! SVG charts: a [`LineChart`] of named [`Series`] (solid, dashed or points) and horizontal
//! [`Band`]s, on linear or logarithmic axes, rendered by [`LineChart::to_svg`].
//!
//! Drawn with plotters' SVG backend and its built-in text layout (no `ttf` feature): the
//! output is a self-contained SVG string and nothing on the host (fonts, libraries) is read.
//! Used by `hostmax sweep --svg` (IOPS against volumes with the ideal line) and meant for any
//! other chart the tool draws (IOPS against block size on log axes, a steady-state window
//! drawn as a band with a slope line).

use plotters::chart::SeriesAnno;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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
    /// Names of the x positions 1, 2, ... on a [`TickFormat::Count`] axis (volumes by name):
    /// the tick at i reads `x_names[i - 1]`. Empty: the numbers.
    pub x_names: Vec<String>,
    /// Text written beside points (a curve's queue depths), drawn over the lines.
    pub point_labels: Vec<PointLabels>,
}

/// The text beside each point of one series: `labels[i]` beside `series[series].points[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PointLabels {
    /// The series' index in [`LineChart::series`].
    pub series: usize,
    /// One label per point, in the series' order (an empty one draws nothing).
    pub labels: Vec<String>,
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
    /// Right, halfway up (for lines that keep to the top and the bottom).
    MiddleRight,
    /// The corner with the fewest points under it, chosen when drawing.
    Auto,
    /// Right of the plot, outside the axes, so the legend covers no point or line whatever
    /// the data: the plot gives it its width (down to 60% of the chart's; a longer legend
    /// makes the chart wider).
    Outside,
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
            x_names: Vec::new(),
            point_labels: Vec::new(),
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
    /// Point labels for a series that does not exist, or not one per point.
    #[error("point labels for series {series}: {why}")]
    PointLabels {
        /// The series' index.
        series: usize,
        /// What is wrong.
        why: String,
    },
    /// plotters failed (it should not with an in-memory SVG).
    #[error("drawing the chart failed: {0}")]
    Draw(String),
}

/// Font sizes given to plotters, which writes them at 0.806 of the size asked (its SVG backend
/// scales text); these come out at 12.9 px and larger at the chart's own width.
const LABEL_FONT: u32 = 16;
const DESC_FONT: u32 = 17;
const CAPTION_FONT: u32 = 22;
/// Pixels between the plot's right edge and a legend drawn outside it.
const LEGEND_GAP: u32 = 16;

/// The colour series number `index` is drawn in, as (r, g, b): for tests and pages that check
/// what was drawn.
pub fn series_color(index: usize) -> (u8, u8, u8) {
    let c = PALETTE[index % PALETTE.len()];
    (c.0, c.1, c.2)
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
        // Byte sizes step in powers of two, so their log axis does too; its ticks are ours.
        let log_axis = |range: std::ops::Range<f64>, format: TickFormat| {
            let ticks = log_ticks(range.clone(), format);
            // `range` already ends on ticks (`ranges`): this only lists them.
            range
                .log_scale()
                .base(log_base(format))
                .with_key_points(ticks.labelled)
                .with_light_points(ticks.light)
        };
        let (x_ticks, y_ticks) = (self.x_ticks, self.y_ticks);
        match (self.x_log, self.y_log) {
            (false, false) => self.render(x_range, y_range),
            (true, false) => self.render(log_axis(x_range, x_ticks), y_range),
            (false, true) => self.render(x_range, log_axis(y_range, y_ticks)),
            (true, true) => self.render(log_axis(x_range, x_ticks), log_axis(y_range, y_ticks)),
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
        for l in &self.point_labels {
            let why = match self.series.get(l.series) {
                None => format!("the chart has {} series", self.series.len()),
                Some(s) if s.points.len() != l.labels.len() => format!(
                    "{} labels for {} points of '{}'",
                    l.labels.len(),
                    s.points.len(),
                    s.name
                ),
                Some(_) => continue,
            };
            return Err(ChartError::PointLabels {
                series: l.series,
                why,
            });
        }
        Ok(())
    }

    /// The axes' ranges: the data's extent with a margin; a linear y axis starts at 0 when
    /// every value is non-negative (rates are read against zero).
    fn ranges(&self) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
        let (x_range, y_range) = self.data_ranges();
        // Counts sit half a step in from the edges, so every whole number has room.
        let mut x_range = if self.x_ticks == TickFormat::Count && !self.x_log {
            let (lo, hi) = self.x_extent();
            (lo - 0.5)..(hi + 0.5)
        } else {
            x_range
        };
        // Labels are written right of their points: room for them at the right edge.
        if !self.point_labels.is_empty() {
            x_range.end = if self.x_log {
                x_range.end * 1.5
            } else {
                x_range.end + 0.08 * (x_range.end - x_range.start)
            };
        }
        // A log axis ends on labelled ticks below the lowest point and above the highest (a
        // point beyond the last tick cannot be read off the axis).
        let x_range = if self.x_log {
            log_ticks(x_range, self.x_ticks).range
        } else {
            x_range
        };
        let y_range = if self.y_log {
            log_ticks(y_range, self.y_ticks).range
        } else {
            y_range
        };
        (x_range, y_range)
    }

    /// Where the legend goes: the corner asked for, or for [`LegendCorner::Auto`] the corner
    /// whose box (45% of the width, 35% of the height, on the axes' own scales) holds the
    /// fewest points, so the legend hides no data where it can help it.
    pub fn legend_corner(&self) -> LegendCorner {
        if self.legend != LegendCorner::Auto {
            return self.legend;
        }
        let scale = |v: f64, log: bool| {
            if log {
                v.max(f64::MIN_POSITIVE).log10()
            } else {
                v
            }
        };
        let (x_range, y_range) = self.ranges();
        let (x0, x1) = (
            scale(x_range.start, self.x_log),
            scale(x_range.end, self.x_log),
        );
        let (y0, y1) = (
            scale(y_range.start, self.y_log),
            scale(y_range.end, self.y_log),
        );
        let unit = |v: f64, lo: f64, hi: f64| if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        let points: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .map(|&(x, y)| {
                (
                    unit(scale(x, self.x_log), x0, x1),
                    unit(scale(y, self.y_log), y0, y1),
                )
            })
            .collect();
        let count = |right: bool, top: bool| {
            points
                .iter()
                .filter(|(x, y)| {
                    (if right { *x >= 0.55 } else { *x <= 0.45 })
                        && (if top { *y >= 0.65 } else { *y <= 0.35 })
                })
                .count()
        };
        [
            (LegendCorner::UpperRight, count(true, true)),
            (LegendCorner::UpperLeft, count(false, true)),
            (LegendCorner::LowerRight, count(true, false)),
            (LegendCorner::LowerLeft, count(false, false)),
        ]
        .into_iter()
        .min_by_key(|&(_, n)| n)
        .map_or(LegendCorner::UpperRight, |(corner, _)| corner)
    }

    /// How wide an [`LegendCorner::Outside`] legend is, with the gap between it and the plot:
    /// its longest entry as plotters lays the text out, its mark and its margins.
    fn legend_width(&self) -> Result<u32, ChartError> {
        let font = ("sans-serif", LABEL_FONT).into_font();
        let mut widest = 0;
        for name in self.legend_names() {
            let (w, _) = font.box_size(&name).map_err(draw_err)?;
            widest = widest.max(w);
        }
        // The gap, the box's padding both sides, the glyph's column, room at the right edge.
        Ok(LEGEND_GAP + widest + 30 + 2 * LEGEND_PADDING as u32 + 12)
    }

    /// Every entry the legend shows, as it shows it.
    fn legend_names(&self) -> Vec<String> {
        let overlaps = self.overlaps();
        let mut names: Vec<String> = self.bands.iter().map(|b| b.name.clone()).collect();
        names.extend(self.series.iter().zip(&overlaps).map(|(s, on)| match on {
            Some(j) => format!("{} (same as {})", s.name, self.series[*j].name),
            None => s.name.clone(),
        }));
        names
    }

    fn x_extent(&self) -> (f64, f64) {
        extent(
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0)),
        )
    }

    /// For each series, the earlier series it lies on (same x values, y within 2% of the y
    /// span, or of the value on a log axis), which would hide it.
    pub fn overlaps(&self) -> Vec<Option<usize>> {
        let (y0, y1) = extent(
            self.series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1)),
        );
        let close = |a: f64, b: f64| {
            if self.y_log {
                (a / b - 1.0).abs() <= 0.02
            } else {
                (a - b).abs() <= 0.02 * (y1 - y0).max(f64::MIN_POSITIVE)
            }
        };
        self.series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                self.series[..i].iter().position(|earlier| {
                    earlier.points.len() == s.points.len()
                        && earlier
                            .points
                            .iter()
                            .zip(&s.points)
                            .all(|(a, b)| a.0 == b.0 && close(a.1, b.1))
                })
            })
            .collect()
    }

    fn data_ranges(&self) -> (std::ops::Range<f64>, std::ops::Range<f64>) {
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

    /// Draws the chart in its steps: the canvas, the axes, the bands, the series, the point
    /// labels, the legend (each over the one before).
    fn render<X, Y>(&self, x: X, y: Y) -> Result<String, ChartError>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut svg = String::new();
        let outside = self.legend_corner() == LegendCorner::Outside;
        let legend_width = if outside { self.legend_width()? } else { 0 };
        {
            let width = self.canvas_width(outside, legend_width);
            let root = SVGBackend::with_string(&mut svg, (width, self.size.1)).into_drawing_area();
            root.fill(&WHITE).map_err(draw_err)?;
            // plotters clips what is drawn to its area: an outside legend gets its own.
            let (plot_root, legend_root) = root.split_horizontally(width - legend_width);
            let mut chart = ChartBuilder::on(&plot_root)
                .caption(&self.title, ("sans-serif", CAPTION_FONT))
                .margin(12)
                .x_label_area_size(52)
                .y_label_area_size(84)
                .build_cartesian_2d(x, y)
                .map_err(draw_err)?;
            self.draw_axes(&mut chart)?;
            let mut legend_entries = self.draw_bands(&mut chart)?;
            legend_entries.extend(self.draw_all_series(&mut chart)?);
            self.draw_point_labels(&mut chart)?;
            if outside {
                // Level with the plot's top edge, a gap right of its edge.
                let top = chart.plotting_area().get_base_pixel().1;
                draw_legend(&legend_root, top, &legend_entries)?;
            } else {
                self.draw_legend_inside(&mut chart)?;
            }
            root.present().map_err(draw_err)?;
        }
        Ok(svg)
    }

    /// The SVG's width: the size asked for, unless an outside legend needs more.
    fn canvas_width(&self, outside: bool, legend_width: u32) -> u32 {
        // The legend takes its width from the plot, down to 60% of the chart; a longer
        // legend widens the chart instead.
        if outside {
            self.size.0.max(self.size.0 * 3 / 5 + legend_width)
        } else {
            self.size.0
        }
    }

    /// The axes, their tick labels and descriptions, and the grid.
    fn draw_axes<X, Y>(&self, chart: &mut Chart<'_, '_, X, Y>) -> Result<(), ChartError>
    where
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let x_ticks = self.x_ticks;
        let y_ticks = self.y_ticks;
        let names = self.x_names.clone();
        let x_fmt = move |v: &f64| match names.get((v.round() as usize).wrapping_sub(1)) {
            Some(name) if x_ticks == TickFormat::Count && *v == v.round() => name.clone(),
            _ => format_tick(*v, x_ticks),
        };
        // On a count axis, a label at every whole number while they fit.
        let x_label_count = if x_ticks == TickFormat::Count && !self.x_log {
            let (lo, hi) = self.x_extent();
            ((hi - lo) as usize + 1).clamp(2, 12)
        } else {
            10
        };
        let y_log = self.y_log;
        let y_fmt = move |v: &f64| {
            if y_log && !is_round_on_log_axis(*v) {
                // Every tick between decades labelled crowds them; 1, 2 and 5 read well.
                String::new()
            } else {
                format_tick(*v, y_ticks)
            }
        };
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .x_labels(x_label_count)
            .label_style(("sans-serif", LABEL_FONT))
            .axis_desc_style(("sans-serif", DESC_FONT))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(draw_err)
    }

    /// The bands, across the whole x range, in colours from the palette's end; returns their
    /// legend entries.
    fn draw_bands<X, Y>(
        &self,
        chart: &mut Chart<'_, '_, X, Y>,
    ) -> Result<Vec<LegendEntry>, ChartError>
    where
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        let (x_lo, x_hi) = {
            let r = chart.x_range();
            (r.start, r.end)
        };
        let mut entries = Vec::new();
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
            entries.push(LegendEntry {
                name: band.name.clone(),
                color,
                glyph: LegendGlyph::Band,
            });
        }
        Ok(entries)
    }

    /// Every series, in order, with its legend label; returns their legend entries.
    fn draw_all_series<'a, 'b: 'a, X, Y>(
        &self,
        chart: &mut Chart<'a, 'b, X, Y>,
    ) -> Result<Vec<LegendEntry>, ChartError>
    where
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        // A series lying on an earlier one is drawn dashed with hollow marks over it and
        // says so in the legend, so neither hides the other.
        let overlaps = self.overlaps();
        let mut entries = Vec::new();
        for (i, series) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let on_top_of = overlaps[i];
            let marker = Marker::for_series(i);
            let style = match (series.style, on_top_of) {
                (SeriesStyle::Solid, Some(_)) => SeriesStyle::Dashed,
                (style, _) => style,
            };
            let drawn = draw_lines_and_marks(chart, series, style, on_top_of, color, marker)?;
            let name = match on_top_of {
                Some(j) => format!("{} (same as {})", series.name, self.series[j].name),
                None => series.name.clone(),
            };
            let mark = style != SeriesStyle::Dashed || on_top_of.is_some();
            let glyph = LegendGlyph::Line {
                marker: mark.then_some(marker),
            };
            entries.push(LegendEntry {
                name: name.clone(),
                color,
                glyph,
            });
            drawn.label(name).legend(move |(x, y)| {
                let (line, mark) = glyph.parts(color);
                EmptyElement::at((x, y)) + line + mark
            });
        }
        Ok(entries)
    }

    /// The text beside points, over the lines.
    fn draw_point_labels<X, Y>(&self, chart: &mut Chart<'_, '_, X, Y>) -> Result<(), ChartError>
    where
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        // The plot's pixel box: a label goes above and right of its point, unless that
        // would leave the axes (a point near the top or the right edge).
        let (x_px, y_px) = chart.plotting_area().get_pixel_range();
        for labels in &self.point_labels {
            let points = &self.series[labels.series].points;
            let placed: Vec<_> = points
                .iter()
                .zip(&labels.labels)
                .filter(|(_, l)| !l.is_empty())
                .map(|(&p, l)| {
                    let (px, py) = chart.backend_coord(&p);
                    let half_height = LABEL_FONT as i32 / 2 + 1;
                    // Sans-serif digits and capitals average well under 0.7 em.
                    let width = (l.chars().count() as f64 * LABEL_FONT as f64 * 0.7) as i32;
                    let dy = if py - 9 - half_height < y_px.start {
                        9
                    } else {
                        -9
                    };
                    let (dx, h) = if px + 7 + width > x_px.end {
                        (-7, HPos::Right)
                    } else {
                        (7, HPos::Left)
                    };
                    let text = TextStyle::from(("sans-serif", LABEL_FONT).into_font())
                        .color(&RGBColor(60, 60, 60))
                        .pos(Pos::new(h, VPos::Center));
                    (p, l.clone(), (dx, dy), text)
                })
                .collect();
            chart
                .draw_series(
                    placed.into_iter().map(|(p, l, offset, text)| {
                        EmptyElement::at(p) + Text::new(l, offset, text)
                    }),
                )
                .map_err(draw_err)?;
        }
        Ok(())
    }

    /// plotters' own legend, in the corner [`LineChart::legend_corner`] picks.
    fn draw_legend_inside<'a, 'b: 'a, X, Y>(
        &self,
        chart: &mut ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>,
    ) -> Result<(), ChartError>
    where
        X: Ranged<ValueType = f64>,
        Y: Ranged<ValueType = f64>,
    {
        chart
            .configure_series_labels()
            .position(match self.legend_corner() {
                LegendCorner::Outside | LegendCorner::UpperLeft => SeriesLabelPosition::UpperLeft,
                LegendCorner::UpperRight => SeriesLabelPosition::UpperRight,
                LegendCorner::LowerLeft => SeriesLabelPosition::LowerLeft,
                LegendCorner::LowerRight => SeriesLabelPosition::LowerRight,
                LegendCorner::MiddleRight | LegendCorner::Auto => SeriesLabelPosition::MiddleRight,
            })
            .label_font(("sans-serif", LABEL_FONT))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(draw_err)
    }
}

/// A chart on the SVG backend, on axes of `X` and `Y`.
type Chart<'a, 'b, X, Y> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, Y>>;

/// One series' line and marks, drawn as `style` says (a series lying on another, `on_top_of`,
/// gets hollow marks and a finer dash); returns plotters' handle for its legend label.
fn draw_lines_and_marks<'c, 'a, 'b: 'a, X, Y>(
    chart: &'c mut Chart<'a, 'b, X, Y>,
    series: &Series,
    style: SeriesStyle,
    on_top_of: Option<usize>,
    color: RGBColor,
    marker: Marker,
) -> Result<&'c mut SeriesAnno<'a, SVGBackend<'b>>, ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let line = color.stroke_width(2);
    let points = series.points.clone();
    let filled = |size: i32| {
        move |p: (f64, f64)| {
            EmptyElement::at(p) + Polygon::new(marker.outline((0, 0), size), color.filled())
        }
    };
    let drawn = match style {
        SeriesStyle::Solid => {
            chart
                .draw_series(points.iter().copied().map(filled(4)))
                .map_err(draw_err)?;
            chart
                .draw_series(LineSeries::new(points, line))
                .map_err(draw_err)?
        }
        SeriesStyle::Dashed => {
            if on_top_of.is_some() {
                let hollow = |p: (f64, f64)| {
                    EmptyElement::at(p) + PathElement::new(marker.outline((0, 0), 7), line)
                };
                chart
                    .draw_series(points.iter().copied().map(hollow))
                    .map_err(draw_err)?;
            }
            let (dash, gap) = if on_top_of.is_some() { (4, 6) } else { (8, 5) };
            chart
                .draw_series(DashedLineSeries::new(points, dash, gap, line))
                .map_err(draw_err)?
        }
        SeriesStyle::Points => chart
            .draw_series(points.into_iter().map(filled(5)))
            .map_err(draw_err)?,
    };
    Ok(drawn)
}

/// One entry of a legend drawn outside the plot.
struct LegendEntry {
    name: String,
    color: RGBColor,
    glyph: LegendGlyph,
}

/// A path of a legend glyph, in pixels from its anchor.
type GlyphPath = PathElement<(i32, i32)>;

/// What a legend entry shows left of its name.
#[derive(Debug, Clone, Copy)]
enum LegendGlyph {
    /// A filled swatch (a band).
    Band,
    /// A short line, with the series' mark on it when its points are marked.
    Line { marker: Option<Marker> },
}

impl LegendGlyph {
    /// The glyph's parts, relative to its left end at its vertical middle, 22 px wide.
    fn parts(self, color: RGBColor) -> (GlyphPath, GlyphPath) {
        let style = color.stroke_width(2);
        match self {
            // A swatch: a 10 px thick line.
            LegendGlyph::Band => (
                PathElement::new(vec![(0, 0), (18, 0)], color.mix(0.3).stroke_width(10)),
                PathElement::new(Vec::new(), style),
            ),
            LegendGlyph::Line { marker } => (
                PathElement::new(vec![(0, 0), (22, 0)], style),
                PathElement::new(
                    marker.map_or_else(Vec::new, |m| m.outline((11, 0), 4)),
                    style,
                ),
            ),
        }
    }
}

/// Rows of a legend drawn outside the plot, in pixels.
const LEGEND_ROW: i32 = 20;
const LEGEND_PADDING: i32 = 6;

/// Draws `entries` as a boxed legend at the left of `area` (right of the plot), its top at
/// `top` px: the same white box and border as plotters' own legend.
fn draw_legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    top: i32,
    entries: &[LegendEntry],
) -> Result<(), ChartError> {
    let font = ("sans-serif", LABEL_FONT).into_font();
    let mut widest = 0;
    for e in entries {
        widest = widest.max(font.box_size(&e.name).map_err(draw_err)?.0 as i32);
    }
    let left = LEGEND_GAP as i32;
    let right = left + 2 * LEGEND_PADDING + 30 + widest;
    let bottom = top + 2 * LEGEND_PADDING + LEGEND_ROW * entries.len() as i32;
    area.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        WHITE.mix(0.85).filled(),
    ))
    .map_err(draw_err)?;
    area.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        BLACK.mix(0.4),
    ))
    .map_err(draw_err)?;
    let text = TextStyle::from(font).pos(Pos::new(HPos::Left, VPos::Center));
    for (i, e) in entries.iter().enumerate() {
        let y = top + LEGEND_PADDING + LEGEND_ROW * i as i32 + LEGEND_ROW / 2;
        let (line, mark) = e.glyph.parts(e.color);
        area.draw(&(EmptyElement::at((left + LEGEND_PADDING, y)) + line + mark))
            .map_err(draw_err)?;
        area.draw(&Text::new(
            e.name.clone(),
            (left + LEGEND_PADDING + 30, y),
            text.clone(),
        ))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// The mark drawn on each point of a series; series take them in turn, so lines that cross or
/// meet stay told apart without colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

impl Marker {
    fn for_series(index: usize) -> Marker {
        [
            Marker::Circle,
            Marker::Square,
            Marker::Triangle,
            Marker::Diamond,
        ][index % 4]
    }

    /// The mark's outline around `(x, y)`, `size` pixels from its centre to its edge, as a
    /// closed path (a circle is a 12-gon), so every mark is one element type.
    fn outline(self, (x, y): (i32, i32), size: i32) -> Vec<(i32, i32)> {
        let s = size;
        let mut points = match self {
            Marker::Circle => (0..12)
                .map(|k| {
                    let a = f64::from(k) * std::f64::consts::PI / 6.0;
                    (
                        x + (f64::from(s) * a.cos()).round() as i32,
                        y + (f64::from(s) * a.sin()).round() as i32,
                    )
                })
                .collect(),
            Marker::Square => vec![
                (x - s, y - s),
                (x + s, y - s),
                (x + s, y + s),
                (x - s, y + s),
            ],
            Marker::Triangle => vec![(x, y - s - 1), (x + s + 1, y + s), (x - s - 1, y + s)],
            Marker::Diamond => vec![
                (x, y - s - 1),
                (x + s + 1, y),
                (x, y + s + 1),
                (x - s - 1, y),
            ],
        };
        points.push(points[0]);
        points
    }
}

/// Whether `v` is 1, 2 or 5 times a power of ten (a label worth writing on a log axis).
fn is_round_on_log_axis(v: f64) -> bool {
    if v <= 0.0 || !v.is_finite() {
        return false;
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6 * m)
}

/// A log axis's range and ticks: the range widened to the nearest tick below and above, the
/// ticks that get a label, and the light grid lines between them.
struct LogTicks {
    range: std::ops::Range<f64>,
    labelled: Vec<f64>,
    light: Vec<f64>,
}

/// The ticks of a log axis over `range`: 1, 2 and 5 times each power of ten (each power of
/// two for byte sizes), only the powers when the axis spans more than five of them, light
/// lines at every whole multiple in between; the range is widened to a labelled tick at each
/// end, so every point lies between two labels.
fn log_ticks(range: std::ops::Range<f64>, format: TickFormat) -> LogTicks {
    let base = log_base(format);
    let first = (range.start.log(base) + 1e-9).floor() as i32;
    let last = (range.end.log(base) - 1e-9).ceil() as i32;
    let steps: &[f64] = if base != 10.0 || last - first > 5 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut all: Vec<f64> = Vec::new();
    let mut light: Vec<f64> = Vec::new();
    for k in first..=last {
        let power = base.powi(k);
        all.extend(steps.iter().map(|m| m * power));
        if base == 10.0 {
            light.extend((1..10).map(|m| f64::from(m) * power));
        }
    }
    let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-6;
    let lo = all
        .iter()
        .copied()
        .rfind(|&t| t <= range.start || close(t, range.start))
        .unwrap_or(range.start);
    let hi = all
        .iter()
        .copied()
        .find(|&t| t >= range.end || close(t, range.end))
        .unwrap_or(range.end);
    let within = |t: &f64| *t >= lo * (1.0 - 1e-9) && *t <= hi * (1.0 + 1e-9);
    LogTicks {
        // Just beyond the end ticks, so rounding cannot leave them out.
        range: lo * (1.0 - 1e-9)..hi * (1.0 + 1e-9),
        labelled: all.iter().copied().filter(within).collect(),
        light: light.into_iter().filter(within).collect(),
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
        // Room for a mark at either end; [`LineChart::ranges`] widens this to a tick.
        return lo / 1.1..hi * 1.1;
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
        // Two significant figures, however small (0.001 ms must not read "0").
        let decimals = (2 - v.abs().log10().floor() as i32 - 1).max(2) as usize;
        let s = format!("{v:.decimals$}");
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
    fn a_log_axis_ends_on_labelled_ticks_around_every_point() {
        // The curve: a host p50 of 0.03 ms, tails near 100 ms.
        let t = log_ticks(0.03 / 1.1..98.0 * 1.1, TickFormat::Decimal);
        assert!(
            close(t.range.start, 0.02) && close(t.range.end, 200.0),
            "{:?}",
            t.range
        );
        assert!(close(t.labelled[0], 0.02) && close(*t.labelled.last().unwrap(), 200.0));
        // Over more than five decades only the powers are labelled.
        let t = log_ticks(3.0..2.0e7, TickFormat::Decimal);
        assert!(
            close(t.range.start, 1.0) && close(t.range.end, 1.0e8),
            "{:?}",
            t.range
        );
        assert_eq!(t.labelled.len(), 9);
        // Byte sizes: powers of two.
        let t = log_ticks(4096.0 / 1.1..1048576.0 * 1.1, TickFormat::Bytes);
        assert!(close(t.range.start, 2048.0) && close(t.range.end, 2097152.0));
    }

    fn close(a: f64, b: f64) -> bool {
        (a / b - 1.0).abs() < 1e-6
    }

    #[test]
    fn point_labels_and_an_outside_legend() {
        let mut chart = sweep_chart();
        chart.legend = LegendCorner::Outside;
        chart.point_labels = vec![PointLabels {
            series: 0,
            labels: ["QD1", "QD2", "QD4"].map(String::from).to_vec(),
        }];
        let svg = chart.to_svg().unwrap();
        assert_well_formed_svg(&svg);
        for l in ["QD1", "QD2", "QD4"] {
            assert_eq!(svg.matches(&format!(">\n{l}\n<")).count(), 1, "{l}");
        }
        // The width asked for, the legend in its right part, right of the plot.
        let width: u32 = svg["<svg width=\"".len()..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(width, chart.size.0);
        let legend_x: u32 = svg
            .split("opacity=\"0.85\"")
            .next()
            .unwrap()
            .rsplit("<rect x=\"")
            .next()
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(legend_x > chart.size.0 / 2, "{legend_x}");
        // A legend longer than 40% of the chart widens it.
        let mut long = chart.clone();
        long.series[0].name = "x".repeat(80);
        let svg = long.to_svg().unwrap();
        let wide: u32 = svg["<svg width=\"".len()..]
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(wide > chart.size.0, "{wide}");
        chart.point_labels[0].labels.pop();
        assert!(matches!(
            chart.to_svg(),
            Err(ChartError::PointLabels { series: 0, .. })
        ));
        chart.point_labels[0].series = 7;
        assert!(matches!(
            chart.to_svg(),
            Err(ChartError::PointLabels { .. })
        ));
    }

    #[test]
    fn tick_labels() {
        assert_eq!(format_tick(25_000.0, TickFormat::Decimal), "25k");
        assert_eq!(format_tick(1_500_000.0, TickFormat::Decimal), "1.5M");
        assert_eq!(format_tick(2.5, TickFormat::Decimal), "2.5");
        assert_eq!(format_tick(0.001, TickFormat::Decimal), "0.001");
        assert_eq!(format_tick(0.025, TickFormat::Decimal), "0.025");
        assert_eq!(format_tick(0.1, TickFormat::Decimal), "0.1");
        assert_eq!(format_tick(4096.0, TickFormat::Bytes), "4k");
        assert_eq!(format_tick(1048576.0, TickFormat::Bytes), "1m");
        assert_eq!(format_tick(512.0, TickFormat::Bytes), "512");
        assert_eq!(format_tick(3.0, TickFormat::Count), "3");
        assert_eq!(format_tick(2.5, TickFormat::Count), "");
        for round in [1.0, 2.0, 5.0, 10.0, 20_000.0, 500_000.0] {
            assert!(is_round_on_log_axis(round), "{round}");
        }
        for other in [3.0, 70_000.0, 0.0, -1.0] {
            assert!(!is_round_on_log_axis(other), "{other}");
        }
    }

    #[test]
    fn an_auto_legend_goes_where_the_points_are_not() {
        let mut chart = sweep_chart();
        chart.legend = LegendCorner::Auto;
        // Rising lines: the upper left and lower right are empty, the other two are not.
        assert!(matches!(
            chart.legend_corner(),
            LegendCorner::UpperLeft | LegendCorner::LowerRight
        ));
        // Falling lines (IOPS against block size): the upper right is empty.
        for s in &mut chart.series {
            for p in &mut s.points {
                p.1 = 9000.0 - p.1;
            }
        }
        chart.bands.clear();
        assert_eq!(chart.legend_corner(), LegendCorner::UpperRight);
    }

    #[test]
    fn volumes_by_name_on_a_count_axis_and_overlaps_found() {
        let mut chart = sweep_chart();
        chart.x_ticks = TickFormat::Count;
        chart.x_names = ["sdb", "sdc", "sdd", "sde"].map(String::from).to_vec();
        let svg = chart.to_svg().unwrap();
        for name in ["sdb", "sdc", "sde"] {
            assert!(svg.contains(&format!(">\n{name}\n<")), "no tick {name}");
        }
        assert!(!svg.contains(">\n1.5\n<") && !svg.contains(">\n2.5\n<"));
        assert_eq!(chart.overlaps(), vec![None, None]);
        chart.series[1].points = chart.series[0].points.clone();
        assert_eq!(chart.overlaps(), vec![None, Some(0)]);
        assert!(chart
            .to_svg()
            .unwrap()
            .contains("ideal (sum of caps) (same as measured)"));
    }
}
