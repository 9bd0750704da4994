"""Check zarrcy's one-way imports (DESIGN.md "Layers"; CONVENTIONS.md rule 2).

Every module gets a layer; a module may import only from its own layer or below.
Extra rules: kernels import nothing from zarrcy; codecs never import storage.
Exit status 1 with one line per violation.
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent / "zarrcy"

# (module prefix, layer); the longest matching prefix wins
LAYERS = [
    ("zarrcy._kernels", 0),
    ("zarrcy.errors", 1),
    ("zarrcy.types", 1),
    ("zarrcy.byte_range", 1),
    ("zarrcy.byte_access", 1),
    ("zarrcy.ortho", 1),
    ("zarrcy.config", 1),
    ("zarrcy.storage", 2),
    ("zarrcy.metadata.data_type", 2),
    ("zarrcy.metadata.fill_value", 2),
    ("zarrcy.metadata._parse", 2),
    ("zarrcy.metadata.names", 2),
    ("zarrcy.chunk_grid", 2),
    ("zarrcy.chunk_grid_rectilinear", 2),
    ("zarrcy.chunk_key_encoding", 2),
    ("zarrcy.codecs", 3),
    ("zarrcy.metadata", 4),
    ("zarrcy.indexing", 4),
    ("zarrcy.casting", 4),
    ("zarrcy.array", 5),
    ("zarrcy.group", 5),
    ("zarrcy.api", 5),
    ("zarrcy.v2", 5),
    ("zarrcy.consolidated", 5),
    ("zarrcy.cli", 6),
    ("zarrcy.convert", 6),
    ("zarrcy.demo", 6),
    ("zarrcy.xarray", 6),
    ("zarrcy.zarr_plugin", 6),
    ("zarrcy", 6),  # the package __init__ (lazy re-exports)
]


def layer_of(mod: str) -> int | None:
    best = None
    for prefix, layer in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return None if best is None else best[1]


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: pathlib.Path, mod: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    pkg = mod if path.name in ("__init__.py", "__init__.pyx") else mod.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            for a in node.names:  # "from zarrcy.x import y": y may be a submodule
                sub = ROOT.parent.joinpath(*f"{name}.{a.name}".split("."))
                if sub.with_suffix(".py").exists() or sub.is_dir() or list(sub.parent.glob(sub.name + ".*.so")):
                    out.append((node.lineno, f"{name}.{a.name}"))
                else:
                    out.append((node.lineno, name))
    return [(ln, n) for ln, n in out if n == "zarrcy" or n.startswith("zarrcy.")]


def pyx_imports(path: pathlib.Path) -> list[tuple[int, str]]:
    out = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        s = line.strip()
        if (s.startswith("from zarrcy") or s.startswith("import zarrcy") or s.startswith("cimport zarrcy")):
            out.append((i, s.split()[1]))
    return out


def main() -> int:
    bad = []
    for path in sorted(ROOT.rglob("*")):
        if path.suffix not in (".py", ".pyx", ".pxd") or "__pycache__" in path.parts:
            continue
        mod = module_name(path)
        me = layer_of(mod)
        if me is None:
            bad.append(f"{path}: module {mod} has no layer in ci/check_layers.py")
            continue
        if path.suffix in (".pyx", ".pxd"):
            for ln, name in pyx_imports(path):
                if not name.startswith("zarrcy._kernels"):
                    bad.append(f"{path}:{ln}: kernel imports {name} (kernels import nothing from zarrcy)")
            continue
        for ln, name in imports(path, mod):
            other = layer_of(name)
            if other is None:
                continue
            if mod.startswith("zarrcy._kernels") and not name.startswith("zarrcy._kernels"):
                bad.append(f"{path}:{ln}: kernel imports {name}")
            elif mod.startswith("zarrcy.codecs") and name.startswith("zarrcy.storage"):
                bad.append(f"{path}:{ln}: codecs must not import storage ({name})")
            elif other > me and not (mod == "zarrcy" or name == "zarrcy"):
                bad.append(f"{path}:{ln}: {mod} (layer {me}) imports {name} (layer {other})")
    for line in bad:
        print(line)
    print(f"check_layers: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
