"""A recursive-descent parser for valid programs: Mica source text -> ast.Program, fast.

mica.lark is the grammar, and lark's LALR parser is the one that explains a
program that is wrong (lark_parser.py turns its errors into 1xxx and 2xxx
diagnostics). lark spends about 10 microseconds a token, too slow for a large
program, so the front end first tries this parser, written by hand from the same
grammar: it builds the same tree with the same positions, and at the first thing
it does not expect (a bad character, a syntax error, a literal out of range, a
program that nests too deep) it gives up with Fallback and lark parses the file
again to say what is wrong. tests/test_parser.py holds the two to the same trees.

Each method parses one rule of mica.lark and is named after it. It also leaves
in self.height the height lark's tree would have there (a node is one more than
its tallest child; a token counts 0; a binary node's left operand that is a
binary node, one less), so a program nests too deep exactly when the lark-built
tree would.

The parser is three layers, each a class over the one before: Cursor, the token
at hand; ExpressionParser, the expression rules; Parser, the rules above them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..diagnostics import Pos
from . import ast

KEYWORDS = frozenset(
    "program const type var record end array of begin if then else for to downto do "
    "while repeat until break continue exit procedure function tracked tape address "
    "on gpu and or not div mod true false tasks spawn unit uses interface implementation initialization".split()
)

INT64_MAX = 2**63 - 1

# How deep the syntax tree may nest (a block or a call is two levels, an operand
# one): the later stages walk the tree recursively, and the C compiler limits its
# own nesting too. A chain `a + b + c ...` nests to the left, +(+(a, b), c), but
# the stages walk down it in a loop (ast.left_chain), so a binary node's left
# operand that is a binary node stands at its level. Real programs stay under 30.
MAX_NESTING = 2000


class Fallback(Exception):
    """Something this parser does not explain: lark parses the program again and says what."""


# A token with the blanks before it on its line, or a line break with the blanks
# after it. One alternative per token class of mica.lark, tried in lark's order:
# comments before '(' and '/', the malformed number before the float before the
# integer. The last two take any other character and the end of the text, so the
# scan never skips anything.
_TOKEN = re.compile("[ \t\r\f]*(?:" + "|".join([
    r"(?P<newline>\n[ \t\r\n\f]*)",
    r"(?P<comment>\{[^}]*\}|\(\*[\s\S]*?\*\)|//[^\n]*)",
    r"(?P<malformed>[0-9]+(?:\.[0-9]*)?[eE](?![+-]?[0-9])[+-]?|[0-9]+\.(?![0-9.])(?:[eE][+-]?[0-9]+)?)",
    r"(?P<FLOAT>[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)",
    r"(?P<INT>[0-9]+)",
    r"(?P<NAME>[A-Za-z_][A-Za-z0-9_]*)",
    r"(?P<STRING>'(?:[^'\n]|'')*')",
    r"(?P<punct>:=|\.\.|<=|>=|<>|[-+*/=<>()\[\],;:.])",
    r"(?P<other>[\s\S])",
    r"(?P<EOF>\Z)",
]) + ")")


# mica.lark's expression rules, loosest first, and the binary operators of each.
OR, AND, NOT, COMPARISON, SUM, PRODUCT, UNARY = range(1, 8)
_BINDING = {"or": OR, "and": AND, "=": COMPARISON, "<>": COMPARISON, "<": COMPARISON, "<=": COMPARISON,
            ">": COMPARISON, ">=": COMPARISON, "+": SUM, "-": SUM, "*": PRODUCT, "/": PRODUCT, "div": PRODUCT,
            "mod": PRODUCT}
_ATOM_STARTS = frozenset(["INT", "FLOAT", "STRING", "true", "false", "NAME", "(", "["])


@dataclass(frozen=True, slots=True)
class Token:
    """A token as scan gives it: its kind (a keyword's or a punctuation mark's is
    its own text; 'comment', 'NAME', 'INT', 'FLOAT', 'STRING'; 'malformed' and
    'other' for text no token is), its text, and where it starts."""

    kind: str
    text: str
    line: int
    col: int
    offset: int


def scan(text: str) -> list[Token]:
    """Every token of text, comments included, in order (for the formatter and the
    language server, which keep what the parser skips)."""
    return list(scanning(text))


def scanning(text: str, at: tuple[int, int, int] = (0, 1, 0)) -> Iterator[Token]:
    """The tokens of text one by one, as far as they are wanted (for the repairs, which
    scan again only what a repair changed). `at` is where to start, as Parser takes it:
    the offset, its line and the offset that line starts at."""
    offset, line, line_start = at
    for match in _TOKEN.finditer(text, offset):
        kind = match.lastgroup
        value = match.group(kind)
        start = match.start(kind)
        if kind == "EOF":
            return
        if kind != "newline":
            if kind == "NAME" and value in KEYWORDS or kind == "punct":
                kind = value
            yield Token(kind, value, line, start - line_start + 1, start)
        breaks = value.count("\n")
        if breaks:
            line += breaks
            line_start = start + value.rindex("\n") + 1


def parse(text: str) -> ast.Program | ast.Unit:
    """The file's tree, or Fallback (RecursionError on absurd nesting) when lark must speak."""
    tree = Parser(text).start()
    if isinstance(tree, ast.Program):
        tree.body = list(tree.body)
    return tree


def parse_streaming(text: str) -> ast.Program | ast.Unit:
    """The program's tree with its statements still to be read: the main body and
    each routine's body parse as a checker walks them, once, so it holds one
    statement at a time, not a 10 MB program's millions of nodes. Fallback and
    RecursionError come where parse raises them, while the bodies are read.
    A unit is parsed whole."""
    return Parser(text, skim=True).start()


class Cursor:
    """The token the parser is at (kind, value, line, col), each read from the text
    only when the one before is taken."""

    def __init__(self, text: str, at: tuple[int, int, int], names: dict[str, str] | None):
        offset, self.line, self._line_start = at
        self._text = text
        self._scan = _TOKEN.scanner(text, offset).match
        self._names: dict[str, str] = {} if names is None else names  # equal names share one string
        self.advance()

    def advance(self) -> None:
        """On to the next token: its kind (a keyword's or a punctuation mark's is its
        own text), its text, and the line and column it starts at. Never past 'EOF'."""
        while True:
            match = self._scan()
            group = match.lastgroup
            value = match.group(group)
            if group == "NAME":
                if value in KEYWORDS:
                    self.kind = value
                else:
                    self.kind = "NAME"
                    value = self._names.setdefault(value, value)
            elif group == "punct":
                self.kind = value
            elif group == "newline" or group == "comment":
                breaks = value.count("\n")
                if breaks:
                    self.line += breaks
                    self._line_start = match.start(group) + value.rindex("\n") + 1
                continue
            elif group == "malformed" or group == "other":
                raise Fallback
            else:
                self.kind = group
            self.value = value
            self.col = match.start(group) - self._line_start + 1
            return

    def expect(self, kind: str) -> None:
        if self.kind != kind:
            raise Fallback
        self.advance()

    def take(self, kind: str) -> tuple[str, int, int]:
        """The current token's text, line and column; it must be of `kind`."""
        if self.kind != kind:
            raise Fallback
        taken = self.value, self.line, self.col
        self.advance()
        return taken

    def here(self) -> tuple[int, int, int]:
        """Where the current token starts: its offset, its line, and where that line starts."""
        return self._line_start + self.col - 1, self.line, self._line_start


class ExpressionParser(Cursor):
    """mica.lark's expression rules, and self.height, the height of what was parsed last."""

    def __init__(self, text: str, at: tuple[int, int, int], names: dict[str, str] | None):
        super().__init__(text, at, names)
        self.units: set[str] = set()  # the units a qualified name may name: those used so far, and this one
        self.height = 0
        self.too_large: list[ast.IntLit] = []  # 2**63: fine only as -9223372036854775808

    def expr(self, level: int = OR):
        """An expression of mica.lark's rule at `level` (expr, and_expr, not_expr,
        comparison, sum, product): its operators bind at least that tightly. Each
        operand left of an operator is a rule of its own; an operator extends it
        when it binds no more tightly than that rule (comparisons do not chain)."""
        if self.kind == "not" and level <= NOT:
            line, col = self.line, self.col
            self.advance()
            operand = self.expr(NOT)
            self.height += 1
            left, rule = ast.Unary(line, col, "not", operand), NOT
        else:
            left, rule = self.unary(), UNARY
        while True:
            op = self.kind
            binding = _BINDING.get(op, 0)
            if binding < level or binding > rule or binding == rule == COMPARISON:
                return left
            tallest = self.height
            line, col = self.line, self.col
            self.advance()
            right = self.expr(binding + 1)
            self.height = max(tallest - (left.__class__ is ast.Binary), self.height) + 1
            left, rule = ast.Binary(line, col, op, left, right), binding

    def unary(self):
        kind = self.kind
        if kind != "-" and kind != "+":
            return self.postfix()
        line, col = self.line, self.col
        self.advance()
        operand = self.unary()
        self.height += 1
        if kind == "-" and any(literal is operand for literal in self.too_large):  # the most negative integer
            self.too_large = [literal for literal in self.too_large if literal is not operand]
            return ast.IntLit(line, col, -operand.value)
        return ast.Unary(line, col, kind, operand)

    def postfix(self):
        base = self.atom()
        while True:
            kind = self.kind
            if kind == "[":
                tallest = self.height
                self.advance()
                indices = self.expr_list()
                self.expect("]")
                self.height = max(tallest, self.height) + 1
                base = ast.Index(base.line, base.col, base, indices)
            elif kind == ".":
                self.advance()
                name, line, col = self.take("NAME")
                self.height += 1
                if base.__class__ is ast.Name and base.unit is None and base.ident in self.units:
                    base = ast.Name(base.line, base.col, name, unit=base.ident)  # a unit's name, qualified
                else:
                    base = ast.Field(line, col, base, name)
            elif kind == "(":
                tallest = self.height
                self.advance()
                args = []
                if self.kind != ")":
                    args = self.arg_list()
                    tallest = max(tallest, self.height)
                self.expect(")")
                self.height = tallest + 1
                base = ast.Call(base.line, base.col, base, args)
            else:
                return base

    def atom(self):
        kind, value = self.kind, self.value
        if kind == "NAME":
            node = ast.Name(self.line, self.col, value)
        elif kind == "INT":
            node = self.int_lit()
        elif kind == "FLOAT":
            number = float(value)
            if number == float("inf"):
                raise Fallback
            node = ast.FloatLit(self.line, self.col, value, number)
        elif kind == "(":
            self.advance()
            inner = self.expr()
            self.expect(")")
            return inner
        elif kind == "[":
            line, col = self.line, self.col
            self.advance()
            items = self.expr_list()
            self.expect("]")
            self.height += 1
            return ast.TensorLit(line, col, items)
        elif kind == "STRING":
            node = ast.StrLit(self.line, self.col, value[1:-1].replace("''", "'"))
        elif kind == "true" or kind == "false":
            node = ast.BoolLit(self.line, self.col, kind == "true")
        else:
            raise Fallback
        self.advance()
        self.height = 1
        return node

    def int_lit(self) -> ast.IntLit:
        text = self.value
        if len(text) > 19:  # int() refuses more than 4300 digits; lark's parse says 1004
            text = text.lstrip("0") or "0"
            if len(text) > 19:
                raise Fallback
        value = int(text)
        literal = ast.IntLit(self.line, self.col, value)
        if value > INT64_MAX:
            if value != INT64_MAX + 1:
                raise Fallback
            self.too_large.append(literal)
        return literal

    def expr_list(self) -> list:
        return self.comma_list(self.expr)

    def arg_list(self) -> list:
        return self.comma_list(self.arg)

    def comma_list(self, item) -> list:
        """One or more of `item`, separated by commas; the height is one more than the tallest."""
        items = [item()]
        tallest = self.height
        while self.kind == ",":
            self.advance()
            items.append(item())
            tallest = max(tallest, self.height)
        self.height = tallest + 1
        return items

    def arg(self):
        if self.kind == "address":
            line, col = self.line, self.col
            self.advance()
            place = self.postfix()
            self.height += 1
            return ast.AddressArg(line, col, place)
        value = self.expr()
        if self.kind != ":":
            return value
        tallest = self.height
        self.advance()
        width = self.expr()
        tallest = max(tallest, self.height)
        decimals = None
        if self.kind == ":":
            self.advance()
            decimals = self.expr()
            tallest = max(tallest, self.height)
        self.height = tallest + 1
        return ast.FormatArg(value.line, value.col, value, width, decimals)


class Parser(ExpressionParser):
    """A file's rules above its expressions: the program or unit, declarations, types, statements."""

    def __init__(self, text: str, skim: bool = False, at: tuple[int, int, int] = (0, 1, 0),
                 names: dict[str, str] | None = None):
        """skim: skip routine bodies, to be parsed when read (LazyBody). `at` is where to
        start: the offset, its line and the offset that line starts at."""
        super().__init__(text, at, names)
        self.skim = skim
        self.unread = 0  # skimmed bodies not yet read
        self.read_tallest = 0  # the tallest routine among the bodies read

    # -- program and declarations

    def start(self) -> ast.Program | ast.Unit:
        if self.kind == "unit":
            return self.unit()
        self.expect("program")
        name, line, col = self.take("NAME")
        self.expect(";")
        uses, tallest = self.uses()
        decls, sections = self.declarations(self.routine)
        self.expect("begin")
        return ast.Program(line, col, name, decls, self.main_body(max(tallest, sections)), uses=uses)

    def unit(self) -> ast.Unit:
        """A unit is parsed whole, also by parse_streaming: its bodies are what other files call."""
        self.skim = False
        self.advance()
        name, line, col = self.take("NAME")
        self.expect(";")
        self.units.add(name)
        self.expect("interface")
        interface_uses, tallest = self.uses()
        interface, height = self.declarations(self.heading)
        tallest = max(tallest, height)
        self.expect("implementation")
        implementation_uses, height = self.uses()
        tallest = max(tallest, height)
        implementation, height = self.declarations(self.routine)
        tallest = max(tallest, height, 1)  # the heading, over the unit's name
        initialization = []
        if self.kind == "initialization":
            self.advance()
            initialization = self.stmt_list()
            tallest = max(tallest, self.height)
        end_line = self.line
        self.expect("end")
        self.expect(".")
        self.height = tallest + 1
        if self.kind != "EOF" or self.too_large or self.height > MAX_NESTING:
            raise Fallback
        return ast.Unit(line, col, name, interface_uses, interface, implementation_uses, implementation,
                        initialization, end_line=end_line)

    def uses(self) -> tuple[list[ast.Use], int]:
        """An optional uses clause: its units, and its height (0 when there is none)."""
        if self.kind != "uses":
            return [], 0
        self.advance()
        names = self.name_list()
        self.expect(";")
        self.units.update(name for name, _, _ in names)
        return [ast.Use(line, col, name) for name, line, col in names], 2

    def main_body(self, tallest: int):
        """The main block's statements, one at a time, then the end of the program."""
        yield from self.statements()
        tallest = max(tallest, self.height, self.read_tallest)
        self.expect("end")
        self.expect(".")
        self.height = tallest + 1
        if self.kind != "EOF" or self.too_large or self.height > MAX_NESTING or self.unread:
            raise Fallback

    def declarations(self, routine=None) -> tuple[list, int]:
        """The sections before a `begin`, flattened, and the tallest one's height. `routine`
        parses a procedure or function among them (a whole one, or an interface's heading)."""
        decls, tallest = [], 0
        while True:
            kind = self.kind
            if kind == "const":
                decls.extend(self.section(self.const_decl))
            elif kind == "type":
                decls.extend(self.section(self.type_decl))
            elif kind == "var":
                decls.extend(self.section(self.var_decl))
            elif routine is not None and (kind == "procedure" or kind == "function"):
                decls.append(routine())
            else:
                return decls, tallest
            tallest = max(tallest, self.height)

    def section(self, declaration) -> list:
        """const_section, type_section, var_section: a keyword, then one declaration or more."""
        self.advance()
        decls, tallest = [], 0
        while True:
            decls.append(declaration())
            tallest = max(tallest, self.height)
            if self.kind != "NAME":
                self.height = tallest + 1
                return decls

    def const_decl(self) -> ast.ConstDecl:
        name, line, col = self.take("NAME")
        type_expr, tallest = None, 0
        if self.kind == ":":
            self.advance()
            type_expr = self.type_expr()
            tallest = self.height
        self.expect("=")
        value = self.expr()
        self.expect(";")
        self.height = max(tallest, self.height) + 1
        return ast.ConstDecl(line, col, name, type_expr, value)

    def type_decl(self) -> ast.TypeDecl:
        name, line, col = self.take("NAME")
        self.expect("=")
        type_expr = self.type_expr()
        self.expect(";")
        self.height += 1
        return ast.TypeDecl(line, col, name, type_expr)

    def var_decl(self) -> ast.VarDecl:
        names = self.name_list()
        self.expect(":")
        type_expr = self.type_expr()
        tallest = max(1, self.height)  # the name list is a node of height 1
        init = None
        if self.kind == "=":
            self.advance()
            init = self.expr()
            tallest = max(tallest, self.height)
        self.expect(";")
        self.height = tallest + 1
        _, line, col = names[0]
        return ast.VarDecl(line, col, [name for name, _, _ in names], type_expr, init)

    def name_list(self) -> list[tuple[str, int, int]]:
        names = [self.take("NAME")]
        while self.kind == ",":
            self.advance()
            names.append(self.take("NAME"))
        self.height = 1
        return names

    def heading(self) -> ast.Heading:
        """procedure_heading, function_heading: a routine's heading in a unit's interface."""
        kind, name, line, col, params, result, tallest = self.signature()
        self.height = tallest + 1
        return ast.Heading(line, col, kind, name, params, result)

    def signature(self):
        """A routine's kind, name and position, parameters, result type, and their
        height, through the ';' that ends its heading."""
        kind = self.kind
        self.advance()
        name, line, col = self.take("NAME")
        params, tallest = [], 0
        if self.kind == "(":
            params = self.params()
            tallest = self.height
        result = None
        if kind == "function":
            self.expect(":")
            result = self.type_expr()
            tallest = max(tallest, self.height)
        self.expect(";")
        return kind, name, line, col, params, result, tallest

    def routine(self) -> ast.Routine:
        kind, name, line, col, params, result, tallest = self.signature()
        decls, sections = self.declarations()
        self.expect("begin")
        if self.skim:
            body = self.skim_body(max(tallest, sections))
            self.height = 0  # the routine's own, counted when its body is read
        else:
            body = self.stmt_list()
            self.height = max(tallest, sections, self.height) + 1
        self.expect("end")
        self.expect(";")
        return ast.Routine(line, col, kind, name, params, result, decls, body)

    def skim_body(self, tallest: int) -> LazyBody:
        """Step over a routine's statements to their `end`, counting the words that open
        an `end`; LazyBody parses them when they are read, and checks it ends there too."""
        start, depth = self.here(), 1
        while True:
            if self.kind in ("begin", "record", "tape", "tasks"):
                depth += 1
            elif self.kind == "end":
                depth -= 1
                if depth == 0:
                    break
            elif self.kind == "EOF":
                raise Fallback
            self.advance()
        self.unread += 1
        return LazyBody(self, start, self.here()[0], tallest)

    def params(self) -> list[ast.Param]:
        self.expect("(")
        params, tallest = [], 0
        if self.kind != ")":
            while True:
                params.extend(self.param_group())
                tallest = max(tallest, self.height)
                if self.kind != ";":
                    break
                self.advance()
        self.expect(")")
        self.height = tallest + 1
        return params

    def param_group(self) -> list[ast.Param]:
        by_address = self.kind == "address"
        if by_address:
            self.advance()
        names = self.name_list()
        self.expect(":")
        type_expr = self.type_expr()
        self.height = max(1, self.height) + 1
        return [ast.Param(line, col, name, type_expr, by_address) for name, line, col in names]

    # -- types

    def type_expr(self):
        inner = self.plain_type()
        if self.kind != "on":
            return inner
        self.advance()
        self.expect("gpu")
        self.height += 1
        return ast.OnGpuType(inner.line, inner.col, inner)

    def plain_type(self):
        kind, line, col = self.kind, self.line, self.col
        if kind == "NAME":
            name = self.value
            self.advance()
            if self.kind == "[":
                self.advance()
                dims = self.expr_list()
                tallest = self.height
                self.expect("]")
                self.expect("of")
                element = self.type_expr()
                self.height = max(tallest, self.height) + 1
                return ast.ShapedType(line, col, name, dims, element)
            if self.kind == "of":
                self.advance()
                element = self.type_expr()
                self.height += 1
                return ast.DynamicShapedType(line, col, name, element)
            self.height = 1
            if self.kind == ".":
                self.advance()
                return ast.NamedType(line, col, self.take("NAME")[0], unit=name)
            return ast.NamedType(line, col, name)
        if kind == "array":
            self.advance()
            if self.kind == "of":
                self.advance()
                element = self.type_expr()
                self.height += 1
                return ast.DynamicArrayType(line, col, element)
            self.expect("[")
            low = self.expr()
            tallest = self.height
            self.expect("..")
            high = self.expr()
            tallest = max(tallest, self.height)
            self.expect("]")
            self.expect("of")
            element = self.type_expr()
            self.height = max(tallest, self.height) + 1
            return ast.StaticArrayType(line, col, low, high, element)
        if kind == "record":
            self.advance()
            fields = self.field_decls()
            self.expect("end")
            self.height += 1
            return ast.RecordType(line, col, fields)
        if kind == "tracked" or kind == "address":
            self.advance()
            inner = self.type_expr()
            self.height += 1
            return ast.TrackedType(line, col, inner) if kind == "tracked" else ast.AddressType(line, col, inner)
        raise Fallback

    def field_decls(self) -> list[ast.FieldDecl]:
        fields, tallest = [], 0
        while self.kind == "NAME":
            names = self.name_list()
            self.expect(":")
            type_expr = self.type_expr()
            tallest = max(tallest, max(1, self.height) + 1)  # field_decl over its name list and type
            _, line, col = names[0]
            fields.append(ast.FieldDecl(line, col, [name for name, _, _ in names], type_expr))
            if self.kind != ";":
                break
            self.advance()
        self.height = tallest + 1
        return fields

    # -- statements

    def read_body(self, body: LazyBody):
        """A skimmed body's statements, parsed now; then the routine counts toward the
        program's height, as parse would have counted it."""
        reader = Parser(self._text, at=body.start, names=self._names)
        reader.units = self.units
        yield from reader.statements()
        if reader.kind != "end" or reader.here()[0] != body.end or reader.too_large:
            raise Fallback
        body.read = True
        self.unread -= 1
        self.read_tallest = max(self.read_tallest, max(body.tallest, reader.height) + 1)

    def stmt_list(self) -> list:
        return list(self.statements())

    def statements(self):
        """stmt_list's statements as they are parsed (empty ones left out); then
        self.height is the list's."""
        tallest = 0
        while True:
            stmt = self.stmt()
            if self.height > tallest:
                tallest = self.height
            if stmt.__class__ is not ast.Empty:
                yield stmt
            if self.kind != ";":
                self.height = tallest + 1
                return
            self.advance()

    def stmt(self):
        kind = self.kind
        if kind in _ATOM_STARTS:
            target = self.postfix()
            if self.kind != ":=":
                self.height += 1
                return ast.CallStmt(target.line, target.col, target)
            tallest = self.height
            self.advance()
            value = self.expr()
            self.height = max(tallest, self.height) + 1
            return ast.Assign(target.line, target.col, target, value)
        if kind == "begin" or kind == "tasks":
            line, col = self.line, self.col
            self.advance()
            body = self.stmt_list()
            self.expect("end")
            self.height += 1
            return (ast.Compound if kind == "begin" else ast.Tasks)(line, col, body)
        if kind == "if":
            return self.if_stmt()
        if kind == "for":
            return self.for_stmt()
        if kind == "while":
            line, col = self.line, self.col
            self.advance()
            cond = self.expr()
            tallest = self.height
            self.expect("do")
            body = self.stmt()
            self.height = max(tallest, self.height) + 1
            return ast.While(line, col, cond, body)
        if kind == "repeat":
            line, col = self.line, self.col
            self.advance()
            body = self.stmt_list()
            tallest = self.height
            self.expect("until")
            cond = self.expr()
            self.height = max(tallest, self.height) + 1
            return ast.Repeat(line, col, body, cond)
        if kind == "tape":
            line, col = self.line, self.col
            self.advance()
            body = self.stmt_list()
            end = Pos(self.line, self.col)
            self.expect("end")
            self.height += 1
            return ast.Tape(line, col, body, end)
        if kind == "spawn":
            line, col = self.line, self.col
            self.advance()
            call = self.postfix()
            self.height += 1
            return ast.Spawn(line, col, call)
        self.height = 1
        if kind == "break":
            line, col = self.line, self.col
            self.advance()
            return ast.Break(line, col)
        if kind == "continue":
            line, col = self.line, self.col
            self.advance()
            return ast.Continue(line, col)
        if kind == "exit":
            line, col = self.line, self.col
            self.advance()
            return ast.Exit(line, col)
        return ast.Empty(0, 0)  # what follows must end a statement, or its rule falls back

    def if_stmt(self) -> ast.If:
        line, col = self.line, self.col
        self.advance()
        cond = self.expr()
        tallest = self.height
        self.expect("then")
        then = self.stmt()
        tallest = max(tallest, self.height)
        otherwise = None
        if self.kind == "else":  # an else belongs to the nearest if, as lark's shift decides
            self.advance()
            otherwise = self.stmt()
            tallest = max(tallest, self.height)
        self.height = tallest + 1
        return ast.If(line, col, cond, then, otherwise)

    def for_stmt(self) -> ast.For:
        line, col = self.line, self.col
        self.advance()
        name, name_line, name_col = self.take("NAME")
        self.expect(":=")
        start = self.expr()
        tallest = self.height
        downward = self.kind == "downto"
        if not downward:
            self.expect("to")
        else:
            self.advance()
        stop = self.expr()
        tallest = max(tallest, self.height)
        self.expect("do")
        body = self.stmt()
        self.height = max(tallest, self.height) + 1
        return ast.For(line, col, ast.Name(name_line, name_col, name), start, stop, downward, body)


class LazyBody:
    """A routine's statements, skimmed by parse_streaming: iterating parses them."""

    __slots__ = ("parser", "start", "end", "tallest", "read")

    def __init__(self, parser: Parser, start: tuple[int, int, int], end: int, tallest: int):
        self.parser, self.start, self.end, self.tallest = parser, start, end, tallest
        self.read = False  # to its end, once

    def __iter__(self):
        return self.parser.read_body(self)


def read_rest(program: ast.Program | ast.Unit) -> None:
    """Parse, keeping nothing, whatever of a parse_streaming program its checker left
    unread (it stopped early): Fallback if a syntax error waits there."""
    if isinstance(program, ast.Unit):
        return  # parsed whole
    for decl in program.decls:
        if isinstance(decl, ast.Routine) and isinstance(decl.body, LazyBody) and not decl.body.read:
            for _ in decl.body:
                pass
    for _ in program.body:
        pass
