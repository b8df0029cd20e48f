/* py_event.c - an event as a dict, built straight from the pull decoder
 * (no JSON text in between): the keys of etw_json_event()
 * (src/format/etw_json.c) and the value forms of
 * src/format/etw_fields_json.c, with the type differences docs/python.md
 * lists (time as int nanoseconds, binary as bytes, hex numbers as int,
 * NaN/Infinity as float). The common forms (integers, strings, booleans,
 * doubles, binaries) are built directly; the rarer string forms (GUIDs,
 * addresses, SIDs, times, map names) are rendered by the library's own JSON
 * value writer into a scratch text and read back as one JSON scalar, so
 * they cannot drift from etwdump's output. */
#include "py_native.h"

/* ---- pieces of an event ---- */

/* The text the library's writers put in the scratch buffer, as an object. */
PyObject *scratch_scalar(Reader *self) {
    if (etw_text_status(&self->scratch) != ETW_OK) return PyErr_NoMemory();
    return json_scalar(self->scratch.data ? self->scratch.data : "", self->scratch.len);
}

PyObject *guid_str(Reader *self, const etw_guid *g) {
    uint64_t h = fnv1a(g, sizeof *g);
    PyObject *o = str_cache_get(&self->strings, g, sizeof *g, h);
    if (o) return o;
    char s[ETW_GUID_STRING_SIZE];
    etw_guid_format(g, s);
    o = PyUnicode_FromStringAndSize(s, ETW_GUID_STRING_SIZE - 1);
    if (o) str_cache_put(&self->strings, g, sizeof *g, h, o);
    return o;
}

PyObject *utf8_cached(Reader *self, const char *s, size_t n) {
    uint64_t h = fnv1a(s, n);
    PyObject *o = str_cache_get(&self->strings, s, n, h);
    if (o) return o;
    o = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
    if (o) str_cache_put(&self->strings, s, n, h, o);
    return o;
}

/* FILETIME -> int nanoseconds since the Unix epoch; None outside the range
 * the JSON writer prints (it writes null there). */
PyObject *time_ns(int64_t ft) {
    if (ft < 0 || ft > ETW_FILETIME_MAX) Py_RETURN_NONE;
    int64_t d = ft - FILETIME_UNIX_EPOCH;
    if (d <= INT64_MAX / 100 && d >= INT64_MIN / 100) return PyLong_FromLongLong(d * 100);
    PyObject *a = PyLong_FromLongLong(d), *hundred = PyLong_FromLong(100);
    PyObject *r = a && hundred ? PyNumber_Multiply(a, hundred) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(hundred);
    return r;
}

/* A FILETIME field as the JSON writer has it: RFC 3339 text, 0 -> None. */
PyObject *filetime_text(Reader *self, int64_t ft) {
    if (ft == 0) Py_RETURN_NONE;
    etw_text_clear(&self->scratch);
    if (etw_text_filetime(&self->scratch, ft) != ETW_OK) Py_RETURN_NONE;
    if (etw_text_status(&self->scratch) != ETW_OK) return PyErr_NoMemory();
    return PyUnicode_FromStringAndSize(self->scratch.data, (Py_ssize_t)self->scratch.len);
}

PyObject *utf16_str(const uint8_t *p, size_t n) {
    int bo = -1; /* little-endian */
    return PyUnicode_DecodeUTF16((const char *)p, (Py_ssize_t)(n & ~(size_t)1), "replace", &bo);
}

/* 8-bit text: UTF-8 when it is all valid UTF-8, else Latin-1. */
PyObject *ansi_str(const uint8_t *p, size_t n) {
    if (etw_utf8_valid(p, n)) return PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, "strict");
    return PyUnicode_DecodeLatin1((const char *)p, (Py_ssize_t)n, NULL);
}

int set_item(PyObject *d, int key, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItem(d, g_keys[key], v);
    Py_DECREF(v);
    return rc;
}

int set_named(PyObject *d, const char *name, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItemString(d, name, v);
    Py_DECREF(v);
    return rc;
}

/* The value through the library's JSON writer (the rare forms). */
PyObject *value_via_json(Reader *self, const etw_value *v) {
    etw_text_clear(&self->scratch);
    etw_value_json(&self->scratch, v);
    return scratch_scalar(self);
}

/* How integer_obj() gives an integer value (integer_json() in
 * src/format/etw_fields_json.c decides the same way): NUM_I64 (*out holds
 * the signed value's bits), NUM_U64, NUM_BOOL, or NUM_OBJ for the other
 * forms (map names, characters, addresses, times, a bad size), which
 * integer_obj() builds. Signed only for the signed in-types (and unsigned
 * ones shown as signed); pointers, sizes and hex types are unsigned. */
int integer_class(const etw_value *v, uint64_t *out) {
    const uint8_t *d = v->data;
    uint32_t size = v->size;
    uint16_t in = v->in_type, out_type = v->out_type;
    uint64_t u;
    switch (size) {
    case 1: u = d[0]; break;
    case 2: u = (uint64_t)d[0] | (uint64_t)d[1] << 8; break;
    case 4: u = (uint64_t)d[0] | (uint64_t)d[1] << 8 | (uint64_t)d[2] << 16 | (uint64_t)d[3] << 24; break;
    case 8: {
        u = 0;
        for (int i = 7; i >= 0; i--) u = u << 8 | d[i];
        break;
    }
    default: return NUM_OBJ;
    }
    if (v->prop && v->prop->map && v->prop->map->entries && v->prop->map->count) return NUM_OBJ;
    *out = u;
    switch (out_type) {
    case ETW_OUTTYPE_BOOLEAN: return NUM_BOOL;
    case ETW_OUTTYPE_STRING:
        if (size == 1 || size == 2) return NUM_OBJ;
        break;
    case ETW_OUTTYPE_HEXINT8:
    case ETW_OUTTYPE_HEXINT16:
    case ETW_OUTTYPE_HEXINT32:
    case ETW_OUTTYPE_HEXINT64:
    case ETW_OUTTYPE_HEXBINARY:
    case ETW_OUTTYPE_CODE_POINTER:
    case ETW_OUTTYPE_WIN32ERROR: /* "0x..." in JSON: unsigned, as the hex types */
    case ETW_OUTTYPE_NTSTATUS:
    case ETW_OUTTYPE_HRESULT: return NUM_U64;
    case ETW_OUTTYPE_IPV4:
        if (size == 4) return NUM_OBJ;
        break;
    case ETW_OUTTYPE_PORT:
        if (size == 2) {
            *out = (uint64_t)(d[0] << 8 | d[1]); /* network byte order */
            return NUM_U64;
        }
        break;
    case ETW_OUTTYPE_DATETIME:
    case ETW_OUTTYPE_DATETIME_UTC:
    case ETW_OUTTYPE_CULTURE_INSENSITIVE_DATETIME:
        if (size == 8) return NUM_OBJ;
        break;
    default: break;
    }
    switch (in) {
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET: return NUM_U64;
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_INT64: break;
    default:
        if (out_type != ETW_OUTTYPE_BYTE && out_type != ETW_OUTTYPE_SHORT && out_type != ETW_OUTTYPE_INT &&
            out_type != ETW_OUTTYPE_LONG)
            return NUM_U64;
    }
    int64_t s;
    switch (size) {
    case 1: s = (int8_t)d[0]; break;
    case 2: s = (int16_t)(uint16_t)u; break;
    case 4: s = (int32_t)(uint32_t)u; break;
    default: s = (int64_t)u; break;
    }
    memcpy(out, &s, sizeof s);
    return NUM_I64;
}

/* Integers, as integer_json() writes them (src/format/etw_fields_json.c). */
PyObject *integer_obj(Reader *self, const etw_value *v) {
    uint64_t u = 0;
    int64_t s;
    switch (integer_class(v, &u)) {
    case NUM_I64: memcpy(&s, &u, sizeof s); return PyLong_FromLongLong(s);
    case NUM_U64: return PyLong_FromUnsignedLongLong(u);
    case NUM_BOOL: return PyBool_FromLong(u != 0);
    default: break;
    }
    const uint8_t *d = v->data;
    uint32_t size = v->size;
    if (size != 1 && size != 2 && size != 4 && size != 8) Py_RETURN_NONE;
    if (v->prop && v->prop->map && v->prop->map->entries && v->prop->map->count) return value_via_json(self, v);
    switch (v->out_type) {
    case ETW_OUTTYPE_STRING: return size == 1 ? ansi_str(d, 1) : utf16_str(d, 2);
    default: return value_via_json(self, v); /* an IPv4 address, a time */
    }
}

/* One SCALAR or UNSUPPORTED value, as etw_value_json() writes it. */
PyObject *value_obj(Reader *self, const etw_value *v) {
    if (v->kind == ETW_VALUE_UNSUPPORTED) {
        PyObject *o = PyDict_New();
        if (!o) return NULL;
        if (set_item(o, K_UNSUPPORTED, PyUnicode_FromString(etw_intype_name(v->in_type))) < 0 ||
            set_item(o, K_RAW, PyBytes_FromStringAndSize((const char *)v->data, v->data ? v->size : 0)) < 0) {
            Py_DECREF(o);
            return NULL;
        }
        return o;
    }
    if (v->kind != ETW_VALUE_SCALAR || (v->size && !v->data)) Py_RETURN_NONE;
    if (v->prop && (v->prop->flags & ETW_PROP_CUSTOM_SIZED))
        return PyBytes_FromStringAndSize((const char *)v->data, v->size);
    switch (v->in_type) {
    case ETW_INTYPE_UNICODESTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDSTRING:
    case ETW_INTYPE_COUNTEDSTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDSTRING:
    case ETW_INTYPE_NONNULLTERMINATEDSTRING:
        return utf16_str(v->data, v->size);
    case ETW_INTYPE_ANSISTRING:
    case ETW_INTYPE_MANIFEST_COUNTEDANSISTRING:
    case ETW_INTYPE_COUNTEDANSISTRING:
    case ETW_INTYPE_REVERSEDCOUNTEDANSISTRING:
    case ETW_INTYPE_NONNULLTERMINATEDANSISTRING:
        if (v->out_type == ETW_OUTTYPE_UTF8 || v->out_type == ETW_OUTTYPE_XML || v->out_type == ETW_OUTTYPE_JSON)
            return value_via_json(self, v); /* ill-formed bytes: the writer's U+FFFD rule */
        return ansi_str(v->data, v->size);
    case ETW_INTYPE_INT8:
    case ETW_INTYPE_UINT8:
    case ETW_INTYPE_INT16:
    case ETW_INTYPE_UINT16:
    case ETW_INTYPE_INT32:
    case ETW_INTYPE_UINT32:
    case ETW_INTYPE_INT64:
    case ETW_INTYPE_UINT64:
    case ETW_INTYPE_HEXINT32:
    case ETW_INTYPE_HEXINT64:
    case ETW_INTYPE_POINTER:
    case ETW_INTYPE_SIZET:
    case ETW_INTYPE_UNICODECHAR:
    case ETW_INTYPE_ANSICHAR:
        return integer_obj(self, v);
    case ETW_INTYPE_FLOAT:
        /* the shortest text that reads back as the float, as JSON has it */
        return value_via_json(self, v);
    case ETW_INTYPE_DOUBLE:
        if (v->size == 8) {
            uint64_t b = 0;
            for (int i = 7; i >= 0; i--) b = b << 8 | v->data[i];
            double f;
            memcpy(&f, &b, sizeof f);
            return PyFloat_FromDouble(f);
        }
        Py_RETURN_NONE;
    case ETW_INTYPE_BOOLEAN:
        if (v->size == 4)
            return PyBool_FromLong((v->data[0] | v->data[1] | v->data[2] | v->data[3]) != 0);
        Py_RETURN_NONE;
    case ETW_INTYPE_BINARY:
    case ETW_INTYPE_MANIFEST_COUNTEDBINARY:
    case ETW_INTYPE_HEXDUMP:
        if (v->out_type == ETW_OUTTYPE_LZNT1_UTF16)
            return value_via_json(self, v); /* the decompressed text (WinSat's XML) */
        if (v->out_type == ETW_OUTTYPE_IPV6 || v->out_type == ETW_OUTTYPE_IPV4 ||
            v->out_type == ETW_OUTTYPE_SOCKETADDRESS) {
            etw_text_clear(&self->scratch);
            etw_value_json(&self->scratch, v);
            /* an address the writer could not read falls back to hex text: bytes */
            if (self->scratch.len >= 2 && self->scratch.data[0] == '"' &&
                (v->out_type != ETW_OUTTYPE_SOCKETADDRESS || memchr(self->scratch.data, ':', self->scratch.len) ||
                 memchr(self->scratch.data, '.', self->scratch.len)))
                if (!(v->out_type == ETW_OUTTYPE_IPV6 && v->size != 16) &&
                    !(v->out_type == ETW_OUTTYPE_IPV4 && v->size != 4))
                    return scratch_scalar(self);
        }
        return PyBytes_FromStringAndSize((const char *)v->data, v->size);
    default:
        return value_via_json(self, v); /* GUID, FILETIME, SYSTEMTIME, SID, WBEMSID, unknown */
    }
}

int payload_put(Reader *self, PyObject **stack, int *is_list, int *top, int cap, const etw_value *v) {
    PyObject *o;
    int open = 0;
    if (v->kind == ETW_VALUE_STRUCT_BEGIN || v->kind == ETW_VALUE_ARRAY_BEGIN) {
        o = v->kind == ETW_VALUE_ARRAY_BEGIN ? PyList_New(0) : PyDict_New();
        open = *top + 1 < cap;
    } else {
        o = value_obj(self, v);
    }
    if (!o) return -1;
    int rc;
    if (is_list[*top]) {
        rc = PyList_Append(stack[*top], o);
    } else {
        PyObject *name = cached_name(&self->names, v->name ? v->name : "");
        rc = name ? PyDict_SetItem(stack[*top], name, o) : -1;
        Py_XDECREF(name);
    }
    if (rc == 0 && open) {
        ++*top;
        stack[*top] = o; /* borrowed: the parent holds it */
        is_list[*top] = v->kind == ETW_VALUE_ARRAY_BEGIN;
    }
    Py_DECREF(o);
    return rc < 0 ? -1 : 0;
}

/* The "fields" of an event with a payload schema. */
PyObject *fields_obj(Reader *self, const etw_schema *s, const etw_event *ev, uint32_t *trailing) {
    etw_decode_cursor c;
    etw_value v;
    PyObject *stack[ETW_DECODE_MAX_DEPTH + 2];
    int is_list[ETW_DECODE_MAX_DEPTH + 2];
    int top = 0;
    stack[0] = PyDict_New();
    if (!stack[0]) return NULL;
    is_list[0] = 0;
    if (etw_decoder_begin(self->dec, ev, s, &c) != ETW_OK) return stack[0];
    while (etw_decode_next(&c, &v) == ETW_OK) {
        if (v.kind == ETW_VALUE_STRUCT_END || v.kind == ETW_VALUE_ARRAY_END) {
            if (top > 0) top--;
            continue;
        }
        if (payload_put(self, stack, is_list, &top, (int)(sizeof stack / sizeof stack[0]), &v) < 0) goto fail;
        int rc;
        char drive[ETW_DRIVE_PATH_MAX];
        size_t dn;
        if (!top && etw_decoder_value_drive_path(self->dec, &v, drive, sizeof drive, &dn)) {
            /* NAME_drive after an NT path, as the JSON writer does */
            PyObject *k = PyUnicode_FromFormat("%s_drive", v.name ? v.name : "");
            PyObject *dv = k ? PyUnicode_DecodeUTF8(drive, (Py_ssize_t)dn, "replace") : NULL;
            rc = dv ? PyDict_SetItem(stack[0], k, dv) : -1;
            Py_XDECREF(k);
            Py_XDECREF(dv);
            if (rc < 0) goto fail;
        }
    }
    *trailing = etw_decode_remaining(&c);
    return stack[0];
fail:
    Py_DECREF(stack[0]);
    return NULL;
}

PyObject *logfile_obj(Reader *self) {
    /* several traces: the header of the trace being read */
    const etw_reader *r = self->several ? etw_multi_reader(self->holder, etw_multi_current(self->holder)) : self->r;
    const etw_logfile_header *h = etw_reader_logfile(r);
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (set_named(d, "BufferSize", PyLong_FromUnsignedLong(h->buffer_size)) < 0 ||
        set_named(d, "Version", PyLong_FromUnsignedLong(h->version)) < 0 ||
        set_named(d, "ProviderVersion", PyLong_FromUnsignedLong(h->provider_version)) < 0 ||
        set_named(d, "NumberOfProcessors", PyLong_FromUnsignedLong(h->number_of_processors)) < 0 ||
        set_named(d, "EndTime", filetime_text(self, h->end_time)) < 0 ||
        set_named(d, "TimerResolution", PyLong_FromUnsignedLong(h->timer_resolution)) < 0 ||
        set_named(d, "MaxFileSize", PyLong_FromUnsignedLong(h->maximum_file_size)) < 0 ||
        set_named(d, "LogFileMode", PyLong_FromUnsignedLong(h->log_file_mode)) < 0 ||
        set_named(d, "BuffersWritten", PyLong_FromUnsignedLong(h->buffers_written)) < 0 ||
        set_named(d, "StartBuffers", PyLong_FromUnsignedLong(h->start_buffers)) < 0 ||
        set_named(d, "PointerSize", PyLong_FromUnsignedLong(h->pointer_size)) < 0 ||
        set_named(d, "EventsLost", PyLong_FromUnsignedLong(h->events_lost)) < 0 ||
        set_named(d, "CPUSpeed", PyLong_FromUnsignedLong(h->cpu_speed_mhz)) < 0 ||
        set_named(d, "BootTime", filetime_text(self, h->boot_time)) < 0 ||
        set_named(d, "PerfFreq", PyLong_FromLongLong(h->perf_freq)) < 0 ||
        set_named(d, "StartTime", filetime_text(self, h->start_time)) < 0 ||
        set_named(d, "ReservedFlags", PyLong_FromUnsignedLong(h->reserved_flags)) < 0 ||
        set_named(d, "BuffersLost", PyLong_FromUnsignedLong(h->buffers_lost)) < 0 ||
        set_named(d, "SessionName", utf16_str(h->session_name, h->session_name_bytes)) < 0 ||
        set_named(d, "LogFileName", utf16_str(h->logfile_name, h->logfile_name_bytes)) < 0 ||
        set_named(d, "UtcOffsetMinutes", PyLong_FromLong(h->timezone_bias)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

PyObject *manifest_obj(const etw_event *ev) {
    etw_es_envelope e;
    if (etw_es_envelope_read(ev, &e) != ETW_OK) return NULL;
    return Py_BuildValue("{s:i,s:i,s:i,s:i,s:i,s:i,s:k}", "Format", e.format, "MajorVersion", e.major,
                         "MinorVersion", e.minor, "Magic", e.magic, "TotalChunks", e.total_chunks,
                         "ChunkNumber", e.chunk_number, "PayloadLength", (unsigned long)e.payload_length);
}

/* Little-endian u64/u32 of an item's bytes. */
uint64_t le_n(const uint8_t *p, uint32_t w) {
    uint64_t v = 0;
    for (int i = (int)w - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A stack item's addresses (u64 MatchId, then 4- or 8-byte addresses). */
PyObject *stack_list(const etw_ext_item *it) {
    uint32_t w = it->type == ETW_EXT_STACK_TRACE64 ? 8 : 4;
    PyObject *l = PyList_New(0);
    if (!l) return NULL;
    for (uint32_t o = 8; o + w <= it->size; o += w) {
        PyObject *x = PyLong_FromUnsignedLongLong(le_n(it->data + o, w));
        if (!x || PyList_Append(l, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(l);
            return NULL;
        }
        Py_DECREF(x);
    }
    return l;
}

/* {"match_id": m (when not 0), key: v} of a later stack or stack-key item,
 * appended to *list (made on the first). */
int append_more(PyObject **list, uint64_t match, int key, PyObject *v) {
    if (!v) return -1;
    PyObject *o = PyDict_New();
    if (!o || (match && set_item(o, K_MATCH_ID, PyLong_FromUnsignedLongLong(match)) < 0)) {
        Py_XDECREF(o);
        Py_DECREF(v);
        return -1;
    }
    if (set_item(o, key, v) < 0 || (!*list && !(*list = PyList_New(0))) || PyList_Append(*list, o) < 0) {
        Py_DECREF(o);
        return -1;
    }
    Py_DECREF(o);
    return 0;
}

/* The extended items as etw_json.c ext_fields writes them, same keys, same
 * order: GUIDs in item order, then the stacks ("stack", "stack_match_id",
 * "more_stacks"), then the stack keys ("stack_key", "stack_key_match_id",
 * "more_stack_keys"). */
int ext_items(Reader *self, PyObject *d, const etw_event *ev) {
    etw_ext_item it;
    uint32_t pos = 0, nstack = 0, nkey = 0;
    int stacks = 0, keys = 0;
    while (etw_event_next_ext(ev, &pos, &it) == ETW_OK) {
        switch (it.type) {
        case ETW_EXT_RELATED_ACTIVITYID:
        case ETW_EXT_CONTAINER_ID:
            if (it.size >= 16) {
                etw_guid g = etw_guid_read(it.data);
                if (!etw_guid_is_zero(&g) &&
                    set_item(d, it.type == ETW_EXT_CONTAINER_ID ? K_CONTAINER_ID : K_RELATED_ACTIVITY_ID,
                             guid_str(self, &g)) < 0)
                    return -1;
            }
            break;
        case ETW_EXT_STACK_TRACE32:
        case ETW_EXT_STACK_TRACE64: stacks = self->prof == NULL; break; /* stacks=True: the profile's */
        case ETW_EXT_STACK_KEY32:
        case ETW_EXT_STACK_KEY64: keys = 1; break;
        default: break;
        }
    }
    PyObject *more = NULL;
    for (pos = 0; stacks && etw_event_next_ext(ev, &pos, &it) == ETW_OK;) {
        if ((it.type != ETW_EXT_STACK_TRACE32 && it.type != ETW_EXT_STACK_TRACE64) || it.size < 8) continue;
        uint64_t match = le_n(it.data, 8);
        if (nstack++ == 0) {
            if (set_item(d, K_STACK, stack_list(&it)) < 0 ||
                (match && set_item(d, K_STACK_MATCH_ID, PyLong_FromUnsignedLongLong(match)) < 0))
                return -1;
        } else if (append_more(&more, match, K_STACK, stack_list(&it)) < 0) {
            Py_XDECREF(more);
            return -1;
        }
    }
    if (more && set_item(d, K_MORE_STACKS, more) < 0) return -1;
    more = NULL;
    for (pos = 0; keys && etw_event_next_ext(ev, &pos, &it) == ETW_OK;) {
        if (it.type != ETW_EXT_STACK_KEY32 && it.type != ETW_EXT_STACK_KEY64) continue;
        uint32_t w = it.type == ETW_EXT_STACK_KEY64 ? 8 : 4;
        if (it.size < 8 + w) continue;
        uint64_t match = le_n(it.data, 8), k = le_n(it.data + 8, w);
        if (nkey++ == 0) {
            if (set_item(d, K_STACK_KEY, PyLong_FromUnsignedLongLong(k)) < 0 ||
                (match && set_item(d, K_STACK_KEY_MATCH_ID, PyLong_FromUnsignedLongLong(match)) < 0))
                return -1;
        } else if (append_more(&more, match, K_STACK_KEY, PyLong_FromUnsignedLongLong(k)) < 0) {
            Py_XDECREF(more);
            return -1;
        }
    }
    if (more && set_item(d, K_MORE_STACK_KEYS, more) < 0) return -1;
    return 0;
}

/* A frame's label (etw_frame_label) as a str, made once per frame. */
PyObject *id_obj(uint32_t v) { return v == ETW_NO_ID ? PyLong_FromLong(-1) : PyLong_FromUnsignedLong(v); }

/* A name of a label: by address when it is the schema's own string (it
 * lives as long as the decoder), else by content. */
PyObject *label_name(Reader *self, const char *s, size_t n, const char *schema_string) {
    if (schema_string && s == schema_string) return cached_name(&self->names, s);
    return utf8_cached(self, s, n);
}

/* The event as a dict; lab holds its schema and names (etw_label.h). */
PyObject *event_obj(Reader *self, const etw_event *ev, const etw_label *lab) {
    const etw_schema *schema = lab->schema;
    const char *error = lab->error;
    uint32_t pid, tid;
    names_sync(self);
    etw_decoder_event_ids(self->dec, ev, schema, &pid, &tid);
    const char *pname;
    size_t pname_len;
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (set_item(d, K_TIME, time_ns(ev->timestamp)) < 0) goto fail;
    if (self->several) { /* the trace it came from, after the time as etwdump has it */
        size_t f = etw_multi_current(self->holder);
        if (f < self->nfiles && PyDict_SetItem(d, g_keys[K_FILE], self->file_names[f]) < 0) goto fail;
    }
    if (        set_item(d, K_PROVIDER,
                 label_name(self, lab->provider, lab->provider_len, schema ? schema->provider_name : NULL)) < 0 ||
        set_item(d, K_PROVIDER_GUID, guid_str(self, &ev->provider)) < 0 ||
        set_item(d, K_EVENT, label_name(self, lab->event, lab->event_len, schema ? schema->event_name : NULL)) < 0 ||
        set_item(d, K_ID, PyLong_FromLong(ev->id)) < 0 ||
        set_item(d, K_VERSION, PyLong_FromLong(ev->version)) < 0 ||
        set_item(d, K_LEVEL, PyLong_FromLong(ev->level)) < 0 ||
        set_item(d, K_OPCODE, PyLong_FromLong(ev->opcode)) < 0 ||
        set_item(d, K_TASK, PyLong_FromLong(ev->task)) < 0 ||
        set_item(d, K_CHANNEL, PyLong_FromLong(ev->channel)) < 0 ||
        set_item(d, K_KEYWORDS, PyLong_FromUnsignedLongLong(ev->keywords)) < 0 ||
        set_item(d, K_PID, id_obj(pid)) < 0 ||
        (etw_decoder_process_name(self->dec, ev, schema, pid, &pname, &pname_len) &&
         set_item(d, K_PROCESS, utf8_cached(self, pname, pname_len)) < 0) ||
        set_item(d, K_TID, id_obj(tid)) < 0 ||
        set_item(d, K_CPU, PyLong_FromLong(ev->cpu)) < 0 ||
        set_item(d, K_DATA_LEN, PyLong_FromUnsignedLong(ev->user_data_len)) < 0)
        goto fail;
    if (ev->has_activity_id && !etw_guid_is_zero(&ev->activity_id) &&
        set_item(d, K_ACTIVITY_ID, guid_str(self, &ev->activity_id)) < 0)
        goto fail;
    if (ev->ext_count && ext_items(self, d, ev) < 0) goto fail;
    if (self->prof && self->seq) {
        uint32_t node = etw_profile_event_stack(self->prof, self->seq - 1);
        if (node != ETW_STACK_NONE &&
            set_item(d, K_STACK, profile_stack_list(self->frame_str, self->nframe_str, self->prof, node)) < 0)
            goto fail;
    }
    int decoded = 0;
    PyObject *fields = NULL;
    if (ev->is_logfile_header) {
        fields = logfile_obj(self);
        decoded = 1;
    } else if (schema && etw_decoder_is_manifest_event(ev) && (fields = manifest_obj(ev)) != NULL) {
        decoded = 1;
    } else if (schema) {
        if (PyErr_Occurred()) goto fail;
        uint32_t trailing = 0;
        fields = fields_obj(self, schema, ev, &trailing);
        if (fields && !error) error = etw_decoder_payload_problem(self->dec, ev, schema, trailing);
        decoded = 1;
    } else {
        fields = PyDict_New();
    }
    if (set_item(d, K_FIELDS, fields) < 0) goto fail;
    if (error && set_item(d, K_ERROR, PyUnicode_DecodeUTF8(error, (Py_ssize_t)strlen(error), "replace")) < 0)
        goto fail;
    if ((self->raw_always || !decoded || error) && (ev->user_data_len || error) &&
        set_item(d, K_RAW, PyBytes_FromStringAndSize((const char *)ev->user_data, ev->user_data_len)) < 0)
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}
