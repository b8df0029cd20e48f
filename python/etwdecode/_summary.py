"""stats() and schemas(): the library's summaries (etw_stats.h,
etw_schemas.h), the very ones etwdump --stats --format json and --schemas
print."""

import json
import os

from ._filters import predicates
from ._native import Reader


def _summary(path, manifests, schemas, filters, options):
    pairs = predicates(filters)
    kw = dict(options)
    if pairs:
        kw["filters"] = pairs
    with Reader(os.fspath(path), list(manifests or ()), **kw) as r:
        return json.loads(r._summary(schemas))


def trace_stats(path, manifests=(), filters=None, **options):
    return _summary(path, manifests, False, filters or {}, options)


def trace_schemas(path, manifests=(), filters=None, **options):
    return _summary(path, manifests, True, filters or {}, options)["schemas"]
