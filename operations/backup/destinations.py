"""Where backup files are kept: a local folder (`ELION_BACKUP_DIR`) or an S3-compatible bucket (`ELION_BACKUP_S3_*`).

Each destination stores a finished file under a key, atomically: a reader
never finds part of one.

- Folder: copied to a hidden `.partial` name in the same folder, fsynced, then
  renamed (a rename within one directory is atomic).
- S3: `boto3`'s managed transfer, multipart above `MULTIPART_BYTES` in parts of
  `PART_BYTES`. S3 shows an object only once CompleteMultipartUpload succeeds,
  so a dropped connection leaves no object; botocore retries each part
  (`RETRIES`), a transfer that still fails aborts its multipart upload, and
  the next attempt starts afresh. After the upload the object's size is read
  back (HEAD) and must equal the file's: only then does the backup count as
  stored. Multipart uploads left open by a process that died are aborted by
  `abandoned_uploads_abort` before each new backup.

Credentials for S3 come from the standard AWS environment (`AWS_ACCESS_KEY_ID`,
`AWS_SECRET_ACCESS_KEY`, `AWS_DEFAULT_REGION`, profiles): nothing here reads them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from django.conf import settings

MULTIPART_BYTES = 8 * 1024 * 1024
PART_BYTES = 8 * 1024 * 1024
RETRIES = 5
COPY_CHUNK = 1 << 20


class DestinationProblem(Exception):
    """A destination is misconfigured or failed; the message says which and why, for the owner."""


class Destination(Protocol):
    description: str

    def store(self, source: Path, key: str) -> int: ...

    def fetch(self, key: str, target: Path) -> None: ...

    def remove(self, key: str) -> None: ...

    def stored_size(self, key: str) -> int | None: ...

    def chunks(self, key: str) -> Iterator[bytes]: ...


@dataclass
class FolderDestination:
    folder: Path

    @property
    def description(self) -> str:
        return f"folder {self.folder}"

    def _path(self, key: str) -> Path:
        if "/" in key or key.startswith("."):
            raise DestinationProblem(f"{key!r} is no backup file name.")
        return self.folder / key

    def store(self, source: Path, key: str) -> int:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = self._path(key)
        partial = self.folder / f".{key}.partial"
        try:
            with source.open("rb") as reader, partial.open("wb") as writer:
                shutil.copyfileobj(reader, writer, COPY_CHUNK)
                writer.flush()
                os.fsync(writer.fileno())
            partial.chmod(0o600)
            os.replace(partial, target)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise DestinationProblem(f"Could not write {target}: {exc}") from exc
        return target.stat().st_size

    def fetch(self, key: str, target: Path) -> None:
        try:
            shutil.copyfile(self._path(key), target)
        except OSError as exc:
            raise DestinationProblem(f"Could not read {self._path(key)}: {exc}") from exc

    def remove(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def stored_size(self, key: str) -> int | None:
        path = self._path(key)
        return path.stat().st_size if path.is_file() else None

    def chunks(self, key: str) -> Iterator[bytes]:
        try:
            source = self._path(key).open("rb")
        except OSError as exc:
            raise DestinationProblem(f"Could not read {self._path(key)}: {exc}") from exc
        with source:
            while chunk := source.read(COPY_CHUNK):
                yield chunk


@dataclass
class BucketDestination:
    endpoint_url: str
    bucket: str
    prefix: str

    @property
    def description(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def _client(self):  # noqa: ANN202 - a botocore client
        import boto3
        from botocore.config import Config

        config = Config(retries={"max_attempts": RETRIES, "mode": "standard"}, connect_timeout=10, read_timeout=60)
        return boto3.client("s3", endpoint_url=self.endpoint_url or None, config=config)

    def _transfer(self):  # noqa: ANN202 - an s3transfer config
        from boto3.s3.transfer import TransferConfig

        return TransferConfig(multipart_threshold=MULTIPART_BYTES, multipart_chunksize=PART_BYTES, max_concurrency=2)

    def _errors(self) -> tuple[type[BaseException], ...]:
        from boto3.exceptions import S3UploadFailedError
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError, S3UploadFailedError, OSError)

    def store(self, source: Path, key: str) -> int:
        client = self._client()
        name = self.prefix + key
        try:
            client.upload_file(str(source), self.bucket, name, Config=self._transfer())
            stored = client.head_object(Bucket=self.bucket, Key=name)["ContentLength"]
        except self._errors() as exc:
            raise DestinationProblem(f"Could not upload to {self.description}{key}: {exc}") from exc
        expected = source.stat().st_size
        if stored != expected:
            raise DestinationProblem(f"{self.description}{key} holds {stored} bytes, not the {expected} sent.")
        return stored

    def fetch(self, key: str, target: Path) -> None:
        try:
            self._client().download_file(self.bucket, self.prefix + key, str(target), Config=self._transfer())
        except self._errors() as exc:
            target.unlink(missing_ok=True)
            raise DestinationProblem(f"Could not download {self.description}{key}: {exc}") from exc

    def remove(self, key: str) -> None:
        try:
            self._client().delete_object(Bucket=self.bucket, Key=self.prefix + key)
        except self._errors() as exc:
            raise DestinationProblem(f"Could not delete {self.description}{key}: {exc}") from exc

    def stored_size(self, key: str) -> int | None:
        from botocore.exceptions import ClientError

        try:
            return self._client().head_object(Bucket=self.bucket, Key=self.prefix + key)["ContentLength"]
        except ClientError:
            return None
        except self._errors() as exc:
            raise DestinationProblem(f"Could not reach {self.description}: {exc}") from exc

    def chunks(self, key: str) -> Iterator[bytes]:
        try:
            body = self._client().get_object(Bucket=self.bucket, Key=self.prefix + key)["Body"]
        except self._errors() as exc:
            raise DestinationProblem(f"Could not download {self.description}{key}: {exc}") from exc
        with body:
            yield from body.iter_chunks(COPY_CHUNK)

    def abandoned_uploads_abort(self) -> int:
        """Abort the multipart uploads under the prefix that a dead process left open (their parts cost storage)."""
        client = self._client()
        aborted = 0
        try:
            listing = client.list_multipart_uploads(Bucket=self.bucket, Prefix=self.prefix)
            for upload in listing.get("Uploads", []):
                client.abort_multipart_upload(Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"])
                aborted += 1
        except self._errors() as exc:
            raise DestinationProblem(f"Could not reach {self.description}: {exc}") from exc
        return aborted


def configured_destination() -> FolderDestination | BucketDestination | None:
    """The bucket when `ELION_BACKUP_S3_BUCKET` is set, else the folder when `ELION_BACKUP_DIR` is, else None.

    A folder inside the data dir is refused: one disk failure would take the
    instance and its backups together.
    """
    if settings.ELION_BACKUP_S3_BUCKET:
        prefix = settings.ELION_BACKUP_S3_PREFIX
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return BucketDestination(settings.ELION_BACKUP_S3_URL, settings.ELION_BACKUP_S3_BUCKET, prefix)
    if settings.ELION_BACKUP_DIR:
        folder = Path(settings.ELION_BACKUP_DIR).expanduser().resolve()
        data_dir = Path(settings.DATA_DIR).resolve()
        if folder == data_dir or data_dir in folder.parents:
            raise DestinationProblem(
                f"ELION_BACKUP_DIR ({folder}) is inside the data dir ({data_dir}): a backup must live elsewhere, "
                "so that losing one disk does not lose both."
            )
        return FolderDestination(folder)
    return None
