#!/usr/bin/env python3
"""Counts the public symbols ForgePush's library products declare, from Swift's symbol graphs.

    swift package dump-symbol-graph --minimum-access-level public
    Scripts/public-symbols.py [SYMBOL_GRAPH_FOLDER]     (default: the folder that command names)

Counted: every symbol of a library product's module (Package.swift's `.library` products) whose
precise identifier does not contain `::SYNTHESIZED::` (members a protocol's default
implementation adds), including the module's extensions of other modules' types (the
`Module@Other.symbols.json` files). Prints one line a module, then the total.
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

if len(sys.argv) > 1:
    folder = sys.argv[1]
else:
    candidates = glob.glob(os.path.join(root, ".build", "*", "symbolgraph")) + glob.glob(
        os.path.join(root, ".build", "*", "*", "symbolgraph"))
    if not candidates:
        sys.exit("public-symbols: no symbol graphs; run swift package dump-symbol-graph --minimum-access-level public")
    folder = max(candidates, key=os.path.getmtime)

total = 0
for module in modules:
    count = 0
    files = glob.glob(os.path.join(folder, f"{module}.symbols.json")) + glob.glob(os.path.join(folder, f"{module}@*.symbols.json"))
    if not files:
        sys.exit(f"public-symbols: no symbol graph for {module} in {folder}")
    for path in files:
        graph = json.load(open(path, encoding="utf-8"))
        count += sum(1 for symbol in graph["symbols"] if "::SYNTHESIZED::" not in symbol["identifier"]["precise"])
    total += count
    print(f"{count:6d}  {module}")
print(f"{total:6d}  public symbols declared by {len(modules)} library modules")
