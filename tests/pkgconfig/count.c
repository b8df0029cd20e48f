/* A program built against an installed etwdecode through pkg-config
 * (tests/pkgconfig/test.sh): prints the number of events of a trace (plain
 * or compressed) and the kind etw_sniff gives its first bytes. */
#include <stdio.h>

#include <etwdecode/etwdecode.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    unsigned char head[ETW_SNIFF_BYTES];
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    etw_multi *m = NULL;
    if (etw_multi_new(&m, NULL) != ETW_OK) return 2;
    etw_status s = etw_multi_add_file(m, argv[1]);
    if (s != ETW_OK) {
        printf("%s: %s\n", etw_file_kind_describe(etw_sniff(head, n)), etw_strerror(s));
        etw_multi_free(m);
        return 1;
    }
    etw_event ev;
    unsigned long long events = 0;
    while (etw_multi_next(m, &ev, NULL) == ETW_OK) events++;
    printf("%s: %llu events\n", etw_file_kind_describe(etw_sniff(head, n)), events);
    etw_multi_free(m);
    return 0;
}
