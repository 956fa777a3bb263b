/* kt_remote.h - what the remote tier's tests, its torture mode and its benchmark share: temp trees,
 * payloads that name their key, and (with KCACHE_REDIS) real redis-server processes the caller
 * starts and stops, each with a config of its own in a temp directory (maxmemory, allkeys-lru, no
 * persistence), plus a tiny server that speaks garbage for the protocol faults.
 *
 * Servers are the caller's children: they die with it (PR_SET_PDEATHSIG), at exit (atexit), and
 * when the caller is told to stop (SIGTERM / SIGINT from `timeout` or a shell), so a failed or
 * killed test leaves no server behind. Include after kcache.h (which brings the system headers). */
#ifndef KT_REMOTE_H
#define KT_REMOTE_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#ifdef KCACHE_REDIS
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KT_UNUSED __attribute__((unused))
#else
#define KT_UNUSED
#endif

/* ---- time and temp trees ---- */

KT_UNUSED static double kt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
KT_UNUSED static void kt_sleep_ms(unsigned ms) {
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
static int kt_rm_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    (void)s;
    (void)flag;
    (void)f;
    remove(p);
    return 0;
}
KT_UNUSED static void kt_rm_tree(const char *path) { nftw(path, kt_rm_one, 32, FTW_DEPTH | FTW_PHYS); }
/* A tree's names, types, modes, owners, sizes, inodes, mtimes and contents as one digest, to show
   that something was left exactly as it was (a read-only layer). Needs kcache.h's implementation. */
static kcache_hash_state kt_tree_state;
static int kt_tree_one(const char *p, const struct stat *s, int flag, struct FTW *f) {
    uint64_t v[7];
    (void)flag;
    (void)f;
    kcache_hash_update(&kt_tree_state, p, strlen(p) + 1);
    v[0] = (uint64_t)s->st_mode; v[1] = (uint64_t)s->st_uid; v[2] = (uint64_t)s->st_size; v[3] = (uint64_t)s->st_ino;
    v[4] = (uint64_t)s->st_mtim.tv_sec; v[5] = (uint64_t)s->st_mtim.tv_nsec; v[6] = (uint64_t)s->st_nlink;
    kcache_hash_update(&kt_tree_state, v, sizeof v);
    if (S_ISREG(s->st_mode)) {
        char buf[65536];
        ssize_t n;
        int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
        while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) kcache_hash_update(&kt_tree_state, buf, (size_t)n);
        if (fd >= 0) close(fd);
    }
    return 0;
}
KT_UNUSED static kcache_hash128 kt_tree_sig(const char *root) {
    kcache_hash_init(&kt_tree_state);
    nftw(root, kt_tree_one, 32, FTW_PHYS | FTW_MOUNT);
    return kcache_hash_final(&kt_tree_state);
}

/* A fresh directory under $TMPDIR (or /tmp) named after what it is for. */
KT_UNUSED static int kt_mktemp(char *out, size_t cap, const char *what) {
    const char *t = getenv("TMPDIR");
    snprintf(out, cap, "%s/kcache-%s.XXXXXX", t && *t ? t : "/tmp", what);
    return mkdtemp(out) != NULL;
}

/* kcache_config_init's defaults for a store of its own, root/name (dir: the caller's buffer),
   that publishes nothing for kcache-top. */
KT_UNUSED static void kt_config(kcache_config *cfg, char *dir, size_t cap, const char *root, const char *name) {
    snprintf(dir, cap, "%s/%s", root, name);
    kcache_config_init(cfg);
    cfg->dir = dir;
    cfg->publish = 0;
}

/* ---- payloads: byte i of key id's payload is a function of both, so a wrong one shows ---- */

KT_UNUSED static void kt_payload(unsigned char *p, size_t n, unsigned id) {
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)((i * 31 + id * 7 + (i >> 9)) ^ (i % 13 == 0 ? 0x5a : 0));
}
KT_UNUSED static int kt_payload_ok(const void *d, size_t n, size_t want, unsigned id) {
    const unsigned char *p = (const unsigned char *)d;
    size_t i;
    if (!d || n != want) return 0;
    for (i = 0; i < n; i++)
        if (p[i] != (unsigned char)((i * 31 + id * 7 + (i >> 9)) ^ (i % 13 == 0 ? 0x5a : 0))) return 0;
    return 1;
}
KT_UNUSED static void kt_key(kcache_key *k, const char *unit, unsigned id) {
    kcache_key_init(k, unit);
    kcache_key_str(k, "source", "__kernel void f(__global float *x) { x[get_global_id(0)] *= 2.0f; }");
    kcache_key_u64(k, "id", id);
}
/* Puts key (unit, id) with the n-byte payload that names pid. */
KT_UNUSED static kcache_status kt_put(kcache *kc, const char *unit, unsigned id, unsigned pid, size_t n) {
    unsigned char *p = (unsigned char *)malloc(n ? n : 1);
    kcache_key k;
    kcache_status s;
    if (!p) return KCACHE_ENOMEM;
    kt_payload(p, n, pid);
    kt_key(&k, unit, id);
    s = kcache_put(kc, &k, p, n);
    kcache_key_free(&k);
    free(p);
    return s;
}
/* Gets key (unit, id): 1 the n-byte payload that names pid; 0 a miss; -1 anything else (other
   bytes, an error). */
KT_UNUSED static int kt_get(kcache *kc, const char *unit, unsigned id, unsigned pid, size_t n) {
    kcache_key k;
    const void *d;
    size_t got;
    kcache_status s;
    int r;
    kt_key(&k, unit, id);
    s = kcache_get(kc, &k, &d, &got);
    kcache_key_free(&k);
    if (s == KCACHE_MISS) return 0;
    if (s != KCACHE_OK) return -1;
    r = kt_payload_ok(d, got, n, pid) ? 1 : -1;
    kcache_release(kc, d);
    return r;
}

#ifdef KCACHE_REDIS
/* ---- real redis-server processes ---- */

#define KT_MAX_SERVERS 16
static pid_t kt_servers[KT_MAX_SERVERS]; /* every server (and garbage server group) started, for the cleanup */
static pid_t kt_owner;                   /* the process that started them: children never clean up */

static void kt_servers_kill(void) {
    int i;
    if (getpid() != kt_owner) return;
    for (i = 0; i < KT_MAX_SERVERS; i++)
        if (kt_servers[i] > 0) {
            kill(-kt_servers[i], SIGCONT); /* a stopped server cannot die of SIGKILL's wait otherwise */
            kill(-kt_servers[i], SIGKILL);
            kill(kt_servers[i], SIGKILL);
            waitpid(kt_servers[i], NULL, 0);
            kt_servers[i] = 0;
        }
}
static void kt_on_term(int sig) {
    kt_servers_kill();
    _exit(128 + sig);
}
static void kt_track(pid_t p) {
    int i;
    if (!kt_owner) {
        kt_owner = getpid();
        atexit(kt_servers_kill);
        signal(SIGTERM, kt_on_term);
        signal(SIGINT, kt_on_term);
    }
    for (i = 0; i < KT_MAX_SERVERS; i++)
        if (kt_servers[i] <= 0) { kt_servers[i] = p; return; }
}
static void kt_untrack(pid_t p) {
    int i;
    for (i = 0; i < KT_MAX_SERVERS; i++)
        if (kt_servers[i] == p) kt_servers[i] = 0;
}

/* A free TCP port on 127.0.0.1 (the kernel's choice; free a moment later too, nearly always). */
KT_UNUSED static int kt_free_port(void) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    if (fd < 0) return 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0) port = ntohs(a.sin_port);
    close(fd);
    return port;
}

typedef struct kt_redis {
    pid_t pid;
    int port;            /* TCP on 127.0.0.1; 0: the unix socket only */
    char dir[300];       /* its own directory: config, log, socket */
    char sock[340];
    char url[420];       /* what KCACHE_REMOTE names it by */
    char extra[512];     /* config lines added at start */
} kt_redis;

static int kt_redis_spawn(kt_redis *r) {
    char conf[400];
    FILE *f;
    pid_t p;
    snprintf(conf, sizeof conf, "%s/redis.conf", r->dir);
    if (!(f = fopen(conf, "w"))) return 0;
    fprintf(f,
            "bind 127.0.0.1\nport %d\nunixsocket %s\nunixsocketperm 700\n"
            "save \"\"\nappendonly no\ndir %s\nlogfile %s/redis.log\ndaemonize no\n"
            "maxmemory 64mb\nmaxmemory-policy allkeys-lru\nenable-debug-command yes\n%s\n",
            r->port, r->sock, r->dir, r->dir, r->extra);
    fclose(f);
    fflush(stdout);
    fflush(stderr);
    p = fork();
    if (p < 0) return 0;
    if (p == 0) {
        int devnull = open("/dev/null", O_RDWR);
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (devnull >= 0) { dup2(devnull, 1); dup2(devnull, 2); }
        execlp("redis-server", "redis-server", conf, (char *)NULL);
        _exit(127);
    }
    r->pid = p;
    kt_track(p);
    return 1;
}

/* Runs one command on a fresh connection (2 s timeouts); the reply, or NULL. */
KT_UNUSED static redisReply *kt_redis_cmd(const kt_redis *r, const char *fmt, ...) {
    struct timeval tv = {2, 0};
    redisContext *c = r->port ? redisConnectWithTimeout("127.0.0.1", r->port, tv) : redisConnectUnixWithTimeout(r->sock, tv);
    redisReply *rep = NULL;
    va_list ap;
    if (!c || c->err) { if (c) redisFree(c); return NULL; }
    redisSetTimeout(c, tv);
    va_start(ap, fmt);
    rep = (redisReply *)redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return rep;
}
/* The calls r's server counted of one command (INFO commandstats: cmdstat_<cmd>:calls=N; 0 when
   never called), or -1 when it did not answer. */
KT_UNUSED static long long kt_redis_calls(const kt_redis *r, const char *cmd) {
    redisReply *rep = kt_redis_cmd(r, "INFO commandstats");
    char want[64];
    const char *at;
    long long n = -1;
    snprintf(want, sizeof want, "cmdstat_%s:calls=", cmd);
    if (rep && rep->type == REDIS_REPLY_STRING) n = (at = strstr(rep->str, want)) ? atoll(at + strlen(want)) : 0;
    if (rep) freeReplyObject(rep);
    return n;
}
/* Every command r's server counted (INFO commandstats, the commands inside scripts included),
   summed, or -1. */
KT_UNUSED static long long kt_redis_all_calls(const kt_redis *r) {
    redisReply *rep = kt_redis_cmd(r, "INFO commandstats");
    const char *at;
    long long n = -1;
    if (rep && rep->type == REDIS_REPLY_STRING)
        for (n = 0, at = rep->str; (at = strstr(at, ":calls=")) != NULL; at += 7) n += atoll(at + 7);
    if (rep) freeReplyObject(rep);
    return n;
}
/* The connections subscribed on r's server now (CLIENT LIST: sub=, psub= or ssub= above 0), or -1. */
KT_UNUSED static int kt_redis_subscribers(const kt_redis *r) {
    redisReply *rep = kt_redis_cmd(r, "CLIENT LIST");
    const char *at;
    int n = -1;
    if (rep && rep->type == REDIS_REPLY_STRING)
        for (n = 0, at = rep->str; at && *at; at = strchr(at, '\n'), at = at ? at + 1 : NULL) {
            const char *end = strchr(at, '\n'), *f[3];
            int i, subbed = 0;
            f[0] = strstr(at, " sub="), f[1] = strstr(at, " psub="), f[2] = strstr(at, " ssub=");
            for (i = 0; i < 3; i++) subbed |= f[i] && (!end || f[i] < end) && atoi(strchr(f[i], '=') + 1) > 0;
            n += subbed;
        }
    if (rep) freeReplyObject(rep);
    return n;
}
/* An integer command's answer (DBSIZE, EXISTS, STRLEN...), or -1. */
KT_UNUSED static long long kt_redis_int(const kt_redis *r, const char *fmt, ...) {
    struct timeval tv = {2, 0};
    redisContext *c = r->port ? redisConnectWithTimeout("127.0.0.1", r->port, tv) : redisConnectUnixWithTimeout(r->sock, tv);
    redisReply *rep;
    long long v = -1;
    va_list ap;
    if (!c || c->err) { if (c) redisFree(c); return -1; }
    redisSetTimeout(c, tv);
    va_start(ap, fmt);
    rep = (redisReply *)redisvCommand(c, fmt, ap);
    va_end(ap);
    if (rep && rep->type == REDIS_REPLY_INTEGER) v = rep->integer;
    if (rep) freeReplyObject(rep);
    redisFree(c);
    return v;
}

/* Waits (up to 10 s) until the server answers PING. */
static int kt_redis_ready(kt_redis *r) {
    int i;
    for (i = 0; i < 200; i++) {
        redisReply *rep = kt_redis_cmd(r, "PING");
        int ok = rep && (rep->type == REDIS_REPLY_STATUS || (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOAUTH", 6) == 0));
        if (rep) freeReplyObject(rep);
        if (ok) return 1;
        if (waitpid(r->pid, NULL, WNOHANG) == r->pid) { kt_untrack(r->pid); r->pid = 0; return 0; }
        kt_sleep_ms(50);
    }
    return 0;
}

/* Starts a server in a new directory under parent: on a free TCP port (tcp) or its unix socket only;
   extra: config lines of its own (NULL: none). 1 when it answers. */
KT_UNUSED static int kt_redis_start(kt_redis *r, const char *parent, int tcp, const char *extra) {
    int tries;
    memset(r, 0, sizeof *r);
    if (snprintf(r->dir, sizeof r->dir, "%s/redis.XXXXXX", parent) >= (int)sizeof r->dir || !mkdtemp(r->dir)) return 0;
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    snprintf(r->extra, sizeof r->extra, "%s", extra ? extra : "");
    for (tries = 0; tries < 5; tries++) { /* a port taken between the look and the bind: another one */
        r->port = tcp ? kt_free_port() : 0;
        if (tcp && !r->port) return 0;
        if (r->port) snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
        else snprintf(r->url, sizeof r->url, "unix://%s", r->sock);
        if (kt_redis_spawn(r) && kt_redis_ready(r)) return 1;
        if (r->pid > 0) { kill(r->pid, SIGKILL); waitpid(r->pid, NULL, 0); kt_untrack(r->pid); r->pid = 0; }
    }
    return 0;
}
/* Kills it (as a crash would: no save, no goodbye). */
KT_UNUSED static void kt_redis_kill(kt_redis *r) {
    if (r->pid <= 0) return;
    kill(r->pid, SIGCONT);
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    kt_untrack(r->pid);
    r->pid = 0;
}
/* Starts it again on the same port and socket (its data is gone: no persistence). */
KT_UNUSED static int kt_redis_restart(kt_redis *r) {
    kt_redis_kill(r);
    unlink(r->sock);
    return kt_redis_spawn(r) && kt_redis_ready(r);
}
KT_UNUSED static void kt_redis_stop(kt_redis *r) {
    kt_redis_kill(r);
    kt_rm_tree(r->dir);
}

/* ---- a server that speaks garbage (protocol faults) ---- */

enum {
    KT_GARBAGE_TEXT,     /* a line that is not RESP */
    KT_GARBAGE_CLOSE,    /* hangs up at once (FIN), drops the socket after its first read: the rest of a
                            big write gets EPIPE, which is SIGPIPE for a writer that lets it through */
    KT_GARBAGE_SILENT,   /* accepts, reads, never answers */
    KT_GARBAGE_HUGE,     /* announces a 3 GB string, then sends zeros as fast as it can */
    KT_GARBAGE_DEEP,     /* nested arrays deeper than any reply */
    KT_GARBAGE_JUNK,     /* a well-formed string of random bytes for every command */
    KT_GARBAGE_INT,      /* ":1" for everything: the wrong type */
    KT_GARBAGE_COUNT
};
KT_UNUSED static const char *const kt_garbage_name[KT_GARBAGE_COUNT] = {"text", "close", "silent", "huge", "deep", "junk", "int"};

static void kt_garbage_serve(int c, int mode) {
    char buf[65536];
    unsigned seed = (unsigned)getpid();
    signal(SIGPIPE, SIG_IGN);
    if (mode == KT_GARBAGE_CLOSE) {
        shutdown(c, SHUT_WR);
        if (read(c, buf, sizeof buf) > 0) close(c); /* unread data: a reset, which the writer (in CLOSE_WAIT) takes as EPIPE */
        return;
    }
    for (;;) {
        ssize_t n = read(c, buf, sizeof buf);
        size_t i;
        if (n <= 0) break;
        switch (mode) {
        case KT_GARBAGE_TEXT: if (write(c, "HELLO THERE, THIS IS NOT REDIS\r\n", 32) < 0) return; break;
        case KT_GARBAGE_SILENT: break;
        case KT_GARBAGE_HUGE:
            if (write(c, "$3000000000\r\n", 13) < 0) return;
            memset(buf, 0, sizeof buf);
            for (i = 0; i < 100000; i++)
                if (write(c, buf, sizeof buf) < 0) return;
            break;
        case KT_GARBAGE_DEEP:
            for (i = 0; i < 20; i++)
                if (write(c, "*1\r\n", 4) < 0) return;
            break;
        case KT_GARBAGE_JUNK: {
            char head[32];
            size_t len = 100 + rand_r(&seed) % 5000;
            for (i = 0; i < len; i++) buf[i] = (char)rand_r(&seed);
            snprintf(head, sizeof head, "$%zu\r\n", len);
            if (write(c, head, strlen(head)) < 0 || write(c, buf, len) < 0 || write(c, "\r\n", 2) < 0) return;
            break;
        }
        default: if (write(c, ":1\r\n", 4) < 0) return; break;
        }
    }
}

/* A listening socket on 127.0.0.1, a free port (*port); -1 on failure. */
KT_UNUSED static int kt_listen_loopback(int backlog, int *port) {
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    socklen_t len = sizeof a;
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, backlog) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Three redis-servers made one Redis Cluster of three masters (slots split in thirds), extra: more
   lines of their configuration. NULL once every node sees the cluster whole; else why not (every
   node stopped). */
KT_UNUSED static const char *kt_cluster3_start(kt_redis N[3], const char *parent, const char *extra) {
    static const int range[3][2] = {{0, 5460}, {5461, 10922}, {10923, 16383}};
    char conf[512];
    int i, ok = 0, tries;
    snprintf(conf, sizeof conf, "cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 5000%s%s", extra ? "\n" : "",
             extra ? extra : "");
    for (i = 0; i < 3; i++)
        if (!kt_redis_start(&N[i], parent, 1, conf)) {
            while (i-- > 0) kt_redis_stop(&N[i]);
            return "a cluster node did not start";
        }
    for (i = 0; i < 3; i++) {
        redisReply *r = kt_redis_cmd(&N[i], "CLUSTER ADDSLOTSRANGE %d %d", range[i][0], range[i][1]);
        if (r) freeReplyObject(r);
        if (i && (r = kt_redis_cmd(&N[0], "CLUSTER MEET 127.0.0.1 %d", N[i].port)) != NULL) freeReplyObject(r);
    }
    for (tries = 0; tries < 200 && ok < 3; tries++) { /* every node sees the cluster whole */
        for (ok = 0, i = 0; i < 3; i++) {
            redisReply *r = kt_redis_cmd(&N[i], "CLUSTER INFO");
            ok += r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") && strstr(r->str, "cluster_known_nodes:3");
            if (r) freeReplyObject(r);
        }
        if (ok < 3) kt_sleep_ms(50);
    }
    if (ok == 3) return NULL;
    for (i = 0; i < 3; i++) kt_redis_stop(&N[i]);
    return "the cluster did not form";
}

/* Starts a garbage server of the given mode on a free port (a process group: one child per
   connection). Returns its pid (stop it with kt_garbage_stop), *port its port; 0 on failure. */
KT_UNUSED static pid_t kt_garbage_start(int mode, int *port) {
    int fd = kt_listen_loopback(64, port);
    pid_t p;
    if (fd < 0) return 0;
    fflush(stdout);
    p = fork();
    if (p < 0) { close(fd); return 0; }
    if (p == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN); /* no zombies from the per-connection children */
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0) continue;
            if (fork() == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(fd);
                kt_garbage_serve(c, mode);
                _exit(0);
            }
            close(c);
        }
    }
    close(fd);
    setpgid(p, p);
    kt_track(p);
    return p;
}
KT_UNUSED static void kt_garbage_stop(pid_t p) {
    if (p <= 0) return;
    kill(-p, SIGKILL);
    kill(p, SIGKILL);
    waitpid(p, NULL, 0);
    kt_untrack(p);
}
#endif /* KCACHE_REDIS */
#endif
