//! SVG plots of a scenario's runs (plotters): per-class p99 slowdown over control time with the
//! SLOs as dashed lines, one panel per tuner (the paper's Figs. 5, 8, 11); the objective J of
//! every tuner over time (Figs. 6, 9, 12); and the knob trajectories of one tuner (Figs. 7, 10,
//! 14). One seed per plot (the first of the study). Writes only the files it is given.

use crate::closed_loop::RunTrace;
use crate::report::ScenarioResult;
use crate::EvalError;
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// The i-th line colour (plotters' 99-colour palette).
fn colour(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// One line of a panel.
struct Line {
    label: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
    dashed: bool,
}

fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> EvalError {
    EvalError::Write {
        path: "plot".into(),
        message: e.to_string(),
    }
}

/// Draws `lines` in `area`; y on a log scale when `log_y`.
fn panel(
    area: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    y_label: &str,
    lines: &[Line],
    log_y: bool,
) -> Result<(), EvalError> {
    let pts = lines
        .iter()
        .flat_map(|l| l.points.iter())
        .filter(|p| p.1.is_finite() && p.1 > 0.0);
    let (mut x1, mut y0, mut y1) = (1e-9f64, f64::INFINITY, f64::NEG_INFINITY);
    for p in pts {
        x1 = x1.max(p.0);
        y0 = y0.min(p.1);
        y1 = y1.max(p.1);
    }
    if !y0.is_finite() {
        (y0, y1) = (0.1, 1.0);
    }
    let mut b = ChartBuilder::on(area);
    b.caption(title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(32)
        .y_label_area_size(56);
    if log_y {
        let chart = b
            .build_cartesian_2d(0f64..x1, (y0 * 0.8..y1 * 1.25).log_scale())
            .map_err(draw_err)?;
        fill(chart, y_label, lines)
    } else {
        let pad = (y1 - y0).abs().max(1e-6) * 0.1;
        let chart = b
            .build_cartesian_2d(0f64..x1, (y0 - pad)..(y1 + pad))
            .map_err(draw_err)?;
        fill(chart, y_label, lines)
    }
}

/// Mesh, lines and legend of a chart whose axes are built.
fn fill<'a, X, Y>(
    mut chart: ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    y_label: &str,
    lines: &[Line],
) -> Result<(), EvalError>
where
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc("minutes of control time")
        .y_desc(y_label)
        .draw()
        .map_err(draw_err)?;
    for l in lines {
        series(&mut chart, l)?;
    }
    legend(&mut chart)
}

fn series<'a, X, Y>(chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>, l: &Line) -> Result<(), EvalError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = ShapeStyle::from(&l.colour).stroke_width(2);
    let segments: Vec<Vec<(f64, f64)>> = l
        .points
        .split(|p| !(p.1.is_finite() && p.1 > 0.0))
        .filter(|s| !s.is_empty())
        .map(|s| s.to_vec())
        .collect();
    let mut first = true;
    for seg in segments {
        if l.dashed {
            let s = chart
                .draw_series(DashedLineSeries::new(seg, 6, 4, style))
                .map_err(draw_err)?;
            if first {
                let c = l.colour;
                s.label(l.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
            }
        } else {
            let s = chart.draw_series(LineSeries::new(seg, style)).map_err(draw_err)?;
            if first {
                let c = l.colour;
                s.label(l.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
            }
        }
        first = false;
    }
    Ok(())
}

fn legend<'a, X, Y>(chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>) -> Result<(), EvalError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(draw_err)
}

fn minutes(res: &ScenarioResult, i: usize) -> f64 {
    i as f64 * res.scenario.interval_s / 60.0
}

fn class_lines(res: &ScenarioResult, t: &RunTrace) -> Vec<Line> {
    let mut lines = Vec::new();
    for (ci, c) in res.scenario.classes.iter().enumerate() {
        let colour = colour(ci);
        lines.push(Line {
            label: format!("{} p99", c.name),
            colour,
            points: t
                .records
                .iter()
                .map(|r| (minutes(res, r.iteration), r.p99[ci]))
                .collect(),
            dashed: false,
        });
        let end = minutes(res, t.records.len().saturating_sub(1));
        lines.push(Line {
            label: format!("{} SLO {}", c.name, c.slo.show(c.slo.threshold())),
            colour,
            points: vec![(0.0, c.slo.threshold()), (end, c.slo.threshold())],
            dashed: true,
        });
    }
    lines
}

fn first_seed(res: &ScenarioResult) -> Option<u64> {
    res.traces.iter().map(|t| t.seed).min()
}

fn save(
    path: &Path,
    size: (u32, u32),
    f: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    f(&root)?;
    root.present().map_err(|e| EvalError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Per-class p99 over time, one panel per tuner (first seed).
pub fn slowdowns(res: &ScenarioResult, path: &Path) -> Result<(), EvalError> {
    let Some(seed) = first_seed(res) else { return Ok(()) };
    let runs: Vec<&RunTrace> = res.traces.iter().filter(|t| t.seed == seed).collect();
    let cols = 2usize;
    let rows = runs.len().div_ceil(cols).max(1);
    save(path, (1200, 340 * rows as u32), |root| {
        let areas = root.split_evenly((rows, cols));
        for (t, a) in runs.iter().zip(areas.iter()) {
            panel(
                a,
                &format!("{} · {} · seed {seed}", t.tuner, res.label),
                "p99 slowdown",
                &class_lines(res, t),
                true,
            )?;
        }
        Ok(())
    })
}

/// J over time, every tuner (first seed).
pub fn objective(res: &ScenarioResult, path: &Path) -> Result<(), EvalError> {
    let Some(seed) = first_seed(res) else { return Ok(()) };
    let lines: Vec<Line> = res
        .traces
        .iter()
        .filter(|t| t.seed == seed)
        .enumerate()
        .map(|(i, t)| Line {
            label: t.tuner.clone(),
            colour: colour(i),
            points: t
                .records
                .iter()
                .map(|r| (minutes(res, r.iteration), r.objective))
                .collect(),
            dashed: false,
        })
        .collect();
    save(path, (1000, 480), |root| {
        panel(
            root,
            &format!(
                "objective J · {} · seed {seed} (J ≤ 1 roughly = every SLO met)",
                res.label
            ),
            "J",
            &lines,
            true,
        )
    })
}

/// Weights, ECN thresholds and initial windows of `tuner` (first seed) over time.
pub fn knobs(res: &ScenarioResult, tuner: &str, path: &Path) -> Result<(), EvalError> {
    let Some(seed) = first_seed(res) else { return Ok(()) };
    let Some(t) = res.traces.iter().find(|t| t.seed == seed && t.tuner == tuner) else {
        return Ok(());
    };
    let per_class = |f: &dyn Fn(&polyphony_spec::ClassConfig) -> f64| -> Vec<Line> {
        res.scenario
            .classes
            .iter()
            .enumerate()
            .map(|(ci, c)| Line {
                label: c.name.clone(),
                colour: colour(ci),
                points: t
                    .records
                    .iter()
                    .map(|r| (minutes(res, r.iteration), r.config.class(c.dscp).map_or(f64::NAN, f)))
                    .collect(),
                dashed: false,
            })
            .collect()
    };
    save(path, (1000, 900), |root| {
        let areas = root.split_evenly((3, 1));
        panel(
            &areas[0],
            &format!("{tuner} · switch weight"),
            "weight",
            &per_class(&|k| k.weight),
            false,
        )?;
        panel(
            &areas[1],
            &format!("{tuner} · ECN threshold K"),
            "K (kB)",
            &per_class(&|k| k.ecn_threshold.0 as f64 / 1000.0),
            true,
        )?;
        panel(
            &areas[2],
            &format!("{tuner} · initial window"),
            "initcwnd (packets)",
            &per_class(&|k| k.init_cwnd.0 as f64),
            true,
        )
    })
}
