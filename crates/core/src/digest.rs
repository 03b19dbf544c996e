//! The one hash this project writes: sha256 as lower-case hex, for the files a run records by
//! hash instead of by content (a prompt text, a prompts file, an imported result) and the
//! hub's stored hashes, so that the same bytes always give the same string everywhere.

use sha2::{Digest, Sha256};

/// sha256 of `bytes`, lower-case hex (64 characters).
pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // `printf abc | sha256sum`, and the empty input's.
        assert_eq!(
            hex_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex_sha256(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
