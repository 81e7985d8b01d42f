//! Text for bitmap (PNG) plots: a TrueType font read at run time from a standard Debian path,
//! and a plotters drawing backend that wraps the bitmap backend and draws text with it.
//!
//! plotters is built without a font engine (its `ttf` feature needs fontconfig; its `ab_glyph`
//! feature would make every SVG plot — also the bench harness's — fail without a registered
//! font). So only the PNG path gets a font: [`TextBitMap`] delegates every shape to plotters'
//! `BitMapBackend` and overrides the two text operations (`draw_text`, `estimate_text_size`)
//! with `ab_glyph` rasterisation. SVG output is unaffected: it writes `<text>` elements that the
//! viewer renders.
//!
//! Reads one font file; touches nothing else. No font ships with the repository.

use ab_glyph::{point, Font, FontVec, PxScale, ScaleFont};
use plotters::prelude::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Environment variable naming a TrueType/OpenType font file to use instead of the search list.
pub const FONT_ENV: &str = "POLYPHONY_FONT";

/// The Debian package that provides the first font searched for.
pub const FONT_PACKAGE: &str = "fonts-dejavu-core";

/// Font files looked for, in order (Debian packages fonts-dejavu-core, fonts-liberation2,
/// fonts-liberation, fonts-freefont-ttf, fonts-noto-core).
pub const FONT_CANDIDATES: [&str; 5] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
];

/// No usable font.
#[derive(Debug, Error)]
pub enum FontError {
    /// None of the searched files exists.
    #[error(
        "no TrueType font for the plot's text (looked for {looked}): install the Debian package \
         {FONT_PACKAGE} (apt-get install {FONT_PACKAGE}), set {FONT_ENV} to a .ttf file, or write \
         an .svg plot, which needs no font"
    )]
    NotFound {
        /// The paths searched, comma-separated.
        looked: String,
    },
    /// A file exists but cannot be read or is not a font.
    #[error("{path}: {why}; set {FONT_ENV} to another .ttf file or install {FONT_PACKAGE}")]
    Unusable {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        why: String,
    },
}

/// The font for bitmap plots: `$POLYPHONY_FONT` if set, else the first of [`FONT_CANDIDATES`].
pub fn system_font() -> Result<FontVec, FontError> {
    match std::env::var_os(FONT_ENV) {
        Some(p) if !p.is_empty() => load(Path::new(&p)),
        _ => find(&FONT_CANDIDATES.map(Path::new)),
    }
}

/// The first of `candidates` that exists, loaded.
pub fn find(candidates: &[&Path]) -> Result<FontVec, FontError> {
    match candidates.iter().find(|p| p.is_file()) {
        Some(p) => load(p),
        None => Err(FontError::NotFound {
            looked: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Loads one font file.
pub fn load(path: &Path) -> Result<FontVec, FontError> {
    let unusable = |why: String| FontError::Unusable {
        path: path.to_path_buf(),
        why,
    };
    let bytes = std::fs::read(path).map_err(|e| unusable(format!("cannot read: {e}")))?;
    FontVec::try_from_vec(bytes).map_err(|_| unusable("not a TrueType/OpenType font".into()))
}

/// plotters' bitmap backend with TrueType text.
pub struct TextBitMap<'a> {
    inner: BitMapBackend<'a>,
    font: &'a FontVec,
}

impl<'a> TextBitMap<'a> {
    /// Wraps `inner`, drawing text with `font`.
    pub fn new(inner: BitMapBackend<'a>, font: &'a FontVec) -> TextBitMap<'a> {
        TextBitMap { inner, font }
    }

    /// Width and height of `text` at `size` pixels, unrotated; and the ascent.
    fn measure(&self, text: &str, size: f64) -> (f32, f32, f32) {
        let f = self.font.as_scaled(PxScale::from(size as f32));
        let mut width = 0.0;
        let mut prev = None;
        for c in text.chars() {
            let id = f.glyph_id(c);
            if let Some(p) = prev {
                width += f.kern(p, id);
            }
            width += f.h_advance(id);
            prev = Some(id);
        }
        (width, f.ascent() - f.descent(), f.ascent())
    }
}

type Result2<E> = Result<(), DrawingErrorKind<E>>;

impl DrawingBackend for TextBitMap<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result2<Self::ErrorType> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result2<Self::ErrorType> {
        self.inner.present()
    }
    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result2<Self::ErrorType> {
        self.inner.draw_pixel(point, color)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result2<Self::ErrorType> {
        self.inner.draw_line(from, to, style)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result2<Self::ErrorType> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result2<Self::ErrorType> {
        self.inner.draw_path(path, style)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result2<Self::ErrorType> {
        self.inner.draw_circle(center, radius, style, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result2<Self::ErrorType> {
        self.inner.fill_polygon(vert, style)
    }
    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result2<Self::ErrorType> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let (w, h, _) = self.measure(text, style.size());
        Ok((w.ceil().max(0.0) as u32, h.ceil().max(0.0) as u32))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result2<Self::ErrorType> {
        let color = style.color();
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let size = style.size();
        let (w, h, ascent) = self.measure(text, size);
        // The anchor is a point of the text's box, before rotation.
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -w / 2.0,
            HPos::Right => -w,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -h / 2.0,
            VPos::Bottom => -h,
        };
        let trans = style.transform();
        let (width, height) = self.get_size();
        let scale = PxScale::from(size as f32);
        let scaled = self.font.as_scaled(scale);
        let mut caret = 0.0f32;
        let mut prev = None;
        let mut pixels = Vec::new();
        for c in text.chars() {
            let id = scaled.glyph_id(c);
            if let Some(p) = prev {
                caret += scaled.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(scale, point(caret + dx, ascent + dy));
            caret += scaled.h_advance(id);
            let Some(outline) = self.font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            outline.draw(|x, y, coverage| {
                if coverage > 0.0 {
                    let (px, py) = (b.min.x as i32 + x as i32, b.min.y as i32 + y as i32);
                    pixels.push((trans.transform(px, py), coverage));
                }
            });
        }
        for ((x, y), coverage) in pixels {
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && y >= 0 && (x as u32) < width && (y as u32) < height {
                self.inner.draw_pixel(
                    (x, y),
                    BackendColor {
                        alpha: color.alpha * f64::from(coverage.min(1.0)),
                        rgb: color.rgb,
                    },
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_font_names_the_package_to_install() {
        let Err(e) = find(&[Path::new("/nonexistent/polyphony-test/NoSuch.ttf")]) else {
            panic!("found a font where there is none");
        };
        let e = e.to_string();
        assert!(
            e.contains("apt-get install fonts-dejavu-core") && e.contains("NoSuch.ttf") && e.contains(".svg"),
            "{e}"
        );
    }

    #[test]
    fn a_file_that_is_not_a_font_is_refused_with_its_path() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fake.ttf");
        std::fs::write(&p, b"not a font").unwrap();
        let Err(e) = load(&p) else {
            panic!("a text file loaded as a font");
        };
        let e = e.to_string();
        assert!(e.contains("fake.ttf") && e.contains("not a TrueType"), "{e}");
    }
}
