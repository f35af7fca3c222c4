//! The report's plots (their data: [`crate::experiment::chart`]) as SVG text (plotters' SVG backend: no fonts, no bitmaps; the browser
//! draws the text): grouped bars with the repetitions' spread and the seed's ratio marked, and
//! line plots for curves (latency percentiles, page cache over time).

use std::ops::Range;

use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::experiment::chart::{Bars, Chart, Line, Lines};

/// Draws `chart` as an SVG document.
pub fn draw(chart: &Chart) -> Result<String> {
    match chart {
        Chart::Bars(b) => bars(b),
        Chart::Lines(l) => lines(l),
    }
}

/// Bar plots' size in pixels.
const BARS: (u32, u32) = (900, 380);
/// Line plots' size in pixels.
const LINES: (u32, u32) = (440, 320);

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a plot: {e}")
}

/// Height in pixels of one legend line under a plot.
const KEY_LINE: u32 = 19;

/// The legend's height under a plot of `entries` lines: legends sit outside the plotting area,
/// so the axes are fitted to the data alone.
fn legend_height(entries: usize) -> u32 {
    entries as u32 * KEY_LINE + 10
}

/// What a legend line shows beside its name.
#[derive(Clone, Copy)]
enum Key {
    /// A filled box (a bar series).
    Bar(RGBAColor),
    /// A short line (a curve, or the seed's mark).
    Stroke(ShapeStyle),
}

/// Draws `keys` one per line on `area` (the strip under the plot), from its top left.
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    keys: &[(String, Key)],
    left: i32,
) -> Result<()> {
    for (i, (name, key)) in keys.iter().enumerate() {
        let y = 4 + (i as u32 * KEY_LINE) as i32 + KEY_LINE as i32 / 2;
        let drawn = match key {
            Key::Bar(c) => area.draw(&Rectangle::new(
                [(left, y - 5), (left + 14, y + 5)],
                c.filled(),
            )),
            Key::Stroke(style) => {
                area.draw(&PathElement::new(vec![(left, y), (left + 14, y)], *style))
            }
        };
        drawn.map_err(err)?;
        let font =
            TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        area.draw(&Text::new(name.clone(), (left + 22, y), font))
            .map_err(err)?;
    }
    Ok(())
}

/// True when positive `values` span two decades or more: a log axis shows them all.
fn spans_decades(values: impl Iterator<Item = f64>) -> bool {
    let (lo, hi) = values
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    lo.is_finite() && hi / lo >= 100.0
}

/// Axis numbers, short: `1.2M`, `140k`, `9000`, `2.5`, `0.25`.
fn tick(v: &f64) -> String {
    let a = v.abs();
    if a >= 1e7 {
        format!("{:.0}M", v / 1e6)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Draws the bars of `spec` on `area` with the y range `$y` (linear or log), bars rising from
/// `$base`.
macro_rules! bar_chart {
    ($area:expr, $spec:expr, $y:expr, $base:expr) => {{
        let spec = $spec;
        let base: f64 = $base;
        let n = spec.groups.len().max(1);
        let mut chart = ChartBuilder::on($area)
            .caption(&spec.title, ("sans-serif", 21))
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), $y)
            .map_err(err)?;
        let label_at = |x: &f64| {
            let i = x.round();
            let near = (x - i).abs() < 0.01 && i >= 0.0;
            let label = near.then(|| spec.groups.get(i as usize)).flatten();
            label.map_or(String::new(), |g| g.label.clone())
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .max_light_lines(2)
            .x_labels(n + 1)
            .x_label_formatter(&label_at)
            .y_label_formatter(&tick)
            .y_desc(spec.y_label.as_str())
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(err)?;
        let m = spec.series.len().max(1);
        let width = 0.8 / m as f64;
        let slot = |gi: usize, si: usize| {
            let x0 = gi as f64 - 0.4 + si as f64 * width;
            (x0 + 0.012, x0 + width - 0.012)
        };
        for si in 0..spec.series.len() {
            let color = Palette99::pick(si).to_rgba();
            let values = || {
                spec.groups.iter().enumerate().filter_map(move |(gi, g)| {
                    g.values
                        .get(si)
                        .copied()
                        .flatten()
                        .map(|v| (slot(gi, si), v))
                })
            };
            chart
                .draw_series(values().map(|((a, b), v)| {
                    Rectangle::new([(a, base), (b, v.value.max(base))], color.filled())
                }))
                .map_err(err)?;
            chart
                .draw_series(values().filter(|(_, v)| v.high > v.low).map(|((a, b), v)| {
                    let mid = (a + b) / 2.0;
                    PathElement::new(
                        vec![(mid, v.low.max(base)), (mid, v.high.max(base))],
                        BLACK.stroke_width(1),
                    )
                }))
                .map_err(err)?;
        }
        let marks = spec.groups.iter().enumerate().flat_map(|(gi, g)| {
            let marks = g.values.iter().enumerate();
            marks.filter_map(move |(si, v)| Some((slot(gi, si), (*v)?.mark?)))
        });
        chart
            .draw_series(marks.map(|((a, b), y)| {
                PathElement::new(
                    vec![(a, y.max(base)), (b, y.max(base))],
                    MARK.stroke_width(3),
                )
            }))
            .map_err(err)?;
    }};
}

/// The seed's marks' colour.
const MARK: RGBColor = RGBColor(25, 25, 25);

/// Draws `spec` as SVG: the legend under the plot, the y axis fitted to the bars (from zero,
/// or logarithmic when they span two decades or more).
pub fn bars(spec: &Bars) -> Result<String> {
    let marked = spec
        .groups
        .iter()
        .any(|g| g.values.iter().flatten().any(|v| v.mark.is_some()));
    let mut keys: Vec<(String, Key)> = spec
        .series
        .iter()
        .enumerate()
        .map(|(i, name)| (name.clone(), Key::Bar(Palette99::pick(i).to_rgba())))
        .collect();
    if marked {
        keys.push((spec.mark_label.clone(), Key::Stroke(MARK.stroke_width(3))));
    }
    svg(BARS, &keys, 76, |plot_area| {
        let heights = || {
            spec.groups
                .iter()
                .flat_map(|g| g.values.iter().flatten())
                .flat_map(|v| [v.value, v.low, v.high, v.mark.unwrap_or(v.value)])
        };
        let top = heights().fold(0.0f64, f64::max);
        if spans_decades(heights()) {
            let lo = heights().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min) / 1.5;
            bar_chart!(plot_area, spec, (lo..top * 1.5).log_scale(), lo);
        } else {
            bar_chart!(plot_area, spec, 0f64..(top * 1.05).max(1e-9), 0.0);
        }
        Ok(())
    })
}

/// An SVG document: the plot `draw` makes on an area of `size`, and the legend `keys` under
/// it from `left`.
fn svg(
    size: (u32, u32),
    keys: &[(String, Key)],
    left: i32,
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let full = (size.0, size.1 + legend_height(keys.len()));
        let root = SVGBackend::with_string(&mut svg, full).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, key_area) = root.split_vertically(size.1);
        draw(&plot_area)?;
        legend(&key_area, keys, left)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// The smallest range holding every point's coordinate `f`, widened when flat.
fn extent(lines: &[Line], f: impl Fn(&(f64, f64)) -> f64) -> Range<f64> {
    let vals = lines.iter().flat_map(|l| l.points.iter().map(&f));
    let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    if !lo.is_finite() || !hi.is_finite() {
        return 0.0..1.0;
    }
    if hi - lo < 1e-9 {
        return lo - 0.5..hi + 0.5;
    }
    lo..hi
}

/// Draws a line chart on `root` with the y coordinate `$y` (a linear or a log range).
macro_rules! line_chart {
    ($root:expr, $spec:expr, $x:expr, $y:expr) => {{
        let spec = $spec;
        let mut chart = ChartBuilder::on($root)
            .caption(&spec.title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(34)
            .y_label_area_size(58)
            .build_cartesian_2d($x, $y)
            .map_err(err)?;
        chart
            .configure_mesh()
            .max_light_lines(2)
            .x_labels(6)
            .x_label_formatter(&|x| spec.x_ticks.label(x))
            .y_label_formatter(&tick)
            .x_desc(spec.x_label.as_str())
            .y_desc(spec.y_label.as_str())
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(err)?;
        for (i, line) in spec.lines.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(err)?;
        }
    }};
}

/// Draws `spec` as SVG: the legend under the plot, the axes fitted to the curves (log y from
/// just under the lowest point to just over the highest).
pub fn lines(spec: &Lines) -> Result<String> {
    let stroke = |i| Key::Stroke(Palette99::pick(i).to_rgba().stroke_width(2));
    let keys: Vec<(String, Key)> = spec
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.clone(), stroke(i)))
        .collect();
    svg(LINES, &keys, 66, |plot_area| {
        let x = extent(&spec.lines, |p| p.0);
        let y = extent(&spec.lines, |p| p.1);
        if spec.log_y {
            let lo = (y.start.max(1e-3) / 1.3).max(1e-3);
            let hi = (y.end * 1.3).max(lo * 10.0);
            line_chart!(plot_area, spec, x, (lo..hi).log_scale());
        } else {
            let lo = y.start.min(0.0);
            let hi = if y.end > 0.0 { y.end * 1.05 } else { 1.0 };
            line_chart!(plot_area, spec, x, lo..hi);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::chart::{BarGroup, BarValue, XTicks};

    /// The y of the `<text>` element whose content is `label`.
    fn text_y(svg: &str, label: &str) -> Option<f64> {
        let end = svg.find(&format!(">\n{label}\n</text>"))?;
        let start = svg[..end].rfind("<text")?;
        let attrs = &svg[start..end];
        attrs.split(" y=\"").nth(1)?.split('"').next()?.parse().ok()
    }

    #[test]
    fn bars_draw_every_bar_and_mark() -> Result<()> {
        let spec = Bars {
            title: "t <1>".into(),
            y_label: "MB/s".into(),
            series: vec!["a".into(), "b".into()],
            groups: vec![
                BarGroup {
                    label: "g0".into(),
                    values: vec![Some(BarValue::plain(10.0)), None],
                },
                BarGroup {
                    label: "g1".into(),
                    values: vec![
                        Some(BarValue::plain(5.0)),
                        Some(BarValue::plain(20.0).marked(Some(25.0))),
                    ],
                },
            ],
            mark_label: "seed".into(),
        };
        let svg = bars(&spec)?;
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // The legend is under the plotting area, not over the bars.
        for label in ["a", "b", "seed"] {
            let y = text_y(&svg, label).expect("legend text");
            assert!(y >= BARS.1 as f64, "{label} at y {y}");
        }
        assert!(svg.contains("t &lt;1&gt;"), "title escaped");
        for label in ["g0", "g1", "a", "b", "seed"] {
            let text = format!(">\n{label}\n</text>");
            assert!(svg.contains(&text), "{label} missing");
        }
        Ok(())
    }

    #[test]
    fn lines_draw_on_linear_and_log_axes() -> Result<()> {
        for log_y in [false, true] {
            let svg = lines(&Lines {
                title: "curve".into(),
                x_label: "x".into(),
                y_label: "y".into(),
                lines: vec![Line {
                    name: "l1".into(),
                    points: vec![(0.0, 1.0), (1.0, 10.0), (2.0, 100.0)],
                }],
                log_y,
                x_ticks: XTicks::Seconds,
            })?;
            assert!(svg.contains("<polyline") || svg.contains("<path"), "{svg}");
            assert!(svg.contains(">\nl1\n</text>"));
        }
        assert_eq!(extent(&[], |p| p.0), 0.0..1.0);
        let ticks = [1e8, 1.2e6, 140_000.0, 9000.0, 2.5, 0.25].map(|v| tick(&v));
        assert_eq!(ticks, ["100M", "1.2M", "140k", "9000", "2.5", "0.25"]);
        assert!(legend_height(6) > legend_height(2));
        assert!(spans_decades([18.0, 19.0, 2500.0].into_iter()));
        assert!(!spans_decades([18.0, 19.0, 0.0].into_iter()));
        Ok(())
    }
}
