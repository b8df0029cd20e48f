/* etw_logfile.c - TRACE_LOGFILE_HEADER fields. The pointer-sized LoggerName
 * and LogFileName members make every later offset depend on the writer's
 * pointer size; the two UTF-16 strings follow the fixed part (dissect.etl and
 * airbus etl-parser read them there). */
#include "etw_logfile.h"

#include <string.h>

#include "../common/etw_bytes.h"

/* sizeof(RTL_TIME_ZONE_INFORMATION): i32 Bias, WCHAR[32], SYSTEMTIME, i32,
 * WCHAR[32], SYSTEMTIME, i32. */
#define TIME_ZONE_SIZE 0xACu
/* Offsets of its members after Bias (the same struct, WCHAR names of 64 bytes). */
#define TZ_STANDARD_DATE 0x44u
#define TZ_STANDARD_BIAS 0x54u
#define TZ_DAYLIGHT_DATE 0x98u
#define TZ_DAYLIGHT_BIAS 0xA8u

/* A SYSTEMTIME's fields (wYear, wMonth, wDayOfWeek, wDay, wHour, wMinute, wSecond, wMilliseconds). */
static void transition(const uint8_t *p, etw_tz_transition *t) {
    t->year = etw_le16(p);
    t->month = etw_le16(p + 2);
    t->day_of_week = etw_le16(p + 4);
    t->day = etw_le16(p + 6);
    t->hour = etw_le16(p + 8);
    t->minute = etw_le16(p + 10);
    t->second = etw_le16(p + 12);
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static unsigned days_in_month(int64_t y, unsigned m) {
    static const unsigned days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* The civil year of s seconds since 1970 (for the rule's year). */
static int64_t year_of(int64_t s) {
    int64_t z = (s >= 0 ? s : s - 86399) / 86400 + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    return (int64_t)yoe + era * 400 + (mp >= 10);
}

/* Local seconds since 1970 of transition t in year y; 0 when t does not
 * apply to y (or is malformed). */
static int at_transition(const etw_tz_transition *t, int64_t y, int64_t *local) {
    if (t->month < 1 || t->month > 12 || t->hour > 23 || t->minute > 59 || t->second > 59) return 0;
    unsigned day;
    if (t->year) { /* an absolute date: that year only */
        if (t->year != y || t->day < 1 || t->day > days_in_month(y, t->month)) return 0;
        day = t->day;
    } else { /* the t->day-th t->day_of_week of the month, 5 = the last */
        if (t->day < 1 || t->day > 5 || t->day_of_week > 6) return 0;
        int64_t first = days_from_civil(y, t->month, 1);
        unsigned first_dow = (unsigned)(((first % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday (4) */
        day = 1 + (t->day_of_week + 7 - first_dow) % 7 + 7u * (t->day - 1u);
        while (day > days_in_month(y, t->month)) day -= 7;
    }
    *local = days_from_civil(y, t->month, day) * 86400 + t->hour * 3600 + t->minute * 60 + t->second;
    return 1;
}

long etw_logfile_utc_offset(const etw_logfile_header *h, int64_t ft) {
    int64_t standard = (int64_t)h->timezone_bias + h->timezone_standard_bias; /* minutes west */
    int64_t daylight = (int64_t)h->timezone_bias + h->timezone_daylight_bias;
    if (!h->timezone_standard_date.month || !h->timezone_daylight_date.month) return (long)(-standard * 60);
    /* FILETIME (100 ns since 1601) to seconds since 1970 */
    int64_t u = ft / 10000000 - 11644473600LL;
    int64_t y = year_of(u - standard * 60);
    int64_t start, end;
    if (!at_transition(&h->timezone_daylight_date, y, &start) ||
        !at_transition(&h->timezone_standard_date, y, &end))
        return (long)(-standard * 60);
    start += standard * 60; /* to UTC: the start is in standard time, the end in daylight time */
    end += daylight * 60;
    int dst = start < end ? (u >= start && u < end) : (u >= start || u < end);
    return (long)(-(dst ? daylight : standard) * 60);
}

/* Take a NUL-terminated UTF-16LE string from c (bounded by c's span). */
static void take_utf16z(etw_cursor *c, const uint8_t **s, uint32_t *nbytes) {
    size_t left = etw_cursor_left(c);
    const uint8_t *p = c->p + c->pos;
    size_t i = 0;
    while (i + 1 < left && (p[i] | p[i + 1]) != 0) i += 2;
    *s = p;
    *nbytes = (uint32_t)i;
    etw_cursor_skip(c, i + 2 <= left ? i + 2 : left);
}

etw_status etw_logfile_parse(const uint8_t *p, uint32_t n, uint8_t ptr_size,
                             etw_logfile_header *h) {
    memset(h, 0, sizeof *h);
    etw_cursor c = etw_cursor_make(p, n);
    h->buffer_size = etw_cursor_u32(&c);
    h->version = etw_cursor_u32(&c);
    h->provider_version = etw_cursor_u32(&c);
    h->number_of_processors = etw_cursor_u32(&c);
    h->end_time = (int64_t)etw_cursor_u64(&c);
    h->timer_resolution = etw_cursor_u32(&c);
    h->maximum_file_size = etw_cursor_u32(&c);
    h->log_file_mode = etw_cursor_u32(&c);
    h->buffers_written = etw_cursor_u32(&c);
    h->start_buffers = etw_cursor_u32(&c);
    h->pointer_size = etw_cursor_u32(&c);
    h->events_lost = etw_cursor_u32(&c);
    h->cpu_speed_mhz = etw_cursor_u32(&c);
    etw_cursor_skip(&c, 2u * ptr_size); /* LoggerName, LogFileName pointers */
    const uint8_t *tz = etw_cursor_take(&c, TIME_ZONE_SIZE);
    if (tz) {
        h->timezone_bias = (int32_t)etw_le32(tz);
        transition(tz + TZ_STANDARD_DATE, &h->timezone_standard_date);
        h->timezone_standard_bias = (int32_t)etw_le32(tz + TZ_STANDARD_BIAS);
        transition(tz + TZ_DAYLIGHT_DATE, &h->timezone_daylight_date);
        h->timezone_daylight_bias = (int32_t)etw_le32(tz + TZ_DAYLIGHT_BIAS);
    }
    /* The next member is 8-byte aligned (0xEC -> 0xF0 on x86, 0xF4 -> 0xF8 on x64). */
    etw_cursor_skip(&c, etw_align8(c.pos) - c.pos);
    h->boot_time = (int64_t)etw_cursor_u64(&c);
    h->perf_freq = (int64_t)etw_cursor_u64(&c);
    h->start_time = (int64_t)etw_cursor_u64(&c);
    h->reserved_flags = etw_cursor_u32(&c);
    h->buffers_lost = etw_cursor_u32(&c);
    if (c.bad) return ETW_E_TRUNCATED;
    take_utf16z(&c, &h->session_name, &h->session_name_bytes);
    take_utf16z(&c, &h->logfile_name, &h->logfile_name_bytes);
    return ETW_OK;
}
