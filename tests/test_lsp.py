"""micatool lsp, driven over stdio by pytest-lsp as an editor drives it: the real
server in its own process, each request answered as the protocol says, on the
program of tests/units/split (a program and three units) copied to a folder of
the test's own, and on small files written for one question each.
"""

from __future__ import annotations

import asyncio
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

from micatool.fmt import format_source
from micatool.diagnostics import SourceFile
from test_fuzz import SEED_TOKENS, mutate

pytestmark = pytest.mark.asyncio

SPLIT = Path(__file__).parent / "units" / "split"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "micatool", "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    assert lsp_client.error is None, lsp_client.error  # an answer the protocol does not allow, or a server fault
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "micatool", "lsp"]))
async def uninitialized(lsp_client: LanguageClient):
    """A server not yet asked `initialize`, for a test that reads its answer."""
    yield


async def test_the_editor_sends_the_whole_text_on_each_change(uninitialized):
    """pygls would apply an incremental edit by lines it splits with str.splitlines, which
    also breaks at a form feed or U+2028, where the protocol does not: so the server asks
    for the whole text instead, and a change after either character lands where typed."""
    answer = await uninitialized.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    assert answer.capabilities.text_document_sync.change == types.TextDocumentSyncKind.Full
    uri = "file:///tmp/feed.mica"
    text = "program P; { a\fb \u2028 c }\nbegin\n    WriteLn(1);\nend.\n"
    uninitialized.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="mica", version=1, text=text)))
    uninitialized.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text.replace("(1)", "(y)"))]))
    shown = await published(uninitialized, uri, lambda d: d != [])
    assert [(d.code, span(d)) for d in shown] == [(3001, (2, 12, 2, 13))]
    await uninitialized.shutdown_session()


async def test_a_message_that_is_not_json_is_told_in_one_line_and_the_server_goes_on():
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}'
    sent = b"Content-Length: 5\r\n\r\n{bad}" + b"Content-Length: %d\r\n\r\n" % len(body) + body
    done = subprocess.run([sys.executable, "-m", "micatool", "lsp"], input=sent, capture_output=True, timeout=60)
    assert done.stderr.decode() == ("micatool lsp: Unable to handle message: Expecting property name enclosed in "
                                    "double quotes: line 1 column 2 (char 1)\n")
    assert b'"method": "window/showMessage"' in done.stdout and b'"id": 1' in done.stdout  # shutdown answered


@pytest.fixture
def split(tmp_path) -> Path:
    for path in SPLIT.glob("*.mica"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


async def opened(client: LanguageClient, path: Path, text: str | None = None) -> tuple[str, list[types.Diagnostic]]:
    """Open the file (its text on disk, or `text`) and wait for its diagnostics."""
    uri = from_fs_path(str(path))
    if text is None:
        text = path.read_text()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="mica", version=1, text=text)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri, list(client.diagnostics[uri])


async def published(client: LanguageClient, uri: str, until) -> list[types.Diagnostic]:
    """The diagnostics last published for uri, once `until` holds of them (or 30 s have
    passed: a server publishes a document that depends on another one after the other's)."""
    for _ in range(600):
        if until(list(client.diagnostics.get(uri, []))):
            break
        await asyncio.sleep(0.05)
    return list(client.diagnostics.get(uri, []))


def at(text: str, needle: str, nth: int = 0, offset: int = 0) -> types.Position:
    """The position of the nth occurrence of needle in text (plus offset characters)."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    return types.Position(line=line, character=index - (text.rfind("\n", 0, index) + 1))


def span(d) -> tuple[int, int, int, int]:
    r = d.range
    return r.start.line, r.start.character, r.end.line, r.end.character


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def lines(first: int, last: int, end: int = 0) -> types.Range:
    """Lines first to last (0-based), up to character `end` of the last."""
    return types.Range(start=types.Position(line=first, character=0), end=types.Position(line=last, character=end))


LAYOUT = types.FormattingOptions(tab_size=4, insert_spaces=True)
WITH_DECLARATION = types.ReferenceContext(include_declaration=True)


# ---------------------------------------------------------------- diagnostics


async def test_a_clean_program_has_no_diagnostics(client, split):
    _, diagnostics = await opened(client, split / "split.mica")
    assert diagnostics == []


async def test_diagnostics_on_open_carry_codes_and_exact_ranges(client, tmp_path):
    text = "program P;\nvar\n    x : integer;\nbegin\n    x := 'text';\n    Writeln(x)\nend.\n"
    _, diagnostics = await opened(client, tmp_path / "p.mica", text)
    assert [(d.code, span(d), d.message) for d in diagnostics] == [
        (4031, (4, 9, 4, 15), "cannot assign 'string' to 'integer'"),
        (3001, (5, 4, 5, 11), "unknown name 'Writeln'; did you mean 'WriteLn'? (names are case-sensitive)"),
    ]


async def test_every_slip_of_a_file_being_typed_is_shown_after_a_change(client, tmp_path):
    uri, _ = await opened(client, tmp_path / "p.mica", "program P;\nbegin\n    WriteLn(1);\nend.\n")
    text = "program P;\nvar\n    x integer;\nbegin\n    x := 1\n    WriteLn(x + );\nend.\n"
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [(d.code, d.range.start.line) for d in client.diagnostics[uri]] == [(2003, 2), (2001, 4), (2003, 5)]


async def test_every_lexical_slip_and_what_the_analyzer_finds_is_shown_with_its_help(client, tmp_path):
    text = (Path(__file__).parent / "recovery" / "lexical.mica").read_text()
    _, diagnostics = await opened(client, tmp_path / "lexical.mica", text)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [
        (1001, 5), (1002, 7), (1001, 9), (1001, 10), (4031, 11), (1001, 12), (1001, 12), (1001, 13)]
    assert diagnostics[2].message == "unexpected character '&'\nhelp: Mica writes 'and' as a word: 'a and b'"


async def test_a_help_follows_the_message(client, tmp_path):
    text = (Path(__file__).parent / "diagnostics" / "5119_address_of_tracked.mica").read_text()
    _, diagnostics = await opened(client, tmp_path / "p.mica", text)
    assert [d.message.splitlines() for d in diagnostics] == [[
        "data type 'tracked matrix[2, 2] of float64' cannot be used in memory operation 'address of' "
        "(requires addressable)",
        "note: a tracked place is never lent by 'address': the tape would not see what is written through it",
        "help: let AdamStep step a plain twin of 'w', and copy the twin into 'w' after each step:",
        "    var wp : matrix[2, 2] of float64;", "    ...", "    AdamStep(address wp, Gradient(w), ...);",
        "    w := wp;"]]


@pytest.mark.parametrize("rates,where", [
    ("    Rate = 'fast' * 2;", 4),  # found by the analyzer
    ("    Rate 0.1;", 4),  # found while the unit is read, before any analysis
])
async def test_a_units_error_is_shown_on_the_uses_that_brings_it(client, split, rates, where):
    (split / "rates.mica").write_text(f"unit Rates;\ninterface\nconst\n{rates}\nimplementation\nend.\n")
    _, diagnostics = await opened(client, split / "optim.mica")
    assert len(diagnostics) == 1 and diagnostics[0].range.start.line == 9  # `uses Rates;` of optim.mica
    assert diagnostics[0].message.startswith(f"{split / 'rates.mica'}:{where}:")


async def test_a_unit_open_in_the_editor_is_read_as_the_editor_has_it(client, split):
    """A unit's unsaved edits reach the program that uses it: its diagnostics come again
    on the change, and a definition lands in the editor's text; once the unit is closed
    unsaved, the file's text is back."""
    layers = (split / "layers.mica").read_text()
    layers_uri, _ = await opened(client, split / "layers.mica")
    text = (split / "split.mica").read_text()
    uri, diagnostics = await opened(client, split / "split.mica")
    assert diagnostics == []
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=layers_uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="{ Norm is called Size now. }\n" + layers.replace("Norm(", "Size("))]))
    shown = await published(client, uri, lambda d: d != [])
    assert [(d.code, span(d), d.message) for d in shown] == [
        (3001, (30, 32, 30, 36), "unknown name 'Norm'; did you mean 'Normal'?")]
    found = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=at(text, "Layer(")))
    assert (found.uri, found.range.start.line) == (layers_uri, 15)  # a line below the file's
    assert (split / "layers.mica").read_text() == layers
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(layers_uri)))
    assert await published(client, uri, lambda d: d == []) == []


async def test_a_unit_the_editor_has_never_saved_is_found(client, tmp_path):
    """A new unit, open in the editor but not yet on disk, is what the program using it
    finds; closed unsaved, it is not found again."""
    program = "program P;\nuses Fresh;\nbegin\n    WriteLn(Fresh.Twice(2));\nend.\n"
    uri, diagnostics = await opened(client, tmp_path / "p.mica", program)
    assert [(d.code, span(d)) for d in diagnostics] == [(3010, (1, 5, 1, 10))]
    unit = "unit Fresh;\ninterface\nfunction Twice(n : integer) : integer;\nimplementation\n" \
           "function Twice(n : integer) : integer;\nbegin\n    result := 2 * n;\nend;\nend.\n"
    unit_uri, unit_diagnostics = await opened(client, tmp_path / "fresh.mica", unit)
    assert unit_diagnostics == [] and not (tmp_path / "fresh.mica").exists()
    assert await published(client, uri, lambda d: d == []) == []
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=doc(unit_uri)))
    shown = await published(client, uri, lambda d: d != [])
    assert [(d.code, span(d)) for d in shown] == [(3010, (1, 5, 1, 10))]


async def test_positions_after_a_lone_carriage_return_are_the_editors(client, tmp_path):
    """Mica ends a line at '\n' only, the protocol at a lone '\r' too: every position
    the server gives or takes after one is on the editor's line, at its column."""
    text = ("program P; { one\rtwo }\rvar\n    x : integer;\r    y : integr;\n"
            "begin\r    x := 'text';\r\n    WriteLn(x)\nend.\n")
    uri, diagnostics = await opened(client, tmp_path / "p.mica", text)
    assert [(d.code, span(d), d.message) for d in diagnostics] == [
        (3001, (4, 8, 4, 14), "unknown type 'integr'; did you mean 'integer'?"),
        (4031, (6, 9, 6, 15), "cannot assign 'string' to 'integer'")]
    found = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=types.Position(line=6, character=4)))
    assert (found.contents.value, span(found)) == ("```mica\n(variable) x : integer\n```", (6, 4, 6, 5))
    found = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=types.Position(line=7, character=12)))
    assert span(found) == (3, 4, 3, 5)
    found = await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(text_document=doc(uri)))
    shown, line, col = [], 0, 0
    for i in range(0, len(found.data), 5):
        dl, dc, length, _, _ = found.data[i:i + 5]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        shown.append((line, re.split("\r\n|\r|\n", text)[line][col:col + length]))
    assert shown[:6] == [(0, "program"), (0, "{ one"), (1, "two }"), (2, "var"), (3, "x"), (3, "integer")]


# ---------------------------------------------------------------- hover, definition, references, rename


async def test_hover_gives_types_with_shapes_and_the_binding_at_a_generic_call(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    variable = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=at(text, "h :=", 1)))
    assert variable.contents.value == "```mica\n(variable) h : tracked vector[3] of float64\n```"
    call = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=at(text, "Layer(")))
    assert call.contents.value == (
        "```mica\nfunction Layer(w : tracked matrix[M, N] of float64; b : tracked vector[M] of float64; "
        "x : tracked vector[N] of float64) : tracked vector[M] of float64\n```\n\nfrom unit Layers\n\n"
        "shapes bound here: `M = 3`, `N = 3`")
    field = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=at(text, "twins[k].w;", 0, 9)))
    assert field.contents.value == "`matrix[3, 3] of float64`"


async def test_hover_on_an_operator_gives_its_expressions_type(client, tmp_path):
    text = ("program P;\nvar\n    a : matrix[2, 4] of float64;\n    b : matrix[4, 3] of float64;\nbegin\n"
            "    WriteLn(a * b);\nend.\n")
    uri, _ = await opened(client, tmp_path / "p.mica", text)
    found = await client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=at(text, "* b")))
    assert found.contents.value == "`matrix[2, 3] of float64`"
    assert span(found) == (5, 14, 5, 15)


async def test_hover_on_a_vocabulary_op_gives_its_signature_and_line(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    found = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(uri), position=at(text, "Backward")))
    assert found.contents.value.startswith("```mica\nBackward(")
    assert len(found.contents.value.split("\n```\n\n")[1]) > 10


async def test_definition_and_references_cross_into_units(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    found = await client.text_document_definition_async(
        types.DefinitionParams(text_document=doc(uri), position=at(text, "Layer(")))
    assert found.uri == from_fs_path(str(split / "layers.mica"))
    assert (found.range.start.line, found.range.start.character) == (14, 9)
    refs = await client.text_document_references_async(
        types.ReferenceParams(text_document=doc(uri), position=at(text, "AdamVector"), context=WITH_DECLARATION))
    assert sorted((Path(r.uri).name, r.range.start.line) for r in refs) == [
        ("optim.mica", 5), ("optim.mica", 17), ("split.mica", 34)]


async def test_rename_changes_every_use_and_refuses_a_clash(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    edit = await client.text_document_rename_async(
        types.RenameParams(text_document=doc(uri), position=at(text, "twins"), new_name="pairs"))
    assert set(edit.changes) == {uri}
    assert len(edit.changes[uri]) == text.count("twins")
    assert {e.new_text for e in edit.changes[uri]} == {"pairs"}
    with pytest.raises(JsonRpcException, match="'s' would clash with 's', already declared"):
        await client.text_document_rename_async(
            types.RenameParams(text_document=doc(uri), position=at(text, "k,"), new_name="s"))
    with pytest.raises(JsonRpcException, match="'begin' is not a name"):
        await client.text_document_rename_async(
            types.RenameParams(text_document=doc(uri), position=at(text, "k,"), new_name="begin"))
    across = await client.text_document_rename_async(
        types.RenameParams(text_document=doc(uri), position=at(text, "Norm("), new_name="Length2"))
    assert sorted(Path(u).name for u in across.changes) == ["layers.mica", "split.mica"]


# ---------------------------------------------------------------- completion, signature help


async def test_completion_after_a_dot_and_in_scope(client, split):
    text = (split / "split.mica").read_text().replace("    Save(", "    twins[0].\n    Optim.\n    Save(")
    uri, _ = await opened(client, split / "split.mica", text)
    fields = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=at(text, "twins[0].", 0, 9)))
    assert [i.label for i in fields.items] == ["w", "wm", "wv", "b", "bm", "bv"]
    exported = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=at(text, "Optim.\n", 0, 6)))
    assert [i.label for i in exported.items] == ["AdamMatrix", "AdamVector"]
    anywhere = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(uri), position=at(text, "Seed")))
    labels = {i.label: i for i in anywhere.items}
    assert {"blocks", "Steps", "Layer", "Layers", "Sum", "WriteLn", "while", "float64"} <= set(labels)
    assert labels["Layer"].kind == types.CompletionItemKind.Function
    assert labels["Steps"].detail == "4 : integer"


async def test_signature_help_follows_the_argument(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    found = await client.text_document_signature_help_async(
        types.SignatureHelpParams(text_document=doc(uri), position=at(text, "blocks[k].b, h);", 0, 4)))
    assert found.signatures[0].label.startswith("function Layer(")
    assert found.active_parameter == 1


# ---------------------------------------------------------------- symbols, tokens, formatting, hints, fixes


async def test_document_symbols_outline_the_file(client, split):
    uri, _ = await opened(client, split / "layers.mica")
    found = await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc(uri)))
    assert [s.name for s in found] == ["Layers"]
    assert [s.name for s in found[0].children] == ["D", "Block", "Plain", "Layer", "Norm"]
    assert [c.name for c in found[0].children[3].children] == ["w", "b", "x"]


async def test_semantic_tokens_colour_names_by_what_they_name(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    found = await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(text_document=doc(uri)))
    legend = ["keyword", "comment", "string", "number", "operator", "variable", "parameter", "function", "type",
              "namespace", "property", "enumMember"]
    line = col = 0
    kinds, predeclared = {}, set()
    for i in range(0, len(found.data), 5):
        dl, dc, length, kind, modifiers = found.data[i:i + 5]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        word = text.split("\n")[line][col:col + length]
        kinds[word] = legend[kind]
        if modifiers == 1:  # the legend's one modifier, defaultLibrary
            predeclared.add(word)
    assert kinds["program"] == "keyword" and kinds["Layers"] == "namespace" and kinds["Layer"] == "function"
    assert kinds["Block"] == "type" and kinds["Steps"] == "enumMember" and kinds["twins"] == "variable"
    assert kinds["0.5"] == "number" and kinds["' '"] == "string" and kinds["k"] == "variable"
    # the vocabulary and the predeclared types are the library's; the program's and its units' names are not
    assert kinds["Sum"] == kinds["WriteLn"] == "function" and kinds["float64"] == "type"
    assert predeclared == {"Seed", "Normal", "Sum", "Mul", "Backward", "WriteLn", "Gradient", "Save", "ParamStr",
                           "float64", "integer"}, predeclared


async def test_formatting_gives_fmts_text(client, tmp_path):
    text = "program P;\nvar x:integer;\nbegin\nx:=1;\n      WriteLn( x );\nend.\n"
    uri, _ = await opened(client, tmp_path / "p.mica", text)
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(text_document=doc(uri), options=LAYOUT))
    assert [e.new_text for e in edits] == [format_source(SourceFile(str(tmp_path / "p.mica"), text))]


async def test_inlay_hints_show_each_generic_calls_binding(client, split):
    text = (split / "split.mica").read_text()
    uri, _ = await opened(client, split / "split.mica")
    count = text.count("\n")
    found = await client.text_document_inlay_hint_async(
        types.InlayHintParams(text_document=doc(uri), range=lines(0, count)))
    assert [(h.position.line, h.position.character, h.label) for h in found] == [
        (26, 26, "<M = 3, N = 3>"), (30, 36, "<N = 3>"), (33, 28, "<M = 3, N = 3>"), (34, 22, "<N = 3>")]


async def fixes(client, path: Path, text: str, line: int) -> list[tuple[str, str, tuple[int, int, int, int]]]:
    """The quick fixes offered on a line (0-based) of the text: title, new text and range of each."""
    uri, diagnostics = await opened(client, path, text)
    found = await client.text_document_code_action_async(
        types.CodeActionParams(text_document=doc(uri), range=lines(line, line, 9),
                               context=types.CodeActionContext(diagnostics=diagnostics)))
    return [(a.title, a.edit.changes[uri][0].new_text, span(a.edit.changes[uri][0])) for a in found]


@pytest.mark.parametrize("statements,line,fixed", [
    ("    x = 1;\n    Writeln(x);", 4, [("Change '=' to ':='", ":=", (4, 6, 4, 7))]),
    ("    x := 1;\n    Writeln(x);", 5, [("Change to 'WriteLn'", "WriteLn", (5, 4, 5, 11))]),
    ("    x := 1;\n    if x := 1 then WriteLn(x);", 5, [("Change ':=' to '='", "=", (5, 9, 5, 11))]),
])
async def test_quick_fixes_apply_what_the_diagnostic_suggests(client, tmp_path, statements, line, fixed):
    text = f"program P;\nvar\n    x : integer;\nbegin\n{statements}\nend.\n"
    assert await fixes(client, tmp_path / "p.mica", text, line) == fixed


# ---------------------------------------------------------------- any text


async def test_the_server_answers_every_request_whatever_the_text(client, tmp_path):
    """The front-end fuzzer's mutants sent as edits of one open file: after each,
    every kind of request at a few places, each answered, none with an error."""
    rng = random.Random(34)
    uri, _ = await opened(client, tmp_path / "fuzz.mica", "program P;\nbegin\nend.\n")
    for version in range(2, 62):
        text = mutate(rng.choice(SEED_TOKENS), rng)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        rows = text.split("\n")
        row = rng.randrange(len(rows))
        where = types.Position(line=row, character=rng.randrange(len(rows[row]) + 1))
        whole = lines(0, len(rows))
        await client.text_document_hover_async(types.HoverParams(text_document=doc(uri), position=where))
        await client.text_document_definition_async(types.DefinitionParams(text_document=doc(uri), position=where))
        await client.text_document_references_async(
            types.ReferenceParams(text_document=doc(uri), position=where, context=WITH_DECLARATION))
        await client.text_document_completion_async(types.CompletionParams(text_document=doc(uri), position=where))
        await client.text_document_signature_help_async(
            types.SignatureHelpParams(text_document=doc(uri), position=where))
        await client.text_document_document_symbol_async(types.DocumentSymbolParams(text_document=doc(uri)))
        await client.text_document_semantic_tokens_full_async(types.SemanticTokensParams(text_document=doc(uri)))
        await client.text_document_inlay_hint_async(types.InlayHintParams(text_document=doc(uri), range=whole))
        await client.text_document_code_action_async(
            types.CodeActionParams(text_document=doc(uri), range=whole, context=types.CodeActionContext(
                diagnostics=list(client.diagnostics.get(uri, [])))))
        await client.text_document_formatting_async(
            types.DocumentFormattingParams(text_document=doc(uri), options=LAYOUT))
        await client.text_document_prepare_rename_async(
            types.PrepareRenameParams(text_document=doc(uri), position=where))
    assert client.error is None
