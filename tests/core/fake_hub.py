"""A local stand-in for the Hugging Face Hub: the HTTP endpoints `huggingface_hub.HfApi`
calls to push a dataset (create_repo, repo_info, update_repo_settings, upload_folder's
card check, preupload and commit, create_tag), on a loopback port.

    with FakeHub() as hub:
        hub.add_repo("org/name", private=False, gated=False)    # an existing repo
        hub.namespaces = {"org"}                                # creating a repo elsewhere: 404
        hub.refusals = [("POST", "/commit/", 400, "why")]      # that request answered 400 {"error": "why"}
        hub.use(monkeypatch)                                    # HfApi() now talks to it
        ...
        hub.repos["org/name"].files, hub.calls

Every request is recorded in `calls` as (method, path). Files are taken inline (the
preupload answer says every file is "regular"), so no LFS or Xet storage is involved.
A repo the fake does not hold answers 404 with `X-Error-Code: RepoNotFound`, as the
Hub does; an unknown route answers 404 with `X-Error-Code: EntryNotFound` and is recorded.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


@dataclass
class FakeRepo:
    repo_id: str
    private: bool
    gated: str | bool = False
    hidden: bool = False   # exists, but the token cannot see it: repo_info answers 404, create_repo 409
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)

    def info(self) -> dict:
        return {"id": self.repo_id, "_id": hashlib.sha1(self.repo_id.encode()).hexdigest()[:24],
                "author": self.repo_id.split("/")[0], "private": self.private, "gated": self.gated,
                "disabled": False, "sha": self.commits[-1] if self.commits else "0" * 40,
                "siblings": [{"rfilename": name} for name in sorted(self.files)], "tags": [], "downloads": 0, "likes": 0}


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.calls: list[tuple[str, str]] = []
        self.unknown: list[tuple[str, str]] = []
        self.namespaces: set[str] | None = None   # when set: create_repo elsewhere answers 404
        # (method, path fragment, status, error): a matching request is answered with that status and error
        self.refusals: list[tuple[str, str, int, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread: threading.Thread | None = None

    def add_repo(self, repo_id: str, *, private: bool, gated: str | bool = False, hidden: bool = False) -> FakeRepo:
        self.repos[repo_id] = FakeRepo(repo_id, private, gated, hidden)
        return self.repos[repo_id]

    def use(self, monkeypatch) -> None:
        """Point huggingface_hub at this server (online, with a token) for the test."""
        from huggingface_hub import constants

        monkeypatch.setattr(constants, "ENDPOINT", self.endpoint)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setenv("HF_TOKEN", "hf_fakehubtoken0123456789")

    def uploads(self) -> int:
        return sum(1 for method, path in self.calls if method == "POST" and "/commit/" in path)

    def __enter__(self) -> FakeHub:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- the routes -------------------------------------------------------------------

    def _route(self, method: str, path: str, body: bytes) -> tuple[int, object, dict]:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        for refused_method, fragment, status, error in self.refusals:
            if method == refused_method and fragment in path:
                return status, {"error": error}, {}
        if method == "POST" and parts == ["api", "repos", "create"]:
            payload = json.loads(body)
            repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
            if self.namespaces is not None and payload.get("organization") not in self.namespaces:
                return 404, {"error": f"namespace {payload.get('organization')} not found"}, {}
            if repo_id in self.repos:
                return 409, {"error": "You already created this dataset repo", "url": f"{self.endpoint}/datasets/{repo_id}"}, {}
            private = payload.get("visibility", "private" if payload.get("private") else "public") == "private"
            self.add_repo(repo_id, private=private)
            return 200, {"url": f"{self.endpoint}/datasets/{repo_id}", "name": repo_id}, {}
        if method == "POST" and parts == ["api", "validate-yaml"]:   # the card's metadata: accepted
            return 200, {"errors": [], "warnings": []}, {}
        if len(parts) >= 4 and parts[:2] == ["api", "datasets"]:
            repo_id, rest = "/".join(parts[2:4]), parts[4:]
            repo = self.repos.get(repo_id)
            if repo is None or repo.hidden:
                return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
            if method == "GET" and (not rest or rest[0] == "revision"):
                return 200, repo.info(), {}
            if method == "PUT" and rest == ["settings"]:
                payload = json.loads(body)
                if "gated" in payload:
                    repo.gated = payload["gated"]
                if "private" in payload:
                    repo.private = bool(payload["private"])
                if "visibility" in payload:
                    repo.private = payload["visibility"] == "private"
                return 200, {}, {}
            if method == "POST" and rest[:1] == ["preupload"]:
                files = json.loads(body).get("files", [])
                return 200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False}
                                       for f in files]}, {}
            if method == "POST" and rest[:1] == ["commit"]:
                for line in body.decode().splitlines():
                    item = json.loads(line)
                    if item.get("key") == "file":
                        value = item["value"]
                        repo.files[value["path"]] = base64.b64decode(value["content"])
                oid = hashlib.sha1(f"{repo_id}{len(repo.commits)}".encode()).hexdigest()
                repo.commits.append(oid)
                return 200, {"commitUrl": f"{self.endpoint}/datasets/{repo_id}/commit/{oid}", "commitOid": oid,
                             "pullRequestUrl": None}, {}
            if method == "POST" and rest[:1] == ["tag"]:
                tag = json.loads(body)["tag"]
                if tag in repo.tags:
                    return 409, {"error": f"Tag {tag} already exists"}, {}
                repo.tags[tag] = rest[1] if len(rest) > 1 else "main"
                return 200, {}, {}
        self.unknown.append((method, path))
        return 404, {"error": f"the fake Hub has no route {method} {path}"}, {"X-Error-Code": "EntryNotFound"}

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = urlsplit(self.path).path
                with hub._lock:
                    hub.calls.append((self.command, path))
                    status, payload, headers = hub._route(self.command, path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - http.server API

        return Handler
