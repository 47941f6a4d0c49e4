"""The protocol: LSP 3.17 over stdio, on pygls. Each request is handed to the
function of answers.py that answers it, with the position turned from the
client's units (UTF-16 unless it asked for another) into the compiler's 1-based
line and character column, and the answer turned back.

Diagnostics are published on open and save at once, and on a change after the
typing pauses for DEBOUNCE seconds; a request checks the newest text first if
that has not happened yet, so an answer is never about text the editor no
longer shows. A unit that is open in the editor is read as the editor has it,
saved or not; when that text changes, the documents that use the unit are
checked again too.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from .. import __version__
from ..compile import units
from ..compile.source import load_source
from ..diagnostics import SourceFile
from . import answers
from .document import Document, Span, check
from .lines import Lines

DEBOUNCE = 0.15

KINDS = {"variable": types.CompletionItemKind.Variable, "constant": types.CompletionItemKind.Constant,
         "type": types.CompletionItemKind.Class, "function": types.CompletionItemKind.Function,
         "unit": types.CompletionItemKind.Module, "field": types.CompletionItemKind.Field,
         "keyword": types.CompletionItemKind.Keyword, "shape": types.CompletionItemKind.TypeParameter}
SYMBOL_KINDS = {"constant": types.SymbolKind.Constant, "type": types.SymbolKind.Class,
                "variable": types.SymbolKind.Variable, "function": types.SymbolKind.Function,
                "unit": types.SymbolKind.Module, "program": types.SymbolKind.File, "field": types.SymbolKind.Field,
                "keyword": types.SymbolKind.Key, "shape": types.SymbolKind.TypeParameter}


class EditorFiles(units.Files):
    """Units' files as the editor has them: an open file's text, saved or not (a file
    never saved is found too), and the disk's for the rest."""

    def __init__(self, server: LanguageServer):
        self.server = server

    def opened(self, path: Path) -> TextDocument | None:
        wanted = path.resolve()
        return next((d for d in self.server.workspace.text_documents.values() if Path(d.path).resolve() == wanted),
                    None)

    def exists(self, path: Path) -> bool:
        return self.opened(path) is not None or path.is_file()

    def read(self, path: str) -> SourceFile:
        opened = self.opened(Path(path))
        return SourceFile(path, opened.source) if opened is not None else load_source(path)


class MicaServer(LanguageServer):
    """The server and the documents it has checked, by URI, with the version each was checked at."""

    def __init__(self, include: tuple[str, ...] = ()):
        # The whole text on each change: pygls applies an incremental edit by lines it
        # splits with str.splitlines, which also breaks at a form feed or U+2028, where
        # the protocol's lines (lines.py) do not. A 1,000-line file is 30 KB a change.
        super().__init__("micatool", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.include = include
        self.checked: dict[str, tuple[int | None, Document]] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.files = EditorFiles(self)

    def document(self, uri: str) -> Document:
        """The document's newest text, checked."""
        text_document = self.workspace.get_text_document(uri)
        version = text_document.version
        known = self.checked.get(uri)
        if known is None or known[0] != version or known[1].text != text_document.source:
            path = to_fs_path(uri) or uri
            known = (version, check(path, text_document.source, self.include, self.files))
            self.checked[uri] = known
        return known[1]

    def unit_changed(self, uri: str) -> None:
        """The editor's text of the file at uri changed, or is the file's again: the documents
        that use it as a unit, or looked for it there, are checked again, and their diagnostics published once the
        typing pauses."""
        path = Path(to_fs_path(uri) or uri).resolve()
        for other in [other for other, (_, document) in self.checked.items() if path in document.unit_paths]:
            del self.checked[other]
            self.later(other)

    def publish(self, uri: str) -> None:
        self.pending.pop(uri, None)
        document = self.document(uri)
        own = [d for d in document.diagnostics if d.source is document.source]
        others = {}  # a unit's error is shown on the `uses` that brought it in, naming the unit's file
        for d in document.diagnostics:
            if d.source is not document.source:
                others.setdefault(d.source.name, d)
        shown = [self.diagnostic(document, d) for d in own]
        for name, d in others.items():
            shown.append(types.Diagnostic(range=self.range(document, uses_span(document, d)),
                                          message=f"{name}:{d.pos.line}:{d.pos.col}: {d.message_with_hints()}",
                                          severity=types.DiagnosticSeverity.Error, code=d.code, source="micatool"))
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=shown,
                                                                              version=self.checked[uri][0]))

    def later(self, uri: str) -> None:
        """Publish once the typing pauses."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().call_later(DEBOUNCE, self.publish, uri)

    # -- positions

    def lines(self, document: Document, file: int = 0) -> Lines:
        return Lines(document.text if file == 0 else document.unit_files[file - 1].source.text)

    def position(self, document: Document, position: types.Position) -> tuple[int, int]:
        """The client's position as the compiler's 1-based line and column."""
        lines = self.lines(document)
        at = self.workspace.position_codec.position_from_client_units(lines.editor, position)
        return lines.to_mica(at.line, at.character)

    def point(self, lines: Lines, line: int, col: int) -> types.Position:
        """The compiler's line and column as the client's position."""
        at, character = lines.to_editor(line, col)
        return self.workspace.position_codec.position_to_client_units(
            lines.editor, types.Position(line=at, character=character))

    def range(self, document: Document, span: Span) -> types.Range:
        lines = self.lines(document, span.file)
        return types.Range(start=self.point(lines, span.line, span.col), end=self.point(lines, span.line, span.end))

    def diagnostic(self, document: Document, d) -> types.Diagnostic:
        """A diagnostic of the document, over the token it points at (or one character)."""
        token = answers.token_at(document.tokens, d.pos.line, d.pos.col)
        length = len(token.text) if token is not None and token.col == d.pos.col else 1
        return types.Diagnostic(range=self.range(document, Span(0, d.pos.line, d.pos.col, d.pos.col + length)),
                                message=d.message_with_hints(), code=d.code, severity=types.DiagnosticSeverity.Error,
                                source="micatool")

    def location(self, document: Document, span: Span) -> types.Location:
        return types.Location(uri=from_fs_path(document.file_path(span.file)) or document.path,
                              range=self.range(document, span))


def uses_span(document: Document, d) -> Span:
    """Where the document names the unit whose file holds the diagnostic: its `uses` entry
    (or, for a unit it uses through another, its first line)."""
    tree = document.tree
    for use in getattr(tree, "uses", []) + getattr(tree, "interface_uses", []) \
            + getattr(tree, "implementation_uses", []):
        if Path(d.source.name).name in units.file_names(use.name):
            return Span(0, use.line, use.col, use.col + len(use.name))
    return Span(0, 1, 1, 1)


SERVER = MicaServer()


@SERVER.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(server: MicaServer, params: types.DidOpenTextDocumentParams) -> None:
    server.publish(params.text_document.uri)
    server.unit_changed(params.text_document.uri)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(server: MicaServer, params: types.DidChangeTextDocumentParams) -> None:
    server.later(params.text_document.uri)
    server.unit_changed(params.text_document.uri)


@SERVER.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(server: MicaServer, params: types.DidSaveTextDocumentParams) -> None:
    server.publish(params.text_document.uri)


@SERVER.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(server: MicaServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    waiting = server.pending.pop(uri, None)
    if waiting is not None:
        waiting.cancel()
    server.checked.pop(uri, None)
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    server.unit_changed(uri)


@SERVER.feature(types.TEXT_DOCUMENT_HOVER)
def hover(server: MicaServer, params: types.HoverParams) -> types.Hover | None:
    document = server.document(params.text_document.uri)
    found = answers.hover(document, *server.position(document, params.position))
    if found is None:
        return None
    text, span = found
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=server.range(document, span))


@SERVER.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(server: MicaServer, params: types.DefinitionParams) -> types.Location | None:
    document = server.document(params.text_document.uri)
    span = answers.definition(document, *server.position(document, params.position))
    return server.location(document, span) if span is not None else None


@SERVER.feature(types.TEXT_DOCUMENT_REFERENCES)
def references(server: MicaServer, params: types.ReferenceParams) -> list[types.Location]:
    document = server.document(params.text_document.uri)
    spans = answers.references(document, *server.position(document, params.position),
                               params.context.include_declaration)
    return [server.location(document, span) for span in spans]


@SERVER.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
def prepare_rename(server: MicaServer, params: types.PrepareRenameParams) -> types.Range | None:
    document = server.document(params.text_document.uri)
    span = answers.renamable(document, *server.position(document, params.position))
    return server.range(document, span) if span is not None else None


@SERVER.feature(types.TEXT_DOCUMENT_RENAME, types.RenameOptions(prepare_provider=True))
def rename(server: MicaServer, params: types.RenameParams) -> types.WorkspaceEdit:
    document = server.document(params.text_document.uri)
    try:
        edits = answers.rename(document, *server.position(document, params.position), params.new_name)
    except answers.RenameRefused as why:
        raise JsonRpcException(str(why), code=types.LSPErrorCodes.RequestFailed) from None
    changes: dict[str, list[types.TextEdit]] = {}
    for span, text in edits:
        location = server.location(document, span)
        changes.setdefault(location.uri, []).append(types.TextEdit(range=location.range, new_text=text))
    return types.WorkspaceEdit(changes=changes)


@SERVER.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=["."]))
def completion(server: MicaServer, params: types.CompletionParams) -> types.CompletionList:
    document = server.document(params.text_document.uri)
    found = answers.completion(document, *server.position(document, params.position))
    return types.CompletionList(is_incomplete=False, items=[
        types.CompletionItem(label=c.label, kind=KINDS[c.kind], detail=c.detail) for c in found])


@SERVER.feature(types.TEXT_DOCUMENT_SIGNATURE_HELP, types.SignatureHelpOptions(trigger_characters=["(", ","]))
def signature_help(server: MicaServer, params: types.SignatureHelpParams) -> types.SignatureHelp | None:
    document = server.document(params.text_document.uri)
    found = answers.signature_help(document, *server.position(document, params.position))
    if found is None:
        return None
    signature = types.SignatureInformation(
        label=found.label, documentation=found.doc or None,
        parameters=[types.ParameterInformation(label=p) for p in found.params])
    return types.SignatureHelp(signatures=[signature], active_signature=0,
                               active_parameter=min(found.active, max(len(found.params) - 1, 0)))


@SERVER.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbols(server: MicaServer, params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
    document = server.document(params.text_document.uri)
    return [symbol(server, document, o) for o in answers.outline(document)]


def symbol(server: MicaServer, document: Document, o: answers.Outline) -> types.DocumentSymbol:
    lines = server.lines(document)
    whole = types.Range(start=server.point(lines, o.line, 1),
                        end=server.point(lines, o.end_line, len(lines.mica[o.end_line - 1]) + 1
                                         if o.end_line <= len(lines.mica) else 1))
    return types.DocumentSymbol(name=o.name, kind=SYMBOL_KINDS[o.kind], detail=o.detail, range=whole,
                                selection_range=whole, children=[symbol(server, document, c) for c in o.children])


LEGEND = types.SemanticTokensLegend(token_types=answers.TOKEN_TYPES, token_modifiers=[answers.DEFAULT_LIBRARY])


@SERVER.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, LEGEND)
def semantic_tokens(server: MicaServer, params: types.SemanticTokensParams) -> types.SemanticTokens:
    document = server.document(params.text_document.uri)
    lines = server.lines(document)
    data, last_line, last_start = [], 0, 0
    for line, col, length, kind, predeclared in answers.semantic_tokens(document):
        start = server.point(lines, line, col)
        end = server.point(lines, line, col + length)
        delta_start = start.character - last_start if start.line == last_line else start.character
        data += [start.line - last_line, delta_start, end.character - start.character,
                 answers.TOKEN_TYPES.index(kind), int(predeclared)]  # bit 0: defaultLibrary
        last_line, last_start = start.line, start.character
    return types.SemanticTokens(data=data)


@SERVER.feature(types.TEXT_DOCUMENT_FORMATTING)
def formatting(server: MicaServer, params: types.DocumentFormattingParams) -> list[types.TextEdit] | None:
    document = server.document(params.text_document.uri)
    text = answers.formatted(document)
    if text is None or text == document.text:
        return None if text is None else []
    lines = server.lines(document)
    end = server.point(lines, len(lines.mica), len(lines.mica[-1]) + 1)
    return [types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=text)]


@SERVER.feature(types.TEXT_DOCUMENT_INLAY_HINT)
def inlay_hints(server: MicaServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    document = server.document(params.text_document.uri)
    lines = server.lines(document)
    first, last = lines.mica_line(params.range.start.line), lines.mica_line(params.range.end.line)
    return [types.InlayHint(position=server.point(lines, line, col), label=f"<{text}>",
                            kind=types.InlayHintKind.Type, padding_left=False)
            for line, col, text in answers.inlay_hints(document, first, last)]


@SERVER.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
def code_actions(server: MicaServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    document = server.document(uri)
    lines = server.lines(document)
    first, last = lines.mica_line(params.range.start.line), lines.mica_line(params.range.end.line)
    found = []
    for d in document.diagnostics:
        if d.source is not document.source or not first <= d.pos.line <= last:
            continue
        for fix in answers.quick_fixes(document, d):
            edit = types.TextEdit(range=types.Range(start=server.point(lines, fix.line, fix.col),
                                                    end=server.point(lines, fix.line, fix.end)), new_text=fix.text)
            found.append(types.CodeAction(title=fix.title, kind=types.CodeActionKind.QuickFix,
                                          diagnostics=[server.diagnostic(document, d)],
                                          edit=types.WorkspaceEdit(changes={uri: [edit]}), is_preferred=True))
    return found


class OneLine(logging.Formatter):
    """pygls's log on standard error, each record one line: a message it could not read
    (not JSON, say) is told with its reason, never with a Python traceback."""

    def format(self, record: logging.LogRecord) -> str:
        reason = f": {record.exc_info[1]}" if record.exc_info and record.exc_info[1] is not None else ""
        return f"micatool lsp: {record.getMessage()}{reason}"


def serve(include: tuple[str, ...] = ()) -> None:
    """Answer an editor on standard input and output until it says exit."""
    log = logging.StreamHandler(sys.stderr)
    log.setFormatter(OneLine())
    logging.getLogger("pygls").addHandler(log)
    logging.getLogger("pygls").propagate = False
    SERVER.include = include
    SERVER.start_io()
