"""Tasks: `tasks ... end` blocks and their `spawn` statements (LANGUAGE.md §11).

A block holds spawns and the for loops, branches and blocks around them, so
while its tasks run the body does nothing but start more. What the tasks share
is proven here, not hoped: two tasks of one block never write overlapping
places through `address`, a place lent to a task is not read elsewhere in the
block, and a spawned routine (with everything it calls) writes no global
variable, reads none that a task of its block is lent, and keeps off the tape
and the GPU, whose state is the program's, not a task's. One place may be lent
to many tasks: a stream that none of them changes, only Accepts on, awaits heads
with and reads the LocalPort of (accept(2) is safe from many threads, and a
server's held callers are behind the runtime's lock), so workers can share a
server.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ast
from ..symbols import RoutineSymbol, VarSymbol
from ..types import STREAM, ErrorType
from ..residency import holds_device

# the statements a tasks block may hold: what starts tasks, and what repeats or chooses a spawn
_IN_BLOCK = (ast.Spawn, ast.For, ast.If, ast.Compound, ast.Empty, ast.Break, ast.Continue)


@dataclass
class Spawned:
    call: ast.Call
    routine: RoutineSymbol
    loops: list  # the loop variables of the block's for loops around the spawn
    lent: list = field(default_factory=list)  # the `address` arguments, type-checked
    params: dict = field(default_factory=dict)  # id of a lent argument: the parameter it binds


@dataclass
class Block:
    node: ast.Tasks
    loops: list = field(default_factory=list)
    spawns: list = field(default_factory=list)
    calls: list = field(default_factory=list)  # (call, routine): what the spawner calls while the tasks run
    shared: list = field(default_factory=list)  # (argument, spawned): a stream lent to more than one task


class Tasks:
    def __init__(self, analyzer):
        self.a = analyzer  # the program's state, and through it the other parts
        self.block: Block | None = None  # the tasks block being checked
        self.spawning: ast.Call | None = None  # the call a spawn starts, checked as calls are
        self.blocks: list[Block] = []  # every block, for the checks after the whole program

    def tasks_block(self, s: ast.Tasks) -> None:
        if self.a.tape_depth > 0:
            self.a.error(s, 5208, "a tasks block cannot open inside a tape window: the tape is the program's, "
                                  "not a task's")
        if self.block is not None:  # a block inside a block: refused as a statement of the outer one
            return
        self.refuse_other_statements(s.body)
        self.block = Block(s)
        self.a.statements.stmts(s.body)
        block, self.block = self.block, None
        self.blocks.append(block)
        self.check_lending(block)

    def refuse_other_statements(self, body: list[ast.Stmt]) -> None:
        for stmt in body:
            if not isinstance(stmt, _IN_BLOCK):
                where = ("start an inner block from a spawned routine" if isinstance(stmt, ast.Tasks)
                         else "move this statement before or after the block")
                self.a.error(stmt, 5201, f"a tasks block holds spawns and the loops and branches around them; {where}")
            elif isinstance(stmt, ast.For):
                self.refuse_other_statements([stmt.body])
            elif isinstance(stmt, ast.If):
                self.refuse_other_statements([stmt.then] + ([stmt.otherwise] if stmt.otherwise else []))
            elif isinstance(stmt, ast.Compound):
                self.refuse_other_statements(stmt.body)

    def loop(self, s: ast.For, check_loop) -> None:
        """A for loop: inside a block, its variable tells the tasks it starts apart."""
        if self.block is None:
            check_loop()
            return
        self.block.loops.append(s.var.symbol)
        check_loop()
        self.block.loops.pop()

    def spawn(self, s: ast.Spawn) -> None:
        call = s.call
        if isinstance(call, ast.Name):  # a procedure named without parentheses: spawned as the call it is
            call = ast.Call(call.line, call.col, call, [])
            self.a.bare_statements.append((s, call))
        if self.block is None:
            self.a.error(s, 5202, "'spawn' starts a task of a tasks block: put it inside 'tasks ... end'")
        if not isinstance(call, ast.Call) or not isinstance(call.callee, ast.Name):
            self.a.error(call, 5203, "only a call of a procedure can be spawned")
            return
        routine = self.a.lookup(call.callee)
        if isinstance(routine, RoutineSymbol) and routine.is_function:
            self.a.error(call, 5203, f"'{routine.name}' is a function; a task gives its results through "
                                     "'address' parameters of a procedure")
            return
        if routine is not None and not isinstance(routine, RoutineSymbol):
            self.a.error(call, 5203, f"only a call of a procedure of the program can be spawned; "
                                     f"'{call.callee.ident}' is not one")
            return
        self.spawning = call
        self.a.expressions.expr(call, statement=True)
        self.spawning = None
        if routine is None or self.block is None:
            return
        spawned = Spawned(call, routine, list(self.block.loops))
        if len(call.args) == len(routine.params):
            for arg, p in zip(call.args, routine.params):
                if p.by_address and isinstance(arg, ast.AddressArg) and arg.ty is not None \
                        and not isinstance(arg.ty, ErrorType):
                    spawned.lent.append(arg)
                    spawned.params[id(arg)] = p
        self.block.spawns.append(spawned)

    def note_call(self, call: ast.Call, routine: RoutineSymbol) -> None:
        """A routine called in a block's body (in a spawn's arguments, a bound, a condition)
        runs in the spawner while the block's tasks run."""
        if self.block is not None and call is not self.spawning:
            self.block.calls.append((call, routine))

    # -- what the tasks of one block share

    def check_lending(self, block: Block) -> None:
        lent_roots = set()
        for i, first in enumerate(block.spawns):
            for j, arg in enumerate(first.lent):
                lent_roots.add(ast.root_name(arg.place).symbol)
                if arg.ty == STREAM and first.loops:  # a stream is a whole variable, lent each round
                    block.shared.append((arg, first))
                elif not self.apart_across_iterations(arg.place, first.loops):
                    self.overlap(arg, arg, "each time round its loop")
                    continue
                # a spawn in a loop starts many tasks: its own arguments must stay apart too
                others = [(first, other) for other in first.lent[j + 1:] if first.loops]
                others += [(second, other) for second in block.spawns[i + 1:] for other in second.lent]
                for second, other in others:
                    if apart(arg.place, other.place):
                        continue
                    if arg.ty == STREAM:
                        block.shared += [(arg, first), (other, second)]
                    else:
                        self.overlap(other, arg, "")
        for node in read_nodes(block.node.body):
            if isinstance(node, ast.Name) and isinstance(node.symbol, VarSymbol) and node.symbol in lent_roots:
                self.a.error(node, 5205, f"'{node.ident}' is lent to a task of this block, which may be writing "
                                         f"it; read it after the block ends")

    def overlap(self, arg: ast.AddressArg, first: ast.AddressArg, when: str) -> None:
        place = ast.place_text(arg.place)
        if when:
            self.a.error(arg, 5204, f"the tasks this spawn starts {when} may all write '{place}': index it by "
                                    f"the loop's variable, or lend each task a place of its own")
        else:
            self.a.error(arg, 5204, f"two tasks of this block may write '{place}' (lent at line {first.line}); "
                                    f"lend each task a place of its own")

    def apart_across_iterations(self, place: ast.Expr, loops: list) -> bool:
        """Each round of every loop around the spawn lends another element: the path is
        indexed by every loop variable itself somewhere."""
        indexed = {i.symbol for step in steps(place) if isinstance(step, ast.Index)
                   for i in step.indices if isinstance(i, ast.Name)}
        return all(var in indexed for var in loops)

    # -- after the whole program: what each spawned routine reaches

    def check_spawned_routines(self) -> None:
        for block in self.blocks:
            lent = {ast.root_name(arg.place).symbol: arg for s in block.spawns for arg in s.lent}
            for spawned in block.spawns:
                self.check_reach(spawned, lent)
            self.check_shared_streams(block)
            for call, routine in block.calls:
                if routine.global_writes:
                    name = sorted(v.name for v in routine.global_writes)[0]
                    self.a.error(call, 5206, f"'{routine.name}' writes the global variable '{name}' (itself "
                                             f"or through what it calls) while this block's tasks run; call it "
                                             f"before the block")
                else:
                    self.check_global_reads(call, routine, lent, set())

    def check_reach(self, spawned: Spawned, lent: dict) -> None:
        routine, call = spawned.routine, spawned.call
        reach = reachable(routine)
        if routine.global_writes:
            name = sorted(v.name for v in routine.global_writes)[0]
            self.a.error(call, 5206, f"'{routine.name}' writes the global variable '{name}' (itself or "
                                     f"through what it calls); a task writes only what it is lent by 'address'")
        # tracked values outside a window are plain values beside their tags, and no window
        # is open while a block's tasks run (5208): reading the model is safe, recording is not
        taping = next((r for r in sorted(reach, key=lambda r: r.name) if r.has_tape or r.tape_verbs), None)
        if taping is not None:
            self.a.error(call, 5207, f"'{routine.name}' uses the tape (a tape window, Backward or Gradient)"
                                     + ("" if taping is routine else f" through '{taping.name}'")
                                     + "; the tape is the program's, so a task cannot record on it or walk it")
        if self.check_global_reads(call, routine, lent, {ast.root_name(arg.place).symbol for arg in spawned.lent}):
            return
        for r in sorted(reach, key=lambda r: r.name):
            gpu = next((v for v in r.params + r.locals if holds_device(v.type)), None)
            if gpu is not None:
                self.a.error(call, 7013, f"'{r.name}' holds '{gpu.name}' on the GPU; tasks run on the host, "
                                         f"and the device is the main program's")
                return
            gpu = next((v for v in sorted(r.global_uses, key=lambda v: v.name) if holds_device(v.type)), None)
            if gpu is not None:
                self.a.error(call, 7013, f"'{r.name}' reads the global '{gpu.name}', which lives on the GPU; "
                                         f"tasks run on the host, and the device is the main program's")
                return

    def check_shared_streams(self, block: Block) -> None:
        """A stream lent to many tasks is only listened on: each task's parameter is given
        to Accept and AwaitHead as the server and to LocalPort, and to nothing that changes
        it (5210)."""
        said = set()
        for arg, spawned in block.shared:
            param = spawned.params[id(arg)]
            if param.changed_at is None or id(arg) in said:
                continue
            said.add(id(arg))
            place = ast.place_text(arg.place)
            self.a.error(arg, 5210, f"'{place}' is lent to more than one task of this block, so they may only "
                                    f"Accept on it, AwaitHead with it and read its LocalPort; "
                                    f"'{spawned.routine.name}' changes its '{param.name}' at line "
                                    f"{self.a.line_of(param.changed_at.pos)}")

    def check_global_reads(self, call: ast.Call, routine: RoutineSymbol, lent: dict, mine: set) -> bool:
        """Does the routine (or what it calls) read a global that a task of the block is
        lent, other than its own? Said, if so (5209)."""
        for r in sorted(reachable(routine), key=lambda r: r.name):
            shared = sorted((v for v in r.global_uses if v in lent and v not in mine), key=lambda v: v.name)
            if shared:
                self.a.error(call, 5209, f"'{r.name}' reads the global variable '{shared[0].name}', which "
                                         f"a task of this block is lent (line {lent[shared[0]].line})")
                return True
        return False


def reachable(routine: RoutineSymbol) -> set:
    """The routine and every routine it calls, directly or not."""
    reach, frontier = {routine}, [routine]
    while frontier:
        for callee in frontier.pop().calls:
            if callee not in reach:
                reach.add(callee)
                frontier.append(callee)
    return reach


def steps(place: ast.Expr) -> list:
    """A place's path from its root: `r.a[i]` is [r, .a, [i]]."""
    path = []
    while isinstance(place, ast.Field | ast.Index):
        path.append(place)
        place = place.base
    path.append(place)
    return path[::-1]


def apart(first: ast.Expr, second: ast.Expr) -> bool:
    """Do two places provably share no storage? Other roots, or at one step other
    fields, or constant indices that differ."""
    a, b = steps(first), steps(second)
    if a[0].symbol is not b[0].symbol:
        return True
    for x, y in zip(a[1:], b[1:]):
        if isinstance(x, ast.Field) and isinstance(y, ast.Field) and x.name != y.name:
            return True
        if isinstance(x, ast.Index) and isinstance(y, ast.Index) and len(x.indices) == len(y.indices):
            known = [(i.folded, j.folded) for i, j in zip(x.indices, y.indices)]
            if any(isinstance(i, int) and isinstance(j, int) and i != j for i, j in known):
                return True
    return False


def read_nodes(tree) -> list:
    """Every node of a block's body that is read: all but the lent places themselves
    (their indices are read)."""
    found, stack = [], [tree]
    while stack:  # not recursion: a chain `a + b + c ...` nests as deep as it is long
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(reversed(n))
        elif isinstance(n, ast.AddressArg):
            stack.extend(reversed([step.indices if isinstance(step, ast.Index) else [] for step in steps(n.place)[1:]]))
        elif isinstance(n, ast.Node):
            found.append(n)
            stack.extend(reversed([getattr(n, name) for name in ast.syntax_fields(type(n))]))
    return found
