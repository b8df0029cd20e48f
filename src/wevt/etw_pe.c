/* etw_pe.c - the resources of a PE file (PE32 and PE32+), read in place.
 *
 * Opens the DOS, COFF and optional headers, finds the resource data
 * directory, maps RVAs to file offsets through the section table, and walks
 * the three-level resource tree (type -> name -> language) to one data
 * entry. Nothing is allocated; every integer is read with the bounds-checked
 * little-endian loads of etw_bytes.h. Facts: the PE/COFF specification
 * (sections 2 "Overview", 3 "Section Table", 6.9 "The .rsrc Section").
 */
#include "wevt/etw_pe.h"

#include <string.h>

#include "common/etw_bytes.h"

#define PE_DOS_MAGIC 0x5A4Du          /* "MZ": PE/COFF spec 2, MS-DOS stub */
#define PE_DOS_LFANEW_OFF 0x3Cu       /* e_lfanew: PE/COFF spec 2, "Signature (Image Only)" */
#define PE_SIG_SIZE 4u                /* "PE\0\0": PE/COFF spec 2 */
#define PE_COFF_SIZE 20u              /* COFF file header: PE/COFF spec 3.3 */
#define PE_COFF_MACHINE_OFF 0u        /* Machine: PE/COFF spec 3.3 */
#define PE_COFF_NSECTIONS_OFF 2u      /* NumberOfSections: PE/COFF spec 3.3 */
#define PE_COFF_OPTSIZE_OFF 16u       /* SizeOfOptionalHeader: PE/COFF spec 3.3 */
#define PE_OPT_MAGIC_PE32 0x10Bu      /* PE32 optional header: PE/COFF spec 3.4 */
#define PE_OPT_MAGIC_PE32PLUS 0x20Bu  /* PE32+ optional header: PE/COFF spec 3.4 */
#define PE_OPT_NRVA_PE32 92u          /* NumberOfRvaAndSizes, PE32: PE/COFF spec 3.4.2 */
#define PE_OPT_NRVA_PE32PLUS 108u     /* NumberOfRvaAndSizes, PE32+: PE/COFF spec 3.4.2 */
#define PE_OPT_DIRS_PE32 96u          /* first data directory, PE32: PE/COFF spec 3.4.3 */
#define PE_OPT_DIRS_PE32PLUS 112u     /* first data directory, PE32+: PE/COFF spec 3.4.3 */
#define PE_DIR_RESOURCE 2u            /* Resource Table directory index: PE/COFF spec 3.4.3 */
#define PE_DIR_SIZE 8u                /* {u32 RVA, u32 Size}: PE/COFF spec 3.4.3 */
#define PE_SECTION_SIZE 40u           /* section header: PE/COFF spec 4 */
#define PE_SEC_VSIZE_OFF 8u           /* VirtualSize: PE/COFF spec 4 */
#define PE_SEC_VADDR_OFF 12u          /* VirtualAddress: PE/COFF spec 4 */
#define PE_SEC_RAWSIZE_OFF 16u        /* SizeOfRawData: PE/COFF spec 4 */
#define PE_SEC_RAWPTR_OFF 20u         /* PointerToRawData: PE/COFF spec 4 */
#define PE_RSRC_DIR_SIZE 16u          /* IMAGE_RESOURCE_DIRECTORY: PE/COFF spec 6.9.1 */
#define PE_RSRC_NNAMED_OFF 12u        /* Number of Name Entries: PE/COFF spec 6.9.1 */
#define PE_RSRC_NID_OFF 14u           /* Number of ID Entries: PE/COFF spec 6.9.1 */
#define PE_RSRC_ENTRY_SIZE 8u         /* directory entry {name/id, offset}: PE/COFF spec 6.9.2 */
#define PE_RSRC_HIGH_BIT 0x80000000u  /* name is a string / offset is a subdirectory: spec 6.9.2 */
#define PE_RSRC_DATA_ENTRY_SIZE 16u   /* {Data RVA, Size, Codepage, Reserved}: PE/COFF spec 6.9.4 */
#define PE_LANG_EN_US 0x0409u         /* en-US LANGID: MS-LCID */
#define PE_RSRC_LEVELS 3u             /* type, name, language: PE/COFF spec 6.9 */

static void set_why(const char **why, const char *s) {
    if (why) *why = s;
}

/* RVA -> file offset and the bytes of its section that are in the file
 * from there (0 when none are). 0 when no section holds the RVA. */
static int pe_map(const etw_pe *pe, uint32_t rva, uint32_t *off, uint32_t *avail) {
    for (uint32_t i = 0; i < pe->nsections; i++) {
        const uint8_t *s = pe->data + pe->sections_off + (size_t)i * PE_SECTION_SIZE;
        uint32_t vsize = etw_le32(s + PE_SEC_VSIZE_OFF);
        uint32_t va = etw_le32(s + PE_SEC_VADDR_OFF);
        uint32_t rawsize = etw_le32(s + PE_SEC_RAWSIZE_OFF);
        uint32_t rawptr = etw_le32(s + PE_SEC_RAWPTR_OFF);
        uint32_t span = vsize > rawsize ? vsize : rawsize;
        if (rva < va || (uint64_t)rva - va >= span) continue;
        uint64_t delta = (uint64_t)rva - va;
        if (delta >= rawsize) return 0; /* in the zero-filled tail: not in the file */
        uint64_t foff = (uint64_t)rawptr + delta;
        if (foff >= pe->len) return 0;
        uint64_t n = (uint64_t)rawsize - delta;
        if (n > pe->len - foff) n = pe->len - foff;
        *off = (uint32_t)foff;
        *avail = (uint32_t)n;
        return 1;
    }
    return 0;
}

etw_status etw_pe_open(etw_pe *pe, const uint8_t *data, size_t len, const char **why) {
    if (!pe || (!data && len)) return ETW_E_INVALID_ARG;
    memset(pe, 0, sizeof *pe);
    set_why(why, NULL);
    if (len < PE_DOS_LFANEW_OFF + 4u || etw_le16(data) != PE_DOS_MAGIC) {
        set_why(why, "no MZ signature");
        return ETW_E_CORRUPT;
    }
    if (len > UINT32_MAX) {
        set_why(why, "file larger than 4 GB");
        return ETW_E_CORRUPT;
    }
    uint64_t pe_off = etw_le32(data + PE_DOS_LFANEW_OFF);
    if (pe_off + PE_SIG_SIZE > len || memcmp(data + pe_off, "PE\0\0", PE_SIG_SIZE) != 0) {
        set_why(why, "no PE signature");
        return ETW_E_CORRUPT;
    }
    uint64_t coff = pe_off + PE_SIG_SIZE;
    if (coff + PE_COFF_SIZE > len) {
        set_why(why, "COFF header is cut");
        return ETW_E_CORRUPT;
    }
    uint16_t machine = etw_le16(data + coff + PE_COFF_MACHINE_OFF);
    uint16_t nsections = etw_le16(data + coff + PE_COFF_NSECTIONS_OFF);
    uint16_t optsize = etw_le16(data + coff + PE_COFF_OPTSIZE_OFF);
    uint64_t opt = coff + PE_COFF_SIZE;
    if (optsize < 2u || opt + optsize > len) {
        set_why(why, "optional header is cut");
        return ETW_E_CORRUPT;
    }
    uint16_t magic = etw_le16(data + opt);
    uint32_t nrva_off, dirs_off;
    if (magic == PE_OPT_MAGIC_PE32) {
        nrva_off = PE_OPT_NRVA_PE32;
        dirs_off = PE_OPT_DIRS_PE32;
    } else if (magic == PE_OPT_MAGIC_PE32PLUS) {
        nrva_off = PE_OPT_NRVA_PE32PLUS;
        dirs_off = PE_OPT_DIRS_PE32PLUS;
        pe->is_pe32plus = 1;
    } else {
        set_why(why, "unknown optional header magic");
        return ETW_E_CORRUPT;
    }
    uint64_t sections_off = opt + optsize;
    if (sections_off + (uint64_t)nsections * PE_SECTION_SIZE > len) {
        set_why(why, "section table is cut");
        return ETW_E_CORRUPT;
    }
    pe->data = data;
    pe->len = len;
    pe->machine = machine;
    pe->sections_off = (uint32_t)sections_off;
    pe->nsections = nsections;

    /* No NumberOfRvaAndSizes field, or too few directories: no resources. */
    if (nrva_off + 4u > optsize) return ETW_OK;
    uint32_t nrva = etw_le32(data + opt + nrva_off);
    uint64_t dir = (uint64_t)dirs_off + (uint64_t)PE_DIR_RESOURCE * PE_DIR_SIZE;
    if (nrva <= PE_DIR_RESOURCE || dir + PE_DIR_SIZE > optsize) return ETW_OK;
    uint32_t rva = etw_le32(data + opt + dir);
    uint32_t size = etw_le32(data + opt + dir + 4);
    if (rva == 0 || size == 0) return ETW_OK;
    uint32_t off = 0, avail = 0;
    if (!pe_map(pe, rva, &off, &avail)) {
        set_why(why, "resource directory is outside the file's sections");
        return ETW_E_CORRUPT;
    }
    if (avail < PE_RSRC_DIR_SIZE) {
        set_why(why, "resource directory is cut");
        return ETW_E_CORRUPT;
    }
    pe->rsrc_rva = rva;
    pe->rsrc_size = size;
    pe->rsrc_off = off;
    pe->rsrc_avail = avail;
    return ETW_OK;
}

/* ------------------------------------------------------------------------ */
/* The resource tree                                                        */
/* ------------------------------------------------------------------------ */

/* One walk: the directories entered so far (a loop enters one twice) and
 * the entries left to visit (the section cannot hold more than avail / 8). */
typedef struct rsrc_walk {
    const etw_pe *pe;
    const uint8_t *base; /* the resource section in the file */
    uint32_t avail;
    uint32_t entered[PE_RSRC_LEVELS];
    unsigned nentered;
    uint32_t budget;
    const char *why;
} rsrc_walk;

static void walk_init(rsrc_walk *w, const etw_pe *pe) {
    memset(w, 0, sizeof *w);
    w->pe = pe;
    w->base = pe->data + pe->rsrc_off;
    w->avail = pe->rsrc_avail;
    w->budget = pe->rsrc_avail / PE_RSRC_ENTRY_SIZE;
}

/* Enter the directory at off: its entry count; ETW_E_CORRUPT when it does
 * not fit, was entered before, or the walk's budget is spent. */
static etw_status walk_enter(rsrc_walk *w, uint32_t off, uint32_t *nentries) {
    for (unsigned i = 0; i < w->nentered; i++) {
        if (w->entered[i] == off) {
            w->why = "resource directory entered twice (a loop)";
            return ETW_E_CORRUPT;
        }
    }
    if (w->nentered >= PE_RSRC_LEVELS) {
        w->why = "resource tree deeper than three levels";
        return ETW_E_CORRUPT;
    }
    if ((uint64_t)off + PE_RSRC_DIR_SIZE > w->avail) {
        w->why = "resource directory past the end of the section";
        return ETW_E_CORRUPT;
    }
    const uint8_t *d = w->base + off;
    uint32_t n = (uint32_t)etw_le16(d + PE_RSRC_NNAMED_OFF) + etw_le16(d + PE_RSRC_NID_OFF);
    if ((uint64_t)off + PE_RSRC_DIR_SIZE + (uint64_t)n * PE_RSRC_ENTRY_SIZE > w->avail) {
        w->why = "resource directory entries run past the section";
        return ETW_E_CORRUPT;
    }
    if (n > w->budget) {
        w->why = "more resource entries than the section holds";
        return ETW_E_CORRUPT;
    }
    w->budget -= n;
    w->entered[w->nentered++] = off;
    *nentries = n;
    return ETW_OK;
}

/* Entry i of the directory at dir_off: its name-or-id and offset words. */
static void walk_entry(const rsrc_walk *w, uint32_t dir_off, uint32_t i, uint32_t *name, uint32_t *off) {
    const uint8_t *e = w->base + dir_off + PE_RSRC_DIR_SIZE + (size_t)i * PE_RSRC_ENTRY_SIZE;
    *name = etw_le32(e);
    *off = etw_le32(e + 4);
}

static int ascii_lower(int c) {
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/* Does the entry's name word match (type_name, type_id)? 1 yes, 0 no,
 * -1 when a string name does not fit the section. */
static int walk_name_matches(rsrc_walk *w, uint32_t name, const char *type_name, uint32_t type_id) {
    if (!(name & PE_RSRC_HIGH_BIT)) return type_name == NULL && name == type_id;
    if (type_name == NULL) return 0;
    uint32_t off = name & ~PE_RSRC_HIGH_BIT;
    if ((uint64_t)off + 2u > w->avail) {
        w->why = "resource name past the end of the section";
        return -1;
    }
    uint32_t n = etw_le16(w->base + off);
    if ((uint64_t)off + 2u + (uint64_t)n * 2u > w->avail) {
        w->why = "resource name runs past the section";
        return -1;
    }
    size_t want = strlen(type_name);
    if (want != n) return 0;
    for (uint32_t i = 0; i < n; i++) {
        uint16_t c = etw_le16(w->base + off + 2u + (size_t)i * 2u);
        if (c > 0x7F || ascii_lower(c) != ascii_lower((unsigned char)type_name[i])) return 0;
    }
    return 1;
}

/* The type directory's subdirectory for (type_name, type_id): ETW_OK with
 * *sub set, ETW_E_NOT_FOUND, or ETW_E_CORRUPT (w->why set). */
static etw_status walk_find_type(rsrc_walk *w, const char *type_name, uint32_t type_id, uint32_t *sub,
                                 uint32_t *found_id) {
    uint32_t n = 0;
    etw_status st = walk_enter(w, 0, &n);
    if (st != ETW_OK) return st;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t name, off;
        walk_entry(w, 0, i, &name, &off);
        int m = walk_name_matches(w, name, type_name, type_id);
        if (m < 0) return ETW_E_CORRUPT;
        if (!m) continue;
        if (!(off & PE_RSRC_HIGH_BIT)) {
            w->why = "resource type entry is not a directory";
            return ETW_E_CORRUPT;
        }
        *sub = off & ~PE_RSRC_HIGH_BIT;
        *found_id = (name & PE_RSRC_HIGH_BIT) ? 0 : name;
        return ETW_OK;
    }
    return ETW_E_NOT_FOUND;
}

etw_status etw_pe_find_resource(const etw_pe *pe, const char *type_name, uint32_t type_id, uint16_t lang,
                                etw_pe_resource *out, const char **why) {
    if (!pe || !out) return ETW_E_INVALID_ARG;
    memset(out, 0, sizeof *out);
    set_why(why, NULL);
    if (pe->rsrc_rva == 0 || pe->rsrc_avail < PE_RSRC_DIR_SIZE) return ETW_E_NOT_FOUND;
    rsrc_walk w;
    walk_init(&w, pe);
    uint32_t names_off = 0, found_type = 0, n = 0;
    etw_status st = walk_find_type(&w, type_name, type_id, &names_off, &found_type);
    if (st != ETW_OK) goto done;

    /* Level 2: the first name. */
    if ((st = walk_enter(&w, names_off, &n)) != ETW_OK) goto done;
    if (n == 0) {
        st = ETW_E_NOT_FOUND;
        goto done;
    }
    uint32_t name, langs_off;
    walk_entry(&w, names_off, 0, &name, &langs_off);
    if (!(langs_off & PE_RSRC_HIGH_BIT)) {
        w.why = "resource name entry is not a directory";
        st = ETW_E_CORRUPT;
        goto done;
    }
    langs_off &= ~PE_RSRC_HIGH_BIT;

    /* Level 3: lang, else en-US, else neutral, else the first. */
    if ((st = walk_enter(&w, langs_off, &n)) != ETW_OK) goto done;
    if (n == 0) {
        st = ETW_E_NOT_FOUND;
        goto done;
    }
    uint32_t pick = 0;
    int rank = 4; /* 0 lang, 1 en-US, 2 neutral, 3 first */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id, off;
        walk_entry(&w, langs_off, i, &id, &off);
        if (off & PE_RSRC_HIGH_BIT) {
            w.why = "resource language entry is a directory";
            st = ETW_E_CORRUPT;
            goto done;
        }
        int r = 3;
        if (!(id & PE_RSRC_HIGH_BIT)) {
            if (id == lang)
                r = 0;
            else if (id == PE_LANG_EN_US)
                r = 1;
            else if (id == 0)
                r = 2;
        }
        if (r < rank) {
            rank = r;
            pick = i;
        }
    }
    uint32_t lang_id, leaf;
    walk_entry(&w, langs_off, pick, &lang_id, &leaf);

    /* The data entry: an image RVA and a size. */
    if ((uint64_t)leaf + PE_RSRC_DATA_ENTRY_SIZE > w.avail) {
        w.why = "resource data entry past the end of the section";
        st = ETW_E_CORRUPT;
        goto done;
    }
    uint32_t data_rva = etw_le32(w.base + leaf);
    uint32_t data_size = etw_le32(w.base + leaf + 4);
    uint32_t doff = 0, davail = 0;
    if (data_size == 0) {
        out->data = pe->data; /* an empty resource: no bytes to map */
    } else if (!pe_map(pe, data_rva, &doff, &davail)) {
        w.why = "resource data is outside the file's sections";
        st = ETW_E_CORRUPT;
        goto done;
    } else if (data_size > davail) {
        w.why = "resource data runs past the end of the file";
        st = ETW_E_CORRUPT;
        goto done;
    } else {
        out->data = pe->data + doff;
    }
    out->len = data_size;
    out->type_id = found_type;
    out->name_id = (name & PE_RSRC_HIGH_BIT) ? 0 : name;
    out->lang = (lang_id & PE_RSRC_HIGH_BIT) ? 0 : (uint16_t)lang_id;
    st = ETW_OK;
done:
    if (st == ETW_E_CORRUPT) set_why(why, w.why);
    if (st != ETW_OK) memset(out, 0, sizeof *out);
    return st;
}

int etw_pe_has_resource_type(const etw_pe *pe, const char *type_name, uint32_t type_id) {
    if (!pe || pe->rsrc_rva == 0 || pe->rsrc_avail < PE_RSRC_DIR_SIZE) return 0;
    rsrc_walk w;
    walk_init(&w, pe);
    uint32_t sub = 0, id = 0;
    return walk_find_type(&w, type_name, type_id, &sub, &id) == ETW_OK;
}

/* Language tags of the common Windows display languages and their LANGIDs
 * (MS-LCID section 2.2, "LCID Structure" table). */
static const struct {
    const char *tag;
    uint16_t id;
} pe_langs[] = {
    {"ar-SA", 0x0401}, {"bg-BG", 0x0402}, {"ca-ES", 0x0403}, {"zh-TW", 0x0404}, {"cs-CZ", 0x0405},
    {"da-DK", 0x0406}, {"de-DE", 0x0407}, {"el-GR", 0x0408}, {"en-US", 0x0409}, {"fi-FI", 0x040B},
    {"fr-FR", 0x040C}, {"he-IL", 0x040D}, {"hu-HU", 0x040E}, {"it-IT", 0x0410}, {"ja-JP", 0x0411},
    {"ko-KR", 0x0412}, {"nl-NL", 0x0413}, {"nb-NO", 0x0414}, {"pl-PL", 0x0415}, {"pt-BR", 0x0416},
    {"ro-RO", 0x0418}, {"ru-RU", 0x0419}, {"hr-HR", 0x041A}, {"sk-SK", 0x041B}, {"sv-SE", 0x041D},
    {"th-TH", 0x041E}, {"tr-TR", 0x041F}, {"uk-UA", 0x0422}, {"sl-SI", 0x0424}, {"et-EE", 0x0425},
    {"lv-LV", 0x0426}, {"lt-LT", 0x0427}, {"zh-CN", 0x0804}, {"en-GB", 0x0809}, {"es-MX", 0x080A},
    {"pt-PT", 0x0816}, {"sr-Latn-RS", 0x241A}, {"es-ES", 0x0C0A}, {"fr-CA", 0x0C0C}, {"zh-HK", 0x0C04},
};

uint16_t etw_pe_langid(const char *tag) {
    if (!tag) return 0;
    for (size_t i = 0; i < sizeof pe_langs / sizeof pe_langs[0]; i++) {
        const char *a = pe_langs[i].tag, *b = tag;
        while (*a && *b && ascii_lower((unsigned char)*a) == ascii_lower((unsigned char)*b)) {
            a++;
            b++;
        }
        if (*a == 0 && *b == 0) return pe_langs[i].id;
    }
    return 0;
}
