/* etwdump - the profile stage (etw_profile.h): --profile writes a CPU (or
 * --event) profile of the selected events, --stacks names every event's
 * stack. Both read the trace on one thread. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etwdump.h"

/* Kernel PerfInfo class (TraceEvent's PerfInfoTaskGuid) and its Sample
 * opcode (SampledProfile). */
static const etw_guid perfinfo_guid = {0xce1dbfb4, 0x137e, 0x4da6, {0x87, 0xb0, 0x3f, 0x59, 0xaa, 0x10, 0x2c, 0xbc}};
#define PERFINFO_SAMPLE 46

static int out_of_memory(void) {
    fprintf(stderr, "etwdump: out of memory\n");
    return EXIT_FATAL;
}

void profile_options_init(const session *s, etw_decoder *dec, etw_profile_options *po) {
    memset(po, 0, sizeof *po);
    po->decoder = dec;
    po->symbol_paths = s->o->nsymbols ? s->o->symbols : NULL;
    po->nsymbol_paths = (size_t)s->o->nsymbols;
    po->on_diag = on_decoder_diag;
    po->diag_ctx = s->dc;
}

/* --- --profile ---------------------------------------------------------------- */

typedef struct pick_ctx {
    session *s;
    int by_event;       /* --event given: the selected events are the samples */
    int oom;
} pick_ctx;

/* etw_profile_sample_fn: the selection options decide (the profile never
 * offers an idle sample: PerfView's idle filter is its own). */
static int pick(void *ctx, const etw_event *ev, const etw_schema *sc, uint32_t pid, uint32_t tid, double *weight) {
    pick_ctx *c = ctx;
    (void)pid;
    (void)tid;
    int cpu = etw_guid_equal(&ev->provider, &perfinfo_guid) && ev->opcode == PERFINFO_SAMPLE;
    if (!c->by_event && !cpu) {
        /* still shown to the filter: it learns the names it reports */
        if (etw_filter_match(c->s->filter, c->s->dec, ev, NULL) < 0) c->oom = 1;
        return 0;
    }
    int sel = etw_filter_match(c->s->filter, c->s->dec, ev, NULL);
    if (sel < 0) c->oom = 1;
    if (sel <= 0) return 0;
    *weight = 1.0;
    if (c->s->o->weight && etw_decoder_field_number(c->s->dec, ev, sc, c->s->o->weight, weight) != ETW_OK) return 0;
    return 1;
}

static int has_event_option(const options *o) {
    for (int i = 0; i < o->nfilters; i++)
        if (!strcmp(o->filters[i].key, "event") && !o->filters[i].exclude && o->filters[i].value[0] != '!')
            return 1;
    return 0;
}

/* One pass over the events into p; with a: without the pre-scan, stopping
 * (s->rescan) where ahead_missed says the run may differ from one with it. */
static int profile_pass(session *s, etw_profile *p, const pick_ctx *pk, ahead *a) {
    progress *pg = progress_start(s->o, s->m, input_bytes(s->m));
    etw_event ev;
    size_t file;
    unsigned long long read = 0;
    int rc = EXIT_CLEAN;
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        progress_tick(pg, ++read, file, &ev);
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        if (a && ahead_missed(a, s, &ev)) {
            s->rescan = 1;
            break;
        }
        const etw_schema *sc = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(s->dec, &ev, &sc, NULL);
        if (etw_profile_add(p, &ev, sc) != ETW_OK || pk->oom) {
            rc = out_of_memory();
            break;
        }
    }
    progress_end(pg);
    if (!s->rescan) etw_decoder_finish(s->dec);
    if (a && s->dc->held) s->rescan = 1; /* a problem held, up to the end */
    return rc;
}

static int profile_new(session *s, pick_ctx *pk, etw_profile **out) {
    etw_profile_options po;
    profile_options_init(s, s->dec, &po);
    /* no selection: the profile's own CPU samples (the same rule) */
    if (pk->by_event || !etw_filter_is_empty(s->filter)) {
        po.is_sample = pick;
        po.sample_ctx = pk;
    }
    if (etw_profile_new(out, &po) != ETW_OK) return out_of_memory();
    return EXIT_CLEAN;
}

int run_profile(session *s) {
    const options *o = s->o;
    pick_ctx pk = {s, has_event_option(o), 0};
    etw_profile *p = NULL;
    if (profile_new(s, &pk, &p) == EXIT_FATAL) return EXIT_FATAL;
    int rc;
    if (s->no_prescan) {
        ahead a;
        ahead_start(&a, s, s->dec, AHEAD_HOLD);
        rc = profile_pass(s, p, &pk, &a);
        ahead_stop(&a, s);
        if (s->rescan && rc != EXIT_FATAL && rc != EXIT_INTERRUPTED) {
            /* made again as before: the pre-scan, a new filter, profile */
            etw_profile_free(p);
            p = NULL;
            rc = session_again(s, NULL);
            if (rc != EXIT_FATAL) rc = profile_new(s, &pk, &p);
            if (rc != EXIT_FATAL) rc = profile_pass(s, p, &pk, NULL);
        }
    } else {
        rc = profile_pass(s, p, &pk, NULL);
    }
    if (rc == EXIT_CLEAN && etw_profile_finish(p) != ETW_OK) rc = out_of_memory();
    if (rc == EXIT_CLEAN) {
        errno = 0;
        etw_status st = etw_profile_write(p, o->profile_format, s->out);
        if (st == ETW_E_IO && errno == EPIPE) {
            s->cut_short = 1; /* the reader of the pipe went away: a quiet stop */
        } else if (st == ETW_E_IO) {
            fprintf(stderr, "etwdump: %s: write error: %s\n", o->output ? o->output : "standard output",
                    strerror(errno));
            rc = EXIT_FATAL;
        } else if (st != ETW_OK) {
            rc = out_of_memory();
        }
    }
    if (rc == EXIT_CLEAN) {
        etw_profile_stats ps;
        etw_profile_stats_get(p, &ps);
        if (!ps.samples && !o->quiet)
            fprintf(stderr, "etwdump: --profile: no sample selected (%s)\n",
                    pk.by_event ? "no selected event" : "no PerfInfo/Sample event of the selection");
        if (o->verbose)
            fprintf(stderr,
                    "etwdump: profile: %llu samples, %llu with a stack; %u stacks, %u frames; "
                    "%llu of %llu stack events attached\n",
                    (unsigned long long)ps.samples, (unsigned long long)ps.samples_with_stack,
                    etw_profile_stack_count(p), etw_profile_frame_count(p),
                    (unsigned long long)ps.stacks_attached, (unsigned long long)ps.stack_events);
        if (run_problems(s)) rc = EXIT_SKIPPED;
    }
    etw_profile_free(p);
    return rc;
}

/* --- --stacks ------------------------------------------------------------------- */

struct stack_source {
    etw_profile *p;
    etw_decoder *dec;     /* the first pass's own: the second decodes as a plain run */
    uint64_t seen;        /* events counted by stack_source_next */
    char *pool;           /* every frame's label */
    size_t *off;
    size_t *len;
    etw_json_frame *fr;
    size_t frcap;
};

void stack_source_free(stack_source *src) {
    if (!src) return;
    etw_profile_free(src->p);
    etw_decoder_free(src->dec);
    free(src->pool);
    free(src->off);
    free(src->len);
    free(src->fr);
    free(src);
}

/* Every frame's label, once. */
static int label_frames(stack_source *src) {
    uint32_t n = etw_profile_frame_count(src->p);
    src->off = calloc(n ? n : 1, sizeof *src->off);
    src->len = calloc(n ? n : 1, sizeof *src->len);
    if (!src->off || !src->len) return 0;
    size_t cap = 4096, used = 0;
    src->pool = malloc(cap);
    if (!src->pool) return 0;
    for (uint32_t f = 0; f < n; f++) {
        etw_frame_info fi;
        if (etw_profile_frame(src->p, f, &fi) != ETW_OK) continue;
        size_t need = etw_frame_label(&fi, NULL, 0);
        if (cap - used < need + 1) {
            while (cap - used < need + 1) cap *= 2;
            char *np = realloc(src->pool, cap);
            if (!np) return 0;
            src->pool = np;
        }
        etw_frame_label(&fi, src->pool + used, need + 1);
        src->off[f] = used;
        src->len[f] = need;
        used += need;
    }
    return 1;
}

/* The stack pass's decoder (told nothing: quiet) and profile; prescan: the
 * decoder pre-scans the trace first. */
static int stack_setup(session *s, stack_source *src, diag_ctx *quiet, int prescan) {
    int rc = setup_decoder_ex(s->o, s->m, quiet, prescan, NULL, &src->dec);
    if (rc == EXIT_FATAL) return rc;
    etw_profile_options po;
    profile_options_init(s, src->dec, &po);
    po.keep_event_stacks = 1;
    if (etw_profile_new(&src->p, &po) != ETW_OK) return out_of_memory();
    return EXIT_CLEAN;
}

/* Every event into src's profile. With a: no pre-scan, the MetaData records
 * learned as their buffers load, each one read kept in k (for the run's
 * decoder), and a stop (*missed) where ahead_missed says the pass may
 * differ from one with the pre-scan. */
static int stack_pass(session *s, stack_source *src, ahead *a, metadata_kept *k, int *missed) {
    etw_event ev;
    size_t file;
    while (etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        if (stop_requested()) return EXIT_INTERRUPTED;
        if (a && ahead_missed(a, s, &ev)) {
            *missed = 1;
            return EXIT_CLEAN;
        }
        if (k && ev.provider.data1 == METADATA_PROVIDER_DATA1 &&
            etw_decoder_learn_kind(src->dec, &ev) == ETW_LEARN_AHEAD && !metadata_keep(k, &ev))
            return out_of_memory();
        const etw_schema *sc = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(src->dec, &ev, &sc, NULL);
        if (etw_profile_add(src->p, &ev, sc) != ETW_OK) return out_of_memory();
    }
    if (k) k->complete = !k->too_many;
    return EXIT_CLEAN;
}

/* The run's own decoder, made without the pre-scan (main.c: one file,
 * --stacks): what the pre-scan would have taught it - the MetaData records
 * the stack pass kept, in read order, or a pre-scan now. Quiet, as the
 * pre-scan is: the run says the problems. */
static int teach_run_decoder(session *s) {
    etw_status st = ETW_OK;
    s->dc->muted = 1;
    if (s->metadata.complete) st = metadata_learn(&s->metadata, s->dec);
    else
        for (size_t i = 0; i < etw_multi_count(s->m) && st == ETW_OK; i++)
            st = etw_decoder_prescan(s->dec, etw_multi_reader(s->m, i));
    s->dc->muted = 0;
    metadata_kept_free(&s->metadata);
    if (st == ETW_E_NOMEM) return out_of_memory();
    if (st != ETW_OK) {
        fprintf(stderr, "etwdump: %s\n", etw_strerror(st));
        return EXIT_FATAL;
    }
    return EXIT_CLEAN;
}

int stack_source_build(session *s, stack_source **out) {
    *out = NULL;
    stack_source *src = calloc(1, sizeof *src);
    if (!src) return out_of_memory();
    /* its own decoder, told nothing (the second pass tells the problems) */
    diag_ctx quiet = *s->dc;
    quiet.quiet = 1;
    /* the readers tell their problems to the run's context: muted from
     * here, the pre-scan included (the second pass tells them) */
    s->dc->muted = 1;
    int rc = stack_setup(s, src, &quiet, !s->no_prescan);
    if (rc == EXIT_CLEAN && s->no_prescan) {
        ahead a;
        int missed = 0;
        ahead_start(&a, s, src->dec, 0);
        rc = stack_pass(s, src, &a, &s->metadata, &missed);
        ahead_stop(&a, s);
        if (rc == EXIT_CLEAN && missed) {
            /* as before: a decoder that pre-scanned, the pass again */
            etw_profile_free(src->p);
            src->p = NULL;
            etw_decoder_free(src->dec);
            src->dec = NULL;
            metadata_kept_free(&s->metadata);
            if (etw_multi_rewind(s->m) != ETW_OK) {
                fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
                rc = EXIT_FATAL;
            }
            if (rc == EXIT_CLEAN) rc = stack_setup(s, src, &quiet, 1);
            if (rc == EXIT_CLEAN) rc = stack_pass(s, src, NULL, &s->metadata, NULL);
        }
    } else if (rc == EXIT_CLEAN) {
        rc = stack_pass(s, src, NULL, NULL, NULL);
    }
    s->dc->muted = 0;
    if (rc == EXIT_CLEAN && etw_profile_finish(src->p) != ETW_OK) rc = out_of_memory();
    if (rc == EXIT_CLEAN && !label_frames(src)) rc = out_of_memory();
    if (rc == EXIT_CLEAN && s->no_prescan) rc = teach_run_decoder(s);
    if (rc == EXIT_CLEAN && etw_multi_rewind(s->m) != ETW_OK) {
        fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
        rc = EXIT_FATAL;
    }
    if (rc != EXIT_CLEAN) {
        metadata_kept_free(&s->metadata);
        stack_source_free(src);
        return rc;
    }
    *out = src;
    return EXIT_CLEAN;
}

void stack_source_next(stack_source *src) {
    if (src) src->seen++;
}

size_t stack_source_fn(void *ctx, const etw_event *ev, const etw_json_frame **frames) {
    stack_source *src = ctx;
    (void)ev;
    if (!src->seen) return 0;
    uint32_t node = etw_profile_event_stack(src->p, src->seen - 1);
    if (node == ETW_STACK_NONE) return 0;
    size_t depth = etw_profile_stack_depth(src->p, node);
    if (depth > src->frcap) {
        etw_json_frame *nf = realloc(src->fr, depth * sizeof *nf);
        if (!nf) return 0;
        src->fr = nf;
        src->frcap = depth;
    }
    uint32_t nframes = etw_profile_frame_count(src->p);
    size_t n = 0;
    for (; node != ETW_STACK_NONE && n < depth; node = etw_profile_stack_parent(src->p, node)) {
        uint32_t f = etw_profile_stack_frame(src->p, node);
        if (f >= nframes) {
            src->fr[n].s = "?";
            src->fr[n].len = 1;
        } else {
            src->fr[n].s = src->pool + src->off[f];
            src->fr[n].len = src->len[f];
        }
        n++;
    }
    *frames = src->fr;
    return n;
}

/* --- --stats: CPU samples by module and function ---------------------------------- */

/* Kernel StackWalk class: the trace has stacks. */
static const etw_guid stackwalk_guid = {0xdef2fe46, 0x7bd6, 0x4b80, {0xbd, 0x94, 0xf5, 0x7f, 0xe2, 0x0d, 0x0c, 0xe3}};

int has_stacks(const etw_event *ev) {
    return etw_guid_equal(&ev->provider, &stackwalk_guid);
}

/* Counts by name: open addressing over malloc'd keys. */
typedef struct tally_slot {
    char *key;
    size_t len;
    uint64_t count;
} tally_slot;

typedef struct tally {
    tally_slot *slots;
    size_t cap, used;
} tally;

static uint64_t tally_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static int tally_add(tally *t, const char *key, size_t len, uint64_t n) {
    if ((t->used + 1) * 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        tally_slot *ns = calloc(cap, sizeof *ns);
        if (!ns) return 0;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i].key) continue;
            size_t j = (size_t)tally_hash(t->slots[i].key, t->slots[i].len) & (cap - 1);
            while (ns[j].key) j = (j + 1) & (cap - 1);
            ns[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = ns;
        t->cap = cap;
    }
    size_t j = (size_t)tally_hash(key, len) & (t->cap - 1);
    while (t->slots[j].key && !(t->slots[j].len == len && !memcmp(t->slots[j].key, key, len)))
        j = (j + 1) & (t->cap - 1);
    if (!t->slots[j].key) {
        char *k = malloc(len + 1);
        if (!k) return 0;
        memcpy(k, key, len);
        k[len] = 0;
        t->slots[j].key = k;
        t->slots[j].len = len;
        t->used++;
    }
    t->slots[j].count += n;
    return 1;
}

static void tally_free(tally *t) {
    for (size_t i = 0; i < t->cap; i++) free(t->slots[i].key);
    free(t->slots);
}

static int by_count(const void *a, const void *b) {
    const tally_slot *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* The filled slots, heaviest first (compacted in place). */
static size_t tally_sorted(tally *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].key) t->slots[n++] = t->slots[i];
    for (size_t i = n; i < t->cap; i++) t->slots[i].key = NULL;
    if (n > 1) qsort(t->slots, n, sizeof *t->slots, by_count);
    return n;
}

/* A growable output string. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    int failed;
} sbuf;

static void sput(sbuf *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap - b->len < n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sputs(sbuf *b, const char *s) {
    sput(b, s, strlen(s));
}

/* Length of the well-formed UTF-8 sequence at p, or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) len = 3;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

/* A name from the trace: valid UTF-8 (bad bytes U+FFFD), as a JSON string
 * (json) or with control characters as '?' (text). */
static void sname(sbuf *b, const char *s, size_t n, int json) {
    const unsigned char *p = (const unsigned char *)s;
    if (json) sput(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        if (!k) {
            sput(b, "\xEF\xBF\xBD", 3);
            i++;
            continue;
        }
        unsigned char c = p[i];
        if (k == 1 && (c < 0x20 || c == 0x7F || (json && (c == '"' || c == '\\')))) {
            char esc[8];
            if (!json) sput(b, "?", 1);
            else if (c == '"' || c == '\\') esc[0] = '\\', esc[1] = (char)c, sput(b, esc, 2);
            else snprintf(esc, sizeof esc, "\\u%04x", c), sput(b, esc, 6);
        } else {
            sput(b, s + i, k);
        }
        i += k;
    }
    if (json) sput(b, "\"", 1);
}

#define CPU_TOP 15

/* The selected CPU samples of a finished profile p by module and function,
 * as cpu_summary says them. */
static int cpu_text(etw_profile *p, int json, char **text, size_t *len) {
    int rc = EXIT_CLEAN;
    tally mods = {0}, fns = {0};
    etw_profile_stats ps;
    memset(&ps, 0, sizeof ps);
    if (rc == EXIT_CLEAN) {
        etw_profile_stats_get(p, &ps);
        size_t ns = etw_profile_sample_count(p);
        uint32_t nframes = etw_profile_frame_count(p);
        char small[512];
        for (size_t i = 0; i < ns && rc == EXIT_CLEAN; i++) {
            etw_profile_sample sm;
            if (etw_profile_sample_at(p, i, &sm) != ETW_OK || sm.stack == ETW_STACK_NONE) continue;
            uint32_t f = etw_profile_stack_frame(p, sm.stack); /* the leaf: where the CPU was */
            etw_frame_info fi;
            if (f >= nframes || etw_profile_frame(p, f, &fi) != ETW_OK) continue;
            /* JIT code without a module, and addresses nothing knows, by kind */
            const char *mod = fi.module && fi.module_len && fi.kind != ETW_FRAME_ADDRESS ? fi.module
                              : fi.kind == ETW_FRAME_JIT                                ? "(.NET JIT code)"
                                                                                         : "(unknown)";
            size_t ml = mod == fi.module ? fi.module_len : strlen(mod);
            /* functions without the offset; image frames by module */
            etw_frame_info fn = fi;
            int named = (fi.kind == ETW_FRAME_PDB || fi.kind == ETW_FRAME_JIT) && fi.function && fi.function_len;
            if (named) fn.offset = 0;
            size_t need = named            ? etw_frame_label(&fn, small, sizeof small)
                          : mod != fi.module ? (size_t)snprintf(small, sizeof small, "%s", mod)
                                             : (size_t)snprintf(small, sizeof small, "%.*s!?",
                                                                (int)(ml > 400 ? 400 : ml), mod);
            if (need >= sizeof small) need = sizeof small - 1;
            if (!tally_add(&mods, mod, ml, sm.count) || !tally_add(&fns, small, need, sm.count)) rc = out_of_memory();
        }
    }
    sbuf b = {0};
    if (rc == EXIT_CLEAN && ps.samples) { /* no sample selected: nothing to add */
        size_t nm = tally_sorted(&mods), nf = tally_sorted(&fns);
        char num[64];
        if (json) {
            snprintf(num, sizeof num, "{\"samples\":%llu,\"with_stack\":%llu,\"modules\":[",
                     (unsigned long long)ps.samples, (unsigned long long)ps.samples_with_stack);
            sputs(&b, num);
            for (size_t i = 0; i < nm && i < CPU_TOP; i++) {
                sputs(&b, i ? ",{\"module\":" : "{\"module\":");
                sname(&b, mods.slots[i].key, mods.slots[i].len, 1);
                snprintf(num, sizeof num, ",\"samples\":%llu}", (unsigned long long)mods.slots[i].count);
                sputs(&b, num);
            }
            sputs(&b, "],\"functions\":[");
            for (size_t i = 0; i < nf && i < CPU_TOP; i++) {
                sputs(&b, i ? ",{\"function\":" : "{\"function\":");
                sname(&b, fns.slots[i].key, fns.slots[i].len, 1);
                snprintf(num, sizeof num, ",\"samples\":%llu}", (unsigned long long)fns.slots[i].count);
                sputs(&b, num);
            }
            sputs(&b, "]}");
        } else {
            snprintf(num, sizeof num, "\nCPU samples        %llu (%llu with a stack)\n", (unsigned long long)ps.samples,
                     (unsigned long long)ps.samples_with_stack);
            sputs(&b, num);
            sputs(&b, "\nCPU samples by module (where the sample was: its innermost frame)\n");
            for (size_t i = 0; i < nm && i < CPU_TOP; i++) {
                snprintf(num, sizeof num, "  %10llu %5.1f%%  ", (unsigned long long)mods.slots[i].count,
                         ps.samples ? 100.0 * (double)mods.slots[i].count / (double)ps.samples : 0.0);
                sputs(&b, num);
                sname(&b, mods.slots[i].key, mods.slots[i].len, 0);
                sputs(&b, "\n");
            }
            sputs(&b, "\nCPU samples by function\n");
            for (size_t i = 0; i < nf && i < CPU_TOP; i++) {
                snprintf(num, sizeof num, "  %10llu %5.1f%%  ", (unsigned long long)fns.slots[i].count,
                         ps.samples ? 100.0 * (double)fns.slots[i].count / (double)ps.samples : 0.0);
                sputs(&b, num);
                sname(&b, fns.slots[i].key, fns.slots[i].len, 0);
                sputs(&b, "\n");
            }
        }
        if (b.failed) rc = out_of_memory();
    }
    tally_free(&mods);
    tally_free(&fns);
    if (rc != EXIT_CLEAN) {
        free(b.p);
        return rc;
    }
    *text = b.p;
    *len = b.len;
    return EXIT_CLEAN;
}

int cpu_summary(session *s, int json, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    const options *o = s->o;
    etw_decoder *dec = NULL;
    diag_ctx quiet = *s->dc;
    quiet.quiet = 1;
    if (etw_multi_rewind(s->m) != ETW_OK) {
        fprintf(stderr, "etwdump: cannot go back to the start of the input\n");
        return EXIT_FATAL;
    }
    /* the MetaData records the -j N run kept: all a pre-scan would learn */
    int kept = s->metadata.complete;
    if (setup_decoder_ex(o, s->m, &quiet, !kept, NULL, &dec) == EXIT_FATAL) {
        etw_decoder_free(dec);
        return EXIT_FATAL;
    }
    if (kept && metadata_learn(&s->metadata, dec) != ETW_OK) {
        etw_decoder_free(dec);
        return out_of_memory();
    }
    session s2 = *s;
    s2.dec = dec;
    pick_ctx pk = {&s2, 0, 0};
    etw_profile_options po;
    profile_options_init(s, dec, &po);
    po.leaf_only = 1; /* cpu_text reads the innermost frames only */
    if (!etw_filter_is_empty(s->filter)) {
        po.is_sample = pick;
        po.sample_ctx = &pk;
    }
    etw_profile *p = NULL;
    int rc = etw_profile_new(&p, &po) == ETW_OK ? EXIT_CLEAN : out_of_memory();
    etw_event ev;
    size_t file;
    s->dc->muted = 1;
    while (rc == EXIT_CLEAN && etw_multi_next(s->m, &ev, &file) == ETW_OK) {
        if (stop_requested()) {
            rc = EXIT_INTERRUPTED;
            break;
        }
        const etw_schema *sc = NULL;
        if (!ev.is_logfile_header) etw_decoder_resolve(dec, &ev, &sc, NULL);
        if (etw_profile_add(p, &ev, sc) != ETW_OK || pk.oom) rc = out_of_memory();
    }
    s->dc->muted = 0;
    if (rc == EXIT_CLEAN && etw_profile_finish(p) != ETW_OK) rc = out_of_memory();
    if (rc == EXIT_CLEAN) rc = cpu_text(p, json, text, len);
    etw_profile_free(p);
    etw_decoder_free(dec);
    return rc;
}

/* --- --stats -j 1: the profile fed by the scan's own pass ------------------------
 * The scan has resolved the event and matched the filter with its decoder
 * (the state a second decoder reading the trace again would have at that
 * event: it learns from the same events in the same order), so the sample
 * rule of cpu_summary's pick is its selection of a PerfInfo/Sample. */

struct cpu_feed {
    etw_profile *p;
    int sel; /* the scan's selection of the event being added */
};

static int pick_scanned(void *ctx, const etw_event *ev, const etw_schema *sc, uint32_t pid, uint32_t tid,
                        double *weight) {
    const cpu_feed *f = ctx;
    (void)sc;
    (void)pid;
    (void)tid;
    if (f->sel <= 0 || !etw_guid_equal(&ev->provider, &perfinfo_guid) || ev->opcode != PERFINFO_SAMPLE) return 0;
    *weight = 1.0; /* --weight needs --profile */
    return 1;
}

int cpu_feed_new(session *s, cpu_feed **out) {
    *out = NULL;
    cpu_feed *f = calloc(1, sizeof *f);
    if (!f) return out_of_memory();
    etw_profile_options po;
    profile_options_init(s, s->dec, &po);
    po.leaf_only = 1; /* cpu_text reads the innermost frames only */
    if (!etw_filter_is_empty(s->filter)) {
        po.is_sample = pick_scanned;
        po.sample_ctx = f;
    }
    if (etw_profile_new(&f->p, &po) != ETW_OK) {
        free(f);
        return out_of_memory();
    }
    *out = f;
    return EXIT_CLEAN;
}

int cpu_feed_add(cpu_feed *f, const etw_event *ev, const etw_schema *sc, int sel, const uint32_t *ids) {
    f->sel = sel;
    if (ids && sc && !ev->is_logfile_header) return etw_profile_add_ids(f->p, ev, sc, ids[0], ids[1]) == ETW_OK;
    return etw_profile_add(f->p, ev, ev->is_logfile_header ? NULL : sc) == ETW_OK;
}

int cpu_feed_summary(cpu_feed *f, int json, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    if (etw_profile_finish(f->p) != ETW_OK) return out_of_memory();
    return cpu_text(f->p, json, text, len);
}

void cpu_feed_free(cpu_feed *f) {
    if (!f) return;
    etw_profile_free(f->p);
    free(f);
}
