#!/usr/bin/env python3
"""Counts the public symbols ForgePush's library products declare, from Swift's symbol graphs.

    swift package dump-symbol-graph --minimum-access-level public
    Scripts/public-symbols.py [SYMBOL_GRAPH_FOLDER]     (default: the folder that command names)
    Scripts/public-symbols.py --write docs/public-api.symbols [SYMBOL_GRAPH_FOLDER]
    Scripts/public-symbols.py --check docs/public-api.symbols [SYMBOL_GRAPH_FOLDER]

Counted: every symbol of a library product's module (Package.swift's `.library` products) whose
precise identifier does not contain `::SYNTHESIZED::` (members a protocol's default
implementation adds), including the module's extensions of other modules' types (the
`Module@Other.symbols.json` files). Prints one line a module, then the total.

`--write FILE` also writes every counted symbol, one line each (module, path, declaration and
generic constraints), sorted: the listing kept in the repository. `--check FILE` compares the
symbols with that listing and fails naming each symbol added or removed, so that the public
surface changes only on purpose, with the listing (and docs/public-api.md) updated in the same change.
"""
import glob
import json
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
manifest = open(os.path.join(root, "Package.swift"), encoding="utf-8").read()
libraries = sorted(set(re.findall(r'\.library\(name: "(\w+)", targets: \["(\w+)"\]\)', manifest)))
modules = [target for _, target in libraries]
if not modules:
    sys.exit("public-symbols: no .library products found in Package.swift")

arguments = sys.argv[1:]
mode = listing_path = None
if arguments and arguments[0] in ("--write", "--check"):
    if len(arguments) < 2:
        sys.exit(f"public-symbols: {arguments[0]} needs the listing's path")
    mode, listing_path = arguments[0], arguments[1]
    arguments = arguments[2:]

if arguments:
    folder = arguments[0]
else:
    candidates = glob.glob(os.path.join(root, ".build", "*", "symbolgraph")) + glob.glob(
        os.path.join(root, ".build", "*", "*", "symbolgraph"))
    if not candidates:
        sys.exit("public-symbols: no symbol graphs; run swift package dump-symbol-graph --minimum-access-level public")
    folder = max(candidates, key=os.path.getmtime)

def describe(module, symbol):
    """One line that names a symbol: overloads differ by their declaration or their constraints."""
    declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
    declaration = " ".join(declaration.split())
    constraints = symbol.get("swiftGenerics", {}).get("constraints", [])
    where = ", ".join(f"{c['lhs']} {c['kind']} {c['rhs']}" for c in constraints)
    line = f"{module}  {'.'.join(symbol['pathComponents'])}  {declaration}"
    return line + (f"  where {where}" if where else "")


total = 0
lines = []
for module in modules:
    count = 0
    files = glob.glob(os.path.join(folder, f"{module}.symbols.json")) + glob.glob(os.path.join(folder, f"{module}@*.symbols.json"))
    if not files:
        sys.exit(f"public-symbols: no symbol graph for {module} in {folder}")
    for path in files:
        graph = json.load(open(path, encoding="utf-8"))
        counted = [symbol for symbol in graph["symbols"] if "::SYNTHESIZED::" not in symbol["identifier"]["precise"]]
        count += len(counted)
        lines += [describe(module, symbol) for symbol in counted]
    total += count
    print(f"{count:6d}  {module}")
print(f"{total:6d}  public symbols declared by {len(modules)} library modules")
lines.sort()

if mode == "--write":
    with open(listing_path, "w", encoding="utf-8") as listing:
        listing.write("".join(line + "\n" for line in lines))
    print(f"public-symbols: wrote {len(lines)} symbols to {listing_path}")
elif mode == "--check":
    try:
        kept = open(listing_path, encoding="utf-8").read().splitlines()
    except OSError as error:
        sys.exit(f"public-symbols: cannot read {listing_path}: {error.strerror}")
    from collections import Counter
    now, before = Counter(lines), Counter(kept)
    added = sorted((now - before).elements())
    removed = sorted((before - now).elements())
    if added or removed:
        for line in added:
            print(f"+ {line}")
        for line in removed:
            print(f"- {line}")
        sys.exit(
            f"public-symbols: the public surface differs from {listing_path}: {len(added)} added, {len(removed)} removed "
            f"({len(kept)} listed, {len(lines)} now). If that is intended, run Scripts/public-symbols.py --write {listing_path} "
            "and update docs/public-api.md's count."
        )
    print(f"public-symbols: {len(lines)} symbols, as {listing_path} lists them")
