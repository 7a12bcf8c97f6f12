//! The four image types the store keeps, and [`probe`]: which one a byte string is and how
//! big it is, read from its header (no decoding, no image library).

use crate::error::AttachmentError;

dsh_protocol::word_enum! {
    /// A media type the store accepts (the original's `ImageMediaType`).
    pub enum ImageMediaType {
        Png = "image/png",
        Jpeg = "image/jpeg",
        Webp = "image/webp",
        Gif = "image/gif",
    }
}

impl ImageMediaType {
    /// A short name for messages (`PNG`).
    pub fn label(self) -> &'static str {
        match self {
            Self::Png => "PNG",
            Self::Jpeg => "JPEG",
            Self::Webp => "WebP",
            Self::Gif => "GIF",
        }
    }

    /// The usual file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Jpeg => "jpg",
            Self::Webp => "webp",
            Self::Gif => "gif",
        }
    }
}

/// What [`probe`] read from an image's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probed {
    pub media_type: ImageMediaType,
    pub width: u32,
    pub height: u32,
}

/// The type and intrinsic size of `data`, from its signature and header.
///
/// Fails with `INVALID_IMAGE` when `data` is none of the four types or its header is cut
/// short or inconsistent (a zero width, say).
pub fn probe(data: &[u8]) -> Result<Probed, AttachmentError> {
    let found = if data.starts_with(b"\x89PNG\r\n\x1a\n") {
        png(data)
    } else if data.starts_with(b"GIF87a") || data.starts_with(b"GIF89a") {
        gif(data)
    } else if data.len() >= 12 && &data[..4] == b"RIFF" && &data[8..12] == b"WEBP" {
        webp(data)
    } else if data.starts_with(&[0xFF, 0xD8]) {
        jpeg(data)
    } else {
        None
    };
    match found {
        Some(probed) if probed.width > 0 && probed.height > 0 => Ok(probed),
        _ => Err(AttachmentError::NotAnImage),
    }
}

fn be16(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 2)?;
    Some(u32::from(u16::from_be_bytes([b[0], b[1]])))
}

fn le16(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 2)?;
    Some(u32::from(u16::from_le_bytes([b[0], b[1]])))
}

fn le24(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 3)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], 0]))
}

fn png(data: &[u8]) -> Option<Probed> {
    // The first chunk must be IHDR: length 13, then width and height big-endian.
    if data.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| -> Option<u32> {
        let b = data.get(at..at + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    Some(Probed {
        media_type: ImageMediaType::Png,
        width: word(16)?,
        height: word(20)?,
    })
}

fn gif(data: &[u8]) -> Option<Probed> {
    Some(Probed {
        media_type: ImageMediaType::Gif,
        width: le16(data, 6)?,
        height: le16(data, 8)?,
    })
}

fn webp(data: &[u8]) -> Option<Probed> {
    let (width, height) = match data.get(12..16)? {
        // Lossy: a key frame's start code, then 14-bit width and height.
        b"VP8 " => {
            if data.get(23..26)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            (le16(data, 26)? & 0x3fff, le16(data, 28)? & 0x3fff)
        }
        // Lossless: signature 0x2f, then width-1 and height-1 in 14 bits each.
        b"VP8L" => {
            if *data.get(20)? != 0x2f {
                return None;
            }
            let b = data.get(21..25)?;
            let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            ((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1)
        }
        // Extended: canvas width-1 and height-1 in 24 bits each.
        b"VP8X" => (le24(data, 24)? + 1, le24(data, 27)? + 1),
        _ => return None,
    };
    Some(Probed {
        media_type: ImageMediaType::Webp,
        width,
        height,
    })
}

fn jpeg(data: &[u8]) -> Option<Probed> {
    let mut at = 2;
    loop {
        if *data.get(at)? != 0xFF {
            return None;
        }
        // Fill bytes may precede a marker.
        while *data.get(at + 1)? == 0xFF {
            at += 1;
        }
        let marker = *data.get(at + 1)?;
        at += 2;
        match marker {
            // Markers without a length.
            0x01 | 0xD0..=0xD7 => continue,
            // End of image or start of scan before any frame header: no size to be had.
            0xD9 | 0xDA => return None,
            _ => {}
        }
        let length = be16(data, at)? as usize;
        if length < 2 {
            return None;
        }
        // Start-of-frame markers (not DHT C4, JPG C8, DAC CC): precision, height, width.
        if matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            return Some(Probed {
                media_type: ImageMediaType::Jpeg,
                width: be16(data, at + 5)?,
                height: be16(data, at + 3)?,
            });
        }
        at += length;
    }
}

#[cfg(test)]
pub(crate) mod samples {
    /// A 2x3 PNG header (IHDR only: enough for probing).
    pub fn png(width: u32, height: u32) -> Vec<u8> {
        let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        data.extend_from_slice(&width.to_be_bytes());
        data.extend_from_slice(&height.to_be_bytes());
        data.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_is_recognised_with_its_size() {
        let probed = probe(&samples::png(2, 3)).unwrap();
        assert_eq!(
            probed,
            Probed {
                media_type: ImageMediaType::Png,
                width: 2,
                height: 3
            }
        );
        let gif = b"GIF89a\x0a\x00\x14\x00\x00\x00\x00";
        assert_eq!(probe(gif).unwrap().width, 10);
        assert_eq!(probe(gif).unwrap().height, 20);

        // JPEG: SOI, an APP0 segment to skip, then SOF0 with height 7 and width 9.
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00];
        jpeg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0x07, 0x00, 0x09, 0x01]);
        let probed = probe(&jpeg).unwrap();
        assert_eq!(
            (probed.media_type, probed.width, probed.height),
            (ImageMediaType::Jpeg, 9, 7)
        );

        // WebP extended: canvas 300x200 stored as width-1, height-1.
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        webp.extend_from_slice(&[0x2B, 0x01, 0x00, 0xC7, 0x00, 0x00]);
        let probed = probe(&webp).unwrap();
        assert_eq!((probed.width, probed.height), (300, 200));

        // WebP lossless: 5x4 → bits (4) | (3 << 14).
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        lossless.extend_from_slice(&(4u32 | (3 << 14)).to_le_bytes());
        assert_eq!(
            (
                probe(&lossless).unwrap().width,
                probe(&lossless).unwrap().height
            ),
            (5, 4)
        );
    }

    #[test]
    fn other_data_is_refused() {
        for bad in [
            &b""[..],
            b"hello",
            b"\x89PNG\r\n\x1a\n",
            b"GIF89a\x00\x00\x05\x00",
            &[0xFF, 0xD8, 0xFF, 0xD9],
            &[0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10],
        ] {
            assert_eq!(probe(bad).unwrap_err().code(), "INVALID_IMAGE", "{bad:?}");
        }
    }

    #[test]
    fn words_are_mime_types() {
        assert_eq!(
            "image/webp".parse::<ImageMediaType>(),
            Ok(ImageMediaType::Webp)
        );
        assert!("image/tiff".parse::<ImageMediaType>().is_err());
        assert_eq!(ImageMediaType::Jpeg.to_string(), "image/jpeg");
    }
}
