/* etw_render_internal.h - the renderer's state (struct etw_renderer) and
 * what its files share: etw_render.c (the object, JSON, text, the header,
 * footer and per-event dispatch), etw_render_csv.c (CSV's columns, learned
 * or streamed, and rows), etw_render_timesketch.c and etw_render_xml.c.
 * Every format starts from the contract's JSON object and the spans its
 * writer recorded (etw_json_spans.h). */
#ifndef ETW_RENDER_INTERNAL_H
#define ETW_RENDER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_render.h"
#include "etw_jscan.h"
#include "etw_json_spans.h"
#include "etw_text.h"

/* FILETIME ticks per second (100 ns units). */
#define TICKS INT64_C(10000000)
/* Most CSV columns (fixed and learned). */
#define MAX_COLUMNS 65536
/* CSV: the schemas whose property columns are remembered, and the most
 * properties remembered over all of them (docs/limits.md); past either,
 * a field's column is found by its name, event after event. */
#define CSV_SCHEMAS_MAX 4096
#define CSV_PROPS_MAX (1u << 20)
/* CSV: the cached segments of cells provider..keywords, and the longest */
#define SEG_SLOTS 64
#define SEG_MAX 384
#define SEG_FIRST COL_PROVIDER
#define SEG_LAST COL_KEYWORDS
/* CSV's first pass: the bytes of an event that decide its schema
 * (learn_memo_key), and the most of them remembered (past it they are
 * forgotten and learned again). */
#define LEARN_KEY 24
#define LEARN_MEMO_MAX 65536
/* a remembered property whose column is not looked up yet */
#define COL_UNKNOWN (-2)

/* The fixed CSV columns, in order; the JSON key of each is its name. */
enum { COL_TIME, COL_FILE, COL_PROVIDER, COL_PROVIDER_GUID, COL_EVENT, COL_ID, COL_VERSION, COL_LEVEL,
       COL_OPCODE, COL_TASK, COL_CHANNEL, COL_KEYWORDS, COL_PID, COL_PROCESS, COL_TID, COL_CPU, COL_DATA_LEN,
       COL_ACTIVITY, COL_RELATED, COL_CONTAINER, COL_MESSAGE, COL_ERROR, COL_RAW, NFIXED };
/* the spans of etw_json_spans.h are indexed by the same numbers */
_Static_assert((int)COL_PID == (int)ETW_JK_PID && (int)COL_PROCESS == (int)ETW_JK_PROCESS &&
                   (int)COL_RAW == (int)ETW_JK_RAW && (int)NFIXED == (int)ETW_JK_FIELDS,
               "render columns and JSON spans disagree");
extern const char *const etw_render_fixed_names[NFIXED];

/* A schema whose top-level properties' columns are remembered: pool[off +
 * i] is the column of props[i] (-1 none, COL_UNKNOWN not looked up yet).
 * TEXT keeps its keys there instead: pool[off + i] is where props[i]'s key,
 * as text shows it, starts in rd->keys (-1 not kept, COL_UNKNOWN not made
 * yet) and plan[off + i] its length.
 * Its plan, once every column is known: plan[off .. off + plan_n) the
 * properties that have a column, in column order (of properties sharing a
 * column the last, whose value the cell shows), so that a row is written
 * left to right with no sorting. */
typedef struct schema_cols {
    const etw_schema *schema; /* NULL: an empty slot; never dereferenced (a
                               * TraceLogging schema may be gone, etw_cache.h) */
    uint32_t id;              /* compared with the pointer: ids are never reused */
    uint32_t off, n;
    uint32_t plan_n;
    int planned;              /* 1 plan made, -1 cannot be (no memory) */
} schema_cols;

typedef struct column {
    char *name;     /* the header text (a field column may be "fields.NAME") */
    char *field;    /* the field name it holds, NULL for fixed columns */
    size_t field_len;
    int fixed;      /* index in fixed_names, or -1 */
} column;

struct etw_renderer {
    etw_allocator alloc;
    etw_render_options opt;
    etw_json *json;
    etw_text out, scratch;
    const char *file;
    /* CSV */
    column *cols;
    size_t ncols, cap;
    uint32_t *hash;       /* open addressing over field columns: index+1, 0 empty */
    size_t hcap;
    uint32_t *seen;       /* schema ids learned (open addressing, id+1) */
    size_t seen_cap, seen_used;
    const char **cell;    /* per column, the value span of the current row */
    size_t *cell_len;
    int header_done;
    size_t nfixed_cols;   /* how many of the columns are fixed ones */
    size_t row_cap;       /* room in cell, cell_len, set, commas */
    int fixed_on[NFIXED]; /* which fixed columns the header has */
    size_t col_of_fixed[NFIXED]; /* the column of each fixed key, or (size_t)-1 */
    uint8_t fixed_list[NFIXED];  /* the fixed keys that have a column, in order */
    int nfixed_list;
    size_t *set;          /* the columns the current row has a value for */
    size_t nset;
    char *commas;         /* ncols commas: the separators of a run of empty cells */
    schema_cols *sc;      /* open addressing by schema id, at most 2 * CSV_SCHEMAS_MAX slots */
    size_t sc_cap, sc_used;
    int32_t *pool;        /* the columns of the remembered schemas' properties */
    uint32_t *plan;       /* their plans (schema_cols), as long as pool */
    size_t pool_len, pool_cap;
    /* CSV: the cells provider..keywords depend only on the schema and the
     * descriptor: their text, kept by the JSON text they come from */
    struct seg_slot {
        uint64_t jseg;       /* the writer's memo text it was made from (etw_json_spans.seg), 0: unknown */
        uint16_t jlen, clen; /* 0: empty */
        char json[SEG_MAX], csv[SEG_MAX];
    } *seg;
    size_t seg_col;       /* the segment's first column while a row is made, else (size_t)-1 */
    /* where the writer put each value (text, CSV) */
    etw_json_spans sp;
    etw_field_span *spans;
    etw_text summary;     /* TIMESKETCH: the message made from the fields */
    etw_text keys;        /* TEXT: the remembered schemas' keys as text shows them */
    /* CSV's first pass: the events already learned from (learn_memo) */
    uint8_t (*memo)[LEARN_KEY];
    size_t memo_cap, memo_used;
    uint64_t memo_epoch;
    uint8_t memo_last[LEARN_KEY]; /* the last key found or added (all zero: none), */
    uint64_t memo_last_epoch;     /* at this epoch: most events are like the one before */
    /* UTC times: the text of the second of the last one, up to its '.' */
    int64_t tc_sec;
    size_t tc_len;        /* 0: none */
    char tc_text[32];
};

/* The value of fixed key k in line (NULL, 0 when absent). */
#define SPAN(rd, line, k) ((rd)->sp.len[k] ? (line) + (rd)->sp.off[k] : NULL), (rd)->sp.len[k]

/* 1 when one of the eight bytes of w is c (the classic zero-byte test on
 * w ^ c: exact, a byte only borrows from a lower byte that is zero). */
static inline int has_byte(uint64_t w, unsigned char c) {
    uint64_t x = w ^ (UINT64_C(0x0101010101010101) * c);
    return ((x - UINT64_C(0x0101010101010101)) & ~x & UINT64_C(0x8080808080808080)) != 0;
}

/* The bytes of w equal to c, as their high bits (exact in the lowest such
 * byte; above it a byte may borrow: test only whether any is set, in a mask
 * of the lowest bytes). */
static inline uint64_t byte_hits(uint64_t w, unsigned char c) {
    uint64_t x = w ^ (UINT64_C(0x0101010101010101) * c);
    return (x - UINT64_C(0x0101010101010101)) & ~x & UINT64_C(0x8080808080808080);
}

/* The event's time as --time says (quote_strings: as a JSON string; a time
 * that cannot be written is null, or empty without quotes). */
void etw_render_time(etw_renderer *rd, etw_text *t, int64_t ft, int quote_strings);
/* Whether --fields (none: every field) wants member m of "fields"; or the
 * member whose key, as written with its quotes, is line[key_off ..
 * key_off + key_len). */
int etw_render_field_wanted(const etw_renderer *rd, const etw_jmember *m);
int etw_render_key_wanted(const etw_renderer *rd, const char *line, size_t key_off, size_t key_len);
/* A JSON value as TEXT shows it: bare when that reads safely (a name may
 * hold spaces). */
void etw_render_text_value(etw_text *t, const char *v, size_t n);
void etw_render_text_name(etw_text *t, const char *v, size_t n);
/* Where the columns (CSV) or keys (TEXT) of s's properties are remembered,
 * made the first time s is seen; NULL past the limits or without memory. */
schema_cols *etw_render_schema_columns(etw_renderer *rd, const etw_schema *s);

/* CSV (etw_render_csv.c): the columns fixed for the header, the header row
 * of the first n columns, an event's row, and a streamed run's learning of
 * an event's columns. */
etw_status etw_render_csv_fix_columns(etw_renderer *rd);
void etw_render_csv_header_row(etw_renderer *rd, etw_text *t, size_t n);
void etw_render_csv_event(etw_renderer *rd, const etw_event *ev, const char *line, size_t line_len);
etw_status etw_render_csv_learn_stream(etw_renderer *rd, const etw_event *ev, const char *line);

/* Timesketch (etw_render_timesketch.c) and XML (etw_render_xml.c): an
 * event's line into rd->out. */
void etw_render_timesketch_event(etw_renderer *rd, const etw_event *ev, const char *line);
void etw_render_xml_event(etw_renderer *rd, const etw_event *ev, const char *line);

#endif
