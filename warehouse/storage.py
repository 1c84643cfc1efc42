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
from urllib.parse import urlsplit

import fsspec
from botocore.exceptions import BotoCoreError
from deltalake.exceptions import DeltaError

from genenv.errors import WarehouseError

_S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_REGION")
_DENIED = re.compile(
    r"SignatureDoesNotMatch|InvalidAccessKeyId|AccessDenied|403 Forbidden|lacked the necessary privil"
    r"|Unable to locate credentials"
)
_NO_BUCKET = re.compile(r"NoSuchBucket|bucket does not exist", re.IGNORECASE)
# Checked before _UNREACHABLE: delta-rs wraps a failed DNS lookup or TLS check in "error sending request" too.
_WRONG_ENDPOINT = re.compile(
    r"Name or service not known|nodename nor servname|No address associated with hostname"
    r"|not a valid URI|URL scheme is not allowed|builder error|certificate verify failed|invalid peer certificate",
    re.IGNORECASE,
)
_UNREACHABLE = re.compile(
    r"Connection refused|Connect call failed|Could not connect|error sending request|timed? ?out"
    r"|Connection reset|connection (was )?closed|Temporary failure in name resolution"
    r"|Error performing (PUT|GET|POST|DELETE|HEAD|LIST)|Read timeout|incomplete message",
    re.IGNORECASE,
)


class StorageUnreachable(WarehouseError):
    """The endpoint did not answer (refused, timed out, dropped the connection): the stage retry policy
    (pipeline/options.is_transient) retries it, since the same call can succeed once the endpoint is back."""

    transient = True


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


REQUEST_LIMITS = {"connect_timeout": "5s", "timeout": "10s", "max_retries": "2", "retry_timeout": "20s"}
"""delta-rs's own limits per call, so an endpoint that accepts connections and never answers fails within about 30 s
(its defaults waited minutes: 183 s for a query, 589 s for a stage); the stage retry policy then retries the stage."""
S3FS_LIMITS = {"connect_timeout": 5, "read_timeout": 10, "retries": {"max_attempts": 2}}
"""The same for s3fs (staging files, leases): botocore's timeouts and retries."""


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
        config_kwargs=S3FS_LIMITS,
        skip_instance_cache=True,
    )
    return fs, uri.removeprefix("s3://")


def _scrub(message: str) -> str:
    secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    return message.replace(secret, "***") if secret else message


def _endpoint() -> str:
    """AWS_ENDPOINT_URL for messages, without a user:password@ part."""
    url = os.environ.get("AWS_ENDPOINT_URL")
    if not url:
        return "the default AWS endpoint"
    parts = urlsplit(url)
    return _scrub(parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl())


def _chain(exc: BaseException) -> str:
    """The messages of the exception and its causes: s3fs names the endpoint on top and says why underneath."""
    messages: list[str] = []
    link: BaseException | None = exc
    while link is not None and len(messages) < 8:
        messages.append(str(link))
        link = link.__cause__ or link.__context__
    return "\n".join(messages)


@contextmanager
def translated(uri: str) -> Iterator[None]:
    """Turn storage failures (403s buried in long delta-rs/botocore messages) into one short WarehouseError.

    Only an endpoint that did not answer is retried (StorageUnreachable); refused credentials, a missing bucket or a
    wrong endpoint URL fail at once, naming the endpoint, since a retry cannot fix them.
    """
    try:
        yield
    except WarehouseError:
        raise
    except (OSError, RuntimeError, ValueError, BotoCoreError, DeltaError) as exc:
        if not is_remote(uri):
            raise  # a local folder's own OSError says what is wrong; these messages are about S3
        message = _chain(exc)
        bucket = uri.removeprefix("s3://").split("/")[0]
        endpoint = _endpoint()
        error = WarehouseError
        if isinstance(exc, PermissionError) or _DENIED.search(message):
            reason = (
                f"S3 refused the credentials for {uri} at {endpoint}: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
            )
        elif _NO_BUCKET.search(message):
            reason = f"S3 bucket {bucket!r} does not exist at {endpoint} (warehouse {uri})"
        elif _WRONG_ENDPOINT.search(message):
            reason = (
                f"S3 endpoint {endpoint} is wrong (unknown host, bad URL or TLS certificate) for {uri}: "
                "check AWS_ENDPOINT_URL"
            )
        elif _UNREACHABLE.search(message):
            reason = f"cannot reach S3 at {endpoint} for {uri}: check AWS_ENDPOINT_URL"
            error = StorageUnreachable
        else:
            reason = f"storage error on {uri}: {_scrub((str(exc) or type(exc).__name__).splitlines()[0])[:300]}"
        raise error(reason) from None
