"""Where media lives (images, thumbnails, uploads staged for jobs): Django's STORAGES from the
environment, checked when the settings load so a bad configuration stops the process with a
message instead of failing at the first upload.

BENCHFORGE_MEDIA_STORAGE=local (default): files under MEDIA_ROOT (the embedded runtime, or NFS).
BENCHFORGE_MEDIA_STORAGE=s3: a private bucket on any S3-compatible server (docs/deploy.md).
Credentials never appear here: boto3 takes them from its standard sources (AWS_ACCESS_KEY_ID /
AWS_SECRET_ACCESS_KEY in the environment, a profile, an instance role)."""

import importlib.util
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

STATICFILES = {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}
LOCAL = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
S3_BACKEND = "benchforge.storage_s3.PrivateS3Storage"
ADDRESSING_STYLES = ("auto", "path", "virtual")


def media_storages(environ, *, spool_bytes: int) -> dict:
    """STORAGES for the environment. `spool_bytes`: an S3 object read by the app (a zip being
    imported, an image being served) is held in memory up to this size, in a temporary file past it."""
    kind = (environ.get("BENCHFORGE_MEDIA_STORAGE") or "local").strip().lower()
    if kind == "local":
        return {"default": LOCAL, "staticfiles": STATICFILES}
    if kind != "s3":
        raise ImproperlyConfigured(
            f"BENCHFORGE_MEDIA_STORAGE={kind!r} is not a media storage: use 'local' (files under MEDIA_ROOT) "
            "or 's3' (a bucket on an S3-compatible server)."
        )

    def get(name: str) -> str:
        return (environ.get(name) or "").strip()

    problems = []
    bucket = get("BENCHFORGE_S3_BUCKET")
    if not bucket:
        problems.append("BENCHFORGE_S3_BUCKET is not set (the name of the private bucket that holds the media)")
    endpoint = get("BENCHFORGE_S3_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            problems.append(
                f"BENCHFORGE_S3_ENDPOINT_URL={endpoint!r} is not an http(s) URL of an S3-compatible server "
                "(e.g. https://minio.internal:9000); leave it unset for AWS S3"
            )
    style = get("BENCHFORGE_S3_ADDRESSING_STYLE").lower() or ("path" if endpoint else "auto")
    if style not in ADDRESSING_STYLES:
        problems.append(f"BENCHFORGE_S3_ADDRESSING_STYLE={style!r} must be one of {', '.join(ADDRESSING_STYLES)}")
    prefix = get("BENCHFORGE_S3_PREFIX").strip("/")
    if ".." in prefix.split("/"):
        problems.append(f"BENCHFORGE_S3_PREFIX={prefix!r} must not contain '..'")
    # Half a key pair would silently fall through to other credential sources (or none).
    if bool(get("AWS_ACCESS_KEY_ID")) != bool(get("AWS_SECRET_ACCESS_KEY")):
        problems.append(
            "only one of AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY is set: set both, or neither (a profile or role)"
        )
    if importlib.util.find_spec("storages") is None or importlib.util.find_spec("boto3") is None:
        problems.append("django-storages and boto3 are not installed (pip install 'django-storages[s3]')")
    if problems:
        raise ImproperlyConfigured(
            "Media storage is S3 (BENCHFORGE_MEDIA_STORAGE=s3), but: " + "; ".join(problems) + ". See docs/deploy.md."
        )
    options = {
        "bucket_name": bucket,
        "endpoint_url": endpoint or None,
        "region_name": get("BENCHFORGE_S3_REGION") or None,
        "location": prefix,
        "addressing_style": None if style == "auto" else style,
        # Objects are private; the app reads them and serves them to members only (curation's /media/).
        # BENCHFORGE_S3_ACL= (empty) sends no ACL, for buckets whose ACLs are disabled (owner enforced).
        "default_acl": environ.get("BENCHFORGE_S3_ACL", "private").strip() or None,
        # Names are content hashes or random: a write to an existing name carries the same bytes,
        # so overwrite rather than invent a new name (ingest checks existence first anyway).
        "file_overwrite": True,
        "max_memory_size": spool_bytes,
    }
    return {"default": {"BACKEND": S3_BACKEND, "OPTIONS": options}, "staticfiles": STATICFILES}
