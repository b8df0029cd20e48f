/* test_json_time.c - etw_json_time, the one time formatter (the JSON's and
 * etwdump --stats'): exact text at the edges of the FILETIME range, "null"
 * (and ETW_E_CORRUPT) outside it, where the JSON writes null. */
#include <stdint.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_json.h"

static void expect(int64_t ft, etw_status want_status, const char *want) {
    char s[ETW_TIME_STRING_SIZE];
    memset(s, 'x', sizeof s);
    ETW_CHECK_INT(etw_json_time(ft, s), want_status);
    ETW_CHECK_STR(s, want);
}

static void test_edges(void) {
    expect(0, ETW_OK, "1601-01-01T00:00:00.0000000Z");
    expect(1, ETW_OK, "1601-01-01T00:00:00.0000001Z");
    /* 1970-01-01 is 11644473600 s after 1601-01-01. */
    expect(INT64_C(116444736000000000), ETW_OK, "1970-01-01T00:00:00.0000000Z");
    /* 2000-02-29 (a leap day in a century year divisible by 400):
     * 946684800 s after 1970 is 2000-01-01, plus 59 days. */
    expect(INT64_C(116444736000000000) + (INT64_C(946684800) + 59 * 86400) * 10000000 + 1234567, ETW_OK,
           "2000-02-29T00:00:00.1234567Z");
    /* The last tick of 9999-12-31: 253402300800 s after 1970, minus one tick. */
    expect(INT64_C(116444736000000000) + INT64_C(253402300800) * 10000000 - 1, ETW_OK,
           "9999-12-31T23:59:59.9999999Z");
}

static void test_outside(void) {
    expect(-1, ETW_E_CORRUPT, "null");
    expect(INT64_MIN, ETW_E_CORRUPT, "null");
    expect(INT64_MAX, ETW_E_CORRUPT, "null");
    expect(INT64_C(116444736000000000) + INT64_C(253402300800) * 10000000, ETW_E_CORRUPT, "null");
}

int main(void) {
    ETW_RUN(test_edges);
    ETW_RUN(test_outside);
    return ETW_TEST_DONE();
}
