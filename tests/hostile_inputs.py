#!/usr/bin/env python3
"""Hostile inputs of issue 9, built from the real HTTP_Server trace's manifest.

Each function returns the text of an instrumentation manifest that keeps
HTTP_Server.man's provider, events and templates (so etwdump decodes the
real events of tests/data/HTTP_Server.etl with it) but is hostile in one way.
test_etwdump.py runs etwdump over them; run this file as

    hostile_inputs.py DATA_DIR OUT_DIR

to write them to OUT_DIR (for measuring time and memory by hand).
"""
import os
import re
import sys


def message_bomb(man, repeat=300000):
    """9.2: every event's message is "%1" repeated `repeat` times (600 KB of
    template). Filled in from a field of 18 characters, one message would be
    ~5.4 MB, the 2041 events ~11 GB of JSON."""
    man = re.sub(r'(<event [^>]*?)message="\$\(string\.[^)]*\)"', r'\1message="$(string.bomb)"', man)
    return man.replace("<stringTable>", '<stringTable>\n\t\t\t<string id="bomb" value="%s" />' % ("%1" * repeat), 1)


def amplifier(man, name_len=1 << 15, items=65535):
    """9.3: every template gets, first, a field with a name of `name_len`
    characters, then a fixed array of `items` structs whose one member is a
    zero-length binary (no byte of the payload), all named by long names;
    without caps one event would be `items` x (name + 5) bytes of JSON."""
    big = "N" * name_len
    extra = ('<data name="%s" inType="win:UInt8"/>'
             '<struct name="%s" count="%d"><data name="%s" inType="win:Binary" length="0"/></struct>'
             % (big, "S" * 64, items, "M" * 4000))
    return re.sub(r'(<template tid="[^"]*">)', r'\1' + extra.replace("\\", "\\\\"), man)


def duplicates(man):
    """9.6: in each template of four fields or more (and no length or count
    that names a field), the second and third
    fields take the first one's name and the fourth that name + "_2" (which
    the renaming of the duplicates must step over)."""
    def dup(m):
        names = re.findall(r'<data name="([^"]+)"', m.group(0))
        if len(names) < 4 or re.search(r'(length|count)="[A-Za-z]', m.group(0)):  # references by name
            return m.group(0)
        new = [names[0], names[0], names[0], names[0] + "_2"]
        it = iter(new)
        return re.sub(r'<data name="[^"]+"', lambda d: '<data name="%s"' % next(it, d.group(0)[12:-1]),
                      m.group(0))
    return re.sub(r'<template tid="[^"]*">.*?</template>', dup, man, flags=re.S)


if __name__ == "__main__":
    data, out = sys.argv[1], sys.argv[2]
    man = open(os.path.join(data, "HTTP_Server.man"), encoding="utf-8").read()
    os.makedirs(out, exist_ok=True)
    for name, fn in (("message_bomb", message_bomb), ("amplifier", amplifier), ("duplicates", duplicates)):
        with open(os.path.join(out, name + ".man"), "w", encoding="utf-8") as f:
            f.write(fn(man))
