//! The suite's HTML page and the sweep's SVG as a browser shows them (headless Chromium): every
//! piece of text at least 12 px at the page's width, and every series visible somewhere in the plot
//! (its legend entry aside), not hidden under another (issue 13, item 3). Runs on regular files, so it needs no root, only
//! Chromium (installed from Debian's packages when missing and we may).

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::*;

/// Measures the page in the browser and writes the findings as JSON into `<pre id="check">`.
/// Text: each SVG `<text>`'s font size times the SVG's display scale, and every HTML element
/// with text of its own. Series: for each colour a line or mark is drawn in (grey and black
/// are axes and grid), the points along its lines and its marks where it is the topmost thing.
const CHECK_SCRIPT: &str = r#"<script>
(function () {
  const out = { small_text: [], text_count: 0, charts: [] };
  const grey = c => { const m = /^#(..)(..)(..)$/.exec(c); return !m || (m[1] === m[2] && m[2] === m[3]); };
  const colourOf = el => {
    for (const a of ['stroke', 'fill']) {
      const v = (el.getAttribute(a) || '').toUpperCase();
      if (v.startsWith('#') && !grey(v)) return v;
    }
    return null;
  };
  for (const svg of document.querySelectorAll('svg')) {
    const vb = svg.viewBox.baseVal;
    const scale = svg.getBoundingClientRect().width / (vb && vb.width ? vb.width : svg.width.baseVal.value);
    for (const t of svg.querySelectorAll('text')) {
      out.text_count++;
      const px = parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * scale;
      if (px < 12) out.small_text.push([t.textContent, px]);
    }
    // elementFromPoint sees only the viewport.
    svg.scrollIntoView();
    const seen = {};
    const hit = (colour, x, y) => {
      const top = document.elementFromPoint(x, y);
      seen[colour] = seen[colour] || { drawn: 0, on_top: 0 };
      seen[colour].drawn++;
      if (top && colourOf(top) === colour) seen[colour].on_top++;
    };
    // The legend's entries come after its background: a line shown only there is hidden.
    const legend = svg.querySelector('rect[opacity="0.85"]');
    // Where data is drawn: every mark's centre and vertex and points along every line
    // (screen pixels), to hold against the axes and the legend box.
    const data = [];
    const screen = (el, x, y) => { const p = svg.createSVGPoint(); p.x = x; p.y = y; return p.matrixTransform(el.getScreenCTM()); };
    for (const el of svg.querySelectorAll('polyline, polygon, circle')) {
      const colour = colourOf(el);
      if (!colour) continue;
      if (legend && (legend.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING)) continue;
      const at = (x, y) => screen(el, x, y);
      if (el.tagName === 'circle') {
        const p = at(el.cx.baseVal.value, el.cy.baseVal.value); hit(colour, p.x, p.y); data.push([p.x, p.y]); continue;
      }
      const pts = Array.from(el.points).map(p => at(p.x, p.y));
      if (el.tagName === 'polygon') {
        const cx = pts.reduce((s, p) => s + p.x, 0) / pts.length, cy = pts.reduce((s, p) => s + p.y, 0) / pts.length;
        hit(colour, cx, cy); data.push([cx, cy]); continue;
      }
      for (const p of pts) data.push([p.x, p.y]);
      for (let i = 1; i < pts.length; i++)
        for (let k = 0; k < 8; k++) {
          const f = (k + 0.5) / 8;
          const x = pts[i - 1].x + f * (pts[i].x - pts[i - 1].x), y = pts[i - 1].y + f * (pts[i].y - pts[i - 1].y);
          hit(colour, x, y); data.push([x, y]);
        }
    }
    // The axes: plotters draws the left and the bottom one as black two-point lines, the
    // longest of each way; the y axis's tick labels are the end-anchored numbers left of it.
    let plot = null;
    for (const el of svg.querySelectorAll("polyline[stroke='#000000']")) {
      const pts = Array.from(el.points).map(p => screen(el, p.x, p.y));
      if (pts.length !== 2) continue;
      const [a, b] = pts;
      plot = plot || { left: Infinity, right: -Infinity, top: Infinity, bottom: -Infinity, v: 0, h: 0 };
      if (Math.abs(a.x - b.x) < 0.5 && Math.abs(a.y - b.y) > plot.v) {
        plot.v = Math.abs(a.y - b.y); plot.left = a.x; plot.top = Math.min(a.y, b.y); plot.bottom = Math.max(a.y, b.y);
      }
      if (Math.abs(a.y - b.y) < 0.5 && Math.abs(a.x - b.x) > plot.h) {
        plot.h = Math.abs(a.x - b.x); plot.right = Math.max(a.x, b.x);
      }
    }
    const y_ticks = [], labels = [];
    for (const t of svg.querySelectorAll('text')) {
      const text = t.textContent.trim();
      const p = screen(t, parseFloat(t.getAttribute('x')), parseFloat(t.getAttribute('y')));
      if (t.getAttribute('text-anchor') === 'end' && /^[0-9.]+[kMG]?$/.test(text)) y_ticks.push(p.y);
      const box = t.getBoundingClientRect();
      labels.push({ text, left: box.left, right: box.right, top: box.top, bottom: box.bottom });
    }
    const lb = legend ? legend.getBoundingClientRect() : null;
    const title = svg.querySelector('text') ? svg.querySelector('text').textContent : '';
    out.charts.push({ title, series: seen, data, plot, y_ticks, labels,
      legend: lb ? { left: lb.left, right: lb.right, top: lb.top, bottom: lb.bottom } : null });
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode, el = node.parentElement;
    if (!node.textContent.trim() || el.closest('svg') || el.closest('script') || el.id === 'check') continue;
    out.text_count++;
    const px = parseFloat(getComputedStyle(el).fontSize);
    if (px < 12) out.small_text.push([node.textContent.trim().slice(0, 40), px]);
  }
  const pre = document.createElement('pre');
  pre.id = 'check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

/// Opens `page` (HTML, or an SVG wrapped in a page) at `width` px in headless Chromium and
/// returns what [`CHECK_SCRIPT`] found.
fn measure_in_browser(chromium: &Path, page_html: &str, dir: &ScratchDir, width: u32) -> Value {
    let with_script = match page_html.rfind("</body>") {
        Some(at) => format!("{}{CHECK_SCRIPT}{}", &page_html[..at], &page_html[at..]),
        None => format!("{page_html}{CHECK_SCRIPT}"),
    };
    let file = dir.join("checked.html");
    std::fs::write(&file, with_script).unwrap();
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            &format!("--window-size={width},1200"),
            "--virtual-time-budget=3000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"check\">").unwrap_or_else(|| {
        panic!(
            "no findings in the page: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    }) + "<pre id=\"check\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("findings are not JSON ({e}): {json}"))
}

/// Asserts the findings: enough text, none under 12 px, and every series colour on top somewhere.
fn assert_readable_and_every_series_visible(found: &Value, what: &str, min_series: usize) {
    assert!(
        found["text_count"].as_u64().unwrap() > 10,
        "{what}: {found}"
    );
    assert_eq!(
        found["small_text"].as_array().unwrap().len(),
        0,
        "{what}: text under 12 px: {}",
        found["small_text"]
    );
    for chart in found["charts"].as_array().unwrap() {
        let series = chart["series"].as_object().unwrap();
        assert!(
            series.len() >= min_series,
            "{what}, chart {}: only {} colours drawn: {chart}",
            chart["title"],
            series.len()
        );
        for (colour, seen) in series {
            assert!(
                seen["on_top"].as_u64().unwrap() > 0,
                "{what}, chart {}: the series in {colour} is hidden everywhere: {chart}",
                chart["title"]
            );
        }
    }
}

fn hostmax_ok(args: &[&str], dir: &ScratchDir) {
    let out = Command::new(hostmax_bin())
        .args(args)
        .current_dir(&dir.0)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "hostmax {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn suite_page_and_sweep_chart_read_well_in_a_browser() {
    let chromium = match require_tool("chromium", "chromium") {
        Ok(path) => path,
        Err(why) => skip!("{why}"),
    };
    let dir = ScratchDir::new("charts-rendered");
    let files: Vec<String> = (0..3)
        .map(|i| dir.file(&format!("vol{i}"), 16 << 20).display().to_string())
        .collect();
    // A suite whose 100% read and 100% write lines lie on each other (a file on tmpfs reads
    // and writes alike), with volume and host promises to draw.
    let mut suite = vec!["suite", "iops", "--devices"];
    suite.extend(files.iter().map(String::as_str));
    suite.extend([
        "--block-sizes",
        "4k,64k",
        "--mixes",
        "100/0,0/100",
        "--cell-time",
        "100ms",
        "--max-rounds",
        "5",
        "--html",
        "page.html",
        "--expect-volume-iops",
        "1000",
        "--expect-host-iops",
        "3000",
    ]);
    hostmax_ok(&suite, &dir);
    let page = std::fs::read_to_string(dir.join("page.html")).unwrap();
    // Human labels and the per-cell latency table.
    for text in [
        "100% read",
        "100% write",
        "4 KiB, 100% write",
        "Latency by read/write mix and block size",
        "promised for the host",
        "vol2",
    ] {
        assert!(page.contains(text), "the page lacks {text:?}");
    }
    assert!(
        !page.contains("4k_0_100 each round"),
        "a raw key in a legend"
    );
    for width in [1000, 800] {
        let found = measure_in_browser(&chromium, &page, &dir, width);
        assert_readable_and_every_series_visible(&found, &format!("suite page at {width} px"), 2);
    }

    let mut sweep = vec!["sweep", "--devices"];
    sweep.extend(files.iter().map(String::as_str));
    sweep.extend([
        "--steps",
        "1,2,3",
        "--runtime",
        "1s",
        "--ramp",
        "0s",
        "--svg",
        "sweep.svg",
    ]);
    hostmax_ok(&sweep, &dir);
    let svg = std::fs::read_to_string(dir.join("sweep.svg")).unwrap();
    let svg = &svg[svg.find("<svg").expect("an svg element")..];
    let wrapped = format!("<!DOCTYPE html><html><body style=\"margin:0\">{svg}</body></html>");
    let found = measure_in_browser(&chromium, &wrapped, &dir, 820);
    assert_readable_and_every_series_visible(&found, "sweep chart", 2);
}

#[test]
fn identical_series_are_told_apart_in_a_browser() {
    use hostmax::chart::{LineChart, Series, SeriesStyle, TickFormat};
    let chromium = match require_tool("chromium", "chromium") {
        Ok(path) => path,
        Err(why) => skip!("{why}"),
    };
    let dir = ScratchDir::new("charts-identical");
    // The issue's case: 100/0 and 0/100 measuring the same, one line under the other.
    let line = vec![(4096.0, 50_000.0), (65536.0, 6_000.0), (1048576.0, 400.0)];
    let chart = LineChart {
        title: "IOPS by block size".into(),
        x_label: "block size".into(),
        y_label: "IOPS".into(),
        x_log: true,
        y_log: true,
        x_ticks: TickFormat::Bytes,
        series: ["100% read", "100% write"]
            .map(|name| Series {
                name: name.into(),
                points: line.clone(),
                style: SeriesStyle::Solid,
            })
            .to_vec(),
        ..LineChart::default()
    };
    assert_eq!(chart.overlaps(), vec![None, Some(0)]);
    let svg = chart.to_svg().unwrap();
    assert!(svg.contains("100% write (same as 100% read)"), "{svg}");
    let svg = &svg[svg.find("<svg").unwrap()..];
    let page = format!("<!DOCTYPE html><html><body style=\"margin:0\">{svg}</body></html>");
    let found = measure_in_browser(&chromium, &page, &dir, 820);
    assert_readable_and_every_series_visible(&found, "two identical series", 2);
}

/// The axes' edges in pixels: (left, right, top, bottom).
type PlotBox = (f64, f64, f64, f64);

/// The axes' extent of `chart` (as [`CHECK_SCRIPT`] found it) and each drawn data position:
/// `(left, right, top, bottom)` and `(x, y)` pixels.
fn plot_and_data(chart: &Value) -> (PlotBox, Vec<(f64, f64)>) {
    let p = &chart["plot"];
    let f = |k: &str| {
        p[k].as_f64()
            .unwrap_or_else(|| panic!("no axes found: {chart}"))
    };
    let data = chart["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|xy| (xy[0].as_f64().unwrap(), xy[1].as_f64().unwrap()))
        .collect();
    ((f("left"), f("right"), f("top"), f("bottom")), data)
}

#[test]
fn a_curve_chart_labels_each_depth_keeps_its_legend_off_the_data_and_its_axes_around_it() {
    let chromium = match require_tool("chromium", "chromium") {
        Ok(path) => path,
        Err(why) => skip!("{why}"),
    };
    let dir = ScratchDir::new("charts-curve");
    let files: Vec<String> = (0..4)
        .map(|i| dir.file(&format!("vol{i}"), 16 << 20).display().to_string())
        .collect();
    // Four volumes on tmpfs: the host's p50 is tens of microseconds, far below 0.1 ms, and
    // the volumes' lines run along the bottom left where a corner legend sat.
    let mut curve = vec!["curve", "--devices"];
    curve.extend(files.iter().map(String::as_str));
    curve.extend([
        "--depths",
        "1,2,4,8",
        "--runtime",
        "200ms",
        "--ramp",
        "0s",
        "--p99-max",
        "1ms",
        "--svg",
        "curve.svg",
    ]);
    hostmax_ok(&curve, &dir);
    let svg = std::fs::read_to_string(dir.join("curve.svg")).unwrap();
    let svg = &svg[svg.find("<svg").expect("an svg element")..];
    let page = format!("<!DOCTYPE html><html><body style=\"margin:0\">{svg}</body></html>");
    let width: u32 = svg
        .split("width=\"")
        .nth(1)
        .and_then(|w| w.split('"').next())
        .and_then(|w| w.parse().ok())
        .expect("the svg's width");
    let found = measure_in_browser(&chromium, &page, &dir, width + 20);
    // Files on tmpfs make four like volume lines that may lie on each other: only the text
    // is held to the other charts' rule here.
    assert_eq!(
        found["small_text"].as_array().unwrap().len(),
        0,
        "text under 12 px: {}",
        found["small_text"]
    );
    let chart = &found["charts"][0];
    let ((left, right, top, bottom), data) = plot_and_data(chart);
    assert!(data.len() > 20, "{chart}");
    // Every point and line inside the axes, and between the lowest and the highest labelled
    // tick of the latency axis (readable off it).
    let ticks: Vec<f64> = chart["y_ticks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|y| y.as_f64().unwrap())
        .collect();
    assert!(ticks.len() >= 2, "{chart}");
    let (tick_top, tick_bottom) = ticks
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &y| {
            (a.min(y), b.max(y))
        });
    for &(x, y) in &data {
        assert!(
            (left - 1.0..=right + 1.0).contains(&x) && (top - 1.0..=bottom + 1.0).contains(&y),
            "({x}, {y}) outside the axes {left}..{right} x {top}..{bottom}"
        );
        assert!(
            (tick_top - 1.0..=tick_bottom + 1.0).contains(&y),
            "({x}, {y}) beyond the labelled ticks {tick_top}..{tick_bottom}: {ticks:?}"
        );
    }
    // The legend box covers no point and no line.
    let legend = &chart["legend"];
    let l = |k: &str| legend[k].as_f64().expect("a legend box");
    for &(x, y) in &data {
        assert!(
            !((l("left")..=l("right")).contains(&x) && (l("top")..=l("bottom")).contains(&y)),
            "({x}, {y}) under the legend {legend}"
        );
    }
    // One depth label per point of each host line (p99 and p50), inside the axes.
    let depth_labels: Vec<&Value> = chart["labels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["text"].as_str().unwrap().starts_with("QD"))
        .collect();
    for depth in ["QD1", "QD2", "QD4", "QD8"] {
        assert_eq!(
            depth_labels.iter().filter(|t| t["text"] == depth).count(),
            2,
            "{depth} on each host line: {depth_labels:?}"
        );
    }
    assert_eq!(depth_labels.len(), 8, "{depth_labels:?}");
    for t in &depth_labels {
        let f = |k: &str| t[k].as_f64().unwrap();
        assert!(
            f("left") >= left && f("right") <= right && f("top") >= top && f("bottom") <= bottom,
            "{t} outside the axes"
        );
    }
}
