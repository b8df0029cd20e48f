/* etw_tmf.h - the TMF parser and the message set behind etw_wpp.h. Internal
 * helpers shared with the formatter and the WPP schema source. */
#ifndef ETW_TMF_H
#define ETW_TMF_H

#include <stddef.h>
#include <stdint.h>

#include "etwdecode/etw_wpp.h"

/* Parse a GUID written "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (36 characters,
 * either case) at s (n bytes available). 1 on success. */
int etw_tmf_parse_guid(const char *s, size_t n, etw_guid *out);

#endif
