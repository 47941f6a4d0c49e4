"""The VS Code extension in editors/vscode: its grammar against the lexer, a golden,
its client, its package, and its word lists against the compiler's.

The grammar runs as VS Code runs it, through vscode-textmate on vscode-oniguruma
(editors/vscode/test/tokenize.js). The test entry point (tests/conftest.py,
node_tools) installs Node.js when missing and the pinned Node packages into
micatool's cache; the tests that need them skip, saying why, where that cannot
be done. The word-list and folding tests need neither.

After a deliberate change to the grammar, `python tests/test_editor_package.py`
rewrites the golden, editors/vscode/test/sample.scopes; read its diff.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from micatool.compile.analyzer import predeclared
from micatool.compile.analyzer.rules import TENSOR_CONSTRUCTORS
from micatool.compile.descent import _TOKEN, KEYWORDS
from micatool.compile.ops import OPS
from micatool.compile.symbols import ConstSymbol, TypeSymbol
from micatool.compile.types import SCALARS

ROOT = Path(__file__).resolve().parents[1]
EDITOR = ROOT / "editors" / "vscode"
GRAMMAR = json.loads((EDITOR / "syntaxes" / "mica.tmLanguage.json").read_text())
GOLDEN = EDITOR / "test" / "sample.scopes"
GOLDEN_FILES = [EDITOR / "test" / "sample.mica", EDITOR / "test" / "shapes.mica"]
ROOT_SCOPE = "source.mica"

# A word list of the grammar: one alternation between the fences every word rule has.
WORD_LIST = re.compile(r"^\(\?<!\[A-Za-z0-9_\]\)\(\?:([A-Za-z0-9_|]+)\)\(\?!\[A-Za-z0-9_\]\)$")


def word_lists(rule: str) -> dict[str, list[str]]:
    """The scope and words of each word-list pattern of the grammar's repository rule."""
    found = {}
    for pattern in GRAMMAR["repository"][rule]["patterns"]:
        listed = WORD_LIST.match(pattern.get("match", ""))
        if listed:
            found[pattern["name"]] = listed.group(1).split("|")
    return found


KEYWORD_SCOPE = {word: scope for scope, words in word_lists("keywords").items() for word in words}
PREDECLARED_SCOPE = {word: scope for scope, words in word_lists("predeclared").items() for word in words}
PREDECLARED_SCOPE["result"] = "variable.language.result.mica"


# ---------------------------------------------------------------- the word lists (no Node needed)


def test_the_grammar_names_no_op_of_the_vocabulary():
    # A new op touches no editor file: the server's semantic tokens mark the vocabulary, and
    # the grammar colours every call the same way, the program's routines' and the vocabulary's.
    words = set(re.findall(r"[A-Za-z0-9_]+", json.dumps(GRAMMAR)))
    named = sorted(name for name in OPS if ":" not in name and name in words)
    assert named == [], f"mica.tmLanguage.json names ops of the vocabulary: {named}"


def test_the_keywords_are_the_lexers():
    listed = [word for words in word_lists("keywords").values() for word in words]
    assert sorted(listed) == sorted(KEYWORDS), "each of descent.KEYWORDS in exactly one keyword list"


def test_the_predeclared_types_and_constants_are_the_analyzers():
    scope = predeclared().names
    types = {name for name, symbol in scope.items() if isinstance(symbol, TypeSymbol)}
    lists = word_lists("predeclared")
    assert lists["support.type.primitive.mica"] == sorted(SCALARS)
    assert lists["support.type.handle.mica"] == sorted(types - set(SCALARS))
    # `channel of T` is a constructor like vector's, spelled in analyzer/type_syntax.py
    assert lists["support.type.constructor.mica"] == sorted([*TENSOR_CONSTRUCTORS, "channel"])
    assert lists["support.constant.mica"] == sorted(n for n, s in scope.items() if isinstance(s, ConstSymbol))


def test_each_word_list_is_sorted_and_the_fences_hold_every_word_rule():
    for rule in ("keywords", "predeclared"):
        for scope, words in word_lists(rule).items():
            assert words == sorted(words), scope
    for pattern in GRAMMAR["repository"]["keywords"]["patterns"] + GRAMMAR["repository"]["predeclared"]["patterns"]:
        assert pattern["match"].startswith("(?<![A-Za-z0-9_])"), pattern


def test_the_editor_page_keeps_up():
    page = (ROOT / "docs" / "editors.md").read_text()
    emacs = re.search(r"\(defconst mica-keywords\s+'\(([^)]*)\)\)", page)
    assert sorted(re.findall(r'"(\w+)"', emacs.group(1))) == sorted(KEYWORDS), "mica-mode's keywords"
    pins = json.loads((EDITOR / "test" / "tools" / "package.json").read_text())["dependencies"]
    assert f"npx @vscode/vsce@{pins['@vscode/vsce']} package" in page


# ---------------------------------------------------------------- folding (no Node needed)

CONFIGURATION = json.loads((EDITOR / "language-configuration.json").read_text())


def folds(text: str) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """VS Code's folding by markers (indentRangeProvider.ts), lines from 1: walking up
    from the last line, an end marker waits and the nearest start above takes it.
    The ranges, the end lines no start took, the start lines with no end below."""
    markers = CONFIGURATION["folding"]["markers"]
    pattern = re.compile(f"({markers['start']})|(?:{markers['end']})")
    ranges, waiting, unmatched = [], [], []
    lines = text.split("\n")
    for number in range(len(lines), 0, -1):
        marker = pattern.search(lines[number - 1])
        if marker and marker.group(1):
            if waiting:
                ranges.append((number, waiting.pop()))
            else:
                unmatched.append(number)
        elif marker:
            waiting.append(number)
    return sorted(ranges), waiting, unmatched


def block_lines(text: str) -> tuple[set[int], set[int]]:
    """The lines the lexer sees open a block (their last token a block's first word) and
    close one (their first token its last)."""
    starts = [0] + [at + 1 for at, c in enumerate(text) if c == "\n"]
    words = [(bisect.bisect_right(starts, a), text[a:b]) for kind, a, b in lexer_tokens(text) if kind != "comment"]
    opens = {line for (line, word), (after, _) in zip(words, words[1:] + [(0, "")]) if after != line
             and word in ("begin", "record", "tape", "tasks", "repeat", "interface", "initialization")}
    closes = {line for (before, _), (line, word) in zip([(0, "")] + words, words) if before != line
              and word in ("end", "until", "implementation")}
    return opens, closes


def test_folding_pairs_each_block_with_its_end_in_the_examples():
    for path in [*sorted((ROOT / "examples").rglob("*.mica")), *GOLDEN_FILES]:
        text = path.read_text()
        ranges, waiting, _ = folds(text)
        opens, closes = block_lines(text)
        # A comment's line that ends in `tasks` is a start too, but it folds nothing
        # unless it takes an end from a block: every block folds, and nothing else does.
        assert {start for start, _ in ranges} == opens, path
        assert {end for _, end in ranges} <= closes, path
        # a unit without initialization leaves its closing `end.` to nothing
        assert all(text.split("\n")[n - 1].startswith("end.") for n in waiting), f"{path}: lines {waiting} end nothing"
    assert (10, 12) in folds(GOLDEN_FILES[0].read_text())[0]  # Layer = record ... end;
    assert (4, 10) in folds(GOLDEN_FILES[1].read_text())[0]  # interface ... implementation


# ---------------------------------------------------------------- the grammar, run as VS Code runs it


def tokenize(tools, texts: list[str]) -> list[list[list[tuple[int, int, list[str]]]]]:
    """Each text's lines' tokens: (start, end, scopes), in code points."""
    done = subprocess.run(["node", str(EDITOR / "test" / "tokenize.js")], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, NODE_PATH=str(tools.tools / "node_modules")))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def lexer_tokens(text: str):
    """(kind, start, end) of each token descent.py's scanner sees: comments included, up to
    and including the first character no token starts with (lark's lexer stops there too).
    An unclosed `(*` scans as `(` and `*`, and the front end stops there with error 1003."""
    scan = _TOKEN.scanner(text).match
    while True:
        match = scan()
        kind = match.lastgroup
        if kind == "EOF":
            return
        if kind == "punct" and text.startswith("(*", match.start(kind)):
            kind = "other"
        if kind != "newline":
            yield kind, match.start(kind), match.end(kind)
        if kind == "other":
            return


PUNCTUATION = {":=": "keyword.operator.assignment.", "..": "keyword.operator.range.", ";": "punctuation.terminator.",
               ",": "punctuation.separator.comma.", ":": "punctuation.separator.colon.", ".": "punctuation.",
               "(": "punctuation.section.parens.", ")": "punctuation.section.parens.",
               "[": "punctuation.section.brackets.", "]": "punctuation.section.brackets.",
               **dict.fromkeys(["=", "<>", "<", "<=", ">", ">="], "keyword.operator.comparison."),
               **dict.fromkeys("+-*/", "keyword.operator.arithmetic.")}
# What a name may carry besides its root scope where it is declared, qualified or used as a unit.
NAME_SCOPES = {ROOT_SCOPE, "meta.qualified-name.mica", "entity.name.namespace.mica", "entity.name.function.mica",
               "entity.name.function.call.mica", "variable.other.member.mica"}


def expected(kind: str, value: str):
    """What the scopes over a token of the lexer's must satisfy, and the class it counts in."""
    def has(scope):
        return lambda scopes: scope in scopes

    def prefixed(prefix):
        return lambda scopes: any(s.startswith(prefix) for s in scopes)

    if kind == "comment":
        return prefixed("comment."), "comment"
    if kind == "STRING":
        return has("string.quoted.single.mica"), "string"
    if kind in ("INT", "FLOAT", "malformed"):
        scope = {"INT": "constant.numeric.integer.mica", "FLOAT": "constant.numeric.float.mica",
                 "malformed": "invalid.illegal.numeric.mica"}[kind]
        return has(scope), "number"
    if kind == "punct":
        return prefixed(PUNCTUATION[value]), "operator"
    if kind == "other":  # an unterminated comment is a comment to the end of the file, as typed
        return lambda scopes: any(s.startswith(("invalid.illegal.", "comment.")) for s in scopes), "invalid"
    if value in KEYWORDS:
        return has(KEYWORD_SCOPE[value]), "keyword"
    if value in PREDECLARED_SCOPE:
        scope = PREDECLARED_SCOPE[value]
        return lambda scopes: scope in scopes or set(scopes) <= NAME_SCOPES, "predeclared"
    return lambda scopes: set(scopes) <= NAME_SCOPES, "name"


def disagreements(name: str, text: str, lines, counts: dict[str, int]) -> list[str]:
    """Where the grammar's scopes do not say what the lexer's token is."""
    starts = [0] + [at + 1 for at, c in enumerate(text) if c == "\n"]
    wrong = []
    for kind, start, end in lexer_tokens(text):
        value = text[start:end]
        holds, counted = expected(kind, value)
        counts[counted] = counts.get(counted, 0) + 1
        line = bisect.bisect_right(starts, start) - 1
        while True:  # each line's part of the token: a comment may run over lines
            line_end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
            first, last = start - starts[line], min(end, line_end) - starts[line]
            for a, b, scopes in lines[line]:
                if a < last and b > first and not holds(scopes):
                    wrong.append(f"{name}:{line + 1}:{first + 1}: {kind} {value[:30]!r}: {' '.join(scopes)}")
            if end <= line_end:
                break
            line += 1
            start = starts[line]
    return wrong


def repository_texts() -> dict[str, str]:
    """Every tracked .mica file, and every Mica cell of the tracked Markdown."""
    listed = subprocess.run(["git", "ls-files", "*.mica", "*.md"], cwd=ROOT, capture_output=True, text=True,
                            check=True)
    texts = {}
    for name in listed.stdout.split():
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):  # error 1007 comes before any token
            continue
        if name.endswith(".mica"):
            texts[name] = text
            continue
        # Markdown shows Mica in ```mica cells (notebooks: ```mica continue ...) and ```pascal ones
        for cell in re.finditer(r"^```(?:mica|pascal)(?:[ \t][^\n]*)?\n(.*?)^```", text, re.S | re.M):
            texts[f"{name}:{text.count(chr(10), 0, cell.start()) + 2}"] = cell.group(1)
    return texts


@pytest.mark.node
def test_every_token_of_the_lexer_gets_its_scope(node_tools):
    texts = repository_texts()
    counts: dict[str, int] = {}
    wrong = []
    for (name, text), lines in zip(texts.items(), tokenize(node_tools, list(texts.values()))):
        wrong += disagreements(name, text, lines, counts)
    assert wrong == [], f"{len(wrong)} tokens scoped unlike the lexer sees them:\n" + "\n".join(wrong[:30])
    assert len([n for n in texts if n.endswith(".mica")]) > 250 and len(texts) > 290
    assert all(counts.get(c, 0) > 100 for c in ("comment", "string", "number", "keyword", "predeclared", "name"))
    assert counts["invalid"] >= 5, counts


def scoped(text: str, line_tokens) -> list[tuple[str, str]]:
    """A line's tokens as (text, its scopes past the root); plain text without its blanks."""
    return [(text[a:b] if len(s) > 1 else text[a:b].strip(), " ".join(s[1:])) for a, b, s in line_tokens
            if len(s) > 1 or text[a:b].strip()]


MALFORMED = {  # what the lexer refuses, shown where it does
    "x := 1.5e;": [("x", ""), (":=", "keyword.operator.assignment.mica"), ("1.5e", "invalid.illegal.numeric.mica"),
                   (";", "punctuation.terminator.statement.mica")],
    "a[0..1.] 1e+ 2E3 3.0 12ab": [
        ("a", ""), ("[", "punctuation.section.brackets.begin.mica"), ("0", "constant.numeric.integer.mica"),
        ("..", "keyword.operator.range.mica"), ("1.", "invalid.illegal.numeric.mica"),
        ("]", "punctuation.section.brackets.end.mica"), ("1e+", "invalid.illegal.numeric.mica"),
        ("2E3", "constant.numeric.float.mica"), ("3.0", "constant.numeric.float.mica"),
        ("12", "constant.numeric.integer.mica"), ("ab", "")],
    "WriteLn('abc);": [("WriteLn", "entity.name.function.call.mica"), ("(", "punctuation.section.parens.begin.mica"),
                       ("'abc);", "invalid.illegal.unterminated-string.mica")],
    "x1 # é\u2028": [("x1", ""), ("#", "invalid.illegal.character.mica"), ("é", "invalid.illegal.character.mica"),
                     ("\u2028", "invalid.illegal.character.mica")],
}


@pytest.mark.node
def test_malformed_forms_are_marked_as_the_lexer_refuses_them(node_tools):
    for (text, want), lines in zip(MALFORMED.items(), tokenize(node_tools, list(MALFORMED))):
        assert scoped(text, lines[0]) == want, text


@pytest.mark.node
def test_a_name_before_a_parenthesis_is_a_call(node_tools):
    text = "y := Halve (x) + F(*note*)(x) * float32(n) + Stats.Mean(x);"
    call, member = "entity.name.function.call.mica", "meta.qualified-name.mica variable.other.member.mica"
    want = [("y", ""), ("Halve", call), ("x", ""), ("F", ""), ("x", ""), ("float32", "support.type.primitive.mica"),
            ("n", ""), ("Stats", "meta.qualified-name.mica entity.name.namespace.mica"), ("Mean", member), ("x", "")]
    names = [(part, scopes) for part, scopes in scoped(text, tokenize(node_tools, [text])[0][0])
             if re.fullmatch(r"[A-Za-z_]\w*", part) and not scopes.startswith("comment.")]
    assert names == want


def golden(tools) -> str:
    """GOLDEN_FILES with, under each line, its tokens and their scopes past the root."""
    texts = [path.read_text() for path in GOLDEN_FILES]
    out = []
    for path, text, lines in zip(GOLDEN_FILES, texts, tokenize(tools, texts)):
        out.append(f"==== {path.name}")
        for line, tokens in zip(text.split("\n"), lines):
            out.append(f"> {line}".rstrip())
            out += [f"    {json.dumps(part, ensure_ascii=False):<24} {scopes or '-'}" for part, scopes in
                    scoped(line, tokens)]
    return "\n".join(out) + "\n"


@pytest.mark.node
def test_the_golden_samples_scopes(node_tools):
    assert golden(node_tools) == GOLDEN.read_text(), \
        "the grammar scopes the sample differently: `python tests/test_editor_package.py` rewrites the golden"


def test_the_golden_sample_is_a_program_micatool_accepts(capsys):
    from micatool.cli import main

    assert main(["check", str(GOLDEN_FILES[0])]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- the client and the package


def activate(settings: dict) -> dict:
    done = subprocess.run(["node", str(EDITOR / "test" / "activate.js"), json.dumps(settings)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.node
def test_the_client_starts_micatool_lsp_or_what_the_settings_say(node_tools):
    default = activate({})
    server = {"command": "micatool", "args": ["lsp"], "transport": "stdio"}
    assert default["clients"] == [{"id": "mica", "name": "Mica", "server": {"run": server, "debug": server},
                                   "documentSelector": [{"scheme": "file", "language": "mica"},
                                                        {"scheme": "untitled", "language": "mica"}]}]
    assert default["commands"] == ["mica.restartServer"] and default["messages"] == []

    missing = activate({"mica.server.path": "/venv/missing/micatool", "mica.server.args": ["lsp", "--stdio"]})
    assert missing["clients"][0]["server"]["run"] == {"command": "/venv/missing/micatool",
                                                      "args": ["lsp", "--stdio"], "transport": "stdio"}
    [message] = missing["messages"]
    assert "`/venv/missing/micatool lsp --stdio`" in message and "mica.server.path" in message


def test_the_manifest_contributes_the_language_grammar_settings_and_activation():
    manifest = json.loads((EDITOR / "package.json").read_text())
    assert manifest["activationEvents"] == ["onLanguage:mica"] and manifest["main"] == "./extension.js"
    [language] = manifest["contributes"]["languages"]
    assert language["id"] == "mica" and language["extensions"] == [".mica"]
    assert (EDITOR / language["configuration"]).is_file()
    [grammar] = manifest["contributes"]["grammars"]
    assert grammar["scopeName"] == GRAMMAR["scopeName"] == ROOT_SCOPE and (EDITOR / grammar["path"]).is_file()
    settings = manifest["contributes"]["configuration"]["properties"]
    assert settings["mica.server.path"]["default"] == "micatool" and settings["mica.server.args"]["default"] == ["lsp"]


@pytest.mark.node
def test_vsce_packages_the_extension(node_tools, tmp_path):
    extension = tmp_path / "mica"
    shutil.copytree(EDITOR, extension, ignore=shutil.ignore_patterns("node_modules", "*.vsix"))
    shutil.copytree(node_tools.extension / "node_modules", extension / "node_modules", symlinks=True)
    vsix = tmp_path / "mica.vsix"
    vsce = node_tools.tools / "node_modules" / "@vscode" / "vsce" / "vsce"
    done = subprocess.run(["node", str(vsce), "package", "--out", str(vsix), "--skip-license",
                           "--allow-missing-repository"], cwd=extension, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

    names = zipfile.ZipFile(vsix).namelist()
    assert sorted(n for n in names if not n.startswith("extension/node_modules/")) == [
        "[Content_Types].xml", "extension.vsixmanifest", "extension/extension.js",
        "extension/language-configuration.json", "extension/package.json", "extension/readme.md",
        "extension/syntaxes/mica.tmLanguage.json"]  # no tests, no lock file: .vscodeignore and vsce's own rules
    lock = json.loads((EDITOR / "package-lock.json").read_text())
    shipped = {key.removeprefix("node_modules/") for key in lock["packages"] if key}
    assert {n.split("/")[2] for n in names if n.startswith("extension/node_modules/")} == shipped
    assert "extension/node_modules/vscode-languageclient/node.js" in names
    packaged = json.loads(zipfile.ZipFile(vsix).read("extension/package.json"))
    assert packaged["contributes"] == json.loads((EDITOR / "package.json").read_text())["contributes"]


if __name__ == "__main__":  # rewrite the golden: python tests/test_editor_package.py
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import NodeTools
    from system import npm_ci, require_node

    from micatool.cache import cache_dir

    require_node()
    tools = NodeTools(npm_ci(EDITOR / "test" / "tools", cache_dir() / "node"), None)
    GOLDEN.write_text(golden(tools))
    print(f"wrote {GOLDEN.relative_to(ROOT)}")
