#!/usr/bin/env python3
"""What makes up the packaged nextpage: its bytes by library, from the link map.

    scripts/package-sizes.py LINK-MAP STRIPPED-EXECUTABLE

scripts/package links the release executable with `-Map` (gold's format) and
runs this. Every input section the map places in an output section that the
stripped executable keeps (everything but debug info and symbol tables) is
counted for the object file it came from, grouped by library: a static
archive (libswiftCore.a, libjansson.a), a target of this package or of a
dependency (`NIOCore.build/...` is NIOCore), or what the linker made itself
(the dynamic symbol table, relocations, padding). The groups add up to the
stripped size, less the file's section headers.
"""
import collections
import os
import re
import sys

# Output sections that take no room in the stripped file: debug info and
# symbol tables (stripped), zero-initialised data (no bytes in the file).
DROPPED = re.compile(r"^\.(debug|comment|symtab|strtab|shstrtab|gnu_debuglink|swift_ast|bss|tbss)")
OUTPUT = re.compile(r"^(\S+)(?:\s+0x[0-9a-f]+\s+0x[0-9a-f]+)?\s*$")
INPUT = re.compile(r"^ (\S+)(?:\s+0x[0-9a-f]+\s+0x([0-9a-f]+)(?:\s+(.+?))?)?\s*$")
CONTINUED = re.compile(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)(?:\s+(.+?))?\s*$")
SYNTHETIC = re.compile(r"^ \*\* (.+?)(?:\s+0x[0-9a-f]+\s+0x([0-9a-f]+))?\s*$")
PROJECT = set(os.listdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources")))

# What the linker made itself (gold's "** name" entries), by what it is.
LINKER = {
    "fill": "alignment padding", "zero fill": "alignment padding",
    "eh_frame": "unwind tables (.eh_frame of all code)", "eh_frame_hdr": "unwind tables (.eh_frame of all code)",
    "merge strings": "strings and constants, merged across all libraries",
    "merge constants": "strings and constants, merged across all libraries",
    "file header": "ELF headers", "segment headers": "ELF headers", "note header": "ELF headers",
}
DYNAMIC = "dynamic linking: exported symbols (.dynsym, .dynstr, hash), relocations, PLT, GOT"


def library(path):
    """The library an input file belongs to, and the kind of library it is."""
    archive = re.match(r"(.*/)?([^/()]+\.a)\(", path)
    if archive:
        name = archive.group(2)
        if "swift_static" in path:
            return name, "Swift runtime and standard libraries (--static-swift-stdlib)"
        if name.startswith("libjansson"):
            return name, "jansson (libjansson.a)"
        return name, "C runtime and other static archives"
    target = re.search(r"/([^/]+)\.build/", path)
    if target:
        name = target.group(1)
        return name, "this package's modules" if name in PROJECT else "Swift package dependencies"
    return os.path.basename(path), "C runtime and other static archives"


def main(map_path, executable):
    by_library = collections.Counter()
    kind_of = {}

    def count(size, path=None, made=None):
        if made is not None:
            name = kind = LINKER.get(made, DYNAMIC)
        else:
            name, kind = library(path)
        by_library[name] += size
        kind_of[name] = kind

    dropped = True
    pending = None  # an entry whose address and size are on the next line: ("made", name) or ("input", name)
    in_memory_map = False
    with open(map_path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if not in_memory_map:
                in_memory_map = line.startswith("Memory map")
                continue
            if not line.strip():
                continue
            if not line[0].isspace():
                output = OUTPUT.match(line)
                if output:
                    dropped = bool(DROPPED.match(output.group(1)))
                pending = None
                continue
            synthetic = SYNTHETIC.match(line)
            if synthetic:
                pending = None
                if synthetic.group(2) is None:
                    pending = ("made", synthetic.group(1))
                elif not dropped:
                    count(int(synthetic.group(2), 16), made=synthetic.group(1))
                continue
            continued = CONTINUED.match(line)
            if continued:
                if pending is not None and not dropped:
                    size, path = int(continued.group(1), 16), continued.group(2)
                    if pending[0] == "made":
                        count(size, made=pending[1])
                    elif path and size:
                        count(size, path)
                pending = None
                continue
            found = INPUT.match(line)
            if found:
                pending = None
                if found.group(2) is None:
                    pending = ("input", found.group(1))
                elif found.group(3) and not dropped:
                    count(int(found.group(2), 16), found.group(3))

    total = sum(by_library.values())
    stripped = os.path.getsize(executable)
    by_kind = collections.Counter()
    for name, size in by_library.items():
        by_kind[kind_of[name]] += size

    def mib(size):
        return f"{size / (1 << 20):6.2f} MiB"

    print(f"stripped executable: {mib(stripped)} ({stripped} bytes); the link map places {mib(total)} of it")
    for kind, size in by_kind.most_common():
        print(f"  {mib(size)}  {100 * size / stripped:5.1f} %  {kind}")
    print("largest libraries:")
    for name, size in by_library.most_common(15):
        print(f"  {mib(size)}  {100 * size / stripped:5.1f} %  {name}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
