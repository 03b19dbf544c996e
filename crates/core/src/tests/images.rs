//! Known answers of the image decisions: the PNG's parts (CRC-32, Adler-32, base64 against
//! their standards' check values, the stored zlib stream read back), the sizes' parsing and
//! draw, the JPEG read back by a real decoder and its length bound, and the image-token rule
//! with planted miscounts that the prompt check must catch.

use super::*;
use crate::image_jpeg::{jpeg_len_bound, noise_jpeg};
use crate::image_png::{adler32, base64, crc32, noise_png, zlib_stored};
use crate::image_row::finish_image_row;
use crate::images::{MAX_IMAGE_BYTES_PER_CELL, base64_len, png_len};
use crate::record::{Chunk, Outcome};
use crate::verdict::prompt_check;

fn size(s: &str) -> ImageSize {
    s.parse().expect("a size")
}

#[test]
fn checksums_and_base64_match_their_standards_check_values() {
    // CRC-32's check value (the catalogue's "123456789"), Adler-32's Wikipedia example.
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b"IEND"), 0xAE42_6082);
    assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    assert_eq!(adler32(b""), 1);
    // RFC 4648's test vectors.
    let b64: Vec<String> = ["", "f", "fo", "foo", "foob", "fooba", "foobar"]
        .iter()
        .map(|s| base64(s.as_bytes()))
        .collect();
    assert_eq!(
        b64,
        [
            "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"
        ]
    );
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

/// Reads a zlib stream of stored blocks back (what an inflater does with them).
fn inflate_stored(z: &[u8]) -> Vec<u8> {
    assert_eq!(&z[..2], &[0x78, 0x01]);
    assert_eq!(u16::from_be_bytes([z[0], z[1]]) % 31, 0, "FCHECK");
    let mut i = 2;
    let mut out = Vec::new();
    loop {
        let last = z[i] & 1 == 1;
        assert_eq!(z[i] >> 1, 0, "stored block type");
        let len = u16::from_le_bytes([z[i + 1], z[i + 2]]);
        let nlen = u16::from_le_bytes([z[i + 3], z[i + 4]]);
        assert_eq!(len, !nlen);
        out.extend_from_slice(&z[i + 5..i + 5 + len as usize]);
        i += 5 + len as usize;
        if last {
            break;
        }
    }
    let want = u32::from_be_bytes([z[i], z[i + 1], z[i + 2], z[i + 3]]);
    assert_eq!(adler32(&out), want);
    assert_eq!(i + 4, z.len());
    out
}

#[test]
fn a_stored_zlib_stream_holds_its_data_in_blocks_of_at_most_65535() {
    assert_eq!(
        zlib_stored(b"abc"),
        [
            0x78, 0x01, 0x01, 0x03, 0x00, 0xfc, 0xff, b'a', b'b', b'c', 0x02, 0x4d, 0x01, 0x27
        ]
    );
    assert_eq!(inflate_stored(&zlib_stored(b"")), b"");
    let big: Vec<u8> = (0..150_000u32).map(|i| (i % 251) as u8).collect();
    let z = zlib_stored(&big);
    assert_eq!(z.len(), big.len() + 2 + 3 * 5 + 4);
    assert_eq!(inflate_stored(&z), big);
}

#[test]
fn a_noise_png_is_a_png_of_its_size_and_its_seed() {
    let png = noise_png(40, 3, 7);
    assert_eq!(&png[..8], &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]);
    // IHDR: length 13, then width 40, height 3, depth 8, RGB, and its CRC.
    assert_eq!(&png[8..16], &[0, 0, 0, 13, b'I', b'H', b'D', b'R']);
    assert_eq!(&png[16..24], &[0, 0, 0, 40, 0, 0, 0, 3]);
    assert_eq!(&png[24..29], &[8, 2, 0, 0, 0]);
    assert_eq!(&png[29..33], &crc32(&png[12..29]).to_be_bytes());
    let idat_len = u32::from_be_bytes([png[33], png[34], png[35], png[36]]) as usize;
    assert_eq!(&png[37..41], b"IDAT");
    let raw = inflate_stored(&png[41..41 + idat_len]);
    assert_eq!(raw.len(), 3 * (1 + 3 * 40));
    // Each row starts with filter 0.
    assert!(raw.chunks(121).all(|row| row[0] == 0));
    let end = 41 + idat_len + 4;
    assert_eq!(
        &png[end..],
        &[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]
    );
    assert_eq!(noise_png(40, 3, 7), png);
    assert_ne!(noise_png(40, 3, 8), png);
}

#[test]
fn sizes_parse_as_w_x_h_within_bounds() {
    assert_eq!(
        size("512x384"),
        ImageSize {
            width: 512,
            height: 384
        }
    );
    assert_eq!(size(" 64X32 ").to_string(), "64x32");
    for bad in ["", "512", "0x5", "5x0", "4097x1", "axb", "5x5x5", "-1x4"] {
        assert!(bad.parse::<ImageSize>().is_err(), "{bad}");
    }
    let e = "9x".parse::<ImageSize>().expect_err("bad");
    assert!(e.to_string().contains("`9x`"), "{e}");
    let json = serde_json::to_string(&size("8x4")).expect("json");
    assert_eq!(json, "\"8x4\"");
    assert_eq!(
        serde_json::from_str::<ImageSize>(&json).expect("back"),
        size("8x4")
    );
}

#[test]
fn settings_refuse_no_images_too_many_or_no_size() {
    assert_eq!(
        ImageSettings::new(0, vec![size("8x8")], 1),
        Err(ImageError::BadCount(0))
    );
    assert_eq!(
        ImageSettings::new(65, vec![size("8x8")], 1),
        Err(ImageError::BadCount(65))
    );
    assert_eq!(ImageSettings::new(1, vec![], 1), Err(ImageError::NoSize));
    let s = ImageSettings::new(2, vec![size("8x8")], 1).expect("ok");
    assert_eq!(s.format, ImageFormat::Png);
    let j = s.clone().with_format(ImageFormat::Jpeg);
    assert_eq!(
        serde_json::to_value(j.format).ok(),
        Some(serde_json::json!("jpeg"))
    );
    // A run.json written before JPEG (no `format`, or "png") reads as PNG.
    let old: ImageSettings =
        serde_json::from_str(r#"{"per_request": 1, "sizes": ["8x8"], "seed": 3}"#).expect("old");
    assert_eq!(old.format, ImageFormat::Png);
}

#[test]
fn several_sizes_are_drawn_per_image_by_seed_and_request() {
    let one = ImageSettings::new(3, vec![size("8x8")], 5).expect("ok");
    assert_eq!(one.sizes_of(100, 4), vec![size("8x8"); 3]);
    let sizes = vec![size("8x8"), size("16x8"), size("8x16")];
    let s = ImageSettings::new(2, sizes.clone(), 5).expect("ok");
    // The same request draws the same sizes; every size is drawn, about equally often.
    assert_eq!(s.sizes_of(100, 4), s.sizes_of(100, 4));
    let mut counts = [0u32; 3];
    for stream in 0..600 {
        for z in s.sizes_of(100, stream) {
            counts[sizes.iter().position(|x| *x == z).expect("one of them")] += 1;
        }
    }
    assert_eq!(counts.iter().sum::<u32>(), 1200);
    assert!(counts.iter().all(|c| (340..=460).contains(c)), "{counts:?}");
    // Another seed, another draw; every image its own pixel seed.
    let other = ImageSettings::new(2, sizes, 6).expect("ok");
    let draws = |x: &ImageSettings| (0..20).map(|i| x.sizes_of(1, i)).collect::<Vec<_>>();
    assert_ne!(draws(&s), draws(&other));
    assert_ne!(s.image_seed(1, 0, 0), s.image_seed(1, 0, 1));
    assert_ne!(s.image_seed(1, 0, 0), s.image_seed(1, 1, 0));
    assert_ne!(s.image_seed(1, 0, 0), s.image_seed(2, 0, 0));
    assert_eq!(sizes_label(&[size("8x8"), size("16x8")]), "8x8+16x8");
}

fn rec(stream: u32, reported: Option<u64>) -> RequestRecord {
    RequestRecord {
        stream,
        sent_ns: 0,
        headers_ns: None,
        chunks: vec![Chunk {
            t_ns: 1_000_000,
            tokens: 1,
        }],
        end_ns: 1_000_000,
        outcome: Outcome::Finished {
            reason: "length".into(),
        },
        prompt_tokens_reported: reported,
        completion_tokens_reported: Some(1),
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

/// Streams 0-2 send one 56x28 image (2·1 + 2 = 4 tokens by the simulator's rule), stream 3
/// and 4 one 28x28 (3 tokens); every text part is 100 tokens.
fn of(r: &RequestRecord) -> Option<ImageRequest> {
    let sizes = if r.stream < 3 {
        vec![size("56x28")]
    } else {
        vec![size("28x28")]
    };
    Some(ImageRequest {
        text_tokens: 100,
        sizes,
    })
}

fn settings() -> ImageSettings {
    ImageSettings::new(1, vec![size("56x28"), size("28x28")], 1).expect("ok")
}

#[test]
fn a_server_counting_every_image_of_a_size_alike_passes_the_check() {
    let rs = vec![
        rec(0, Some(104)),
        rec(1, Some(104)),
        rec(2, Some(104)),
        rec(3, Some(103)),
        rec(4, None),
    ];
    let c = image_token_check(&settings(), &rs, &of);
    let text: Vec<Option<u64>> = c
        .text_part
        .iter()
        .map(|r| r.prompt_tokens_reported)
        .collect();
    assert_eq!(text, [Some(100), Some(100), Some(100), Some(100), None]);
    assert_eq!(prompt_check(100, 0, &c.text_part).mismatched, 0);
    // Against the count with images, every request would have failed.
    assert_eq!(prompt_check(100, 0, &rs).mismatched, 4);
    let f = &c.figures;
    assert_eq!(f.counted_by, "server usage");
    assert_eq!(f.per_request, 1);
    assert_eq!(f.sizes.get("56x28"), Some(&3));
    assert_eq!(f.sizes.get("28x28"), Some(&2));
    let t = f.image_tokens.as_ref().expect("counted");
    assert_eq!((t.n, t.min, t.max), (4, 3.0, 4.0));
    let groups: Vec<(&str, u64, i64, u64)> = f
        .groups
        .iter()
        .map(|g| (g.sizes.as_str(), g.requests, g.image_tokens, g.differing))
        .collect();
    assert_eq!(groups, [("28x28", 1, 3, 0), ("56x28", 3, 4, 0)]);
}

#[test]
fn a_request_counted_otherwise_than_its_group_is_a_prompt_mismatch() {
    // Planted: stream 1's image counted as 9 tokens where its group's count 4.
    let rs = vec![rec(0, Some(104)), rec(1, Some(109)), rec(2, Some(104))];
    let c = image_token_check(&settings(), &rs, &of);
    let pc = prompt_check(100, 0, &c.text_part);
    assert_eq!((pc.mismatched, pc.max_diff), (1, Some(5)));
    assert_eq!(c.figures.groups[0].differing, 1);
    assert_eq!(c.figures.groups[0].image_tokens, 4);
}

#[test]
fn a_group_counted_below_its_text_fails_every_request() {
    // Planted: the server counted fewer tokens than the text alone.
    let rs = vec![rec(0, Some(98)), rec(1, Some(98))];
    let c = image_token_check(&settings(), &rs, &of);
    assert_eq!(c.figures.groups[0].image_tokens, -2);
    assert_eq!(prompt_check(100, 0, &c.text_part).mismatched, 2);
    // Ties go to the smaller count: one of each, the 104 request is the one off.
    let tie = vec![rec(0, Some(104)), rec(1, Some(106))];
    let c = image_token_check(&settings(), &tie, &of);
    assert_eq!(c.figures.groups[0].image_tokens, 4);
    assert_eq!(prompt_check(100, 0, &c.text_part).max_diff, Some(2));
}

#[test]
fn a_rate_row_counts_its_input_with_the_image_tokens() {
    let rs: Vec<RequestRecord> = (0..2)
        .map(|i| {
            let mut r = rec(i, Some(104));
            r.sent_ns = u64::from(i) * 100_000_000;
            r.chunks[0].t_ns = r.sent_ns + 500_000_000;
            r.end_ns = r.chunks[0].t_ns;
            r
        })
        .collect();
    let c = image_token_check(&settings(), &rs, &of);
    let obs = crate::load::RateObservation {
        records: &c.text_part,
        scheduled_ns: &[0, 100_000_000],
        waited: &[false, false],
        requested_rate: 10.0,
        arrival: crate::arrival::ArrivalPattern::Constant,
        max_concurrency: None,
        max_in_flight: 2,
        slo: None,
        count: crate::counting::CountReport::new(),
        nominal_source: crate::meta::TokenCountSource::ServerUsagePerChunk,
        expected_prompt_tokens: 100,
        prompt_tolerance: 0,
        expected_prompts: None,
        workload: None,
        stop_reason: None,
        fault: None,
    };
    let mut row = crate::load::rate_result(&crate::load::rate_cell(100, "100", 10.0), obs);
    assert_eq!(row.status, CellStatus::Valid, "{:?}", row.status_reason);
    let before = row.rate.as_ref().and_then(|f| f.input_tok_per_s);
    finish_image_row(&mut row, &rs, c.figures.clone());
    let f = row.rate.as_ref().expect("rate");
    // 2 × 104 tokens over the 0.6 s span (the text part alone gave 2 × 100).
    let input = f.input_tok_per_s.expect("input");
    assert!((input - 208.0 / 0.6).abs() < 1e-9, "{input}");
    assert!((before.expect("before") - 200.0 / 0.6).abs() < 1e-9);
    let both = f.input_output_tok_per_s.expect("both");
    assert!((both - 210.0 / 0.6).abs() < 1e-9, "{both}");
    assert_eq!(row.images.as_deref(), Some(&c.figures));
    // A row without figures carries none.
    let mut failed = row.clone();
    failed.images = None;
    failed.status = CellStatus::Failed;
    finish_image_row(&mut failed, &rs, c.figures);
    assert_eq!(failed.images, None);
}

use crate::cell::CellStatus;

/// The memory guard's sizes are the encoder's: `png_len` and `base64_len` equal the lengths of
/// the real file and its text (one IDAT block and several), and a cell over 1 GiB of images is
/// refused with its figures while one under it passes.
#[test]
fn a_cells_image_bytes_are_the_encoders_and_over_a_gibibyte_is_refused() {
    for z in ["1x1", "64x32", "512x512", "200x300"] {
        let z = size(z);
        let png = noise_png(z.width, z.height, 7);
        assert_eq!(png_len(z), png.len() as u64, "{z}");
        assert_eq!(
            base64_len(png.len() as u64),
            base64(&png).len() as u64,
            "{z}"
        );
    }
    let s = ImageSettings {
        per_request: 2,
        sizes: vec![size("64x64"), size("512x512")],
        format: ImageFormat::Png,
        seed: 1,
    };
    let each = 2 * base64_len(png_len(size("512x512")));
    assert_eq!(s.max_request_bytes(), Ok(each));
    let fits = (MAX_IMAGE_BYTES_PER_CELL / each) as usize;
    assert_eq!(s.cell_memory(fits), Ok(()));
    let err = s.cell_memory(fits + 1).expect_err("over 1 GiB");
    assert_eq!(
        err,
        ImageError::TooMuchMemory {
            requests: fits + 1,
            bytes_per_request: each
        }
    );
    assert!(err.to_string().contains("lower the rate"), "{err}");
}

/// Decodes a JPEG with a real decoder (`jpeg-decoder`): its size and its RGB pixels.
fn decode_jpeg(bytes: &[u8]) -> (u16, u16, Vec<u8>) {
    let mut d = jpeg_decoder::Decoder::new(bytes);
    let pixels = d.decode().expect("a JPEG a real decoder reads");
    let info = d.info().expect("info");
    assert_eq!(info.pixel_format, jpeg_decoder::PixelFormat::RGB24);
    (info.width, info.height, pixels)
}

#[test]
fn a_noise_jpeg_is_a_jpeg_of_its_size_its_seed_and_its_pixels() {
    let jpeg = noise_jpeg(40, 24, 7).expect("jpeg");
    // SOI, then JFIF's APP0; EOI last.
    assert_eq!(&jpeg[..4], &[0xFF, 0xD8, 0xFF, 0xE0]);
    assert_eq!(&jpeg[jpeg.len() - 2..], &[0xFF, 0xD9]);
    let (w, h, pixels) = decode_jpeg(&jpeg);
    assert_eq!((w, h), (40, 24));
    // The noise survives the encoder: decoded pixels follow the drawn ones (quality 75 keeps
    // the mean error well under a tenth of the range; a wrong row order or seed would not).
    let mut rng = crate::rng::SplitMix64::new(7);
    let mut drawn = Vec::new();
    for _ in 0..24 {
        let mut row = Vec::new();
        while row.len() < 120 {
            row.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        row.truncate(120);
        drawn.extend(row);
    }
    let err: f64 = drawn
        .iter()
        .zip(&pixels)
        .map(|(a, b)| (f64::from(*a) - f64::from(*b)).abs())
        .sum::<f64>()
        / drawn.len() as f64;
    // Noise through 4:2:0 and quality 75 loses much of its colour detail; unrelated noise
    // would sit at 85 (the mean distance of two uniform bytes).
    assert!(err < 60.0, "mean error {err}");
    assert_eq!(noise_jpeg(40, 24, 7).expect("again"), jpeg);
    assert_ne!(noise_jpeg(40, 24, 8).expect("other"), jpeg);
    assert!(noise_jpeg(70_000, 1, 1).is_err_and(|e| e.to_string().contains("65535")));
}

#[test]
fn the_jpeg_bound_holds_every_seed_and_guards_the_cell() {
    for z in ["64x64", "100x30", "512x512"] {
        let z = size(z);
        let bound = jpeg_len_bound(z.width, z.height).expect("bound");
        let longest = (0..40)
            .map(|seed| noise_jpeg(z.width, z.height, seed).expect("jpeg").len() as u64)
            .max()
            .expect("some");
        assert!(longest <= bound, "{z}: {longest} > {bound}");
        // Not a vacuous bound: within 2 % and 4 KiB of what is built, plus the seeds' spread.
        assert!(
            bound <= longest + longest / 40 + 4096,
            "{z}: {bound} vs {longest}"
        );
    }
    let s = ImageSettings::new(2, vec![size("64x64"), size("512x512")], 1)
        .expect("ok")
        .with_format(ImageFormat::Jpeg);
    let each = 2 * base64_len(jpeg_len_bound(512, 512).expect("bound"));
    assert_eq!(s.max_request_bytes(), Ok(each));
    let fits = (MAX_IMAGE_BYTES_PER_CELL / each) as usize;
    assert_eq!(s.cell_memory(fits), Ok(()));
    assert!(matches!(
        s.cell_memory(fits + 1),
        Err(ImageError::TooMuchMemory { .. })
    ));
    // Each image of a request is the format's file of its own seed.
    let a = s.image(1, 0, 0, size("64x64")).expect("a");
    assert_eq!(decode_jpeg(&a).0, 64);
    assert_eq!(a, noise_jpeg(64, 64, s.image_seed(1, 0, 0)).expect("same"));
}
