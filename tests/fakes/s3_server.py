"""A real S3 HTTP API on loopback for the media storage tests: moto in server mode, in a thread
of the test process, on 127.0.0.1 and a free port. Nothing it does leaves the machine."""

import os

import boto3
from moto.server import ThreadedMotoServer


class FakeS3:
    REGION = "us-east-1"
    KEY_ID = "benchforge-test-key"
    SECRET = "benchforge-test-secret"

    def __init__(self, bucket: str = "benchforge-media", prefix: str = "tenant-a"):
        self.bucket = bucket
        self.prefix = prefix  # BENCHFORGE_S3_PREFIX: objects live under it, names in the app do not show it
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)

    def __enter__(self):
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.REGION,
            aws_access_key_id=self.KEY_ID,
            aws_secret_access_key=self.SECRET,
        )
        self.client.create_bucket(Bucket=self.bucket)
        return self

    def __exit__(self, *exc):
        self._server.stop()

    def environ(self) -> dict[str, str]:
        """What an operator sets for this server (docs/deploy.md), credentials included; also keeps
        boto3 off the developer's own AWS files, instance metadata and proxies."""
        return {
            "BENCHFORGE_MEDIA_STORAGE": "s3",
            "BENCHFORGE_S3_BUCKET": self.bucket,
            "BENCHFORGE_S3_ENDPOINT_URL": self.endpoint,
            "BENCHFORGE_S3_REGION": self.REGION,
            "BENCHFORGE_S3_PREFIX": self.prefix,
            "AWS_ACCESS_KEY_ID": self.KEY_ID,
            "AWS_SECRET_ACCESS_KEY": self.SECRET,
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
            "AWS_EC2_METADATA_DISABLED": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def _key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def names(self, under: str = "") -> set[str]:
        """Storage names (without the prefix) of the objects in the bucket, optionally under a folder."""
        start = self._key(under)
        names = set()
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            names |= {obj["Key"].removeprefix(f"{self.prefix}/" if self.prefix else "") for obj in page.get("Contents", ())}
        return names

    def read(self, name: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self._key(name))["Body"].read()

    def head(self, name: str) -> dict:
        return self.client.head_object(Bucket=self.bucket, Key=self._key(name))

    def grants(self, name: str) -> list[tuple[str, str]]:
        """(grantee type or group URI, permission) of the object's ACL."""
        acl = self.client.get_object_acl(Bucket=self.bucket, Key=self._key(name))
        return [(g["Grantee"].get("URI") or g["Grantee"]["Type"], g["Permission"]) for g in acl["Grants"]]

    def delete(self, name: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(name))

    def empty(self) -> None:
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            keys = [{"Key": obj["Key"]} for obj in page.get("Contents", ())]
            if keys:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})
