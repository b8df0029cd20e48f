"""The selection keywords of etwdecode.open() as predicates of the library's
filter (include/etwdecode/etw_filter.h): the same text forms as etwdump's
options, so a command line and a script select the same events."""

KEYS = ("provider", "event", "id", "level", "keywords", "pid", "tid", "since", "until", "errors", "process", "where")


def _text(key, v):
    if isinstance(v, bool):
        if key != "errors":
            raise TypeError("%s=: expected a str or an int, not a bool" % key)
        return "" if v else "!"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return v
    raise TypeError("%s=: expected a str or an int, not %s" % (key, type(v).__name__))


def predicates(filters):
    """[(key, value text), ...] from open()'s keywords. A list or tuple value
    gives several predicates of one key (alternatives; "!x" excludes)."""
    pairs = []
    for key, value in filters.items():
        if key not in KEYS:
            raise TypeError("unknown filter %r (known: %s)" % (key, ", ".join(KEYS)))
        if value is None:
            continue
        values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
        for v in values:
            pairs.append((key, _text(key, v)))
    return pairs
