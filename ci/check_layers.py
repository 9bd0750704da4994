"""Check zarrcy's one-way imports (docs/ARCHITECTURE.md; CONVENTIONS.md rule 2).

The import graph counts every ``import`` statement, wherever it stands: at module level,
inside a function or method, inside ``try``. Only imports under ``if TYPE_CHECKING:``
are left out (they never run). Importing ``zarrcy.a.b`` also runs the ``zarrcy.a``
package's ``__init__``, so that is an edge too (except for packages the importing
module already lives in: Python has loaded them first).

Rules, each violation one line, exit status 1 if any:

1. no cycle between modules (strongly connected components of the graph, each printed
   with the import lines that close it);
2. every module has a layer (``LAYERS``) and imports only from its own layer or below;
3. nothing inside the package imports the package root ``zarrcy`` (its ``__init__``
   re-exports the public names lazily through ``__getattr__``: the only module whose
   own imports are not checked);
4. kernels import nothing from zarrcy; codecs never import storage.

``python ci/check_layers.py --graph`` prints the layer table and the edges instead.
"""

from __future__ import annotations

import ast
import pathlib
import sys
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parent.parent / "zarrcy"

# (module prefix, layer); the longest matching prefix wins. docs/ARCHITECTURE.md shows
# the same table: change both together.
LAYERS = [
    ("zarrcy._kernels", 0),  # C loops: know nothing of metadata, stores or codecs
    ("zarrcy._version", 1),
    ("zarrcy.errors", 1),
    ("zarrcy.types", 1),
    ("zarrcy.byte_range", 1),
    ("zarrcy.byte_access", 1),
    ("zarrcy.ortho", 1),
    ("zarrcy.config", 1),
    ("zarrcy.execution", 1),  # the execution context type and the concurrency policy
    ("zarrcy.chunk_cache", 1),  # the decoded-chunk LRU (keys carry store version tokens)
    ("zarrcy.storage", 2),
    ("zarrcy.metadata", 2),  # data types, fill values, node names, JSON parsing helpers
    ("zarrcy.chunk_grid", 2),
    ("zarrcy.chunk_grid_rectilinear", 2),
    ("zarrcy.chunk_key_encoding", 2),
    ("zarrcy.codecs", 3),
    ("zarrcy.document", 4),  # zarr.json documents: ArrayMetadata, GroupMetadata
    ("zarrcy.indexing", 4),
    ("zarrcy.v2", 5),  # Zarr v2/v1 documents, dtypes, codecs; .zmetadata
    ("zarrcy.consolidated", 5),  # the consolidated-metadata read overlay (a Store)
    ("zarrcy.nodes", 6),  # Array, Group; opening existing nodes
    ("zarrcy.creation", 7),  # API layer: creating nodes
    ("zarrcy.api", 7),  # API layer: opening, convenience functions
    ("zarrcy.array", 7),  # callable module: zarrcy.array(data) (API), class Array re-exported
    ("zarrcy.group", 7),  # callable module: zarrcy.group(store) (API), class Group re-exported
    ("zarrcy.casting", 8),
    ("zarrcy.core", 8),
    ("zarrcy.cli", 8),
    ("zarrcy.convert", 8),
    ("zarrcy.xarray", 8),
    ("zarrcy.zarr_plugin", 8),
    ("zarrcy.__main__", 9),
]
ROOT_MODULE = "zarrcy"


def layer_of(mod: str) -> int | None:
    best = None
    for prefix, layer in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return None if best is None else best[1]


def module_name(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, root: pathlib.Path = ROOT) -> bool:
    p = root.parent.joinpath(*name.split("."))
    return (
        p.with_suffix(".py").exists()
        or (p / "__init__.py").exists()
        or p.with_suffix(".pyx").exists()
        or bool(list(p.parent.glob(p.name + ".*.so")))
    )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all of them but ``if TYPE_CHECKING:`` bodies."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports(path: pathlib.Path, mod: str, root: pathlib.Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) for every zarrcy module ``path`` runs an import of."""
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[int, str]] = []
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
            continue
        if node.level:
            base = pkg.split(".")
            base = base[: len(base) - node.level + 1]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        for a in node.names:  # "from zarrcy.x import y": y may be a submodule
            sub = f"{name}.{a.name}"
            out.append((node.lineno, sub if _is_module(sub, root) else name))
    top = root.name
    return [(ln, n) for ln, n in out if n == top or n.startswith(top + ".")]


def with_packages(mod: str, target: str) -> list[str]:
    """``target`` and the packages importing it runs first (those ``mod`` is not inside)."""
    parts = target.split(".")
    out = [target]
    for i in range(2, len(parts)):
        pkg = ".".join(parts[:i])
        if not (mod == pkg or mod.startswith(pkg + ".")):
            out.append(pkg)
    return out


def pyx_imports(path: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        s = line.strip()
        if s.startswith("from zarrcy") or s.startswith("import zarrcy") or s.startswith("cimport zarrcy"):
            out.append((i, s.split()[1]))
    return out


def build_graph(root: pathlib.Path = ROOT) -> tuple[dict[str, dict[str, list[str]]], list[str]]:
    """graph[a][b] = ["path:line", ...] where a imports b; plus the rule violations found.
    ``root``: the package directory (tests point it at a small fake package)."""
    graph: dict[str, dict[str, list[str]]] = {}
    bad: list[str] = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".py", ".pyx", ".pxd") or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(root.parent)
        mod = module_name(path, root)
        me = layer_of(mod)
        if mod != ROOT_MODULE and me is None:
            bad.append(f"{rel}: module {mod} has no layer in ci/check_layers.py")
            continue
        if path.suffix in (".pyx", ".pxd"):
            for ln, name in pyx_imports(path):
                if not name.startswith("zarrcy._kernels"):
                    bad.append(f"{rel}:{ln}: kernel imports {name} (kernels import nothing from zarrcy)")
            continue
        edges = graph.setdefault(mod, {})
        if mod == ROOT_MODULE:
            continue  # lazy public re-exports: the top of the graph
        for ln, name in imports(path, mod, root):
            if name == ROOT_MODULE:
                bad.append(f"{rel}:{ln}: {mod} imports the package root zarrcy (import the defining module)")
                continue
            for target in with_packages(mod, name):
                where = edges.setdefault(target, []) if target != mod else None
                if where is not None and f"{rel}:{ln}" not in where:
                    where.append(f"{rel}:{ln}")
            other = layer_of(name)
            if other is None or me is None:
                continue
            if mod.startswith("zarrcy._kernels") and not name.startswith("zarrcy._kernels"):
                bad.append(f"{rel}:{ln}: kernel imports {name}")
            elif mod.startswith("zarrcy.codecs") and name.startswith("zarrcy.storage"):
                bad.append(f"{rel}:{ln}: codecs must not import storage ({name})")
            elif other > me:
                bad.append(f"{rel}:{ln}: {mod} (layer {me}) imports {name} (layer {other})")
    return graph, bad


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main(argv: list[str]) -> int:
    graph, bad = build_graph()
    if "--graph" in argv:
        for mod in sorted(graph, key=lambda m: (99 if layer_of(m) is None else layer_of(m), m)):
            print(f"L{layer_of(mod)} {mod} -> {', '.join(sorted(graph[mod])) or '-'}")
        return 0
    for comp in cycles(graph):
        members = set(comp)
        bad.append(f"import cycle between {len(comp)} modules: {', '.join(comp)}")
        for a in comp:
            for b, where in sorted(graph[a].items()):
                if b in members:
                    bad.append(f"    {a} -> {b}  ({', '.join(where)})")
    for line in bad:
        print(line)
    print(f"check_layers: {len(bad)} violation(s), {len(graph)} modules")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
