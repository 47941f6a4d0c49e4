"""What the server answers, from a checked Document (document.py): each function
takes the document and a 1-based line and column (a column counts characters,
as the compiler's diagnostics do) and gives plain values that server.py turns
into the protocol's. None, or an empty list, where there is nothing to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..compile import ast, ops
from ..compile.descent import KEYWORDS, Token
from ..compile.symbols import (BuiltinSymbol, ConstSymbol, RoutineSymbol, ShapeVarSymbol, Symbol, TypeSymbol,
                               UnitSymbol, VarSymbol)
from ..compile.types import Record, plain
from ..diagnostics import Diagnostic, SourceFile
from ..fmt import format_source
from .document import Document, Occurrence, Span, place, routine_at

# ---------------------------------------------------------------- hover


def hover(document: Document, line: int, col: int) -> tuple[str, Span] | None:
    """What the name or expression at the position is: its declaration's form and its
    type, shapes included; at a call of a shape-generic routine, what its shape
    variables are bound to there."""
    occurrence = document.at(line, col)
    if occurrence is not None:
        text = describe(occurrence.symbol)
        call = call_of(document, occurrence.node)
        if call is not None and call.binding:
            text += "\n\n" + binding_text(call.binding)
        elif isinstance(occurrence.node, ast.Expr) and occurrence.node.ty is not None \
                and not isinstance(occurrence.symbol, (VarSymbol, ConstSymbol)):
            text += f"\n\nhere: `{occurrence.node.ty}`"
        return text, occurrence.span
    token = token_at(document.tokens, line, col)
    if token is None or document.tree is None:
        return None
    for node in ast.walk(document.tree):
        if isinstance(node, ast.Expr) and node.ty is not None and place(node.line) == (0, token.line) \
                and node.col == token.col:
            return f"`{node.ty}`", Span(0, token.line, token.col, token.col + len(token.text))
    return None


def describe(symbol: Symbol) -> str:
    """A symbol as its declaration would read, in a code block."""
    if isinstance(symbol, RoutineSymbol):
        shown = heading(symbol)
    elif isinstance(symbol, VarSymbol):
        shown = f"{'address ' if symbol.by_address else ''}{symbol.name} : {symbol.type}"
        shown = f"({role_word(symbol)}) {shown}"
    elif isinstance(symbol, ConstSymbol):
        shown = f"const {symbol.name} = {symbol.value!r} : {symbol.type}"
    elif isinstance(symbol, TypeSymbol):
        shown = f"type {symbol.name} = {symbol.type}"
    elif isinstance(symbol, UnitSymbol):
        shown = f"unit {symbol.name}"
    elif isinstance(symbol, ShapeVarSymbol):
        shown = f"(shape variable) {symbol.name} : integer"
    elif isinstance(symbol, BuiltinSymbol):
        return op_text(symbol.name)
    else:
        shown = symbol.name
    owner = f"\n\nfrom unit {symbol.unit}" if symbol.unit else ""
    return f"```mica\n{shown}\n```{owner}"


def role_word(symbol: VarSymbol) -> str:
    return {"global": "variable", "local": "local variable", "param": "parameter", "result": "result"}[symbol.role]


def heading(routine: RoutineSymbol) -> str:
    params = "; ".join(f"{'address ' if p.by_address else ''}{p.name} : {p.type}" for p in routine.params)
    text = f"{routine.decl.kind} {routine.name}({params})"
    return text + (f" : {routine.result}" if routine.result is not None else "")


def op_text(name: str) -> str:
    op = ops.OPS[name]
    return f"```mica\n{op.signature}\n```\n\n{op.doc}" if op.signature else f"`{name}` (predeclared)"


def binding_text(binding: dict) -> str:
    return "shapes bound here: " + ", ".join(f"`{name} = {value}`" for name, value in binding.items())


def call_of(document: Document, node: ast.Node | None) -> ast.Call | None:
    """The call whose callee is this name, if it is one."""
    if node is None or document.tree is None:
        return None
    return next((n for n in calls(document) if n.callee is node), None)


def calls(document: Document) -> list[ast.Call]:
    return [n for n in ast.walk(document.tree) if isinstance(n, ast.Call)]


def token_at(tokens: list[Token], line: int, col: int) -> Token | None:
    """The token under the position, or the one that ends right at it (the cursor just after a name)."""
    near = [t for t in tokens if t.line == line and t.kind != "comment" and "\n" not in t.text
            and t.col <= col <= t.col + len(t.text)]
    under = [t for t in near if col < t.col + len(t.text)]
    return (under or near or [None])[0]


# ---------------------------------------------------------------- definition, references, rename


def definition(document: Document, line: int, col: int) -> Span | None:
    occurrence = document.at(line, col)
    if occurrence is None:
        return None
    return next((o.span for o in document.of(occurrence.symbol) if o.declaration), None)


def references(document: Document, line: int, col: int, with_declaration: bool = True) -> list[Span]:
    occurrence = document.at(line, col)
    if occurrence is None:
        return []
    return sorted({o.span for o in document.of(occurrence.symbol) if with_declaration or not o.declaration},
                  key=lambda s: (s.file, s.line, s.col))


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class RenameRefused(Exception):
    """Why a rename cannot be done; the message is shown to the writer."""


def renamable(document: Document, line: int, col: int) -> Span | None:
    """The name a rename at the position would change: one the program declares."""
    occurrence = document.at(line, col)
    if occurrence is None or isinstance(occurrence.symbol, (BuiltinSymbol, UnitSymbol)) \
            or occurrence.symbol.pos.line == 0:
        return None
    return occurrence.span


def rename(document: Document, line: int, col: int, new_name: str) -> list[tuple[Span, str]]:
    """The edits that rename the name at the position everywhere it is used; RenameRefused
    where the new name is not a name, or would clash with one already seen there."""
    span = renamable(document, line, col)
    if span is None:
        raise RenameRefused("only a name the program declares can be renamed")
    symbol = document.at(line, col).symbol
    if not NAME.match(new_name) or new_name in KEYWORDS:
        raise RenameRefused(f"'{new_name}' is not a name: a keyword, or not a letter or '_' then letters, "
                            "digits and '_'")
    if new_name != symbol.name:
        clash = clashing(document, symbol, new_name)
        if clash is not None:
            raise RenameRefused(f"'{new_name}' would clash with {clash}")
    return [(name_part(o.span, symbol), new_name) for o in document.of(symbol)]


def name_part(span: Span, symbol: Symbol) -> Span:
    """Of a qualified `Unit.Name`, the `Name`; of a name, itself."""
    return Span(span.file, span.line, span.end - len(symbol.name), span.end)


def clashing(document: Document, symbol: Symbol, new_name: str) -> str | None:
    """What the new name already names where the symbol is declared or used, if anything."""
    analyzer = document.analyzer
    routines = [r for r in analyzer.routines if symbol in r.params + r.locals or symbol is r.result_var]
    if routines:
        routine = routines[0]
        for other in routine.params + routine.locals:
            if other.name == new_name:
                return f"the {role_word(other)} '{new_name}' of '{routine.name}'"
    scopes = [analyzer.globals] + [unit.scope for unit in analyzer.units.values()]
    for scope in scopes:
        found = scope.lookup(new_name)
        if found is not None and found is not symbol:
            where = f" of unit {found.unit}" if found.unit else ""
            return f"'{new_name}'{where}, already declared" if found.pos.line else f"the predeclared '{new_name}'"
    for occurrence in document.of(symbol):
        inside = routine_at(document, occurrence.span.line) if occurrence.span.file == 0 else None
        other = next((v for v in inside.params + inside.locals if v.name == new_name), None) if inside else None
        if other is not None:
            return f"the {role_word(other)} '{new_name}' of '{inside.name}'"
    return None


# ---------------------------------------------------------------- completion and signature help


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # 'variable', 'constant', 'type', 'function', 'unit', 'field', 'keyword', 'shape'
    detail: str


def completion(document: Document, line: int, col: int) -> list[Completion]:
    """After `Unit.`, the unit's interface; after `record.`, its fields; elsewhere every
    name in scope at the position, the vocabulary and the keywords."""
    before = [t for t in document.tokens if (t.line, t.col) < (line, col) and t.kind != "comment"]
    if before and before[-1].kind == "." or len(before) >= 2 and before[-2].kind == "." and \
            before[-1].kind == "NAME" and before[-1].col + len(before[-1].text) == col:
        dot = before[-1] if before[-1].kind == "." else before[-2]
        return after_dot(document, dot)
    found: dict[str, Completion] = {}
    routine = routine_at(document, line)
    if routine is not None:
        for v in routine.params + routine.locals + ([routine.result_var] if routine.result_var else []):
            found.setdefault(v.name, Completion(v.name, "variable", str(v.type)))
        for name in routine.shape_vars:
            found.setdefault(name, Completion(name, "shape", "shape variable : integer"))
    if document.analyzer is not None:
        scope = document.analyzer.globals
        while scope is not None:
            for name, symbol in scope.names.items():
                found.setdefault(name, completion_of(symbol))
            scope = scope.parent
    else:
        for name in ops.OPS:
            if ":" not in name:
                found.setdefault(name, completion_of(BuiltinSymbol(name, None)))
    for word in sorted(KEYWORDS):
        found.setdefault(word, Completion(word, "keyword", "keyword"))
    return sorted(found.values(), key=lambda c: (c.kind == "keyword", c.label))


def completion_of(symbol: Symbol) -> Completion:
    if isinstance(symbol, RoutineSymbol):
        return Completion(symbol.name, "function", heading(symbol))
    if isinstance(symbol, BuiltinSymbol):
        op = ops.OPS[symbol.name]
        return Completion(symbol.name, "function", op.signature or "predeclared")
    if isinstance(symbol, VarSymbol):
        return Completion(symbol.name, "variable", str(symbol.type))
    if isinstance(symbol, ConstSymbol):
        return Completion(symbol.name, "constant", f"{symbol.value!r} : {symbol.type}")
    if isinstance(symbol, TypeSymbol):
        return Completion(symbol.name, "type", str(symbol.type))
    if isinstance(symbol, UnitSymbol):
        return Completion(symbol.name, "unit", "unit")
    return Completion(symbol.name, "variable", "")


def after_dot(document: Document, dot: Token) -> list[Completion]:
    before = [t for t in document.tokens if t.offset < dot.offset and t.kind != "comment"]
    if not before or document.analyzer is None:
        return []
    base = before[-1]
    unit = document.analyzer.units.get(base.text) if base.kind == "NAME" else None
    if unit is not None:
        return sorted((completion_of(s) for s in unit.exports.values()), key=lambda c: c.label)
    record = record_before(document, base)
    if record is None:
        return []
    return [Completion(name, "field", str(t)) for name, t in record.fields]


def record_before(document: Document, last: Token) -> Record | None:
    """The record type of the expression that ends with this token (a name, a field, an
    index), from the analyzer's annotations."""
    best = None
    for node in ast.walk(document.tree):
        if not isinstance(node, (ast.Name, ast.Field, ast.Index)) or node.ty is None:
            continue
        if isinstance(node, ast.Name) and place(node.line) == (0, last.line) and node.col == last.col:
            best = node
        elif isinstance(node, ast.Field) and place(node.line) == (0, last.line) and node.col == last.col:
            best = node
        elif isinstance(node, ast.Index) and last.kind == "]" and ends_at(document, node, last):
            best = node
    t = plain(best.ty) if best is not None else None
    return t if isinstance(t, Record) else None


def ends_at(document: Document, node: ast.Index, bracket: Token) -> bool:
    """Whether the index expression's ']' is this one: its last index ends right before it."""
    closers = [t for t in document.tokens if t.kind == "]" and (t.line, t.col) > (place(node.line)[1], node.col)]
    return bool(closers) and closers[0] is bracket


@dataclass(frozen=True)
class Signature:
    label: str
    params: list[str]
    active: int
    doc: str = ""


def signature_help(document: Document, line: int, col: int) -> Signature | None:
    """The call whose parentheses hold the position, and which argument it is at."""
    before = [t for t in document.tokens if (t.line, t.col) < (line, col) and t.kind != "comment"]
    depth, commas = 0, 0
    for i in range(len(before) - 1, 0, -1):
        kind = before[i].kind
        if kind in (")", "]"):
            depth += 1
        elif kind in ("(", "["):
            if depth == 0:
                if kind == "(" and before[i - 1].kind == "NAME":
                    return signature_of(document, before[i - 1], commas)
                return None
            depth -= 1
        elif kind == "," and depth == 0:
            commas += 1
        elif kind in (";", "begin", "then", "do") and depth == 0:
            return None
    return None


def signature_of(document: Document, name: Token, active: int) -> Signature | None:
    occurrence = document.at(name.line, name.col)
    symbol = occurrence.symbol if occurrence is not None else None
    if symbol is None and document.analyzer is not None:
        symbol = document.analyzer.globals.lookup(name.text)
    if isinstance(symbol, RoutineSymbol):
        params = [f"{'address ' if p.by_address else ''}{p.name} : {p.type}" for p in symbol.params]
        return Signature(heading(symbol), params, active)
    if isinstance(symbol, BuiltinSymbol) and ops.OPS[symbol.name].signature:
        op = ops.OPS[symbol.name]
        return Signature(op.signature, op_params(op.signature), active, op.doc)
    return None


def op_params(signature: str) -> list[str]:
    """The parameters of an op's signature, as the label writes them: `Sum(t)` gives ['t']."""
    inside = signature[signature.index("(") + 1: signature.rindex(")")] if "(" in signature else ""
    depth, start, params = 0, 0, []
    for i, c in enumerate(inside + ","):
        depth += (c in "([") - (c in ")]")
        if c in ",;" and depth == 0:
            if inside[start:i].strip():
                params.append(inside[start:i].strip())
            start = i + 1
    return params


# ---------------------------------------------------------------- symbols, tokens, hints


@dataclass(frozen=True)
class Outline:
    name: str
    kind: str  # 'constant', 'type', 'variable', 'function', 'unit', 'program'
    detail: str
    line: int
    end_line: int
    children: tuple[Outline, ...] = ()


def outline(document: Document) -> list[Outline]:
    """The file's declarations, each routine with its parameters and locals beneath it."""
    if document.analyzer is None or document.tree is None:
        return []
    tree = document.tree
    found = []
    for symbol in document.analyzer.globals.names.values():
        if place(symbol.pos.line)[0] != 0 or symbol.pos.line == 0:
            continue
        if isinstance(symbol, RoutineSymbol):
            inner = tuple(Outline(v.name, "variable", str(v.type), v.pos.line, v.pos.line)
                          for v in symbol.params + symbol.locals if place(v.pos.line)[0] == 0)
            end = last_line_of(symbol.decl)
            found.append(Outline(symbol.name, "function", heading(symbol), symbol.pos.line, end, inner))
        else:
            found.append(Outline(symbol.name, completion_of(symbol).kind, completion_of(symbol).detail,
                                 symbol.pos.line, symbol.pos.line))
    found.sort(key=lambda o: o.line)
    kind = "unit" if isinstance(tree, ast.Unit) else "program"
    return [Outline(tree.name, kind, kind, tree.line, document.text.removesuffix("\n").count("\n") + 1, tuple(found))]


def last_line_of(node: ast.Node) -> int:
    return max(place(n.line)[1] for n in ast.walk(node))


# The kinds of semantic token the server gives, in the legend's order.
TOKEN_TYPES = ["keyword", "comment", "string", "number", "operator", "variable", "parameter", "function",
               "type", "namespace", "property", "enumMember"]
# Its one modifier: a predeclared name (the vocabulary, float64, Pi), which an editor colours
# as its grammar would a library's (VS Code: support.function, support.type).
DEFAULT_LIBRARY = "defaultLibrary"


def semantic_tokens(document: Document) -> list[tuple[int, int, int, str, bool]]:
    """(line, column, length in characters, kind, whether predeclared) of each token worth
    colouring, in order; a comment or string over several lines gives one per line, as the
    editor counts them (a lone '\r' ends one there too: lines.py)."""
    named = {(o.span.line, o.span.col): o for o in document.occurrences if o.span.file == 0}
    found = []
    for token in document.tokens:
        occurrence = named.get((token.line, token.col))
        kind = token_kind(token, occurrence)
        if kind is None:
            continue
        predeclared = token.kind == "NAME" and occurrence is not None and occurrence.symbol.pos.line == 0
        for i, line in enumerate(token.text.split("\n")):
            col = token.col if i == 0 else 1
            for piece in line.split("\r"):
                if piece:
                    found.append((token.line + i, col, len(piece), kind, predeclared))
                col += len(piece) + 1
    return found


def token_kind(token: Token, occurrence: Occurrence | None) -> str | None:
    if token.kind == "comment":
        return "comment"
    if token.kind == "STRING":
        return "string"
    if token.kind in ("INT", "FLOAT"):
        return "number"
    if token.kind in KEYWORDS:
        return "keyword" if token.kind not in ("div", "mod", "and", "or", "not") else "operator"
    if token.kind == "NAME":
        symbol = occurrence.symbol if occurrence is not None else None
        if isinstance(symbol, (RoutineSymbol, BuiltinSymbol)):
            return "function"
        if isinstance(symbol, TypeSymbol):
            return "type"
        if isinstance(symbol, UnitSymbol):
            return "namespace"
        if isinstance(symbol, ConstSymbol):
            return "enumMember"
        if isinstance(symbol, VarSymbol) and symbol.role == "param":
            return "parameter"
        return "variable" if symbol is not None else None
    return None


def inlay_hints(document: Document, first: int, last: int) -> list[tuple[int, int, str]]:
    """At each call of a shape-generic routine between the lines: (line, column after the
    callee's name, `M = 2, N = 3`)."""
    if document.tree is None:
        return []
    found = []
    for call in calls(document):
        file, line = place(call.line)
        if file != 0 or not call.binding or not first <= line <= last or not isinstance(call.callee, ast.Name):
            continue
        name = call.callee
        found.append((line, name.col + len(name.ident) + (len(name.unit) + 1 if name.unit else 0),
                      ", ".join(f"{k} = {v}" for k, v in call.binding.items())))
    return sorted(found)


# ---------------------------------------------------------------- formatting and quick fixes


def formatted(document: Document) -> str | None:
    """The text as `micatool fmt` writes it, None where it does not parse (fmt leaves it)."""
    if any(d.code < 3000 for d in document.diagnostics) or document.tree is None:
        return None
    return format_source(SourceFile(document.path, document.text))


@dataclass(frozen=True)
class Fix:
    title: str
    line: int
    col: int
    end: int  # columns [col, end) of the line are replaced
    text: str


SUGGESTION = re.compile(r"did you mean '([^']+)'\?")


def quick_fixes(document: Document, diagnostic: Diagnostic) -> list[Fix]:
    """The fix a diagnostic names, as an edit: a suggested name, ':=' for '=' (or '=' for ':='), a missing
    ';', a keyword's case, a ';' before 'else' taken out."""
    line, col = diagnostic.pos.line, diagnostic.pos.col
    token = next((t for t in document.tokens if t.line == line and t.col == col), None)
    suggested = SUGGESTION.search(diagnostic.message)
    if suggested and token is not None:
        new = suggested.group(1)
        end = col + len(token.text)
        if "." in new:  # a qualified name replaces the whole of `Unit.Name`
            after = [t for t in document.tokens if (t.line, t.col) > (line, col)][:2]
            if len(after) == 2 and after[0].kind == "." and after[1].line == line:
                end = after[1].col + len(after[1].text)
        return [Fix(f"Change to '{new}'", line, col, end, new)]
    if diagnostic.code == 2007 and token is not None and token.text == "=":
        return [Fix("Change '=' to ':='", line, col, col + 1, ":=")]
    if diagnostic.code == 2007 and token is not None and token.text == ":=":  # in a condition
        return [Fix("Change ':=' to '='", line, col, col + 2, "=")]
    if diagnostic.code == 2001:
        return [Fix("Add ';'", line, col, col, ";")]
    if diagnostic.code == 2004 and token is not None:
        return [Fix(f"Change to '{token.text.lower()}'", line, col, col + len(token.text), token.text.lower())]
    if diagnostic.code == 2006:
        semicolon = [t for t in document.tokens if (t.line, t.col) < (line, col) and t.kind != "comment"]
        if semicolon and semicolon[-1].kind == ";":
            s = semicolon[-1]
            return [Fix("Remove the ';' before 'else'", s.line, s.col, s.col + 1, "")]
    return []
