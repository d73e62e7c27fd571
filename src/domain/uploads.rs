//! What an upload may be: the image kinds accepted (known by their first bytes, never by a
//! declared type or a filename), the size limit, and the shape of the keys files are stored
//! and served under.

use uuid::Uuid;

/// The largest file accepted: 5 MiB.
pub const MAX_UPLOAD_BYTES: usize = 5 * 1024 * 1024;

/// How many leading bytes [`ImageKind::detect`] needs to tell every accepted kind apart.
pub const SNIFF_LEN: usize = 12;

/// Longest stem a served key may have; a fresh key's stem is a 36-character UUID.
const MAX_KEY_STEM_LEN: usize = 64;

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
const JPEG_SIGNATURE: &[u8] = b"\xff\xd8\xff";

/// An accepted image format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
    Webp,
}

impl ImageKind {
    /// The kind `bytes` start with: PNG's eight-byte signature, JPEG's start-of-image marker,
    /// or a RIFF container of type `WEBP`. Three signatures do not warrant a crate.
    pub fn detect(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(PNG_SIGNATURE) {
            Some(Self::Png)
        } else if bytes.starts_with(JPEG_SIGNATURE) {
            Some(Self::Jpeg)
        } else if bytes.len() >= SNIFF_LEN && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(Self::Webp)
        } else {
            None
        }
    }

    /// The extension of keys of this kind.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Webp => "webp",
        }
    }

    pub fn from_extension(extension: &str) -> Option<Self> {
        match extension {
            "png" => Some(Self::Png),
            "jpg" => Some(Self::Jpeg),
            "webp" => Some(Self::Webp),
            _ => None,
        }
    }

    /// The `Content-Type` files of this kind are served with.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg => "image/jpeg",
            Self::Webp => "image/webp",
        }
    }
}

/// Where uploaded files are served back, at the bare origin: `/files/<key>`.
pub const FILES_PATH: &str = "/files/";

/// A fresh key for a file of `kind`: `<uuid v7>.<ext>`. Keys are never reused, so a served
/// file may be cached forever.
pub fn new_key(kind: ImageKind) -> String {
    format!("{}.{}", Uuid::now_v7(), kind.extension())
}

/// The kind of a key of the served shape `[0-9a-f-]+\.(png|jpg|webp)`; `None` for anything
/// else, so a slash, `..` or a stray object in the store is never reached through `/files`.
pub fn parse_key(key: &str) -> Option<ImageKind> {
    let (stem, extension) = key.split_once('.')?;
    let stem_ok = !stem.is_empty()
        && stem.len() <= MAX_KEY_STEM_LEN
        && stem.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b) || b == b'-');
    if !stem_ok {
        return None;
    }
    ImageKind::from_extension(extension)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0";
    const WEBP: &[u8] = b"RIFF\x24\0\0\0WEBPVP8 ";

    #[test]
    fn each_accepted_kind_is_known_by_its_first_bytes() {
        assert_eq!(ImageKind::detect(PNG), Some(ImageKind::Png));
        assert_eq!(ImageKind::detect(JPEG), Some(ImageKind::Jpeg));
        assert_eq!(ImageKind::detect(WEBP), Some(ImageKind::Webp));
    }

    #[test]
    fn other_content_is_not_an_accepted_image() {
        for bytes in [
            &b""[..],
            b"#!/bin/sh\nrm -rf /\n",
            b"<svg xmlns='http://www.w3.org/2000/svg'/>",
            b"GIF89a\x01\0\x01\0\0\0",
            b"RIFF\x24\0\0\0WAVEfmt ",
            b"RIFF\x24\0\0\0WEB",
            b"\x89PNG\r\n",
            b"\xff\xd8",
            b"%PDF-1.7\n",
        ] {
            assert_eq!(ImageKind::detect(bytes), None, "{bytes:?}");
        }
    }

    #[test]
    fn extensions_and_content_types_match_each_kind() {
        for kind in [ImageKind::Png, ImageKind::Jpeg, ImageKind::Webp] {
            assert_eq!(ImageKind::from_extension(kind.extension()), Some(kind));
            assert_eq!(
                kind.content_type(),
                format!("image/{}", if kind == ImageKind::Jpeg { "jpeg" } else { kind.extension() })
            );
        }
    }

    #[test]
    fn a_fresh_key_is_a_uuid_with_the_kind_as_extension_and_parses_back() {
        let key = new_key(ImageKind::Webp);
        let (stem, extension) = key.split_once('.').expect("a dot");
        assert!(Uuid::parse_str(stem).is_ok(), "{key}");
        assert_eq!(extension, "webp");
        assert_eq!(parse_key(&key), Some(ImageKind::Webp));
        assert_ne!(new_key(ImageKind::Webp), key, "keys are never reused");
    }

    #[test]
    fn keys_outside_the_served_shape_are_refused() {
        for key in [
            "",
            ".png",
            "abc",
            "abc.gif",
            "abc.PNG",
            "ABC.png",
            "abc.png.png",
            "../abc.png",
            "..",
            "a/b.png",
            "a\\b.png",
            "abc .png",
            "abcg.png",
            "abc.jpeg",
            &format!("{}.png", "a".repeat(65)),
        ] {
            assert_eq!(parse_key(key), None, "{key:?}");
        }
        assert_eq!(parse_key("0190-abcdef.jpg"), Some(ImageKind::Jpeg));
        assert_eq!(parse_key(&format!("{}.png", "a".repeat(64))), Some(ImageKind::Png));
    }
}
