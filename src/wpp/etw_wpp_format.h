/* etw_wpp_format.h - a WPP message's text, as tracefmt writes it: the TMF
 * format string with its arguments, prefix variables and extended
 * specifiers (grammar in include/etwdecode/etw_wpp.h, facts in docs/wpp.md).
 *
 * Nothing is allocated but the caller's text buffer (which keeps its memory
 * from event to event). Formats are never passed to the C library: widths
 * and precisions above ETW_WPP_MAX_WIDTH, '*' and unknown conversions give
 * the argument's own text. */
#ifndef ETW_WPP_FORMAT_H
#define ETW_WPP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_wpp.h"
#include "format/etw_text.h"

#define ETW_WPP_MAX_WIDTH 1024u
/* Most bytes of one formatted message (that of FormatMessage's buffer, as
 * for manifest messages). */
#define ETW_WPP_MAX_OUT 65536u

/* Where each argument of m lies in ev's payload: off[i], len[i] for
 * i < m->argc (arrays of at least m->argc). ETW_OK; ETW_E_TRUNCATED /
 * ETW_E_CORRUPT when an argument does not fit, ETW_E_UNSUPPORTED for an
 * argument of a type not in the table: why names the message and argument. */
etw_status etw_wpp_locate(const etw_wpp_message *m, const etw_event *ev, uint32_t *off, uint32_t *len,
                          char *why, size_t why_cap);

/* Append m's text for ev to t. ETW_E_LIMIT when it was cut at
 * ETW_WPP_MAX_OUT bytes (what fits is kept); the errors of etw_wpp_locate
 * (nothing appended); ETW_E_NOMEM from t. */
etw_status etw_wpp_format_text(etw_text *t, const etw_wpp_message *m, const etw_event *ev, char *why,
                               size_t why_cap);

/* tracefmt's time form MM/DD/YYYY-HH:MM:SS.mmm of a FILETIME (UTC);
 * ETW_E_CORRUPT (nothing written) outside 1601..9999. */
etw_status etw_wpp_time_text(etw_text *t, int64_t filetime);

#endif
