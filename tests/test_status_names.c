/* test_status_names.c - the status-name tables (src/wpp/etw_status_names.h).
 *
 * The expected names and values are [MS-ERREF] "Windows Error Codes"
 * (sections 2.1 HRESULT values, 2.2 Win32 error codes, 2.3 NTSTATUS
 * values), written here by hand, not taken from the generated tables; then
 * unknown values, the HRESULT_FROM_WIN32 / HRESULT_FROM_NT rules, and the
 * tables' order (sorted, no value twice, every name a C identifier).
 */
#include <ctype.h>
#include <string.h>

#include "etw_test.h"
#include "wpp/etw_status_names.h"
#include "wpp/etw_status_tables.h"

typedef struct known {
    uint32_t value;
    const char *name;
} known;

static const known NT[] = {
    {0x00000000u, "STATUS_SUCCESS"},
    {0x00000102u, "STATUS_TIMEOUT"},
    {0x00000103u, "STATUS_PENDING"},
    {0x00010001u, "DBG_EXCEPTION_HANDLED"},
    {0x00010002u, "DBG_CONTINUE"},
    {0x40000000u, "STATUS_OBJECT_NAME_EXISTS"},
    {0x40010006u, "DBG_PRINTEXCEPTION_C"},
    {0x80000003u, "STATUS_BREAKPOINT"},
    {0x80000005u, "STATUS_BUFFER_OVERFLOW"},
    {0x80000006u, "STATUS_NO_MORE_FILES"},
    {0x8000001Au, "STATUS_NO_MORE_ENTRIES"},
    {0xC0000001u, "STATUS_UNSUCCESSFUL"},
    {0xC0000002u, "STATUS_NOT_IMPLEMENTED"},
    {0xC0000005u, "STATUS_ACCESS_VIOLATION"},
    {0xC0000008u, "STATUS_INVALID_HANDLE"},
    {0xC000000Du, "STATUS_INVALID_PARAMETER"},
    {0xC0000010u, "STATUS_INVALID_DEVICE_REQUEST"},
    {0xC0000017u, "STATUS_NO_MEMORY"},
    {0xC0000022u, "STATUS_ACCESS_DENIED"},
    {0xC0000023u, "STATUS_BUFFER_TOO_SMALL"},
    {0xC0000034u, "STATUS_OBJECT_NAME_NOT_FOUND"},
    {0xC0000035u, "STATUS_OBJECT_NAME_COLLISION"},
    {0xC0000094u, "STATUS_INTEGER_DIVIDE_BY_ZERO"},
    {0xC000009Au, "STATUS_INSUFFICIENT_RESOURCES"},
    {0xC00000B5u, "STATUS_IO_TIMEOUT"},
    {0xC00000BBu, "STATUS_NOT_SUPPORTED"},
    {0xC00000FDu, "STATUS_STACK_OVERFLOW"},
    {0xC0000120u, "STATUS_CANCELLED"},
    {0xC0000135u, "STATUS_DLL_NOT_FOUND"},
    {0xC0000142u, "STATUS_DLL_INIT_FAILED"},
    {0xC0000184u, "STATUS_INVALID_DEVICE_STATE"},
    {0xC0000225u, "STATUS_NOT_FOUND"},
    {0xC0000409u, "STATUS_STACK_BUFFER_OVERRUN"},
};

static const known WIN32[] = {
    {0, "ERROR_SUCCESS"},
    {1, "ERROR_INVALID_FUNCTION"},
    {2, "ERROR_FILE_NOT_FOUND"},
    {3, "ERROR_PATH_NOT_FOUND"},
    {5, "ERROR_ACCESS_DENIED"},
    {6, "ERROR_INVALID_HANDLE"},
    {8, "ERROR_NOT_ENOUGH_MEMORY"},
    {32, "ERROR_SHARING_VIOLATION"},
    {50, "ERROR_NOT_SUPPORTED"},
    {87, "ERROR_INVALID_PARAMETER"},
    {122, "ERROR_INSUFFICIENT_BUFFER"},
    {183, "ERROR_ALREADY_EXISTS"},
    {234, "ERROR_MORE_DATA"},
    {258, "WAIT_TIMEOUT"},
    {259, "ERROR_NO_MORE_ITEMS"},
    {997, "ERROR_IO_PENDING"},
    {1060, "ERROR_SERVICE_DOES_NOT_EXIST"},
    {1062, "ERROR_SERVICE_NOT_ACTIVE"},
    {1168, "ERROR_NOT_FOUND"},
    {1223, "ERROR_CANCELLED"},
    {1314, "ERROR_PRIVILEGE_NOT_HELD"},
    {1359, "ERROR_INTERNAL_ERROR"},
    {1450, "ERROR_NO_SYSTEM_RESOURCES"},
    {1460, "ERROR_TIMEOUT"},
    {1722, "RPC_S_SERVER_UNAVAILABLE"},
    {4200, "ERROR_WMI_GUID_NOT_FOUND"},
    {4317, "ERROR_INVALID_OPERATION"},
    {10054, "WSAECONNRESET"},
    {10060, "WSAETIMEDOUT"},
};

static const known HR[] = {
    {0x00000000u, "S_OK"},
    {0x00000001u, "S_FALSE"},
    {0x8000000Au, "E_PENDING"},
    {0x80004001u, "E_NOTIMPL"},
    {0x80004002u, "E_NOINTERFACE"},
    {0x80004003u, "E_POINTER"},
    {0x80004004u, "E_ABORT"},
    {0x80004005u, "E_FAIL"},
    {0x8000FFFFu, "E_UNEXPECTED"},
    {0x80010106u, "RPC_E_CHANGED_MODE"},
    {0x80040111u, "CLASS_E_CLASSNOTAVAILABLE"},
    {0x80040154u, "REGDB_E_CLASSNOTREG"},
    {0x800401F0u, "CO_E_NOTINITIALIZED"},
    {0x80070005u, "E_ACCESSDENIED"},
    {0x80070006u, "E_HANDLE"},
    {0x8007000Eu, "E_OUTOFMEMORY"},
    {0x80070057u, "E_INVALIDARG"},
    {0x80090016u, "NTE_BAD_KEYSET"},
    {0x800B0109u, "CERT_E_UNTRUSTEDROOT"},
    /* HRESULT_FROM_WIN32: the Win32 name */
    {0x80070002u, "ERROR_FILE_NOT_FOUND"},
    {0x80070003u, "ERROR_PATH_NOT_FOUND"},
    {0x800704C7u, "ERROR_CANCELLED"},
    {0x800706BAu, "RPC_S_SERVER_UNAVAILABLE"},
    /* HRESULT_FROM_NT: the NTSTATUS name */
    {0xD0000022u, "STATUS_ACCESS_DENIED"},
    {0xD0000005u, "STATUS_ACCESS_VIOLATION"},
};

#define CHECK_ALL(table, fn)                                                                      \
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {                                 \
        const char *got = fn(table[i].value);                                                     \
        if (!got || strcmp(got, table[i].name) != 0)                                              \
            fprintf(stderr, "  %s(0x%08X) = %s, expected %s\n", #fn, (unsigned)table[i].value,   \
                    got ? got : "NULL", table[i].name);                                           \
        ETW_CHECK_STR(got, table[i].name);                                                        \
    }

static void test_known(void) {
    CHECK_ALL(NT, etw_ntstatus_name);
    CHECK_ALL(WIN32, etw_win32_error_name);
    CHECK_ALL(HR, etw_hresult_name);
}

static void test_unknown(void) {
    ETW_CHECK(etw_ntstatus_name(0xDEADBEEFu) == NULL);
    ETW_CHECK(etw_ntstatus_name(0xC0FFFFFFu) == NULL);
    ETW_CHECK(etw_ntstatus_name(0xFFFFFFFFu) == NULL);
    ETW_CHECK(etw_win32_error_name(0x10000u) == NULL); /* Win32 codes are 16-bit */
    ETW_CHECK(etw_win32_error_name(0xFFFFFFFFu) == NULL);
    ETW_CHECK(etw_win32_error_name(65535) == NULL);
    ETW_CHECK(etw_hresult_name(0xA0000001u) == NULL);
    ETW_CHECK(etw_hresult_name(0x8007FFFFu) == NULL); /* HRESULT_FROM_WIN32 of an unknown code */
    ETW_CHECK(etw_hresult_name(0xDFFFFFFFu) == NULL); /* HRESULT_FROM_NT of an unknown status */
    ETW_CHECK(etw_hresult_name(0xFFFFFFFFu) == NULL);
}

static int identifier(const char *s) {
    if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
    return 1;
}

static void check_table(const etw_status_name *t, size_t n, size_t at_least) {
    ETW_CHECK(n >= at_least);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && t[i - 1].value >= t[i].value) {
            fprintf(stderr, "  not sorted or twice: 0x%08X %s, 0x%08X %s\n", (unsigned)t[i - 1].value, t[i - 1].name,
                    (unsigned)t[i].value, t[i].name);
            bad++;
        }
        if (!identifier(t[i].name)) bad++;
    }
    ETW_CHECK_INT(bad, 0);
}

static void test_tables(void) {
    /* [MS-ERREF] lists about 2,500 NTSTATUS values and 2,400 Win32 codes */
    check_table(etw_ntstatus_names, etw_ntstatus_names_count, 2000);
    check_table(etw_win32_error_names, etw_win32_error_names_count, 2000);
    check_table(etw_hresult_names, etw_hresult_names_count, 1000);
    /* every entry is found by its value, through the lookup */
    int miss = 0;
    for (size_t i = 0; i < etw_ntstatus_names_count; i++)
        miss += etw_ntstatus_name(etw_ntstatus_names[i].value) != etw_ntstatus_names[i].name;
    for (size_t i = 0; i < etw_win32_error_names_count; i++)
        miss += etw_win32_error_name(etw_win32_error_names[i].value) != etw_win32_error_names[i].name;
    for (size_t i = 0; i < etw_hresult_names_count; i++)
        miss += etw_hresult_name(etw_hresult_names[i].value) != etw_hresult_names[i].name;
    ETW_CHECK_INT(miss, 0);
    /* Win32 codes are 16-bit */
    ETW_CHECK(etw_win32_error_names[etw_win32_error_names_count - 1].value <= 0xFFFFu);
}

int main(void) {
    ETW_RUN(test_known);
    ETW_RUN(test_unknown);
    ETW_RUN(test_tables);
    return ETW_TEST_DONE();
}
