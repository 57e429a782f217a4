/* Subgroups: MPI_Comm_split over a group, and the two layouts built on it
 * (contiguous new_subgroups, and the intra-/inter-node groups of
 * HYBRID_SHARD). New groups meet through their parent: one allgather of
 * every rank's color, key and nonce (and, for tcp, its listening address),
 * so no store is involved. A new group takes the parent's backend unless
 * its opts name another; a backend other than tcp builds it through its
 * create, with a rendezvous over the parent (ftc_pg_backend_exchange sends
 * from the first member to the others) and the prefix
 * "<parent prefix>/split/<group id>". */
#include "pg/pg_int.h"
#include "pg/tcp/tcp.h"

/* One rank's entry in the split exchange, little-endian:
 * color i32 | key i32 | nonce u64 | reserved u32 (0) | host key u64
 * (ftc__pg_host_key) | address, NUL padded. A rank that could not listen
 * sends color LISTEN_FAILED. */
#define REC_HOST 20
#define REC_ADDR (REC_HOST + 8)
#define REC_SIZE (REC_ADDR + FTC_HOST_MAX + 16)
#define LISTEN_FAILED (-2)

typedef struct entry {
    int color, key, rank;
    uint64_t nonce;
    uint64_t host;
    const char *addr;
} entry;

static void encode(uint8_t *rec, int color, int key, uint64_t nonce,
                   const char *addr)
{
    memset(rec, 0, REC_SIZE);
    ftc__put_u32le(rec, (uint32_t)color);
    ftc__put_u32le(rec + 4, (uint32_t)key);
    ftc__put_u64le(rec + 8, nonce);
    ftc__put_u64le(rec + REC_HOST, ftc__pg_host_key());
    snprintf((char *)rec + REC_ADDR, REC_SIZE - REC_ADDR, "%s", addr);
}

static void decode(uint8_t *rec, int rank, entry *e)
{
    rec[REC_SIZE - 1] = '\0';
    e->color = (int)ftc__get_u32le(rec);
    e->key = (int)ftc__get_u32le(rec + 4);
    e->nonce = ftc__get_u64le(rec + 8);
    e->host = ftc__get_u64le(rec + REC_HOST);
    e->addr = (const char *)rec + REC_ADDR;
    e->rank = rank;
}

/* Members of one color, ordered by key then by rank in the parent (a
 * stable insertion sort: groups are small next to the allgather). */
static int members(entry *all, int n, int color, entry *out)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (all[i].color != color) {
            continue;
        }
        int j = m++;
        while (j > 0 && out[j - 1].key > all[i].key) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = all[i];
    }
    return m;
}

/* Exchanges every rank's record through the parent. */
static int exchange(ftc_pg *pg, const uint8_t *mine, uint8_t *all,
                    int64_t timeout_ms)
{
    ftc_tensor in = ftc_tensor_cpu((void *)mine, REC_SIZE, FTC_DTYPE_U8);
    ftc_tensor out =
        ftc_tensor_cpu(all, (size_t)pg->size * REC_SIZE, FTC_DTYPE_U8);
    ftc_pg_op_opts o;
    ftc_pg_op_opts_init(&o);
    o.timeout_ms = timeout_ms;
    ftc_work *w;
    int rc = ftc_pg_allgather(pg, &in, &out, &o, &w);
    if (rc == 0) {
        rc = ftc_work_wait(w, FTC_TIMEOUT_INFINITE);
        ftc_work_release(w);
    }
    return rc;
}

/* Builds this rank's new group from the exchanged records. */
static int join(ftc_pg *pg, entry *all, ftc__pg_listener *l, int color,
                const ftc_pg_backend *be, const ftc_pg_opts *o, ftc_pg **out)
{
    entry *mem = ftc__calloc((size_t)pg->size, sizeof(*mem));
    const char **addrs = ftc__calloc((size_t)pg->size, sizeof(*addrs));
    uint64_t *hosts = ftc__calloc((size_t)pg->size, sizeof(*hosts));
    int *parent = ftc__calloc((size_t)pg->size, sizeof(*parent));
    int rc = mem && addrs && hosts && parent
                 ? 0
                 : ftc__seterr(FTC_ENOMEM, "split: out of memory");
    int m = rc == 0 ? members(all, pg->size, color, mem) : 0;
    int me = 0;
    for (int i = 0; i < m; i++) {
        addrs[i] = mem[i].addr;
        hosts[i] = mem[i].host;
        parent[i] = mem[i].rank;
        me = mem[i].rank == pg->rank ? i : me;
    }
    /* The group id is the first member's random nonce: fresh for every
     * split, the same on every member. */
    uint64_t id = m > 0 ? mem[0].nonce : 0;
    char prefix[512];
    snprintf(prefix, sizeof(prefix), "%.400s/split/%016llx",
             pg->prefix != NULL ? pg->prefix : "", (unsigned long long)id);
    if (rc == 0 && strcmp(be->name, "tcp") == 0) {
        rc = ftc__pg_create_from_peers(out, l, addrs, hosts, me, m, id, parent,
                                       o);
        if (rc == 0) {
            (*out)->prefix = ftc__strdup(prefix);
        }
    } else if (rc == 0) {
        ftc__pg_listener_close(l);
        ftc_pg_backend_rendezvous rv = {.parent = pg,
                                        .prefix = prefix,
                                        .members = parent,
                                        .rank = me,
                                        .size = m};
        ftc__deadline dl = ftc__deadline_from_timeout(o->connect_timeout_ms,
                                                      o->connect_timeout_ms);
        rc = ftc__pg_build(be, &rv, me, m, parent, id, o, dl.ns, out);
        ftc__pg_rendezvous_done(&rv, rc); /* a subgroup keeps no blame */
    } else {
        ftc__pg_listener_close(l);
    }
    ftc__free(mem);
    ftc__free(addrs);
    ftc__free(hosts);
    ftc__free(parent);
    return rc;
}

int ftc_pg_split(ftc_pg *pg, int color, int key, const ftc_pg_opts *opts,
                 ftc_pg **out)
{
    ftc__clearerr();
    if (out == NULL) {
        return ftc__seterr(FTC_EINVAL, "split: out is NULL");
    }
    *out = NULL;
    if (pg == NULL || pg->magic != FTC__PG_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a process group");
    }
    if (color < 0 && color != FTC_PG_UNDEFINED) {
        return ftc__seterr(FTC_EINVAL, "split: color %d is negative", color);
    }
    ftc_pg_opts mine_opts;
    int rc = ftc__pg_resolve_opts(&mine_opts, opts != NULL ? opts : &pg->opts);
    if (rc != 0) {
        return rc;
    }
    const ftc_pg_opts *o = &mine_opts;
    ftc__pg_listener l = {.fd = -1};
    int send_color = color;
    /* The parent's backend unless opts name another (not FTC_PG_BACKEND:
     * the environment chose the parent's already). */
    const ftc_pg_backend *be = NULL;
    char be_err[FTC__PG_MSG_MAX] = "";
    int be_rc = ftc__pg_backend_get(
        opts != NULL && opts->backend != NULL ? opts->backend : pg->backend,
        &be);
    if (be_rc != 0) {
        snprintf(be_err, sizeof(be_err), "%s", ftc_last_error());
        send_color = color >= 0 ? LISTEN_FAILED : color;
    } else if (color >= 0 && strcmp(be->name, "tcp") == 0 &&
               ftc__pg_listen(o->host, &l) != 0) {
        FTC_LOG_WARN("pg.split", "rank %d: %s", pg->rank, ftc_last_error());
        send_color = LISTEN_FAILED; /* the others must hear it too */
    }
    uint8_t mine[REC_SIZE];
    encode(mine, send_color, key, ftc__rand_u64(), l.addr);
    uint8_t *all = ftc__malloc((size_t)pg->size * REC_SIZE);
    entry *ents = ftc__calloc((size_t)pg->size, sizeof(*ents));
    rc = all && ents ? 0 : ftc__seterr(FTC_ENOMEM, "split: out of memory");
    if (rc == 0) {
        rc = exchange(pg, mine, all, o->connect_timeout_ms);
        if (rc != 0) {
            ftc__adderr(rc, "split: exchanging addresses");
        }
    }
    if (rc == 0 && be_rc != 0) {
        rc = ftc__seterr(be_rc, "split: %s", be_err);
    }
    for (int i = 0; rc == 0 && i < pg->size; i++) {
        decode(all + (size_t)i * REC_SIZE, i, &ents[i]);
        if (ents[i].color == LISTEN_FAILED) {
            rc = ftc__seterr(FTC_EPEER,
                             "split: rank %d could not listen or load the "
                             "backend",
                             i);
        }
    }
    if (rc == 0 && color >= 0) {
        rc = join(pg, ents, &l, color, be, o, out);
    } else {
        ftc__pg_listener_close(&l);
    }
    ftc__free(all);
    ftc__free(ents);
    return rc;
}

int ftc_pg_new_subgroups(ftc_pg *pg, int group_size, const ftc_pg_opts *opts,
                         ftc_pg **out)
{
    ftc__clearerr();
    if (out != NULL) {
        *out = NULL;
    }
    if (pg == NULL || pg->magic != FTC__PG_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a process group");
    }
    if (group_size <= 0 || pg->size % group_size != 0) {
        return ftc__seterr(FTC_EINVAL,
                           "new_subgroups: group size %d does not divide %d "
                           "ranks",
                           group_size, pg->size);
    }
    return ftc_pg_split(pg, pg->rank / group_size, pg->rank, opts, out);
}

int ftc_pg_mesh_2d(ftc_pg *pg, int devices_per_node, int device_kind,
                   const ftc_pg_opts *opts, ftc_pg **shard, ftc_pg **replicate)
{
    ftc__clearerr();
    if (shard == NULL || replicate == NULL) {
        return ftc__seterr(FTC_EINVAL, "mesh_2d: NULL output");
    }
    *shard = *replicate = NULL;
    if (pg == NULL || pg->magic != FTC__PG_MAGIC) {
        return ftc__seterr(FTC_EMISUSE, "not a process group");
    }
    int d = devices_per_node;
    if (d == 0) {
        /* Ask the device layer, for whatever kind the job runs on. */
        int rc = ftc_device_count(device_kind, &d);
        if (rc != 0) {
            return ftc__adderr(rc, "mesh_2d: devices per node");
        }
    }
    if (d <= 0 || pg->size % d != 0) {
        return ftc__seterr(FTC_EINVAL,
                           "mesh_2d: %d ranks are not whole nodes of %d "
                           "devices",
                           pg->size, d);
    }
    int rc = ftc_pg_split(pg, pg->rank / d, pg->rank, opts, shard);
    if (rc == 0) {
        rc = ftc_pg_split(pg, pg->rank % d, pg->rank, opts, replicate);
    }
    if (rc != 0) {
        ftc_pg_destroy(*shard);
        *shard = NULL;
    }
    return rc;
}
