//! The image flags of `run` (`--images`, `--image-size`, `--image-format`), flattened into
//! `RunArgs` and its config file, and checked into the run's `llmib_core::ImageSettings`: each
//! measured request of the prefill, decode, burst and rate cells carries K seeded images,
//! and the rows give the image tokens the server counted (docs/images.md).

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use llmib_core::{Api, ImageFormat, ImageSettings, ImageSize};
use serde::{Deserialize, Deserializer};

/// `--image-format`: the images' file format (docs/images.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormatArg {
    /// PNG: RGB noise in stored (uncompressed) deflate blocks.
    #[default]
    Png,
    /// JPEG: the same noise, baseline at quality 75 with 4:2:0 chroma (Pillow's defaults, as
    /// vLLM's random-mm sends).
    Jpeg,
}

impl From<ImageFormatArg> for ImageFormat {
    fn from(f: ImageFormatArg) -> ImageFormat {
        match f {
            ImageFormatArg::Png => ImageFormat::Png,
            ImageFormatArg::Jpeg => ImageFormat::Jpeg,
        }
    }
}

/// The image flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct ImageArgs {
    /// Images per request (1 to 64) on the prefill, decode, burst and rate cells: seeded noise
    /// images sent as base64 data URLs with the prompt; the rows give the image tokens the
    /// server's usage counted. Needs --api chat, messages or responses. 0 or absent: none.
    #[arg(long, value_name = "K")]
    pub images: Option<u32>,
    /// The images' size, WxH; several comma-separated (512x512,1024x768): each image draws one
    /// of them, seeded by the run and its request, equally likely. Default 512x512.
    #[arg(long, value_name = "WxH,...", value_delimiter = ',')]
    #[serde(deserialize_with = "sizes")]
    pub image_size: Option<Vec<ImageSize>>,
    /// The images' file format: png (default) or jpeg.
    #[arg(long, value_enum)]
    pub image_format: Option<ImageFormatArg>,
}

/// A config file's `image_size`: a list of `WxH`, or one comma-separated string as the flag
/// takes.
fn sizes<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<ImageSize>>, D::Error> {
    use serde::de::Error as _;
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Sizes {
        One(String),
        List(Vec<String>),
    }
    let v = match Sizes::deserialize(d)? {
        Sizes::One(s) => s.split(',').map(str::to_string).collect(),
        Sizes::List(v) => v,
    };
    v.iter()
        .map(|s| s.parse().map_err(D::Error::custom))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The size a run's images take without `--image-size`.
pub const DEFAULT_IMAGE_SIZE: ImageSize = ImageSize {
    width: 512,
    height: 512,
};

impl ImageArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: ImageArgs) -> ImageArgs {
        ImageArgs {
            images: self.images.or(lower.images),
            image_size: self.image_size.or(lower.image_size),
            image_format: self.image_format.or(lower.image_format),
        }
    }

    /// Checks the flags into settings for a run on `api` (`None`: `--api auto`, which then
    /// picks chat), the pixels seeded by `seed` (the run's prompt seed): `None` without
    /// images. `--image-size` or `--image-format` alone is refused (it would change nothing),
    /// and so is completions (no place for an image).
    pub fn settings(&self, api: Option<Api>, seed: u64) -> Result<Option<ImageSettings>> {
        let k = self.images.unwrap_or(0);
        if k == 0 {
            if self.image_size.is_some() || self.image_format.is_some() {
                bail!("--image-size and --image-format shape the images of --images K: add it");
            }
            return Ok(None);
        }
        if api == Some(Api::Completions) {
            bail!(
                "--images needs an API with image parts: use --api chat, messages or responses (completions takes text only)"
            );
        }
        let sizes = self
            .image_size
            .clone()
            .unwrap_or_else(|| vec![DEFAULT_IMAGE_SIZE]);
        let format = self.image_format.unwrap_or_default().into();
        Ok(Some(
            ImageSettings::new(k, sizes, seed)?.with_format(format),
        ))
    }

    /// What resume compares with the saved run: the count, sizes and format (the seed is the
    /// saved run's, whatever this invocation drew).
    pub fn given(&self) -> Option<(u32, Vec<ImageSize>, ImageFormat)> {
        let k = self.images.filter(|k| *k > 0)?;
        let sizes = self
            .image_size
            .clone()
            .unwrap_or_else(|| vec![DEFAULT_IMAGE_SIZE]);
        Some((k, sizes, self.image_format.unwrap_or_default().into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(s: &str) -> ImageSize {
        s.parse().expect("size")
    }

    #[test]
    fn images_and_sizes_are_checked_into_settings() {
        let a = ImageArgs {
            images: Some(2),
            ..Default::default()
        };
        let s = a.settings(Some(Api::Chat), 9).expect("ok").expect("some");
        assert_eq!((s.per_request, s.seed), (2, 9));
        assert_eq!(s.sizes, [DEFAULT_IMAGE_SIZE]);
        let a = ImageArgs {
            image_size: Some(vec![size("64x32"), size("8x8")]),
            ..a
        };
        let s = a
            .settings(Some(Api::Responses), 1)
            .expect("ok")
            .expect("some");
        assert_eq!(s.sizes, [size("64x32"), size("8x8")]);
        assert_eq!(
            a.given(),
            Some((2, vec![size("64x32"), size("8x8")], ImageFormat::Png))
        );
        assert_eq!(s.format, ImageFormat::Png);
        let jpeg = ImageArgs {
            image_format: Some(ImageFormatArg::Jpeg),
            ..a.clone()
        };
        let s = jpeg
            .settings(Some(Api::Chat), 1)
            .expect("ok")
            .expect("some");
        assert_eq!(s.format, ImageFormat::Jpeg);
        assert_eq!(
            ImageArgs::default()
                .settings(Some(Api::Chat), 0)
                .expect("none"),
            None
        );
        let zero = ImageArgs {
            images: Some(0),
            ..Default::default()
        };
        assert_eq!(zero.settings(Some(Api::Chat), 0).expect("none"), None);
        assert_eq!(zero.given(), None);
        let many = ImageArgs {
            images: Some(65),
            ..Default::default()
        };
        assert!(many.settings(Some(Api::Chat), 0).is_err());
    }

    #[test]
    fn completions_and_a_size_alone_are_refused_in_one_line() {
        let a = ImageArgs {
            images: Some(1),
            ..Default::default()
        };
        let e = a
            .settings(Some(Api::Completions), 0)
            .expect_err("completions");
        let m = e.to_string();
        assert!(m.contains("use --api chat, messages or responses"), "{m}");
        assert!(!m.contains('\n'), "{m}");
        let alone = ImageArgs {
            image_size: Some(vec![size("8x8")]),
            ..Default::default()
        };
        let e = alone.settings(Some(Api::Chat), 0).expect_err("size alone");
        assert!(e.to_string().contains("add it"), "{e}");
    }

    #[test]
    fn a_config_file_takes_a_list_or_a_comma_string() {
        let a: ImageArgs =
            toml::from_str("images = 2\nimage_size = [\"8x8\", \"16x8\"]\nimage_format = \"png\"")
                .expect("parses");
        assert_eq!(a.images, Some(2));
        assert_eq!(a.image_size, Some(vec![size("8x8"), size("16x8")]));
        assert_eq!(a.image_format, Some(ImageFormatArg::Png));
        let a: ImageArgs = toml::from_str("image_size = \"8x8,16x8\"").expect("parses");
        assert_eq!(a.image_size, Some(vec![size("8x8"), size("16x8")]));
        assert!(toml::from_str::<ImageArgs>("image_size = \"8by8\"").is_err());
        let a: ImageArgs = toml::from_str("image_format = \"jpeg\"").expect("parses");
        assert_eq!(a.image_format, Some(ImageFormatArg::Jpeg));
        assert!(toml::from_str::<ImageArgs>("image_format = \"gif\"").is_err());
    }
}
