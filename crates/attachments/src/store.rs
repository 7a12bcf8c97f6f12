//! [`ImageStore`], the seam, and [`LocalImageStore`], its implementation over files:
//! `<root>/objects/<first 2 hex>/<sha256 hex>` (the original's layout under
//! `$DSH_HOME/attachments/v1`, so either implementation finds the other's images).

use crate::error::AttachmentError;
use crate::media::{probe, ImageMediaType, Probed};
use crate::reference::{ImageRef, SHA256_PREFIX};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest encoded image stored by default (the original's per-image source limit).
pub const DEFAULT_MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// The largest width or height stored by default.
pub const DEFAULT_MAX_IMAGE_DIMENSION: u32 = 8192;

/// What a store accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageLimits {
    pub max_image_bytes: u64,
    pub max_image_dimension: u32,
}

impl Default for ImageLimits {
    fn default() -> Self {
        Self {
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_image_dimension: DEFAULT_MAX_IMAGE_DIMENSION,
        }
    }
}

impl ImageLimits {
    /// Checks `image` against the allow-list and these limits; the probed type and size.
    pub fn check(&self, image: &SaveImage) -> Result<Probed, AttachmentError> {
        let declared: ImageMediaType =
            image
                .media_type
                .parse()
                .map_err(|_| AttachmentError::UnsupportedMediaType {
                    declared: image.media_type.clone(),
                })?;
        let bytes = image.data.len() as u64;
        if bytes > self.max_image_bytes {
            return Err(AttachmentError::TooLarge {
                bytes,
                limit: self.max_image_bytes,
            });
        }
        let probed = probe(&image.data)?;
        if probed.media_type != declared {
            return Err(AttachmentError::MediaTypeMismatch {
                declared: declared.as_str(),
                actual: probed.media_type.as_str(),
            });
        }
        if probed.width > self.max_image_dimension || probed.height > self.max_image_dimension {
            return Err(AttachmentError::TooManyPixels {
                width: probed.width,
                height: probed.height,
                limit: self.max_image_dimension,
            });
        }
        Ok(probed)
    }
}

/// One image to store: its bytes, the media type its producer declared, a display name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveImage {
    pub data: Vec<u8>,
    pub media_type: String,
    pub name: Option<String>,
}

/// Durable, immutable image storage. Provided on the kernel as `dyn ImageStore` by the
/// `attachments` plugin; producers (MCP results) save, model adapters read.
///
/// Both calls block on disk I/O: async callers run them on a blocking thread.
pub trait ImageStore: Send + Sync + 'static {
    /// What this store accepts.
    fn limits(&self) -> ImageLimits;

    /// Checks and durably stores `image`: when this returns, the bytes and their directory
    /// entries are synced, so an event referencing the result may be appended.
    fn save_image(&self, image: SaveImage) -> Result<ImageRef, AttachmentError>;

    /// The bytes of `image`, checked against the reference (length and digest).
    fn read_image(&self, image: &ImageRef) -> Result<Vec<u8>, AttachmentError>;

    /// Checks every image first, then stores them in order: one refused image stores none.
    fn save_images(&self, images: Vec<SaveImage>) -> Result<Vec<ImageRef>, AttachmentError> {
        let limits = self.limits();
        for image in &images {
            limits.check(image)?;
        }
        images
            .into_iter()
            .map(|image| self.save_image(image))
            .collect()
    }
}

/// [`ImageStore`] over a directory.
#[derive(Debug)]
pub struct LocalImageStore {
    root: PathBuf,
    limits: ImageLimits,
}

/// Makes temporary names unique within the process (the pid separates processes).
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

impl LocalImageStore {
    /// A store at `root` (created on the first save).
    pub fn new(root: impl Into<PathBuf>, limits: ImageLimits) -> Self {
        Self {
            root: root.into(),
            limits,
        }
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the object with digest `hex` lives.
    pub fn object_path(&self, hex: &str) -> PathBuf {
        self.root
            .join("objects")
            .join(hex.get(..2).unwrap_or(hex))
            .join(hex)
    }

    fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> AttachmentError {
        let path = path.display().to_string();
        move |source| AttachmentError::Io { op, path, source }
    }

    /// Creates `dir` and any missing parents, syncing each parent whose entries changed so a
    /// crash cannot drop a directory an object is published in.
    fn durable_dir(dir: &Path) -> Result<(), AttachmentError> {
        if dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            Self::durable_dir(parent)?;
        }
        match fs::create_dir(dir) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(Self::io("cannot create", dir)(error)),
        }
        restrict_dir(dir);
        if let Some(parent) = dir.parent() {
            sync_dir(parent)?;
        }
        Ok(())
    }

    fn write_object(&self, target: &Path, data: &[u8]) -> Result<(), AttachmentError> {
        let staging = self.root.join("tmp");
        let bucket = target.parent().unwrap_or(&self.root).to_path_buf();
        Self::durable_dir(&staging)?;
        Self::durable_dir(&bucket)?;
        let temp = staging.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            let mut file = options
                .open(&temp)
                .map_err(Self::io("cannot create", &temp))?;
            file.write_all(data)
                .map_err(Self::io("cannot write", &temp))?;
            file.sync_all().map_err(Self::io("cannot sync", &temp))?;
            // Same bytes under the same name: replacing an existing object changes nothing.
            fs::rename(&temp, target).map_err(Self::io("cannot publish", target))?;
            sync_dir(&bucket)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written
    }
}

impl ImageStore for LocalImageStore {
    fn limits(&self) -> ImageLimits {
        self.limits
    }

    fn save_image(&self, image: SaveImage) -> Result<ImageRef, AttachmentError> {
        let probed = self.limits.check(&image)?;
        let hex = hex(&Sha256::digest(&image.data));
        let target = self.object_path(&hex);
        let bytes = image.data.len() as u64;
        // Content-addressed: an object already there with this length is this image.
        let present = fs::metadata(&target).is_ok_and(|m| m.is_file() && m.len() == bytes);
        if !present {
            self.write_object(&target, &image.data)?;
        }
        Ok(ImageRef {
            attachment_id: format!("{SHA256_PREFIX}{hex}"),
            media_type: probed.media_type,
            bytes,
            width: probed.width,
            height: probed.height,
            name: image.name,
        })
    }

    fn read_image(&self, image: &ImageRef) -> Result<Vec<u8>, AttachmentError> {
        let hex = image
            .digest()
            .ok_or_else(|| AttachmentError::InvalidReference(image.attachment_id.clone()))?;
        let path = self.object_path(hex);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(AttachmentError::NotFound {
                    id: image.attachment_id.clone(),
                    root: self.root.display().to_string(),
                })
            }
            Err(error) => return Err(Self::io("cannot open", &path)(error)),
        };
        let corrupt = |reason: String| AttachmentError::Corrupt {
            id: image.attachment_id.clone(),
            reason,
        };
        // Never read more than the reference promises (plus one byte to notice a longer file).
        let mut data = Vec::new();
        file.take(image.bytes.saturating_add(1))
            .read_to_end(&mut data)
            .map_err(Self::io("cannot read", &path))?;
        if data.len() as u64 != image.bytes {
            return Err(corrupt(format!(
                "the reference says {} bytes, the file at {} differs",
                image.bytes,
                path.display()
            )));
        }
        if hex_digest(&data) != hex {
            return Err(corrupt(format!(
                "the file at {} does not match its digest",
                path.display()
            )));
        }
        Ok(data)
    }
}

fn hex_digest(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sync_dir(dir: &Path) -> Result<(), AttachmentError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(LocalImageStore::io("cannot sync", dir))
}

/// Owner-only directories: images may show private things.
fn restrict_dir(dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::samples;

    fn save(data: Vec<u8>, mime: &str) -> SaveImage {
        SaveImage {
            data,
            media_type: mime.into(),
            name: None,
        }
    }

    #[test]
    fn saved_images_read_back_and_repeats_are_free() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalImageStore::new(dir.path().join("v1"), ImageLimits::default());
        let data = samples::png(2, 3);
        let image = store.save_image(save(data.clone(), "image/png")).unwrap();
        let hex = hex_digest(&data);
        assert_eq!(image.attachment_id, format!("sha256:{hex}"));
        assert_eq!(
            (image.width, image.height, image.bytes),
            (2, 3, data.len() as u64)
        );
        let path = dir.path().join("v1/objects").join(&hex[..2]).join(&hex);
        assert_eq!(fs::read(&path).unwrap(), data);
        assert_eq!(store.read_image(&image).unwrap(), data);
        // A second save writes nothing: the object's modification time is unchanged.
        let before = fs::metadata(&path).unwrap().modified().unwrap();
        let again = store.save_image(save(data, "image/png")).unwrap();
        assert_eq!(again, image);
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), before);
        // Nothing is left in the staging directory.
        assert_eq!(fs::read_dir(dir.path().join("v1/tmp")).unwrap().count(), 0);
    }

    #[test]
    fn admission_refuses_with_clear_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let limits = ImageLimits {
            max_image_bytes: 64,
            max_image_dimension: 100,
        };
        let store = LocalImageStore::new(dir.path(), limits);
        let code = |image| store.save_image(image).unwrap_err().code();
        assert_eq!(
            code(save(samples::png(1, 1), "image/tiff")),
            "UNSUPPORTED_MEDIA_TYPE"
        );
        assert_eq!(
            code(save(samples::png(1, 1), "image/gif")),
            "MEDIA_TYPE_MISMATCH"
        );
        assert_eq!(
            code(save(b"not an image".to_vec(), "image/png")),
            "INVALID_IMAGE"
        );
        assert_eq!(code(save(vec![0; 65], "image/png")), "ATTACHMENT_TOO_LARGE");
        assert_eq!(
            code(save(samples::png(101, 1), "image/png")),
            "IMAGE_DIMENSIONS_EXCEEDED"
        );
        // A batch with one bad member stores nothing.
        let batch = vec![
            save(samples::png(1, 1), "image/png"),
            save(vec![1], "image/png"),
        ];
        assert!(store.save_images(batch).is_err());
        assert!(!dir.path().join("objects").exists());
    }

    #[test]
    fn damaged_or_missing_objects_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalImageStore::new(dir.path(), ImageLimits::default());
        let image = store
            .save_image(save(samples::png(4, 4), "image/png"))
            .unwrap();
        let path = store.object_path(image.digest().unwrap());
        let mut bytes = fs::read(&path).unwrap();
        bytes[20] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(
            store.read_image(&image).unwrap_err().code(),
            "ATTACHMENT_CORRUPT"
        );
        fs::remove_file(&path).unwrap();
        assert_eq!(
            store.read_image(&image).unwrap_err().code(),
            "ATTACHMENT_NOT_FOUND"
        );
        let mut forged = image.clone();
        forged.attachment_id = "sha256:../../x".into();
        assert_eq!(
            store.read_image(&forged).unwrap_err().code(),
            "INVALID_ATTACHMENT_REFERENCE"
        );
    }
}
