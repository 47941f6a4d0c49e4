"""Lowering: desugared Analysis -> CProgram (readable C that includes
runtime_c/mica.h, the PTX of the kernels it launches, and whether it uses the GPU).

The program's body becomes mica_program(); each routine becomes one C function
per shape binding it is called with (Affine__2x3), found by a worklist from
the main body. Static shapes become compile-time constants in the C types.
One FunctionLowering (function.py) lowers each C function, by parts: the
emitter (emitter.py), statements, expressions, the tape and the device; the
vocabulary's calls lower through their entries in ops/.

Values that own heap storage (strings, dynamic tensors and arrays) follow one
discipline: a fresh value is moved into the place it is assigned to; a
temporary that nobody takes is dropped at the end of its statement; locals are
dropped when their routine returns.
"""

from __future__ import annotations

from collections.abc import Callable

from ... import __version__
from ...diagnostics import SourceFile
from ..analyzer import Analysis
from ..cprogram import CProgram
from ..c_types import CTypes, c_string_literal, c_symbol
from ..symbols import RoutineSymbol
from .function import FunctionLowering
from .jinja import templates
from .lines import Directives, Line, plain


def lower(analysis: Analysis) -> CProgram:
    return Lowering(analysis).render()


class Lowering:
    """The whole program: collects types, routine instances and the main body."""

    def __init__(self, analysis: Analysis):
        self.analysis = analysis
        self.types = CTypes()
        self.instances: dict[tuple, str] = {}
        self.pending: list[tuple[RoutineSymbol, dict, str, bool]] = []
        self.prototypes: list[str] = []
        self.functions: list[tuple[str, list[Line]]] = []  # each C function's comment and lines
        self.kernels: set[str] = set()  # the GPU kernels the program launches

    def instance(self, routine: RoutineSymbol, binding: dict, recording: bool = False) -> str:
        """The C name of routine for one shape binding, queued for lowering on first use."""
        key = (routine, tuple(sorted(binding.items())), recording)
        if key not in self.instances:
            name = c_symbol(routine)
            if routine.shape_vars:
                name += "__" + "x".join(str(binding[v]) for v in routine.shape_vars)
            if recording:
                name += "__tape"
            self.instances[key] = name
            self.pending.append((routine, dict(binding), name, recording))
        return self.instances[key]

    def render(self) -> CProgram:
        for unit in self.analysis.units:
            prototype, lines = FunctionLowering(self, None, {}, recording=False).initialization_function(unit)
            self.prototypes.append(prototype)
            self.functions.append((f"the initialization of unit {unit.tree.name}", lines))
        main = FunctionLowering(self, None, {}, recording=False).program_function(self.analysis)
        while self.pending:
            routine, binding, name, recording = self.pending.pop(0)
            f = FunctionLowering(self, routine, binding, recording)
            prototype, lines = f.routine_function(name)
            self.prototypes.append(prototype)
            self.functions.append((f.signature(), lines))
        self.functions.append((f"program {self.analysis.program.name}", main))
        sources = [self.analysis.source] + [unit.source for unit in self.analysis.units]
        kernels = tuple(sorted(self.kernels))
        module = ""
        if kernels:
            from .. import ptx  # its templates are read only for programs that launch kernels

            module = ptx.render(kernels)
        c = self.program_text(sources, module, plain)
        debug_c = self.program_text(sources, module, Directives([source.name for source in sources]).render)
        return CProgram(c, debug_c, module, self.types.uses_gpu, kernels)

    def program_text(self, sources: list[SourceFile], module: str, render: Callable[[list[Line]], str]) -> str:
        """The program's C, each function's lines written by `render`."""
        variables = [v for unit in self.analysis.units for v in unit.global_vars] + self.analysis.global_vars
        # traps name a file by its place among the program's (diagnostics.FILE_LINE_BITS)
        source_names = [source.name.rsplit("/", 1)[-1] for source in sources]
        ptx_lines = [c_string_literal(line + "\n") for line in module.splitlines()] if self.types.uses_gpu else []
        return templates.get_template("program.c.j2").render(
            gpu=self.types.uses_gpu,
            ptx_lines=ptx_lines or ['""'],
            version=__version__,
            source_name=", ".join(source_names).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            .replace("*/", "* /"),
            source_names_c=[c_string_literal(name) for name in source_names],
            definitions=self.types.definitions,
            helpers=self.types.helpers,
            globals=[f"{self.types.name(v.type)} {c_symbol(v)}" for v in variables],
            prototypes=self.prototypes,
            functions=[(comment, render(lines)) for comment, lines in self.functions],
        )
