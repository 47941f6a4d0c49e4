"""Desugaring: Analysis -> the same Analysis, its tree in the one form lowering takes for each meaning.

The analyzer checks the program as written and notes the forms that stand for
another; once every check has passed, this pass rewrites them in the tree:

    Report;           a procedure named without parentheses: the call Report()
    t := Clock        a function named as a value, wherever it stands: Clock()
    v + m, v - m      v repeated at every row of m: m + v and -m + v, the same
                      bits, with the repeated operand on the right, where the
                      kernels and the tape take it

The new nodes carry the types the analyzer gave the forms they replace.
"""

from __future__ import annotations

from . import ast
from .analyzer import Analysis


def desugar(analysis: Analysis) -> Analysis:
    for statement, call in analysis.bare_statements:
        statement.call = call
    for e in analysis.repeated_first:
        repeated_operand_last(e)
    if analysis.bare_values:
        calls = {id(name): call for name, call in analysis.bare_values}
        replace_within(analysis.program, calls)
        for unit in analysis.units:
            replace_within(unit.tree, calls)
        # a variable's symbol holds its initial value too, which may itself be one of the names
        variables = analysis.global_vars + [v for unit in analysis.units for v in unit.global_vars]
        for var in variables + [v for routine in analysis.routines for v in routine.locals]:
            var.init = calls.get(id(var.init), var.init)
    return analysis


def repeated_operand_last(e: ast.Binary) -> None:
    left = e.right
    if e.op == "-":
        left = ast.Unary(e.right.line, e.right.col, "-", e.right, ty=e.right.ty)
        e.op = "+"
    e.left, e.right = left, e.left


def replace_within(node: ast.Node, calls: dict[int, ast.Call]) -> None:
    """Put each call in place of the name it stands for (keyed by the name's id), anywhere under node."""
    for parent in ast.walk(node):  # which looks at a node's parts after they are replaced
        for name in ast.syntax_fields(type(parent)):
            value = getattr(parent, name)
            if isinstance(value, list):
                value[:] = [calls.get(id(item), item) if isinstance(item, ast.Node) else item for item in value]
            elif isinstance(value, ast.Node):
                setattr(parent, name, calls.get(id(value), value))
