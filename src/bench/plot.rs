//! The SVG plot of a run: the speedup of the plan (`spgpu-auto`) over the fastest cuSPARSE
//! variant per matrix, on a log axis with a line at 1.0, one panel per group (memory-bound,
//! latency-bound; see [`summary`](super::summary)), f64 and f32 as two series.

use super::report::Report;
use super::summary::{self, fmt_mb, Bound, MatrixSummary};
use super::BenchResult;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The speedups marked on the vertical axis (those within the panel's range).
const TICKS: [f64; 19] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0, 50.0, 100.0, 1000.0];

/// Height of one panel in pixels.
const PANEL_HEIGHT: u32 = 600;

/// The precisions and how they are drawn: colour and whether the marker is a circle (f64)
/// or a triangle (f32).
const SERIES: [(&str, RGBColor, bool); 2] =
    [("f64", RGBColor(31, 119, 180), true), ("f32", RGBColor(255, 127, 14), false)];

/// Draws the plot into `path` (SVG).
///
/// In each panel the matrices are columns sorted by working set (the byte model's bytes,
/// the larger precision's), labelled with their name and size in MB; each precision is a
/// series of markers at `t_cusparse / t_auto`. Above the line at 1.0 the plan is faster.
/// A group without any speedup (no cuSPARSE time, or no matrix of that kind) has no panel.
///
/// # Errors
///
/// When the file cannot be written, or no matrix has both an auto and a cuSPARSE time.
pub fn plot_svg(r: &Report, path: &Path) -> BenchResult<()> {
    let rows = summary::matrices(r);
    let panels: Vec<(Bound, Vec<&MatrixSummary>)> = [Bound::Memory, Bound::Latency]
        .into_iter()
        .map(|b| (b, rows.iter().filter(|m| m.bound == b && m.speedup().is_finite()).collect::<Vec<_>>()))
        .filter(|(_, ms)| !ms.is_empty())
        .collect();
    if panels.is_empty() {
        return Err("nothing to plot: no matrix has both a spgpu-auto and a cuSPARSE time".into());
    }
    let columns = |ms: &[&MatrixSummary]| {
        let mut names: Vec<String> = Vec::new();
        for m in ms {
            if !names.contains(&m.matrix) {
                names.push(m.matrix.clone());
            }
        }
        names
    };
    let widest = panels.iter().map(|(_, ms)| columns(ms).len()).max().unwrap_or(1) as u32;
    let width = (200 + 40 * widest).max(900);
    let root = SVGBackend::new(path, (width, PANEL_HEIGHT * panels.len() as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((panels.len(), 1));
    for ((bound, ms), area) in panels.iter().zip(&areas) {
        draw_panel(r, *bound, ms, &columns(ms), area)?;
    }
    root.present()?;
    Ok(())
}

/// One panel: the matrices of one group.
fn draw_panel(
    r: &Report,
    bound: Bound,
    ms: &[&MatrixSummary],
    names: &[String],
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
) -> BenchResult<()> {
    let speedups = ms.iter().map(|m| m.speedup());
    let lo = speedups.clone().fold(1.0f64, f64::min);
    let hi = speedups.fold(1.0f64, f64::max);
    let l2 = if r.run.l2_bytes > 0 { format!("L2 = {} MB", fmt_mb(r.run.l2_bytes)) } else { "L2 unknown".into() };
    let rel = if bound == Bound::Memory { ">" } else { "<=" };
    let gpu = if r.run.gpu.is_empty() { String::new() } else { format!(", {}", r.run.gpu) };
    let title = format!("spgpu auto vs fastest cuSPARSE: {} (working set {rel} {l2}{gpu})", bound.name());
    let n = names.len();
    let (bottom, top) = (lo / 1.4, hi * 1.4);
    let ticks: Vec<f64> = TICKS.iter().copied().filter(|t| (bottom..=top).contains(t)).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(200)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (0..n.saturating_sub(1)).into_segmented(),
            (bottom..top).log_scale().with_key_points(ticks),
        )?;
    chart
        .configure_mesh()
        .x_labels(n)
        // the matrix names are drawn below, rotated and starting at the axis
        .x_label_formatter(&|_| String::new())
        .y_desc("t_cuSPARSE / t_auto (log; above 1: spgpu faster)")
        .y_label_formatter(&|v| format!("{}x", summary::fmt_sig(*v)))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            vec![(SegmentValue::Exact(0), 1.0), (SegmentValue::Last, 1.0)],
            BLACK.stroke_width(2),
        ))?
        .label("1.0x: as fast as cuSPARSE")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.stroke_width(2)));
    let name_style = ("sans-serif", 12)
        .into_font()
        .transform(FontTransform::Rotate90)
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    // backend coordinates are the whole image's; the panel draws relative to its corner
    let (bx, by) = area.get_base_pixel();
    for (i, name) in names.iter().enumerate() {
        let size = ms.iter().filter(|m| &m.matrix == name).map(|m| m.working_set).max().unwrap_or(0);
        let (px, py) = chart.backend_coord(&(SegmentValue::CenterOf(i), bottom));
        area.draw(&Text::new(format!("{name} ({} MB)", fmt_mb(size)), (px - bx, py - by + 8), name_style.clone()))?;
    }
    for (scalar, color, circle) in SERIES {
        let pts: Vec<(usize, f64)> = ms
            .iter()
            .filter(|m| m.scalar == scalar)
            .filter_map(|m| names.iter().position(|x| *x == m.matrix).map(|i| (i, m.speedup())))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let style = color.filled();
        let at = |i: usize| SegmentValue::CenterOf(i);
        let label = format!("{scalar} (geomean {})", summary::fmt_speedup(summary::geomean(pts.iter().map(|p| p.1))));
        if circle {
            chart
                .draw_series(pts.iter().map(|&(i, v)| Circle::new((at(i), v), 5, style)))?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 8, y), 5, style));
        } else {
            chart
                .draw_series(pts.iter().map(|&(i, v)| TriangleMarker::new((at(i), v), 6, style)))?
                .label(label)
                .legend(move |(x, y)| TriangleMarker::new((x + 8, y), 6, style));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::summary::tests::synthetic;
    use super::*;

    #[test]
    fn writes_one_panel_per_group_with_both_precisions() {
        let path = std::env::temp_dir().join(format!("spgpu-plot-test-{}.svg", std::process::id()));
        plot_svg(&synthetic(), &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60.min(svg.len())]);
        // the second panel's labels are drawn inside it (below its half of the image)
        let small = svg.find("small (1.00 MB)").unwrap();
        let y: f64 = svg[..small].rsplit(" y=\"").next().unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(y > f64::from(PANEL_HEIGHT) && y < f64::from(2 * PANEL_HEIGHT), "{y}");
        for text in [
            "memory-bound (working set &gt; L2 = 50.0 MB)",
            "latency-bound (working set &lt;= L2 = 50.0 MB)",
            "big (200 MB)",
            "mid (80.0 MB)",
            "small (1.00 MB)",
            "1.0x: as fast as cuSPARSE",
            "f64 (geomean 0.98x)",
            "f32 (geomean 1.25x)",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        // only the latency-bound group left: one panel, half the height
        let mut r = synthetic();
        r.run.l2_bytes = 1 << 40;
        plot_svg(&r, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(!svg.contains("memory-bound") && svg.contains("latency-bound"));
        assert!(svg.contains(&format!("height=\"{PANEL_HEIGHT}\"")), "{}", &svg[..200]);
        // without cuSPARSE there is nothing to plot
        r.measurements.retain(|m| !m.implementation.starts_with("cusparse"));
        let e = plot_svg(&r, &path).unwrap_err().to_string();
        std::fs::remove_file(&path).ok();
        assert!(e.contains("nothing to plot"), "{e}");
    }
}
