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
    return f;
}
