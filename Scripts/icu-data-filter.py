#!/usr/bin/env python3
"""Writes a smaller copy of an ICU common data package (a `.dat` file, format "CmnD").

`make dist` links this copy into the static apnsctl in place of the toolchain's full ICU data
(34 MB, about 40 % of the release tarball). apnsctl speaks English and formats dates as ISO 8601,
so what it drops is what only other languages use; ICU falls back to the root locale for a locale
whose data is absent, as it does for any locale it does not know:

  - the data of every locale but root and English (en, en_US, en_US_POSIX, en_001), in every tree
    (locale data at the top, collation, time zone, unit, currency, language and region names,
    spell-out rules);
  - transliteration rules (translit/), which Foundation uses only for String.applyingTransform;
  - the dictionaries for word breaks in Chinese, Japanese, Thai, Lao, Khmer and Burmese (brkitr/*.dict);
  - the conversion tables of legacy character sets (*.cnv): Unicode's encodings are built into ICU.

Everything else (Unicode properties, normalization, time zones, supplemental and plural data,
break rules) is kept as it is. The package layout is ICU's common data format (ICU's
source/common/ucmndata.h): a header, a table of contents of (name offset, data offset) pairs sorted
by name, the names, then each item aligned to 16 bytes.

Usage: icu-data-filter.py IN.dat OUT.dat
"""
import re
import struct
import sys

KEPT_LOCALES = {"root", "en", "en_US", "en_US_POSIX", "en_001"}
LOCALE_ITEM = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]*)*\.res$")


def read_package(data):
    header_size, magic1, magic2 = struct.unpack_from("<HBB", data, 0)
    if (magic1, magic2) != (0xDA, 0x27) or data[12:16] != b"CmnD":
        sys.exit("icu-data-filter: not an ICU common data package")
    count, = struct.unpack_from("<I", data, header_size)
    entries = [struct.unpack_from("<II", data, header_size + 4 + 8 * i) for i in range(count)]
    items = []
    for index, (name_offset, data_offset) in enumerate(entries):
        start = header_size + name_offset
        name = data[start:data.index(b"\0", start)].decode("ascii")
        end = entries[index + 1][1] if index + 1 < count else len(data) - header_size
        items.append((name, data[header_size + data_offset:header_size + end]))
    return data[:header_size], items


def kept(name):
    parts = name.split("/")[1:]  # without the package's own folder, icudtNNl
    tree, leaf = (parts[0] if len(parts) > 1 else ""), parts[-1]
    if tree == "translit" or leaf.endswith(".cnv") or (tree == "brkitr" and leaf.endswith(".dict")):
        return False
    if LOCALE_ITEM.match(leaf):
        return leaf[: -len(".res")] in KEPT_LOCALES
    return True


def write_package(header, items):
    count = len(items)
    names = b""
    name_offsets = []
    table_size = 4 + 8 * count
    for name, _ in items:
        name_offsets.append(table_size + len(names))
        names += name.encode("ascii") + b"\0"
    body = bytearray()
    data_offsets = []
    position = table_size + len(names)
    for _, item in items:
        padding = (-(len(header) + position + len(body))) % 16
        body += b"\0" * padding
        data_offsets.append(position + len(body))
        body += item
    table = struct.pack("<I", count) + b"".join(struct.pack("<II", n, d) for n, d in zip(name_offsets, data_offsets))
    return header + table + names + bytes(body)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    source = open(sys.argv[1], "rb").read()
    header, items = read_package(source)
    selected = sorted((item for item in items if kept(item[0])), key=lambda item: item[0].encode("ascii"))
    if not any(name.endswith("/root.res") for name, _ in selected) or len(selected) < 20:
        sys.exit("icu-data-filter: the filter kept too little; is this ICU's data package?")
    output = write_package(header, selected)
    open(sys.argv[2], "wb").write(output)
    print(f"icu-data-filter: {len(selected)} of {len(items)} items, {len(output)} of {len(source)} bytes")


main()
