"""Tasks blocks and spawns: each spawn site becomes a C function that runs one task.

`spawn Work(x, address r)` copies its arguments into a struct of its own,
allocated at the spawn (value arguments are the task's own copies: strings and
dynamic arrays get their own storage; lent places are pointers), and hands it,
with the site's function, to the runtime (runtime_c/mica_tasks.c), which frees
the struct when the task ends. The site's function calls the routine's
instance with the struct's fields and drops the copies it owns.
"""

from __future__ import annotations

from ...diagnostics import MAX_FILE_LINES
from .. import ast
from ..types import needs_drop, substitute
from .expressions import passed_by_pointer
from .lines import function


class Tasks:
    def __init__(self, f):
        self.f = f  # the function being lowered, and through it the other parts
        self.blocks: list[str] = []  # the C names of the tasks blocks being lowered, innermost last

    def tasks_block(self, s: ast.Tasks) -> None:
        block = self.f.emit.fresh("mica_tasks")
        self.f.emit.line("{")
        with self.f.emit.indented():
            self.f.emit.line(f"mica_tasks {block} = {{0}};")
            self.blocks.append(block)
            self.f.statements.stmts(s.body)
            self.blocks.pop()
            self.f.emit.line(f"mica_tasks_end(&{block});")
        self.f.emit.line("}")

    def spawn(self, s: ast.Spawn) -> None:
        call, f = s.call, self.f
        routine = call.target
        binding = {k: (f.binding[v] if isinstance(v, str) else v) for k, v in (call.binding or {}).items()}
        instance = f.lowering.instance(routine, binding)
        run = f"mica_task{len(f.lowering.functions)}_{instance}"  # each site's function adds one: a new number
        fields, args, drops = [], [], []
        with f.emit.statement_scope():
            copies = f.emit.declare_c(f"struct {run}_args *", f"mica_alloc(sizeof(struct {run}_args), {s.pos.line})")
            for i, (arg, param) in enumerate(zip(call.args, routine.params)):
                t = f.concrete(substitute(param.type, binding))
                ctype = f.ctype(t)
                if param.by_address:
                    fields.append(f"{ctype} *a{i};")
                    f.emit.line(f"{copies}->a{i} = &{f.exprs.place(arg.place).text};")
                    args.append(f"args->a{i}")
                    continue
                value = f.exprs.argument(arg, t)
                if needs_drop(t):
                    text = value.text if value.owned else f.types.copy(t, value.text)
                    drops.append(f.types.drop(t, f"args->a{i}"))
                else:
                    text = value.text
                fields.append(f"{ctype} a{i};")
                f.emit.line(f"{copies}->a{i} = {text};")
                args.append(f"&args->a{i}" if passed_by_pointer(t) else f"args->a{i}")
            f.emit.line(f"mica_spawn(&{self.blocks[-1]}, {run}, {copies}, {s.pos.line});")
        prototype = f"static void {run}(void *p)"
        f.lowering.prototypes.append(f"struct {run}_args {{ {' '.join(fields) or 'char unused;'} }};\n{prototype}")
        f.lowering.functions.append((f"a task of the spawn at line {s.pos.line & MAX_FILE_LINES}", function(
            prototype, s.pos.line, [f"struct {run}_args *args = p;", f"{instance}({', '.join(args)});"], [], drops)))
