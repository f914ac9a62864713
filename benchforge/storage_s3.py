"""The media storage on an S3-compatible server (BENCHFORGE_MEDIA_STORAGE=s3, see benchforge.storage)."""

from urllib.parse import urljoin

from botocore.exceptions import ClientError
from django.conf import settings
from django.utils.encoding import filepath_to_uri
from storages.backends.s3 import S3Storage


def _missing(error: ClientError) -> bool:
    return error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404


class PrivateS3Storage(S3Storage):
    """A private bucket read only by the app. url() is the app's own /media/ route, as on local
    disk, so every page and API payload links to the view that checks who may see the image,
    never to a bucket or presigned URL that would bypass that check."""

    def url(self, name, parameters=None, expire=None, http_method=None):
        return urljoin(settings.MEDIA_URL, filepath_to_uri(name))

    def get_modified_time(self, name):
        # As on local disk: a missing file is FileNotFoundError (the staging sweep races other sweeps).
        try:
            return super().get_modified_time(name)
        except ClientError as exc:
            if _missing(exc):
                raise FileNotFoundError(f"File does not exist: {name}") from None
            raise
