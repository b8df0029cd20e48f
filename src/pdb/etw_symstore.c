/* etw_symstore.c - a PDB in a local symbol store (etw_symstore_find).
 *
 * A symbol server, and a folder that caches one (what symsrv.dll, PerfView
 * and WinDbg download into), files a PDB as <name>/<key>/<name>, where key is
 * the GUID as 32 upper-case hex digits (Data1, Data2, Data3 as numbers, then
 * the bytes of Data4) and the age in upper-case hex: "CppCon.pdb/
 * 12DC0A4FBD7D4F2AA9BE263BACAEB4675/CppCon.pdb". (The compressed "CppCon.pd_"
 * and "file.ptr" forms of a server share are not read.) Nothing here touches
 * the network: in srv*DIR*URL only DIR is used.
 */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "etw_pdb_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#if defined(_WIN32) && !defined(S_ISREG)
#define S_ISREG(m) (((m) & S_IFMT) == S_IFREG)
#endif

static int ieq_prefix(const char *s, size_t n, const char *word) {
    size_t k = strlen(word);
    if (n < k) return 0;
    for (size_t i = 0; i < k; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return 0;
    }
    return 1;
}

/* A regular file (a store's <name> level is a folder, which fopen opens). */
static int file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* dir + "/" + parts..., into buf; 0 when it does not fit. */
static int join(char *buf, size_t n, const char *dir, size_t dlen, const char *a, const char *b, const char *c) {
    int k = snprintf(buf, n, "%.*s%s%s%s%s%s%s", (int)dlen, dir, dlen && dir[dlen - 1] != '/' ? "/" : "", a,
                     b ? "/" : "", b ? b : "", c ? "/" : "", c ? c : "");
    return k >= 0 && (size_t)k < n;
}

static etw_status found(const char *cand, char *path, size_t n) {
    size_t len = strlen(cand);
    if (len + 1 > n) return ETW_E_SMALL_BUFFER;
    memcpy(path, cand, len + 1);
    return ETW_OK;
}

/* One spelling of the name in one local folder: the symbol-server layout,
 * then the flat file. */
static etw_status search_name(const char *dir, size_t dlen, const char *name, const char *key,
                              const etw_guid *guid, uint32_t age, char *path, size_t n) {
    char cand[4096];
    if (join(cand, sizeof cand, dir, dlen, name, key, name) && file_exists(cand)) return found(cand, path, n);
    if (join(cand, sizeof cand, dir, dlen, name, NULL, NULL) && file_exists(cand)) {
        etw_pdb *p;
        if (etw_pdb_open_identity(&p, cand, NULL) == ETW_OK) {
            etw_guid g;
            uint32_t a;
            etw_pdb_identity(p, &g, &a);
            etw_pdb_free(p);
            if (etw_guid_equal(&g, guid) && a == age) return found(cand, path, n);
        }
    }
    return ETW_E_NOT_FOUND;
}

/* One local folder: the name as given, then in lower case (Microsoft's
 * symbol server files "ntdll.pdb" whatever the image's record spells; a
 * store copied from Windows keeps that spelling on a case-sensitive file
 * system). */
static etw_status search_dir(const char *dir, size_t dlen, const char *name, const char *key, const etw_guid *guid,
                             uint32_t age, char *path, size_t n) {
    if (dlen == 0 || dlen > 2048) return ETW_E_NOT_FOUND;
    etw_status st = search_name(dir, dlen, name, key, guid, age, path, n);
    if (st != ETW_E_NOT_FOUND) return st;
    char lower[256];
    size_t k = strlen(name); /* at most 255 (etw_symstore_find) */
    int differs = 0;
    for (size_t i = 0; i <= k; i++) {
        char c = name[i];
        if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
            differs = 1;
        }
        lower[i] = c;
    }
    return differs ? search_name(dir, dlen, lower, key, guid, age, path, n) : ETW_E_NOT_FOUND;
}

typedef struct find_ctx {
    const char *name, *key;
    const etw_guid *guid;
    uint32_t age;
    char *path;
    size_t n;
} find_ctx;

static etw_status find_in(void *ctx, const char *dir, size_t len) {
    const find_ctx *c = ctx;
    return search_dir(dir, len, c->name, c->key, c->guid, c->age, c->path, c->n);
}

etw_status etw_symstore_folders(const char *store, etw_symstore_folder_fn fn, void *ctx) {
    if (!store || !fn) return ETW_E_INVALID_ARG;
    const char *e = store;
    while (*e) {
        const char *end = strchr(e, ';');
        size_t elen = end ? (size_t)(end - e) : strlen(e);
        if (ieq_prefix(e, elen, "srv*") || ieq_prefix(e, elen, "cache*") || ieq_prefix(e, elen, "symsrv*")) {
            const char *star = memchr(e, '*', elen);
            const char *rest = star + 1;
            size_t rlen = elen - (size_t)(rest - e);
            if (ieq_prefix(e, elen, "symsrv*")) { /* symsrv*DLL*DIR*...: skip the DLL */
                const char *s2 = memchr(rest, '*', rlen);
                rlen = s2 ? rlen - (size_t)(s2 + 1 - rest) : 0;
                rest = s2 ? s2 + 1 : rest + rlen;
            }
            /* every '*'-separated part that is not a URL is a local store */
            for (;;) {
                const char *s3 = memchr(rest, '*', rlen);
                size_t plen = s3 ? (size_t)(s3 - rest) : rlen;
                if (plen > 0 && !ieq_prefix(rest, plen, "http://") && !ieq_prefix(rest, plen, "https://")) {
                    etw_status st = fn(ctx, rest, plen);
                    if (st != ETW_E_NOT_FOUND) return st;
                }
                if (!s3) break;
                rlen -= plen + 1;
                rest = s3 + 1;
            }
        } else if (elen > 0) {
            etw_status st = fn(ctx, e, elen);
            if (st != ETW_E_NOT_FOUND) return st;
        }
        if (!end) break;
        e = end + 1;
    }
    return ETW_E_NOT_FOUND;
}

etw_status etw_symstore_find(const char *store, const char *pdb_name, const etw_guid *guid, uint32_t age,
                             char *path, size_t n) {
    if (!store || !pdb_name || !guid || !path || n == 0) return ETW_E_INVALID_ARG;
    path[0] = 0;
    /* the last component of a Windows or POSIX path */
    const char *name = pdb_name;
    for (const char *s = pdb_name; *s; s++)
        if (*s == '/' || *s == '\\' || *s == ':') name = s + 1;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strlen(name) > 255) return ETW_E_NOT_FOUND;
    char key[48];
    snprintf(key, sizeof key, "%08X%04X%04X%02X%02X%02X%02X%02X%02X%02X%02X%X", (unsigned)guid->data1,
             (unsigned)guid->data2, (unsigned)guid->data3, guid->data4[0], guid->data4[1], guid->data4[2],
             guid->data4[3], guid->data4[4], guid->data4[5], guid->data4[6], guid->data4[7], (unsigned)age);

    find_ctx c = {name, key, guid, age, path, n};
    return etw_symstore_folders(store, find_in, &c);
}
