"""Formulas: the small expressions the table of elementwise functions
(element_functions.py) writes a derivative, or a one-instruction function, in,
and their two renderings: C for the runtime (element_functions.header) and
PTX steps for the kernels (ptx/elementwise.ptx.j2), which compute the same
IEEE operations in the same order, so the bits agree.

A formula is a Python expression over x (the input) and y (the output):
integer constants, + - * / and unary -, `a if b > c else d` (one comparison:
> < >= <=), and calls: sqrt(e) and abs(e), one instruction each, or a
function of runtime_c/mica_math.h by its C name (`sigmoid(x)`, `gelu_grad(x)`).
Anything else is a FormulaError naming the formula.
"""

from __future__ import annotations

import ast as python_ast
from dataclasses import dataclass

from ...diagnostics import InternalError

NAMES = ("x", "y")
INSTRUCTIONS = ("sqrt", "abs")  # calls that are one IEEE instruction (exact, or correctly rounded)
_BINARY = {python_ast.Add: "+", python_ast.Sub: "-", python_ast.Mult: "*", python_ast.Div: "/"}
_COMPARE = {python_ast.Gt: ">", python_ast.Lt: "<", python_ast.GtE: ">=", python_ast.LtE: "<="}
_PTX = {"+": "add", "-": "sub", "*": "mul", "/": "div", ">": "gt", "<": "lt", ">=": "ge", "<=": "le"}
# C precedence, loosest first: the C text has parentheses only where it needs them
_TERNARY, _COMPARISON, _ADDITIVE, _MULTIPLICATIVE, _UNARY, _ATOM = range(6)
_LEVEL = {"+": _ADDITIVE, "-": _ADDITIVE, "*": _MULTIPLICATIVE, "/": _MULTIPLICATIVE}


class FormulaError(InternalError):
    """A formula outside the language above."""


def parse(text: str) -> python_ast.expr:
    try:
        tree = python_ast.parse(text, mode="eval").body
    except SyntaxError:
        raise FormulaError(f"the formula {text!r} is not an expression") from None
    _check(tree, text)
    return tree


def _check(node: python_ast.expr, text: str) -> None:
    if isinstance(node, python_ast.Constant) and type(node.value) is int:
        return
    if isinstance(node, python_ast.Name) and node.id in NAMES:
        return
    if isinstance(node, python_ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text)
        _check(node.right, text)
        return
    if isinstance(node, python_ast.UnaryOp) and isinstance(node.op, python_ast.USub):
        _check(node.operand, text)
        return
    if isinstance(node, python_ast.IfExp) and isinstance(node.test, python_ast.Compare) \
            and len(node.test.ops) == 1 and type(node.test.ops[0]) in _COMPARE:
        for part in (node.test.left, node.test.comparators[0], node.body, node.orelse):
            _check(part, text)
        return
    if isinstance(node, python_ast.Call) and isinstance(node.func, python_ast.Name) and len(node.args) == 1 \
            and not node.keywords:
        _check(node.args[0], text)
        return
    raise FormulaError(f"the formula {text!r} has {python_ast.unparse(node)!r}, which formulas do not write")


def calls(text: str) -> list[str]:
    """The functions the formula calls, instructions left out, in order."""
    return [n.func.id for n in python_ast.walk(parse(text))
            if isinstance(n, python_ast.Call) and n.func.id not in INSTRUCTIONS]


# ------------------------------------------------------------ C


def to_c(text: str, names: dict[str, str], call) -> str:
    """The formula as a C expression: names maps x and y to C text, call(f) gives
    the C function named f (an instruction's too)."""
    return _c(parse(text), names, call)[0]


def _c(node: python_ast.expr, names: dict[str, str], call) -> tuple[str, int]:
    """(C text, its precedence level)."""
    if isinstance(node, python_ast.Constant):
        return str(node.value), _ATOM
    if isinstance(node, python_ast.Name):
        return names[node.id], _ATOM
    if isinstance(node, python_ast.Call):
        return f"{call(node.func.id)}({_c(node.args[0], names, call)[0]})", _ATOM
    if isinstance(node, python_ast.UnaryOp):
        return "-" + _wrap(_c(node.operand, names, call), _UNARY), _UNARY
    if isinstance(node, python_ast.BinOp):
        op = _BINARY[type(node.op)]
        level = _LEVEL[op]
        left = _wrap(_c(node.left, names, call), level)
        right = _wrap(_c(node.right, names, call), level + 1)  # a - (b - c) keeps its parentheses
        return f"{left} {op} {right}", level
    test = node.test
    condition = (f"{_wrap(_c(test.left, names, call), _ADDITIVE)} {_COMPARE[type(test.ops[0])]} "
                 f"{_wrap(_c(test.comparators[0], names, call), _ADDITIVE)}")
    body, orelse = _c(node.body, names, call), _c(node.orelse, names, call)
    return f"{condition} ? {_wrap(body, _COMPARISON)} : {_wrap(orelse, _TERNARY)}", _TERNARY


def _wrap(code: tuple[str, int], level: int) -> str:
    text, own = code
    return text if own >= level else f"({text})"


# ------------------------------------------------------------ PTX


@dataclass(frozen=True)
class Step:
    """One instruction: op is add sub mul div (each .rn), sqrt (.rn), abs, neg,
    mov, setp (args: comparison, a, b), selp (args: a, b, predicate) or call
    (args: the function, its argument); dst a register or predicate."""

    op: str
    dst: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Code:
    """A formula as PTX steps: its temporaries (registers of the element type
    and predicates) to declare in a block of their own, then the steps, the
    last of which writes dst."""

    registers: tuple[str, ...]
    predicates: tuple[str, ...]
    steps: tuple[Step, ...]


def to_ptx(text: str, dst: str, names: dict[str, str], constant) -> Code:
    """The formula as PTX steps leaving its value in dst: names maps x and y to
    registers, constant(n) gives the literal of the integer n."""
    steps: list[Step] = []
    registers: list[str] = []
    predicates: list[str] = []

    def fresh(kind: list[str], prefix: str) -> str:
        kind.append(f"%fm_{prefix}{len(kind) + 1}")
        return kind[-1]

    def emit(node: python_ast.expr, into: str | None) -> str:
        """The operand holding node's value: written into `into` when given."""
        if isinstance(node, python_ast.UnaryOp) and isinstance(node.operand, python_ast.Constant):
            node = python_ast.Constant(-node.operand.value)
        if isinstance(node, (python_ast.Constant, python_ast.Name)):
            value = constant(node.value) if isinstance(node, python_ast.Constant) else names[node.id]
            if into is not None:
                steps.append(Step("mov", into, (value,)))
            return into or value
        target = into or fresh(registers, "")
        if isinstance(node, python_ast.Call):
            fn = node.func.id
            steps.append(Step(fn if fn in INSTRUCTIONS else "call", target,
                              (emit(node.args[0], None),) if fn in INSTRUCTIONS else (fn, emit(node.args[0], None))))
        elif isinstance(node, python_ast.UnaryOp):
            steps.append(Step("neg", target, (emit(node.operand, None),)))
        elif isinstance(node, python_ast.BinOp):
            a, b = emit(node.left, None), emit(node.right, None)
            steps.append(Step(_PTX[_BINARY[type(node.op)]], target, (a, b)))
        else:
            test = node.test
            left, right = emit(test.left, None), emit(test.comparators[0], None)
            predicate = fresh(predicates, "p")
            steps.append(Step("setp", predicate, (_PTX[_COMPARE[type(test.ops[0])]], left, right)))
            body, orelse = emit(node.body, None), emit(node.orelse, None)
            steps.append(Step("selp", target, (body, orelse, predicate)))
        return target

    emit(parse(text), dst)
    return Code(tuple(registers), tuple(predicates), tuple(steps))
