//! Images in requests (`run --images K --image-size WxH[,WxH…]`; docs/images.md). What is
//! decided here, without sockets:
//! - **which sizes a request's images take** ([`ImageSettings::sizes_of`]): one size, every
//!   image; several, each image draws one from the run's seed, its request's context and stream
//!   and its place in the request, with equal weights (vLLM's `random-mm` bucket draw with
//!   equal probabilities), so a shard and a resumed run draw the same;
//! - **each image's pixels** ([`ImageSettings::image_seed`], `crate::image_png`): seeded by the
//!   same key, so no two images of a run are alike but a decode stream's re-sends, and its
//!   warm-up, send the very same bytes;
//! - **the image tokens** ([`image_token_check`]): no engine counts an image before it is sent,
//!   so a request's image tokens are the server's `usage` prompt count less the text part's
//!   exact count, and the prompt-length check reads the text part (module docs of the rule
//!   there).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::record::RequestRecord;
use crate::rng::SplitMix64;
use crate::stats::Summary;

/// The largest side an image may have, pixels (a 4096 × 4096 noise PNG is 48 MiB raw).
pub const MAX_IMAGE_SIDE: u32 = 4096;
/// The most images one request may carry.
pub const MAX_IMAGES_PER_REQUEST: u32 = 64;
/// Most bytes of images (their base64 text, which the request bodies hold) one open-loop cell
/// may build before its schedule starts: a rate cell builds every request first, so that no
/// send instant waits on an encoder, and a thousand requests of 512 × 512 images are 1 GiB.
pub const MAX_IMAGE_BYTES_PER_CELL: u64 = 1 << 30;
/// Where the row's image tokens come from: no engine says them before the request is sent.
pub const IMAGE_TOKENS_COUNTED_BY: &str = "server usage";

/// One image size, `W`x`H` pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ImageSize {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
}

impl fmt::Display for ImageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

impl FromStr for ImageSize {
    type Err = ImageError;

    /// `WxH` (`512x512`; an `X` or `×` also separates), each side 1 ..= [`MAX_IMAGE_SIDE`].
    fn from_str(s: &str) -> Result<ImageSize, ImageError> {
        let bad = || ImageError::BadSize(s.to_string());
        let t = s.trim();
        let (w, h) = t.split_once(['x', 'X', '×']).ok_or_else(bad)?;
        let side = |v: &str| {
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_IMAGE_SIDE).contains(n))
        };
        match (side(w), side(h)) {
            (Some(width), Some(height)) => Ok(ImageSize { width, height }),
            _ => Err(bad()),
        }
    }
}

impl Serialize for ImageSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ImageSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ImageSize, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Why the image flags cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// A size is not `WxH` with sides 1 ..= 4096.
    #[error("--image-size: `{0}` is not WxH with each side 1 to 4096 pixels (e.g. 512x512)")]
    BadSize(String),
    /// `--images` is 0 or above the cap.
    #[error("--images takes 1 to 64 images per request, not {0}")]
    BadCount(u32),
    /// No size was given.
    #[error("--image-size takes at least one WxH")]
    NoSize,
    /// A cell's requests would hold more image bytes than [`MAX_IMAGE_BYTES_PER_CELL`].
    #[error(
        "{requests} requests with up to {} MiB of images each would hold {} MiB before the schedule starts (at most {} MiB a cell): lower the rate, shorten --duration, or send fewer or smaller images",
        bytes_per_request >> 20,
        (*requests as u64).saturating_mul(*bytes_per_request) >> 20,
        MAX_IMAGE_BYTES_PER_CELL >> 20
    )]
    TooMuchMemory {
        /// Requests in the cell.
        requests: usize,
        /// The base64 bytes of the largest request's images.
        bytes_per_request: u64,
    },
    /// The JPEG encoder refused (a side outside 1 ..= 65,535; the flags allow 1 ..= 4,096).
    #[error("building a JPEG image: {0}")]
    Jpeg(#[from] crate::image_jpeg::JpegError),
}

/// The images' file format (`--image-format`), as run.json keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// A PNG of stored deflate blocks ([`crate::noise_png`]).
    #[default]
    Png,
    /// A baseline JPEG at quality 75, 4:2:0 ([`crate::noise_jpeg`]).
    Jpeg,
}

impl ImageFormat {
    /// The MIME type its data URLs and Messages' `media_type` say.
    pub fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }

    /// The file of `size` pixels of noise drawn from `seed`.
    pub fn encode(self, size: ImageSize, seed: u64) -> Result<Vec<u8>, ImageError> {
        match self {
            ImageFormat::Png => Ok(crate::noise_png(size.width, size.height, seed)),
            ImageFormat::Jpeg => Ok(crate::noise_jpeg(size.width, size.height, seed)?),
        }
    }

    /// The most bytes a file of `size` takes: the PNG's exact length, a JPEG's bound.
    pub fn max_len(self, size: ImageSize) -> Result<u64, ImageError> {
        match self {
            ImageFormat::Png => Ok(png_len(size)),
            ImageFormat::Jpeg => Ok(crate::image_jpeg::jpeg_len_bound(size.width, size.height)?),
        }
    }
}

/// The length of [`crate::noise_png`]'s file at `size`: signature, IHDR, one IDAT of stored
/// deflate blocks (65,535 bytes each, 5 bytes of header) inside zlib's 2 + 4, IEND.
pub fn png_len(size: ImageSize) -> u64 {
    let raw = u64::from(size.height) * (1 + 3 * u64::from(size.width));
    let zlib = 2 + 5 * raw.div_ceil(65_535).max(1) + raw + 4;
    8 + (12 + 13) + (12 + zlib) + 12
}

/// The length of the base64 text of `n` bytes (padded).
pub fn base64_len(n: u64) -> u64 {
    n.div_ceil(3) * 4
}

/// The images of a run, as run.json keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSettings {
    /// Images per request (`--images`).
    pub per_request: u32,
    /// The sizes images take (`--image-size`), in the order given.
    pub sizes: Vec<ImageSize>,
    /// The file format (`png` or `jpeg`; a run.json of before JPEG says `png`).
    #[serde(default)]
    pub format: ImageFormat,
    /// The seed of the pixels and of the size draw (the run's prompt seed, kept on resume).
    pub seed: u64,
}

impl ImageSettings {
    /// Checks the flags into settings: 1 ..= 64 images, at least one size; PNG (see
    /// [`ImageSettings::with_format`]).
    pub fn new(
        per_request: u32,
        sizes: Vec<ImageSize>,
        seed: u64,
    ) -> Result<ImageSettings, ImageError> {
        if !(1..=MAX_IMAGES_PER_REQUEST).contains(&per_request) {
            return Err(ImageError::BadCount(per_request));
        }
        if sizes.is_empty() {
            return Err(ImageError::NoSize);
        }
        Ok(ImageSettings {
            per_request,
            sizes,
            format: ImageFormat::Png,
            seed,
        })
    }

    /// The same settings with images of `format`.
    pub fn with_format(self, format: ImageFormat) -> ImageSettings {
        ImageSettings { format, ..self }
    }

    /// The file of image `j` of the request of stream `stream` at `context`, of `size`.
    pub fn image(
        &self,
        context: u64,
        stream: u32,
        j: u32,
        size: ImageSize,
    ) -> Result<Vec<u8>, ImageError> {
        self.format
            .encode(size, self.image_seed(context, stream, j))
    }

    /// The seed of image `j` of the request of stream `stream` at `context` (module docs).
    pub fn image_seed(&self, context: u64, stream: u32, j: u32) -> u64 {
        let key = context
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(u64::from(stream).wrapping_mul(0xA24B_AED4_963E_E407))
            .wrapping_add(u64::from(j).wrapping_mul(0xD6E8_FEB8_6659_FD93));
        SplitMix64::new(self.seed ^ key).next_u64()
    }

    /// The base64 bytes of the largest request's images: every image at the size whose file
    /// is longest (for JPEG, whose bound is: each size is encoded once to bound it).
    pub fn max_request_bytes(&self) -> Result<u64, ImageError> {
        let mut largest = 0;
        for z in &self.sizes {
            largest = largest.max(base64_len(self.format.max_len(*z)?));
        }
        Ok(u64::from(self.per_request).saturating_mul(largest))
    }

    /// Whether a cell of `requests` requests, all built before its schedule starts, stays
    /// within [`MAX_IMAGE_BYTES_PER_CELL`].
    pub fn cell_memory(&self, requests: usize) -> Result<(), ImageError> {
        let bytes_per_request = self.max_request_bytes()?;
        if (requests as u64).saturating_mul(bytes_per_request) > MAX_IMAGE_BYTES_PER_CELL {
            return Err(ImageError::TooMuchMemory {
                requests,
                bytes_per_request,
            });
        }
        Ok(())
    }

    /// The sizes of the images of the request of stream `stream` at `context`, in order.
    pub fn sizes_of(&self, context: u64, stream: u32) -> Vec<ImageSize> {
        (0..self.per_request)
            .map(|j| match self.sizes.as_slice() {
                [one] => *one,
                many => {
                    // A draw of its own (not the pixels' seed), uniform over the sizes.
                    let mut r = SplitMix64::new(self.image_seed(context, stream, j) ^ 0x51_7E);
                    many[r.below(many.len() as u64) as usize]
                }
            })
            .collect()
    }
}

/// The sizes of one request, as the row names a group: `512x512+1024x768`.
pub fn sizes_label(sizes: &[ImageSize]) -> String {
    let v: Vec<String> = sizes.iter().map(ToString::to_string).collect();
    v.join("+")
}

/// What the row says of a group of requests whose images had the same sizes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageGroup {
    /// The sizes, in the order sent ([`sizes_label`]).
    pub sizes: String,
    /// Requests of this group the server counted.
    pub requests: u64,
    /// The group's image tokens: the most common (reported − text) among its requests.
    pub image_tokens: i64,
    /// Requests whose own count differed from the group's (each a prompt mismatch).
    pub differing: u64,
}

/// A row's images: what was sent and the tokens the server counted for them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageFigures {
    /// Images per request.
    pub per_request: u32,
    /// Images sent of each size (`WxH` → count), over the row's requests.
    pub sizes: BTreeMap<String, u64>,
    /// Image tokens per request (server-counted prompt − the text part's exact count) over
    /// the requests the server counted; `None` where it counted none.
    pub image_tokens: Option<Summary>,
    /// The requests grouped by their images' sizes.
    pub groups: Vec<ImageGroup>,
    /// Always [`IMAGE_TOKENS_COUNTED_BY`]: the count came from the server's usage.
    pub counted_by: String,
}

/// One request as the image check sees it: its text part's built tokens and its images' sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRequest {
    /// The text part's exact token count (the prompt built as without images).
    pub text_tokens: u64,
    /// The sizes of its images, in order.
    pub sizes: Vec<ImageSize>,
}

/// The records a row's prompt check reads, and the row's image figures.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageCheck {
    /// The records with each server count less its group's image tokens (the text part as
    /// the server counted it); every other field as measured.
    pub text_part: Vec<RequestRecord>,
    /// The row's [`ImageFigures`].
    pub figures: ImageFigures,
}

/// The image-token rule (docs/images.md, "Counting"). A request's image tokens are its
/// server-counted prompt less its text part's built count. Requests are grouped by their
/// images' sizes; a group's image tokens are the most common value among its requests (the
/// smallest on a tie). The row's prompt check then reads each count less its group's image
/// tokens (never less than 0 taken off): a server that counts every image of a size alike
/// passes exactly where the text part does, one request counted otherwise is off by the
/// difference (a prompt mismatch), and a group counted below its text stays below it (every
/// request a mismatch). `of` gives each record's request (`None`: a record not sent with
/// images, passed through unchanged).
pub fn image_token_check(
    settings: &ImageSettings,
    records: &[RequestRecord],
    of: &dyn Fn(&RequestRecord) -> Option<ImageRequest>,
) -> ImageCheck {
    let requests: Vec<Option<ImageRequest>> = records.iter().map(of).collect();
    let mut sizes = BTreeMap::new();
    let mut extras: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (r, q) in records.iter().zip(&requests) {
        let Some(q) = q else { continue };
        for s in &q.sizes {
            *sizes.entry(s.to_string()).or_insert(0u64) += 1;
        }
        if let Some(n) = r.prompt_tokens_reported {
            let extra = n as i64 - q.text_tokens as i64;
            extras.entry(sizes_label(&q.sizes)).or_default().push(extra);
        }
    }
    let groups: Vec<ImageGroup> = extras
        .iter()
        .map(|(label, v)| {
            let t = most_common(v);
            ImageGroup {
                sizes: label.clone(),
                requests: v.len() as u64,
                image_tokens: t,
                differing: v.iter().filter(|x| **x != t).count() as u64,
            }
        })
        .collect();
    let of_group: BTreeMap<&str, i64> = groups
        .iter()
        .map(|g| (g.sizes.as_str(), g.image_tokens))
        .collect();
    let text_part = records
        .iter()
        .zip(&requests)
        .map(|(r, q)| {
            let mut r = r.clone();
            if let (Some(q), Some(n)) = (q, r.prompt_tokens_reported) {
                let t = of_group.get(sizes_label(&q.sizes).as_str()).copied();
                r.prompt_tokens_reported = Some(n.saturating_sub(t.unwrap_or(0).max(0) as u64));
            }
            r
        })
        .collect();
    let mut all: Vec<f64> = extras.values().flatten().map(|x| *x as f64).collect();
    ImageCheck {
        text_part,
        figures: ImageFigures {
            per_request: settings.per_request,
            sizes,
            image_tokens: Summary::of_vec(&mut all),
            groups,
            counted_by: IMAGE_TOKENS_COUNTED_BY.into(),
        },
    }
}

/// The most common value of `v` (the smallest on a tie; 0 for none).
fn most_common(v: &[i64]) -> i64 {
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for x in v {
        *counts.entry(*x).or_default() += 1;
    }
    let mut best = (0i64, 0usize);
    for (x, c) in counts {
        if c > best.1 {
            best = (x, c);
        }
    }
    best.0
}

#[cfg(test)]
#[path = "tests/images.rs"]
mod tests;
