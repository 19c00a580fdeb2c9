//! `--svg`: a chart of the command's result (`hostmax sweep`'s IOPS against volumes,
//! `hostmax curve`'s latency against IOPS) as an SVG file, the [`SvgChart`] output.

use super::destination::{write_output, Destination, OutputFile, SVG};
use super::export::Export;
use crate::chart::LineChart;

/// `--svg`: the chart `draw` makes of the result, drawn to a file whole.
pub struct SvgChart<F>(pub F);

impl<R: ?Sized, F: Fn(&R) -> LineChart> Export<R> for SvgChart<F> {
    fn file(&self) -> &'static OutputFile {
        &SVG
    }

    fn write(self: Box<Self>, dest: &Destination, result: &R) -> anyhow::Result<()> {
        let svg = (self.0)(result).to_svg()?;
        Ok(write_output(&SVG, dest, svg.as_bytes())?)
    }
}
