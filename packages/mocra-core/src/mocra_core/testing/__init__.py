"""Helpers for testing crawls: a local HTTP server with hit counts."""

from __future__ import annotations

from ._server import Handler, LocalServer, ServerRequest, ServerResponse

__all__ = ("Handler", "LocalServer", "ServerRequest", "ServerResponse")
