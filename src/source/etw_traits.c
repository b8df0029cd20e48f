/* etw_traits.c - provider traits blobs (include/etwdecode/etw_traits.h).
 * Layout: Microsoft "Provider Traits" doc; evntcons.h ETW_PROVIDER_TRAIT_TYPE
 * and EtwGetTraitFromProviderTraits (docs FORMATS.md 2.2). */
#include "etwdecode/etw_traits.h"

#include <string.h>

#include "../common/etw_bytes.h"

#define TRAITS_HEADER 2u /* u16 TraitsSize */
#define TRAIT_HEADER 3u  /* u16 TraitSize + u8 TraitType */
#define GUID_SIZE 16u
#define BLOB_MAX 65535u

static etw_status traits_fail(etw_traits *out, etw_status st) {
    memset(out, 0, sizeof *out);
    return st;
}

etw_status etw_traits_parse(const uint8_t *blob, size_t len, etw_traits *out) {
    if (!out) return ETW_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    if (!blob && len) return ETW_E_INVALID_ARG;
    if (len < TRAITS_HEADER) return ETW_E_TRUNCATED;
    size_t size = etw_le16(blob);
    if (size > len) return ETW_E_TRUNCATED;
    if (size < TRAITS_HEADER + 1) return ETW_E_CORRUPT;

    /* The name's NUL must lie inside TraitsSize. */
    const uint8_t *name = blob + TRAITS_HEADER;
    const uint8_t *nul = memchr(name, 0, size - TRAITS_HEADER);
    if (!nul) return ETW_E_CORRUPT;
    out->name = (const char *)name;
    out->name_len = (size_t)(nul - name);

    size_t pos = (size_t)(nul - blob) + 1;
    out->traits = blob + pos;
    out->traits_len = size - pos;
    while (pos < size) {
        size_t left = size - pos;
        if (left < TRAIT_HEADER) return traits_fail(out, ETW_E_TRUNCATED);
        size_t tsz = etw_le16(blob + pos);
        uint8_t type = blob[pos + 2];
        if (tsz < TRAIT_HEADER) return traits_fail(out, ETW_E_CORRUPT);
        if (tsz > left) return traits_fail(out, ETW_E_TRUNCATED);
        const uint8_t *data = blob + pos + TRAIT_HEADER;
        size_t dsz = tsz - TRAIT_HEADER;
        if (type == ETW_TRAIT_GROUP) {
            if (dsz != GUID_SIZE) return traits_fail(out, ETW_E_CORRUPT);
            if (!out->has_group) {
                out->group = etw_guid_read(data);
                out->has_group = 1;
            }
        } else if (type == ETW_TRAIT_DECODE_GUID) {
            /* Undocumented beyond its name: use it only when GUID-sized,
             * otherwise leave it to the caller as a raw trait. */
            if (dsz == GUID_SIZE && !out->has_decode_guid) {
                out->decode_guid = etw_guid_read(data);
                out->has_decode_guid = 1;
            }
        }
        pos += tsz;
    }
    return ETW_OK;
}

etw_status etw_traits_next(const etw_traits *t, size_t *pos, etw_trait *trait) {
    if (!t || !pos || !trait) return ETW_E_INVALID_ARG;
    if (*pos >= t->traits_len) return ETW_END;
    size_t left = t->traits_len - *pos;
    if (!t->traits || left < TRAIT_HEADER) return ETW_E_CORRUPT;
    const uint8_t *p = t->traits + *pos;
    size_t tsz = etw_le16(p);
    if (tsz < TRAIT_HEADER || tsz > left) return ETW_E_CORRUPT;
    trait->type = p[2];
    trait->size = (uint16_t)(tsz - TRAIT_HEADER);
    trait->data = p + TRAIT_HEADER;
    *pos += tsz;
    return ETW_OK;
}

static void put16(uint8_t *p, size_t v) {
    p[0] = (uint8_t)(v & 0xFF);
    p[1] = (uint8_t)((v >> 8) & 0xFF);
}

static void put_guid(uint8_t *p, const etw_guid *g) {
    p[0] = (uint8_t)g->data1;
    p[1] = (uint8_t)(g->data1 >> 8);
    p[2] = (uint8_t)(g->data1 >> 16);
    p[3] = (uint8_t)(g->data1 >> 24);
    p[4] = (uint8_t)g->data2;
    p[5] = (uint8_t)(g->data2 >> 8);
    p[6] = (uint8_t)g->data3;
    p[7] = (uint8_t)(g->data3 >> 8);
    memcpy(p + 8, g->data4, 8);
}

etw_status etw_traits_build(uint8_t *out, size_t cap, size_t *len, const char *name,
                            const etw_guid *group, const etw_trait *custom,
                            size_t ncustom) {
    if (!len) return ETW_E_INVALID_ARG;
    *len = 0;
    if (!name || (!out && cap) || (ncustom && !custom)) return ETW_E_INVALID_ARG;
    size_t nl = strlen(name);
    if (nl > BLOB_MAX) return ETW_E_LIMIT;
    size_t need = TRAITS_HEADER + nl + 1;
    if (group) need += TRAIT_HEADER + GUID_SIZE;
    for (size_t i = 0; i < ncustom; i++) {
        const etw_trait *t = &custom[i];
        if (t->type == 0 || (t->size && !t->data)) return ETW_E_INVALID_ARG;
        /* A group trait that would not parse back is refused. */
        if (t->type == ETW_TRAIT_GROUP && t->size != GUID_SIZE) return ETW_E_INVALID_ARG;
        need += TRAIT_HEADER + (size_t)t->size;
        if (need > BLOB_MAX) return ETW_E_LIMIT;
    }
    if (need > BLOB_MAX) return ETW_E_LIMIT;
    *len = need;
    if (need > cap) return ETW_E_SMALL_BUFFER;

    size_t pos = 0;
    put16(out, need);
    pos += TRAITS_HEADER;
    memcpy(out + pos, name, nl);
    pos += nl;
    out[pos++] = 0;
    if (group) {
        put16(out + pos, TRAIT_HEADER + GUID_SIZE);
        out[pos + 2] = ETW_TRAIT_GROUP;
        put_guid(out + pos + TRAIT_HEADER, group);
        pos += TRAIT_HEADER + GUID_SIZE;
    }
    for (size_t i = 0; i < ncustom; i++) {
        const etw_trait *t = &custom[i];
        put16(out + pos, TRAIT_HEADER + (size_t)t->size);
        out[pos + 2] = t->type;
        if (t->size) memcpy(out + pos + TRAIT_HEADER, t->data, t->size);
        pos += TRAIT_HEADER + (size_t)t->size;
    }
    return ETW_OK;
}
