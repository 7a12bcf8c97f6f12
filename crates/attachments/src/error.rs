//! [`AttachmentError`]: why an image was not stored or not read back.

/// Why an image could not be stored or read. Every message says what to do differently.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachmentError {
    /// The declared media type is not one of the four the store keeps.
    #[error("the declared media type {declared:?} is not PNG, JPEG, WebP, or GIF")]
    UnsupportedMediaType { declared: String },
    /// The bytes are not a PNG, JPEG, WebP or GIF image whose size can be read.
    #[error("the data is not a readable PNG, JPEG, WebP, or GIF image")]
    NotAnImage,
    /// The bytes are an image of another type than declared.
    #[error("the data is {actual}, not the declared {declared}")]
    MediaTypeMismatch {
        declared: &'static str,
        actual: &'static str,
    },
    /// The encoded image is bigger than the store accepts.
    #[error("the image is {}, over the {} limit for stored images", human_bytes(*bytes), human_bytes(*limit))]
    TooLarge { bytes: u64, limit: u64 },
    /// Width or height is beyond the store's limit.
    #[error("the image is {width}x{height} px; each side may be at most {limit} px")]
    TooManyPixels { width: u32, height: u32, limit: u32 },
    /// A reference that does not name a stored object (`sha256:<64 hex>`).
    #[error("{0:?} is not an attachment reference this store understands")]
    InvalidReference(String),
    /// The referenced object is not in the store.
    #[error("attachment {id} is not in the store at {root}")]
    NotFound { id: String, root: String },
    /// The stored bytes no longer match their reference.
    #[error("attachment {id} is damaged: {reason}")]
    Corrupt { id: String, reason: String },
    /// Reading or writing the store failed.
    #[error("attachment store {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl AttachmentError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnsupportedMediaType { .. } => "UNSUPPORTED_MEDIA_TYPE",
            Self::NotAnImage => "INVALID_IMAGE",
            Self::MediaTypeMismatch { .. } => "MEDIA_TYPE_MISMATCH",
            Self::TooLarge { .. } => "ATTACHMENT_TOO_LARGE",
            Self::TooManyPixels { .. } => "IMAGE_DIMENSIONS_EXCEEDED",
            Self::InvalidReference(_) => "INVALID_ATTACHMENT_REFERENCE",
            Self::NotFound { .. } => "ATTACHMENT_NOT_FOUND",
            Self::Corrupt { .. } => "ATTACHMENT_CORRUPT",
            Self::Io { .. } => "ATTACHMENT_IO",
        }
    }

    /// Whether the image itself was refused (the caller can say so to the model), as opposed
    /// to the store failing.
    pub fn is_admission(&self) -> bool {
        matches!(
            self,
            Self::UnsupportedMediaType { .. }
                | Self::NotAnImage
                | Self::MediaTypeMismatch { .. }
                | Self::TooLarge { .. }
                | Self::TooManyPixels { .. }
        )
    }
}

/// `95 bytes`, `12.3 KiB`, `20 MiB`: sizes for messages.
pub fn human_bytes(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    let fmt = |value: f64, unit: &str| {
        let text = format!("{value:.1}");
        let text = text.strip_suffix(".0").unwrap_or(&text).to_owned();
        format!("{text} {unit}")
    };
    if bytes >= MIB {
        fmt(bytes as f64 / MIB as f64, "MiB")
    } else if bytes >= KIB {
        fmt(bytes as f64 / KIB as f64, "KiB")
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(95), "95 bytes");
        assert_eq!(human_bytes(2048), "2 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(20 * 1024 * 1024), "20 MiB");
        let error = AttachmentError::TooLarge {
            bytes: 25 * 1024 * 1024,
            limit: 20 * 1024 * 1024,
        };
        assert_eq!(
            error.to_string(),
            "the image is 25 MiB, over the 20 MiB limit for stored images"
        );
        assert_eq!(error.code(), "ATTACHMENT_TOO_LARGE");
        assert!(error.is_admission());
    }
}
