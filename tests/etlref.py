"""A minimal, independent reader of ETL record headers, for the tests.

It is written from the format description (docs/FORMATS.md sections 1.2,
1.4, 1.5 of the shared reference), shares no code with libetwdecode, and
reads only what the selection tests need: for each record its header form,
provider (or event-class) GUID, descriptor, pid/tid, raw timestamp and user
data length. Compressed buffers are not supported (records() raises), so use
it on the traces whose buffers are all plain.
"""
import struct
import uuid

BUFFER_HEADER = 0x48          # WMI_BUFFER_HEADER size; first record at +0x48
FLAG_COMPRESSED = 0x0040      # BufferFlag COMPRESSED


def guid(b, o):
    return str(uuid.UUID(bytes_le=bytes(b[o:o + 16])))


class Record:
    __slots__ = ("form", "provider", "id", "version", "level", "opcode", "task", "keywords", "pid", "tid",
                 "raw", "size", "data_len", "cpu", "header", "offset", "htype", "hver")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


def records(path):
    """Every record of the file, in file order (not merged by time)."""
    d = open(path, "rb").read()
    out = []
    off = 0
    first = True
    while off + BUFFER_HEADER <= len(d):
        size, saved = struct.unpack_from("<II", d, off)
        if size < BUFFER_HEADER:
            break
        filled, flag = struct.unpack_from("<IH", d, off + 0x30)
        if flag & FLAG_COMPRESSED:
            raise ValueError("compressed buffer at 0x%x: not supported here" % off)
        cpu = d[off + 0x28]
        end = min(off + size, off + (filled or saved))
        p = off + BUFFER_HEADER
        while p + 8 <= end:
            m, = struct.unpack_from("<I", d, p)
            if m == 0xFFFFFFFF:
                break
            flags, htype = m >> 24, (m >> 16) & 0xFF
            if flags == 0x90:  # MESSAGE (WPP)
                rsize = m & 0xFFFF
                out.append(Record(form="MESSAGE", size=rsize, cpu=cpu, header=False))
            elif htype in (0x01, 0x02, 0x03, 0x04, 0x10, 0x11):  # SYSTEM, COMPACT, PERFINFO
                rsize, typ, group = struct.unpack_from("<HBB", d, p + 4)
                if htype in (0x10, 0x11):
                    fixed, tid, pid = 0x10, None, None
                    raw, = struct.unpack_from("<q", d, p + 8)
                else:
                    fixed = 0x20 if htype in (0x01, 0x02) else 0x18
                    tid, pid, raw = struct.unpack_from("<IIq", d, p + 8)
                ver = m & 0xFFFF
                extra = 8 * (bool(ver & 0x8000) + ((ver >> 8) & 0x7))
                out.append(Record(form="KERNEL", provider=(group, typ), opcode=typ, version=ver & 0xFF, level=0,
                                  id=0, task=0, keywords=0, pid=pid, tid=tid, raw=raw, size=rsize,
                                  data_len=rsize - fixed - extra, cpu=cpu, header=first))
            elif htype in (0x12, 0x13, 0x0D):  # EVENT_HEADER
                rsize, _, eflags = struct.unpack_from("<HHH", d, p)
                tid, pid, raw = struct.unpack_from("<IIq", d, p + 8)
                eid, ver, chan, lvl, opc, task, kw = struct.unpack_from("<HBBBBHQ", d, p + 0x28)
                q = p + 0x50
                if eflags & 1:  # extended items: u16 reserved, u16 type, u16 reserved, u16 size(lo 15 bits..)
                    while True:
                        _, ext_type, link, ext_size = struct.unpack_from("<HHHH", d, q)
                        # each item is padded to 8 bytes (the last one's padding
                        # may be cut at the record's end)
                        q = min(q + ((8 + ext_size + 7) & ~7), p + rsize)
                        if not (link & 1):
                            break
                out.append(Record(form="EVENT_HEADER", provider=guid(d, p + 0x18), id=eid, version=ver, level=lvl,
                                  opcode=opc, task=task, keywords=kw, pid=pid, tid=tid, raw=raw, size=rsize,
                                  data_len=p + rsize - q, cpu=cpu, header=False))
            elif htype in (0x0A, 0x14, 0x0B, 0x15):  # EVENT_TRACE_HEADER, INSTANCE
                rsize, _, _, typ, lvl, ver = struct.unpack_from("<HBBBBH", d, p)
                tid, pid, raw = struct.unpack_from("<IIq", d, p + 8)
                fixed = 0x30 if htype in (0x0A, 0x14) else 0x48
                out.append(Record(form="CLASSIC", provider=guid(d, p + 0x18), id=0, version=ver, level=lvl,
                                  opcode=typ, task=0, keywords=0, pid=pid, tid=tid, raw=raw, size=rsize,
                                  data_len=rsize - fixed, cpu=cpu, header=False))
            else:
                raise ValueError("unknown record marker 0x%08x at 0x%x" % (m, p))
            first = False
            out[-1].offset, out[-1].htype, out[-1].hver = p, htype, m & 0xFFFF
            p += (max(out[-1].size, 8) + 7) & ~7
        off += size
    return out


def merged(recs):
    """The records in the order a consumer sees them: by timestamp, equal ones in file order, the
    log-file header first (records without a timestamp keep their place after the one before)."""
    keyed, last = [], None
    for i, r in enumerate(recs):
        t = r.raw if r.raw is not None else last
        last = t
        keyed.append((0 if r.header else 1, t if t is not None else 0, i, r))
    return [k[3] for k in sorted(keyed, key=lambda k: k[:3])]


def logfile(path):
    """(StartTime FILETIME, PerfFreq, clock type, header raw timestamp) of a 64- or 32-bit header."""
    d = open(path, "rb").read()
    p = BUFFER_HEADER
    htype = d[p + 2]
    raw, = struct.unpack_from("<q", d, p + 0x10)
    body = p + 0x20
    psize = 8 if htype == 0x02 else 4
    base = 0x100 - (8 - psize) * 2  # PerfFreq at 0x100 (x64) / 0xF8 (x86)
    freq, start = struct.unpack_from("<qq", d, body + base)
    clock, = struct.unpack_from("<I", d, body + base + 0x10)
    return start, freq, clock, raw


def time_zone(path):
    """The log-file header's whole TIME_ZONE_INFORMATION: (Bias, StandardDate, StandardBias,
    DaylightDate, DaylightBias), each date the 8 u16 of a SYSTEMTIME (wYear, wMonth, wDayOfWeek,
    wDay, wHour, wMinute, wSecond, wMilliseconds). Layout: LONG Bias, WCHAR StandardName[32],
    SYSTEMTIME StandardDate, LONG StandardBias, WCHAR DaylightName[32], SYSTEMTIME DaylightDate,
    LONG DaylightBias."""
    d = open(path, "rb").read()
    p = BUFFER_HEADER
    psize = 8 if d[p + 2] == 0x02 else 4
    tz = p + 0x20 + 0x38 + 2 * psize
    bias, = struct.unpack_from("<i", d, tz)
    std_date = struct.unpack_from("<8H", d, tz + 4 + 64)
    std_bias, = struct.unpack_from("<i", d, tz + 4 + 64 + 16)
    dl_date = struct.unpack_from("<8H", d, tz + 4 + 64 + 16 + 4 + 64)
    dl_bias, = struct.unpack_from("<i", d, tz + 4 + 64 + 16 + 4 + 64 + 16)
    return bias, std_date, std_bias, dl_date, dl_bias


def timezone_bias(path):
    """The log-file header's TimeZone.Bias (minutes, positive west of UTC) of a 64- or 32-bit header:
    TRACE_LOGFILE_HEADER has 0x38 bytes of fixed fields, then the LoggerName and LogFileName
    pointers, then TIME_ZONE_INFORMATION, whose first member is Bias (a LONG)."""
    d = open(path, "rb").read()
    p = BUFFER_HEADER
    psize = 8 if d[p + 2] == 0x02 else 4
    bias, = struct.unpack_from("<i", d, p + 0x20 + 0x38 + 2 * psize)
    return bias
