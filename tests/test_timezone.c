/* test_timezone.c - etw_logfile_utc_offset(): the recording machine's UTC
 * offset by its TIME_ZONE_INFORMATION daylight rule.
 *
 * Expected instants are the published civil dates of the 2023 changes: US
 * Pacific time began daylight time on Sunday 12 March at 02:00 PST (10:00
 * UTC) and ended it on Sunday 5 November at 02:00 PDT (09:00 UTC); Sydney
 * ended it on Sunday 2 April at 03:00 AEDT (16:00 UTC the day before) and
 * began it on Sunday 1 October at 02:00 AEST (16:00 UTC the day before).
 * The rules are those Windows stores for the zones (the wDay-th wDayOfWeek
 * of wMonth). Malformed rules (month 13, week 9, hour 24) fall back to
 * standard time; an absolute date (wYear set) applies to its year only.
 */
#include <stdint.h>
#include <string.h>

#include "etw_test.h"
#include "etwdecode/etw_reader.h"

/* FILETIME of a UTC civil time (days from 1601 by the Gregorian rule). */
static int64_t ft(int y, int mo, int d, int h, int mi, int s) {
    static const int before[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int64_t days = 0;
    for (int yy = 1601; yy < y; yy++) days += (yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0 ? 366 : 365;
    days += before[mo - 1] + d - 1;
    if (mo > 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) days++;
    return ((days * 86400 + h * 3600 + mi * 60 + s) * 10000000LL);
}

static etw_logfile_header pacific(void) {
    etw_logfile_header h;
    memset(&h, 0, sizeof h);
    h.timezone_bias = 480;
    h.timezone_daylight_bias = -60;
    h.timezone_daylight_date = (etw_tz_transition){0, 3, 0, 2, 2, 0, 0};  /* 2nd Sunday of March, 02:00 */
    h.timezone_standard_date = (etw_tz_transition){0, 11, 0, 1, 2, 0, 0}; /* 1st Sunday of November, 02:00 */
    return h;
}

static void test_pacific(void) {
    etw_logfile_header h = pacific();
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 1, 15, 12, 0, 0)), -8 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2020, 7, 29, 0, 7, 3)), -7 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 3, 12, 9, 59, 59)), -8 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 3, 12, 10, 0, 0)), -7 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 11, 5, 8, 59, 59)), -7 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 11, 5, 9, 0, 0)), -8 * 3600);
    /* no rule (month 0): the bias alone, as the synthetic traces have it */
    h.timezone_standard_date.month = 0;
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2020, 7, 29, 0, 7, 3)), -8 * 3600);
}

static void test_sydney(void) {
    etw_logfile_header h;
    memset(&h, 0, sizeof h);
    h.timezone_bias = -600;
    h.timezone_daylight_bias = -60;
    h.timezone_standard_date = (etw_tz_transition){0, 4, 0, 1, 3, 0, 0};  /* 1st Sunday of April, 03:00 */
    h.timezone_daylight_date = (etw_tz_transition){0, 10, 0, 1, 2, 0, 0}; /* 1st Sunday of October, 02:00 */
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 1, 15, 0, 0, 0)), 11 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 7, 15, 0, 0, 0)), 10 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 4, 1, 15, 59, 59)), 11 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 4, 1, 16, 0, 0)), 10 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 9, 30, 15, 59, 59)), 10 * 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 9, 30, 16, 0, 0)), 11 * 3600);
}

static void test_last_week_and_absolute(void) {
    /* Central Europe: the last Sunday of March 02:00 CET (01:00 UTC) and of
     * October 03:00 CEST (01:00 UTC): 26 March and 29 October 2023 */
    etw_logfile_header h;
    memset(&h, 0, sizeof h);
    h.timezone_bias = -60;
    h.timezone_daylight_bias = -60;
    h.timezone_daylight_date = (etw_tz_transition){0, 3, 0, 5, 2, 0, 0};
    h.timezone_standard_date = (etw_tz_transition){0, 10, 0, 5, 3, 0, 0};
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 3, 26, 0, 59, 59)), 3600);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 3, 26, 1, 0, 0)), 7200);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 10, 29, 0, 59, 59)), 7200);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 10, 29, 1, 0, 0)), 3600);
    /* an absolute rule (wYear set) holds for its year only */
    h.timezone_daylight_date = (etw_tz_transition){2023, 3, 0, 26, 2, 0, 0};
    h.timezone_standard_date = (etw_tz_transition){2023, 10, 0, 29, 3, 0, 0};
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2023, 7, 1, 0, 0, 0)), 7200);
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2022, 7, 1, 0, 0, 0)), 3600);
}

static void test_malformed(void) {
    etw_logfile_header h = pacific();
    h.timezone_daylight_date.month = 13;
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2020, 7, 29, 0, 0, 0)), -8 * 3600);
    h = pacific();
    h.timezone_daylight_date.day = 9;
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2020, 7, 29, 0, 0, 0)), -8 * 3600);
    h = pacific();
    h.timezone_standard_date.hour = 24;
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2020, 7, 29, 0, 0, 0)), -8 * 3600);
    h = pacific();
    h.timezone_daylight_date.day_of_week = 7;
    ETW_CHECK_INT((int)etw_logfile_utc_offset(&h, ft(2020, 7, 29, 0, 0, 0)), -8 * 3600);
    /* extreme instants and biases: no overflow (UBSan) */
    h = pacific();
    h.timezone_bias = INT32_MAX;
    h.timezone_daylight_bias = INT32_MIN;
    (void)etw_logfile_utc_offset(&h, INT64_MAX);
    (void)etw_logfile_utc_offset(&h, INT64_MIN);
    (void)etw_logfile_utc_offset(&h, 0);
    ETW_CHECK(1);
}

int main(void) {
    ETW_RUN(test_pacific);
    ETW_RUN(test_sydney);
    ETW_RUN(test_last_week_and_absolute);
    ETW_RUN(test_malformed);
    return ETW_TEST_DONE();
}
