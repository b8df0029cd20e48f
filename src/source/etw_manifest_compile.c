/* etw_manifest_compile.c - providers and events of a parsed manifest:
 * name tables, descriptor values, event names, messages and templates.
 * (see etw_manifest_internal.h for how the manifest source is split). */
#include <stdio.h>

#include "etw_manifest_internal.h"

/* Look up a reference attribute (trimmed) in the provider name table. */
static int lookup(loader *L, uint32_t scope, const char *s, uint32_t *v) {
    size_t n;
    const char *t = trim(s, &n);
    return etw_mf_nt_get(&L->names, L->m->seed, scope, t, n, v);
}

static char *join(loader *L, const char *a, const char *sep, const char *b) {
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *d = etw_mf_ar_alloc(&L->doc->ar, la + ls + lb + 1);
    if (!d) return NULL;
    memcpy(d, a, la);
    memcpy(d + la, sep, ls);
    memcpy(d + la + ls, b, lb + 1);
    return d;
}

/* Parse a numeric attribute that must fit `max`. */
static int num_attr(const char *s, uint64_t max, uint64_t *v) {
    return s && etw_mf_parse_u64(s, v) && *v <= max;
}

/* Values of the provider's named items, by parse index (temporary, in
 * the document arena). */
typedef struct c_prov_tables {
    const p_named *tasks;
    const p_named *opcodes;
    const char **task_display;   /* display names (display_name) */
    const char **opcode_display;
    uint64_t *task_values;
    uint64_t *opcode_values;
    uint64_t *level_values;
    uint64_t *channel_values;
    uint64_t *keyword_masks;
} c_prov_tables;

/* Compile one event into *e. Returns -1 on NOMEM, 0 when the event is
 * skipped, 1 when compiled. */
static int compile_event(loader *L, p_provider *pp, const p_event *pe, const c_prov_tables *pt,
                         const c_tmpl *tmpls, mf_event *e) {
    uint64_t v;
    memset(e, 0, sizeof *e);
    e->line = pe->line;
    if (!num_attr(pe->value, 0xFFFF, &v)) {
        WARN(L, ETW_E_CORRUPT, pe->line, "provider %s: event value \"%s\" is not a number up to 65535; skipped",
             nz(pp->name), nz(pe->value));
        return 0;
    }
    e->id = (uint16_t)v;
    if (pe->version) {
        if (!num_attr(pe->version, 0xFF, &v)) {
            WARN(L, ETW_E_CORRUPT, pe->line, "provider %s: event %u: version \"%s\" is not a number up to 255; skipped",
                 nz(pp->name), e->id, pe->version);
            return 0;
        }
        e->version = (uint8_t)v;
    }
    uint32_t idx;
    /* level */
    if (pe->level) {
        if (lookup(L, S_LEVEL, pe->level, &idx)) e->level = (uint8_t)pt->level_values[idx];
        else if (etw_mf_std_level(pe->level, &e->level)) {
        } else if (num_attr(pe->level, 0xFF, &v)) e->level = (uint8_t)v;
        else
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown level \"%s\"", nz(pp->name), e->id,
                 pe->level);
    }
    /* task */
    int32_t task = -1;
    if (pe->task) {
        size_t tl;
        const char *tn = trim(pe->task, &tl);
        uint16_t tv;
        if (tl == 0 || etw_mf_std_task(pe->task, &tv)) {
        } else if (lookup(L, S_TASK, pe->task, &idx)) {
            task = (int32_t)idx;
            e->task = (uint16_t)pt->task_values[idx];
            e->task_name = pt->task_display[idx];
            e->task_symbol = pt->tasks[idx].name; /* entered in the name table: not empty */
        } else {
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown task \"%s\"", nz(pp->name), e->id,
                 pe->task);
            e->task_name = etw_mf_ar_strndup(&L->doc->ar, tn, tl);
            if (!e->task_name) return -1;
            e->task_symbol = e->task_name; /* the name it was referred by */
        }
    }
    /* opcode: the task's own, the provider's, the predefined ones */
    if (pe->opcode) {
        size_t ol;
        const char *on = trim(pe->opcode, &ol);
        if (ol == 0) {
        } else if ((task >= 0 && lookup(L, SCOPE_OPCODE(task + 1), pe->opcode, &idx)) ||
                   lookup(L, SCOPE_OPCODE(0), pe->opcode, &idx)) {
            e->opcode = (uint8_t)pt->opcode_values[idx];
            e->opcode_name = pt->opcode_display[idx];
            /* a predefined opcode listed by the provider (WEVT_TEMPLATE
             * lists those its events use): its symbol without "win:" */
            e->opcode_symbol = etw_mf_std_opcode_symbol(pt->opcodes[idx].name);
            if (!e->opcode_symbol) e->opcode_symbol = pt->opcodes[idx].name;
        } else if (etw_mf_std_opcode(on, &e->opcode)) {
            e->opcode_name = etw_mf_std_opcode_display(on); /* attributes come trimmed */
            e->opcode_symbol = etw_mf_std_opcode_symbol(on);
        } else {
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown opcode \"%s\"", nz(pp->name),
                 e->id, pe->opcode);
        }
    }
    /* keywords: space-separated names */
    if (pe->keywords) {
        const char *p = pe->keywords;
        for (;;) {
            while (is_space(*p)) p++;
            if (!*p) break;
            const char *q = p;
            while (*q && !is_space(*q)) q++;
            size_t kl = (size_t)(q - p);
            uint64_t mask;
            if (etw_mf_nt_get(&L->names, L->m->seed, S_KEYWORD, p, kl, &idx)) {
                e->keywords |= pt->keyword_masks[idx];
            } else {
                char buf[64];
                int ok = 0;
                if (kl < sizeof buf) {
                    memcpy(buf, p, kl);
                    buf[kl] = 0;
                    ok = etw_mf_std_keyword(buf, &mask);
                }
                if (ok) e->keywords |= mask;
                else
                    WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown keyword \"%.*s\"",
                         nz(pp->name), e->id, (int)(kl > 200 ? 200 : kl), p);
            }
            p = q;
        }
    }
    /* channel: by chid, then by name, then predefined */
    if (pe->channel) {
        size_t cl;
        trim(pe->channel, &cl);
        if (cl == 0) {
        } else if (lookup(L, S_CHANNEL, pe->channel, &idx) || lookup(L, S_CHANNAME, pe->channel, &idx)) {
            /* the first channel in document order whose chid or name it
             * is (as mc.exe resolves it: ReferenceChannels) */
            uint32_t other;
            if (lookup(L, S_CHANNAME, pe->channel, &other) && other < idx) idx = other;
            e->channel = (uint8_t)pt->channel_values[idx];
        } else if (etw_mf_std_channel(pe->channel, &e->channel)) {
        } else {
            WARN(L, ETW_E_NOT_FOUND, pe->line, "provider %s: event %u: unknown channel \"%s\"", nz(pp->name),
                 e->id, pe->channel);
        }
    }
    /* template */
    if (pe->tmpl) {
        size_t tl;
        trim(pe->tmpl, &tl);
        if (tl && lookup(L, S_TEMPLATE, pe->tmpl, &idx)) {
            if (tmpls[idx].valid) {
                e->props = tmpls[idx].props;
                e->prop_count = tmpls[idx].prop_count;
                e->top_count = tmpls[idx].top_count;
            } else {
                WARN(L, ETW_E_NOT_FOUND, pe->line,
                     "provider %s: event %u version %u: template %s was skipped; the event has no fields",
                     nz(pp->name), e->id, e->version, pe->tmpl);
            }
        } else if (tl) {
            WARN(L, ETW_E_NOT_FOUND, pe->line,
                 "provider %s: event %u version %u: template \"%s\" is not defined; the event has no fields",
                 nz(pp->name), e->id, e->version, pe->tmpl);
        }
    }
    /* message */
    if (pe->message) {
        int missing;
        e->message = etw_mf_resolve_text(L, pe->message, pe->line, &missing);
        if (!e->message) return -1;
        if (missing) e->message = NULL; /* a message that resolves nowhere is none */
    }
    if (pe->has_desc) {
        e->level = pe->d_level;
        e->opcode = pe->d_opcode;
        e->channel = pe->d_channel;
        e->task = pe->d_task;
        e->keywords = pe->d_keywords;
    }
    /* name (docs/json-output.md): Task/Opcode from their display names, Task alone for opcode 0,
     * else the event's name attribute, the symbol, EventID(N) */
    const char *sym = NULL;
    if (pe->name) {
        size_t sl;
        sym = trim(pe->name, &sl);
        if (sl == 0) sym = NULL;
        else if (sym[sl] != 0 && !(sym = etw_mf_ar_strndup(&L->doc->ar, sym, sl))) return -1;
    }
    if (!sym && pe->symbol) {
        size_t sl;
        sym = trim(pe->symbol, &sl);
        if (sl == 0) sym = NULL;
        else if (sym[sl] != 0 && !(sym = etw_mf_ar_strndup(&L->doc->ar, sym, sl))) return -1;
    }
    e->event_symbol = sym;
    if (e->task_name) {
        if (e->opcode == 0 || !e->opcode_name) e->name = e->task_name;
        else if (!(e->name = join(L, e->task_name, "/", e->opcode_name))) return -1;
    } else if (sym) {
        e->name = sym;
    } else {
        char buf[32];
        snprintf(buf, sizeof buf, "EventID(%u)", (unsigned)e->id);
        if (!(e->name = etw_mf_ar_strdup(&L->doc->ar, buf))) return -1;
    }
    return 1;
}

/* Enter the named items of v (tasks, opcodes, keywords, levels) into the
 * provider name table and their numeric values into values[]. Opcodes are
 * entered under the scope of their task (or the provider's). */
static void put_named(loader *L, const p_provider *pp, const vec *v, uint32_t scope, const char *what,
                      uint64_t maxv, uint64_t *values) {
    for (uint32_t i = 0; i < v->n; i++) {
        const p_named *x = &VAT(p_named, v, i);
        uint64_t val = 0;
        values[i] = 0;
        if (!x->name || !*x->name) {
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: %s without a name; ignored", nz(pp->name), what);
            continue;
        }
        if (!num_attr(x->value, maxv, &val)) {
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: %s %s: value \"%s\" is not a number up to %llu; 0 used",
                 nz(pp->name), what, x->name, nz(x->value), (unsigned long long)maxv);
            val = 0;
        }
        values[i] = val;
        uint32_t sc = scope == S_OPCODE ? SCOPE_OPCODE(x->task + 1) : scope;
        if (etw_mf_nt_put(&L->names, L->m->seed, sc, x->name, strlen(x->name), i))
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: %s %s is defined again; the later one is used",
                 nz(pp->name), what, x->name);
    }
}

/* Compile provider pp. *out = NULL when it is skipped. 0 on NOMEM. */
int etw_mf_compile_provider(loader *L, p_provider *pp, mf_provider **out) {
    *out = NULL;
    etw_guid guid;
    if (!etw_mf_parse_guid(pp->guid, &guid)) {
        WARN(L, ETW_E_CORRUPT, pp->line, "provider %s has no valid guid (\"%s\"); skipped", nz(pp->name),
             pp->guid ? pp->guid : "missing");
        return 1;
    }
    L->warned_in = L->warned_out = 0;
    const etw_allocator *al = &L->m->al;
    mf_arena *ar = &L->doc->ar;
    uint64_t seed = L->m->seed;

    /* name table */
    uint64_t total = (uint64_t)pp->tasks.n + pp->opcodes.n + pp->keywords.n + pp->levels.n +
                     2 * (uint64_t)pp->channels.n + pp->maps.n + pp->tmpls.n;
    if (total > 0x3FFFFFFF || !etw_mf_nt_reset(&L->names, al, (uint32_t)total)) return 0;

    c_prov_tables pt;
    pt.tasks = pp->tasks.v;
    pt.opcodes = pp->opcodes.v;
    pt.task_values = etw_mf_ar_alloc(ar, (size_t)pp->tasks.n * sizeof(uint64_t));
    pt.opcode_values = etw_mf_ar_alloc(ar, (size_t)pp->opcodes.n * sizeof(uint64_t));
    pt.level_values = etw_mf_ar_alloc(ar, (size_t)pp->levels.n * sizeof(uint64_t));
    pt.channel_values = etw_mf_ar_alloc(ar, (size_t)pp->channels.n * sizeof(uint64_t));
    pt.keyword_masks = etw_mf_ar_alloc(ar, (size_t)pp->keywords.n * sizeof(uint64_t));
    if (!pt.task_values || !pt.opcode_values || !pt.level_values || !pt.channel_values || !pt.keyword_masks)
        return 0;
    put_named(L, pp, &pp->tasks, S_TASK, "task", 0xFFFF, pt.task_values);
    put_named(L, pp, &pp->opcodes, S_OPCODE, "opcode", 0xFF, pt.opcode_values);
    put_named(L, pp, &pp->keywords, S_KEYWORD, "keyword", UINT64_MAX, pt.keyword_masks);
    put_named(L, pp, &pp->levels, S_LEVEL, "level", 0xFF, pt.level_values);
    pt.task_display = etw_mf_ar_alloc(ar, (size_t)pp->tasks.n * sizeof(const char *));
    pt.opcode_display = etw_mf_ar_alloc(ar, (size_t)pp->opcodes.n * sizeof(const char *));
    if (!pt.task_display || !pt.opcode_display) return 0;
    for (uint32_t i = 0; i < pp->tasks.n; i++)
        if (!(pt.task_display[i] = etw_mf_display_name(L, &VAT(p_named, &pp->tasks, i)))) return 0;
    for (uint32_t i = 0; i < pp->opcodes.n; i++)
        if (!(pt.opcode_display[i] = etw_mf_display_name(L, &VAT(p_named, &pp->opcodes, i)))) return 0;

    /* channels: chid (or name) -> value; missing values numbered from 16 */
    {
        uint8_t used[256] = {0};
        uint32_t nch = pp->channels.n;
        for (uint32_t i = 0; i < nch; i++) {
            const p_named *x = &VAT(p_named, &pp->channels, i);
            uint64_t v;
            pt.channel_values[i] = 0;
            if (x->value && num_attr(x->value, 0xFF, &v)) {
                pt.channel_values[i] = v;
                used[v] = 1;
            } else if (x->value) {
                WARN(L, ETW_E_CORRUPT, x->line, "provider %s: channel %s: value \"%s\" is not a number up to 255",
                     nz(pp->name), nz(x->name), x->value);
            }
        }
        unsigned next = 16;
        for (uint32_t i = 0; i < nch; i++) {
            const p_named *x = &VAT(p_named, &pp->channels, i);
            if (x->value) continue;
            uint8_t sv;
            if (x->import && ((x->extra && etw_mf_std_channel(x->extra, &sv)) ||
                              (x->name && etw_mf_std_channel(x->name, &sv)))) {
                pt.channel_values[i] = sv;
                continue;
            }
            while (next < 256 && used[next]) next++;
            if (next < 256) {
                pt.channel_values[i] = next;
                used[next] = 1;
            }
        }
        for (uint32_t i = 0; i < nch; i++) {
            const p_named *x = &VAT(p_named, &pp->channels, i);
            size_t nl;
            if (x->name && *x->name) {
                const char *nm = trim(x->name, &nl);
                etw_mf_nt_put(&L->names, seed, S_CHANNEL, nm, nl, i);
            }
            if (x->extra && *x->extra) {
                const char *nm = trim(x->extra, &nl);
                etw_mf_nt_put(&L->names, seed, S_CHANNAME, nm, nl, i);
            }
        }
    }

    /* maps */
    c_map *maps = etw_mf_ar_alloc(ar, (size_t)pp->maps.n * sizeof *maps);
    if (!maps) return 0;
    for (uint32_t i = 0; i < pp->maps.n; i++) {
        const p_map *x = &VAT(p_map, &pp->maps, i);
        if (!x->name || !*x->name) continue;
        size_t nl;
        const char *nm = trim(x->name, &nl);
        if (etw_mf_nt_put(&L->names, seed, S_MAP, nm, nl, i))
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: map %s is defined again; the later one is used",
                 nz(pp->name), x->name);
    }
    if (!etw_mf_compile_maps(L, pp, maps)) return 0;

    /* templates */
    c_tmpl *tmpls = etw_mf_ar_alloc(ar, (size_t)pp->tmpls.n * sizeof *tmpls);
    if (!tmpls) return 0;
    for (uint32_t i = 0; i < pp->tmpls.n; i++) {
        const p_tmpl *x = &VAT(p_tmpl, &pp->tmpls, i);
        if (!etw_mf_compile_template(L, pp, x, maps, &tmpls[i]) || !etw_mf_within_budget(L)) return 0;
    }
    for (uint32_t i = 0; i < pp->tmpls.n; i++) {
        const p_tmpl *x = &VAT(p_tmpl, &pp->tmpls, i);
        if (!x->tid || !*x->tid) {
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: template without a tid; ignored", nz(pp->name));
            continue;
        }
        size_t nl;
        const char *nm = trim(x->tid, &nl);
        if (etw_mf_nt_put(&L->names, seed, S_TEMPLATE, nm, nl, i))
            WARN(L, ETW_E_CORRUPT, x->line, "provider %s: template %s is defined again; the later one is used",
                 nz(pp->name), x->tid);
    }

    /* events, deduplicated on (id, version): the later definition wins */
    mf_provider *p = etw_mf_ar_alloc(ar, sizeof *p);
    if (!p) return 0;
    memset(p, 0, sizeof *p);
    p->guid = guid;
    p->name = pp->name;
    p->doc = L->doc;
    p->line = pp->line;
    uint32_t nev = pp->events.n;
    uint64_t cap = 8;
    while (cap < (uint64_t)nev * 2) cap <<= 1;
    p->events = etw_mf_ar_alloc(ar, (size_t)(nev ? nev : 1) * sizeof *p->events);
    p->slots = etw_mf_ar_alloc(ar, (size_t)cap * sizeof *p->slots);
    if (!p->events || !p->slots) return 0;
    memset(p->slots, 0, (size_t)cap * sizeof *p->slots);
    p->mask = (uint32_t)cap - 1;
    for (uint32_t i = 0; i < nev; i++) {
        const p_event *pe = &VAT(p_event, &pp->events, i);
        mf_event tmp;
        int r = compile_event(L, pp, pe, &pt, tmpls, &tmp);
        if (r < 0 || !etw_mf_within_budget(L)) return 0;
        if (r == 0) continue;
        uint32_t h = ev_hash(tmp.id, tmp.version);
        for (uint32_t s = h & p->mask;; s = (s + 1) & p->mask) {
            uint32_t x = p->slots[s];
            if (!x) {
                p->events[p->nevents] = tmp;
                p->slots[s] = ++p->nevents;
                break;
            }
            mf_event *old = &p->events[x - 1];
            if (old->id == tmp.id && old->version == tmp.version) {
                WARN(L, ETW_E_CORRUPT, tmp.line,
                     "provider %s: event %u version %u is defined again (first at line %u); the later one is used",
                     nz(pp->name), tmp.id, tmp.version, old->line);
                *old = tmp;
                break;
            }
        }
    }
    *out = p;
    return 1;
}

