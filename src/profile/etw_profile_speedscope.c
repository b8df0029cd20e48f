/* etw_profile_speedscope.c - speedscope's file format
 * (https://www.speedscope.app/file-format-schema.json; jlfwong/speedscope
 * src/lib/file-format-spec.ts):
 *
 *   {"$schema": "https://www.speedscope.app/file-format-schema.json",
 *    "exporter": "etwdecode@VERSION", "activeProfileIndex": N,
 *    "shared": {"frames": [{"name": "module!function", "file": "module"}, ...]},
 *    "profiles": [{"type": "sampled", "name": "PROCESS (pid) thread (tid)",
 *                  "unit": "none", "startValue": 0, "endValue": TOTAL,
 *                  "samples": [[frame, ...], ...], "weights": [w, ...]}, ...]}
 *
 * One sampled profile per thread (pid, tid order); each sample is one
 * (process, thread, stack) sum of the profile: its stack as indices into
 * shared.frames, root first (empty when the stack never came), its weight
 * the summed weight. The unit is "none" (sample counts, or the caller's
 * weights); values run from 0 to the thread's total weight. The profile
 * shown first (activeProfileIndex) is the heaviest thread's.
 */
#include <string.h>

#include "common/etw_alloc.h"
#include "etwdecode/etwdecode.h"
#include "profile/etw_profile_out.h"

static void put_str(etw_text *t, const etw_pout_strtab *tab, uint32_t id) {
    size_t len;
    const char *s = etw_pout_str(tab, id, &len);
    etw_text_json_utf8(t, s, len);
}

static void profile_name(etw_pout *o, const etw_pout_thread *th) {
    etw_text *t = &o->t;
    const char *pn;
    size_t pl;
    etw_pout_process(o, th->pid, &pn, &pl);
    /* the JSON string by hand: the name repaired, then the ids */
    etw_text t2;
    etw_text_init(&t2, &o->alloc);
    etw_text_put(&t2, pn, pl);
    etw_text_puts(&t2, " (");
    etw_pout_id(&t2, th->pid);
    etw_text_puts(&t2, ") thread (");
    etw_pout_id(&t2, th->tid);
    etw_text_putc(&t2, ')');
    if (etw_text_status(&t2) == ETW_OK) etw_text_json_utf8(t, t2.data, t2.len);
    else t->failed = 1;
    etw_text_free(&t2);
}

etw_status etw_profile_write_speedscope(etw_pout *o) {
    etw_text *t = &o->t;
    uint32_t *path = etw_calloc(&o->alloc, (size_t)o->max_depth + 1, sizeof *path);
    if (!path) return ETW_E_NOMEM;
    size_t active = 0;
    for (size_t i = 1; i < o->nthreads; i++)
        if (o->threads[i].weight > o->threads[active].weight) active = i;
    etw_text_puts(t, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":");
    etw_text_putc(t, '"');
    etw_text_puts(t, "etwdecode@");
    etw_text_puts(t, etw_version_string());
    etw_text_puts(t, "\",\"activeProfileIndex\":");
    etw_text_u64(t, active);
    etw_text_puts(t, ",\"shared\":{\"frames\":[");
    etw_status st = ETW_OK;
    for (uint32_t i = 0; i < o->names.n && st == ETW_OK; i++) {
        if (i) etw_text_putc(t, ',');
        etw_text_puts(t, "{\"name\":");
        put_str(t, &o->names, i);
        if (o->name_mod[i] != ETW_POUT_NONE) {
            etw_text_puts(t, ",\"file\":");
            put_str(t, &o->mods, o->name_mod[i]);
        }
        etw_text_putc(t, '}');
        st = etw_pout_flush(o, 0);
    }
    /* a frame for stacks whose frame was lost ("?"): after the real ones */
    uint32_t unknown = o->names.n;
    if (st == ETW_OK) {
        if (unknown) etw_text_putc(t, ',');
        etw_text_puts(t, "{\"name\":\"?\"}]},\"profiles\":[");
    }
    for (size_t k = 0; k < o->nthreads && st == ETW_OK; k++) {
        const etw_pout_thread *th = &o->threads[k];
        if (k) etw_text_putc(t, ',');
        etw_text_puts(t, "{\"type\":\"sampled\",\"name\":");
        profile_name(o, th);
        etw_text_puts(t, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":");
        etw_pout_json_weight(t, th->weight);
        etw_text_puts(t, ",\"samples\":[");
        for (size_t i = th->begin; i < th->end && st == ETW_OK; i++) {
            if (i > th->begin) etw_text_putc(t, ',');
            etw_text_putc(t, '[');
            size_t n = 0;
            for (uint32_t node = o->samples[i].s.stack; node != ETW_STACK_NONE && n <= o->max_depth;
                 node = o->parent[node])
                path[n++] = o->node_name[node];
            for (int first = 1; n; first = 0) {
                uint32_t name = path[--n];
                if (!first) etw_text_putc(t, ',');
                etw_text_u64(t, name == ETW_POUT_NONE ? unknown : name);
            }
            etw_text_putc(t, ']');
            st = etw_pout_flush(o, 0);
        }
        etw_text_puts(t, "],\"weights\":[");
        for (size_t i = th->begin; i < th->end && st == ETW_OK; i++) {
            if (i > th->begin) etw_text_putc(t, ',');
            etw_pout_json_weight(t, o->samples[i].s.weight);
            st = etw_pout_flush(o, 0);
        }
        etw_text_puts(t, "]}");
    }
    if (st == ETW_OK) etw_text_puts(t, "]}\n");
    etw_free(&o->alloc, path);
    return st == ETW_OK ? etw_pout_flush(o, 0) : st;
}
