"""Where the tables live: a local folder or an object store, addressed by one root URI."""

from __future__ import annotations

import os
from pathlib import Path

_S3_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL", "AWS_REGION")


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def table_uri(root_uri: str, table: str) -> str:
    if is_remote(root_uri):
        return f"{root_uri}/{table}"
    return str(Path(root_uri.removeprefix("file://")).resolve() / table)


def storage_options(root_uri: str) -> dict[str, str] | None:
    """Credentials come from the environment only; they are never written anywhere."""
    if not root_uri.startswith("s3://"):
        return None
    options = {key: os.environ[key] for key in _S3_ENV if os.environ.get(key)}
    if options.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    return options
