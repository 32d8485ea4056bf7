#!/usr/bin/env python3
"""Every backticked path and identifier in the README and the docs names something that exists.

Usage: check_doc_refs.py REPO_ROOT
A path (a token ending in / or in a source, script or doc extension) must exist in the repository,
relative to its root or to one of the folders the docs speak from (tuner/, templates/, scripts/,
tests/, docs/), or, given as a bare file name, somewhere in it. An identifier (a token of letters,
digits and underscores holding an underscore or ::, optionally followed by ()) must occur in a
tracked source file. Exit 1 listing each one that does not, with the doc and line.
"""
import pathlib
import re
import subprocess
import sys

DOCS = ["README.md", "CONTRIBUTING.md", "docs/*.md", "templates/README.md"]
BASES = ["", "tuner/", "templates/", "templates/common/", "scripts/", "scripts/gpu/", "tests/", "docs/", "db/"]
EXTENSIONS = (".cpp", ".hpp", ".h", ".cuh", ".cu", ".md", ".toml", ".sh", ".py", ".cmake", ".sql", ".txt", ".json")
# Paths on the user's machine or outside the repository, and placeholders, are not the repo's.
OUTSIDE = re.compile(r"^(/|~|\.\./|\$|\./$|build/|build-asan/|<)|(^|/)(NAME|NNNN)")
# What the scripts and the build write, named in the docs as outputs.
GENERATED = {"tables.md", "test-cache/"}
# Headers of the libraries the docs name identifiers of (SQLite's result codes, the C library's exits).
LIBRARY_HEADERS = ["/usr/include/sqlite3.h", "/usr/include/stdlib.h"]
CODE_SUFFIXES = (".cpp", ".hpp", ".h", ".cuh", ".cu", ".toml", ".sh", ".py", ".cmake", ".sql", ".txt")


def tracked(root):
    out = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True).stdout
    return [l for l in out.split("\n") if l]


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = tracked(root)
    names = {pathlib.PurePosixPath(f).name for f in files}
    shapes = root.parent / "shared" / "shapes"   # the public suites, beside the repository
    if shapes.is_dir():
        names |= {p.name for p in shapes.iterdir()}
    folders = {str(p) + "/" for f in files for p in pathlib.PurePosixPath(f).parents if str(p) != "."}
    folder_names = {pathlib.PurePosixPath(f.rstrip("/")).name + "/" for f in folders}
    sources = "\n".join((root / f).read_text(errors="replace") for f in files
                        if f.endswith(CODE_SUFFIXES) and (root / f).is_file())
    sources += "\n".join(pathlib.Path(h).read_text(errors="replace") for h in LIBRARY_HEADERS if pathlib.Path(h).exists())
    docs = sorted({p for pattern in DOCS for p in root.glob(pattern)})
    missing = []
    for doc in docs:
        for number, line in enumerate(doc.read_text().split("\n"), 1):
            for token in re.findall(r"`([^`\n]+)`", line):
                token = token.strip()
                if " " in token or not token:
                    continue
                if re.fullmatch(r"[\w.\-/]+", token) and (token.endswith("/") or token.endswith(EXTENSIONS)):
                    if OUTSIDE.search(token) or "*" in token or token in GENERATED:
                        continue
                    if "/" not in token.rstrip("/"):
                        ok = token in names or token in folder_names
                    else:
                        ok = any((base + token) in files or (base + token) in folders or
                                 (base + token.rstrip("/") + "/") in folders for base in BASES)
                    if not ok:
                        missing.append(f"{doc.relative_to(root)}:{number}: path `{token}` does not exist")
                    continue
                m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)(?:\(\))?", token)
                if m and ("_" in m.group(1).strip("_") or "::" in m.group(1)):
                    name = m.group(1).split("::")[-1]
                    if not re.search(r"\b" + re.escape(name) + r"\b", sources):
                        missing.append(f"{doc.relative_to(root)}:{number}: identifier `{token}` occurs in no source")
    for m in missing:
        print(m)
    print(f"check_doc_refs: {len(missing)} stale reference(s) in {len(docs)} docs")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
