//! The demo's plot (plotters): per-class p99 slowdown with each class's SLO as a dashed line
//! (top), and the objective J (bottom), against the iteration number, with titles, axis labels
//! and a legend. SVG needs no font (the viewer renders its `<text>`); PNG text is rasterised
//! with a TrueType font read at run time ([`crate::font`]; Debian package fonts-dejavu-core),
//! and without one a PNG is refused with an error naming the package. Writes the one file it is
//! given and reads only the font.

use crate::font::{system_font, TextBitMap};
use anyhow::{anyhow, bail, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One class's series.
#[derive(Debug, Clone)]
pub struct ClassSeries {
    /// Class name.
    pub name: String,
    /// Unit of the SLI and threshold ("" for a slowdown, "µs" for a query completion time).
    pub unit: &'static str,
    /// SLO threshold.
    pub slo: f64,
    /// p99 per iteration (slowdown, or QCT in `unit`).
    pub p99: Vec<f64>,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Width and height of the plot, pixels.
const SIZE: (u32, u32) = (1000, 760);

/// Checks, before any work is done, that a plot can be written to `path`: a `.svg` or `.png`
/// name in a place that can be written, and for PNG a font for its text.
pub fn check(path: &Path) -> Result<()> {
    match extension(path).as_str() {
        "svg" => {}
        "png" => {
            system_font().map_err(|e| anyhow!("--plot {}: {e}", path.display()))?;
        }
        _ => bail!("--plot {}: use a .svg or .png file name", path.display()),
    }
    // Whether the file can be written at all (a missing directory, no permission): a file
    // made only to find out is removed again.
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| anyhow!("--plot {}: cannot write it: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

/// Writes the plot to `path` (.svg or .png).
pub fn write(path: &Path, classes: &[ClassSeries], objective: &[f64], converged_at: Option<usize>) -> Result<()> {
    match extension(path).as_str() {
        "svg" => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            draw(&root, classes, objective, converged_at, true)?;
            root.present().map_err(|e| anyhow!("{}: {e}", path.display()))
        }
        "png" => {
            let font = system_font().map_err(|e| anyhow!("--plot {}: {e}", path.display()))?;
            let root = TextBitMap::new(BitMapBackend::new(path, SIZE), &font).into_drawing_area();
            draw(&root, classes, objective, converged_at, true)?;
            root.present().map_err(|e| anyhow!("{}: {e}", path.display()))
        }
        _ => bail!("--plot {}: use a .svg or .png file name", path.display()),
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    classes: &[ClassSeries],
    objective: &[f64],
    converged_at: Option<usize>,
    text: bool,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (top, bottom) = root.split_vertically(480);
    let n = classes
        .iter()
        .map(|c| c.p99.len())
        .chain(std::iter::once(objective.len()))
        .max()
        .unwrap_or(1)
        .max(2);
    let ymax = classes
        .iter()
        .flat_map(|c| c.p99.iter().copied().chain(std::iter::once(c.slo)))
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut b = ChartBuilder::on(&top);
    b.margin(12)
        .x_label_area_size(if text { 30 } else { 0 })
        .y_label_area_size(if text { 60 } else { 0 });
    if text {
        b.caption("p99 FCT slowdown per class (dashed: SLO)", ("sans-serif", 20));
    }
    let mut chart = b.build_cartesian_2d(1f64..n as f64, 0f64..ymax).map_err(err)?;
    let mut mesh = chart.configure_mesh();
    if text {
        let y = if classes.iter().any(|c| !c.unit.is_empty()) {
            "p99 slowdown; QCT classes: p99 QCT in µs"
        } else {
            "p99 slowdown"
        };
        mesh.x_desc("iteration").y_desc(y);
    } else {
        mesh.disable_x_mesh().x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(err)?;
    for (i, c) in classes.iter().enumerate() {
        let col = COLOURS[i % COLOURS.len()];
        let s = chart
            .draw_series(LineSeries::new(
                c.p99
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(t, v)| ((t + 1) as f64, *v)),
                col.stroke_width(2),
            ))
            .map_err(err)?;
        if text {
            let name = format!("{} (SLO {}{})", c.name, c.slo, c.unit);
            s.label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], col.stroke_width(2)));
        }
        chart
            .draw_series(DashedLineSeries::new(
                [(1.0, c.slo), (n as f64, c.slo)],
                6,
                4,
                col.stroke_width(1),
            ))
            .map_err(err)?;
    }
    if let Some(t) = converged_at {
        chart
            .draw_series(LineSeries::new(
                [(t as f64, 0.0), (t as f64, ymax)],
                BLACK.mix(0.4).stroke_width(1),
            ))
            .map_err(err)?;
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    let jmax = objective
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.1;
    let mut b = ChartBuilder::on(&bottom);
    b.margin(12)
        .x_label_area_size(if text { 30 } else { 0 })
        .y_label_area_size(if text { 60 } else { 0 });
    if text {
        b.caption("objective J (lower is better; ≤ 1 ≈ all SLOs met)", ("sans-serif", 18));
    }
    let mut chart = b.build_cartesian_2d(1f64..n as f64, 0f64..jmax).map_err(err)?;
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.x_desc("iteration").y_desc("J");
    } else {
        mesh.disable_x_mesh().x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            objective
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(t, v)| ((t + 1) as f64, *v)),
            BLACK.stroke_width(2),
        ))
        .map_err(err)?;
    chart
        .draw_series(DashedLineSeries::new(
            [(1.0, 1.0), (n as f64, 1.0)],
            6,
            4,
            RED.stroke_width(1),
        ))
        .map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> Vec<ClassSeries> {
        vec![ClassSeries {
            name: "AF11".into(),
            unit: "",
            slo: 11.0,
            p99: vec![30.0, 20.0, 9.0],
        }]
    }

    #[test]
    fn svg_has_the_series_and_labels() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.svg");
        write(&p, &series(), &[2.0, 1.5, 0.9], Some(3)).unwrap();
        let s = std::fs::read_to_string(&p).unwrap();
        assert!(
            s.contains("<svg") && s.contains("AF11 (SLO 11)"),
            "{}",
            &s[..200.min(s.len())]
        );
    }

    fn font_or_skip() -> Option<ab_glyph::FontVec> {
        match system_font() {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("skipped: needs a font ({e})");
                None
            }
        }
    }

    #[test]
    fn png_is_written() {
        if font_or_skip().is_none() {
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.png");
        write(&p, &series(), &[2.0, 1.5, 0.9], None).unwrap();
        let b = std::fs::read(&p).unwrap();
        assert_eq!(&b[1..4], b"PNG");
    }

    /// Renders the plot into an RGB buffer, with or without its text.
    fn render(font: &ab_glyph::FontVec, text: bool) -> Vec<u8> {
        let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
        {
            let root = TextBitMap::new(BitMapBackend::with_buffer(&mut buf, SIZE), font).into_drawing_area();
            draw(&root, &series(), &[2.0, 1.5, 0.9], Some(3), text).unwrap();
            root.present().unwrap();
        }
        buf
    }

    /// Dark pixels in rows `rows` (all columns).
    fn dark(buf: &[u8], rows: std::ops::Range<u32>) -> usize {
        let w = SIZE.0 as usize;
        rows.flat_map(|y| (0..w).map(move |x| (y as usize * w + x) * 3))
            .filter(|&i| buf[i] < 128 && buf[i + 1] < 128 && buf[i + 2] < 128)
            .count()
    }

    #[test]
    fn png_text_is_drawn() {
        let Some(font) = font_or_skip() else {
            return;
        };
        let with = render(&font, true);
        let without = render(&font, false);
        assert_ne!(with, without);
        // The caption "p99 FCT slowdown per class" sits in the top 40 rows; without text that
        // band is blank.
        let (a, b) = (dark(&with, 0..40), dark(&without, 0..40));
        assert!(a > 300 && b == 0, "dark caption pixels: with text {a}, without {b}");
        // The y-axis description is rotated: dark pixels in the left margin's columns.
        let w = SIZE.0 as usize;
        let left = (60..400)
            .flat_map(|y: usize| (0..20).map(move |x| (y * w + x) * 3))
            .filter(|&i| with[i] < 128)
            .count();
        assert!(left > 50, "no rotated y label: {left} dark pixels");
    }

    #[test]
    fn other_extensions_are_refused() {
        let e = write(Path::new("x.jpg"), &series(), &[1.0], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--plot"), "{e}");
    }
}
