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
