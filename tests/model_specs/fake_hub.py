"""A local HTTP server standing in for the Hugging Face Hub (HF_ENDPOINT), serving files a test writes.

It answers what huggingface_hub asks of the real Hub: HEAD and GET of /{org}/{name}/resolve/{rev}/{file}
with X-Repo-Commit, ETag and Content-Length, HTTP range reads (206 + Content-Range), and the Hub's
failures: 401 X-Error-Code GatedRepo without the repo's token, 404 RepoNotFound / EntryNotFound /
RevisionNotFound. Every request is logged so that tests can check that no tensor data was read.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

_RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<file>.+)$")
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


def safetensors_file(tensors: dict[str, tuple[str, list[int], int]]) -> bytes:
    """A real .safetensors file: 8-byte header length, JSON header, then zero-filled data.
    `tensors`: name -> (dtype code, shape, data bytes), the bytes given by the test's own count."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * offset


@dataclass
class FakeRepo:
    files: dict[str, bytes]
    token: str | None = None  # set: the repo is gated, readable only with this bearer token
    commit: str = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Range header)
    url: str = ""
    _server: ThreadingHTTPServer | None = None

    def add_repo(self, repo_id: str, files: dict[str, bytes], *, token: str | None = None) -> FakeRepo:
        repo = FakeRepo(files, token)
        self.repos[repo_id] = repo
        return repo

    def start(self) -> None:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
                hub._answer(self, send_body=False)

            def do_GET(self) -> None:  # noqa: N802
                hub._answer(self, send_body=True)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def shard_reads(self) -> list[tuple[str, str, str]]:
        return [r for r in self.requests if r[0] == "GET" and r[1].endswith(".safetensors")]

    def _answer(self, handler: BaseHTTPRequestHandler, *, send_body: bool) -> None:
        self.requests.append((handler.command, handler.path, handler.headers.get("Range", "")))
        match = _RESOLVE.match(handler.path.split("?")[0])
        repo = self.repos.get(match["repo"]) if match else None
        if match is None or repo is None:
            return self._fail(handler, 404, "RepoNotFound", "Repository not found")
        if repo.token is not None and handler.headers.get("Authorization") != f"Bearer {repo.token}":
            return self._fail(handler, 401, "GatedRepo", "Access to this model is restricted")
        if match["rev"] not in ("main", repo.commit):
            return self._fail(handler, 404, "RevisionNotFound", "Invalid rev id", repo.commit)
        content = repo.files.get(match["file"])
        if content is None:
            return self._fail(handler, 404, "EntryNotFound", "Entry not found", repo.commit)
        status, body, extra = 200, content, {}
        byte_range = _RANGE.match(handler.headers.get("Range", ""))
        if byte_range and handler.command == "GET":
            first = int(byte_range[1])
            last = min(int(byte_range[2] or len(content) - 1), len(content) - 1)
            status, body = 206, content[first:last + 1]
            extra = {"Content-Range": f"bytes {first}-{last}/{len(content)}"}
        handler.send_response(status)
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{hashlib.sha256(content).hexdigest()}"',
                   "Content-Length": str(len(body)), "Accept-Ranges": "bytes", **extra}
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        if send_body:
            handler.wfile.write(body)

    @staticmethod
    def _fail(handler: BaseHTTPRequestHandler, status: int, code: str, message: str,
              commit: str | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        handler.send_response(status)
        handler.send_header("X-Error-Code", code)
        handler.send_header("X-Error-Message", message)
        if commit:
            handler.send_header("X-Repo-Commit", commit)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A running FakeHub that hkv reaches through HF_ENDPOINT, with empty HF and hkv caches and no
    token; the suite's offline default (tests/conftest.py) is lifted for it."""
    import huggingface_hub.constants as hf_constants

    hub = FakeHub()
    hub.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    # huggingface_hub reads these once, at import: the suite may have imported it while offline.
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_TELEMETRY", True)  # else it asks ENDPOINT (public)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HKV_HUB_CACHE", str(tmp_path / "hkv-cache"))
    yield hub
    hub.stop()
