/* kt_delay.h - a TCP proxy that adds a round-trip time, for tests and benches (include after
   kt_remote.h, with KCACHE_REDIS).

   kt_delay_start(&d, sock, rtt_us) listens on 127.0.0.1 (d.url: redis://127.0.0.1:port) and
   forwards each connection to the redis-server's unix socket `sock`, holding every chunk it reads
   rtt_us / 2 before passing it on, in both directions: a client then waits one RTT for each reply it
   waits on, as across a network (the connection's set-up is not delayed: a client connects at its
   first call and keeps the connection).

   It counts round trips: a burst of the client's bytes that comes after the server's bytes reached
   it (or the connection's first burst) is one; bytes that follow without a reply between (a
   pipeline, a second write before the reply) are the same round trip. d.stats->round_trips sums
   every connection's (a map shared with the proxy's processes; zero it between runs). */
#ifndef KT_DELAY_H
#define KT_DELAY_H

#include <netinet/tcp.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/un.h>

typedef struct kt_delay_stats {
    long round_trips; /* client bursts after a reply, every connection */
    long connections;
} kt_delay_stats;

typedef struct kt_delay {
    pid_t pid; /* the proxy's process group */
    int port;
    char url[64];
    kt_delay_stats *stats;
} kt_delay;

typedef struct kt_chunk {
    double due;
    size_t len, off;
    char *buf;
    struct kt_chunk *next;
} kt_chunk;

static double kt_delay_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One direction's chunks in order of arrival (so of due time: every chunk waits the same). */
typedef struct kt_chunks { kt_chunk *head, *tail; } kt_chunks;

static int kt_delay_push(kt_chunks *q, const char *b, size_t n, double due) {
    kt_chunk *c = (kt_chunk *)malloc(sizeof *c);
    if (!c || !(c->buf = (char *)malloc(n))) { free(c); return 0; }
    memcpy(c->buf, b, n);
    c->len = n;
    c->off = 0;
    c->due = due;
    c->next = NULL;
    if (q->tail) q->tail->next = c;
    else q->head = c;
    q->tail = c;
    return 1;
}

/* Writes the chunks that are due to fd: -1 on a broken peer, else how many chunks went out whole. */
static int kt_delay_flush(kt_chunks *q, int fd, double now) {
    int sent = 0;
    while (q->head && q->head->due <= now) {
        kt_chunk *c = q->head;
        ssize_t w = write(fd, c->buf + c->off, c->len - c->off);
        if (w < 0) return errno == EAGAIN || errno == EINTR ? sent : -1;
        c->off += (size_t)w;
        if (c->off < c->len) return sent;
        q->head = c->next;
        if (!q->head) q->tail = NULL;
        free(c->buf);
        free(c);
        sent++;
    }
    return sent;
}

static void kt_delay_serve(int cl, const char *sock, double half, kt_delay_stats *st) {
    struct sockaddr_un a;
    kt_chunks up = {NULL, NULL}, down = {NULL, NULL}; /* client -> server, server -> client */
    int sv = socket(AF_UNIX, SOCK_STREAM, 0), replied = 1, one = 1;
    char buf[65536];
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    if (strlen(sock) >= sizeof a.sun_path) return;
    memcpy(a.sun_path, sock, strlen(sock) + 1);
    if (sv < 0 || connect(sv, (struct sockaddr *)&a, sizeof a) != 0) return;
    setsockopt(cl, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(cl, F_SETFL, fcntl(cl, F_GETFL) | O_NONBLOCK);
    fcntl(sv, F_SETFL, fcntl(sv, F_GETFL) | O_NONBLOCK);
    __atomic_add_fetch(&st->connections, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        struct pollfd p[2];
        double now = kt_delay_now(), next = -1;
        int timeout, r;
        if ((r = kt_delay_flush(&up, sv, now)) < 0) return;
        if ((r = kt_delay_flush(&down, cl, now)) < 0) return;
        if (r > 0) replied = 1; /* the client has the server's bytes: its next burst is a new round trip */
        if (up.head) next = up.head->due;
        if (down.head && (next < 0 || down.head->due < next)) next = down.head->due;
        timeout = next < 0 ? -1 : (int)((next - now) * 1e3 + 0.999);
        if (timeout < 0 && next >= 0) timeout = 0;
        p[0].fd = cl;
        p[0].events = POLLIN | (down.head && down.head->due <= now ? POLLOUT : 0);
        p[1].fd = sv;
        p[1].events = POLLIN | (up.head && up.head->due <= now ? POLLOUT : 0);
        if (poll(p, 2, timeout) < 0 && errno != EINTR) return;
        now = kt_delay_now();
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(cl, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
            if (n > 0) {
                if (replied) __atomic_add_fetch(&st->round_trips, 1, __ATOMIC_SEQ_CST);
                replied = 0;
                if (!kt_delay_push(&up, buf, (size_t)n, now + half)) return;
            }
        }
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = read(sv, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
            if (n > 0 && !kt_delay_push(&down, buf, (size_t)n, now + half)) return;
        }
    }
}

/* Starts the proxy (a process group, one child per connection) in front of the unix socket sock,
   adding rtt_us of round-trip time. 1 on success; stop it with kt_delay_stop. */
KT_UNUSED static int kt_delay_start(kt_delay *d, const char *sock, unsigned rtt_us) {
    int fd;
    pid_t p;
    memset(d, 0, sizeof *d);
    d->stats = (kt_delay_stats *)mmap(NULL, sizeof *d->stats, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (d->stats == MAP_FAILED) {
        d->stats = NULL;
        return 0;
    }
    memset(d->stats, 0, sizeof *d->stats);
    if ((fd = kt_listen_loopback(256, &d->port)) < 0) return 0;
    snprintf(d->url, sizeof d->url, "redis://127.0.0.1:%d", d->port);
    fflush(stdout);
    fflush(stderr);
    p = fork();
    if (p < 0) { close(fd); return 0; }
    if (p == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGCHLD, SIG_IGN); /* no zombies from the per-connection children */
        signal(SIGPIPE, SIG_IGN);
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0) continue;
            if (fork() == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(fd);
                kt_delay_serve(c, sock, (double)rtt_us / 2e6, d->stats);
                _exit(0);
            }
            close(c);
        }
    }
    close(fd);
    setpgid(p, p);
    kt_track(p);
    d->pid = p;
    return 1;
}
KT_UNUSED static void kt_delay_stop(kt_delay *d) {
    if (d->pid > 0) {
        kill(-d->pid, SIGKILL);
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        kt_untrack(d->pid);
    }
    if (d->stats) munmap(d->stats, sizeof *d->stats);
    memset(d, 0, sizeof *d);
}
#endif
