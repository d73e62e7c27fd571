//! The object store uploaded files live in, built from `STORAGE_URL`: a local folder by
//! default, `file:///path` for another folder, `s3://bucket[/prefix]?options` for an
//! S3-compatible bucket. Files go in whole and come out as a stream.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use futures_util::stream::BoxStream;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use url::Url;

/// The folder used when `STORAGE_URL` is unset, created when missing.
pub const DEFAULT_UPLOADS_DIR: &str = "./data/uploads";

/// The `AWS_*` variables deployments set for an `s3://` `STORAGE_URL`, as the README lists
/// them. They are not declared with the configuration: `s3_builder` hands object_store every
/// `AWS_*` variable it knows (web identity and container credentials too), these among them.
pub const AWS_VARIABLES: [&str; 7] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT",
    "AWS_ALLOW_HTTP",
];

/// Why `STORAGE_URL` cannot be used. The text is what an operator sees when the service
/// refuses to start; it never repeats the URL, whose query may hold a secret key.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("STORAGE_URL is not a URL ({0}): expected file:///absolute/path or s3://bucket?options")]
    NotAUrl(url::ParseError),
    #[error("STORAGE_URL has the unsupported scheme {0:?}: expected file:///absolute/path or s3://bucket?options")]
    UnsupportedScheme(String),
    #[error("STORAGE_URL must name a local folder as file:///absolute/path, with no host")]
    BadFolder,
    #[error("STORAGE_URL must name a bucket as s3://bucket")]
    MissingBucket,
    #[error("STORAGE_URL has the unknown S3 option {0:?}")]
    UnknownOption(String),
    #[error("STORAGE_URL has an invalid key prefix: {0}")]
    BadPrefix(object_store::path::Error),
    #[error("the uploads folder {path} cannot be used: {source}")]
    Folder { path: String, source: std::io::Error },
    #[error("STORAGE_URL does not configure a usable store: {0}")]
    Store(object_store::Error),
}

/// Where files go, as `STORAGE_URL` says, before anything is opened.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Folder(PathBuf),
    /// An `s3://` URL, checked to name a bucket.
    S3(Url),
}

impl Target {
    fn parse(storage_url: Option<&str>) -> Result<Self, StorageError> {
        let Some(text) = storage_url else {
            return Ok(Self::Folder(PathBuf::from(DEFAULT_UPLOADS_DIR)));
        };
        let url = Url::parse(text).map_err(StorageError::NotAUrl)?;
        match url.scheme() {
            "file" => {
                if url.host().is_some() {
                    return Err(StorageError::BadFolder);
                }
                url.to_file_path().map(Self::Folder).map_err(|()| StorageError::BadFolder)
            }
            "s3" => match url.host_str() {
                Some(bucket) if !bucket.is_empty() => Ok(Self::S3(url)),
                _ => Err(StorageError::MissingBucket),
            },
            other => Err(StorageError::UnsupportedScheme(other.to_owned())),
        }
    }
}

/// The S3 settings of `url`: first the standard `AWS_*` variables of `env` (as
/// `AmazonS3Builder::from_env` reads them), then the URL's bucket and its query options
/// (`endpoint`, `region`, `access_key_id`, `secret_access_key`, `allow_http`, … in any name
/// object_store accepts), which win. An unknown option is refused rather than ignored.
fn s3_builder(url: &Url, env: impl IntoIterator<Item = (String, String)>) -> Result<AmazonS3Builder, StorageError> {
    let mut builder = AmazonS3Builder::new();
    for (name, value) in env {
        if name.starts_with("AWS_")
            && let Ok(key) = name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>()
        {
            builder = builder.with_config(key, value);
        }
    }
    let bucket = url.host_str().ok_or(StorageError::MissingBucket)?;
    builder = builder.with_bucket_name(bucket);
    for (name, value) in url.query_pairs() {
        let key = name
            .to_ascii_lowercase()
            .parse::<AmazonS3ConfigKey>()
            .map_err(|_| StorageError::UnknownOption(name.clone().into_owned()))?;
        builder = builder.with_config(key, value);
    }
    Ok(builder)
}

/// The key prefix a `s3://bucket/some/prefix` URL asks for, if any.
fn s3_prefix(url: &Url) -> Result<Option<Path>, StorageError> {
    let path = url.path().trim_matches('/');
    if path.is_empty() {
        return Ok(None);
    }
    Path::parse(path).map(Some).map_err(StorageError::BadPrefix)
}

/// A file read back from the store.
pub struct StoredFile {
    pub size: u64,
    pub body: BoxStream<'static, object_store::Result<Bytes>>,
}

/// The object store of uploads; cheap to clone.
#[derive(Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    /// Where files go, for the log: a folder or a bucket and prefix, never a credential.
    location: String,
}

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Storage({})", self.location)
    }
}

impl Storage {
    /// Opens the store `STORAGE_URL` names (`None`: the default folder), reading S3
    /// credentials from the process environment. A local folder is created when missing.
    pub fn open(storage_url: Option<&str>) -> Result<Self, StorageError> {
        // `vars_os`, not `vars`: a variable that is not Unicode must not panic the start.
        let env =
            std::env::vars_os().filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)));
        Self::open_with_env(storage_url, env)
    }

    fn open_with_env(
        storage_url: Option<&str>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, StorageError> {
        match Target::parse(storage_url)? {
            Target::Folder(folder) => {
                let failed = |source| StorageError::Folder { path: folder.display().to_string(), source };
                std::fs::create_dir_all(&folder).map_err(failed)?;
                let store =
                    LocalFileSystem::new_with_prefix(&folder).map_err(|err| failed(std::io::Error::other(err)))?;
                Ok(Self { store: Arc::new(store), location: format!("folder {}", folder.display()) })
            }
            Target::S3(url) => {
                let store = s3_builder(&url, env)?.build().map_err(StorageError::Store)?;
                let location = store.to_string();
                Ok(match s3_prefix(&url)? {
                    Some(prefix) => Self {
                        location: format!("{location} under {prefix}"),
                        store: Arc::new(PrefixStore::new(store, prefix)),
                    },
                    None => Self { store: Arc::new(store), location },
                })
            }
        }
    }

    /// Stores `bytes` under `key`, whole or not at all.
    pub async fn put(&self, key: &str, bytes: Bytes) -> anyhow::Result<()> {
        self.store.put(&Path::from(key), PutPayload::from(bytes)).await?;
        Ok(())
    }

    /// The file under `key`; `None` when there is none.
    pub async fn get(&self, key: &str) -> anyhow::Result<Option<StoredFile>> {
        match self.store.get(&Path::from(key)).await {
            Ok(found) => Ok(Some(StoredFile { size: found.meta.size, body: found.into_stream() })),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }

    /// Removes the file under `key`; a missing file is no error.
    pub async fn delete(&self, key: &str) -> anyhow::Result<()> {
        match self.store.delete(&Path::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::TryStreamExt;

    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn s3(url: &str, vars: &[(&str, &str)]) -> AmazonS3Builder {
        let Ok(Target::S3(url)) = Target::parse(Some(url)) else { panic!("{url} is an S3 target") };
        s3_builder(&url, env(vars)).expect("the options are known")
    }

    #[test]
    fn object_store_reads_every_aws_variable_the_readme_lists() {
        for name in AWS_VARIABLES {
            assert!(name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>().is_ok(), "{name}");
        }
    }

    #[test]
    fn no_storage_url_means_the_default_folder() {
        assert_eq!(Target::parse(None).expect("a target"), Target::Folder(PathBuf::from(DEFAULT_UPLOADS_DIR)));
    }

    #[test]
    fn a_file_url_names_its_folder() {
        assert_eq!(
            Target::parse(Some("file:///srv/floor/uploads")).expect("a target"),
            Target::Folder(PathBuf::from("/srv/floor/uploads"))
        );
    }

    #[test]
    fn unusable_storage_urls_are_refused_with_a_reason() {
        for (url, reason) in [
            ("uploads", "is not a URL"),
            ("ftp://host/x", "unsupported scheme \"ftp\""),
            ("gs://bucket", "unsupported scheme \"gs\""),
            ("file://host/srv", "file:///absolute/path"),
            ("s3:///no-bucket", "must name a bucket"),
        ] {
            let err = Target::parse(Some(url)).expect_err(url);
            assert!(err.to_string().contains(reason), "{url}: {err}");
        }
    }

    #[test]
    fn an_s3_url_carries_bucket_and_options() {
        let builder = s3(
            "s3://floor-uploads?endpoint=http://127.0.0.1:9000&region=ru-central1&access_key_id=AK&secret_access_key=SK&allow_http=true",
            &[],
        );
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::Bucket).as_deref(), Some("floor-uploads"));
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::Endpoint).as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::Region).as_deref(), Some("ru-central1"));
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::AccessKeyId).as_deref(), Some("AK"));
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::SecretAccessKey).as_deref(), Some("SK"));
    }

    #[test]
    fn s3_settings_come_from_aws_variables_and_the_url_wins() {
        let builder = s3(
            "s3://floor-uploads?region=eu-west-1",
            &[
                ("AWS_REGION", "us-east-2"),
                ("AWS_ACCESS_KEY_ID", "from-env"),
                ("AWS_ENDPOINT", "https://storage.example"),
                ("HOME", "/root"),
            ],
        );
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::Region).as_deref(), Some("eu-west-1"));
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::AccessKeyId).as_deref(), Some("from-env"));
        assert_eq!(builder.get_config_value(&AmazonS3ConfigKey::Endpoint).as_deref(), Some("https://storage.example"));
    }

    #[test]
    fn an_unknown_s3_option_is_refused_without_echoing_the_url() {
        let Ok(Target::S3(url)) = Target::parse(Some("s3://bucket?secret_access_key=SECRET&colour=blue")) else {
            panic!("an S3 target")
        };
        let err = s3_builder(&url, Vec::new()).expect_err("an unknown option");
        assert_eq!(err.to_string(), "STORAGE_URL has the unknown S3 option \"colour\"");
    }

    #[test]
    fn an_s3_url_builds_an_s3_store_without_reaching_it() {
        let storage = Storage::open_with_env(
            Some("s3://floor-uploads/images?endpoint=http://127.0.0.1:9&region=us-east-1&access_key_id=AK&secret_access_key=SK&allow_http=true"),
            Vec::new(),
        )
        .expect("an S3 store");
        let shown = format!("{storage:?}");
        assert_eq!(shown, "Storage(AmazonS3(floor-uploads) under images)");
    }

    #[tokio::test]
    async fn a_folder_store_is_created_and_round_trips_a_file() {
        let root = tempfile::tempdir().expect("a temporary folder");
        let folder = root.path().join("nested").join("uploads");
        let url = Url::from_file_path(&folder).expect("an absolute path").to_string();
        let storage = Storage::open_with_env(Some(&url), Vec::new()).expect("a folder store");
        assert!(folder.is_dir(), "the folder is created");

        storage.put("a.png", Bytes::from_static(b"bytes")).await.expect("stored");
        assert_eq!(std::fs::read(folder.join("a.png")).expect("on disk"), b"bytes");
        let file = storage.get("a.png").await.expect("read").expect("found");
        assert_eq!(file.size, 5);
        let chunks: Vec<Bytes> = file.body.try_collect().await.expect("streamed");
        assert_eq!(chunks.concat(), b"bytes");
        assert!(storage.get("b.png").await.expect("read").is_none());
        storage.delete("a.png").await.expect("deleted");
        assert!(storage.get("a.png").await.expect("read").is_none());
    }
}
