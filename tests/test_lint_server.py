"""`ptgen lint --server`: a real Language Server subprocess, spoken to over stdio in JSON-RPC."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

pytest.importorskip("pygls")

SRC = str(Path(__file__).resolve().parent.parent / "src")
CODE = 'import torch\n\nopt.zero_grad(set_to_none=False)\ntorch.save(model, "m.pt")\n'
TIMEOUT = 20


class Client:
    """The part of an editor that speaks LSP: framed JSON-RPC over the server's pipes."""

    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": SRC}
        command = [sys.executable, "-m", "ptgen", "lint", "--server"]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd, env=env
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            headers = {}
            while (line := stream.readline().decode()) not in ("\r\n", ""):
                name, _, value = line.partition(":")
                headers[name.lower()] = value.strip()
            if not headers:
                return
            self.messages.put(json.loads(stream.read(int(headers["content-length"]))))

    def send(self, method: str, params: dict[str, Any], request: bool = False) -> int | None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            message["id"] = self.next_id
        body = json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()
        return message.get("id")

    def wait_for(self, method: str | None = None, id: int | None = None) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=TIMEOUT)
            if (method and message.get("method") == method) or (id and message.get("id") == id):
                return message

    def request(self, method: str, params: dict[str, Any]) -> Any:
        reply = self.wait_for(id=self.send(method, params, request=True))
        assert "error" not in reply, reply
        return reply["result"]

    def close(self) -> int:
        self.request("shutdown", {})
        self.send("exit", {})
        return self.process.wait(timeout=TIMEOUT)


def test_diagnostics_and_code_actions_over_stdio(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    uri = path.as_uri()
    client = Client(tmp_path)
    try:
        init = client.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        assert init["serverInfo"]["name"] == "ptgen-lint"
        client.send("initialized", {})
        document = {"uri": uri, "languageId": "python", "version": 1, "text": CODE}
        client.send("textDocument/didOpen", {"textDocument": document})
        published = client.wait_for("textDocument/publishDiagnostics")["params"]
        diagnostics = published["diagnostics"]
        assert published["uri"] == uri
        assert [(d["code"], d["range"]["start"]) for d in diagnostics] == [
            ("PGN504", {"line": 2, "character": 0}),
            ("PGN401", {"line": 3, "character": 0}),
        ]
        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": diagnostics[0]["range"],
                "context": {"diagnostics": diagnostics[:1]},
            },
        )
        quick, fix_all = actions  # PGN401's fix is unsafe: never offered
        assert quick["kind"] == "quickfix" and quick["title"] == "Remove `set_to_none=False`"
        (edit,) = quick["edit"]["changes"][uri]
        assert edit["newText"] == "opt.zero_grad()" and edit["range"]["start"]["line"] == 2
        assert fix_all["kind"] == "source.fixAll.ptgen"
        assert fix_all["edit"]["changes"][uri][0]["newText"] == CODE.replace(
            "set_to_none=False", ""
        )

        change = {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": "x = 1\n"}],
        }
        client.send("textDocument/didChange", change)
        assert client.wait_for("textDocument/publishDiagnostics")["params"]["diagnostics"] == []
    finally:
        code = client.close()
    assert code == 0


def test_help_does_not_import_pygls_and_a_missing_pygls_is_one_line() -> None:
    env = {**os.environ, "PYTHONPATH": SRC}
    check = (
        "import sys\nfrom ptgen.cli import main\nsys.argv = ['ptgen', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'pygls' not in sys.modules and 'lsprotocol' not in sys.modules, 'imported'\n"
    )
    result = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    blocked = (
        "import sys\nsys.modules['pygls'] = None\nfrom ptgen.cli import main\n"
        "sys.argv = ['ptgen', 'lint', '--server']\nmain()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", blocked], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert (
        result.stderr.strip() == "error: ptgen lint --server needs pygls: pip install 'ptgen[lsp]'"
    )
