"""The reference parser: lark's LALR parser over mica.lark, which explains what is wrong.

A valid program is parsed by descent.py; where that one gives up, this parses
the program again, calling the Builder below as it reduces each rule to build
the same dataclasses of ast.py, and turns what lark finds into numbered
diagnostics: lexical errors 1xxx, syntax errors 2xxx. No later stage sees lark.
"""

from __future__ import annotations

import bisect
import functools
from importlib import resources
from types import SimpleNamespace

import lark
from lark import Token

from ..diagnostics import ELLIPSIS, MAX_ERRORS, CompileError, Diagnostic, Hint, Pos, Reporter, SourceFile
from . import ast
from .descent import INT64_MAX, KEYWORDS, MAX_NESTING
from .lexical import at_character, lexical_errors
from .reparse import Reparser
from .repair import RepairedText
from .slips import RETURN_HELP


def _grammar() -> str:
    return resources.files(__package__).joinpath("mica.lark").read_text()


@functools.cache
def _parser() -> tuple[lark.Lark, Builder, Reparser]:
    """The LALR parser, calling the Builder as it reduces each rule: no parse tree is built;
    and the same parser resuming where a repair changed the text."""
    builder = Builder()
    parser = lark.Lark(_grammar(), parser="lalr", lexer="basic", maybe_placeholders=True,
                       transformer=builder._callbacks())
    return parser, builder, Reparser(parser, builder)


def _lark() -> lark.Lark:
    return _parser()[0]


def parse(source: SourceFile) -> ast.Program | ast.Unit:
    """The file's tree, or the CompileError that says what is wrong with it: every
    syntax error, each repaired so the parse can go on to the next."""
    tree, diagnostics, _ = parse_recovering(source)
    if diagnostics:
        raise CompileError(diagnostics, stopped=len(diagnostics) >= MAX_ERRORS)
    return tree


def parse_recovering(source: SourceFile) -> tuple[ast.Program | ast.Unit | None, list[Diagnostic], RepairedText]:
    """The file's tree, a diagnostic for each error it holds, and the repaired text.
    Each error is repaired in a copy of the text (repair.py: the usual fix where
    the error says it, else the statement or declaration around it taken out) and
    the copy parsed again, up to MAX_ERRORS errors. The tree is the repaired
    text's, None where no repair lets the parse reach the end, or where the errors
    reached MAX_ERRORS."""
    reporter = Reporter(source)
    text = RepairedText(source.text)
    try:
        return _recover(source, reporter, text)
    except CompileError as e:  # the reporter's hundredth error
        return None, e.diagnostics, text


def _recover(source: SourceFile, reporter: Reporter, text: RepairedText):
    lexical = lexical_errors(source.text)
    for error in lexical:
        reporter.error(error.pos, error.code, error.message, error.hints)
    text.mend_lexical(lexical)
    _, builder, parser = _parser()
    last = None
    told = -1
    while told < len(reporter.diagnostics) < MAX_ERRORS:  # each pass tells a new error, or the repairs go round
        told = len(reporter.diagnostics)
        view = SourceFile(source.name, text.text)
        mapped = MappedReporter(reporter, text)
        builder._start(mapped)
        held = HeldReporter()  # an error is told only if it is the file's own, not a cascade
        changed_from, text.changed_from = text.changed_from, None
        try:
            program = parser.parse(text.text, changed_from)
        except lark.exceptions.UnexpectedCharacters as e:
            # The lexical pass mended every other: what stops the lexer is the comment that
            # runs to the end of the file, already told (and so told again to no effect).
            error = at_character(view.text, e.pos_in_stream, Pos(e.line, e.column))
            mapped.error(error.pos, error.code, error.message, error.hints)
            break
        except lark.exceptions.UnexpectedToken as e:
            at = Pos(e.token.line, e.token.column) if e.token.type != "$END" else _end_pos(view)
            if text.past_unclosed_comment(at) or (e.token.type == "$END" and text.ends_in_a_mend()):
                break
            if e.token.type != "$END" and text.take_out_follow_on(e.token.start_pos):
                told, last = -1, None  # a mend's doing, taken out untold; each takes out a token or more
                continue
            code, mend = _syntax_error(held, view, e, parser.tokens.seen)
            where = (e.token.start_pos, code)  # the same error again: the repair did not take
            if held.cascades(text) or where == last:
                break
            held.tell(mapped)
            if mend is not None:
                text.mend(*mend)
            elif e.token.type == "$END" or not text.repair_token(e.token, code):
                break
        except lark.exceptions.UnexpectedEOF as e:  # raised by some lark paths instead of $END tokens
            if text.unclosed_comment is None:
                held.error(_end_pos(view), 2002, "unexpected end of file" + _expected_text(e.expected))
            if not held.cascades(text):
                held.tell(mapped)
            break
        else:
            if builder._height(program) > MAX_NESTING:
                _check_nesting(mapped, _tree_parser().parse(text.text))
            builder._report_too_large()
            diagnostics = CompileError(reporter.diagnostics).diagnostics
            return (program if not any(d.code == 2010 for d in diagnostics) else None), diagnostics, text
        last = where
    return None, CompileError(reporter.diagnostics).diagnostics, text


class HeldReporter:
    """An error held back until it is known not to be a cascade: right after code a
    repair took out (the next line or before), it is most likely that repair's own
    doing, and the recovery stops there instead of reporting it and what follows."""

    def __init__(self):
        self.held: list[tuple[Pos, int, str, tuple[Hint, ...]]] = []

    def error(self, pos: Pos, code: int, message: str, hints: tuple[Hint, ...] = ()) -> None:
        self.held.append((pos, code, message, hints))

    def cascades(self, text: RepairedText) -> bool:
        return any(text.taken_out_to is not None and pos.line <= text.taken_out_to + 1 for pos, *_ in self.held)

    def tell(self, reporter) -> None:
        for held in self.held:
            reporter.error(*held)


class MappedReporter:
    """A reporter for the repaired text that reports at the same places of the text as written."""

    def __init__(self, reporter: Reporter, text: RepairedText):
        self.reporter, self.text = reporter, text

    def error(self, pos: Pos, code: int, message: str, hints: tuple[Hint, ...] = ()) -> None:
        self.reporter.error(self.text.original(pos), code, message, hints)


# ---------------------------------------------------------------- errors

@functools.cache
def _tree_parser() -> lark.Lark:
    """A parser that builds lark's tree, whose nodes know their extent: only to say where a
    program that nests too deep does so, which the Builder sees only from below."""
    return lark.Lark(_grammar(), parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True)


def _check_nesting(reporter: Reporter, tree: lark.Tree) -> None:
    deepest, stack = None, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING and not node.meta.empty:
            deepest = node
            break
        stack.extend((child, depth + (not chained(node, child))) for child in node.children
                     if isinstance(child, lark.Tree))
    if deepest is not None:
        reporter.error(Pos(deepest.meta.line, deepest.meta.column), 2010,
                       f"the program nests more than {MAX_NESTING} levels deep here; split the expression or the "
                       f"blocks into smaller pieces")


def chained(node: lark.Tree, child: lark.Tree) -> bool:
    """A binary node's left operand that is a binary node: a chain's link, at its parent's level."""
    return node.data == "binary" and child.data == "binary" and child is node.children[0]


_TERMINAL_WORDS = {"NAME": "a name", "INT": "an integer", "FLOAT": "a float", "STRING": "a string",
                   "$END": "end of file"}


def _describe_terminal(name: str) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name
    if isinstance(pattern, lark.lexer.PatternStr):
        return f"'{pattern.value}'"
    return name.lower()


def _expected_text(expected) -> str:
    if not expected:
        return ""
    words = sorted({_describe_terminal(t) for t in expected})
    if len(words) > 6:
        return ""
    if len(words) == 1:
        return f"; expected {words[0]}"
    return "; expected " + ", ".join(words[:-1]) + " or " + words[-1]


def _token_text(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    return f"'{token.value}'"


def _end_pos(source: SourceFile) -> Pos:
    """Just after the last line's text: a final line break opens no line of its own."""
    return source.pos_at(len(source.text.removesuffix("\n").removesuffix("\r")))


# A fix a syntax error's diagnostic names, as repair.RepairedText.mend makes it: the
# text from one offset to another (of the text parsed) becomes this text.
Mend = tuple[int, int, str]


def _syntax_error(reporter, source: SourceFile, e: lark.exceptions.UnexpectedToken,
                  seen: list[Token]) -> tuple[int, Mend | None]:
    """Report the token the parser could not take; the code it was given, and the mend
    that fixes it where the diagnostic names one. `seen` are the tokens the lexer
    handed out, the one before e.token among them."""
    token = e.token
    expected = set(e.expected)
    if token.type == "$END":
        reporter.error(_end_pos(source), 2002, "unexpected end of file" + _expected_text(expected))
        return 2002, None
    pos = Pos(token.line, token.column)
    found = _token_text(token)
    if token.type == "NAME" and token.value.lower() in KEYWORDS and token.value not in KEYWORDS:
        reporter.error(pos, 2004, f"'{token.value}' is not a keyword: keywords are lowercase ('{token.value.lower()}')")
        return 2004, None
    if token.value == "else" and "SEMICOLON" in expected:
        reporter.error(pos, 2006, "';' before 'else' ends the if statement; remove the ';'")
        return 2006, None
    if token.value in KEYWORDS and "NAME" in expected:
        reporter.error(pos, 2005, f"'{token.value}' is a reserved keyword and cannot be used as a name here")
        return 2005, None
    if token.value == "=" and _expects(expected, ":="):
        reporter.error(pos, 2007, "'=' compares; assignment is ':='")
        return 2007, None
    slip = _other_language(source, token, expected, seen)
    if slip is not None:
        where, code, message, hint, mend = slip
        reporter.error(where, code, message, (hint,) if hint else ())
        return code, mend
    if "COLON" in expected and token.type == "NAME" and expected <= {"COLON", "COMMA", "SEMICOLON"}:  # `var x integer`
        reporter.error(pos, 2003, f"expected ':' before {found}: a declaration gives a name its type after ':'")
        return 2003, None
    before = _token_before(seen, token) if "SEMICOLON" in expected else None  # where a missing ';' belongs
    if "SEMICOLON" in expected and token.type != "DOT" and (before is None or before.type != "SEMICOLON"):
        where = Pos(before.end_line, before.end_column) if before is not None else pos
        hints = (Hint.help(RETURN_HELP),) if before is not None and before.value == "return" else ()
        reporter.error(where, 2001, f"expected ';' before {found}", hints)
        return 2001, None
    if "DOT" in expected and len(expected) == 1:
        reporter.error(pos, 2009, f"expected '.' after the program's final 'end', found {found}")
        return 2009, None
    reporter.error(pos, 2003, f"unexpected {found}" + _expected_text(expected))
    return 2003, None


# Where a statement begins: after one of these (as lark names them).
_STATEMENT_AFTER = frozenset(["SEMICOLON", "BEGIN", "THEN", "DO", "ELSE", "REPEAT", "TAPE", "TASKS", "END"])
# The headers whose end a keyword marks, and the keyword; `until` opens a condition too.
_HEADERS = {"FOR": "do", "WHILE": "do", "IF": "then", "UNTIL": None}
_HEADER_HELP = {"FOR": "a for loop's header ends with 'do': 'for i := 1 to n do ...'",
                "WHILE": "a while loop's condition ends with 'do': 'while x < n do ...'",
                "IF": "an if's condition ends with 'then': 'if x > 0 then ...'"}
# Tokens that begin a statement and never go on an expression.
_STATEMENT_STARTS = frozenset(["BEGIN", "IF", "FOR", "WHILE", "REPEAT", "BREAK", "CONTINUE", "EXIT", "TAPE", "TASKS",
                               "SPAWN"])


def _other_language(source: SourceFile, token: Token, expected: set[str], seen: list[Token]):
    """A slip another language's habits make, at the token the parser could not take:
    where to report it, its code, message and help, and the mend that fixes it; None
    for any other error. '==', 'x++' and 'x += 1', ':=' where '=' belongs, and a
    missing 'do' or 'then'."""
    text, at, end = source.text, token.start_pos, token.end_pos
    if token.type == "EQUAL":
        before = _token_before(seen, token)
        if before is not None and before.type == "EQUAL" and before.end_pos == at:
            return (Pos(before.line, before.column), 2003, "unexpected '=='",
                    Hint.help("Mica compares with one '=': 'x = y'"), (at, end, ""))
    if token.type in ("PLUS", "MINUS", "STAR", "SLASH") and _expects(expected, ":="):
        op, follows = token.value, text[end:end + 1]
        if follows == "=" or follows == op and op in "+-":
            place = _statement_text(source, seen, token) or "x"
            # 'x += e' becomes 'x := x + e', its e kept; 'x++' becomes 'x := x + 1'
            added = "1" if follows == op else ""
            rest = added or text[end + 1:_line_end(text, end)].split(";")[0].strip() or "..."
            return (Pos(token.line, token.column), 2003, f"unexpected '{op}{follows}'",
                    Hint.help(f"Mica has no '{op}{follows}': write '{place} := {place} {op} {rest}'"),
                    (at, end + 1, f":= {place} {op} {added}"))
    header = _open_header(seen, token)
    if header is None:
        return None
    if token.value == ":=" and "EQUAL" in expected and header.type != "FOR":
        return (Pos(token.line, token.column), 2007, "':=' assigns; a condition compares with '='", None,
                (at, end, "="))
    keyword, before = _HEADERS[header.type], _token_before(seen, token)
    # a statement where the header should have ended: one on the next line, or one that
    # begins with a keyword, an assignment or a call
    if keyword is not None and (token.type in _STATEMENT_STARTS or token.type == "NAME" and (
            token.line > before.end_line or text[end:].lstrip(" \t")[:2] in (":=", "(", ";"))):
        return (Pos(before.end_line, before.end_column), 2003, f"expected '{keyword}' before {_token_text(token)}",
                Hint.help(_HEADER_HELP[header.type]), (before.end_pos, before.end_pos, f" {keyword}"))
    return None


def _expects(expected: set[str], text: str) -> bool:
    """Is the token of this text among those the parser expected?"""
    return f"'{text}'" in {_describe_terminal(t) for t in expected}


def _token_before(seen: list[Token], token: Token) -> Token | None:
    """The token the lexer handed out before `token`."""
    i = bisect.bisect_right(seen, token.start_pos, key=lambda t: t.end_pos)
    return seen[i - 1] if i else None


def _open_header(seen: list[Token], token: Token) -> Token | None:
    """The `for`, `while`, `if` or `until` whose header (or condition) `token` is in,
    not yet closed by its 'do' or 'then'."""
    for j in range(bisect.bisect_right(seen, token.start_pos, key=lambda t: t.end_pos) - 1, -1, -1):
        if seen[j].type in _HEADERS:
            return seen[j]
        if seen[j].type in _STATEMENT_AFTER:
            return None
    return None


def _statement_text(source: SourceFile, seen: list[Token], token: Token) -> str | None:
    """The text of the statement `token` is in, up to it, when that is on one line."""
    i = bisect.bisect_right(seen, token.start_pos, key=lambda t: t.end_pos)
    first = next((j + 1 for j in range(i - 1, -1, -1) if seen[j].type in _STATEMENT_AFTER), 0)
    if first >= i or seen[first].line != token.line:
        return None
    return source.text[seen[first].start_pos:token.start_pos].strip()


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end == -1 else end


# ---------------------------------------------------------------- rules -> AST


def _at(item) -> tuple[int, int]:
    """The line and column a node built from this token or node starts at."""
    if isinstance(item, Token):
        return item.line, item.column
    return item.line, item.col


def _shown_literal(token: Token) -> str:
    """A number literal as a message quotes it: a long one by its ends and its length."""
    text = token.value
    return text if len(text) <= 40 else f"{text[:16]}{ELLIPSIS}{text[-16:]} ({len(text)} characters)"


def _string_value(token: Token) -> str:
    return token.value[1:-1].replace("''", "'")


class Builder:
    """Turns each reduced rule into its ast node; reports literals out of range (1004).

    Every public method is the rule (or alias) of mica.lark it is named after and
    takes that rule's kept children. Each node's height in the tree (a leaf is 1)
    is kept until its parent is reduced, so the parser knows how deep a program nests
    (a chain's binary nodes at one level: descent.MAX_NESTING says why).
    """

    def __init__(self):
        self._heights: dict[int, int] = {}  # id of a node not yet given to a parent -> its height

    def _start(self, reporter: Reporter) -> None:
        self.reporter = reporter
        self.too_large: list[ast.IntLit] = []  # 2**63: fine only as -9223372036854775808
        self.units: set[str] = set()  # the units a qualified name may name: those used so far, and this one
        self._heights.clear()

    def _saved(self) -> tuple:
        """What the reductions so far have left in the Builder, for _restore to bring back."""
        return dict(self._heights), list(self.too_large), set(self.units)

    def _size(self) -> int:
        """About how much _saved copies: the nodes not yet given to a parent."""
        return len(self._heights)

    def _restore(self, saved: tuple) -> None:
        heights, too_large, units = saved
        self._heights.clear()  # the same dict: the callbacks hold it
        self._heights.update(heights)
        self.too_large, self.units = list(too_large), set(units)

    def _height(self, node) -> int:
        return self._heights.get(id(node), 0)

    def _callbacks(self) -> SimpleNamespace:
        rules = [name for name in vars(Builder) if not name.startswith("_")]
        return SimpleNamespace(**{name: self._reducing(getattr(self, name)) for name in rules})

    def _reducing(self, method):
        pop, heights = self._heights.pop, self._heights
        chains = method.__name__ == "binary"

        def reduce(children):
            height = 1
            for child in children:  # a token or None is never a key: all keys are live nodes
                below = pop(id(child), 0) - (chains and child is children[0] and child.__class__ is ast.Binary)
                if below >= height:
                    height = below + 1
            node = method(*children)
            heights[id(node)] = height
            return node

        return reduce

    def _report_too_large(self) -> None:
        for literal in self.too_large:
            self.reporter.error(literal.pos, 1004, f"integer literal {literal.value} does not fit in 64 bits")

    # -- program and declarations

    def program(self, name, uses, *rest):
        *sections, body = rest
        return ast.Program(*_at(name), str(name), _flatten(sections), body, uses=uses or [])

    def unit(self, heading, _interface, interface_uses, *rest):
        split = next(i for i, item in enumerate(rest) if isinstance(item, Token) and item.type == "IMPLEMENTATION")
        interface, (implementation_uses, *rest) = rest[:split], rest[split + 1:]
        *sections, _initialization, initialization, end = rest
        name, at = heading
        return ast.Unit(*at, name, interface_uses or [], _flatten(interface), implementation_uses or [],
                        _flatten(sections), initialization or [], end_line=end.line)

    def unit_heading(self, name):
        self.units.add(str(name))
        return str(name), _at(name)

    def uses(self, names):
        self.units.update(n for n, _ in names)
        return [ast.Use(*at, name) for name, at in names]

    def procedure_heading(self, name, params):
        return ast.Heading(*_at(name), "procedure", str(name), params or [], None)

    def function_heading(self, name, params, result):
        return ast.Heading(*_at(name), "function", str(name), params or [], result)

    def const_section(self, *decls):
        return list(decls)

    type_section = var_section = const_section

    def const_decl(self, name, type_expr, _equal, value):
        return ast.ConstDecl(*_at(name), str(name), type_expr, value)

    def type_decl(self, name, _equal, type_expr):
        return ast.TypeDecl(*_at(name), str(name), type_expr)

    def var_decl(self, names, type_expr, _equal, init):
        return ast.VarDecl(*names[0][1], [n for n, _ in names], type_expr, init)

    def name_list(self, *names):
        return [(str(n), _at(n)) for n in names]

    def procedure(self, name, params, *rest):
        *sections, body = rest
        return ast.Routine(*_at(name), "procedure", str(name), params or [], None, _flatten(sections), body)

    def function(self, name, params, result, *rest):
        *sections, body = rest
        return ast.Routine(*_at(name), "function", str(name), params or [], result, _flatten(sections), body)

    def params(self, *groups):
        return [p for g in groups if g is not None for p in g]

    def param_group(self, address, names, type_expr):
        return [ast.Param(*at, name, type_expr, address is not None) for name, at in names]

    # -- types

    def named_type(self, name):
        return ast.NamedType(*_at(name), str(name))

    def qualified_type(self, unit, name):
        return ast.NamedType(*_at(unit), str(name), unit=str(unit))

    def shaped_type(self, name, dims, element):
        return ast.ShapedType(*_at(name), str(name), dims, element)

    def dynamic_shaped_type(self, name, element):
        return ast.DynamicShapedType(*_at(name), str(name), element)

    def static_array_type(self, keyword, low, _dotdot, high, element):
        return ast.StaticArrayType(*_at(keyword), low, high, element)

    def dynamic_array_type(self, keyword, element):
        return ast.DynamicArrayType(*_at(keyword), element)

    def record_type(self, keyword, fields):
        return ast.RecordType(*_at(keyword), fields)

    def field_decls(self, *fields):
        return [f for f in fields if f is not None]

    def field_decl(self, names, type_expr):
        return ast.FieldDecl(*names[0][1], [n for n, _ in names], type_expr)

    def tracked_type(self, keyword, inner):
        return ast.TrackedType(*_at(keyword), inner)

    def address_type(self, keyword, inner):
        return ast.AddressType(*_at(keyword), inner)

    def on_gpu_type(self, inner):
        return ast.OnGpuType(*_at(inner), inner)

    # -- statements

    def stmt_list(self, *stmts):
        return [s for s in stmts if not isinstance(s, ast.Empty)]

    def assign(self, target, value):
        return ast.Assign(*_at(target), target, value)

    def call_stmt(self, call):
        return ast.CallStmt(*_at(call), call)

    def compound(self, keyword, body):
        return ast.Compound(*_at(keyword), body)

    def if_stmt(self, keyword, cond, then, otherwise):
        return ast.If(*_at(keyword), cond, then, otherwise)

    def for_stmt(self, keyword, var, start, direction, stop, body):
        variable = ast.Name(*_at(var), str(var))
        return ast.For(*_at(keyword), variable, start, stop, direction.type == "DOWNTO", body)

    def while_stmt(self, keyword, cond, body):
        return ast.While(*_at(keyword), cond, body)

    def repeat_stmt(self, keyword, body, cond):
        return ast.Repeat(*_at(keyword), body, cond)

    def tape_stmt(self, keyword, body, end):
        return ast.Tape(*_at(keyword), body, Pos(*_at(end)))

    def tasks_stmt(self, keyword, body):
        return ast.Tasks(*_at(keyword), body)

    def spawn_stmt(self, keyword, call):
        return ast.Spawn(*_at(keyword), call)

    def break_stmt(self, token):
        return ast.Break(*_at(token))

    def continue_stmt(self, token):
        return ast.Continue(*_at(token))

    def exit_stmt(self, token):
        return ast.Exit(*_at(token))

    def empty_stmt(self):
        return ast.Empty(0, 0)

    # -- expressions

    def binary(self, left, op, right):
        return ast.Binary(*_at(op), str(op), left, right)

    def unary(self, op, operand):
        if str(op) == "-" and any(literal is operand for literal in self.too_large):  # the most negative integer
            self.too_large = [literal for literal in self.too_large if literal is not operand]
            return ast.IntLit(*_at(op), -operand.value)
        return ast.Unary(*_at(op), str(op), operand)

    def index(self, base, indices):
        return ast.Index(*_at(base), base, indices)

    def field(self, base, name):
        if isinstance(base, ast.Name) and base.unit is None and base.ident in self.units:
            return ast.Name(base.line, base.col, str(name), unit=base.ident)  # a unit's name, qualified
        return ast.Field(*_at(name), base, str(name))

    def call(self, callee, args):
        return ast.Call(*_at(callee), callee, args or [])

    def int_lit(self, token):
        # Count the digits first: Python refuses int() of more than 4300 of them.
        digits = token.value.lstrip("0") or "0"
        too_long = len(digits) > len(str(INT64_MAX))
        value = 0 if too_long else int(digits)
        if too_long or value > INT64_MAX + 1:
            self.reporter.error(Pos(*_at(token)), 1004, f"integer literal {_shown_literal(token)} "
                                                        "does not fit in 64 bits")
            value = 0
        literal = ast.IntLit(*_at(token), value)
        if value == INT64_MAX + 1:
            self.too_large.append(literal)
        return literal

    def float_lit(self, token):
        value = float(token.value)
        if value in (float("inf"), float("-inf")):
            self.reporter.error(Pos(*_at(token)), 1006, f"float literal {_shown_literal(token)} "
                                                        "is too large for float64")
            value = 0.0
        return ast.FloatLit(*_at(token), token.value, value)

    def malformed_float(self, token):
        if "." in token.value and not token.value.split(".")[1][:1].isdigit():
            why = "a float needs digits after '.' (write 1.0, not 1.)"
        else:
            why = "an exponent needs digits (write 1.5e3, not 1.5e)"
        self.reporter.error(Pos(*_at(token)), 1005, f"malformed number: {why}")
        return ast.FloatLit(*_at(token), token.value, 0.0)

    def str_lit(self, token):
        return ast.StrLit(*_at(token), _string_value(token))

    def bool_lit(self, token):
        return ast.BoolLit(*_at(token), token.value == "true")

    def name(self, token):
        return ast.Name(*_at(token), str(token))

    def tensor_lit(self, bracket, items):
        return ast.TensorLit(*_at(bracket), items)

    def expr_list(self, *items):
        return list(items)

    def arg_list(self, *args):
        return list(args)

    def address_arg(self, keyword, place):
        return ast.AddressArg(*_at(keyword), place)

    def format_arg(self, value, width, decimals):
        return ast.FormatArg(*_at(value), value, width, decimals)


def _flatten(sections) -> list:
    """Sections parse to lists of declarations; routines stand alone."""
    flat = []
    for section in sections:
        flat.extend(section if isinstance(section, list) else [section])
    return flat
