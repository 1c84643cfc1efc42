"""Local services for development and tests (S3 server)."""
