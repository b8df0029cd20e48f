"""A minimal, independent ETL *writer* for the tests (Python 3 standard library only).

It writes synthetic traces of manifest-based events (EVENT_HEADER records) so
that etwdump and etlref can be run on known input. It is written from the
format description (the shared docs/FORMATS.md sections 1.1, 1.2, 1.4, 1.5)
and checked field by field against a trace recorded on Windows
(tests/data/primitive-types.etl); it shares no code with libetwdecode.

File layout written (all little-endian):

* Buffer 0, BufferType HEADER (4): one record, the log-file header: a
  SYSTEM_TRACE_HEADER (marker 0xC0020002 for a 64-bit writer, 0xC0010002 for a
  32-bit one: HeaderType SYSTEM64/SYSTEM32, event version 2, hook 0x0000)
  whose payload is TRACE_LOGFILE_HEADER (x64 layout 0x118 bytes, x86 layout
  0x110 bytes) followed by the session name and the log-file name as
  NUL-terminated UTF-16LE strings.
* Then the events, in buffers of BufferType GENERIC (0), one CPU per buffer.
  Each event is an EVENT_HEADER record (HeaderType 0xC013 for pointer size 8,
  0xC012 for 4), 0x50 bytes of header, the extended items if any, then the
  payload;
  records start 8-byte aligned (zero padding between them).
* Every buffer is BufferSize bytes in the file (no compression); the unused
  tail is 0xFF-filled; SavedOffset = FilledBytes = end of the last record
  (8-aligned), State 3 (flush), BufferFlag PROC_INDEX (0x20: a u16
  processor index in ClientContext) plus FLUSH_MARKER (0x01) on the buffers
  written by the final flush (the partly filled ones), as Windows 10 does.

Clock: QPC (ReservedFlags 1) with PerfFreq 10 MHz, so one raw tick is 100 ns.
The header record's raw time is `raw_base`; an event's raw time is
raw_base + ts, so a consumer anchored on (StartTime, header raw time) shows
it at exactly start_filetime + ts (FILETIME, 100-ns units).

Checked against primitive-types.etl (Windows 10, 64-bit): the same buffer
header fields for the header buffer (State 3, BufferFlag 0x21, BufferType 4,
SequenceNumber 0, SavedOffset = FilledBytes = 8-aligned end of data), the same
log-file header record form (0xC0020002, hook 0x0000, 0x20 + 0x118 + strings)
and TRACE_LOGFILE_HEADER offsets; EVENT_HEADER Flags 0 and EventProperty 0 as
in every EVENT_HEADER record without extended items of the recorded traces.

Extended data items (ev["ext"]) are written as FORMATS.md section 1.6 lays
them out; their contents are the caller's.

WPP records (an event with a "wpp" key) are written in the MESSAGE_TRACE_HEADER
form WPP's trace macros produce (evntrace.h TraceMessage; the layout the real
CldFlt traces of ../shared/data/wpp carry): a u32 marker (record size in the
low 16 bits, TRACE_HEADER_FLAG | TRACE_MESSAGE = 0x90 in the high byte), u16
message number, u16 TRACE_MESSAGE_* flags, then the optional items in flag
order - sequence number (0x01, u32), message GUID (0x02, 16 bytes), time
stamp (0x08, raw clock u64), system info (0x20: u32 thread id, u32 process
id) - then the arguments. The CldFlt records have flags 0x00AA (GUID,
TIMESTAMP, SYSTEMINFO, POINTER64): the default here (0x004A for 32-bit).

Limits: no compression, no classic/kernel records, no lost-event records; the header
buffer holds only the log-file header record (Windows 10 adds a 0x0050
PartitionInfoExtension record after it, not written here); the time-zone
block is all zero (UTC); one clock (QPC at 10 MHz).
"""
import struct
import uuid

BUFFER_HEADER = 0x48
BUFFER_SIZE = 0x10000               # 64 KiB, the session buffer size of every buffer
EVENT_HEADER_SIZE = 0x50
SYSTEM_HEADER_SIZE = 0x20

BUFFER_FLAG_FLUSH_MARKER = 0x0001
BUFFER_FLAG_PROC_INDEX = 0x0020
BUFFER_TYPE_GENERIC = 0
BUFFER_TYPE_HEADER = 4
BUFFER_STATE_FLUSH = 3

CLOCK_QPC = 1
PERF_FREQ = 10000000                # raw ticks per second: one tick = 100 ns
TIME_ZONE_SIZE = 0xAC               # RTL_TIME_ZONE_INFORMATION


def _align8(n):
    return (n + 7) & ~7


def _guid(g):
    if not isinstance(g, uuid.UUID):
        g = uuid.UUID(str(g))
    return g.bytes_le


def _utf16z(s):
    return s.encode("utf-16-le") + b"\0\0"


class _Buffer:
    def __init__(self, cpu):
        self.cpu = cpu
        self.data = bytearray()      # records after the 0x48-byte header
        self.last_raw = 0

    def room(self, rsize):
        return BUFFER_HEADER + len(self.data) + rsize <= BUFFER_SIZE

    def add(self, rec, raw):
        self.data += rec
        self.data += b"\0" * (_align8(len(rec)) - len(rec))
        self.last_raw = raw


def _buffer_bytes(buf, btype, flags, seq, logger_id, stamp):
    filled = BUFFER_HEADER + len(buf.data)
    h = struct.pack("<IIIIqqQHHIIHH16s",
                    BUFFER_SIZE,            # 0x00 BufferSize
                    filled,                 # 0x04 SavedOffset
                    filled,                 # 0x08 CurrentOffset
                    0,                      # 0x0C ReferenceCount
                    stamp,                  # 0x10 TimeStamp (flush time, raw clock)
                    seq,                    # 0x18 SequenceNumber
                    0,                      # 0x20 ClockType/Frequency union (0 in files)
                    buf.cpu,                # 0x28 ClientContext.ProcessorIndex (flag PROC_INDEX)
                    logger_id,              # 0x2A ClientContext.LoggerId
                    BUFFER_STATE_FLUSH,     # 0x2C State
                    filled,                 # 0x30 Offset / FilledBytes
                    flags,                  # 0x34 BufferFlag
                    btype,                  # 0x36 BufferType
                    b"\0" * 16)             # 0x38 reference clock / pointers: unused in files
    assert len(h) == BUFFER_HEADER
    out = h + bytes(buf.data)
    return out + b"\xff" * (BUFFER_SIZE - len(out))


def ext_items(items):
    """Extended data items in their in-buffer form (FORMATS.md 1.6): per item
    a u16 total size (8-byte header + data, padded to 8), u16 ExtType, u16
    Linkage (1 when another item follows), u16 DataSize, the data, zero
    padding."""
    out = b""
    for i, (ext_type, data) in enumerate(items):
        data = bytes(data)
        total = _align8(8 + len(data))
        out += struct.pack("<HHHH", total, ext_type, 1 if i + 1 < len(items) else 0, len(data))
        out += data + b"\0" * (total - 8 - len(data))
    return out


def event_record(ev, pointer_size=8, raw_base=0):
    """The bytes of one EVENT_HEADER record (without the alignment padding).
    ev["ext"]: optional list of (ExtType, data bytes) extended items; the
    record then has EVENT_HEADER_FLAG_EXTENDED_INFO (0x0001)."""
    ext = ext_items(ev.get("ext", ()))
    payload = ext + bytes(ev.get("payload", b""))
    size = EVENT_HEADER_SIZE + len(payload)
    if size > 0xFFFF or BUFFER_HEADER + size > BUFFER_SIZE:
        raise ValueError("event too large: %d bytes of payload" % len(payload))
    return struct.pack("<HHHHIIq16sHBBBBHQII16s",
                       size,                                  # 0x00 Size
                       0xC013 if pointer_size == 8 else 0xC012,  # 0x02 HeaderType (in buffers)
                       ev.get("flags", 0) | (1 if ext else 0),  # 0x04 Flags (EXTENDED_INFO)
                       ev.get("property", 0),                 # 0x06 EventProperty
                       ev.get("tid", 0) & 0xFFFFFFFF,         # 0x08 ThreadId
                       ev.get("pid", 0) & 0xFFFFFFFF,         # 0x0C ProcessId
                       raw_base + ev.get("ts", 0),            # 0x10 TimeStamp (raw clock)
                       _guid(ev["provider"]),                 # 0x18 ProviderId
                       ev.get("id", 0),                       # 0x28 EVENT_DESCRIPTOR.Id
                       ev.get("version", 0),                  # 0x2A Version
                       ev.get("channel", 0),                  # 0x2B Channel
                       ev.get("level", 0),                    # 0x2C Level
                       ev.get("opcode", 0),                   # 0x2D Opcode
                       ev.get("task", 0),                     # 0x2E Task
                       ev.get("keywords", 0),                 # 0x30 Keyword
                       ev.get("kernel_time", 0),              # 0x38 KernelTime
                       ev.get("user_time", 0),                # 0x3C UserTime
                       _guid(ev.get("activity_id", uuid.UUID(int=0)))) + payload  # 0x40 ActivityId


# TRACE_MESSAGE_* (evntrace.h)
TRACE_MESSAGE_SEQUENCE = 0x01
TRACE_MESSAGE_GUID = 0x02
TRACE_MESSAGE_COMPONENTID = 0x04
TRACE_MESSAGE_TIMESTAMP = 0x08
TRACE_MESSAGE_SYSTEMINFO = 0x20
TRACE_MESSAGE_POINTER32 = 0x40
TRACE_MESSAGE_POINTER64 = 0x80


def message_record(ev, pointer_size=8, raw_base=0):
    """The bytes of one WPP MESSAGE record. ev["wpp"]: the message number;
    ev["provider"]: the message GUID; ev["message_flags"] (default GUID |
    TIMESTAMP | SYSTEMINFO | POINTER64/32); ev["sequence"] with flag 0x01."""
    flags = ev.get("message_flags", TRACE_MESSAGE_GUID | TRACE_MESSAGE_TIMESTAMP | TRACE_MESSAGE_SYSTEMINFO |
                   (TRACE_MESSAGE_POINTER64 if pointer_size == 8 else TRACE_MESSAGE_POINTER32))
    body = b""
    if flags & TRACE_MESSAGE_SEQUENCE:
        body += struct.pack("<I", ev.get("sequence", 0))
    if flags & TRACE_MESSAGE_GUID:
        body += _guid(ev["provider"])
    elif flags & TRACE_MESSAGE_COMPONENTID:
        body += struct.pack("<I", ev.get("component", 0))
    if flags & TRACE_MESSAGE_TIMESTAMP:
        body += struct.pack("<q", raw_base + ev.get("ts", 0))
    if flags & TRACE_MESSAGE_SYSTEMINFO:
        body += struct.pack("<II", ev.get("tid", 0) & 0xFFFFFFFF, ev.get("pid", 0) & 0xFFFFFFFF)
    body += bytes(ev.get("payload", b""))
    size = 8 + len(body)
    if size > 0xFFFF or BUFFER_HEADER + size > BUFFER_SIZE:
        raise ValueError("message too large: %d bytes" % size)
    return struct.pack("<IHH", size | (0x90 << 24), ev["wpp"], flags) + body


def time_zone(bias=0, standard_bias=0, daylight_bias=0):
    """RTL_TIME_ZONE_INFORMATION (0xAC bytes): Bias, StandardName[32], StandardDate, StandardBias,
    DaylightName[32], DaylightDate, DaylightBias; biases in minutes, UTC = local time + bias."""
    tz = struct.pack("<i", bias) + b"\0" * (64 + 16) + struct.pack("<i", standard_bias)
    tz += b"\0" * (64 + 16) + struct.pack("<i", daylight_bias)
    assert len(tz) == TIME_ZONE_SIZE
    return tz


def logfile_header_record(pointer_size, start_filetime, end_filetime, cpus, session, logfile_name,
                          buffers_written, raw_base, pid=0, tid=0, timezone_bias=0):
    """The log-file header record: SYSTEM_TRACE_HEADER + TRACE_LOGFILE_HEADER + the two strings."""
    p = pointer_size
    body = struct.pack("<I4BIIqIIIIIIII",
                       BUFFER_SIZE,                  # BufferSize
                       10, 0, 0, 0,                  # Version: Major 10, Minor 0, SubVersion, SubMinorVersion
                       19041,                        # ProviderVersion (OS build)
                       cpus,                         # NumberOfProcessors
                       end_filetime,                 # EndTime
                       156250,                       # TimerResolution (100-ns units)
                       0,                            # MaximumFileSize (MB)
                       0,                            # LogFileMode (the recorded traces here state 0)
                       buffers_written,              # BuffersWritten
                       1,                            # StartBuffers
                       p,                            # PointerSize
                       0,                            # EventsLost
                       3000)                         # CpuSpeedInMHz
    body += b"\0" * (2 * p)                          # LoggerName, LogFileName pointers (meaningless in files)
    body += time_zone(timezone_bias)                 # TimeZone: Bias (default 0: UTC), no names, no DST
    body += b"\0" * (_align8(len(body)) - len(body))  # pad to 8: 0xEC -> 0xF0 (x86), 0xF4 -> 0xF8 (x64)
    body += struct.pack("<qqqII",
                        start_filetime - 36000000000,  # BootTime: an hour before the start
                        PERF_FREQ,                   # PerfFreq
                        start_filetime,              # StartTime
                        CLOCK_QPC,                   # ReservedFlags: clock type
                        0)                           # BuffersLost
    assert len(body) == (0x118 if p == 8 else 0x110)
    body += _utf16z(session) + _utf16z(logfile_name)
    size = SYSTEM_HEADER_SIZE + len(body)
    head = struct.pack("<HBBHBBIIqII",
                       2,                            # Version (event version 2)
                       0x02 if p == 8 else 0x01,     # HeaderType SYSTEM64 / SYSTEM32
                       0xC0,                         # Flags: TRACE_HEADER_FLAG | EVENT_TRACE
                       size,                         # Packet.Size
                       0, 0,                         # Packet.Type, Group: hook 0x0000 (log-file header)
                       tid, pid,                     # ThreadId, ProcessId
                       raw_base,                     # SystemTime (raw clock)
                       0, 0)                         # KernelTime, UserTime
    return head + body


def write_etl(path, events, pointer_size=8, start_filetime=132000000000000000, cpus=1,
              session="etwdecode-test", logfile_name=None, raw_base=10000000000, logger_id=0x20,
              header_pid=4, header_tid=8, timezone_bias=0):
    """Write a trace of EVENT_HEADER events to `path`; return the number of buffers written.

    events: a list of dicts with keys
      provider  uuid.UUID or GUID string (the ProviderId)
      id, version, level, opcode, task, channel, keywords   the EVENT_DESCRIPTOR (default 0)
      pid, tid  (default 0)
      ts        time after the session start in 100-ns ticks (FILETIME units); the event shows at
                start_filetime + ts. May be negative down to -raw_base.
      payload   bytes (user data; default empty). 0x50 + len(payload) must fit in 16 bits.
    optional keys:
      flags       EVENT_HEADER Flags, default 0: what the recorded Windows traces store (the
                  32/64-bit header flags 0x20/0x40 are implied by the header type 0xC012/0xC013,
                  consumers set them). Do not set 0x0001 (EXTENDED_INFO): no items are written.
      property    EventProperty (default 0)
      activity_id uuid.UUID or string (default all-zero)
      kernel_time, user_time  the ProcessorTime halves (default 0)
      cpu         the processor whose buffers hold the event (default: index % cpus)
      wpp         a WPP message number: the record is a MESSAGE record of message GUID
                  `provider` (message_record: message_flags, sequence)
    timezone_bias: the header's TimeZone.Bias, minutes, positive west of UTC (420: UTC-07:00).
    Records are written in list order into their CPU's current buffer; a full buffer goes to the
    file at once, the partly filled ones at the end in CPU order (as a real session flushes them),
    so with cpus > 1 the buffers of different CPUs interleave. A consumer merges by timestamp: give
    events of one CPU increasing ts, and distinct ts across CPUs when the order matters.
    """
    if pointer_size not in (4, 8):
        raise ValueError("pointer_size must be 4 or 8")
    if cpus < 1 or cpus > 0x7FF:
        raise ValueError("cpus must be 1..2047 (the 11-bit processor index)")
    current = {}
    done = []                         # (buffer, flushed_at_end)
    for i, ev in enumerate(events):
        cpu = ev.get("cpu", i % cpus)
        if not 0 <= cpu < cpus:
            raise ValueError("event %d: cpu %d not below cpus %d" % (i, cpu, cpus))
        rec = message_record(ev, pointer_size, raw_base) if "wpp" in ev else event_record(ev, pointer_size, raw_base)
        buf = current.get(cpu)
        if buf is None or not buf.room(len(rec)):
            if buf is not None:
                done.append((buf, False))
            buf = current[cpu] = _Buffer(cpu)
        buf.add(rec, raw_base + ev.get("ts", 0))
    for cpu in sorted(current):
        done.append((current[cpu], True))

    last_ts = max([ev.get("ts", 0) for ev in events] + [0])
    hdr = _Buffer(0)
    hdr.add(logfile_header_record(pointer_size, start_filetime, start_filetime + last_ts, cpus, session,
                                  str(path) if logfile_name is None else logfile_name, 1 + len(done),
                                  raw_base, header_pid, header_tid, timezone_bias), raw_base)
    with open(path, "wb") as f:
        f.write(_buffer_bytes(hdr, BUFFER_TYPE_HEADER, BUFFER_FLAG_PROC_INDEX | BUFFER_FLAG_FLUSH_MARKER,
                              0, logger_id, 0))
        for seq, (buf, at_end) in enumerate(done, 1):
            flags = BUFFER_FLAG_PROC_INDEX | (BUFFER_FLAG_FLUSH_MARKER if at_end else 0)
            f.write(_buffer_bytes(buf, BUFFER_TYPE_GENERIC, flags, seq, logger_id, buf.last_raw))
    return 1 + len(done)
