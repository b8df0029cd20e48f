/* etw_report_network.c - TCP and UDP traffic by process and by remote
 * address and port.
 *
 * Events: kernel TcpIp (9a280ac0-...) Send 10, Recv 11, Connect 12,
 * Disconnect 13, Retransmit 14, Accept 15, Reconnect 16, TCPCopy 18 and
 * their IPv6 twins 26-32, 34; kernel UdpIp (bf3a50c5-...) Send 10, Recv 11,
 * SendIPV6 26, RecvIPV6 27 (src/source/etw_kernel_tcpip.c, udpip.c). The
 * process is the payload's PID; bytes are `size` of Send/Recv (TCPCopy is
 * counted as received, as PerfView's TcpIp/TCPCopy is a receive copied to
 * the user); the remote end is daddr:dport (the kernel writes the remote
 * address as daddr for sends and receives alike). Ports and addresses are
 * in network byte order in the payload. The manifest provider
 * Microsoft-Windows-Kernel-Network (7dd42a49-5329-4832-8dfd-43d979153a88;
 * its manifest must be given, -m) numbers the same events as ids: TCP 10-18
 * and 26-34 as the TcpIp opcodes, UDP 42, 43 (IPv4) and 58, 59 (IPv6) as
 * UdpIp's plus 32, with the same field names (PID, size, daddr, dport). */
#include <stdio.h>
#include <string.h>

#include "report/etw_report_internal.h"

enum { C_SEND, C_RECV, C_CONNECT, C_ACCEPT, C_DISCONNECT, C_RETRANSMIT, C_N };

typedef struct net_row {
    uint64_t key;
    uint32_t pid, pname;
    uint8_t addr[16], v6, proto; /* proto: 6 TCP, 17 UDP */
    uint16_t port;
    uint64_t bytes[2][2]; /* [tcp, udp][sent, received] */
    uint64_t n[C_N];
    uint64_t udp_n[2];
} net_row;

typedef struct net {
    rep_vec procs, remotes;
    rep_map by_pid, by_remote;
    rep_pool pool;
} net;

static etw_status n_init(etw_report *r) {
    net *k = rep_alloc(r, sizeof *k);
    if (!k) return ETW_E_NOMEM;
    rep_vec_init(&k->procs, sizeof(net_row));
    rep_vec_init(&k->remotes, sizeof(net_row));
    r->impl = k;
    return ETW_OK;
}

static void n_free(etw_report *r) {
    net *k = r->impl;
    if (!k) return;
    rep_vec_free(r, &k->procs);
    rep_vec_free(r, &k->remotes);
    rep_map_free(r, &k->by_pid);
    rep_map_free(r, &k->by_remote);
    rep_pool_free(r, &k->pool);
    rep_free(r, k);
}

static size_t n_memory(const etw_report *r) {
    const net *k = r->impl;
    return (size_t)(k->procs.cap + k->remotes.cap) * sizeof(net_row) + (size_t)(k->by_pid.cap + k->by_remote.cap) * 12 +
           k->pool.cap + (size_t)k->pool.index.cap * 12;
}

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h;
}

static net_row *get_row(etw_report *r, net *k, rep_vec *v, rep_map *m, uint64_t key, uint32_t pid, etw_decoder *d,
                        const etw_event *ev, const etw_schema *s, etw_status *st, int *fresh) {
    uint32_t i = rep_map_get(m, key);
    *fresh = 0;
    if (i != REP_NONE) return rep_vec_at(v, i);
    net_row *w = rep_vec_push(r, v, rep_max_rows(r), st);
    if (!w) return NULL;
    *fresh = 1;
    w->key = key;
    w->pid = pid;
    const char *name;
    size_t len;
    if (etw_decoder_process_name(d, ev, s, pid, &name, &len) &&
        (*st = rep_pool_add(r, &k->pool, name, len, &w->pname)) != ETW_OK)
        return NULL;
    if ((*st = rep_map_put(r, m, key, v->count - 1)) != ETW_OK) return NULL;
    return w;
}

enum { N_PID, N_SIZE, N_DADDR, N_DPORT, N_FN };
static const char *const net_fields[N_FN] = {"PID", "size", "daddr", "dport"};

static const etw_guid kernel_network = {0x7dd42a49, 0x5329, 0x4832, {0x8d, 0xfd, 0x43, 0xd9, 0x79, 0x15, 0x3a, 0x88}};

static etw_status n_add(etw_report *r, etw_decoder *d, const etw_event *ev, const etw_schema *s) {
    net *k = r->impl;
    if (!s) return ETW_OK;
    int tcp;
    uint8_t op;
    if (s->source == ETW_SOURCE_MOF) {
        tcp = etw_guid_equal(&ev->provider, &rep_guid_tcpip);
        if (!tcp && !etw_guid_equal(&ev->provider, &rep_guid_udpip)) return ETW_OK;
        op = ev->opcode;
    } else if (etw_guid_equal(&s->provider, &kernel_network)) {
        uint16_t id = s->event_id;
        tcp = id < 42;
        if (id >= 42 && id <= 59) id = (uint16_t)(id - 32); /* UDP: as UdpIp's opcodes */
        if (id > 34) return ETW_OK;
        op = (uint8_t)id;
    } else {
        return ETW_OK;
    }
    int v6 = op >= 26;
    uint8_t base = v6 ? (uint8_t)(op - 16) : op;
    int kind;
    switch (base) {
    case 10: kind = C_SEND; break;
    case 11: kind = C_RECV; break;
    case 12: kind = tcp ? C_CONNECT : -1; break;
    case 13: kind = tcp ? C_DISCONNECT : -1; break;
    case 14: kind = tcp ? C_RETRANSMIT : -1; break;
    case 15: kind = tcp ? C_ACCEPT : -1; break;
    case 16: kind = tcp ? C_CONNECT : -1; break; /* Reconnect */
    case 18: kind = tcp ? C_RECV : -1; break;    /* TCPCopy */
    default: kind = -1; break;
    }
    if (kind < 0 || op > 34) return ETW_OK;
    etw_value v[N_FN];
    uint32_t have = rep_fields(r, d, ev, s, net_fields, N_FN, v);
    if (!(have & 1u)) return ETW_OK;
    r->used++;
    uint32_t pid = (uint32_t)rep_value_u64(&v[N_PID]);
    uint64_t size = have & (1u << N_SIZE) ? rep_value_u64(&v[N_SIZE]) : 0;
    uint8_t addr[16] = {0};
    uint16_t port = 0;
    if ((have & (1u << N_DADDR)) && v[N_DADDR].data) {
        uint32_t n = v[N_DADDR].size < 16 ? v[N_DADDR].size : 16;
        memcpy(addr, v[N_DADDR].data, n);
    }
    if ((have & (1u << N_DPORT)) && v[N_DPORT].data && v[N_DPORT].size == 2)
        port = (uint16_t)(v[N_DPORT].data[0] << 8 | v[N_DPORT].data[1]);
    etw_status st = ETW_OK;
    int fresh;
    net_row *p = get_row(r, k, &k->procs, &k->by_pid, pid, pid, d, ev, s, &st, &fresh);
    if (!p) return st;
    uint64_t key = mix(mix(pid, (uint64_t)port << 16 | (uint64_t)tcp << 8 | (uint64_t)v6), 0);
    for (int i = 0; i < 16; i += 8) {
        uint64_t x;
        memcpy(&x, addr + i, 8);
        key = mix(key, x);
    }
    net_row *w = get_row(r, k, &k->remotes, &k->by_remote, key, pid, d, ev, s, &st, &fresh);
    if (!w) return st;
    if (fresh) {
        memcpy(w->addr, addr, 16);
        w->v6 = (uint8_t)v6;
        w->port = port;
        w->proto = tcp ? 6 : 17;
    }
    net_row *rows[2] = {p, w};
    for (int i = 0; i < 2; i++) {
        if (kind == C_SEND || kind == C_RECV) rows[i]->bytes[!tcp][kind == C_RECV] += size;
        if (tcp) rows[i]->n[kind]++;
        else rows[i]->udp_n[kind == C_RECV]++;
    }
    return ETW_OK;
}

static void addr_text(const net_row *w, char *b, size_t cap) {
    if (!w->v6) {
        snprintf(b, cap, "%u.%u.%u.%u:%u", w->addr[0], w->addr[1], w->addr[2], w->addr[3], w->port);
        return;
    }
    /* RFC 5952 would shorten zeros; full groups keep it simple and exact */
    size_t n = 0;
    n += (size_t)snprintf(b + n, cap - n, "[");
    for (int i = 0; i < 16 && n < cap; i += 2)
        n += (size_t)snprintf(b + n, cap - n, "%s%x", i ? ":" : "", (unsigned)(w->addr[i] << 8 | w->addr[i + 1]));
    if (n < cap) snprintf(b + n, cap - n, "]:%u", w->port);
}

static const rep_col proc_cols[] = {
    {"pid", REP_COL_INT, 0},         {"process", REP_COL_STR, 0},     {"tcp_sent", REP_COL_INT, 0},
    {"tcp_received", REP_COL_INT, 0}, {"tcp_sends", REP_COL_INT, 0},  {"tcp_receives", REP_COL_INT, 0},
    {"connects", REP_COL_INT, 0},    {"accepts", REP_COL_INT, 0},     {"disconnects", REP_COL_INT, 0},
    {"retransmits", REP_COL_INT, 0}, {"udp_sent", REP_COL_INT, 0},    {"udp_received", REP_COL_INT, 0},
    {"udp_sends", REP_COL_INT, 0},   {"udp_receives", REP_COL_INT, 0},
};
static const rep_col remote_cols[] = {
    {"pid", REP_COL_INT, 0},        {"process", REP_COL_STR, 0},    {"protocol", REP_COL_STR, 0},
    {"remote", REP_COL_STR, 0},     {"sent", REP_COL_INT, 0},       {"received", REP_COL_INT, 0},
    {"sends", REP_COL_INT, 0},      {"receives", REP_COL_INT, 0},   {"connects", REP_COL_INT, 0},
    {"accepts", REP_COL_INT, 0},    {"disconnects", REP_COL_INT, 0}, {"retransmits", REP_COL_INT, 0},
};

static etw_status n_write(etw_report *r, rep_out *o) {
    net *k = r->impl;
    etw_status st = rep_table_begin(o, "processes", "Network by process (bytes)", proc_cols,
                                    sizeof proc_cols / sizeof *proc_cols, 0);
    for (uint32_t i = 0; i < k->procs.count && st == ETW_OK; i++) {
        const net_row *p = rep_vec_at(&k->procs, i);
        rep_cell_u64(o, p->pid);
        rep_cell_cstr(o, rep_pool_str(&k->pool, p->pname));
        rep_cell_u64(o, p->bytes[0][0]);
        rep_cell_u64(o, p->bytes[0][1]);
        for (int c = 0; c < C_N; c++) rep_cell_u64(o, p->n[c]);
        rep_cell_u64(o, p->bytes[1][0]);
        rep_cell_u64(o, p->bytes[1][1]);
        rep_cell_u64(o, p->udp_n[0]);
        rep_cell_u64(o, p->udp_n[1]);
    }
    if (st == ETW_OK) st = rep_table_end(o);
    if (st == ETW_OK)
        st = rep_table_begin(o, "remotes", "Network by process and remote address", remote_cols,
                             sizeof remote_cols / sizeof *remote_cols, 1);
    for (uint32_t i = 0; i < k->remotes.count && st == ETW_OK; i++) {
        const net_row *w = rep_vec_at(&k->remotes, i);
        char b[80];
        int udp = w->proto == 17;
        rep_cell_u64(o, w->pid);
        rep_cell_cstr(o, rep_pool_str(&k->pool, w->pname));
        rep_cell_cstr(o, udp ? "udp" : "tcp");
        addr_text(w, b, sizeof b);
        rep_cell_cstr(o, b);
        rep_cell_u64(o, w->bytes[udp][0]);
        rep_cell_u64(o, w->bytes[udp][1]);
        rep_cell_u64(o, udp ? w->udp_n[0] : w->n[C_SEND]);
        rep_cell_u64(o, udp ? w->udp_n[1] : w->n[C_RECV]);
        for (int c = C_CONNECT; c < C_N; c++) rep_cell_u64(o, w->n[c]);
    }
    return st == ETW_OK ? rep_table_end(o) : st;
}

const rep_vtable etw_rep_network_vt = {n_init, n_free, n_add, NULL, NULL, n_write, n_memory};
