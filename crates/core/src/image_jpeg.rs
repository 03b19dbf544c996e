//! JPEG images (`run --images K --image-format jpeg`; docs/images.md): the same seeded RGB
//! noise as [`crate::noise_png`]'s pixels (`crate::image_png::fill_noise`), encoded as a
//! baseline JFIF by the `jpeg-encoder` crate at quality 75 with 4:2:0 chroma subsampling, the
//! settings Pillow's `Image.save` uses by default and so the JPEGs vLLM's `random-mm` dataset
//! sends.
//!
//! A JPEG's length depends on its pixels, unlike the stored PNG's, so the memory guard of a
//! rate cell ([`crate::ImageSettings::cell_memory`]) reads [`jpeg_len_bound`]: the length of
//! one image of the size, with a margin that noise of another seed never crosses (checked
//! over many seeds in `crates/core/src/tests/images.rs`).

use crate::image_png::fill_noise;

/// Why a JPEG could not be built (the encoder's refusal, or a side outside its range);
/// `crate::ImageError::Jpeg` carries it to the run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JpegError(String);

/// Pillow's default quality, which vLLM's `random-mm` images are saved with.
pub const JPEG_QUALITY: u8 = 75;

/// A baseline JPEG of `width` × `height` pixels of noise drawn from `seed`: the same seed, the
/// same bytes. Sides must be 1 ..= 65,535 (the run's are at most 4,096).
pub fn noise_jpeg(width: u32, height: u32, seed: u64) -> Result<Vec<u8>, JpegError> {
    let side = |v: u32| u16::try_from(v).ok().filter(|v| *v > 0);
    let (Some(w), Some(h)) = (side(width), side(height)) else {
        return Err(JpegError(format!(
            "{width}x{height} is outside a JPEG's 1 to 65535 pixels a side"
        )));
    };
    let row = 3 * width as usize;
    let mut pixels = vec![0u8; row * height as usize];
    fill_noise(&mut pixels, row, 0, seed);
    let mut out = Vec::with_capacity(pixels.len());
    jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY)
        .encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| JpegError(e.to_string()))?;
    Ok(out)
}

/// An upper bound of the length of any [`noise_jpeg`] of this size: one image's length
/// (seed 0) plus 2 % and 4 KiB. Noise of one size encodes to lengths within a fraction of a
/// percent of each other, so the margin is wide.
pub fn jpeg_len_bound(width: u32, height: u32) -> Result<u64, JpegError> {
    let n = noise_jpeg(width, height, 0)?.len() as u64;
    Ok(n + n / 50 + 4096)
}
