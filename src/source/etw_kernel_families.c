/* etw_kernel_families.c - every kernel class family the library ships (etw_kernel_tables.h). */
#include "etw_kernel_tables.h"

extern const etw_kernel_family etw_kernel_family_eventtrace;
extern const etw_kernel_family etw_kernel_family_process;
extern const etw_kernel_family etw_kernel_family_thread;
extern const etw_kernel_family etw_kernel_family_image;
extern const etw_kernel_family etw_kernel_family_perfinfo;
extern const etw_kernel_family etw_kernel_family_stackwalk;
extern const etw_kernel_family etw_kernel_family_diskio;
extern const etw_kernel_family etw_kernel_family_fileio;
extern const etw_kernel_family etw_kernel_family_memory;
extern const etw_kernel_family etw_kernel_family_tcpip;
extern const etw_kernel_family etw_kernel_family_udpip;
extern const etw_kernel_family etw_kernel_family_registry;
extern const etw_kernel_family etw_kernel_family_sysconfig;
extern const etw_kernel_family etw_kernel_family_alpc;
extern const etw_kernel_family etw_kernel_family_splitio;
extern const etw_kernel_family etw_kernel_family_object;
extern const etw_kernel_family etw_kernel_family_lostevent;
extern const etw_kernel_family etw_kernel_family_imageid;
extern const etw_kernel_family etw_kernel_family_sysconfigex;
extern const etw_kernel_family etw_kernel_family_winsat;

const etw_kernel_family *const etw_kernel_families[] = {
    &etw_kernel_family_eventtrace,
    &etw_kernel_family_process,
    &etw_kernel_family_thread,
    &etw_kernel_family_image,
    &etw_kernel_family_perfinfo,
    &etw_kernel_family_stackwalk,
    &etw_kernel_family_diskio,
    &etw_kernel_family_fileio,
    &etw_kernel_family_memory,
    &etw_kernel_family_tcpip,
    &etw_kernel_family_udpip,
    &etw_kernel_family_registry,
    &etw_kernel_family_sysconfig,
    &etw_kernel_family_alpc,
    &etw_kernel_family_splitio,
    &etw_kernel_family_object,
    &etw_kernel_family_lostevent,
    &etw_kernel_family_imageid,
    &etw_kernel_family_sysconfigex,
    &etw_kernel_family_winsat,
};

const uint32_t etw_kernel_family_count = sizeof etw_kernel_families / sizeof etw_kernel_families[0];
