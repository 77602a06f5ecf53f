"""What the removal's edits leave behind in a kept core module, cleared in the same change.

Two things are cleared. One is the imports that only the removed code used. These
are module-level imports, and those in a kept function or method body. The other
is the ``__all__`` names the edit left unbound. ``from pkg import *`` would raise
AttributeError on them.

Only what the edit caused goes. A module-level import goes when its name was spelt
outside import statements before the edit. After it, the name must be spelt
nowhere outside them. That means not in code, a comment, or a string. Strings
include ``__all__``, a string annotation, and a lazy ``__getattr__`` table.

Some imports never go:

- those in a package's ``__init__``, whose imports are what it publishes;
- ``from __future__``, ``*``, and ``import a as a`` (an explicit re-export);
- one a kept file could import from the module (``from <module> import name``,
  ``<module>.name``).

An import in a function or method body goes by the same reading of that body.
Nested functions, lambdas and strings count (`made_unused_local_imports`). A
function body it leaves empty gets ``pass``. An import whose removal would leave
an ``if``/``for``/``with``/``try`` block empty stays.

An ``__all__`` name goes when the module bound it before the edit and binds it no
more. A definition, an assignment, an import or a subpackage binds a name.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Set, Tuple

from ...model import parsed
from ...editing.cst_tools import Unfixable, apply_edits, parse
from ...editing.target import FixTarget, Refused
from ..plan import Plan
from ..texts import Texts
from .entry_points import drop_imported_names
from .exports import _remove_all_entries
from .model import ModuleEdits

DEBRIS = "debris"  # the step that records here, as the plan names it


def clear_debris(target: FixTarget, project, texts: Texts, removal: Plan, after_of: Dict[str, bytes],
                 kept) -> None:
    """Rewrite each edited core module without the debris of the edit.

    `after_of` and the removal's rewrites get the new bytes.
    """
    kept_rels = [file.rel for file in kept if not removal.gone(file.rel)]
    for fix in list(removal.rewrites):
        rel = fix.path
        if rel not in after_of or not rel.endswith(".py"):
            continue
        source = project.files.get(rel)
        if source is None:
            continue
        after = fix.after
        tree_before = texts.tree(rel) if texts.read(rel) == fix.before else _parsed(fix.before)
        tree_after = _parsed(after)
        if tree_before is None or tree_after is None:
            continue
        stale = stale_all_names(target, removal, rel, tree_before, tree_after)
        if stale:
            after = _edit(rel, after, source, lambda mod: _remove_all_entries(mod, stale))
            removal.did(DEBRIS, f"{source.module}.__all__: {', '.join(sorted(stale))}")
            tree_after = _parsed(after)
        if not source.is_package:
            unused = made_unused_imports(fix.before, after, tree_before, tree_after)
            unused = [u for u in unused if not _importable_elsewhere(texts, kept_rels, rel, source.module, u[2])]
            if unused:
                after, unused_left = _drop_whole_statements(after, tree_after, unused)
                if unused_left:
                    after = _edit(rel, after, source, lambda mod: _drop_aliases(mod, unused_left, rel))
                removal.did(DEBRIS, f"{source.module}: imports made unused: "
                                       f"{', '.join(sorted({u[2] for u in unused}))}")
                tree_after = _parsed(after)
        local = made_unused_local_imports(fix.before, after, tree_before, tree_after) if tree_after else {}
        if local:
            places = [place for found in local.values() for place in found]
            after = _edit(rel, after, source, lambda mod: _drop_aliases(mod, places, rel))
            for qualname, found in sorted(local.items()):
                removal.did(DEBRIS, f"{source.module}.{qualname}: imports made unused: "
                                    f"{', '.join(sorted({u[2] for u in found}))}")
        if after != fix.after:
            removal.rewrite(rel, after, fix.before)
            after_of[rel] = after


def _edit(rel: str, data: bytes, source, plan) -> bytes:
    try:
        mod = ModuleEdits(parse(data, source.module, source.is_package))
    except Unfixable as reason:
        raise Refused(f"{rel}: {reason}") from None
    plan(mod)
    after = apply_edits(mod.file, mod.edits) if mod.edits else data
    try:
        parsed.tree(after)  # a safety net, as in `fix`
    except SyntaxError as error:
        raise Refused(f"internal error: the rewrite of {rel} does not parse ({error.msg})") from None
    return after


# imports ------------------------------------------------------------------------------


def _parsed(data: bytes):
    try:
        return parsed.tree(data)
    except (SyntaxError, ValueError):
        return None


def made_unused_imports(before: bytes, after: bytes, tree_before: ast.Module,
                        tree_after: ast.Module) -> List[Tuple[int, int, str]]:
    """``(line, column, bound name)`` of the module-level import aliases the edit made unused.

    The aliases are those of `after`. The column is 1-based, as `import_at` reads it.
    """
    outside_before = _text_outside_imports(before, tree_before)
    outside_after = _text_outside_imports(after, tree_after)
    found = []
    for node in tree_after.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        for alias in node.names:
            if alias.name == "*" or (alias.asname is not None and alias.asname == alias.name.rpartition(".")[2]
                                     and isinstance(node, ast.ImportFrom)):
                continue  # ``from m import x as x``: a re-export said out loud
            bound = alias.asname or alias.name.partition(".")[0]
            word = re.compile(rb"\b" + re.escape(bound.encode("utf-8")) + rb"\b")
            if word.search(outside_before) and not word.search(outside_after):
                found.append((node.lineno, node.col_offset + 1, bound))
    return found


def made_unused_local_imports(before: bytes, after: bytes, tree_before: ast.Module,
                              tree_after: ast.Module) -> Dict[str, List[Tuple[int, int, str]]]:
    """qualname -> ``(line, column, bound name)`` of the local imports the edit made unused.

    The imports sit in a function or method body of `after`, in its own scope. A
    nested function's or class's scope does not count. The name was spelt in that
    body before the edit, outside its own import statements. It is spelt there no
    more: not in code, a nested function or lambda, a string, or a comment.

    A function is matched by its qualname, with one ``def`` per qualname on both
    sides. An import that is the only statement of an
    ``if``/``for``/``with``/``try`` block stays. So no block is left holding
    ``pass`` alone. A name the function declares ``global`` or ``nonlocal`` stays
    too.
    """
    olds, news = _functions(tree_before), _functions(tree_after)
    old_lines, new_lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    found: Dict[str, List[Tuple[int, int, str]]] = {}
    for qualname, defs in news.items():
        if len(defs) != 1 or len(olds.get(qualname, ())) != 1:
            continue
        new, old = defs[0], olds[qualname][0]
        imports = list(_own_imports(new))
        if not imports:
            continue
        text_before = _body_text(old_lines, old, [i for i, _, _ in _own_imports(old)])
        text_after = _body_text(new_lines, new, [i for i, _, _ in imports])
        if text_before == text_after:
            continue
        declared = {n for node in _own_nodes(new) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
        going = {}  # id(import) -> its aliases that go
        for node, _, _ in imports:
            for alias in node.names:
                bound = alias.asname or alias.name.partition(".")[0]
                if alias.name == "*" or bound in declared:
                    continue
                word = re.compile(rb"\b" + re.escape(bound.encode("utf-8")) + rb"\b")
                if word.search(text_before) and not word.search(text_after):
                    going.setdefault(id(node), []).append((node.lineno, node.col_offset + 1, bound))
        for node, block, in_body in imports:
            emptied = all(isinstance(s, (ast.Import, ast.ImportFrom)) and len(going.get(id(s), ())) == len(s.names)
                          for s in block)
            if id(node) in going and not (emptied and not in_body):  # a block left empty keeps its imports
                found.setdefault(qualname, []).extend(going[id(node)])
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _functions(tree: ast.Module) -> Dict[str, list]:
    """qualname -> the ``def`` statements of that qualname. Methods are ``Class.name``."""
    found: Dict[str, list] = {}
    pending = [(node, "") for node in ast.iter_child_nodes(tree)]
    while pending:
        node, prefix = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualname = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                found.setdefault(qualname, []).append(node)
            pending += [(child, qualname + ".") for child in ast.iter_child_nodes(node)]
        elif isinstance(node, ast.stmt):
            pending += [(child, prefix) for child in ast.iter_child_nodes(node)]
    return found


def _own_nodes(function):
    """The nodes of `function`'s body in its own scope, not inside a nested def, class or lambda."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _SCOPES):
            pending += list(ast.iter_child_nodes(node))


def _own_imports(function):
    """One triple per import statement in `function`'s own scope.

    Each is ``(import, the statement list holding it, held by the function body
    itself?)``.
    """
    blocks = [(function.body, True)]
    while blocks:
        block, in_body = blocks.pop()
        for node in block:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node, block, in_body
            elif not isinstance(node, _SCOPES):
                for field in ("body", "orelse", "finalbody"):
                    if isinstance(getattr(node, field, None), list) and getattr(node, field):
                        blocks.append((getattr(node, field), False))
                blocks += [(h.body, False) for h in getattr(node, "handlers", ())]
                blocks += [(c.body, False) for c in getattr(node, "cases", ())]


def _body_text(lines: List[bytes], function, imports) -> bytes:
    """The bytes of `function`'s body, each of `imports` blanked where it stands.

    The rest of its line is kept: ``import x; x.run()`` still uses ``x``.
    """
    first, last = function.body[0].lineno, function.end_lineno or function.body[-1].lineno
    chunk = [bytearray(line) for line in lines[first - 1:last]]
    for node in imports:
        for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
            row = chunk[number - first]
            start = node.col_offset if number == node.lineno else 0
            end = node.end_col_offset if number == node.end_lineno else len(row)
            row[start:end] = b" " * (end - start)
    return b"".join(bytes(row) for row in chunk)


def _text_outside_imports(data: bytes, tree: ast.Module) -> bytes:
    """The file's bytes with every line of its module-level import statements blanked."""
    lines = data.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                if number <= len(lines):
                    lines[number - 1] = b"\n"
    return b"".join(lines)


def _importable_elsewhere(texts: Texts, kept_rels: List[str], rel: str, module: str, name: str) -> bool:
    """Could a kept file take `name` from `module`?

    It could import it from the module, or read it as the module's attribute. Only
    files spelling both are searched.
    """
    last = module.rpartition(".")[2]
    spelt_name, spelt_last = re.escape(name.encode("utf-8")), re.escape(last.encode("utf-8"))
    pattern = re.compile(rb"\b" + spelt_last + rb"\s+import\b[^\n]*\b" + spelt_name + rb"\b"
                         + rb"|\b" + spelt_last + rb"\s+import\s*\([^)]*\b" + spelt_name + rb"\b"
                         + rb"|\b" + spelt_last + rb"\s*\.\s*" + spelt_name + rb"\b")
    for other in kept_rels:
        if other != rel and texts.mentions(other, [name]) and texts.mentions(other, [last]):
            if pattern.search(texts.read(other)):
                return True
    return False


def _drop_whole_statements(data: bytes, tree: ast.Module, unused: List[Tuple[int, int, str]]):
    """Delete, as lines, each module-level import statement all of whose names go.

    Such a statement must stand alone on its lines. The blank line before it goes
    too when one follows it, so no gap grows where it stood. Returns the new bytes
    and the aliases left for libcst. Those are in statements that keep a name, at
    their lines in the new bytes.
    """
    gone = {(line, column) for line, column, _ in unused}
    body = tree.body
    whole = []
    for index, node in enumerate(body):
        if not isinstance(node, (ast.Import, ast.ImportFrom)) or (node.lineno, node.col_offset + 1) not in gone:
            continue
        names = {a.asname or a.name.partition(".")[0] for a in node.names}
        going = {name for line, column, name in unused if (line, column) == (node.lineno, node.col_offset + 1)}
        alone = (index == 0 or body[index - 1].end_lineno < node.lineno) and (
            index + 1 == len(body) or body[index + 1].lineno > node.end_lineno) and node.col_offset == 0
        if names <= going and alone and _whole_lines(data, node):
            whole.append(node)
    if not whole:
        return data, unused
    lines = data.splitlines(keepends=True)
    deleted = []  # 1-based numbers of the deleted lines
    for node in sorted(whole, key=lambda n: n.lineno, reverse=True):
        start, end = node.lineno - 1, node.end_lineno  # lines[start:end] is the statement
        if start > 0 and not lines[start - 1].strip() and (end >= len(lines) or not lines[end].strip()):
            start -= 1  # the blank line before it: the one after it still separates
        deleted += range(start + 1, end + 1)
        del lines[start:end]
    removed = {(n.lineno, n.col_offset + 1) for n in whole}
    left = [(line - sum(1 for d in deleted if d < line), column, name)
            for line, column, name in unused if (line, column) not in removed]  # at their lines now
    return b"".join(lines), left


def _whole_lines(data: bytes, node: ast.stmt) -> bool:
    """Does the statement fill its lines (nothing but a comment after it)?"""
    last = data.splitlines()[node.end_lineno - 1]
    tail = last[node.end_col_offset:].strip()
    return not tail or tail.startswith(b"#")


def _drop_aliases(mod: ModuleEdits, unused: List[Tuple[int, int, str]], rel: str) -> None:
    """Drop the unused aliases from their statements. A statement left importing nothing goes."""
    drop_imported_names(mod, rel, unused)


# __all__ ------------------------------------------------------------------------------


def stale_all_names(target: FixTarget, removal: Plan, rel: str, tree_before: ast.Module,
                    tree_after: ast.Module) -> Set[str]:
    """The ``__all__`` names the module bound before the edit and does not bind after it.

    A subpackage or submodule that stays counts as bound.
    """
    listed = _all_names(tree_after)
    if not listed:
        return set()
    lost = (bound_names(tree_before) - bound_names(tree_after)) & listed
    folder = rel.rpartition("/")[0] if rel.endswith("/__init__.py") else None
    if folder is not None:
        lost = {n for n in lost if not _submodule_stays(target, removal, folder, n)}
    return lost


def _submodule_stays(target: FixTarget, removal: Plan, folder: str, name: str) -> bool:
    for candidate in (f"{folder}/{name}.py", f"{folder}/{name}/__init__.py"):
        if (target.root / candidate).is_file() and not removal.gone(candidate):
            return True
    return False


def _all_names(tree: ast.Module) -> Set[str]:
    names: Set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            value = node.value
            if isinstance(value, (ast.List, ast.Tuple)):
                names |= {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return names


def bound_names(tree: ast.Module) -> Set[str]:
    """The names the module's top level binds.

    Names bound inside ``if``/``try``/``with`` blocks count. Those inside functions
    or classes do not.
    """
    names: Set[str] = set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With,
                               ast.AsyncWith, ast.If, ast.Try, ast.While)) or type(node).__name__ == "TryStar":
            for child in ast.walk(node):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    names.add(child.id)
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(child.name)
                elif isinstance(child, (ast.Import, ast.ImportFrom)):
                    names |= {a.asname or a.name.partition(".")[0] for a in child.names if a.name != "*"}
    return names
