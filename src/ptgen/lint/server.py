"""`ptgen lint --server`: a Language Server over stdio, so editors show findings as you type.

Diagnostics are published when a Python file is opened, changed or saved; code actions
offer each finding's safe fix (a quick fix) and all safe fixes of the file at once
(`source.fixAll.ptgen`). Settings come from the file's nearest pyproject.toml, as on the
command line. Columns are counted in characters (code points); LSP's default is UTF-16
units, which differ only after a character outside the Basic Multilingual Plane.

pygls is an optional dependency (the `lsp` extra); this module is imported only by
`ptgen lint --server`.
"""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from ptgen import __version__
from ptgen.lint.config import LintConfig, load_config
from ptgen.lint.engine import lint_source
from ptgen.lint.model import Edit, Finding, Severity

SOURCE = "ptgen"
FIX_ALL = types.CodeActionKind.SourceFixAll + ".ptgen"
LSP_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}

server = LanguageServer("ptgen-lint", __version__, types.TextDocumentSyncKind.Full)


def serve() -> None:
    """Answer an editor on stdin/stdout until it says `exit`."""
    server.start_io()


def _path(uri: str) -> Path:
    return Path(to_fs_path(uri) or uri)


def _config(path: Path) -> LintConfig:
    return load_config(path.parent if path.parent.is_dir() else Path.cwd()).for_path(path)


def findings_for(uri: str, text: str) -> list[Finding]:
    path = _path(uri)
    if path.suffix not in (".py", ".pyi", ""):
        return []
    return lint_source(text, path, _config(path))


def _range(line: int, col: int, end_line: int, end_col: int) -> types.Range:
    start = types.Position(line=line - 1, character=col - 1)
    return types.Range(start=start, end=types.Position(line=end_line - 1, character=end_col - 1))


def diagnostic(finding: Finding) -> types.Diagnostic:
    return types.Diagnostic(
        range=_range(finding.line, finding.col, finding.end_line, finding.end_col),
        message=finding.message,
        severity=LSP_SEVERITY[finding.severity],
        code=finding.code,
        source=SOURCE,
    )


def _publish(uri: str) -> None:
    document = server.workspace.get_text_document(uri)
    diagnostics = [diagnostic(f) for f in findings_for(uri, document.source)]
    params = types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics)
    server.text_document_publish_diagnostics(params)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(params: types.DidOpenTextDocumentParams) -> None:
    _publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(params: types.DidChangeTextDocumentParams) -> None:
    _publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(params: types.DidSaveTextDocumentParams) -> None:
    _publish(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(params: types.DidCloseTextDocumentParams) -> None:
    empty = types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
    server.text_document_publish_diagnostics(empty)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
)
def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    text = server.workspace.get_text_document(uri).source
    return code_actions(uri, text, params.range)


def code_actions(uri: str, text: str, where: types.Range) -> list[types.CodeAction]:
    """A quick fix per safe fix that touches `where`, then one action for all safe fixes."""
    from ptgen.lint.fixes import fix_source  # LibCST: only when an editor asks for fixes

    findings = findings_for(uri, text)
    fixed, applied = fix_source(text, findings, unsafe=False)
    actions = [
        _action(uri, f.fix.message, types.CodeActionKind.QuickFix, f.fix.edits, [f])
        for f in applied
        if f.fix is not None and _touches(f, where)
    ]
    if applied:
        lines = text.split("\n")
        whole = Edit(fixed, 1, 1, len(lines), len(lines[-1]) + 1)
        title = f"Apply the {len(applied)} safe ptgen fix{'es' * (len(applied) != 1)}"
        actions.append(_action(uri, title, FIX_ALL, [whole], applied))
    return actions


def _touches(finding: Finding, where: types.Range) -> bool:
    return finding.line - 1 <= where.end.line and finding.end_line - 1 >= where.start.line


def _action(
    uri: str, title: str, kind: str, edits: list[Edit], findings: list[Finding]
) -> types.CodeAction:
    text_edits = [
        types.TextEdit(range=_range(e.row, e.column, e.end_row, e.end_column), new_text=e.content)
        for e in edits
    ]
    return types.CodeAction(
        title=title,
        kind=kind,
        diagnostics=[diagnostic(f) for f in findings],
        edit=types.WorkspaceEdit(changes={uri: text_edits}),
        is_preferred=kind == types.CodeActionKind.QuickFix,
    )
