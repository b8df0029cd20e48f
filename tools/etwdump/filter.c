/* etwdump - the selection options as a library filter (etw_filter.h). */
#include <stdio.h>
#include <string.h>

#include "etwdump.h"

etw_filter *build_filter(const options *o) {
    etw_filter *f;
    if (etw_filter_new(&f, NULL) != ETW_OK) {
        fprintf(stderr, "etwdump: out of memory\n");
        return NULL;
    }
    for (int i = 0; i < o->nfilters; i++) {
        const filter_spec *fs = &o->filters[i];
        char buf[ETW_FILTER_MAX_VALUE + 2];
        const char *v = fs->value;
        if (strlen(v) > ETW_FILTER_MAX_VALUE) {
            fprintf(stderr, "etwdump: %s: value longer than %d bytes\n", fs->option, ETW_FILTER_MAX_VALUE);
            etw_filter_free(f);
            return NULL;
        }
        if (fs->exclude) {
            snprintf(buf, sizeof buf, "!%s", fs->value);
            v = buf;
        }
        const char *why = NULL;
        etw_status s = etw_filter_add(f, etw_filter_key_from_name(fs->key), v, &why);
        if (s != ETW_OK) {
            fprintf(stderr, "etwdump: %s '%s': %s\n", fs->option, fs->value,
                    s == ETW_E_NOMEM ? "out of memory" : why && *why ? why : etw_strerror(s));
            etw_filter_free(f);
            return NULL;
        }
    }
    etw_filter_track_names(f);
    return f;
}

/* The option as the user typed it, for a value the filter reports. */
static const filter_spec *spec_of(const options *o, const etw_filter_unmatched_info *u) {
    const char *key = u->key == ETW_FILTER_PROVIDER ? "provider" : "event";
    for (int i = 0; i < o->nfilters; i++) {
        const filter_spec *fs = &o->filters[i];
        if (strcmp(fs->key, key)) continue;
        const char *v = fs->value;
        int ex = fs->exclude;
        if (*v == '!' && !ex) {
            v++;
            ex = 1;
        }
        if (ex == u->exclude && !strcmp(v, u->value)) return fs;
    }
    return NULL;
}

void report_unmatched(const options *o, const etw_filter *f) {
    etw_filter_unmatched_info u;
    for (size_t i = 0; etw_filter_unmatched(f, i, &u); i++) {
        /* the same value given twice is said once */
        int again = 0;
        etw_filter_unmatched_info prev;
        for (size_t j = 0; j < i && !again && etw_filter_unmatched(f, j, &prev); j++)
            again = prev.key == u.key && prev.exclude == u.exclude && !strcmp(prev.value, u.value);
        if (again) continue;
        const filter_spec *fs = spec_of(o, &u);
        if (fs) fprintf(stderr, "etwdump: %s '%s' matched no event", fs->option, fs->value);
        else
            fprintf(stderr, "etwdump: %s '%s%s' matched no event",
                    u.key == ETW_FILTER_PROVIDER ? "--provider" : "--event", u.exclude ? "!" : "", u.value);
        if (!u.nnear) {
            fprintf(stderr, "; no %s names were seen\n", u.key == ETW_FILTER_PROVIDER ? "provider" : "event");
            continue;
        }
        fprintf(stderr, "; %s names seen include: ", u.key == ETW_FILTER_PROVIDER ? "provider" : "event");
        for (size_t k = 0; k < u.nnear; k++) fprintf(stderr, "%s%s", k ? ", " : "", u.near[k]);
        fprintf(stderr, "\n");
    }
}
