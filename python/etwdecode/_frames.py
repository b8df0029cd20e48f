"""Events (dicts) -> pandas DataFrame, for to_pandas() and etwdecode.dask."""

from . import HEADER_KEYS

#: The columns of a frame, in order, whatever the events have.
COLUMNS = HEADER_KEYS + (
    "process", "activity_id", "related_activity_id", "container_id", "stack", "stack_match_id", "more_stacks",
    "stack_key", "stack_key_match_id", "more_stack_keys", "error", "raw", "fields",
)


def empty_frame():
    """A frame with no rows and the columns and dtypes of every frame."""
    import pandas as pd
    frame = pd.DataFrame({c: pd.Series([], dtype=object) for c in COLUMNS})
    return _types(frame)


def _types(frame):
    import pandas as pd
    frame["time"] = pd.to_datetime(frame["time"].astype("int64"), unit="ns", utc=True)
    for c in ("id", "version", "level", "opcode", "task", "channel", "pid", "tid", "cpu", "data_len"):
        frame[c] = frame[c].astype("int64")
    frame["keywords"] = frame["keywords"].astype("uint64")
    return frame


def events_to_frame(events, expand=None):
    """A DataFrame of the events: COLUMNS, time as datetime64[ns, UTC].

    expand: None -- one column per field when all events are of one kind (one
    provider and event name), else a ``fields`` column of dicts; True/False
    forces it. Field columns whose name is also a header key are named
    ``fields.NAME``."""
    import pandas as pd
    rows = {c: [] for c in COLUMNS}
    kinds = set()
    get = dict.get
    for ev in events:
        for c in COLUMNS:
            rows[c].append(get(ev, c))
        kinds.add((ev["provider"], ev["event"]))
    if not rows["time"]:
        return empty_frame()
    frame = _types(pd.DataFrame(rows, columns=list(COLUMNS)))
    if expand is None:
        expand = len(kinds) == 1
    if expand:
        fields = pd.DataFrame.from_records(list(frame["fields"]), index=frame.index)
        fields.columns = ["fields." + c if c in COLUMNS else c for c in fields.columns]
        frame = pd.concat([frame.drop(columns=["fields"]), fields], axis=1)
    return frame


def _array(kind, values, valid, cats, n):
    """One column the native builder made (Reader._frame) as a pandas array:
    integers exact (int64/uint64, or nullable Int64/UInt64 where a row has
    none), never through float."""
    import numpy as np
    import pandas as pd
    if kind == "obj":  # element by element: lists stay lists
        return np.fromiter(values, dtype=object, count=len(values))
    if kind == "sparse":  # the objects of the rows that have one, None elsewhere
        out = np.full(n, None, dtype=object)
        out[np.frombuffer(valid, dtype=np.int64)] = np.fromiter(values, dtype=object, count=len(values))
        return out
    if kind == "none":  # no row had a value (or every one was None)
        return np.full(n, None, dtype=object)
    if kind == "cat":
        codes = np.frombuffer(values, dtype=np.int32)
        return pd.Categorical.from_codes(codes, categories=pd.Index(cats or [], dtype=object))
    if kind == "time":  # the int64 ns as they are (NaT: int64 min): no float on the way
        ns = np.frombuffer(values, dtype=np.int64).view("datetime64[ns]")
        return pd.arrays.DatetimeArray(ns.copy(), dtype=pd.DatetimeTZDtype(unit="ns", tz="UTC"))
    mask = None
    if valid is not None:
        mask = np.frombuffer(valid, dtype=np.uint8) != 1  # 0: absent, 2: None
        if not mask.any():
            mask = None
    if kind in ("i64", "u64"):
        vals = np.frombuffer(values, dtype=np.int64 if kind == "i64" else np.uint64)
        if mask is None:
            return vals
        return pd.arrays.IntegerArray(vals.copy(), mask)
    if kind == "bool":
        vals = np.frombuffer(values, dtype=np.uint8).astype(bool)
        return pd.arrays.BooleanArray(vals, mask if mask is not None else np.zeros(len(vals), dtype=bool))
    vals = np.frombuffer(values, dtype=np.float64)  # f64
    if mask is None:
        return vals
    vals = vals.copy()
    vals[mask] = np.nan
    return vals


def _field_array(kind, values, valid, at, n):
    """A field column the native builder made: the cells of the rows that
    have the field (values, validity 1: a value, 2: None; at: their rows),
    scattered into n rows at once, so the cost follows the filled cells.
    Integers exact (int64/uint64, or nullable Int64/UInt64 where a row has
    none), never through float."""
    import numpy as np
    import pandas as pd
    rows = np.frombuffer(at, dtype=np.int64)
    if kind == "none":
        return np.full(n, None, dtype=object)
    if kind == "obj":
        out = np.full(n, None, dtype=object)
        out[rows] = np.fromiter(values, dtype=object, count=len(values))
        return out
    ok = np.frombuffer(valid, dtype=np.uint8) == 1
    dense = len(rows) == n and ok.all()  # every row has a value: no mask, no copy
    if kind == "f64":
        stored = np.frombuffer(values, dtype=np.float64)
        if dense:
            return stored
        out = np.full(n, np.nan)
        out[rows[ok]] = stored[ok]
        return out
    dtype = {"i64": np.int64, "u64": np.uint64, "bool": np.uint8}[kind]
    stored = np.frombuffer(values, dtype=dtype)
    if kind == "bool":
        out = np.zeros(n, dtype=bool)
        out[rows] = stored != 0
        mask = np.ones(n, dtype=bool)
        mask[rows[ok]] = False
        return pd.arrays.BooleanArray(out, mask)
    if dense:
        return stored
    out = np.zeros(n, dtype=dtype)
    out[rows] = stored
    mask = np.ones(n, dtype=bool)
    mask[rows[ok]] = False
    return pd.arrays.IntegerArray(out, mask)


def native_frame(reader, columns=None, expand=None):
    """The remaining events of a Reader as a DataFrame, built by the native
    column builder (no event dicts): COLUMNS (those the events have, plus
    "file" for several traces), then one column per field (expanded) or a
    ``fields`` column of etwdecode.Fields. columns: the names to build, in order."""
    import gc
    import numpy as np
    import pandas as pd
    # many container objects kept: the cyclic collector would walk them all
    # again and again while they are made
    enabled = gc.isenabled()
    gc.disable()
    try:
        res = reader._frame(None if columns is None else list(columns), expand)
    finally:
        if enabled:
            gc.enable()
    n = res["rows"]
    if n == 0 and columns is None:
        return empty_frame()
    data = {}
    for name, kind, values, valid, cats in res["header"]:
        data[name] = _array(kind, values, valid, cats, n)
    for name, kind, values, valid, _cats, at in res["fields"]:
        key = "fields." + name if name in data or name in COLUMNS else name
        data[key] = _field_array(kind, values, valid, at, n)
    for key, arr in data.items():
        # object columns as Series of dtype object: pandas would otherwise
        # scan each one for datetimes (a whole column of None: every cell)
        if isinstance(arr, np.ndarray) and arr.dtype == object:
            data[key] = pd.Series(arr, dtype=object, copy=False)
    frame = pd.DataFrame(data, copy=False)
    if len(frame) != n:  # no column at all
        frame = pd.DataFrame(index=pd.RangeIndex(n))
    if columns is not None:
        want = [c for c in columns if c in frame.columns]
        want += [c for c in ("fields." + c for c in columns) if c in frame.columns and c not in want]
        frame = frame[want]
    return frame
