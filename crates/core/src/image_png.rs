//! The images a run sends (`run --images K`; docs/images.md), built without an image crate:
//! seeded RGB noise as a real PNG (signature, `IHDR`, one `IDAT` of zlib stored blocks with
//! their Adler-32, `IEND`, each chunk with its CRC-32), and the base64 text a request carries.
//!
//! Noise, as vLLM's `random-mm` dataset and SGLang's `--image-content random` draw theirs: no
//! two images of a run are alike, so no server serves one from another's cache, and a stored
//! (uncompressed) stream is as small as noise gets anyway.

use crate::rng::SplitMix64;

/// The bytes every PNG file starts with.
const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
/// The most bytes one deflate stored block holds.
const STORED_MAX: usize = 65_535;

/// A PNG of `width` × `height` RGB pixels of noise drawn from `seed`: the same seed, the same
/// bytes. Each row is filter type 0 (none) then its pixels.
pub fn noise_png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let row = 1 + 3 * width as usize;
    let mut raw = vec![0u8; row * height as usize];
    // Each line's byte 0 stays 0: no filter.
    fill_noise(&mut raw, row, 1, seed);
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    // 8 bits per sample, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let idat = zlib_stored(&raw);
    let mut out = Vec::with_capacity(idat.len() + 64);
    out.extend_from_slice(&SIGNATURE);
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &idat);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Fills every `row`-byte line of `buf`, from its byte `skip` on, with noise drawn from
/// `seed`, eight bytes a draw (a line's last draw cut to what is left): the pixels of
/// [`noise_png`] (after each line's filter byte) and of `crate::noise_jpeg` alike.
pub(crate) fn fill_noise(buf: &mut [u8], row: usize, skip: usize, seed: u64) {
    let mut rng = SplitMix64::new(seed);
    for line in buf.chunks_mut(row.max(1)) {
        let from = skip.min(line.len());
        for chunk in line[from..].chunks_mut(8) {
            let bits = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bits[..chunk.len()]);
        }
    }
}

/// Appends one PNG chunk: length, type, data, and the CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// `data` as a zlib stream of deflate stored blocks (no compression), with its Adler-32.
pub fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let blocks = data.len().div_ceil(STORED_MAX).max(1);
    let mut out = Vec::with_capacity(data.len() + 5 * blocks + 6);
    // CMF: deflate with a 32 KiB window; FLG: no dictionary, check bits making it a multiple
    // of 31 (0x7801 = 30721 = 31 × 991).
    out.extend_from_slice(&[0x78, 0x01]);
    let mut pieces = data.chunks(STORED_MAX).peekable();
    if pieces.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(p) = pieces.next() {
        let last = u8::from(pieces.peek().is_none());
        let len = p.len() as u16;
        out.push(last);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(p);
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    out
}

/// Adler-32 (RFC 1950), zlib's checksum of the uncompressed data.
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes is the most that cannot overflow u32 before the modulo (zlib's NMAX).
    for block in data.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// CRC-32 (ISO 3309, as PNG and zlib's `crc32` compute it), table-driven.
pub fn crc32(data: &[u8]) -> u32 {
    let table = crc_table();
    let mut c = 0xffff_ffffu32;
    for &x in data {
        c = table[((c ^ u32::from(x)) & 0xff) as usize] ^ (c >> 8);
    }
    c ^ 0xffff_ffff
}

/// The 256 CRC-32 remainders of the reflected polynomial 0xEDB88320.
fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    for (n, slot) in t.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xedb8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *slot = c;
    }
    t
}

/// `data` in standard base64 (RFC 4648, `+/`, padded with `=`), as data URLs carry it.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for group in data.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
