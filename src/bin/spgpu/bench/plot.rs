//! The SVG plot of a run: GB/s (minimal byte model, log axis) per matrix and
//! implementation, with the copy bandwidth of the same run drawn as the limit.

use super::report::{implementations, Report};
use super::BenchResult;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// The series of the best spgpu kernel (auto or forced) of each matrix.
const SPGPU_BEST: &str = "spgpu, best kernel";

/// Marker shapes, cycled per implementation so that series stay apart in grey print too.
#[derive(Clone, Copy)]
enum Shape {
    Circle,
    Triangle,
    Cross,
}

/// Draws the plot into `path` (SVG).
///
/// Each matrix (and precision, when the run has both) is a column; each implementation a
/// series of markers at its best GB/s there (CUDA-graph or event timing, whichever is
/// faster); the spgpu kernels appear as `spgpu-auto` (the plan's choice) and as the best
/// kernel of each matrix. The horizontal red line is the measured device-to-device copy
/// bandwidth.
///
/// # Errors
///
/// When the file cannot be written, or the report holds no positive GB/s figure.
pub fn plot_svg(r: &Report, path: &Path) -> BenchResult<()> {
    let mut keys: Vec<(String, &str)> = Vec::new();
    for m in &r.measurements {
        if !keys.iter().any(|(n, s)| *n == m.matrix && *s == m.scalar) {
            keys.push((m.matrix.clone(), m.scalar));
        }
    }
    let both = keys.iter().any(|k| k.1 != keys[0].1);
    let labels: Vec<String> = keys.iter().map(|(n, s)| if both { format!("{n} {s}") } else { n.clone() }).collect();
    // spgpu-auto, the best spgpu kernel per matrix, and every other implementation: the
    // forced kernels one by one are in the tables, not in the plot
    let mut names = vec!["spgpu-auto".to_string(), SPGPU_BEST.to_string()];
    names.extend(implementations(r).into_iter().filter(|i| !i.starts_with("spgpu")));
    let imps: Vec<String> = names
        .into_iter()
        .filter(|n| n == SPGPU_BEST || r.measurements.iter().any(|m| &m.implementation == n))
        .collect();
    let member = |imp: &str, m: &str| if imp == SPGPU_BEST { m.starts_with("spgpu") } else { m == imp };
    let series: Vec<Vec<(usize, f64)>> = imps
        .iter()
        .map(|imp| {
            keys.iter()
                .enumerate()
                .filter_map(|(i, (name, scalar))| {
                    r.measurements
                        .iter()
                        .filter(|m| &m.matrix == name && m.scalar == *scalar && member(imp, &m.implementation))
                        .map(|m| m.gbps)
                        .filter(|g| g.is_finite() && *g > 0.0)
                        .max_by(f64::total_cmp)
                        .map(|g| (i, g))
                })
                .collect()
        })
        .collect();
    let all = series.iter().flatten().map(|p| p.1);
    let lo = all.clone().fold(f64::INFINITY, f64::min);
    let mut hi = all.fold(0.0, f64::max);
    if !lo.is_finite() || hi <= 0.0 {
        return Err("nothing to plot: no measurement has a positive GB/s".into());
    }
    let copy = r.run.copy_gbps;
    if copy.is_finite() {
        hi = hi.max(copy);
    }
    let n = keys.len();
    let width = (160 + 26 * n as u32).max(900);
    let root = SVGBackend::new(path, (width, 720)).into_drawing_area();
    root.fill(&WHITE)?;
    let title = if r.run.gpu.is_empty() {
        "SpMV throughput by the minimal byte model".to_string()
    } else {
        format!("SpMV throughput by the minimal byte model ({})", r.run.gpu)
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(190)
        .y_label_area_size(70)
        .build_cartesian_2d((0..n).into_segmented(), (lo * 0.7..hi * 1.6).log_scale())?;
    chart
        .configure_mesh()
        .x_labels(n)
        // the matrix names are drawn below, rotated and starting at the axis
        .x_label_formatter(&|_| String::new())
        .y_desc("GB/s (log)")
        .y_label_formatter(&|v| if *v >= 1.0 { format!("{v:.0}") } else { format!("{v:.2}") })
        .draw()?;
    if copy.is_finite() {
        chart
            .draw_series(LineSeries::new(
                vec![(SegmentValue::Exact(0), copy), (SegmentValue::Last, copy)],
                RED.stroke_width(2),
            ))?
            .label(format!("copy bandwidth {copy:.0} GB/s"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED.stroke_width(2)));
    }
    let name_style = ("sans-serif", 12)
        .into_font()
        .transform(FontTransform::Rotate90)
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, label) in labels.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(SegmentValue::CenterOf(i), lo * 0.7));
        root.draw(&Text::new(label.clone(), (px, py + 8), name_style.clone()))?;
    }
    let shapes = [Shape::Circle, Shape::Triangle, Shape::Cross];
    for (k, (imp, pts)) in imps.iter().zip(&series).enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let shape = shapes[k % shapes.len()];
        let style = if matches!(shape, Shape::Cross) { color.stroke_width(2) } else { color.filled() };
        let at = |i: usize| SegmentValue::CenterOf(i);
        let drawn = match shape {
            Shape::Circle => chart.draw_series(pts.iter().map(|&(i, g)| Circle::new((at(i), g), 5, style)))?,
            Shape::Triangle => {
                chart.draw_series(pts.iter().map(|&(i, g)| TriangleMarker::new((at(i), g), 6, style)))?
            }
            Shape::Cross => chart.draw_series(pts.iter().map(|&(i, g)| Cross::new((at(i), g), 5, style)))?,
        };
        let drawn = drawn.label(imp.clone());
        match shape {
            Shape::Circle => drawn.legend(move |(x, y)| Circle::new((x + 8, y), 5, style)),
            Shape::Triangle => drawn.legend(move |(x, y)| TriangleMarker::new((x + 8, y), 6, style)),
            Shape::Cross => drawn.legend(move |(x, y)| Cross::new((x + 8, y), 5, style)),
        };
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::report::{Measurement, RunInfo};
    use super::super::timing::Method;
    use super::*;

    #[test]
    fn writes_an_svg_with_every_matrix_and_the_limit() {
        let meas = |matrix: &str, imp: &str, gbps: f64| Measurement {
            matrix: matrix.into(),
            scalar: "f64",
            implementation: imp.into(),
            method: Method::Events,
            seconds: 1e-4,
            min_seconds: 1e-4,
            max_seconds: 1e-4,
            per_rep: 1,
            reps: 1,
            bytes: 1,
            format_bytes: 1,
            gbps,
            fraction: gbps / 4280.0,
            rel_error: 0.0,
            correct: true,
        };
        let r = Report {
            run: RunInfo { gpu: "test GPU".into(), copy_gbps: 4280.0, ..Default::default() },
            measurements: vec![
                meas("cage10", "spgpu-auto", 900.0),
                meas("cage10", "cusparse-alg1", 700.0),
                meas("lap2d:2000", "spgpu-auto", 4100.0),
                meas("lap2d:2000", "cpu-sprs", 40.0),
            ],
            ..Default::default()
        };
        let path = std::env::temp_dir().join(format!("spgpu-plot-test-{}.svg", std::process::id()));
        plot_svg(&r, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(svg.starts_with("<svg"), "{}", &svg[..60.min(svg.len())]);
        for text in ["cage10", "lap2d:2000", "copy bandwidth 4280 GB/s", "cpu-sprs", "cusparse-alg1", SPGPU_BEST] {
            assert!(svg.contains(text), "missing {text}");
        }
        let empty = Report::default();
        assert!(plot_svg(&empty, &path).is_err());
    }
}
