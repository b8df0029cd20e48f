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
    if (tz) h->timezone_bias = (int32_t)etw_le32(tz);
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
