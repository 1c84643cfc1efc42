"""Where the tables live: a local folder or an object store, addressed by one root URI.

Credentials come from the environment only (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL,
AWS_REGION, AWS_ALLOW_HTTP). They are passed to delta-rs and s3fs in memory and never written to a table,
a log or an artifact; errors are translated into messages that name the URI, never the secret.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import fsspec

from genenv.warehouse.errors import WarehouseError

_S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_REGION")
_DENIED = re.compile(r"SignatureDoesNotMatch|InvalidAccessKeyId|AccessDenied|403 Forbidden|lacked the necessary privil")
_NO_BUCKET = re.compile(r"NoSuchBucket|bucket does not exist", re.IGNORECASE)
_UNREACHABLE = re.compile(r"Connection refused|Could not connect|error sending request|dns error", re.IGNORECASE)


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def local_path(uri: str) -> Path:
    return Path(uri.removeprefix("file://")).resolve()


def join(root_uri: str, *parts: str) -> str:
    """A child URI of the root: '/'-joined on object stores, an absolute path locally."""
    if is_remote(root_uri):
        return "/".join([root_uri.rstrip("/"), *parts])
    return str(local_path(root_uri).joinpath(*parts))


def table_uri(root_uri: str, table: str) -> str:
    return join(root_uri, table)


def _env() -> dict[str, str]:
    return {key: os.environ[key] for key in _S3_ENV if os.environ.get(key)}


def storage_options(root_uri: str) -> dict[str, str] | None:
    """delta-rs / polars storage options for the root (None for a local folder)."""
    if not root_uri.startswith("s3://"):
        return None
    options = _env()
    options.setdefault("AWS_REGION", "us-east-1")
    allow_http = os.environ.get("AWS_ALLOW_HTTP", "")
    if allow_http or options.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        options["AWS_ALLOW_HTTP"] = allow_http or "true"
    return options


def filesystem(uri: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """The fsspec filesystem holding `uri` and the path inside it (s3fs configured from the environment)."""
    if not is_remote(uri):
        return fsspec.filesystem("file"), str(local_path(uri))
    if not uri.startswith("s3://"):
        raise WarehouseError(f"unsupported storage URI {uri!r}: use a local folder or s3://bucket/prefix")
    env = _env()
    fs = fsspec.filesystem(
        "s3",
        key=env.get("AWS_ACCESS_KEY_ID"),
        secret=env.get("AWS_SECRET_ACCESS_KEY"),
        token=env.get("AWS_SESSION_TOKEN"),
        endpoint_url=env.get("AWS_ENDPOINT_URL"),
        client_kwargs={"region_name": env.get("AWS_REGION", "us-east-1")},
        skip_instance_cache=True,
    )
    return fs, uri.removeprefix("s3://")


def _scrub(message: str) -> str:
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    return message.replace(secret, "***") if secret else message


@contextmanager
def translated(uri: str) -> Iterator[None]:
    """Turn storage failures (403s buried in long delta-rs/botocore messages) into one short WarehouseError."""
    try:
        yield
    except WarehouseError:
        raise
    except (OSError, RuntimeError, ValueError) as exc:
        message = str(exc)
        if not is_remote(uri) and not any(p.search(message) for p in (_DENIED, _NO_BUCKET, _UNREACHABLE)):
            raise
        bucket = uri.removeprefix("s3://").split("/")[0]
        if isinstance(exc, PermissionError) or _DENIED.search(message):
            reason = f"S3 refused the credentials for {uri}: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
        elif _NO_BUCKET.search(message):
            reason = f"S3 bucket {bucket!r} does not exist (warehouse {uri})"
        elif _UNREACHABLE.search(message):
            endpoint = os.environ.get("AWS_ENDPOINT_URL", "the default AWS endpoint")
            reason = f"cannot reach S3 at {endpoint} for {uri}: check AWS_ENDPOINT_URL"
        else:
            reason = f"storage error on {uri}: {_scrub(message.splitlines()[0])[:300]}"
        raise WarehouseError(reason) from None
