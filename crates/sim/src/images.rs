//! Images in chat, Messages and Responses requests (docs/images.md, "The simulator").
//!
//! An image part is read in each API's own shape: chat's
//! `{"type": "image_url", "image_url": {"url": "data:image/png;base64,…"}}`, Responses'
//! `{"type": "input_image", "image_url": "data:…"}`, Messages'
//! `{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "…"}}`.
//! Only inline PNG or JPEG data is read: its header (PNG's `IHDR`, JPEG's start-of-frame
//! marker, found by walking the segments from the start) gives W × H, and the image costs
//! `ceil(W / p) · ceil(H / p) + 2` prompt tokens, `p` the profile's `image_patch` (28 by
//! default: Qwen2-VL's 14-pixel patches merged 2 × 2, plus its vision start and end tokens).
//! Those tokens follow the templated text (the order changes no count), with ids outside the
//! vocabulary drawn from the image's bytes: the same image is the same tokens (a re-sent
//! request hits the prefix cache), another image is not. They count in `usage.prompt_tokens`,
//! in the context checks and in the prefill's cost, as a vision engine's do. An image the
//! simulator cannot read (a URL, not base64, neither PNG nor JPEG, a broken header) is
//! refused with a
//! 400 in the engine's error shape.

use serde_json::Value;

use crate::config::SimConfig;
use crate::reject::Reject;
use crate::tokenizer::VOCAB_SIZE;

/// Image tokens besides the patches: the vision start and end markers.
const IMAGE_MARKERS: u64 = 2;
/// The PNG signature, then `IHDR`'s length (13) and type.
const PNG_HEAD: [u8; 16] = [
    0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, b'I', b'H', b'D', b'R',
];

/// The prompt tokens of a `width` × `height` image with `patch`-pixel patches.
pub(crate) fn image_tokens(width: u32, height: u32, patch: u32) -> u64 {
    let p = patch.max(1);
    u64::from(width.div_ceil(p)) * u64::from(height.div_ceil(p)) + IMAGE_MARKERS
}

/// One image read from a request: its size and a hash of its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SimImage {
    pub width: u32,
    pub height: u32,
    hash: u64,
}

/// Appends the tokens of every image in `messages` (their content parts, in order) to
/// `prompt`, and returns how many were appended.
pub(crate) fn append_image_tokens(
    cfg: &SimConfig,
    prompt: &mut Vec<u32>,
    messages: &[Value],
) -> Result<u64, Reject> {
    let mut added = 0;
    for part in messages
        .iter()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten()
    {
        let Some(img) = image_part(part)? else {
            continue;
        };
        let n = image_tokens(img.width, img.height, cfg.image_patch);
        // Ids past the vocabulary decode as nothing; the image's hash keeps images apart.
        let span = u64::from(u32::MAX - VOCAB_SIZE);
        prompt.extend((0..n).map(|i| VOCAB_SIZE + (img.hash.wrapping_add(i) % span) as u32));
        added += n;
    }
    Ok(added)
}

/// The image of a content part, `None` for a part that is not an image.
pub(crate) fn image_part(part: &Value) -> Result<Option<SimImage>, Reject> {
    let data = match part.get("type").and_then(Value::as_str) {
        Some("image_url") => {
            let url = part.get("image_url");
            let url = url.and_then(|u| u.get("url")).or(url);
            data_url(url.and_then(Value::as_str))?
        }
        Some("input_image") => data_url(part.get("image_url").and_then(Value::as_str))?,
        Some("image") => {
            let src = part.get("source");
            if src.and_then(|s| s.get("type")).and_then(Value::as_str) != Some("base64") {
                return Err(Reject::bad(
                    "image source: the simulator reads only `base64` sources",
                ));
            }
            src.and_then(|s| s.get("data"))
                .and_then(Value::as_str)
                .ok_or_else(|| Reject::bad("image source: `data` must be a base64 string"))?
        }
        _ => return Ok(None),
    };
    let (width, height) = image_size(data)?;
    Ok(Some(SimImage {
        width,
        height,
        hash: fnv1a(data.as_bytes()),
    }))
}

/// The base64 payload of a `data:image/…;base64,` URL.
fn data_url(url: Option<&str>) -> Result<&str, Reject> {
    let url = url.ok_or_else(|| Reject::bad("image_url: a URL string is required"))?;
    url.strip_prefix("data:image/")
        .and_then(|rest| rest.split_once(";base64,"))
        .map(|(_, data)| data)
        .ok_or_else(|| {
            Reject::bad("image_url: the simulator reads only data:image/...;base64, URLs")
        })
}

/// How far into a JPEG its start-of-frame may lie: past JFIF's APP0, any EXIF or ICC
/// segments and the tables, far less than this in any encoder's output.
const JPEG_HEAD_MAX: usize = 64 << 10;

/// W × H from a base64 PNG's or JPEG's header; every character must be base64.
fn image_size(data: &str) -> Result<(u32, u32), Reject> {
    let bad = |why: &str| Reject::bad(format!("image: {why}"));
    let body = data.trim_end_matches('=');
    if data.len() - body.len() > 2 || !body.bytes().all(|c| sextet(c).is_some()) {
        return Err(bad("the data is not base64"));
    }
    // 24 bytes hold PNG's signature, IHDR's length and type, width and height: 32 characters.
    let head = decode_prefix(body, 24);
    let (width, height) = if head.len() >= 24 && head[..16] == PNG_HEAD {
        (
            u32::from_be_bytes([head[16], head[17], head[18], head[19]]),
            u32::from_be_bytes([head[20], head[21], head[22], head[23]]),
        )
    } else if head.starts_with(&[0xFF, 0xD8]) {
        jpeg_size(&decode_prefix(body, JPEG_HEAD_MAX))
            .ok_or_else(|| bad("a JPEG without a readable start-of-frame in its first 64 KiB"))?
    } else {
        return Err(bad(
            "the simulator reads PNG and JPEG images only, and this is neither",
        ));
    };
    if width == 0 || height == 0 {
        return Err(bad("an image of zero width or height"));
    }
    Ok((width, height))
}

/// A JPEG's W × H: after SOI, each segment is `FF`, its marker and a big-endian length
/// (counting itself); a start-of-frame (`C0`-`CF` but `C4` DHT, `C8` JPG, `CC` DAC) holds the
/// precision, then height and width. `None` where the segments end or break first.
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        let (&ff, &marker) = (bytes.get(at)?, bytes.get(at + 1)?);
        if ff != 0xFF {
            return None;
        }
        if marker == 0xFF {
            // Fill bytes before a marker.
            at += 1;
            continue;
        }
        let len = usize::from(u16::from_be_bytes([
            *bytes.get(at + 2)?,
            *bytes.get(at + 3)?,
        ]));
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let f = bytes.get(at + 5..at + 9)?;
            let h = u16::from_be_bytes([f[0], f[1]]);
            let w = u16::from_be_bytes([f[2], f[3]]);
            return Some((u32::from(w), u32::from(h)));
        }
        if marker == 0xDA || len < 2 {
            // Scan data before any frame header, or a broken length.
            return None;
        }
        at += 2 + len;
    }
}

/// The value of one base64 character.
fn sextet(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// The first `n` bytes (or fewer, where the text is shorter) of unpadded base64 `text`.
fn decode_prefix(text: &str, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 2);
    for group in text.as_bytes().chunks(4) {
        let mut acc = 0u32;
        for (i, c) in group.iter().enumerate() {
            acc |= sextet(*c).unwrap_or(0) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..group.len().max(1)]);
        if out.len() >= n {
            break;
        }
    }
    out.truncate(n);
    out
}

/// FNV-1a, 64 bits: the image's identity in its token ids.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
