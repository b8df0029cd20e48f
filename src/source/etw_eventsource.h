/* etw_eventsource.h - reassembly of the .NET EventSource manifests that
 * travel inside a trace as event 0xFFFE (FORMATS.md 5.1).
 *
 * A manifest event is an EVENT_HEADER record (not classic) with descriptor
 * Id 0xFFFE, Task 0xFFFE, Opcode 0xFE, from the EventSource's provider GUID.
 * Its user data is the 8-byte ManifestEnvelope
 *   u8 Format (1 = UTF-8 XML), u8 MajorVersion, u8 MinorVersion,
 *   u8 Magic (0x5B), u16 TotalChunks, u16 ChunkNumber (0-based)
 * followed by one chunk of the manifest (at most ETW_ES_MAX_CHUNK bytes).
 * The chunks of one manifest, concatenated in order, are the XML document.
 *
 * Rules (TraceEvent's PartialManifestInfo, made stricter where the brief
 * asks for it):
 *   - partial manifests are keyed by (provider GUID, process id, thread id):
 *     EventSource.SendManifest writes every chunk of one manifest in one
 *     call on one thread, so the thread id separates two threads of one
 *     process that send the same provider's manifest at the same time
 *     (two sessions enabling it at once); keying by (provider, pid) would
 *     make such interleaved sequences destroy each other and gains nothing,
 *     since EVENT_HEADER records always carry the thread id;
 *   - an event is a valid chunk when its user data is > 8 bytes, Magic is
 *     0x5B, TotalChunks != 0, ChunkNumber < TotalChunks and the chunk is at
 *     most ETW_ES_MAX_CHUNK bytes; an invalid event is reported and aborts
 *     the sequence pending for its key;
 *   - chunk 0 (re)starts a sequence, with any TotalChunks (newer EventSource
 *     retries with smaller chunks, so TotalChunks may change); an unfinished
 *     sequence of the same key is dropped and reported;
 *   - every later chunk must be the next one (ChunkNumber == expected) with
 *     the same Format, MajorVersion, MinorVersion and TotalChunks; otherwise
 *     (duplicate, missing or reordered chunk, changed envelope) the sequence
 *     is aborted and reported once: the remaining chunks of the aborted run
 *     are ignored silently until the key's next chunk 0. A chunk other than
 *     0 with nothing pending for its key is reported once the same way;
 *   - when the last chunk is in, on_manifest gets the concatenation exactly
 *     once. A one-chunk manifest is passed straight from the event's bytes
 *     (no copy, nothing held). A repeated manifest (rundown, a second
 *     session) completes again and is delivered again: choosing between
 *     manifests is the consumer's business (etw_es_manifest_version()
 *     gives TraceEvent's score for that).
 *   - Manifests of the CLR provider (Microsoft-Windows-DotNETRuntime), which
 *     .NET 6+ also sends, are delivered like any other (TraceEvent skips
 *     them only because it has a built-in CLR parser); filter in on_manifest
 *     if needed.
 *
 * Bounds: at most max_pending unfinished sequences (the table is allocated
 * once by etw_es_new), and the buffers of unfinished sequences hold at most
 * max_pending_bytes in total (counted as allocated capacity). When a new
 * sequence needs a slot, or a chunk needs room, the least recently extended
 * other sequence is evicted and reported (ETW_E_LIMIT); a sequence that
 * cannot fit by itself is aborted and reported. Nothing else is allocated
 * after etw_es_new. No global state, no recursion; one assembler per thread.
 *
 * Diagnostics (on_diag): every problem once, with the file offset of the
 * event concerned (buffer_file_offset + record_offset; for sequences
 * reported by etw_es_finish or eviction, the offset of their last accepted
 * chunk). Statuses: ETW_E_CORRUPT (malformed event, duplicate, missing or
 * reordered chunk, changed envelope, oversized chunk), ETW_E_TRUNCATED (a
 * sequence that never completed: dropped by a restart or at finish),
 * ETW_E_LIMIT (evicted by a bound, or too large by itself), ETW_E_NOMEM.
 * The message text is valid only during the callback.
 */
#ifndef ETW_EVENTSOURCE_H
#define ETW_EVENTSOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_event.h"
#include "etwdecode/etw_reader.h"
#include "etwdecode/etw_status.h"
#include "etwdecode/etw_types.h"

#define ETW_ES_MANIFEST_ID 0xFFFEu
#define ETW_ES_MANIFEST_TASK 0xFFFEu
#define ETW_ES_MANIFEST_OPCODE 0xFEu
#define ETW_ES_MAGIC 0x5Bu
#define ETW_ES_ENVELOPE_SIZE 8u
/* ManifestEnvelope.MaxChunkSize: the largest chunk EventSource writes. */
#define ETW_ES_MAX_CHUNK 0xFF00u

#define ETW_ES_DEFAULT_MAX_PENDING_BYTES (16u * 1024u * 1024u)
#define ETW_ES_DEFAULT_MAX_PENDING 64u
/* max_pending above this is clamped to it. */
#define ETW_ES_MAX_PENDING_LIMIT 4096u

typedef struct etw_es_assembler etw_es_assembler;

/* Called once per complete manifest: the provider GUID and process id of
 * its events and the XML bytes (UTF-8 as EventSource writes it; not
 * NUL-terminated; valid only during the call). It must not call back into
 * the assembler. A status other than ETW_OK is returned by etw_es_offer. */
typedef etw_status (*etw_es_manifest_fn)(void *ctx, const etw_guid *provider, uint32_t pid,
                                         const uint8_t *xml, size_t len);

typedef struct etw_es_options {
    const etw_allocator *allocator; /* NULL: malloc/free */
    /* Bound on the memory held by unfinished manifests; 0 means
     * ETW_ES_DEFAULT_MAX_PENDING_BYTES. */
    size_t max_pending_bytes;
    /* Bound on the number of unfinished manifests; 0 means
     * ETW_ES_DEFAULT_MAX_PENDING (clamped to ETW_ES_MAX_PENDING_LIMIT). */
    uint32_t max_pending;
    etw_es_manifest_fn on_manifest; /* NULL: manifests are only counted */
    void *ctx;
    etw_diag_fn on_diag; /* NULL: problems are only counted */
    void *diag_ctx;
} etw_es_options;

/* What the assembler saw so far. */
typedef struct etw_es_stats {
    uint64_t manifest_events;    /* manifest events offered */
    uint64_t chunks_accepted;    /* of those, chunks taken into a sequence */
    uint64_t manifests;          /* complete manifests delivered */
    uint64_t problems;           /* diagnostics reported */
    uint64_t dropped;            /* unfinished sequences dropped (any reason) */
    uint64_t evicted;            /* of those, evicted by a bound */
    uint32_t pending;            /* unfinished sequences now */
    size_t pending_bytes;        /* bytes they hold now (capacity) */
    size_t peak_pending_bytes;   /* the most ever held at once */
} etw_es_stats;

/* The options are copied. ETW_E_NOMEM, ETW_E_INVALID_ARG (out NULL). */
etw_status etw_es_new(etw_es_assembler **out, const etw_es_options *opt);
/* Frees everything, unfinished sequences included, without reporting them
 * (call etw_es_finish first for that). NULL is allowed. */
void etw_es_free(etw_es_assembler *a);

/* 1 if ev is an EventSource manifest event: EVENT_HEADER form without the
 * CLASSIC_HEADER flag, Id 0xFFFE, Task 0xFFFE, Opcode 0xFE. */
int etw_es_is_manifest_event(const etw_event *ev);

/* Offer an event. Non-manifest events return ETW_OK at once. A manifest
 * event is validated and buffered; problems are reported through on_diag
 * and are not errors (ETW_OK). Returns ETW_E_INVALID_ARG (NULL argument),
 * ETW_E_NOMEM (the allocator failed: that sequence is dropped, reported),
 * or the non-OK status of on_manifest. */
etw_status etw_es_offer(etw_es_assembler *a, const etw_event *ev);

/* End of trace: report once each sequence that never completed and drop
 * it. The assembler stays usable. */
void etw_es_finish(etw_es_assembler *a);

const etw_es_stats *etw_es_stats_get(const etw_es_assembler *a);

/* The envelope fields of a manifest event, for showing it as an event
 * (TraceEvent's ManifestData: Format, MajorVersion, MinorVersion, Magic,
 * TotalChunks, ChunkNumber, PayloadLength = the whole user data length).
 * Fields are returned as stored, unvalidated. ETW_E_TRUNCATED when the
 * user data is shorter than 8 bytes; ETW_E_INVALID_ARG for NULL. */
typedef struct etw_es_envelope {
    uint8_t format, major, minor, magic;
    uint16_t total_chunks, chunk_number;
    uint32_t payload_length;
} etw_es_envelope;
etw_status etw_es_envelope_read(const etw_event *ev, etw_es_envelope *out);

/* TraceEvent's version score of a manifest (ProviderManifest.Version):
 * number of <event> elements + sum of their version attributes + 100 x the
 * largest event value attribute. TraceEvent replaces a provider's manifest
 * only with a better one: higher score, or equal score and longer text.
 * Scans xml[0..len) (UTF-8, optional BOM) once, skipping comments, CDATA,
 * processing instructions and declarations; never reads past len. Not a
 * validator: returns -1 (as TraceEvent does for a document its XmlReader
 * rejects) only for UTF-16 text, text not starting with '<', and an
 * unclosed tag, comment, CDATA section, instruction or quoted value. */
int64_t etw_es_manifest_version(const uint8_t *xml, size_t len);

/* 1 when manifest a should replace manifest b by TraceEvent's rule
 * (ProviderManifest.BetterThan). */
int etw_es_manifest_better(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len);

#endif
