/* kcache.h - a persistent cache for kernels compiled at run time.            (MIT license at the end)

   A program that compiles kernels at run time (OpenCL programs, shaders, LLVM objects) pays a
   compile for each of them on every start. kcache stores what was compiled under a key naming
   everything that went into it, so that the next start reads a file instead of compiling.
   README.md is the manual: the environment, the store on disk, security, sharing across machines,
   the tools, performance, the limits and the changes. This comment is what a vendor needs.

   BUILD
       In exactly ONE C or C++ file, before any other header there (kcache.h sets the feature
       macros it needs: _GNU_SOURCE on Linux, undone at its end, and 64-bit off_t):
           #define KCACHE_IMPLEMENTATION
           #include "kcache.h"
       and include "kcache.h" without the define everywhere else. Link -lpthread on POSIX. C99 or
       C++11 and later; -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wcast-qual clean at every -O
       level with gcc, clang, g++ and clang++. Linux and other POSIX systems; Windows (Vista or
       later; mingw-w64, MSVC) without the OpenCL part.

       kcache *kc;
       kcache_open(&kc, NULL);                         // defaults, then the environment
       kcache_key key;
       kcache_key_init(&key, "blur");                  // the unit: what an index groups
       kcache_key_str(&key, "source", src);
       kcache_key_str(&key, "options", "-O2");
       kcache_key_host_from(&key, kc);                 // OS/arch, CPU name, CPU features
       const void *bin; size_t n;
       if (kcache_get(kc, &key, &bin, &n) == KCACHE_OK) {
           load(bin, n);
           kcache_release(kc, bin);
       } else {
           compile(src, &bin, &n);
           kcache_put(kc, &key, bin, n);               // a failure here is only a lost cache entry
       }
       kcache_key_free(&key);
       kcache_close(kc);

       Every call that can fail returns a kcache_status (kcache_strerror: a sentence); a caching
       failure is never the caller's: on any error, compile and go on.

   COMPANIONS (beside this file; each opens with how to use it)
       kcache_redis.h  the Redis backend (hiredis, TLS, Cluster, Redis's claims): in the implementation
                       file, include it instead of kcache.h (it includes kcache.h, defining
                       KCACHE_REDIS first, so that KCACHE_REMOTE alone reaches it)
       kcache_vk.h     Vulkan pipelines: include it after kcache.h
       The 0.4 way still builds the same: defining KCACHE_REDIS / KCACHE_VULKAN where the
       implementation is compiled makes this file include the companion from its own directory
       (>>companions), with one #error naming it when it is missing.

   OPTIONS (define before including, in the implementation file)
       KCACHE_API          declaration prefix of every public function (default extern)
       KCACHE_STATIC       make every function static (two copies in one program)
       KCACHE_MALLOC, KCACHE_REALLOC, KCACHE_FREE    allocator (all three or none)
       KCACHE_ASSERT       assertion used for programming errors in debug builds (default assert)
       KCACHE_CHECKS       1: catch misuse (a payload released twice or by another kcache, a call on a
                           closed kcache, a freed key): one message through the log, then
                           KCACHE_ASSERT; default 1 unless NDEBUG (see the README's "Misuse")
       optional parts, each with its library:
       KCACHE_OPENCL       kcache_cl_build, kcache_cl_build_many, kcache_cl_key, -lOpenCL
                           kcache_cl_device_key, kcache_cl_build_program,
                           kcache_cl_update
       KCACHE_REDIS        the Redis backend of the remote tier: kcache_redis.h (hiredis
                           >= 0.14; POSIX)                                       -lhiredis
       KCACHE_ZSTD         zstd entries on the remote, and KCACHE_COMPRESS      -lzstd
       KCACHE_HMAC_OPENSSL HMAC-SHA-256 and GMAC for KCACHE_REMOTE_SECRET        -lcrypto
       KCACHE_TLS_OPENSSL  rediss:// (TLS to Redis), with kcache_redis.h          -lssl -lcrypto
       KCACHE_VULKAN       Vulkan pipelines: kcache_vk.h                        -lvulkan
       KCACHE_REDIS and KCACHE_VULKAN switch on a companion file beside this one (see COMPANIONS);
       this file alone includes no hiredis, TLS or Vulkan header.
       compile-out switches (the core alone, every switch: about 0.70x the code of the default
       build; a part compiled out ignores its kcache_config fields, and the debug log and
       kcache_explain say so when one is set; kcache_config keeps one layout whatever is defined):
       KCACHE_NO_REMOTE    no remote tier (KCACHE_REMOTE, remote_ops)
       KCACHE_NO_LAYERS    no read-only layers (KCACHE_LAYERS)
       KCACHE_NO_PUB       nothing published for kcache-top (no DIR/stats file)
       KCACHE_NO_EXPLAIN   no per-unit indexes: a miss is not explained field by field, and the
                           tools see no units of this program's (KCACHE_TRACE does nothing)
       KCACHE_NO_ENV       no KCACHE_* variable read (kcache_config_init = kcache_config_defaults;
                           the default directory still follows XDG_CACHE_HOME / HOME)
       KCACHE_NO_CPU_NAMES kcache_key_host names an x86 CPU by its CPUID vendor, family and model
                           ("intel-6-0x55"), not as LLVM does ("skylake-avx512"): no name tables.
                           Keys made so differ from a full build's (no shared entries)
       KCACHE_NO_TIDY      no store commands: kcache_evict_older_than, kcache_trim, kcache_remove_unit
                           and kcache_clear return KCACHE_EDISABLED (kcache-inspect's do the same)
       KCACHE_TEST_NO_OFD  tests only: compile the open-file-description locks out
       KCACHE_TEST_HASH_PATHS  tests and benches only: declares kcache_test_hash_path and
                           kcache_test_hash_path_for (each SIMD path of the hash, by name)
       KCACHE_TEST_PUB     tests and benches only: declares kcache_test_pub_switch and
                           kcache_test_pub_hit_mem (publishing off and on, one hit's share)
       KCACHE_TEST_CL      tests and benches only (with KCACHE_OPENCL): declares
                           kcache_test_cl_payload_ok (the check of a stored binary, alone)
       At run time, kcache_config's vendor hooks: log / log_user (every message), alloc_fn /
       free_fn / alloc_user (allocator callbacks), kcache_config_defaults (no environment).
       Version: KCACHE_VERSION_MAJOR / _MINOR / _PATCH, KCACHE_VERSION, kcache_version().

   THREADS AND ALLOCATIONS
       Every call on one kcache is thread-safe; a kcache_key is a plain value (build it in one
       thread, then share it read-only). kcache starts threads in three cases only: the renewer of
       a cluster build claim on a remote tier (every second, for the length of a build, then
       joined); the Redis backend's resolver of a server's host name (detached, one per shard at a
       time, so that the connect timeout bounds the resolution; it ends when the resolver answers);
       and kcache_get_or_build_many's threads - 1 builders (kcache_cl_build_many's too, through
       it; joined before it returns). It installs
       no signal, atexit or atfork handler and no constructor, writes nothing to stdout, and to
       stderr only debug lines asked for when no log callback is set. A forked child may use the
       kcache it inherited.
       No function takes more than 4 KiB of stack. What a kcache allocates, and what its calls
       need for a while (a store's too), goes through its allocator callbacks when set; keys the
       program builds (made before there is a kcache) and the field arrays inside any key, the
       process-wide registry (lock files shared by every handle of a store, with their build
       claims; see >>registry), a build function's buffer, Windows' wide-character paths, the
       remote tier and the OpenCL and Vulkan parts use KCACHE_MALLOC (README: Vendoring, Memory).

   CONTENTS (each part starts at a banner: search for its tag, e.g. ">>store")
       declarations
         >>status    results (kcache_status) and miss reasons
         >>hash      XXH3-128: kcache_hash and its streaming form
         >>config    kcache_config, the remote backend table (kcache_remote_ops), the backend
                     kit (kcache_remote_backend and its services), callbacks
         >>api       opening, keys, lookups: kcache_open ... kcache_get_or_build
         >>kit       services for companions and backends: key copies, a companion's state,
                     rejects, the clock
         >>opencl    kcache_cl_build (KCACHE_OPENCL)
         >>stats     kcache_stats, kcache_verify
         >>toolapi   reading a store: index logs, records, accounting, the stats file (tools)
       implementation (KCACHE_IMPLEMENTATION), in dependency order
         >>platform  threads, time, atomics, files: everything that differs between systems
         >>registry  the one process-wide state: lock files, dependency stamps, the CPU's SIMD
         >>bytes     the little-endian encoding of everything on disk
         >>hash      XXH3-128: scalar, SSE2, AVX2, AVX-512, NEON
         >>host      the host tuple: OS/arch, CPU name (KCACHE_NO_CPU_NAMES), CPU features
         >>key       canonical keys: sorted, type-tagged, length-prefixed fields
         >>lru       refcounted payloads and the in-memory LRU
         >>store     the persistent store: entries, accounting, use record, eviction, repair;
                     within it >>index, the per-unit index files (KCACHE_NO_EXPLAIN), and the
                     read-only layers' opening (KCACHE_NO_LAYERS)
         >>remote    the remote tier: backends, shards, breakers, signed values, the backend
                     kit's services (KCACHE_NO_REMOTE)
         >>pub       publishing counters and events for kcache-top (KCACHE_NO_PUB)
         the public calls, one part each:
         >>handle    struct kcache: what an open cache holds, its log
         >>misuse    misuse caught in debug builds (KCACHE_CHECKS)
         >>configuration  kcache_config's defaults, the environment (KCACHE_NO_ENV)
         >>open      kcache_open, kcache_close, a forked child's handle, the memory tier
         >>reasons   a miss's reason: the field, the dependency, the closest overload
         >>tiers     below the store: read-only layers, then the remote
         >>lookup    get, put, remove, the stats, kcache_verify
         >>explain   kcache_explain (KCACHE_NO_EXPLAIN)
         >>upkeep    tidying a store: evict, trim, remove a unit, clear (KCACHE_NO_TIDY)
         >>flight    single flight: kcache_get_or_build
         >>batch     the batch call: kcache_get_or_build_many
         >>toolapi   reading a store for tools: the decoders above behind public names
         >>kit       the services for companions and backends
         >>opencl    kcache_cl_build's implementation (KCACHE_OPENCL)
       companions: files beside this one, written on its API (each opens with how to use it)
         kcache_redis.h  the Redis backend of >>remote: hiredis, TLS, Cluster (KCACHE_REDIS)
         kcache_vk.h     Vulkan pipelines: kcache_vk_pipeline, kcache_vk_key (KCACHE_VULKAN)
         >>companions    where this file includes them when their switch is defined (the 0.4 way)

   REVISIONS (README: Changes)
       0.6.1 the cold start's round trips: put_release sent without waiting for its answers,
            the server's clock asked with a batch's first look, no identity for a lone shard,
            the batch's read-backs once nothing is left to build, in one exchange; waiters told
            over TLS and on a Redis Cluster (sharded pub/sub)
       0.6  Redis Cluster failover that heals and a breaker per node (KCACHE_ENODE,
            kcache_remote_node_call, KCACHE_STATS_NODES); KCACHE_REMOTE_TLS_NAME
            (kcache_config.remote_tls_name, kcache_remote_params.tls_name); build claims carry
            the server's issue time inside their signature (kcache_remote_ops.claim_reissue and
            server_time_ns); claims and read-backs wait through failures (no rebuild storms); the
            batch's read-back has one deadline per exchange; fewer round trips
            (kcache_remote_ops.put_release, claim_take_many). Public structs grew at their ends
       0.5  the Redis backend and the Vulkan part moved to companion files, kcache_redis.h and
            kcache_vk.h, written on public names (>>kit, the backend kit:
            kcache_config.remote_backend); the 0.4 switches include them. A public read-only API
            for tools (>>toolapi: stores, records, index logs, accounting, the stats file); the
            per-LLVM CPU names left for kcache-inspect. kcache_origin in kcache_job;
            get-or-build in two steps (kcache_get_or_claim, KCACHE_CLAIMED); KCACHE_STATS_DIR;
            kcache_cl_build_program, kcache_cl_device_key, kcache_cl_update. Public structs grew
            (kcache_config, kcache_job, kcache_stats): fields appended at their ends
       0.4  kcache_remote_ops.get_many; kcache_cl_build_many; remote values read (and their MAC
            computed) as they arrive; the x86 feature names of LLVM 18-22 in kcache_key_host
       0.3  compile-out switches (KCACHE_NO_*); kcache_config's fields grouped (names unchanged);
            clean at every -O level in C++; no libgcc constructor
       0.2  owner-only stores, CLOCK eviction, remote tier, read-only layers, vendoring
       0.1  keys, XXH3-128, memory LRU, persistent store, per-unit indexes, single flight
*/
#ifndef KCACHE_H
#define KCACHE_H

/* The implementation needs POSIX 2008 and uses a few Linux extensions where they exist (openat2,
   open-file-description locks, MADV_WIPEONFORK, dladdr). Feature macros act only before the first
   system header: kcache.h defines _GNU_SOURCE when it comes first in the implementation file. When
   another header came first, what it left visible decides: POSIX 2008 (any -std=gnu*, C++, or
   -D_POSIX_C_SOURCE=200809L) is enough, and the extensions are used where they are visible; a strict
   -std=c99/c11 leaves POSIX hidden and the build stops with one message saying what to do. */
#if defined(KCACHE_IMPLEMENTATION) && (defined(__linux__) || defined(__GNU__) || defined(__CYGWIN__)) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#define KCACHE__OWN_GNU_SOURCE /* undone at the end of the implementation: the rest of the file chose none */
#endif
/* 64-bit file offsets on 32-bit systems too: build claims sit at byte 2^40 of the lock file, and
   stat fails on large inode numbers (XFS, btrfs, NFS) without it. */
#if defined(KCACHE_IMPLEMENTATION) && !defined(_FILE_OFFSET_BITS)
#define _FILE_OFFSET_BITS 64
#endif

#include <stddef.h>
#include <stdint.h>

/* This header's version: the macros for the preprocessor, kcache_version() for the library a
   program actually runs with (the same unless two copies differ). */
#define KCACHE_VERSION_MAJOR 0
#define KCACHE_VERSION_MINOR 6
#define KCACHE_VERSION_PATCH 1
#define KCACHE_VERSION "0.6.1"

#ifndef KCACHE_API
#ifdef KCACHE_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define KCACHE_API static __attribute__((unused)) /* a program uses only some of the calls */
#else
#define KCACHE_API static
#endif
#else
#define KCACHE_API extern
#endif
#endif

/* A key's layout is the same in every file of a program: the number of fields it holds without
   allocating is fixed (it was an option, which let two files disagree on sizeof(kcache_key)). */
#ifdef KCACHE_KEY_INLINE
#error "kcache: KCACHE_KEY_INLINE is no longer an option (a kcache_key must have one layout in every file); remove its definition"
#endif
#define KCACHE_KEY_INLINE 16

#ifdef __cplusplus
extern "C" {
#endif

/* ============================================================================================== */
/* >>status  results and miss reasons                                                             */
/* ============================================================================================== */

/* Every call that can fail returns one of these. KCACHE_MISS is not an error: the key is not stored
   (or caching is off); compile and, if you like, put. */
#define KCACHE_STATUSES(X)                                                                      \
    X(OK, "ok")                                                                                 \
    X(MISS, "not in the cache")                                                                 \
    X(EINVAL, "invalid argument")                                                               \
    X(ENOMEM, "out of memory")                                                                  \
    X(EEXIST, "a field of that name is already in the key")                                    \
    X(ETOOBIG, "too large (field, key or entry over its limit)")                                \
    X(EIO, "input/output error in the store")                                                   \
    X(ENOENT, "file not found")                                                                 \
    X(EDISABLED, "caching is off")                                                              \
    X(ECORRUPT, "corrupt data (checksum, magic or length wrong)")                               \
    X(EUNSAFE, "directory refused: owned by another user, writable by others, or a symlink")    \
    X(ELOCK, "timed out waiting for the store lock")                                            \
    X(EBUILD, "the build function failed")                                                      \
    X(ENOSPC, "no space left in the store's filesystem")                                        \
    X(EROFS, "the store is read-only or not writable")                                          \
    X(ETIMEOUT, "the remote tier did not answer in time")                                     \
    X(CLAIMED, "not in the cache: this caller holds the build claim (build, then kcache_put_claimed or kcache_drop_claim)") \
    X(ENODE, "one node of a remote shard is down (its keys are skipped a while; the shard's other nodes serve)")

typedef enum kcache_status {
#define KCACHE__STATUS_ENUM(name, text) KCACHE_##name,
    KCACHE_STATUSES(KCACHE__STATUS_ENUM)
#undef KCACHE__STATUS_ENUM
    KCACHE_STATUS_COUNT
} kcache_status;

/* A sentence for a status; never NULL (an unknown value gives "unknown status"). */
KCACHE_API const char *kcache_strerror(kcache_status s);

/* Why a lookup missed; every miss has exactly one. The same words appear in kcache_explain,
   KCACHE_DEBUG lines, the stats and both tools. */
#define KCACHE_REASONS(X)                                                                       \
    X(HIT, "hit", "hit")                                                                        \
    X(COLD, "cold", "never stored")                                                             \
    X(FIELD, "field", "a field differs")                             \
    X(STAMP, "stamp", "a dependency changed")                                                   \
    X(EVICTED, "evicted", "evicted by the size limit")                                          \
    X(REJECTED, "rejected", "rejected: a corrupt entry or a binary the driver refused")         \
    X(OFF, "off", "caching off")                                                                \
    X(UNWRITABLE, "unwritable", "the store is unusable")

typedef enum kcache_reason {
#define KCACHE__REASON_ENUM(name, word, text) KCACHE_REASON_##name,
    KCACHE_REASONS(KCACHE__REASON_ENUM)
#undef KCACHE__REASON_ENUM
    KCACHE_REASON_COUNT
} kcache_reason;

/* The one-word name of a reason ("cold", "field", ...); never NULL. */
KCACHE_API const char *kcache_reason_name(kcache_reason r);

/* ============================================================================================== */
/* >>hash  XXH3-128                                                                               */
/* ============================================================================================== */

/* ---- hashing: XXH3-128 (seed 0, default secret), bit-exact with xxHash 0.8 ------------------
 *
 * kcache digests keys and checksums payloads with XXH3-128. The functions below are pure: they
 * touch no global state, so any of them may be called from any thread at any time; a
 * kcache_hash_state belongs to whoever holds it (no locking inside). */

/* A 128-bit digest: `lo` is XXH128_hash_t's low64, `hi` its high64. */
typedef struct kcache_hash128 { uint64_t lo, hi; } kcache_hash128;

/* Streaming state. A complete type so it can live on the stack or inside another struct; it owns
 * no memory (nothing to free) and may be copied with memcpy/assignment to fork a digest. The
 * fields are private: use only the kcache_hash_* functions on it. */
typedef struct kcache_hash_state {
    uint64_t acc_[8];             /* long-input accumulators */
    uint64_t total_len_;          /* bytes given to update so far */
    unsigned char buf_[256];      /* input not yet consumed (all of it while total_len_ <= 256) */
    uint32_t buf_len_;            /* bytes used in buf_ */
    uint32_t stripe_pos_;         /* 64-byte stripes consumed in the current 1 KiB block */
    int32_t path_;                /* implementation chosen at init (scalar, SSE2, AVX2, AVX-512, NEON) */
    uint32_t reserved_;
} kcache_hash_state;

/* XXH3-128 of `len` bytes at `data` (seed 0); the same value as XXH3_128bits(data, len).
 * data may be NULL when len is 0. Thread-safe; picks the fastest implementation the CPU runs
 * (AVX-512 or AVX2 when available on x86-64) at every call, without any cached global state. */
KCACHE_API kcache_hash128 kcache_hash(const void *data, size_t len);

/* Writes the 32 lower-case hex digits `xxh128sum` prints for this digest (hi first, then lo,
 * most significant digit first) and a terminating NUL: out must have room for 33 chars.
 * Thread-safe. */
KCACHE_API void kcache_hash_hex(kcache_hash128 h, char out[33]);

/* Starts a streaming digest in *st (no allocation; any previous content is overwritten).
 * The state is then fed with kcache_hash_update and read with kcache_hash_final.
 * Thread-safe as long as each state is used by one thread at a time. */
KCACHE_API void kcache_hash_init(kcache_hash_state *st);

/* Appends `len` bytes at `data` to the digest in *st. data may be NULL when len is 0.
 * Splitting the input into updates of any sizes gives the same digest as kcache_hash over the
 * concatenation. Not synchronised: one thread at a time per state. */
KCACHE_API void kcache_hash_update(kcache_hash_state *st, const void *data, size_t len);

/* The XXH3-128 digest of everything given to *st so far. Does not modify *st: it may be called
 * again, and updates may continue afterwards. Safe to call concurrently with other finals on
 * the same state, not with an update of it. */
KCACHE_API kcache_hash128 kcache_hash_final(const kcache_hash_state *st);

#ifdef KCACHE_TEST_HASH_PATHS
/* Tests and benches only (bench/bench_hash.c times each path); not a stable interface.
 * kcache_test_hash_path: the one-shot hash forced onto one implementation path, by name
 * ("scalar", "sse2", "avx2", "avx512", "neon"), or NULL when this build or CPU lacks that path.
 * Inputs of up to 240 bytes take the short (scalar) algorithms on every path.
 * kcache_test_hash_path_for: the path kcache_hash takes for len bytes on this CPU ("short" for
 * inputs of up to 240 bytes). */
typedef kcache_hash128 (*kcache_test_hash_fn)(const void *data, size_t len);
KCACHE_API kcache_test_hash_fn kcache_test_hash_path(const char *name);
KCACHE_API const char *kcache_test_hash_path_for(size_t len);
#endif

/* ============================================================================================== */
/* >>config                                                                                       */
/* ============================================================================================== */

enum { KCACHE_WRITE_THROUGH = 0, KCACHE_WRITE_EVICT = 1 };
enum { KCACHE_STAMP_HYBRID = 0, KCACHE_STAMP_MTIME = 1, KCACHE_STAMP_CONTENT = 2 };

/* Line sink for every message kcache writes (debug lines, complaints about the environment or the
   store); NULL means stderr. Called with no kcache lock held. With it set, kcache never writes to
   stderr itself. */
typedef void (*kcache_log_fn)(void *user, const char *line);

/* ---- the remote tier's backend: a table of callbacks ------------------------------------------
   After a local miss kcache asks the remote tier, and it sends every put there too. Redis is the
   built-in backend (the companion kcache_redis.h, KCACHE_REMOTE=redis://...); any other store (HTTP, S3, memcached,
   a database) is a table of these callbacks in kcache_config.remote_ops, written by a third party
   against this contract alone. tests/test_backend.c has a complete one (values in memory).

   What the core does for every backend, so that a backend does none of it:
   - placement: a key's shard is chosen by rendezvous hashing over the shards (one, or one per URL
     with kcache_config.remote_open_shard), so adding a shard to N moves about 1/(N+1) of the keys;
   - a circuit breaker per shard: a failed call opens it and the shard is skipped (a local miss,
     counted as skipped) for kcache_config.remote_backoff_ms, doubling up to 32x while the one call
     let through after it keeps failing; the other shards keep serving;
   - the value's envelope: the entry as stored on disk (its whole key, its checksum), compressed with
     zstd (KCACHE_ZSTD), signed with KCACHE_REMOTE_SECRET (GMAC or HMAC-SHA-256, KCACHE_HMAC_OPENSSL);
     every value read back is checked (envelope, signature, checksum, key) before it is used, and one
     that fails is a reject: counted and deleted through remove (not in KCACHE_REMOTE_MODE=ro);
   - what is sent: nothing over kcache_config.remote_max_entry; nothing written (put, remove, claim)
     in KCACHE_REMOTE_MODE=ro;
   - the build claims' logic (kcache_get_or_build and the batch): the token, signed with the secret;
     a thread that renews a held claim every third of its life while the build runs; waiting within
     KCACHE_BUILD_WAIT and looking again after each wait; release or abandon on every path; waiting
     through failures: a claim call or a read-back that fails while the shard answered within two
     claim lifetimes is retried after a pause (claim calls then pass the shard's open breaker, and
     a holder's put is sent once more past it), so that a lost packet never sends a waiter off to
     build; a shard silent for longer is down and everyone builds;
   - the counters: kcache_stats, kcache_get_remote_shards, the stats file kcache-top reads.
   What the backend does: keeps opaque values under names, and (optionally) claims that end by
   themselves.

   The contract of every callback:
   - user: kcache_config.remote_user, or with remote_open_shard the pointer it returned for the
     shard the call is for.
   - name: an entry's name, its key's digest as 32 lower-case hex digits, NUL-terminated; valid
     during the call.
   - Threads: any callback may be called from several threads at once (the caller's threads, the
     workers of kcache_get_or_build_many, the claim renewer), for one shard or several; kcache holds
     none of its locks during a call. A callback must not call back into the kcache calling it.
   - Deadlines: every call returns in bounded time, however the server behaves: no longer than
     kcache_config.remote_timeout_ms while nothing arrives (connecting and name resolution included),
     a transfer that keeps making progress may take longer. kcache cannot interrupt a callback: a
     call that hangs holds its caller (and a shard's breaker cannot open before it returns).
   - Results: KCACHE_OK, KCACHE_MISS (and a claim's KCACHE_EEXIST...) as each callback says;
     KCACHE_ENOSPC or KCACHE_EROFS (a full or read-only store) skip the shard's writes for a back-off
     period while lookups go on; KCACHE_ENODE (a backend of several servers per shard, as a Redis
     Cluster: the one server this call needed is down, and the backend keeps a breaker of its own
     per server) is counted as a failed call but leaves the shard's breaker as it was, so that the
     shard's other servers keep serving; any other status is a failure and opens the shard's breaker:
     KCACHE_ETIMEOUT for a timeout (counted apart), KCACHE_EIO for a refused, broken or garbled
     exchange. A backend never needs to judge a value's bytes: kcache does.
   - Memory: what kcache passes (names, data, tokens, arrays) is kcache's and valid during the call
     only; a backend copies what it keeps. What a get returns stays the backend's until kcache
     passes its hold to release, which it does before the lookup returns, on the same thread. */
enum { KCACHE_CLAIM_TAKE = 1, KCACHE_CLAIM_RENEW, KCACHE_CLAIM_RELEASE, KCACHE_CLAIM_ABANDON, KCACHE_CLAIM_WAIT };
typedef struct kcache_remote_ops {
    /* Required. KCACHE_OK with the value in *data, *size (readable until release(user, *hold)), or
       KCACHE_MISS when there is none. */
    kcache_status (*get)(void *user, const char *name, const void **data, size_t *size, void **hold);
    /* Optional (NULL: nothing to free). Frees what a get or get_many handed out with hold. */
    void (*release)(void *user, void *hold);
    /* Required. Stores the value (size bytes, opaque) under name, replacing any: KCACHE_OK once a
       get would return it, or a failure (ENOSPC, EROFS: see above). A backend may drop values at
       any time (an LRU, an expiry): a later get then misses. */
    kcache_status (*put)(void *user, const char *name, const void *data, size_t size);
    /* Optional (NULL: kcache_remove leaves the remote copy, and a rejected value stays until the
       next put replaces it). Deletes name's value: KCACHE_OK, or KCACHE_MISS when there was none. */
    kcache_status (*remove)(void *user, const char *name);
    /* Optional (NULL: no cluster-wide claim; every machine that misses a key builds it). The build
       claim of kcache_get_or_build on name: at most one token holds it at a time, and it ends by
       itself ms after it was taken or last renewed (its builder may die). token: the holder's id,
       printable, under 200 bytes (host:pid:sequence:time, then with a secret ".<64 hex digits>",
       an HMAC a Redis-based fleet checks; since 0.6 time is "t" and the issue time in hex
       milliseconds since the Unix epoch, by server_time_ns below); compare it as bytes. op is one of:
         KCACHE_CLAIM_TAKE     take it for ms unless another holds it: KCACHE_OK (taken) or
                               KCACHE_EEXIST (held)
         KCACHE_CLAIM_RENEW    token's claim lasts ms from now: KCACHE_OK, or KCACHE_MISS (not
                               token's any more: it expired, another took it)
         KCACHE_CLAIM_RELEASE  token's claim ends and its waiters wake: the value was put (or
                               its put failed in a way that may have stored it: a timeout)
         KCACHE_CLAIM_ABANDON  the same, but nothing was put: the waiters build on their own
         KCACHE_CLAIM_WAIT     block until the claim ends (released, abandoned, expired or gone),
                               ms at most (token: the waiter's own): KCACHE_OK (released, or gone:
                               kcache looks for the value), KCACHE_MISS (abandoned: build),
                               KCACHE_EEXIST (still held after ms: kcache waits again within
                               KCACHE_BUILD_WAIT), and two answers that are no failure: KCACHE_ENOENT
                               (no claim at all when looked at: kcache looks for the value, and after
                               a few such rounds without one builds), KCACHE_ECORRUPT (a claim not
                               worth waiting for, e.g. one that lives longer than ms: built here)
       RELEASE and ABANDON of a claim that is not token's any more do nothing (and may return
       KCACHE_OK). Never called in KCACHE_REMOTE_MODE=ro; TAKE is a write, not called while the
       shard refuses writes. RENEW comes from a thread of kcache's own (the renewer). */
    kcache_status (*claim)(void *user, const char *name, int op, const char *token, uint32_t ms);
    /* Optional (NULL: one get per name): n names (at most 64) looked up in one exchange, for
       kcache_get_or_build_many's read-back of what other machines built. KCACHE_OK with st[i] as
       get would return for names[i] (KCACHE_OK with data[i], size[i] until release(user, hold[i])
       when hold[i] is not NULL; KCACHE_MISS), or the exchange's failure, with nothing held. */
    kcache_status (*get_many)(void *user, const char *const *names, size_t n, const void **data, size_t *size, void **hold,
                              kcache_status *st);
    /* Optional (0.6; NULL: a held claim is renewed with KCACHE_CLAIM_RENEW under the token it was
       taken with). A held claim renewed under a new token, in one step: while token holds name's
       claim, new_token holds it from now on, for ms: KCACHE_OK, or KCACHE_MISS (not token's any
       more). kcache calls it in place of RENEW, so that the token waiters see was issued at the
       last renewal: its issue time is inside its signature, and a waiter honours a token only for
       a few claim lifetimes after it (kcache_remote_claim_honoured), which makes a token copied
       and planted again worthless soon. A failed call (not MISS) may or may not have taken
       effect: kcache renews next time from whichever of the two the server holds. */
    kcache_status (*claim_reissue)(void *user, const char *name, const char *token, const char *new_token, uint32_t ms);
    /* Optional (0.6; NULL, or 0 returned: the client's own clock). The clock of the server that
       keeps name's claims: nanoseconds since the Unix epoch, now, as that server counts them;
       learned once in a while and kept as an offset (Redis: TIME, about once a minute), not asked
       at every call. A claim token's issue time comes from it, and so does the age a waiter judges
       a token by, so that clients' clocks do not matter; without it, tokens carry the issuing
       client's clock and a waiter compares with its own (clients' clocks then must agree within a
       claim lifetime or so, else a waiter builds too: a duplicate build, never a failure). */
    int64_t (*server_time_ns)(void *user, const char *name);
    /* Optional (0.6; NULL: put, then claim with KCACHE_CLAIM_RELEASE). A claim holder's result and
       its claim's end in one exchange (one round trip: issue 35): stores the value as put does,
       then releases token's claim as KCACHE_CLAIM_RELEASE does, the release sent whatever the
       put's fate (a waiter that then finds no value takes the claim and builds). Returns the put's
       status as put would; a failed exchange may have done either or both: kcache then puts again
       where put would be retried, and releases again (a second release does nothing). */
    kcache_status (*put_release)(void *user, const char *name, const void *data, size_t size, const char *token, uint32_t ms);
    /* Optional (0.6; NULL: KCACHE_CLAIM_TAKE one name at a time, then a look at the value). Goes
       through n names (at most 64) in order, in one exchange, taking the claim of each (as
       KCACHE_CLAIM_TAKE with tokens[i], for ms) that nobody holds and whose value is missing (one
       atomic step per name), until want (>= 1) are taken: st[i] KCACHE_OK (taken, and names[i] had
       no value when it was: kcache builds without looking again), KCACHE_EEXIST (held by another, or
       the value is there: kcache looks later), KCACHE_MISS (not tried: want were taken before it),
       or that name's failure. kcache_get_or_build_many so takes, for each builder, the first key
       nobody builds among the next ones in one round trip instead of one claim after another (issue
       35). Returns KCACHE_OK, or the exchange's failure (any of them may have been taken: a claim
       kcache does not know it holds expires by itself). */
    kcache_status (*claim_take_many)(void *user, const char *const *names, const char *const *tokens, size_t n, size_t want, uint32_t ms,
                                     kcache_status *st);
} kcache_remote_ops;

enum { KCACHE_REMOTE_RW = 0, KCACHE_REMOTE_RO = 1 };
enum { KCACHE_REMOTE_MAC_GMAC = 0, KCACHE_REMOTE_MAC_HMAC = 1 };

/* ---- the backend kit: a backend of several servers, built on the core's services ---------------
   kcache_redis.h is such a backend; any other may be one. kcache_config.remote_backend points at a
   kcache_remote_backend; kcache_open then opens one shard per URL of kcache_config.remote
   (space-separated, at most 64), each with a breaker of its own, through open_shard, which is
   handed the remote tier (a kcache_remote) for the services below: the tier's parameters, whether
   another client's build claim is to be honoured, and a value's MAC computed while it arrives. The
   tier outlives every shard (valid until close_shard). Everything kcache_remote_ops says holds for
   ops; identity and premac are called on the same terms (any thread, bounded time, no kcache
   call). Compiled out with KCACHE_NO_REMOTE (the calls then do nothing, as said per call). */
typedef struct kcache_remote kcache_remote;
typedef struct kcache_remote_backend {
    const kcache_remote_ops *ops; /* required, with get and put */
    /* Required. Opens the shard for url (one word of kcache_config.remote, credentials included):
       returns the pointer the shard's callbacks get as their user, or NULL with why (cap bytes,
       said as it is: name the URL without its credentials) to refuse the remote. shown (shown_cap
       bytes, empty on entry): the URL as messages, kcache_get_remote_shards and kcache-top show
       it, without credentials; left empty, url itself. user: kcache_config.remote_user. */
    void *(*open_shard)(void *user, const kcache_remote *remote, const char *url, char *shown, size_t shown_cap, char *why,
                        size_t cap);
    void (*close_shard)(void *shard); /* frees what open_shard returned; NULL: nothing */
    /* Optional. The server's identity however its URL spells it (Redis: an id kept on the server),
       asked once before the first call (ro: KCACHE_REMOTE_MODE=ro, nothing may be written): 1 with
       it in out (cap bytes), 0 when it cannot be had now. Shards of one identity are one shard for
       placement (kcache_remote_shard.same) when, with claims and writes allowed, a claim taken on
       one for a moment is held on the other (an identity can be copied). NULL: the URL is the
       identity. */
    int (*identity)(void *shard, int ro, char *out, size_t cap);
    /* Optional. What the shard's get computed of a value's MAC while it arrived, from the hold that
       get returned: KCACHE_REMOTE_MAC_NONCE bytes of nonce then KCACHE_REMOTE_MAC_TAG of tag
       (kcache_remote_mac_end) over the very bytes that get returned, valid until the hold's
       release; NULL when none. kcache uses it in place of computing the MAC when the value ends
       with that nonce (a value replaced between a backend's reads then costs the full check). */
    const unsigned char *(*premac)(void *shard, const void *hold);
} kcache_remote_backend;

/* The remote tier's settings, as a backend needs them (defaults resolved). */
typedef struct kcache_remote_params {
    uint32_t timeout_ms;  /* one operation's bound (remote_timeout_ms)                            */
    uint32_t connect_ms;  /* a connection's (name resolution included): at most 100, timeout_ms   */
    uint32_t claim_ms;    /* a build claim's life (remote_claim_ms)                              */
    uint32_t ttl_s;       /* remote_ttl_s: a value expires this long after its put; 0: never      */
    uint64_t max_entry;   /* the largest value this client sends (remote_max_entry)              */
    int ro;               /* KCACHE_REMOTE_MODE=ro: write nothing                                 */
    int is_signed;        /* a secret is set: values and claims are signed (remote_secret)         */
    const char *ca, *cert, *key; /* remote_ca, remote_cert, remote_key (TLS files); NULL: none     */
    const char *prefix;   /* remote_prefix (checked: printable, no space, '{' or '}'); NULL: none */
    /* (0.6, appended) */
    const char *tls_name; /* remote_tls_name: the name every TLS server's certificate must hold; NULL:
                             the host it is reached by, or for a cluster's nodes that announce an IP,
                             the listed node's host name */
} kcache_remote_params;
/* Fills out with r's settings; the strings are r's copies, valid as long as r. */
KCACHE_API void kcache_remote_get_params(const kcache_remote *r, kcache_remote_params *out);

/* Whether another client's build claim on name (an entry's name; token: the claim's value, len
   bytes; left_ms: what remains of its life, -1 when it has no expiry) is one to wait for: with a
   secret only a claim signed with it, for this name; without one any claim; either way one that
   lives no longer than this client's claims (claim_ms). A claim planted by a client without the
   secret, or for longer than a builder's, then costs its waiters nothing: they build. With a
   secret, also only a token issued at most 3 claim lifetimes ago by the clock of the server
   holding name's claims (kcache_remote_ops.server_time_ns of name's shard; the client's clock
   without one), or issued as far ahead: a builder re-issues its token at every renewal
   (claim_reissue), so that a token read once and planted again stops being honoured within
   3 claim lifetimes of its issue. A token of 0.4 (no issue time it signs) is honoured for 10
   claim lifetimes after this process first judged it, then no more. 1 or 0. */
KCACHE_API int kcache_remote_claim_honoured(const kcache_remote *r, const char *name, const char *token, size_t len, long long left_ms);

/* A signed value's MAC computed while the value arrives, in the time the transfer leaves free
   (a 1 MiB hit is then checked when its last byte lands). A value signed the default way
   (KCACHE_REMOTE_MAC=gmac) ends with a nonce and a tag; a backend reads that tail first (Redis:
   GETRANGE name -28 -1 in the same write as the GET), begins with the value's first
   KCACHE_REMOTE_VALUE_HEAD bytes, its length and the tail's nonce, adds the value's bytes in order
   as they arrive up to len - KCACHE_REMOTE_MAC_NONCE - KCACHE_REMOTE_MAC_TAG (the tail is not
   covered), and ends: the nonce and the tag it gives are what premac returns. */
#define KCACHE_REMOTE_VALUE_HEAD 16
#define KCACHE_REMOTE_MAC_NONCE 12
#define KCACHE_REMOTE_MAC_TAG 16
typedef struct kcache_remote_mac kcache_remote_mac;
/* NULL when there is nothing to compute (r has no secret, head is not a GMAC-signed value's of len
   bytes, kcache was built without KCACHE_HMAC_OPENSSL, no memory): kcache then checks the whole
   value after it arrived, as for any backend. */
KCACHE_API kcache_remote_mac *kcache_remote_mac_begin(const kcache_remote *r, const void *head, uint64_t len,
                                                      const unsigned char nonce[KCACHE_REMOTE_MAC_NONCE]);
/* The value's next n bytes: 1, or 0 on a failure (end it then: it gives nothing). */
KCACHE_API int kcache_remote_mac_add(kcache_remote_mac *m, const void *p, size_t n);
/* Ends m and frees it (NULL: nothing): 1 with the tag in out, else 0. */
KCACHE_API int kcache_remote_mac_end(kcache_remote_mac *m, unsigned char out[KCACHE_REMOTE_MAC_TAG]);

/* For a backend of several servers per shard (a Redis Cluster's nodes), each with a breaker of its
   own: publishes one call to server `node` (as messages show it, e.g. "10.0.0.7:6379"; no
   credentials) of the shard shown as `shard` (the URL open_shard showed) in the stats file's node
   table (KCACHE_STATS_NODES: kcache-top's node rows, the `node` label of its metrics). result: the
   call's status (KCACHE_OK, KCACHE_MISS, KCACHE_EEXIST: answered; KCACHE_ETIMEOUT: a timeout;
   KCACHE_EDISABLED: not made, the node's breaker was open; anything else: an error); open: whether
   the node's breaker is open after it. Does nothing when the kcache publishes no stats file, or
   its table is full (24 rows, shards and nodes together). Any thread, no lock held across it. */
KCACHE_API void kcache_remote_node_call(const kcache_remote *r, const char *shard, const char *node, kcache_status result, int open);

/* Allocator callbacks (both or neither): what a kcache allocates for itself goes through them, with
   alloc_user (see kcache_config). alloc_fn returns memory aligned for any type, or NULL. */
typedef void *(*kcache_alloc_fn)(void *user, size_t size);
typedef void (*kcache_free_fn)(void *user, void *ptr);

typedef struct kcache_config {
    /* ---- the core: the store, the memory cache, what it says (all a vendor needs) ---- */
    const char *dir;          /* persistent store; NULL: the default location (README: Environment) */
    uint64_t max_size;        /* store limit in bytes; 0: no limit                                */
    uint32_t mem_entries;     /* memory LRU capacity in entries (at least 1)                      */
    uint64_t mem_size;        /* memory LRU capacity in bytes (each entry's payload, key and
                                 bookkeeping); 0: no byte limit                                     */
    int enable;               /* 0: every get misses, every put is dropped                        */
    int persistent;           /* 0: memory only                                                   */
    int fsync;                /* 1: fsync each entry before renaming it into place                */
    int write_policy;         /* KCACHE_WRITE_THROUGH or KCACHE_WRITE_EVICT                       */
    int stamp;                /* KCACHE_STAMP_HYBRID, _MTIME or _CONTENT                          */
    uint32_t build_wait_ms;   /* longest wait for another process's build of the same key         */
    uint32_t lock_timeout_ms; /* longest wait for the store lock before giving up on an update    */
    int compress;             /* 1: zstd for the local store's entries too (KCACHE_COMPRESS; KCACHE_ZSTD) */
    const char *shared_group; /* a group whose members share the store (KCACHE_SHARED_GROUP); NULL: the
                                 store is the caller's alone                                        */
    int debug;                /* 1: a line per hit, miss, put, eviction and reject                */
    int trace;                /* 1: keep every key's fields so misses can be explained later
                                 (ignored with KCACHE_NO_EXPLAIN)                                   */
    int publish;              /* 1: counters and events go to DIR/stats for kcache-top (KCACHE_STATS;
                                 ignored with KCACHE_NO_PUB)                                        */
    /* ---- the remote tier (README: Sharing across machines; kcache_remote_ops). Ignored, and said
       so in the log and by kcache_explain, with KCACHE_NO_REMOTE ---- */
    const char *remote;       /* KCACHE_REMOTE: URLs, space-separated shards; NULL: none. With
                                 remote_ops: only the name kcache_explain and the log give it    */
    int remote_mode;          /* KCACHE_REMOTE_RW or KCACHE_REMOTE_RO (KCACHE_REMOTE_MODE)        */
    uint32_t remote_timeout_ms; /* bound on one remote operation; 0: 500 (KCACHE_REMOTE_TIMEOUT)  */
    const char *remote_secret;  /* signs remote entries (remote_mac) and build claims (HMAC-SHA-256);
                                   NULL: unsigned; "": refused (no remote)                       */
    uint64_t remote_max_entry;  /* larger entries stay local; 0: 4 MiB (KCACHE_REMOTE_MAX_ENTRY)  */
    const kcache_remote_ops *remote_ops; /* a backend of your own; NULL: Redis at `remote`       */
    void *remote_user;          /* passed to every remote_ops callback (see remote_open_shard)   */
    /* Optional, with remote_ops: a backend of several servers, one shard per URL of `remote`
       (space-separated, at most 64), each with a breaker of its own. Called for each URL at
       kcache_open (and again in a forked child's own kcache), with remote_user: returns the pointer
       that shard's callbacks get as their user, or NULL (why: a reason, cap bytes) to refuse the
       remote, which kcache then does without. The URL is the backend's to parse, and kcache shows
       it as given (messages, kcache_get_remote_shards, kcache-top): credentials go in remote_user,
       not in it. NULL: the backend is one shard, `remote` only names it. */
    void *(*remote_open_shard)(void *remote_user, const char *url, char *why, size_t cap);
    void (*remote_close_shard)(void *shard); /* frees what remote_open_shard returned (at
                                   kcache_close, or when a later shard is refused); NULL: nothing */
    const kcache_remote_backend *remote_backend; /* a backend on the core's services, one shard per
                                   URL of `remote` (the backend kit, above; remote_ops and
                                   remote_open_shard are then unused); NULL: remote_ops, else the
                                   built-in Redis (kcache_redis_backend) where it is compiled in */
    uint32_t remote_claim_ms;   /* lifetime of a cluster build claim, renewed while the build
                                   runs (a dead builder's ends after it); 0: 3000               */
    uint32_t remote_backoff_ms; /* the circuit breaker's first back-off (then doubling, to 32x);
                                   0: 1000                                                      */
    const char *remote_ca;      /* rediss://: CA file (PEM); NULL: the system's (KCACHE_REMOTE_CA) */
    const char *remote_cert;    /* rediss://: client certificate (PEM); NULL: none (KCACHE_REMOTE_CERT) */
    const char *remote_key;     /* rediss://: its private key (PEM) (KCACHE_REMOTE_KEY)            */
    uint32_t remote_ttl_s;      /* the built-in Redis: an entry expires this many seconds after its
                                   put (KCACHE_REMOTE_TTL: 90s, 30m, 12h, 7d); 0: never         */
    const char *remote_prefix;  /* the built-in Redis: put before every key, a namespace of its own
                                   (KCACHE_REMOTE_PREFIX); NULL: none                            */
    int remote_mac;             /* how values are signed: KCACHE_REMOTE_MAC_GMAC (version 2, fast),
                                   or _HMAC (version 1, for readers older than version 2) (KCACHE_REMOTE_MAC) */
    /* ---- read-only layers (README: Read-only layers, Security). Ignored, and said so, with
       KCACHE_NO_LAYERS ---- */
    const char *layers;       /* KCACHE_LAYERS: directories searched after the store, before the remote,
                                 separated by ':' (';' on Windows); NULL: none. Copied at open    */
    int layers_copy;          /* 1 (the default): a layer hit is copied into the store (KCACHE_LAYERS_COPY) */
    /* ---- vendor hooks: where messages go, no environment, an allocator ---- */
    kcache_log_fn log;        /* where every message goes (see kcache_log_fn); NULL: stderr      */
    void *log_user;
    int no_env;               /* 1: kcache_open reads no KCACHE_* variable (kcache_config_defaults sets it) */
    kcache_alloc_fn alloc_fn; /* allocator callbacks, both or neither; NULL: KCACHE_MALLOC / KCACHE_FREE */
    kcache_free_fn free_fn;
    void *alloc_user;         /* passed to both */
    uint32_t env_bad;         /* kcache_config_init: the variables whose value was bad (for kcache_open
                                 to say through the log, which is set only after kcache_config_init) */
    /* (added in 0.5, at the end so that older initialisers keep their meaning) */
    const char *stats_dir;    /* KCACHE_STATS_DIR: where a kcache without a store of its own (memory
                                 only, KCACHE_PERSISTENT=0, no resolvable or a refused directory, a
                                 read-only store) publishes its stats file for kcache-top, so that
                                 `kcache-top -b --prometheus DIR` sees it. Checked as a store's
                                 directory is (its owner's alone, no symlink another user controls;
                                 created 0700 when missing; it may hold only kcache's files); a
                                 refused one is said in the debug log and nothing is published.
                                 NULL: such a kcache publishes nothing. Ignored with a store (its
                                 DIR/stats is used) and with KCACHE_NO_PUB */
    /* (added in 0.6) */
    const char *remote_tls_name; /* rediss://: the name every server's certificate must hold
                                 (KCACHE_REMOTE_TLS_NAME), for servers reached by an address (a
                                 cluster whose nodes announce IPs, a certificate for the cluster's
                                 name); also sent as SNI. NULL: the host each is reached by, and for
                                 a cluster's nodes that announce IPs, the listed seed's host when
                                 that is a DNS name (as go-redis and Lettuce do) */
} kcache_config;

/* Fills cfg with the defaults, then applies the environment variables (KCACHE_*). A bad value keeps
   the default and is noted in cfg->env_bad, which kcache_open says through cfg->log (or stderr)
   when debugging is on, and in any case for a bad KCACHE_DEBUG (the user asked for messages);
   kcache_config_init itself writes nothing. Thread safety: reads the environment. cfg->dir may
   point into the environment (KCACHE_DIR): pass cfg to kcache_open, which copies it, before
   changing that variable (Windows' C runtime frees the old string).

   Which wins: the program's own assignments after kcache_config_init always win (they come last);
   the environment wins over the defaults. A program whose configuration must be final (a user's
   KCACHE_ENABLE=0 must not turn its cache off) uses kcache_config_defaults instead. */
KCACHE_API void kcache_config_init(kcache_config *cfg);

/* Fills cfg with the defaults alone, reading no environment, and sets cfg->no_env so that
   kcache_open reads none either (KCACHE_CPU_NAME / KCACHE_CPU_FEATURES are then not applied to
   kcache_key_host_from's tuple; kcache_key_host, which has no kcache, still reads them). The
   default store directory (cfg->dir NULL) still follows XDG_CACHE_HOME / HOME (LocalAppData). */
KCACHE_API void kcache_config_defaults(kcache_config *cfg);

/* This library's version, "MAJOR.MINOR.PATCH" (KCACHE_VERSION of the copy that was compiled). */
KCACHE_API const char *kcache_version(void);

/* ============================================================================================== */
/* >>api  opening, keys, lookups                                                                  */
/* ============================================================================================== */

typedef struct kcache kcache; /* an open cache; every call on it is thread-safe */

/* Opens a cache. cfg NULL means kcache_config_init's. The configuration is copied.
   A store that cannot be used (unsafe, no directory) is not an error: the cache works from memory
   and the reason, naming the component, is in kcache_explain and the debug log. A store that can
   only be read (a read-only filesystem, a site-wide store of root's) is used read-only: hits are
   served, puts stay in memory (KCACHE_EROFS).
   Returns KCACHE_OK, or KCACHE_EINVAL / KCACHE_ENOMEM with *out set to NULL. */
KCACHE_API kcache_status kcache_open(kcache **out, const kcache_config *cfg);

/* Flushes what is not yet written (KCACHE_WRITE=evict) and frees everything. Payloads still held
   by callers must have been released before. NULL is ignored. Any later call on kc is a misuse: a
   debug build says so (KCACHE_CHECKS); a release build's behaviour is undefined. */
KCACHE_API void kcache_close(kcache *kc);

/* The directory of the persistent store in use, or NULL when the cache is memory only. */
KCACHE_API const char *kcache_dir(const kcache *kc);

/* Whether kc uses a persistent store: 1 when it does (a read-only one too: then why says that it
   is read-only and puts are kept in memory only; else why is ""); 0 when it runs from memory only,
   with the reason written into why (snprintf-style: cut to cap, NUL-terminated when cap > 0; why may be NULL)
   such as "caching off (KCACHE_ENABLE=0)" or "memory only: /x is writable by group or others;
   refusing it". kc NULL: 0. */
KCACHE_API int kcache_store_in_use(const kcache *kc, char *why, size_t cap);

/* Whether kc uses a remote tier (KCACHE_REMOTE or remote_ops): 1 when it does, with its shards as
   shown (no credentials) in why; 0 when it does not, with the reason in why when one was asked for
   and could not be used ("redis URL ...: the port is 1 to 65535", a secret without HMAC support),
   empty when none was asked for. why as kcache_store_in_use's. kc NULL: 0. */
KCACHE_API int kcache_remote_in_use(const kcache *kc, char *why, size_t cap);

enum kcache_field_type {
    KCACHE_FIELD_BYTES = 1,
    KCACHE_FIELD_STR = 2,
    KCACHE_FIELD_U64 = 3,
    KCACHE_FIELD_FILE = 4 /* a dependency: its name and path are digested, its stamp is checked */
};

#define KCACHE_FIELD_NAME_MAX 48 /* bytes of a field name, NUL included */
#define KCACHE_PREVIEW_MAX 96    /* bytes of a field's printable preview, NUL included */
#define KCACHE_UNIT_MAX 256      /* bytes of a unit name, NUL included */

typedef struct kcache_key_field {
    char name[KCACHE_FIELD_NAME_MAX];
    char preview[KCACHE_PREVIEW_MAX]; /* printable: up to 64 bytes of the value, escaped, or a digest */
    kcache_hash128 digest;            /* XXH3-128 of the value (of the path for file fields)        */
    uint64_t size;                    /* length of the value in bytes                               */
    uint32_t type;                    /* enum kcache_field_type                                     */
    uint32_t reserved;                /* kcache's own flags (file fields: how content is known)    */
    int64_t mtime_ns;                 /* file fields: the stamp, checked on load, not digested      */
    uint64_t file_size;
    kcache_hash128 content;
} kcache_key_field;

/* A key: the unit and named, typed fields. A complete type so callers keep it on the stack; it
   holds KCACHE_KEY_INLINE fields without allocating. Do not copy a kcache_key with '='. */
typedef struct kcache_key {
    uint32_t magic;             /* detects use of an uninitialised or freed key                  */
    uint32_t count;             /* fields in the key                                             */
    uint32_t cap;               /* fields room: KCACHE_KEY_INLINE or the heap array's            */
    kcache_status error;        /* first failure of an add: a key with an error never matches    */
    kcache_key_field *heap;     /* all fields once they outgrow the inline room, else NULL        */
    void *files;                /* file fields' paths and full stats (kcache_key_file); owned      */
    kcache_hash128 digest;      /* canonical digest, kept current by every add                    */
    char unit[KCACHE_UNIT_MAX];
    kcache_key_field inline_fields[KCACHE_KEY_INLINE];
} kcache_key;

/* Starts a key for a unit (a program, a kernel, a function: what an index groups).
   Returns KCACHE_EINVAL for NULL or an empty unit, KCACHE_ETOOBIG for one of KCACHE_UNIT_MAX bytes
   or more; the key is then still safe to free and never matches. */
KCACHE_API kcache_status kcache_key_init(kcache_key *k, const char *unit);

/* Add one named field. Fields may be added in any order: the digest is canonical (sorted by name,
   each field type-tagged and length-prefixed). A name used twice is refused (KCACHE_EEXIST). On
   any failure the key records the error and never matches anything (get misses, put refuses). */
KCACHE_API kcache_status kcache_key_bytes(kcache_key *k, const char *name, const void *p, size_t n);
KCACHE_API kcache_status kcache_key_str(kcache_key *k, const char *name, const char *s);
KCACHE_API kcache_status kcache_key_u64(kcache_key *k, const char *name, uint64_t v);

/* A dependency on a file: its name and path are digested; its stamp (mtime, size, content hash) is
   recorded and checked when the entry is loaded (KCACHE_STAMP). KCACHE_ENOENT if it does not exist.
   An unchanged dependency costs a stat, not a read: the content hash is taken only when a lookup
   needs it (a put; KCACHE_STAMP=content; hybrid when mtime or size differ from the stored ones) and
   is then remembered under the file's full stat (device, inode, size, mtime, ctime: ctime cannot be
   set back), in the process and, for files of 1 MiB or more, in the store, so that neither this
   process nor the next hashes the same file again (KCACHE_STAMP=content hashes at every lookup). A
   file that exists but cannot be read makes the lookups miss. */
KCACHE_API kcache_status kcache_key_file(kcache_key *k, const char *name, const char *path);

/* A dependency on the shared library (or executable) that holds `address` (a function of the
   library, such as nvrtcCompileProgram): kcache_key_file of the file the process actually loaded,
   found with dladdr (/proc/self/maps where dladdr is not declared; GetModuleHandleEx and
   GetModuleFileNameW on Windows), its symlinks resolved. So a key names the library version it was
   built with, and a driver or compiler upgrade is a miss, never a stale binary. KCACHE_ENOENT when
   no loaded file holds address. */
KCACHE_API kcache_status kcache_key_library(kcache_key *k, const char *name, const void *address);

/* Adds the host's magic tuple: fields "host.os_arch", "host.cpu_name" and "host.cpu_features"
   (LLVM's names; KCACHE_CPU_NAME / KCACHE_CPU_FEATURES override the detected ones). */
KCACHE_API kcache_status kcache_key_host(kcache_key *k);

/* The same three fields, from the tuple kc detected once when it was opened: detection reads CPUID
   or /proc/cpuinfo (tens of microseconds on a VM), so a program building many keys uses this. */
KCACHE_API kcache_status kcache_key_host_from(kcache_key *k, const kcache *kc);

/* The canonical digest; the same whatever order fields were added in. */
KCACHE_API kcache_hash128 kcache_key_digest(const kcache_key *k);

/* Frees what the key allocated; the key must be initialised again before reuse. */
KCACHE_API void kcache_key_free(kcache_key *k);

/* A copy of src that can take more fields, so that a companion adds its own to a caller's key
   and leaves the caller's as it was (kcache_vk.h adds a device's identity): the unit, the fields,
   the file dependencies and any error. dst is initialised by the call: free it with
   kcache_key_free whatever the result. Returns src's error (KCACHE_OK when it has none),
   KCACHE_ENOMEM, or KCACHE_EINVAL for dst NULL or src NULL, never initialised or freed; dst
   then never matches. Thread safety: src is only read. */
KCACHE_API kcache_status kcache_key_copy(kcache_key *dst, const kcache_key *src);

/* Records s, an error of the caller's (a value it could not get for the key), as k's failure
   unless k has one already, so that k never matches, as after a failed kcache_key_* add. Returns
   s, or KCACHE_EINVAL for k NULL, never initialised or freed. */
KCACHE_API kcache_status kcache_key_fail(kcache_key *k, kcache_status s);

/* Looks a key up: memory first, then the store. On KCACHE_OK *data points to the payload (16-byte
   aligned, read-only, valid until kcache_release) and *size is its length. KCACHE_MISS when absent;
   an error status also means "compile it". */
KCACHE_API kcache_status kcache_get(kcache *kc, const kcache_key *k, const void **data, size_t *size);

/* Gives back a payload from kcache_get / kcache_get_or_build; every successful get is released once,
   through the kcache that handed it out (data NULL: nothing happens). A second release, or one
   through another kcache, is a misuse: a debug build reports it and does nothing (KCACHE_CHECKS). */
KCACHE_API void kcache_release(kcache *kc, const void *data);

/* Stores a payload (copied) under a key, replacing what the key held. KCACHE_MEM_SIZE is a hard
   cap: an entry larger than the whole memory budget is written to the store (whatever KCACHE_WRITE
   says) and not kept in memory; in a memory-only cache it is then cached nowhere (KCACHE_ETOOBIG).
   The same holds for entries a lookup brings from the store, a layer or the remote. */
KCACHE_API kcache_status kcache_put(kcache *kc, const kcache_key *k, const void *data, size_t size);

/* Removes a key from memory and from the store (and the remote). KCACHE_MISS if it was not there.
   A read-only layer's copy stays: the next lookup finds it there again. */
KCACHE_API kcache_status kcache_remove(kcache *kc, const kcache_key *k);

/* Writes one line into buf (snprintf-style: truncated to cap, always NUL-terminated when cap > 0)
   saying whether the key hits and from where, or why it misses. Returns the full length. */
KCACHE_API size_t kcache_explain(kcache *kc, const kcache_key *k, char *buf, size_t cap);

/* Single flight: when many threads or processes miss the same key at once, one builds, the rest
   wait for it. build returns 0 on success with *out allocated by KCACHE_MALLOC (kcache takes it).
   A build that returns 0 with *out NULL and a size other than 0 is refused as kcache_put refuses
   it (KCACHE_EINVAL, nothing stored); the threads and processes waiting for it treat it as any
   failed build: one of them builds next. */
typedef int (*kcache_build_fn)(void *user, void **out, size_t *out_size);
KCACHE_API kcache_status kcache_get_or_build(kcache *kc, const kcache_key *k, kcache_build_fn build,
                                             void *user, const void **data, size_t *size);

/* Cooperative cold start: many keys at once. Every job's key is looked up first (hits cost what
   kcache_get costs); the missing keys are then built on up to `threads` threads of the caller (0 or
   1: the calling thread alone; started for the call and joined before it returns), each taking
   first a key nobody else (no other thread, process, or machine through the remote's claims) is
   building, and waiting on others' builds only when nothing is left to build; a builder that dies
   hands its keys to the waiters, as for kcache_get_or_build. So P processes x T threads that need
   the same K keys build each once, about K / (P x T) each. Jobs with the same key are built once
   and share the payload. Returns when every job has its payload or its error: KCACHE_OK when all
   succeeded, else the status of the lowest-numbered failed job; every job whose status is
   KCACHE_OK holds a payload to release with kcache_release, whatever the return. One failed build
   fails its own job only. The builds may run on several threads at once (threads > 1): a build
   that forks returns in the child only when threads is 0 or 1. */
typedef enum kcache_origin {     /* where a payload came from (kcache_job.origin, kcache_get_or_claim) */
    KCACHE_FROM_MEMORY,         /* there at the first look: this process's memory */
    KCACHE_FROM_STORE,          /* there at the first look: the persistent store */
    KCACHE_FROM_LAYER,          /* there at the first look: a read-only layer (KCACHE_LAYERS) */
    KCACHE_FROM_REMOTE,         /* there at the first look: the remote tier (KCACHE_REMOTE) */
    KCACHE_BUILT_HERE,          /* missing: this call built it */
    KCACHE_BUILT_ELSEWHERE      /* missing at the first look; another thread, process or machine
                                   built it (this call waited on its claim, or found it done) */
} kcache_origin;
typedef struct kcache_job {
    const kcache_key *key;      /* in */
    kcache_build_fn build;      /* in: as for kcache_get_or_build */
    void *user;                 /* in */
    const void *data;           /* out: the payload, released with kcache_release */
    size_t size;                /* out */
    kcache_status status;       /* out: this job's own status */
    kcache_origin origin;       /* out, when status is KCACHE_OK: where the payload came from (a
                                   one-job batch is kcache_get_or_build telling where) */
} kcache_job;
KCACHE_API kcache_status kcache_get_or_build_many(kcache *kc, kcache_job *jobs, size_t n, unsigned threads);

/* Get-or-build in two steps, for a caller whose build is not a callback (numba compiles between
   its cache's load and save). KCACHE_OK: *data / *size hold the payload (release it as usual) and
   *origin says where it came from. KCACHE_CLAIMED: the key is missing and this caller builds it;
   *ticket is the claim: the same claims kcache_get_or_build takes (this process's flight, the
   store's claim byte, the remote's claim, renewed by the claim renewer thread), so every other
   kcache_get_or_build / kcache_get_or_claim of the key waits for it as for a build. On every path
   the caller then calls exactly one of kcache_put_claimed (stores the payload, wakes the waiters
   with it) or kcache_drop_claim (nothing stored: a waiter builds next, at once). k must stay valid
   and unchanged until then. Never an error to handle differently: whenever there is nothing to
   claim (caching off, an incomplete key, KCACHE_BUILD_WAIT spent waiting, out of memory) the
   answer is still KCACHE_CLAIMED, with a ticket that claims nothing (*ticket may then be NULL), and
   the caller builds and puts as usual (put_claimed then stores what kcache_put would; with a NULL
   ticket it stores nothing). Other errors (KCACHE_EINVAL for NULL arguments) set *ticket NULL.
   Two processes claiming mutually dependent keys cannot deadlock: a thread that already holds a
   ticket on kc only tries the next key's claims (busy: KCACHE_CLAIMED with a ticket claiming
   nothing, built here too, as numba would). kcache_close drops the tickets still open (logged). A
   forked child does not hold its parent's claims: put_claimed on a ticket of the parent's stores as
   kcache_put does, drop_claim does nothing there; the parent still ends its own ticket. A ticket
   ended twice (or not kc's) is a misuse: a debug build says so; either call then does nothing. */
typedef struct kcache_ticket kcache_ticket;
KCACHE_API kcache_status kcache_get_or_claim(kcache *kc, const kcache_key *k, const void **data, size_t *size,
                                             kcache_origin *origin, kcache_ticket **ticket);
/* Stores what the claimed build made (copied, as kcache_put) and ends the ticket: its waiters get
   the payload. The status is kcache_put's (a failure here is only a lost cache entry). */
KCACHE_API kcache_status kcache_put_claimed(kcache *kc, kcache_ticket *t, const void *data, size_t size);
/* Ends the ticket without a payload (the build failed, or its result cannot be cached): the claims
   are given back at once, so a waiter builds without waiting out KCACHE_BUILD_WAIT. NULL: nothing. */
KCACHE_API void kcache_drop_claim(kcache *kc, kcache_ticket *t);

/* ============================================================================================== */
/* >>kit  services for companions and backends                                                    */
/* ============================================================================================== */

/* What a companion (kcache_vk.h, kcache_redis.h, or a third party's file of the same kind) needs
   of the core besides the calls above, so that it is written on public names alone. Each call is
   thread-safe and, like every call, checks a kcache for misuse in debug builds (KCACHE_CHECKS). */

/* Whether kc caches: 0 for kc NULL or caching off (KCACHE_ENABLE=0), else 1. A companion that
   would only waste work on a cache that stores nothing asks this first. */
KCACHE_API int kcache_enabled(kcache *kc);

/* Calls fn(state, arg) with kc's lock held, state being the block of size bytes kc keeps for the
   companion called name: zeroed when the first call makes it (through kc's allocator), given to
   destroy (when not NULL) and freed at kcache_close. So a companion keeps what it learnt per
   kcache (kcache_vk.h: the devices it identified) with no state or lock of its own. The first
   call for a name fixes its size and destroy. fn runs under the lock every call on kc takes: it
   must be short and call nothing of kcache's; destroy may not call kcache either. In a forked
   child that uses the kcache it inherited, the state starts afresh (the child's own, as the rest).
   Returns KCACHE_OK (fn was called), KCACHE_EINVAL (kc, name or fn NULL, name longer than 31
   bytes, or size 0), KCACHE_ENOMEM (fn was not called). */
typedef void (*kcache_state_fn)(void *state, void *arg);
KCACHE_API kcache_status kcache_companion_state(kcache *kc, const char *name, size_t size, void (*destroy)(void *state),
                                                kcache_state_fn fn, void *arg);

/* Counts a payload of k's that a companion found unusable after kcache handed it out (a blob the
   driver refused) as kcache counts its own rejects: a miss of reason KCACHE_REASON_REJECTED in
   kcache_stats (misses, misses_by_reason, rejects) and in the stats file kcache-top reads, and,
   when debugging (KCACHE_DEBUG), the line "reject UNIT: WHY" through the log (escaped). The
   companion removes the entry itself (kcache_remove), so that the next lookup misses. kc or k
   NULL: nothing. */
KCACHE_API void kcache_count_reject(kcache *kc, const kcache_key *k, const char *why);

/* A monotonic clock in nanoseconds (CLOCK_MONOTONIC; QueryPerformanceCounter on Windows): for
   deadlines and durations, never for dates. */
KCACHE_API int64_t kcache_monotonic_ns(void);

/* ============================================================================================== */
/* >>opencl  kcache_cl_build: OpenCL programs built once, loaded from the cache after that        */
/* ============================================================================================== */
#ifdef KCACHE_OPENCL /* needs the OpenCL headers and -lOpenCL */

/* <CL/cl.h> is a C header that may pull in compiler intrinsics; it is included outside the
   extern "C" block this part of kcache.h sits in. */
#ifdef __cplusplus
}
#endif
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#if defined(__APPLE__)
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* Builds an OpenCL program, from the cache when it can.

   ctx, ndev, devs    the context and the devices to build for, as clBuildProgram takes them:
                      ndev 0 and devs NULL mean every device of the context.
   unit               what kcache_explain, KCACHE_DEBUG and the tools call this program (a name such
                      as "blur"); NULL means "opencl".
   nsrc, srcs, lens   the sources, as clCreateProgramWithSource takes them (lens NULL, or a 0 in it:
                      that string is NUL-terminated).
   options            the build options (NULL is ""); also where -I directories come from.
   hit                (may be NULL) set to 1 when no device's program was compiled by this call:
                      every device came from this process's memory or from the store; else 0.
   err                (may be NULL) CL_SUCCESS, or the error of the failed step.

   Returns a built program that the caller releases with clReleaseProgram, or NULL on failure.

   How: one entry per device, under a key of the unit, every source string, the options, and the
   device as the driver describes it (platform name and version, device name and version, driver
   version, vendor id, address bits, CL_DRIVER_UUID_KHR where cl_khr_device_uuid is there) plus the
   stamp of the driver library actually loaded (the ICD vendor library), so that a driver upgrade
   is a miss and never a binary handed to a driver that did not make it. Every file reached by
   `#include "..."` (or <...>) lines of the sources, searched in the including file's directory,
   the -I directories of the options and the working directory, recursively, is a dependency
   (kcache_key_file): editing one is a miss that kcache_explain names. Devices that hit are loaded
   with clCreateProgramWithBinary; only the devices that missed are compiled (identical devices
   once), and their binaries are stored (single flight: concurrent processes compile once). The
   devices that missed are the keys of a batch (kcache_get_or_build_many, on the calling thread):
   each is compiled for itself, so that processes needing the same program at once each compile a
   share of its devices; a program of several devices is then made from their binaries.
   A stored binary is checked before the driver sees it (size, and for PoCL its header, device id
   and the bounds of every record); one that fails, or that the driver refuses, is removed, counted
   as a reject and rebuilt from source: the caller only sees success. A build failure is not
   cached; its log stays available from kcache_cl_build_log.

   In-process cache: a repeat call with the same context, devices, unit, sources and options
   returns the program this process already built (retained again; release it as usual) without
   calling the compiler or the driver: a hash of the sources and a table lookup. Programs with
   #include dependencies also re-check each dependency's mtime and size (a stat per file). This
   cache holds a reference to each program (and so to its context) until it is pushed out by newer
   programs (capacity: KCACHE_MEM_ENTRIES), kcache_cl_forget, or kcache_close.

   kc NULL, or caching off (KCACHE_ENABLE=0): a plain build from source every time.
   Thread-safe. */
KCACHE_API cl_program kcache_cl_build(kcache *kc, cl_context ctx, cl_uint ndev, const cl_device_id *devs,
                                      const char *unit, cl_uint nsrc, const char **srcs, const size_t *lens,
                                      const char *options, int *hit, cl_int *err);

/* Several programs at once (a start-up that compiles a set of kernels): each as kcache_cl_build
   builds it for ctx, ndev, devs (the same for every program), and every device key missing of every
   program goes into one batch (kcache_get_or_build_many) built on up to `threads` threads of the
   caller (0 or 1: the calling thread alone). So the processes, threads and machines that need the
   same programs at once each compile a share of them, taking first what nobody else compiles,
   where one kcache_cl_build after another would have them all wait on each program in turn.

   progs[i] says what program i is (in) and how it went (out):
       unit, nsrc, srcs, lens, options   as kcache_cl_build takes them
       log, log_cap   (in; log may be NULL) where program i's build log goes, snprintf-style
       program        the built program, released by the caller with clReleaseProgram; NULL on failure
       hit            1 when no device of program i was compiled by this call (as kcache_cl_build's)
       err            CL_SUCCESS, or the error of program i's failed step
       log_len        its log's full length (0: none): the compiler's output on a failure (a section
                      per device when there are several), its warnings after a compile, else empty

   A program that fails fails its own entry only. The same program twice in one call is built once;
   the second gets the first's program (retained again), as a repeat kcache_cl_build would. Returns
   CL_SUCCESS when every program was built, else the err of the lowest-numbered failed one (every
   program built is the caller's to release, whatever the return); CL_INVALID_VALUE for progs NULL
   with n > 0. kcache_cl_build_log then says the log of that first failed program (empty when none
   failed). The compiles may run on several threads at once on one context: OpenCL (1.1 and later)
   makes clBuildProgram and the other calls used here thread-safe; PoCL compiles one context's
   programs one at a time behind a lock of its own, so with PoCL the threads help across processes
   and contexts, not within one. kc NULL or caching off: each built from source, one after another. */
typedef struct kcache_cl_program {
    const char *unit;        /* in */
    cl_uint nsrc;            /* in */
    const char **srcs;       /* in */
    const size_t *lens;      /* in (may be NULL) */
    const char *options;     /* in (NULL is "") */
    char *log;               /* in: the buffer for this program's build log (may be NULL) */
    size_t log_cap;          /* in */
    cl_program program;      /* out */
    int hit;                 /* out */
    cl_int err;              /* out */
    size_t log_len;          /* out */
} kcache_cl_program;
KCACHE_API cl_int kcache_cl_build_many(kcache *kc, cl_context ctx, cl_uint ndev, const cl_device_id *devs,
                                       kcache_cl_program *progs, size_t n, unsigned threads);

/* The build log of the calling thread's most recent kcache_cl_build on kc: on a failure, the
   compiler's output (one section per device when there are several) or, for a failure that is not
   the compiler's, which OpenCL call failed and its error; after a build from source that
   succeeded, the compiler's warnings, if any; after a hit, empty. Per thread, so two threads
   building at once each read their own. Writes it into buf snprintf-style (truncated to cap,
   NUL-terminated when cap > 0; buf may be NULL with cap 0) and returns its full length (0: no log).
   kc NULL: 0. */
KCACHE_API size_t kcache_cl_build_log(kcache *kc, char *buf, size_t cap);

/* Initialises *k as the key kcache_cl_build uses for one device (the caller frees it with
   kcache_key_free), so that a program can ask kcache_explain why that device's entry misses, or
   kcache_remove it. kc may be NULL (the driver library's stamp is then computed, not remembered).
   KCACHE_OK, or an error (the key is then still safe to free and never matches). */
KCACHE_API kcache_status kcache_cl_key(kcache *kc, kcache_key *k, cl_device_id dev, const char *unit, cl_uint nsrc,
                                       const char **srcs, const size_t *lens, const char *options);

/* The one-line replacement of clBuildProgram(*program, num_devices, device_list, options, NULL,
   NULL) for a program made with clCreateProgramWithSource, called where clBuildProgram was (before
   any kernel is made): the same arguments, return codes and build log.

   Each device's binary is looked up under the key kcache_cl_build gives the program's source (its
   strings joined, as CL_PROGRAM_SOURCE gives them: one string), options and that device, with unit
   "opencl" (kcache_cl_build's unit NULL): the two calls share entries. When every device asked for
   is there (in the store, or a program this process built already), the source program is released
   and *program becomes a program made from the stored binaries for those devices (CL_PROGRAM_DEVICES
   then lists only them); devices that miss are compiled once (single flight, as kcache_cl_build:
   concurrent threads and processes compile each once) and their binaries stored, and *program
   becomes the built program. So the caller keeps using *program as after clBuildProgram; a copy of
   the old handle kept elsewhere must not be used (that is why a program with other references is not
   swapped, below). Another set of options, or of devices, is another key: never another's binary.

   Built in place by clBuildProgram, never swapped: a program others hold (CL_PROGRAM_REFERENCE_COUNT
   above 1: it is then stored after its build, for the devices that missed); a program made from
   binaries or IL, or built already (a rebuild: the driver says whether kernels forbid it); a device
   list the program does not have; kc NULL or caching off. A build that fails is run again by
   clBuildProgram on the caller's program, so that its error and CL_PROGRAM_BUILD_LOG are the
   driver's own (a failure compiles twice; failures are not cached). program NULL or *program NULL:
   CL_INVALID_PROGRAM. kcache_cl_build_log says the log of the build kcache ran, as after
   kcache_cl_build. Thread-safe, for different programs. */
KCACHE_API cl_int kcache_cl_build_program(kcache *kc, cl_program *program, cl_uint num_devices,
                                          const cl_device_id *device_list, const char *options);

/* Stores a built program's binaries again where the driver's binary has grown since it was stored,
   and stores those of devices with no entry: for drivers that add to a program's binary as it runs.
   PoCL compiles a kernel's work-group function at its first launch and keeps it in the binary if the
   binary is first asked for after that launch; a binary taken right after the build lacks it, so a
   load of that binary into an empty PoCL cache (a fresh container, CI) pays the compile again at the
   first launch. Call it once the program's kernels have run (its first launches), with a program
   built from source (a miss of kcache_cl_build_program, kcache_cl_build or kcache_cl_build_many,
   or clBuildProgram): each built device's entry is compared by size with CL_PROGRAM_BINARY_SIZES
   (no binary is read unless it grew) and replaced when the driver's is larger. The entry is the
   one the call that built the program keyed (its unit, source strings and options) while kc's
   in-process program cache holds the program; else (clBuildProgram, or a program pushed out) it is
   keyed as kcache_cl_build_program keys it (unit "opencl", the source as one string, the options
   the driver reports). A program loaded from the store (a hit) has nothing to add: KCACHE_EINVAL,
   nothing done. Note that a binary the driver was already asked for stays as it was then (PoCL
   freezes it at the first CL_PROGRAM_BINARIES query): call it before asking for binaries. (A hit
   hands PoCL the binary without the generic work-group functions of kernels that have a
   specialised one, unless POCL_WORK_GROUP_SPECIALIZATION=0: PoCL writes each file of a binary into
   its cache with fdatasync, and a specialised launch never uses them.)
   KCACHE_OK (also when nothing grew, or kc is NULL or caching off); KCACHE_EINVAL for program NULL
   or not a built program made from source. Thread-safe. */
KCACHE_API kcache_status kcache_cl_update(kcache *kc, cl_program program);

/* Adds the identity of a device and its driver to a key the caller initialised with what it knows
   (a plan, a blob of its own, anything built for one device): the fields kcache_cl_build and
   kcache_cl_key put in every program key, so that a driver upgrade is a miss there too and
   kcache_explain names the field that changed: "cl.platform.name", "cl.platform.version",
   "cl.device.name", "cl.device.version", "cl.driver.version", "cl.device.vendor_id",
   "cl.device.address_bits", "cl.driver.uuid" (where cl_khr_device_uuid is there) and
   "cl.driver.library" (the stamp of the driver library the process loaded, a file dependency; its
   path alone when it cannot be read). The Vulkan companion's kcache_vk_key is its counterpart.
   KCACHE_OK, or an error that the key then records (it never matches; freeing it is still safe);
   KCACHE_EINVAL for k NULL or not initialised, or device NULL. Thread-safe. */
KCACHE_API kcache_status kcache_cl_device_key(kcache_key *k, cl_device_id device);

/* Drops the programs of ctx (NULL: of every context) from kc's in-process cache and releases the
   references it held, so that releasing ctx frees it. The stored binaries stay. */
KCACHE_API void kcache_cl_forget(kcache *kc, cl_context ctx);

#ifdef KCACHE_TEST_CL
/* Tests and benches only (bench/bench_opencl.c times a hit's parts); not a stable interface.
   Whether data[0..size), a payload kcache_cl_build stored, would be handed to dev's driver: the
   check a hit makes before clCreateProgramWithBinary. 0, with the reason in why (snprintf-style,
   cap bytes), when it would not. */
KCACHE_API int kcache_test_cl_payload_ok(cl_device_id dev, const void *data, size_t size, char *why, size_t cap);
#endif

#endif /* KCACHE_OPENCL */

/* ============================================================================================== */
/* >>stats                                                                                        */
/* ============================================================================================== */

typedef struct kcache_stats {
    uint64_t hits_mem, hits_disk, misses, puts, evictions, rejects;
    uint64_t misses_by_reason[KCACHE_REASON_COUNT];
    uint64_t bytes_read;    /* payload bytes handed out by hits                                   */
    uint64_t bytes_written; /* payload bytes stored by puts                                       */
    uint64_t mem_entries, mem_bytes, mem_evictions; /* the memory LRU; mem_bytes: the memory its entries
                                                       hold (payloads, keys, bookkeeping) */
    uint64_t disk_entries, disk_bytes;              /* the store, as accounted (0 if none)       */
    uint64_t builds, build_waits, store_errors;
    /* the tiers below the local store */
    uint64_t hits_remote;       /* lookups answered by the remote tier (then written into the store) */
    uint64_t hits_layer;        /* lookups answered by a read-only layer (KCACHE_LAYERS; then copied
                                   into the store unless KCACHE_LAYERS_COPY=0); a corrupt layer
                                   entry counts in rejects                                           */
    uint64_t remote_lookups;    /* local misses that asked the remote                               */
    uint64_t remote_puts;       /* entries stored on the remote                                     */
    uint64_t remote_errors;     /* remote calls that failed, timeouts included                      */
    uint64_t remote_timeouts;   /* of those, the ones that ran out of time                          */
    uint64_t remote_skipped;    /* calls not made: the shard's circuit breaker was open             */
    uint64_t remote_calls;      /* calls made ...                                                   */
    uint64_t remote_latency_ns; /* ... and their total time (mean: remote_latency_ns / remote_calls) */
    uint64_t remote_rejects;    /* remote entries that failed validation (deleted there; in rejects) */
    uint64_t remote_breaker_opens; /* times a shard's breaker opened                                */
    uint64_t remote_open;       /* shards whose breaker is open now                                 */
    /* (0.5) */
    uint64_t builds_claimed_elsewhere; /* builds here of a key whose cluster build claim another
                                   process or machine held when this one asked (it waited, then the
                                   claim was abandoned, expired or not answered): duplicate builds,
                                   a rebuild storm's measure (kcache_get_or_build; in builds too) */
} kcache_stats;

/* A consistent snapshot of this kcache's counters (this process only). */
KCACHE_API void kcache_get_stats(kcache *kc, kcache_stats *out);

#ifdef KCACHE_TEST_PUB
/* Tests and benches only (bench/bench_pub.c times one handle's memory hits published and not);
 * not a stable interface, not thread-safe. kcache_test_pub_switch points kc's publishing at
 * `counters`: what an earlier call returned (on again) or NULL (off, as with KCACHE_STATS=0), and
 * returns what it pointed at before (NULL: kc was not publishing). kcache_test_pub_hit_mem
 * publishes one memory hit as a hit does, alone: unit_hash is kcache_hash(unit, strlen(unit)).lo. */
KCACHE_API void *kcache_test_pub_switch(kcache *kc, void *counters);
KCACHE_API void kcache_test_pub_hit_mem(kcache *kc, uint64_t unit_hash, uint64_t size);
#endif

/* One shard of the remote tier and what this process's calls to it did (kcache_get_remote_shards). */
typedef struct kcache_remote_shard {
    char url[256];       /* as shown: canonical, without credentials                             */
    uint64_t hits;       /* lookups it answered with a valid entry                               */
    uint64_t misses;     /* lookups it had nothing for (or nothing valid)                        */
    uint64_t errors;     /* calls to it that failed, timeouts included                           */
    uint64_t timeouts;   /* of those, the ones that ran out of time                              */
    uint64_t skipped;    /* calls not made: its circuit breaker was open                          */
    int open;            /* its circuit breaker is open now                                      */
    int same;            /* the same server (or cluster) as an earlier shard: it holds no keys    */
} kcache_remote_shard;

/* Fills out[0 .. min(n, cap)) with the remote tier's shards, in the order they were listed, and
   returns n, their number (0: no remote tier). Thread safety: as kcache_get_stats. */
KCACHE_API unsigned kcache_get_remote_shards(kcache *kc, kcache_remote_shard *out, unsigned cap);

/* Checks that the store's accounting equals the real entries (count and bytes); with fix, rebuilds
   it from a scan. KCACHE_OK when consistent (or fixed), KCACHE_ECORRUPT when not and !fix. */
KCACHE_API kcache_status kcache_verify(kcache *kc, int fix);

/* Tidying the store kc uses, for engines that cannot run kcache-inspect's store commands (which
   call these). Each takes the store's lock, keeps its accounting exact (kcache_verify stays clean)
   and is safe while other processes use the store; what it removes is what a get would miss next
   (this process's memory copies of those entries go too). dry_run: nothing is removed, *done says
   what would be. done may be NULL. KCACHE_EDISABLED when kc has no store (another user's store is
   refused when opened: kcache_store_in_use says why) or the calls are compiled out
   (KCACHE_NO_TIDY), KCACHE_EROFS for a read-only one. */
typedef struct kcache_tidy {
    uint64_t entries; /* entries removed (or that would be) */
    uint64_t bytes;   /* their size on disk */
} kcache_tidy;
/* Removes the entries not used for longer than seconds (by kcache's own record of use). */
KCACHE_API kcache_status kcache_evict_older_than(kcache *kc, uint64_t seconds, int dry_run, kcache_tidy *done);
/* Removes the least recently used entries until the store holds at most bytes. */
KCACHE_API kcache_status kcache_trim(kcache *kc, uint64_t bytes, int dry_run, kcache_tidy *done);
/* Removes every entry of a unit, and its index (what was stored and why it left). */
KCACHE_API kcache_status kcache_remove_unit(kcache *kc, const char *unit, int dry_run, kcache_tidy *done);
/* Removes every entry of the store (indexes stay: they say what left). */
KCACHE_API kcache_status kcache_clear(kcache *kc, int dry_run, kcache_tidy *done);

/* ============================================================================================== */
/* >>toolapi  reading a store: index logs, records, accounting, the stats file, dependencies      */
/* ============================================================================================== */

/* What kcache-top and kcache-inspect read, for any tool: a store opened read-only (never locked,
   written or repaired), its units' index logs and their key records, the accounting file
   (config.file), the stats file (DIR/stats: what every process using the store publishes), a
   dependency as it is now, and the text helpers both tools print with. Every decoder is the
   library's own, with its validation: what the library would not trust (a file of another user,
   a damaged record) is an error here too.
   Stability: read-only; the structs below may gain fields at their end in a minor version (check
   KCACHE_VERSION_MINOR before reading a field added later); names and meanings do not change.
   Threads: a kcache_reader and what is opened from it are used by one thread at a time; separate
   handles are independent. Allocation: bounded by what is read (an index log, at most 64 MiB),
   through KCACHE_MALLOC. Compiled out: with KCACHE_NO_EXPLAIN the index calls return
   KCACHE_EDISABLED, with KCACHE_NO_PUB the stats file calls do (the declarations and structs are
   the same whatever is defined). */

typedef struct kcache_reader kcache_reader;

/* Opens the store at dir to read (the directory must exist; nothing is created). Its owner (the
   directory's) is whom its files are trusted from, with root. KCACHE_ENOENT, KCACHE_EUNSAFE (not
   a directory), KCACHE_ENOMEM. */
KCACHE_API kcache_status kcache_reader_open(kcache_reader **out, const char *dir);
KCACHE_API void kcache_reader_close(kcache_reader *r);
/* The store owner's uid (0 on Windows). */
KCACHE_API uint32_t kcache_reader_owner(const kcache_reader *r);
/* The directory kcache_config_init picks when KCACHE_DIR is unset ($XDG_CACHE_HOME/kcache, else
   $HOME/.cache/kcache; %LocalAppData%\kcache). KCACHE_ENOENT when neither is usable, KCACHE_ETOOBIG
   when it does not fit cap. */
KCACHE_API kcache_status kcache_default_dir(char *out, size_t cap);

/* ---- text: DESIGN's one escaping rule, for every byte that came from outside ---- */
/* One character of s (n bytes left) as it is printed: valid printable UTF-8 as it is; a byte below
   0x20, 0x7f or invalid UTF-8 as \xHH; a C1 or bidi control as \u{XXXX}. Returns the length written
   to out (NUL-terminated), *used the bytes of s it took (0 only when n is 0). */
KCACHE_API size_t kcache_escape_char(const unsigned char *s, size_t n, char out[11], size_t *used);
/* n bytes of s escaped character by character into out (cut at a character to fit cap, with
   "..." when cut; always terminated; s NULL gives "(null)"). Returns out. */
KCACHE_API char *kcache_escape(char *out, size_t cap, const void *s, size_t n);
/* s quoted for a POSIX shell, so that a suggested command can be pasted exactly. Returns out. */
KCACHE_API char *kcache_shell_quote(char *out, size_t cap, const char *s);
/* A size: digits with an optional K, M, G or T (powers of 1024), optionally B or iB after it, as
   KCACHE_MAX_SIZE reads it. KCACHE_EINVAL when it is not one. */
KCACHE_API kcache_status kcache_parse_size(const char *s, uint64_t *out);
/* The sentence for a miss reason ("a dependency changed"; kcache_reason_name has the word). */
KCACHE_API const char *kcache_reason_text(kcache_reason r);

/* ---- the host, as kcache names it in keys (kcache_key_host), detected (no KCACHE_CPU_* override) ---- */
#define KCACHE_HOST_FEATURES_MAX 4096 /* a buffer this size always holds the whole feature string */
/* The CPU's name as LLVM KCACHE_HOST_CPU_LLVM names it ("znver4"; "generic" when unknown). */
#define KCACHE_HOST_CPU_LLVM 22 /* the LLVM major whose CPU names kcache's keys use (the newest it knows) */
KCACHE_API void kcache_host_cpu_name(char *out, size_t cap);
/* Its features, "+a,-b,..." as LLVM lists them; returns the string's length. */
KCACHE_API size_t kcache_host_cpu_features(char *out, size_t cap);

/* ---- the accounting file (config.file) ---- */
typedef struct kcache_accounting {
    uint64_t bytes;       /* the entries' accounted size */
    uint64_t entries;
    uint64_t generation;  /* changes whenever an entry is added or removed */
    uint64_t limit;       /* the limit its writer kept (KCACHE_MAX_SIZE) */
    uint64_t evictions;   /* entries evicted by the size limit since the file was made */
    int sound;            /* the header's checksum holds and no update is half done */
    /* 0.5: the rest of the header, for a tool that shows the file whole */
    uint64_t file_size;   /* the file's (filled whenever it is a regular file the store trusts) */
    uint32_t version;     /* its format's */
    uint32_t busy;        /* nonzero: an update is under way, or its writer died in one */
    int64_t created;      /* ns since 1970 */
    uint64_t use_slots;   /* rows of the use table its size holds (0: the size is not a use table's) */
    int magic_ok, version_ok, geometry_ok, checksum_ok; /* the checks of `valid`, one by one */
    int valid;            /* kcache uses the file as it is; otherwise its next writer rebuilds it by a scan */
} kcache_accounting;
/* The header of DIR/config.file. KCACHE_ENOENT when there is none (no process made it yet),
   KCACHE_EUNSAFE when it is not a regular file the store trusts, KCACHE_ECORRUPT when it is not
   one: shorter than its header (only file_size filled) or without its magic (the rest filled as
   read, valid 0). A damaged header that has its magic is KCACHE_OK with valid 0. */
KCACHE_API kcache_status kcache_read_accounting(kcache_reader *r, kcache_accounting *out);
/* The eviction log config.file keeps: the last KCACHE_EVICTION_LOG entries the size limit evicted. */
#define KCACHE_EVICTION_LOG 64
typedef struct kcache_eviction {
    kcache_hash128 digest;
    int64_t when;         /* ns since 1970 */
    uint64_t size;        /* the entry's bytes on disk */
} kcache_eviction;
/* The log's used slots in slot order (*n of them). Statuses as kcache_read_accounting's (a header
   without its magic: KCACHE_ECORRUPT). */
KCACHE_API kcache_status kcache_read_evictions(kcache_reader *r, kcache_eviction out[KCACHE_EVICTION_LOG], unsigned *n);
/* Both from a header in memory (its first len bytes; a file of file_size): for fuzzers, tests and
   saved copies. evictions may be NULL. Statuses as kcache_read_accounting's. */
KCACHE_API kcache_status kcache_accounting_decode(const void *header, size_t len, uint64_t file_size, kcache_accounting *out,
                                                  kcache_eviction evictions[KCACHE_EVICTION_LOG], unsigned *n);
/* A row of the use table: an entry, its last use (kcache's own record; bit 0 is the eviction
   hand's mark) and its size on disk. */
typedef struct kcache_use_row {
    kcache_hash128 digest;
    int64_t last_use;     /* ns since 1970 */
    uint64_t size;
} kcache_use_row;
/* The used rows among slots first .. first + count - 1 of the use table (its geometry: the file's
   size, as kcache maps it), into out (room for count), *n of them. KCACHE_ECORRUPT when the size
   is not a use table's or the slots cannot all be read; statuses as kcache_read_accounting's. */
KCACHE_API kcache_status kcache_read_use_table(kcache_reader *r, uint64_t first, unsigned count, kcache_use_row *out, unsigned *n);
/* The row of that digest (one read of its bucket): KCACHE_OK, KCACHE_MISS when it has none. */
KCACHE_API kcache_status kcache_read_use(kcache_reader *r, kcache_hash128 digest, kcache_use_row *out);
/* When the entry of that digest was last used, from the use table (ns since 1970). KCACHE_MISS
   when the table has no row for it. */
KCACHE_API kcache_status kcache_read_last_use(kcache_reader *r, kcache_hash128 digest, int64_t *when_ns);
/* An entry's file, relative to the store: "e/XX/<32 hex>.kce" (cap: 48 is enough). */
KCACHE_API kcache_status kcache_entry_path(kcache_hash128 digest, char *out, size_t cap);
/* Whether the entry of that digest is in the store: KCACHE_OK with its file's size (when size is
   not NULL), KCACHE_ENOENT (evicted or removed), KCACHE_EUNSAFE (something else in its place). */
KCACHE_API kcache_status kcache_entry_stat(kcache_reader *r, kcache_hash128 digest, uint64_t *size);
/* Whether the reader's directory looks like a store at all: config.file is there, or e/ or i/ is a
   directory (not a link). */
KCACHE_API int kcache_reader_is_store(kcache_reader *r);

/* ---- entry files: their header, key record and checksums, each check on its own ---- */
#define KCACHE_ENTRY_HEADER_MAX (16u << 20) /* a longer header is damage (the longest real one: 14 MiB) */
typedef struct kcache_entry_info {
    uint64_t file_size;
    unsigned version, flags;      /* flags 1 with version 2: the payload is a zstd frame (KCACHE_COMPRESS) */
    uint32_t header_len, record_len;
    uint64_t payload_len;
    kcache_hash128 digest;        /* the key digest the header says */
    kcache_hash128 payload_sum;   /* XXH3-128 of the payload as stored */
    kcache_hash128 record_sum;    /* XXH3-128 of the key record's bytes (to compare with an index's copy) */
    int64_t created;              /* ns since 1970 */
    /* The checks in the order a lookup makes them: 1 holds, 0 fails, -1 could not be made */
    int lengths_ok;               /* header, record and payload lengths agree with each other and the file */
    int header_sum, padding, record;   /* record: the key record decodes, and is exactly its decoding */
    int record_digest;            /* the record's digest is the header's */
    int name_digest;              /* the file's name is the header's digest (-1: not a digest's name) */
    int payload;                  /* the payload checksum */
    int error;                    /* kcache_entry_read: the errno of a file that could not be read */
    char problem[200];            /* the first thing wrong, in those words; "" when sound. When the
                                     call fails: why it is not an entry at all */
} kcache_entry_info;
/* Decodes an entry from its first `have` bytes (the file has file_size; with all of them the payload
   checksum is checked too), the key record into key (kcache_key_free it whatever the result).
   KCACHE_OK when it is an entry, sound or not (out->problem says); KCACHE_ECORRUPT when it is not
   one at all (no magic, shorter than the fixed header, an unknown format version). */
KCACHE_API kcache_status kcache_entry_decode(const void *bytes, size_t have, uint64_t file_size, kcache_entry_info *out, kcache_key *key);
/* The same from a file: `path` inside the reader's store (r not NULL: "e/XX/<32 hex>.kce") or as it
   is (r NULL), opened without following a link or blocking; its header read (at most
   KCACHE_ENTRY_HEADER_MAX bytes) and, with check_payload, its payload streamed through the checksum.
   The name check is made when the file's name is a digest's. KCACHE_ENOENT (no such file; error
   says which errno), KCACHE_EUNSAFE (a symlink, or not a regular file: problem says), KCACHE_EIO,
   KCACHE_ENOMEM, else as kcache_entry_decode. */
KCACHE_API kcache_status kcache_entry_read(kcache_reader *r, const char *path, int check_payload, kcache_entry_info *out, kcache_key *key);
/* The unit an entry belongs to, from the start of its key record (one small read): KCACHE_OK,
   KCACHE_ENOENT, KCACHE_ECORRUPT, KCACHE_ETOOBIG (cap: KCACHE_UNIT_MAX is enough). path as in
   kcache_entry_read. */
KCACHE_API kcache_status kcache_entry_unit(kcache_reader *r, const char *path, char *unit, size_t cap);
/* An entry read whole and validated as a lookup validates a hit (a regular file of the store's
   owner or root that nobody else may write, its header, key record, digest and both checksums),
   for a tool that copies it: its key into key (kcache_key_free it whatever the result) and its
   payload (KCACHE_FREE it) in *data, *size. KCACHE_ENOENT, KCACHE_EUNSAFE (another user's or
   writable by others), KCACHE_ECORRUPT, KCACHE_EDISABLED (a zstd entry, built without KCACHE_ZSTD),
   KCACHE_ENOMEM. */
KCACHE_API kcache_status kcache_entry_load(kcache_reader *r, kcache_hash128 digest, kcache_key *key, void **data, size_t *size);

/* Every name in the store's entry shards (e/00 .. e/ff), one at a time: what a summary counts. */
typedef struct kcache_entry_walk kcache_entry_walk;
typedef enum kcache_file_kind { KCACHE_KIND_FILE, KCACHE_KIND_DIR, KCACHE_KIND_OTHER } kcache_file_kind;
typedef struct kcache_entry_file {
    char path[48];          /* relative to the store, for kcache_entry_read ("" when the name is longer) */
    int named;              /* its name is an entry's, "<32 hex>.kce" */
    kcache_hash128 digest;  /* named: the digest the name says */
    int other_shard;        /* named, but in another shard than its digest's: no lookup finds it */
    kcache_file_kind kind;  /* not followed: a symlink is KCACHE_KIND_OTHER */
    uint64_t size;
    uint32_t uid;
    uint32_t mode;          /* the permission bits */
} kcache_entry_file;
KCACHE_API kcache_status kcache_entry_walk_open(kcache_reader *r, kcache_entry_walk **out);
/* The next name: KCACHE_OK, or KCACHE_MISS when there is none left. */
KCACHE_API kcache_status kcache_entry_walk_next(kcache_entry_walk *w, kcache_entry_file *out);
KCACHE_API void kcache_entry_walk_close(kcache_entry_walk *w);

/* ---- temp files (DIR/tmp): what a writer has in progress, and what the next open removes ---- */
typedef struct kcache_temp_files {
    uint64_t files, bytes;              /* everything in tmp/ (but dot files) */
    uint64_t orphaned, orphaned_bytes;  /* kcache's own whose writer is gone or a day old: the next
                                           kcache_open removes them */
    uint64_t in_progress;               /* the rest */
} kcache_temp_files;
KCACHE_API kcache_status kcache_read_temp_files(kcache_reader *r, kcache_temp_files *out);

/* ---- key records: the fields of a key as the store keeps them ---- */
/* Decodes a key record (an index item's) into k (kcache_key_free it, whatever the result; its
   file fields hold the stamps as stored). KCACHE_ECORRUPT when the record fails validation. */
KCACHE_API kcache_status kcache_record_decode(const void *record, size_t len, kcache_key *k);
/* Field i (0 .. k->count - 1, in the key's canonical order) of a key; NULL past the end. The
   fields are one array: field i + 1 follows field i. */
KCACHE_API const kcache_key_field *kcache_key_field_at(const kcache_key *k, uint32_t i);

/* How many of k's fields (name, type and value) the key record holds equal, its decoding into
   decoded (kcache_key_free it whatever the result); -1 when the record does not decode. */
KCACHE_API int kcache_record_compare(const void *record, size_t len, const kcache_key *k, kcache_key *decoded);
/* The fields that differ between a stored key and the key now, both previews, as kcache_explain
   words them ("opt: "1" (stored) vs "2" (now); ..."), escaped. Returns the length it needed, as
   snprintf; writes at most cap bytes, terminated (cut at a character). */
KCACHE_API size_t kcache_key_diff_text(const kcache_key *stored, const kcache_key *now, char *buf, size_t cap);
/* The file fields whose stamps make the stored key stale under policy ("file dep (/a.h): mtime
   content differ; ..."), as kcache_explain words them. Returns as kcache_key_diff_text. */
KCACHE_API size_t kcache_key_stamps_text(const kcache_key *stored, const kcache_key *now, int policy, char *buf, size_t cap);
/* Whether a file field's preview is a digest ("<N bytes xxh128:...>"), not the value's text. */
KCACHE_API int kcache_preview_is_digest(const kcache_key_field *f);
#define KCACHE_PREVIEW_BYTES 64 /* a value's bytes a preview keeps as text (longer ones: a digest, or a path's "...tail") */

/* How a file field's stored stamp compares with the file now: the bits that differ (0: same). */
enum { KCACHE_STAMP_DIFF_MTIME = 1, KCACHE_STAMP_DIFF_SIZE = 2, KCACHE_STAMP_DIFF_CONTENT = 4 };
KCACHE_API int kcache_stamp_compare(const kcache_key_field *stored, const kcache_key_field *now);
/* Whether such a difference makes the entry stale under a policy (KCACHE_STAMP_HYBRID ...): the
   next get misses with the reason "stamp". */
KCACHE_API int kcache_stamp_stale(int diff, int policy);

/* ---- a dependency as it is now, looked at safely ---- */
/* The store's owner chose the path; whoever looks (root, a reader of a shared store) must not block
   on a FIFO put there, follow a symlink or read another user's file. So the file is opened without
   following a link and without blocking, checked on the descriptor, and read only when it is a
   regular file of owner_uid or root whose size is the stored one, and at most max_read bytes. */
typedef enum kcache_dep_state {
    KCACHE_DEP_READ,        /* stat and content now in `now` (content zero when over max_read) */
    KCACHE_DEP_OTHER_SIZE,  /* another size than stored: stat in `now`, not read (it changed) */
    KCACHE_DEP_MISSING,     /* no such file */
    KCACHE_DEP_SYMLINK,     /* a symlink: not followed */
    KCACHE_DEP_NOT_REGULAR, /* a FIFO, device, directory or socket: not read */
    KCACHE_DEP_FOREIGN,     /* owned by another user (uid): not read */
    KCACHE_DEP_ERROR        /* cannot be opened or stat'ed (error: an errno) */
} kcache_dep_state;
typedef struct kcache_dep {
    kcache_dep_state state;
    kcache_key_field now;   /* mtime_ns, file_size and content, as far as state says */
    uint32_t uid;           /* the file's owner (KCACHE_DEP_FOREIGN) */
    int error;              /* KCACHE_DEP_ERROR: the errno */
} kcache_dep;
/* KCACHE_OK with *out filled (whatever its state), KCACHE_EINVAL. */
KCACHE_API kcache_status kcache_dep_now(const kcache_key_field *stored, const char *path, uint32_t owner_uid, uint64_t max_read,
                                        kcache_dep *out);
/* A few words for a state ("a symlink: not followed", "not a regular file: not read", ...). */
KCACHE_API const char *kcache_dep_state_text(kcache_dep_state s);

/* ---- a unit's index log: what is stored, what left and why, traced misses ---- */
typedef struct kcache_index kcache_index;
typedef enum kcache_index_list {
    KCACHE_INDEX_LIVE,    /* overloads stored now (oldest first) */
    KCACHE_INDEX_GONE,    /* overloads that left (the last 32), with why */
    KCACHE_INDEX_MISSED,  /* traced misses (KCACHE_TRACE=1: the last 32) with the missing key */
    KCACHE_INDEX_LISTS
} kcache_index_list;
typedef struct kcache_index_item {
    kcache_hash128 digest;
    int64_t when;                 /* stored, gone or missed at (ns since 1970); 0: not known */
    uint64_t size;                /* payload bytes */
    kcache_reason reason;         /* gone, missed: why */
    uint32_t pid;                 /* missed: the process */
    const unsigned char *record;  /* the key record (kcache_record_decode), valid until the index is freed */
    uint32_t record_len;
} kcache_index_item;
/* Reads a unit's index log (replaying it as the library does). KCACHE_ENOENT when the unit has
   none, KCACHE_ECORRUPT when it fails validation (or is not the owner's), KCACHE_EDISABLED with
   KCACHE_NO_EXPLAIN. */
KCACHE_API kcache_status kcache_index_read(kcache_reader *r, const char *unit, kcache_index **out);
KCACHE_API uint32_t kcache_index_count(const kcache_index *ix, kcache_index_list list);
/* Item i of a list; NULL past its end. */
KCACHE_API const kcache_index_item *kcache_index_at(const kcache_index *ix, kcache_index_list list, uint32_t i);
KCACHE_API void kcache_index_free(kcache_index *ix);
/* The log as read: its records (every one appended since the last rewrite) and its bytes. */
KCACHE_API void kcache_index_size(const kcache_index *ix, size_t *records, size_t *bytes);
/* An index log in memory (a copy of a file, len bytes), replayed as kcache_index_read replays one:
   for an index file outside a store, fuzzers and tests. The index keeps its own copy. KCACHE_ECORRUPT
   when it is not an index or its header fails (why, when not NULL, says which in a few words),
   KCACHE_ETOOBIG over KCACHE_INDEX_MAX, KCACHE_ENOMEM. */
#define KCACHE_INDEX_MAX ((size_t)64 << 20) /* a larger index is damage */
KCACHE_API kcache_status kcache_index_decode(const void *buf, size_t len, kcache_index **out, char *why, size_t cap);
/* What replaying the log met. */
typedef struct kcache_index_log {
    const char *unit;             /* the unit its header names (valid until the index is freed; a NUL
                                     in the name cuts it: unit_len is the header's) */
    size_t unit_len;
    uint64_t rewritten_at;        /* the log's length after its last rewrite */
    size_t bytes, records;        /* the log's bytes, and the sound records in them */
    size_t by_kind[4];            /* records: live, gone, missed, forgotten */
    size_t damaged_bytes;         /* bytes that do not decode as records (kcache skips them) ... */
    size_t damaged_places;        /* ... in how many places */
    size_t dropped[KCACHE_INDEX_LISTS]; /* gone and missed items older than the ones kept (kcache forgets them too) */
} kcache_index_log;
/* What the log held and what replaying it met (an index from kcache_index_read: its unit, sizes and
   records; the counts by kind, of damage and of dropped items are kcache_index_decode's and
   kcache_index_load's). */
KCACHE_API void kcache_index_log_info(const kcache_index *ix, kcache_index_log *out);
/* An index file read whole (at most KCACHE_INDEX_MAX bytes) and decoded as kcache_index_decode
   does, whatever unit it names: `path` inside the reader's store (r not NULL: a regular file the
   store trusts, not through a link; kcache_index_path or kcache_index_file's path) or as it is
   (r NULL). why says what failed: KCACHE_ENOENT, KCACHE_EUNSAFE, KCACHE_EIO, KCACHE_ETOOBIG,
   KCACHE_ENOMEM, else as kcache_index_decode. */
KCACHE_API kcache_status kcache_index_load(kcache_reader *r, const char *path, kcache_index **out, char *why, size_t cap);
/* A unit's index file, relative to the store: "i/XX/<32 hex>.kci" (cap: 48 is enough). */
KCACHE_API kcache_status kcache_index_path(const char *unit, char *out, size_t cap);
/* Traced miss i of the index, explained as kcache_explain explained it then (the closest stored
   overload and the fields that differ, the stamp that changed, when it was evicted). Returns the
   length it needed, as snprintf; writes at most cap bytes, terminated. */
KCACHE_API size_t kcache_index_explain(const kcache_index *ix, uint32_t missed_i, const char *unit, int policy, char *buf, size_t cap);

/* The index files of a store, one at a time (for a tool that lists every unit). */
typedef struct kcache_index_walk kcache_index_walk;
typedef struct kcache_index_file {
    uint64_t name_lo;       /* the low 64 bits of the unit name's digest (from the file name) */
    uint64_t ino, size;     /* the file's, to tell a changed one */
    int64_t mtime_ns;
    char path[48];          /* relative to the store */
    /* 0.5 */
    kcache_hash128 name;    /* the whole digest the file's name says (the unit's, when it is where it belongs) */
    int other_shard;        /* in another shard than its name's: kcache never reads it */
} kcache_index_file;
KCACHE_API kcache_status kcache_index_walk_open(kcache_reader *r, kcache_index_walk **out);
/* The next index file: KCACHE_OK, or KCACHE_MISS when there is none left. */
KCACHE_API kcache_status kcache_index_walk_next(kcache_index_walk *w, kcache_index_file *out);
/* The unit the current file names in its header (cap: KCACHE_UNIT_MAX is enough). KCACHE_ECORRUPT
   when the header is not an index's. */
KCACHE_API kcache_status kcache_index_walk_unit(kcache_index_walk *w, char *unit, size_t cap);

KCACHE_API void kcache_index_walk_close(kcache_index_walk *w);

/* ---- the stats file: what every process using the store publishes ---- */
/* Counters, one per kcache_stats field that counts events; a process's and the store's totals.
   The names follow the metrics' (DESIGN: kcache_hits_total{tier=...}, ...). */
typedef enum kcache_counter {
    KCACHE_CTR_HITS_MEMORY = 0, KCACHE_CTR_HITS_STORE, KCACHE_CTR_MISSES, KCACHE_CTR_PUTS, KCACHE_CTR_EVICTIONS,
    KCACHE_CTR_REJECTS, KCACHE_CTR_BYTES_READ, KCACHE_CTR_BYTES_WRITTEN, KCACHE_CTR_MEMORY_EVICTIONS,
    KCACHE_CTR_BUILDS, KCACHE_CTR_BUILD_WAITS, KCACHE_CTR_STORE_ERRORS,
    KCACHE_CTR_MISSES_BY_REASON = 16, /* + a kcache_reason: the misses of that reason */
    KCACHE_CTR_HITS_REMOTE = 32, KCACHE_CTR_HITS_LAYER, KCACHE_CTR_REMOTE_LOOKUPS, KCACHE_CTR_REMOTE_PUTS,
    KCACHE_CTR_REMOTE_ERRORS, KCACHE_CTR_REMOTE_TIMEOUTS, KCACHE_CTR_REMOTE_SKIPPED, KCACHE_CTR_REMOTE_CALLS,
    KCACHE_CTR_REMOTE_LATENCY_NS, KCACHE_CTR_REMOTE_REJECTS,
    KCACHE_CTR_BREAKER_OPENS, KCACHE_CTR_BREAKER_CLOSES, /* a process's breakers open now: opens - closes */
    KCACHE_CTR_BUILDS_CLAIMED_ELSEWHERE, /* (0.5) kcache_stats.builds_claimed_elsewhere */
    KCACHE_CTR_COUNT = 48
} kcache_counter;
/* Event kinds. Memory hits are sampled (the first of an entry, then at most one a second). */
typedef enum kcache_event_kind {
    KCACHE_EVENT_HIT_MEMORY = 1, KCACHE_EVENT_HIT_STORE, KCACHE_EVENT_MISS, KCACHE_EVENT_PUT, KCACHE_EVENT_EVICT,
    KCACHE_EVENT_HIT_REMOTE, KCACHE_EVENT_HIT_LAYER
} kcache_event_kind;
#define KCACHE_STATS_SLOTS 64        /* process slots */
#define KCACHE_STATS_UNITS 64        /* units per slot's table */
#define KCACHE_STATS_EVENTS 64       /* events per slot's ring */
#define KCACHE_STATS_UNIT_NAME 64    /* bytes of a unit's name kept in a unit table (cut) */
#define KCACHE_STATS_EVENT_NAME 80   /* ... in an event */
#define KCACHE_STATS_ROW_NAME 80     /* ... in a table row (a shard's URL) */
#define KCACHE_STATS_ROW_VALUES 8

typedef struct kcache_stats_file kcache_stats_file;
typedef enum kcache_slot_state {
    KCACHE_SLOT_FREE, KCACHE_SLOT_LIVE, KCACHE_SLOT_DEAD,
    KCACHE_SLOT_OTHER_DOMAIN /* a process of another host or pid namespace, not judged dead */
} kcache_slot_state;
typedef struct kcache_stats_slot {
    uint64_t owner;          /* pid << 32 | start time bits; 0: free (a new owner: a new session) */
    uint64_t epoch;          /* odd while the slot changes hands */
    uint64_t domain;
    int64_t opened, last;    /* when its kcache opened, its last event (ns) */
    uint64_t events;         /* events written (its ring's head) */
    uint32_t pid;
    kcache_slot_state state;
    int setting_up;          /* being claimed right now */
    char name[17];           /* the process's name, as it is (print it escaped) */
    uint64_t counters[KCACHE_CTR_COUNT];
} kcache_stats_slot;
typedef struct kcache_stats_snapshot {
    uint64_t totals[KCACHE_CTR_COUNT];     /* the store's: retired counters + every claimed slot's */
    kcache_stats_slot slots[KCACHE_STATS_SLOTS];
    unsigned claimed, processes;           /* slots claimed; live processes (one may hold several) */
    int consistent;                        /* no slot changed hands while it was read */
} kcache_stats_snapshot;
typedef struct kcache_stats_unit {
    uint64_t hash;           /* XXH3-128 lo of the unit's name; 0: an empty or changing entry */
    uint64_t hits_memory, hits_store, misses, puts, bytes_put;
    int64_t last;            /* its last event (ns) */
    kcache_reason last_miss; /* the reason of its last miss (when misses) */
    uint32_t name_len;       /* the name's full length (name is cut to KCACHE_STATS_UNIT_NAME) */
    int changing;            /* being rewritten while read: read it again next time */
    char name[KCACHE_STATS_UNIT_NAME + 1];
} kcache_stats_unit;
typedef struct kcache_stats_event {
    uint64_t seq;            /* the slot's n-th event, from 1 */
    int64_t time;
    uint64_t unit_hash, size, count; /* count: entries, for evictions */
    uint32_t pid, name_len;
    kcache_event_kind kind;
    int reason;              /* misses: a kcache_reason; puts: the kcache_status of the store write */
    char unit[KCACHE_STATS_EVENT_NAME + 1];
} kcache_stats_event;
/* Tables a part publishes per row: the remote tier's shards today (values: hits, misses, errors,
   timeouts, skipped calls; from 0.5 also [5] calls made and [6] since when a breaker of the shard
   is open, ns since 1970, 0: closed (set by the failure that opened it, cleared by the next call
   that succeeds); nvalues says how many), and a backend's nodes (KCACHE_STATS_NODES). Counted by
   every process using the store, since the file was made. */
typedef enum kcache_stats_table {
    KCACHE_STATS_SHARDS,
    KCACHE_STATS_NODES /* (0.6) a backend's servers, as kcache_remote_node_call publishes them: the same
                          values (hits and misses 0), the name "<shard's URL> <node>" (cut at 80
                          bytes); the two tables share their rows (a row of one is free in the other) */
} kcache_stats_table;
typedef struct kcache_stats_row {
    uint64_t id;             /* 0: a free row */
    char name[KCACHE_STATS_ROW_NAME + 1];
    unsigned nvalues;
    uint64_t value[KCACHE_STATS_ROW_VALUES];
} kcache_stats_row;

/* Maps DIR/stats read-only. KCACHE_ENOENT when there is none, KCACHE_ECORRUPT when it is damaged
   (the next process replaces it), KCACHE_EINVAL for a newer version's, KCACHE_EUNSAFE when it is
   not a regular file of the owner or root, KCACHE_EDISABLED with KCACHE_NO_PUB (and on Windows).
   The file is mapped: something outside kcache that truncates it makes reading it raise SIGBUS,
   which a tool that must survive that catches around these calls (kcache-top does). */
KCACHE_API kcache_status kcache_stats_file_open(kcache_reader *r, kcache_stats_file **out);
/* The same over an image in memory (a copy of a stats file, len bytes, kept by the caller until
   the handle is closed): for tests, fuzzers and saved snapshots. */
KCACHE_API kcache_status kcache_stats_file_from_image(const void *image, size_t len, kcache_stats_file **out);
KCACHE_API void kcache_stats_file_close(kcache_stats_file *sf);
/* Whether DIR/stats is now another file than the one sf maps (replaced: open it again; what was
   seen in the old one is history). An image is never replaced. */
KCACHE_API int kcache_stats_file_replaced(const kcache_stats_file *sf, kcache_reader *r);
/* When the file was made (ns since 1970). */
KCACHE_API int64_t kcache_stats_file_created(const kcache_stats_file *sf);
/* The slots and totals, consistent when it can (a few tries while slots change hands). */
KCACHE_API kcache_status kcache_stats_file_read(const kcache_stats_file *sf, kcache_stats_snapshot *out);
/* A slot's unit table: out[j] is entry j (hash 0 when empty or changing while read). */
KCACHE_API kcache_status kcache_stats_file_units(const kcache_stats_file *sf, unsigned slot, kcache_stats_unit out[KCACHE_STATS_UNITS]);
/* A slot's events after *seq (0: all its ring still holds), oldest first, at most cap; *seq becomes
   the last one read (or the ring's head). *n the number written. */
KCACHE_API kcache_status kcache_stats_file_events(const kcache_stats_file *sf, unsigned slot, uint64_t *seq, kcache_stats_event *out,
                                                  unsigned cap, unsigned *n);
/* The number of rows of a table, and row i of it (its id 0 when free). */
KCACHE_API unsigned kcache_stats_file_rows(kcache_stats_table table);
KCACHE_API kcache_status kcache_stats_file_row(const kcache_stats_file *sf, kcache_stats_table table, unsigned i, kcache_stats_row *out);

#ifdef __cplusplus
}
#endif
#endif /* KCACHE_H */

/* ============================================================================================== */
/* ============================================================================================== */
/*                                        IMPLEMENTATION                                          */
/* ============================================================================================== */
/* ============================================================================================== */
#ifdef KCACHE_IMPLEMENTATION
#ifndef KCACHE__IMPLEMENTED
#define KCACHE__IMPLEMENTED

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>

#if defined(KCACHE_MALLOC) && defined(KCACHE_FREE) && defined(KCACHE_REALLOC)
#elif !defined(KCACHE_MALLOC) && !defined(KCACHE_FREE) && !defined(KCACHE_REALLOC)
#define KCACHE_MALLOC(n) malloc(n)
#define KCACHE_REALLOC(p, n) realloc(p, n)
#define KCACHE_FREE(p) free(p)
#else
#error "define all of KCACHE_MALLOC, KCACHE_REALLOC and KCACHE_FREE, or none of them"
#endif

#ifndef KCACHE_ASSERT
#include <assert.h>
#define KCACHE_ASSERT(x) assert(x)
#endif
/* Misuse checks (>>misuse): debug builds only, so a release build's calls cost what they did. */
#ifndef KCACHE_CHECKS
#ifdef NDEBUG
#define KCACHE_CHECKS 0
#else
#define KCACHE_CHECKS 1
#endif
#endif

#if defined(_WIN32)
/* Win32 (Vista or later; mingw-w64 or MSVC): >>platform maps kcache's POSIX-style calls onto it.
   The two macros trim windows.h; they are undone after it unless the program set them itself. */
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#define KCACHE__UNDEF_LEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#define KCACHE__UNDEF_NOMINMAX
#endif
#include <windows.h>
#include <io.h>
#include <fcntl.h>
#include <sys/types.h>
#ifdef KCACHE__UNDEF_LEAN
#undef WIN32_LEAN_AND_MEAN
#undef KCACHE__UNDEF_LEAN
#endif
#ifdef KCACHE__UNDEF_NOMINMAX
#undef NOMINMAX
#undef KCACHE__UNDEF_NOMINMAX
#endif
#if defined(_WIN32_WINNT) && _WIN32_WINNT < 0x0600
#error "kcache: the Win32 layer needs Windows Vista or later (_WIN32_WINNT >= 0x0600)"
#endif
#ifdef KCACHE_OPENCL
#error "kcache: kcache_cl_build (KCACHE_OPENCL) is not ported to Windows yet; build without KCACHE_OPENCL"
#endif
#else
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>
#endif
/* the optional parts (see OPTIONS) */
#ifdef KCACHE_ZSTD
#include <zstd.h>
#endif
#ifdef KCACHE_HMAC_OPENSSL
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif

/* What a system header included before kcache.h left visible (see the top of this file). glibc
   decides once, at its first header: __USE_XOPEN2K8 says whether POSIX 2008 is in; the constants
   checked after it are those of the headers just included, for libcs that decide per header. On
   32-bit glibc, off_t must be 64 bits (build claims sit at byte 2^40). One message, and nothing
   else of the implementation is compiled after it. */
#if !defined(_WIN32) &&                                                                               \
    ((defined(__GLIBC__) && !defined(__USE_XOPEN2K8)) || !defined(CLOCK_REALTIME) || !defined(CLOCK_MONOTONIC) || \
     !defined(O_CLOEXEC) || !defined(O_NOFOLLOW) || !defined(O_DIRECTORY) || !defined(AT_SYMLINK_NOFOLLOW) ||   \
     !defined(AT_REMOVEDIR))
#error "kcache: POSIX 2008 is hidden here (under a strict -std, a system header, or kcache.h without KCACHE_IMPLEMENTATION, was included first): in the file that defines KCACHE_IMPLEMENTATION, define it and include kcache.h before any other header, or compile that file with -D_GNU_SOURCE (or -std=gnu11)"
#define KCACHE__UNUSABLE
#elif defined(__GLIBC__) && defined(__WORDSIZE) && __WORDSIZE == 32 && !defined(__USE_FILE_OFFSET64)
#error "kcache: off_t is 32 bits here (a system header was included before kcache.h): in the file that defines KCACHE_IMPLEMENTATION, define it and include kcache.h before any other header, or compile that file with -D_FILE_OFFSET_BITS=64"
#define KCACHE__UNUSABLE
#endif
#ifndef KCACHE__UNUSABLE

#if defined(__GNUC__) || defined(__clang__)
#define KCACHE__UNUSED __attribute__((unused))
#define KCACHE__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define KCACHE__UNUSED
#define KCACHE__LIKELY(x) (x)
#endif

/* ============================================================================================== */
/* >>platform  threads, time, atomics, files: everything that differs between systems            */
/* ============================================================================================== */

#if !defined(_WIN32)
typedef pthread_mutex_t kcache__mutex;
typedef pthread_cond_t kcache__cond;
static void kcache__mutex_init(kcache__mutex *m) { pthread_mutex_init(m, NULL); }
static void kcache__mutex_destroy(kcache__mutex *m) { pthread_mutex_destroy(m); }
static void kcache__mutex_lock(kcache__mutex *m) { pthread_mutex_lock(m); }
static int kcache__mutex_trylock(kcache__mutex *m) { return pthread_mutex_trylock(m) == 0; }
static void kcache__mutex_unlock(kcache__mutex *m) { pthread_mutex_unlock(m); }
static void kcache__cond_init(kcache__cond *c) { pthread_cond_init(c, NULL); }
static void kcache__cond_destroy(kcache__cond *c) { pthread_cond_destroy(c); }
/* Waits until signalled or the wall-clock deadline (ns since 1970); 0 when the deadline passed. */
static int kcache__cond_wait_until(kcache__cond *c, kcache__mutex *m, int64_t deadline_ns) {
    struct timespec ts;
    ts.tv_sec = (time_t)(deadline_ns / 1000000000);
    ts.tv_nsec = (long)(deadline_ns % 1000000000);
    return pthread_cond_timedwait(c, m, &ts) != ETIMEDOUT;
}
static void kcache__cond_broadcast(kcache__cond *c) { pthread_cond_broadcast(c); }

/* Wall-clock nanoseconds since 1970: use records and tombstones are compared across processes. */
static int64_t kcache__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static int64_t kcache__mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static void kcache__sleep_us(unsigned us) {
    struct timespec ts;
    ts.tv_sec = (time_t)(us / 1000000);
    ts.tv_nsec = (long)(us % 1000000) * 1000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}
static void kcache__sleep_ms(unsigned ms) { kcache__sleep_us(ms * 1000); }
#else
/* Win32: slim reader/writer locks (used exclusively) and condition variables; no destructor. */
typedef SRWLOCK kcache__mutex;
typedef CONDITION_VARIABLE kcache__cond;
static void kcache__mutex_init(kcache__mutex *m) { InitializeSRWLock(m); }
static void kcache__mutex_destroy(kcache__mutex *m) { (void)m; }
static void kcache__mutex_lock(kcache__mutex *m) { AcquireSRWLockExclusive(m); }
static int kcache__mutex_trylock(kcache__mutex *m) { return TryAcquireSRWLockExclusive(m) != 0; }
static void kcache__mutex_unlock(kcache__mutex *m) { ReleaseSRWLockExclusive(m); }
static void kcache__cond_init(kcache__cond *c) { InitializeConditionVariable(c); }
static void kcache__cond_destroy(kcache__cond *c) { (void)c; }
static void kcache__cond_broadcast(kcache__cond *c) { WakeAllConditionVariable(c); }

/* FILETIME counts 100 ns from 1601; kcache counts ns from 1970. */
static int64_t kcache__win_ft_ns(uint64_t ft) { return ((int64_t)ft - (int64_t)116444736000000000LL) * 100; }
static int64_t kcache__now_ns(void) {
    FILETIME ft;
#if defined(_WIN32_WINNT) && _WIN32_WINNT >= 0x0602
    GetSystemTimePreciseAsFileTime(&ft);
#else
    GetSystemTimeAsFileTime(&ft); /* before Windows 8: tick resolution */
#endif
    return kcache__win_ft_ns(((uint64_t)ft.dwHighDateTime << 32) | ft.dwLowDateTime);
}
static int64_t kcache__mono_ns(void) {
    LARGE_INTEGER c, f;
    QueryPerformanceCounter(&c);
    QueryPerformanceFrequency(&f);
    /* split so that the product cannot overflow */
    return (int64_t)(c.QuadPart / f.QuadPart) * 1000000000 + (int64_t)(c.QuadPart % f.QuadPart) * 1000000000 / f.QuadPart;
}
/* The wall-clock deadline becomes a timeout in whole milliseconds, rounded up so that a wait never
   ends early and never spins with 0. */
static int kcache__cond_wait_until(kcache__cond *c, kcache__mutex *m, int64_t deadline_ns) {
    int64_t left = deadline_ns - kcache__now_ns();
    DWORD ms;
    if (left <= 0) return 0;
    ms = left / 1000000 >= (int64_t)0x7fffffff ? (DWORD)0x7fffffff : (DWORD)((left + 999999) / 1000000);
    if (SleepConditionVariableSRW(c, m, ms, 0)) return 1;
    return kcache__now_ns() < deadline_ns; /* woken by the timeout: only "passed" when it did */
}
static void kcache__sleep_ms(unsigned ms) { Sleep(ms); }
static void kcache__sleep_us(unsigned us) { Sleep((us + 999) / 1000); } /* the timer's grain is coarser anyway */
#endif

/* ---- atomics: every atomic access of kcache.h goes through these ----------------------------
   GCC and clang: the __atomic builtins. MSVC (and clang in MSVC mode): Interlocked intrinsics and
   volatile accesses of aligned words, which x64 and ARM64 make single-copy atomic (32-bit x86 reads
   and writes 64-bit words through a compare-exchange), with barriers for the ordered forms. */
#if defined(_MSC_VER)
#include <intrin.h>
#if defined(_M_IX86) || defined(_M_X64)
#define KCACHE__ACQ_REL_BARRIER() _ReadWriteBarrier() /* x86 keeps loads and stores in order itself */
#else
#define KCACHE__ACQ_REL_BARRIER() MemoryBarrier()
#endif
static long kcache__atomic_add(long *p, long v) { return _InterlockedExchangeAdd((volatile long *)p, v) + v; }
static uint64_t kcache__atomic_load_u64(const uint64_t *p) {
#if defined(_M_IX86)
    return (uint64_t)_InterlockedCompareExchange64((volatile __int64 *)(uintptr_t)p, 0, 0);
#else
    return *(const volatile uint64_t *)p;
#endif
}
static void kcache__atomic_store_u64(uint64_t *p, uint64_t v) {
#if defined(_M_IX86)
    _InterlockedExchange64((volatile __int64 *)p, (__int64)v);
#else
    *(volatile uint64_t *)p = v;
#endif
}
static uint64_t kcache__atomic_load_u64_acq(const uint64_t *p) {
    uint64_t v = kcache__atomic_load_u64(p);
    KCACHE__ACQ_REL_BARRIER();
    return v;
}
static KCACHE__UNUSED void kcache__atomic_store_u64_rel(uint64_t *p, uint64_t v) {
    KCACHE__ACQ_REL_BARRIER();
    kcache__atomic_store_u64(p, v);
}
static int kcache__atomic_cas_u64(uint64_t *p, uint64_t expect, uint64_t want) {
    return (uint64_t)_InterlockedCompareExchange64((volatile __int64 *)p, (__int64)want, (__int64)expect) == expect;
}
static KCACHE__UNUSED void kcache__atomic_fetch_add_u64(uint64_t *p, uint64_t v) { _InterlockedExchangeAdd64((volatile __int64 *)p, (__int64)v); }
static void kcache__atomic_or_u64(uint64_t *p, uint64_t v) { _InterlockedOr64((volatile __int64 *)p, (__int64)v); }
static KCACHE__UNUSED uint64_t kcache__atomic_inc_u64(uint64_t *p) { return (uint64_t)_InterlockedIncrement64((volatile __int64 *)p); }
static uint32_t kcache__atomic_load_u32(const uint32_t *p) {
    uint32_t v = *(const volatile uint32_t *)p;
    KCACHE__ACQ_REL_BARRIER();
    return v;
}
static void kcache__atomic_store_u32(uint32_t *p, uint32_t v) {
    KCACHE__ACQ_REL_BARRIER();
    *(volatile uint32_t *)p = v;
}
/* On failure *expect becomes the value found (as __atomic_compare_exchange_n). */
static int kcache__atomic_cas_u32(uint32_t *p, uint32_t *expect, uint32_t want) {
    uint32_t found = (uint32_t)_InterlockedCompareExchange((volatile long *)p, (long)want, (long)*expect);
    if (found == *expect) return 1;
    *expect = found;
    return 0;
}
static void *kcache__atomic_load_ptr(void *const *p) {
    void *v = *(void *const volatile *)p;
    KCACHE__ACQ_REL_BARRIER();
    return v;
}
static void kcache__atomic_store_ptr(void **p, void *v) { _InterlockedExchangePointer((void *volatile *)p, v); }
static void kcache__atomic_fence(void) { MemoryBarrier(); }
static KCACHE__UNUSED void kcache__atomic_fence_release(void) { KCACHE__ACQ_REL_BARRIER(); }
#else
static long kcache__atomic_add(long *p, long v) { return __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL); }
static uint64_t kcache__atomic_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void kcache__atomic_store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static uint64_t kcache__atomic_load_u64_acq(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static KCACHE__UNUSED void kcache__atomic_store_u64_rel(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static int kcache__atomic_cas_u64(uint64_t *p, uint64_t expect, uint64_t want) {
    return __atomic_compare_exchange_n(p, &expect, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static KCACHE__UNUSED void kcache__atomic_fetch_add_u64(uint64_t *p, uint64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static void kcache__atomic_or_u64(uint64_t *p, uint64_t v) { __atomic_fetch_or(p, v, __ATOMIC_ACQ_REL); }
static KCACHE__UNUSED uint64_t kcache__atomic_inc_u64(uint64_t *p) { return __atomic_add_fetch(p, 1, __ATOMIC_RELAXED); }
static uint32_t kcache__atomic_load_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void kcache__atomic_store_u32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
/* On failure *expect becomes the value found. */
static int kcache__atomic_cas_u32(uint32_t *p, uint32_t *expect, uint32_t want) {
    return __atomic_compare_exchange_n(p, expect, want, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static void *kcache__atomic_load_ptr(void *const *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void kcache__atomic_store_ptr(void **p, void *v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static void kcache__atomic_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static KCACHE__UNUSED void kcache__atomic_fence_release(void) { __atomic_thread_fence(__ATOMIC_RELEASE); }
#endif

/* ---- memory ----
   What a kcache holds goes through its configuration's allocator callbacks when it has them
   (kcache_config.alloc_fn / free_fn / alloc_user), else through KCACHE_MALLOC / KCACHE_FREE: the
   kcache itself, its memory cache (tables, nodes and every payload), single-flight records, the
   store's state, and the buffers a call needs for a while (keys kcache makes, headers, records,
   index files being read or written, paths, directory listings), each freed through the kcache__mem
   it came from (one freed by another function carries it: kcache__ix, kcache__read, kcache__dir,
   kcache__sb, kcache__blob). What stays on KCACHE_MALLOC (README: Vendoring, Memory): keys the
   caller builds and the field arrays inside any key (kcache_key_free frees them, and a key names no
   allocator), a build function's buffer, the process-wide registry (shared by handles that may have
   other allocators), Windows' wide-character paths, the remote tier, the OpenCL and Vulkan parts. */
typedef struct kcache__mem { kcache_alloc_fn alloc; kcache_free_fn free; void *user; } kcache__mem;
static void *kcache__mem_alloc(const kcache__mem *m, size_t n) { return m && m->alloc ? m->alloc(m->user, n ? n : 1) : KCACHE_MALLOC(n); }
static void kcache__mem_free(const kcache__mem *m, void *p) {
    if (!p) return;
    if (m && m->free) m->free(m->user, p);
    else KCACHE_FREE(p);
}

#if !defined(_WIN32)
static uint32_t kcache__pid(void) { return (uint32_t)getpid(); }
#else
static uint32_t kcache__pid(void) { return (uint32_t)GetCurrentProcessId(); }
#endif

/* ---- files: every system call kcache makes on a file, a directory or a mapping ----------------
   The store, index and stats layers call only kcache__io_*: one list for the Win32 layer to
   implement, and one place where a test build can make any call fail (KCACHE_FAULT_INJECTION).
   Conventions are POSIX's: -1 (or NULL) with errno set; descriptors are ints; paths inside the
   store are relative to a directory descriptor and never followed through a symlink. */

/* What kcache needs to know of a file; the same on every system. */
typedef struct {
    uint64_t size, dev, ino, nlink;
    int64_t mtime_ns, ctime_ns; /* ctime: the last change of the inode, which nobody can set back */
    uint32_t uid, gid;
    unsigned perm; /* permission bits with setuid, setgid and sticky (07777) */
    int kind;      /* KCACHE__KIND_* */
} kcache__finfo;
#define KCACHE__KIND_FILE 1
#define KCACHE__KIND_DIR 2
#define KCACHE__KIND_OTHER 3 /* a symlink, FIFO, socket or device: never kcache's */

/* open flags, the same on every system */
#define KCACHE__RD 0x01
#define KCACHE__WR 0x02
#define KCACHE__RW 0x03
#define KCACHE__CREATE 0x04    /* create; with KCACHE__EXCL only when it does not exist */
#define KCACHE__EXCL 0x08
#define KCACHE__DIRECTORY 0x10 /* a directory, opened to work relative to it */
#define KCACHE__APPEND 0x20
#define KCACHE__NONBLOCK 0x40  /* a FIFO planted where a file belongs must not block the open */
#define KCACHE__SEARCH 0x80    /* a directory opened only to look beneath it (O_PATH): needs search
                                  permission alone, as a path walk does */
#define KCACHE__GROUPRW 0x100  /* created 0660 (a group-shared store), not 0600 */

#define KCACHE__LOCK_SHARED 1
#define KCACHE__LOCK_EXCLUSIVE 2
#define KCACHE__LOCK_NONE 3

#ifdef KCACHE_FAULT_INJECTION
/* Test builds: the program defines this function; it names the operation and the line of the call
   and returns an errno to fail that call with, or 0 to make it. */
int KCACHE_FAULT_INJECTION(const char *op, int line);
static int kcache__fault_errno(int e) {
    if (e) errno = e;
    return e != 0;
}
#define KCACHE__FAULT(op) kcache__fault_errno(KCACHE_FAULT_INJECTION(op, __LINE__))
#else
#define KCACHE__FAULT(op) 0
#endif

#define kcache__io_open(path, how) (KCACHE__FAULT("open") ? -1 : kcache__os_open(path, how))
#define kcache__io_openat(dirfd, name, how) (KCACHE__FAULT("open") ? -1 : kcache__os_openat(dirfd, name, how))
#define kcache__io_open_beneath(dirfd, rel, how) (KCACHE__FAULT("openat2") ? -1 : kcache__os_open_beneath(dirfd, rel, how))
#define kcache__io_read(fd, buf, n) (KCACHE__FAULT("read") ? (ptrdiff_t)-1 : kcache__os_read(fd, buf, n))
#define kcache__io_pread(fd, buf, n, at) (KCACHE__FAULT("read") ? (ptrdiff_t)-1 : kcache__os_pread(fd, buf, n, at))
#define kcache__io_pwrite(fd, buf, n, at) (KCACHE__FAULT("write") ? (ptrdiff_t)-1 : kcache__os_pwrite(fd, buf, n, at))
#define kcache__io_write2(fd, a, an, b, bn) (KCACHE__FAULT("write") ? (ptrdiff_t)-1 : kcache__os_write2(fd, a, an, b, bn))
#define kcache__io_fsync(fd) (KCACHE__FAULT("fsync") ? -1 : kcache__os_fsync(fd))
#define kcache__io_close(fd) (KCACHE__FAULT("close") ? (kcache__os_close(fd), -1) : kcache__os_close(fd))
#define kcache__io_rename(fromdir, from, todir, to) (KCACHE__FAULT("rename") ? -1 : kcache__os_rename(fromdir, from, todir, to))
#define kcache__io_link(fromdir, from, todir, to) (KCACHE__FAULT("link") ? -1 : kcache__os_link(fromdir, from, todir, to))
#define kcache__io_unlink(dirfd, name) (KCACHE__FAULT("unlink") ? -1 : kcache__os_unlink(dirfd, name, 0))
#define kcache__io_rmdir(dirfd, name) (KCACHE__FAULT("unlink") ? -1 : kcache__os_unlink(dirfd, name, 1))
#define kcache__io_mkdir(dirfd, name) (KCACHE__FAULT("mkdir") ? -1 : kcache__os_mkdir(dirfd, name))
#define kcache__io_mkdir_path(path) (KCACHE__FAULT("mkdir") ? -1 : kcache__os_mkdir(-1, path))
#define kcache__io_fstat(fd, fi) (KCACHE__FAULT("stat") ? -1 : kcache__os_fstat(fd, fi))
#define kcache__io_statat(dirfd, name, fi) (KCACHE__FAULT("stat") ? -1 : kcache__os_statat(dirfd, name, fi))
#define kcache__io_stat(path, fi) (KCACHE__FAULT("stat") ? -1 : kcache__os_stat(path, fi))
#define kcache__io_allocate(fd, len) (KCACHE__FAULT("allocate") ? errno : kcache__os_allocate(fd, len))
#define kcache__io_truncate(fd, len) (KCACHE__FAULT("truncate") ? -1 : kcache__os_truncate(fd, len))
#define kcache__io_lock(fd, at, type, wait) (KCACHE__FAULT("lock") ? -1 : kcache__os_lock(fd, at, type, wait))
#define kcache__io_map(fd, len) (KCACHE__FAULT("map") ? (unsigned char *)NULL : kcache__os_map(fd, len))
#define kcache__io_unmap(p, len) kcache__os_unmap(p, len)
#define kcache__io_dir_open(m, dirfd, name) (KCACHE__FAULT("opendir") ? (kcache__dir *)NULL : kcache__os_dir_open(m, dirfd, name))
#define kcache__io_chmod(fd, mode) (KCACHE__FAULT("chmod") ? -1 : kcache__os_chmod(fd, mode))
#define kcache__io_chgrp(fd, gid) (KCACHE__FAULT("chmod") ? -1 : kcache__os_chgrp(fd, gid))
#define kcache__io_readlink(dirfd, name, buf, cap) (KCACHE__FAULT("readlink") ? (ptrdiff_t)-1 : kcache__os_readlink(dirfd, name, buf, cap))
#define kcache__io_space(fd, avail, total) (KCACHE__FAULT("statfs") ? -1 : kcache__os_space(fd, avail, total))
#define kcache__io_dir_next(d) kcache__os_dir_next(d)
#define kcache__io_dir_close(d) kcache__os_dir_close(d)

#if !defined(_WIN32)

#if defined(__linux__)
#include <sys/syscall.h>
#endif
/* syscall() is declared only with the BSD/GNU extensions visible (not under a bare _POSIX_C_SOURCE). */
#if defined(__linux__) && defined(SYS_openat2) && (defined(__USE_MISC) || (!defined(__GLIBC__) && (defined(_GNU_SOURCE) || defined(_BSD_SOURCE))))
#define KCACHE__HAVE_OPENAT2 1
#endif

static void kcache__finfo_from(const struct stat *s, kcache__finfo *fi) {
    fi->size = (uint64_t)s->st_size;
    fi->dev = (uint64_t)s->st_dev;
    fi->ino = (uint64_t)s->st_ino;
    fi->nlink = (uint64_t)s->st_nlink;
#if defined(__APPLE__)
    fi->mtime_ns = (int64_t)s->st_mtimespec.tv_sec * 1000000000 + s->st_mtimespec.tv_nsec;
    fi->ctime_ns = (int64_t)s->st_ctimespec.tv_sec * 1000000000 + s->st_ctimespec.tv_nsec;
#else
    fi->mtime_ns = (int64_t)s->st_mtim.tv_sec * 1000000000 + s->st_mtim.tv_nsec;
    fi->ctime_ns = (int64_t)s->st_ctim.tv_sec * 1000000000 + s->st_ctim.tv_nsec;
#endif
    fi->uid = (uint32_t)s->st_uid;
    fi->gid = (uint32_t)s->st_gid;
    fi->perm = (unsigned)(s->st_mode & 07777);
    fi->kind = S_ISREG(s->st_mode) ? KCACHE__KIND_FILE : S_ISDIR(s->st_mode) ? KCACHE__KIND_DIR : KCACHE__KIND_OTHER;
}

static int kcache__os_flags(int how) {
    int f = O_CLOEXEC | O_NOFOLLOW;
    f |= (how & KCACHE__RW) == KCACHE__RW ? O_RDWR : (how & KCACHE__WR) ? O_WRONLY : O_RDONLY;
    if (how & KCACHE__CREATE) f |= O_CREAT;
    if (how & KCACHE__EXCL) f |= O_EXCL;
    if (how & KCACHE__DIRECTORY) f |= O_DIRECTORY;
    if (how & KCACHE__APPEND) f |= O_APPEND;
    if (how & KCACHE__NONBLOCK) f |= O_NONBLOCK;
    if (how & KCACHE__SEARCH) {
#if defined(O_PATH)
        f = (f & ~(O_RDWR | O_WRONLY)) | O_PATH; /* Linux: search permission is enough */
#elif defined(O_SEARCH)
        f = (f & ~(O_RDWR | O_WRONLY)) | O_SEARCH;
#endif
    }
    return f;
}
/* Files kcache creates: its user's alone (0600), or its group's too in a shared store; the umask
   can only take bits away, and kcache sets exactly these on the files it reopens for writing. */
static unsigned kcache__os_mode(int how) { return (how & KCACHE__GROUPRW) ? 0660 : 0600; }
/* A path outside the store (a source file, a dependency, the store's own directory): followed. */
static int kcache__os_open(const char *path, int how) {
    return open(path, kcache__os_flags(how) & ~O_NOFOLLOW, kcache__os_mode(how));
}
/* A name in a directory: a symlink there is not followed (ELOOP). Files are created 0600 (0660
   shared) less the umask; directories made by kcache are 0700. */
static int kcache__os_openat(int dirfd, const char *name, int how) {
    return openat(dirfd, name, kcache__os_flags(how), kcache__os_mode(how));
}
/* Opens a relative path beneath dirfd, refusing symlinks anywhere on it, in one call where the
   kernel has openat2 (Linux 5.6+). -1 with errno ENOSYS where it cannot: the caller walks. The
   argument structure is declared here: libcs without the kernel's headers (musl) lack it. */
static int kcache__os_open_beneath(int dirfd, const char *rel, int how) {
#if defined(KCACHE__HAVE_OPENAT2)
    struct { uint64_t flags, mode, resolve; } h;
    long r;
    memset(&h, 0, sizeof h);
    h.flags = (uint64_t)kcache__os_flags(how);
    h.mode = (how & KCACHE__CREATE) ? kcache__os_mode(how) : 0;
    h.resolve = 0x04 | 0x08; /* RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH */
    r = syscall(SYS_openat2, dirfd, rel, &h, sizeof h);
    if (r < 0 && errno == EPERM) errno = ENOSYS; /* a seccomp filter that refuses it: walk */
    return (int)r;
#else
    (void)dirfd; (void)rel; (void)how;
    errno = ENOSYS;
    return -1;
#endif
}
static ptrdiff_t kcache__os_read(int fd, void *buf, size_t n) { return read(fd, buf, n); }
static ptrdiff_t kcache__os_pread(int fd, void *buf, size_t n, uint64_t at) { return pread(fd, buf, n, (off_t)at); }
static ptrdiff_t kcache__os_pwrite(int fd, const void *buf, size_t n, uint64_t at) { return pwrite(fd, buf, n, (off_t)at); }
/* Writes two buffers at the file position, in one system call when the kernel takes them whole;
   returns the bytes written by that call. */
static ptrdiff_t kcache__os_write2(int fd, const void *a, size_t an, const void *b, size_t bn) {
    struct iovec v[2];
    v[0].iov_base = (void *)(uintptr_t)a;
    v[0].iov_len = an;
    v[1].iov_base = (void *)(uintptr_t)b;
    v[1].iov_len = bn;
    return writev(fd, v, 2);
}
static int kcache__os_fsync(int fd) { return fsync(fd); }
static int kcache__os_close(int fd) { return close(fd); }
static int kcache__os_rename(int fromdir, const char *from, int todir, const char *to) { return renameat(fromdir, from, todir, to); }
/* A second name for a file; EEXIST when the new name is taken (the way to create it exactly once). */
static int kcache__os_link(int fromdir, const char *from, int todir, const char *to) { return linkat(fromdir, from, todir, to, 0); }
static int kcache__os_unlink(int dirfd, const char *name, int dir) { return unlinkat(dirfd, name, dir ? AT_REMOVEDIR : 0); }
/* dirfd -1: name is a path (the store's own directory and its parents). */
static int kcache__os_mkdir(int dirfd, const char *name) { return dirfd < 0 ? mkdir(name, 0700) : mkdirat(dirfd, name, 0700); }
static int kcache__os_fstat(int fd, kcache__finfo *fi) {
    struct stat s;
    if (fstat(fd, &s) != 0) return -1;
    kcache__finfo_from(&s, fi);
    return 0;
}
static int kcache__os_statat(int dirfd, const char *name, kcache__finfo *fi) {
    struct stat s;
    if (fstatat(dirfd, name, &s, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    kcache__finfo_from(&s, fi);
    return 0;
}
static int kcache__os_stat(const char *path, kcache__finfo *fi) {
    struct stat s;
    if (stat(path, &s) != 0) return -1;
    kcache__finfo_from(&s, fi);
    return 0;
}
/* Allocates a file's blocks up to len (never sparse: see config.file). 0, or an errno. */
static int kcache__os_allocate(int fd, uint64_t len) { return posix_fallocate(fd, 0, (off_t)len); }
static int kcache__os_chmod(int fd, unsigned mode) { return fchmod(fd, (mode_t)mode); }
/* Gives a file kcache made to a group (a shared store's); the owner stays. */
static int kcache__os_chgrp(int fd, uint32_t gid) { return fchown(fd, (uid_t)-1, (gid_t)gid); }
/* A symlink's target (not NUL-terminated), its length, or -1. */
static ptrdiff_t kcache__os_readlink(int dirfd, const char *name, char *buf, size_t cap) { return readlinkat(dirfd, name, buf, cap); }
/* Bytes an unprivileged writer may still use on fd's filesystem, and the filesystem's size. */
static int kcache__os_space(int fd, uint64_t *avail, uint64_t *total) {
    struct statvfs v;
    if (fstatvfs(fd, &v) != 0) return -1;
    *avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    *total = (uint64_t)v.f_blocks * (uint64_t)v.f_frsize;
    return 0;
}
static int kcache__os_truncate(int fd, uint64_t len) { return ftruncate(fd, (off_t)len); }
/* Locks (or unlocks) byte `at` of a file; a dead holder's locks are gone with it. Open-file-
   description locks where the system has them (Linux 3.15+), else process-associated ones: either
   way the registry (>>registry) arbitrates between the threads and handles of one process.
   KCACHE_TEST_NO_OFD (tests only) compiles the OFD locks out, to run everything on the fallback. */
static int kcache__os_lock(int fd, uint64_t at, int type, int wait) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = (short)(type == KCACHE__LOCK_NONE ? F_UNLCK : type == KCACHE__LOCK_SHARED ? F_RDLCK : F_WRLCK);
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)at;
    fl.l_len = 1;
#if defined(F_OFD_SETLK) && !defined(KCACHE_TEST_NO_OFD)
    if (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0) return 0;
    if (errno != EINVAL) return -1;
#endif
    return fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl);
}
static unsigned char *kcache__os_map(int fd, size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : (unsigned char *)p;
}
static void kcache__os_unmap(void *p, size_t len) { munmap(p, len); }

/* Directory listing: names only ("." and ".." skipped). m: the allocator (its store's) it lives in. */
typedef struct { DIR *dp; const kcache__mem *mem; } kcache__dir;
static kcache__dir *kcache__os_dir_open(const kcache__mem *m, int dirfd, const char *name) {
    kcache__dir *d;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return NULL;
    d = (kcache__dir *)kcache__mem_alloc(m, sizeof *d);
    if (d) d->mem = m;
    if (!d || (d->dp = fdopendir(fd)) == NULL) {
        kcache__mem_free(m, d);
        close(fd);
        if (!d) errno = ENOMEM;
        return NULL;
    }
    return d;
}
static const char *kcache__os_dir_next(kcache__dir *d) {
    struct dirent *de;
    while ((de = readdir(d->dp)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) return de->d_name;
    return NULL;
}
/* The listed directory's descriptor, for operations on the names it lists. */
static int kcache__os_dir_fd(kcache__dir *d) { return dirfd(d->dp); }
static void kcache__os_dir_close(kcache__dir *d) {
    if (!d) return;
    closedir(d->dp);
    kcache__mem_free(d->mem, d);
}

/* Whether a process (on this host, in this PID namespace) no longer exists. */
static int kcache__os_pid_gone(uint32_t pid) { return kill((pid_t)pid, 0) != 0 && errno == ESRCH; }
static uint32_t kcache__os_euid(void) { return (uint32_t)geteuid(); }

#else /* _WIN32 */

/* Win32. Descriptors are C runtime descriptors over HANDLEs (_open_osfhandle), so the rest of
   kcache keeps its ints; all I/O goes to the HANDLE (no CRT text mode, no CRT position). Paths are
   UTF-8; a relative name is joined to its directory's final path (GetFinalPathNameByHandleW, a
   \\?\ path: no MAX_PATH limit, no DOS device names, no '/' translation, so '/' is turned into
   '\'). Every file is opened sharing read, write and delete: a reader never blocks the rename or
   removal of an entry. Names inside the store are opened without following reparse points
   (symlinks, junctions): ELOOP, as O_NOFOLLOW. */

static int kcache__win_errno(DWORD e) {
    switch (e) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: case ERROR_INVALID_DRIVE: case ERROR_INVALID_NAME:
    case ERROR_BAD_NETPATH: case ERROR_BAD_NET_NAME: case ERROR_BAD_PATHNAME: return ENOENT;
    case ERROR_ACCESS_DENIED: case ERROR_SHARING_VIOLATION: case ERROR_USER_MAPPED_FILE: return EACCES;
    case ERROR_ALREADY_EXISTS: case ERROR_FILE_EXISTS: return EEXIST;
    case ERROR_DISK_FULL: case ERROR_HANDLE_DISK_FULL: return ENOSPC;
    case ERROR_LOCK_VIOLATION: case ERROR_IO_PENDING: return EAGAIN;
    case ERROR_WRITE_PROTECT: return EROFS;
    case ERROR_DIR_NOT_EMPTY: return ENOTEMPTY;
    case ERROR_DIRECTORY: return ENOTDIR;
    case ERROR_NOT_ENOUGH_MEMORY: case ERROR_OUTOFMEMORY: return ENOMEM;
    case ERROR_TOO_MANY_OPEN_FILES: return EMFILE;
    case ERROR_INVALID_HANDLE: return EBADF;
    case ERROR_FILENAME_EXCED_RANGE: return ENAMETOOLONG;
    case ERROR_NOT_SAME_DEVICE: return EXDEV;
    case ERROR_CANT_RESOLVE_FILENAME: return ELOOP;
    default: return EIO;
    }
}
static int kcache__win_fail(void) {
    errno = kcache__win_errno(GetLastError());
    return -1;
}
static HANDLE kcache__win_h(int fd) {
    intptr_t h = fd >= 0 ? _get_osfhandle(fd) : -1;
    if (h == -1) errno = EBADF;
    return (HANDLE)h;
}

/* UTF-8 to a new UTF-16 string with room for `extra` more characters; a string that is not UTF-8
   is taken in the ANSI code page (what getenv returns, e.g. for KCACHE_DIR). *n: its length. */
static WCHAR *kcache__win_wide(const char *s, size_t extra, size_t *n) {
    UINT cp = CP_UTF8;
    DWORD fl = MB_ERR_INVALID_CHARS;
    WCHAR *w;
    int len = MultiByteToWideChar(cp, fl, s, -1, NULL, 0);
    if (len <= 0) {
        cp = CP_ACP;
        fl = 0;
        len = MultiByteToWideChar(cp, fl, s, -1, NULL, 0);
    }
    if (len <= 0) { errno = ENOENT; return NULL; }
    w = (WCHAR *)KCACHE_MALLOC(((size_t)len + extra) * sizeof(WCHAR));
    if (!w) { errno = ENOMEM; return NULL; }
    MultiByteToWideChar(cp, fl, s, -1, w, len);
    if (n) *n = (size_t)len - 1;
    return w;
}

/* A handle's full path with every link on the way resolved (GetFinalPathNameByHandleW), in the
   \\?\ form: by drive letter, else by volume GUID (a volume mounted in a folder). NULL, errno set. */
static WCHAR *kcache__win_final(HANDLE h, size_t extra, size_t *len) {
    static const DWORD kinds[2] = {FILE_NAME_NORMALIZED | VOLUME_NAME_DOS, FILE_NAME_NORMALIZED | VOLUME_NAME_GUID};
    int k;
    for (k = 0; k < 2; k++) {
        DWORD need = GetFinalPathNameByHandleW(h, NULL, 0, kinds[k]), got;
        WCHAR *w;
        if (!need) continue;
        if ((w = (WCHAR *)KCACHE_MALLOC(((size_t)need + 1 + extra) * sizeof(WCHAR))) == NULL) {
            errno = ENOMEM;
            return NULL;
        }
        got = GetFinalPathNameByHandleW(h, w, need + 1, kinds[k]);
        if (got && got <= need) {
            *len = got;
            return w;
        }
        KCACHE_FREE(w); /* renamed to a longer path meanwhile: asked again below, or given up */
    }
    kcache__win_fail();
    return NULL;
}

/* The wide path of name in the directory dirfd ('/' in name becomes '\'); dirfd < 0: name is a
   path, used as it is. *base: where name starts in it. */
static WCHAR *kcache__win_path(int dirfd, const char *name, size_t *base) {
    HANDLE h;
    WCHAR *w, *nm;
    size_t nl, got, i;
    *base = 0;
    if (dirfd < 0) return kcache__win_wide(name, 0, NULL);
    if ((h = kcache__win_h(dirfd)) == INVALID_HANDLE_VALUE) return NULL;
    if ((nm = kcache__win_wide(name, 0, &nl)) == NULL) return NULL;
    if ((w = kcache__win_final(h, nl + 1, &got)) == NULL) {
        KCACHE_FREE(nm);
        return NULL;
    }
    if (got == 0 || w[got - 1] != L'\\') w[got++] = L'\\'; /* a drive's root already ends with one */
    *base = got;
    for (i = 0; i <= nl; i++) w[got + i] = nm[i] == L'/' ? L'\\' : nm[i];
    KCACHE_FREE(nm);
    return w;
}

/* Whether the open file h is reached by exactly this path. The final path resolves every link,
   so a symlink or junction anywhere on the way (also one the open followed: wine 8 ignores
   FILE_FLAG_OPEN_REPARSE_POINT and follows Unix symlinks) shows as another path. */
static int kcache__win_same_path(HANDLE h, const WCHAR *path) {
    size_t len;
    WCHAR *f = kcache__win_final(h, 0, &len);
    int same = f && CompareStringOrdinal(f, (int)len, path, -1, TRUE) == CSTR_EQUAL;
    KCACHE_FREE(f);
    return same;
}

/* A symlink, junction or mount point (name surrogates) is OTHER: never kcache's. Other reparse
   points (deduplication, cloud files) only keep their data elsewhere. */
static int kcache__win_kind(HANDLE h, DWORD attrs, DWORD tag) {
    if ((attrs & FILE_ATTRIBUTE_REPARSE_POINT) && IsReparseTagNameSurrogate(tag)) return KCACHE__KIND_OTHER;
    if (attrs & FILE_ATTRIBUTE_DIRECTORY) return KCACHE__KIND_DIR;
    return GetFileType(h) == FILE_TYPE_DISK ? KCACHE__KIND_FILE : KCACHE__KIND_OTHER;
}
/* Attributes and reparse tag in one cheap call (GetFileInformationByHandle also asks the volume,
   which is slow under wine). */
static int kcache__win_attrs(HANDLE h, DWORD *attrs, DWORD *tag) {
    FILE_ATTRIBUTE_TAG_INFO t;
    if (!GetFileInformationByHandleEx(h, FileAttributeTagInfo, &t, sizeof t)) return 0;
    *attrs = t.FileAttributes;
    *tag = (t.FileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) ? t.ReparseTag : 0;
    return 1;
}

static void kcache__win_finfo(HANDLE h, const BY_HANDLE_FILE_INFORMATION *bi, kcache__finfo *fi) {
    FILE_BASIC_INFO b;
    DWORD attrs, tag;
    uint64_t mt = ((uint64_t)bi->ftLastWriteTime.dwHighDateTime << 32) | bi->ftLastWriteTime.dwLowDateTime;
    fi->size = ((uint64_t)bi->nFileSizeHigh << 32) | bi->nFileSizeLow;
    fi->nlink = (uint64_t)bi->nNumberOfLinks;
    fi->dev = (uint64_t)bi->dwVolumeSerialNumber;
    fi->ino = ((uint64_t)bi->nFileIndexHigh << 32) | bi->nFileIndexLow;
    fi->mtime_ns = kcache__win_ft_ns(mt);
    /* ChangeTime: the last change of the file or its metadata (creation time is no such thing) */
    fi->ctime_ns = GetFileInformationByHandleEx(h, FileBasicInfo, &b, sizeof b) ? kcache__win_ft_ns((uint64_t)b.ChangeTime.QuadPart)
                                                                              : fi->mtime_ns;
    fi->uid = fi->gid = 0;                                              /* see kcache__os_euid */
    fi->perm = (bi->dwFileAttributes & FILE_ATTRIBUTE_READONLY) ? 0500 : 0700; /* ACLs: the user's own */
    if (!kcache__win_attrs(h, &attrs, &tag)) {
        attrs = bi->dwFileAttributes;
        tag = IO_REPARSE_TAG_SYMLINK; /* unknown: taken as a link */
    }
    fi->kind = kcache__win_kind(h, attrs, tag);
}

/* nofollow: the final name's reparse point is opened itself, not what it points to. */
static HANDLE kcache__win_create(const WCHAR *path, DWORD access, DWORD disp, int nofollow) {
    return CreateFileW(path, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, disp,
                       FILE_ATTRIBUTE_NORMAL | FILE_FLAG_BACKUP_SEMANTICS | (nofollow ? FILE_FLAG_OPEN_REPARSE_POINT : 0), NULL);
}

/* Opens name in dirfd, refusing (ELOOP) a symlink or junction anywhere from dirfd down; dirfd <
   0: a path outside the store, followed. */
static int kcache__win_open(int dirfd, const char *name, int how) {
    DWORD access = 0, disp;
    HANDLE h = INVALID_HANDLE_VALUE;
    DWORD attrs, tag;
    size_t base, i;
    int nofollow = dirfd >= 0, fd = -1, kind, e = ELOOP;
    WCHAR *w = kcache__win_path(dirfd, name, &base);
    if (!w) return -1;
    if (how & KCACHE__RD) access |= GENERIC_READ;
    /* append: write access without FILE_WRITE_DATA, so that every write goes to the end */
    if (how & KCACHE__APPEND) access |= FILE_APPEND_DATA | FILE_WRITE_ATTRIBUTES | FILE_WRITE_EA | SYNCHRONIZE | READ_CONTROL;
    else if (how & KCACHE__WR) access |= GENERIC_WRITE;
    disp = !(how & KCACHE__CREATE) ? OPEN_EXISTING : (how & KCACHE__EXCL) ? CREATE_NEW : OPEN_ALWAYS;
    if (nofollow && (how & KCACHE__CREATE))
        for (i = base; w[i]; i++) /* no file created through a linked directory (checked again after) */
            if (w[i] == L'\\') {
                DWORD attr;
                w[i] = 0;
                attr = GetFileAttributesW(w);
                w[i] = L'\\';
                if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_REPARSE_POINT)) goto out;
            }
    h = kcache__win_create(w, access, disp, nofollow);
    if (h == INVALID_HANDLE_VALUE) { e = kcache__win_errno(GetLastError()); goto out; }
    if (!kcache__win_attrs(h, &attrs, &tag)) { e = kcache__win_errno(GetLastError()); goto out; }
    kind = kcache__win_kind(h, attrs, tag);
    if (nofollow && (attrs & FILE_ATTRIBUTE_REPARSE_POINT)) {
        HANDLE h2;
        BY_HANDLE_FILE_INFORMATION b1, b2;
        if (kind == KCACHE__KIND_OTHER || !GetFileInformationByHandle(h, &b1)) goto out;
        /* data kept elsewhere (deduplication, cloud files): opened through its filter, and
           refused if what opens then is not the same file */
        h2 = kcache__win_create(w, access, OPEN_EXISTING, 0);
        if (h2 == INVALID_HANDLE_VALUE) { e = kcache__win_errno(GetLastError()); goto out; }
        CloseHandle(h);
        h = h2;
        if (!GetFileInformationByHandle(h, &b2) || b2.dwVolumeSerialNumber != b1.dwVolumeSerialNumber ||
            b2.nFileIndexHigh != b1.nFileIndexHigh || b2.nFileIndexLow != b1.nFileIndexLow)
            goto out;
    }
    if (nofollow && !kcache__win_same_path(h, w)) goto out;
    e = (how & KCACHE__DIRECTORY) && kind != KCACHE__KIND_DIR ? ENOTDIR
        : !(how & KCACHE__DIRECTORY) && kind == KCACHE__KIND_DIR && (how & KCACHE__WR) ? EISDIR : 0;
    if (!e) {
        fd = _open_osfhandle((intptr_t)h, 0);
        if (fd >= 0) h = INVALID_HANDLE_VALUE; /* the descriptor owns it now */
        else e = EMFILE;
    }
out:
    if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
    KCACHE_FREE(w);
    if (fd < 0) errno = e;
    return fd;
}

/* A path outside the store (a source file, a dependency, the store's own directory): followed. */
static int kcache__os_open(const char *path, int how) { return kcache__win_open(-1, path, how); }
/* A name in a directory: a symlink or junction there is not followed (ELOOP). */
static int kcache__os_openat(int dirfd, const char *name, int how) { return kcache__win_open(dirfd, name, how); }
/* A relative path beneath dirfd, in one call: no symlink or junction on the way (ELOOP), which
   the final-path check sees wherever it is. */
static int kcache__os_open_beneath(int dirfd, const char *rel, int how) { return kcache__win_open(dirfd, rel, how); }

/* At most 1 GiB per call (DWORD counts); callers loop on short counts as with POSIX. */
#define KCACHE__WIN_IO_MAX ((size_t)1 << 30)
static ptrdiff_t kcache__os_read(int fd, void *buf, size_t n) {
    HANDLE h = kcache__win_h(fd);
    DWORD got = 0;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if (!ReadFile(h, buf, (DWORD)(n < KCACHE__WIN_IO_MAX ? n : KCACHE__WIN_IO_MAX), &got, NULL) &&
        GetLastError() != ERROR_HANDLE_EOF && GetLastError() != ERROR_BROKEN_PIPE)
        return kcache__win_fail();
    return (ptrdiff_t)got;
}
/* Positioned I/O that, as POSIX pread/pwrite, leaves the file position where it was. */
static ptrdiff_t kcache__win_pio(int fd, void *rbuf, const void *wbuf, size_t n, uint64_t at) {
    HANDLE h = kcache__win_h(fd);
    OVERLAPPED ov;
    LARGE_INTEGER pos, zero;
    DWORD done = 0, e = 0;
    BOOL ok;
    if (h == INVALID_HANDLE_VALUE) return -1;
    zero.QuadPart = 0;
    if (!SetFilePointerEx(h, zero, &pos, FILE_CURRENT)) return kcache__win_fail();
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)at;
    ov.OffsetHigh = (DWORD)(at >> 32);
    if (n > KCACHE__WIN_IO_MAX) n = KCACHE__WIN_IO_MAX;
    ok = rbuf ? ReadFile(h, rbuf, (DWORD)n, &done, &ov) : WriteFile(h, wbuf, (DWORD)n, &done, &ov);
    if (!ok) e = GetLastError();
    SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
    if (!ok && !(rbuf && e == ERROR_HANDLE_EOF)) {
        errno = kcache__win_errno(e);
        return -1;
    }
    return (ptrdiff_t)done;
}
static ptrdiff_t kcache__os_pread(int fd, void *buf, size_t n, uint64_t at) { return kcache__win_pio(fd, buf, NULL, n, at); }
static ptrdiff_t kcache__os_pwrite(int fd, const void *buf, size_t n, uint64_t at) { return kcache__win_pio(fd, NULL, buf, n, at); }
/* Writes two buffers at the file position; returns the bytes written (short when the second
   write fails after the first, as a partial writev). */
static ptrdiff_t kcache__os_write2(int fd, const void *a, size_t an, const void *b, size_t bn) {
    HANDLE h = kcache__win_h(fd);
    DWORD wa = 0, wb = 0;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if (an > KCACHE__WIN_IO_MAX) {
        an = KCACHE__WIN_IO_MAX;
        bn = 0;
    }
    if (bn > KCACHE__WIN_IO_MAX) bn = KCACHE__WIN_IO_MAX;
    if (an && !WriteFile(h, a, (DWORD)an, &wa, NULL)) return kcache__win_fail();
    if (wa == an && bn && !WriteFile(h, b, (DWORD)bn, &wb, NULL)) {
        if (wa) return (ptrdiff_t)wa;
        return kcache__win_fail();
    }
    return (ptrdiff_t)wa + (ptrdiff_t)wb;
}
/* Directories cannot be flushed (nor need it: NTFS journals the rename). */
static int kcache__os_fsync(int fd) {
    HANDLE h = kcache__win_h(fd);
    BY_HANDLE_FILE_INFORMATION bi;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if (FlushFileBuffers(h)) return 0;
    if (GetFileInformationByHandle(h, &bi) && (bi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) return 0;
    return kcache__win_fail();
}
static int kcache__os_close(int fd) { return _close(fd); }

static WCHAR *kcache__win_at(int dirfd, const char *name) {
    size_t base;
    return kcache__win_path(dirfd, name, &base);
}

/* Windows does not replace a file that is open elsewhere or mapped (config.file and stats are
   mapped by every process using the store) the way POSIX rename does. Windows 10 1809+ can, with
   POSIX semantics: asked first. */
static int kcache__win_rename_posix(const WCHAR *from, const WCHAR *to) {
    size_t tl = 0, sz;
    HANDLE h;
    FILE_RENAME_INFO *ri;
    DWORD flags = 0x1 | 0x2; /* FILE_RENAME_FLAG_REPLACE_IF_EXISTS | FILE_RENAME_FLAG_POSIX_SEMANTICS */
    BOOL ok;
    while (to[tl]) tl++;
    sz = offsetof(FILE_RENAME_INFO, FileName) + (tl + 1) * sizeof(WCHAR);
    if ((ri = (FILE_RENAME_INFO *)KCACHE_MALLOC(sz)) == NULL) return 0;
    memset(ri, 0, sz);
    memcpy(ri, &flags, sizeof flags); /* the Flags member of the union where the SDK is older */
    ri->FileNameLength = (DWORD)(tl * sizeof(WCHAR));
    memcpy(ri->FileName, to, (tl + 1) * sizeof(WCHAR));
    h = kcache__win_create(from, DELETE | SYNCHRONIZE, OPEN_EXISTING, 1);
    ok = h != INVALID_HANDLE_VALUE && SetFileInformationByHandle(h, (FILE_INFO_BY_HANDLE_CLASS)22 /* FileRenameInfoEx */, ri, (DWORD)sz);
    if (h != INVALID_HANDLE_VALUE) CloseHandle(h);
    KCACHE_FREE(ri);
    return ok != 0;
}
/* Else the file in the way is renamed aside (a mapped file can be renamed, not replaced), into
   todir's tmp directory when there is one (the store's: kcache removes a dead process's temp
   files there) or beside it, then from takes its name and the old one is deleted if it can be
   (a mapped one stays until the temp sweep). The name is missing for a moment: kcache replaces
   these files under its store lock, and an opener that finds none makes a new one, which the
   next locked update notices (another inode). 0, or a Win32 error. */
static DWORD kcache__win_rename_aside(const WCHAR *f, const WCHAR *t, int todir) {
    static volatile LONG seq;
    char name[64];
    WCHAR *aside = NULL;
    DWORD le = ERROR_ACCESS_DENIED, attr = GetFileAttributesW(t);
    int k;
    if (todir < 0 || attr == INVALID_FILE_ATTRIBUTES || (attr & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT))) return le;
    for (k = 0; k < 2 && !aside; k++) {
        snprintf(name, sizeof name, "%s%lu-aside-%lx-%llx.tmp", k ? "" : "tmp/", (unsigned long)GetCurrentProcessId(),
                 (unsigned long)InterlockedIncrement(&seq), (unsigned long long)kcache__now_ns());
        if ((aside = kcache__win_at(todir, name)) != NULL && !MoveFileExW(t, aside, 0)) {
            le = GetLastError();
            KCACHE_FREE(aside);
            aside = NULL;
        }
    }
    if (!aside) return le;
    if (!MoveFileExW(f, t, 0)) {
        le = GetLastError();
        MoveFileExW(aside, t, 0); /* back in place, unless an opener made a new one meanwhile */
        KCACHE_FREE(aside);
        return le;
    }
    DeleteFileW(aside);
    KCACHE_FREE(aside);
    return 0;
}
/* The end of a call on two converted names (t NULL: a conversion failed, errno says why): frees
   them and turns the Win32 error le (0: success) into the POSIX result. */
static int kcache__win_pair_done(WCHAR *f, WCHAR *t, DWORD le) {
    int rc = t && !le ? 0 : -1, e = le ? kcache__win_errno(le) : errno;
    KCACHE_FREE(f);
    KCACHE_FREE(t);
    errno = e;
    return rc;
}
static int kcache__os_rename(int fromdir, const char *from, int todir, const char *to) {
    WCHAR *f = kcache__win_at(fromdir, from), *t = f ? kcache__win_at(todir, to) : NULL;
    DWORD le = 0;
    if (t && !MoveFileExW(f, t, MOVEFILE_REPLACE_EXISTING)) {
        le = GetLastError();
        if (le == ERROR_ACCESS_DENIED || le == ERROR_SHARING_VIOLATION || le == ERROR_USER_MAPPED_FILE)
            le = kcache__win_rename_posix(f, t) ? 0 : kcache__win_rename_aside(f, t, todir);
    }
    return kcache__win_pair_done(f, t, le);
}
/* A second name for a file; EEXIST when the new name is taken. A filesystem without hard links
   (FAT) moves the file instead: the new name still appears exactly once, and only if free. */
static int kcache__os_link(int fromdir, const char *from, int todir, const char *to) {
    WCHAR *f = kcache__win_at(fromdir, from), *t = f ? kcache__win_at(todir, to) : NULL;
    DWORD le = 0;
    if (t && !CreateHardLinkW(t, f, NULL)) {
        le = GetLastError();
        if (le == ERROR_NOT_SUPPORTED || le == ERROR_INVALID_FUNCTION) le = MoveFileExW(f, t, 0) ? 0 : GetLastError();
    }
    return kcache__win_pair_done(f, t, le);
}
/* unlink (dir 0) or rmdir (dir 1), by handle: the name is opened itself (a symlink or junction
   is removed, never what it points to), checked, and marked for deletion. As on POSIX, unlink of
   a directory is EISDIR, rmdir of a file ENOTDIR, and a read-only file can still be removed. Where
   the open follows a link despite the flag (wine), the name is refused (ELOOP) rather than the
   link's target deleted. */
static int kcache__os_unlink(int dirfd, const char *name, int dir) {
    size_t base;
    WCHAR *w = kcache__win_path(dirfd, name, &base);
    HANDLE h;
    DWORD attrs, tag, le = 0;
    FILE_DISPOSITION_INFO del;
    int e = 0;
    if (!w) return -1;
    h = kcache__win_create(w, DELETE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES, OPEN_EXISTING, 1);
    if (h == INVALID_HANDLE_VALUE) le = GetLastError();
    else if (!kcache__win_attrs(h, &attrs, &tag)) le = GetLastError();
    else if (dirfd >= 0 && !kcache__win_same_path(h, w)) e = ELOOP;
    else if (!(attrs & FILE_ATTRIBUTE_REPARSE_POINT) && (attrs & FILE_ATTRIBUTE_DIRECTORY) && !dir) e = EISDIR;
    else if (!(attrs & FILE_ATTRIBUTE_DIRECTORY) && dir) e = ENOTDIR;
    else {
        del.DeleteFile = TRUE;
        if (!SetFileInformationByHandle(h, FileDispositionInfo, &del, sizeof del)) {
            le = GetLastError();
            if (le == ERROR_ACCESS_DENIED && (attrs & FILE_ATTRIBUTE_READONLY)) {
                FILE_BASIC_INFO b;
                memset(&b, 0, sizeof b); /* zero times: left as they are */
                b.FileAttributes = attrs & ~(DWORD)FILE_ATTRIBUTE_READONLY;
                if (!b.FileAttributes) b.FileAttributes = FILE_ATTRIBUTE_NORMAL; /* (only ever alone) */
                if (SetFileInformationByHandle(h, FileBasicInfo, &b, sizeof b) &&
                    SetFileInformationByHandle(h, FileDispositionInfo, &del, sizeof del))
                    le = 0;
            }
        }
    }
    if (h != INVALID_HANDLE_VALUE) CloseHandle(h); /* the name goes with the last handle */
    KCACHE_FREE(w);
    if (le) e = kcache__win_errno(le);
    if (!e) return 0;
    errno = e;
    return -1;
}
/* dirfd -1: name is a path (the store's own directory and its parents); its missing parents are
   made too, as a path may separate them with '\' where the caller splits on '/' only. */
static int kcache__os_mkdir(int dirfd, const char *name) {
    WCHAR *w = kcache__win_at(dirfd, name);
    DWORD le;
    size_t i;
    if (!w) return -1;
    if (dirfd < 0)
        for (i = 1; w[i]; i++)
            if ((w[i] == L'\\' || w[i] == L'/') && w[i - 1] != L':' && w[i - 1] != L'\\' && w[i - 1] != L'/') {
                WCHAR c = w[i];
                w[i] = 0;
                CreateDirectoryW(w, NULL); /* errors: the last one says */
                w[i] = c;
            }
    if (CreateDirectoryW(w, NULL)) { KCACHE_FREE(w); return 0; }
    le = GetLastError();
    /* "C:" or a share: refused (access denied), yet there, as mkdir's EEXIST says on POSIX */
    if (dirfd < 0 && le != ERROR_ALREADY_EXISTS) {
        DWORD attr = GetFileAttributesW(w);
        if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY)) le = ERROR_ALREADY_EXISTS;
    }
    KCACHE_FREE(w);
    errno = kcache__win_errno(le);
    return -1;
}
static int kcache__os_fstat(int fd, kcache__finfo *fi) {
    HANDLE h = kcache__win_h(fd);
    BY_HANDLE_FILE_INFORMATION bi;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if (!GetFileInformationByHandle(h, &bi)) return kcache__win_fail();
    kcache__win_finfo(h, &bi, fi);
    return 0;
}
/* dirfd >= 0: a symlink or junction at or on the way to the name is reported as OTHER; nofollow:
   the final name's own (lstat). */
static int kcache__win_stat(int dirfd, const char *name, kcache__finfo *fi, int nofollow) {
    HANDLE h;
    BY_HANDLE_FILE_INFORMATION bi;
    size_t base;
    int rc = 0;
    WCHAR *w = kcache__win_path(dirfd, name, &base);
    if (!w) return -1;
    h = kcache__win_create(w, FILE_READ_ATTRIBUTES, OPEN_EXISTING, nofollow);
    if (h == INVALID_HANDLE_VALUE) {
        KCACHE_FREE(w);
        return kcache__win_fail();
    }
    if (GetFileInformationByHandle(h, &bi)) {
        kcache__win_finfo(h, &bi, fi);
        if (dirfd >= 0 && !kcache__win_same_path(h, w)) fi->kind = KCACHE__KIND_OTHER;
    } else {
        rc = kcache__win_fail();
    }
    CloseHandle(h);
    KCACHE_FREE(w);
    return rc;
}
static int kcache__os_statat(int dirfd, const char *name, kcache__finfo *fi) { return kcache__win_stat(dirfd, name, fi, 1); }
static int kcache__os_stat(const char *path, kcache__finfo *fi) { return kcache__win_stat(-1, path, fi, 0); }
/* Sets a file's size without moving its position (ftruncate); SetEndOfFile where the by-handle
   call is missing (wine). 0, or an errno. */
static int kcache__win_set_size(HANDLE h, uint64_t len) {
    FILE_END_OF_FILE_INFO eo;
    LARGE_INTEGER pos, zero;
    DWORD le;
    eo.EndOfFile.QuadPart = (LONGLONG)len;
    if (SetFileInformationByHandle(h, FileEndOfFileInfo, &eo, sizeof eo)) return 0;
    le = GetLastError();
    if (le != ERROR_CALL_NOT_IMPLEMENTED && le != ERROR_INVALID_PARAMETER && le != ERROR_NOT_SUPPORTED) return kcache__win_errno(le);
    zero.QuadPart = 0;
    if (!SetFilePointerEx(h, zero, &pos, FILE_CURRENT) || !SetFilePointerEx(h, eo.EndOfFile, NULL, FILE_BEGIN))
        return kcache__win_errno(GetLastError());
    le = SetEndOfFile(h) ? 0 : GetLastError();
    SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
    return le ? kcache__win_errno(le) : 0;
}
/* Allocates a file's blocks up to len and extends it to len when shorter (posix_fallocate): a
   non-sparse file's new end is allocated, so a full disk fails here, not in a mapped write. 0,
   or an errno. */
static int kcache__os_allocate(int fd, uint64_t len) {
    HANDLE h = kcache__win_h(fd);
    LARGE_INTEGER sz;
    FILE_ALLOCATION_INFO ai;
    DWORD le;
    if (h == INVALID_HANDLE_VALUE) return EBADF;
    if (!GetFileSizeEx(h, &sz)) return kcache__win_errno(GetLastError());
    if ((uint64_t)sz.QuadPart >= len) return 0;
    ai.AllocationSize.QuadPart = (LONGLONG)len;
    if (!SetFileInformationByHandle(h, FileAllocationInfo, &ai, sizeof ai) &&
        (le = GetLastError()) != ERROR_CALL_NOT_IMPLEMENTED && le != ERROR_INVALID_PARAMETER && le != ERROR_NOT_SUPPORTED)
        return kcache__win_errno(le);
    return kcache__win_set_size(h, len);
}
static int kcache__os_truncate(int fd, uint64_t len) {
    HANDLE h = kcache__win_h(fd);
    int e;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if ((e = kcache__win_set_size(h, len)) == 0) return 0;
    errno = e;
    return -1;
}
/* Locks (or unlocks) byte `at` of a file. Windows locks belong to the handle, as open-file-
   description locks do: two kcache objects in one process exclude each other; a dead holder's
   locks go with its handles. Unlike POSIX they do not merge: kcache never locks a byte it holds. */
static int kcache__os_lock(int fd, uint64_t at, int type, int wait) {
    HANDLE h = kcache__win_h(fd);
    OVERLAPPED ov;
    if (h == INVALID_HANDLE_VALUE) return -1;
    memset(&ov, 0, sizeof ov);
    ov.Offset = (DWORD)at;
    ov.OffsetHigh = (DWORD)(at >> 32);
    if (type == KCACHE__LOCK_NONE) {
        if (UnlockFileEx(h, 0, 1, 0, &ov) || GetLastError() != ERROR_INVALID_HANDLE) return 0; /* not held: as F_UNLCK */
        return kcache__win_fail();
    }
    if (LockFileEx(h, (type == KCACHE__LOCK_EXCLUSIVE ? LOCKFILE_EXCLUSIVE_LOCK : 0) | (wait ? 0 : LOCKFILE_FAIL_IMMEDIATELY), 0, 1, 0, &ov))
        return 0;
    if (GetLastError() == ERROR_LOCK_VIOLATION || GetLastError() == ERROR_IO_PENDING) {
        errno = EAGAIN;
        return -1;
    }
    return kcache__win_fail();
}
/* A shared read-write view of the first len bytes; the mapping object is not needed after. */
static unsigned char *kcache__os_map(int fd, size_t len) {
    HANDLE h = kcache__win_h(fd), m;
    void *p;
    if (h == INVALID_HANDLE_VALUE) return NULL;
    if (len == 0) { errno = EINVAL; return NULL; }
    m = CreateFileMappingW(h, NULL, PAGE_READWRITE, (DWORD)((uint64_t)len >> 32), (DWORD)len, NULL);
    if (!m) { kcache__win_fail(); return NULL; }
    p = MapViewOfFile(m, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, len);
    if (!p) kcache__win_fail();
    CloseHandle(m);
    return (unsigned char *)p;
}
static void kcache__os_unmap(void *p, size_t len) {
    (void)len;
    UnmapViewOfFile(p);
}

/* Directory listing: names only ("." and ".." skipped), converted to UTF-8. */
typedef struct {
    HANDLE find;
    int fd, pending;
    WIN32_FIND_DATAW data;
    char name[MAX_PATH * 3 + 1];
    const kcache__mem *mem;
} kcache__dir;
static kcache__dir *kcache__os_dir_open(const kcache__mem *m, int dirfd, const char *name) {
    kcache__dir *d;
    WCHAR *w;
    int fd;
    if (name[0] == '.' && name[1] == 0) { /* the directory itself: its handle again (a \\?\ path keeps "." as it is) */
        HANDLE h = kcache__win_h(dirfd), dup;
        if (h == INVALID_HANDLE_VALUE) return NULL;
        if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, FALSE, DUPLICATE_SAME_ACCESS)) {
            kcache__win_fail();
            return NULL;
        }
        if ((fd = _open_osfhandle((intptr_t)dup, 0)) < 0) { CloseHandle(dup); errno = EMFILE; return NULL; }
    } else {
        fd = kcache__os_openat(dirfd, name, KCACHE__RD | KCACHE__DIRECTORY);
    }
    if (fd < 0) return NULL;
    d = (kcache__dir *)kcache__mem_alloc(m, sizeof *d);
    w = d ? kcache__win_at(fd, "*") : NULL;
    if (!w) {
        int e = d ? errno : ENOMEM;
        kcache__mem_free(m, d);
        _close(fd);
        errno = e;
        return NULL;
    }
    d->fd = fd;
    d->mem = m;
    d->find = FindFirstFileW(w, &d->data);
    d->pending = d->find != INVALID_HANDLE_VALUE;
    if (!d->pending && GetLastError() != ERROR_FILE_NOT_FOUND && GetLastError() != ERROR_NO_MORE_FILES) {
        kcache__win_fail();
        KCACHE_FREE(w);
        kcache__mem_free(m, d);
        _close(fd);
        return NULL;
    }
    KCACHE_FREE(w);
    return d;
}
static const char *kcache__os_dir_next(kcache__dir *d) {
    for (;;) {
        const WCHAR *c = d->data.cFileName;
        if (d->pending) d->pending = 0;
        else if (d->find == INVALID_HANDLE_VALUE || !FindNextFileW(d->find, &d->data)) return NULL;
        if (c[0] == L'.' && (c[1] == 0 || (c[1] == L'.' && c[2] == 0))) continue;
        if (WideCharToMultiByte(CP_UTF8, 0, c, -1, d->name, (int)sizeof d->name, NULL, NULL) > 0) return d->name;
    }
}
/* The listed directory's descriptor, for operations on the names it lists. */
static int kcache__os_dir_fd(kcache__dir *d) { return d->fd; }
static void kcache__os_dir_close(kcache__dir *d) {
    if (!d) return;
    if (d->find != INVALID_HANDLE_VALUE) FindClose(d->find);
    _close(d->fd);
    kcache__mem_free(d->mem, d);
}

/* Whether a process no longer exists (or has exited and only its handles keep it). One that
   cannot be opened for lack of rights (another user's) is taken as running. */
static int kcache__os_pid_gone(uint32_t pid) {
    HANDLE p = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    int gone;
    if (!p) return GetLastError() == ERROR_INVALID_PARAMETER;
    gone = WaitForSingleObject(p, 0) == WAIT_OBJECT_0;
    CloseHandle(p);
    return gone;
}
/* No uids: files report 0 and so does the process, so the store's owner check passes; the
   directory's ACL (inherited from %LocalAppData%, the user's own) is what protects it. */
static uint32_t kcache__os_euid(void) { return 0; }
/* Modes and groups of the POSIX store checks have no Win32 counterpart here (ACLs); the store's
   path is not walked by hand (kcache__resolve_store_dir's Win32 form), so there is no readlink. */
static int kcache__os_chmod(int fd, unsigned mode) { (void)fd; (void)mode; return 0; }
static int kcache__os_chgrp(int fd, uint32_t gid) { (void)fd; (void)gid; return 0; }
/* Free bytes for this user (quotas included) and the volume's size. */
static int kcache__os_space(int fd, uint64_t *avail, uint64_t *total) {
    HANDLE h = kcache__win_h(fd);
    ULARGE_INTEGER a, t;
    size_t len;
    WCHAR *w;
    BOOL ok;
    if (h == INVALID_HANDLE_VALUE) return -1;
    if ((w = kcache__win_final(h, 1, &len)) == NULL) return -1;
    if (len == 0 || w[len - 1] != L'\\') w[len++] = L'\\';
    w[len] = 0;
    ok = GetDiskFreeSpaceExW(w, &a, &t, NULL);
    KCACHE_FREE(w);
    if (!ok) return kcache__win_fail();
    *avail = a.QuadPart;
    *total = t.QuadPart;
    return 0;
}

#endif /* !_WIN32 */

/* A file's stamp; 0, or an errno. */
static KCACHE__UNUSED int kcache__stat_path(const char *path, int64_t *mtime_ns, uint64_t *size) {
    kcache__finfo fi;
    if (kcache__io_stat(path, &fi) != 0) return errno ? errno : EIO;
    *mtime_ns = fi.mtime_ns;
    *size = fi.size;
    return 0;
}

/* Threads kcache starts (the claim renewer of the remote tier, kcache_get_or_build_many's builders):
   started and joined, nothing more. */
#if !defined(_WIN32)
typedef pthread_t kcache__thread;
typedef void *(*kcache__thread_fn)(void *);
#define KCACHE__THREAD_FN(name, arg) static void *name(void *arg)
#define KCACHE__THREAD_END return NULL
static int kcache__thread_start(kcache__thread *t, kcache__thread_fn fn, void *arg) { return pthread_create(t, NULL, fn, arg) == 0; }
static void kcache__thread_join(kcache__thread t) { pthread_join(t, NULL); }
#else
typedef HANDLE kcache__thread;
typedef LPTHREAD_START_ROUTINE kcache__thread_fn;
#define KCACHE__THREAD_FN(name, arg) static DWORD WINAPI name(LPVOID arg)
#define KCACHE__THREAD_END return 0
static int kcache__thread_start(kcache__thread *t, kcache__thread_fn fn, void *arg) {
    *t = CreateThread(NULL, 0, fn, arg, 0, NULL);
    return *t != NULL;
}
static void kcache__thread_join(kcache__thread t) {
    WaitForSingleObject(t, INFINITE);
    CloseHandle(t);
}
#endif

/* ============================================================================================== */
/* >>registry  the one process-wide state: each store's lock file, remembered dependency stamps   */
/* ============================================================================================== */

/* POSIX record locks (fcntl F_SETLK) belong to a process, not to a descriptor: two kcache handles of
   one process on one store do not exclude each other through them, and closing any descriptor of
   the lock file drops every lock the process holds on it. So, as SQLite's unix VFS does, a process
   keeps one entry per lock file (device, inode) that every handle on that store shares: one
   descriptor, never closed while a handle uses it, and the in-process arbitration the kernel cannot
   do: the store lock (byte 0: one holder in the process at a time) and the build claims (one holder
   per byte). The kernel lock then only has to exclude other processes, which every kind of lock
   does. Open-file-description locks (Linux 3.15+) are used where they exist, as an extra only: a
   close() of another descriptor of the lock file elsewhere in the program does not drop them.
   Windows locks belong to the handle; the same arbitration applies.

   The registry is the one piece of state kcache keeps for the whole process: the list of lock
   files, a table of dependency stamps (see kcache_key_file), the page that tells a forked child
   from its parent, and which SIMD paths the hash may use (>>hash). Thread-safe: every access holds one lock word, which holds the pid of the
   process whose thread took it (held briefly: no system call under it but opening a lock file).
   Fork-safe without pthread_atfork handlers (which a library cannot remove again, and which would
   stall every fork of the program while a kcache call finishes): a child finds the word held by
   another process's thread, which does not exist in the child, and takes it over; the list it
   finds is its parent's and is left alone (the child's handles open their own entries with their
   own descriptors, so a child never takes over its parent's locks or build claims); the stamp
   table, possibly caught mid-change, is cleared. Two copies of kcache in one program
   (KCACHE_STATIC) have a registry each: their handles on one store exclude each other only where
   OFD locks exist. */

#if !defined(_WIN32)
#include <sched.h>
static void kcache__yield(void) { sched_yield(); }
#else
static void kcache__yield(void) { SwitchToThread(); }
#endif

/* A lock file as this process uses it (shared by every handle on the store). */
typedef struct kcache__lockfile {
    struct kcache__lockfile *next;
    uint64_t dev, ino;
    int fd;                    /* the one descriptor: closed with the entry, never before */
    int spare;                 /* one opened in a race for the same file, closed with the entry */
    uint32_t pid;              /* the process the entry belongs to */
    long users;                /* open stores using it (registry lock) */
    kcache__mutex m;           /* guards held and claims */
    kcache__cond cv;           /* signalled when held drops */
    int held;                  /* a thread of this process holds the store lock (byte 0) */
    uint64_t *claims;          /* bytes claimed by this process's builds */
    size_t nclaims, cap;
} kcache__lockfile;

/* A dependency's content digest under the file's full stat (see kcache_key_file). */
typedef struct kcache__memo {
    uint64_t dev, ino, size, used;
    int64_t mtime_ns, ctime_ns;
    kcache_hash128 content;
} kcache__memo;
#define KCACHE__MEMO_WAYS 4
#define KCACHE__MEMO_SETS 128

#if KCACHE_CHECKS
#define KCACHE__LIVE_SLOTS 1024 /* open handles tracked at once (debug builds); more are not checked */
#define KCACHE__CLOSED_RING 16  /* closed handles whose log a call on them still reaches */
#endif

static struct kcache__registry {
    uint32_t lock;             /* 0, or the pid of the process whose thread holds the registry */
    uint32_t pid;              /* the process the list of lock files belongs to */
    kcache__lockfile *files;
    uint32_t *pidpage;         /* see kcache__cheap_pid */
    uint64_t memo_clock;
    kcache__memo memo[KCACHE__MEMO_SETS * KCACHE__MEMO_WAYS];
    uint32_t simd;             /* the hash's SIMD paths this CPU and OS run (kcache__cpu_simd); 0: not asked */
#if KCACHE_CHECKS
    /* the open handles (see kcache__kc_ok): a table read without the lock, changed under it */
    void *live[KCACHE__LIVE_SLOTS];
    uint32_t live_count, live_untracked;
    struct { const void *kc; kcache_log_fn log; void *log_user; } closed[KCACHE__CLOSED_RING];
    unsigned closed_next;
#endif
} kcache__reg;

static void kcache__reg_lock(void) {
    uint32_t me = kcache__pid();
    unsigned tries = 0;
    for (;;) {
        uint32_t cur = 0;
        if (kcache__atomic_cas_u32(&kcache__reg.lock, &cur, me)) break;
        if (cur != me && kcache__atomic_cas_u32(&kcache__reg.lock, &cur, me)) {
            /* held when this process was forked, by a thread that does not exist here */
            memset(kcache__reg.memo, 0, sizeof kcache__reg.memo);
            break;
        }
        if (++tries < 64) kcache__yield();
        else kcache__sleep_us(tries < 256 ? 20 : 500);
    }
    if (kcache__reg.pid != me) { /* the parent's lock files stay the parent's (see above) */
        kcache__reg.files = NULL;
        kcache__reg.pid = me;
    }
}
static void kcache__reg_unlock(void) { kcache__atomic_store_u32(&kcache__reg.lock, 0); }

/* This process's pid without a system call, for the checks on every call that a handle is used in
   the process that opened it: a page the kernel zeroes in a forked child (MADV_WIPEONFORK, Linux
   4.14+) keeps the pid it was read in; elsewhere, getpid. An emulator may accept the advice without
   honouring it (qemu-user 7 does), so a wrong "same process" here must only ever delay noticing a
   fork, never hang: every path that could wait on something of the parent's asks getpid itself. */
static uint32_t kcache__cheap_pid(void) {
    uint32_t *page = (uint32_t *)kcache__atomic_load_ptr((void *const *)&kcache__reg.pidpage), pid;
    if (page && (pid = kcache__atomic_load_u32(page)) != 0) return pid;
    pid = kcache__pid();
    if (page) {
        kcache__atomic_store_u32(page, pid);
        return pid;
    }
#if defined(__linux__) && defined(MADV_WIPEONFORK) && defined(MAP_ANONYMOUS)
    kcache__reg_lock();
    if (!kcache__reg.pidpage) {
        void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED && madvise(p, 4096, MADV_WIPEONFORK) == 0) {
            *(uint32_t *)p = pid;
            kcache__atomic_store_ptr((void **)&kcache__reg.pidpage, p);
        } else if (p != MAP_FAILED) {
            munmap(p, 4096);
        }
    }
    kcache__reg_unlock();
#endif
    return pid;
}

/* The entry of the lock file (dev, ino) with one more user, or NULL (registry lock held). */
static kcache__lockfile *kcache__lockfile_find_locked(uint64_t dev, uint64_t ino) {
    kcache__lockfile *lf;
    for (lf = kcache__reg.files; lf; lf = lf->next)
        if (lf->dev == dev && lf->ino == ino) {
            lf->users++;
            return lf;
        }
    return NULL;
}
static kcache__lockfile *kcache__lockfile_find(uint64_t dev, uint64_t ino) {
    kcache__lockfile *lf;
    kcache__reg_lock();
    lf = kcache__lockfile_find_locked(dev, ino);
    kcache__reg_unlock();
    return lf;
}
/* Takes over fd, a descriptor of a lock file just opened: the file's entry (a new one, or the one
   another handle made meanwhile), or NULL with fd closed and errno set. */
static kcache__lockfile *kcache__lockfile_adopt(int fd) {
    kcache__finfo fi;
    kcache__lockfile *lf;
    if (kcache__io_fstat(fd, &fi) != 0) {
        int e = errno;
        kcache__io_close(fd);
        errno = e;
        return NULL;
    }
    kcache__reg_lock();
    if ((lf = kcache__lockfile_find_locked(fi.dev, fi.ino)) != NULL) {
        /* opened twice at once: closing this descriptor would drop the locks the process holds
           through the other, so it stays open as long as the entry does (a third one at once: for good) */
        if (lf->spare < 0) lf->spare = fd;
        fd = -1;
    } else if ((lf = (kcache__lockfile *)KCACHE_MALLOC(sizeof *lf)) != NULL) {
        memset(lf, 0, sizeof *lf);
        lf->dev = fi.dev;
        lf->ino = fi.ino;
        lf->fd = fd;
        lf->spare = -1;
        lf->pid = kcache__reg.pid;
        lf->users = 1;
        kcache__mutex_init(&lf->m);
        kcache__cond_init(&lf->cv);
        lf->next = kcache__reg.files;
        kcache__reg.files = lf;
        fd = -1;
    }
    kcache__reg_unlock();
    if (fd >= 0) kcache__io_close(fd); /* no entry: nothing of this process is locked through it */
    if (!lf) errno = ENOMEM;
    return lf;
}
/* A store lets go of its lock file; the last one closes it. In a forked child the parent's entry is
   not the child's to change: left alone. */
static void kcache__lockfile_release(kcache__lockfile *lf) {
    int last = 0;
    kcache__lockfile **p;
    if (!lf) return;
    kcache__reg_lock();
    if (lf->pid == kcache__reg.pid && --lf->users == 0) {
        for (p = &kcache__reg.files; *p; p = &(*p)->next)
            if (*p == lf) {
                *p = lf->next;
                break;
            }
        last = 1;
    }
    kcache__reg_unlock();
    if (!last) return;
    kcache__io_close(lf->fd);
    if (lf->spare >= 0) kcache__io_close(lf->spare);
    kcache__mutex_destroy(&lf->m);
    kcache__cond_destroy(&lf->cv);
    KCACHE_FREE(lf->claims);
    KCACHE_FREE(lf);
}

/* Takes the store lock of this process's entry (byte 0): first among the process's threads and
   handles (waiting until deadline_ns, wall clock), then against other processes (the kernel lock,
   tried without blocking so that the wait is bounded too). 0, or -1 with errno (EAGAIN: timed out;
   ECHILD: called in a process forked from the entry's). */
static int kcache__lockfile_lock(kcache__lockfile *lf, int64_t deadline_ns) {
    unsigned pause_us = 20; /* holders keep it for tens of microseconds: start short, back off */
    if (kcache__pid() != lf->pid) { errno = ECHILD; return -1; }
    kcache__mutex_lock(&lf->m);
    while (lf->held) {
        if (!kcache__cond_wait_until(&lf->cv, &lf->m, deadline_ns) && lf->held) {
            kcache__mutex_unlock(&lf->m);
            errno = EAGAIN;
            return -1;
        }
    }
    lf->held = 1;
    kcache__mutex_unlock(&lf->m);
    while (kcache__io_lock(lf->fd, 0, KCACHE__LOCK_EXCLUSIVE, 0) != 0) {
        int e = errno;
        if ((e != EAGAIN && e != EACCES && e != EINTR) || kcache__now_ns() > deadline_ns) {
            kcache__mutex_lock(&lf->m);
            lf->held = 0;
            kcache__cond_broadcast(&lf->cv);
            kcache__mutex_unlock(&lf->m);
            errno = e == EACCES || e == EINTR ? EAGAIN : e;
            return -1;
        }
        kcache__sleep_us(pause_us);
        if (pause_us < 2000) pause_us *= 2;
    }
    return 0;
}
static void kcache__lockfile_unlock(kcache__lockfile *lf) {
    if (kcache__pid() != lf->pid) return; /* a forked child back from a callback: its parent's lock */
    kcache__io_lock(lf->fd, 0, KCACHE__LOCK_NONE, 0);
    kcache__mutex_lock(&lf->m);
    lf->held = 0;
    kcache__cond_broadcast(&lf->cv);
    kcache__mutex_unlock(&lf->m);
}

/* Drops `at` from the claims this process holds on lf (taken in here). */
static void kcache__lockfile_forget_claim(kcache__lockfile *lf, uint64_t at) {
    size_t i;
    kcache__mutex_lock(&lf->m);
    for (i = 0; i < lf->nclaims; i++)
        if (lf->claims[i] == at) {
            lf->claims[i] = lf->claims[--lf->nclaims];
            break;
        }
    kcache__mutex_unlock(&lf->m);
}

/* Claims byte `at` for a build, without waiting: 1 when claimed; 0 when a thread of this process or
   another process holds it (errno EAGAIN); -1 on an error (errno; ECHILD in a forked child). */
static int kcache__lockfile_claim(kcache__lockfile *lf, uint64_t at) {
    size_t i;
    int e;
    if (kcache__pid() != lf->pid) { errno = ECHILD; return -1; }
    kcache__mutex_lock(&lf->m);
    for (i = 0; i < lf->nclaims; i++)
        if (lf->claims[i] == at) {
            kcache__mutex_unlock(&lf->m);
            errno = EAGAIN;
            return 0;
        }
    if (lf->nclaims == lf->cap) {
        size_t ncap = lf->cap ? lf->cap * 2 : 8;
        uint64_t *nc = (uint64_t *)KCACHE_MALLOC(ncap * sizeof *nc);
        if (!nc) {
            kcache__mutex_unlock(&lf->m);
            errno = ENOMEM;
            return -1;
        }
        if (lf->nclaims) memcpy(nc, lf->claims, lf->nclaims * sizeof *nc);
        KCACHE_FREE(lf->claims);
        lf->claims = nc;
        lf->cap = ncap;
    }
    lf->claims[lf->nclaims++] = at;
    kcache__mutex_unlock(&lf->m);
    if (kcache__io_lock(lf->fd, at, KCACHE__LOCK_EXCLUSIVE, 0) == 0) return 1;
    e = errno;
    kcache__lockfile_forget_claim(lf, at);
    errno = e == EACCES || e == EINTR ? EAGAIN : e;
    return errno == EAGAIN ? 0 : -1;
}
static void kcache__lockfile_unclaim(kcache__lockfile *lf, uint64_t at) {
    if (kcache__pid() != lf->pid) return; /* a forked child back from a build: its parent's claim */
    kcache__io_lock(lf->fd, at, KCACHE__LOCK_NONE, 0);
    kcache__lockfile_forget_claim(lf, at);
}

/* The ways of the memo's set that a file (device, inode) maps to. */
static KCACHE__UNUSED kcache__memo *kcache__memo_set(const kcache__finfo *fi) {
    return &kcache__reg.memo[(size_t)((fi->ino * 0x9E3779B97F4A7C15ull ^ fi->dev) >> 57) * KCACHE__MEMO_WAYS];
}
/* The remembered content digest of a file with exactly this stat, if any. */
static KCACHE__UNUSED int kcache__memo_get(const kcache__finfo *fi, kcache_hash128 *content) {
    kcache__memo *set = kcache__memo_set(fi);
    int i, found = 0;
    kcache__reg_lock();
    for (i = 0; i < KCACHE__MEMO_WAYS; i++) {
        kcache__memo *m = &set[i];
        if (m->used && m->dev == fi->dev && m->ino == fi->ino && m->size == fi->size && m->mtime_ns == fi->mtime_ns &&
            m->ctime_ns == fi->ctime_ns) {
            *content = m->content;
            m->used = ++kcache__reg.memo_clock;
            found = 1;
            break;
        }
    }
    kcache__reg_unlock();
    return found;
}
static KCACHE__UNUSED void kcache__memo_put(const kcache__finfo *fi, kcache_hash128 content) {
    kcache__memo *set = kcache__memo_set(fi), *m;
    int i;
    kcache__reg_lock();
    m = &set[0];
    for (i = 0; i < KCACHE__MEMO_WAYS; i++) { /* the same file's older stamp, else the least recent */
        if (set[i].used && set[i].dev == fi->dev && set[i].ino == fi->ino) { m = &set[i]; break; }
        if (set[i].used < m->used) m = &set[i];
    }
    m->dev = fi->dev;
    m->ino = fi->ino;
    m->size = fi->size;
    m->mtime_ns = fi->mtime_ns;
    m->ctime_ns = fi->ctime_ns;
    m->content = content;
    m->used = ++kcache__reg.memo_clock;
    kcache__reg_unlock();
}

/* ============================================================================================== */
/* >>bytes  fixed little-endian encoding for everything on disk                                   */
/* ============================================================================================== */

static void kcache__put_u16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void kcache__put_u32(unsigned char *p, uint32_t v) {
    int i;
    for (i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void kcache__put_u64(unsigned char *p, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t kcache__get_u16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t kcache__get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint64_t kcache__get_u64(const unsigned char *p) {
    return (uint64_t)kcache__get_u32(p) | ((uint64_t)kcache__get_u32(p + 4) << 32);
}

/* A bounded writer/reader over a byte buffer: an overrun sets a flag instead of touching memory. */
typedef struct kcache__wbuf { unsigned char *p; size_t len, cap; int overflow; } kcache__wbuf;
typedef struct kcache__rbuf { const unsigned char *p; size_t len, pos; int bad; } kcache__rbuf;

static unsigned char *kcache__w_take(kcache__wbuf *w, size_t n) {
    unsigned char *at;
    if (w->overflow || n > w->cap - w->len) { w->overflow = 1; return NULL; }
    at = w->p + w->len;
    w->len += n;
    return at;
}
static void kcache__w_u8(kcache__wbuf *w, unsigned v) { unsigned char *at = kcache__w_take(w, 1); if (at) at[0] = (unsigned char)v; }
static void kcache__w_u16(kcache__wbuf *w, uint16_t v) { unsigned char *at = kcache__w_take(w, 2); if (at) kcache__put_u16(at, v); }
static void kcache__w_u64(kcache__wbuf *w, uint64_t v) { unsigned char *at = kcache__w_take(w, 8); if (at) kcache__put_u64(at, v); }
static void kcache__w_mem(kcache__wbuf *w, const void *s, size_t n) { unsigned char *at = kcache__w_take(w, n); if (at && n) memcpy(at, s, n); }

static const unsigned char *kcache__r_take(kcache__rbuf *r, size_t n) {
    const unsigned char *at;
    if (r->bad || n > r->len - r->pos) { r->bad = 1; return NULL; }
    at = r->p + r->pos;
    r->pos += n;
    return at;
}
static unsigned kcache__r_u8(kcache__rbuf *r) { const unsigned char *at = kcache__r_take(r, 1); return at ? at[0] : 0; }
static uint16_t kcache__r_u16(kcache__rbuf *r) { const unsigned char *at = kcache__r_take(r, 2); return at ? kcache__get_u16(at) : 0; }
static uint64_t kcache__r_u64(kcache__rbuf *r) { const unsigned char *at = kcache__r_take(r, 8); return at ? kcache__get_u64(at) : 0; }

static char *kcache__esc(char *out, size_t cap, const void *s, size_t n);
/* Formats a message into a caller's buffer (used for "why" texts; cut to fit, always terminated),
   escaped whole (see below): the paths and names it carries came from outside. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void kcache__say(char *out, size_t cap, const char *fmt, ...) {
    char raw[1024];
    va_list ap;
    int n;
    if (!out || !cap) return;
    va_start(ap, fmt);
    n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    kcache__esc(out, cap, raw, n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1);
}


/* ---- printing text that came from outside ---------------------------------------------------- */
/* One rule for the library and the tools (DESIGN, "Escaping"): a unit or field name, a file name
   found on disk, a CPU string from an index or a server's reply is printed through these. Valid,
   printable UTF-8 stays as it is (non-ASCII paths are legitimate); bytes below 0x20, 0x7f and bytes
   that are not valid UTF-8 become \xHH; the C1 controls U+0080-U+009F and the bidi controls
   U+202A-U+202E and U+2066-U+2069 (they reorder or hide what follows) become \u{XXXX}. Nothing an
   outsider wrote can then start a line, move the cursor or disguise the text around it. */

/* The length of the valid UTF-8 sequence at s (1-4), and its code point; 0 when s does not start
   one (overlong forms, surrogates and values past U+10FFFF are not valid). */
static size_t kcache__utf8_seq(const unsigned char *s, size_t n, uint32_t *cp) {
    uint32_t c, min;
    size_t len, i;
    if (!n) return 0;
    c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xc2 && c <= 0xdf) { len = 2; c &= 0x1f; min = 0x80; }
    else if (c >= 0xe0 && c <= 0xef) { len = 3; c &= 0x0f; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { len = 4; c &= 0x07; min = 0x10000; }
    else return 0;
    if (len > n) return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (uint32_t)(s[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return len;
}

/* The printed form of the character at s (NUL-terminated in out, at most 10 bytes and the NUL):
   its length; *used is how many bytes of s it stands for (at least 1 when n > 0). */
static size_t kcache__esc_char(const unsigned char *s, size_t n, char out[11], size_t *used) {
    static const char hexd[] = "0123456789abcdef";
    uint32_t cp = 0;
    size_t len = kcache__utf8_seq(s, n, &cp), i;
    *used = len ? len : 1;
    if (!n) { out[0] = 0; *used = 0; return 0; }
    if (!len || cp < 0x20 || cp == 0x7f) {
        out[0] = '\\'; out[1] = 'x'; out[2] = hexd[s[0] >> 4]; out[3] = hexd[s[0] & 15]; out[4] = 0;
        return 4;
    }
    if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
        out[0] = '\\'; out[1] = 'u'; out[2] = '{';
        for (i = 0; i < 4; i++) out[3 + i] = hexd[(cp >> (12 - 4 * i)) & 15];
        out[7] = '}'; out[8] = 0;
        return 8;
    }
    for (i = 0; i < len; i++) out[i] = (char)s[i];
    out[len] = 0;
    return len;
}

/* n bytes of s, escaped, into out (always NUL-terminated when cap > 0; cut at a whole character,
   with "..." when cut). Returns out, so that it can stand as a printf argument. */
static char *kcache__esc(char *out, size_t cap, const void *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0, i = 0;
    if (!out || !cap) return out;
    if (!p) n = 0;
    while (i < n) {
        char one[11];
        size_t used, l = kcache__esc_char(p + i, n - i, one, &used);
        if (o + l + 1 > cap) {
            while (o > 0 && o + 4 > cap) o--; /* room for "..." */
            if (o + 4 <= cap) { memcpy(out + o, "...", 3); o += 3; }
            break;
        }
        memcpy(out + o, one, l);
        o += l;
        i += used;
    }
    out[o] = 0;
    return out;
}

/* A NUL-terminated string, escaped (NULL prints as "(null)"). */
KCACHE__UNUSED static char *kcache__escs(char *out, size_t cap, const char *s) {
    return s ? kcache__esc(out, cap, s, strlen(s)) : kcache__esc(out, cap, "(null)", 6);
}

/* s quoted for a POSIX shell, so that a suggested command can be pasted: as it is when it holds
   only characters no shell treats specially, '...' when it is printable, $'...' (bash, zsh, ksh,
   POSIX 2024's sh) with \xHH for every byte the rule above would escape, so the path is exact.
   Returns out; a quoted form that does not fit is cut at a character and closed. */
KCACHE__UNUSED static char *kcache__shell_quote(char *out, size_t cap, const char *s) {
    static const char hexd[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p), i, o = 0;
    int plain = n > 0, dollar = 0;
    if (!out || !cap) return out;
    for (i = 0; i < n;) {
        char one[11];
        size_t used, l = kcache__esc_char(p + i, n - i, one, &used);
        unsigned char c = p[i];
        if (l != used || memcmp(one, p + i, used) != 0) dollar = 1;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("_@%+=:,./-", c) != NULL))) plain = 0;
        i += used;
    }
    if (plain) {
        if (n + 1 > cap) n = cap - 1;
        memcpy(out, p, n);
        out[n] = 0;
        return out;
    }
#define KCACHE__QPUT(str, len)                                                                    \
    do {                                                                                          \
        if (o + (len) + 2 > cap) goto full;                                                       \
        memcpy(out + o, (str), (len));                                                            \
        o += (len);                                                                               \
    } while (0)
    if (dollar) KCACHE__QPUT("$'", 2); else KCACHE__QPUT("'", 1);
    for (i = 0; i < n;) {
        char one[11];
        size_t used, l = kcache__esc_char(p + i, n - i, one, &used), j;
        if (!dollar) {
            if (p[i] == '\'') KCACHE__QPUT("'\\''", 4);
            else KCACHE__QPUT((const char *)p + i, used);
        } else if (l == used && memcmp(one, p + i, used) == 0) {
            if (p[i] == '\'' || p[i] == '\\') { char e[2]; e[0] = '\\'; e[1] = (char)p[i]; KCACHE__QPUT(e, 2); }
            else KCACHE__QPUT((const char *)p + i, used);
        } else {
            for (j = 0; j < used; j++) {
                char e[4];
                e[0] = '\\'; e[1] = 'x'; e[2] = hexd[p[i + j] >> 4]; e[3] = hexd[p[i + j] & 15];
                KCACHE__QPUT(e, 4);
            }
        }
        i += used;
    }
full:
    out[o++] = '\'';
    out[o] = 0;
    return out;
#undef KCACHE__QPUT
}
/* ============================================================================================== */
/* >>hash  XXH3-128 (scalar, SSE2, AVX2/AVX-512 chosen at run time, NEON)                         */
/* ============================================================================================== */

/* ---- hashing: XXH3-128 implementation ----------------------------------------------------------
 *
 * Written from the published algorithm description (xxHash's doc/xxhash_spec.md, "XXH3
 * algorithm description"): seed 0, default 192-byte secret, 128-bit output. Inputs of 0..240
 * bytes take the short/medium algorithms (scalar everywhere); longer inputs run the stripe
 * accumulator loop, which has five implementations:
 *   scalar  everywhere (also the only one on big-endian machines),
 *   SSE2    x86-64,
 *   AVX2    x86-64, compiled through a function-level target attribute so a plain -O2 build
 *           has it, and chosen at run time when the CPU and the OS support it,
 *   AVX-512 x86-64 with GCC/clang, the same way (Ice Lake, Zen 4 and later CPUs),
 *   NEON    little-endian AArch64.
 * All of them give the same bits. Input is read with memcpy and decoded as little-endian, so
 * there is no unaligned access and no dependence on the host byte order. The CPU check asks
 * CPUID itself, once per process (GCC/clang: the answer is kept in the registry; no constructor of
 * libgcc's is pulled in), or at each long input (MSVC). */

/* -- platform ------------------------------------------------------------------------------ */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define KCACHE__HASH_LE 1
#elif defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#  define KCACHE__HASH_BE 1
#elif defined(_MSC_VER) || defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#  define KCACHE__HASH_LE 1
#endif /* neither: bytes are assembled one by one (always correct, a little slower) */

#if (defined(__x86_64__) || defined(_M_X64)) && !defined(_M_ARM64EC)
#  define KCACHE__HASH_HAVE_SSE2 1
#  include <emmintrin.h>
/* Unoptimised builds (-O0) keep SSE2: there every intrinsic of the wide paths gets a stack slot
 * of its own (tens of KiB of frame), which a debug build on a small thread stack cannot afford. */
#  if (defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 5) || defined(_MSC_VER)) && (defined(__OPTIMIZE__) || defined(_MSC_VER))
#    define KCACHE__HASH_HAVE_AVX2 1
#    include <immintrin.h>
#    if defined(__clang__) || defined(__GNUC__)
#      define KCACHE__HASH_TARGET_AVX2 __attribute__((target("avx2")))
#      define KCACHE__HASH_TARGET_XSAVE __attribute__((target("xsave")))
#    else /* MSVC compiles AVX2 intrinsics anywhere */
#      define KCACHE__HASH_TARGET_AVX2
#      define KCACHE__HASH_TARGET_XSAVE
#    endif
#    if defined(_MSC_VER)
#      include <intrin.h> /* __cpuid, __cpuidex, _xgetbv */
#    endif
#    if defined(__clang__) && defined(_MSC_VER) && !defined(__AVX2__)
#      include <avxintrin.h> /* clang-cl's immintrin.h leaves these out without /arch:AVX2 */
#      include <avx2intrin.h>
#    endif
#  endif
/* AVX-512 where the compiler can both target it per function and ask the CPU about AVX512-VBMI2
 * (GCC 8, clang 8 / Apple clang 12); MSVC keeps AVX2 (no start-up record to ask). */
#  if !defined(_MSC_VER) && defined(__OPTIMIZE__) &&                                                             \
      ((defined(__clang__) && !defined(__apple_build_version__) && __clang_major__ >= 8) ||                          \
       (defined(__apple_build_version__) && __clang_major__ >= 12) ||                                               \
       (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#    define KCACHE__HASH_HAVE_AVX512 1
#    define KCACHE__HASH_TARGET_AVX512 __attribute__((target("avx512f")))
#  endif
#endif

#if (defined(__aarch64__) || defined(_M_ARM64)) && defined(KCACHE__HASH_LE)
#  define KCACHE__HASH_HAVE_NEON 1
#  include <arm_neon.h>
#endif

#if defined(__SIZEOF_INT128__) && (defined(__GNUC__) || defined(__clang__))
__extension__ typedef unsigned __int128 kcache__u128;
#  define KCACHE__HASH_HAVE_U128 1
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
#  include <intrin.h>
#endif

/* Implementation selectors (also test hooks: tests may force any supported one). */
enum { KCACHE__HASH_SCALAR, KCACHE__HASH_SSE2, KCACHE__HASH_AVX2, KCACHE__HASH_NEON, KCACHE__HASH_AVX512, KCACHE__HASH_PATHS };
enum { KCACHE__HASH_AUTO = -1 };   /* the fastest one the CPU supports, resolved when first needed */

/* -- constants (from the spec) ------------------------------------------------------------- */
#define KCACHE__P32_1 0x9E3779B1U
#define KCACHE__P32_2 0x85EBCA77U
#define KCACHE__P32_3 0xC2B2AE3DU
#define KCACHE__P64_1 0x9E3779B185EBCA87ULL
#define KCACHE__P64_2 0xC2B2AE3D27D4EB4FULL
#define KCACHE__P64_3 0x165667B19E3779F9ULL
#define KCACHE__P64_4 0x85EBCA77C2B2AE63ULL
#define KCACHE__P64_5 0x27D4EB2F165667C5ULL
#define KCACHE__PMX_1 0x165667919E3779F9ULL
#define KCACHE__PMX_2 0x9FB21C651E98DF25ULL

#define KCACHE__SECRET_LEN 192
#define KCACHE__STRIPE 64
#define KCACHE__STRIPES_PER_BLOCK 16 /* (192 - 64) / 8 */
#define KCACHE__MIDSIZE_MAX 240

static const unsigned char kcache__secret[KCACHE__SECRET_LEN] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

/* -- scalar helpers -------------------------------------------------------------------------- */
static uint32_t kcache__bswap32(uint32_t x)
{
    return (x >> 24) | ((x >> 8) & 0x0000FF00U) | ((x << 8) & 0x00FF0000U) | (x << 24);
}

static uint64_t kcache__bswap64(uint64_t x)
{
    return ((uint64_t)kcache__bswap32((uint32_t)x) << 32) | kcache__bswap32((uint32_t)(x >> 32));
}

static uint32_t kcache__rd32(const unsigned char *p)
{
#if defined(KCACHE__HASH_LE) || defined(KCACHE__HASH_BE)
    uint32_t v;
    memcpy(&v, p, sizeof v);
#  if defined(KCACHE__HASH_BE)
    v = kcache__bswap32(v);
#  endif
    return v;
#else
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
#endif
}

static uint64_t kcache__rd64(const unsigned char *p)
{
#if defined(KCACHE__HASH_LE) || defined(KCACHE__HASH_BE)
    uint64_t v;
    memcpy(&v, p, sizeof v);
#  if defined(KCACHE__HASH_BE)
    v = kcache__bswap64(v);
#  endif
    return v;
#else
    return (uint64_t)kcache__rd32(p) | ((uint64_t)kcache__rd32(p + 4) << 32);
#endif
}

/* Full 64x64 -> 128-bit product; returns the low half, stores the high half. */
static uint64_t kcache__mul128(uint64_t a, uint64_t b, uint64_t *hi)
{
#if defined(KCACHE__HASH_HAVE_U128)
    kcache__u128 r = (kcache__u128)a * b;
    *hi = (uint64_t)(r >> 64);
    return (uint64_t)r;
#elif defined(_MSC_VER) && defined(_M_X64)
    return _umul128(a, b, hi);
#elif defined(_MSC_VER) && defined(_M_ARM64)
    *hi = __umulh(a, b);
    return a * b;
#else
    uint64_t lolo = (a & 0xFFFFFFFFU) * (b & 0xFFFFFFFFU);
    uint64_t hilo = (a >> 32) * (b & 0xFFFFFFFFU);
    uint64_t lohi = (a & 0xFFFFFFFFU) * (b >> 32);
    uint64_t hihi = (a >> 32) * (b >> 32);
    uint64_t cross = (lolo >> 32) + (hilo & 0xFFFFFFFFU) + lohi;
    *hi = (hilo >> 32) + (cross >> 32) + hihi;
    return (cross << 32) | (lolo & 0xFFFFFFFFU);
#endif
}

static uint64_t kcache__fold64(uint64_t a, uint64_t b)
{
    uint64_t hi, lo = kcache__mul128(a, b, &hi);
    return lo ^ hi;
}

/* XXH3's avalanche */
static uint64_t kcache__avalanche3(uint64_t x)
{
    x ^= x >> 37;
    x *= KCACHE__PMX_1;
    x ^= x >> 32;
    return x;
}

/* XXH64's avalanche */
static uint64_t kcache__avalanche64(uint64_t x)
{
    x ^= x >> 33;
    x *= KCACHE__P64_2;
    x ^= x >> 29;
    x *= KCACHE__P64_3;
    x ^= x >> 32;
    return x;
}

static kcache_hash128 kcache__h128(uint64_t lo, uint64_t hi)
{
    kcache_hash128 h;
    h.lo = lo;
    h.hi = hi;
    return h;
}

/* -- 0..16 bytes ------------------------------------------------------------------------------ */
static kcache_hash128 kcache__hash_0to16(const unsigned char *p, size_t len)
{
    const unsigned char *s = kcache__secret;
    if (len > 8) { /* 9..16 */
        uint64_t first = kcache__rd64(p), last = kcache__rd64(p + len - 8);
        uint64_t v1 = (kcache__rd64(s + 32) ^ kcache__rd64(s + 40)) ^ first ^ last;
        uint64_t v2 = (kcache__rd64(s + 48) ^ kcache__rd64(s + 56)) ^ last;
        uint64_t mhi, mlo = kcache__mul128(v1, KCACHE__P64_1, &mhi);
        uint64_t lo = mlo + ((uint64_t)(len - 1) << 54);
        uint64_t hi = mhi + v2 + (uint64_t)(uint32_t)v2 * (KCACHE__P32_2 - 1);
        uint64_t h2;
        lo ^= kcache__bswap64(hi);
        lo = kcache__mul128(lo, KCACHE__P64_2, &h2);
        hi = h2 + hi * KCACHE__P64_2;
        return kcache__h128(kcache__avalanche3(lo), kcache__avalanche3(hi));
    }
    if (len >= 4) { /* 4..8 */
        uint64_t first = kcache__rd32(p), last = kcache__rd32(p + len - 4);
        uint64_t v = (kcache__rd64(s + 16) ^ kcache__rd64(s + 24)) ^ (first | (last << 32));
        uint64_t hi, lo = kcache__mul128(v, KCACHE__P64_1 + ((uint64_t)len << 2), &hi);
        hi += lo << 1;
        lo ^= hi >> 3;
        lo ^= lo >> 35;
        lo *= KCACHE__PMX_2;
        lo ^= lo >> 28;
        return kcache__h128(lo, kcache__avalanche3(hi));
    }
    if (len > 0) { /* 1..3 */
        uint32_t c = (uint32_t)p[len - 1] | ((uint32_t)len << 8) | ((uint32_t)p[0] << 16) |
                     ((uint32_t)p[len >> 1] << 24);
        uint32_t r = kcache__bswap32(c);
        uint64_t lo = (uint64_t)(kcache__rd32(s) ^ kcache__rd32(s + 4)) ^ c;
        uint64_t hi = (uint64_t)(kcache__rd32(s + 8) ^ kcache__rd32(s + 12)) ^
                      (uint64_t)((r << 13) | (r >> 19));
        return kcache__h128(kcache__avalanche64(lo), kcache__avalanche64(hi));
    }
    return kcache__h128(kcache__avalanche64(kcache__rd64(s + 64) ^ kcache__rd64(s + 72)),
                        kcache__avalanche64(kcache__rd64(s + 80) ^ kcache__rd64(s + 88)));
}

/* -- 17..240 bytes ---------------------------------------------------------------------------- */
static uint64_t kcache__mix16(const unsigned char *p, const unsigned char *s)
{
    return kcache__fold64(kcache__rd64(p) ^ kcache__rd64(s), kcache__rd64(p + 8) ^ kcache__rd64(s + 8));
}

/* mixTwoChunks: acc[0] takes a, acc[1] takes b, each crossed with the other's data */
#define KCACHE__MIX32(acc0, acc1, a, b, s)                                          \
    do {                                                                            \
        acc0 += kcache__mix16((a), (s));                                            \
        acc1 += kcache__mix16((b), (s) + 16);                                       \
        acc0 ^= kcache__rd64(b) + kcache__rd64((b) + 8);                            \
        acc1 ^= kcache__rd64(a) + kcache__rd64((a) + 8);                            \
    } while (0)

/* 17..128: 16-byte chunks paired from both ends, innermost pair first (rounds i = n-1 .. 0 of
 * the spec: chunk i from the start with chunk i from the end, secret at 32 i) */
static kcache_hash128 kcache__hash_17to128(const unsigned char *p, size_t len)
{
    const unsigned char *s = kcache__secret;
    uint64_t a0 = (uint64_t)len * KCACHE__P64_1, a1 = 0, lo, hi;
    if (len > 32) {
        if (len > 64) {
            if (len > 96)
                KCACHE__MIX32(a0, a1, p + 48, p + len - 64, s + 96);
            KCACHE__MIX32(a0, a1, p + 32, p + len - 48, s + 64);
        }
        KCACHE__MIX32(a0, a1, p + 16, p + len - 32, s + 32);
    }
    KCACHE__MIX32(a0, a1, p, p + len - 16, s);
    lo = a0 + a1;
    hi = a0 * KCACHE__P64_1 + a1 * KCACHE__P64_4 + (uint64_t)len * KCACHE__P64_2;
    return kcache__h128(kcache__avalanche3(lo), (uint64_t)0 - kcache__avalanche3(hi));
}

/* 129..240: 32-byte chunks; an avalanche after the first four; the last 32 bytes swapped */
static kcache_hash128 kcache__hash_129to240(const unsigned char *p, size_t len)
{
    const unsigned char *s = kcache__secret;
    uint64_t a0 = (uint64_t)len * KCACHE__P64_1, a1 = 0, lo, hi;
    size_t i, chunks = len >> 5;
    for (i = 0; i < 4; i++)
        KCACHE__MIX32(a0, a1, p + 32 * i, p + 32 * i + 16, s + 32 * i);
    a0 = kcache__avalanche3(a0);
    a1 = kcache__avalanche3(a1);
    for (i = 4; i < chunks; i++)
        KCACHE__MIX32(a0, a1, p + 32 * i, p + 32 * i + 16, s + 32 * (i - 4) + 3);
    KCACHE__MIX32(a0, a1, p + len - 16, p + len - 32, s + 103);
    lo = a0 + a1;
    hi = a0 * KCACHE__P64_1 + a1 * KCACHE__P64_4 + (uint64_t)len * KCACHE__P64_2;
    return kcache__h128(kcache__avalanche3(lo), (uint64_t)0 - kcache__avalanche3(hi));
}

/* 0..240 bytes */
static kcache_hash128 kcache__hash_short(const unsigned char *p, size_t len)
{
    if (len <= 16) return kcache__hash_0to16(p, len);
    if (len <= 128) return kcache__hash_17to128(p, len);
    return kcache__hash_129to240(p, len);
}

/* -- > 240 bytes: the stripe loop --------------------------------------------------------------
 * Every path provides kcache__consume_<path>(acc, p, n, pos, last): accumulate the n stripes at
 * p (64 bytes each), the first one being stripe number *pos of its 1 KiB block, scrambling the
 * accumulators whenever a block completes (callers only pass stripes that have input after
 * them, which is exactly when the spec scrambles); then, when last is not NULL, accumulate the
 * final stripe `last` with the secret at offset 121. *pos is updated. */
#define KCACHE__LAST_STRIPE_SECRET (KCACHE__SECRET_LEN - KCACHE__STRIPE - 7)
#define KCACHE__SCRAMBLE_SECRET (KCACHE__SECRET_LEN - KCACHE__STRIPE)

static void kcache__accum_scalar(uint64_t acc[8], const unsigned char *p, const unsigned char *s)
{
    int i;
    for (i = 0; i < 8; i++) {
        uint64_t d = kcache__rd64(p + 8 * i);
        uint64_t v = d ^ kcache__rd64(s + 8 * i);
        acc[i ^ 1] += d;
        acc[i] += (v & 0xFFFFFFFFU) * (v >> 32);
    }
}

static void kcache__consume_scalar(const uint64_t *in, uint64_t acc[8], const unsigned char *p, size_t n, unsigned *pos,
                                   const unsigned char *last)
{
    unsigned ps = *pos;
    int i;
    if (in != acc) memcpy(acc, in, 8 * sizeof acc[0]);
    while (n) {
        size_t k = KCACHE__STRIPES_PER_BLOCK - ps;
        const unsigned char *s = kcache__secret + 8 * ps;
        if (k > n) k = n;
        n -= k;
        ps += (unsigned)k;
        for (; k; k--, p += KCACHE__STRIPE, s += 8)
            kcache__accum_scalar(acc, p, s);
        if (ps == KCACHE__STRIPES_PER_BLOCK) {
            for (i = 0; i < 8; i++) {
                uint64_t a = acc[i];
                a ^= a >> 47;
                a ^= kcache__rd64(kcache__secret + KCACHE__SCRAMBLE_SECRET + 8 * i);
                acc[i] = a * KCACHE__P32_1;
            }
            ps = 0;
        }
    }
    if (last)
        kcache__accum_scalar(acc, last, kcache__secret + KCACHE__LAST_STRIPE_SECRET);
    *pos = ps;
}

#if defined(KCACHE__HASH_HAVE_SSE2)
/* Prefetch 384 bytes ahead into L1 (a hint: never faults, so past the end is harmless; the
 * address is formed as an integer so no out-of-range pointer is ever computed). */
#define KCACHE__PREFETCH(q) _mm_prefetch((const char *)((uintptr_t)(q) + 384), _MM_HINT_T0)
#define KCACHE__SSE2_LD(q) _mm_loadu_si128((const __m128i *)(const void *)(q))
/* The vector loops use two identities to keep shuffles out of the stripe loop: the 32x32-bit
 * multiply reads only the low half of each lane, so the high half comes from a shift; and adding
 * each lane's swapped input over a block equals adding the swapped sum of the block's input, so
 * that sum (d) is kept apart and folded in once before each scramble and at the end of a call. */
#define KCACHE__SSE2_ACC(a, d, q, s)                                                \
    do {                                                                            \
        __m128i x_ = KCACHE__SSE2_LD(q);                                            \
        d = _mm_add_epi64(d, x_);                                                   \
        x_ = _mm_xor_si128(x_, KCACHE__SSE2_LD(s));                                 \
        a = _mm_add_epi64(a, _mm_mul_epu32(x_, _mm_srli_epi64(x_, 32)));            \
    } while (0)
#define KCACHE__SSE2_STRIPE(q, s)                                                   \
    do {                                                                            \
        KCACHE__SSE2_ACC(a0, d0, (q), (s));                                         \
        KCACHE__SSE2_ACC(a1, d1, (q) + 16, (s) + 16);                               \
        KCACHE__SSE2_ACC(a2, d2, (q) + 32, (s) + 32);                               \
        KCACHE__SSE2_ACC(a3, d3, (q) + 48, (s) + 48);                               \
    } while (0)
#define KCACHE__SSE2_FOLD()                                                         \
    do {                                                                            \
        a0 = _mm_add_epi64(a0, _mm_shuffle_epi32(d0, 0x4E));                        \
        a1 = _mm_add_epi64(a1, _mm_shuffle_epi32(d1, 0x4E));                        \
        a2 = _mm_add_epi64(a2, _mm_shuffle_epi32(d2, 0x4E));                        \
        a3 = _mm_add_epi64(a3, _mm_shuffle_epi32(d3, 0x4E));                        \
        d0 = d1 = d2 = d3 = _mm_setzero_si128();                                    \
    } while (0)
#define KCACHE__SSE2_SCR(a, s)                                                      \
    do {                                                                            \
        __m128i x_ = _mm_xor_si128(_mm_xor_si128(a, _mm_srli_epi64(a, 47)), KCACHE__SSE2_LD(s)); \
        __m128i l_ = _mm_mul_epu32(x_, pr);                                         \
        __m128i h_ = _mm_mul_epu32(_mm_srli_epi64(x_, 32), pr);                     \
        a = _mm_add_epi64(l_, _mm_slli_epi64(h_, 32));                              \
    } while (0)

static void kcache__consume_sse2(const uint64_t *in, uint64_t acc[8], const unsigned char *p, size_t n, unsigned *pos,
                                 const unsigned char *last)
{
    __m128i a0 = KCACHE__SSE2_LD(in), a1 = KCACHE__SSE2_LD(in + 2);
    __m128i a2 = KCACHE__SSE2_LD(in + 4), a3 = KCACHE__SSE2_LD(in + 6);
    __m128i d0 = _mm_setzero_si128(), d1 = d0, d2 = d0, d3 = d0;
    const __m128i pr = _mm_set1_epi32((int)KCACHE__P32_1);
    unsigned ps = *pos;
    while (n) {
        size_t k = KCACHE__STRIPES_PER_BLOCK - ps;
        const unsigned char *s = kcache__secret + 8 * ps;
        if (k > n) k = n;
        n -= k;
        ps += (unsigned)k;
        for (; k; k--, p += KCACHE__STRIPE, s += 8) {
            KCACHE__PREFETCH(p);
            KCACHE__SSE2_STRIPE(p, s);
        }
        if (ps == KCACHE__STRIPES_PER_BLOCK) {
            const unsigned char *ks = kcache__secret + KCACHE__SCRAMBLE_SECRET;
            KCACHE__SSE2_FOLD();
            KCACHE__SSE2_SCR(a0, ks);
            KCACHE__SSE2_SCR(a1, ks + 16);
            KCACHE__SSE2_SCR(a2, ks + 32);
            KCACHE__SSE2_SCR(a3, ks + 48);
            ps = 0;
        }
    }
    if (last)
        KCACHE__SSE2_STRIPE(last, kcache__secret + KCACHE__LAST_STRIPE_SECRET);
    KCACHE__SSE2_FOLD();
    _mm_storeu_si128((__m128i *)(void *)acc, a0);
    _mm_storeu_si128((__m128i *)(void *)(acc + 2), a1);
    _mm_storeu_si128((__m128i *)(void *)(acc + 4), a2);
    _mm_storeu_si128((__m128i *)(void *)(acc + 6), a3);
    *pos = ps;
}
#endif /* SSE2 */

#if defined(KCACHE__HASH_HAVE_AVX2)
#define KCACHE__AVX2_LD(q) _mm256_loadu_si256((const __m256i *)(const void *)(q))
#define KCACHE__AVX2_ACC(a, d, q, s)                                                \
    do {                                                                            \
        __m256i x_ = KCACHE__AVX2_LD(q);                                            \
        d = _mm256_add_epi64(d, x_);                                                \
        x_ = _mm256_xor_si256(x_, KCACHE__AVX2_LD(s));                              \
        a = _mm256_add_epi64(a, _mm256_mul_epu32(x_, _mm256_srli_epi64(x_, 32)));   \
    } while (0)
#define KCACHE__AVX2_STRIPE(q, s)                                                   \
    do {                                                                            \
        KCACHE__AVX2_ACC(a0, d0, (q), (s));                                         \
        KCACHE__AVX2_ACC(a1, d1, (q) + 32, (s) + 32);                               \
    } while (0)
#define KCACHE__AVX2_FOLD()                                                         \
    do {                                                                            \
        a0 = _mm256_add_epi64(a0, _mm256_shuffle_epi32(d0, 0x4E));                  \
        a1 = _mm256_add_epi64(a1, _mm256_shuffle_epi32(d1, 0x4E));                  \
        d0 = d1 = _mm256_setzero_si256();                                           \
    } while (0)
#define KCACHE__AVX2_SCR(a, s)                                                      \
    do {                                                                            \
        __m256i x_ = _mm256_xor_si256(_mm256_xor_si256(a, _mm256_srli_epi64(a, 47)), KCACHE__AVX2_LD(s)); \
        __m256i l_ = _mm256_mul_epu32(x_, pr);                                      \
        __m256i h_ = _mm256_mul_epu32(_mm256_srli_epi64(x_, 32), pr);               \
        a = _mm256_add_epi64(l_, _mm256_slli_epi64(h_, 32));                        \
    } while (0)

KCACHE__HASH_TARGET_AVX2
static void kcache__consume_avx2(const uint64_t *in, uint64_t acc[8], const unsigned char *p, size_t n, unsigned *pos,
                                 const unsigned char *last)
{
    __m256i a0 = KCACHE__AVX2_LD(in), a1 = KCACHE__AVX2_LD(in + 4);
    __m256i d0 = _mm256_setzero_si256(), d1 = d0;
    const __m256i pr = _mm256_set1_epi32((int)KCACHE__P32_1);
    unsigned ps = *pos;
    while (n) {
        size_t k = KCACHE__STRIPES_PER_BLOCK - ps;
        const unsigned char *s = kcache__secret + 8 * ps;
        if (k > n) k = n;
        n -= k;
        ps += (unsigned)k;
        for (; k; k--, p += KCACHE__STRIPE, s += 8) {
            KCACHE__PREFETCH(p);
            KCACHE__AVX2_STRIPE(p, s);
        }
        if (ps == KCACHE__STRIPES_PER_BLOCK) {
            const unsigned char *ks = kcache__secret + KCACHE__SCRAMBLE_SECRET;
            KCACHE__AVX2_FOLD();
            KCACHE__AVX2_SCR(a0, ks);
            KCACHE__AVX2_SCR(a1, ks + 32);
            ps = 0;
        }
    }
    if (last)
        KCACHE__AVX2_STRIPE(last, kcache__secret + KCACHE__LAST_STRIPE_SECRET);
    KCACHE__AVX2_FOLD();
    _mm256_storeu_si256((__m256i *)(void *)acc, a0);
    _mm256_storeu_si256((__m256i *)(void *)(acc + 4), a1);
    *pos = ps;
}
#endif /* AVX2 */

#if defined(KCACHE__HASH_HAVE_AVX512)
/* One register holds all eight lanes, and the sixteen stripe secrets of a block fit in registers
 * too, so a whole block loads only input (the secrets' unaligned loads otherwise split cache
 * lines). Same identities as above: no shuffle in the loop. */
#define KCACHE__AVX512_LD(q) _mm512_loadu_si512((const void *)(q))
/* The zero-masking forms with every lane selected: the same instructions, but GCC 12's plain forms
 * pass _mm512_undefined_epi32() (`__m512i __Y = __Y;` in its avx512fintrin.h) as the merge source,
 * which g++ -O1 and up reports as -Wmaybe-uninitialized inside the compiler's header. */
#define KCACHE__AVX512_MUL(x, y) _mm512_maskz_mul_epu32((__mmask8)0xFF, (x), (y))
#define KCACHE__AVX512_SRLI(x, n) _mm512_maskz_srli_epi64((__mmask8)0xFF, (x), (n))
#define KCACHE__AVX512_SLLI(x, n) _mm512_maskz_slli_epi64((__mmask8)0xFF, (x), (n))
#define KCACHE__AVX512_SWAP(v) _mm512_maskz_shuffle_epi32((__mmask16)0xFFFF, (v), (_MM_PERM_ENUM)0x4E)
#define KCACHE__AVX512_ACC(q, s)                                                    \
    do {                                                                            \
        __m512i x_ = KCACHE__AVX512_LD(q);                                          \
        d = _mm512_add_epi64(d, x_);                                                \
        x_ = _mm512_xor_si512(x_, (s));                                             \
        a = _mm512_add_epi64(a, KCACHE__AVX512_MUL(x_, KCACHE__AVX512_SRLI(x_, 32)));   \
    } while (0)
#define KCACHE__AVX512_END_BLOCK()                                                  \
    do {                                                                            \
        __m512i x_;                                                                 \
        a = _mm512_add_epi64(a, KCACHE__AVX512_SWAP(d));                            \
        d = _mm512_setzero_si512();                                                 \
        x_ = _mm512_xor_si512(_mm512_xor_si512(a, KCACHE__AVX512_SRLI(a, 47)), ks);   \
        a = _mm512_add_epi64(KCACHE__AVX512_MUL(x_, pr),                              \
                             KCACHE__AVX512_SLLI(KCACHE__AVX512_MUL(KCACHE__AVX512_SRLI(x_, 32), pr), 32)); \
    } while (0)

KCACHE__HASH_TARGET_AVX512
static void kcache__consume_avx512(const uint64_t *in, uint64_t acc[8], const unsigned char *p, size_t n,
                                   unsigned *pos, const unsigned char *last)
{
    const __m512i pr = _mm512_set1_epi32((int)KCACHE__P32_1);
    const __m512i ks = KCACHE__AVX512_LD(kcache__secret + KCACHE__SCRAMBLE_SECRET);
    __m512i a = KCACHE__AVX512_LD(in), d = _mm512_setzero_si512();
    unsigned ps = *pos;
    for (; ps != 0 && n != 0; n--, p += KCACHE__STRIPE) { /* the rest of a block begun by an earlier call */
        KCACHE__AVX512_ACC(p, KCACHE__AVX512_LD(kcache__secret + 8 * ps));
        if (++ps == KCACHE__STRIPES_PER_BLOCK) {
            KCACHE__AVX512_END_BLOCK();
            ps = 0;
        }
    }
    if (n >= KCACHE__STRIPES_PER_BLOCK) {
        const unsigned char *s = kcache__secret;
        const __m512i s0 = KCACHE__AVX512_LD(s), s1 = KCACHE__AVX512_LD(s + 8), s2 = KCACHE__AVX512_LD(s + 16);
        const __m512i s3 = KCACHE__AVX512_LD(s + 24), s4 = KCACHE__AVX512_LD(s + 32), s5 = KCACHE__AVX512_LD(s + 40);
        const __m512i s6 = KCACHE__AVX512_LD(s + 48), s7 = KCACHE__AVX512_LD(s + 56), s8 = KCACHE__AVX512_LD(s + 64);
        const __m512i s9 = KCACHE__AVX512_LD(s + 72), s10 = KCACHE__AVX512_LD(s + 80), s11 = KCACHE__AVX512_LD(s + 88);
        const __m512i s12 = KCACHE__AVX512_LD(s + 96), s13 = KCACHE__AVX512_LD(s + 104);
        const __m512i s14 = KCACHE__AVX512_LD(s + 112), s15 = KCACHE__AVX512_LD(s + 120);
        do {
            KCACHE__AVX512_ACC(p, s0);
            KCACHE__AVX512_ACC(p + 64, s1);
            KCACHE__AVX512_ACC(p + 128, s2);
            KCACHE__AVX512_ACC(p + 192, s3);
            KCACHE__AVX512_ACC(p + 256, s4);
            KCACHE__AVX512_ACC(p + 320, s5);
            KCACHE__AVX512_ACC(p + 384, s6);
            KCACHE__AVX512_ACC(p + 448, s7);
            KCACHE__AVX512_ACC(p + 512, s8);
            KCACHE__AVX512_ACC(p + 576, s9);
            KCACHE__AVX512_ACC(p + 640, s10);
            KCACHE__AVX512_ACC(p + 704, s11);
            KCACHE__AVX512_ACC(p + 768, s12);
            KCACHE__AVX512_ACC(p + 832, s13);
            KCACHE__AVX512_ACC(p + 896, s14);
            KCACHE__AVX512_ACC(p + 960, s15);
            KCACHE__AVX512_END_BLOCK();
            p += KCACHE__STRIPE * KCACHE__STRIPES_PER_BLOCK;
            n -= KCACHE__STRIPES_PER_BLOCK;
        } while (n >= KCACHE__STRIPES_PER_BLOCK);
    }
    for (; n != 0; n--, p += KCACHE__STRIPE, ps++) /* a block begun here (ps was 0) */
        KCACHE__AVX512_ACC(p, KCACHE__AVX512_LD(kcache__secret + 8 * ps));
    if (last) KCACHE__AVX512_ACC(last, KCACHE__AVX512_LD(kcache__secret + KCACHE__LAST_STRIPE_SECRET));
    a = _mm512_add_epi64(a, KCACHE__AVX512_SWAP(d));
    _mm512_storeu_si512((void *)acc, a);
    *pos = ps;
}
#endif /* AVX-512 */

#if defined(KCACHE__HASH_HAVE_NEON)
#define KCACHE__NEON_LD(q) vreinterpretq_u64_u8(vld1q_u8(q))
#define KCACHE__NEON_ACC(a, q, s)                                                   \
    do {                                                                            \
        uint64x2_t d_ = KCACHE__NEON_LD(q);                                         \
        uint64x2_t x_ = veorq_u64(d_, KCACHE__NEON_LD(s));                          \
        a = vaddq_u64(a, vextq_u64(d_, d_, 1));                                     \
        a = vmlal_u32(a, vmovn_u64(x_), vshrn_n_u64(x_, 32));                       \
    } while (0)
#define KCACHE__NEON_STRIPE(q, s)                                                   \
    do {                                                                            \
        KCACHE__NEON_ACC(a0, (q), (s));                                             \
        KCACHE__NEON_ACC(a1, (q) + 16, (s) + 16);                                   \
        KCACHE__NEON_ACC(a2, (q) + 32, (s) + 32);                                   \
        KCACHE__NEON_ACC(a3, (q) + 48, (s) + 48);                                   \
    } while (0)
#define KCACHE__NEON_SCR(a, s)                                                      \
    do {                                                                            \
        uint64x2_t x_ = veorq_u64(veorq_u64(a, vshrq_n_u64(a, 47)), KCACHE__NEON_LD(s)); \
        uint64x2_t h_ = vshlq_n_u64(vmull_n_u32(vshrn_n_u64(x_, 32), KCACHE__P32_1), 32); \
        a = vmlal_n_u32(h_, vmovn_u64(x_), KCACHE__P32_1);                          \
    } while (0)

static void kcache__consume_neon(const uint64_t *in, uint64_t acc[8], const unsigned char *p, size_t n, unsigned *pos,
                                 const unsigned char *last)
{
    uint64x2_t a0 = vld1q_u64(in), a1 = vld1q_u64(in + 2);
    uint64x2_t a2 = vld1q_u64(in + 4), a3 = vld1q_u64(in + 6);
    unsigned ps = *pos;
    while (n) {
        size_t k = KCACHE__STRIPES_PER_BLOCK - ps;
        const unsigned char *s = kcache__secret + 8 * ps;
        if (k > n) k = n;
        n -= k;
        ps += (unsigned)k;
        for (; k; k--, p += KCACHE__STRIPE, s += 8)
            KCACHE__NEON_STRIPE(p, s);
        if (ps == KCACHE__STRIPES_PER_BLOCK) {
            const unsigned char *ks = kcache__secret + KCACHE__SCRAMBLE_SECRET;
            KCACHE__NEON_SCR(a0, ks);
            KCACHE__NEON_SCR(a1, ks + 16);
            KCACHE__NEON_SCR(a2, ks + 32);
            KCACHE__NEON_SCR(a3, ks + 48);
            ps = 0;
        }
    }
    if (last)
        KCACHE__NEON_STRIPE(last, kcache__secret + KCACHE__LAST_STRIPE_SECRET);
    vst1q_u64(acc, a0);
    vst1q_u64(acc + 2, a1);
    vst1q_u64(acc + 4, a2);
    vst1q_u64(acc + 6, a3);
    *pos = ps;
}
#endif /* NEON */

/* -- choosing a path --------------------------------------------------------------------------- */
#if defined(KCACHE__HASH_HAVE_AVX2)
#  if defined(__AVX2__)
#    define KCACHE__AVX2_MIN_LEN 0
static int kcache__cpu_avx2(void) { return 1; }
#  elif defined(_MSC_VER)
/* MSVC and clang-cl: no start-up record to read, so ask CPUID each time. CPUID is not free (and
 * traps to the hypervisor in a VM), so without cached state it is only worth asking for inputs
 * this long; shorter ones use SSE2 (same bits). */
#    define KCACHE__AVX2_MIN_LEN 4096
KCACHE__HASH_TARGET_XSAVE
static int kcache__cpu_avx2(void)
{
    int r[4];
    __cpuid(r, 0);
    if (r[0] < 7) return 0;
    __cpuid(r, 1);
    if (!(r[2] & (1 << 27)) || !(r[2] & (1 << 28))) return 0; /* OSXSAVE, AVX */
    if ((_xgetbv(0) & 6) != 6) return 0;                       /* OS saves XMM and YMM state */
    __cpuidex(r, 7, 0);
    return (r[1] >> 5) & 1;                                    /* AVX2 */
}
#  else
#    define KCACHE__AVX2_MIN_LEN 0
#    include <cpuid.h>
/* kcache's own CPUID + XGETBV, asked once per process and kept in the registry (>>registry) as
 * one word: bit 0 asked, bit 1 AVX2 usable, bit 2 AVX-512 usable. (__builtin_cpu_supports would
 * make libgcc's __cpu_indicator_init a constructor of every program that includes kcache.) Two
 * threads asking at once both store the same answer. */
static uint32_t kcache__cpu_simd(void)
{
    uint32_t v = kcache__atomic_load_u32(&kcache__reg.simd), a = 0, b = 0, c = 0, d = 0, lo = 0, hi = 0;
    uint64_t xcr0 = 0;
    if (v) return v;
    v = 1;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(1, 0, a, b, c, d);
        if ((c >> 27) & 1u) { /* OSXSAVE: XGETBV may be asked which register state the OS saves */
            __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" /* xgetbv */ : "=a"(lo), "=d"(hi) : "c"(0));
            xcr0 = ((uint64_t)hi << 32) | lo;
        }
        if (((c >> 28) & 1u) && (xcr0 & 0x6u) == 0x6u) { /* AVX, and the OS saves XMM and YMM */
            __cpuid_count(7, 0, a, b, c, d);
            if ((b >> 5) & 1u) v |= 2u;                                     /* AVX2 */
            if (((b >> 16) & 1u) && ((c >> 6) & 1u) && (xcr0 & 0xe0u) == 0xe0u) /* AVX512F, VBMI2, ZMM state */
                v |= 4u;
        }
    }
    kcache__atomic_store_u32(&kcache__reg.simd, v);
    return v;
}
static int kcache__cpu_avx2(void) { return (kcache__cpu_simd() >> 1) & 1u; }
#  endif
#endif
#if defined(KCACHE__HASH_HAVE_AVX512)
/* VBMI2 is not used; asking for it keeps AVX-512 to Ice Lake, Zen 4 and later, leaving out the
 * Skylake-SP generation, where 512-bit multiplies lower the core's clock for milliseconds. */
#  if defined(__AVX2__) /* kcache__cpu_simd is not there: ask here (once per process, as there) */
#    include <cpuid.h>
static int kcache__cpu_avx512(void)
{
    uint32_t v = kcache__atomic_load_u32(&kcache__reg.simd), a = 0, b = 0, c = 0, d = 0, lo = 0, hi = 0;
    if (v) return (v >> 2) & 1u;
    v = 1;
    __cpuid_count(7, 0, a, b, c, d);
    if (((b >> 16) & 1u) && ((c >> 6) & 1u)) {
        __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" /* xgetbv: AVX2 code runs, so OSXSAVE is set */ : "=a"(lo), "=d"(hi) : "c"(0));
        if ((lo & 0xe6u) == 0xe6u) v |= 4u;
    }
    kcache__atomic_store_u32(&kcache__reg.simd, v);
    return (v >> 2) & 1u;
}
#  else
static int kcache__cpu_avx512(void) { return (kcache__cpu_simd() >> 2) & 1u; }
#  endif
#endif

/* Whether `path` can run on this machine (test hook). */
static int kcache__hash_path_supported(int path)
{
    switch (path) {
    case KCACHE__HASH_SCALAR: return 1;
#if defined(KCACHE__HASH_HAVE_SSE2)
    case KCACHE__HASH_SSE2: return 1;
#endif
#if defined(KCACHE__HASH_HAVE_AVX2)
    case KCACHE__HASH_AVX2: return kcache__cpu_avx2();
#endif
#if defined(KCACHE__HASH_HAVE_NEON)
    case KCACHE__HASH_NEON: return 1;
#endif
#if defined(KCACHE__HASH_HAVE_AVX512)
    case KCACHE__HASH_AVX512: return kcache__cpu_avx512();
#endif
    default: return 0;
    }
}

/* The path for a long input of `len` bytes; an explicit request is honoured when supported and
 * falls back to scalar otherwise. */
static int kcache__hash_resolve(int path, size_t len)
{
    if (path != KCACHE__HASH_AUTO)
        return kcache__hash_path_supported(path) ? path : KCACHE__HASH_SCALAR;
#if defined(KCACHE__HASH_HAVE_AVX512)
    if (kcache__cpu_avx512()) return KCACHE__HASH_AVX512;
#endif
#if defined(KCACHE__HASH_HAVE_AVX2)
#  if KCACHE__AVX2_MIN_LEN > 0
    if (len >= KCACHE__AVX2_MIN_LEN && kcache__hash_path_supported(KCACHE__HASH_AVX2))
#  else
    if (kcache__hash_path_supported(KCACHE__HASH_AVX2))
#  endif
        return KCACHE__HASH_AVX2;
#endif
    (void)len;
#if defined(KCACHE__HASH_HAVE_SSE2)
    return KCACHE__HASH_SSE2;
#elif defined(KCACHE__HASH_HAVE_NEON)
    return KCACHE__HASH_NEON;
#else
    return KCACHE__HASH_SCALAR;
#endif
}

/* Dispatch through a constant table (an indirect call costs less than a switch that inlines
 * the bigger bodies). Paths not built here map to scalar; callers pass a resolved path. */
typedef void (*kcache__consume_fn)(const uint64_t *in, uint64_t *acc, const unsigned char *p, size_t n,
                                   unsigned *pos, const unsigned char *last);
static const kcache__consume_fn kcache__consume_tab[KCACHE__HASH_PATHS] = {
    kcache__consume_scalar,
#if defined(KCACHE__HASH_HAVE_SSE2)
    kcache__consume_sse2,
#else
    kcache__consume_scalar,
#endif
#if defined(KCACHE__HASH_HAVE_AVX2)
    kcache__consume_avx2,
#else
    kcache__consume_scalar,
#endif
#if defined(KCACHE__HASH_HAVE_NEON)
    kcache__consume_neon,
#else
    kcache__consume_scalar,
#endif
#if defined(KCACHE__HASH_HAVE_AVX512)
    kcache__consume_avx512,
#else
    kcache__consume_scalar,
#endif
};

/* in: the accumulators to start from (may be acc itself); acc: where they end */
static void kcache__consume(int path, const uint64_t *in, uint64_t acc[8], const unsigned char *p, size_t n,
                            unsigned *pos, const unsigned char *last)
{
    kcache__consume_tab[path >= 0 && path < KCACHE__HASH_PATHS ? path : KCACHE__HASH_SCALAR](in, acc, p, n, pos, last);
}

/* the accumulators' initial values */
static const uint64_t kcache__acc_start[8] = {
    KCACHE__P32_3, KCACHE__P64_1, KCACHE__P64_2, KCACHE__P64_3,
    KCACHE__P64_4, KCACHE__P32_2, KCACHE__P64_5, KCACHE__P32_1,
};

/* finalMerge for both halves: low with the secret at 11 and len * P64_1, high with the secret at
 * 117 and ~(len * P64_2); written out so the eight products can overlap */
#define KCACHE__MERGE2(i, s)                                                        \
    kcache__fold64(acc[i] ^ kcache__rd64((s) + 8 * (i)), acc[(i) + 1] ^ kcache__rd64((s) + 8 * (i) + 8))
static kcache_hash128 kcache__hash_finish_long(const uint64_t acc[8], uint64_t len)
{
    const unsigned char *sl = kcache__secret + 11;
    const unsigned char *sh = kcache__secret + KCACHE__SECRET_LEN - KCACHE__STRIPE - 11;
    uint64_t lo = len * KCACHE__P64_1, hi = ~(len * KCACHE__P64_2);
    lo += KCACHE__MERGE2(0, sl) + KCACHE__MERGE2(2, sl) + KCACHE__MERGE2(4, sl) + KCACHE__MERGE2(6, sl);
    hi += KCACHE__MERGE2(0, sh) + KCACHE__MERGE2(2, sh) + KCACHE__MERGE2(4, sh) + KCACHE__MERGE2(6, sh);
    return kcache__h128(kcache__avalanche3(lo), kcache__avalanche3(hi));
}

/* len > 240 */
static kcache_hash128 kcache__hash_long(int path, const unsigned char *p, size_t len)
{
    uint64_t acc[8];
    unsigned pos = 0;
    /* every stripe with input after it, then the last 64 bytes (which may overlap) */
    kcache__consume(path, kcache__acc_start, acc, p, (len - 1) / KCACHE__STRIPE, &pos, p + len - KCACHE__STRIPE);
    return kcache__hash_finish_long(acc, (uint64_t)len);
}

/* XXH3-128 of data on the given path (test hook; KCACHE__HASH_AUTO picks the fastest). */
static kcache_hash128 kcache__hash_with_path(int path, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    if (len <= KCACHE__MIDSIZE_MAX)
        return kcache__hash_short(p, len);
    return kcache__hash_long(kcache__hash_resolve(path, len), p, len);
}

#ifdef KCACHE_TEST_HASH_PATHS
static const char *const kcache__hash_path_names[KCACHE__HASH_PATHS] = { "scalar", "sse2", "avx2", "neon", "avx512" };
static kcache_hash128 kcache__test_scalar(const void *d, size_t n) { return kcache__hash_with_path(KCACHE__HASH_SCALAR, d, n); }
static kcache_hash128 kcache__test_sse2(const void *d, size_t n) { return kcache__hash_with_path(KCACHE__HASH_SSE2, d, n); }
static kcache_hash128 kcache__test_avx2(const void *d, size_t n) { return kcache__hash_with_path(KCACHE__HASH_AVX2, d, n); }
static kcache_hash128 kcache__test_neon(const void *d, size_t n) { return kcache__hash_with_path(KCACHE__HASH_NEON, d, n); }
static kcache_hash128 kcache__test_avx512(const void *d, size_t n) { return kcache__hash_with_path(KCACHE__HASH_AVX512, d, n); }

KCACHE_API kcache_test_hash_fn kcache_test_hash_path(const char *name)
{
    static const kcache_test_hash_fn fns[KCACHE__HASH_PATHS] = { kcache__test_scalar, kcache__test_sse2, kcache__test_avx2,
                                                                 kcache__test_neon, kcache__test_avx512 };
    int path;
    for (path = 0; name && path < KCACHE__HASH_PATHS; path++)
        if (strcmp(name, kcache__hash_path_names[path]) == 0) return kcache__hash_path_supported(path) ? fns[path] : NULL;
    return NULL;
}

KCACHE_API const char *kcache_test_hash_path_for(size_t len)
{
    return len <= KCACHE__MIDSIZE_MAX ? "short" : kcache__hash_path_names[kcache__hash_resolve(KCACHE__HASH_AUTO, len)];
}
#endif

/* -- streaming ------------------------------------------------------------------------------------
 * buf_ keeps everything until more than 256 bytes have come (the 0..240-byte algorithms need
 * the whole input). After that, stripes are consumed as soon as input exists after them, so
 * buf_ holds 1..256 not yet consumed bytes; when fewer than 64 are pending, the last consumed
 * stripe is kept at the end of buf_ (bytes 192..255) so final can rebuild the last 64 bytes. */
#define KCACHE__HBUF ((uint32_t)sizeof(((kcache_hash_state *)0)->buf_))

/* Starts a digest on the given path (test hook; KCACHE__HASH_AUTO picks the fastest). */
static void kcache__hash_init_path(kcache_hash_state *st, int path)
{
    memset(st, 0, sizeof *st);
    memcpy(st->acc_, kcache__acc_start, sizeof st->acc_);
    st->path_ = (int32_t)(path == KCACHE__HASH_AUTO ? path : kcache__hash_resolve(path, 0));
}

KCACHE_API void kcache_hash_init(kcache_hash_state *st)
{
    kcache__hash_init_path(st, KCACHE__HASH_AUTO);
}

KCACHE_API void kcache_hash_update(kcache_hash_state *st, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    unsigned pos;
    if (len == 0) return;
    st->total_len_ += len;
    if (len <= (size_t)(KCACHE__HBUF - st->buf_len_)) {
        memcpy(st->buf_ + st->buf_len_, p, len);
        st->buf_len_ += (uint32_t)len;
        return;
    }
    /* more input than the buffer holds: the digest is a long one, stripes can go */
    if (st->path_ == KCACHE__HASH_AUTO)
        st->path_ = (int32_t)kcache__hash_resolve(KCACHE__HASH_AUTO, (size_t)-1);
    pos = st->stripe_pos_;
    if (st->buf_len_) {
        size_t fill = KCACHE__HBUF - st->buf_len_;
        memcpy(st->buf_ + st->buf_len_, p, fill);
        p += fill;
        len -= fill; /* still > 0 */
        kcache__consume(st->path_, st->acc_, st->acc_, st->buf_, KCACHE__HBUF / KCACHE__STRIPE, &pos, NULL);
        st->buf_len_ = 0;
    }
    if (len > KCACHE__HBUF) {
        size_t n = (len - 1) / KCACHE__STRIPE;
        kcache__consume(st->path_, st->acc_, st->acc_, p, n, &pos, NULL);
        p += n * KCACHE__STRIPE;
        len -= n * KCACHE__STRIPE; /* 1..64 left */
        memcpy(st->buf_ + KCACHE__HBUF - KCACHE__STRIPE, p - KCACHE__STRIPE, KCACHE__STRIPE);
    }
    memcpy(st->buf_, p, len);
    st->buf_len_ = (uint32_t)len;
    st->stripe_pos_ = pos;
}

KCACHE_API kcache_hash128 kcache_hash_final(const kcache_hash_state *st)
{
    uint64_t acc[8];
    unsigned char tmp[KCACHE__STRIPE];
    const unsigned char *last;
    unsigned pos = st->stripe_pos_;
    size_t n = 0;
    int path = st->path_;
    if (st->total_len_ <= KCACHE__MIDSIZE_MAX)
        return kcache__hash_short(st->buf_, (size_t)st->total_len_);
    if (path == KCACHE__HASH_AUTO)
        path = kcache__hash_resolve(KCACHE__HASH_AUTO, (size_t)st->total_len_);
    if (st->buf_len_ >= KCACHE__STRIPE) {
        n = (st->buf_len_ - 1) / KCACHE__STRIPE;
        last = st->buf_ + st->buf_len_ - KCACHE__STRIPE;
    } else {
        size_t old = KCACHE__STRIPE - st->buf_len_;
        memcpy(tmp, st->buf_ + KCACHE__HBUF - old, old);
        memcpy(tmp + old, st->buf_, st->buf_len_);
        last = tmp;
    }
    kcache__consume(path, st->acc_, acc, st->buf_, n, &pos, last);
    return kcache__hash_finish_long(acc, st->total_len_);
}

/* -- one-shot and hex ------------------------------------------------------------------------------ */
KCACHE_API kcache_hash128 kcache_hash(const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    if (len <= 16) return kcache__hash_0to16(p, len);
    if (len <= 128) return kcache__hash_17to128(p, len);
    if (len <= KCACHE__MIDSIZE_MAX) return kcache__hash_129to240(p, len);
    return kcache__hash_with_path(KCACHE__HASH_AUTO, data, len);
}

KCACHE_API void kcache_hash_hex(kcache_hash128 h, char out[33])
{
    static const char digits[] = "0123456789abcdef";
    int i;
    for (i = 0; i < 16; i++) {
        out[i] = digits[(h.hi >> (60 - 4 * i)) & 15];
        out[16 + i] = digits[(h.lo >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

/* ============================================================================================== */
/* >>host  the magic tuple: OS/arch, CPU name, CPU features                                       */
/* ============================================================================================== */

/* ---- host magic tuple: OS/arch, CPU name and CPU features, as LLVM names them ----------------
 *
 * Fragment of kcache.h's implementation half.  Expects <stdint.h>, <stddef.h>, <string.h>,
 * <stdio.h> and <stdlib.h> to be included already.  The platform headers it needs are included
 * just below: when pasting, keep them at file scope (outside any extern "C" block and outside
 * any function); hoisting them to the top of the implementation half is fine.
 *
 *   kcache__host_os_arch(out, cap)       "linux-x86_64", "linux-aarch64", "windows-x86_64",
 *                                        "darwin-arm64", ... from compile-time macros only.
 *   kcache__host_cpu_name(out, cap)      LLVM's name for the host CPU ("haswell", "znver3",
 *                                        "neoverse-n1", ...): one stable name, the one LLVM 22
 *                                        (KCACHE__LLVM_NEWEST) gives; a CPU newer than that
 *                                        gets what LLVM 22 gives it ("generic", or for an
 *                                        unknown Intel family-6 model its feature guess).
 *   kcache__host_cpu_features(out, cap)  "+a,+b,-c": every feature this code checks, with its
 *                                        LLVM name, sorted by name (strcmp order).  Returns the
 *                                        length written (always < cap).  A cap too small drops
 *                                        whole items at the end, never half a name.
 *                                        KCACHE__HOST_FEATURES_MAX always suffices.
 *
 * All three NUL-terminate whenever cap > 0, write nothing when cap == 0 (out may then be NULL),
 * keep no state between calls and are safe to call from any thread.  Each call re-reads the
 * hardware (CPUID / getauxval / one pass over /proc/cpuinfo), so a caller that needs the tuple
 * often should keep its own copy.
 *
 * x86 / x86-64 (GCC, clang: <cpuid.h>; MSVC: <intrin.h>): vendor, family and model from CPUID,
 * mapped to LLVM's processor names (Intel Core 2 .. Nova Lake, the Atom line, Xeon Phi; AMD K6
 * .. Zen 5), with LLVM's feature-based guess for an unlisted Intel family-6 model, as LLVM 22
 * names them ("x86 CPU names" below; what older LLVMs call them is kcache-inspect's, in
 * tools/inspect_llvm.c).  ARM: the newest LLVM's names too.
 * Features follow LLVM's host detection: AVX-class, AVX-512-class and AMX-class features are
 * reported as '-' unless XGETBV shows the OS saves that register state (macOS saves AVX-512
 * state lazily, so there AVX-512 is taken as saved, as LLVM does).
 * aarch64 Linux: features from getauxval(AT_HWCAP/AT_HWCAP2); CPU name from the MIDR fields
 * ("CPU implementer", "CPU part", "CPU variant") in /proc/cpuinfo.  aarch64 macOS: name from
 * hw.cpufamily, features from hw.optional.* sysctls.  32-bit ARM Linux: name only.
 * Anything else: "generic" and an empty feature string.
 */

#if (defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)) && \
    !defined(_M_ARM64EC)
#  if defined(__GNUC__) || defined(__clang__)
#    include <cpuid.h>
#    define KCACHE__HOST_X86 1
#  elif defined(_MSC_VER)
#    include <intrin.h>
#    define KCACHE__HOST_X86 1
#  endif
#endif

#if (defined(__aarch64__) || defined(__arm__)) && defined(__linux__)
#  define KCACHE__HOST_ARM_LINUX 1
#  if defined(__aarch64__)
#    include <sys/auxv.h>
#  endif
#endif

#if defined(__APPLE__) && (defined(__aarch64__) || defined(__arm64__))
#  include <sys/types.h>
#  include <sys/sysctl.h>
#  define KCACHE__HOST_ARM_DARWIN 1
#endif

/* The MIDR / HWCAP decoding is plain C; a test may build it on any host with this macro. */
#if defined(KCACHE__HOST_ARM_LINUX) || defined(KCACHE__HOST_TEST_ARM)
#  define KCACHE__HOST_ARM_DECODE 1
#endif

#define KCACHE__HOST_FEATURES_MAX 4096 /* a buffer this size always holds the whole string */
#define KCACHE__HOST_NAME_MAX 64       /* ... the CPU name */
#define KCACHE__HOST_OS_ARCH_MAX 64    /* ... the OS/arch string */
#define KCACHE__HOST_MAX_FEATS 160     /* more entries than any table below */
#define KCACHE__LLVM_NEWEST 22         /* the LLVM whose CPU names kcache gives (numba 0.66-0.68's) */

/* Copies s into out[cap], cut to fit, NUL-terminated when cap > 0. */
static void kcache__host_copy(char *out, size_t cap, const char *s)
{
    size_t n;
    if (!out || cap == 0) return;
    n = strlen(s);
    if (n >= cap) n = cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* Writes "+name"/"-name" items joined by ',' in strcmp order of the names.  Only whole items
 * are written: the first one that does not fit ends the string.  Returns the length written. */
static size_t kcache__host_emit(char *out, size_t cap, const char *const *names,
                                const unsigned char *on, size_t n)
{
    size_t order[KCACHE__HOST_MAX_FEATS];
    size_t i, len = 0;
    if (n > KCACHE__HOST_MAX_FEATS) n = KCACHE__HOST_MAX_FEATS;
    for (i = 0; i < n; i++) { /* insertion sort of indices: n is small */
        size_t k = i;
        while (k > 0 && strcmp(names[order[k - 1]], names[i]) > 0) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = i;
    }
    if (!out || cap == 0) return 0;
    out[0] = '\0';
    for (i = 0; i < n; i++) {
        const char *name = names[order[i]];
        size_t nlen = strlen(name);
        size_t item = nlen + 1 + (len ? 1 : 0); /* [,] sign name */
        if (len + item + 1 > cap) break;
        if (len) out[len++] = ',';
        out[len++] = on[order[i]] ? '+' : '-';
        memcpy(out + len, name, nlen);
        len += nlen;
        out[len] = '\0';
    }
    return len;
}

static void kcache__host_os_arch(char *out, size_t cap)
{
    const char *os, *arch;
    char buf[KCACHE__HOST_OS_ARCH_MAX];
    size_t ol, al;

#if defined(_WIN32)
    os = "windows";
#elif defined(__CYGWIN__)
    os = "cygwin";
#elif defined(__APPLE__)
    os = "darwin";
#elif defined(__ANDROID__)
    os = "android";
#elif defined(__linux__)
    os = "linux";
#elif defined(__FreeBSD__)
    os = "freebsd";
#elif defined(__NetBSD__)
    os = "netbsd";
#elif defined(__OpenBSD__)
    os = "openbsd";
#elif defined(__DragonFly__)
    os = "dragonfly";
#elif defined(__sun)
    os = "sunos";
#elif defined(_AIX)
    os = "aix";
#elif defined(__HAIKU__)
    os = "haiku";
#elif defined(__EMSCRIPTEN__)
    os = "emscripten";
#elif defined(__wasi__)
    os = "wasi";
#elif defined(__unix__)
    os = "unix";
#else
    os = "unknown";
#endif

#if defined(_M_ARM64EC)
    arch = "arm64ec";
#elif defined(__x86_64__) || defined(_M_X64)
#  if defined(__ILP32__)
    arch = "x32";
#  else
    arch = "x86_64";
#  endif
#elif defined(__i386__) || defined(_M_IX86)
    arch = "x86";
#elif defined(__aarch64__) || defined(_M_ARM64) || defined(__arm64__)
#  if defined(__AARCH64EB__)
    arch = "aarch64_be";
#  elif defined(__APPLE__) || defined(_WIN32)
    arch = "arm64";
#  elif defined(__ILP32__)
    arch = "aarch64_ilp32";
#  else
    arch = "aarch64";
#  endif
#elif defined(__arm__) || defined(_M_ARM)
#  if defined(__ARMEB__)
    arch = "armeb";
#  else
    arch = "arm";
#  endif
#elif defined(__powerpc64__) || defined(__ppc64__)
#  if defined(__LITTLE_ENDIAN__) || \
      (defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
    arch = "ppc64le";
#  else
    arch = "ppc64";
#  endif
#elif defined(__powerpc__) || defined(__ppc__)
    arch = "ppc";
#elif defined(__s390x__)
    arch = "s390x";
#elif defined(__riscv)
#  if defined(__riscv_xlen) && __riscv_xlen == 64
    arch = "riscv64";
#  else
    arch = "riscv32";
#  endif
#elif defined(__loongarch64)
    arch = "loongarch64";
#elif defined(__mips64)
    arch = "mips64";
#elif defined(__mips__)
    arch = "mips";
#elif defined(__sparc__) && defined(__arch64__)
    arch = "sparc64";
#elif defined(__sparc__)
    arch = "sparc";
#elif defined(__wasm64__)
    arch = "wasm64";
#elif defined(__wasm32__) || defined(__wasm__)
    arch = "wasm32";
#else
    arch = "unknown";
#endif

    ol = strlen(os);
    al = strlen(arch);
    if (ol + 1 + al + 1 > sizeof buf) { /* cannot happen with the names above */
        kcache__host_copy(out, cap, "unknown-unknown");
        return;
    }
    memcpy(buf, os, ol);
    buf[ol] = '-';
    memcpy(buf + ol + 1, arch, al + 1);
    kcache__host_copy(out, cap, buf);
}

/* ---- x86 ------------------------------------------------------------------------------- */
#if defined(KCACHE__HOST_X86)

/* The CPUID output words the feature table reads. */
enum {
    KCACHE__X86_1C,   /* leaf 1, ECX */
    KCACHE__X86_1D,   /* leaf 1, EDX */
    KCACHE__X86_7B,   /* leaf 7 subleaf 0, EBX */
    KCACHE__X86_7C,   /* leaf 7 subleaf 0, ECX */
    KCACHE__X86_7D,   /* leaf 7 subleaf 0, EDX */
    KCACHE__X86_71A,  /* leaf 7 subleaf 1, EAX */
    KCACHE__X86_71D,  /* leaf 7 subleaf 1, EDX */
    KCACHE__X86_D1A,  /* leaf 0xD subleaf 1, EAX */
    KCACHE__X86_14B,  /* leaf 0x14 subleaf 0, EBX */
    KCACHE__X86_19B,  /* leaf 0x19, EBX */
    KCACHE__X86_1E1A, /* leaf 0x1E subleaf 1, EAX */
    KCACHE__X86_24B,  /* leaf 0x24 subleaf 0, EBX: AVX10 version (bits 7:0), 512-bit vectors */
    KCACHE__X86_E1C,  /* leaf 0x80000001, ECX */
    KCACHE__X86_E1D,  /* leaf 0x80000001, EDX */
    KCACHE__X86_E8B,  /* leaf 0x80000008, EBX */
    KCACHE__X86_WORDS
};

/* What else must hold for a feature to count: register state the OS saves (checked with
 * XGETBV), or for the AVX10 names leaf 0x24's AVX10 version (and 512-bit vector support). */
enum {
    KCACHE__X86_OS_NONE, KCACHE__X86_OS_AVX, KCACHE__X86_OS_AVX512, KCACHE__X86_OS_AMX, KCACHE__X86_OS_APX,
    KCACHE__X86_AVX10_V1, KCACHE__X86_AVX10_V2, KCACHE__X86_AVX10_V1_512
};

enum { KCACHE__X86_OTHER, KCACHE__X86_INTEL, KCACHE__X86_AMD };

typedef struct kcache__x86_info {
    uint32_t w[KCACHE__X86_WORDS];
    unsigned vendor, family, model;
    int avx_os, avx512_os, amx_os, apx_os;
} kcache__x86_info;

typedef struct kcache__x86_feat {
    const char *name;
    unsigned char word, bit, os;
} kcache__x86_feat;

/* LLVM's x86 host feature names and the CPUID bit each one reads: everything LLVM 14 reports,
 * plus what LLVM 15..22 added (leaf 7 subleaf 1, rdpru, APX, AVX10, movrs, leaf 0x1E's AMX).
 * One string for every LLVM version, so a name some version dropped stays (avx512er, avx512pf,
 * prefetchwt1 until LLVM 18; avx10.1-256/-512 in LLVM 18..20; amx-transpose in LLVM 20..21).
 * Where versions differ the conditions are the newest's: APX counts only with XCR0's APX state
 * (LLVM 22; older ones read the CPUID bit alone), avx10.N reads leaf 0x24's version number
 * (LLVM 22; avx10.1-256/-512 as LLVM 20: LLVM 18..19 read the CPUID bit alone).  Not
 * covered: LLVM 20's avx10.2-256/-512, which its detection never sets (it reads the AVX10
 * version as 0 or 1), so no one value is right for every version. */
static const kcache__x86_feat kcache__x86_feats[] = {
    {"64bit", KCACHE__X86_E1D, 29, KCACHE__X86_OS_NONE},
    {"adx", KCACHE__X86_7B, 19, KCACHE__X86_OS_NONE},
    {"aes", KCACHE__X86_1C, 25, KCACHE__X86_OS_NONE},
    {"amx-avx512", KCACHE__X86_1E1A, 7, KCACHE__X86_OS_AMX},
    {"amx-bf16", KCACHE__X86_7D, 22, KCACHE__X86_OS_AMX},
    {"amx-complex", KCACHE__X86_71D, 8, KCACHE__X86_OS_AMX},
    {"amx-fp16", KCACHE__X86_71A, 21, KCACHE__X86_OS_AMX},
    {"amx-fp8", KCACHE__X86_1E1A, 4, KCACHE__X86_OS_AMX},
    {"amx-int8", KCACHE__X86_7D, 25, KCACHE__X86_OS_AMX},
    {"amx-movrs", KCACHE__X86_1E1A, 8, KCACHE__X86_OS_AMX},
    {"amx-tf32", KCACHE__X86_1E1A, 6, KCACHE__X86_OS_AMX},
    {"amx-tile", KCACHE__X86_7D, 24, KCACHE__X86_OS_AMX},
    {"amx-transpose", KCACHE__X86_1E1A, 5, KCACHE__X86_OS_AMX},
    {"avx", KCACHE__X86_1C, 28, KCACHE__X86_OS_AVX},
    {"avx10.1", KCACHE__X86_71D, 19, KCACHE__X86_AVX10_V1},
    {"avx10.1-256", KCACHE__X86_71D, 19, KCACHE__X86_AVX10_V1},
    {"avx10.1-512", KCACHE__X86_71D, 19, KCACHE__X86_AVX10_V1_512},
    {"avx10.2", KCACHE__X86_71D, 19, KCACHE__X86_AVX10_V2},
    {"avx2", KCACHE__X86_7B, 5, KCACHE__X86_OS_AVX},
    {"avx512bf16", KCACHE__X86_71A, 5, KCACHE__X86_OS_AVX512},
    {"avx512bitalg", KCACHE__X86_7C, 12, KCACHE__X86_OS_AVX512},
    {"avx512bw", KCACHE__X86_7B, 30, KCACHE__X86_OS_AVX512},
    {"avx512cd", KCACHE__X86_7B, 28, KCACHE__X86_OS_AVX512},
    {"avx512dq", KCACHE__X86_7B, 17, KCACHE__X86_OS_AVX512},
    {"avx512er", KCACHE__X86_7B, 27, KCACHE__X86_OS_AVX512},
    {"avx512f", KCACHE__X86_7B, 16, KCACHE__X86_OS_AVX512},
    {"avx512fp16", KCACHE__X86_7D, 23, KCACHE__X86_OS_AVX512},
    {"avx512ifma", KCACHE__X86_7B, 21, KCACHE__X86_OS_AVX512},
    {"avx512pf", KCACHE__X86_7B, 26, KCACHE__X86_OS_AVX512},
    {"avx512vbmi", KCACHE__X86_7C, 1, KCACHE__X86_OS_AVX512},
    {"avx512vbmi2", KCACHE__X86_7C, 6, KCACHE__X86_OS_AVX512},
    {"avx512vl", KCACHE__X86_7B, 31, KCACHE__X86_OS_AVX512},
    {"avx512vnni", KCACHE__X86_7C, 11, KCACHE__X86_OS_AVX512},
    {"avx512vp2intersect", KCACHE__X86_7D, 8, KCACHE__X86_OS_AVX512},
    {"avx512vpopcntdq", KCACHE__X86_7C, 14, KCACHE__X86_OS_AVX512},
    {"avxifma", KCACHE__X86_71A, 23, KCACHE__X86_OS_AVX},
    {"avxneconvert", KCACHE__X86_71D, 5, KCACHE__X86_OS_AVX},
    {"avxvnni", KCACHE__X86_71A, 4, KCACHE__X86_OS_AVX},
    {"avxvnniint16", KCACHE__X86_71D, 10, KCACHE__X86_OS_AVX},
    {"avxvnniint8", KCACHE__X86_71D, 4, KCACHE__X86_OS_AVX},
    {"bmi", KCACHE__X86_7B, 3, KCACHE__X86_OS_NONE},
    {"bmi2", KCACHE__X86_7B, 8, KCACHE__X86_OS_NONE},
    {"ccmp", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"cf", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"cldemote", KCACHE__X86_7C, 25, KCACHE__X86_OS_NONE},
    {"clflushopt", KCACHE__X86_7B, 23, KCACHE__X86_OS_NONE},
    {"clwb", KCACHE__X86_7B, 24, KCACHE__X86_OS_NONE},
    {"clzero", KCACHE__X86_E8B, 0, KCACHE__X86_OS_NONE},
    {"cmov", KCACHE__X86_1D, 15, KCACHE__X86_OS_NONE},
    {"cmpccxadd", KCACHE__X86_71A, 7, KCACHE__X86_OS_NONE},
    {"crc32", KCACHE__X86_1C, 20, KCACHE__X86_OS_NONE}, /* LLVM ties it to SSE4.2 */
    {"cx16", KCACHE__X86_1C, 13, KCACHE__X86_OS_NONE},
    {"cx8", KCACHE__X86_1D, 8, KCACHE__X86_OS_NONE},
    {"egpr", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"enqcmd", KCACHE__X86_7C, 29, KCACHE__X86_OS_NONE},
    {"f16c", KCACHE__X86_1C, 29, KCACHE__X86_OS_AVX},
    {"fma", KCACHE__X86_1C, 12, KCACHE__X86_OS_AVX},
    {"fma4", KCACHE__X86_E1C, 16, KCACHE__X86_OS_AVX},
    {"fsgsbase", KCACHE__X86_7B, 0, KCACHE__X86_OS_NONE},
    {"fxsr", KCACHE__X86_1D, 24, KCACHE__X86_OS_NONE},
    {"gfni", KCACHE__X86_7C, 8, KCACHE__X86_OS_NONE},
    {"hreset", KCACHE__X86_71A, 22, KCACHE__X86_OS_NONE},
    {"invpcid", KCACHE__X86_7B, 10, KCACHE__X86_OS_NONE},
    {"kl", KCACHE__X86_7C, 23, KCACHE__X86_OS_NONE},
    {"lwp", KCACHE__X86_E1C, 15, KCACHE__X86_OS_NONE},
    {"lzcnt", KCACHE__X86_E1C, 5, KCACHE__X86_OS_NONE},
    {"mmx", KCACHE__X86_1D, 23, KCACHE__X86_OS_NONE},
    {"movbe", KCACHE__X86_1C, 22, KCACHE__X86_OS_NONE},
    {"movdir64b", KCACHE__X86_7C, 28, KCACHE__X86_OS_NONE},
    {"movdiri", KCACHE__X86_7C, 27, KCACHE__X86_OS_NONE},
    {"movrs", KCACHE__X86_71A, 31, KCACHE__X86_OS_NONE},
    {"mwaitx", KCACHE__X86_E1C, 29, KCACHE__X86_OS_NONE},
    {"ndd", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"nf", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"pclmul", KCACHE__X86_1C, 1, KCACHE__X86_OS_NONE},
    {"pconfig", KCACHE__X86_7D, 18, KCACHE__X86_OS_NONE},
    {"pku", KCACHE__X86_7C, 4, KCACHE__X86_OS_NONE},
    {"popcnt", KCACHE__X86_1C, 23, KCACHE__X86_OS_NONE},
    {"ppx", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"prefetchi", KCACHE__X86_71D, 14, KCACHE__X86_OS_NONE},
    {"prefetchwt1", KCACHE__X86_7C, 0, KCACHE__X86_OS_NONE},
    {"prfchw", KCACHE__X86_E1C, 8, KCACHE__X86_OS_NONE},
    {"ptwrite", KCACHE__X86_14B, 4, KCACHE__X86_OS_NONE},
    {"push2pop2", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
    {"raoint", KCACHE__X86_71A, 3, KCACHE__X86_OS_NONE},
    {"rdpid", KCACHE__X86_7C, 22, KCACHE__X86_OS_NONE},
    {"rdpru", KCACHE__X86_E8B, 4, KCACHE__X86_OS_NONE},
    {"rdrnd", KCACHE__X86_1C, 30, KCACHE__X86_OS_NONE},
    {"rdseed", KCACHE__X86_7B, 18, KCACHE__X86_OS_NONE},
    {"rtm", KCACHE__X86_7B, 11, KCACHE__X86_OS_NONE},
    {"sahf", KCACHE__X86_E1C, 0, KCACHE__X86_OS_NONE},
    {"serialize", KCACHE__X86_7D, 14, KCACHE__X86_OS_NONE},
    {"sgx", KCACHE__X86_7B, 2, KCACHE__X86_OS_NONE},
    {"sha", KCACHE__X86_7B, 29, KCACHE__X86_OS_NONE},
    {"sha512", KCACHE__X86_71A, 0, KCACHE__X86_OS_NONE},
    {"shstk", KCACHE__X86_7C, 7, KCACHE__X86_OS_NONE},
    {"sm3", KCACHE__X86_71A, 1, KCACHE__X86_OS_NONE},
    {"sm4", KCACHE__X86_71A, 2, KCACHE__X86_OS_NONE},
    {"sse", KCACHE__X86_1D, 25, KCACHE__X86_OS_NONE},
    {"sse2", KCACHE__X86_1D, 26, KCACHE__X86_OS_NONE},
    {"sse3", KCACHE__X86_1C, 0, KCACHE__X86_OS_NONE},
    {"sse4.1", KCACHE__X86_1C, 19, KCACHE__X86_OS_NONE},
    {"sse4.2", KCACHE__X86_1C, 20, KCACHE__X86_OS_NONE},
    {"sse4a", KCACHE__X86_E1C, 6, KCACHE__X86_OS_NONE},
    {"ssse3", KCACHE__X86_1C, 9, KCACHE__X86_OS_NONE},
    {"tbm", KCACHE__X86_E1C, 21, KCACHE__X86_OS_NONE},
    {"tsxldtrk", KCACHE__X86_7D, 16, KCACHE__X86_OS_NONE},
    {"uintr", KCACHE__X86_7D, 5, KCACHE__X86_OS_NONE},
    {"usermsr", KCACHE__X86_71D, 15, KCACHE__X86_OS_NONE},
    {"vaes", KCACHE__X86_7C, 9, KCACHE__X86_OS_AVX},
    {"vpclmulqdq", KCACHE__X86_7C, 10, KCACHE__X86_OS_AVX},
    {"waitpkg", KCACHE__X86_7C, 5, KCACHE__X86_OS_NONE},
    {"wbnoinvd", KCACHE__X86_E8B, 9, KCACHE__X86_OS_NONE},
    {"widekl", KCACHE__X86_19B, 2, KCACHE__X86_OS_NONE},
    {"xop", KCACHE__X86_E1C, 11, KCACHE__X86_OS_AVX},
    {"xsave", KCACHE__X86_1C, 26, KCACHE__X86_OS_AVX}, /* as LLVM: only with OS AVX state */
    {"xsavec", KCACHE__X86_D1A, 1, KCACHE__X86_OS_AVX},
    {"xsaveopt", KCACHE__X86_D1A, 0, KCACHE__X86_OS_AVX},
    {"xsaves", KCACHE__X86_D1A, 3, KCACHE__X86_OS_AVX},
    {"zu", KCACHE__X86_71D, 21, KCACHE__X86_OS_APX},
};

#define KCACHE__X86_NFEATS (sizeof kcache__x86_feats / sizeof kcache__x86_feats[0])

static void kcache__x86_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
#if defined(__GNUC__) || defined(__clang__)
    unsigned int a = 0, b = 0, c = 0, d = 0;
    __cpuid_count(leaf, sub, a, b, c, d);
    r[0] = a;
    r[1] = b;
    r[2] = c;
    r[3] = d;
#else
    int v[4];
    __cpuidex(v, (int)leaf, (int)sub);
    r[0] = (uint32_t)v[0];
    r[1] = (uint32_t)v[1];
    r[2] = (uint32_t)v[2];
    r[3] = (uint32_t)v[3];
#endif
}

/* Highest basic (base 0) or extended (base 0x80000000) leaf; 0 when CPUID is missing. */
static uint32_t kcache__x86_max_leaf(uint32_t base)
{
#if defined(__GNUC__) || defined(__clang__)
    return (uint32_t)__get_cpuid_max(base, NULL); /* on i386 it first checks CPUID exists */
#else
    uint32_t r[4];
    kcache__x86_cpuid(base, 0, r);
    return r[0];
#endif
}

/* XCR0; call only when CPUID.1:ECX.OSXSAVE is set (XGETBV faults otherwise). */
static uint64_t kcache__x86_xcr0(void)
{
#if defined(__GNUC__) || defined(__clang__)
    uint32_t lo = 0, hi = 0;
    __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" /* xgetbv */ : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
#else
    return (uint64_t)_xgetbv(0);
#endif
}

/* Which register state the OS saves on a context switch, from XCR0 (read only when CPUID.1:ECX
 * has OSXSAVE, which x->w already holds). */
static void kcache__x86_set_os(kcache__x86_info *x, uint64_t xcr0)
{
    int osxsave = (int)((x->w[KCACHE__X86_1C] >> 27) & 1u);
    x->avx_os = osxsave && ((x->w[KCACHE__X86_1C] >> 28) & 1u) && (xcr0 & 0x6u) == 0x6u;
#if defined(__APPLE__)
    x->avx512_os = 1; /* macOS enables AVX-512 state on first use */
#else
    x->avx512_os = x->avx_os && (xcr0 & 0xe0u) == 0xe0u;
#endif
    x->amx_os = osxsave && (xcr0 & 0x60000u) == 0x60000u;
    x->apx_os = osxsave && ((xcr0 >> 19) & 1u); /* the extended GPRs' state (LLVM 22+) */
}

static void kcache__x86_read(kcache__x86_info *x)
{
    uint32_t r[4], max, emax, eax1;
    char vendor[12];
    uint64_t xcr0 = 0;
    int osxsave;

    memset(x, 0, sizeof *x);
    max = kcache__x86_max_leaf(0);
    if (max < 1) return;

    kcache__x86_cpuid(0, 0, r);
    memcpy(vendor, &r[1], 4); /* EBX EDX ECX spell the vendor */
    memcpy(vendor + 4, &r[3], 4);
    memcpy(vendor + 8, &r[2], 4);
    if (memcmp(vendor, "GenuineIntel", 12) == 0) x->vendor = KCACHE__X86_INTEL;
    else if (memcmp(vendor, "AuthenticAMD", 12) == 0) x->vendor = KCACHE__X86_AMD;
    else x->vendor = KCACHE__X86_OTHER;

    kcache__x86_cpuid(1, 0, r);
    eax1 = r[0];
    x->w[KCACHE__X86_1C] = r[2];
    x->w[KCACHE__X86_1D] = r[3];
    /* Family and model the way LLVM computes them: the extended model counts for families 6
     * and 15, the extended family only for 15. */
    x->family = (eax1 >> 8) & 0xfu;
    x->model = (eax1 >> 4) & 0xfu;
    if (x->family == 6 || x->family == 15) {
        if (x->family == 15) x->family += (eax1 >> 20) & 0xffu;
        x->model += ((eax1 >> 16) & 0xfu) << 4;
    }

    if (max >= 7) {
        uint32_t subleaves;
        kcache__x86_cpuid(7, 0, r);
        subleaves = r[0];
        x->w[KCACHE__X86_7B] = r[1];
        x->w[KCACHE__X86_7C] = r[2];
        x->w[KCACHE__X86_7D] = r[3];
        if (subleaves >= 1) { /* some CPUs return junk for subleaves past the maximum */
            kcache__x86_cpuid(7, 1, r);
            x->w[KCACHE__X86_71A] = r[0];
            x->w[KCACHE__X86_71D] = r[3];
        }
    }
    if (max >= 0xd) {
        kcache__x86_cpuid(0xd, 1, r);
        x->w[KCACHE__X86_D1A] = r[0];
    }
    if (max >= 0x14) {
        kcache__x86_cpuid(0x14, 0, r);
        x->w[KCACHE__X86_14B] = r[1];
    }
    if (max >= 0x19) {
        kcache__x86_cpuid(0x19, 0, r);
        x->w[KCACHE__X86_19B] = r[1];
    }
    if (max >= 0x1e) {
        kcache__x86_cpuid(0x1e, 1, r);
        x->w[KCACHE__X86_1E1A] = r[0];
    }
    if (max >= 0x24) {
        kcache__x86_cpuid(0x24, 0, r);
        x->w[KCACHE__X86_24B] = r[1];
    }

    emax = kcache__x86_max_leaf(0x80000000u);
    if (emax >= 0x80000001u && emax < 0x8000ffffu) {
        kcache__x86_cpuid(0x80000001u, 0, r);
        x->w[KCACHE__X86_E1C] = r[2];
        x->w[KCACHE__X86_E1D] = r[3];
    }
    if (emax >= 0x80000008u && emax < 0x8000ffffu) {
        kcache__x86_cpuid(0x80000008u, 0, r);
        x->w[KCACHE__X86_E8B] = r[1];
    }

    osxsave = (int)((x->w[KCACHE__X86_1C] >> 27) & 1u);
    if (osxsave) xcr0 = kcache__x86_xcr0();
    kcache__x86_set_os(x, xcr0);
}

static int kcache__x86_feat_on(const kcache__x86_info *x, const kcache__x86_feat *f)
{
    int on = (int)((x->w[f->word] >> f->bit) & 1u);
    switch (f->os) {
    case KCACHE__X86_OS_AVX: return on && x->avx_os;
    case KCACHE__X86_OS_AVX512: return on && x->avx512_os;
    case KCACHE__X86_OS_AMX: return on && x->amx_os;
    case KCACHE__X86_OS_APX: return on && x->apx_os;
    case KCACHE__X86_AVX10_V1: return on && (x->w[KCACHE__X86_24B] & 0xffu) >= 1;
    case KCACHE__X86_AVX10_V2: return on && (x->w[KCACHE__X86_24B] & 0xffu) >= 2;
    case KCACHE__X86_AVX10_V1_512:
        return on && (x->w[KCACHE__X86_24B] & 0xffu) >= 1 && ((x->w[KCACHE__X86_24B] >> 18) & 1u);
    default: return on;
    }
}

static KCACHE__UNUSED int kcache__x86_has(const kcache__x86_info *x, const char *name)
{
    size_t i;
    for (i = 0; i < KCACHE__X86_NFEATS; i++)
        if (strcmp(kcache__x86_feats[i].name, name) == 0)
            return kcache__x86_feat_on(x, &kcache__x86_feats[i]);
    return 0;
}

#ifndef KCACHE_NO_CPU_NAMES
/* ---- x86 CPU names, as the newest LLVM gives them ------------------------------------------
 * numba keys its cache on the name its own LLVM's host detection gives the CPU, and LLVM learns
 * CPUs release by release.  kcache names the CPU as LLVM 22 (KCACHE__LLVM_NEWEST) does: a CPU
 * newer than that LLVM gets what it gives, "generic" (an unknown family) or, for an unknown
 * Intel family-6 model, the newest line whose features it has (the "guess" below).  What older
 * LLVMs call a CPU only kcache-inspect needs (for numba releases built on them): its
 * tools/inspect_llvm.c keeps the names of LLVM 9 to 22 and says how they were checked (LLVM 22:
 * llvmlite 0.50.0's, asked under qemu-x86_64 with made-up CPUIDs, scripts/llvm-host-names.sh;
 * the guess's AVX-512 steps, which qemu cannot run, from LLVM's Host.cpp); these are its LLVM 22
 * column. */
typedef struct kcache__x86_model {
    unsigned char model;
    const char *name;
} kcache__x86_model;

/* Intel family 6 models with a fixed LLVM name (0x55 and unlisted models are decided from the
 * features below). */
static const kcache__x86_model kcache__x86_intel6[] = {
    {0x0f, "core2"}, {0x16, "core2"},
    {0x17, "penryn"}, {0x1d, "penryn"},
    {0x1a, "nehalem"}, {0x1e, "nehalem"}, {0x1f, "nehalem"}, {0x2e, "nehalem"},
    {0x25, "westmere"}, {0x2c, "westmere"}, {0x2f, "westmere"},
    {0x2a, "sandybridge"}, {0x2d, "sandybridge"},
    {0x3a, "ivybridge"}, {0x3e, "ivybridge"},
    {0x3c, "haswell"}, {0x3f, "haswell"}, {0x45, "haswell"}, {0x46, "haswell"},
    {0x3d, "broadwell"}, {0x47, "broadwell"}, {0x4f, "broadwell"}, {0x56, "broadwell"},
    {0x4e, "skylake"}, {0x5e, "skylake"}, {0x8e, "skylake"}, {0x9e, "skylake"},
    {0xa5, "skylake"}, {0xa6, "skylake"}, /* Comet Lake */
    {0xa7, "rocketlake"},
    {0x66, "cannonlake"},
    {0x7d, "icelake-client"}, {0x7e, "icelake-client"},
    {0x6a, "icelake-server"}, {0x6c, "icelake-server"},
    {0x8c, "tigerlake"}, {0x8d, "tigerlake"},
    {0x97, "alderlake"}, {0x9a, "alderlake"},
    {0xbe, "gracemont"},
    {0xb7, "raptorlake"},
    {0xba, "raptorlake"},
    {0xbf, "raptorlake"},
    {0xaa, "meteorlake"},
    {0xac, "meteorlake"},
    {0xc5, "arrowlake"}, {0xb5, "arrowlake"},
    {0xc6, "arrowlake-s"},
    {0xbd, "lunarlake"},
    {0xcc, "pantherlake"},
    {0xd5, "wildcatlake"},
    {0x8f, "sapphirerapids"},
    {0xcf, "emeraldrapids"},
    {0xad, "graniterapids"},
    {0xae, "graniterapids-d"},
    {0x1c, "bonnell"}, {0x26, "bonnell"}, {0x27, "bonnell"}, {0x35, "bonnell"},
    {0x36, "bonnell"},
    {0x37, "silvermont"}, {0x4a, "silvermont"}, {0x4d, "silvermont"}, {0x5a, "silvermont"},
    {0x5d, "silvermont"}, {0x4c, "silvermont"},
    {0x5c, "goldmont"}, {0x5f, "goldmont"},
    {0x7a, "goldmont-plus"},
    {0x86, "tremont"}, {0x8a, "tremont"}, {0x96, "tremont"}, {0x9c, "tremont"},
    {0xaf, "sierraforest"},
    {0xb6, "grandridge"},
    {0xdd, "clearwaterforest"},
    {0x57, "knl"},
    {0x85, "knm"},
};

static const char *kcache__x86_intel_name(const kcache__x86_info *x)
{
    size_t i;
    switch (x->family) {
    case 3: return "i386";
    case 4: return "i486";
    case 5: return kcache__x86_has(x, "mmx") ? "pentium-mmx" : "pentium";
    case 6:
        if (x->model == 0x55) { /* Skylake, Cascade Lake and Cooper Lake Xeons share it */
            if (kcache__x86_has(x, "avx512bf16")) return "cooperlake";
            if (kcache__x86_has(x, "avx512vnni")) return "cascadelake";
            return "skylake-avx512";
        }
        for (i = 0; i < sizeof kcache__x86_intel6 / sizeof kcache__x86_intel6[0]; i++)
            if (kcache__x86_intel6[i].model == x->model) return kcache__x86_intel6[i].name;
        /* An unlisted family-6 model: the newest line whose features it has. */
        if (kcache__x86_has(x, "avx512vp2intersect")) return "tigerlake";
        if (kcache__x86_has(x, "avx512vbmi2")) return "icelake-client";
        if (kcache__x86_has(x, "avx512vbmi")) return "cannonlake";
        if (kcache__x86_has(x, "avx512bf16")) return "cooperlake";
        if (kcache__x86_has(x, "avx512vnni")) return "cascadelake";
        if (kcache__x86_has(x, "avx512vl")) return "skylake-avx512";
        if (kcache__x86_has(x, "avx512er")) return "knl";
        if (kcache__x86_has(x, "clflushopt"))
            return kcache__x86_has(x, "sha") ? "goldmont" : "skylake";
        if (kcache__x86_has(x, "adx")) return "broadwell";
        if (kcache__x86_has(x, "avx2")) return "haswell";
        if (kcache__x86_has(x, "avx")) return "sandybridge";
        if (kcache__x86_has(x, "sse4.2"))
            return kcache__x86_has(x, "movbe") ? "silvermont" : "nehalem";
        if (kcache__x86_has(x, "sse4.1")) return "penryn";
        if (kcache__x86_has(x, "ssse3"))
            return kcache__x86_has(x, "movbe") ? "bonnell" : "core2";
        if (kcache__x86_has(x, "64bit")) return "core2";
        if (kcache__x86_has(x, "sse3")) return "yonah";
        if (kcache__x86_has(x, "sse2")) return "pentium-m";
        if (kcache__x86_has(x, "sse")) return "pentium3";
        if (kcache__x86_has(x, "mmx")) return "pentium2";
        return "pentiumpro";
    case 15:
        if (kcache__x86_has(x, "64bit")) return "nocona";
        if (kcache__x86_has(x, "sse3")) return "prescott";
        return "pentium4";
    case 18: /* Nova Lake */
        return x->model == 0x01 || x->model == 0x03 ? "novalake" : "generic";
    case 19: /* Diamond Rapids */
        return x->model == 0x01 ? "diamondrapids" : "generic";
    default: return "generic";
    }
}

static const char *kcache__x86_amd_name(const kcache__x86_info *x)
{
    unsigned m = x->model;
    switch (x->family) {
    case 4: return "i486";
    case 5:
        switch (m) {
        case 6: case 7: return "k6";
        case 8: return "k6-2";
        case 9: case 13: return "k6-3";
        case 10: return "geode";
        default: return "pentium";
        }
    case 6: return kcache__x86_has(x, "sse") ? "athlon-xp" : "athlon";
    case 15: return kcache__x86_has(x, "sse3") ? "k8-sse3" : "k8";
    case 16: return "amdfam10";
    case 18: return "amdfam10"; /* Llano */
    case 20: return "btver1";
    case 21: /* Bulldozer, Piledriver, Steamroller, Excavator */
        if (m >= 0x60 && m <= 0x7f) return "bdver4";
        if (m >= 0x30 && m <= 0x3f) return "bdver3";
        if ((m >= 0x10 && m <= 0x1f) || m == 0x02) return "bdver2";
        return "bdver1";
    case 22: return "btver2";
    case 23: /* Zen, Zen+, Zen 2 (Renoir, Lucienne, Mendocino, ...) */
        if ((m >= 0x30 && m <= 0x3f) || m == 0x47 || (m >= 0x60 && m <= 0x7f) ||
            (m >= 0x84 && m <= 0x87) || (m >= 0x90 && m <= 0xaf))
            return "znver2";
        return "znver1";
    case 25: /* Zen 3, Zen 4 */
        if ((m >= 0x10 && m <= 0x1f) || (m >= 0x60 && m <= 0x7f) || (m >= 0xa0 && m <= 0xaf)) return "znver4";
        return "znver3";
    case 26: return "znver5"; /* Zen 5, every model */
    default: return "generic";
    }
}

static const char *kcache__x86_name(const kcache__x86_info *x)
{
    if (x->vendor == KCACHE__X86_INTEL) return kcache__x86_intel_name(x);
    if (x->vendor == KCACHE__X86_AMD) return kcache__x86_amd_name(x);
    return "generic";
}
#else /* KCACHE_NO_CPU_NAMES: the CPU as CPUID gives it (vendor, family, model), not LLVM's name */
static void kcache__x86_id(const kcache__x86_info *x, char *out, size_t cap)
{
    snprintf(out, cap, "%s-%u-0x%02x", x->vendor == KCACHE__X86_INTEL ? "intel" : x->vendor == KCACHE__X86_AMD ? "amd" : "x86",
             x->family, x->model);
}
#endif /* KCACHE_NO_CPU_NAMES */

static size_t kcache__x86_features(const kcache__x86_info *x, char *out, size_t cap)
{
    const char *names[KCACHE__X86_NFEATS];
    unsigned char on[KCACHE__X86_NFEATS];
    size_t i;
    for (i = 0; i < KCACHE__X86_NFEATS; i++) {
        names[i] = kcache__x86_feats[i].name;
        on[i] = (unsigned char)kcache__x86_feat_on(x, &kcache__x86_feats[i]);
    }
    return kcache__host_emit(out, cap, names, on, KCACHE__X86_NFEATS);
}

#endif /* KCACHE__HOST_X86 */

/* ---- ARM: MIDR decoding (Linux /proc/cpuinfo) and aarch64 HWCAP bits ------------------ */
#if defined(KCACHE__HOST_ARM_DECODE)

#define KCACHE__ARM_MAX_PARTS 16

/* What a pass over /proc/cpuinfo collects: the last implementer, part and variant lines (as
 * LLVM reads them), the distinct parts (for big.LITTLE pairs), and the Qualcomm SoCs whose part
 * line names whichever core the kernel ran on. */
typedef struct kcache__arm_scan {
    unsigned implementer, part, variant;
    int have_implementer, have_part;
    unsigned parts[KCACHE__ARM_MAX_PARTS];
    size_t nparts;
    int msm_a53;
} kcache__arm_scan;

/* The value after "Key<blanks>:<blanks>" when line starts with key, else NULL. */
static const char *kcache__arm_field(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0) return NULL;
    line += n;
    while (*line == ' ' || *line == '\t' || *line == ':') line++;
    return line;
}

static int kcache__arm_number(const char *s, unsigned *v)
{
    char *end = NULL;
    unsigned long n = strtoul(s, &end, 0);
    if (end == s || n > 0xffffffffUL) return 0;
    *v = (unsigned)n;
    return 1;
}

/* Feeds one line (its trailing newline optional) of /proc/cpuinfo. */
static void kcache__arm_scan_line(kcache__arm_scan *s, const char *line)
{
    const char *v;
    unsigned n;
    if ((v = kcache__arm_field(line, "CPU implementer")) != NULL) {
        if (kcache__arm_number(v, &n)) {
            s->implementer = n;
            s->have_implementer = 1;
        }
    } else if ((v = kcache__arm_field(line, "CPU part")) != NULL) {
        if (kcache__arm_number(v, &n)) {
            size_t i;
            s->part = n;
            s->have_part = 1;
            for (i = 0; i < s->nparts && s->parts[i] != n; i++) {}
            if (i == s->nparts && s->nparts < KCACHE__ARM_MAX_PARTS) s->parts[s->nparts++] = n;
        }
    } else if ((v = kcache__arm_field(line, "CPU variant")) != NULL) {
        if (kcache__arm_number(v, &n)) s->variant = n;
    } else if ((v = kcache__arm_field(line, "Hardware")) != NULL) {
        size_t len = strlen(v);
        while (len > 0 && (v[len - 1] == '\n' || v[len - 1] == '\r' || v[len - 1] == ' ' ||
                           v[len - 1] == '\t'))
            len--;
        s->msm_a53 = len >= 7 && (memcmp(v + len - 7, "MSM8994", 7) == 0 ||
                                  memcmp(v + len - 7, "MSM8996", 7) == 0);
    }
}

typedef struct kcache__arm_part {
    unsigned short part;
    const char *name;
} kcache__arm_part;

static const kcache__arm_part kcache__arm_parts_arm[] = { /* implementer 0x41, Arm Ltd. */
    {0x926, "arm926ej-s"}, {0xb02, "mpcore"}, {0xb36, "arm1136j-s"}, {0xb56, "arm1156t2-s"},
    {0xb76, "arm1176jz-s"}, {0xc05, "cortex-a5"}, {0xc07, "cortex-a7"}, {0xc08, "cortex-a8"},
    {0xc09, "cortex-a9"}, {0xc0f, "cortex-a15"}, {0xc0e, "cortex-a17"}, {0xc20, "cortex-m0"},
    {0xc23, "cortex-m3"}, {0xc24, "cortex-m4"}, {0xc27, "cortex-m7"}, {0xd20, "cortex-m23"},
    {0xd21, "cortex-m33"}, {0xd24, "cortex-m52"}, {0xd22, "cortex-m55"}, {0xd23, "cortex-m85"},
    {0xc18, "cortex-r8"}, {0xd13, "cortex-r52"}, {0xd16, "cortex-r52plus"},
    {0xd15, "cortex-r82"}, {0xd14, "cortex-r82ae"}, {0xd02, "cortex-a34"},
    {0xd04, "cortex-a35"}, {0xd8f, "cortex-a320"}, {0xd03, "cortex-a53"},
    {0xd05, "cortex-a55"}, {0xd46, "cortex-a510"}, {0xd80, "cortex-a520"},
    {0xd88, "cortex-a520ae"}, {0xd07, "cortex-a57"}, {0xd06, "cortex-a65"},
    {0xd43, "cortex-a65ae"}, {0xd08, "cortex-a72"}, {0xd09, "cortex-a73"},
    {0xd0a, "cortex-a75"}, {0xd0b, "cortex-a76"}, {0xd0e, "cortex-a76ae"},
    {0xd0d, "cortex-a77"}, {0xd41, "cortex-a78"}, {0xd42, "cortex-a78ae"},
    {0xd4b, "cortex-a78c"}, {0xd47, "cortex-a710"}, {0xd4d, "cortex-a715"},
    {0xd81, "cortex-a720"}, {0xd89, "cortex-a720ae"}, {0xd87, "cortex-a725"},
    {0xd44, "cortex-x1"}, {0xd4c, "cortex-x1c"}, {0xd48, "cortex-x2"}, {0xd4e, "cortex-x3"},
    {0xd82, "cortex-x4"}, {0xd85, "cortex-x925"}, {0xd4a, "neoverse-e1"},
    {0xd0c, "neoverse-n1"}, {0xd49, "neoverse-n2"}, {0xd8e, "neoverse-n3"},
    {0xd40, "neoverse-v1"}, {0xd4f, "neoverse-v2"}, {0xd84, "neoverse-v3"},
    {0xd83, "neoverse-v3ae"},
};
static const kcache__arm_part kcache__arm_parts_cavium[] = { /* 0x42 Broadcom, 0x43 Cavium */
    {0x516, "thunderx2t99"}, {0x0af, "thunderx2t99"}, {0x0a1, "thunderxt88"},
};
static const kcache__arm_part kcache__arm_parts_fujitsu[] = { /* 0x46 */
    {0x001, "a64fx"}, {0x003, "fujitsu-monaka"},
};
static const kcache__arm_part kcache__arm_parts_hisilicon[] = { /* 0x48 */
    {0xd01, "tsv110"},
};
static const kcache__arm_part kcache__arm_parts_nvidia[] = { /* 0x4e */
    {0x004, "carmel"}, {0x010, "olympus"},
};
static const kcache__arm_part kcache__arm_parts_qualcomm[] = { /* 0x51 */
    {0x06f, "krait"}, {0x201, "kryo"}, {0x205, "kryo"}, {0x211, "kryo"},
    {0x800, "cortex-a73"}, {0x801, "cortex-a73"}, {0x802, "cortex-a75"},
    {0x803, "cortex-a75"}, {0x804, "cortex-a76"}, {0x805, "cortex-a76"},
    {0xc00, "falkor"}, {0xc01, "saphira"}, {0x001, "oryon-1"},
};
static const kcache__arm_part kcache__arm_parts_apple[] = { /* 0x61 */
    {0x020, "apple-m1"}, {0x021, "apple-m1"}, {0x022, "apple-m1"}, {0x023, "apple-m1"},
    {0x024, "apple-m1"}, {0x025, "apple-m1"}, {0x028, "apple-m1"}, {0x029, "apple-m1"},
    {0x030, "apple-m2"}, {0x031, "apple-m2"}, {0x032, "apple-m2"}, {0x033, "apple-m2"},
    {0x034, "apple-m2"}, {0x035, "apple-m2"}, {0x038, "apple-m2"}, {0x039, "apple-m2"},
    {0x048, "apple-m3"}, {0x049, "apple-m3"},
};
static const kcache__arm_part kcache__arm_parts_armchina[] = { /* 0x63 */
    {0x132, "star-mc1"},
};
static const kcache__arm_part kcache__arm_parts_microsoft[] = { /* 0x6d: Cobalt 100 */
    {0xd49, "neoverse-n2"},
};
static const kcache__arm_part kcache__arm_parts_ampere[] = { /* 0xc0 */
    {0xac3, "ampere1"}, {0xac4, "ampere1a"}, {0xac5, "ampere1b"},
};

static const char *kcache__arm_lookup(const kcache__arm_part *t, size_t n, unsigned part)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (t[i].part == part) return t[i].name;
    return "generic";
}

#define KCACHE__ARM_LOOKUP(t, part) kcache__arm_lookup(t, sizeof t / sizeof t[0], part)

static const char *kcache__arm_scan_name(const kcache__arm_scan *s)
{
    unsigned p = s->part;
    if (!s->have_implementer || !s->have_part) return "generic";
    switch (s->implementer) {
    case 0x41:
        if (s->msm_a53) return "cortex-a53";
        if (s->nparts == 2 && ((s->parts[0] == 0xd85 && s->parts[1] == 0xd87) ||
                               (s->parts[0] == 0xd87 && s->parts[1] == 0xd85)))
            return "cortex-x925"; /* X925 + A725 big.LITTLE */
        return KCACHE__ARM_LOOKUP(kcache__arm_parts_arm, p);
    case 0x42: case 0x43: return KCACHE__ARM_LOOKUP(kcache__arm_parts_cavium, p);
    case 0x46: return KCACHE__ARM_LOOKUP(kcache__arm_parts_fujitsu, p);
    case 0x48: return KCACHE__ARM_LOOKUP(kcache__arm_parts_hisilicon, p);
    case 0x4e: return KCACHE__ARM_LOOKUP(kcache__arm_parts_nvidia, p);
    case 0x51: return KCACHE__ARM_LOOKUP(kcache__arm_parts_qualcomm, p);
    case 0x53: /* Samsung: variant and part together */
        return ((s->variant << 12) | p) == 0x1003 ? "exynos-m4" : "exynos-m3";
    case 0x61: return KCACHE__ARM_LOOKUP(kcache__arm_parts_apple, p);
    case 0x63: return KCACHE__ARM_LOOKUP(kcache__arm_parts_armchina, p);
    case 0x6d: return KCACHE__ARM_LOOKUP(kcache__arm_parts_microsoft, p);
    case 0xc0: return KCACHE__ARM_LOOKUP(kcache__arm_parts_ampere, p);
    default: return "generic";
    }
}

/* aarch64 Linux HWCAP bits (AT_HWCAP word 1, AT_HWCAP2 word 2) and the LLVM feature each
 * one, or each set of them (all bits of mask required), stands for. */
typedef struct kcache__arm_feat {
    const char *name;
    unsigned char word;
    uint64_t mask;
} kcache__arm_feat;

#define KCACHE__B(n) ((uint64_t)1 << (n))
static const kcache__arm_feat kcache__arm_feats[] = {
    {"aes", 1, KCACHE__B(3) | KCACHE__B(4)},              /* AES, PMULL */
    {"altnzcv", 2, KCACHE__B(7)},                         /* FLAGM2 */
    {"bf16", 2, KCACHE__B(14)},                           /* BF16 */
    {"bti", 2, KCACHE__B(17)},                            /* BTI */
    {"ccdp", 2, KCACHE__B(0)},                            /* DCPODP */
    {"ccpp", 1, KCACHE__B(16)},                           /* DCPOP */
    {"complxnum", 1, KCACHE__B(14)},                      /* FCMA */
    {"crc", 1, KCACHE__B(7)},                             /* CRC32 */
    {"crypto", 1, KCACHE__B(3) | KCACHE__B(4) | KCACHE__B(5) | KCACHE__B(6)},
    {"cssc", 2, KCACHE__B(34)},                           /* CSSC */
    {"dit", 1, KCACHE__B(24)},                            /* DIT */
    {"dotprod", 1, KCACHE__B(20)},                        /* ASIMDDP */
    {"ecv", 2, KCACHE__B(19)},                            /* ECV */
    {"f32mm", 2, KCACHE__B(10)},                          /* SVEF32MM */
    {"f64mm", 2, KCACHE__B(11)},                          /* SVEF64MM */
    {"flagm", 1, KCACHE__B(27)},                          /* FLAGM */
    {"fp-armv8", 1, KCACHE__B(0)},                        /* FP */
    {"fp16fml", 1, KCACHE__B(23)},                        /* ASIMDFHM */
    {"fptoint", 2, KCACHE__B(8)},                         /* FRINT */
    {"fullfp16", 1, KCACHE__B(9) | KCACHE__B(10)},        /* FPHP, ASIMDHP */
    {"i8mm", 2, KCACHE__B(13)},                           /* I8MM */
    {"jsconv", 1, KCACHE__B(13)},                         /* JSCVT */
    {"lse", 1, KCACHE__B(8)},                             /* ATOMICS */
    {"lse2", 1, KCACHE__B(25)},                           /* USCAT */
    {"mops", 2, KCACHE__B(43)},                           /* MOPS */
    {"mte", 2, KCACHE__B(18)},                            /* MTE */
    {"neon", 1, KCACHE__B(1)},                            /* ASIMD */
    {"pauth", 1, KCACHE__B(30) | KCACHE__B(31)},          /* PACA, PACG */
    {"rand", 2, KCACHE__B(16)},                           /* RNG */
    {"rcpc", 1, KCACHE__B(15)},                           /* LRCPC */
    {"rcpc-immo", 1, KCACHE__B(26)},                      /* ILRCPC */
    {"rdm", 1, KCACHE__B(12)},                            /* ASIMDRDM */
    {"sb", 1, KCACHE__B(29)},                             /* SB */
    {"sha2", 1, KCACHE__B(5) | KCACHE__B(6)},             /* SHA1, SHA2 */
    {"sha3", 1, KCACHE__B(17) | KCACHE__B(21)},           /* SHA3, SHA512 */
    {"sm4", 1, KCACHE__B(18) | KCACHE__B(19)},            /* SM3, SM4 */
    {"sme", 2, KCACHE__B(23)},                            /* SME */
    {"sme-f64f64", 2, KCACHE__B(25)},                     /* SME_F64F64 */
    {"sme-i16i64", 2, KCACHE__B(24)},                     /* SME_I16I64 */
    {"sme2", 2, KCACHE__B(37)},                           /* SME2 */
    {"ssbs", 1, KCACHE__B(28)},                           /* SSBS */
    {"sve", 1, KCACHE__B(22)},                            /* SVE */
    {"sve2", 2, KCACHE__B(1)},                            /* SVE2 */
    {"sve2-aes", 2, KCACHE__B(2) | KCACHE__B(3)},         /* SVEAES, SVEPMULL */
    {"sve2-bitperm", 2, KCACHE__B(4)},                    /* SVEBITPERM */
    {"sve2-sha3", 2, KCACHE__B(5)},                       /* SVESHA3 */
    {"sve2-sm4", 2, KCACHE__B(6)},                        /* SVESM4 */
    {"sve2p1", 2, KCACHE__B(36)},                         /* SVE2P1 */
    {"wfxt", 2, KCACHE__B(31)},                           /* WFXT */
};
#undef KCACHE__B

#if defined(__aarch64__) || defined(KCACHE__HOST_TEST_ARM)
static size_t kcache__arm_features(uint64_t hwcap, uint64_t hwcap2, char *out, size_t cap)
{
    const size_t n = sizeof kcache__arm_feats / sizeof kcache__arm_feats[0];
    const char *names[sizeof kcache__arm_feats / sizeof kcache__arm_feats[0]];
    unsigned char on[sizeof kcache__arm_feats / sizeof kcache__arm_feats[0]];
    size_t i;
    for (i = 0; i < n; i++) {
        uint64_t word = kcache__arm_feats[i].word == 1 ? hwcap : hwcap2;
        names[i] = kcache__arm_feats[i].name;
        on[i] = (unsigned char)((word & kcache__arm_feats[i].mask) == kcache__arm_feats[i].mask);
    }
    return kcache__host_emit(out, cap, names, on, n);
}
#endif

#endif /* KCACHE__HOST_ARM_DECODE */

#if defined(KCACHE__HOST_ARM_LINUX)
static const char *kcache__arm_linux_name(void)
{
    kcache__arm_scan s;
    char line[512];
    int at_start = 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    memset(&s, 0, sizeof s);
    if (!f) return "generic";
    while (fgets(line, (int)sizeof line, f)) {
        size_t len = strlen(line);
        /* Only the start of a line can hold a key; the rest of an over-long line is skipped. */
        if (at_start) kcache__arm_scan_line(&s, line);
        at_start = len > 0 && line[len - 1] == '\n';
    }
    fclose(f);
    return kcache__arm_scan_name(&s);
}
#endif

#if defined(KCACHE__HOST_ARM_DARWIN)
static int kcache__darwin_sysctl_u32(const char *name, uint32_t *v)
{
    uint32_t val = 0;
    size_t len = sizeof val;
    if (sysctlbyname(name, &val, &len, NULL, 0) != 0 || len != sizeof val) return 0;
    *v = val;
    return 1;
}

static const char *kcache__darwin_arm_name(void)
{
    uint32_t fam = 0;
    if (!kcache__darwin_sysctl_u32("hw.cpufamily", &fam)) return "generic";
    switch (fam) { /* CPUFAMILY_ARM_* values of <mach/machine.h> */
    case 0x1b588bb3u: return "apple-m1"; /* Firestorm/Icestorm: A14, M1 */
    case 0xda33d83du: return "apple-m2"; /* Blizzard/Avalanche: A15, M2 */
    case 0x8765edeau: /* Everest/Sawtooth: A16 */
    case 0xfa33415eu: /* Ibiza: M3 */
    case 0x72015832u: /* Palma: M3 Max */
    case 0x5f4dea93u: return "apple-m3"; /* Lobos: M3 Pro */
    case 0x2876f5b5u: return "apple-a17"; /* Coll: A17 Pro */
    case 0x6f5129acu: /* Donan: M4 */
    case 0x17d5b93au: /* Brava: M4 Max */
    case 0x75d4acb9u: /* Tahiti: A18 Pro */
    case 0x204526d0u: return "apple-m4"; /* Tupai: A18 */
    case 0x462504d2u: return "apple-a13";
    case 0x07d34b9fu: return "apple-a12";
    case 0xe81e7ef6u: return "apple-a11";
    case 0x67ceee93u: return "apple-a10";
    case 0x92fb37c8u: return "apple-a9";
    case 0x2c91a47eu: return "apple-a8";
    case 0x37a09642u: return "apple-a7";
    default: return "generic";
    }
}

typedef struct kcache__darwin_feat {
    const char *name, *sysctl;
} kcache__darwin_feat;

static const kcache__darwin_feat kcache__darwin_feats[] = {
    {"aes", "hw.optional.arm.FEAT_AES"},
    {"bf16", "hw.optional.arm.FEAT_BF16"},
    {"crc", "hw.optional.armv8_crc32"},
    {"dotprod", "hw.optional.arm.FEAT_DotProd"},
    {"fp-armv8", "hw.optional.floatingpoint"},
    {"fp16fml", "hw.optional.arm.FEAT_FHM"},
    {"fullfp16", "hw.optional.arm.FEAT_FP16"},
    {"i8mm", "hw.optional.arm.FEAT_I8MM"},
    {"lse", "hw.optional.arm.FEAT_LSE"},
    {"neon", "hw.optional.neon"},
    {"rdm", "hw.optional.arm.FEAT_RDM"},
    {"sha2", "hw.optional.arm.FEAT_SHA256"},
    {"sha3", "hw.optional.arm.FEAT_SHA3"},
};

static size_t kcache__darwin_arm_features(char *out, size_t cap)
{
    const size_t n = sizeof kcache__darwin_feats / sizeof kcache__darwin_feats[0];
    const char *names[sizeof kcache__darwin_feats / sizeof kcache__darwin_feats[0]];
    unsigned char on[sizeof kcache__darwin_feats / sizeof kcache__darwin_feats[0]];
    size_t i;
    for (i = 0; i < n; i++) {
        uint32_t v = 0;
        names[i] = kcache__darwin_feats[i].name;
        on[i] = (unsigned char)(kcache__darwin_sysctl_u32(kcache__darwin_feats[i].sysctl, &v) &&
                                v != 0);
    }
    return kcache__host_emit(out, cap, names, on, n);
}
#endif

/* ---- the three entry points -------------------------------------------------------------- */

/* The host CPU's one stable name: the newest LLVM's (see the x86 names above). */
static void kcache__host_cpu_name(char *out, size_t cap)
{
    const char *name = "generic";
#if defined(KCACHE__HOST_X86) && defined(KCACHE_NO_CPU_NAMES)
    kcache__x86_info x;
    (void)name;
    kcache__x86_read(&x);
    kcache__x86_id(&x, out, cap);
    return;
#elif defined(KCACHE__HOST_X86)
    kcache__x86_info x;
    kcache__x86_read(&x);
    name = kcache__x86_name(&x);
#elif defined(KCACHE__HOST_ARM_LINUX)
    name = kcache__arm_linux_name();
#elif defined(KCACHE__HOST_ARM_DARWIN)
    name = kcache__darwin_arm_name();
#endif
    kcache__host_copy(out, cap, name);
}

static size_t kcache__host_cpu_features(char *out, size_t cap)
{
#if defined(KCACHE__HOST_X86)
    kcache__x86_info x;
    kcache__x86_read(&x);
    return kcache__x86_features(&x, out, cap);
#elif defined(KCACHE__HOST_ARM_LINUX) && defined(__aarch64__)
    uint64_t hw1 = (uint64_t)getauxval(AT_HWCAP), hw2 = 0;
#  if defined(AT_HWCAP2)
    hw2 = (uint64_t)getauxval(AT_HWCAP2);
#  endif
    return kcache__arm_features(hw1, hw2, out, cap);
#elif defined(KCACHE__HOST_ARM_DARWIN)
    return kcache__darwin_arm_features(out, cap);
#else
    return kcache__host_emit(out, cap, NULL, NULL, 0); /* "" */
#endif
}

/* ============================================================================================== */
/* >>key  canonical keys: sorted, type-tagged, length-prefixed fields                             */
/* ============================================================================================== */

#define KCACHE__KEY_LIVE 0x6b63316bu /* set by kcache_key_init */
#define KCACHE__KEY_DEAD 0x6b63dead /* set by kcache_key_free: a later use is caught in debug builds */
#define KCACHE__PREVIEW_BYTES 64    /* bytes of a value kept printable in its preview */

static const char *const kcache__status_text[] = {
#define KCACHE__STATUS_TEXT(name, text) text,
    KCACHE_STATUSES(KCACHE__STATUS_TEXT)
#undef KCACHE__STATUS_TEXT
};
/* Inside the library, "no reason yet" (a lookup not yet judged, a removal that records none): the
   value one past the last reason, which the public KCACHE_REASON_COUNT counts. */
#define KCACHE__REASON_UNSET KCACHE_REASON_COUNT
static const char *const kcache__reason_word[] = {
#define KCACHE__REASON_WORD(name, word, text) word,
    KCACHE_REASONS(KCACHE__REASON_WORD)
#undef KCACHE__REASON_WORD
};
static const char *const kcache__reason_text[] = {
#define KCACHE__REASON_TEXT(name, word, text) text,
    KCACHE_REASONS(KCACHE__REASON_TEXT)
#undef KCACHE__REASON_TEXT
};

KCACHE_API const char *kcache_strerror(kcache_status s) {
    return ((unsigned)s < KCACHE_STATUS_COUNT) ? kcache__status_text[s] : "unknown status";
}
KCACHE_API const char *kcache_reason_name(kcache_reason r) {
    return ((unsigned)r < KCACHE_REASON_COUNT) ? kcache__reason_word[r] : "unknown";
}

static const kcache_key_field *kcache__key_fields(const kcache_key *k) { return k->heap ? k->heap : k->inline_fields; }
static kcache_key_field *kcache__key_fields_w(kcache_key *k) { return k->heap ? k->heap : k->inline_fields; }

/* A public call starts with these (KCACHE_CHECKS): on misuse (said, then asserted) it returns ret. */
#if KCACHE_CHECKS
static int kcache__kc_ok(const void *kc, const char *call);
static int kcache__key_ok(const kcache *kc, const kcache_key *k, const char *call);
#define KCACHE__CHECK_KC(kc, call, ret) do { if ((kc) && !kcache__kc_ok((kc), call)) return ret; } while (0)
#define KCACHE__CHECK_KEY(kc, k, call, ret) do { if (!kcache__key_ok((kc), (k), call)) return ret; } while (0)
#else
#define KCACHE__CHECK_KC(kc, call, ret) do { } while (0)
#define KCACHE__CHECK_KEY(kc, k, call, ret) do { } while (0)
#endif

/* A key passed to the library must have been initialised and not freed; in debug builds a
   violation is reported, naming the call, and asserted (KCACHE__CHECK_KEY), otherwise the call fails
   cleanly. */
static int kcache__key_usable(const kcache_key *k) {
    if (!k) return 0;
    return k->magic == KCACHE__KEY_LIVE; /* (debug builds: each public call said which, KCACHE__CHECK_KEY) */
}

static int kcache__printable(unsigned char c) { return c >= 0x20 && c < 0x7f; }

/* Up to KCACHE__PREVIEW_BYTES of text, escaped, "..." when cut. Returns 0 when the value does not
   look like text (the caller then shows its length and digest instead). */
static int kcache__preview_text(char *out, size_t cap, const unsigned char *p, size_t n, int binary_ok) {
    static const char hexd[] = "0123456789abcdef";
    size_t i, o = 0, room = cap - 4; /* keep room for "..." and the NUL */
    size_t odd = 0;
    for (i = 0; i < n && i < KCACHE__PREVIEW_BYTES; i++)
        if (!kcache__printable(p[i]) && p[i] != '\n' && p[i] != '\t') odd++;
    if (!binary_ok && odd * 8 > (i ? i : 1)) return 0;
    for (i = 0; i < n && i < KCACHE__PREVIEW_BYTES; i++) {
        unsigned char c = p[i];
        if (c == '\\' || c == '"' || c == '\n' || c == '\t') {
            if (o + 2 > room) break;
            out[o++] = '\\';
            out[o++] = (char)(c == '\n' ? 'n' : c == '\t' ? 't' : c);
        } else if (kcache__printable(c)) {
            if (o + 1 > room) break;
            out[o++] = (char)c;
        } else {
            if (o + 4 > room) break;
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hexd[c >> 4];
            out[o++] = hexd[c & 15];
        }
    }
    if (i < n) { memcpy(out + o, "...", 3); o += 3; }
    out[o] = 0;
    return 1;
}

static void kcache__preview_digest(char *out, uint64_t n, kcache_hash128 h) {
    char hex[33];
    kcache_hash_hex(h, hex);
    snprintf(out, KCACHE_PREVIEW_MAX, "<%llu bytes xxh128:%s>", (unsigned long long)n, hex);
}

/* Digest of the canonical form: a domain tag, the unit, the field count, then every field in name
   order as (type, name length, name, value length, value digest). Previews and file stamps are
   not part of it: they describe the value, the digest identifies it. */
static kcache_hash128 kcache__key_compute_digest(const kcache_key *k) {
    kcache_hash_state st;
    unsigned char buf[2 + KCACHE_FIELD_NAME_MAX + 8 + 16 + 2];
    const kcache_key_field *f = kcache__key_fields(k);
    size_t ulen = strlen(k->unit);
    uint32_t i;
    kcache_hash_init(&st);
    kcache_hash_update(&st, "kcache-key-1", 12);
    kcache__put_u16(buf, (uint16_t)ulen);
    kcache_hash_update(&st, buf, 2);
    kcache_hash_update(&st, k->unit, ulen);
    kcache__put_u32(buf, k->count);
    kcache_hash_update(&st, buf, 4);
    for (i = 0; i < k->count; i++) {
        size_t nlen = strlen(f[i].name), o = 0;
        buf[o++] = (unsigned char)f[i].type;
        buf[o++] = (unsigned char)nlen;
        memcpy(buf + o, f[i].name, nlen);
        o += nlen;
        kcache__put_u64(buf + o, f[i].size);
        kcache__put_u64(buf + o + 8, f[i].digest.lo);
        kcache__put_u64(buf + o + 16, f[i].digest.hi);
        kcache_hash_update(&st, buf, o + 24);
    }
    return kcache_hash_final(&st);
}

static kcache_status kcache__key_fail(kcache_key *k, kcache_status s) {
    if (k->error == KCACHE_OK) k->error = s;
    return s;
}

/* Finds where name belongs in the sorted fields; *found when it is already there. */
static uint32_t kcache__key_find(const kcache_key *k, const char *name, int *found) {
    const kcache_key_field *f = kcache__key_fields(k);
    uint32_t lo = 0, hi = k->count;
    *found = 0;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(f[mid].name, name);
        if (c == 0) { *found = 1; return mid; }
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* Reserves a field slot in name order; the caller fills everything but the name. */
static kcache_status kcache__key_slot(kcache_key *k, const char *name, uint32_t type, kcache_key_field **out) {
    kcache_key_field *f;
    size_t nlen, i;
    uint32_t at;
    int found;
    *out = NULL;
    if (!kcache__key_usable(k)) return KCACHE_EINVAL;
    if (!name) return kcache__key_fail(k, KCACHE_EINVAL);
    nlen = strlen(name);
    if (nlen == 0) return kcache__key_fail(k, KCACHE_EINVAL);
    if (nlen >= KCACHE_FIELD_NAME_MAX) return kcache__key_fail(k, KCACHE_ETOOBIG);
    for (i = 0; i < nlen; i++)
        if (!kcache__printable((unsigned char)name[i])) return kcache__key_fail(k, KCACHE_EINVAL);
    at = kcache__key_find(k, name, &found);
    if (found) return kcache__key_fail(k, KCACHE_EEXIST);
    if (k->count == 0xffffu) return kcache__key_fail(k, KCACHE_ETOOBIG);
    if (k->count == k->cap) {
        uint32_t ncap = k->cap * 2;
        kcache_key_field *nf = (kcache_key_field *)KCACHE_MALLOC(sizeof(kcache_key_field) * ncap);
        if (!nf) return kcache__key_fail(k, KCACHE_ENOMEM);
        memcpy(nf, kcache__key_fields(k), sizeof(kcache_key_field) * k->count);
        KCACHE_FREE(k->heap);
        k->heap = nf;
        k->cap = ncap;
    }
    f = kcache__key_fields_w(k);
    memmove(f + at + 1, f + at, sizeof(kcache_key_field) * (k->count - at));
    memset(&f[at], 0, sizeof f[at]);
    memcpy(f[at].name, name, nlen + 1);
    f[at].type = type;
    k->count++;
    *out = &f[at];
    return KCACHE_OK;
}

static kcache_status kcache__key_added(kcache_key *k) {
    k->digest = kcache__key_compute_digest(k);
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_key_init(kcache_key *k, const char *unit) {
    size_t n;
    if (!k) return KCACHE_EINVAL;
    memset(k, 0, offsetof(kcache_key, inline_fields));
    k->magic = KCACHE__KEY_LIVE;
    k->cap = KCACHE_KEY_INLINE;
    if (!unit || !unit[0]) { k->error = KCACHE_EINVAL; return KCACHE_EINVAL; }
    n = strlen(unit);
    if (n >= KCACHE_UNIT_MAX) { k->error = KCACHE_ETOOBIG; return KCACHE_ETOOBIG; }
    memcpy(k->unit, unit, n + 1);
    return kcache__key_added(k);
}

KCACHE_API kcache_status kcache_key_bytes(kcache_key *k, const char *name, const void *p, size_t n) {
    kcache_key_field *f;
    kcache_status s;
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_bytes", KCACHE_EINVAL);
    if (!p && n) return k && kcache__key_usable(k) ? kcache__key_fail(k, KCACHE_EINVAL) : KCACHE_EINVAL;
    s = kcache__key_slot(k, name, KCACHE_FIELD_BYTES, &f);
    if (s != KCACHE_OK) return s;
    f->size = n;
    f->digest = kcache_hash(p, n);
    if (n > KCACHE__PREVIEW_BYTES || !kcache__preview_text(f->preview, sizeof f->preview, (const unsigned char *)p, n, 0))
        kcache__preview_digest(f->preview, n, f->digest);
    return kcache__key_added(k);
}

KCACHE_API kcache_status kcache_key_str(kcache_key *k, const char *name, const char *s) {
    kcache_key_field *f;
    kcache_status st;
    size_t n;
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_str", KCACHE_EINVAL);
    if (!s) return k && kcache__key_usable(k) ? kcache__key_fail(k, KCACHE_EINVAL) : KCACHE_EINVAL;
    st = kcache__key_slot(k, name, KCACHE_FIELD_STR, &f);
    if (st != KCACHE_OK) return st;
    n = strlen(s);
    f->size = n;
    f->digest = kcache_hash(s, n);
    kcache__preview_text(f->preview, sizeof f->preview, (const unsigned char *)s, n, 1);
    return kcache__key_added(k);
}

KCACHE_API kcache_status kcache_key_u64(kcache_key *k, const char *name, uint64_t v) {
    kcache_key_field *f;
    unsigned char le[8];
    kcache_status s;
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_u64", KCACHE_EINVAL);
    s = kcache__key_slot(k, name, KCACHE_FIELD_U64, &f);
    if (s != KCACHE_OK) return s;
    kcache__put_u64(le, v);
    f->size = 8;
    f->digest = kcache_hash(le, 8);
    snprintf(f->preview, sizeof f->preview, "%llu", (unsigned long long)v);
    return kcache__key_added(k);
}

/* ---- file dependencies ------------------------------------------------------------------------
   kcache_key_file records a file's full stat and, when this process already knows the file under
   that stat (the stamp memo, >>registry), its content digest; otherwise the content is pending and
   is taken only when a lookup needs it (kcache__key_resolve): a hit whose stored mtime and size are
   the file's never reads it. The path and the stat stay beside the key (k->files) for that. */
#define KCACHE__FF_PENDING 1u /* the content digest is not known yet */
#define KCACHE__FF_MEMO 2u    /* known from a memo, not read now: KCACHE_STAMP=content reads it again */
#define KCACHE__STAMP_STORE_MIN ((uint64_t)1 << 20) /* a file this big gets its digest kept in the store */
#define KCACHE__HASH_BUF 65536

typedef struct kcache__kfile {
    struct kcache__kfile *next;
    char name[KCACHE_FIELD_NAME_MAX]; /* the field's */
    kcache__finfo fi;                 /* the stat kcache_key_file took */
    char *path;                       /* stored right after the struct */
} kcache__kfile;

static const kcache__kfile *kcache__key_kfile(const kcache_key *k, const char *name) {
    const kcache__kfile *kf;
    for (kf = (const kcache__kfile *)k->files; kf; kf = kf->next)
        if (strcmp(kf->name, name) == 0) return kf;
    return NULL;
}

/* Streams a file through XXH3-128 (the buffer on the heap: calls fit small thread stacks). 0 with
   *fi the file's stat after the read, or an errno; *changed when it changed while it was read (its
   stamp must then not vouch for the content). */
static int kcache__hash_file(const kcache__mem *m, const char *path, kcache_hash128 *out, kcache__finfo *fi, int *changed) {
    unsigned char *buf;
    kcache_hash_state st;
    kcache__finfo before;
    uint64_t total = 0;
    int fd, e = 0;
    memset(&before, 0, sizeof before); /* (gcc -O3 cannot see that a failed fstat returns first) */
    if ((buf = (unsigned char *)kcache__mem_alloc(m, KCACHE__HASH_BUF)) == NULL) return ENOMEM;
    fd = kcache__io_open(path, KCACHE__RD | KCACHE__NONBLOCK);
    if (fd < 0 || kcache__io_fstat(fd, &before) != 0) e = errno ? errno : EIO;
    else if (before.kind != KCACHE__KIND_FILE) e = EISDIR; /* a directory or FIFO is no dependency */
    kcache_hash_init(&st);
    while (!e) {
        ptrdiff_t r = kcache__io_read(fd, buf, KCACHE__HASH_BUF);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno ? errno : EIO;
        if (r <= 0) break;
        kcache_hash_update(&st, buf, (size_t)r);
        total += (uint64_t)r;
    }
    if (!e && kcache__io_fstat(fd, fi) != 0) e = errno ? errno : EIO;
    if (fd >= 0) kcache__io_close(fd);
    kcache__mem_free(m, buf);
    if (e) return e;
    *out = kcache_hash_final(&st);
    *changed = before.mtime_ns != fi->mtime_ns || before.ctime_ns != fi->ctime_ns || before.size != fi->size || total != fi->size;
    return 0;
}

KCACHE_API kcache_status kcache_key_file(kcache_key *k, const char *name, const char *path) {
    kcache_key_field *f;
    kcache__kfile *kf;
    kcache__finfo fi;
    kcache_status s;
    size_t n, skip;
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_file", KCACHE_EINVAL);
    if (!path || !path[0]) return k && kcache__key_usable(k) ? kcache__key_fail(k, KCACHE_EINVAL) : KCACHE_EINVAL;
    s = kcache__key_slot(k, name, KCACHE_FIELD_FILE, &f);
    if (s != KCACHE_OK) return s;
    n = strlen(path);
    f->size = n;
    f->digest = kcache_hash(path, n);
    skip = n > KCACHE__PREVIEW_BYTES ? n - KCACHE__PREVIEW_BYTES : 0; /* the end of a path says most */
    if (skip) {
        memcpy(f->preview, "...", 3);
        kcache__preview_text(f->preview + 3, sizeof f->preview - 3, (const unsigned char *)path + skip, n - skip, 1);
    } else {
        kcache__preview_text(f->preview, sizeof f->preview, (const unsigned char *)path, n, 1);
    }
    kcache__key_added(k);
    if (kcache__io_stat(path, &fi) != 0 || fi.kind != KCACHE__KIND_FILE) return kcache__key_fail(k, KCACHE_ENOENT);
    if ((kf = (kcache__kfile *)KCACHE_MALLOC(sizeof *kf + n + 1)) == NULL) return kcache__key_fail(k, KCACHE_ENOMEM);
    memcpy(kf->name, f->name, sizeof kf->name);
    kf->fi = fi;
    kf->path = (char *)(kf + 1);
    memcpy(kf->path, path, n + 1);
    kf->next = (kcache__kfile *)k->files;
    k->files = kf;
    f->mtime_ns = fi.mtime_ns;
    f->file_size = fi.size;
    f->reserved = kcache__memo_get(&fi, &f->content) ? KCACHE__FF_MEMO : KCACHE__FF_PENDING;
    return KCACHE_OK;
}

/* ---- the loaded file that holds an address (kcache_key_library) ----------------------------
   dladdr where it is declared and needs no extra library (glibc 2.34+, musl, the BSDs, macOS);
   on older glibc (dladdr in libdl) and where a system header hid it, /proc/self/maps, which names
   the mapped file itself; Windows: GetModuleHandleExW and GetModuleFileNameW. */
#if defined(_WIN32)
#elif (defined(__GLIBC__) && defined(__USE_GNU) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)) ||                      \
    (!defined(__GLIBC__) && (!defined(__linux__) || defined(_GNU_SOURCE) || defined(_BSD_SOURCE)))
#include <dlfcn.h>
#define KCACHE__HAVE_DLADDR 1
#endif
#define KCACHE__PATH_MAX 4096

#if defined(__linux__)
/* The path /proc/self/maps gives the mapping that holds address; 0, or an errno. */
static int kcache__maps_path(const void *address, char *out, size_t cap) {
    unsigned long long a = (uintptr_t)address;
    char *line = (char *)KCACHE_MALLOC(2 * KCACHE__PATH_MAX);
    int fd = line ? kcache__io_open("/proc/self/maps", KCACHE__RD) : -1, found = 0;
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f && fd >= 0) kcache__io_close(fd);
    while (f && fgets(line, 2 * KCACHE__PATH_MAX, f)) { /* start-end perms offset dev inode path */
        char *p, *e;
        int field;
        unsigned long long lo = strtoull(line, &e, 16), hi;
        if (*e != '-') continue;
        hi = strtoull(e + 1, &e, 16);
        if (a < lo || a >= hi) continue;
        for (p = e, field = 0; field < 4 && *p; field++) {
            while (*p == ' ') p++;
            while (*p && *p != ' ') p++;
        }
        while (*p == ' ') p++;
        p[strcspn(p, "\n")] = 0;
        if (*p == '/' && strlen(p) < cap) { /* not anonymous memory, the stack, a path too long */
            strcpy(out, p);
            found = 1;
        }
        break;
    }
    if (f) fclose(f);
    KCACHE_FREE(line);
    return found ? 0 : ENOENT;
}
#endif

/* The file of the module (shared object or executable) holding address, every symlink resolved;
   0, or an errno. */
static int kcache__module_path(const void *address, char *out, size_t cap) {
#if defined(_WIN32)
    HMODULE m;
    DWORD n;
    WCHAR *w;
    int r;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR)address, &m))
        return ENOENT;
    if ((w = (WCHAR *)KCACHE_MALLOC(32768 * sizeof(WCHAR))) == NULL) return ENOMEM;
    n = GetModuleFileNameW(m, w, 32768);
    r = n > 0 && n < 32768 ? WideCharToMultiByte(CP_UTF8, 0, w, (int)n + 1, out, (int)(cap < 0x7fffffff ? cap : 0x7fffffff), NULL, NULL) : 0;
    KCACHE_FREE(w);
    return r > 0 ? 0 : ENOENT;
#else
#if defined(KCACHE__HAVE_DLADDR)
    Dl_info di;
    memset(&di, 0, sizeof di);
    if (dladdr(address, &di) && di.dli_fname && di.dli_fname[0] == '/') { /* (the main program may be named as started) */
        char *real = realpath(di.dli_fname, NULL);
        int ok = real && strlen(real) < cap;
        if (ok) strcpy(out, real);
        free(real); /* realpath's own allocation */
        if (ok) return 0;
    }
#endif
#if defined(__linux__)
    return kcache__maps_path(address, out, cap);
#else
    (void)address; (void)out; (void)cap;
    return ENOENT;
#endif
#endif
}

KCACHE_API kcache_status kcache_key_library(kcache_key *k, const char *name, const void *address) {
    char *path;
    kcache_status s;
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_library", KCACHE_EINVAL);
    if (!kcache__key_usable(k)) return KCACHE_EINVAL;
    if (!address) return kcache__key_fail(k, KCACHE_EINVAL);
    if ((path = (char *)KCACHE_MALLOC(KCACHE__PATH_MAX)) == NULL) return kcache__key_fail(k, KCACHE_ENOMEM);
    s = kcache__module_path(address, path, KCACHE__PATH_MAX) == 0 ? kcache_key_file(k, name, path)
                                                                 : kcache__key_fail(k, KCACHE_ENOENT);
    KCACHE_FREE(path);
    return s;
}

/* The host tuple as kcache_key_host adds it, KCACHE_CPU_NAME / KCACHE_CPU_FEATURES applied. */
typedef struct kcache__host {
    char os_arch[64];
    char cpu_name[64];
    char cpu_features[KCACHE__HOST_FEATURES_MAX];
} kcache__host;

/* no_env: the detected tuple alone (kcache_config.no_env). */
static void kcache__host_detect(kcache__host *h, int no_env) {
    const char *env;
#ifdef KCACHE_NO_ENV
    no_env = 1; /* KCACHE_CPU_NAME and KCACHE_CPU_FEATURES are not read either */
#endif
    kcache__host_os_arch(h->os_arch, sizeof h->os_arch);
    env = no_env ? NULL : getenv("KCACHE_CPU_NAME");
    if (env && env[0]) snprintf(h->cpu_name, sizeof h->cpu_name, "%s", env);
    else kcache__host_cpu_name(h->cpu_name, sizeof h->cpu_name);
    env = no_env ? NULL : getenv("KCACHE_CPU_FEATURES");
    if (env) snprintf(h->cpu_features, sizeof h->cpu_features, "%s", env);
    else kcache__host_cpu_features(h->cpu_features, sizeof h->cpu_features);
}

static kcache_status kcache__key_add_host(kcache_key *k, const kcache__host *h) {
    kcache_status s = kcache_key_str(k, "host.os_arch", h->os_arch);
    if (s == KCACHE_OK) s = kcache_key_str(k, "host.cpu_name", h->cpu_name);
    if (s == KCACHE_OK) s = kcache_key_str(k, "host.cpu_features", h->cpu_features);
    return s;
}

KCACHE_API kcache_status kcache_key_host(kcache_key *k) {
    kcache__host *h;
    kcache_status s;
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_host", KCACHE_EINVAL);
    if (!kcache__key_usable(k)) return KCACHE_EINVAL;
    h = (kcache__host *)KCACHE_MALLOC(sizeof *h);
    if (!h) return kcache__key_fail(k, KCACHE_ENOMEM);
    kcache__host_detect(h, 0);
    s = kcache__key_add_host(k, h);
    KCACHE_FREE(h);
    return s;
}

KCACHE_API kcache_hash128 kcache_key_digest(const kcache_key *k) {
    kcache_hash128 zero = {0, 0};
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_digest", zero);
    if (!kcache__key_usable(k)) return zero;
    return k->digest;
}

KCACHE_API void kcache_key_free(kcache_key *k) {
    if (!k) return;
    if (k->magic == KCACHE__KEY_LIVE) {
        kcache__kfile *kf = (kcache__kfile *)k->files;
        KCACHE_FREE(k->heap);
        while (kf) {
            kcache__kfile *next = kf->next;
            KCACHE_FREE(kf);
            kf = next;
        }
    }
    k->heap = NULL;
    k->files = NULL;
    k->count = 0;
    k->magic = KCACHE__KEY_DEAD;
}

/* Keys kcache needs for a while inside a call live on the heap (a key is about 4 KiB: calls fit
   small thread stacks). kcache__key_drop frees one (NULL is ignored). */
static kcache_key *kcache__key_alloc(const kcache__mem *m) { /* m: its kcache's allocator, or NULL */
    kcache_key *k = (kcache_key *)kcache__mem_alloc(m, sizeof *k);
    if (k) kcache_key_init(k, NULL); /* a freeable, never-matching key until parsed into */
    return k;
}
static void kcache__key_drop(const kcache__mem *m, kcache_key *k) { /* m: the allocator it came from */
    if (!k) return;
    kcache_key_free(k);
    kcache__mem_free(m, k);
}

/* ---- the key record: a key's unit and fields (previews and stamps included) as bytes, the form
   kept beside every entry in memory and on disk, so that a lookup compares the whole key and not
   only its digest, and a miss can name the fields that differ. ----
       u16 unit length, unit, u16 field count, then per field in name order:
       u8 type, u8 name length, u8 preview length, u8 0, u64 size, u64 digest lo, u64 digest hi,
       name, preview, and for file fields: i64 mtime ns, u64 file size, u64 content lo, u64 content hi */

static size_t kcache__record_size(const kcache_key *k);
static void kcache__record_write(const kcache_key *k, kcache__wbuf *w);
/* Writes k's record into p (kcache__record_size(k) bytes). */
static void kcache__record_into(const kcache_key *k, unsigned char *p, size_t len) {
    kcache__wbuf w;
    w.p = p; w.len = 0; w.cap = len; w.overflow = 0;
    kcache__record_write(k, &w);
}
/* k's record in a new buffer (from m: kcache__mem_free(m, it)), or NULL. */
static unsigned char *kcache__record_new(const kcache__mem *m, const kcache_key *k, size_t *len) {
    unsigned char *p;
    *len = kcache__record_size(k);
    if ((p = (unsigned char *)kcache__mem_alloc(m, *len ? *len : 1)) != NULL) kcache__record_into(k, p, *len);
    return p;
}

static size_t kcache__record_size(const kcache_key *k) {
    const kcache_key_field *f = kcache__key_fields(k);
    size_t n = 2 + strlen(k->unit) + 2;
    uint32_t i;
    for (i = 0; i < k->count; i++)
        n += 28 + strlen(f[i].name) + strlen(f[i].preview) + (f[i].type == KCACHE_FIELD_FILE ? 32 : 0);
    return n;
}

static void kcache__record_write(const kcache_key *k, kcache__wbuf *w) {
    const kcache_key_field *f = kcache__key_fields(k);
    size_t ulen = strlen(k->unit);
    uint32_t i;
    kcache__w_u16(w, (uint16_t)ulen);
    kcache__w_mem(w, k->unit, ulen);
    kcache__w_u16(w, (uint16_t)k->count);
    for (i = 0; i < k->count; i++) {
        size_t nl = strlen(f[i].name), pl = strlen(f[i].preview);
        kcache__w_u8(w, f[i].type);
        kcache__w_u8(w, (unsigned)nl);
        kcache__w_u8(w, (unsigned)pl);
        kcache__w_u8(w, 0);
        kcache__w_u64(w, f[i].size);
        kcache__w_u64(w, f[i].digest.lo);
        kcache__w_u64(w, f[i].digest.hi);
        kcache__w_mem(w, f[i].name, nl);
        kcache__w_mem(w, f[i].preview, pl);
        if (f[i].type == KCACHE_FIELD_FILE) {
            kcache__w_u64(w, (uint64_t)f[i].mtime_ns);
            kcache__w_u64(w, f[i].file_size);
            kcache__w_u64(w, f[i].content.lo);
            kcache__w_u64(w, f[i].content.hi);
        }
    }
}

/* Decodes a record into a key (initialised here; free it after). Every length is checked, names
   must be printable and strictly increasing: anything else is KCACHE_ECORRUPT. */
static kcache_status kcache__record_parse(const unsigned char *p, size_t len, kcache_key *out) {
    kcache__rbuf r;
    char unit[KCACHE_UNIT_MAX];
    const unsigned char *s;
    uint16_t ulen, count, i;
    r.p = p; r.len = len; r.pos = 0; r.bad = 0;
    ulen = kcache__r_u16(&r);
    s = kcache__r_take(&r, ulen);
    if (!s || ulen == 0 || ulen >= KCACHE_UNIT_MAX || memchr(s, 0, ulen)) { kcache_key_init(out, NULL); return KCACHE_ECORRUPT; }
    memcpy(unit, s, ulen);
    unit[ulen] = 0;
    if (kcache_key_init(out, unit) != KCACHE_OK) return KCACHE_ECORRUPT;
    count = kcache__r_u16(&r);
    for (i = 0; i < count && !r.bad; i++) {
        kcache_key_field *f;
        unsigned type = kcache__r_u8(&r), nl = kcache__r_u8(&r), pl = kcache__r_u8(&r);
        char name[KCACHE_FIELD_NAME_MAX];
        const unsigned char *nm, *pv;
        uint64_t size, lo, hi;
        uint32_t before = out->count;
        kcache__r_u8(&r);
        size = kcache__r_u64(&r);
        lo = kcache__r_u64(&r);
        hi = kcache__r_u64(&r);
        nm = kcache__r_take(&r, nl);
        pv = kcache__r_take(&r, pl);
        if (!nm || !pv || nl == 0 || nl >= KCACHE_FIELD_NAME_MAX || pl >= KCACHE_PREVIEW_MAX || memchr(nm, 0, nl) || memchr(pv, 0, pl) ||
            type < KCACHE_FIELD_BYTES || type > KCACHE_FIELD_FILE) break;
        memcpy(name, nm, nl);
        name[nl] = 0;
        if (out->count && strcmp(kcache__key_fields(out)[out->count - 1].name, name) >= 0) break;
        if (kcache__key_slot(out, name, type, &f) != KCACHE_OK || out->count != before + 1) break;
        f->size = size;
        f->digest.lo = lo;
        f->digest.hi = hi;
        memcpy(f->preview, pv, pl);
        f->preview[pl] = 0;
        if (type == KCACHE_FIELD_FILE) {
            f->mtime_ns = (int64_t)kcache__r_u64(&r);
            f->file_size = kcache__r_u64(&r);
            f->content.lo = kcache__r_u64(&r);
            f->content.hi = kcache__r_u64(&r);
        }
    }
    if (r.bad || i != count || out->count != count || out->error != KCACHE_OK) {
        out->error = KCACHE_ECORRUPT;
        return KCACHE_ECORRUPT;
    }
    kcache__key_added(out);
    return KCACHE_OK;
}

/* How a stored file stamp compares with the file now (the key holds the file as it is now). */
enum { KCACHE__STAMP_SAME = 0, KCACHE__STAMP_MTIME = 1, KCACHE__STAMP_SIZE = 2, KCACHE__STAMP_CONTENT = 4 };
static int kcache__stamp_diff(const kcache_key_field *stored, const kcache_key_field *now) {
    int d = 0;
    if (stored->mtime_ns != now->mtime_ns || stored->mtime_ns == 0) d |= KCACHE__STAMP_MTIME;
    if (stored->file_size != now->file_size) d |= KCACHE__STAMP_SIZE;
    if (stored->content.lo != now->content.lo || stored->content.hi != now->content.hi) d |= KCACHE__STAMP_CONTENT;
    return d;
}
/* Whether a stamp difference invalidates the entry under the policy. */
static int kcache__stamp_stale(int diff, int policy) {
    if (policy == KCACHE_STAMP_MTIME) return (diff & (KCACHE__STAMP_MTIME | KCACHE__STAMP_SIZE)) != 0;
    if (policy == KCACHE_STAMP_CONTENT) return (diff & KCACHE__STAMP_CONTENT) != 0;
    /* hybrid: mtime + size decide when they match; otherwise the content does */
    if (!(diff & (KCACHE__STAMP_MTIME | KCACHE__STAMP_SIZE))) return 0;
    return (diff & (KCACHE__STAMP_CONTENT | KCACHE__STAMP_SIZE)) != 0;
}

/* How a stored key (its record) compares with a key now: the same identity (unit, names, types,
   sizes, digests) and, for each file field, a stamp that the policy accepts. Walks the record
   without decoding it: this is on the hit path. MATCH_NEED: the answer depends on a file's content
   that the key does not have yet (kcache_key_file): take it (kcache__key_resolve) and ask again. */
enum { KCACHE__MATCH = 0, KCACHE__MATCH_FIELDS = 1, KCACHE__MATCH_STAMP = 2, KCACHE__MATCH_NEED = 3 };
static int kcache__record_match(const unsigned char *rec, size_t len, const kcache_key *k, int policy) {
    const kcache_key_field *f = kcache__key_fields(k);
    kcache__rbuf r;
    size_t ulen = strlen(k->unit);
    const unsigned char *s;
    uint32_t i;
    int stale = 0, need = 0;
    r.p = rec; r.len = len; r.pos = 0; r.bad = 0;
    if (kcache__r_u16(&r) != ulen || !(s = kcache__r_take(&r, ulen)) || memcmp(s, k->unit, ulen) != 0 ||
        kcache__r_u16(&r) != k->count)
        return KCACHE__MATCH_FIELDS;
    for (i = 0; i < k->count; i++) {
        unsigned type = kcache__r_u8(&r), nl = kcache__r_u8(&r), pl = kcache__r_u8(&r);
        uint64_t size, lo, hi;
        kcache__r_u8(&r);
        size = kcache__r_u64(&r);
        lo = kcache__r_u64(&r);
        hi = kcache__r_u64(&r);
        s = kcache__r_take(&r, nl);
        if (r.bad || type != f[i].type || size != f[i].size || lo != f[i].digest.lo || hi != f[i].digest.hi ||
            nl != strlen(f[i].name) || memcmp(s, f[i].name, nl) != 0 || !kcache__r_take(&r, pl))
            return KCACHE__MATCH_FIELDS;
        if (type == KCACHE_FIELD_FILE) {
            kcache_key_field stored;
            stored.mtime_ns = (int64_t)kcache__r_u64(&r);
            stored.file_size = kcache__r_u64(&r);
            stored.content.lo = kcache__r_u64(&r);
            stored.content.hi = kcache__r_u64(&r);
            if (r.bad) return KCACHE__MATCH_FIELDS;
            {
                int d = kcache__stamp_diff(&stored, &f[i]);
                uint32_t fl = f[i].reserved;
                if (policy == KCACHE_STAMP_CONTENT ? (fl & (KCACHE__FF_PENDING | KCACHE__FF_MEMO)) != 0
                                                   : (fl & KCACHE__FF_PENDING) && policy == KCACHE_STAMP_HYBRID &&
                                                         (d & (KCACHE__STAMP_MTIME | KCACHE__STAMP_SIZE)))
                    need = 1;
                else if (kcache__stamp_stale((fl & KCACHE__FF_PENDING) ? d & ~KCACHE__STAMP_CONTENT : d, policy))
                    stale = 1; /* (pending and not needed: mtime policy, or hybrid with mtime and size equal) */
            }
        }
    }
    return need ? KCACHE__MATCH_NEED : stale ? KCACHE__MATCH_STAMP : KCACHE__MATCH;
}

/* ============================================================================================== */
/* >>lru  refcounted payloads and the in-memory LRU                                               */
/* ============================================================================================== */

/* A payload lives in one allocation: this header, then bytes whose last 16 before the payload hold
   a pointer back to the header, so kcache_release finds it from the data pointer alone. A payload
   read from disk is the whole entry file read in place (one read, no copy): the entry format keeps
   16 spare bytes right before the payload for that pointer. Payloads start on a 64-byte boundary
   (entry headers are padded to 64 and the bytes placed accordingly): the kernel's copy then runs
   with source and destination equally aligned, and the checksum's wide loads never split a
   cache line. */
typedef struct kcache__blob {
    long refs;            /* the LRU's reference plus one per caller holding it */
    size_t size;          /* payload bytes */
    const unsigned char *data;
    void *mem;            /* what the allocator returned */
    const kcache__mem *al; /* the allocator (its kcache's or store's: payloads are released before close) */
} kcache__blob;
#define KCACHE__BLOB_HDR 48 /* at least sizeof(kcache__blob), a multiple of 16 */
#define KCACHE__PAYLOAD_ALIGN 64

/* A blob with room for `bytes_after_header` bytes, placed so that the byte at `data_offset` among
   them is 64-byte aligned. */
static kcache__blob *kcache__blob_alloc(const kcache__mem *al, size_t bytes_after_header, size_t data_offset) {
    unsigned char *mem;
    kcache__blob *b;
    size_t slack = KCACHE__PAYLOAD_ALIGN - 1, skip;
    if (bytes_after_header > (size_t)-1 - KCACHE__BLOB_HDR - slack) return NULL;
    mem = (unsigned char *)kcache__mem_alloc(al, KCACHE__BLOB_HDR + slack + bytes_after_header);
    if (!mem) return NULL;
    /* skip to the next boundary: a multiple of the allocator's alignment (HDR and the offsets
       kcache passes are multiples of 16), so the header stays as aligned as KCACHE_MALLOC made it */
    skip = (size_t)((0 - ((uintptr_t)mem + KCACHE__BLOB_HDR + data_offset)) & (KCACHE__PAYLOAD_ALIGN - 1));
    b = (kcache__blob *)(void *)(mem + skip);
    b->refs = 1;
    b->size = 0;
    b->data = NULL;
    b->mem = mem;
    b->al = al;
    return b;
}
static unsigned char *kcache__blob_bytes(kcache__blob *b) { return (unsigned char *)b + KCACHE__BLOB_HDR; }
static void kcache__blob_set_data(kcache__blob *b, size_t offset, size_t size) {
    unsigned char *d = kcache__blob_bytes(b) + offset;
    memcpy(d - 16, &b, sizeof b);
    b->data = d;
    b->size = size;
}
static kcache__blob *kcache__blob_of(const void *data) {
    kcache__blob *b;
    memcpy(&b, (const unsigned char *)data - 16, sizeof b);
    return b;
}
static void kcache__blob_ref(kcache__blob *b) { kcache__atomic_add(&b->refs, 1); }
static void kcache__blob_unref(kcache__blob *b) {
    if (b && kcache__atomic_add(&b->refs, -1) == 0) kcache__mem_free(b->al, b->mem);
}

typedef struct kcache__node {
    struct kcache__node *hnext;      /* hash chain */
    struct kcache__node *prev, *next; /* LRU list, most recent first */
    kcache_hash128 digest;
    uint64_t unit_hash;
    kcache__blob *blob;
    unsigned char *rec;              /* the key record (stored right after the node) */
    size_t rec_len;
    size_t mem;                      /* the memory it holds (node, record, blob): what KCACHE_MEM_SIZE counts */
    int64_t touched_ns;              /* when the store's use record was last written for it */
    uint32_t hits;                   /* memory hits; every 64th looks at the clock (see kcache_get) */
    int dirty;                       /* KCACHE_WRITE_EVICT: not yet in the store */
    const kcache__mem *al;           /* what allocated it: its kcache's allocator */
} kcache__node;

typedef struct kcache__lru {
    kcache__node **buckets;
    size_t mask;                     /* buckets - 1, a power of two minus one */
    kcache__node head;               /* sentinel: head.next is the most recent */
    uint64_t count, bytes;           /* bytes: the memory the nodes hold, not only their payloads */
} kcache__lru;

static kcache_status kcache__lru_init(kcache__lru *l, uint32_t entries, const kcache__mem *al) {
    size_t n = 16;
    while (n < (size_t)entries * 2 && n < ((size_t)1 << 26)) n <<= 1;
    l->buckets = (kcache__node **)kcache__mem_alloc(al, n * sizeof *l->buckets);
    if (!l->buckets) return KCACHE_ENOMEM;
    memset(l->buckets, 0, n * sizeof *l->buckets);
    l->mask = n - 1;
    l->head.prev = l->head.next = &l->head;
    l->count = l->bytes = 0;
    return KCACHE_OK;
}

static kcache__node **kcache__lru_slot(kcache__lru *l, kcache_hash128 d) {
    kcache__node **p = &l->buckets[(size_t)d.lo & l->mask];
    while (*p && ((*p)->digest.lo != d.lo || (*p)->digest.hi != d.hi)) p = &(*p)->hnext;
    return p;
}
static kcache__node *kcache__lru_find(kcache__lru *l, kcache_hash128 d) { return *kcache__lru_slot(l, d); }

static void kcache__lru_unlink_list(kcache__node *n) {
    n->prev->next = n->next;
    n->next->prev = n->prev;
}
static void kcache__lru_push_front(kcache__lru *l, kcache__node *n) {
    n->next = l->head.next;
    n->prev = &l->head;
    l->head.next->prev = n;
    l->head.next = n;
}
static void kcache__lru_touch(kcache__lru *l, kcache__node *n) {
    if (l->head.next == n) return;
    kcache__lru_unlink_list(n);
    kcache__lru_push_front(l, n);
}
/* Takes a node out of the table and the list; the caller frees it. */
static void kcache__lru_detach(kcache__lru *l, kcache__node *n) {
    kcache__node **p = kcache__lru_slot(l, n->digest);
    if (*p == n) *p = n->hnext;
    kcache__lru_unlink_list(n);
    l->count--;
    l->bytes -= n->mem;
}
/* Inserts a node that is not in the table (the caller detached any previous one). */
static void kcache__lru_insert(kcache__lru *l, kcache__node *n) {
    kcache__node **p = kcache__lru_slot(l, n->digest);
    n->hnext = *p;
    *p = n;
    kcache__lru_push_front(l, n);
    l->count++;
    l->bytes += n->mem;
}
static void kcache__node_free(kcache__node *n) {
    if (!n) return;
    kcache__blob_unref(n->blob);
    kcache__mem_free(n->al, n);
}

/* ============================================================================================== */
/* >>store  the persistent store: entries, accounting, use record, eviction, repair               */
/* ============================================================================================== */

/* Entry file (every integer little-endian):
       0  "KCENTRY\0"          8  u16 version, u16 flags, u32 header length H (a multiple of 16;
                              kcache writes multiples of 64)
      16  u64 payload length  24  digest lo, hi          40  payload XXH3-128 lo, hi
      56  i64 created (ns)    64  u32 record length R    68  u32 0
      72  key record (R bytes), then u64 header checksum (XXH3-128 lo of bytes 0 .. 72+R)
          zero padding up to H; the last 16 bytes before the payload are spare (see kcache__blob)
       H  payload                                                           file size = H + payload
   Version 2 is the same with flags KCACHE__ENTRY_ZSTD: the payload bytes are one zstd frame that
   records its content size, and the payload length and checksum are the frame's (the checksum is
   checked before anything is decompressed). A reader without KCACHE_ZSTD takes such an entry as
   absent; readers older than version 2 reject it, so they never hand out compressed bytes. The
   remote tier stores the same entries (see >>remote). */
#define KCACHE__ENTRY_VERSION 1
#define KCACHE__ENTRY_VERSION_ZSTD 2
#define KCACHE__ENTRY_ZSTD 1 /* flags: the payload is a zstd frame */
#define KCACHE__ENTRY_FIXED 72

/* H as kcache writes it for a key record of rec_len bytes: the record and its checksum, 16 spare
   bytes (see kcache__blob), padded to 64. */
static size_t kcache__entry_header_len(size_t rec_len) {
    return (KCACHE__ENTRY_FIXED + rec_len + 8 + 16 + KCACHE__PAYLOAD_ALIGN - 1) & ~(size_t)(KCACHE__PAYLOAD_ALIGN - 1);
}

/* Writes the header of k's entry (hlen = kcache__entry_header_len(rec_len) bytes) for the payload
   bytes as stored: plain, or a zstd frame (zstd 1). */
static void kcache__entry_header_into(unsigned char *hdr, size_t hlen, size_t rec_len, const kcache_key *k,
                                      const void *stored, size_t stored_len, int zstd) {
    kcache_hash128 sum = kcache_hash(stored, stored_len);
    memset(hdr, 0, hlen);
    memcpy(hdr, "KCENTRY", 8);
    kcache__put_u16(hdr + 8, zstd ? KCACHE__ENTRY_VERSION_ZSTD : KCACHE__ENTRY_VERSION);
    kcache__put_u16(hdr + 10, zstd ? KCACHE__ENTRY_ZSTD : 0);
    kcache__put_u32(hdr + 12, (uint32_t)hlen);
    kcache__put_u64(hdr + 16, stored_len);
    kcache__put_u64(hdr + 24, k->digest.lo);
    kcache__put_u64(hdr + 32, k->digest.hi);
    kcache__put_u64(hdr + 40, sum.lo);
    kcache__put_u64(hdr + 48, sum.hi);
    kcache__put_u64(hdr + 56, (uint64_t)kcache__now_ns());
    kcache__put_u32(hdr + 64, (uint32_t)rec_len);
    kcache__record_into(k, hdr + KCACHE__ENTRY_FIXED, rec_len);
    kcache__put_u64(hdr + KCACHE__ENTRY_FIXED + rec_len, kcache_hash(hdr, KCACHE__ENTRY_FIXED + rec_len).lo);
}

#ifdef KCACHE_ZSTD
/* The payload as one zstd frame into dst (cap bytes, ZSTD_compressBound(size) to be sure of room):
   its length, or 0 when it would not be smaller (then it is stored as it is). Level 1: the remote's
   bytes shrink ~8x for PTX and cubins at hundreds of MB/s. */
static size_t kcache__zstd_into(void *dst, size_t cap, const void *data, size_t size) {
    size_t n;
    if (size < 64) return 0;
    n = ZSTD_compress(dst, cap, data, size, 1);
    return ZSTD_isError(n) || n >= size ? 0 : n;
}
/* The same in a new buffer (from m: kcache__mem_free(m, it)), or NULL (*out_len untouched: stored as it is). */
static unsigned char *kcache__zstd_pack(const kcache__mem *m, const void *data, size_t size, size_t *out_len) {
    size_t cap = ZSTD_compressBound(size), n;
    unsigned char *p;
    if (size < 64 || ZSTD_isError(cap) || !(p = (unsigned char *)kcache__mem_alloc(m, cap))) return NULL;
    if ((n = kcache__zstd_into(p, cap, data, size)) == 0) { kcache__mem_free(m, p); return NULL; }
    *out_len = n;
    return p;
}
#endif

/* config.file: a 4 KiB header page, then the use table.
       0  "KCACHECF"   8 u32 version   12 u32 header size (4096)   16 u32 log2(buckets)  20 u32 ways (4)
      24  u64 accounted bytes   32 u64 entries   40 u64 generation   48 u32 busy   52 u32 0
      56  u64 limit of the last writer   64 u64 evictions   72 i64 created (ns)
     112  u64 the eviction hand: the slot it looks at next (any value is sound: taken mod slots)
     120  u64 checksum: XXH3-128 lo of bytes 0 .. 120
     512  the eviction log: 64 slots of (digest lo, hi, i64 when ns, u64 size) and at 504 u64 next slot
    2560  writes in flight: 32 slots of (u64 writer: pid << 32 | its sequence, 0 = free; u64 bytes;
          i64 claimed at ns; u64 0): a temp file counts against the limit while it exists
    4096  use table: buckets x 4 ways of (digest lo, hi, i64 last use ns, u64 entry bytes); bit 0 of
          the last use is the mark "used since the hand last passed" (see kcache__evict_victim)
   busy is set by a lock holder before it changes anything and cleared after: finding it set under
   the lock means a holder died mid-update, and the accounting is rebuilt by a scan.
   The file is never shrunk while mapped (that is SIGBUS for every process mapping it); a damaged
   one is replaced by rename and the others notice the new inode on their next locked update.
   Nothing else may shrink it in place either (the directory is the user's own, mode 0700): a hit
   records its use through the mapping without a system call, so it cannot check the size first.
   The hand and the mark came after version 1 without changing it: a version-1 file reads as one
   whose hand is at slot 0 and whose marks are noise (a second chance for some entries, once), and
   kcache builds that predate them keep using such a file (they ignore byte 112, and their hits
   write times whose bit 0 is noise), so stores shared by both keep working. */
#define KCACHE__ACCT_VERSION 1
#define KCACHE__ACCT_HEADER 4096
#define KCACHE__ACCT_SUMMED 120
#define KCACHE__WAYS 4
#define KCACHE__SLOT 32
#define KCACHE__EVLOG_AT 512
#define KCACHE__EVLOG_SLOTS 64
#define KCACHE__ACCT_HAND 112
#define KCACHE__USE_MARK 1u    /* bit 0 of a slot's last use: used since the eviction hand passed */
#define KCACHE__EVICT_LOOK 64  /* marked entries the hand passes for one victim, at most */
#define KCACHE__MIN_SLOTS 4096 /* a new store's use table: 128 KiB */

/* The most slots the use table grows to: one per KiB of limit (4M slots, a 128 MiB table, at most;
   1M for a store without a limit). Past that, a full bucket gives up its least recent entry. */
static uint64_t kcache__max_slots(uint64_t limit) {
    uint64_t n = KCACHE__MIN_SLOTS, cap = limit ? ((uint64_t)1 << 22) : ((uint64_t)1 << 20);
    while (n < cap && (limit == 0 || n * 1024 < limit)) n <<= 1;
    return n;
}

/* A mapping of config.file as lock-free readers see it. Lock holders change the mapping (a damaged
   file replaced, the table grown); readers in other threads may still be using the old one, so a
   mapping is never unmapped before kcache_close: each new one is published as a new table and the
   old ones stay linked behind it. */
typedef struct kcache__table {
    unsigned char *map;        /* NULL: no usable config.file */
    size_t len;
    uint64_t nslots;
    struct kcache__table *older;
} kcache__table;

typedef struct kcache__store {
    char *dir;
    int dirfd, tmpfd, cffd;    /* the store, its tmp/ (both checked: real directories) */
    kcache__lockfile *lf;      /* the lock file, shared with this process's other handles (>>registry) */
    uint32_t forked;           /* set in a forked child that found this store its parent's */
    struct kcache__store_ev *cur_ev; /* the locked update's notes (kcache__store_begin .. _end) */
    unsigned char *map;        /* config.file, mapped shared: the lock holder's view */
    size_t map_len;
    uint64_t nslots;           /* buckets * ways */
    kcache__table *pub;        /* the same, for readers without the lock (atomic pointer) */
    uint64_t cf_dev;           /* not dev_t/ino_t: Windows' ino_t is 16 bits */
    uint64_t cf_ino;
    uint64_t limit;
    int fsync, no_openat2, debug;
    int compress;              /* KCACHE_COMPRESS: entries written as zstd (version 2) */
    uint32_t lock_timeout_ms;
    uint32_t pid;              /* the process that opened it */
    int growing;               /* inside kcache__acct_grow */
    /* the index log last appended to, kept open: the next put of the same unit appends to it with
       no open or close, once fstat shows it is still that name's file (linked) at the size left */
    struct { uint64_t dev, ino, size, room; int fd; char rel[48]; } ix_last;
    uint64_t temp_seq;
    uint32_t uid;              /* the caller (euid): whom the store belongs to */
    uint32_t gid;              /* a shared store's group (KCACHE_SHARED_GROUP) */
    int shared;                /* a group's store: its members are trusted, files 0660, dirs 02770 */
    int readonly;              /* hits only: no lock, no use table, no stats, nothing written */
    uint64_t shard_ok[2][4];   /* shards of e/ and i/ checked in this process (kcache__shard_trusted) */
    uint64_t shard_bad[2][4];  /* ... and refused */
    char shard_why[300];       /* why the first refused shard was refused */
    kcache__mutex shard_mutex; /* one check of a shard at a time (not st->mutex: held by updates) */
    kcache__mutex mutex;       /* this handle's threads; the lock file's entry arbitrates between handles */
    kcache__mem mem;           /* its kcache's allocator (see kcache__mem) */
} kcache__store;

/* Whether something inside the store was made by someone the store trusts: the caller, root (who
   may do anything anyway), or a member of a shared store's group (only members can give a file
   that group). Anything else is never read as kcache's, and never deleted. */
static int kcache__trusted(const kcache__store *st, const kcache__finfo *s) {
    return s->uid == st->uid || s->uid == 0 || (st->shared && s->gid == st->gid);
}
/* The mode of the files kcache makes in the store (lock, config.file, stats, temp files): its
   user's alone, or its group's too in a shared store. */
static unsigned kcache__file_mode(const kcache__store *st) { return st->shared ? 0660u : 0600u; }
/* The same, as the flag or'ed into the opens that create them. */
static int kcache__gmode(const kcache__store *st) { return st->shared ? KCACHE__GROUPRW : 0; }
#define KCACHE__SLACK ((uint64_t)8 << 10) /* beside an entry: an index record, a new shard's block */

/* kcache leaves its filesystem this much free: 5 % of it, at most 1 GiB. A cache gives way before
   the programs that share its disk (cachefilesd, the kernel's own cache of network files, stops
   allocating at 3 % free by default): it evicts to stay above it, and stores nothing below it. */
static uint64_t kcache__reserve(uint64_t fs_bytes) {
    uint64_t r = fs_bytes / 20;
    return r < ((uint64_t)1 << 30) ? r : ((uint64_t)1 << 30);
}
/* How far writing `need` more bytes would take the filesystem under the reserve: 0 when it would
   not (or when the free space cannot be asked; the write itself then tells). */
static uint64_t kcache__shortfall(kcache__store *st, uint64_t need) {
    uint64_t avail = 0, total = 0, reserve;
    if (kcache__io_space(st->dirfd, &avail, &total) != 0) return 0;
    reserve = kcache__reserve(total);
    return avail >= need + reserve ? 0 : need + reserve - avail;
}

/* Whether the shard of rel ("e/XX/..." or "i/XX/...") may be used. Shards are checked as the other
   levels are (kcache__level_problem), each once per process, the first time it is used (one
   fstatat; checking all 512 at every open would cost a millisecond): a hit pays one load and a
   bit test. 0: refused, never read, written or cleaned in (st->shard_why says why). */
static int kcache__shard_check(kcache__store *st, const char *rel, int which, int b);
static int kcache__hexval(int c) { /* a lower-case hex digit's value, else -1 (kcache writes lower case) */
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}
static int kcache__shard_trusted(kcache__store *st, const char *rel) {
    int which = rel[0] == 'i', hi = kcache__hexval((unsigned char)rel[2]), lo = kcache__hexval((unsigned char)rel[3]), b;
    if (hi < 0 || lo < 0) return 1; /* not a shard's name: the callers' own checks apply */
    b = hi << 4 | lo;
    if (KCACHE__LIKELY(kcache__atomic_load_u64(&st->shard_ok[which][b >> 6]) & ((uint64_t)1 << (b & 63)))) return 1;
    return kcache__shard_check(st, rel, which, b);
}

/* A directory kcache made in a shared store: the group's, setgid, 02770 (mkdir made it 0700). */
static void kcache__share_dir(const kcache__store *st, int fd) {
    if (!st->shared) return;
    kcache__io_chgrp(fd, st->gid);
    kcache__io_chmod(fd, 02770);
}

/* What a store operation did, for the stats and the debug log. */
typedef struct kcache__store_ev {
    uint64_t evicted, evicted_bytes, rebuilt;
    char units[200];          /* with debugging on: the units evicted, comma-separated, cut to fit */
    char note[200];           /* something wrong in the store that was worked around, or not */
} kcache__store_ev;

/* Notes a problem for the debug log (the first one of an operation is kept). */
static void kcache__ev_note(kcache__store_ev *ev, const char *fmt, ...) {
    va_list ap;
    if (!ev || ev->note[0]) return;
    va_start(ap, fmt);
    vsnprintf(ev->note, sizeof ev->note, fmt, ap);
    va_end(ap);
}

static uint64_t kcache__le64(uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(v);
#else
    return v;
#endif
}
/* Slots are shared with other processes: every access is a relaxed atomic of a little-endian u64. */
static uint64_t *kcache__slot(const kcache__store *st, uint64_t i) {
    return (uint64_t *)(void *)(st->map + KCACHE__ACCT_HEADER + i * KCACHE__SLOT);
}
static uint64_t kcache__sl_get(const uint64_t *s, int f) { return kcache__le64(kcache__atomic_load_u64(s + f)); }
static void kcache__sl_set(uint64_t *s, int f, uint64_t v) { kcache__atomic_store_u64(s + f, kcache__le64(v)); }
enum { KCACHE__SL_LO, KCACHE__SL_HI, KCACHE__SL_USE, KCACHE__SL_SIZE };

/* Header fields are 8-byte aligned little-endian u64s, accessed atomically: readers without the
   lock (stats, the eviction log) may look while a lock holder writes. */
static uint64_t kcache__acct_at(const unsigned char *map, size_t off) {
    return kcache__le64(kcache__atomic_load_u64((const uint64_t *)(const void *)(map + off)));
}
static uint64_t kcache__acct_get(const kcache__store *st, size_t off) { return kcache__acct_at(st->map, off); }
static void kcache__acct_set(kcache__store *st, size_t off, uint64_t v) {
    kcache__atomic_store_u64((uint64_t *)(void *)(st->map + off), kcache__le64(v));
}

/* The table readers without the lock use; NULL before the first mapping. */
static const kcache__table *kcache__tab(const kcache__store *st) {
    return (const kcache__table *)kcache__atomic_load_ptr((void *const *)&st->pub);
}
/* Lock held (or the store not yet shared): publishes the lock holder's mapping to readers. */
static void kcache__publish(kcache__store *st) {
    kcache__table *t = (kcache__table *)kcache__mem_alloc(&st->mem, sizeof *t);
    if (!t) return; /* readers keep the previous table: still mapped, only older */
    t->map = st->map;
    t->len = st->map_len;
    t->nslots = st->nslots;
    t->older = st->pub;
    kcache__atomic_store_ptr((void **)&st->pub, t);
}
/* The slot holding digest d in a use table of nslots slots, or NULL. */
static uint64_t *kcache__slot_lookup(const unsigned char *slots, uint64_t nslots, kcache_hash128 d) {
    uint64_t b = (d.lo & ((nslots / KCACHE__WAYS) - 1)) * KCACHE__WAYS, w;
    for (w = 0; w < KCACHE__WAYS; w++) {
        uint64_t *s = (uint64_t *)(void *)(uintptr_t)(slots + (b + w) * KCACHE__SLOT);
        if (kcache__sl_get(s, KCACHE__SL_LO) == d.lo && kcache__sl_get(s, KCACHE__SL_HI) == d.hi) return s;
    }
    return NULL;
}
static uint64_t *kcache__slot_find_in(const kcache__table *t, kcache_hash128 d) {
    return t && t->map ? kcache__slot_lookup(t->map + KCACHE__ACCT_HEADER, t->nslots, d) : NULL;
}
static uint64_t kcache__acct_sum(const unsigned char *hdr) { return kcache_hash(hdr, KCACHE__ACCT_SUMMED).lo; }

static void kcache__entry_name(kcache_hash128 d, char out[48]) { /* "e/XX/<32 hex>.kce" */
    kcache_hash_hex(d, out + 5);
    out[0] = 'e';
    out[1] = out[4] = '/';
    out[2] = out[5];
    out[3] = out[6];
    memcpy(out + 37, ".kce", 5);
}

/* Opens a file inside the store without following any symlink on the way: one openat2 call where
   the kernel has it, else each directory of the path opened in turn, none through a symlink. */
static int kcache__open_in(kcache__store *st, const char *rel, int how) {
    char part[64];
    const char *p = rel, *slash;
    int dfd = st->dirfd, fd, e;
    if (!st->no_openat2) {
        fd = kcache__io_open_beneath(st->dirfd, rel, how);
        if (fd >= 0 || errno != ENOSYS) return fd;
        st->no_openat2 = 1; /* a kernel, emulator or seccomp filter without it: not asked again */
    }
    while ((slash = strchr(p, '/')) != NULL) { /* kcache's paths are short: "e/XX/name" */
        size_t n = (size_t)(slash - p);
        int next;
        if (n == 0 || n >= sizeof part) { if (dfd != st->dirfd) kcache__io_close(dfd); errno = EINVAL; return -1; }
        memcpy(part, p, n);
        part[n] = 0;
        next = kcache__io_openat(dfd, part, KCACHE__RD | KCACHE__DIRECTORY);
        e = errno;
        if (dfd != st->dirfd) kcache__io_close(dfd);
        if (next < 0) { errno = e == ENOTDIR ? ELOOP : e; return -1; } /* a symlink where a directory belongs */
        dfd = next;
        p = slash + 1;
    }
    fd = kcache__io_openat(dfd, p, how);
    e = errno;
    if (dfd != st->dirfd) kcache__io_close(dfd);
    errno = e;
    return fd;
}

/* Clears a name in a directory of the store for kcache's own file: a file or a symlink is
   unlinked (never followed), an empty directory removed, a full one moved into tmp/ (whose sweep
   leaves it for the user). 0 when the name is free. */
static int kcache__clear_name(kcache__store *st, int dirfd, const char *name) {
    char junk[64];
    if (kcache__io_unlink(dirfd, name) == 0 || errno == ENOENT) return 0;
    if ((errno == EISDIR || errno == EPERM) && kcache__io_rmdir(dirfd, name) == 0) return 0;
    if (errno != ENOTEMPTY && errno != EEXIST) return -1;
    st->temp_seq++;
    snprintf(junk, sizeof junk, "%u-junk-%llx", (unsigned)kcache__pid(), (unsigned long long)st->temp_seq);
    return kcache__io_rename(dirfd, name, st->tmpfd, junk);
}

/* Removes an entry through its shard's descriptor, opened without following symlinks, so that a
   symlink planted in place of a shard can never make kcache delete a file outside the store. */
static int kcache__unlink_entry(kcache__store *st, const char rel[48]) {
    char shard[8];
    int fd, rc;
    if (!kcache__shard_trusted(st, rel)) return -1; /* nothing is removed from a refused shard */
    memcpy(shard, rel, 4);
    shard[4] = 0;
    fd = kcache__open_in(st, shard, KCACHE__RD | KCACHE__DIRECTORY);
    if (fd < 0) return -1;
    rc = kcache__clear_name(st, fd, rel + 5);
    kcache__io_close(fd);
    return rc;
}

static int kcache__is_dir_nofollow(int dirfd, const char *rel) {
    kcache__finfo fi;
    return kcache__io_statat(dirfd, rel, &fi) == 0 && fi.kind == KCACHE__KIND_DIR;
}

/* Opens a shard directory ("e/XX" or "i/XX"; lock held), creating it and its parent when missing.
   Anything else in their place (a file, a FIFO, a symlink: kcache's own names in the user's own
   0700 directory) is cleared first, never followed, and noted. */
static int kcache__shard_open(kcache__store *st, const char *shard, char *note, size_t note_cap) {
    char top[2];
    int fd = kcache__open_in(st, shard, KCACHE__RD | KCACHE__DIRECTORY), topfd;
    if (fd >= 0 || (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)) return fd;
    top[0] = shard[0];
    top[1] = 0;
    if (!kcache__is_dir_nofollow(st->dirfd, top)) {
        if (kcache__io_mkdir(st->dirfd, top) != 0 && errno == EEXIST) {
            if (note && !note[0]) snprintf(note, note_cap, "%s (the %s directory) was not a directory; replaced it", top, top[0] == 'i' ? "index" : "entries");
            if (kcache__clear_name(st, st->dirfd, top) != 0 || kcache__io_mkdir(st->dirfd, top) != 0) return -1;
        }
    }
    topfd = kcache__open_in(st, top, KCACHE__RD | KCACHE__DIRECTORY);
    if (topfd < 0) return -1;
    if (!kcache__is_dir_nofollow(topfd, shard + 2) && kcache__io_mkdir(topfd, shard + 2) != 0 && errno == EEXIST) {
        if (note && !note[0]) snprintf(note, note_cap, "%s (an %s shard) was not a directory; replaced it", shard, shard[0] == 'i' ? "index" : "entry");
        if (kcache__clear_name(st, topfd, shard + 2) == 0) kcache__io_mkdir(topfd, shard + 2);
    }
    kcache__io_close(topfd);
    fd = kcache__open_in(st, shard, KCACHE__RD | KCACHE__DIRECTORY);
    if (fd >= 0 && st->shared) { /* made just now by us (or by another member): the group's */
        kcache__finfo s;
        int tfd = kcache__open_in(st, top, KCACHE__RD | KCACHE__DIRECTORY);
        if (tfd >= 0 && kcache__io_fstat(tfd, &s) == 0 && s.uid == st->uid && (s.perm & 02070) != 02070) kcache__share_dir(st, tfd);
        if (tfd >= 0) kcache__io_close(tfd);
        if (kcache__io_fstat(fd, &s) == 0 && s.uid == st->uid && (s.perm & 02070) != 02070) kcache__share_dir(st, fd);
    }
    return fd;
}

/* Whether this process is a fork of the store's opener (getpid: the callers could wait on the
   parent); if so, marks the store for kcache__live. */
static int kcache__store_in_fork(kcache__store *st) {
    if (kcache__pid() == st->pid) return 0;
    kcache__atomic_store_u32(&st->forked, 1);
    return 1;
}

/* Takes the store lock: this handle's mutex, then the lock file's (>>registry: first among this
   process's handles and threads, then against other processes), giving up after lock_timeout_ms.
   In a process forked from the one that opened the store, nothing: KCACHE_ELOCK, and the store is
   marked so that the handle's next call moves to one of the child's own (see kcache__live). */
static kcache_status kcache__store_lock(kcache__store *st) {
    int64_t deadline = kcache__now_ns() + (int64_t)st->lock_timeout_ms * 1000000;
    if (kcache__store_in_fork(st)) return KCACHE_ELOCK;
    kcache__mutex_lock(&st->mutex);
    if (kcache__lockfile_lock(st->lf, deadline) != 0) {
        int e = errno;
        kcache__mutex_unlock(&st->mutex);
        return e == EAGAIN || e == ECHILD ? KCACHE_ELOCK : KCACHE_EIO;
    }
    return KCACHE_OK;
}
static void kcache__store_unlock(kcache__store *st) {
    kcache__lockfile_unlock(st->lf);
    kcache__mutex_unlock(&st->mutex);
}

static int kcache__lock_open(kcache__store *st, char *why, size_t cap);
/* The store's lock file, through the process's registry (>>registry): found by name first, and a
   handle of this process that has it open already shares its descriptor (opening and closing a
   second one would drop the locks the process holds, POSIX); otherwise it is opened (created when
   missing), checked (kcache__lock_open) and registered. 0, or -1 with errno (EPERM: refused, *why
   says why). */
static int kcache__store_lockfile(kcache__store *st, char *why, size_t cap) {
    kcache__finfo fi;
    int fd;
    if (kcache__io_statat(st->dirfd, "lock", &fi) == 0 && fi.kind == KCACHE__KIND_FILE && kcache__trusted(st, &fi) &&
        (fi.perm & 07777) == kcache__file_mode(st) && (st->lf = kcache__lockfile_find(fi.dev, fi.ino)) != NULL)
        return 0;
    if ((fd = kcache__lock_open(st, why, cap)) < 0) return -1;
    st->lf = kcache__lockfile_adopt(fd);
    return st->lf ? 0 : -1;
}

static int kcache__acct_valid(const unsigned char *h, uint64_t file_size) {
    uint32_t lg = kcache__get_u32(h + 16);
    if (memcmp(h, "KCACHECF", 8) != 0 || kcache__get_u32(h + 8) != KCACHE__ACCT_VERSION ||
        kcache__get_u32(h + 12) != KCACHE__ACCT_HEADER || kcache__get_u32(h + 20) != KCACHE__WAYS || lg < 4 || lg > 24)
        return 0;
    if (file_size != KCACHE__ACCT_HEADER + ((uint64_t)KCACHE__WAYS << lg) * KCACHE__SLOT) return 0;
    return kcache__get_u64(h + KCACHE__ACCT_SUMMED) == kcache__acct_sum(h);
}

static void kcache__acct_seal(kcache__store *st) {
    kcache__acct_set(st, KCACHE__ACCT_SUMMED, kcache__acct_sum(st->map));
}

/* Creates a fresh config.file under a temp name and puts it in place: with link() when none should
   exist (two first openers race; one wins, both use the winner), with rename() to replace a bad one. */
static kcache_status kcache__acct_create(kcache__store *st, uint64_t limit, int replace) {
    unsigned char *hdr = (unsigned char *)kcache__mem_alloc(&st->mem, KCACHE__ACCT_HEADER); /* (not on the stack: small thread stacks) */
    char tmp[64];
    uint64_t slots = KCACHE__MIN_SLOTS; /* the table grows with the entries (kcache__acct_grow) */
    uint32_t lg = 0;
    int fd, rc;
    (void)limit;
    if (!hdr) return KCACHE_ENOMEM;
    while (((uint64_t)KCACHE__WAYS << lg) < slots) lg++;
    if (kcache__shortfall(st, KCACHE__ACCT_HEADER + ((uint64_t)KCACHE__WAYS << lg) * KCACHE__SLOT)) { /* the reserve */
        kcache__mem_free(&st->mem, hdr);
        return KCACHE_ENOSPC;
    }
    memset(hdr, 0, KCACHE__ACCT_HEADER);
    memcpy(hdr, "KCACHECF", 8);
    kcache__put_u32(hdr + 8, KCACHE__ACCT_VERSION);
    kcache__put_u32(hdr + 12, KCACHE__ACCT_HEADER);
    kcache__put_u32(hdr + 16, lg);
    kcache__put_u32(hdr + 20, KCACHE__WAYS);
    kcache__put_u64(hdr + 56, limit);
    kcache__put_u64(hdr + 72, (uint64_t)kcache__now_ns());
    kcache__put_u32(hdr + 48, 1); /* busy: the first locked update scans for entries already there */
    kcache__put_u64(hdr + KCACHE__ACCT_SUMMED, kcache_hash(hdr, KCACHE__ACCT_SUMMED).lo);
    snprintf(tmp, sizeof tmp, "tmp/%u-cf-%llx.tmp", (unsigned)kcache__pid(), (unsigned long long)kcache__now_ns());
    fd = kcache__open_in(st, tmp, KCACHE__RW | KCACHE__CREATE | KCACHE__EXCL | kcache__gmode(st));
    if (fd < 0) {
        kcache__mem_free(&st->mem, hdr);
        return errno == ENOSPC ? KCACHE_ENOSPC : (errno == EROFS || errno == EACCES) ? KCACHE_EROFS : KCACHE_EIO;
    }
    kcache__io_chmod(fd, kcache__file_mode(st)); /* reopened for writing by every process: not the umask's */
    /* The table's blocks are allocated now: a sparse page first touched through the mapping when
       the disk is full would be SIGBUS, not an error. A filesystem without room for the table
       gets a smaller one (down to 4096 slots) rather than no store. */
    rc = -1;
    if (kcache__io_pwrite(fd, hdr, KCACHE__ACCT_HEADER, 0) == (ptrdiff_t)KCACHE__ACCT_HEADER) {
        for (;;) {
            int e = kcache__io_allocate(fd, (uint64_t)(KCACHE__ACCT_HEADER + ((uint64_t)KCACHE__WAYS << lg) * KCACHE__SLOT));
            if (e == 0) { rc = 0; break; }
            if (e != ENOSPC || ((uint64_t)KCACHE__WAYS << lg) <= 4096) break;
            lg--;
            kcache__put_u32(hdr + 16, lg);
            kcache__put_u64(hdr + KCACHE__ACCT_SUMMED, kcache_hash(hdr, KCACHE__ACCT_SUMMED).lo);
            if (kcache__io_pwrite(fd, hdr, KCACHE__ACCT_HEADER, 0) != (ptrdiff_t)KCACHE__ACCT_HEADER ||
                kcache__io_truncate(fd, KCACHE__ACCT_HEADER) != 0)
                break;
        }
    }
    kcache__mem_free(&st->mem, hdr);
    kcache__io_close(fd);
    if (rc == 0) {
        if (replace) rc = kcache__io_rename(st->dirfd, tmp, st->dirfd, "config.file");
        else {
            rc = kcache__io_link(st->dirfd, tmp, st->dirfd, "config.file");
            if (rc != 0 && errno == EEXIST) rc = 0;
        }
    }
    if (rc != 0 || !replace) kcache__io_unlink(st->dirfd, tmp);
    return rc == 0 ? KCACHE_OK : KCACHE_EIO;
}

/* Lets go of the mapping (lock held): readers may still use it, so it stays mapped (see
   kcache__table) and is unmapped at close. */
static void kcache__acct_unmap(kcache__store *st) {
    if (st->cffd >= 0) kcache__io_close(st->cffd);
    st->cffd = -1;
    if (st->map) {
        st->map = NULL;
        kcache__publish(st);
    }
}

/* Maps config.file as it is now. 0 when mapped (valid or not: *valid says), else an errno-ish -1. */
static int kcache__acct_map(kcache__store *st, int *valid) {
    kcache__finfo s;
    unsigned char hdr[KCACHE__ACCT_SUMMED + 8]; /* what kcache__acct_valid reads */
    size_t len;
    *valid = 0;
    kcache__acct_unmap(st);
    st->cffd = kcache__open_in(st, "config.file", KCACHE__RW);
    if (st->cffd < 0) return -1;
    if (kcache__io_fstat(st->cffd, &s) != 0 || s.kind != KCACHE__KIND_FILE || !kcache__trusted(st, &s) || s.size < KCACHE__ACCT_HEADER ||
        kcache__io_pread(st->cffd, hdr, sizeof hdr, 0) != (ptrdiff_t)sizeof hdr || !kcache__acct_valid(hdr, s.size)) {
        kcache__acct_unmap(st);
        return 0; /* present but unusable: the caller replaces it */
    }
    if ((s.perm & 0777) != kcache__file_mode(st) && s.uid == st->uid) /* others may not read it */
        kcache__io_chmod(st->cffd, kcache__file_mode(st));
    len = (size_t)s.size;
    st->map = kcache__io_map(st->cffd, len);
    if (!st->map) { kcache__acct_unmap(st); return -1; }
    st->map_len = len;
    st->nslots = (len - KCACHE__ACCT_HEADER) / KCACHE__SLOT;
    kcache__publish(st);
    st->cf_dev = s.dev;
    st->cf_ino = s.ino;
    *valid = 1;
    return 0;
}

static uint64_t *kcache__slot_find(const kcache__store *st, kcache_hash128 d) { /* lock held */
    return kcache__slot_lookup(st->map + KCACHE__ACCT_HEADER, st->nslots, d);
}
static int kcache__slot_used(const uint64_t *s) {
    return kcache__sl_get(s, KCACHE__SL_LO) != 0 || kcache__sl_get(s, KCACHE__SL_HI) != 0;
}
static void kcache__slot_clear(uint64_t *s) {
    int f;
    for (f = 0; f < 4; f++) kcache__sl_set(s, f, 0);
}
static kcache_hash128 kcache__slot_digest(const uint64_t *s) {
    kcache_hash128 d;
    d.lo = kcache__sl_get(s, KCACHE__SL_LO);
    d.hi = kcache__sl_get(s, KCACHE__SL_HI);
    return d;
}

/* Records a hit without a system call and without the lock: a relaxed store into the mapped use
   table of the time with the mark set (see kcache__evict_victim). It stores only when the mark
   is clear or the time over a second old, so that readers on many cores do not fight over the
   line: once after each pass of the eviction hand, and once a second at most otherwise. */
static void kcache__slot_touch(uint64_t *s, int64_t now) {
    uint64_t use;
    if (!s) return;
    use = kcache__sl_get(s, KCACHE__SL_USE);
    if (!(use & KCACHE__USE_MARK) || (int64_t)use < now - 1000000000) kcache__sl_set(s, KCACHE__SL_USE, (uint64_t)now | KCACHE__USE_MARK);
}
static void kcache__store_touch(kcache__store *st, kcache_hash128 d, int64_t now) {
    kcache__slot_touch(kcache__slot_find_in(kcache__tab(st), d), now);
}

/* Appends the unit an entry belongs to (from its key record) to a comma-separated list. */
static void kcache__entry_unit(kcache__store *st, const char *rel, char *list, size_t cap) {
    unsigned char h[KCACHE__ENTRY_FIXED + 2 + KCACHE_UNIT_MAX];
    size_t have = strlen(list), ulen;
    ptrdiff_t n;
    int fd = kcache__shard_trusted(st, rel) ? kcache__open_in(st, rel, KCACHE__RD | KCACHE__NONBLOCK) : -1;
    if (fd < 0) return;
    n = kcache__io_pread(fd, h, sizeof h, 0);
    kcache__io_close(fd);
    if (n < KCACHE__ENTRY_FIXED + 2 || memcmp(h, "KCENTRY", 8) != 0) return;
    ulen = kcache__get_u16(h + KCACHE__ENTRY_FIXED);
    if (ulen >= KCACHE_UNIT_MAX || (size_t)n < KCACHE__ENTRY_FIXED + 2 + ulen) return;
    if (have + ulen + 3 < cap) snprintf(list + have, cap - have, "%s%.*s", have ? ", " : "", (int)ulen, (const char *)h + KCACHE__ENTRY_FIXED + 2);
}

/* Removes the entry a slot describes (lock held) and logs it as an eviction when it is one. */
static void kcache__store_drop_in(kcache__store *st, uint64_t *s, int evicted, kcache__store_ev *ev, int shardfd) {
    char rel[48];
    kcache_hash128 d = kcache__slot_digest(s);
    uint64_t size = kcache__sl_get(s, KCACHE__SL_SIZE);
    kcache__entry_name(d, rel);
    if (evicted && ev && st->debug) kcache__entry_unit(st, rel, ev->units, sizeof ev->units);
    if (shardfd >= 0) kcache__clear_name(st, shardfd, rel + 5);
    else kcache__unlink_entry(st, rel);
    kcache__acct_set(st, 24, kcache__acct_get(st, 24) - (size <= kcache__acct_get(st, 24) ? size : kcache__acct_get(st, 24)));
    kcache__acct_set(st, 32, kcache__acct_get(st, 32) ? kcache__acct_get(st, 32) - 1 : 0);
    kcache__slot_clear(s);
    if (evicted) {
        uint64_t at = kcache__acct_get(st, KCACHE__EVLOG_AT - 8) % KCACHE__EVLOG_SLOTS;
        size_t o = KCACHE__EVLOG_AT + (size_t)at * 32;
        kcache__acct_set(st, o, d.lo);
        kcache__acct_set(st, o + 8, d.hi);
        kcache__acct_set(st, o + 16, (uint64_t)kcache__now_ns());
        kcache__acct_set(st, o + 24, size);
        kcache__acct_set(st, KCACHE__EVLOG_AT - 8, at + 1);
        kcache__acct_set(st, 64, kcache__acct_get(st, 64) + 1);
        if (ev) { ev->evicted++; ev->evicted_bytes += size; }
    }
}

static void kcache__store_drop(kcache__store *st, uint64_t *s, int evicted, kcache__store_ev *ev) {
    kcache__store_drop_in(st, s, evicted, ev, -1);
}

/* When an entry was evicted by the size limit, if the eviction log still remembers it. */
static int kcache__store_evicted_when(const kcache__store *st, kcache_hash128 d, int64_t *when) {
    const kcache__table *t = kcache__tab(st);
    int i;
    if (!t || !t->map) return 0;
    for (i = 0; i < KCACHE__EVLOG_SLOTS; i++) {
        size_t o = KCACHE__EVLOG_AT + (size_t)i * 32;
        if (kcache__acct_at(t->map, o) == d.lo && kcache__acct_at(t->map, o + 8) == d.hi) {
            *when = (int64_t)kcache__acct_at(t->map, o + 16);
            return 1;
        }
    }
    return 0;
}

/* Eviction (lock held): CLOCK over the use table. A hand kept in config.file (so every process
   moves the same one) walks the slots in table order; an entry marked as used since the hand last
   passed loses its mark and stays, and the first unmarked entry goes. A hit only sets the mark
   (kcache__slot_touch): no lock, no system call, and no need for a fine clock, since the order of
   uses does not matter, only whether there was one in the last sweep. A new entry comes in
   unmarked at its bucket's place, so one never used again goes at the hand's next pass, while an
   entry used once per sweep stays however many one-time entries pass through (scan resistance).
   The hand passes at most KCACHE__EVICT_LOOK marked entries for one victim; then the least recently
   used of those goes. A victim costs a few slot reads (1.3 - 4.4 on average in the traces below)
   and one unlink, whatever the number of entries; no directory is walked.
   Chosen by measurement: the traces of bench/bench_evict.c (3,000 keys of 16 KiB, an 8 MiB store,
   30,000 gets, a put after each miss), each policy simulated over kcache's table, as hit ratio over
   an exact LRU's of the same size, at Zipf 0.8 / 1.0 / 1.2, with one-time keys mixed in, and (eight
   traces) where popularity drifts or a working set slides, LRU's best case:
       this CLOCK, one mark                   1.06  1.03  1.01   1.06    0.91 - 1.04
       two-bit use counts (S3-FIFO's main)    1.09  1.04  1.02   1.08    0.85 - 1.03
       16 sampled, the least recent goes      0.99  1.00  1.00   0.99    0.99 - 1.00
       the same with Redis's eviction pool    1.00  1.00  1.00   1.00    0.99 - 1.00
       SIEVE, exact                           1.12  1.06  1.02   1.13    0.37 - 0.98
       S3-FIFO, exact                         1.13  1.06  1.02   1.13    0.79 - 1.06
       the rule before: 16 sampled, to 2/3    0.93  0.96  0.98   0.96    0.89 - 0.99
   A sampled LRU is at best an LRU: it does not resist scans. SIEVE and S3-FIFO need their entries
   in insertion order (links or a ring in config.file, which every older kcache would reject and
   rebuild) and lose far more than this where popularity moves; counts gain 1 - 3 % on Zipf and lose
   up to 7 % more there (old favourites linger three sweeps). The store itself, measured by
   bench_evict: 1.07  1.03  1.02  1.07 (the rule before: 0.84  0.90  0.95  0.88). */
static uint64_t *kcache__evict_victim(kcache__store *st) {
    uint64_t hand = kcache__acct_get(st, KCACHE__ACCT_HAND) % st->nslots, i, passed = 0;
    uint64_t *victim = NULL;
    for (i = 0; i < st->nslots; i++) {
        uint64_t *s = kcache__slot(st, hand), use;
        hand = hand + 1 == st->nslots ? 0 : hand + 1;
        if (!kcache__slot_used(s)) continue;
        use = kcache__sl_get(s, KCACHE__SL_USE);
        if (!(use & KCACHE__USE_MARK)) { victim = s; break; }
        /* a second chance; a hit that lands meanwhile keeps its mark (the exchange then fails) */
        kcache__atomic_cas_u64(s + KCACHE__SL_USE, kcache__le64(use), kcache__le64(use & ~(uint64_t)KCACHE__USE_MARK));
        if (!victim || use < kcache__sl_get(victim, KCACHE__SL_USE)) victim = s; /* the least recent passed, should none be unmarked */
        if (++passed == KCACHE__EVICT_LOOK) break;
    }
    kcache__acct_set(st, KCACHE__ACCT_HAND, hand);
    return victim; /* NULL: no entry in the whole table */
}

/* The eviction entry point (lock held, between kcache__store_begin and _end): evicts entries in the
   policy's order until the store accounts at most target bytes or is empty. Each victim is logged
   as evicted by the size limit. */
static void kcache__store_evict_to(kcache__store *st, uint64_t target, kcache__store_ev *ev) {
    while (kcache__acct_get(st, 24) > target && kcache__acct_get(st, 32) > 0) {
        uint64_t *victim = kcache__evict_victim(st);
        if (!victim) { kcache__acct_set(st, 24, 0); kcache__acct_set(st, 32, 0); break; } /* accounting said more */
        kcache__store_drop(st, victim, 1, ev);
    }
}

/* Makes room for `bytes` new bytes (an entry, and the writes in flight) (lock held): just enough goes for
   the store to hold it under the limit, and limit/1024 more, so that a store at its limit does not
   pay an eviction on every put of a slightly larger entry (the old rule, down to 2/3 of the limit
   at once, threw away a third of what was worth keeping). */
static void kcache__store_make_room(kcache__store *st, uint64_t bytes, kcache__store_ev *ev) {
    uint64_t room = st->limit > bytes ? st->limit - bytes : 0, margin = st->limit >> 10;
    if (st->limit && kcache__acct_get(st, 24) > room) kcache__store_evict_to(st, room > margin ? room - margin : 0, ev);
}

/* Whether a slot's last use a goes before b's: unmarked before marked, then older first. */
static int kcache__use_before(uint64_t a, uint64_t b) {
    return (a & KCACHE__USE_MARK) != (b & KCACHE__USE_MARK) ? !(a & KCACHE__USE_MARK) : a < b;
}

static int kcache__parse_entry_name(const char *name, kcache_hash128 *d) {
    int i;
    uint64_t hi = 0, lo = 0;
    if (strlen(name) != 36 || strcmp(name + 32, ".kce") != 0) return 0;
    for (i = 0; i < 32; i++) {
        int v = kcache__hexval((unsigned char)name[i]);
        if (v < 0) return 0;
        if (i < 16) hi = (hi << 4) | (uint64_t)v; else lo = (lo << 4) | (uint64_t)v;
    }
    d->hi = hi;
    d->lo = lo;
    return 1;
}

/* Puts an entry's slot in the table (lock held); a full bucket gives up its least recent entry,
   one not marked used since the eviction hand passed if it has one. */
static void kcache__acct_grow(kcache__store *st, kcache__store_ev *ev);

static void kcache__slot_insert(kcache__store *st, kcache_hash128 d, uint64_t size, int64_t use, kcache__store_ev *ev) {
    uint64_t b, w;
    uint64_t *free_slot = NULL, *oldest = NULL;
    for (;;) {
        uint64_t before = st->nslots;
        b = (d.lo & ((st->nslots / KCACHE__WAYS) - 1)) * KCACHE__WAYS;
        free_slot = oldest = NULL;
        for (w = 0; w < KCACHE__WAYS; w++) {
            uint64_t *s = kcache__slot(st, b + w);
            if (!kcache__slot_used(s)) { if (!free_slot) free_slot = s; continue; }
            if (!oldest || kcache__use_before(kcache__sl_get(s, KCACHE__SL_USE), kcache__sl_get(oldest, KCACHE__SL_USE))) oldest = s;
        }
        if (free_slot || st->growing || st->nslots >= kcache__max_slots(st->limit)) break;
        kcache__acct_grow(st, ev); /* a full bucket while the table may still grow: grow, look again */
        if (st->nslots == before) break;
    }
    if (!free_slot) {
        kcache__store_drop(st, oldest, 1, ev);
        free_slot = oldest;
    }
    kcache__sl_set(free_slot, KCACHE__SL_LO, d.lo);
    kcache__sl_set(free_slot, KCACHE__SL_HI, d.hi);
    kcache__sl_set(free_slot, KCACHE__SL_SIZE, size);
    kcache__sl_set(free_slot, KCACHE__SL_USE, (uint64_t)use);
    kcache__acct_set(st, 24, kcache__acct_get(st, 24) + size);
    kcache__acct_set(st, 32, kcache__acct_get(st, 32) + 1);
}

/* Calls fn for every entry file in the shards (regular files with an entry's name, made by someone
   the store trusts). Something else at an entry's name is removed; other names are left alone. */
typedef void (*kcache__walk_fn)(void *ctx, kcache_hash128 d, const kcache__finfo *s);
static void kcache__store_walk(kcache__store *st, kcache__walk_fn fn, void *ctx) {
    int shard, efd = kcache__open_in(st, "e", KCACHE__RD | KCACHE__DIRECTORY);
    if (efd < 0) return;
    for (shard = 0; shard < 256; shard++) {
        char rel[8];
        int fd;
        kcache__dir *dp;
        const char *name;
        snprintf(rel, sizeof rel, "e/%02x", shard);
        if (!kcache__shard_trusted(st, rel)) continue;
        dp = kcache__io_dir_open(&st->mem, efd, rel + 2); /* never through a symlink */
        if (!dp) continue;
        fd = kcache__os_dir_fd(dp);
        while ((name = kcache__io_dir_next(dp)) != NULL) {
            kcache_hash128 d;
            kcache__finfo s;
            if (kcache__io_statat(fd, name, &s) != 0 || !kcache__parse_entry_name(name, &d)) continue; /* not kcache's */
            if (s.kind != KCACHE__KIND_FILE) { /* a symlink or FIFO at an entry's name: cleared, never followed */
                if (s.kind != KCACHE__KIND_DIR) kcache__io_unlink(fd, name);
                continue;
            }
            if (kcache__trusted(st, &s)) fn(ctx, d, &s); /* someone else's file is never counted as an entry */
        }
        kcache__io_dir_close(dp);
    }
    kcache__io_close(efd);
}

typedef struct kcache__rebuild_ctx {
    kcache__store *st;
    const unsigned char *old; /* the use table before the rebuild, or NULL */
    uint64_t old_slots;       /* its geometry (the table may grow during the rebuild) */
    kcache__store_ev *ev;
} kcache__rebuild_ctx;

static void kcache__rebuild_one(void *ctx, kcache_hash128 d, const kcache__finfo *s) {
    kcache__rebuild_ctx *c = (kcache__rebuild_ctx *)ctx;
    int64_t use = s->mtime_ns & ~(int64_t)KCACHE__USE_MARK; /* not known to be used: unmarked */
    const uint64_t *o = c->old ? kcache__slot_lookup(c->old, c->old_slots, d) : NULL;
    if (o) use = (int64_t)kcache__sl_get(o, KCACHE__SL_USE);
    kcache__slot_insert(c->st, d, s->size, use, c->ev);
}

/* Rebuilds the accounting and the use table from the entries on disk (lock held, map valid):
   recorded uses survive, entries the table did not know get their file's mtime. */
static void kcache__store_rebuild(kcache__store *st, kcache__store_ev *ev) {
    size_t table = (size_t)st->nslots * KCACHE__SLOT;
    unsigned char *old = (unsigned char *)kcache__mem_alloc(&st->mem, table);
    unsigned char *live = st->map + KCACHE__ACCT_HEADER;
    kcache__rebuild_ctx c;
    if (old) { /* hits may be recording uses meanwhile: copy slot words atomically */
        size_t i;
        for (i = 0; i < table / 8; i++)
            kcache__put_u64(old + i * 8, kcache__le64(kcache__atomic_load_u64((const uint64_t *)(const void *)(live + i * 8))));
    }
    {
        size_t i;
        for (i = 0; i < table / 8; i++) kcache__atomic_store_u64((uint64_t *)(void *)(live + i * 8), 0);
    }
    kcache__acct_set(st, 24, 0);
    kcache__acct_set(st, 32, 0);
    c.st = st;
    c.old = old;
    c.old_slots = st->nslots;
    c.ev = ev;
    kcache__store_walk(st, kcache__rebuild_one, &c);
    kcache__mem_free(&st->mem, old);
    if (ev) ev->rebuilt++;
}

/* Doubles the use table (lock held): a new config.file with the same header and every slot
   inserted again, renamed over the old one. Other processes map the new one at their next locked
   update; until then their hits record use in the old one, which only ages those entries a little. */
static void kcache__acct_grow(kcache__store *st, kcache__store_ev *ev) {
    uint32_t lg = kcache__get_u32(st->map + 16) + 1;
    uint64_t nslots = (uint64_t)KCACHE__WAYS << lg, old_slots = st->nslots, i;
    size_t len = KCACHE__ACCT_HEADER + (size_t)nslots * KCACHE__SLOT, old_len = st->map_len;
    unsigned char *map, *old_map = st->map;
    int fd, old_fd = st->cffd;
    kcache__finfo sb;
    char tmp[64];
    if (nslots > kcache__max_slots(st->limit) || kcache__shortfall(st, len)) return; /* (a full table evicts instead) */
    st->temp_seq++;
    snprintf(tmp, sizeof tmp, "%u-grow-%llx.tmp", (unsigned)kcache__pid(), (unsigned long long)st->temp_seq);
    fd = kcache__io_openat(st->tmpfd, tmp, KCACHE__RW | KCACHE__CREATE | KCACHE__EXCL | kcache__gmode(st));
    if (fd < 0) return;
    kcache__io_chmod(fd, kcache__file_mode(st));
    if (kcache__io_allocate(fd, (uint64_t)len) != 0 || kcache__io_fstat(fd, &sb) != 0 || (map = kcache__io_map(fd, len)) == NULL) {
        kcache__io_close(fd);
        kcache__io_unlink(st->tmpfd, tmp);
        return;
    }
    memcpy(map, old_map, KCACHE__ACCT_HEADER);
    kcache__put_u32(map + 16, lg);
    st->map = map;
    st->map_len = len;
    st->nslots = nslots;
    st->growing = 1;
    kcache__acct_set(st, 24, 0);
    kcache__acct_set(st, 32, 0);
    for (i = 0; i < old_slots; i++) {
        const uint64_t *o = (const uint64_t *)(const void *)(old_map + KCACHE__ACCT_HEADER + i * KCACHE__SLOT);
        kcache_hash128 d;
        d.lo = kcache__sl_get(o, KCACHE__SL_LO);
        d.hi = kcache__sl_get(o, KCACHE__SL_HI);
        if (d.lo || d.hi) kcache__slot_insert(st, d, kcache__sl_get(o, KCACHE__SL_SIZE), (int64_t)kcache__sl_get(o, KCACHE__SL_USE), ev);
    }
    st->growing = 0;
    if (kcache__io_rename(st->tmpfd, tmp, st->dirfd, "config.file") != 0) { /* keep the old table */
        kcache__io_unmap(map, len);
        kcache__io_close(fd);
        kcache__io_unlink(st->tmpfd, tmp);
        st->map = old_map;
        st->map_len = old_len;
        st->nslots = old_slots;
        return;
    }
    kcache__io_close(old_fd); /* old_map stays mapped for readers: see kcache__table */
    (void)old_len;
    st->cffd = fd;
    st->cf_dev = sb.dev;
    st->cf_ino = sb.ino;
    kcache__publish(st);
}

/* Under the lock: makes sure the mapped config.file is the one in the directory and is sound,
   replacing, remapping or rebuilding as needed, then marks it busy. */
static kcache_status kcache__store_begin(kcache__store *st, kcache__store_ev *ev) {
    kcache__finfo s;
    int valid = 1, present;
    st->cur_ev = NULL;
    present = kcache__io_statat(st->dirfd, "config.file", &s) == 0;
    if (present && s.kind != KCACHE__KIND_FILE) {
        /* a directory, FIFO or symlink in its place: kcache's own name, cleared (never followed) */
        kcache__ev_note(ev, "config.file was not a regular file; replaced it");
        kcache__clear_name(st, st->dirfd, "config.file");
        present = 0;
    }
    if (!present ||
        s.dev != st->cf_dev || s.ino != st->cf_ino || !st->map || (size_t)s.size != st->map_len) {
        if (kcache__acct_map(st, &valid) != 0 || !valid) {
            if (kcache__acct_create(st, st->limit, 1) != KCACHE_OK || kcache__acct_map(st, &valid) != 0 || !valid)
                return KCACHE_EIO;
            kcache__store_rebuild(st, ev);
        }
    }
    if (!kcache__acct_valid(st->map, st->map_len) || kcache__get_u32(st->map + 48) != 0) {
        /* a garbage header or a holder that died mid-update: the geometry is the mapped size's */
        uint32_t lg = 0;
        while (((uint64_t)KCACHE__WAYS << lg) < st->nslots) lg++;
        memcpy(st->map, "KCACHECF", 8);
        kcache__put_u32(st->map + 8, KCACHE__ACCT_VERSION);
        kcache__put_u32(st->map + 12, KCACHE__ACCT_HEADER);
        kcache__put_u32(st->map + 16, lg);
        kcache__put_u32(st->map + 20, KCACHE__WAYS);
        kcache__store_rebuild(st, ev);
    }
    kcache__put_u32(st->map + 48, 1);
    st->cur_ev = ev;
    return KCACHE_OK;
}
static void kcache__store_end(kcache__store *st) {
    st->cur_ev = NULL;
    kcache__acct_set(st, 40, kcache__acct_get(st, 40) + 1);
    kcache__acct_set(st, 56, st->limit);
    kcache__put_u32(st->map + 48, 0);
    kcache__acct_seal(st);
}

static kcache_status kcache__errno_status(int e) {
    switch (e) {
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return KCACHE_ENOSPC;
    case EROFS: case EACCES: case EPERM: return KCACHE_EROFS;
    case ENOENT: return KCACHE_ENOENT;
    case ENOMEM: return KCACHE_ENOMEM;
    default: return KCACHE_EIO;
    }
}

/* Writes two buffers, in one system call when the kernel takes them whole. */
static kcache_status kcache__write_all(int fd, const void *a, size_t an, const void *b, size_t bn) {
    const unsigned char *pa = (const unsigned char *)a, *pb = (const unsigned char *)b;
    while (an + bn > 0) {
        ptrdiff_t w = kcache__io_write2(fd, pa, an, pb, bn);
        size_t took;
        if (w < 0) {
            if (errno == EINTR) continue;
            return kcache__errno_status(errno);
        }
        if (w == 0) return KCACHE_EIO;
        took = (size_t)w < an ? (size_t)w : an;
        pa += took;
        an -= took;
        w -= (ptrdiff_t)took;
        if (w > 0) { /* (b may be NULL with bn 0: no arithmetic on it then) */
            pb += (size_t)w;
            bn -= (size_t)w;
        }
    }
    return KCACHE_OK;
}

/* ---- room: the filesystem's reserve, and writes in flight counted against the limit ---------- */

#define KCACHE__FLIGHT_AT 2560
#define KCACHE__FLIGHT_SLOTS 32
static uint64_t *kcache__flight_word(const unsigned char *map, unsigned i, int f) {
    return (uint64_t *)(void *)(uintptr_t)(map + KCACHE__FLIGHT_AT + (size_t)i * 32 + (size_t)f * 8);
}
/* Claims a slot of the in-flight table for a write of `bytes` (no lock: compare-and-swap). 0 when
   all are taken: the write then goes uncounted, as it would with an older kcache. */
static int kcache__flight_claim(unsigned char *map, uint64_t token, uint64_t bytes) {
    unsigned i;
    for (i = 0; i < KCACHE__FLIGHT_SLOTS; i++) {
        uint64_t free_word = 0;
        if (kcache__atomic_cas_u64(kcache__flight_word(map, i, 0), free_word, kcache__le64(token))) {
            kcache__atomic_store_u64(kcache__flight_word(map, i, 1), kcache__le64(bytes));
            kcache__atomic_store_u64(kcache__flight_word(map, i, 2), kcache__le64((uint64_t)kcache__now_ns()));
            return 1;
        }
    }
    return 0;
}
static void kcache__flight_release(unsigned char *map, uint64_t token) {
    unsigned i;
    if (!map || !token) return;
    for (i = 0; i < KCACHE__FLIGHT_SLOTS; i++) {
        uint64_t t = kcache__le64(token);
        if (kcache__atomic_load_u64(kcache__flight_word(map, i, 0)) != t) continue;
        kcache__atomic_store_u64(kcache__flight_word(map, i, 1), 0);
        kcache__atomic_cas_u64(kcache__flight_word(map, i, 0), t, 0);
    }
}
/* Bytes in flight (but the writer `except`'s own). */
static uint64_t kcache__flight_sum(const unsigned char *map, uint64_t except) {
    uint64_t sum = 0, e = kcache__le64(except);
    unsigned i;
    for (i = 0; i < KCACHE__FLIGHT_SLOTS && map; i++) {
        uint64_t w = kcache__atomic_load_u64(kcache__flight_word(map, i, 0));
        if (w && w != e) sum += kcache__le64(kcache__atomic_load_u64(kcache__flight_word(map, i, 1)));
    }
    return sum;
}
/* Lock held: gives back the claims of writers that died (or claimed a day ago). */
static void kcache__flight_reap(kcache__store *st) {
    int64_t old = kcache__now_ns() - (int64_t)86400 * 1000000000;
    unsigned i;
    for (i = 0; i < KCACHE__FLIGHT_SLOTS; i++) {
        uint64_t w = kcache__atomic_load_u64(kcache__flight_word(st->map, i, 0)), owner = kcache__le64(w);
        if (!w) continue;
        if (!kcache__os_pid_gone((uint32_t)(owner >> 32)) &&
            (int64_t)kcache__le64(kcache__atomic_load_u64(kcache__flight_word(st->map, i, 2))) >= old)
            continue;
        kcache__atomic_store_u64(kcache__flight_word(st->map, i, 1), 0);
        kcache__atomic_cas_u64(kcache__flight_word(st->map, i, 0), w, 0);
    }
}

/* ---- >>index  per-unit index files: a unit's overloads, what left it and why, traced misses ----
   i/XX/<xxh128 of the unit>.kci, an append-only log written under the store lock and read without
   it. Hits never read an index: an entry is found by its digest. The index answers the questions a
   miss raises: was the unit ever stored, which overload is closest and which field differs, was
   this one evicted, rejected or invalidated by a dependency, and (KCACHE_TRACE) which keys missed
   lately. A put appends one record, so its cost does not grow with the unit's overloads; when the
   log has grown to twice its size after the last rewrite, it is rewritten (temp + rename) with only
   what is current. Evictions are not logged (the evicting process does not know the unit): an
   overload listed live whose entry is gone was evicted, and the rewrite moves it to the gone list.
       0  "KCINDEX\0"   8 u16 version, u16 0, u32 0   16 u64 length after the last rewrite
      24  u16 unit length, unit, u64 checksum (XXH3-128 lo of the header before it)
          records: u32 L, body (L bytes), u64 checksum of the body, u32 L again
          body: u8 kind (1 live, 2 gone, 3 missed, 4 forgotten), 3 x u8 0, digest lo, hi, i64 when,
                u64 payload size, u32 reason, u32 pid, u32 record length, key record
   A record cut short by a crash or damaged fails its checksum: a reader skips to the next sound
   record, and the next writer rewrites the log instead of appending after a torn one.                                               */
#define KCACHE__IX_VERSION 2
#define KCACHE__IX_KEEP 32                /* gone and missed items kept per unit, newest last */
#define KCACHE__IX_MAX ((size_t)64 << 20) /* an index larger than this is damage */
enum { KCACHE__IX_LIVE, KCACHE__IX_GONE, KCACHE__IX_MISSED, KCACHE__IX_LISTS, KCACHE__IX_FORGET = 3 };

typedef struct kcache__ix_item {
    kcache_hash128 digest;
    int64_t when;               /* stored, gone or missed at (ns); 0 when not known */
    uint64_t size;              /* payload bytes */
    uint32_t reason;            /* gone, missed: a kcache_reason */
    uint32_t pid;               /* missed: the process */
    const unsigned char *rec;   /* the key record: in the index's buffer or the caller's */
    uint32_t rec_len;
} kcache__ix_item;

typedef struct kcache__ix {
    unsigned char *file;        /* the index as read (items point into it) */
    size_t file_len, compacted_len, records;
    kcache__ix_item *items[KCACHE__IX_LISTS];
    uint32_t n[KCACHE__IX_LISTS], cap[KCACHE__IX_LISTS];
    const kcache__mem *mem;     /* its store's allocator: file and items come from it */
} kcache__ix;

/* What a replay met, for a tool that shows a log whole (kcache_index_log_info): records by kind,
   bytes skipped as damage and in how many places, gone and missed items dropped past
   KCACHE__IX_KEEP. */
typedef struct kcache__ix_tally {
    size_t by_kind[4], damaged_bytes, damaged_places, dropped[KCACHE__IX_LISTS];
} kcache__ix_tally;

#ifndef KCACHE_NO_EXPLAIN
static void kcache__ix_name(const char *unit, char out[48]) { /* "i/XX/<32 hex>.kci" */
    kcache__entry_name(kcache_hash(unit, strlen(unit)), out);
    out[0] = 'i';
    memcpy(out + 37, ".kci", 5);
}

static void kcache__ix_free(kcache__ix *ix) {
    int l;
    for (l = 0; l < KCACHE__IX_LISTS; l++) kcache__mem_free(ix->mem, ix->items[l]);
    kcache__mem_free(ix->mem, ix->file);
    memset(ix, 0, sizeof *ix);
}

static int kcache__ix_push(kcache__ix *ix, int list, const kcache__ix_item *it) {
    if (list != KCACHE__IX_LIVE && ix->n[list] == KCACHE__IX_KEEP) { /* bounded: the oldest goes */
        memmove(ix->items[list], ix->items[list] + 1, sizeof(kcache__ix_item) * (KCACHE__IX_KEEP - 1));
        ix->n[list]--;
    }
    if (ix->n[list] == ix->cap[list]) {
        uint32_t ncap = ix->cap[list] ? ix->cap[list] * 2 : 8;
        kcache__ix_item *ni = (kcache__ix_item *)kcache__mem_alloc(ix->mem, sizeof(kcache__ix_item) * ncap);
        if (!ni) return 0;
        if (ix->n[list]) memcpy(ni, ix->items[list], sizeof(kcache__ix_item) * ix->n[list]);
        kcache__mem_free(ix->mem, ix->items[list]);
        ix->items[list] = ni;
        ix->cap[list] = ncap;
    }
    ix->items[list][ix->n[list]++] = *it;
    return 1;
}
static void kcache__ix_del(kcache__ix *ix, int list, uint32_t i) {
    memmove(ix->items[list] + i, ix->items[list] + i + 1, sizeof(kcache__ix_item) * (ix->n[list] - i - 1));
    ix->n[list]--;
}
static int kcache__ix_find(const kcache__ix *ix, int list, kcache_hash128 d) {
    uint32_t i;
    for (i = ix->n[list]; i-- > 0;)
        if (ix->items[list][i].digest.lo == d.lo && ix->items[list][i].digest.hi == d.hi) return (int)i;
    return -1;
}

/* Encodes one record (kind, item) into w. */
static void kcache__ix_encode(kcache__wbuf *w, int kind, const kcache__ix_item *it) {
    uint32_t body = 48 + it->rec_len;
    unsigned char *at = kcache__w_take(w, 4), *start;
    if (at) kcache__put_u32(at, body);
    start = w->p + w->len;
    kcache__w_u8(w, (unsigned)kind + 1);
    kcache__w_u8(w, 0); kcache__w_u8(w, 0); kcache__w_u8(w, 0);
    kcache__w_u64(w, it->digest.lo);
    kcache__w_u64(w, it->digest.hi);
    kcache__w_u64(w, (uint64_t)it->when);
    kcache__w_u64(w, it->size);
    if ((at = kcache__w_take(w, 12)) != NULL) {
        kcache__put_u32(at, it->reason);
        kcache__put_u32(at + 4, it->pid);
        kcache__put_u32(at + 8, it->rec_len);
    }
    kcache__w_mem(w, it->rec, it->rec_len);
    if (!w->overflow) kcache__w_u64(w, kcache_hash(start, body).lo);
    if ((at = kcache__w_take(w, 4)) != NULL) kcache__put_u32(at, body);
}
static size_t kcache__ix_header_len(const char *unit) { return 26 + strlen(unit) + 8; }

/* Decodes the record at r's position: its kind (0..3), or -1 at the end or at a torn record. */
static int kcache__ix_decode(kcache__rbuf *r, kcache__ix_item *it) {
    const unsigned char *b, *q;
    uint32_t body;
    if (r->len - r->pos < 4) return -1;
    body = kcache__get_u32(r->p + r->pos);
    if (body < 48 || body > r->len - r->pos - 4 || r->len - r->pos - 4 - body < 12) return -1;
    b = r->p + r->pos + 4;
    if (kcache__get_u32(b + body + 8) != body || b[0] < 1 || b[0] > 4 || kcache__get_u64(b + body) != kcache_hash(b, body).lo)
        return -1;
    it->digest.lo = kcache__get_u64(b + 4);
    it->digest.hi = kcache__get_u64(b + 12);
    it->when = (int64_t)kcache__get_u64(b + 20);
    it->size = kcache__get_u64(b + 28);
    q = b + 36;
    it->reason = kcache__get_u32(q);
    it->pid = kcache__get_u32(q + 4);
    it->rec_len = kcache__get_u32(q + 8);
    if (it->rec_len != body - 48) return -1;
    it->rec = b + 48;
    r->pos += 4 + body + 12;
    return b[0] - 1;
}

/* Replays the log in ix->file (ix->file_len bytes, records from hlen): the latest
   live/gone/forgotten record of each digest wins (a hash of digests keeps the replay linear), a
   damaged or torn record is skipped byte by byte up to the next sound one. tally may be NULL. 0 when
   out of memory. */
static int kcache__ix_replay(kcache__ix *ix, size_t hlen, kcache__ix_tally *tally) {
    kcache__rbuf r;
    size_t have = ix->file_len, cap = (have - hlen) / 60 + 1, i, nrec = 0, skipped_end = 0; /* a record is at least 60 bytes */
    kcache__ix_item *recs = (kcache__ix_item *)kcache__mem_alloc(ix->mem, sizeof *recs * cap);
    unsigned char *kinds = (unsigned char *)kcache__mem_alloc(ix->mem, cap);
    uint32_t *table;
    size_t pushed[KCACHE__IX_LISTS] = {0, 0, 0};
    int ok = 1;
    for (i = 64; i < cap * 2; i <<= 1) {
    }
    table = (uint32_t *)kcache__mem_alloc(ix->mem, sizeof *table * i);
    if (!recs || !kinds || !table) ok = 0;
    if (ok) {
        size_t mask = i - 1;
        memset(table, 0xff, sizeof *table * i);
        r.p = ix->file; r.len = have; r.pos = hlen; r.bad = 0;
        while (nrec < cap && r.pos < r.len) {
            size_t at = r.pos, h;
            int kind = kcache__ix_decode(&r, &recs[nrec]);
            if (kind < 0) { /* damaged or torn: look for the next sound record */
                if (tally) {
                    if (!tally->damaged_bytes || at != hlen + skipped_end) tally->damaged_places++;
                    tally->damaged_bytes++;
                    skipped_end = at + 1 - hlen;
                }
                r.pos = at + 1;
                continue;
            }
            kinds[nrec] = (unsigned char)kind;
            if (tally) tally->by_kind[kind]++;
            if (kind != KCACHE__IX_MISSED) { /* the latest state of each digest */
                for (h = (size_t)recs[nrec].digest.lo & mask; table[h] != 0xffffffffu; h = (h + 1) & mask) {
                    const kcache__ix_item *o = &recs[table[h]];
                    if (o->digest.lo == recs[nrec].digest.lo && o->digest.hi == recs[nrec].digest.hi) break;
                }
                table[h] = (uint32_t)nrec;
            }
            nrec++;
        }
        if (tally && r.pos < r.len) { /* (no room left for records: the rest is not read) */
            tally->damaged_bytes += r.len - r.pos;
            if (skipped_end != r.pos - hlen) tally->damaged_places++;
        }
        ix->records = nrec;
        for (i = 0; i < nrec && ok; i++) {
            size_t h;
            if (kinds[i] == KCACHE__IX_MISSED) { pushed[KCACHE__IX_MISSED]++; kcache__ix_push(ix, KCACHE__IX_MISSED, &recs[i]); continue; }
            if (kinds[i] == KCACHE__IX_FORGET) continue;
            for (h = (size_t)recs[i].digest.lo & mask; table[h] != 0xffffffffu; h = (h + 1) & mask) {
                const kcache__ix_item *o = &recs[table[h]];
                if (o->digest.lo == recs[i].digest.lo && o->digest.hi == recs[i].digest.hi) break;
            }
            if (table[h] != i) continue;
            pushed[kinds[i]]++;
            if (!kcache__ix_push(ix, kinds[i], &recs[i])) ok = 0;
        }
        if (tally)
            for (i = 0; i < KCACHE__IX_LISTS; i++) tally->dropped[i] = pushed[i] - ix->n[i];
    }
    kcache__mem_free(ix->mem, recs);
    kcache__mem_free(ix->mem, kinds);
    kcache__mem_free(ix->mem, table);
    return ok;
}

/* Reads a unit's index without the lock and replays its log (kcache__ix_replay). KCACHE_ENOENT
   when the unit has none, KCACHE_ECORRUPT for a header that fails validation. */
static kcache_status kcache__ix_read(kcache__store *st, const char *unit, kcache__ix *ix) {
    char rel[48];
    kcache__finfo sb;
    size_t have = 0, ulen = strlen(unit), hlen = kcache__ix_header_len(unit);
    int fd;
    memset(ix, 0, sizeof *ix);
    ix->mem = &st->mem;
    kcache__ix_name(unit, rel);
    if (!kcache__shard_trusted(st, rel)) return KCACHE_ECORRUPT;
    fd = kcache__open_in(st, rel, KCACHE__RD | KCACHE__NONBLOCK);
    if (fd < 0) return errno == ENOENT ? KCACHE_ENOENT : KCACHE_ECORRUPT;
    if (kcache__io_fstat(fd, &sb) != 0 || sb.kind != KCACHE__KIND_FILE || !kcache__trusted(st, &sb) || (size_t)sb.size < hlen ||
        (uint64_t)sb.size > KCACHE__IX_MAX ||
        !(ix->file = (unsigned char *)kcache__mem_alloc(&st->mem, (size_t)sb.size))) {
        kcache__io_close(fd);
        return KCACHE_ECORRUPT;
    }
    while (have < (size_t)sb.size) {
        ptrdiff_t n = kcache__io_read(fd, ix->file + have, (size_t)sb.size - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
    }
    kcache__io_close(fd);
    ix->file_len = have;
    if (have < hlen || memcmp(ix->file, "KCINDEX", 8) != 0 || kcache__get_u16(ix->file + 8) != KCACHE__IX_VERSION ||
        kcache__get_u16(ix->file + 24) != ulen || memcmp(ix->file + 26, unit, ulen) != 0 ||
        kcache__get_u64(ix->file + hlen - 8) != kcache_hash(ix->file, hlen - 8).lo)
        goto bad;
    ix->compacted_len = (size_t)kcache__get_u64(ix->file + 16);
    if (kcache__ix_replay(ix, hlen, NULL)) return KCACHE_OK;
bad:
    kcache__ix_free(ix);
    return KCACHE_ECORRUPT;
}

/* Lock held: overloads whose entries left the store since they were logged (evicted: the only way
   out that is not logged) move to the gone list. */
static void kcache__ix_reconcile(kcache__store *st, kcache__ix *ix) {
    uint32_t i = 0;
    while (i < ix->n[KCACHE__IX_LIVE]) {
        kcache__ix_item it = ix->items[KCACHE__IX_LIVE][i];
        if (kcache__slot_find(st, it.digest)) { i++; continue; }
        if (!kcache__store_evicted_when(st, it.digest, &it.when)) it.when = 0;
        it.reason = KCACHE_REASON_EVICTED;
        kcache__ix_del(ix, KCACHE__IX_LIVE, i);
        kcache__ix_push(ix, KCACHE__IX_GONE, &it);
    }
}

/* Rewrites a unit's index with only what is current (lock held). */
static kcache_status kcache__ix_write(kcache__store *st, const char *unit, const kcache__ix *ix) {
    kcache__store_ev *ev = st->cur_ev;
    char rel[48], shard[8], tmp[64];
    size_t hlen = kcache__ix_header_len(unit), len = hlen, ulen = strlen(unit);
    unsigned char *buf;
    kcache__wbuf w;
    kcache_status s;
    int l, fd, shardfd;
    uint32_t i;
    for (l = 0; l < KCACHE__IX_LISTS; l++)
        for (i = 0; i < ix->n[l]; i++) len += 64 + ix->items[l][i].rec_len;
    if (!(buf = (unsigned char *)kcache__mem_alloc(&st->mem, len))) return KCACHE_ENOMEM;
    w.p = buf; w.len = 0; w.cap = len; w.overflow = 0;
    kcache__w_mem(&w, "KCINDEX", 8);
    kcache__w_u16(&w, KCACHE__IX_VERSION);
    kcache__w_u16(&w, 0);
    kcache__w_mem(&w, "\0\0\0\0", 4);
    kcache__w_u64(&w, len);
    kcache__w_u16(&w, (uint16_t)ulen);
    kcache__w_mem(&w, unit, ulen);
    kcache__w_u64(&w, kcache_hash(buf, hlen - 8).lo);
    for (l = 0; l < KCACHE__IX_LISTS; l++)
        for (i = 0; i < ix->n[l]; i++) kcache__ix_encode(&w, l, &ix->items[l][i]);
    if (w.overflow || w.len != len) { kcache__mem_free(&st->mem, buf); return KCACHE_EIO; }
    if (kcache__shortfall(st, len)) { /* the filesystem's reserve: an index is worth less than the space */
        kcache__ev_note(ev, "index of unit \"%s\" not written: %s (the filesystem is at kcache's reserve)", unit, strerror(ENOSPC));
        kcache__mem_free(&st->mem, buf);
        return KCACHE_ENOSPC;
    }
    kcache__ix_name(unit, rel);
    if (!kcache__shard_trusted(st, rel)) {
        kcache__ev_note(ev, "%s", st->shard_why);
        kcache__mem_free(&st->mem, buf);
        return KCACHE_EUNSAFE;
    }
    memcpy(shard, rel, 4);
    shard[4] = 0;
    do { /* a name left by a dead process whose pid is ours now is taken: another one */
        st->temp_seq++;
        snprintf(tmp, sizeof tmp, "%u-ix-%llx-%llx.tmp", (unsigned)kcache__pid(), (unsigned long long)st->temp_seq,
                 (unsigned long long)kcache__now_ns());
        fd = kcache__io_openat(st->tmpfd, tmp, KCACHE__WR | KCACHE__CREATE | KCACHE__EXCL | kcache__gmode(st));
    } while (fd < 0 && errno == EEXIST && st->temp_seq % 4 != 0);
    if (fd < 0) {
        kcache__ev_note(ev, "index of unit \"%s\" not written: cannot create a temp file (%s)", unit, strerror(errno));
        kcache__mem_free(&st->mem, buf);
        return kcache__errno_status(errno);
    }
    s = kcache__write_all(fd, buf, len, NULL, 0);
    kcache__mem_free(&st->mem, buf);
    if (kcache__io_close(fd) != 0 && s == KCACHE_OK) s = kcache__errno_status(errno);
    shardfd = s == KCACHE_OK ? kcache__shard_open(st, shard, ev ? ev->note : NULL, ev ? sizeof ev->note : 0) : -1;
    if (s == KCACHE_OK && shardfd < 0) s = KCACHE_EUNSAFE;
    if (s == KCACHE_OK && kcache__io_rename(st->tmpfd, tmp, shardfd, rel + 5) != 0 &&
        (kcache__clear_name(st, shardfd, rel + 5) != 0 || kcache__io_rename(st->tmpfd, tmp, shardfd, rel + 5) != 0))
        s = kcache__errno_status(errno);
    if (shardfd >= 0) kcache__io_close(shardfd);
    if (s != KCACHE_OK) {
        kcache__ev_note(ev, "index of unit \"%s\" not written to %s (%s)", unit, rel, kcache_strerror(s));
        kcache__io_unlink(st->tmpfd, tmp);
    }
    return s;
}

/* Applies one record to an index in memory (what a reader's replay would do with it). */
static void kcache__ix_apply(kcache__ix *ix, int kind, const kcache__ix_item *it) {
    int at;
    if (kind != KCACHE__IX_MISSED) {
        while ((at = kcache__ix_find(ix, KCACHE__IX_LIVE, it->digest)) >= 0) kcache__ix_del(ix, KCACHE__IX_LIVE, (uint32_t)at);
        while ((at = kcache__ix_find(ix, KCACHE__IX_GONE, it->digest)) >= 0) kcache__ix_del(ix, KCACHE__IX_GONE, (uint32_t)at);
    }
    if (kind != KCACHE__IX_FORGET) kcache__ix_push(ix, kind, it);
}

/* Lock held: logs records for k's unit. Appends when the log ends with a sound record and has not
   doubled since its last rewrite; otherwise (or when there is none) rewrites it with what is
   current, evicted overloads moved to the gone list. */
static void kcache__ix_log(kcache__store *st, const char *unit, int n, const int *kinds, const kcache__ix_item *items) {
    char rel[48];
    unsigned char tail[16];
    kcache__finfo sb;
    size_t hlen = kcache__ix_header_len(unit), len = 0, i;
    int fd, append = 0;
    kcache__ix_name(unit, rel);
    if (st->ix_last.fd >= 0 && strcmp(st->ix_last.rel, rel) == 0) {
        fd = st->ix_last.fd; /* still that name's file if nobody replaced or removed it (nlink) */
    } else {
        if (st->ix_last.fd >= 0) kcache__io_close(st->ix_last.fd);
        st->ix_last.fd = -1;
        st->ix_last.ino = 0;
        if (!kcache__shard_trusted(st, rel)) return; /* a refused shard: no index there */
        fd = kcache__open_in(st, rel, KCACHE__RW | KCACHE__APPEND | KCACHE__NONBLOCK);
    }
    if (fd >= 0 && kcache__io_fstat(fd, &sb) == 0 && sb.kind == KCACHE__KIND_FILE && kcache__trusted(st, &sb) && sb.nlink > 0 &&
        (size_t)sb.size >= hlen &&
        (uint64_t)sb.size < KCACHE__IX_MAX) {
        int rfd = fd;
        /* The log this process appended to last, untouched since (same file, same size): known sound,
           and well under the rewrite threshold checked then, so no need to read it again. */
        if (st->ix_last.dev == sb.dev && st->ix_last.ino == sb.ino && st->ix_last.size == (uint64_t)sb.size &&
            st->ix_last.room > 0)
            append = 1;
        else {
            /* sound when the header is ours and the last record's trailer checks out */
            unsigned char *hb = (unsigned char *)kcache__mem_alloc(&st->mem, hlen);
            int sound = hb && kcache__io_pread(rfd, hb, hlen, 0) == (ptrdiff_t)hlen && memcmp(hb, "KCINDEX", 8) == 0 &&
                        kcache__get_u16(hb + 8) == KCACHE__IX_VERSION && kcache__get_u16(hb + 24) == strlen(unit) &&
                        memcmp(hb + 26, unit, strlen(unit)) == 0 && kcache__get_u64(hb + hlen - 8) == kcache_hash(hb, hlen - 8).lo;
            uint64_t compacted = sound ? kcache__get_u64(hb + 16) : 0;
            kcache__mem_free(&st->mem, hb);
            /* appended to until it is twice its size after the last rewrite (64 KiB of slack) */
            if (sound && compacted <= (uint64_t)sb.size && (uint64_t)sb.size - compacted < compacted + 65536) {
                if ((size_t)sb.size == hlen) append = 1;
                else if (kcache__io_pread(rfd, tail, 12, sb.size - 12) == 12) {
                    uint32_t body = kcache__get_u32(tail + 8);
                    if (body >= 48 && (uint64_t)body + 16 + hlen <= (uint64_t)sb.size) {
                        unsigned char *b = (unsigned char *)kcache__mem_alloc(&st->mem, body);
                        if (b && kcache__io_pread(rfd, b, body, sb.size - 12 - body) == (ptrdiff_t)body &&
                            kcache_hash(b, body).lo == kcache__get_u64(tail))
                            append = 1;
                        kcache__mem_free(&st->mem, b);
                    }
                }
                st->ix_last.room = (uint64_t)(compacted + 65536) - ((uint64_t)sb.size - compacted);
            }
        }
    }
    if (append) {
        unsigned char *buf;
        kcache__wbuf w;
        for (i = 0; i < (size_t)n; i++) len += 64 + items[i].rec_len;
        buf = (unsigned char *)kcache__mem_alloc(&st->mem, len);
        if (buf) {
            w.p = buf; w.len = 0; w.cap = len; w.overflow = 0;
            for (i = 0; i < (size_t)n; i++) kcache__ix_encode(&w, kinds[i], &items[i]);
            if (w.overflow || kcache__write_all(fd, buf, w.len, NULL, 0) != KCACHE_OK) append = 0;
            if (append) {
                st->ix_last.dev = sb.dev;
                st->ix_last.ino = sb.ino;
                st->ix_last.size = (uint64_t)sb.size + w.len;
                st->ix_last.room = st->ix_last.room > w.len ? st->ix_last.room - w.len : 0;
            }
            kcache__mem_free(&st->mem, buf);
        } else {
            append = 0;
        }
    }
    if (append) { /* kept for the next put of this unit */
        st->ix_last.fd = fd;
        memcpy(st->ix_last.rel, rel, sizeof rel);
    } else {
        if (fd >= 0) kcache__io_close(fd);
        st->ix_last.fd = -1;
    }
    if (!append) {
        kcache__ix ix;
        st->ix_last.ino = 0;
        kcache_status r = kcache__ix_read(st, unit, &ix);
        if (r != KCACHE_OK) { memset(&ix, 0, sizeof ix); ix.mem = &st->mem; } /* none, or damaged: start afresh */
        for (i = 0; i < (size_t)n; i++) kcache__ix_apply(&ix, kinds[i], &items[i]);
        kcache__ix_reconcile(st, &ix);
        kcache__ix_write(st, unit, &ix);
        kcache__ix_free(&ix);
    }
}

/* Lock held: records a change of k's overload. list LIVE: k was stored (rec is its record); GONE:
   it left for reason; MISSED: it missed for reason (KCACHE_TRACE); KCACHE__IX_FORGET: the caller
   removed it. */
static void kcache__ix_update(kcache__store *st, const kcache_key *k, const unsigned char *rec, size_t rec_len,
                              uint64_t size, int list, kcache_reason reason) {
    kcache__ix_item it;
    memset(&it, 0, sizeof it);
    it.digest = k->digest;
    it.when = kcache__now_ns();
    it.size = size;
    it.reason = (uint32_t)reason;
    it.pid = st->pid; /* the opener's: a forked child never takes the lock (kcache__store_lock) */
    it.rec = rec;
    it.rec_len = rec ? (uint32_t)rec_len : 0;
    kcache__ix_log(st, k->unit, 1, &list, &it);
}
#else /* KCACHE_NO_EXPLAIN: no index is read or written; a miss is classified without one */
static KCACHE__UNUSED void kcache__ix_name(const char *unit, char out[48]) { /* (for tools and tests) */
    kcache__entry_name(kcache_hash(unit, strlen(unit)), out);
    out[0] = 'i';
    memcpy(out + 37, ".kci", 5);
}
static KCACHE__UNUSED int kcache__ix_push(kcache__ix *ix, int list, const kcache__ix_item *it) { (void)ix; (void)list; (void)it; return 0; }
static KCACHE__UNUSED kcache_status kcache__ix_write(kcache__store *st, const char *unit, const kcache__ix *ix) {
    (void)st; (void)unit; (void)ix;
    return KCACHE_EDISABLED;
}
static void kcache__ix_free(kcache__ix *ix) { memset(ix, 0, sizeof *ix); }
static int kcache__ix_find(const kcache__ix *ix, int list, kcache_hash128 d) { (void)ix; (void)list; (void)d; return -1; }
static kcache_status kcache__ix_read(kcache__store *st, const char *unit, kcache__ix *ix) {
    (void)st; (void)unit;
    memset(ix, 0, sizeof *ix);
    return KCACHE_ENOENT;
}
static void kcache__ix_log(kcache__store *st, const char *unit, int n, const int *kinds, const kcache__ix_item *items) {
    (void)st; (void)unit; (void)n; (void)kinds; (void)items;
}
static void kcache__ix_update(kcache__store *st, const kcache_key *k, const unsigned char *rec, size_t rec_len,
                              uint64_t size, int list, kcache_reason reason) {
    (void)st; (void)k; (void)rec; (void)rec_len; (void)size; (void)list; (void)reason;
}
#endif /* KCACHE_NO_EXPLAIN */

/* Before a put writes its temp file (or after the disk filled under it: disk_full): claims the
   write's in-flight slot unless it has one (*cmap: the mapping it is in), then makes room when it
   must, under the lock: the filesystem kept above its reserve, the store with what is in flight
   under its limit, both by evicting. KCACHE_ENOSPC (the claim given back) when there is none. */
static kcache_status kcache__store_room(kcache__store *st, uint64_t total, uint64_t token, unsigned char **cmap, int disk_full,
                                        kcache__store_ev *ev) {
    const kcache__table *t = kcache__tab(st);
    uint64_t need = total + KCACHE__SLACK, disk_short = kcache__shortfall(st, need);
    int64_t deadline = kcache__mono_ns() + (int64_t)st->lock_timeout_ms * 1000000;
    unsigned pause_ms = 1;
    kcache_status s;
    int over = 0, reaped = 0;
    if (disk_full && disk_short < need) disk_short = need;
    /* Other writers' temp files may fill the limit by themselves: wait (without a claim of ours,
       so that waiters never hold each other up) until this one fits, as long as for the lock. */
    while (!*cmap && t && t->map && kcache__flight_claim(t->map, token, total)) {
        if (!st->limit || kcache__flight_sum(t->map, 0) <= st->limit) { *cmap = t->map; break; }
        kcache__flight_release(t->map, token);
        if (kcache__mono_ns() > deadline) {
            kcache__ev_note(ev, "the store's limit (%llu bytes) stayed taken by other writes in flight", (unsigned long long)st->limit);
            return KCACHE_ENOSPC;
        }
        if (!reaped && kcache__store_lock(st) == KCACHE_OK) { /* once: claims of writers that died */
            if (kcache__store_begin(st, ev) == KCACHE_OK) {
                kcache__flight_reap(st);
                kcache__store_end(st);
            }
            kcache__store_unlock(st);
            reaped = 1;
            t = kcache__tab(st);
            continue;
        }
        kcache__sleep_ms(pause_ms);
        if (pause_ms < 50) pause_ms *= 2;
        t = kcache__tab(st);
    }
    if (st->limit && t && t->map) { /* in flight first: a write that ends meanwhile is then in the stored bytes read after */
        uint64_t flying = kcache__flight_sum(t->map, 0);
        kcache__atomic_fence();
        over = kcache__acct_at(t->map, 24) + flying > st->limit;
    }
    if (!disk_short && !over) return KCACHE_OK;
    s = kcache__store_lock(st);
    if (s == KCACHE_OK) {
        s = kcache__store_begin(st, ev);
        if (s == KCACHE_OK) {
            uint64_t pending, have;
            kcache__flight_reap(st);
            pending = kcache__flight_sum(st->map, 0) + (*cmap && *cmap != st->map ? total : 0);
            /* writers that claimed together all make room, for every write in flight */
            kcache__store_make_room(st, pending, ev);
            have = kcache__acct_get(st, 24);
            if (disk_short) {
                if (have < disk_short) {
                    s = KCACHE_ENOSPC;
                    kcache__ev_note(ev, "%s: the filesystem is at kcache's reserve (5 %% of it, at most 1 GiB, is left free)",
                                    strerror(ENOSPC));
                } else {
                    kcache__store_evict_to(st, (have - disk_short) / 8 * 7, ev); /* a little more: not one eviction per put */
                }
            }
            kcache__store_end(st);
        }
        kcache__store_unlock(st);
    }
    if (s == KCACHE_OK && disk_short && kcache__shortfall(st, need)) s = KCACHE_ENOSPC; /* the space did not come back */
    if (s != KCACHE_OK) {
        kcache__flight_release(*cmap, token);
        *cmap = NULL;
    }
    return s;
}

/* Writes an entry: temp file, optional fsync, then under the lock rename into place, account and
   evict. The lock is never held while payload bytes move. */
static kcache_status kcache__store_put(kcache__store *st, const kcache_key *k, const void *data, size_t size,
                                       kcache__store_ev *ev) {
    size_t rec_len = kcache__record_size(k);
    size_t hlen = kcache__entry_header_len(rec_len);
    unsigned char *hdr, *packed = NULL;
    const void *stored = data;
    size_t stored_len = size;
    char tmp[64], rel[48], shard[8];
    kcache_status s;
    uint64_t total, token;
    uint64_t *old;
    unsigned char *cmap = NULL; /* the config.file mapping this write's in-flight claim is in */
    int fd, attempt;
    if (st->readonly) return KCACHE_EROFS;
    if (kcache__store_in_fork(st)) return KCACHE_ELOCK; /* st->mutex may be held by a thread the child does not have */
    kcache__entry_name(k->digest, rel);
    if (!kcache__shard_trusted(st, rel)) {
        kcache__ev_note(ev, "%s", st->shard_why);
        return KCACHE_EUNSAFE;
    }
#ifdef KCACHE_ZSTD
    if (st->compress && (packed = kcache__zstd_pack(&st->mem, data, size, &stored_len)) != NULL) stored = packed;
#endif
    total = (uint64_t)hlen + stored_len;
    if ((st->limit && total > st->limit) || !(hdr = (unsigned char *)kcache__mem_alloc(&st->mem, hlen))) {
        kcache__mem_free(&st->mem, packed);
        return st->limit && total > st->limit ? KCACHE_ETOOBIG : KCACHE_ENOMEM;
    }
    kcache__entry_header_into(hdr, hlen, rec_len, k, stored, stored_len, packed != NULL);

    kcache__mutex_lock(&st->mutex);
    st->temp_seq++;
    token = ((uint64_t)kcache__pid() << 32) | (uint32_t)st->temp_seq;
    snprintf(tmp, sizeof tmp, "tmp/%u-%llx-%llx.tmp", (unsigned)kcache__pid(), (unsigned long long)st->temp_seq,
             (unsigned long long)(k->digest.lo ^ (uint64_t)kcache__now_ns()));
    kcache__mutex_unlock(&st->mutex);
    for (attempt = 0;; attempt++) {
        s = kcache__store_room(st, total, token, &cmap, attempt > 0, ev);
        if (s != KCACHE_OK) { kcache__mem_free(&st->mem, hdr); kcache__mem_free(&st->mem, packed); return s; }
        fd = kcache__io_openat(st->tmpfd, tmp + 4, KCACHE__WR | KCACHE__CREATE | KCACHE__EXCL | kcache__gmode(st));
        if (fd < 0) s = kcache__errno_status(errno);
        else {
            s = kcache__write_all(fd, hdr, hlen, stored, stored_len);
            if (s == KCACHE_OK && st->fsync && kcache__io_fsync(fd) != 0) s = kcache__errno_status(errno);
            if (kcache__io_close(fd) != 0 && s == KCACHE_OK) s = kcache__errno_status(errno);
            if (s != KCACHE_OK) kcache__io_unlink(st->tmpfd, tmp + 4);
        }
        if (s == KCACHE_OK) break;
        if (s != KCACHE_ENOSPC || attempt > 0) { /* a full disk gets one eviction and one more try */
            kcache__flight_release(cmap, token);
            kcache__mem_free(&st->mem, hdr);
            kcache__mem_free(&st->mem, packed);
            return s;
        }
    }
    kcache__mem_free(&st->mem, packed);

    kcache__entry_name(k->digest, rel);
    memcpy(shard, rel, 4);
    shard[4] = 0;
    s = kcache__store_lock(st);
    if (s != KCACHE_OK) { kcache__flight_release(cmap, token); kcache__io_unlink(st->tmpfd, tmp + 4); kcache__mem_free(&st->mem, hdr); return s; }
    s = kcache__store_begin(st, ev);
    if (s != KCACHE_OK) kcache__flight_release(cmap, token);
    if (s == KCACHE_OK) {
        int shardfd;
        uint64_t pending = kcache__flight_sum(st->map, token); /* the others' writes in flight */
        shardfd = kcache__shard_open(st, shard, ev ? ev->note : NULL, ev ? sizeof ev->note : 0);
        if (shardfd >= 0 && (old = kcache__slot_find(st, k->digest)) != NULL)
            kcache__store_drop_in(st, old, 0, NULL, shardfd); /* first: no rename over it (ext4 would flush) */
        if (shardfd < 0) {
            s = errno == ELOOP || errno == ENOTDIR || errno == EXDEV ? KCACHE_EUNSAFE : kcache__errno_status(errno);
            kcache__ev_note(ev, "cannot use the shard directory %s (%s)", shard, strerror(errno));
        }
        else if (kcache__io_rename(st->tmpfd, tmp + 4, shardfd, rel + 5) != 0 &&
                 (kcache__clear_name(st, shardfd, rel + 5) != 0 || kcache__io_rename(st->tmpfd, tmp + 4, shardfd, rel + 5) != 0))
            s = kcache__errno_status(errno); /* (a directory in the entry's place is cleared first) */
        else if (st->fsync)
            kcache__io_fsync(shardfd); /* the rename itself survives a power loss only once its directory is synced */
        if (shardfd >= 0) kcache__io_close(shardfd);
        if (s == KCACHE_OK) {
            kcache__store_make_room(st, total + pending, ev); /* before the insert: the new entry is no candidate */
            kcache__slot_insert(st, k->digest, total, kcache__now_ns() & ~(int64_t)KCACHE__USE_MARK, ev);
            if (kcache__acct_get(st, 32) * 4 > st->nslots * 3) kcache__acct_grow(st, ev); /* keep buckets from filling */
            kcache__ix_update(st, k, hdr + KCACHE__ENTRY_FIXED, rec_len, size, KCACHE__IX_LIVE, KCACHE_REASON_HIT);
        }
        /* The claim goes only now that the entry is accounted (or gone): a writer making room without
           the lock (kcache__store_room) sees these bytes in flight or stored, never in neither; given
           back before the insert, a claim made in between could take the store over its limit. */
        kcache__atomic_fence();
        kcache__flight_release(cmap, token);
        if (st->map != cmap) kcache__flight_release(st->map, token);
        kcache__store_end(st);
    }
    kcache__store_unlock(st);
    if (s != KCACHE_OK) kcache__io_unlink(st->tmpfd, tmp + 4);
    kcache__mem_free(&st->mem, hdr);
    return s;
}

/* Lock held: whether a stored overload (its record) depends on one of the files in the key now
   whose stamp changed under the policy. */
static int kcache__depends_on_stale(const unsigned char *rec, size_t len, const kcache_key *now, int policy) {
    kcache_key *stored = kcache__key_alloc(NULL);
    const kcache_key_field *f = kcache__key_fields(now), *g;
    uint32_t i;
    int stale = 0;
    if (!stored || kcache__record_parse(rec, len, stored) != KCACHE_OK) { kcache__key_drop(NULL, stored); return 0; }
    g = kcache__key_fields(stored);
    for (i = 0; i < now->count && !stale; i++) {
        uint32_t j;
        if (f[i].type != KCACHE_FIELD_FILE) continue;
        for (j = 0; j < stored->count && !stale; j++) /* the same file (path), whatever its field's name */
            if (g[j].type == KCACHE_FIELD_FILE && g[j].digest.lo == f[i].digest.lo && g[j].digest.hi == f[i].digest.hi &&
                kcache__stamp_stale(kcache__stamp_diff(&g[j], &f[i]), policy))
                stale = 1;
    }
    kcache__key_drop(NULL, stored);
    return stale;
}

/* Removes one entry and its accounting; the unit's index remembers why (reason, with the entry's
   record when given, else the key's), or forgets the overload (KCACHE__REASON_UNSET: the caller
   removed it). A stale dependency (KCACHE_REASON_STAMP) also purges every other overload of the
   unit that depends on the same file as it was, as numba discards a stale index. */
static kcache_status kcache__store_remove(kcache__store *st, const kcache_key *k, kcache_reason reason, const unsigned char *rec,
                                          size_t rec_len, int policy, kcache__store_ev *ev) {
    char rel[48];
    uint64_t *s;
    int had = 0;
    unsigned char *own = NULL;
    kcache_status r;
    if (st->readonly) return KCACHE_EROFS;
    r = kcache__store_lock(st);
    if (r != KCACHE_OK) return r;
    r = kcache__store_begin(st, ev);
    if (r == KCACHE_OK) {
        if ((s = kcache__slot_find(st, k->digest)) != NULL) { kcache__store_drop(st, s, 0, NULL); had = 1; }
        else {
            kcache__entry_name(k->digest, rel);
            had = kcache__unlink_entry(st, rel) == 0;
        }
        if (reason != KCACHE__REASON_UNSET && !rec) rec = own = kcache__record_new(&st->mem, k, &rec_len);
        if (reason == KCACHE_REASON_STAMP) {
            kcache__ix ix;
            uint32_t i;
            if (kcache__ix_read(st, k->unit, &ix) == KCACHE_OK) {
                for (i = 0; i < ix.n[KCACHE__IX_LIVE]; i++) {
                    kcache__ix_item it = ix.items[KCACHE__IX_LIVE][i];
                    uint64_t *slot;
                    int gone = KCACHE__IX_GONE;
                    if ((it.digest.lo == k->digest.lo && it.digest.hi == k->digest.hi) ||
                        !kcache__depends_on_stale(it.rec, it.rec_len, k, policy))
                        continue;
                    if ((slot = kcache__slot_find(st, it.digest)) != NULL) kcache__store_drop(st, slot, 0, NULL);
                    it.reason = KCACHE_REASON_STAMP;
                    it.when = kcache__now_ns();
                    kcache__ix_log(st, k->unit, 1, &gone, &it);
                }
                kcache__ix_free(&ix);
            }
        }
        if (reason == KCACHE__REASON_UNSET) kcache__ix_update(st, k, NULL, 0, 0, KCACHE__IX_FORGET, reason);
        else if (rec) kcache__ix_update(st, k, rec, rec_len, 0, KCACHE__IX_GONE, reason);
        kcache__store_end(st);
    }
    kcache__store_unlock(st);
    kcache__mem_free(&st->mem, own);
    return r != KCACHE_OK ? r : had ? KCACHE_OK : KCACHE_MISS;
}

/* Lock held by nobody: records a miss in the unit's index (KCACHE_TRACE), with the key's fields. */
static void kcache__store_trace_miss(kcache__store *st, const kcache_key *k, kcache_reason reason) {
    size_t rec_len;
    unsigned char *rec;
    if (st->readonly) return;
    rec = kcache__record_new(&st->mem, k, &rec_len);
    if (!rec) return;
    if (kcache__store_lock(st) == KCACHE_OK) {
        kcache__ix_update(st, k, rec, rec_len, 0, KCACHE__IX_MISSED, reason);
        kcache__store_unlock(st);
    }
    kcache__mem_free(&st->mem, rec);
}

/* What reading an entry found. */
typedef struct kcache__read {
    kcache__blob *blob;        /* on a hit: the payload, one reference for the caller */
    kcache_reason reason;      /* on a miss */
    kcache_status status;      /* why a read failed: ENOENT (absent), ECORRUPT, EIO... */
    unsigned char *rec;        /* with want_record, or for a stale entry: its key record (free it through mem) */
    const kcache__mem *mem;    /* what rec came from: its store's (or remote's) allocator */
    size_t rec_len;
    uint64_t *slot;            /* the entry's use-table slot, when the read found one */
    int need;                  /* the key matches but for a dependency whose content it lacks (MATCH_NEED) */
} kcache__read;

static void kcache__entry_check(kcache__blob *b, size_t have, size_t fsize, const kcache_key *k, int policy,
                                int want_record, uint64_t max_raw, kcache__read *out);

/* Reads and validates an entry without any lock: magic, version, lengths, digest, header checksum,
   the whole key record against the key, the file stamps, then the payload checksum. */
static void kcache__store_read(kcache__store *st, const kcache_key *k, int policy, int want_record, kcache__read *out) {
    char rel[48];
    kcache__finfo s;
    kcache__blob *b = NULL;
    size_t have = 0, fsize = 0;
    int fd;
    memset(out, 0, sizeof *out);
    out->reason = KCACHE_REASON_COLD;
    kcache__entry_name(k->digest, rel);
    if (!kcache__shard_trusted(st, rel)) { /* refused: a miss, nothing read */
        out->status = KCACHE_EUNSAFE;
        out->reason = KCACHE_REASON_UNWRITABLE;
        return;
    }
    /* O_NONBLOCK: a FIFO planted where an entry belongs must not block the reader */
    fd = kcache__open_in(st, rel, KCACHE__RD | KCACHE__NONBLOCK);
    if (fd < 0) {
        out->status = errno == ENOENT ? KCACHE_ENOENT : errno == ELOOP ? KCACHE_ECORRUPT : kcache__errno_status(errno);
        if (out->status == KCACHE_ECORRUPT) out->reason = KCACHE_REASON_REJECTED; /* a symlink in place of an entry */
        else if (out->status != KCACHE_ENOENT) out->reason = KCACHE_REASON_UNWRITABLE;
        return;
    }
    /* The use table knows the entry's size, so the read needs no fstat: one byte more is asked for,
       and getting exactly the size means the file ends there. Otherwise (unknown, replaced under us,
       not a regular file) fstat decides. */
    {
        uint64_t *slot = out->slot = kcache__slot_find_in(kcache__tab(st), k->digest);
        uint64_t expect = slot ? kcache__sl_get(slot, KCACHE__SL_SIZE) : 0;
        if (expect >= KCACHE__ENTRY_FIXED + 16 + 8 && expect < ((uint64_t)1 << 40) && expect < (uint64_t)((size_t)-1 / 2) &&
            (b = kcache__blob_alloc(&st->mem, (size_t)expect + 1, 0)) != NULL) {
            fsize = (size_t)expect;
            while (have <= fsize) {
                ptrdiff_t r = kcache__io_read(fd, kcache__blob_bytes(b) + have, fsize + 1 - have);
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) break;
                have += (size_t)r;
                if ((size_t)r < fsize + 1 - (have - (size_t)r)) break; /* a short read of a file is its end */
            }
            if (have != fsize) { kcache__blob_unref(b); b = NULL; have = 0; }
        }
    }
    if (!b) { /* (an entry the use table does not know: who made it is asked too) */
        memset(&s, 0, sizeof s); /* (a failed fstat leaves it as it was) */
        if (kcache__io_fstat(fd, &s) != 0 || s.kind != KCACHE__KIND_FILE || s.size < KCACHE__ENTRY_FIXED + 16 + 8 ||
            (uint64_t)s.size > (uint64_t)((size_t)-1 / 2) || !kcache__trusted(st, &s)) {
            kcache__io_close(fd);
            /* someone else's file is never read, nor removed: only a miss */
            out->status = s.kind == KCACHE__KIND_FILE && !kcache__trusted(st, &s) ? KCACHE_EUNSAFE : KCACHE_ECORRUPT;
            out->reason = KCACHE_REASON_REJECTED;
            return;
        }
        fsize = (size_t)s.size;
        b = kcache__blob_alloc(&st->mem, fsize, 0);
        if (!b) { kcache__io_close(fd); out->status = KCACHE_ENOMEM; out->reason = KCACHE_REASON_UNWRITABLE; return; }
        while (have < fsize) {
            ptrdiff_t r = kcache__io_pread(fd, kcache__blob_bytes(b) + have, fsize - have, (uint64_t)have);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            have += (size_t)r;
        }
    }
    kcache__io_close(fd);
    kcache__entry_check(b, have, fsize, k, policy, want_record, (uint64_t)1 << 40, out);
}

/* Validates an entry read whole into b (have bytes of an fsize-byte file) for the key k: magic,
   version, lengths, digest, header checksum, padding, the whole key record, the file stamps, then
   the payload checksum (not with sum_known: bytes a verified signature covers, checksum included);
   a zstd entry is then decompressed (content size at most max_raw). Takes b: on a hit out->blob
   holds the payload, else b is freed and out says why. */
static void kcache__entry_check_as(kcache__blob *b, size_t have, size_t fsize, const kcache_key *k, int policy, int want_record,
                                   uint64_t max_raw, int sum_known, kcache__read *out) {
    const unsigned char *h = kcache__blob_bytes(b);
    size_t hlen, rlen;
    uint64_t plen;
    kcache_hash128 sum;
    int m, version, zstd;
    out->status = KCACHE_ECORRUPT;
    out->reason = KCACHE_REASON_REJECTED;
    if (have != fsize || fsize < KCACHE__ENTRY_FIXED + 16 + 8 || memcmp(h, "KCENTRY", 8) != 0) goto bad;
    version = kcache__get_u16(h + 8);
    zstd = version == KCACHE__ENTRY_VERSION_ZSTD;
    if (version != KCACHE__ENTRY_VERSION && !(zstd && kcache__get_u16(h + 10) == KCACHE__ENTRY_ZSTD)) goto bad;
#ifndef KCACHE_ZSTD
    if (zstd) { out->status = KCACHE_ENOENT; out->reason = KCACHE_REASON_COLD; goto bad; } /* not ours to read, nor to judge */
#endif
    hlen = kcache__get_u32(h + 12);
    plen = kcache__get_u64(h + 16);
    rlen = kcache__get_u32(h + 64);
    if (hlen % 16 != 0 || hlen > fsize || rlen > hlen || KCACHE__ENTRY_FIXED + rlen + 8 + 16 > hlen || plen != fsize - hlen) goto bad;
    if (kcache__get_u64(h + 24) != k->digest.lo || kcache__get_u64(h + 32) != k->digest.hi) goto bad;
    if (kcache__get_u64(h + KCACHE__ENTRY_FIXED + rlen) != kcache_hash(h, KCACHE__ENTRY_FIXED + rlen).lo) goto bad;
    for (m = (int)(KCACHE__ENTRY_FIXED + rlen + 8); m < (int)hlen; m++)
        if (h[m] != 0) goto bad; /* the padding is zero on disk: anything else is damage */
    m = kcache__record_match(h + KCACHE__ENTRY_FIXED, rlen, k, policy);
    if (want_record || m == KCACHE__MATCH_STAMP) {
        out->rec = (unsigned char *)kcache__mem_alloc(b->al, rlen ? rlen : 1);
        out->mem = b->al;
        if (out->rec) { memcpy(out->rec, h + KCACHE__ENTRY_FIXED, rlen); out->rec_len = rlen; }
    }
    if (m == KCACHE__MATCH_STAMP) { out->status = KCACHE_MISS; out->reason = KCACHE_REASON_STAMP; goto bad; }
    if (m == KCACHE__MATCH_NEED) { out->status = KCACHE_MISS; out->need = 1; goto bad; }
    if (m != KCACHE__MATCH) goto bad; /* same digest, other key: never hand out its payload */
    if (!sum_known) {
        sum = kcache_hash(h + hlen, (size_t)plen);
        if (sum.lo != kcache__get_u64(h + 40) || sum.hi != kcache__get_u64(h + 48)) goto bad;
    }
#ifdef KCACHE_ZSTD
    if (zstd) { /* the frame is what its writer made (checksummed): one frame, its size said and kept */
        unsigned long long raw = ZSTD_getFrameContentSize(h + hlen, (size_t)plen);
        kcache__blob *u;
        size_t got;
        if (raw == ZSTD_CONTENTSIZE_UNKNOWN || raw == ZSTD_CONTENTSIZE_ERROR || raw > max_raw ||
            raw > (unsigned long long)((size_t)-1 / 2) || ZSTD_findFrameCompressedSize(h + hlen, (size_t)plen) != plen)
            goto bad;
        /* the header comes along, as in a plain entry's blob: the memory node keeps its record */
        if (!(u = kcache__blob_alloc(b->al, hlen + (size_t)raw, hlen))) { out->status = KCACHE_ENOMEM; out->reason = KCACHE_REASON_UNWRITABLE; goto bad; }
        memcpy(kcache__blob_bytes(u), h, hlen);
        got = ZSTD_decompress(kcache__blob_bytes(u) + hlen, (size_t)raw, h + hlen, (size_t)plen);
        if (ZSTD_isError(got) || got != (size_t)raw) { kcache__blob_unref(u); goto bad; }
        kcache__blob_set_data(u, hlen, (size_t)raw);
        kcache__blob_unref(b);
        b = u;
    } else
#endif
        kcache__blob_set_data(b, hlen, (size_t)plen);
    (void)max_raw;
    out->blob = b;
    out->status = KCACHE_OK;
    out->reason = KCACHE_REASON_HIT;
    return;
bad:
    kcache__blob_unref(b);
}
static void kcache__entry_check(kcache__blob *b, size_t have, size_t fsize, const kcache_key *k, int policy, int want_record,
                                uint64_t max_raw, kcache__read *out) {
    kcache__entry_check_as(b, have, fsize, k, policy, want_record, max_raw, 0, out);
}

/* Whether a name in tmp/ is one kcache's writers make: <pid>-[ix-|grow-|cf-|stats-]<hex>[-<hex>].tmp,
   or <pid>-junk-<hex> (a name kcache cleared and moved aside). *pid: the writer's. */
static int kcache__temp_name(const char *name, unsigned long *pid) {
    static const char *const kinds[] = {"ix-", "grow-", "cf-", "stats-"};
    const char *p = name;
    unsigned long v = 0;
    int digits = 0, groups = 0, junk, i;
    while (*p >= '0' && *p <= '9' && digits < 10) {
        v = v * 10 + (unsigned long)(*p++ - '0');
        digits++;
    }
    if (!digits || *p++ != '-') return 0;
    *pid = v;
    junk = strncmp(p, "junk-", 5) == 0;
    if (junk) p += 5;
    for (i = 0; i < 4 && !junk; i++)
        if (strncmp(p, kinds[i], strlen(kinds[i])) == 0) { p += strlen(kinds[i]); break; }
    for (;;) {
        const char *start = p;
        while (kcache__hexval((unsigned char)*p) >= 0) p++;
        if (p == start || p - start > 16) return 0;
        groups++;
        if (*p != '-' || groups == (junk ? 1 : 2)) break;
        p++;
    }
    return junk ? *p == 0 : strcmp(p, ".tmp") == 0;
}

/* Removes the temp files of writers that are gone (or a day old: a writer on another host). Only
   kcache's own: regular files with the names its writers make, made by someone the store trusts;
   nothing else in tmp/ is touched (a directory kcache moved aside stays for the user). */
static void kcache__store_sweep_temps(kcache__store *st) {
    kcache__dir *dp = kcache__io_dir_open(&st->mem, st->dirfd, "tmp");
    const char *name;
    int fd;
    int64_t now = kcache__now_ns();
    if (!dp) return;
    fd = kcache__os_dir_fd(dp);
    while ((name = kcache__io_dir_next(dp)) != NULL) {
        kcache__finfo s;
        unsigned long pid;
        if (!kcache__temp_name(name, &pid) || kcache__io_statat(fd, name, &s) != 0) continue;
        if (s.kind != KCACHE__KIND_FILE || !kcache__trusted(st, &s)) continue;
        if ((pid > 0 && kcache__os_pid_gone((uint32_t)pid)) || s.mtime_ns < now - (int64_t)86400 * 1000000000)
            kcache__io_unlink(fd, name);
    }
    kcache__io_dir_close(dp);
}

static void kcache__store_close(kcache__store *st) {
    kcache__table *t;
    if (!st) return;
    kcache__acct_unmap(st);
    while ((t = st->pub) != NULL) {
        st->pub = t->older;
        if (t->map) kcache__io_unmap(t->map, t->len); /* each mapping was published once */
        kcache__mem_free(&st->mem, t);
    }
    kcache__lockfile_release(st->lf);
    if (st->ix_last.fd >= 0) kcache__io_close(st->ix_last.fd);
    if (st->dirfd >= 0) kcache__io_close(st->dirfd);
    if (st->tmpfd >= 0) kcache__io_close(st->tmpfd);
    kcache__mutex_destroy(&st->mutex);
    kcache__mutex_destroy(&st->shard_mutex);
    kcache__mem_free(&st->mem, st->dir);
    kcache__mem_free(&st->mem, st);
}

/* ---- opening the store: the path walked one directory at a time, every level checked ----------
   The threat is another local user: a store must be its owner's alone, or it is not used. The
   path is resolved from "/" with openat(O_NOFOLLOW) relative to the descriptor of the directory
   before, and each directory is checked by fstat on the descriptor that is then used, so nothing
   can be swapped between a check and a use. A symlink on the way is followed by hand when root or
   the caller owns it; where it leads is checked like the rest. Everything inside is reached from
   the store's descriptor with *at calls (kcache__open_in). */

/* Whether a directory of the store (the store itself, e, i, tmp, a shard) may be used, or what is
   wrong with it: the caller's (root's for a read-only store; any member's in a shared store),
   writable by no one else; a shared store's are its group's, setgid. */
/* "; to fix: COMMAND" for a refused directory dir/name (name may be NULL) whose problem is bad (a
   kcache__level_problem / kcache__ancestor_problem text, or an errno's), the path quoted for a
   shell; level: a directory of the store itself (kcache may own it) rather than one on the way.
   Where no command of the user's can fix it (another user's directory), it says what to do. */
static const char *kcache__refusal_fix(char *out, size_t cap, const char *dir, const char *name, const char *bad, int level,
                                       const kcache__store *st) {
    char path[500], q[560];
    snprintf(path, sizeof path, "%s%s%s", dir && dir[0] ? dir : (name ? "" : "/"), name ? "/" : "", name ? name : "");
    kcache__shell_quote(q, sizeof q, path);
    if (strstr(bad, "another user") || strstr(bad, "root directory"))
        snprintf(out, cap, "; to fix: set KCACHE_DIR to a directory of your own");
    else if (strstr(bad, "not a directory") || strstr(bad, "ot a directory") || strstr(bad, "symlink") || strstr(bad, "symbolic") ||
             strstr(bad, "regular file") || strstr(bad, "s a directory"))
        snprintf(out, cap, "; to fix: move %s out of the way, or set KCACHE_DIR to another directory", q);
    else if (strstr(bad, "o such file"))
        snprintf(out, cap, "; to fix: mkdir -p -m 700 %s", q);
    else if (strstr(bad, "shared group"))
        snprintf(out, cap, "; to fix: chgrp \"$KCACHE_SHARED_GROUP\" %s", q);
    else if (strstr(bad, "setgid"))
        snprintf(out, cap, "; to fix: chmod g+s %s", q);
    else if (st && st->shared && strstr(bad, "writable by others"))
        snprintf(out, cap, "; to fix: chmod o-w %s", q);
    else if (level && (strstr(bad, "writable by") || strstr(bad, "ermission")))
        snprintf(out, cap, "; to fix: chmod 700 %s", q);
    else if (strstr(bad, "writable by others"))
        snprintf(out, cap, "; to fix (as its owner): chmod o-w %s, or chmod +t %s", q, q);
    else if (strstr(bad, "writable by its group"))
        snprintf(out, cap, "; to fix (as its owner): chmod g-w %s, or chmod +t %s", q, q);
    else if (strstr(bad, "ermission"))
        snprintf(out, cap, "; to fix (as its owner): chmod u+rx %s, or set KCACHE_DIR to another directory", q);
    else if (cap)
        out[0] = 0;
    return out;
}

static const char *kcache__level_problem(const kcache__store *st, const kcache__finfo *s) {
    if (s->kind != KCACHE__KIND_DIR) return "not a directory";
    if (st->shared) {
        if (s->gid != st->gid) return "not of the shared group (KCACHE_SHARED_GROUP)";
        if (s->perm & 002) return "writable by others";
        if (!(s->perm & 02000)) return "not setgid (new files would not get the shared group)";
        return NULL;
    }
    if (s->uid != st->uid && !(st->readonly && s->uid == 0)) return "owned by another user";
    if (s->perm & 022)
        return (s->perm & 002) ? "writable by group or others" : "writable by group or others (KCACHE_SHARED_GROUP shares a store with a group)";
    return NULL;
}

#if !defined(_WIN32)
#include <grp.h>
#include <pwd.h>

/* Whether this process is a member of group gid. */
static int kcache__in_group(const kcache__mem *m, uint32_t gid) {
    gid_t *g;
    int n, i, in = (uint32_t)getegid() == gid;
    if (in || (n = getgroups(0, NULL)) <= 0) return in;
    if ((g = (gid_t *)kcache__mem_alloc(m, sizeof *g * (size_t)n)) == NULL) return 0;
    n = getgroups(n, g);
    for (i = 0; i < n && !in; i++) in = (uint32_t)g[i] == gid;
    kcache__mem_free(m, g);
    return in;
}
/* A user private group: named as the caller, its primary group, no other member. Red Hat's umask
   002 makes such directories group-writable, and that gives no one else a way in. */
static int kcache__group_private(const kcache__mem *mem, uint32_t gid) {
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    size_t half = 8192;
    char *buf = (char *)kcache__mem_alloc(mem, 2 * half);
    int ok = 0;
    if (buf && getpwuid_r(geteuid(), &pw, buf, half, &pwp) == 0 && pwp && (uint32_t)pw.pw_gid == gid &&
        getgrgid_r((gid_t)gid, &gr, buf + half, half, &grp) == 0 && grp && strcmp(gr.gr_name, pw.pw_name) == 0) {
        char **m;
        ok = 1;
        for (m = gr.gr_mem; m && *m; m++) ok &= strcmp(*m, pw.pw_name) == 0;
    }
    kcache__mem_free(mem, buf);
    return ok;
}
/* KCACHE_SHARED_GROUP: a group's name, or its number (1 to 9 digits). 0 when there is no such group. */
static int kcache__group_id(const kcache__mem *m, const char *name, uint32_t *gid) {
    struct group gr, *grp = NULL;
    char *buf;
    size_t digits = strspn(name, "0123456789");
    int ok;
    if (digits && digits <= 9 && name[digits] == 0) { *gid = (uint32_t)strtoul(name, NULL, 10); return 1; }
    if ((buf = (char *)kcache__mem_alloc(m, 16384)) == NULL) return 0;
    ok = getgrnam_r(name, &gr, buf, 16384, &grp) == 0 && grp;
    if (ok) *gid = (uint32_t)gr.gr_gid;
    kcache__mem_free(m, buf);
    return ok;
}

/* Whether a directory on the way to the store (not in it) lets no one else change where the path
   leads: root's or the caller's (a member's of a shared store's group), and writable by no one
   else unless sticky (as /tmp: there others cannot rename or remove what is not theirs). */
static const char *kcache__ancestor_problem(const kcache__store *st, const kcache__finfo *s) {
    int sticky = (s->perm & 01000) != 0, ours = st->shared && s->gid == st->gid;
    if (s->uid != st->uid && s->uid != 0 && !ours) return "owned by another user";
    if ((s->perm & 002) && !sticky) return "writable by others and not sticky";
    if ((s->perm & 020) && !sticky && !ours && !kcache__group_private(&st->mem, s->gid)) return "writable by its group and not sticky";
    return NULL;
}

#define KCACHE__MAX_LINKS 40 /* symlinks followed on the way, as the kernel's own limit */

/* Resolves the store's path (see above), creating missing directories (0700; the group's 02770 in
   a shared store) when create is set, except those a symlink names (as mkdir -p: a dangling link
   is not made real). Returns the store directory's descriptor and its finfo; -1 with *why naming
   the component and what is wrong (errno: the failure, EPERM for a refusal). A store of root's
   that the caller (not root) reaches is marked read-only. */
static int kcache__resolve_store_dir(kcache__store *st, const char *path, int create, kcache__finfo *top, char *why, size_t cap) {
    size_t rem_cap = 3 * 4096 + 8, pos = 0, link_end = 0, curlen = 0;
    char *rem = (char *)kcache__mem_alloc(&st->mem, rem_cap), *cur = (char *)kcache__mem_alloc(&st->mem, 4096), *target = (char *)kcache__mem_alloc(&st->mem, 4096);
    int fd = -1, links = 0, tries = 0, e = 0;
    kcache__finfo s;
    const char *bad;
    char fix[1200]; /* "; to fix: ..." of a refusal */
    if (!rem || !cur || !target) { e = ENOMEM; kcache__say(why, cap, "out of memory"); goto fail; }
    cur[0] = 0;
    rem[0] = 0;
    if (path[0] != '/' && (!getcwd(rem, 4096) || strlen(rem) + 1 >= 4096)) {
        e = errno ? errno : ENAMETOOLONG;
        kcache__say(why, cap, "cannot resolve %s: the working directory: %s", path, strerror(e));
        goto fail;
    }
    if (strlen(rem) + strlen(path) + 2 >= rem_cap) { e = ENAMETOOLONG; kcache__say(why, cap, "%s: %s", path, strerror(e)); goto fail; }
    strcat(rem, "/");
    strcat(rem, path);
    for (;;) {
        size_t len, next;
        int is_last, how, nfd;
        char comp[256];
        if (fd < 0) { /* at the root: the path's start, or an absolute symlink's */
            fd = kcache__io_open("/", KCACHE__SEARCH | KCACHE__DIRECTORY);
            if (fd < 0 || kcache__io_fstat(fd, &s) != 0) { e = errno; kcache__say(why, cap, "cannot open /: %s", strerror(e)); goto fail; }
            if ((bad = kcache__ancestor_problem(st, &s)) != NULL) {
                e = EPERM;
                kcache__say(why, cap, "/ (on the way to %s) is %s; refusing the store%s", path, bad, kcache__refusal_fix(fix, sizeof fix, "/", NULL, bad, 0, st));
                goto fail;
            }
            curlen = 0;
            cur[0] = 0;
        }
        while (rem[pos] == '/') pos++;
        if (!rem[pos]) break;
        len = strcspn(rem + pos, "/");
        next = pos + len;
        while (rem[next] == '/') next++;
        is_last = rem[next] == 0;
        if (len >= sizeof comp) { e = ENAMETOOLONG; kcache__say(why, cap, "%s: %s", path, strerror(e)); goto fail; }
        memcpy(comp, rem + pos, len);
        comp[len] = 0;
        how = (is_last ? KCACHE__RD : KCACHE__SEARCH) | KCACHE__DIRECTORY; /* the store itself is listed */
        nfd = kcache__io_openat(fd, comp, how);
        if (nfd < 0) {
            ptrdiff_t n;
            kcache__finfo l;
            memset(&l, 0, sizeof l); /* (read below only when statat filled it; gcc -O3 cannot tell) */
            e = errno;
            if (e == ENOENT && create && pos >= link_end && strcmp(comp, "..") != 0 && tries++ < 3) {
                if (kcache__io_mkdir(fd, comp) != 0 && errno != EEXIST) {
                    e = errno;
                    kcache__say(why, cap, "cannot create %s/%s: %s", cur, comp, strerror(e));
                    goto fail;
                }
                if ((nfd = kcache__io_openat(fd, comp, KCACHE__RD | KCACHE__DIRECTORY)) >= 0) { /* its group, before use */
                    if (kcache__io_fstat(nfd, &s) == 0 && s.uid == st->uid) kcache__share_dir(st, nfd);
                    kcache__io_close(nfd);
                }
                continue;
            }
            if (e != ELOOP && e != ENOTDIR) {
                kcache__say(why, cap, "cannot open %s/%s: %s%s", cur, comp, strerror(e), kcache__refusal_fix(fix, sizeof fix, cur, comp, strerror(e), 0, st));
                goto fail;
            }
            /* a symlink (or not a directory at all): the link's own owner, then its target */
            memset(&l, 0, sizeof l); /* (a failed stat leaves it as it was) */
            if (kcache__io_statat(fd, comp, &l) != 0 || (n = kcache__io_readlink(fd, comp, target, 4096)) < 0) {
                e = errno;
                if ((e == ENOENT || e == EINVAL) && tries++ < 8) continue; /* changed meanwhile: look again */
                if (e == EINVAL && !kcache__trusted(st, &l)) { /* still someone else's, whatever it is: refused */
                    e = EPERM;
                    kcache__say(why, cap, "%s/%s (on the way to %s) is owned by another user%s; refusing the store%s", cur, comp, path,
                                l.kind == KCACHE__KIND_DIR ? "" : " and not a directory",
                                kcache__refusal_fix(fix, sizeof fix, cur, comp, "another user", 0, st));
                    goto fail;
                }
                if (e == EINVAL) e = ENOTDIR; /* not a symlink: a FIFO, a file... */
                kcache__say(why, cap, "cannot open %s/%s: %s%s", cur, comp, strerror(e), kcache__refusal_fix(fix, sizeof fix, cur, comp, strerror(e), 0, st));
                goto fail;
            }
            if (l.uid != st->uid && l.uid != 0) {
                e = EPERM;
                kcache__say(why, cap, "%s/%s (on the way to %s) is a symlink owned by another user; refusing the store%s", cur, comp, path,
                            kcache__refusal_fix(fix, sizeof fix, cur, comp, "another user", 0, st));
                goto fail;
            }
            if (++links > KCACHE__MAX_LINKS || n == 0 || (size_t)n >= 4096) {
                e = links > KCACHE__MAX_LINKS ? ELOOP : ENOENT;
                kcache__say(why, cap, "cannot open %s/%s: %s%s", cur, comp, strerror(e), kcache__refusal_fix(fix, sizeof fix, cur, comp, strerror(e), 0, st));
                goto fail;
            }
            /* splice: the target's components come next (none of them created), then the rest */
            {
                size_t rest = strlen(rem + pos + len), keep = link_end > pos + len ? link_end - (pos + len) : 0;
                if ((size_t)n + 1 + rest + 1 > rem_cap) { e = ENAMETOOLONG; kcache__say(why, cap, "%s: %s", path, strerror(e)); goto fail; }
                memmove(rem + n + 1, rem + pos + len, rest + 1);
                memcpy(rem, target, (size_t)n);
                rem[n] = '/';
                pos = 0;
                link_end = (size_t)n + 1 + keep;
            }
            if (target[0] == '/') { kcache__io_close(fd); fd = -1; }
            tries = 0;
            continue;
        }
        tries = 0;
        if (kcache__io_fstat(nfd, &s) != 0) {
            e = errno;
            kcache__io_close(nfd);
            kcache__say(why, cap, "cannot open %s/%s: %s%s", cur, comp, strerror(e), kcache__refusal_fix(fix, sizeof fix, cur, comp, strerror(e), 0, st));
            goto fail;
        }
        if (is_last && !st->shared && s.uid == 0 && st->uid != 0) st->readonly = 1; /* a site-wide store: read only */
        if ((bad = is_last ? kcache__level_problem(st, &s) : kcache__ancestor_problem(st, &s)) != NULL) {
            e = EPERM;
            kcache__io_close(nfd);
            if (is_last) kcache__say(why, cap, "%s/%s is %s; refusing the store%s", cur, comp, bad, kcache__refusal_fix(fix, sizeof fix, cur, comp, bad, 1, st));
            else kcache__say(why, cap, "%s/%s (on the way to %s) is %s; refusing the store%s", cur, comp, path, bad,
                             kcache__refusal_fix(fix, sizeof fix, cur, comp, bad, 0, st));
            goto fail;
        }
        kcache__io_close(fd);
        fd = nfd;
        if (strcmp(comp, "..") == 0) {
            while (curlen > 0 && cur[curlen - 1] != '/') curlen--;
            if (curlen > 0) curlen--;
        } else if (strcmp(comp, ".") != 0 && curlen + len + 2 < 4096) {
            cur[curlen++] = '/';
            memcpy(cur + curlen, comp, len);
            curlen += len;
        }
        cur[curlen] = 0;
        pos += len;
        if (is_last) { *top = s; break; }
    }
    if (curlen == 0) { /* "/" itself: no store there */
        e = EPERM;
        kcache__say(why, cap, "%s is the root directory; refusing the store%s", path, kcache__refusal_fix(fix, sizeof fix, path, NULL, "root directory", 0, st));
        goto fail;
    }
    kcache__mem_free(&st->mem, rem);
    kcache__mem_free(&st->mem, cur);
    kcache__mem_free(&st->mem, target);
    return fd;
fail:
    if (fd >= 0) kcache__io_close(fd);
    kcache__mem_free(&st->mem, rem);
    kcache__mem_free(&st->mem, cur);
    kcache__mem_free(&st->mem, target);
    errno = e ? e : EIO;
    return -1;
}
#else
/* Win32: no owners or mode bits kcache can read (the directory's ACL, inherited from the user's
   %LocalAppData%, protects it); the path is created and opened, links inside refused as before. */
static int kcache__resolve_store_dir(kcache__store *st, const char *path, int create, kcache__finfo *top, char *why, size_t cap) {
    size_t n = strlen(path), i;
    char *buf = create && n > 0 && n < 4096 ? (char *)kcache__mem_alloc(&st->mem, n + 1) : NULL; /* (not on the stack: small thread stacks) */
    int fd;
    (void)st;
    if (buf) {
        memcpy(buf, path, n + 1);
        for (i = 1; i <= n; i++)
            if (buf[i] == '/' || buf[i] == '\\' || buf[i] == 0) {
                char c = buf[i];
                buf[i] = 0;
                if (kcache__io_mkdir_path(buf) != 0 && errno != EEXIST && errno != EACCES) {
                    kcache__say(why, cap, "cannot create %s: %s", buf, strerror(errno));
                    kcache__mem_free(&st->mem, buf);
                    return -1;
                }
                buf[i] = c;
            }
        kcache__mem_free(&st->mem, buf);
    }
    fd = kcache__io_open(path, KCACHE__RD | KCACHE__DIRECTORY);
    if (fd < 0 || kcache__io_fstat(fd, top) != 0) {
        int e = errno;
        kcache__say(why, cap, "cannot open %s: %s", path, strerror(e));
        if (fd >= 0) kcache__io_close(fd);
        errno = e;
        return -1;
    }
    return fd;
}
static int kcache__in_group(const kcache__mem *m, uint32_t gid) { (void)m; (void)gid; return 0; }
static int kcache__group_id(const kcache__mem *m, const char *name, uint32_t *gid) { (void)m; (void)name; (void)gid; return 0; }
#endif

/* The name of something in directory fd that the store does not trust (not the caller's, root's
   or a shared store's member's), or NULL when there is none; "?" when fd cannot be listed. */
static const char *kcache__foreign_in(kcache__store *st, int fd, char *name, size_t cap) {
    kcache__dir *dp = kcache__io_dir_open(&st->mem, fd, ".");
    const char *n, *found = NULL;
    if (!dp) return "?";
    while (!found && (n = kcache__io_dir_next(dp)) != NULL) {
        kcache__finfo s;
        if (kcache__io_statat(kcache__os_dir_fd(dp), n, &s) == 0 && !kcache__trusted(st, &s)) {
            snprintf(name, cap, "%s", n);
            found = name;
        }
    }
    kcache__io_dir_close(dp);
    return found;
}

/* Opens a directory of the store (name in parent: tmp, e, i, a shard) and checks it as a store
   level (kcache__level_problem). Missing: created when create is set, else -1 with errno ENOENT
   and no complaint. One of ours whose mode alone is wrong is repaired, unless someone else put
   something in it meanwhile. -1 with *why when refused. */
static int kcache__level_open(kcache__store *st, int parent, const char *shown, const char *name, int create, char *why, size_t cap) {
    kcache__finfo s;
    const char *bad;
    char other[256];
    char fix[1200];
    int fd = kcache__io_openat(parent, name, KCACHE__RD | KCACHE__DIRECTORY), made = 0;
    if (fd < 0 && errno == ENOENT && create) {
        if (kcache__io_mkdir(parent, name) == 0) made = 1;
        else if (errno != EEXIST) { kcache__say(why, cap, "cannot create %s/%s: %s", shown, name, strerror(errno)); return -1; }
        fd = kcache__io_openat(parent, name, KCACHE__RD | KCACHE__DIRECTORY);
    }
    if (fd < 0) {
        int e = errno;
        if (create || (e != ENOENT && e != ENOTDIR && e != ELOOP)) /* (else the caller decides) */
            kcache__say(why, cap, "%s/%s: %s; refusing the store%s", shown, name,
                        e == ENOTDIR || e == ELOOP ? "not a directory (or a symlink)" : strerror(e),
                        kcache__refusal_fix(fix, sizeof fix, shown, name, e == ENOTDIR || e == ELOOP ? "not a directory" : strerror(e), 1, st));
        errno = e;
        return -1;
    }
    if (kcache__io_fstat(fd, &s) != 0) {
        kcache__say(why, cap, "cannot open %s/%s: %s", shown, name, strerror(errno));
        kcache__io_close(fd);
        return -1;
    }
    if (made && st->shared) {
        kcache__share_dir(st, fd);
        if (kcache__io_fstat(fd, &s) != 0) s.perm = 0;
    }
    bad = kcache__level_problem(st, &s);
    if (bad && !st->readonly && s.uid == st->uid && s.kind == KCACHE__KIND_DIR && (!st->shared || s.gid == st->gid)) {
        /* ours, only the mode wrong: closed to others first, then nothing of theirs may be in it.
           When something is, the level gets its loose mode back: it stays refused at every open
           (a mode kcache had tightened would pass the next open with her file inside) until its
           owner removes what is not theirs; kcache never deletes another user's file. */
        const char *foreign;
        unsigned was = s.perm & 07777;
        if (kcache__io_chmod(fd, st->shared ? 02770 : 0700) == 0 && kcache__io_fstat(fd, &s) == 0 &&
            !kcache__level_problem(st, &s)) {
            if ((foreign = kcache__foreign_in(st, fd, other, sizeof other)) == NULL) return fd;
            char in[512];
            kcache__io_chmod(fd, was); /* as it was: what is not yours stays where the owner can see it */
            snprintf(in, sizeof in, "%s/%s/%s", shown, name, foreign);
            kcache__say(why, cap, "%s/%s is %s and holds %s, which is not yours; refusing the store until what is not yours is "
                        "removed from it; to fix (as root or its owner): rm -r %s",
                        shown, name, bad, foreign, kcache__shell_quote(fix, sizeof fix, in));
            kcache__io_close(fd);
            errno = EPERM;
            return -1;
        }
    }
    if (bad) {
        kcache__say(why, cap, "%s/%s is %s; refusing the store%s", shown, name, bad, kcache__refusal_fix(fix, sizeof fix, shown, name, bad, 1, st));
        kcache__io_close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* e/ or i/ checked as a level (its shards are checked when first used: kcache__shard_trusted).
   0, or -1 refused. */
static int kcache__levels_check(kcache__store *st, const char *name, int create, char *why, size_t cap) {
    char fix[1200];
    int fd = kcache__level_open(st, st->dirfd, st->dir, name, create, why, cap);
    /* i/ may be missing, or something else kcache clears when it next writes an index there */
    if (fd < 0 && !create && (errno == ENOENT || (name[0] == 'i' && (errno == ENOTDIR || errno == ELOOP)))) return 0;
    if (fd < 0 && !create && (errno == ENOTDIR || errno == ELOOP))
        kcache__say(why, cap, "%s/%s is not a directory (or is a symlink); refusing the store%s", st->dir, name,
                    kcache__refusal_fix(fix, sizeof fix, st->dir, name, "not a directory", 1, st));
    if (fd < 0) return -1;
    kcache__io_close(fd);
    return 0;
}

static int kcache__shard_check(kcache__store *st, const char *rel, int which, int b) {
    uint64_t bit = (uint64_t)1 << (b & 63);
    kcache__finfo s;
    char shard[5], top[2], *shown, *why;
    int ok = 1, tfd, fd;
    if (kcache__atomic_load_u64_acq(&st->shard_bad[which][b >> 6]) & bit) return 0; /* (shard_why is set) */
    memcpy(shard, rel, 4);
    shard[4] = 0;
    /* none yet (kcache makes it 0700), or not a directory (cleared, never followed, where used) */
    if (kcache__io_statat(st->dirfd, shard, &s) != 0 || s.kind != KCACHE__KIND_DIR) return 1;
    if (kcache__level_problem(st, &s) == NULL) {
        kcache__atomic_or_u64(&st->shard_ok[which][b >> 6], bit);
        return 1;
    }
    /* loose: repaired when it is ours and nothing of anyone else's is in it, else refused */
    if ((shown = (char *)kcache__mem_alloc(&st->mem, 4200 + sizeof st->shard_why)) == NULL) return 0; /* (not on the stack: small thread stacks) */
    why = shown + 4200;
    kcache__mutex_lock(&st->shard_mutex);
    top[0] = rel[0];
    top[1] = 0;
    snprintf(shown, 4200, "%s/%s", st->dir, top);
    tfd = kcache__open_in(st, top, KCACHE__RD | KCACHE__DIRECTORY);
    why[0] = 0;
    fd = tfd >= 0 && !st->readonly ? kcache__level_open(st, tfd, shown, shard + 2, 0, why, sizeof st->shard_why) : -1;
    if (fd >= 0) {
        kcache__io_close(fd);
        kcache__atomic_or_u64(&st->shard_ok[which][b >> 6], bit);
    } else {
        if (!why[0]) kcache__say(why, sizeof st->shard_why, "%s/%s is %s; not used", st->dir, shard, kcache__level_problem(st, &s));
        if (!st->shard_why[0]) memcpy(st->shard_why, why, sizeof st->shard_why); /* the first one: readers see it once its bit is set */
        kcache__atomic_or_u64(&st->shard_bad[which][b >> 6], bit);
        ok = 0;
    }
    if (tfd >= 0) kcache__io_close(tfd);
    kcache__mutex_unlock(&st->shard_mutex);
    kcache__mem_free(&st->mem, shown);
    return ok;
}

/* Whether the directory is a kcache store that kcache may write in: empty, holding only kcache's
   names, or with a config.file that is kcache's (its magic). Anything else is someone's directory:
   refused, never "repaired". */
static int kcache__store_proven(kcache__store *st, char *why, size_t cap) {
    static const char *const ours[] = {"config.file", "lock", "stats", "e", "i", "tmp"};
    kcache__dir *dp = kcache__io_dir_open(&st->mem, st->dirfd, ".");
    const char *n;
    char other[256];
    unsigned char magic[8];
    int fd, proven = 0;
    size_t i;
    other[0] = 0;
    if (!dp) { kcache__say(why, cap, "cannot list %s: %s", st->dir, strerror(errno)); return 0; }
    while (!other[0] && (n = kcache__io_dir_next(dp)) != NULL) {
        for (i = 0; i < sizeof ours / sizeof ours[0] && strcmp(n, ours[i]) != 0; i++) {
        }
        if (i == sizeof ours / sizeof ours[0]) snprintf(other, sizeof other, "%s", n);
    }
    kcache__io_dir_close(dp);
    if (!other[0]) return 1;
    fd = kcache__open_in(st, "config.file", KCACHE__RD | KCACHE__NONBLOCK);
    if (fd >= 0) {
        kcache__finfo s;
        proven = kcache__io_fstat(fd, &s) == 0 && s.kind == KCACHE__KIND_FILE && kcache__trusted(st, &s) &&
                 kcache__io_pread(fd, magic, 8, 0) == 8 && memcmp(magic, "KCACHECF", 8) == 0;
        kcache__io_close(fd);
    }
    if (!proven) kcache__say(why, cap, "%s is not a kcache store (it holds %s and no config.file of kcache's); refusing it; to fix: set KCACHE_DIR to a new or empty directory",
                             st->dir, other);
    return proven;
}

/* The lock file, 0600 (0660 shared) whatever the umask: a file others could open would let them
   take a lock and stall every writer. EACCES, EROFS, EPERM: the store is read-only for us. */
static int kcache__lock_open(kcache__store *st, char *why, size_t cap) {
    kcache__finfo s;
    unsigned want = kcache__file_mode(st);
    char fix[1200];
    int fd = kcache__open_in(st, "lock", KCACHE__RW | KCACHE__CREATE | KCACHE__NONBLOCK | kcache__gmode(st));
    if (fd < 0) return -1;
    memset(&s, 0, sizeof s); /* (a failed fstat leaves it as it was: read below for the message) */
    if (kcache__io_fstat(fd, &s) != 0 || s.kind != KCACHE__KIND_FILE || !kcache__trusted(st, &s)) {
        kcache__say(why, cap, "cannot use the lock file in %s: %s%s", st->dir,
                    s.kind != KCACHE__KIND_FILE ? "not a regular file" : "not made by you",
                    kcache__refusal_fix(fix, sizeof fix, st->dir, "lock", s.kind != KCACHE__KIND_FILE ? "not a regular file" : "another user", 1, st));
        kcache__io_close(fd);
        errno = EPERM;
        return -1;
    }
    if ((s.perm & 07777) != want && (s.uid != st->uid || kcache__io_chmod(fd, want) != 0)) {
        char lockpath[1100];
        snprintf(lockpath, sizeof lockpath, "%s/lock", st->dir);
        kcache__say(why, cap, "the lock file %s is mode %o and cannot be made %o; refusing the store; to fix (as its owner): chmod %o %s",
                    lockpath, s.perm & 07777, want, want, kcache__shell_quote(fix, sizeof fix, lockpath));
        kcache__io_close(fd);
        errno = EPERM;
        return -1;
    }
    if (st->shared && s.gid != st->gid) kcache__io_chgrp(fd, st->gid);
    return fd;
}

/* A store not yet opened: nothing but its settings (NULL: out of memory). */
static kcache__store *kcache__store_new(const char *dir, const kcache_config *cfg) {
    kcache__mem al;
    kcache__store *st;
    al.alloc = cfg->alloc_fn;
    al.free = cfg->free_fn;
    al.user = cfg->alloc_user;
    st = (kcache__store *)kcache__mem_alloc(&al, sizeof *st);
    if (!st) return NULL;
    memset(st, 0, sizeof *st);
    st->mem = al;
    st->dirfd = st->tmpfd = st->cffd = st->ix_last.fd = -1;
    kcache__mutex_init(&st->mutex);
    kcache__mutex_init(&st->shard_mutex);
    st->dir = (char *)kcache__mem_alloc(&st->mem, strlen(dir) + 1);
    if (!st->dir) { kcache__store_close(st); return NULL; }
    strcpy(st->dir, dir);
    st->limit = cfg->max_size;
    st->fsync = cfg->fsync;
    st->debug = cfg->debug;
    st->compress = cfg->compress;
    st->lock_timeout_ms = cfg->lock_timeout_ms;
    st->pid = kcache__pid();
    st->uid = kcache__os_euid();
    return st;
}

/* Opens (creating when needed) the store in dir. On failure *why says what was wrong; a store that
   can only be read (a read-only filesystem, a site-wide store of root's, a lock file we may not
   open) is opened read-only, and *why says so. */
static kcache_status kcache__store_open(kcache__store **out, const char *dir, const kcache_config *cfg, char *why, size_t why_cap) {
    kcache__store *st;
    kcache__finfo s;
    int valid = 0;
    kcache_status r;
    *out = NULL;
    memset(&s, 0, sizeof s);
    if (!(st = kcache__store_new(dir, cfg))) return KCACHE_ENOMEM;
    if (cfg->shared_group && cfg->shared_group[0]) {
        if (!kcache__group_id(&st->mem, cfg->shared_group, &st->gid)) {
            kcache__say(why, why_cap, "KCACHE_SHARED_GROUP=%s: no such group; refusing the store; to fix: name an existing group, or unset KCACHE_SHARED_GROUP", cfg->shared_group);
            kcache__store_close(st);
            return KCACHE_EUNSAFE;
        }
        if (!kcache__in_group(&st->mem, st->gid)) {
            kcache__say(why, why_cap, "KCACHE_SHARED_GROUP=%s: this process is not a member; refusing the store; to fix: join the group (and log in again), or unset KCACHE_SHARED_GROUP",
                        cfg->shared_group);
            kcache__store_close(st);
            return KCACHE_EUNSAFE;
        }
        st->shared = 1;
    }
    st->dirfd = kcache__resolve_store_dir(st, dir, 1, &s, why, why_cap);
    if (st->dirfd < 0) {
        r = errno == EPERM ? KCACHE_EUNSAFE : kcache__errno_status(errno);
        kcache__store_close(st);
        return r;
    }
    if (!st->readonly && !kcache__store_proven(st, why, why_cap)) {
        kcache__store_close(st);
        return KCACHE_EUNSAFE;
    }
    if (!st->readonly && kcache__store_lockfile(st, why, why_cap) != 0) {
        if (errno == EACCES || errno == EROFS) {
            st->readonly = 1; /* ours, but we may not write it (a read-only mount, a store made read-only) */
            kcache__say(why, why_cap, "cannot open its lock file: %s", strerror(errno));
        } else {
            if (errno != EPERM) {
                char fix[1200];
                int e = errno;
                kcache__say(why, why_cap, "cannot open the lock file in %s: %s%s", dir, strerror(e),
                            kcache__refusal_fix(fix, sizeof fix, dir, "lock", strerror(e), 1, st));
                errno = e;
            }
            r = errno == EPERM ? KCACHE_EUNSAFE : kcache__errno_status(errno);
            kcache__store_close(st);
            return r;
        }
    }
    if (!st->readonly) {
        int fd = kcache__level_open(st, st->dirfd, dir, "tmp", 1, why, why_cap);
        if (fd < 0 || kcache__levels_check(st, "e", 1, why, why_cap) != 0 || kcache__levels_check(st, "i", 0, why, why_cap) != 0) {
            if (fd >= 0) kcache__io_close(fd);
            kcache__store_close(st);
            return KCACHE_EUNSAFE;
        }
        st->tmpfd = fd;
    } else if (kcache__levels_check(st, "e", 0, why, why_cap) != 0 || kcache__levels_check(st, "i", 0, why, why_cap) != 0) {
        kcache__store_close(st);
        return KCACHE_EUNSAFE;
    }
    if (st->readonly) {
        /* hits without a lock, a use table or a stats file: nothing is written */
        char was[300];
        size_t n = why ? strlen(why) : 0;
        if (n >= sizeof was) n = sizeof was - 1;
        if (n) memcpy(was, why, n);
        was[n] = 0;
        kcache__say(why, why_cap, "the store %s is read-only (%s): hits are served, puts are kept in memory only", dir,
                    was[0] ? was : s.uid != st->uid ? "root's, read by another user" : "not writable");
        *out = st;
        return KCACHE_OK;
    }
    if (kcache__acct_map(st, &valid) != 0 && errno == ENOENT) kcache__acct_create(st, st->limit, 0);
    if (!st->map) {
        kcache__store_ev ev;
        memset(&ev, 0, sizeof ev);
        r = kcache__store_lock(st); /* missing or damaged: repaired under the lock */
        if (r == KCACHE_OK) {
            r = kcache__store_begin(st, &ev);
            if (r == KCACHE_OK) kcache__store_end(st);
            kcache__store_unlock(st);
        }
        if (ev.note[0]) kcache__say(why, why_cap, "%s", ev.note);
        if (r != KCACHE_OK || !st->map) {
            kcache__say(why, why_cap, "cannot set up %s/config.file (%s)", dir, kcache_strerror(r == KCACHE_OK ? KCACHE_EIO : r));
            kcache__store_close(st);
            return r == KCACHE_OK ? KCACHE_EIO : r;
        }
    }
    kcache__store_sweep_temps(st);
    *out = st;
    return KCACHE_OK;
}

#ifndef KCACHE_NO_LAYERS
/* Opens a read-only layer (KCACHE_LAYERS): a store that is only ever read, whatever its
   permissions: no lock, no use table, no stats, nothing created, written or repaired. It is
   checked as a read-only store is (kcache__resolve_store_dir, kcache__level_problem): the path as a store's,
   the layer and each level in it root's or the caller's and writable by no one else; entries and
   indexes of anyone else are never read. A group's store (KCACHE_SHARED_GROUP) is not a layer:
   one member could then choose the binaries every other member loads. */
static kcache_status kcache__layer_open(kcache__store **out, const char *dir, const kcache_config *cfg, char *why, size_t why_cap) {
    kcache__store *st;
    kcache__finfo s;
    kcache_status r;
    *out = NULL;
    if (!(st = kcache__store_new(dir, cfg))) return KCACHE_ENOMEM;
    st->readonly = 1; /* before the walk: a layer of root's is as good as the caller's */
    st->dirfd = kcache__resolve_store_dir(st, dir, 0, &s, why, why_cap);
    if (st->dirfd < 0) {
        r = errno == EPERM ? KCACHE_EUNSAFE : kcache__errno_status(errno);
        kcache__store_close(st);
        return r;
    }
    if (kcache__levels_check(st, "e", 0, why, why_cap) != 0 || kcache__levels_check(st, "i", 0, why, why_cap) != 0) {
        kcache__store_close(st);
        return KCACHE_EUNSAFE;
    }
    *out = st;
    return KCACHE_OK;
}
#endif /* KCACHE_NO_LAYERS */

/* ============================================================================================== */
/* >>remote  the remote tier: backends, shards, the circuit breaker, signed and compressed values  */
/* ============================================================================================== */

/* The remote tier sits below the local store: a local miss asks it, a put goes to it too, and a
   hit is validated exactly as a local entry (kcache__entry_check) before the cache layer writes it
   into the store. It talks to one or more shards, each a backend (a kcache_remote_ops table: the
   built-in Redis one, or the user's); a key's shard is chosen by rendezvous hashing (the highest
   XXH3 of digest and shard), so adding a shard to N moves about 1/(N+1) of the keys. Each shard
   has a circuit breaker: a failed call (a timeout, a refused or broken connection, garbage)
   opens it, and the shard is skipped (a miss at local speed) for a back-off period that doubles,
   up to 32x, while the one call let through after it keeps failing. Nothing here holds a lock
   while a backend is called.

   A value on the remote (every integer little-endian):
       0  "KCREMOTE"    8  u16 version (1 or 2)    10  u16 flags    12  u32 entry length E
      16  the entry, as a store entry on disk (version 1, or 2 with a zstd payload: see >>store)
  16 + E  version 1, flags 1 (signed, HMAC): HMAC-SHA-256 of bytes 0 .. 16 + E under
          KCACHE_REMOTE_SECRET (32 bytes); flags 0: nothing (unsigned)
          version 2, flags 2 (signed, GMAC): a random 12-byte nonce, then the 16-byte AES-256-GCM
          tag of bytes 0 .. 16 + E as authenticated data (no plaintext: GMAC) under the key
          SHA-256("kcache remote gmac v2" NUL secret). GMAC runs about 4x faster than HMAC-SHA-256
          (AES-NI, carry-less multiply), which a 1 MiB hit needs; random 96-bit nonces keep it
          sound far past a fleet's writes under one secret (NIST's bound: 2^32 values per key).
   Writers sign with GMAC (KCACHE_REMOTE_MAC=hmac: version 1, for a fleet with clients older than
   version 2); readers with a secret take either, readers without one take any.
   A value that fails any check is a reject: deleted on the remote (unless KCACHE_REMOTE_MODE=ro)
   and counted. One that is merely not for this client (larger than its KCACHE_REMOTE_MAX_ENTRY, or
   zstd without KCACHE_ZSTD) is a miss. */
#define KCACHE__RV_HEADER 16
#define KCACHE__RV_VERSION 1
#define KCACHE__RV_SIGNED 1
#define KCACHE__MAC_LEN 32
#define KCACHE__RV_VERSION_GMAC 2
#define KCACHE__RV_GMAC 2
#define KCACHE__GMAC_NONCE 12
#define KCACHE__GMAC_TAG 16
#define KCACHE__REMOTE_SHARDS 64
#define KCACHE__REMOTE_TIMEOUT_MS 500
#define KCACHE__REMOTE_CONNECT_MS 100
#define KCACHE__REMOTE_MAX_ENTRY ((uint64_t)4 << 20)
#define KCACHE__REMOTE_CLAIM_MS 3000 /* renewed every third of it: a dead builder's claim ends within 3 s */
#define KCACHE__REMOTE_BACKOFF_MS 1000
#define KCACHE__REMOTE_BACKOFF_MULT 32
#define KCACHE__REDIS_PREFIX_MAX 100 /* KCACHE_REMOTE_PREFIX's length */

/* What remote calls did, for the stats (added under kc->lock) and the debug log. */
typedef struct kcache__remote_ev {
    uint64_t lookups, puts, calls, latency_ns, errors, timeouts, skipped, rejects, opened, closed;
    char note[320]; /* the first thing worth a debug line */
} kcache__remote_ev;

/* The remote tier and its shards are this section's alone: the cache layer holds a kcache__remote
   pointer (NULL: no remote) and reaches it only through the functions under "what the cache layer
   asks", so that with KCACHE_NO_REMOTE those functions, trivial, work on these incomplete types. */
typedef struct kcache__remote kcache__remote;
typedef struct kcache__shard kcache__shard;
struct kcache__pub; /* (>>pub: where each shard's counters are published) */

/* A cluster build claim (kcache__rclaim_init ... kcache__rclaim_end), on the caller's stack; the
   cache layer only passes it around. Held, it is renewed by a thread of its own while the build
   runs (a build is the caller's code: nothing else could renew meanwhile). */
typedef struct kcache__rclaim {
    kcache__remote *r;         /* NULL: nothing set up (kcache__rclaim_reset) */
    kcache__shard *s;
    char name[33];
    char token[200];           /* host:pid:seq:t<ms>, then with a secret .HMAC (kcache__rclaim_token) */
    char pending[200];         /* a token a failed claim_reissue may have set on the server; "": none */
    uint64_t seq;              /* its sequence number in the tokens */
    int held, stop, started;
    int released;              /* given back already, with the holder's put (kcache__rclaim_put_end) */
    int checked;               /* taken by claim_take_many: the value was missing when the claim was taken */
    kcache__mutex m;           /* guards stop and ev, which the renewer writes */
    kcache__cond c;
    kcache__thread th;
    kcache__remote_ev ev;      /* what the renewer's calls did */
} kcache__rclaim;

/* Room for the batch's read-back of up to KCACHE__REMOTE_MANY keys at once (kcache__batch_fetch,
   kcache__remote_fetch, kcache__remote_get_many); on the heap, one per worker: a few KiB of arrays
   would not fit the 4 KiB stacks kcache keeps to. */
#define KCACHE__REMOTE_MANY 64
typedef struct kcache__many {
    /* kcache__batch_fetch: the keys asked, where they are in the pass, what came back */
    const kcache_key *keys[KCACHE__REMOTE_MANY];
    const void *d[KCACHE__REMOTE_MANY];
    size_t sz[KCACHE__REMOTE_MANY], at[KCACHE__REMOTE_MANY], which[KCACHE__REMOTE_MANY];
    kcache_status st[KCACHE__REMOTE_MANY];
    /* kcache__remote_fetch: in ask (n of them); out data, size, got (KCACHE_OK or KCACHE_MISS) */
    const kcache_key *ask[KCACHE__REMOTE_MANY];
    const void *data[KCACHE__REMOTE_MANY];
    size_t size[KCACHE__REMOTE_MANY], fat[KCACHE__REMOTE_MANY];
    kcache_status got[KCACHE__REMOTE_MANY];
    kcache_key *copy[KCACHE__REMOTE_MANY];
    /* kcache__remote_get_many: in rk; out rd, where */
    const kcache_key *rk[KCACHE__REMOTE_MANY];
    kcache__read rd[KCACHE__REMOTE_MANY];
    const char *where[KCACHE__REMOTE_MANY];
    struct kcache__shard *sh[KCACHE__REMOTE_MANY];
    char names[KCACHE__REMOTE_MANY][33];
    const char *np[KCACHE__REMOTE_MANY];
    const void *v[KCACHE__REMOTE_MANY];
    size_t len[KCACHE__REMOTE_MANY], gat[KCACHE__REMOTE_MANY];
    void *hold[KCACHE__REMOTE_MANY];
    kcache_status gst[KCACHE__REMOTE_MANY];
    unsigned char asked[KCACHE__REMOTE_MANY];
    /* kcache__batch_take_first: the claim it took for the worker's next try */
    kcache__rclaim cl;
    int held;
} kcache__many;


/* Marks cl as holding nothing, before any kcache__rclaim_init. */
static void kcache__rclaim_reset(kcache__rclaim *cl) { cl->r = NULL; }
/* Whether kcache__rclaim_init set cl up on a remote: kcache__rclaim_end is then due (and has counts
   to give back), whether or not a claim was taken. */
static int kcache__rclaim_pending(const kcache__rclaim *cl) { return cl->r != NULL; }

#ifndef KCACHE_NO_REMOTE

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void kcache__remote_ev_note(kcache__remote_ev *ev, const char *fmt, ...) {
    va_list ap;
    if (ev->note[0]) return;
    va_start(ap, fmt);
    vsnprintf(ev->note, sizeof ev->note, fmt, ap);
    va_end(ap);
}

/* Adds what src counted to dst; src's note when dst has none. */
static void kcache__remote_ev_add(kcache__remote_ev *dst, const kcache__remote_ev *src) {
    dst->lookups += src->lookups; dst->puts += src->puts; dst->calls += src->calls; dst->latency_ns += src->latency_ns;
    dst->errors += src->errors; dst->timeouts += src->timeouts; dst->skipped += src->skipped; dst->rejects += src->rejects;
    dst->opened += src->opened; dst->closed += src->closed;
    if (!dst->note[0]) memcpy(dst->note, src->note, sizeof dst->note);
}

struct kcache__shard {
    char *url;                 /* as messages show it: canonical, without credentials */
    uint64_t seed;             /* its rendezvous weight seed: XXH3 of its identity (see
                                  kcache__remote_ring), else of url */
    /* the server's identity, however it is spelled (the built-in Redis: an id kept on the server);
       NULL: the url is the identity. 1 with the id in out, 0 when it cannot be had now. */
    int (*identity)(void *user, int ro, char *out, size_t cap);
    int same;                  /* an earlier shard has the same identity (another seed of one
                                  cluster, the same server spelled twice): not in the ring */
    uint64_t n[5];             /* KCACHE__SH_HITS...: kcache_get_remote_shards (remote->mutex) */
    uint64_t *pub;             /* its entry in the stats file's shard table (>>pub), NULL: none */
    uint64_t *pub_more;        /* the rest of that entry: calls made, breaker open since */
    const kcache_remote_ops *ops;
    void *user;
    void (*close)(void *user); /* frees what the backend opened for it; NULL: nothing */
    const unsigned char *(*premac)(void *user, const void *hold); /* (kcache_remote_backend) */
    /* the breaker (remote->mutex) */
    int64_t open_until;        /* monotonic ns; 0: closed */
    int64_t writes_until;      /* a full or read-only backend: puts skipped until then */
    uint32_t backoff_ms;       /* the next back-off */
    int probing;               /* a call is finding out whether it is back */
    int64_t last_ok;           /* monotonic ns of its last call that did not fail (0: none yet):
                                  a failure soon after is a glitch (kcache__shard_glitch) */
    int failing;               /* its last call failed (a lookup since may have been skipped) */
    int answered;              /* a call of this process ever went through */
};

struct kcache__remote {
    kcache__mutex mutex;       /* guards the breakers */
    kcache__shard *shard;
    unsigned n;
    char *names;               /* every shard's url as shown (no credentials), space-separated */
    char *spec;                /* the URLs as configured, credentials included: a forked child's
                                  handle opens the same remote (kcache__reopen) */
    int ro;
    uint32_t timeout_ms, claim_ms, backoff_ms;
    uint64_t max_entry;
    unsigned char *secret;     /* NULL: values are not signed, and signatures are not checked */
    size_t secret_len;
    unsigned char gmac_key[32]; /* the secret's GMAC key (SHA-256 of a label and the secret) */
    int sign_hmac;             /* KCACHE_REMOTE_MAC=hmac: sign as version 1 (older readers) */
    char host[64];             /* in claim tokens, so that a debug line can say who builds */
    uint64_t seq;              /* claim tokens (atomic) */
    const kcache__mem *mem;    /* its kcache's allocator, for the payloads it hands over */
    uint32_t ring_done;        /* the shards' identities were read (atomic; kcache__remote_ring) */
    kcache__mutex ring_mutex;  /* held by the one call that reads them */
    char *tls_ca, *tls_cert, *tls_key; /* rediss://'s files as configured (a forked child's handle reopens) */
    char *tls_name;            /* KCACHE_REMOTE_TLS_NAME, for a backend (kcache_remote_get_params) */
    char *prefix;              /* KCACHE_REMOTE_PREFIX, copied (the same) */
    uint32_t ttl_s;            /* KCACHE_REMOTE_TTL, for a backend (kcache_remote_get_params) */
    /* 0.4 claim tokens (no issue time they sign) this process has judged, and when it first did
       (monotonic ns): each is honoured for a bounded time only (kcache_remote_claim_honoured) */
    kcache__mutex seen_mutex;
    struct { uint64_t h; int64_t first; } seen[32];
    const struct kcache__pub *pub; /* its kcache's stats file, for a backend's node rows (kcache_remote_node_call) */
};

/* ---- signatures and values ---- */

#ifdef KCACHE_HMAC_OPENSSL
static int kcache__hmac(const unsigned char *key, size_t klen, const unsigned char *p, size_t n, unsigned char out[KCACHE__MAC_LEN]) {
    unsigned int len = KCACHE__MAC_LEN;
    return klen <= 0x7fffffff && HMAC(EVP_sha256(), key, (int)klen, p, n, out, &len) != NULL && len == KCACHE__MAC_LEN;
}

/* GMAC (AES-256-GCM over authenticated data only) in pieces, so that a value's MAC can be computed
   while its bytes arrive (kcache_remote_mac_begin, for a backend's get): begin (NULL: no memory, or OpenSSL refused), add
   the bytes in order, end (the tag into out; frees c). */
static EVP_CIPHER_CTX *kcache__gmac_begin(const unsigned char key[32], const unsigned char nonce[KCACHE__GMAC_NONCE]) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (c && EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1 &&
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, KCACHE__GMAC_NONCE, NULL) == 1 && EVP_EncryptInit_ex(c, NULL, NULL, key, nonce) == 1)
        return c;
    EVP_CIPHER_CTX_free(c);
    return NULL;
}
static int kcache__gmac_add(EVP_CIPHER_CTX *c, const unsigned char *p, size_t n) {
    int len, ok = 1;
    while (ok && n) {
        int part = n > (1u << 30) ? 1 << 30 : (int)n;
        ok = EVP_EncryptUpdate(c, NULL, &len, p, part) == 1;
        p += part, n -= (size_t)part;
    }
    return ok;
}
static int kcache__gmac_end(EVP_CIPHER_CTX *c, unsigned char out[KCACHE__GMAC_TAG]) {
    int len, ok = EVP_EncryptFinal_ex(c, out, &len) == 1 && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, KCACHE__GMAC_TAG, out) == 1;
    EVP_CIPHER_CTX_free(c);
    return ok;
}
/* GMAC of p under key with nonce: the tag into out. */
static int kcache__gmac(const unsigned char key[32], const unsigned char nonce[KCACHE__GMAC_NONCE], const unsigned char *p, size_t n,
                        unsigned char out[KCACHE__GMAC_TAG]) {
    EVP_CIPHER_CTX *c = kcache__gmac_begin(key, nonce);
    int ok = c && kcache__gmac_add(c, p, n);
    if (!c) return 0;
    return kcache__gmac_end(c, out) && ok;
}
#endif

static void kcache__remote_name(kcache_hash128 d, char out[33]) { kcache_hash_hex(d, out); }

static char *kcache__strndup(const char *s, size_t n) {
    char *p = (char *)KCACHE_MALLOC(n + 1);
    if (p) { memcpy(p, s, n); p[n] = 0; }
    return p;
}

/* k's entry for a payload as a remote value (KCACHE_FREE it); NULL with *why: KCACHE_ETOOBIG (over
   KCACHE_REMOTE_MAX_ENTRY), KCACHE_ENOMEM or KCACHE_EINVAL (no way to sign). */
static unsigned char *kcache__remote_pack(const kcache__remote *r, const kcache_key *k, const void *data, size_t size,
                                          size_t *len, kcache_status *why) {
    size_t rec_len = kcache__record_size(k), hlen = kcache__entry_header_len(rec_len), cap, stored = size, e;
    unsigned char *v, *payload;
    int zstd = 0;
    *why = KCACHE_ETOOBIG;
    if ((uint64_t)hlen + size > r->max_entry) return NULL;
    cap = size;
#ifdef KCACHE_ZSTD
    if (ZSTD_compressBound(size) > cap) cap = ZSTD_compressBound(size);
#endif
    *why = KCACHE_ENOMEM;
    if (!(v = (unsigned char *)KCACHE_MALLOC(KCACHE__RV_HEADER + hlen + cap + KCACHE__MAC_LEN))) return NULL; /* (>= nonce + tag) */
    payload = v + KCACHE__RV_HEADER + hlen;
#ifdef KCACHE_ZSTD
    if ((stored = kcache__zstd_into(payload, cap, data, size)) != 0) zstd = 1;
    else stored = size;
#endif
    if (!zstd && size) memcpy(payload, data, size);
    e = hlen + stored;
    memcpy(v, "KCREMOTE", 8);
    kcache__put_u16(v + 8, r->secret && !r->sign_hmac ? KCACHE__RV_VERSION_GMAC : KCACHE__RV_VERSION);
    kcache__put_u16(v + 10, !r->secret ? 0 : r->sign_hmac ? KCACHE__RV_SIGNED : KCACHE__RV_GMAC);
    kcache__put_u32(v + 12, (uint32_t)e);
    kcache__entry_header_into(v + KCACHE__RV_HEADER, hlen, rec_len, k, payload, stored, zstd);
    *len = KCACHE__RV_HEADER + e;
    if (r->secret) {
#ifdef KCACHE_HMAC_OPENSSL
        int ok;
        if (r->sign_hmac) ok = kcache__hmac(r->secret, r->secret_len, v, *len, v + *len), *len += KCACHE__MAC_LEN;
        else ok = RAND_bytes(v + *len, KCACHE__GMAC_NONCE) == 1 && kcache__gmac(r->gmac_key, v + *len, v, *len, v + *len + KCACHE__GMAC_NONCE),
             *len += KCACHE__GMAC_NONCE + KCACHE__GMAC_TAG;
        if (!ok) { KCACHE_FREE(v); *why = KCACHE_EINVAL; return NULL; }
#else
        KCACHE_FREE(v); /* kcache__remote_open refuses a secret it cannot use: not reached */
        *why = KCACHE_EINVAL;
        return NULL;
#endif
    }
    *why = KCACHE_OK;
    return v;
}

/* Checks a remote value for k and turns it into a read, as kcache__store_read does for a file:
   the envelope, the signature, then the entry (kcache__entry_check). out->status KCACHE_ECORRUPT is
   a reject (why says which check), KCACHE_ENOENT a value that is not for this client. premac (NULL:
   none) is a nonce and the GMAC of the value's bytes 0 .. 16 + E under it, computed while the value
   arrived (kcache_remote_backend.premac): used when the value's own nonce is that one. A value whose signature
   holds needs no payload checksum: the MAC covers the checksum and the bytes it was made of. */
static void kcache__remote_unpack(const kcache__remote *r, const kcache_key *k, int policy, int want_record,
                                  const unsigned char *v, size_t n, const unsigned char *premac, kcache__read *out, const char **why) {
    uint32_t version, flags, e;
    int signed_ok = 0;
    kcache__blob *b;
    (void)premac;
    memset(out, 0, sizeof *out);
    out->status = KCACHE_ECORRUPT;
    out->reason = KCACHE_REASON_REJECTED;
    *why = "not a kcache value";
    if (n < KCACHE__RV_HEADER || memcmp(v, "KCREMOTE", 8) != 0) return;
    version = kcache__get_u16(v + 8);
    flags = kcache__get_u16(v + 10);
    e = kcache__get_u32(v + 12);
    if (version == KCACHE__RV_VERSION) { /* unsigned, or HMAC */
        *why = "wrong length";
        if ((flags & ~(uint32_t)KCACHE__RV_SIGNED) || n != KCACHE__RV_HEADER + (size_t)e + (flags ? KCACHE__MAC_LEN : 0)) return;
    } else if (version == KCACHE__RV_VERSION_GMAC) {
        *why = "wrong length";
        if (flags != KCACHE__RV_GMAC || n != KCACHE__RV_HEADER + (size_t)e + KCACHE__GMAC_NONCE + KCACHE__GMAC_TAG) return;
    } else {
        return;
    }
    if (r->secret) {
#ifdef KCACHE_HMAC_OPENSSL
        unsigned char mac[KCACHE__MAC_LEN];
        const unsigned char *sig = v + KCACHE__RV_HEADER + e;
        *why = "not signed (KCACHE_REMOTE_SECRET is set)";
        if (!flags) return;
        *why = "wrong signature (another KCACHE_REMOTE_SECRET, or forged)";
        if (flags == KCACHE__RV_GMAC && premac && memcmp(premac, sig, KCACHE__GMAC_NONCE) == 0)
            memcpy(mac, premac + KCACHE__GMAC_NONCE, KCACHE__GMAC_TAG);
        else if (flags == KCACHE__RV_GMAC && !kcache__gmac(r->gmac_key, sig, v, KCACHE__RV_HEADER + (size_t)e, mac))
            return;
        if (flags == KCACHE__RV_GMAC ? CRYPTO_memcmp(mac, sig + KCACHE__GMAC_NONCE, KCACHE__GMAC_TAG) != 0
                                     : !kcache__hmac(r->secret, r->secret_len, v, KCACHE__RV_HEADER + (size_t)e, mac) ||
                                           CRYPTO_memcmp(mac, sig, KCACHE__MAC_LEN) != 0)
            return;
        signed_ok = 1;
#endif
    }
    if ((uint64_t)e > r->max_entry + r->max_entry / 128 + 4096) { /* larger than this client sends: not its to judge */
        *why = "over KCACHE_REMOTE_MAX_ENTRY";
        out->status = KCACHE_ENOENT;
        out->reason = KCACHE_REASON_COLD;
        return;
    }
    *why = "fails validation (format, checksum or key)";
    if (!(b = kcache__blob_alloc(r->mem, e, 0))) { out->status = KCACHE_ENOMEM; out->reason = KCACHE_REASON_UNWRITABLE; return; }
    memcpy(kcache__blob_bytes(b), v + KCACHE__RV_HEADER, e); /* headers are padded to 64: the payload lands aligned */
    kcache__entry_check_as(b, e, e, k, policy, want_record, r->max_entry, signed_ok, out);
}

/* ---- shards and the breaker ---- */

/* Whether shards a and b, of one identity, are one server indeed: a claim on a random name, taken
   on a for a moment, is held when b is asked. An identity alone proves nothing: a writer of b's
   server can copy a's id there (signed or not) and so take a shard out of every ring (issue 35).
   A client that may not write (ro), or a backend without claims, cannot ask: it takes the identity
   as it is (the README says what a writer can then do). */
static int kcache__remote_one_server(kcache__remote *r, kcache__shard *a, kcache__shard *b) {
    char name[33], token[2][96];
    uint64_t seed[3];
    kcache_status st;
    int k;
    if (r->ro || !a->ops->claim || !b->ops->claim) return 1;
    seed[0] = (uint64_t)kcache__now_ns(), seed[1] = (uint64_t)kcache__pid(), seed[2] = kcache__atomic_inc_u64(&r->seq);
    kcache__remote_name(kcache_hash(seed, sizeof seed), name);
    for (k = 0; k < 2; k++)
        snprintf(token[k], sizeof token[k], "%s:%u:%llx:one-server-%d", r->host, (unsigned)kcache__pid(), (unsigned long long)seed[2], k);
    if (a->ops->claim(a->user, name, KCACHE_CLAIM_TAKE, token[0], r->claim_ms) != KCACHE_OK) return 0; /* cannot tell: kept apart */
    st = b->ops->claim(b->user, name, KCACHE_CLAIM_TAKE, token[1], r->claim_ms);
    if (st == KCACHE_OK) b->ops->claim(b->user, name, KCACHE_CLAIM_ABANDON, token[1], r->claim_ms);
    a->ops->claim(a->user, name, KCACHE_CLAIM_ABANDON, token[0], r->claim_ms);
    return st == KCACHE_EEXIST;
}

/* Places the shards by what they are, not how they are spelled: before the first call, each
   shard's identity (the built-in Redis: an id stored on the server once) seeds its rendezvous
   weight, and a shard with the identity of an earlier one (the same server spelled another way, a
   second node of one cluster) leaves the ring. A shard that cannot be asked now keeps its URL's
   seed for this kcache's life (its keys are misses while it is down anyway). The first caller
   reads them with ring_mutex held (other callers wait: they could not place a key meanwhile);
   every later call pays one atomic load. One shard alone is not asked: it holds every key
   whatever its weight (issue 35: its round trips came before a cold start's first build). */
static void kcache__remote_ring(kcache__remote *r) {
    unsigned i, j;
    if (kcache__atomic_load_u32(&r->ring_done)) return;
    kcache__mutex_lock(&r->ring_mutex);
    if (!kcache__atomic_load_u32(&r->ring_done)) {
        for (i = 0; i < r->n; i++) {
            char id[80];
            kcache__shard *s = &r->shard[i];
            kcache__mutex_lock(&r->mutex);
            s->last_ok = kcache__mono_ns(); /* presumed up until a call says otherwise: a first call timed
                                               out is a glitch (kcache__shard_glitch), a refused one not */
            kcache__mutex_unlock(&r->mutex);
            if (r->n > 1 && s->identity && s->identity(s->user, r->ro, id, sizeof id)) s->seed = kcache_hash(id, strlen(id)).lo;
            for (j = 0; j < i && !s->same; j++)
                if (!r->shard[j].same && r->shard[j].seed == s->seed) {
                    s->same = kcache__remote_one_server(r, &r->shard[j], s);
                    if (!s->same) s->seed = kcache_hash(s->url, strlen(s->url)).lo; /* a copied id: placed by its URL */
                }
        }
        kcache__atomic_store_u32(&r->ring_done, 1);
    }
    kcache__mutex_unlock(&r->ring_mutex);
}

static kcache__shard *kcache__remote_shard(kcache__remote *r, kcache_hash128 d) {
    unsigned char b[24];
    unsigned i, best = 0;
    uint64_t top = 0;
    int any = 0;
    kcache__remote_ring(r);
    kcache__put_u64(b, d.lo);
    kcache__put_u64(b + 8, d.hi);
    for (i = 0; i < r->n; i++) {
        uint64_t w;
        if (r->shard[i].same) continue;
        kcache__put_u64(b + 16, r->shard[i].seed);
        w = kcache_hash(b, sizeof b).lo;
        if (!any || w > top) { top = w; best = i; any = 1; }
    }
    return &r->shard[best];
}

/* A shard's counters (kcache_get_remote_shards), in the order of the stats file's shard entries. */
enum { KCACHE__SH_HITS, KCACHE__SH_MISSES, KCACHE__SH_ERRORS, KCACHE__SH_TIMEOUTS, KCACHE__SH_SKIPPED };
static void kcache__pub_fetch_add(uint64_t *w, uint64_t n);
static void kcache__pub_shard_call(uint64_t *more, int failed);
/* Counts one for shard s (with r->mutex held): here, and for kcache-top in the stats file. */
static void kcache__shard_count(kcache__shard *s, int what) {
    s->n[what]++;
    if (s->pub) kcache__pub_fetch_add(s->pub + 1 + what, 1);
}

/* Whether a call may go to the shard now (write: a put). Counts a skipped call. */
static int kcache__remote_allow(kcache__remote *r, kcache__shard *s, int write, kcache__remote_ev *ev) {
    int64_t now = kcache__mono_ns();
    int ok = 1;
    kcache__mutex_lock(&r->mutex);
    if (write && now < s->writes_until) ok = 0;
    else if (s->open_until) {
        if (now < s->open_until || s->probing) ok = 0;
        else s->probing = 1; /* this call finds out whether it is back */
    }
    if (!ok) kcache__shard_count(s, KCACHE__SH_SKIPPED);
    kcache__mutex_unlock(&r->mutex);
    if (!ok) ev->skipped++;
    return ok;
}

/* (KCACHE_ENODE: one server of the shard is down; the backend's breaker for it, not the shard's) */
static int kcache__remote_failed(kcache_status st) {
    return st != KCACHE_OK && st != KCACHE_MISS && st != KCACHE_EEXIST && st != KCACHE_ENOSPC && st != KCACHE_EROFS && st != KCACHE_ENODE;
}

/* A failed call's status in the words of the remote (kcache_strerror speaks of the store). */
static const char *kcache__remote_what(kcache_status st) {
    switch (st) {
    case KCACHE_ETIMEOUT: return "timed out";
    case KCACHE_EIO: return "refused, dropped, or not answered in Redis's protocol";
    case KCACHE_ENOSPC: return "full";
    case KCACHE_EROFS: return "read-only";
    case KCACHE_EUNSAFE: return "refused: the server's TLS certificate does not verify (KCACHE_REMOTE_CA, the name in the URL)";
    case KCACHE_ENODE: return "its node is down or unverifiable (that node's keys skipped a while; the others serve)";
    default: return kcache_strerror(st);
    }
}

/* After a call that kcache__remote_allow let through: its time, its errors, the breaker. */
static void kcache__remote_done(kcache__remote *r, kcache__shard *s, kcache_status st, int64_t t0, const char *what,
                                kcache__remote_ev *ev) {
    int64_t now = kcache__mono_ns();
    int failed = kcache__remote_failed(st), node = st == KCACHE_ENODE;
    uint32_t backoff = 0;
    int was_open;
    ev->calls++;
    ev->latency_ns += (uint64_t)(now - t0);
    if (failed || node || st == KCACHE_ENOSPC || st == KCACHE_EROFS) {
        ev->errors++;
        if (st == KCACHE_ETIMEOUT) ev->timeouts++;
    }
    kcache__mutex_lock(&r->mutex);
    was_open = s->open_until != 0;
    s->probing = 0;
    if (failed || node || st == KCACHE_ENOSPC || st == KCACHE_EROFS) {
        kcache__shard_count(s, KCACHE__SH_ERRORS);
        if (st == KCACHE_ETIMEOUT) kcache__shard_count(s, KCACHE__SH_TIMEOUTS);
    }
    if (!node) kcache__pub_shard_call(s->pub_more, failed);
    else if (s->pub_more) kcache__pub_fetch_add(s->pub_more, 1); /* (a call made; the breaker's time as it was) */
    s->failing = failed || node;
    if (failed && st != KCACHE_ETIMEOUT && !s->answered) s->last_ok = 0; /* refused before ever answering: down, not a glitch */
    if (node) {
        /* one node down: the backend's breaker for it; the shard's stays as it was (an open one
           is probed again by the next call) */
    } else if (failed) {
        backoff = s->backoff_ms;
        s->open_until = now + (int64_t)backoff * 1000000;
        if (s->backoff_ms < r->backoff_ms * KCACHE__REMOTE_BACKOFF_MULT) s->backoff_ms *= 2;
        if (!was_open) ev->opened++;
    } else {
        if (was_open) ev->closed++;
        s->last_ok = now;
        s->answered = 1;
        s->open_until = 0;
        s->backoff_ms = r->backoff_ms;
        if (st == KCACHE_ENOSPC || st == KCACHE_EROFS) s->writes_until = now + (int64_t)r->backoff_ms * 1000000;
    }
    kcache__mutex_unlock(&r->mutex);
    if (node)
        kcache__remote_ev_note(ev, "remote %s: %s failed (%s, after %.1f ms)", s->url, what, kcache__remote_what(st), (double)(now - t0) / 1e6);
    else if (failed)
        kcache__remote_ev_note(ev, "remote %s: %s failed (%s, after %.1f ms); %s skipped for %u ms", s->url, what, kcache__remote_what(st),
                         (double)(now - t0) / 1e6, was_open ? "still down:" : "circuit breaker open:", (unsigned)backoff);
    else if (st == KCACHE_ENOSPC || st == KCACHE_EROFS)
        kcache__remote_ev_note(ev, "remote %s: %s refused (%s); puts skipped for %u ms", s->url, what, kcache__remote_what(st),
                         (unsigned)r->backoff_ms);
    else if (was_open)
        kcache__remote_ev_note(ev, "remote %s: back (circuit breaker closed)", s->url);
}

/* Whether shard s, whose call just failed (or whose breaker skips calls now), is having a glitch
   rather than being down: it answered a call within the last two claim lifetimes (a shard is
   presumed to have answered when first used, until a call is refused or broken before any went
   through: a server down then, or never there, is not waited for). Then a claim seen
   held may still be held (its builder renews it), and a value put meanwhile may be there: claim
   calls go past its breaker and a caller waits and asks again instead of building (a lost packet,
   a slow link: issue 35). A shard that did not answer for longer (or never) is down: done
   without, as before, so that a dead server costs a waiter about 6 s once, not a wait per call. */
static int kcache__shard_glitch(kcache__remote *r, kcache__shard *s) {
    int64_t now = kcache__mono_ns();
    int g;
    kcache__mutex_lock(&r->mutex);
    g = s->last_ok && now - s->last_ok < (int64_t)r->claim_ms * 2000000;
    kcache__mutex_unlock(&r->mutex);
    return g;
}
static int kcache__remote_glitch(kcache__remote *r, const kcache_key *k) { return kcache__shard_glitch(r, kcache__remote_shard(r, k->digest)); }
/* Whether the last call to k's shard failed: a lookup made since may have been skipped by the
   breaker, so that a miss then says nothing. */
static int kcache__remote_failing(kcache__remote *r, const kcache_key *k) {
    kcache__shard *s = kcache__remote_shard(r, k->digest);
    int f;
    kcache__mutex_lock(&r->mutex);
    f = s->failing;
    kcache__mutex_unlock(&r->mutex);
    return f;
}

/* Shards whose breaker is open now. */
static uint64_t kcache__remote_open_count(kcache__remote *r) {
    uint64_t n = 0;
    unsigned i;
    if (!r) return 0;
    kcache__mutex_lock(&r->mutex);
    for (i = 0; i < r->n; i++) n += r->shard[i].open_until != 0;
    kcache__mutex_unlock(&r->mutex);
    return n;
}

/* ---- what the cache layer asks of the remote: its only way to kcache__remote's fields ---- */

/* Whether this client writes nothing to the remote (KCACHE_REMOTE_MODE=ro). */
static int kcache__remote_is_ro(const kcache__remote *r) { return r->ro; }

/* Every shard as messages show it (no credentials), space-separated. */
static const char *kcache__remote_names(const kcache__remote *r) { return r->names; }

/* A build claim's life in ms: a wait for another's claim asks again after at most this long. */
static uint32_t kcache__remote_claim_ms(const kcache__remote *r) { return r->claim_ms; }

/* The remote as the debug log says it at open: its shards, then how it is used. */
static void kcache__remote_describe(const kcache__remote *r, char *out, size_t cap) {
#ifdef KCACHE_ZSTD
    const char *zstd = ", zstd";
#else
    const char *zstd = "";
#endif
    snprintf(out, cap, "%s (%s, timeout %u ms, entries up to %llu bytes%s%s)", r->names, r->ro ? "read-only" : "read-write",
             (unsigned)r->timeout_ms, (unsigned long long)r->max_entry, r->secret ? ", signed" : "", zstd);
}

/* Points cfg's remote strings at the remote's own copies (NULL without a remote): the caller's may
   go away, or point into the environment. The URLs are as shown (no credentials) and the secret is
   dropped: only the remote keeps them (kcache__remote_reopen_config gives them back). */
static void kcache__remote_own_config(const kcache__remote *r, kcache_config *cfg) {
    cfg->remote = r ? r->names : NULL;
    cfg->remote_secret = NULL;
    cfg->remote_ca = r ? r->tls_ca : NULL;
    cfg->remote_cert = r ? r->tls_cert : NULL;
    cfg->remote_key = r ? r->tls_key : NULL;
    cfg->remote_prefix = r ? r->prefix : NULL;
    cfg->remote_tls_name = r ? r->tls_name : NULL;
}

/* For a forked child's own handle (kcache__reopen): cfg asks for this same remote again, the URLs
   with their credentials and the secret (kept NUL-terminated) included. */
static void kcache__remote_reopen_config(const kcache__remote *r, kcache_config *cfg) {
    cfg->remote = r->spec;
    if (r->secret) cfg->remote_secret = (const char *)r->secret;
}

/* Ties a remote just opened to its kcache: the allocator for the payloads it hands over, and each
   shard's entry in the stats file's shard table (kcache-top), where pub publishes. */
static uint64_t *kcache__pub_shard(const struct kcache__pub *p, const char *url, uint64_t **more);
static void kcache__remote_attach(kcache__remote *r, const kcache__mem *mem, const struct kcache__pub *pub) {
    unsigned i;
    r->mem = mem;
    r->pub = pub;
    for (i = 0; i < r->n; i++) r->shard[i].pub = kcache__pub_shard(pub, r->shard[i].url, &r->shard[i].pub_more);
}

/* kcache_get_remote_shards: the first cap shards' counters and breakers into out (NULL: none);
   returns how many shards there are. */
static unsigned kcache__remote_shard_table(kcache__remote *r, kcache_remote_shard *out, unsigned cap) {
    unsigned i;
    kcache__mutex_lock(&r->mutex);
    for (i = 0; i < r->n && i < cap && out; i++) {
        const kcache__shard *s = &r->shard[i];
        memset(&out[i], 0, sizeof out[i]);
        snprintf(out[i].url, sizeof out[i].url, "%s", s->url);
        out[i].hits = s->n[KCACHE__SH_HITS], out[i].misses = s->n[KCACHE__SH_MISSES], out[i].errors = s->n[KCACHE__SH_ERRORS];
        out[i].timeouts = s->n[KCACHE__SH_TIMEOUTS], out[i].skipped = s->n[KCACHE__SH_SKIPPED], out[i].open = s->open_until != 0;
        out[i].same = kcache__atomic_load_u32(&r->ring_done) ? s->same : 0; /* (set before ring_done) */
    }
    kcache__mutex_unlock(&r->mutex);
    return r->n;
}

/* ---- the calls the cache layer makes ---- */

/* Whether kcache_explain may look at shard s now: its breaker closed, or its backoff over with no
   probe under way. Reads the breaker, never moves it (kcache__remote_allow does, for lookups). */
static int kcache__remote_peekable(kcache__remote *r, kcache__shard *s) {
    int ok;
    kcache__mutex_lock(&r->mutex);
    ok = !s->open_until || (kcache__mono_ns() >= s->open_until && !s->probing);
    kcache__mutex_unlock(&r->mutex);
    return ok;
}

/* Deletes k's entry on its shard (mode rw). */
static void kcache__remote_remove(kcache__remote *r, const kcache_key *k, kcache__remote_ev *ev) {
    kcache__shard *s = kcache__remote_shard(r, k->digest);
    char name[33];
    int64_t t0;
    if (r->ro || !s->ops->remove || !kcache__remote_allow(r, s, 1, ev)) return;
    kcache__remote_name(k->digest, name);
    t0 = kcache__mono_ns();
    kcache__remote_done(r, s, s->ops->remove(s->user, name), t0, "delete", ev);
}

/* A value shard s returned for k (hold: what its get gave with it), unpacked and validated into out.
   Unless peek: counted as the shard's hit or miss, and a value that fails validation is counted as a
   reject and deleted there (in mode rw). */
static void kcache__remote_take(kcache__remote *r, kcache__shard *s, const kcache_key *k, int policy, int want_record, int peek,
                                const void *v, size_t n, const void *hold, kcache__read *out, kcache__remote_ev *ev) {
    const char *why = "";
    kcache__remote_unpack(r, k, policy, want_record, (const unsigned char *)v, n, s->premac && hold ? s->premac(s->user, hold) : NULL, out,
                          &why);
    if (peek) return;
    kcache__mutex_lock(&r->mutex); /* a value that is not valid, or not for this client: a miss too */
    kcache__shard_count(s, out->status == KCACHE_OK ? KCACHE__SH_HITS : KCACHE__SH_MISSES);
    kcache__mutex_unlock(&r->mutex);
    if (out->status != KCACHE_ECORRUPT) return;
    ev->rejects++;
    if (r->ro) {
        kcache__remote_ev_note(ev, "reject %s: the remote value on %s %s (KCACHE_REMOTE_MODE=ro: left there)", k->unit, s->url, why);
        return;
    }
    kcache__remote_ev_note(ev, "reject %s: the remote value on %s %s; deleted there", k->unit, s->url, why);
    kcache__remote_remove(r, k, ev);
}

/* Looks k up on its shard. out as kcache__store_read fills it (KCACHE_ENOENT: not there, or not
   asked); *where names the shard. A lookup (peek 0) is counted in ev, goes through the breaker, and
   a value that fails validation is counted and deleted there (in mode rw). A peek (kcache_explain,
   a diagnostic) changes nothing: ev stays as it was, the breaker is obeyed but neither probed nor
   moved, a bad value is left where it is. */
static void kcache__remote_get(kcache__remote *r, const kcache_key *k, int policy, int want_record, int peek, kcache__read *out,
                               const char **where, kcache__remote_ev *ev) {
    kcache__shard *s = kcache__remote_shard(r, k->digest);
    char name[33];
    const void *v = NULL;
    size_t n = 0;
    void *hold = NULL;
    kcache_status st;
    int64_t t0;
    memset(out, 0, sizeof *out);
    out->status = KCACHE_ENOENT;
    out->reason = KCACHE_REASON_COLD;
    *where = s->url;
    if (!peek) ev->lookups++;
    if (peek ? !kcache__remote_peekable(r, s) : !kcache__remote_allow(r, s, 0, ev)) return;
    kcache__remote_name(k->digest, name);
    t0 = kcache__mono_ns();
    st = s->ops->get(s->user, name, &v, &n, &hold);
    if (!peek) kcache__remote_done(r, s, st, t0, "get", ev);
    if (!peek && st == KCACHE_MISS) {
        kcache__mutex_lock(&r->mutex);
        kcache__shard_count(s, KCACHE__SH_MISSES);
        kcache__mutex_unlock(&r->mutex);
    }
    if (st != KCACHE_OK) return;
    kcache__remote_take(r, s, k, policy, want_record, peek, v, n, hold, out, ev);
    if (s->ops->release) s->ops->release(s->user, hold);
}

/* Looks mm->rk[0..n) (KCACHE__REMOTE_MANY at most) up at once, as lookups (kcache__remote_get with
   peek 0, no record): on a shard whose backend has get_many, one exchange for all of its keys;
   elsewhere one get each. mm->rd[i], mm->where[i] as kcache__remote_get's out and where. */
static void kcache__remote_get_many(kcache__remote *r, kcache__many *mm, size_t n, int policy, kcache__remote_ev *ev) {
    size_t i, j;
    if (n > KCACHE__REMOTE_MANY) n = KCACHE__REMOTE_MANY;
    for (i = 0; i < n; i++) {
        mm->sh[i] = kcache__remote_shard(r, mm->rk[i]->digest);
        mm->asked[i] = 0;
    }
    for (i = 0; i < n; i++) {
        kcache__shard *s = mm->sh[i];
        size_t m = 0;
        kcache_status cs;
        int64_t t0;
        if (mm->asked[i] || !s->ops->get_many) continue;
        for (j = i; j < n; j++)
            if (!mm->asked[j] && mm->sh[j] == s) {
                mm->asked[j] = 1;
                mm->gat[m] = j;
                kcache__remote_name(mm->rk[j]->digest, mm->names[m]);
                mm->np[m] = mm->names[m];
                mm->hold[m] = NULL;
                memset(&mm->rd[j], 0, sizeof mm->rd[j]);
                mm->rd[j].status = KCACHE_ENOENT;
                mm->rd[j].reason = KCACHE_REASON_COLD;
                mm->where[j] = s->url;
                m++;
            }
        ev->lookups += m;
        if (!kcache__remote_allow(r, s, 0, ev)) continue;
        t0 = kcache__mono_ns();
        cs = s->ops->get_many(s->user, mm->np, m, mm->v, mm->len, mm->hold, mm->gst);
        kcache__remote_done(r, s, cs, t0, "get", ev);
        if (cs != KCACHE_OK) continue;
        for (j = 0; j < m; j++) {
            if (mm->gst[j] == KCACHE_OK) {
                kcache__remote_take(r, s, mm->rk[mm->gat[j]], policy, 0, 0, mm->v[j], mm->len[j], mm->hold[j], &mm->rd[mm->gat[j]], ev);
            } else {
                kcache__mutex_lock(&r->mutex);
                kcache__shard_count(s, KCACHE__SH_MISSES);
                kcache__mutex_unlock(&r->mutex);
            }
        }
        for (j = 0; j < m; j++)
            if (mm->hold[j] && s->ops->release) s->ops->release(s->user, mm->hold[j]);
    }
    for (i = 0; i < n; i++) /* shards without get_many */
        if (!mm->asked[i]) kcache__remote_get(r, mm->rk[i], policy, 0, 0, &mm->rd[i], &mm->where[i], ev);
}

/* Sends k's entry to its shard (mode rw). KCACHE_OK when stored; KCACHE_ETOOBIG: stays local.
   past_breaker: sent even while the shard's breaker is open (not while it refuses writes): a claim
   holder's put, whose waiters on other machines would each build the value it failed to send. */
static kcache_status kcache__remote_put(kcache__remote *r, const kcache_key *k, const void *data, size_t size, int past_breaker,
                                        kcache__remote_ev *ev) {
    kcache__shard *s = kcache__remote_shard(r, k->digest);
    char name[33];
    size_t len = 0;
    kcache_status st;
    unsigned char *v;
    int64_t t0;
    if (r->ro || !s->ops->put) return KCACHE_EROFS;
    v = kcache__remote_pack(r, k, data, size, &len, &st);
    if (!v) {
        if (st == KCACHE_ETOOBIG)
            kcache__remote_ev_note(ev, "put %s: %llu bytes stay local (over KCACHE_REMOTE_MAX_ENTRY = %llu)", k->unit, (unsigned long long)size,
                             (unsigned long long)r->max_entry);
        return st;
    }
    if (past_breaker) {
        int64_t now = kcache__mono_ns();
        kcache__mutex_lock(&r->mutex);
        if (now < s->writes_until) past_breaker = 0; /* (a full or read-only server: no write) */
        kcache__mutex_unlock(&r->mutex);
        if (!past_breaker) { KCACHE_FREE(v); return KCACHE_EDISABLED; }
    } else if (!kcache__remote_allow(r, s, 1, ev)) {
        KCACHE_FREE(v);
        return KCACHE_EDISABLED;
    }
    kcache__remote_name(k->digest, name);
    t0 = kcache__mono_ns();
    st = s->ops->put(s->user, name, v, len);
    kcache__remote_done(r, s, st, t0, "put", ev);
    KCACHE_FREE(v);
    if (st == KCACHE_OK) ev->puts++;
    return st;
}

/* ---- the cluster-wide build claim (kcache_get_or_build) ---- */

/* A claim's signature: HMAC-SHA-256 under the secret of "kcache claim", the entry's name and the
   claim's id (host:pid:seq:ns), as 64 hex digits after a '.'. Another secret, a client without
   one, or a claim moved to another name cannot make one. 0 when it cannot be made (no secret, or
   no HMAC). */
static int kcache__rclaim_sign(const kcache__remote *r, const char *name, const char *id, size_t id_len, char out[66]) {
#ifdef KCACHE_HMAC_OPENSSL
    unsigned char msg[256], mac[KCACHE__MAC_LEN];
    size_t n = 13 + 32 + 1 + id_len, i;
    if (!r->secret || n > sizeof msg) return 0;
    memcpy(msg, "kcache claim\n", 13);
    memcpy(msg + 13, name, 32);
    msg[45] = '\n';
    memcpy(msg + 46, id, id_len);
    if (!kcache__hmac(r->secret, r->secret_len, msg, n, mac)) return 0;
    out[0] = '.';
    for (i = 0; i < KCACHE__MAC_LEN; i++) {
        out[1 + 2 * i] = "0123456789abcdef"[mac[i] >> 4];
        out[2 + 2 * i] = "0123456789abcdef"[mac[i] & 15];
    }
    out[65] = 0;
    return 1;
#else
    (void)r; (void)name; (void)id; (void)id_len; (void)out;
    return 0;
#endif
}

/* The clock of the server keeping name's claims on shard s (kcache_remote_ops.server_time_ns),
   else this client's: ns since the Unix epoch. */
static int64_t kcache__rclaim_clock(const kcache__shard *s, const char *name) {
    int64_t t = s->ops->server_time_ns ? s->ops->server_time_ns(s->user, name) : 0;
    return t > 0 ? t : kcache__now_ns();
}

/* A token for cl, issued now (out: 200 bytes): host:pid:seq:t<issue time, ms in hex>, then with a
   secret the HMAC that covers all of it (kcache__rclaim_sign). The time is the server's
   (kcache__rclaim_clock): a waiter judges the token's age by it (kcache_remote_claim_honoured). */
static void kcache__rclaim_token(const kcache__rclaim *cl, char out[200]) {
    char mac[66];
    int n = snprintf(out, 200 - 65, "%s:%u:%llx:t%llx", cl->r->host, (unsigned)kcache__pid(), (unsigned long long)cl->seq,
                     (unsigned long long)(kcache__rclaim_clock(cl->s, cl->name) / 1000000));
    if (n > 0 && n < 200 - 65 && kcache__rclaim_sign(cl->r, cl->name, out, (size_t)n, mac)) memcpy(out + n, mac, sizeof mac);
}

/* One claim call on the claim's shard, through the breaker (WAIT's time is not a call's latency).
   Taking a claim is a write (skipped while the shard refuses writes). Two answers of the Redis
   backend's WAIT are no failure of the shard: KCACHE_ECORRUPT, a claim not worth waiting for
   (kcache__rclaim_honoured), which is said; KCACHE_ENOENT, the claim was gone when looked at
   (look again, as KCACHE_OK says, but the caller counts these). */
static kcache_status kcache__rclaim_call(kcache__rclaim *cl, int op, uint32_t ms, kcache__remote_ev *ev) {
    static const char *const what[] = {"", "claim", "renew claim", "release claim", "abandon claim", "wait for claim"};
    kcache_status st;
    int64_t t0;
    /* A held claim is given back even through an open breaker (one small call): left to expire, it
       would keep every waiter on other machines waiting out its life. Taking and waiting go past it
       too while the shard has a glitch (kcache__shard_glitch): under loss the breaker opens often,
       and a claim not asked about is a build on every machine that misses (issue 35). Taking still
       waits while the shard refuses writes. */
    if (op == KCACHE_CLAIM_RELEASE || op == KCACHE_CLAIM_ABANDON ||
        ((op == KCACHE_CLAIM_TAKE || op == KCACHE_CLAIM_WAIT) && kcache__shard_glitch(cl->r, cl->s))) {
        int64_t now = kcache__mono_ns();
        int refused;
        kcache__mutex_lock(&cl->r->mutex);
        refused = op == KCACHE_CLAIM_TAKE && now < cl->s->writes_until;
        if (refused) kcache__shard_count(cl->s, KCACHE__SH_SKIPPED);
        kcache__mutex_unlock(&cl->r->mutex);
        if (refused) {
            ev->skipped++;
            return KCACHE_EROFS; /* (no claim: the caller builds without one) */
        }
    } else if (!kcache__remote_allow(cl->r, cl->s, op == KCACHE_CLAIM_TAKE, ev)) {
        return KCACHE_EDISABLED;
    }
    t0 = kcache__mono_ns();
    if (op == KCACHE_CLAIM_TAKE && cl->s->ops->claim_take_many) { /* (the take that also sees the value missing) */
        const char *names[1], *tokens[1];
        kcache_status one = KCACHE_EIO;
        names[0] = cl->name, tokens[0] = cl->token;
        st = cl->s->ops->claim_take_many(cl->s->user, names, tokens, 1, 1, ms, &one);
        if (st == KCACHE_OK) st = one;
        cl->checked = st == KCACHE_OK;
    } else {
        st = cl->s->ops->claim(cl->s->user, cl->name, op, cl->token, ms);
    }
    if (op == KCACHE_CLAIM_WAIT && !kcache__remote_failed(st)) t0 = kcache__mono_ns();
    if (op == KCACHE_CLAIM_WAIT && st == KCACHE_ENOENT) {
        kcache__remote_done(cl->r, cl->s, KCACHE_OK, t0, what[op], ev);
        return st;
    }
    if (op == KCACHE_CLAIM_WAIT && st == KCACHE_ECORRUPT) {
        kcache__remote_done(cl->r, cl->s, KCACHE_MISS, t0, what[op], ev);
        kcache__remote_ev_note(ev, "remote %s: the build claim on %s is %s: not honoured, built here", cl->s->url, cl->name,
                         cl->r->secret ? "not signed with KCACHE_REMOTE_SECRET, or lives longer than kcache's claims"
                                       : "longer-lived than kcache's claims");
        return st;
    }
    kcache__remote_done(cl->r, cl->s, st, t0, what[op], ev);
    return st;
}

/* A renewal under a new token issued now (kcache_remote_ops.claim_reissue), through the breaker;
   on the renewer's thread, the only writer of cl->token while the claim is held (kcache__rclaim_end
   reads it after joining). A failed call may have set the new token on the server: it is kept as
   pending and tried as the holder when the token held here is refused. */
static kcache_status kcache__rclaim_reissue(kcache__rclaim *cl, kcache__remote_ev *ev) {
    char next[200];
    kcache_status st;
    int64_t t0;
    if (!kcache__remote_allow(cl->r, cl->s, 0, ev)) return KCACHE_EDISABLED;
    kcache__rclaim_token(cl, next);
    t0 = kcache__mono_ns();
    st = cl->s->ops->claim_reissue(cl->s->user, cl->name, cl->token, next, cl->r->claim_ms);
    if (st == KCACHE_MISS && cl->pending[0]) st = cl->s->ops->claim_reissue(cl->s->user, cl->name, cl->pending, next, cl->r->claim_ms);
    kcache__remote_done(cl->r, cl->s, st, t0, "renew claim", ev);
    if (st == KCACHE_OK) { memcpy(cl->token, next, sizeof next); cl->pending[0] = 0; }
    else if (st != KCACHE_MISS) memcpy(cl->pending, next, sizeof next);
    return st;
}

KCACHE__THREAD_FN(kcache__rclaim_renewer, arg) {
    kcache__rclaim *cl = (kcache__rclaim *)arg;
    uint32_t every = cl->r->claim_ms / 3 ? cl->r->claim_ms / 3 : 1;
    kcache__mutex_lock(&cl->m);
    while (!cl->stop) {
        kcache__remote_ev ev;
        if (kcache__cond_wait_until(&cl->c, &cl->m, kcache__now_ns() + (int64_t)every * 1000000) || cl->stop) continue;
        kcache__mutex_unlock(&cl->m);
        memset(&ev, 0, sizeof ev);
        if ((cl->s->ops->claim_reissue ? kcache__rclaim_reissue(cl, &ev) : kcache__rclaim_call(cl, KCACHE_CLAIM_RENEW, cl->r->claim_ms, &ev)) ==
            KCACHE_MISS)
            kcache__remote_ev_note(&ev, "remote %s: the build claim on %s was lost (expired): another machine may build too", cl->s->url, cl->name);
        kcache__mutex_lock(&cl->m);
        kcache__remote_ev_add(&cl->ev, &ev);
    }
    kcache__mutex_unlock(&cl->m);
    KCACHE__THREAD_END;
}

/* Sets up a claim on k's shard (nothing taken yet). 0 when the remote has no claims, or may not
   write (KCACHE_REMOTE_MODE=ro: a claim is a write; such a client builds what it misses). */
static int kcache__rclaim_init(kcache__rclaim *cl, kcache__remote *r, const kcache_key *k) {
    memset(cl, 0, sizeof *cl);
    if (r->ro) return 0;
    cl->r = r;
    cl->s = kcache__remote_shard(r, k->digest);
    if (!cl->s->ops->claim) return 0;
    kcache__remote_name(k->digest, cl->name);
    cl->seq = kcache__atomic_inc_u64(&r->seq);
    kcache__rclaim_token(cl, cl->token);
    kcache__mutex_init(&cl->m);
    kcache__cond_init(&cl->c);
    return 1;
}

/* The shard a claim set up by kcache__rclaim_init is on, as messages show it. */
static const char *kcache__rclaim_url(const kcache__rclaim *cl) { return cl->s->url; }

/* Takes the claim: KCACHE_OK (held, and renewed from now on), KCACHE_EEXIST (another holds it), or
   a failure (build without one). */
static kcache_status kcache__rclaim_take(kcache__rclaim *cl, kcache__remote_ev *ev) {
    kcache_status st;
    kcache__rclaim_token(cl, cl->token); /* issued now: a take after a wait must not carry the wait's age */
    st = kcache__rclaim_call(cl, KCACHE_CLAIM_TAKE, cl->r->claim_ms, ev);
    if (st != KCACHE_OK) return st;
    cl->held = 1;
    cl->started = kcache__thread_start(&cl->th, kcache__rclaim_renewer, cl);
    return KCACHE_OK;
}

/* Ends what the claim set up: the renewer stopped, the claim released (stored: the value is on the
   remote for the waiters) or abandoned; the renewer's counts join ev. */
static void kcache__rclaim_stop_renewer(kcache__rclaim *cl) {
    if (!cl->started) return;
    kcache__mutex_lock(&cl->m);
    cl->stop = 1;
    kcache__cond_broadcast(&cl->c);
    kcache__mutex_unlock(&cl->m);
    kcache__thread_join(cl->th);
    cl->started = 0;
}
static void kcache__rclaim_end(kcache__rclaim *cl, int stored, kcache__remote_ev *ev) {
    if (!cl->r || !cl->s->ops->claim) return;
    kcache__rclaim_stop_renewer(cl);
    if (cl->released && !cl->pending[0]) cl->held = 0; /* (given back with the put) */
    if (cl->held && !cl->released) kcache__rclaim_call(cl, stored ? KCACHE_CLAIM_RELEASE : KCACHE_CLAIM_ABANDON, cl->r->claim_ms, ev);
    if (cl->held && cl->pending[0]) { /* the server may hold the token of a renewal whose reply was lost */
        memcpy(cl->token, cl->pending, sizeof cl->token);
        kcache__rclaim_call(cl, stored ? KCACHE_CLAIM_RELEASE : KCACHE_CLAIM_ABANDON, cl->r->claim_ms, ev);
    }
    kcache__remote_ev_add(ev, &cl->ev);
    kcache__cond_destroy(&cl->c);
    kcache__mutex_destroy(&cl->m);
    cl->r = NULL;
}

/* The holder's put and its claim's release in one exchange (kcache_remote_ops.put_release: one
   round trip where put then release took two, issue 35), the renewer stopped first (the claim then
   lives out its last renewal, seconds). Only for a held claim on a backend that has it, through the
   shard's breaker as a put is: otherwise KCACHE_EDISABLED, nothing sent, and the caller puts and
   releases as before. Else the put's status; once the exchange went through, kcache__rclaim_end
   sends no release of its own (a failed one: the caller puts again, then releases as before). */
static int kcache__rclaim_can_put_end(const kcache__rclaim *cl) {
    return cl->r && cl->held && !cl->released && cl->s->ops->put_release && cl->s->ops->claim && !cl->r->ro;
}
static kcache_status kcache__rclaim_put_end(kcache__rclaim *cl, const kcache_key *k, const void *data, size_t size, kcache__remote_ev *ev) {
    kcache__remote *r = cl->r;
    kcache__shard *s = cl->s;
    size_t len = 0;
    kcache_status st;
    unsigned char *v;
    int64_t t0;
    if (!kcache__rclaim_can_put_end(cl)) return KCACHE_EDISABLED;
    v = kcache__remote_pack(r, k, data, size, &len, &st);
    if (!v) return st; /* (over the limit: the claim is abandoned as before) */
    if (!kcache__remote_allow(r, s, 1, ev)) {
        KCACHE_FREE(v);
        return KCACHE_EDISABLED;
    }
    kcache__rclaim_stop_renewer(cl);
    t0 = kcache__mono_ns();
    st = s->ops->put_release(s->user, cl->name, v, len, cl->token, r->claim_ms);
    kcache__remote_done(r, s, st, t0, "put and release claim", ev);
    KCACHE_FREE(v);
    if (st == KCACHE_OK) ev->puts++;
    /* the server answered both: released (a refused put too: its waiters look, find nothing, build) */
    if (st == KCACHE_OK || st == KCACHE_ENOSPC || st == KCACHE_EROFS) cl->released = 1;
    return st;
}

/* Whether the claims of keys a and b are on one shard that takes many in one exchange
   (claim_take_many), so that kcache__rclaim_take_first may go through both together. */
static int kcache__rclaim_can_take_first(kcache__remote *r, const kcache_key *a, const kcache_key *b) {
    kcache__shard *s;
    if (!r || r->ro) return 0;
    s = kcache__remote_shard(r, a->digest);
    return s->ops->claim && s->ops->claim_take_many && kcache__remote_shard(r, b->digest) == s;
}

/* Takes in one exchange (claim_take_many) the claim of the first of keys[0..n) (one shard's, n at
   most 64) that nobody holds and whose value is missing, so that a builder finds its next key in
   one round trip however many others are being built (issue 35: one claim after another cost a
   round trip per key someone else held). KCACHE_OK: *which is its index and cl holds it (as after
   kcache__rclaim_init and a take: renewed from now on, ended by kcache__rclaim_end). KCACHE_EEXIST:
   none was free (st[i] says what each take found: KCACHE_EEXIST another builds it or its value is
   there, KCACHE_MISS not tried). Else a failure, or the breaker's KCACHE_EDISABLED, with nothing
   held: the caller tries the keys one by one as before. */
static kcache_status kcache__rclaim_take_first(kcache__remote *r, const kcache_key *const *keys, size_t n, kcache__rclaim *cl, size_t *which,
                                               kcache_status *st, kcache__remote_ev *ev) {
    kcache__shard *s = kcache__remote_shard(r, keys[0]->digest);
    typedef struct kcache__take_first { char name[33], token[200]; uint64_t seq; } take_first;
    take_first *t;
    const char **names, **tokens;
    kcache__rclaim tmp;
    kcache_status rs;
    size_t i, j = n;
    int64_t t0;
    if (n == 0 || n > KCACHE__REMOTE_MANY) return KCACHE_EINVAL;
    if (!kcache__remote_allow(r, s, 1, ev)) return KCACHE_EDISABLED;
    /* (on the heap: kcache keeps to small stacks) */
    if (!(t = (take_first *)KCACHE_MALLOC(n * sizeof *t + 2 * n * sizeof(const char *)))) return KCACHE_ENOMEM;
    names = (const char **)(void *)(t + n);
    tokens = names + n;
    for (i = 0; i < n; i++) { /* a token each, issued now (kcache__rclaim_token) */
        memset(&tmp, 0, sizeof tmp);
        tmp.r = r;
        tmp.s = s;
        kcache__remote_name(keys[i]->digest, tmp.name);
        tmp.seq = kcache__atomic_inc_u64(&r->seq);
        kcache__rclaim_token(&tmp, t[i].token);
        memcpy(t[i].name, tmp.name, sizeof t[i].name);
        t[i].seq = tmp.seq;
        names[i] = t[i].name;
        tokens[i] = t[i].token;
        st[i] = KCACHE_MISS;
    }
    t0 = kcache__mono_ns();
    rs = s->ops->claim_take_many(s->user, names, tokens, n, 1, r->claim_ms, st);
    kcache__remote_done(r, s, rs, t0, "claim", ev);
    for (i = 0; rs == KCACHE_OK && i < n && j == n; i++)
        if (st[i] == KCACHE_OK) j = i;
    if (rs == KCACHE_OK && j < n && kcache__rclaim_init(cl, r, keys[j])) {
        memcpy(cl->token, t[j].token, sizeof cl->token);
        cl->seq = t[j].seq;
        cl->held = 1;
        cl->checked = 1;
        cl->started = kcache__thread_start(&cl->th, kcache__rclaim_renewer, cl);
        *which = j;
    } else if (rs == KCACHE_OK) {
        rs = KCACHE_EEXIST;
    }
    KCACHE_FREE(t);
    return rs;
}

/* ---- the backend kit (kcache_remote_backend): what a backend asks of the tier ---- */

KCACHE_API void kcache_remote_get_params(const kcache_remote *remote, kcache_remote_params *out) {
    const kcache__remote *r = (const kcache__remote *)remote;
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!r) return;
    out->timeout_ms = r->timeout_ms;
    out->connect_ms = r->timeout_ms < KCACHE__REMOTE_CONNECT_MS ? r->timeout_ms : KCACHE__REMOTE_CONNECT_MS;
    out->claim_ms = r->claim_ms;
    out->ttl_s = r->ttl_s;
    out->max_entry = r->max_entry;
    out->ro = r->ro;
    out->is_signed = r->secret != NULL;
    out->ca = r->tls_ca, out->cert = r->tls_cert, out->key = r->tls_key;
    out->prefix = r->prefix;
    out->tls_name = r->tls_name;
}

static void kcache__pub_node_call(const struct kcache__pub *p, const char *name, kcache_status result, int open);
KCACHE_API void kcache_remote_node_call(const kcache_remote *remote, const char *shard, const char *node, kcache_status result, int open) {
    const kcache__remote *r = (const kcache__remote *)remote;
    char name[600];
    if (!r || !r->pub || !shard || !node) return;
    snprintf(name, sizeof name, "%s %s", shard, node);
    kcache__pub_node_call(r->pub, name, result, open);
}

#ifdef KCACHE_HMAC_OPENSSL /* (a signed claim's: without HMAC there is none) */
/* A claim's issue time: the time field of its id (id_len bytes: host:pid:seq:time) as ms since the
   Unix epoch when it is 0.6's "t<hex>", else -1 (a token of 0.4 or 0.5.0, whose field is its client's clock
   in ns, no time kcache can check against a server's). */
static int64_t kcache__rclaim_issued(const char *id, size_t id_len) {
    size_t i = id_len, digits = 0;
    uint64_t v = 0;
    while (i > 0 && id[i - 1] != ':') i--;
    if (i == 0 || i >= id_len || id[i] != 't') return -1;
    for (i++; i < id_len; i++, digits++) {
        int d = kcache__hexval((unsigned char)id[i]);
        if (d < 0 || digits >= 15) return -1;
        v = v << 4 | (uint64_t)d;
    }
    return digits ? (int64_t)v : -1;
}

/* Whether a signed claim token (its id: id_len bytes) is fresh enough to wait for: issued within
   KCACHE__CLAIM_AGES claim lifetimes of now by the clock of the server keeping name's claims (a
   builder re-issues its token at every renewal, so a live builder's is never older than one); a
   0.4 token, within KCACHE__CLAIM_AGES_04 lifetimes of this process's first look at it. A token read
   once and planted again then holds its waiters for a bounded time only. */
#define KCACHE__CLAIM_AGES 3
#define KCACHE__CLAIM_AGES_04 10
static int kcache__rclaim_fresh(kcache__remote *r, const char *name, const char *id, size_t id_len) {
    int64_t issued = kcache__rclaim_issued(id, id_len), now, first;
    uint64_t h;
    unsigned i, at = 0;
    if (issued >= 0) {
        kcache_hash128 d = {0, 0};
        const kcache__shard *s;
        for (i = 0; i < 32; i++) { /* name is the digest in hex (kcache__remote_name): its shard */
            int v = kcache__hexval((unsigned char)name[i]);
            if (v < 0) return 0;
            if (i < 16) d.hi = d.hi << 4 | (uint64_t)v; else d.lo = d.lo << 4 | (uint64_t)v;
        }
        s = kcache__remote_shard(r, d);
        now = kcache__rclaim_clock(s, name) / 1000000;
        return issued <= now + (int64_t)KCACHE__CLAIM_AGES * r->claim_ms && now <= issued + (int64_t)KCACHE__CLAIM_AGES * r->claim_ms;
    }
    {
        kcache_hash_state hs;
        kcache_hash_init(&hs);
        kcache_hash_update(&hs, name, 32);
        kcache_hash_update(&hs, id, id_len);
        h = kcache_hash_final(&hs).lo;
    }
    now = kcache__mono_ns();
    kcache__mutex_lock(&r->seen_mutex);
    for (i = 0; i < sizeof r->seen / sizeof r->seen[0]; i++) {
        if (r->seen[i].first && r->seen[i].h == h) { at = i; break; }
        if (!r->seen[i].first || r->seen[i].first < r->seen[at].first) at = i; /* else the oldest is forgotten */
    }
    if (r->seen[at].h != h || !r->seen[at].first) r->seen[at].h = h, r->seen[at].first = now;
    first = r->seen[at].first;
    kcache__mutex_unlock(&r->seen_mutex);
    return now - first <= (int64_t)KCACHE__CLAIM_AGES_04 * r->claim_ms * 1000000;
}
#endif

KCACHE_API int kcache_remote_claim_honoured(const kcache_remote *remote, const char *name, const char *token, size_t len, long long left_ms) {
    const kcache__remote *r = (const kcache__remote *)remote;
    char mac[66];
    const char *dot;
    if (!r || !name || !token) return 0;
    if (left_ms < 0 || left_ms > (long long)r->claim_ms) return 0; /* -1: no expiry at all */
    if (!r->secret) return 1;
    dot = len > 65 ? token + len - 65 : NULL;
#ifdef KCACHE_HMAC_OPENSSL
    if (!dot || *dot != '.' || strlen(name) != 32 || !kcache__rclaim_sign(r, name, token, (size_t)(dot - token), mac) ||
        CRYPTO_memcmp(mac, dot, 65) != 0)
        return 0;
    return kcache__rclaim_fresh((kcache__remote *)(uintptr_t)r, name, token, (size_t)(dot - token));
#else
    (void)mac; (void)dot;
    return 0; /* a secret without HMAC: kcache__remote_open refused it */
#endif
}

#ifdef KCACHE_HMAC_OPENSSL
struct kcache_remote_mac { EVP_CIPHER_CTX *c; };
#else
struct kcache_remote_mac { int unused; };
#endif

KCACHE_API kcache_remote_mac *kcache_remote_mac_begin(const kcache_remote *remote, const void *head, uint64_t len,
                                                      const unsigned char nonce[KCACHE_REMOTE_MAC_NONCE]) {
#ifdef KCACHE_HMAC_OPENSSL
    const kcache__remote *r = (const kcache__remote *)remote;
    const unsigned char *v = (const unsigned char *)head;
    kcache_remote_mac *m;
    if (!r || !r->secret || !v || !nonce || memcmp(v, "KCREMOTE", 8) != 0 || kcache__get_u16(v + 8) != KCACHE__RV_VERSION_GMAC ||
        kcache__get_u16(v + 10) != KCACHE__RV_GMAC || len != KCACHE__RV_HEADER + (uint64_t)kcache__get_u32(v + 12) + KCACHE__GMAC_NONCE + KCACHE__GMAC_TAG)
        return NULL;
    if ((m = (kcache_remote_mac *)KCACHE_MALLOC(sizeof *m)) == NULL) return NULL;
    if ((m->c = kcache__gmac_begin(r->gmac_key, nonce)) == NULL) { KCACHE_FREE(m); return NULL; }
    return m;
#else
    (void)remote; (void)head; (void)len; (void)nonce;
    return NULL;
#endif
}

KCACHE_API int kcache_remote_mac_add(kcache_remote_mac *m, const void *p, size_t n) {
#ifdef KCACHE_HMAC_OPENSSL
    return m && (p || !n) && kcache__gmac_add(m->c, (const unsigned char *)p, n);
#else
    (void)m; (void)p; (void)n;
    return 0;
#endif
}

KCACHE_API int kcache_remote_mac_end(kcache_remote_mac *m, unsigned char out[KCACHE_REMOTE_MAC_TAG]) {
    int ok = 0;
    if (!m) return 0;
#ifdef KCACHE_HMAC_OPENSSL
    {
        unsigned char tag[KCACHE__GMAC_TAG];
        ok = kcache__gmac_end(m->c, tag);
        if (ok && out) memcpy(out, tag, sizeof tag);
        ok = ok && out;
    }
#else
    (void)out;
#endif
    KCACHE_FREE(m);
    return ok;
}

/* The built-in backend, Redis (kcache_redis.h, see >>companions): defined after this file's
   implementation, in the same file, where KCACHE_REDIS is defined; the tier opens it for the URLs
   of a configuration that names no backend of its own, so that KCACHE_REMOTE alone reaches it. */
#if defined(KCACHE_REDIS) && !defined(_WIN32) /* (on Windows kcache_redis.h stops the build with one #error) */
#ifdef __cplusplus
extern "C" {
#endif
KCACHE_API const kcache_remote_backend *kcache_redis_backend(void);
#ifdef __cplusplus
}
#endif
#define KCACHE__DEFAULT_BACKEND() kcache_redis_backend()
#else
#define KCACHE__DEFAULT_BACKEND() ((const kcache_remote_backend *)NULL)
#endif

/* ---- opening and closing ---- */

static void kcache__remote_close(kcache__remote *r) {
    unsigned i;
    if (!r) return;
    for (i = 0; i < r->n; i++) {
        if (r->shard[i].close) r->shard[i].close(r->shard[i].user);
        KCACHE_FREE(r->shard[i].url);
    }
    KCACHE_FREE(r->shard);
    KCACHE_FREE(r->names);
    if (r->secret) { memset(r->secret, 0, r->secret_len); KCACHE_FREE(r->secret); }
    memset(r->gmac_key, 0, sizeof r->gmac_key);
    if (r->spec) { memset(r->spec, 0, strlen(r->spec)); KCACHE_FREE(r->spec); }
    KCACHE_FREE(r->tls_ca);
    KCACHE_FREE(r->tls_name);
    KCACHE_FREE(r->tls_cert);
    KCACHE_FREE(r->tls_key);
    KCACHE_FREE(r->prefix);
    kcache__mutex_destroy(&r->mutex);
    kcache__mutex_destroy(&r->ring_mutex);
    kcache__mutex_destroy(&r->seen_mutex);
    KCACHE_FREE(r);
}

static int kcache__is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Adds a shard (url as shown; its seed from it). 0 on failure, with *why. */
static int kcache__remote_add(kcache__remote *r, const char *shown, const kcache_remote_ops *ops, void *user,
                              void (*close_fn)(void *), char *why, size_t cap) {
    kcache__shard *s = &r->shard[r->n];
    unsigned i;
    for (i = 0; i < r->n; i++)
        if (strcmp(r->shard[i].url, shown) == 0) { kcache__say(why, cap, "%s is listed twice", shown); return 0; }
    memset(s, 0, sizeof *s);
    if (!(s->url = kcache__strndup(shown, strlen(shown)))) { kcache__say(why, cap, "out of memory"); return 0; }
    s->seed = kcache_hash(shown, strlen(shown)).lo;
    s->ops = ops;
    s->user = user;
    s->close = close_fn;
    s->backoff_ms = r->backoff_ms;
    r->n++;
    return 1;
}

/* One shard of a backend on the kit (kcache_remote_backend) for url (n bytes: a word of the list).
   0 on failure, with *why. */
static int kcache__remote_open_kit_shard(kcache__remote *r, const kcache_remote_backend *be, void *user, const char *url, size_t n,
                                         char *why, size_t cap) {
    char *copy = kcache__strndup(url, n), shown[400];
    void *shard;
    if (!copy) { kcache__say(why, cap, "out of memory"); return 0; }
    shown[0] = 0;
    if (cap) why[0] = 0;
    shard = be->open_shard(user, (const kcache_remote *)r, copy, shown, sizeof shown, why, cap);
    if (!shard) {
        if (!cap || !why[0]) kcache__say(why, cap, "a remote URL was refused by its backend; no remote");
        memset(copy, 0, n); /* (credentials) */
        KCACHE_FREE(copy);
        return 0;
    }
    shown[sizeof shown - 1] = 0;
    if (!kcache__remote_add(r, shown[0] ? shown : copy, be->ops, shard, be->close_shard, why, cap)) {
        if (be->close_shard) be->close_shard(shard);
        memset(copy, 0, n);
        KCACHE_FREE(copy);
        return 0;
    }
    r->shard[r->n - 1].identity = be->identity;
    r->shard[r->n - 1].premac = be->premac;
    memset(copy, 0, n);
    KCACHE_FREE(copy);
    return 1;
}

/* A backend of the caller's with several servers: one shard per URL in urls, each opened by
   cfg->remote_open_shard (kcache_config), or by be's open_shard (be not NULL: a backend on the
   kit, such as the built-in Redis). 0 on failure, with *why (the shards opened so far are closed
   with the remote). */
static int kcache__remote_open_shards(kcache__remote *r, const char *urls, const kcache_config *cfg, const kcache_remote_backend *be,
                                      char *why, size_t cap) {
    const char *p = urls;
    if (!*p) { kcache__say(why, cap, "remote_open_shard without URLs in remote: no remote"); return 0; }
    while (*p) {
        const char *e = p;
        char url[256], said[300]; /* (kcache_remote_shard's url holds 255 bytes) */
        void *shard;
        while (*e && !kcache__is_space(*e)) e++;
        if (r->n == KCACHE__REMOTE_SHARDS) { kcache__say(why, cap, "more than %d remote shards", KCACHE__REMOTE_SHARDS); return 0; }
        if (be) {
            if (!kcache__remote_open_kit_shard(r, be, cfg->remote_user, p, (size_t)(e - p), why, cap)) return 0;
            for (p = e; kcache__is_space(*p); p++) {
            }
            continue;
        }
        if ((size_t)(e - p) >= sizeof url) { kcache__say(why, cap, "a remote URL of more than %u bytes", (unsigned)sizeof url - 1); return 0; }
        memcpy(url, p, (size_t)(e - p));
        url[e - p] = 0;
        said[0] = 0;
        if (!(shard = cfg->remote_open_shard(cfg->remote_user, url, said, sizeof said))) {
            said[sizeof said - 1] = 0; /* (the backend's words, escaped by kcache__say) */
            kcache__say(why, cap, "%s: %s; no remote", url, said[0] ? said : "refused by remote_open_shard");
            return 0;
        }
        if (!kcache__remote_add(r, url, cfg->remote_ops, shard, cfg->remote_close_shard, why, cap)) {
            if (cfg->remote_close_shard) cfg->remote_close_shard(shard);
            return 0;
        }
        for (p = e; kcache__is_space(*p); p++) {
        }
    }
    return 1;
}

/* Sets up the remote tier cfg asks for. *out NULL: none asked for, or (with *why) one that cannot be
   used; the cache then works without it. */
static void kcache__remote_open(kcache__remote **out, const kcache_config *cfg, char *why, size_t cap) {
    const char *urls = cfg->remote ? cfg->remote : "";
    const kcache_remote_backend *be = cfg->remote_backend ? cfg->remote_backend : cfg->remote_ops ? NULL : KCACHE__DEFAULT_BACKEND();
    kcache__remote *r;
    size_t names = 0;
    unsigned i;
    *out = NULL;
    while (kcache__is_space(*urls)) urls++;
    if (!cfg->remote_ops && !cfg->remote_backend && !*urls) return;
    if (cfg->remote_secret && !cfg->remote_secret[0]) { /* a typo must not turn signing off without a word */
        kcache__say(why, cap, "KCACHE_REMOTE_SECRET is set but empty: no remote (unset it for an unsigned remote)");
        return;
    }
    if (cfg->remote_ops && !cfg->remote_backend && (!cfg->remote_ops->get || !cfg->remote_ops->put)) {
        kcache__say(why, cap, "remote_ops needs get and put; no remote");
        return;
    }
    if (cfg->remote_backend && (!be->ops || !be->ops->get || !be->ops->put || !be->open_shard)) {
        kcache__say(why, cap, "remote_backend needs ops with get and put, and open_shard; no remote");
        return;
    }
#ifndef KCACHE_HMAC_OPENSSL
    if (cfg->remote_secret && cfg->remote_secret[0]) {
        kcache__say(why, cap, "KCACHE_REMOTE_SECRET is set but kcache was built without KCACHE_HMAC_OPENSSL: no remote (its values could not be checked)");
        return;
    }
#endif
    if (!cfg->remote_ops && !be) { kcache__say(why, cap, "KCACHE_REMOTE is set but kcache was built without KCACHE_REDIS (the Redis backend, kcache_redis.h): no remote"); return; }
    if (!(r = (kcache__remote *)KCACHE_MALLOC(sizeof *r))) { kcache__say(why, cap, "out of memory"); return; }
    memset(r, 0, sizeof *r);
    kcache__mutex_init(&r->mutex);
    kcache__mutex_init(&r->ring_mutex);
    kcache__mutex_init(&r->seen_mutex);
    r->ro = cfg->remote_mode == KCACHE_REMOTE_RO;
    r->timeout_ms = cfg->remote_timeout_ms ? cfg->remote_timeout_ms : KCACHE__REMOTE_TIMEOUT_MS;
    r->claim_ms = cfg->remote_claim_ms ? cfg->remote_claim_ms : KCACHE__REMOTE_CLAIM_MS;
    r->backoff_ms = cfg->remote_backoff_ms ? cfg->remote_backoff_ms : KCACHE__REMOTE_BACKOFF_MS;
    r->max_entry = cfg->remote_max_entry ? cfg->remote_max_entry : KCACHE__REMOTE_MAX_ENTRY;
    r->ttl_s = cfg->remote_ttl_s;
#if !defined(_WIN32)
    if (gethostname(r->host, sizeof r->host - 1) != 0) r->host[0] = 0;
    r->host[sizeof r->host - 1] = 0;
#endif
    if (cfg->remote_secret && cfg->remote_secret[0]) {
        r->secret_len = strlen(cfg->remote_secret);
        if (!(r->secret = (unsigned char *)kcache__strndup(cfg->remote_secret, r->secret_len))) goto oom;
#ifdef KCACHE_HMAC_OPENSSL
        {
            static const char label[] = "kcache remote gmac v2"; /* with its NUL */
            EVP_MD_CTX *h = EVP_MD_CTX_new();
            int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1 && EVP_DigestUpdate(h, label, sizeof label) == 1 &&
                     EVP_DigestUpdate(h, r->secret, r->secret_len) == 1 && EVP_DigestFinal_ex(h, r->gmac_key, NULL) == 1;
            EVP_MD_CTX_free(h);
            if (!ok) goto oom;
        }
#endif
    }
    r->sign_hmac = cfg->remote_mac == KCACHE_REMOTE_MAC_HMAC;
    if (!(r->spec = kcache__strndup(urls, strlen(urls)))) goto oom;
    if ((cfg->remote_ca && !(r->tls_ca = kcache__strndup(cfg->remote_ca, strlen(cfg->remote_ca)))) ||
        (cfg->remote_cert && !(r->tls_cert = kcache__strndup(cfg->remote_cert, strlen(cfg->remote_cert)))) ||
        (cfg->remote_key && !(r->tls_key = kcache__strndup(cfg->remote_key, strlen(cfg->remote_key)))) ||
        (cfg->remote_prefix && !(r->prefix = kcache__strndup(cfg->remote_prefix, strlen(cfg->remote_prefix)))) ||
        (cfg->remote_tls_name && *cfg->remote_tls_name && !(r->tls_name = kcache__strndup(cfg->remote_tls_name, strlen(cfg->remote_tls_name)))))
        goto oom;
    if (r->prefix) { /* a namespace: printable, no space, no {} (they would move a claim off its value's cluster slot) */
        const char *q;
        char shown[200];
        for (q = r->prefix; *q && *q > ' ' && *q < 0x7f && *q != '{' && *q != '}'; q++) {
        }
        if (*q || q - r->prefix > KCACHE__REDIS_PREFIX_MAX) {
            kcache__say(why, cap, "KCACHE_REMOTE_PREFIX \"%s\": at most %d printable characters, no space, '{' or '}'; no remote",
                        kcache__escs(shown, sizeof shown, r->prefix), KCACHE__REDIS_PREFIX_MAX);
            goto bad;
        }
    }
    if (!(r->shard = (kcache__shard *)KCACHE_MALLOC(sizeof *r->shard * KCACHE__REMOTE_SHARDS))) goto oom;
    if (be) {
        if (!kcache__remote_open_shards(r, urls, cfg, be, why, cap)) goto bad;
    } else if (cfg->remote_open_shard) {
        if (!kcache__remote_open_shards(r, urls, cfg, NULL, why, cap)) goto bad;
    } else {
        if (!kcache__remote_add(r, *urls ? urls : "remote_ops", cfg->remote_ops, cfg->remote_user, NULL, why, cap)) goto bad;
    }
    for (i = 0; i < r->n; i++) names += strlen(r->shard[i].url) + 1;
    if (!(r->names = (char *)KCACHE_MALLOC(names + 1))) goto oom;
    r->names[0] = 0;
    for (i = 0; i < r->n; i++) {
        if (i) strcat(r->names, " ");
        strcat(r->names, r->shard[i].url);
    }
    *out = r;
    return;
oom:
    kcache__say(why, cap, "out of memory");
bad:
    kcache__remote_close(r);
}

#else /* KCACHE_NO_REMOTE: no remote tier. kc->remote stays NULL, so the cache never calls these;
         they keep its calls compiling over the incomplete types above. A configured remote is said
         to be compiled out. */
static KCACHE__UNUSED char *kcache__strndup(const char *s, size_t n) {
    char *p = (char *)KCACHE_MALLOC(n + 1);
    if (p) { memcpy(p, s, n); p[n] = 0; }
    return p;
}
static uint64_t kcache__remote_open_count(kcache__remote *r) { (void)r; return 0; }
static int kcache__remote_is_ro(const kcache__remote *r) { (void)r; return 1; }
static const char *kcache__remote_names(const kcache__remote *r) { (void)r; return ""; }
static uint32_t kcache__remote_claim_ms(const kcache__remote *r) { (void)r; return 0; }
static int kcache__remote_glitch(kcache__remote *r, const kcache_key *k) { (void)r; (void)k; return 0; }
static int kcache__remote_failing(kcache__remote *r, const kcache_key *k) { (void)r; (void)k; return 0; }
static void kcache__remote_describe(const kcache__remote *r, char *out, size_t cap) { (void)r; if (cap) out[0] = 0; }
static void kcache__remote_own_config(const kcache__remote *r, kcache_config *cfg) {
    (void)r;
    cfg->remote = cfg->remote_secret = cfg->remote_ca = cfg->remote_cert = cfg->remote_key = cfg->remote_prefix = cfg->remote_tls_name = NULL;
}
static void kcache__remote_reopen_config(const kcache__remote *r, kcache_config *cfg) { (void)r; (void)cfg; }
static void kcache__remote_attach(kcache__remote *r, const kcache__mem *mem, const struct kcache__pub *pub) { (void)r; (void)mem; (void)pub; }
static const char *kcache__rclaim_url(const kcache__rclaim *cl) { (void)cl; return ""; }
static void kcache__remote_remove(kcache__remote *r, const kcache_key *k, kcache__remote_ev *ev) {
    (void)r; (void)k; memset(ev, 0, sizeof *ev);
}
static void kcache__remote_get(kcache__remote *r, const kcache_key *k, int policy, int want_record, int peek, kcache__read *out,
                               const char **where, kcache__remote_ev *ev) {
    (void)r; (void)k; (void)policy; (void)want_record; (void)peek;
    memset(out, 0, sizeof *out);
    out->status = KCACHE_MISS;
    out->reason = KCACHE_REASON_COLD;
    *where = "";
    memset(ev, 0, sizeof *ev);
}
static kcache_status kcache__remote_put(kcache__remote *r, const kcache_key *k, const void *data, size_t size, int past_breaker,
                                        kcache__remote_ev *ev) {
    (void)r; (void)k; (void)data; (void)size; (void)past_breaker; memset(ev, 0, sizeof *ev);
    return KCACHE_EDISABLED;
}
static void kcache__remote_get_many(kcache__remote *r, kcache__many *mm, size_t n, int policy, kcache__remote_ev *ev) {
    size_t i;
    for (i = 0; i < n; i++) kcache__remote_get(r, mm->rk[i], policy, 0, 0, &mm->rd[i], &mm->where[i], ev);
}
static int kcache__rclaim_init(kcache__rclaim *cl, kcache__remote *r, const kcache_key *k) {
    (void)r; (void)k;
    kcache__rclaim_reset(cl);
    return 0;
}
static kcache_status kcache__rclaim_take(kcache__rclaim *cl, kcache__remote_ev *ev) { (void)cl; (void)ev; return KCACHE_EDISABLED; }
static kcache_status kcache__rclaim_call(kcache__rclaim *cl, int op, uint32_t ms, kcache__remote_ev *ev) {
    (void)cl; (void)op; (void)ms; (void)ev;
    return KCACHE_EDISABLED;
}
static void kcache__rclaim_end(kcache__rclaim *cl, int stored, kcache__remote_ev *ev) { (void)cl; (void)stored; (void)ev; }
static int kcache__rclaim_can_put_end(const kcache__rclaim *cl) { (void)cl; return 0; }
static int kcache__rclaim_can_take_first(kcache__remote *r, const kcache_key *a, const kcache_key *b) {
    (void)r; (void)a; (void)b;
    return 0;
}
static kcache_status kcache__rclaim_take_first(kcache__remote *r, const kcache_key *const *keys, size_t n, kcache__rclaim *cl, size_t *which,
                                               kcache_status *st, kcache__remote_ev *ev) {
    (void)r; (void)keys; (void)n; (void)cl; (void)which; (void)st; memset(ev, 0, sizeof *ev);
    return KCACHE_EDISABLED;
}
static kcache_status kcache__rclaim_put_end(kcache__rclaim *cl, const kcache_key *k, const void *data, size_t size, kcache__remote_ev *ev) {
    (void)cl; (void)k; (void)data; (void)size; memset(ev, 0, sizeof *ev);
    return KCACHE_EDISABLED;
}
static void kcache__remote_close(kcache__remote *r) { (void)r; }
static void kcache__remote_open(kcache__remote **out, const kcache_config *cfg, char *why, size_t cap) {
    const char *urls = cfg->remote ? cfg->remote : "";
    *out = NULL;
    while (*urls == ' ' || *urls == '\t') urls++;
    if (cfg->remote_ops || cfg->remote_backend || *urls)
        kcache__say(why, cap, "%s not used: the remote tier is compiled out (KCACHE_NO_REMOTE)",
                    cfg->remote_backend ? "remote_backend" : cfg->remote_ops ? "remote_ops" : "KCACHE_REMOTE");
}
/* the backend kit: no tier ever hands a kcache_remote to a backend */
KCACHE_API void kcache_remote_get_params(const kcache_remote *remote, kcache_remote_params *out) {
    (void)remote;
    if (out) memset(out, 0, sizeof *out);
}
KCACHE_API void kcache_remote_node_call(const kcache_remote *r, const char *shard, const char *node, kcache_status result, int open) {
    (void)r; (void)shard; (void)node; (void)result; (void)open;
}
KCACHE_API int kcache_remote_claim_honoured(const kcache_remote *remote, const char *name, const char *token, size_t len, long long left_ms) {
    (void)remote; (void)name; (void)token; (void)len; (void)left_ms;
    return 0;
}
KCACHE_API kcache_remote_mac *kcache_remote_mac_begin(const kcache_remote *remote, const void *head, uint64_t len,
                                                      const unsigned char nonce[KCACHE_REMOTE_MAC_NONCE]) {
    (void)remote; (void)head; (void)len; (void)nonce;
    return NULL;
}
KCACHE_API int kcache_remote_mac_add(kcache_remote_mac *m, const void *p, size_t n) { (void)m; (void)p; (void)n; return 0; }
KCACHE_API int kcache_remote_mac_end(kcache_remote_mac *m, unsigned char out[KCACHE_REMOTE_MAC_TAG]) { (void)m; (void)out; return 0; }
#endif /* KCACHE_NO_REMOTE */

/* ============================================================================================== */
/* >>pub  publishing: every process's counters and recent events, for kcache-top                  */
/* ============================================================================================== */

/* DIR/stats is a fixed-size file that every process using the store maps shared. Each open kcache
   claims a slot in it and publishes there, without a lock and without a system call, the counters
   kcache_get_stats reports (the same increments, made beside them under kc->lock), a small table of
   per-unit counts and a ring of its recent events. kcache-top reads it (read-only) from another
   process. Every integer is little-endian; every u64 is read and written as a relaxed atomic.

   header (4096 bytes)
        0  "KCSTATS\0"        8  u32 version (1)          12  u32 header bytes (4096)
       16  u32 slots (64)     20  u32 slot bytes (16896)  24  u32 counters per slot (48)
       28  u32 units per slot (64)   32  u32 events per slot (64)   36  u32 miss reasons (16)
       40  i64 created (ns since 1970)   48  u64 checksum: XXH3-128 lo of bytes 0 .. 48
      128  48 x u64 retired counters: what slots no longer held counted (a closed kcache folds
           its counters in here, and so does whoever reclaims a dead process's slot), so the
           store's totals are retired + every claimed slot's counters
      512  24 remote shards x 128 bytes, what every process using the store counted for each shard
           since the file was made: u64 id (XXH3-128 lo of the shard's URL as shown, low bit set;
           0 = free, taken by compare-and-swap), u64 hits, misses, errors, timeouts, skipped
           calls (fetch-add), then the URL (80 bytes, cut, NUL padded; written after the id is
           taken). A file made before these existed has zeros here: no shards. A backend's node
           row (0.6, kcache_remote_node_call) is an entry of the same table whose id has bit 0
           clear and bit 1 set (XXH3-128 lo of "<shard's URL> <node>"), hits and misses 0.
     3584  24 x 16 bytes, more of shard entry i (0.5): u64 calls made (let through by the breaker;
           fetch-add), i64 breaker open since (ns since 1970: the failure that opened a breaker,
           set by compare-and-swap from 0; back to 0 after a call that succeeds: metrics' gauge).
           A file made before has zeros here, as do writers older than 0.5.
   slot i at 4096 + i * 16896
        0  u64 owner: pid << 32 | the low 31 bits of the process's start time; 0 = free; bit 31
           set while the claimer sets the slot up. Claimed by compare-and-swap; a slot whose pid
           is dead (kill(pid, 0) == ESRCH) or now belongs to a process started at another time is
           reclaimed the same way (the dead's slots first, else the free slot idle the longest).
        8  u64 epoch: odd while the slot is claimed, reset or retired (readers retry), bumped by
           2 every time: a reader that sees it change knows the slot changed hands
       16  u64 domain: XXH3-128 lo of the boot id and pid namespace; pids of another domain (a
           container, another host on NFS) are not judged by kill(): such a slot is reclaimed
           only after KCACHE__PUB_FOREIGN_NS without an event
       24  u64 process start time (clock ticks after boot, /proc/PID/stat field 22; 0: unknown)
       32  i64 opened (ns)     40  i64 last event (ns)     48  u64 events written (the ring's head)
       64  char[16] process name (/proc/self/comm), NUL padded
      128  48 x u64 counters (KCACHE__PUB_HITS_MEM ...; misses of reason r at 16 + r; the remote
           tier's from 32)
      512  64 units x 128 bytes: u64 unit hash (XXH3-128 lo of the unit's name, 0 = empty), u64 hits
           in memory, u64 hits from disk, u64 misses, u64 puts, i64 last event (ns), u64 info
           (bits 0-7: reason of the last miss, 8-23: the name's full length), u64 bytes put,
           then the name (64 bytes, cut, NUL padded). An entry is found at hash & 63 and the 3 after.
     8704  64 events x 128 bytes, a ring kept across owners (each event names its pid; the head
           at 48 only grows): u64 sequence (the slot's n-th event, from 1; 0 = empty,
           all ones while it is written), i64 time (ns), u64 unit hash, u64 size, u64 info (bits
           0-7: kind, 8-15: reason (a kcache_reason; for puts the kcache_status of the store write),
           16-31: the name's full length, 32-63: count (entries, for evictions)), u64 pid, then the
           unit's name (80 bytes, cut, NUL padded)
    16896  the next slot
   The file is created complete (temp file, posix_fallocate so that no page is ever missing, then
   link() into place; a damaged one is replaced by rename) and is never truncated or shrunk: any
   process mapping it would get SIGBUS. When it cannot be created or mapped, the process does not
   publish (a debug line says why) and caching goes on as before. KCACHE_STATS=0 turns it off.

   Who writes what: a slot's owner, always under kc->lock (so a memory hit pays a few plain loads
   and stores in memory no other process writes: no locked instruction); claims, reclaims and the
   retired counters use compare-and-swap / fetch-add. A forked child stops publishing into its
   parent's slot at once and claims its own at its next miss, put or disk hit. */

#define KCACHE__PUB_VERSION 1
#define KCACHE__PUB_HEADER 4096
#define KCACHE__PUB_SLOTS 64
#define KCACHE__PUB_COUNTERS 48
#define KCACHE__PUB_UNITS 64
#define KCACHE__PUB_UNIT_BYTES 128
#define KCACHE__PUB_UNIT_NAME 64
#define KCACHE__PUB_EVENTS 64
#define KCACHE__PUB_EVENT_BYTES 128
#define KCACHE__PUB_EVENT_NAME 80
#define KCACHE__PUB_REASONS 16
#define KCACHE__PUB_CTR_AT 128
#define KCACHE__PUB_SHARDS_AT 512
#define KCACHE__PUB_SHARDS 24
#define KCACHE__PUB_SHARD_BYTES 128
#define KCACHE__PUB_SHARD_URL 80
#define KCACHE__PUB_SHARDS_MORE_AT (KCACHE__PUB_SHARDS_AT + KCACHE__PUB_SHARDS * KCACHE__PUB_SHARD_BYTES) /* 3584 */
#define KCACHE__PUB_SHARD_MORE_BYTES 16
#define KCACHE__PUB_UNITS_AT 512
#define KCACHE__PUB_EVENTS_AT (KCACHE__PUB_UNITS_AT + KCACHE__PUB_UNITS * KCACHE__PUB_UNIT_BYTES)
#define KCACHE__PUB_SLOT_BYTES (KCACHE__PUB_EVENTS_AT + KCACHE__PUB_EVENTS * KCACHE__PUB_EVENT_BYTES)
#define KCACHE__PUB_FILE_BYTES ((uint64_t)KCACHE__PUB_HEADER + (uint64_t)KCACHE__PUB_SLOTS * KCACHE__PUB_SLOT_BYTES)
#define KCACHE__PUB_FOREIGN_NS ((int64_t)86400 * 1000000000) /* a day without an event */
#define KCACHE__PUB_SETTING_UP ((uint64_t)1 << 31)          /* in a slot's owner word: being claimed */

/* Counters: the fields of kcache_stats that count events (the rest are levels read elsewhere). */
enum {
    KCACHE__PUB_HITS_MEM = 0, KCACHE__PUB_HITS_DISK, KCACHE__PUB_MISSES, KCACHE__PUB_PUTS, KCACHE__PUB_EVICTIONS,
    KCACHE__PUB_REJECTS, KCACHE__PUB_BYTES_READ, KCACHE__PUB_BYTES_WRITTEN, KCACHE__PUB_MEM_EVICTIONS,
    KCACHE__PUB_BUILDS, KCACHE__PUB_BUILD_WAITS, KCACHE__PUB_STORE_ERRORS,
    KCACHE__PUB_MISS_REASON = 16, /* + a kcache_reason: misses of that reason, up to 32 */
    /* the tiers below the store (>>remote): kcache_stats' fields of the same names; a process's
       breakers open now = its opens - closes (a closing kcache closes its open ones) */
    KCACHE__PUB_HITS_REMOTE = 32, KCACHE__PUB_HITS_LAYER, KCACHE__PUB_REMOTE_LOOKUPS, KCACHE__PUB_REMOTE_PUTS,
    KCACHE__PUB_REMOTE_ERRORS, KCACHE__PUB_REMOTE_TIMEOUTS, KCACHE__PUB_REMOTE_SKIPPED, KCACHE__PUB_REMOTE_CALLS,
    KCACHE__PUB_REMOTE_LATENCY_NS, KCACHE__PUB_REMOTE_REJECTS, KCACHE__PUB_REMOTE_OPENS, KCACHE__PUB_REMOTE_CLOSES,
    KCACHE__PUB_BUILDS_CLAIMED /* (0.5) builds of a key another process or machine had claimed */
};
/* Event kinds. Memory hits are sampled: one event when a hit records the entry's use in the store
   (the first hit of an entry in memory, then at most one a second per entry). */
enum { KCACHE__PUB_EV_HIT_MEM = 1, KCACHE__PUB_EV_HIT_DISK, KCACHE__PUB_EV_MISS, KCACHE__PUB_EV_PUT, KCACHE__PUB_EV_EVICT,
       KCACHE__PUB_EV_HIT_REMOTE, KCACHE__PUB_EV_HIT_LAYER };
/* unit table entry fields (u64 words) */
enum { KCACHE__PUB_U_HASH, KCACHE__PUB_U_HITS_MEM, KCACHE__PUB_U_HITS_DISK, KCACHE__PUB_U_MISSES, KCACHE__PUB_U_PUTS,
       KCACHE__PUB_U_LAST, KCACHE__PUB_U_INFO, KCACHE__PUB_U_BYTES_PUT, KCACHE__PUB_U_NAME };
/* event fields (u64 words) */
enum { KCACHE__PUB_E_SEQ, KCACHE__PUB_E_TIME, KCACHE__PUB_E_UNIT, KCACHE__PUB_E_SIZE, KCACHE__PUB_E_INFO, KCACHE__PUB_E_PID,
       KCACHE__PUB_E_NAME };
/* slot header fields (u64 words) */
enum { KCACHE__PUB_S_OWNER, KCACHE__PUB_S_EPOCH, KCACHE__PUB_S_DOMAIN, KCACHE__PUB_S_START, KCACHE__PUB_S_OPENED,
       KCACHE__PUB_S_LAST, KCACHE__PUB_S_EVENTS, KCACHE__PUB_S_ZERO, KCACHE__PUB_S_NAME };

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(KCACHE_REASON_COUNT <= KCACHE__PUB_REASONS, "kcache: more miss reasons than the stats file has room for");
#else
typedef char kcache__pub_reasons_fit[(KCACHE_REASON_COUNT <= KCACHE__PUB_REASONS) ? 1 : -1];
#endif

typedef struct kcache__pub {
    unsigned char *map;        /* DIR/stats, mapped shared; NULL: not publishing */
    size_t len;
    unsigned char *slot;       /* this kcache's slot, NULL when it has none */
    uint64_t *ctr;             /* the slot's counters: NULL when not publishing */
    uint64_t *units;           /* the slot's unit table */
    uint64_t owner;            /* the owner word this kcache claimed its slot with */
    uint64_t domain;
    uint32_t pid;              /* the process that claimed the slot (a forked child claims its own) */
    int debug;
    kcache_log_fn log;
    void *log_user;
} kcache__pub;

#ifndef KCACHE_NO_PUB
/* ---- shared-memory words ---- */
static uint64_t kcache__pub_ld(const uint64_t *w) { return kcache__le64(kcache__atomic_load_u64(w)); }
static uint64_t kcache__pub_ld_acq(const uint64_t *w) { return kcache__le64(kcache__atomic_load_u64_acq(w)); }
static void kcache__pub_st(uint64_t *w, uint64_t v) { kcache__atomic_store_u64(w, kcache__le64(v)); }
static void kcache__pub_st_rel(uint64_t *w, uint64_t v) { kcache__atomic_store_u64_rel(w, kcache__le64(v)); }
/* One writer per slot (its owner, under kc->lock): a plain load and store, no locked instruction. */
static void kcache__pub_bump(uint64_t *w, uint64_t n) { kcache__pub_st(w, kcache__pub_ld(w) + n); }
static int kcache__pub_cas(uint64_t *w, uint64_t expect, uint64_t want) {
    return kcache__atomic_cas_u64(w, kcache__le64(expect), kcache__le64(want));
}
static void kcache__pub_fetch_add(uint64_t *w, uint64_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    uint64_t o = kcache__atomic_load_u64(w);
    while (!kcache__atomic_cas_u64(w, o, kcache__le64(kcache__le64(o) + n))) o = kcache__atomic_load_u64(w);
#else
    kcache__atomic_fetch_add_u64(w, n);
#endif
}

/* The stats file is shared memory that kcache writes and kcache-top only reads (mapped read-only
   there): the same accessors for both, taking the map as const (through uintptr_t, not a cast that
   drops the qualifier behind the reader's back: every access is an atomic of kcache__pub_ld/_st). */
static KCACHE__UNUSED unsigned char *kcache__pub_slot_at(const unsigned char *map, unsigned i) {
    return (unsigned char *)(uintptr_t)map + KCACHE__PUB_HEADER + (size_t)i * KCACHE__PUB_SLOT_BYTES;
}
static KCACHE__UNUSED uint64_t *kcache__pub_slot_word(const unsigned char *slot, int field) {
    return (uint64_t *)(uintptr_t)(slot + (size_t)field * 8);
}
static KCACHE__UNUSED uint64_t *kcache__pub_retired(const unsigned char *map) {
    return (uint64_t *)(uintptr_t)(map + KCACHE__PUB_CTR_AT);
}
static KCACHE__UNUSED uint64_t *kcache__pub_unit_at(const unsigned char *slot, unsigned j) {
    return (uint64_t *)(uintptr_t)(slot + KCACHE__PUB_UNITS_AT + (size_t)j * KCACHE__PUB_UNIT_BYTES);
}
static KCACHE__UNUSED uint64_t *kcache__pub_event_at(const unsigned char *slot, unsigned j) {
    return (uint64_t *)(uintptr_t)(slot + KCACHE__PUB_EVENTS_AT + (size_t)j * KCACHE__PUB_EVENT_BYTES);
}
/* Copies a name into shared words (cut to cap bytes, NUL padded) / out of them (always terminated). */
static KCACHE__UNUSED void kcache__pub_put_name(uint64_t *w, size_t cap, const char *s, size_t n) {
    unsigned char buf[KCACHE__PUB_EVENT_NAME];
    size_t i;
    memset(buf, 0, sizeof buf);
    memcpy(buf, s, n < cap ? n : cap);
    for (i = 0; i < cap / 8; i++) {
        uint64_t v;
        memcpy(&v, buf + i * 8, 8);
        kcache__atomic_store_u64(w + i, v);
    }
}
static KCACHE__UNUSED void kcache__pub_get_name(const uint64_t *w, size_t cap, char *out, size_t out_cap) {
    unsigned char buf[KCACHE__PUB_EVENT_NAME + 1];
    size_t i, n;
    for (i = 0; i < cap / 8 && i < KCACHE__PUB_EVENT_NAME / 8; i++) {
        uint64_t v = kcache__atomic_load_u64(w + i);
        memcpy(buf + i * 8, &v, 8);
    }
    buf[i * 8] = 0;
    for (n = 0; n < i * 8 && buf[n]; n++) { /* (a name as it was given: the tools print it escaped) */
    }
    if (!out_cap) return;
    if (n >= out_cap) n = out_cap - 1;
    memcpy(out, buf, n);
    out[n] = 0;
}

/* ---- processes ---- */

/* Incremented in every child of a fork: a kcache inherited across fork() sees the difference and
   stops publishing into its parent's slot. */

#if !defined(_WIN32)
/* A process's start time in clock ticks after boot (/proc/PID/stat field 22) and, with name, its
   name; 0 when unknown. pid 0: this process. */
static KCACHE__UNUSED uint64_t kcache__pub_proc_start(uint32_t pid, char *name, size_t name_cap) {
    char path[64], buf[1024], *p, *q;
    uint64_t v = 0;
    ptrdiff_t n;
    int fd, field;
    if (name && name_cap) name[0] = 0;
    if (pid) snprintf(path, sizeof path, "/proc/%u/stat", (unsigned)pid);
    else snprintf(path, sizeof path, "/proc/self/stat");
    fd = kcache__io_open(path, KCACHE__RD);
    if (fd < 0) return 0;
    n = kcache__io_read(fd, buf, sizeof buf - 1);
    kcache__io_close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    p = strchr(buf, '(');
    q = strrchr(buf, ')');
    if (!p || !q || q < p) return 0;
    if (name && name_cap) {
        size_t l = (size_t)(q - p - 1);
        if (l >= name_cap) l = name_cap - 1;
        memcpy(name, p + 1, l);
        name[l] = 0;
    }
    p = q + 1;
    for (field = 3; field < 22 && *p; field++) { /* after ')': field 3 (state) ... field 22 */
        while (*p == ' ') p++;
        while (*p && *p != ' ') p++;
    }
    while (*p == ' ') p++;
    while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    return v;
}

/* Where a pid means something: this boot of this host, this pid namespace. */
static KCACHE__UNUSED uint64_t kcache__pub_domain(void) {
    unsigned char buf[128];
    kcache__finfo ns;
    size_t len = 0;
    int fd = kcache__io_open("/proc/sys/kernel/random/boot_id", KCACHE__RD);
    memset(buf, 0, sizeof buf);
    if (fd >= 0) {
        ptrdiff_t n = kcache__io_read(fd, buf, 64);
        if (n > 0) len = (size_t)n;
        kcache__io_close(fd);
    }
    if (!len && gethostname((char *)buf, 64) == 0) len = strlen((const char *)buf);
    if (kcache__io_stat("/proc/self/ns/pid", &ns) == 0) {
        uint64_t ino = (uint64_t)ns.ino, dev = (uint64_t)ns.dev;
        memcpy(buf + 64, &ino, 8);
        memcpy(buf + 72, &dev, 8);
    }
    return kcache_hash(buf, sizeof buf).lo | 1; /* never 0: 0 marks a slot not yet set up */
}
#else
/* Win32: the creation time (100 ns units since 1601) stands for the start time, the image's file
   name less ".exe" for the name. 0 when unknown. pid 0: this process. */
static KCACHE__UNUSED uint64_t kcache__pub_proc_start(uint32_t pid, char *name, size_t name_cap) {
    HANDLE p = pid ? OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid) : GetCurrentProcess();
    FILETIME c, x, k, u;
    uint64_t v = 0;
    if (name && name_cap) name[0] = 0;
    if (!p) return 0;
    if (GetProcessTimes(p, &c, &x, &k, &u)) v = ((uint64_t)c.dwHighDateTime << 32) | c.dwLowDateTime;
    if (name && name_cap) {
        WCHAR img[MAX_PATH];
        char u8[MAX_PATH * 3];
        DWORD n = MAX_PATH, i, b = 0;
        int l;
        if (QueryFullProcessImageNameW(p, 0, img, &n)) {
            for (i = 0; i < n; i++)
                if (img[i] == L'\\' || img[i] == L'/') b = i + 1;
            if (n - b > 4 && img[n - 4] == L'.' && (img[n - 3] | 32) == L'e' && (img[n - 2] | 32) == L'x' && (img[n - 1] | 32) == L'e') n -= 4;
            l = WideCharToMultiByte(CP_UTF8, 0, img + b, (int)(n - b), u8, (int)sizeof u8, NULL, NULL);
            if (l > 0) {
                size_t m = (size_t)l < name_cap - 1 ? (size_t)l : name_cap - 1;
                while (m > 0 && m < (size_t)l && ((unsigned char)u8[m] & 0xc0) == 0x80) m--; /* whole characters */
                memcpy(name, u8, m);
                name[m] = 0;
            }
        }
    }
    if (pid) CloseHandle(p);
    return v;
}

/* Where a pid means something: this host (Windows has one process id space per host; a pid
   reused after a reboot is told apart by its creation time). */
static KCACHE__UNUSED uint64_t kcache__pub_domain(void) {
    unsigned char buf[128];
    DWORD n = 64;
    memset(buf, 0, sizeof buf);
    if (!GetComputerNameA((char *)buf, &n)) memset(buf, 0, sizeof buf);
    return kcache_hash(buf, sizeof buf).lo | 1; /* never 0: 0 marks a slot not yet set up */
}
#endif

/* Whether a claimed slot's process may still be running (from this domain's point of view). */
static KCACHE__UNUSED int kcache__pub_alive(const unsigned char *slot, uint64_t domain, int64_t now) {
    uint64_t owner = kcache__pub_ld_acq(kcache__pub_slot_word(slot, KCACHE__PUB_S_OWNER));
    uint32_t pid = (uint32_t)(owner >> 32), start31 = (uint32_t)owner & 0x7fffffffu;
    uint64_t dom = kcache__pub_ld(kcache__pub_slot_word(slot, KCACHE__PUB_S_DOMAIN));
    if (!owner) return 0;
    if (!(owner & KCACHE__PUB_SETTING_UP) && dom != domain) { /* another host or container: only a long silence says it is gone */
        int64_t last = (int64_t)kcache__pub_ld(kcache__pub_slot_word(slot, KCACHE__PUB_S_LAST));
        int64_t opened = (int64_t)kcache__pub_ld(kcache__pub_slot_word(slot, KCACHE__PUB_S_OPENED));
        return (last > opened ? last : opened) > now - KCACHE__PUB_FOREIGN_NS;
    }
    if (pid == 0 || kcache__os_pid_gone(pid)) return 0;
    if (start31) {
        uint64_t now_start = kcache__pub_proc_start(pid, NULL, 0);
        if (now_start && ((uint32_t)now_start & 0x7fffffffu) != start31) return 0; /* the pid was reused */
    }
    return 1;
}

/* ---- the file ---- */

static KCACHE__UNUSED void kcache__pub_header(unsigned char *h) {
    memset(h, 0, KCACHE__PUB_HEADER);
    memcpy(h, "KCSTATS", 8);
    kcache__put_u32(h + 8, KCACHE__PUB_VERSION);
    kcache__put_u32(h + 12, KCACHE__PUB_HEADER);
    kcache__put_u32(h + 16, KCACHE__PUB_SLOTS);
    kcache__put_u32(h + 20, KCACHE__PUB_SLOT_BYTES);
    kcache__put_u32(h + 24, KCACHE__PUB_COUNTERS);
    kcache__put_u32(h + 28, KCACHE__PUB_UNITS);
    kcache__put_u32(h + 32, KCACHE__PUB_EVENTS);
    kcache__put_u32(h + 36, KCACHE__PUB_REASONS);
    kcache__put_u64(h + 40, (uint64_t)kcache__now_ns());
    kcache__put_u64(h + 48, kcache_hash(h, 48).lo);
}
/* 1: a stats file of this layout; 0: damaged (replace it); -1: a newer version (leave it alone). */
static KCACHE__UNUSED int kcache__pub_valid(const unsigned char *h, uint64_t file_size) {
    if (memcmp(h, "KCSTATS", 8) != 0 || kcache__get_u64(h + 48) != kcache_hash(h, 48).lo) return 0;
    if (kcache__get_u32(h + 8) > KCACHE__PUB_VERSION) return -1;
    if (kcache__get_u32(h + 8) != KCACHE__PUB_VERSION || kcache__get_u32(h + 12) != KCACHE__PUB_HEADER ||
        kcache__get_u32(h + 16) != KCACHE__PUB_SLOTS || kcache__get_u32(h + 20) != KCACHE__PUB_SLOT_BYTES ||
        kcache__get_u32(h + 24) != KCACHE__PUB_COUNTERS || kcache__get_u32(h + 28) != KCACHE__PUB_UNITS ||
        kcache__get_u32(h + 32) != KCACHE__PUB_EVENTS || kcache__get_u32(h + 36) != KCACHE__PUB_REASONS)
        return 0;
    return file_size == KCACHE__PUB_FILE_BYTES ? 1 : 0;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void kcache__pub_say(const kcache__pub *p, const char *fmt, ...) {
    char raw[600], line[1200];
    va_list ap;
    int n;
    if (!p->debug) return;
    va_start(ap, fmt);
    n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    kcache__esc(line, sizeof line, raw, n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1); /* as kcache__log */
    if (p->log) p->log(p->log_user, line);
    else fprintf(stderr, "kcache: %s\n", line);
}

/* Creates a complete stats file under a temp name and links it into place (replace: renames it over
   a damaged one). 0, or an errno. */
static int kcache__pub_create(kcache__store *st, int replace) {
    unsigned char *hdr = (unsigned char *)kcache__mem_alloc(&st->mem, KCACHE__PUB_HEADER); /* (not on the stack: small thread stacks) */
    char tmp[64];
    int fd, e = 0;
    if (!hdr) return ENOMEM;
    if (kcache__shortfall(st, KCACHE__PUB_FILE_BYTES)) { kcache__mem_free(&st->mem, hdr); return ENOSPC; } /* the filesystem's reserve */
    snprintf(tmp, sizeof tmp, "%u-stats-%llx.tmp", (unsigned)kcache__pid(), (unsigned long long)kcache__now_ns());
    fd = kcache__io_openat(st->tmpfd, tmp, KCACHE__RW | KCACHE__CREATE | KCACHE__EXCL | kcache__gmode(st));
    if (fd < 0) {
        e = errno ? errno : EIO;
        kcache__mem_free(&st->mem, hdr);
        return e;
    }
    if (kcache__io_chmod(fd, kcache__file_mode(st)) != 0) e = errno ? errno : EIO; /* not the umask's */
    kcache__pub_header(hdr);
    if (kcache__io_pwrite(fd, hdr, KCACHE__PUB_HEADER, 0) != (ptrdiff_t)KCACHE__PUB_HEADER) e = errno ? errno : EIO;
    kcache__mem_free(&st->mem, hdr);
    /* every block allocated now: a page first touched through the mapping on a full disk would be
       SIGBUS, not an error */
    if (!e) e = kcache__io_allocate(fd, (uint64_t)KCACHE__PUB_FILE_BYTES);
    if (kcache__io_close(fd) != 0 && !e) e = errno ? errno : EIO;
    if (!e) {
        if (replace) {
            if (kcache__io_rename(st->tmpfd, tmp, st->dirfd, "stats") != 0) e = errno ? errno : EIO;
        } else if (kcache__io_link(st->tmpfd, tmp, st->dirfd, "stats") != 0 && errno != EEXIST) {
            e = errno ? errno : EIO; /* EEXIST: another process made it first; use theirs */
        }
    }
    if (e || !replace) kcache__io_unlink(st->tmpfd, tmp);
    return e;
}

/* Moves a slot's counters into the retired ones and zeroes them (the slot's epoch is odd). */
static void kcache__pub_fold(unsigned char *map, unsigned char *slot) {
    uint64_t *c = kcache__pub_slot_word(slot, KCACHE__PUB_CTR_AT / 8), *r = kcache__pub_retired(map);
    int i;
    for (i = 0; i < KCACHE__PUB_COUNTERS; i++) {
        uint64_t v = kcache__pub_ld(c + i);
        if (v) kcache__pub_fetch_add(r + i, v);
        kcache__pub_st(c + i, 0);
    }
}

/* Claims a slot for this kcache: a dead process's first (its counters are folded into the retired
   ones at once), else the free slot idle the longest (the events of processes that closed stay
   readable as long as possible). 1 when it has one. */
static int kcache__pub_claim(kcache__pub *p) {
    char name[16];
    uint64_t start = kcache__pub_proc_start(0, name, sizeof name);
    uint64_t owner = ((uint64_t)kcache__pid() << 32) | (start & 0x7fffffffu);
    int64_t now = kcache__now_ns();
    unsigned i, attempt;
    p->slot = NULL;
    p->ctr = NULL;
    p->units = NULL;
    for (attempt = 0; attempt < 4 * KCACHE__PUB_SLOTS; attempt++) {
        unsigned char *pick = NULL;
        uint64_t o = 0, e;
        int64_t idle = INT64_MAX;
        unsigned at = 0;
        size_t w;
        for (i = 0; i < KCACHE__PUB_SLOTS && !pick; i++) {
            unsigned char *s = kcache__pub_slot_at(p->map, i);
            uint64_t so = kcache__pub_ld_acq(kcache__pub_slot_word(s, KCACHE__PUB_S_OWNER));
            if (so && !kcache__pub_alive(s, p->domain, now)) { pick = s; o = so; at = i; }
        }
        for (i = 0; i < KCACHE__PUB_SLOTS && !o; i++) {
            unsigned char *s = kcache__pub_slot_at(p->map, i);
            int64_t last = (int64_t)kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_LAST));
            int64_t opened = (int64_t)kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_OPENED));
            if (kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_OWNER))) continue;
            if (opened > last) last = opened;
            if (last < idle) { idle = last; pick = s; at = i; }
        }
        if (!pick) break;
        /* the setting-up bit says "being claimed": nobody judges this slot by its other fields yet */
        if (!kcache__pub_cas(kcache__pub_slot_word(pick, KCACHE__PUB_S_OWNER), o, owner | KCACHE__PUB_SETTING_UP)) continue;
        e = kcache__pub_ld(kcache__pub_slot_word(pick, KCACHE__PUB_S_EPOCH));
        kcache__pub_st(kcache__pub_slot_word(pick, KCACHE__PUB_S_EPOCH), e | 1); /* odd: readers wait for it */
        kcache__atomic_fence();
        if (o) kcache__pub_fold(p->map, pick); /* a dead process's work still counts */
        /* everything but the owner, the epoch, the event ring and its head (history, kept) */
        for (w = 2; w < KCACHE__PUB_EVENTS_AT / 8; w++)
            if (w != KCACHE__PUB_S_EVENTS) kcache__pub_st(kcache__pub_slot_word(pick, (int)w), 0);
        kcache__pub_st(kcache__pub_slot_word(pick, KCACHE__PUB_S_DOMAIN), p->domain);
        kcache__pub_st(kcache__pub_slot_word(pick, KCACHE__PUB_S_START), start);
        kcache__pub_st(kcache__pub_slot_word(pick, KCACHE__PUB_S_OPENED), (uint64_t)now);
        kcache__pub_put_name(kcache__pub_slot_word(pick, KCACHE__PUB_S_NAME), 16, name, strlen(name));
        kcache__pub_st_rel(kcache__pub_slot_word(pick, KCACHE__PUB_S_EPOCH), (e | 1) + 1);
        kcache__pub_st_rel(kcache__pub_slot_word(pick, KCACHE__PUB_S_OWNER), owner);
        p->slot = pick;
        p->ctr = kcache__pub_slot_word(pick, KCACHE__PUB_CTR_AT / 8);
        p->units = kcache__pub_slot_word(pick, KCACHE__PUB_UNITS_AT / 8);
        p->owner = owner;
        p->pid = kcache__cheap_pid();
        if (o) kcache__pub_say(p, "stats: slot %u of process %u (gone) reclaimed", at, (unsigned)(o >> 32));
        return 1;
    }
    kcache__pub_say(p, "stats: all %d slots of the stats file are in use; this kcache does not publish", KCACHE__PUB_SLOTS);
    return 0;
}

/* Opens (creating when needed) DIR/stats and claims a slot. Never fails the caller: when anything
   is wrong the kcache does not publish, and with debugging on a line says why. */
static KCACHE__UNUSED void kcache__pub_open(kcache__pub *p, kcache__store *st, const kcache_config *cfg) {
    kcache__finfo sb;
    unsigned char hdr[64]; /* what kcache__pub_valid reads */
    int fd = -1, attempt, v = 0;
    void *m;
    memset(p, 0, sizeof *p);
    p->debug = cfg ? cfg->debug : 0;
    p->log = cfg ? cfg->log : NULL;
    p->log_user = cfg ? cfg->log_user : NULL;
    if (!st) return;
    if (cfg && !cfg->publish) {
        kcache__pub_say(p, "stats: not published (KCACHE_STATS=0)");
        return;
    }
    for (attempt = 0; attempt < 3; attempt++) {
        fd = kcache__open_in(st, "stats", KCACHE__RW);
        if (fd < 0 && errno == ENOENT) {
            int e = kcache__pub_create(st, 0);
            if (e) { kcache__pub_say(p, "stats: cannot create %s/stats (%s); not published", st->dir, strerror(e)); return; }
            continue;
        }
        if (fd < 0 && (errno == ELOOP || errno == EISDIR || errno == ENXIO) && attempt < 2) {
            /* a symlink, directory or FIFO in its place: kcache's own name, cleared (never followed) */
            kcache__pub_say(p, "stats: %s/stats is not a regular file; replacing it", st->dir);
            kcache__clear_name(st, st->dirfd, "stats");
            continue;
        }
        if (fd < 0) { kcache__pub_say(p, "stats: cannot open %s/stats (%s); not published", st->dir, strerror(errno)); return; }
        if (kcache__io_fstat(fd, &sb) != 0 || sb.kind != KCACHE__KIND_FILE || !kcache__trusted(st, &sb)) v = 0;
        else if ((sb.perm & 0777) != kcache__file_mode(st) && (sb.uid != st->uid || kcache__io_chmod(fd, kcache__file_mode(st)) != 0)) v = 0;
        else if (sb.size < KCACHE__PUB_HEADER || kcache__io_pread(fd, hdr, sizeof hdr, 0) != (ptrdiff_t)sizeof hdr) v = 0;
        else v = kcache__pub_valid(hdr, (uint64_t)sb.size);
        if (v != 0) break;
        kcache__io_close(fd); /* damaged or of another layout: a new one takes its place, by rename */
        fd = -1;
        kcache__pub_say(p, "stats: %s/stats is damaged; replacing it", st->dir);
        if (kcache__pub_create(st, 1) != 0) break;
    }
    if (fd < 0 || v != 1) {
        if (v < 0) kcache__pub_say(p, "stats: %s/stats is of a newer version; not published", st->dir);
        if (fd >= 0) kcache__io_close(fd);
        return;
    }
    m = kcache__io_map(fd, (size_t)KCACHE__PUB_FILE_BYTES);
    kcache__io_close(fd);
    if (!m) {
        kcache__pub_say(p, "stats: cannot map %s/stats (%s); not published", st->dir, strerror(errno));
        return;
    }
    p->map = (unsigned char *)m;
    p->len = (size_t)KCACHE__PUB_FILE_BYTES;
    p->domain = kcache__pub_domain();
    if (!kcache__pub_claim(p)) {
        kcache__io_unmap(p->map, p->len);
        p->map = NULL;
    }
}

/* KCACHE_STATS_DIR: a kcache without a store of its own publishes in dir. The directory is opened
   as a store's is (kcache__resolve_store_dir: every component checked, no symlink another user
   controls, created 0700; kcache__store_proven: nothing in it but kcache's files; its tmp/ checked
   as a level), but nothing of a store is made in it: no lock, config.file, e/ or i/, only stats
   and its temp file. *st: the directory's handle (closed at kcache_close), NULL when refused, with
   a debug line saying why; the process runs on either way. */
static KCACHE__UNUSED void kcache__pub_open_dir(kcache__pub *p, kcache__store **st, const char *dir, const kcache_config *cfg) {
    kcache__store *d;
    kcache__finfo top;
    char why[400];
    *st = NULL;
    memset(p, 0, sizeof *p);
    p->debug = cfg->debug;
    p->log = cfg->log;
    p->log_user = cfg->log_user;
    if (!cfg->publish) { kcache__pub_say(p, "stats: not published (KCACHE_STATS=0)"); return; }
    if (!(d = kcache__store_new(dir, cfg))) return;
    why[0] = 0;
    d->dirfd = kcache__resolve_store_dir(d, dir, 1, &top, why, sizeof why);
    if (d->dirfd >= 0 && d->readonly) kcache__say(why, sizeof why, "%s is root's: not writable here", dir);
    if (d->dirfd >= 0 && !d->readonly && kcache__store_proven(d, why, sizeof why))
        d->tmpfd = kcache__level_open(d, d->dirfd, dir, "tmp", 1, why, sizeof why);
    if (d->tmpfd < 0) {
        kcache__pub_say(p, "stats: KCACHE_STATS_DIR refused: %s; not published", why[0] ? why : strerror(errno));
        kcache__store_close(d);
        return;
    }
    kcache__pub_open(p, d, cfg);
    if (!p->map) { kcache__store_close(d); return; }
    kcache__pub_say(p, "stats: published in %s/stats (KCACHE_STATS_DIR)", dir);
    *st = d;
}

/* Gives the slot back: its counters go to the retired ones, its events stay for the record. */
static KCACHE__UNUSED void kcache__pub_close(kcache__pub *p) {
    if (p->map && p->slot && p->pid == kcache__pid() &&
        kcache__pub_ld(kcache__pub_slot_word(p->slot, KCACHE__PUB_S_OWNER)) == p->owner) {
        uint64_t *ep = kcache__pub_slot_word(p->slot, KCACHE__PUB_S_EPOCH);
        uint64_t e = kcache__pub_ld(ep);
        unsigned j;
        kcache__pub_st(ep, e | 1);
        kcache__atomic_fence();
        kcache__pub_fold(p->map, p->slot);
        for (j = 0; j < KCACHE__PUB_UNITS; j++) kcache__pub_st(kcache__pub_unit_at(p->slot, j), 0);
        kcache__pub_st_rel(ep, (e | 1) + 1);
        kcache__pub_cas(kcache__pub_slot_word(p->slot, KCACHE__PUB_S_OWNER), p->owner, 0);
    }
    if (p->map) kcache__io_unmap(p->map, p->len);
    memset(p, 0, sizeof *p);
}

/* A forked child (a kcache inherited across fork) claims a slot of its own (kc->lock held). Only
   the slower paths (misses, puts, disk hits) look: a child's memory hits before its first such
   call count in its parent's slot, as getpid costs a system call the memory hit cannot afford. */
static int kcache__pub_ready(kcache__pub *p) {
    uint32_t pid;
    if (!p->map) return 0;
    if ((pid = kcache__cheap_pid()) != p->pid) {
        p->domain = kcache__pub_domain();
        kcache__pub_claim(p);
        p->pid = pid; /* one try per fork */
    }
    return p->ctr != NULL;
}

/* ---- publishing (every call with kc->lock held) ---- */

/* Beside every `kc->stats.X += n`: the same increment in the slot. */
static KCACHE__UNUSED void kcache__pub_add(kcache__pub *p, int counter, uint64_t n) {
    if (KCACHE__LIKELY(p->ctr != NULL)) kcache__pub_bump(p->ctr + counter, n);
}

/* Remote shard i's entry in the header's shard table. */
static KCACHE__UNUSED uint64_t *kcache__pub_shard_at(const unsigned char *map, unsigned i) {
    return (uint64_t *)(uintptr_t)(map + KCACHE__PUB_SHARDS_AT + (size_t)i * KCACHE__PUB_SHARD_BYTES);
}
/* The rest of shard entry i: calls made, breaker open since. */
static KCACHE__UNUSED uint64_t *kcache__pub_shard_more_at(const unsigned char *map, unsigned i) {
    return (uint64_t *)(uintptr_t)(map + KCACHE__PUB_SHARDS_MORE_AT + (size_t)i * KCACHE__PUB_SHARD_MORE_BYTES);
}
/* The shard table's entry for url (found, or taken now), or NULL (not publishing, or the table is
   full: that shard goes uncounted there); *more: the rest of that entry (or NULL). */
static KCACHE__UNUSED uint64_t *kcache__pub_row(const kcache__pub *p, uint64_t id, const char *url, uint64_t **more) {
    unsigned i;
    *more = NULL;
    if (!p->map) return NULL;
    for (i = 0; i < KCACHE__PUB_SHARDS; i++) {
        uint64_t *e = kcache__pub_shard_at(p->map, i);
        int mine = kcache__pub_ld(e) == id;
        if (!mine && kcache__pub_ld(e) == 0 && kcache__pub_cas(e, 0, id)) {
            kcache__pub_put_name(e + 6, KCACHE__PUB_SHARD_URL, url, strlen(url));
            mine = 1;
        }
        if (mine || kcache__pub_ld(e) == id) { /* (or another process took it for the same URL just now) */
            *more = kcache__pub_shard_more_at(p->map, i);
            return e;
        }
    }
    return NULL;
}
/* A shard's row: its id has the low bit set (a node's, kcache__pub_node_call's, bit 1 and not bit 0). */
static KCACHE__UNUSED uint64_t *kcache__pub_shard(const kcache__pub *p, const char *url, uint64_t **more) {
    return kcache__pub_row(p, kcache_hash(url, strlen(url)).lo | 1, url, more);
}
/* One call to a backend's node (name: "<shard> <node>"), counted in the node's row as a shard's call
   is in its row (kcache_remote_node_call says what result and open mean). */
static KCACHE__UNUSED void kcache__pub_node_call(const kcache__pub *p, const char *name, kcache_status result, int open) {
    uint64_t *more, *e = kcache__pub_row(p, (kcache_hash(name, strlen(name)).lo & ~(uint64_t)1) | 2, name, &more);
    if (!e) return;
    if (result == KCACHE_EDISABLED) {
        kcache__pub_fetch_add(e + 1 + 4, 1); /* skipped */
    } else {
        kcache__pub_fetch_add(more, 1); /* made */
        if (result != KCACHE_OK && result != KCACHE_MISS && result != KCACHE_EEXIST) {
            kcache__pub_fetch_add(e + 1 + 2, 1); /* errors */
            if (result == KCACHE_ETIMEOUT) kcache__pub_fetch_add(e + 1 + 3, 1);
        }
    }
    if (open) {
        if (!kcache__pub_ld(more + 1)) kcache__pub_cas(more + 1, 0, (uint64_t)kcache__now_ns());
    } else if (kcache__pub_ld(more + 1)) {
        kcache__pub_st(more + 1, 0);
    }
}
/* After a call to a shard (more: its kcache__pub_shard's): counted, and its breaker's time. */
static KCACHE__UNUSED void kcache__pub_shard_call(uint64_t *more, int failed) {
    if (!more) return;
    kcache__pub_fetch_add(more, 1);
    if (failed) {
        if (!kcache__pub_ld(more + 1)) kcache__pub_cas(more + 1, 0, (uint64_t)kcache__now_ns());
    } else if (kcache__pub_ld(more + 1)) {
        kcache__pub_st(more + 1, 0); /* a call got through: the shard answers again */
    }
}

/* The unit's entry in this slot's table, or NULL (probing hash & 63 and the 3 after). */
static uint64_t *kcache__pub_unit_find(const kcache__pub *p, uint64_t h) {
    unsigned j;
    for (j = 0; j < 4; j++) {
        uint64_t *u = p->units + (size_t)((h + j) & (KCACHE__PUB_UNITS - 1)) * (KCACHE__PUB_UNIT_BYTES / 8);
        if (kcache__pub_ld(u + KCACHE__PUB_U_HASH) == h) return u;
    }
    return NULL;
}
/* The unit's entry, made when missing (in an empty place, else over the least recent of the 4). */
static uint64_t *kcache__pub_unit_get(kcache__pub *p, const char *unit, uint64_t h, int64_t now) {
    uint64_t *u = kcache__pub_unit_find(p, h), *best = NULL;
    unsigned j;
    size_t w, n;
    if (u) return u;
    for (j = 0; j < 4; j++) {
        uint64_t *c = p->units + (size_t)((h + j) & (KCACHE__PUB_UNITS - 1)) * (KCACHE__PUB_UNIT_BYTES / 8);
        if (!kcache__pub_ld(c + KCACHE__PUB_U_HASH)) { best = c; break; }
        if (!best || kcache__pub_ld(c + KCACHE__PUB_U_LAST) < kcache__pub_ld(best + KCACHE__PUB_U_LAST)) best = c;
    }
    kcache__pub_st(best + KCACHE__PUB_U_HASH, 0); /* readers drop what they read while it changes */
    kcache__atomic_fence_release();
    for (w = 1; w < KCACHE__PUB_U_NAME; w++) kcache__pub_st(best + w, 0);
    n = strlen(unit);
    kcache__pub_st(best + KCACHE__PUB_U_INFO, (uint64_t)(n & 0xffff) << 8);
    kcache__pub_st(best + KCACHE__PUB_U_LAST, (uint64_t)now);
    kcache__pub_put_name(best + KCACHE__PUB_U_NAME, KCACHE__PUB_UNIT_NAME, unit, n);
    kcache__pub_st_rel(best + KCACHE__PUB_U_HASH, h);
    return best;
}
static uint64_t kcache__pub_unit_hash(const char *unit) {
    uint64_t h = kcache_hash(unit, strlen(unit)).lo; /* = kcache__node's unit_hash */
    return h ? h : 1;
}

/* The memory-hit path: two counters and the unit's hit count; a unit not in the table (only
   slow paths add one) is counted in the totals only. Everything is loaded before the first store
   (the stores could alias p as far as the compiler knows). A unit whose hash is 0 (one in 2^64)
   would bump an empty entry, which readers ignore. */
static KCACHE__UNUSED void kcache__pub_hit_mem(kcache__pub *p, uint64_t unit_hash, uint64_t size) {
    uint64_t *c = p->ctr, *units = p->units;
    unsigned j;
    if (!KCACHE__LIKELY(c != NULL)) return;
    kcache__pub_bump(c + KCACHE__PUB_HITS_MEM, 1);
    kcache__pub_bump(c + KCACHE__PUB_BYTES_READ, size);
    for (j = 0; j < 4; j++) {
        uint64_t *u = units + (size_t)((unit_hash + j) & (KCACHE__PUB_UNITS - 1)) * (KCACHE__PUB_UNIT_BYTES / 8);
        if (kcache__pub_ld(u + KCACHE__PUB_U_HASH) == unit_hash) {
            kcache__pub_bump(u + KCACHE__PUB_U_HITS_MEM, 1);
            return;
        }
    }
}

/* Appends an event to the slot's ring. unit_hash: kcache_hash(unit).lo when the caller has it (a
   kcache__node's unit_hash), else 0; now: the time, 0 to read the clock. A sampled memory hit
   only refreshes its unit's entry when the table has it (the hit path keeps its own count). */
static KCACHE__UNUSED void kcache__pub_event(kcache__pub *p, int kind, const char *unit, uint64_t unit_hash, uint64_t size,
                                             int reason, uint64_t count, int64_t now) {
    uint64_t *hd, *e, seq, h;
    size_t n;
    if (!kcache__pub_ready(p)) return;
    if (!now) now = kcache__now_ns();
    if (!unit) unit = "";
    n = strlen(unit);
    h = !n ? 0 : unit_hash ? unit_hash : kcache__pub_unit_hash(unit);
    hd = kcache__pub_slot_word(p->slot, KCACHE__PUB_S_EVENTS);
    seq = kcache__pub_ld(hd) + 1;
    e = kcache__pub_event_at(p->slot, (unsigned)((seq - 1) % KCACHE__PUB_EVENTS));
    kcache__pub_st(e + KCACHE__PUB_E_SEQ, ~(uint64_t)0); /* being written */
    kcache__atomic_fence_release();
    kcache__pub_st(e + KCACHE__PUB_E_TIME, (uint64_t)now);
    kcache__pub_st(e + KCACHE__PUB_E_UNIT, h);
    kcache__pub_st(e + KCACHE__PUB_E_SIZE, size);
    kcache__pub_st(e + KCACHE__PUB_E_INFO, ((uint64_t)kind & 0xff) | (((uint64_t)reason & 0xff) << 8) |
                                               ((uint64_t)(n > 0xffff ? 0xffff : n) << 16) | ((count & 0xffffffffu) << 32));
    kcache__pub_st(e + KCACHE__PUB_E_PID, p->owner >> 32);
    kcache__pub_put_name(e + KCACHE__PUB_E_NAME, KCACHE__PUB_EVENT_NAME, unit, n);
    kcache__pub_st_rel(e + KCACHE__PUB_E_SEQ, seq);
    kcache__pub_st_rel(hd, seq);
    kcache__pub_st(kcache__pub_slot_word(p->slot, KCACHE__PUB_S_LAST), (uint64_t)now);
    if (kind == KCACHE__PUB_EV_HIT_MEM) {
        uint64_t *u = kcache__pub_unit_find(p, h);
        if (u) kcache__pub_st(u + KCACHE__PUB_U_LAST, (uint64_t)now);
    } else if (n && kind != KCACHE__PUB_EV_EVICT) {
        uint64_t *u = kcache__pub_unit_get(p, unit, h, now);
        kcache__pub_st(u + KCACHE__PUB_U_LAST, (uint64_t)now);
        switch (kind) {
        case KCACHE__PUB_EV_HIT_DISK: kcache__pub_bump(u + KCACHE__PUB_U_HITS_DISK, 1); break;
        case KCACHE__PUB_EV_PUT:
            kcache__pub_bump(u + KCACHE__PUB_U_PUTS, 1);
            kcache__pub_bump(u + KCACHE__PUB_U_BYTES_PUT, size);
            break;
        case KCACHE__PUB_EV_MISS:
            kcache__pub_bump(u + KCACHE__PUB_U_MISSES, 1);
            kcache__pub_st(u + KCACHE__PUB_U_INFO, (kcache__pub_ld(u + KCACHE__PUB_U_INFO) & ~(uint64_t)0xff) | ((uint64_t)reason & 0xff));
            break;
        default: break;
        }
    }
}

/* The counters and events of the other calls kcache makes on its slow paths. */
static KCACHE__UNUSED void kcache__pub_hit_disk(kcache__pub *p, const char *unit, uint64_t unit_hash, uint64_t size, int64_t now) {
    kcache__pub_event(p, KCACHE__PUB_EV_HIT_DISK, unit, unit_hash, size, KCACHE_REASON_HIT, 0, now);
    kcache__pub_add(p, KCACHE__PUB_HITS_DISK, 1);
    kcache__pub_add(p, KCACHE__PUB_BYTES_READ, size);
}
static KCACHE__UNUSED void kcache__pub_miss(kcache__pub *p, const char *unit, kcache_reason r) {
    kcache__pub_event(p, KCACHE__PUB_EV_MISS, unit, 0, 0, (int)r, 0, 0);
    kcache__pub_add(p, KCACHE__PUB_MISSES, 1);
    kcache__pub_add(p, KCACHE__PUB_MISS_REASON + (int)r, 1);
    if (r == KCACHE_REASON_REJECTED) kcache__pub_add(p, KCACHE__PUB_REJECTS, 1);
}
static KCACHE__UNUSED void kcache__pub_put(kcache__pub *p, const char *unit, uint64_t size, kcache_status s) {
    kcache__pub_event(p, KCACHE__PUB_EV_PUT, unit, 0, size, (int)s, 0, 0);
    kcache__pub_add(p, KCACHE__PUB_PUTS, 1);
    kcache__pub_add(p, KCACHE__PUB_BYTES_WRITTEN, size);
}
/* units: the evicted units when known (with KCACHE_DEBUG), else "" */
static KCACHE__UNUSED void kcache__pub_evict(kcache__pub *p, uint64_t entries, uint64_t bytes, const char *units) {
    if (!entries) return;
    kcache__pub_event(p, KCACHE__PUB_EV_EVICT, units, 0, bytes, KCACHE_REASON_EVICTED, entries, 0);
    kcache__pub_add(p, KCACHE__PUB_EVICTIONS, entries);
}

#else /* KCACHE_NO_PUB: nothing is published; the calls the cache makes are no-ops */
static void kcache__pub_open(kcache__pub *p, kcache__store *st, const kcache_config *cfg) {
    memset(p, 0, sizeof *p);
    if (st && cfg && cfg->publish && cfg->debug) {
        const char *line = "stats: not published (compiled out: KCACHE_NO_PUB)";
        if (cfg->log) cfg->log(cfg->log_user, line);
        else fprintf(stderr, "kcache: %s\n", line);
    }
}
static void kcache__pub_close(kcache__pub *p) { (void)p; }
static void kcache__pub_open_dir(kcache__pub *p, kcache__store **st, const char *dir, const kcache_config *cfg) {
    *st = NULL;
    (void)dir;
    kcache__pub_open(p, NULL, cfg);
}
static void kcache__pub_add(kcache__pub *p, int counter, uint64_t n) { (void)p; (void)counter; (void)n; }
static void kcache__pub_event(kcache__pub *p, int kind, const char *unit, uint64_t unit_hash, uint64_t size, int reason,
                              uint64_t count, int64_t now) {
    (void)p; (void)kind; (void)unit; (void)unit_hash; (void)size; (void)reason; (void)count; (void)now;
}
static void kcache__pub_hit_mem(kcache__pub *p, uint64_t unit_hash, uint64_t size) { (void)p; (void)unit_hash; (void)size; }
static void kcache__pub_hit_disk(kcache__pub *p, const char *unit, uint64_t unit_hash, uint64_t size, int64_t now) {
    (void)p; (void)unit; (void)unit_hash; (void)size; (void)now;
}
static void kcache__pub_miss(kcache__pub *p, const char *unit, kcache_reason r) { (void)p; (void)unit; (void)r; }
static KCACHE__UNUSED void kcache__pub_node_call(const kcache__pub *p, const char *name, kcache_status result, int open) {
    (void)p; (void)name; (void)result; (void)open;
}
static KCACHE__UNUSED uint64_t *kcache__pub_shard(const kcache__pub *p, const char *url, uint64_t **more) {
    (void)p; (void)url;
    *more = NULL;
    return NULL;
}
static KCACHE__UNUSED void kcache__pub_shard_call(uint64_t *more, int failed) { (void)more; (void)failed; }
static KCACHE__UNUSED void kcache__pub_fetch_add(uint64_t *w, uint64_t n) { (void)w; (void)n; } /* (no shard has a counter to add to) */
static void kcache__pub_put(kcache__pub *p, const char *unit, uint64_t size, kcache_status s) { (void)p; (void)unit; (void)size; (void)s; }
static void kcache__pub_evict(kcache__pub *p, uint64_t entries, uint64_t bytes, const char *units) {
    (void)p; (void)entries; (void)bytes; (void)units;
}
#endif /* KCACHE_NO_PUB */

/* ============================================================================================== */
/* >>handle  struct kcache: what an open cache holds, and its log                                 */
/* ============================================================================================== */

#define KCACHE__TOMBS 128  /* entries remembered after the memory LRU dropped them (memory only) */
#if defined(_WIN32)
#define KCACHE__LAYER_SEP ";" /* as PATH: "C:\..." has a colon */
#else
#define KCACHE__LAYER_SEP ":"
#endif
#define KCACHE__LAYERS_MAX 16 /* read-only layers searched (KCACHE_LAYERS); more are left out */
#define KCACHE__CHANGED 16 /* recent puts and removes remembered for gets racing with them */

typedef struct kcache__tomb { kcache_hash128 digest; int64_t when; } kcache__tomb;

/* One build in progress in this process (single flight among threads). */
typedef struct kcache__flight {
    struct kcache__flight *next;
    kcache_hash128 digest;
    int done, refs;
    kcache__cond cond;
} kcache__flight;

struct kcache {
    kcache__mutex lock;          /* guards everything below but the store, which has its own */
    kcache_config cfg;
    char *dir;                   /* the store's directory (owned), NULL when memory only */
    kcache__store *store;
    kcache__pub pub;             /* this kcache's slot in DIR/stats (kcache-top); zeroed: not publishing */
    kcache__store *stats_dir;    /* KCACHE_STATS_DIR's directory, when pub publishes there (no store) */
    char store_why[512];         /* why there is no store (store_refused), or why it is read-only */
    int store_refused;           /* a store was asked for and could not be used */
    kcache__lru lru;
    kcache__tomb tombs[KCACHE__TOMBS];
    unsigned tomb_next;
    kcache_stats stats;
    kcache__flight *flights;
    struct kcache_ticket *tickets; /* kcache_get_or_claim's claims not yet ended (>>flight) */
    kcache__host host;           /* detected once at open, for kcache_key_host_from */
    /* Puts and removes bump gen and are remembered here, so that a get which read the store
       without the lock does not put back in memory what a put or remove replaced meanwhile. */
    uint64_t gen;
    struct { kcache_hash128 digest; uint64_t gen; } changed[KCACHE__CHANGED];
    unsigned changed_next;
    void *cl;                    /* the OpenCL layer's state (programs built in this process) */
    struct kcache__companion *companions; /* companions' states (kcache_companion_state), freed at close */
    void (*cl_free)(void *cl);   /* frees it at close */
    long cl_loads;               /* OpenCL binaries loaded (names PoCL's unpack directories) */
    kcache__remote *remote;      /* the remote tier (>>remote), NULL when none */
    char remote_why[400];        /* why there is none although one was asked for */
    /* fork (see kcache__live): the process that opened it, and in a forked child the child's own */
    uint32_t pid;
    uint32_t forked;             /* set in a forked child that found kc->lock held by its parent's thread */
    uint32_t fwd_maker, fwd_failed; /* the child process opening fwd / that could not */
    kcache *fwd;
    kcache__mem mem;             /* the configuration's allocator (see kcache__mem) */
    kcache__store *layers[KCACHE__LAYERS_MAX]; /* the read-only layers (KCACHE_LAYERS), in search order */
    int nlayers;
    char layers_why[400];        /* why the first layer left out was (missing, refused) */
#if KCACHE_CHECKS
    struct kcache__held *held;   /* payloads handed out and not yet released (debug builds) */
    size_t held_cap, held_count; /* held_cap: a power of two, 0 before the first */
    int held_untracked;          /* the table could not grow: releases are not checked any more */
#endif
};
static void kcache__lower_open(kcache *kc);
static void kcache__companions_free(kcache *kc); /* (>>kit) */

/* Internal result of a call that found it runs in a process forked from kc's: the public call
   moves to the child's own handle and tries again (never returned to the caller). */
#define KCACHE__FORKED KCACHE_STATUS_COUNT

/* Every line is escaped whole before it leaves (the DESIGN's escaping rule): a unit, field or file
   name, a path or a server's reply in any message then can neither start a line of its own (a forged
   "kcache: hit disk ...") nor reach a terminal as a control sequence, and a new message cannot
   forget it. kcache's own words are printable ASCII, which escaping leaves as they are. */
static void kcache__log(const kcache_config *cfg, const char *fmt, ...) {
    char raw[1024], line[2048];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    kcache__esc(line, sizeof line, raw, n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1);
    if (cfg && cfg->log) cfg->log(cfg->log_user, line);
    else fprintf(stderr, "kcache: %s\n", line);
}
#define KCACHE__DEBUG(kc, ...) do { if ((kc)->cfg.debug) kcache__log(&(kc)->cfg, __VA_ARGS__); } while (0)
/* The tiers a build leaves out are constants, so that the compiler drops the code that uses them. */
#ifdef KCACHE_NO_LAYERS
#define KCACHE__NLAYERS(kc) 0
#else
#define KCACHE__NLAYERS(kc) ((kc)->nlayers)
#endif
#ifdef KCACHE_NO_REMOTE
#define KCACHE__REMOTE(kc) ((kcache__remote *)NULL)
#else
#define KCACHE__REMOTE(kc) ((kc)->remote)
#endif

/* ============================================================================================== */
/* >>misuse  misuse caught before any damage (KCACHE_CHECKS: debug builds)                        */
/* ============================================================================================== */

/* ---- what a debug build catches ----
   What a debug build catches before any damage, each with one message naming the call (through the
   log, stderr without one) and then KCACHE_ASSERT; the call then does nothing (returns an error):
   - a call on a closed kcache: the registry keeps the set of open handles (a table read without a
     lock), so a closed handle is recognised without reading its freed memory; the last
     KCACHE__CLOSED_RING closed ones are remembered with their log, to say it there.
   - kcache_release of a payload this kcache did not hand out, or released already: each handle
     keeps the payloads it handed out (a table under its lock), so the payload's memory is read
     only once the table vouches for it.
   - a key freed (kcache_key_free) or never initialised.
   What no check can catch: a handle whose address a later kcache_open got again (it is open
   again); a payload handed out twice and released twice by one holder (the second holder's
   release is then the one reported); a call racing with kcache_close in another thread; a key on
   the heap used after free(). Release builds (NDEBUG) compile all of it out. */
#if KCACHE_CHECKS
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void kcache__misuse(kcache_log_fn log, void *log_user, const char *fmt, ...) {
    kcache_config cfg;
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    memset(&cfg, 0, sizeof cfg);
    cfg.log = log;
    cfg.log_user = log_user;
    kcache__log(&cfg, "%s", line);
    KCACHE_ASSERT(0 && "kcache: misuse of the API (the message before says which call)");
}
static size_t kcache__live_at(const void *kc) { return (size_t)(((uintptr_t)kc >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (KCACHE__LIVE_SLOTS - 1); }
#define KCACHE__LIVE_GONE ((void *)&kcache__reg.live) /* a slot whose handle was closed (never a handle) */
static int kcache__live_find(const void *kc) {
    size_t i, at = kcache__live_at(kc);
    for (i = 0; i < KCACHE__LIVE_SLOTS; i++) {
        void *v = kcache__atomic_load_ptr((void *const *)&kcache__reg.live[(at + i) & (KCACHE__LIVE_SLOTS - 1)]);
        if (v == kc) return 1;
        if (!v) return 0;
    }
    return 0;
}
static void kcache__live_add(kcache *kc) {
    size_t i, at = kcache__live_at(kc);
    kcache__reg_lock();
    for (i = 0; i < KCACHE__LIVE_SLOTS; i++) {
        void **slot = &kcache__reg.live[(at + i) & (KCACHE__LIVE_SLOTS - 1)];
        if (!*slot || *slot == KCACHE__LIVE_GONE) {
            kcache__atomic_store_ptr(slot, kc);
            kcache__reg.live_count++;
            break;
        }
    }
    if (i == KCACHE__LIVE_SLOTS) kcache__reg.live_untracked++; /* full: calls on handles not found are not judged */
    kcache__reg_unlock();
}
static void kcache__live_remove(kcache *kc) {
    size_t i, at = kcache__live_at(kc);
    unsigned r;
    kcache__reg_lock();
    for (i = 0; i < KCACHE__LIVE_SLOTS; i++) {
        void **slot = &kcache__reg.live[(at + i) & (KCACHE__LIVE_SLOTS - 1)];
        if (*slot == kc) {
            kcache__atomic_store_ptr(slot, KCACHE__LIVE_GONE);
            if (--kcache__reg.live_count == 0) /* none open: nothing to find, so no closed slot to step over */
                for (i = 0; i < KCACHE__LIVE_SLOTS; i++) kcache__atomic_store_ptr(&kcache__reg.live[i], NULL);
            break;
        }
        if (!*slot) { if (kcache__reg.live_untracked) kcache__reg.live_untracked--; break; }
    }
    r = kcache__reg.closed_next++ % KCACHE__CLOSED_RING;
    kcache__reg.closed[r].kc = kc;
    kcache__reg.closed[r].log = kc->cfg.log;
    kcache__reg.closed[r].log_user = kc->cfg.log_user;
    kcache__reg_unlock();
}
/* Whether kc (not NULL) is an open handle; when it is not, says so (misuse) and returns 0. */
static int kcache__kc_ok(const void *kc, const char *call) {
    kcache_log_fn log = NULL;
    void *log_user = NULL;
    unsigned i;
    int closed = 0, untracked;
    if (KCACHE__LIKELY(kcache__live_find(kc))) return 1;
    kcache__reg_lock();
    for (i = 0; i < KCACHE__CLOSED_RING; i++) {
        unsigned r = (kcache__reg.closed_next - 1 - i) % KCACHE__CLOSED_RING; /* the newest first */
        if (kcache__reg.closed[r].kc == kc) {
            log = kcache__reg.closed[r].log;
            log_user = kcache__reg.closed[r].log_user;
            closed = 1;
            break;
        }
    }
    untracked = kcache__reg.live_untracked != 0;
    kcache__reg_unlock();
    if (closed) kcache__misuse(log, log_user, "%s: called on a kcache that was closed (kcache_close); nothing done", call);
    else if (!untracked) kcache__misuse(NULL, NULL, "%s: %p is not an open kcache (closed long ago, or never opened); nothing done", call, kc);
    return untracked && !closed;
}
/* A key that kcache_key_init made and kcache_key_free did not free; else misuse. */
static int kcache__key_ok(const kcache *kc, const kcache_key *k, const char *call) {
    if (!k || KCACHE__LIKELY(k->magic == KCACHE__KEY_LIVE)) return 1;
    kcache__misuse(kc ? kc->cfg.log : NULL, kc ? kc->cfg.log_user : NULL, "%s: the kcache_key %s; nothing done", call,
                   k->magic == KCACHE__KEY_DEAD ? "was freed (kcache_key_free)" : "was never initialised (kcache_key_init)");
    return 0;
}

/* The payloads a handle handed out: data pointer and how many times (open addressing, under kc->lock). */
typedef struct kcache__held { const void *data; size_t n; } kcache__held;
static size_t kcache__held_at(const kcache *kc, const void *p) { return (size_t)(((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 32) & (kc->held_cap - 1); }
static void kcache__held_add(kcache *kc, const void *data) {
    size_t i;
    kcache__mutex_lock(&kc->lock);
    if (!kc->held_untracked && (kc->held_count + 1) * 2 > kc->held_cap) { /* grow: at most half full */
        size_t cap = kc->held_cap ? kc->held_cap * 2 : 64, j;
        kcache__held *t = (kcache__held *)kcache__mem_alloc(&kc->mem, cap * sizeof *t), *old = kc->held;
        if (!t) kc->held_untracked = 1;
        else {
            memset(t, 0, cap * sizeof *t);
            kc->held = t;
            kc->held_cap = cap;
            for (j = 0; old && j < cap / 2; j++) {
                if (!old[j].data) continue;
                for (i = kcache__held_at(kc, old[j].data); t[i].data; i = (i + 1) & (cap - 1)) {
                }
                t[i] = old[j];
            }
            kcache__mem_free(&kc->mem, old);
        }
    }
    if (!kc->held_untracked) {
        for (i = kcache__held_at(kc, data); kc->held[i].data && kc->held[i].data != data; i = (i + 1) & (kc->held_cap - 1)) {
        }
        if (!kc->held[i].data) { kc->held[i].data = data; kc->held_count++; }
        kc->held[i].n++;
    }
    kcache__mutex_unlock(&kc->lock);
}
/* Takes one hand-out of data back: 1, or 0 when kc did not hand it out (or it was released); -1
   when not known (the table could not grow). */
static int kcache__held_take(kcache *kc, const void *data) {
    size_t i, j, k;
    int r = 0;
    kcache__mutex_lock(&kc->lock);
    if (kc->held_untracked) r = -1;
    else if (kc->held_cap) {
        for (i = kcache__held_at(kc, data); kc->held[i].data && kc->held[i].data != data; i = (i + 1) & (kc->held_cap - 1)) {
        }
        if (kc->held[i].data) r = 1;
        if (r == 1 && --kc->held[i].n == 0) { /* gone: the entries after it in its run move back (linear probing) */
            kc->held[i].data = NULL;
            kc->held_count--;
            for (j = (i + 1) & (kc->held_cap - 1); kc->held[j].data; j = (j + 1) & (kc->held_cap - 1)) {
                k = kcache__held_at(kc, kc->held[j].data);
                if ((j > i && (k <= i || k > j)) || (j < i && k <= i && k > j)) {
                    kc->held[i] = kc->held[j];
                    kc->held[j].data = NULL;
                    kc->held[j].n = 0;
                    i = j;
                }
            }
        }
    }
    kcache__mutex_unlock(&kc->lock);
    return r;
}
#endif

/* ============================================================================================== */
/* >>configuration  kcache_config: defaults, the environment (KCACHE_NO_ENV), the directory       */
/* ============================================================================================== */

/* A size: digits with an optional K, M, G or T (powers of 1024), optionally followed by B or iB. */
static KCACHE__UNUSED int kcache__parse_size(const char *s, uint64_t *out) {
    uint64_t v = 0, mul = 1;
    const char *p = s;
    if (!s || !*s) return 0;
    while (*p >= '0' && *p <= '9') {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(*p++ - '0');
    }
    if (p == s) return 0;
    switch (*p) {
    case 'k': case 'K': mul = (uint64_t)1 << 10; p++; break;
    case 'm': case 'M': mul = (uint64_t)1 << 20; p++; break;
    case 'g': case 'G': mul = (uint64_t)1 << 30; p++; break;
    case 't': case 'T': mul = (uint64_t)1 << 40; p++; break;
    default: break;
    }
    if (mul > 1 && *p == 'i') p++;
    if (*p == 'B' || *p == 'b') p++;
    if (*p) return 0;
    if (v && mul > UINT64_MAX / v) return 0;
    *out = v * mul;
    return 1;
}

static KCACHE__UNUSED int kcache__parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"1", "yes", "true", "on"}, *const no[] = {"0", "no", "false", "off"};
    size_t i;
    for (i = 0; i < 4; i++) {
        if (strcmp(s, yes[i]) == 0) { *out = 1; return 1; }
        if (strcmp(s, no[i]) == 0) { *out = 0; return 1; }
    }
    return 0;
}

#ifndef KCACHE_NO_ENV
/* The variables kcache_config_init reads, what each wants (cfg->env_bad's bit i is variable i). */
#define KCACHE__ENV_VARS(X)                                                                     \
    X(DEBUG, "KCACHE_DEBUG", "0 or 1")                                                          \
    X(ENABLE, "KCACHE_ENABLE", "0 or 1")                                                        \
    X(PERSISTENT, "KCACHE_PERSISTENT", "0 or 1")                                                \
    X(TRACE, "KCACHE_TRACE", "0 or 1")                                                          \
    X(FSYNC, "KCACHE_FSYNC", "0 or 1")                                                          \
    X(STATS, "KCACHE_STATS", "0 or 1")                                                          \
    X(MAX_SIZE, "KCACHE_MAX_SIZE", "a size such as 512M or 2G")                                 \
    X(MEM_SIZE, "KCACHE_MEM_SIZE", "a size such as 64M")                                        \
    X(MEM_ENTRIES, "KCACHE_MEM_ENTRIES", "a count from 1 to 16M")                               \
    X(BUILD_WAIT, "KCACHE_BUILD_WAIT", "seconds from 0 to 86400")                               \
    X(WRITE, "KCACHE_WRITE", "through or evict")                                                \
    X(STAMP, "KCACHE_STAMP", "mtime, content or hybrid")                                      \
    X(REMOTE_MODE, "KCACHE_REMOTE_MODE", "rw or ro")                                            \
    X(REMOTE_TIMEOUT, "KCACHE_REMOTE_TIMEOUT", "milliseconds from 1 to 600000 (or 1s..600s)")   \
    X(REMOTE_MAX_ENTRY, "KCACHE_REMOTE_MAX_ENTRY", "a size from 1K to 512M")                    \
    X(REMOTE_TTL, "KCACHE_REMOTE_TTL", "a time such as 3600, 90s, 30m, 12h or 7d (up to 3650d)")   \
    X(REMOTE_MAC, "KCACHE_REMOTE_MAC", "gmac or hmac")                                          \
    X(COMPRESS, "KCACHE_COMPRESS", "0 or 1")                                                    \
    X(LAYERS_COPY, "KCACHE_LAYERS_COPY", "0 or 1")
enum {
#define KCACHE__ENV_ENUM(id, var, want) KCACHE__ENV_##id,
    KCACHE__ENV_VARS(KCACHE__ENV_ENUM)
#undef KCACHE__ENV_ENUM
    KCACHE__ENV_COUNT
};
static const char *const kcache__env_var[] = {
#define KCACHE__ENV_NAME(id, var, want) var,
    KCACHE__ENV_VARS(KCACHE__ENV_NAME)
#undef KCACHE__ENV_NAME
};
static const char *const kcache__env_want[] = {
#define KCACHE__ENV_WANT(id, var, want) want,
    KCACHE__ENV_VARS(KCACHE__ENV_WANT)
#undef KCACHE__ENV_WANT
};
#define kcache__env_bad(cfg, id) ((cfg)->env_bad |= 1u << KCACHE__ENV_##id)

/* What kcache_config_init found bad in the environment, said now that the log is known: with
   debugging on, or (a bad KCACHE_DEBUG itself: the user asked for messages) in any case. */
static void kcache__say_env_bad(const kcache_config *cfg) {
    int i;
    for (i = 0; i < KCACHE__ENV_COUNT; i++) {
        const char *v;
        if (!(cfg->env_bad & (1u << i)) || (!cfg->debug && i != KCACHE__ENV_DEBUG)) continue;
        v = cfg->no_env ? NULL : getenv(kcache__env_var[i]);
        kcache__log(cfg, "%s=\"%.64s\" is not %s; using the default", kcache__env_var[i], v ? v : "", kcache__env_want[i]);
    }
}
#else /* KCACHE_NO_ENV: nothing was read, so nothing was bad */
static void kcache__say_env_bad(const kcache_config *cfg) { (void)cfg; }
#endif

KCACHE_API void kcache_config_defaults(kcache_config *cfg) {
    if (!cfg) return;
    memset(cfg, 0, sizeof *cfg);
    cfg->max_size = (uint64_t)1 << 30;
    cfg->mem_entries = 1024;
    cfg->mem_size = (uint64_t)256 << 20;
    cfg->enable = 1;
    cfg->persistent = 1;
    cfg->publish = 1;
    cfg->build_wait_ms = 300000;
    cfg->lock_timeout_ms = 10000;
    cfg->remote_timeout_ms = KCACHE__REMOTE_TIMEOUT_MS;
    cfg->remote_max_entry = KCACHE__REMOTE_MAX_ENTRY;
    cfg->remote_claim_ms = KCACHE__REMOTE_CLAIM_MS;
    cfg->remote_backoff_ms = KCACHE__REMOTE_BACKOFF_MS;
    cfg->layers_copy = 1;
    cfg->no_env = 1;
}

KCACHE_API const char *kcache_version(void) { return KCACHE_VERSION; }

#ifdef KCACHE_NO_ENV /* the environment is compiled out: the defaults alone, as kcache_config_defaults gives them */
KCACHE_API void kcache_config_init(kcache_config *cfg) { kcache_config_defaults(cfg); }
#else
KCACHE_API void kcache_config_init(kcache_config *cfg) {
    const char *v;
    uint64_t n;
    int b;
    if (!cfg) return;
    kcache_config_defaults(cfg);
    cfg->no_env = 0;
#define KCACHE__ENV_BOOL(id, field)                                                     \
    if ((v = getenv(kcache__env_var[KCACHE__ENV_##id])) != NULL && *v) {                \
        if (kcache__parse_bool(v, &b)) cfg->field = b;                                  \
        else kcache__env_bad(cfg, id);                                                  \
    }
    KCACHE__ENV_BOOL(DEBUG, debug)
    KCACHE__ENV_BOOL(ENABLE, enable)
    KCACHE__ENV_BOOL(PERSISTENT, persistent)
    KCACHE__ENV_BOOL(TRACE, trace)
    KCACHE__ENV_BOOL(FSYNC, fsync)
    KCACHE__ENV_BOOL(STATS, publish)
    KCACHE__ENV_BOOL(COMPRESS, compress)
    KCACHE__ENV_BOOL(LAYERS_COPY, layers_copy)
#undef KCACHE__ENV_BOOL
    /* strings: cfg points into the environment (kcache_open copies what it keeps) */
    if ((v = getenv("KCACHE_DIR")) != NULL && *v) cfg->dir = v;
    if ((v = getenv("KCACHE_SHARED_GROUP")) != NULL && *v) cfg->shared_group = v;
    if ((v = getenv("KCACHE_LAYERS")) != NULL && *v) cfg->layers = v;
    if ((v = getenv("KCACHE_STATS_DIR")) != NULL && *v) cfg->stats_dir = v;
    if ((v = getenv("KCACHE_REMOTE")) != NULL && *v) cfg->remote = v;
    if ((v = getenv("KCACHE_REMOTE_SECRET")) != NULL) cfg->remote_secret = v; /* empty: refused at open, not unsigned */
    if ((v = getenv("KCACHE_REMOTE_CA")) != NULL && *v) cfg->remote_ca = v;
    if ((v = getenv("KCACHE_REMOTE_TLS_NAME")) != NULL && *v) cfg->remote_tls_name = v;
    if ((v = getenv("KCACHE_REMOTE_CERT")) != NULL && *v) cfg->remote_cert = v;
    if ((v = getenv("KCACHE_REMOTE_KEY")) != NULL && *v) cfg->remote_key = v;
    if ((v = getenv("KCACHE_MAX_SIZE")) != NULL && *v) {
        if (kcache__parse_size(v, &n)) cfg->max_size = n;
        else kcache__env_bad(cfg, MAX_SIZE);
    }
    if ((v = getenv("KCACHE_MEM_SIZE")) != NULL && *v) {
        if (kcache__parse_size(v, &n)) cfg->mem_size = n;
        else kcache__env_bad(cfg, MEM_SIZE);
    }
    if ((v = getenv("KCACHE_MEM_ENTRIES")) != NULL && *v) {
        if (kcache__parse_size(v, &n) && n >= 1 && n <= 1u << 24) cfg->mem_entries = (uint32_t)n;
        else kcache__env_bad(cfg, MEM_ENTRIES);
    }
    if ((v = getenv("KCACHE_BUILD_WAIT")) != NULL && *v) {
        if (kcache__parse_size(v, &n) && n <= 86400) cfg->build_wait_ms = (uint32_t)n * 1000;
        else kcache__env_bad(cfg, BUILD_WAIT);
    }
    if ((v = getenv("KCACHE_WRITE")) != NULL && *v) {
        if (strcmp(v, "through") == 0) cfg->write_policy = KCACHE_WRITE_THROUGH;
        else if (strcmp(v, "evict") == 0) cfg->write_policy = KCACHE_WRITE_EVICT;
        else kcache__env_bad(cfg, WRITE);
    }
    if ((v = getenv("KCACHE_STAMP")) != NULL && *v) {
        if (strcmp(v, "hybrid") == 0) cfg->stamp = KCACHE_STAMP_HYBRID;
        else if (strcmp(v, "mtime") == 0) cfg->stamp = KCACHE_STAMP_MTIME;
        else if (strcmp(v, "content") == 0) cfg->stamp = KCACHE_STAMP_CONTENT;
        else kcache__env_bad(cfg, STAMP);
    }
    if ((v = getenv("KCACHE_REMOTE_MODE")) != NULL && *v) {
        if (strcmp(v, "rw") == 0) cfg->remote_mode = KCACHE_REMOTE_RW;
        else if (strcmp(v, "ro") == 0) cfg->remote_mode = KCACHE_REMOTE_RO;
        else kcache__env_bad(cfg, REMOTE_MODE);
    }
    if ((v = getenv("KCACHE_REMOTE_TIMEOUT")) != NULL && *v) { /* milliseconds; "ms" or "s" may follow */
        char *end;
        unsigned long long t = 0;
        if (*v >= '0' && *v <= '9') { /* (strtoull alone would take a sign or leading spaces) */
            t = strtoull(v, &end, 10);
            if (strcmp(end, "s") == 0) t = t <= 600 ? t * 1000 : 0;
            else if (*end && strcmp(end, "ms") != 0) t = 0;
        }
        if (t >= 1 && t <= 600000) cfg->remote_timeout_ms = (uint32_t)t;
        else kcache__env_bad(cfg, REMOTE_TIMEOUT);
    }
    if ((v = getenv("KCACHE_REMOTE_MAX_ENTRY")) != NULL && *v) {
        if (kcache__parse_size(v, &n) && n >= 1024 && n <= ((uint64_t)512 << 20)) cfg->remote_max_entry = n;
        else kcache__env_bad(cfg, REMOTE_MAX_ENTRY);
    }
    if ((v = getenv("KCACHE_REMOTE_TTL")) != NULL && *v) { /* seconds; s, m, h or d may follow */
        char *end;
        unsigned long long t = 0;
        if (*v >= '0' && *v <= '9') {
            t = strtoull(v, &end, 10);
            if (t > 3650ull * 86400) t = 0;
            else if (*end == 'm' && !end[1]) t *= 60;
            else if (*end == 'h' && !end[1]) t *= 3600;
            else if (*end == 'd' && !end[1]) t *= 86400;
            else if (*end && !(*end == 's' && !end[1])) t = 0;
        }
        if (t >= 1 && t <= 3650ull * 86400) cfg->remote_ttl_s = (uint32_t)t;
        else kcache__env_bad(cfg, REMOTE_TTL);
    }
    if ((v = getenv("KCACHE_REMOTE_PREFIX")) != NULL && *v) cfg->remote_prefix = v;
    if ((v = getenv("KCACHE_REMOTE_MAC")) != NULL && *v) {
        if (strcmp(v, "gmac") == 0) cfg->remote_mac = KCACHE_REMOTE_MAC_GMAC;
        else if (strcmp(v, "hmac") == 0) cfg->remote_mac = KCACHE_REMOTE_MAC_HMAC;
        else kcache__env_bad(cfg, REMOTE_MAC);
    }
}
#endif /* KCACHE_NO_ENV */

/* The default directory: $XDG_CACHE_HOME/kcache (an absolute path, as the XDG spec requires), else
   $HOME/.cache/kcache. 0 when neither is usable. */
#if defined(_WIN32)
/* Windows: %LocalAppData%\kcache, read as UTF-16 and turned into UTF-8 (getenv's ANSI code page
   cannot spell every user name). 0 when unset or not an absolute path. */
static int kcache__default_dir(char *out, size_t cap) {
    const wchar_t *w = _wgetenv(L"LOCALAPPDATA");
    int n;
    if (!w || !(((w[0] | 32) >= L'a' && (w[0] | 32) <= L'z' && w[1] == L':' && (w[2] == L'\\' || w[2] == L'/')) ||
                (w[0] == L'\\' && w[1] == L'\\')))
        return 0;
    n = WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)(cap < 0x7fffffff ? cap : 0x7fffffff), NULL, NULL);
    if (n <= 0 || (size_t)n + 7 > cap) return 0;
    memcpy(out + n - 1, "\\kcache", 8);
    return 1;
}
#else
static int kcache__default_dir(char *out, size_t cap) {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (x && x[0] == '/') n = snprintf(out, cap, "%s/kcache", x);
    else if (h && h[0] == '/') n = snprintf(out, cap, "%s/.cache/kcache", h);
    else return 0;
    return n > 0 && (size_t)n < cap;
}
#endif

/* Says in the debug log what a relative path does: KCACHE_DIR and each of KCACHE_LAYERS is taken
   against the working directory of kcache_open (as every relative path is); a relative
   XDG_CACHE_HOME is ignored, as the XDG spec says, for $HOME/.cache. */
static void kcache__say_relative(kcache *kc, const char *dir, const char *layers) {
#if !defined(_WIN32)
    char e[300];
    const char *x = getenv("XDG_CACHE_HOME");
    if (!kc->cfg.debug) return;
    if (dir && dir[0] && dir[0] != '/')
        KCACHE__DEBUG(kc, "KCACHE_DIR %s is relative: taken against the working directory", kcache__escs(e, sizeof e, dir));
    if (!(dir && dir[0]) && x && x[0] && x[0] != '/')
        KCACHE__DEBUG(kc, "XDG_CACHE_HOME %s is relative: ignored (the XDG spec wants an absolute path); the default is under $HOME/.cache",
                      kcache__escs(e, sizeof e, x));
    while (layers && *layers) {
        size_t n = strcspn(layers, ":");
        if (n && layers[0] != '/' && n < 256) {
            char one[256];
            memcpy(one, layers, n);
            one[n] = 0;
            KCACHE__DEBUG(kc, "KCACHE_LAYERS: %s is relative: taken against the working directory", kcache__escs(e, sizeof e, one));
        }
        layers += n + (layers[n] != 0);
    }
#else
    (void)kc; (void)dir; (void)layers;
#endif
}

/* A store path as a shell would take it: a leading "~" or "~/" is $HOME (a value from the
   environment, quoted in a shell script, reaches kcache unexpanded); "~user" is not expanded (it
   would need the password database) and is refused, as is "~" without an absolute $HOME. 1 with
   out set, or 0 with why. */
static int kcache__expand_tilde(const char *in, char *out, size_t cap, char *why, size_t why_cap) {
    const char *h = getenv("HOME");
    char q[600];
    int n;
    if (in[0] != '~') n = snprintf(out, cap, "%s", in);
    else if (in[1] && in[1] != '/') {
        kcache__say(why, why_cap, "memory only: the store path %s starts with ~user, which kcache does not expand; to fix: write it in full",
                    kcache__shell_quote(q, sizeof q, in));
        return 0;
    } else if (!h || h[0] != '/') {
        kcache__say(why, why_cap, "memory only: the store path %s starts with ~ and HOME is not an absolute path; to fix: write it in full",
                    kcache__shell_quote(q, sizeof q, in));
        return 0;
    } else
        n = snprintf(out, cap, "%s%s", h, in + 1);
    if (n < 0 || (size_t)n >= cap) { kcache__say(why, why_cap, "memory only: the store path is too long"); return 0; }
    return 1;
}

/* ============================================================================================== */
/* >>open  kcache_open and kcache_close, a forked child's handle, the memory tier                 */
/* ============================================================================================== */

typedef struct { char dir[4096], why[400]; } kcache__open_scratch; /* on the heap: calls fit small stacks */
KCACHE_API kcache_status kcache_open(kcache **out, const kcache_config *cfg) {
    kcache *kc;
    kcache_config defaults;
    kcache__open_scratch *t;
    kcache__mem al;
    char *dir, *why;
    if (!out) return KCACHE_EINVAL;
    *out = NULL;
    if (!cfg) { kcache_config_init(&defaults); cfg = &defaults; }
    if (cfg->write_policy != KCACHE_WRITE_THROUGH && cfg->write_policy != KCACHE_WRITE_EVICT) return KCACHE_EINVAL;
    if (cfg->stamp < KCACHE_STAMP_HYBRID || cfg->stamp > KCACHE_STAMP_CONTENT) return KCACHE_EINVAL;
    if (!cfg->alloc_fn != !cfg->free_fn) return KCACHE_EINVAL; /* both allocator callbacks, or neither */
    al.alloc = cfg->alloc_fn;
    al.free = cfg->free_fn;
    al.user = cfg->alloc_user;
    kc = (kcache *)kcache__mem_alloc(&al, sizeof *kc);
    if (!kc) return KCACHE_ENOMEM;
    memset(kc, 0, sizeof *kc);
    kc->mem = al;
    kc->cfg = *cfg;
    kc->cfg.dir = NULL;
    kc->pid = kcache__pid();
    if (kc->cfg.mem_entries == 0) kc->cfg.mem_entries = 1;
    if ((t = (kcache__open_scratch *)kcache__mem_alloc(&al, sizeof *t)) == NULL) { kcache__mem_free(&al, kc); return KCACHE_ENOMEM; }
    if (kcache__lru_init(&kc->lru, kc->cfg.mem_entries, &kc->mem) != KCACHE_OK) {
        kcache__mem_free(&al, t);
        kcache__mem_free(&al, kc);
        return KCACHE_ENOMEM;
    }
    dir = t->dir;
    why = t->why;
    kcache__mutex_init(&kc->lock);
    kcache__host_detect(&kc->host, kc->cfg.no_env);
    kcache__say_env_bad(&kc->cfg);
    why[0] = 0; /* the store's complaint: why it is refused, or what was repaired when it was opened */
    if (!kc->cfg.enable) snprintf(kc->store_why, sizeof kc->store_why, "caching off (KCACHE_ENABLE=0)");
    else if (!kc->cfg.persistent) snprintf(kc->store_why, sizeof kc->store_why, "memory only (KCACHE_PERSISTENT=0)");
    else if (cfg->dir && cfg->dir[0] && !kcache__expand_tilde(cfg->dir, dir, sizeof t->dir, kc->store_why, sizeof kc->store_why))
        kc->stats.store_errors++;
    else if (!(cfg->dir && cfg->dir[0]) && !kcache__default_dir(dir, sizeof t->dir))
#if defined(_WIN32)
        snprintf(kc->store_why, sizeof kc->store_why, "memory only: no KCACHE_DIR or LOCALAPPDATA");
#else
        snprintf(kc->store_why, sizeof kc->store_why, "memory only: no KCACHE_DIR, XDG_CACHE_HOME or HOME");
#endif
    else {
        kcache_status s;
        s = kcache__store_open(&kc->store, dir, &kc->cfg, why, sizeof t->why);
        kc->cfg.shared_group = NULL; /* it may point into the environment; the store keeps the group */
        if (s == KCACHE_OK) {
            kc->dir = kc->store->dir;
            if (kc->store->readonly) snprintf(kc->store_why, sizeof kc->store_why, "%s", why);
            else kcache__pub_open(&kc->pub, kc->store, &kc->cfg);
        } else {
            snprintf(kc->store_why, sizeof kc->store_why, "memory only: %s", why[0] ? why : kcache_strerror(s));
            kc->stats.store_errors++;
            kc->store_refused = 1;
        }
    }
    if (!kc->store || kc->store->readonly) KCACHE__DEBUG(kc, "%s", kc->store_why);
    else KCACHE__DEBUG(kc, "store %s (limit %llu bytes)%s%s", kc->dir, (unsigned long long)kc->cfg.max_size, why[0] ? "; " : "", why);
    /* no store of its own to publish in: KCACHE_STATS_DIR (memory-only processes show in kcache-top) */
    if ((!kc->store || kc->store->readonly) && cfg->stats_dir && cfg->stats_dir[0])
        kcache__pub_open_dir(&kc->pub, &kc->stats_dir, cfg->stats_dir, &kc->cfg);
    kc->cfg.stats_dir = kc->stats_dir ? kc->stats_dir->dir : NULL; /* (cfg's may point into the environment) */
    kcache__say_relative(kc, cfg->dir, kc->cfg.layers);
    if (kc->cfg.enable) kcache__lower_open(kc);
    kcache__mem_free(&kc->mem, t);
#if KCACHE_CHECKS
    kcache__live_add(kc);
#endif
    *out = kc;
    return KCACHE_OK;
}

/* ---- fork ----
   A handle used in a process forked from the one that opened it (a pre-fork worker pool, a fork
   while other threads are inside kcache calls) must neither hang nor act for its parent. Its
   memory is a copy taken at an arbitrary moment: a mutex may be held by a thread that does not
   exist in the child, a list may be half changed, the lock file's descriptor is shared with the
   parent (and with it, where locks belong to the description, the parent's locks and build
   claims). So the child uses none of it: the first call that notices the fork opens the child's
   own kcache with the same configuration (its memory cache starts empty; the store is shared, so
   it reads from disk what the parent stored), and every later call on the handle goes to that
   one. The parent's copy is left untouched and never freed in the child (it may be inconsistent;
   fork shares its pages, so it costs nothing). No pthread_atfork handler: nothing is installed in
   the process, and a fork never waits for a kcache call in another thread.

   Noticing costs nothing on the hot path (kcache__cheap_pid: a page the kernel wipes in a child).
   Where that page is not honoured (an emulator), every path that could wait on the parent asks
   getpid instead: the first lock of a lookup when it is busy, the store lock, build claims, a
   build in progress in another thread, and the return from the caller's build function (a fork
   inside it: the child gets its payload and nothing of the parent's is touched). */
static kcache *kcache__reopen(const kcache *kc) {
    kcache_config cfg = kc->cfg;
    kcache *f = NULL;
    char group[16], *layers = NULL;
    cfg.dir = kc->store ? kc->dir : NULL;
    if (kc->store && kc->store->shared) { /* the group kc resolved, by number */
        snprintf(group, sizeof group, "%u", (unsigned)kc->store->gid);
        cfg.shared_group = group;
    }
    if (KCACHE__REMOTE(kc)) kcache__remote_reopen_config(kc->remote, &cfg); /* (kc->cfg.remote: as shown, no secret) */
    if (!kc->store) cfg.persistent = 0; /* a parent running from memory: so does its child */
    if (KCACHE__NLAYERS(kc)) { /* the layers kc uses, by the paths they were opened at */
        size_t n = 0, at = 0;
        int i;
        for (i = 0; i < kc->nlayers; i++) n += strlen(kc->layers[i]->dir) + 1;
        if ((layers = (char *)kcache__mem_alloc(&kc->mem, n)) == NULL) return NULL;
        for (i = 0; i < kc->nlayers; i++) {
            size_t l = strlen(kc->layers[i]->dir);
            memcpy(layers + at, kc->layers[i]->dir, l);
            at += l;
            layers[at++] = i + 1 < kc->nlayers ? KCACHE__LAYER_SEP[0] : 0;
        }
        cfg.layers = layers;
    }
    if (kcache_open(&f, &cfg) != KCACHE_OK) f = NULL;
    kcache__mem_free(&kc->mem, layers);
    if (!f) return NULL;
    if (!kc->store) {
        memcpy(f->store_why, kc->store_why, sizeof f->store_why);
        f->store_refused = kc->store_refused;
    }
    KCACHE__DEBUG(f, "process %u, forked from %u, uses a kcache of its own from here on", (unsigned)f->pid, (unsigned)kc->pid);
    return f;
}
static kcache *kcache__forked(kcache *kc) {
    kcache *f = (kcache *)kcache__atomic_load_ptr((void *const *)&kc->fwd);
    uint32_t me;
    if (f && f->pid == kcache__cheap_pid()) return f;
    me = kcache__pid();
    if (me == kc->pid) return kc;
    kcache__atomic_store_u32(&kc->forked, 1); /* (in the child's memory): later cheap checks come here too */
    for (;;) {
        uint32_t maker;
        f = (kcache *)kcache__atomic_load_ptr((void *const *)&kc->fwd);
        if (f && f->pid == me) return f;
        maker = kcache__atomic_load_u32(&kc->fwd_maker);
        if (maker == me) { /* another thread of this process is opening it */
            if (kcache__atomic_load_u32(&kc->fwd_failed) == me) return NULL;
            kcache__sleep_us(100);
            continue;
        }
        if (!kcache__atomic_cas_u32(&kc->fwd_maker, &maker, me)) continue;
        if ((f = kcache__reopen(kc)) == NULL) {
            kcache__atomic_store_u32(&kc->fwd_failed, me);
            return NULL;
        }
        kcache__atomic_store_ptr((void **)&kc->fwd, f);
        return f;
    }
}
/* The handle a call on kc works with: kc in the process that opened it, the child's own in a
   forked child (NULL when that could not be opened). strict: getpid, for calls that may wait. */
static kcache *kcache__live(kcache *kc, int strict) {
    if (!kc) return NULL;
    if (KCACHE__LIKELY((strict ? kcache__pid() : kcache__cheap_pid()) == kc->pid) && !kcache__atomic_load_u32(&kc->forked) &&
        !(kc->store && kcache__atomic_load_u32(&kc->store->forked)))
        return kc;
    return kcache__forked(kc);
}
/* kc->lock at the start of a lookup that noticed no fork: taken, or -1 when it is held and this
   process is not kc's (held by a thread of the parent that does not exist here). */
static int kcache__lock_live(kcache *kc) {
    if (kcache__mutex_trylock(&kc->lock)) return 0;
    if (kcache__pid() != kc->pid) {
        kcache__atomic_store_u32(&kc->forked, 1);
        return -1;
    }
    kcache__mutex_lock(&kc->lock);
    return 0;
}

KCACHE_API const char *kcache_dir(const kcache *kc) {
    KCACHE__CHECK_KC(kc, "kcache_dir", NULL);
    return kc ? kc->dir : NULL;
}

KCACHE_API int kcache_store_in_use(const kcache *kc, char *why, size_t cap) {
    if (why && cap) why[0] = 0;
    KCACHE__CHECK_KC(kc, "kcache_store_in_use", 0);
    if (!kc) return 0;
    if (kc->store && !kc->store->readonly) return 1;
    if (why && cap) kcache__escs(why, cap, kc->store_why); /* (built escaped; escaping again changes nothing) */
    return kc->store ? 1 : 0; /* read-only: in use for hits, and why says puts stay in memory */
}

KCACHE_API int kcache_remote_in_use(const kcache *kc, char *why, size_t cap) {
    if (why && cap) why[0] = 0;
    if (!kc) return 0;
    if (KCACHE__REMOTE(kc)) {
        if (why && cap) snprintf(why, cap, "%s", kcache__remote_names(kc->remote));
        return 1;
    }
    if (why && cap) snprintf(why, cap, "%s", kc->remote_why);
    return 0;
}

KCACHE_API kcache_status kcache_key_host_from(kcache_key *k, const kcache *kc) {
    KCACHE__CHECK_KC(kc, "kcache_key_host_from", KCACHE_EINVAL);
    KCACHE__CHECK_KEY(kc, k, "kcache_key_host_from", KCACHE_EINVAL);
    if (!kc) return kcache_key_host(k);
    if (!kcache__key_usable(k)) return KCACHE_EINVAL;
    return kcache__key_add_host(k, &kc->host);
}

static int kcache__same(kcache_hash128 a, kcache_hash128 b) { return a.lo == b.lo && a.hi == b.hi; }

static void kcache__tomb_add(kcache *kc, kcache_hash128 d) {
    kcache__tomb *t = &kc->tombs[kc->tomb_next++ % KCACHE__TOMBS];
    t->digest = d;
    t->when = kcache__now_ns();
}
/* The newest time the memory LRU dropped this digest, 0 if it did not (or it was stored again). */
static int64_t kcache__tomb_find(const kcache *kc, kcache_hash128 d) {
    unsigned i;
    int64_t when = 0;
    for (i = 0; i < KCACHE__TOMBS; i++)
        if (kc->tombs[i].when > when && kcache__same(kc->tombs[i].digest, d)) when = kc->tombs[i].when;
    return when;
}
static void kcache__tomb_clear(kcache *kc, kcache_hash128 d) {
    unsigned i;
    for (i = 0; i < KCACHE__TOMBS; i++)
        if (kcache__same(kc->tombs[i].digest, d)) kc->tombs[i].when = 0;
}

/* Lock held: a put or remove of d happens now. */
static void kcache__note_change(kcache *kc, kcache_hash128 d) {
    unsigned at = kc->changed_next++ % KCACHE__CHANGED;
    kc->gen++;
    kc->changed[at].digest = d;
    kc->changed[at].gen = kc->gen;
    kcache__tomb_clear(kc, d);
}
/* Lock held: whether d may have been put or removed since generation since (when in doubt, yes). */
static int kcache__changed_since(const kcache *kc, kcache_hash128 d, uint64_t since) {
    unsigned i;
    if (kc->gen == since) return 0;
    if (kc->gen - since >= KCACHE__CHANGED) return 1;
    for (i = 0; i < KCACHE__CHANGED; i++)
        if (kc->changed[i].gen > since && kcache__same(kc->changed[i].digest, d)) return 1;
    return 0;
}

/* Drops least recent nodes past the capacity (lock held); returns them chained by hnext so that
   the caller frees them (and writes the dirty ones) after unlocking. */
static kcache__node *kcache__lru_trim(kcache *kc) {
    kcache__node *gone = NULL;
    while (kc->lru.count > kc->cfg.mem_entries || (kc->cfg.mem_size && kc->lru.bytes > kc->cfg.mem_size && kc->lru.count > 1)) {
        kcache__node *n = kc->lru.head.prev;
        kcache__lru_detach(&kc->lru, n);
        kc->stats.mem_evictions++;
        kcache__pub_add(&kc->pub, KCACHE__PUB_MEM_EVICTIONS, 1);
        if (!kc->store) { kc->stats.evictions++; kcache__tomb_add(kc, n->digest); }
        n->hnext = gone;
        gone = n;
    }
    return gone;
}

static void kcache__store_stats(kcache *kc, const kcache__store_ev *ev, kcache_status s) {
    kcache__mutex_lock(&kc->lock);
    kc->stats.evictions += ev->evicted;
    kcache__pub_evict(&kc->pub, ev->evicted, ev->evicted_bytes, ev->units);
    if (s != KCACHE_OK && s != KCACHE_MISS && s != KCACHE_ETOOBIG) {
        kc->stats.store_errors++;
        kcache__pub_add(&kc->pub, KCACHE__PUB_STORE_ERRORS, 1);
    }
    kcache__mutex_unlock(&kc->lock);
    if (ev->evicted) KCACHE__DEBUG(kc, "evict %llu entries (%llu bytes) to stay under the limit: %s",
                                   (unsigned long long)ev->evicted, (unsigned long long)ev->evicted_bytes, ev->units);
    if (ev->rebuilt) KCACHE__DEBUG(kc, "store accounting rebuilt from a scan of %s", kc->dir);
    if (ev->note[0]) KCACHE__DEBUG(kc, "%s (in %s)", ev->note, kc->dir);
}

/* Writes a node that only memory held (KCACHE_WRITE=evict) to the store. */
static void kcache__write_back(kcache *kc, kcache__node *n) {
    kcache_key *k = kcache__key_alloc(&kc->mem);
    kcache__store_ev ev;
    kcache_status s;
    if (k && kcache__record_parse(n->rec, n->rec_len, k) == KCACHE_OK) {
        memset(&ev, 0, sizeof ev);
        s = kcache__store_put(kc->store, k, n->blob->data, n->blob->size, &ev);
        kcache__store_stats(kc, &ev, s);
        KCACHE__DEBUG(kc, "write-back %s (%zu bytes): %s", k->unit, n->blob->size, kcache_strerror(s));
    }
    kcache__key_drop(&kc->mem, k);
}

static void kcache__release_nodes(kcache *kc, kcache__node *list) {
    while (list) {
        kcache__node *next = list->hnext;
        if (list->dirty && kc->store) kcache__write_back(kc, list);
        kcache__node_free(list);
        list = next;
    }
}

static void kcache__tickets_close(kcache *kc);
KCACHE_API void kcache_close(kcache *kc) {
    kcache__node *n, *all = NULL;
    if (!kc) return;
    KCACHE__CHECK_KC(kc, "kcache_close", );
    if (kcache__pid() != kc->pid) { /* a forked child: closes its own kcache, leaves its parent's copy */
        kcache *f = (kcache *)kcache__atomic_load_ptr((void *const *)&kc->fwd);
        if (f && f->pid == kcache__pid()) kcache_close(f);
        return;
    }
#if KCACHE_CHECKS
    kcache__live_remove(kc); /* from here on a call on kc is said to be on a closed kcache */
#endif
    kcache__tickets_close(kc);
    kcache__mutex_lock(&kc->lock);
    while ((n = kc->lru.head.next) != &kc->lru.head) {
        kcache__lru_detach(&kc->lru, n);
        n->hnext = all;
        all = n;
    }
    kcache__mutex_unlock(&kc->lock);
    kcache__release_nodes(kc, all); /* flushes what KCACHE_WRITE=evict kept in memory only */
    if (kc->cl_free) kc->cl_free(kc->cl);
    kcache__companions_free(kc);
    kcache__mutex_lock(&kc->lock);
    kcache__pub_add(&kc->pub, KCACHE__PUB_REMOTE_CLOSES, kcache__remote_open_count(kc->remote)); /* none left open in the stats */
    kcache__mutex_unlock(&kc->lock);
    kcache__remote_close(kc->remote);
    while (kc->nlayers > 0) kcache__store_close(kc->layers[--kc->nlayers]);
    kcache__pub_close(&kc->pub);
    kcache__store_close(kc->stats_dir);
    kcache__store_close(kc->store);
    {
        kcache__mem al = kc->mem;
        kcache__mem_free(&al, kc->lru.buckets);
#if KCACHE_CHECKS
        kcache__mem_free(&al, kc->held);
#endif
        kcache__mutex_destroy(&kc->lock);
        kcache__mem_free(&al, kc);
    }
}

/* What a node for a record of rec_len bytes and blob b holds (what KCACHE_MEM_SIZE counts): the node
   and its record, the blob's header, alignment slack and bytes up to the payload's end (an entry
   read from disk keeps its header before the payload). */
static size_t kcache__node_mem(size_t rec_len, const kcache__blob *b) {
    return sizeof(kcache__node) + rec_len + KCACHE__BLOB_HDR + KCACHE__PAYLOAD_ALIGN - 1 +
           (size_t)(b->data + b->size - ((const unsigned char *)b + KCACHE__BLOB_HDR));
}
/* Whether an entry holding mem bytes may stay in memory: KCACHE_MEM_SIZE is a hard cap, so one
   larger than the whole budget is never kept (it lives in the store, or nowhere). */
static int kcache__mem_fits(const kcache *kc, size_t mem) { return !kc->cfg.mem_size || (uint64_t)mem <= kc->cfg.mem_size; }

/* A new node for a key and a blob (which it takes over); its record is rec (rec_len bytes) when
   given, else the key's own. */
static kcache__node *kcache__node_new_rec(kcache *kc, const unsigned char *rec, size_t rec_len, const kcache_key *k, kcache__blob *b) {
    kcache__node *n;
    if (!rec) rec_len = kcache__record_size(k);
    n = (kcache__node *)kcache__mem_alloc(&kc->mem, sizeof *n + rec_len); /* the record follows the node */
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->al = &kc->mem;
    n->rec_len = rec_len;
    n->rec = (unsigned char *)(n + 1);
    if (rec) memcpy(n->rec, rec, rec_len);
    else kcache__record_into(k, n->rec, rec_len);
    n->digest = k->digest;
    n->unit_hash = kcache_hash(k->unit, strlen(k->unit)).lo;
    n->blob = b;
    n->mem = kcache__node_mem(rec_len, b);
    return n;
}
static kcache__node *kcache__node_new(kcache *kc, const kcache_key *k, kcache__blob *b) { return kcache__node_new_rec(kc, NULL, 0, k, b); }

/* Puts a node in memory, replacing any node of the same digest; returns what must be freed. */
static kcache__node *kcache__lru_add(kcache *kc, kcache__node *n) {
    kcache__node *old = kcache__lru_find(&kc->lru, n->digest), *gone;
    if (old) kcache__lru_detach(&kc->lru, old);
    kcache__lru_insert(&kc->lru, n);
    gone = kcache__lru_trim(kc);
    if (old) { old->hnext = gone; old->dirty = 0; gone = old; }
    return gone;
}

/* Whether any node in memory belongs to the same unit (lock held). Only asked on a miss. */
static int kcache__unit_in_memory(const kcache *kc, const kcache_key *k) {
    uint64_t uh = kcache_hash(k->unit, strlen(k->unit)).lo;
    const kcache__node *n;
    for (n = kc->lru.head.next; n != &kc->lru.head; n = n->next)
        if (n->unit_hash == uh) return 1;
    return 0;
}

/* ============================================================================================== */
/* >>reasons  a miss's reason: the field, the dependency, the closest overload                    */
/* ============================================================================================== */


/* snprintf-style appender: len counts the whole text, p holds what fits (NUL-terminated, cut at a
   whole character). Everything appended is escaped as kcache__log escapes a line (kcache_explain
   shows unit names, file names and layer paths). */
typedef struct kcache__sb { char *p; size_t cap, len; const kcache__mem *mem; /* its kcache's allocator */ } kcache__sb;
static void kcache__sb_add(kcache__sb *b, const char *fmt, ...) {
    char small[512], *raw = small;
    const unsigned char *r;
    va_list ap, again;
    int n;
    size_t i = 0;
    va_start(ap, fmt);
    va_copy(again, ap);
    n = vsnprintf(small, sizeof small, fmt, ap);
    if (n >= (int)sizeof small && (raw = (char *)kcache__mem_alloc(b->mem, (size_t)n + 1)) != NULL) vsnprintf(raw, (size_t)n + 1, fmt, again);
    else if (!raw) { raw = small; n = (int)sizeof small - 1; }
    va_end(again);
    va_end(ap);
    r = (const unsigned char *)raw;
    while (n > 0 && i < (size_t)n) {
        char one[11];
        size_t used, l = kcache__esc_char(r + i, (size_t)n - i, one, &used);
        if (b->len + l < b->cap) {
            memcpy(b->p + b->len, one, l);
            b->p[b->len + l] = 0;
        } else if (b->len < b->cap) {
            b->p[b->len] = 0; /* the first character that does not fit: the text stops here */
        }
        b->len += l;
        i += used;
    }
    if (raw != small) kcache__mem_free(b->mem, raw);
}

static void kcache__sb_time(kcache__sb *b, int64_t ns) {
    time_t t = (time_t)(ns / 1000000000);
    struct tm tmv;
    char when[32];
#if defined(_WIN32)
    localtime_s(&tmv, &t); /* Windows' thread-safe localtime: arguments the other way round */
#else
    localtime_r(&t, &tmv);
#endif
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tmv);
    kcache__sb_add(b, "%s", when);
}

/* Names every field that differs between a stored key and the key now, with both previews. */
static void kcache__sb_diff(kcache__sb *b, const kcache_key *stored, const kcache_key *now) {
    const kcache_key_field *a = kcache__key_fields(stored), *c = kcache__key_fields(now);
    uint32_t i = 0, j = 0;
    const char *sep = "";
    while (i < stored->count || j < now->count) {
        int cmp = i >= stored->count ? 1 : j >= now->count ? -1 : strcmp(a[i].name, c[j].name);
        if (cmp < 0) { kcache__sb_add(b, "%s%s: \"%s\" (stored) vs absent (now)", sep, a[i].name, a[i].preview); i++; }
        else if (cmp > 0) { kcache__sb_add(b, "%s%s: absent (stored) vs \"%s\" (now)", sep, c[j].name, c[j].preview); j++; }
        else {
            if (a[i].digest.lo != c[j].digest.lo || a[i].digest.hi != c[j].digest.hi || a[i].type != c[j].type) {
                if (strcmp(a[i].preview, c[j].preview) != 0)
                    kcache__sb_add(b, "%s%s: \"%s\" (stored) vs \"%s\" (now)", sep, a[i].name, a[i].preview, c[j].preview);
                else {
                    char x[33], y[33];
                    kcache_hash_hex(a[i].digest, x);
                    kcache_hash_hex(c[j].digest, y);
                    kcache__sb_add(b, "%s%s: same first bytes, xxh128 %s (stored) vs %s (now)", sep, a[i].name, x, y);
                }
            } else {
                i++; j++;
                continue;
            }
            i++; j++;
        }
        sep = "; ";
    }
}

static void kcache__sb_stamps(kcache__sb *b, const kcache_key *stored, const kcache_key *now, int policy) {
    const kcache_key_field *a = kcache__key_fields(stored), *c = kcache__key_fields(now);
    uint32_t i;
    const char *sep = "";
    for (i = 0; i < now->count && i < stored->count; i++) {
        int d;
        if (c[i].type != KCACHE_FIELD_FILE) continue;
        d = kcache__stamp_diff(&a[i], &c[i]);
        if (!kcache__stamp_stale(d, policy)) continue;
        kcache__sb_add(b, "%sfile %s (%s):%s%s%s differ", sep, c[i].name, c[i].preview, (d & KCACHE__STAMP_MTIME) ? " mtime" : "",
                       (d & KCACHE__STAMP_SIZE) ? " size" : "", (d & KCACHE__STAMP_CONTENT) ? " content" : "");
        sep = "; ";
    }
}

/* How many of k's fields a stored overload (its record) has equal; -1 when the record is bad. */
static int kcache__equal_fields(const unsigned char *rec, size_t len, const kcache_key *k, kcache_key *out) {
    const kcache_key_field *f = kcache__key_fields(k), *g;
    uint32_t i;
    int eq = 0, found;
    if (kcache__record_parse(rec, len, out) != KCACHE_OK) { kcache_key_free(out); return -1; }
    g = kcache__key_fields(out);
    for (i = 0; i < k->count; i++) {
        uint32_t at = kcache__key_find(out, f[i].name, &found);
        if (found && g[at].type == f[i].type && g[at].digest.lo == f[i].digest.lo && g[at].digest.hi == f[i].digest.hi) eq++;
    }
    return eq;
}

/* Keeps the better of two candidate overloads in *best (moving a key by value needs its heap
   pointer, never its inline array, to follow: kcache__key_fields reads whichever is set). */
static void kcache__keep_closest(kcache_key *best, int *best_eq, kcache_key *cand, int eq) {
    if (eq > *best_eq) {
        if (*best_eq >= 0) kcache_key_free(best);
        *best = *cand;
        *best_eq = eq;
    } else {
        kcache_key_free(cand);
    }
}

/* Writes into b how k differs from the closest of an index's live overloads (nothing when none of
   their records parses). The two keys compared live on the heap (about 4 KiB each: small stacks). */
static void kcache__sb_closest(kcache__sb *b, const kcache__ix *ix, const kcache_key *k) {
    kcache_key *best = kcache__key_alloc(b->mem), *cand = kcache__key_alloc(b->mem);
    int best_eq = -1;
    uint32_t i;
    for (i = 0; best && cand && i < ix->n[KCACHE__IX_LIVE]; i++) {
        int eq = kcache__equal_fields(ix->items[KCACHE__IX_LIVE][i].rec, ix->items[KCACHE__IX_LIVE][i].rec_len, k, cand);
        if (eq >= 0) kcache__keep_closest(best, &best_eq, cand, eq);
    }
    if (best_eq >= 0) { kcache__sb_diff(b, best, k); kcache_key_free(best); }
    kcache__mem_free(b->mem, best); /* (cand was freed or moved into best by the last keep_closest) */
    kcache__mem_free(b->mem, cand);
}

/* Whether k, absent, is a new overload of its unit rather than a changed one: the unit has stored
   overloads that differ among themselves in exactly the fields in which k differs from the closest
   of them (numba's signatures, a kernel's specialisations by id: a new value there was never
   stored). One overload alone, a field the stored ones share (a source, a compiler version), a
   field k lacks or adds: a field differs. Only asked on a miss (it parses the unit's records). */
static int kcache__new_overload(const kcache__mem *mem, const kcache__ix *ix, const kcache_key *k) {
    kcache_key *best = kcache__key_alloc(mem), *cand = kcache__key_alloc(mem);
    unsigned char *varies = k->count ? (unsigned char *)kcache__mem_alloc(mem, k->count) : NULL;
    const kcache_key_field *f = kcache__key_fields(k), *g, *h;
    int best_eq = -1, verdict = 0, found;
    uint32_t i, j, at, n = ix->n[KCACHE__IX_LIVE];
    for (i = 0; best && cand && varies && n >= 2 && i < n; i++) {
        int eq = kcache__equal_fields(ix->items[KCACHE__IX_LIVE][i].rec, ix->items[KCACHE__IX_LIVE][i].rec_len, k, cand);
        if (eq >= 0) kcache__keep_closest(best, &best_eq, cand, eq);
    }
    if (best_eq >= 0 && best->count == k->count) {
        verdict = 1;
        memset(varies, 0, k->count);
        g = kcache__key_fields(best);
        for (j = 0; verdict && j < k->count; j++) verdict = (kcache__key_find(best, f[j].name, &found), found);
        for (i = 0; verdict && i < n; i++) { /* which of best's fields differ among the stored ones */
            if (kcache__equal_fields(ix->items[KCACHE__IX_LIVE][i].rec, ix->items[KCACHE__IX_LIVE][i].rec_len, k, cand) < 0) continue;
            h = kcache__key_fields(cand);
            for (j = 0; j < k->count; j++) {
                int there;
                uint32_t at2 = kcache__key_find(cand, f[j].name, &there);
                at = kcache__key_find(best, f[j].name, &found);
                if (!there || !kcache__same(h[at2].digest, g[at].digest) || h[at2].type != g[at].type) varies[j] = 1;
            }
            kcache_key_free(cand);
        }
        for (j = 0; verdict && j < k->count; j++) {
            int differs;
            at = kcache__key_find(best, f[j].name, &found);
            differs = g[at].type != f[j].type || !kcache__same(g[at].digest, f[j].digest);
            verdict = differs == (varies[j] != 0);
        }
    }
    if (best_eq >= 0) kcache_key_free(best);
    kcache__mem_free(mem, best); /* (cand was freed or moved into best) */
    kcache__mem_free(mem, cand);
    kcache__mem_free(mem, varies);
    return verdict;
}

/* Why a key whose entry is not in the store misses, from its unit's index (no lock); with b, says
   so in words. */
static kcache_reason kcache__ix_classify(kcache *kc, const kcache_key *k, int64_t *when, kcache__sb *b) {
    kcache__store *st = kc->store;
    kcache__ix ix;
    kcache_reason reason = KCACHE_REASON_COLD;
    kcache_status r = kcache__ix_read(st, k->unit, &ix);
    int at = -1, new_overload = 0;
    *when = 0;
    if (r == KCACHE_OK) at = kcache__ix_find(&ix, KCACHE__IX_GONE, k->digest);
    if (at >= 0) {
        const kcache__ix_item *it = &ix.items[KCACHE__IX_GONE][at];
        reason = (it->reason == KCACHE_REASON_EVICTED || it->reason == KCACHE_REASON_REJECTED || it->reason == KCACHE_REASON_STAMP)
                     ? (kcache_reason)it->reason : KCACHE_REASON_COLD; /* a file's word is not trusted further */
        *when = it->when;
        if (reason == KCACHE_REASON_EVICTED && !*when) kcache__store_evicted_when(st, k->digest, when);
    } else if ((r == KCACHE_OK && kcache__ix_find(&ix, KCACHE__IX_LIVE, k->digest) >= 0) ||
               kcache__store_evicted_when(st, k->digest, when)) {
        reason = KCACHE_REASON_EVICTED; /* listed, but its entry is gone: only eviction does that */
        if (!*when) kcache__store_evicted_when(st, k->digest, when);
    } else if (r == KCACHE_OK && ix.n[KCACHE__IX_LIVE] > 0) {
        /* a field differs, as DESIGN's reasons say (cold is a unit never stored); a new overload
           (the stored ones differ among themselves where this one does) is said in its words */
        reason = KCACHE_REASON_FIELD;
        new_overload = kcache__new_overload(&kc->mem, &ix, k);
    }
    if (b) {
        kcache__sb_add(b, "miss: %s", kcache__reason_text[reason]);
        switch (reason) {
        case KCACHE_REASON_EVICTED:
            kcache__sb_add(b, ": removed from %s ", kc->dir);
            if (*when) { kcache__sb_add(b, "at "); kcache__sb_time(b, *when); }
            else kcache__sb_add(b, "before the eviction log's memory");
            {
                const kcache__table *t = kcache__tab(st); /* the limit the store's last writer had */
                kcache__sb_add(b, " (store limit %llu bytes)",
                               (unsigned long long)(t && t->map ? kcache__acct_at(t->map, 56) : st->limit));
            }
            break;
        case KCACHE_REASON_REJECTED:
            kcache__sb_add(b, ": the entry of unit \"%s\" was removed at ", k->unit);
            kcache__sb_time(b, *when);
            break;
        case KCACHE_REASON_STAMP: {
            kcache_key *stored = kcache__key_alloc(&kc->mem);
            kcache__sb_add(b, " (entry removed at ");
            kcache__sb_time(b, *when);
            kcache__sb_add(b, ")");
            if (stored &&
                kcache__record_parse(ix.items[KCACHE__IX_GONE][at].rec, ix.items[KCACHE__IX_GONE][at].rec_len, stored) == KCACHE_OK) {
                kcache__sb_add(b, ": ");
                kcache__sb_stamps(b, stored, k, kc->cfg.stamp);
            }
            kcache__key_drop(&kc->mem, stored);
            break;
        }
        case KCACHE_REASON_FIELD:
            if (new_overload) kcache__sb_add(b, ": never stored: a new overload (the unit's stored overloads differ among themselves where it differs from them)");
            kcache__sb_add(b, ": closest of %u stored overload(s) of unit \"%s\": ", ix.n[KCACHE__IX_LIVE], k->unit);
            kcache__sb_closest(b, &ix, k);
            break;
        default:
            b->len = 0; /* cold reads "miss: cold: unit ... never stored", as in memory-only mode */
            if (b->cap) b->p[0] = 0;
            kcache__sb_add(b, "miss: cold: unit \"%s\" %s in %s", k->unit,
                           r == KCACHE_ECORRUPT ? "has a damaged index (the next put rebuilds it): nothing known" : "never stored",
                           kc->dir);
            if (r == KCACHE_OK && ix.n[KCACHE__IX_GONE]) kcache__sb_add(b, " (%u overload(s) left it)", ix.n[KCACHE__IX_GONE]);
#ifdef KCACHE_NO_EXPLAIN
            kcache__sb_add(b, " (as far as kcache can tell: per-unit indexes are compiled out, KCACHE_NO_EXPLAIN)");
#endif
            break;
        }
    }
    if (r == KCACHE_OK) kcache__ix_free(&ix);
    return reason;
}

/* The reason for a miss that found nothing under the key's digest. */
static kcache_reason kcache__absent_reason(kcache *kc, const kcache_key *k, int64_t *when) {
    kcache_reason r = KCACHE_REASON_COLD;
    *when = 0;
    if (kc->store) return kcache__ix_classify(kc, k, when, NULL);
    if (kc->store_refused) return KCACHE_REASON_UNWRITABLE; /* what other processes stored is out of reach */
    kcache__mutex_lock(&kc->lock);
    if ((*when = kcache__tomb_find(kc, k->digest)) != 0) r = KCACHE_REASON_EVICTED;
    else if (kcache__unit_in_memory(kc, k)) r = KCACHE_REASON_FIELD;
    kcache__mutex_unlock(&kc->lock);
    return r;
}

static void kcache__count_miss_quiet(kcache *kc, const kcache_key *k, kcache_reason r) {
    kcache__mutex_lock(&kc->lock);
    kc->stats.misses++;
    kc->stats.misses_by_reason[r]++;
    if (r == KCACHE_REASON_REJECTED) kc->stats.rejects++;
    kcache__pub_miss(&kc->pub, k->unit, r);
    kcache__mutex_unlock(&kc->lock);
}

static void kcache__count_miss(kcache *kc, const kcache_key *k, kcache_reason r) {
    kcache__count_miss_quiet(kc, k, r);
    KCACHE__DEBUG(kc, "miss %s: %s", k->unit, kcache__reason_text[r]);
}

/* The dependency whose file could not be read when the key was built (the key failed with
   KCACHE_ENOENT; kcache_key_file keeps no stat beside the key for it, and its content digest is
   zero), or NULL. */
static const kcache_key_field *kcache__unreadable_dep(const kcache_key *k) {
    const kcache_key_field *f = kcache__key_fields(k);
    uint32_t i;
    for (i = 0; k->error == KCACHE_ENOENT && i < k->count; i++)
        if (f[i].type == KCACHE_FIELD_FILE && f[i].content.lo == 0 && f[i].content.hi == 0 && !kcache__key_kfile(k, f[i].name))
            return &f[i];
    return NULL;
}

/* What a dependency that could not be stat'ed when the key was made is: missing, not changed (it
   may never have existed, e.g. a relative path from another working directory). */
#define KCACHE__DEP_MISSING "a dependency is missing: file %s (%s) does not exist or is not a regular file%s"
#define KCACHE__DEP_RELATIVE(dep) ((dep)->preview[0] == '/' ? "" : " (a relative path is taken against the working directory when the key is made)")

/* A lookup with a key that failed to build (an add returned an error) never matches, so it is a
   miss like any other: counted and logged. A missing dependency is counted with the dependency
   misses (stamp); any other failure is the caller's error, logged with the status the lookup
   returns. */
static void kcache__incomplete_miss(kcache *kc, const kcache_key *k) {
    const kcache_key_field *dep = kcache__unreadable_dep(k);
    if (dep) {
        kcache__count_miss_quiet(kc, k, KCACHE_REASON_STAMP);
        KCACHE__DEBUG(kc, "miss %s: " KCACHE__DEP_MISSING ", so the key never matches", k->unit, dep->name, dep->preview,
                      KCACHE__DEP_RELATIVE(dep));
    } else {
        KCACHE__DEBUG(kc, "miss %s: the key is incomplete (%s), so it never matches", k->unit, kcache_strerror(k->error));
    }
}

/* Lock held: keeps a payload just read (from the store or a lower tier) in memory as a new node,
   unless the key was put or removed while it was read: the caller gets what it read, memory keeps
   what the put left. Returns what must be released after unlocking. */
static kcache__node *kcache__keep_read(kcache *kc, kcache__node *nn, kcache__blob *b, uint64_t gen, int64_t now) {
    if (nn && (kcache__lru_find(&kc->lru, nn->digest) || kcache__changed_since(kc, nn->digest, gen) || !kcache__mem_fits(kc, nn->mem))) {
        nn->blob = NULL;
        kcache__node_free(nn);
        nn = NULL;
    }
    if (nn) {
        nn->touched_ns = now;
        return kcache__lru_add(kc, nn);
    }
    kcache__blob_unref(b); /* no room in memory: the caller's reference only */
    return NULL;
}

/* ============================================================================================== */
/* >>tiers  below the store: read-only layers (searched first), then the remote                   */
/* ============================================================================================== */


#ifndef KCACHE_NO_LAYERS
/* A layer left out, and why: the debug log says it, and the first reason stays for kcache_explain.
   The walk and the level checks word a refusal for the store: the reason, then what it means for
   the store ("; refusing the store", "; refusing it", then "; to fix: ..."). For a layer
   that clause is false (the store is still used), so the reason ends before it. */
static void kcache__layer_refused(kcache *kc, const char *path, const char *why) {
    const char *cut = NULL, *p = why;
    int n;
    while ((p = strstr(p, "; refusing ")) != NULL) cut = p++;
    n = cut ? (int)(cut - why) : (int)strlen(why);
    if (!kc->layers_why[0]) kcache__say(kc->layers_why, sizeof kc->layers_why, "layer %s not used: %.*s", path, n, why);
    KCACHE__DEBUG(kc, "layer %s not used: %.*s", path, n, why);
}

/* Whether directory fd is the store's or an earlier layer's (the same one named twice). */
static int kcache__layer_known(const kcache *kc, int fd) {
    kcache__finfo a, b;
    int i;
    if (kcache__io_fstat(fd, &a) != 0 || a.ino == 0) return 0; /* (no inode numbers: Windows' FAT) */
    if (kc->store && kcache__io_fstat(kc->store->dirfd, &b) == 0 && a.dev == b.dev && a.ino == b.ino) return 1;
    for (i = 0; i < kc->nlayers; i++)
        if (kcache__io_fstat(kc->layers[i]->dirfd, &b) == 0 && a.dev == b.dev && a.ino == b.ino) return 1;
    return 0;
}

/* Opens the layers spec names (KCACHE_LAYERS: directories separated by ':', ';' on Windows), in
   order. One that is missing, refused, or the store itself is left out. */
#define KCACHE__LAYER_PATH_MAX 4096
static void kcache__layers_open(kcache *kc, const char *spec) {
    char *path, why[400];
    if (!spec || !*spec) return;
    if ((path = (char *)kcache__mem_alloc(&kc->mem, KCACHE__LAYER_PATH_MAX)) == NULL) { /* (not on the stack: small thread stacks) */
        strcpy(why, "out of memory");
        kcache__layer_refused(kc, spec, why);
        return;
    }
    while (*spec) {
        size_t n = strcspn(spec, KCACHE__LAYER_SEP);
        kcache__store *ly = NULL;
        kcache_status s;
        if (n == 0) { spec++; continue; }
        if (kc->nlayers == KCACHE__LAYERS_MAX) {
            KCACHE__DEBUG(kc, "KCACHE_LAYERS: only the first %d layers are used", KCACHE__LAYERS_MAX);
            break;
        }
        why[0] = 0;
        if (n >= KCACHE__LAYER_PATH_MAX) {
            snprintf(why, sizeof why, "the path is too long");
            snprintf(path, KCACHE__LAYER_PATH_MAX, "%.*s...", 60, spec);
            spec += n;
            kcache__layer_refused(kc, path, why);
            continue;
        }
        memcpy(path, spec, n);
        path[n] = 0;
        spec += n;
        s = kcache__layer_open(&ly, path, &kc->cfg, why, sizeof why);
        if (s != KCACHE_OK) {
            if (!why[0]) snprintf(why, sizeof why, "%s", kcache_strerror(s));
            kcache__layer_refused(kc, path, why);
            continue;
        }
        if (kcache__layer_known(kc, ly->dirfd)) {
            KCACHE__DEBUG(kc, "layer %s not used: it is the store itself, or named before", path);
            kcache__store_close(ly);
            continue;
        }
        kc->layers[kc->nlayers++] = ly;
        if (!kcache__is_dir_nofollow(ly->dirfd, "e")) KCACHE__DEBUG(kc, "layer %s (read-only) holds no entries (no e/)", path);
        else KCACHE__DEBUG(kc, "layer %s (read-only)", path);
    }
    kcache__mem_free(&kc->mem, path);
}
#else /* KCACHE_NO_LAYERS: kc->nlayers stays 0; layers asked for are said to be compiled out */
static void kcache__layers_open(kcache *kc, const char *spec) {
    if (!spec || !*spec) return;
    kcache__say(kc->layers_why, sizeof kc->layers_why, "KCACHE_LAYERS not used: read-only layers are compiled out (KCACHE_NO_LAYERS)");
    KCACHE__DEBUG(kc, "%s", kc->layers_why);
}
#endif /* KCACHE_NO_LAYERS */

static void kcache__lower_open(kcache *kc) {
    char why[400];
    const char *layers = kc->cfg.layers;
    kc->cfg.layers = NULL; /* the caller's string may go away; each layer keeps its path */
    kcache__layers_open(kc, layers);
    why[0] = 0;
    kcache__remote_open(&kc->remote, &kc->cfg, why, sizeof why);
    if (KCACHE__REMOTE(kc)) kcache__remote_attach(kc->remote, &kc->mem, &kc->pub);
    kcache__remote_own_config(KCACHE__REMOTE(kc), &kc->cfg); /* the caller's strings may go away */
    if (why[0]) snprintf(kc->remote_why, sizeof kc->remote_why, "%s", why);
#if defined(KCACHE_ZSTD)
    if (kc->cfg.compress && !kc->store) KCACHE__DEBUG(kc, "KCACHE_COMPRESS=1 has no store to compress");
#else
    if (kc->cfg.compress) KCACHE__DEBUG(kc, "KCACHE_COMPRESS=1 needs kcache built with KCACHE_ZSTD; the store stays uncompressed");
#endif
#ifdef KCACHE_NO_EXPLAIN
    if (kc->cfg.trace) KCACHE__DEBUG(kc, "KCACHE_TRACE=1 does nothing: per-unit indexes are compiled out (KCACHE_NO_EXPLAIN)");
#endif
    if (why[0]) {
        KCACHE__DEBUG(kc, "remote: %s", why);
    } else if (KCACHE__REMOTE(kc) && kc->cfg.debug) {
        char said[768];
        kcache__remote_describe(kc->remote, said, sizeof said);
        KCACHE__DEBUG(kc, "remote %s", said);
    }
}

/* The remote calls' counts into the stats and the stats file, their note into the debug log. */
static void kcache__remote_stats(kcache *kc, const kcache__remote_ev *ev) {
    kcache__mutex_lock(&kc->lock);
#define KCACHE__REMOTE_COUNT(field, counter, v)                                                 \
    do { kc->stats.field += (v); kcache__pub_add(&kc->pub, counter, (v)); } while (0)
    KCACHE__REMOTE_COUNT(remote_lookups, KCACHE__PUB_REMOTE_LOOKUPS, ev->lookups);
    KCACHE__REMOTE_COUNT(remote_puts, KCACHE__PUB_REMOTE_PUTS, ev->puts);
    KCACHE__REMOTE_COUNT(remote_errors, KCACHE__PUB_REMOTE_ERRORS, ev->errors);
    KCACHE__REMOTE_COUNT(remote_timeouts, KCACHE__PUB_REMOTE_TIMEOUTS, ev->timeouts);
    KCACHE__REMOTE_COUNT(remote_skipped, KCACHE__PUB_REMOTE_SKIPPED, ev->skipped);
    KCACHE__REMOTE_COUNT(remote_calls, KCACHE__PUB_REMOTE_CALLS, ev->calls);
    KCACHE__REMOTE_COUNT(remote_latency_ns, KCACHE__PUB_REMOTE_LATENCY_NS, ev->latency_ns);
    KCACHE__REMOTE_COUNT(remote_rejects, KCACHE__PUB_REMOTE_REJECTS, ev->rejects);
    KCACHE__REMOTE_COUNT(rejects, KCACHE__PUB_REJECTS, ev->rejects);
    KCACHE__REMOTE_COUNT(remote_breaker_opens, KCACHE__PUB_REMOTE_OPENS, ev->opened);
#undef KCACHE__REMOTE_COUNT
    kcache__pub_add(&kc->pub, KCACHE__PUB_REMOTE_CLOSES, ev->closed);
    kcache__mutex_unlock(&kc->lock);
    if (ev->note[0]) KCACHE__DEBUG(kc, "%s", ev->note);
}

/* A hit from below the store (a layer, or the remote at `where`), validated as a local entry is:
   written into the store (for a layer, unless KCACHE_LAYERS_COPY=0) so that the next lookup here
   is a local one, kept in memory, counted; the caller gets it as from a disk hit. Takes blob. */
static kcache_status kcache__lower_hit(kcache *kc, const kcache_key *k, uint64_t gen, kcache__blob *blob, int layer, const char *where,
                                       const void **data, size_t *size) {
    kcache__node *nn, *gone;
    int64_t now;
    if (kc->store && !kc->store->readonly && (!layer || kc->cfg.layers_copy)) {
        kcache__store_ev sev;
        kcache_status s;
        memset(&sev, 0, sizeof sev);
        s = kcache__store_put(kc->store, k, blob->data, blob->size, &sev);
        kcache__store_stats(kc, &sev, s);
    }
    nn = kcache__node_new(kc, k, blob);
    now = kcache__now_ns();
    kcache__blob_ref(blob);
    *data = blob->data;
    *size = blob->size;
    kcache__mutex_lock(&kc->lock);
    if (layer) kc->stats.hits_layer++;
    else kc->stats.hits_remote++;
    kc->stats.bytes_read += blob->size;
    kcache__pub_event(&kc->pub, layer ? KCACHE__PUB_EV_HIT_LAYER : KCACHE__PUB_EV_HIT_REMOTE, k->unit, nn ? nn->unit_hash : 0, blob->size,
                      KCACHE_REASON_HIT, 0, now);
    kcache__pub_add(&kc->pub, layer ? KCACHE__PUB_HITS_LAYER : KCACHE__PUB_HITS_REMOTE, 1);
    kcache__pub_add(&kc->pub, KCACHE__PUB_BYTES_READ, blob->size);
    gone = kcache__keep_read(kc, nn, blob, gen, now);
    kcache__mutex_unlock(&kc->lock);
    kcache__release_nodes(kc, gone);
    if (kc->cfg.debug) KCACHE__DEBUG(kc, "hit %s %s (%zu bytes) from %s", layer ? "layer" : "remote", k->unit, *size, where);
    return KCACHE_OK;
}

/* The layers, in order, after a local miss (no lock anywhere: a layer is only read). The first
   entry that validates is the hit. A corrupt one is a reject (counted once per lookup: count) and
   stays where it is; a stale one (a dependency changed) makes the miss a stamp miss (*reason, when
   the store had nothing to say); another user's file there is never read. */
static kcache_status kcache__layers_get(kcache *kc, const kcache_key *k, uint64_t gen, const void **data, size_t *size,
                                        kcache_reason *reason, int count) {
    int i;
    for (i = 0; i < kc->nlayers; i++) {
        kcache__store *ly = kc->layers[i];
        kcache__read rd;
        kcache__store_read(ly, k, kc->cfg.stamp, 0, &rd);
        kcache__mem_free(rd.mem, rd.rec);
        if (rd.status == KCACHE_OK) return kcache__lower_hit(kc, k, gen, rd.blob, 1, ly->dir, data, size);
        if (rd.status == KCACHE_ENOENT) continue;
        if (rd.reason == KCACHE_REASON_STAMP) {
            if (*reason == KCACHE__REASON_UNSET) *reason = KCACHE_REASON_STAMP;
            KCACHE__DEBUG(kc, "layer %s: %s: %s", ly->dir, k->unit, kcache__reason_text[KCACHE_REASON_STAMP]);
        } else if (rd.status == KCACHE_ECORRUPT) {
            if (count) {
                kcache__mutex_lock(&kc->lock);
                kc->stats.rejects++;
                kcache__pub_add(&kc->pub, KCACHE__PUB_REJECTS, 1);
                kcache__mutex_unlock(&kc->lock);
            }
            KCACHE__DEBUG(kc, "reject %s: the entry in layer %s is corrupt; left there (a layer is read-only)", k->unit, ly->dir);
        } else {
            KCACHE__DEBUG(kc, "layer %s: %s: %s", ly->dir, k->unit,
                          rd.status != KCACHE_EUNSAFE ? kcache_strerror(rd.status)
                          : rd.reason == KCACHE_REASON_UNWRITABLE ? ly->shard_why : "its entry is not yours or root's: not read");
        }
    }
    return KCACHE_MISS;
}

/* Which tiers below the store a lookup asks (kcache__get's ask): kcache_get asks both; a re-check
   inside kcache_get_or_build asks only one that could have received something since its first look
   (each remote ask is a network round trip). */
#define KCACHE__ASK_LAYERS 1u
#define KCACHE__ASK_REMOTE 2u
#define KCACHE__ASK_LOWER (KCACHE__ASK_LAYERS | KCACHE__ASK_REMOTE)

/* After a local miss: the lower tiers named in ask, in order: the layers, then the remote. The
   key's pending dependency digests are taken first (a lower tier's entry is judged, and copied into
   the store, with every content digest: see kcache__key_resolve). */
static const kcache_key *kcache__key_resolve(kcache *kc, const kcache_key *k, int policy, kcache_key **copy);
static kcache_status kcache__lower_get(kcache *kc, const kcache_key *k, uint64_t gen, const void **data, size_t *size,
                                       kcache_reason *reason, int count, unsigned ask, kcache_origin *from) {
    kcache_key *copy = NULL;
    const kcache_key *rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy);
    kcache_status s = KCACHE_MISS;
    kcache__remote_ev ev;
    kcache__read rd;
    const char *where;
    if (!rk || rk->error != KCACHE_OK) /* out of memory, or a dependency that cannot be read */
        s = KCACHE_MISS;
    else if (KCACHE__NLAYERS(kc) && (ask & KCACHE__ASK_LAYERS) && kcache__layers_get(kc, rk, gen, data, size, reason, count) == KCACHE_OK)
        s = KCACHE_OK, *from = KCACHE_FROM_LAYER;
    else if (KCACHE__REMOTE(kc) && (ask & KCACHE__ASK_REMOTE)) {
        memset(&ev, 0, sizeof ev);
        kcache__remote_get(kc->remote, rk, kc->cfg.stamp, 0, 0, &rd, &where, &ev);
        kcache__remote_stats(kc, &ev);
        kcache__mem_free(rd.mem, rd.rec);
        if (rd.status == KCACHE_OK) s = kcache__lower_hit(kc, rk, gen, rd.blob, 0, where, data, size), *from = KCACHE_FROM_REMOTE;
    }
    kcache__key_drop(&kc->mem, copy);
    return s;
}

/* The batch's read-back: mm->ask[0..n) (KCACHE__REMOTE_MANY at most), keys that missed here a moment
   ago, asked of the remote at once (kcache__remote_get_many: one exchange per shard); each hit taken
   as kcache__lower_get takes one. mm->got[i]: KCACHE_OK with the payload in mm->data[i],
   mm->size[i], or KCACHE_MISS. */
static void kcache__remote_fetch(kcache *kc, kcache__many *mm, size_t n) {
    size_t m = 0, i;
    kcache__remote_ev ev;
    uint64_t gen;
    if (n > KCACHE__REMOTE_MANY) n = KCACHE__REMOTE_MANY;
    kcache__mutex_lock(&kc->lock);
    gen = kc->gen;
    kcache__mutex_unlock(&kc->lock);
    for (i = 0; i < n; i++) {
        const kcache_key *r;
        mm->got[i] = KCACHE_MISS;
        mm->data[i] = NULL;
        mm->size[i] = 0;
        mm->copy[i] = NULL;
        r = kcache__key_resolve(kc, mm->ask[i], kc->cfg.stamp, &mm->copy[i]);
        if (r && r->error == KCACHE_OK) { /* (out of memory, or a dependency that cannot be read: a miss) */
            mm->rk[m] = r;
            mm->fat[m++] = i;
        }
    }
    memset(&ev, 0, sizeof ev);
    if (m && KCACHE__REMOTE(kc)) kcache__remote_get_many(KCACHE__REMOTE(kc), mm, m, kc->cfg.stamp, &ev);
    else m = 0;
    kcache__remote_stats(kc, &ev);
    for (i = 0; i < m; i++) {
        size_t at = mm->fat[i];
        kcache__mem_free(mm->rd[i].mem, mm->rd[i].rec);
        if (mm->rd[i].status == KCACHE_OK) mm->got[at] = kcache__lower_hit(kc, mm->rk[i], gen, mm->rd[i].blob, 0, mm->where[i], &mm->data[at], &mm->size[at]);
    }
    for (i = 0; i < n; i++) kcache__key_drop(&kc->mem, mm->copy[i]);
}

/* kcache_explain's look below the store: writes a hit ("hit: layer DIR ...", "hit: remote (URL)
   ...") or, when nothing below hits, the first layer's stale or corrupt entry, or a remote reject,
   and returns 1; or writes nothing (0) and the local reason follows. Changes nothing anywhere. k has
   every content digest already (kcache_explain resolves it: stamps are compared whole). */
static int kcache__lower_explain(kcache *kc, const kcache_key *k, kcache__sb *b) {
    kcache__remote_ev ev;
    kcache__read rd;
    const char *where;
    kcache_key *stored;
    kcache__store *bad = NULL;
    unsigned char *bad_rec = NULL;
    const kcache__mem *bad_mem = NULL; /* what bad_rec came from */
    size_t bad_len = 0;
    int said = 1, i;
    for (i = 0; i < KCACHE__NLAYERS(kc); i++) {
        kcache__store_read(kc->layers[i], k, kc->cfg.stamp, 1, &rd);
        if (rd.status == KCACHE_OK) {
            kcache__sb_add(b, "hit: layer %s (unit \"%s\", %zu bytes)", kc->layers[i]->dir, k->unit, rd.blob->size);
            kcache__blob_unref(rd.blob);
            kcache__mem_free(rd.mem, rd.rec);
            kcache__mem_free(bad_mem, bad_rec);
            return 1;
        }
        if (!bad && (rd.reason == KCACHE_REASON_STAMP || rd.status == KCACHE_ECORRUPT)) {
            bad = kc->layers[i];
            if (rd.reason == KCACHE_REASON_STAMP) { bad_rec = rd.rec; bad_mem = rd.mem; bad_len = rd.rec_len; rd.rec = NULL; }
        }
        kcache__mem_free(rd.mem, rd.rec);
    }
    if (KCACHE__REMOTE(kc)) { /* a peek: counted nowhere, the breaker as it was (ev stays empty) */
        memset(&ev, 0, sizeof ev);
        kcache__remote_get(kc->remote, k, kc->cfg.stamp, 0, 1, &rd, &where, &ev);
        if (rd.status == KCACHE_OK) kcache__sb_add(b, "hit: remote (%s), unit \"%s\", %zu bytes", where, k->unit, rd.blob->size);
        else if (rd.status == KCACHE_ECORRUPT)
            kcache__sb_add(b, "miss: %s: the value for unit \"%s\" on the remote %s fails validation; the next get %s", kcache__reason_text[KCACHE_REASON_REJECTED],
                           k->unit, where, kcache__remote_is_ro(kc->remote) ? "skips it (KCACHE_REMOTE_MODE=ro)" : "deletes it");
        else said = 0;
        if (rd.blob) kcache__blob_unref(rd.blob);
        kcache__mem_free(rd.mem, rd.rec);
        if (said) { kcache__mem_free(bad_mem, bad_rec); return 1; }
    }
    if (!bad) return 0;
    stored = bad_rec ? kcache__key_alloc(&kc->mem) : NULL; /* (on the heap: small stacks) */
    if (stored && kcache__record_parse(bad_rec, bad_len, stored) == KCACHE_OK) {
        kcache__sb_add(b, "miss: %s: ", kcache__reason_text[KCACHE_REASON_STAMP]);
        kcache__sb_stamps(b, stored, k, kc->cfg.stamp);
        kcache__sb_add(b, " (the entry in layer %s)", bad->dir);
    } else if (bad_rec) {
        kcache__sb_add(b, "miss: %s (the entry in layer %s)", kcache__reason_text[KCACHE_REASON_STAMP], bad->dir);
    } else {
        kcache__sb_add(b, "miss: %s: the entry for unit \"%s\" in layer %s fails validation; it stays there (a layer is read-only)",
                       kcache__reason_text[KCACHE_REASON_REJECTED], k->unit, bad->dir);
    }
    kcache__key_drop(&kc->mem, stored);
    kcache__mem_free(bad_mem, bad_rec);
    return 1;
}

/* Whether a layer holds other overloads of the key's unit: a cold miss here is then a field miss
   there. With b, replaces what b holds by the fields that differ from the layer's closest one. */
static int kcache__layers_closest(kcache *kc, const kcache_key *k, kcache__sb *b) {
    int i;
    for (i = 0; i < KCACHE__NLAYERS(kc); i++) {
        kcache__ix ix;
        uint32_t n;
        if (kcache__ix_read(kc->layers[i], k->unit, &ix) != KCACHE_OK) continue;
        n = ix.n[KCACHE__IX_LIVE];
        if (n && b) {
            b->len = 0;
            if (b->cap) b->p[0] = 0;
            kcache__sb_add(b, "miss: %s: closest of %u overload(s) of unit \"%s\" in layer %s: ", kcache__reason_text[KCACHE_REASON_FIELD], n,
                           k->unit, kc->layers[i]->dir);
            kcache__sb_closest(b, &ix, k);
        }
        kcache__ix_free(&ix);
        if (n) return 1;
    }
    return 0;
}

/* A layer that was left out (missing, refused): said after a miss's reason, as a local store's
   refusal is. */
static void kcache__layers_note(const kcache *kc, kcache__sb *b) {
    if (kc->layers_why[0]) kcache__sb_add(b, " (%s)", kc->layers_why);
#ifdef KCACHE_NO_REMOTE /* a remote asked for although compiled out: said the same way */
    if (kc->remote_why[0]) kcache__sb_add(b, " (%s)", kc->remote_why);
#endif
}

/* A remote tier that was asked for but is off (a URL refused...): said after a miss's reason too,
   since without a debug log nothing else says it. */
static void kcache__remote_note(const kcache *kc, kcache__sb *b) {
#ifndef KCACHE_NO_REMOTE
    if (kc->remote_why[0]) kcache__sb_add(b, " (remote off: %s)", kc->remote_why);
#else
    (void)kc, (void)b;
#endif
}

/* ============================================================================================== */
/* >>lookup  kcache_get, kcache_put, kcache_remove, the stats, kcache_verify                      */
/* ============================================================================================== */

/* ---- dependencies' content, when a lookup needs it ----
   A file field's content digest is taken lazily (kcache_key_file): from the process's stamp memo,
   then (files of KCACHE__STAMP_STORE_MIN or more) from the store, where an entry of unit
   "kcache.stamp" keeps it under the file's path and full stat, else by reading the file, after
   which both remember it. KCACHE_STAMP=content reads the file every time. */
static kcache_key *kcache__stamp_key(const kcache__mem *m, const kcache__finfo *fi, kcache_hash128 path_digest) {
    kcache_key *sk = (kcache_key *)kcache__mem_alloc(m, sizeof *sk); /* on the heap: calls fit small stacks */
    if (!sk) return NULL;
    kcache_key_init(sk, "kcache.stamp");
    kcache_key_u64(sk, "path.lo", path_digest.lo);
    kcache_key_u64(sk, "path.hi", path_digest.hi);
    kcache_key_u64(sk, "device", fi->dev);
    kcache_key_u64(sk, "inode", fi->ino);
    kcache_key_u64(sk, "size", fi->size);
    kcache_key_u64(sk, "mtime_ns", (uint64_t)fi->mtime_ns);
    kcache_key_u64(sk, "ctime_ns", (uint64_t)fi->ctime_ns);
    return sk;
}
static int kcache__stamp_load(kcache *kc, const kcache__finfo *fi, kcache_hash128 path_digest, kcache_hash128 *content) {
    kcache_key *sk = kcache__stamp_key(&kc->mem, fi, path_digest);
    kcache__read rd;
    int ok = 0;
    if (!sk) return 0;
    kcache__store_read(kc->store, sk, KCACHE_STAMP_HYBRID, 0, &rd);
    if (rd.status == KCACHE_OK && rd.blob->size == 16) {
        content->lo = kcache__get_u64(rd.blob->data);
        content->hi = kcache__get_u64(rd.blob->data + 8);
        ok = 1;
    }
    kcache__blob_unref(rd.blob);
    kcache__mem_free(rd.mem, rd.rec);
    kcache__key_drop(&kc->mem, sk);
    return ok;
}
static void kcache__stamp_save(kcache *kc, const kcache__finfo *fi, kcache_hash128 path_digest, kcache_hash128 content) {
    kcache_key *sk = kcache__stamp_key(&kc->mem, fi, path_digest);
    unsigned char v[16];
    kcache__store_ev ev;
    if (!sk) return;
    kcache__put_u64(v, content.lo);
    kcache__put_u64(v + 8, content.hi);
    memset(&ev, 0, sizeof ev);
    kcache__store_stats(kc, &ev, kcache__store_put(kc->store, sk, v, sizeof v, &ev));
    kcache__key_drop(&kc->mem, sk);
}

/* Fills a file field's content (kf: its path and the stat kcache_key_file took). A file read now
   gets the stamp it had while it was read (mtime 0 when it changed meanwhile: content only). */
static kcache_status kcache__field_content(kcache *kc, const kcache__kfile *kf, kcache_key_field *f, int policy) {
    kcache__finfo now;
    kcache_hash128 c;
    int changed = 0, big = kc && kc->store && kf->fi.size >= KCACHE__STAMP_STORE_MIN;
    if (policy != KCACHE_STAMP_CONTENT && (f->reserved & KCACHE__FF_PENDING)) {
        if (kcache__memo_get(&kf->fi, &c) || (big && kcache__stamp_load(kc, &kf->fi, f->digest, &c))) {
            kcache__memo_put(&kf->fi, c);
            f->content = c;
            f->reserved = KCACHE__FF_MEMO;
            return KCACHE_OK;
        }
    }
    if (kcache__hash_file(kc ? &kc->mem : NULL, kf->path, &c, &now, &changed) != 0) return KCACHE_ENOENT;
    f->content = c;
    f->mtime_ns = changed ? 0 : now.mtime_ns;
    f->file_size = now.size;
    f->reserved = 0;
    if (!changed) {
        kcache__memo_put(&now, c);
        if (kc && kc->store && now.size >= KCACHE__STAMP_STORE_MIN) kcache__stamp_save(kc, &now, f->digest, c);
    }
    return KCACHE_OK;
}

/* The file fields whose content must be taken before a key is written or compared whole under
   policy (by their flags): a pending one; under KCACHE_STAMP=content, one known from a memo too. */
static uint32_t kcache__ff_unresolved(int policy) { return KCACHE__FF_PENDING | (policy == KCACHE_STAMP_CONTENT ? KCACHE__FF_MEMO : 0); }

/* Whether some file field of k is one of those. */
static int kcache__key_unresolved(const kcache_key *k, int policy) {
    const kcache_key_field *f = kcache__key_fields(k);
    uint32_t i, want = kcache__ff_unresolved(policy);
    if (!k->files) return 0;
    for (i = 0; i < k->count; i++)
        if (f[i].type == KCACHE_FIELD_FILE && (f[i].reserved & want)) return 1;
    return 0;
}

/* k with the content of its file fields taken (every pending one; under KCACHE_STAMP=content, those
   known from a memo too): k itself when nothing is missing, else a copy (*copy, to free with
   kcache__key_drop), NULL when out of memory. A dependency that cannot be read leaves the copy with
   the error: it never matches and a put refuses it. */
static const kcache_key *kcache__key_resolve(kcache *kc, const kcache_key *k, int policy, kcache_key **copy) {
    kcache_key *c;
    kcache_key_field *f;
    uint32_t i, want = kcache__ff_unresolved(policy);
    *copy = NULL;
    if (!kcache__key_unresolved(k, policy)) return k;
    if ((c = (kcache_key *)kcache__mem_alloc(kc ? &kc->mem : NULL, sizeof *c)) == NULL) return NULL; /* (kcache__key_drop(&kc->mem, c)) */
    memcpy(c, k, offsetof(kcache_key, inline_fields));
    c->files = NULL;
    if (k->heap) { /* a key's own arrays are KCACHE_MALLOC's: kcache_key_free frees them */
        if ((c->heap = (kcache_key_field *)KCACHE_MALLOC(sizeof(kcache_key_field) * k->cap)) == NULL) {
            kcache__mem_free(kc ? &kc->mem : NULL, c);
            return NULL;
        }
        memcpy(c->heap, k->heap, sizeof(kcache_key_field) * k->count);
    } else {
        memcpy(c->inline_fields, k->inline_fields, sizeof(kcache_key_field) * k->count);
    }
    f = kcache__key_fields_w(c);
    for (i = 0; i < c->count; i++) {
        const kcache__kfile *kf;
        if (f[i].type != KCACHE_FIELD_FILE || !(f[i].reserved & want)) continue;
        if ((kf = kcache__key_kfile(k, f[i].name)) == NULL || kcache__field_content(kc, kf, &f[i], policy) != KCACHE_OK)
            kcache__key_fail(c, KCACHE_ENOENT);
    }
    *copy = c;
    return c;
}

static kcache_status kcache__get(kcache *kc, const kcache_key *k, const void **data, size_t *size, int count_miss, unsigned ask);
KCACHE_API kcache_status kcache_get(kcache *kc, const kcache_key *k, const void **data, size_t *size) {
    kcache_status s;
    kcache *h;
    int tries = 0;
#if KCACHE_CHECKS
    if (data) *data = NULL; /* (kcache__get_once does it for the calls that reach it) */
    if (size) *size = 0;
#endif
    KCACHE__CHECK_KC(kc, "kcache_get", KCACHE_EINVAL);
    KCACHE__CHECK_KEY(kc, k, "kcache_get", KCACHE_EINVAL);
    do {
        h = kcache__live(kc, 0);
        if (kc && !h) return KCACHE_ENOMEM; /* a forked child that could not open its own */
        s = kcache__get(h, k, data, size, 1, KCACHE__ASK_LOWER);
    } while (s == KCACHE__FORKED && ++tries < 3);
#if KCACHE_CHECKS
    if (s == KCACHE_OK) kcache__held_add(h, *data); /* for kcache_release's check */
#endif
    return s == KCACHE__FORKED ? KCACHE_ELOCK : s;
}

/* Removes the entry of k, found stale (stored stamps the policy rejects), with the overloads of its
   unit that depend on the same files as they were (kcache__store_remove). Under hybrid and content
   that compares content digests: taken first where the key does not have them. */
static void kcache__remove_stale(kcache *kc, const kcache_key *k, const unsigned char *rec, size_t rec_len) {
    kcache__store_ev ev;
    kcache_key *copy = NULL;
    const kcache_key *rk = kc->cfg.stamp == KCACHE_STAMP_MTIME ? k : kcache__key_resolve(kc, k, kc->cfg.stamp, &copy);
    memset(&ev, 0, sizeof ev);
    if (rk) kcache__store_remove(kc->store, rk, KCACHE_REASON_STAMP, rec, rec_len, kc->cfg.stamp, &ev);
    kcache__key_drop(&kc->mem, copy);
}

static kcache_status kcache__get_once(kcache *kc, const kcache_key *k, const void **data, size_t *size, int count_miss,
                                      unsigned ask, int *need, kcache_origin *from);
/* kcache_get; count_miss 0 for a re-check (single flight) whose miss was counted already; ask: the
   tiers below the store to ask after a local miss (KCACHE__ASK_*; a counted lookup asks all). A
   key whose dependencies' content the answer depends on is asked again with that content taken (the
   first try returns before any lower tier is asked). */
static kcache_status kcache__get_from(kcache *kc, const kcache_key *k, const void **data, size_t *size, int count_miss, unsigned ask,
                                      kcache_origin *from) {
    int need = 0;
    kcache_origin none;
    kcache_status s;
    if (!from) from = &none;
    s = kcache__get_once(kc, k, data, size, count_miss, ask, &need, from);
    if (need) {
        kcache_key *copy = NULL;
        const kcache_key *rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy);
        if (!rk) return KCACHE_ENOMEM;
        need = 0;
        s = kcache__get_once(kc, rk, data, size, count_miss, ask, &need, from);
        kcache__key_drop(&kc->mem, copy);
    }
    return s;
}
static kcache_status kcache__get(kcache *kc, const kcache_key *k, const void **data, size_t *size, int count_miss, unsigned ask) {
    return kcache__get_from(kc, k, data, size, count_miss, ask, NULL);
}

static kcache_status kcache__get_once(kcache *kc, const kcache_key *k, const void **data, size_t *size, int count_miss,
                                      unsigned ask, int *need, kcache_origin *from) {
    kcache__node *n, *stale = NULL;
    kcache__read rd;
    kcache_reason reason = KCACHE__REASON_UNSET;
    int64_t when;
    uint64_t gen;
    if (data) *data = NULL;
    if (size) *size = 0;
    if (!kc || !data || !size || !kcache__key_usable(k)) return KCACHE_EINVAL;
    if (kcache__lock_live(kc) != 0) return KCACHE__FORKED;
    if (k->error != KCACHE_OK) {
        kcache__mutex_unlock(&kc->lock);
        if (count_miss) kcache__incomplete_miss(kc, k);
        return k->error;
    }
    if (!kc->cfg.enable) {
        kcache__mutex_unlock(&kc->lock);
        if (count_miss) kcache__count_miss(kc, k, KCACHE_REASON_OFF);
        return KCACHE_MISS;
    }
    gen = kc->gen;
    n = kcache__lru_find(&kc->lru, k->digest);
    if (n) {
        int m = kcache__record_match(n->rec, n->rec_len, k, kc->cfg.stamp);
        if (KCACHE__LIKELY(m == KCACHE__MATCH)) {
            int64_t now = 0;
            kcache__lru_touch(&kc->lru, n);
            kcache__blob_ref(n->blob);
            *data = n->blob->data;
            *size = n->blob->size;
            kc->stats.hits_mem++;
            kc->stats.bytes_read += n->blob->size;
            kcache__pub_hit_mem(&kc->pub, n->unit_hash, n->blob->size);
            /* The store's use record must see memory hits too, or another process would evict
               what this one uses most; a clock read costs as much as the rest of a hit on some
               VMs, so only every 64th hit of a node looks, and writes once a second at most. */
            if (kc->store && !n->dirty && (n->hits++ & 63) == 0) {
                now = kcache__now_ns();
                if (now - n->touched_ns > 1000000000) n->touched_ns = now;
                else now = 0;
            }
            if (now) kcache__pub_event(&kc->pub, KCACHE__PUB_EV_HIT_MEM, k->unit, n->unit_hash, n->blob->size, KCACHE_REASON_HIT, 0, now);
            kcache__mutex_unlock(&kc->lock);
            if (now) kcache__store_touch(kc->store, k->digest, now); /* keeps the store's use marks honest */
            if (kc->cfg.debug) KCACHE__DEBUG(kc, "hit memory %s (%zu bytes)", k->unit, *size);
            *from = KCACHE_FROM_MEMORY;
            return KCACHE_OK;
        }
        if (m == KCACHE__MATCH_NEED) { /* a dependency's content decides: the caller takes it and asks again */
            kcache__mutex_unlock(&kc->lock);
            *need = 1;
            return KCACHE_MISS;
        }
        if (m == KCACHE__MATCH_STAMP) {
            kcache__lru_detach(&kc->lru, n);
            stale = n;
            reason = KCACHE_REASON_STAMP;
        } else {
            reason = KCACHE_REASON_FIELD; /* same digest, other key: never its payload */
        }
    }
    kcache__mutex_unlock(&kc->lock);
    if (stale) {
        stale->hnext = NULL;
        stale->dirty = 0;
        if (kc->store) kcache__remove_stale(kc, k, stale->rec, stale->rec_len);
        kcache__release_nodes(kc, stale);
    }
    if (kc->store && reason == KCACHE__REASON_UNSET) {
        kcache__store_read(kc->store, k, kc->cfg.stamp, 0, &rd);
        if (rd.need) {
            *need = 1;
            return KCACHE_MISS;
        }
        if (rd.status == KCACHE_OK) {
            /* the memory node keeps the entry's own record: its stamps, with every content digest */
            const unsigned char *h = kcache__blob_bytes(rd.blob);
            kcache__node *nn = kcache__node_new_rec(kc, h + KCACHE__ENTRY_FIXED, kcache__get_u32(h + 64), k, rd.blob), *gone;
            int64_t now = kcache__now_ns();
            kcache__blob_ref(rd.blob);
            *data = rd.blob->data;
            *size = rd.blob->size;
            /* the slot the read found, if it still holds this entry: no second lookup */
            if (rd.slot && kcache__same(kcache__slot_digest(rd.slot), k->digest)) kcache__slot_touch(rd.slot, now);
            else kcache__store_touch(kc->store, k->digest, now);
            kcache__mutex_lock(&kc->lock);
            kc->stats.hits_disk++;
            kc->stats.bytes_read += rd.blob->size;
            kcache__pub_hit_disk(&kc->pub, k->unit, nn ? nn->unit_hash : 0, rd.blob->size, now); /* the node hashed the unit */
            gone = kcache__keep_read(kc, nn, rd.blob, gen, now);
            kcache__mutex_unlock(&kc->lock);
            kcache__release_nodes(kc, gone);
            if (kc->cfg.debug) KCACHE__DEBUG(kc, "hit disk %s (%zu bytes)", k->unit, *size);
            *from = KCACHE_FROM_STORE;
            return KCACHE_OK;
        }
        if (rd.status != KCACHE_ENOENT) {
            kcache__store_ev ev;
            memset(&ev, 0, sizeof ev);
            reason = rd.reason;
            if (rd.reason == KCACHE_REASON_STAMP) {
                kcache__remove_stale(kc, k, rd.rec, rd.rec_len);
            } else if (rd.reason == KCACHE_REASON_REJECTED && rd.status != KCACHE_EUNSAFE) {
                kcache__store_remove(kc->store, k, rd.reason, rd.rec, rd.rec_len, kc->cfg.stamp, &ev);
                KCACHE__DEBUG(kc, "reject %s: the stored entry is corrupt; removed", k->unit);
            } else {
                kcache__mutex_lock(&kc->lock);
                kc->stats.store_errors++;
                kcache__pub_add(&kc->pub, KCACHE__PUB_STORE_ERRORS, 1);
                kcache__mutex_unlock(&kc->lock);
                if (rd.status == KCACHE_EUNSAFE) KCACHE__DEBUG(kc, "miss %s: %s", k->unit, kc->store->shard_why);
            }
            kcache__mem_free(rd.mem, rd.rec);
        }
    }
    if ((KCACHE__NLAYERS(kc) || KCACHE__REMOTE(kc)) && ask && reason != KCACHE_REASON_FIELD &&
        kcache__lower_get(kc, k, gen, data, size, &reason, count_miss, ask, from) == KCACHE_OK)
        return KCACHE_OK;
    if (!count_miss) return KCACHE_MISS;
    if (reason == KCACHE__REASON_UNSET && kc->cfg.debug && kc->store) {
        /* the debug line says what kcache_explain says: which field differs, and from what */
        char why[1024];
        kcache__sb b;
        b.p = why;
        b.cap = sizeof why;
        b.len = 0;
        b.mem = &kc->mem;
        why[0] = 0;
        reason = kcache__ix_classify(kc, k, &when, &b);
        if (reason == KCACHE_REASON_COLD && KCACHE__NLAYERS(kc) && kcache__layers_closest(kc, k, NULL)) reason = KCACHE_REASON_FIELD;
        kcache__count_miss_quiet(kc, k, reason);
        if (reason == KCACHE_REASON_FIELD && strncmp(why, "miss: ", 6) == 0) /* "a field differs: closest of ...: name: ..." */
            kcache__log(&kc->cfg, "miss %s: %s", k->unit, why + 6);
        else
            kcache__log(&kc->cfg, "miss %s: %s", k->unit, kcache__reason_text[reason]);
    } else {
        if (reason == KCACHE__REASON_UNSET) reason = kcache__absent_reason(kc, k, &when);
        if (reason == KCACHE_REASON_COLD && KCACHE__NLAYERS(kc) && kcache__layers_closest(kc, k, NULL)) reason = KCACHE_REASON_FIELD;
        kcache__count_miss(kc, k, reason);
    }
    if (kc->cfg.trace && kc->store) { /* the record keeps every content digest */
        kcache_key *copy = NULL;
        const kcache_key *rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy);
        if (rk) kcache__store_trace_miss(kc->store, rk, reason);
        kcache__key_drop(&kc->mem, copy);
    }
    return KCACHE_MISS;
}

KCACHE_API void kcache_release(kcache *kc, const void *data) {
#if KCACHE_CHECKS
    kcache *h;
    int r;
    if (!data) return;
    if (!kc) { kcache__misuse(NULL, NULL, "kcache_release: kc is NULL (pass the kcache that handed the payload out); nothing done"); return; }
    if (!kcache__kc_ok(kc, "kcache_release")) return;
    /* a forked child: the payloads it got came from its own handle (kcache__live); one its parent
       got before the fork is in kc's table, whose lock a parent's thread may hold: not judged */
    if (kcache__cheap_pid() != kc->pid || kcache__atomic_load_u32(&kc->forked)) {
        h = (kcache *)kcache__atomic_load_ptr((void *const *)&kc->fwd);
        r = h && h->pid == kcache__pid() && kcache__held_take(h, data) == 1 ? 1 : -1;
    } else {
        r = kcache__held_take(kc, data);
    }
    if (r == 0) {
        kcache__misuse(kc->cfg.log, kc->cfg.log_user,
                       "kcache_release: %p was not handed out by this kcache (kcache_get, kcache_get_or_build), or was released "
                       "already; nothing done", data);
        return;
    }
#else
    (void)kc;
#endif
    if (data) kcache__blob_unref(kcache__blob_of(data));
}

/* Stores a blob (taken over) under a key: in the store first when writing through, and on the
   remote (*remote, when asked: how that went), then memory. */
static kcache_status kcache__put_blob_key(kcache *kc, const kcache_key *k, kcache__blob *b, int through, kcache_status *remote);
/* through: write to the store now (1), or as the write policy says (0); KCACHE__PUT_NOT_REMOTE:
   through, and the remote left to the caller (kcache__put_held). */
enum { KCACHE__PUT_NOT_REMOTE = 2 };
static kcache_status kcache__put_blob(kcache *kc, const kcache_key *k, kcache__blob *b, int through, kcache_status *remote) {
    kcache_key *copy = NULL;
    const kcache_key *rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy); /* a record has every content digest */
    kcache_status s = !rk ? KCACHE_ENOMEM : rk->error;
    if (remote) *remote = KCACHE_EDISABLED;
    if (s == KCACHE_OK) s = kcache__put_blob_key(kc, rk, b, through, remote);
    else kcache__blob_unref(b);
    kcache__key_drop(&kc->mem, copy);
    return s;
}
static kcache_status kcache__put_blob_key(kcache *kc, const kcache_key *k, kcache__blob *b, int through, kcache_status *remote) {
    kcache__node *n = NULL, *gone;
    kcache_status s = KCACHE_OK, rs = KCACHE_EDISABLED;
    int to_remote = through != KCACHE__PUT_NOT_REMOTE; /* (else the caller puts it there, with its claim's release) */
    /* an entry over the whole memory budget is never kept in memory: written through to the store
       whatever KCACHE_WRITE says (with evict, memory alone would have held it, then lost it) */
    int fits = kcache__mem_fits(kc, kcache__node_mem(kcache__record_size(k), b));
    through = through || kc->cfg.write_policy == KCACHE_WRITE_THROUGH || !fits;
    if (kc->store && through) {
        kcache__store_ev ev;
        memset(&ev, 0, sizeof ev);
        s = kcache__store_put(kc->store, k, b->data, b->size, &ev);
        kcache__store_stats(kc, &ev, s);
    }
    if (to_remote && KCACHE__REMOTE(kc) && !kcache__remote_is_ro(kc->remote)) {
        kcache__remote_ev ev;
        memset(&ev, 0, sizeof ev);
        rs = kcache__remote_put(kc->remote, k, b->data, b->size, 0, &ev);
        kcache__remote_stats(kc, &ev);
    }
    if (remote) *remote = rs;
    if (fits) {
        n = kcache__node_new(kc, k, b);
        if (!n) { kcache__blob_unref(b); return s == KCACHE_OK ? KCACHE_ENOMEM : s; }
        n->dirty = kc->store && !through;
        n->touched_ns = kcache__now_ns();
    } else if (!kc->store && rs != KCACHE_OK) {
        s = KCACHE_ETOOBIG; /* kept nowhere */
    }
    kcache__mutex_lock(&kc->lock);
    kc->stats.puts++;
    kc->stats.bytes_written += b->size;
    kcache__pub_put(&kc->pub, k->unit, b->size, s);
    kcache__note_change(kc, k->digest);
    if (n) gone = kcache__lru_add(kc, n);
    else if ((gone = kcache__lru_find(&kc->lru, k->digest)) != NULL) { /* what the key held before goes */
        kcache__lru_detach(&kc->lru, gone);
        gone->hnext = NULL;
        gone->dirty = 0;
    }
    kcache__mutex_unlock(&kc->lock);
    kcache__release_nodes(kc, gone);
    /* one line per put, which says where it went when that was not the store and memory */
    if (!n) {
        KCACHE__DEBUG(kc, "put %s (%zu bytes): over the memory budget of %llu bytes; not kept in memory%s", k->unit, b->size,
                      (unsigned long long)kc->cfg.mem_size, s == KCACHE_ETOOBIG ? " (memory only: not cached)" : "");
        kcache__blob_unref(b);
    } else if (!kc->cfg.debug) {
    } else if (s == KCACHE_ETOOBIG) {
        KCACHE__DEBUG(kc, "put %s (%zu bytes): over the store limit of %llu bytes; kept in memory only", k->unit, b->size,
                      (unsigned long long)kc->cfg.max_size);
    } else if (s == KCACHE_EROFS && kc->store && kc->store->readonly) {
        KCACHE__DEBUG(kc, "put %s (%zu bytes): kept in memory only: the store %s is read-only", k->unit, b->size, kc->store->dir);
    } else if (s != KCACHE_OK && kc->store && through) {
        KCACHE__DEBUG(kc, "put %s (%zu bytes): the store refused it (%s); kept in memory only", k->unit, b->size, kcache_strerror(s));
    } else {
        KCACHE__DEBUG(kc, "put %s (%zu bytes)", k->unit, b->size);
    }
    return s;
}

static kcache__blob *kcache__blob_copy(kcache *kc, const void *data, size_t size) {
    kcache__blob *b = kcache__blob_alloc(&kc->mem, 16 + size, 16);
    if (!b) return NULL;
    if (size) memcpy(kcache__blob_bytes(b) + 16, data, size);
    kcache__blob_set_data(b, 16, size);
    return b;
}

KCACHE_API kcache_status kcache_put(kcache *kc, const kcache_key *k, const void *data, size_t size) {
    kcache__blob *b;
    KCACHE__CHECK_KC(kc, "kcache_put", KCACHE_EINVAL);
    KCACHE__CHECK_KEY(kc, k, "kcache_put", KCACHE_EINVAL);
    if (kc && (kc = kcache__live(kc, 1)) == NULL) return KCACHE_ENOMEM;
    if (!kc || !kcache__key_usable(k) || (!data && size)) return KCACHE_EINVAL;
    if (k->error != KCACHE_OK) return k->error;
    if (!kc->cfg.enable) return KCACHE_EDISABLED;
    b = kcache__blob_copy(kc, data, size);
    if (!b) return KCACHE_ENOMEM;
    return kcache__put_blob(kc, k, b, 0, NULL);
}

KCACHE_API kcache_status kcache_remove(kcache *kc, const kcache_key *k) {
    kcache__node *n;
    kcache_status s = KCACHE_MISS;
    KCACHE__CHECK_KC(kc, "kcache_remove", KCACHE_EINVAL);
    KCACHE__CHECK_KEY(kc, k, "kcache_remove", KCACHE_EINVAL);
    if (kc && (kc = kcache__live(kc, 1)) == NULL) return KCACHE_ENOMEM;
    if (!kc || !kcache__key_usable(k)) return KCACHE_EINVAL;
    if (k->error != KCACHE_OK) return k->error;
    /* The store first, then memory: a get that read the entry before it was unlinked sees the
       change noted below and does not put it back in memory. */
    if (kc->store) {
        kcache__store_ev ev;
        memset(&ev, 0, sizeof ev);
        if (kcache__store_remove(kc->store, k, KCACHE__REASON_UNSET, NULL, 0, kc->cfg.stamp, &ev) == KCACHE_OK) s = KCACHE_OK;
    }
    if (KCACHE__REMOTE(kc)) { /* else the next lookup would bring it back */
        kcache__remote_ev rev;
        memset(&rev, 0, sizeof rev);
        kcache__remote_remove(kc->remote, k, &rev);
        kcache__remote_stats(kc, &rev);
    }
    kcache__mutex_lock(&kc->lock);
    n = kcache__lru_find(&kc->lru, k->digest);
    if (n) kcache__lru_detach(&kc->lru, n);
    kcache__note_change(kc, k->digest);
    kcache__mutex_unlock(&kc->lock);
    if (n) { n->hnext = NULL; n->dirty = 0; kcache__release_nodes(kc, n); s = KCACHE_OK; }
    return s;
}

KCACHE_API unsigned kcache_get_remote_shards(kcache *kc, kcache_remote_shard *out, unsigned cap) {
    KCACHE__CHECK_KC(kc, "kcache_get_remote_shards", 0);
#ifndef KCACHE_NO_REMOTE /* (compiled out: no shards, and no forked child's handle opened to say so) */
    if (kc && (kc = kcache__live(kc, 1)) != NULL && kc->remote) return kcache__remote_shard_table(kc->remote, out, cap);
#endif
    (void)kc; (void)out; (void)cap;
    return 0;
}

#ifdef KCACHE_TEST_PUB
KCACHE_API void *kcache_test_pub_switch(kcache *kc, void *counters) {
    void *was = kc->pub.ctr;
    kc->pub.ctr = (uint64_t *)counters;
    return was;
}
KCACHE_API void kcache_test_pub_hit_mem(kcache *kc, uint64_t unit_hash, uint64_t size) { kcache__pub_hit_mem(&kc->pub, unit_hash, size); }
#endif

KCACHE_API void kcache_get_stats(kcache *kc, kcache_stats *out) {
    if (out) memset(out, 0, sizeof *out);
    KCACHE__CHECK_KC(kc, "kcache_get_stats", );
    if (!out) return;
    if (!kc || (kc = kcache__live(kc, 1)) == NULL) return;
    kcache__mutex_lock(&kc->lock);
    *out = kc->stats;
    out->mem_entries = kc->lru.count;
    out->mem_bytes = kc->lru.bytes;
    kcache__mutex_unlock(&kc->lock);
    out->remote_open = kcache__remote_open_count(kc->remote);
    if (kc->store) {
        const kcache__table *t = kcache__tab(kc->store);
        if (t && t->map) {
            out->disk_bytes = kcache__acct_at(t->map, 24);
            out->disk_entries = kcache__acct_at(t->map, 32);
        }
    }
}

typedef struct kcache__sum_ctx { uint64_t bytes, count; } kcache__sum_ctx;
static void kcache__sum_one(void *ctx, kcache_hash128 d, const kcache__finfo *s) {
    kcache__sum_ctx *c = (kcache__sum_ctx *)ctx;
    (void)d;
    c->bytes += s->size;
    c->count++;
}

KCACHE_API kcache_status kcache_verify(kcache *kc, int fix) {
    kcache__sum_ctx real;
    kcache__store_ev ev;
    kcache_status s;
    int same;
    KCACHE__CHECK_KC(kc, "kcache_verify", KCACHE_EINVAL);
    if (!kc) return KCACHE_EINVAL;
    if ((kc = kcache__live(kc, 1)) == NULL) return KCACHE_ENOMEM;
    if (!kc->store || kc->store->readonly) return KCACHE_OK; /* no accounting kept in a read-only store */
    memset(&ev, 0, sizeof ev);
    s = kcache__store_lock(kc->store);
    if (s != KCACHE_OK) return s;
    s = kcache__store_begin(kc->store, &ev);
    if (s == KCACHE_OK) {
        real.bytes = real.count = 0;
        kcache__store_walk(kc->store, kcache__sum_one, &real);
        same = real.bytes == kcache__acct_get(kc->store, 24) && real.count == kcache__acct_get(kc->store, 32);
        if (!same && fix) kcache__store_rebuild(kc->store, &ev);
        else if (!same) s = KCACHE_ECORRUPT;
        kcache__store_end(kc->store);
    }
    kcache__store_unlock(kc->store);
    return s;
}

/* ============================================================================================== */
/* >>explain  kcache_explain: why a key misses, or that it hits                                   */
/* ============================================================================================== */

/* The stored overload of the key's unit (in memory) with the most fields equal to the key's. */
static int kcache__closest_in_memory(kcache *kc, const kcache_key *k, kcache_key *best, uint32_t *overloads) {
    uint64_t uh = kcache_hash(k->unit, strlen(k->unit)).lo;
    const kcache__node *n;
    int best_eq = -1;
    kcache_key *cand = kcache__key_alloc(&kc->mem);
    *overloads = 0;
    for (n = kc->lru.head.next; cand && n != &kc->lru.head; n = n->next) {
        int eq;
        if (n->unit_hash != uh || (eq = kcache__equal_fields(n->rec, n->rec_len, k, cand)) < 0) continue;
        (*overloads)++;
        kcache__keep_closest(best, &best_eq, cand, eq);
    }
    kcache__mem_free(&kc->mem, cand); /* (freed or moved into best already) */
    return best_eq >= 0;
}

static size_t kcache__explain(kcache *kc, const kcache_key *k, char *buf, size_t cap, kcache_key *stored);
KCACHE_API size_t kcache_explain(kcache *kc, const kcache_key *k, char *buf, size_t cap) {
    const kcache__mem *m; /* (a forked child's own handle has the same allocator) */
    kcache_key *copy = NULL, *stored; /* scratch for a stored overload */
    size_t n;
    if (buf && cap) buf[0] = 0;
    KCACHE__CHECK_KC(kc, "kcache_explain", 0);
    KCACHE__CHECK_KEY(kc, k, "kcache_explain", 0);
    m = kc ? &kc->mem : NULL;
    stored = kcache__key_alloc(m);
    if (kc) kc = kcache__live(kc, 1);
    if (kc && k && k->magic == KCACHE__KEY_LIVE && k->error == KCACHE_OK && kc->cfg.enable) {
        const kcache_key *rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy); /* stamps are compared whole */
        if (rk) k = rk;
    }
    if (!stored) kc = NULL; /* "invalid": out of memory */
    n = kcache__explain(kc, k, buf, cap, stored);
    if (kc && kc->store && kc->store->readonly && buf && cap > 12 &&
        strncmp(buf, "miss", 4) == 0) {
        /* why nothing this process puts ever reaches the store, said where the user looks */
        size_t at = n < cap ? n : cap - 1;
        char e[600];
        int more = snprintf(buf + at, cap - at, "; the store %s is read-only: puts are kept in memory only", kcache__escs(e, sizeof e, kc->store->dir));
        if (more > 0) n = at + (size_t)more;
    }
    kcache__key_drop(m, copy);
    kcache__key_drop(m, stored);
    return n;
}
static size_t kcache__explain(kcache *kc, const kcache_key *k, char *buf, size_t cap, kcache_key *stored) {
    kcache__sb b;
    kcache__node *n;
    int64_t when = 0;
    uint32_t overloads = 0;
    int cold = 0;
    b.p = buf;
    b.mem = kc ? &kc->mem : NULL;
    b.cap = buf ? cap : 0;
    b.len = 0;
    if (buf && cap) buf[0] = 0;
    if (!kc || !k || k->magic != KCACHE__KEY_LIVE) { kcache__sb_add(&b, "miss: invalid key or cache"); return b.len; }
    if (k->error != KCACHE_OK) {
        const kcache_key_field *dep = kcache__unreadable_dep(k);
        if (dep)
            kcache__sb_add(&b, "miss: " KCACHE__DEP_MISSING ", so the key of unit \"%s\" never matches", dep->name, dep->preview,
                           KCACHE__DEP_RELATIVE(dep), k->unit);
        else
            kcache__sb_add(&b, "miss: the key of unit \"%s\" is incomplete (%s), so it never matches", k->unit, kcache_strerror(k->error));
        return b.len;
    }
    if (!kc->cfg.enable) { kcache__sb_add(&b, "miss: %s (KCACHE_ENABLE=0)", kcache__reason_text[KCACHE_REASON_OFF]); return b.len; }
    kcache__mutex_lock(&kc->lock);
    n = kcache__lru_find(&kc->lru, k->digest);
    if (n) {
        int m = kcache__record_match(n->rec, n->rec_len, k, kc->cfg.stamp);
        if (m == KCACHE__MATCH) {
            kcache__sb_add(&b, "hit: memory (unit \"%s\", %zu bytes)", k->unit, n->blob->size);
            kcache__mutex_unlock(&kc->lock);
            return b.len;
        }
        if (m == KCACHE__MATCH_STAMP && kcache__record_parse(n->rec, n->rec_len, stored) == KCACHE_OK) {
            kcache__sb_add(&b, "miss: %s: ", kcache__reason_text[KCACHE_REASON_STAMP]);
            kcache__sb_stamps(&b, stored, k, kc->cfg.stamp);
            kcache_key_free(stored);
            kcache__mutex_unlock(&kc->lock);
            return b.len;
        }
    }
    kcache__mutex_unlock(&kc->lock);
    if (kc->store) {
        kcache__read rd;
        kcache__store_read(kc->store, k, kc->cfg.stamp, 1, &rd);
        if (rd.status == KCACHE_OK) {
            kcache__sb_add(&b, "hit: disk (unit \"%s\", %zu bytes, in %s)", k->unit, rd.blob->size, kc->dir);
            kcache__blob_unref(rd.blob);
        } else if (rd.reason == KCACHE_REASON_STAMP && rd.rec && kcache__record_parse(rd.rec, rd.rec_len, stored) == KCACHE_OK) {
            kcache__sb_add(&b, "miss: %s: ", kcache__reason_text[KCACHE_REASON_STAMP]);
            kcache__sb_stamps(&b, stored, k, kc->cfg.stamp);
            kcache_key_free(stored);
        } else if (rd.status == KCACHE_ECORRUPT) {
            kcache__sb_add(&b, "miss: %s: the entry for unit \"%s\" in %s fails validation; the next get removes it",
                           kcache__reason_text[KCACHE_REASON_REJECTED], k->unit, kc->dir);
        } else if (rd.status == KCACHE_EUNSAFE && rd.reason == KCACHE_REASON_UNWRITABLE) {
            kcache__sb_add(&b, "miss: %s: %s", kcache__reason_text[KCACHE_REASON_UNWRITABLE], kc->store->shard_why);
        } else if (rd.status != KCACHE_ENOENT) {
            kcache__sb_add(&b, "miss: %s: reading %s failed (%s)", kcache__reason_text[KCACHE_REASON_UNWRITABLE], kc->dir,
                           kcache_strerror(rd.status));
        }
        if (rd.status != KCACHE_ENOENT && b.len == 0) kcache__sb_add(&b, "miss: %s", kcache__reason_text[rd.reason]);
        kcache__mem_free(rd.mem, rd.rec);
        if (rd.status == KCACHE_ENOENT && !kcache__lower_explain(kc, k, &b)) {
            if (kcache__ix_classify(kc, k, &when, &b) == KCACHE_REASON_COLD) kcache__layers_closest(kc, k, &b);
            kcache__layers_note(kc, &b);
            kcache__remote_note(kc, &b);
        }
        return b.len;
    }
    if (kcache__lower_explain(kc, k, &b)) return b.len;
    if (kc->store_refused) {
        kcache__sb_add(&b, "miss: %s: %s", kcache__reason_text[KCACHE_REASON_UNWRITABLE], kc->store_why);
        return b.len;
    }
    kcache__mutex_lock(&kc->lock);
    if ((when = kcache__tomb_find(kc, k->digest)) != 0) {
        kcache__sb_add(&b, "miss: %s: dropped from memory at ", kcache__reason_text[KCACHE_REASON_EVICTED]);
        kcache__sb_time(&b, when);
        kcache__sb_add(&b, " (memory limit %u entries / %llu bytes; %s)", kc->cfg.mem_entries, (unsigned long long)kc->cfg.mem_size,
                       kc->store_why);
    } else if (kcache__closest_in_memory(kc, k, stored, &overloads)) {
        kcache__sb_add(&b, "miss: %s: closest of %u stored overload(s) of unit \"%s\": ", kcache__reason_text[KCACHE_REASON_FIELD],
                       overloads, k->unit);
        kcache__sb_diff(&b, stored, k);
        kcache_key_free(stored);
    } else {
        kcache__sb_add(&b, "miss: cold: unit \"%s\" %s", k->unit, kcache__reason_text[KCACHE_REASON_COLD]);
        if (!kc->store) kcache__sb_add(&b, " (%s)", kc->store_why);
        cold = 1; /* here: a layer may know the unit */
    }
    kcache__mutex_unlock(&kc->lock);
    if (cold) kcache__layers_closest(kc, k, &b);
    kcache__layers_note(kc, &b);
    kcache__remote_note(kc, &b);
    return b.len;
}

/* ============================================================================================== */
/* >>upkeep  tidying a store: evict older than, trim, remove a unit, clear                        */
/* ============================================================================================== */

#ifndef KCACHE_NO_TIDY
/* ---- kcache_evict_older_than, kcache_trim, kcache_remove_unit, kcache_clear ----
   One pass over the use table under the store's lock picks the entries; each goes as kcache_remove's
   do (kcache__store_drop: file and accounting together), so the accounting stays exact whatever
   other processes do meanwhile (they wait for the lock to put, and a reader that opened an entry
   before its unlink reads it whole). */
enum { KCACHE__TIDY_OLDER, KCACHE__TIDY_TRIM, KCACHE__TIDY_UNIT, KCACHE__TIDY_CLEAR };
typedef struct kcache__tidy_pick { kcache_hash128 d; uint64_t use, size; } kcache__tidy_pick;

static int kcache__tidy_cmp(const void *a, const void *b) { /* least recently used first */
    const kcache__tidy_pick *x = (const kcache__tidy_pick *)a, *y = (const kcache__tidy_pick *)b;
    if (x->use != y->use) return x->use < y->use ? -1 : 1;
    return x->d.lo < y->d.lo ? -1 : x->d.lo > y->d.lo;
}

/* Whether the entry at rel belongs to unit (its header's unit name). */
static int kcache__entry_of_unit(kcache__store *st, const char rel[48], const char *unit) {
    unsigned char h[KCACHE__ENTRY_FIXED + 2 + KCACHE_UNIT_MAX];
    size_t ulen = strlen(unit);
    ptrdiff_t n;
    int fd = kcache__shard_trusted(st, rel) ? kcache__open_in(st, rel, KCACHE__RD | KCACHE__NONBLOCK) : -1;
    if (fd < 0) return 0;
    n = kcache__io_pread(fd, h, sizeof h, 0);
    kcache__io_close(fd);
    return n >= (ptrdiff_t)(KCACHE__ENTRY_FIXED + 2 + ulen) && memcmp(h, "KCENTRY", 8) == 0 &&
           kcache__get_u16(h + KCACHE__ENTRY_FIXED) == ulen && memcmp(h + KCACHE__ENTRY_FIXED + 2, unit, ulen) == 0;
}

/* kcache_clear: an entry file the table does not list (left by a writer that died) goes too, so
   that nothing of the store's is left; it was never accounted, so the accounting stays exact. */
static void kcache__tidy_stray(void *ctx, kcache_hash128 d, const kcache__finfo *s) {
    kcache__store *st = (kcache__store *)ctx;
    char rel[48];
    (void)s;
    if (kcache__slot_find(st, d)) return;
    kcache__entry_name(d, rel);
    kcache__unlink_entry(st, rel);
}

static kcache_status kcache__tidy(kcache *kc, int what, uint64_t arg, const char *unit, int dry_run, kcache_tidy *done) {
    kcache__store *st;
    kcache__store_ev ev;
    kcache__tidy_pick *p = NULL;
    size_t n = 0, take = 0, i;
    kcache_tidy sum;
    kcache_status s;
    memset(&sum, 0, sizeof sum);
    if (done) *done = sum;
    if (!kc || (what == KCACHE__TIDY_UNIT && (!unit || !unit[0] || strlen(unit) >= KCACHE_UNIT_MAX))) return KCACHE_EINVAL;
    if ((kc = kcache__live(kc, 1)) == NULL) return KCACHE_ENOMEM;
    if ((st = kc->store) == NULL) return KCACHE_EDISABLED;
    if (st->readonly) return KCACHE_EROFS;
    memset(&ev, 0, sizeof ev);
    if ((s = kcache__store_lock(st)) != KCACHE_OK) return s;
    if ((s = kcache__store_begin(st, &ev)) == KCACHE_OK) {
        uint64_t now = (uint64_t)kcache__now_ns(), j, left;
        uint64_t cutoff = arg > now / 1000000000u ? 0 : now - arg * 1000000000u;
        p = (kcache__tidy_pick *)kcache__mem_alloc(&st->mem, (size_t)(st->nslots ? st->nslots : 1) * sizeof *p);
        if (!p) s = KCACHE_ENOMEM;
        for (j = 0; p && j < st->nslots; j++) {
            const uint64_t *sl = kcache__slot(st, j);
            kcache__tidy_pick one;
            if (!kcache__slot_used(sl)) continue;
            one.d = kcache__slot_digest(sl);
            one.use = kcache__sl_get(sl, KCACHE__SL_USE) & ~(uint64_t)KCACHE__USE_MARK;
            one.size = kcache__sl_get(sl, KCACHE__SL_SIZE);
            if (what == KCACHE__TIDY_OLDER && one.use >= cutoff) continue;
            if (what == KCACHE__TIDY_UNIT) {
                char rel[48];
                kcache__entry_name(one.d, rel);
                if (!kcache__entry_of_unit(st, rel, unit)) continue;
            }
            p[n++] = one;
        }
        take = n;
        if (p && what == KCACHE__TIDY_TRIM) {
            qsort(p, n, sizeof *p, kcache__tidy_cmp);
            for (left = kcache__acct_get(st, 24), take = 0; take < n && left > arg; take++)
                left -= p[take].size <= left ? p[take].size : left;
        }
        for (i = 0; i < take; i++) {
            uint64_t *sl;
            sum.entries++;
            sum.bytes += p[i].size;
            if (!dry_run && (sl = kcache__slot_find(st, p[i].d)) != NULL) kcache__store_drop(st, sl, 0, NULL);
        }
        if (p && !dry_run && what == KCACHE__TIDY_CLEAR) kcache__store_walk(st, kcache__tidy_stray, st);
        if (p && !dry_run && what == KCACHE__TIDY_UNIT) {
            char rel[48];
            kcache__ix_name(unit, rel);
            kcache__unlink_entry(st, rel);
        }
        kcache__store_end(st);
    }
    kcache__store_unlock(st);
    if (s == KCACHE_OK && !dry_run) { /* this process's memory copies, as kcache_remove drops them */
        for (i = 0; i < take; i++) {
            kcache__node *nd;
            kcache__mutex_lock(&kc->lock);
            nd = kcache__lru_find(&kc->lru, p[i].d);
            if (nd) kcache__lru_detach(&kc->lru, nd);
            kcache__note_change(kc, p[i].d);
            kcache__mutex_unlock(&kc->lock);
            if (nd) { nd->hnext = NULL; nd->dirty = 0; kcache__release_nodes(kc, nd); }
        }
        KCACHE__DEBUG(kc, "tidy %s: removed %llu entries (%llu bytes)", st->dir, (unsigned long long)sum.entries,
                      (unsigned long long)sum.bytes);
    }
    kcache__mem_free(&st->mem, p);
    if (done) *done = sum;
    return s;
}

KCACHE_API kcache_status kcache_evict_older_than(kcache *kc, uint64_t seconds, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_evict_older_than", KCACHE_EINVAL);
    return kcache__tidy(kc, KCACHE__TIDY_OLDER, seconds, NULL, dry_run, done);
}
KCACHE_API kcache_status kcache_trim(kcache *kc, uint64_t bytes, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_trim", KCACHE_EINVAL);
    return kcache__tidy(kc, KCACHE__TIDY_TRIM, bytes, NULL, dry_run, done);
}
KCACHE_API kcache_status kcache_remove_unit(kcache *kc, const char *unit, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_remove_unit", KCACHE_EINVAL);
    return kcache__tidy(kc, KCACHE__TIDY_UNIT, 0, unit, dry_run, done);
}
KCACHE_API kcache_status kcache_clear(kcache *kc, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_clear", KCACHE_EINVAL);
    return kcache__tidy(kc, KCACHE__TIDY_CLEAR, 0, NULL, dry_run, done);
}
#else /* KCACHE_NO_TIDY: the calls stay, and say the part was compiled out */
static kcache_status kcache__tidy_out(kcache *kc, kcache_tidy *done) {
    if (done) memset(done, 0, sizeof *done);
    if (kc) KCACHE__DEBUG(kc, "the store commands are compiled out (KCACHE_NO_TIDY)");
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_evict_older_than(kcache *kc, uint64_t seconds, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_evict_older_than", KCACHE_EINVAL);
    (void)seconds; (void)dry_run;
    return kcache__tidy_out(kc, done);
}
KCACHE_API kcache_status kcache_trim(kcache *kc, uint64_t bytes, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_trim", KCACHE_EINVAL);
    (void)bytes; (void)dry_run;
    return kcache__tidy_out(kc, done);
}
KCACHE_API kcache_status kcache_remove_unit(kcache *kc, const char *unit, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_remove_unit", KCACHE_EINVAL);
    (void)unit; (void)dry_run;
    return kcache__tidy_out(kc, done);
}
KCACHE_API kcache_status kcache_clear(kcache *kc, int dry_run, kcache_tidy *done) {
    KCACHE__CHECK_KC(kc, "kcache_clear", KCACHE_EINVAL);
    (void)dry_run;
    return kcache__tidy_out(kc, done);
}
#endif /* KCACHE_NO_TIDY */

/* ============================================================================================== */
/* >>flight  single flight: kcache_get_or_build                                                   */
/* ============================================================================================== */


/* The byte of the lock file that stands for a key's build, far past byte 0 (the store lock). */
static uint64_t kcache__claim_offset(kcache_hash128 d) {
    return (uint64_t)(((uint64_t)1 << 40) + (d.lo & (((uint64_t)1 << 30) - 1)));
}

/* Counts a caller that waits for another's build (returns 1, for the caller's "waited"). */
static int kcache__count_wait(kcache *kc) {
    kcache__mutex_lock(&kc->lock);
    kc->stats.build_waits++;
    kcache__pub_add(&kc->pub, KCACHE__PUB_BUILD_WAITS, 1);
    kcache__mutex_unlock(&kc->lock);
    return 1;
}

/* Takes the build claim for a key, waiting at most build_wait_ms: among this process's handles
   and against other processes (kcache__lockfile_claim). The claim is an advisory lock, so a builder
   that dies releases it at once. Waiting sleeps (1 ms doubling to 50 ms between tries): no CPU to
   speak of, no storm on the lock. Returns 1 when claimed, 2 when the entry appeared meanwhile, 0
   otherwise (-1 in a process forked from the store's: see kcache__store_lock); *waited: 1 when
   another held the claim first (a build ran meanwhile). try_only: one try, no wait (0 when busy). */
static int kcache__claim(kcache *kc, kcache_hash128 d, int *waited, int try_only) {
    int64_t deadline = kcache__mono_ns() + (int64_t)kc->cfg.build_wait_ms * 1000000;
    unsigned pause = 1;
    int got;
    *waited = 0;
    for (;;) {
        got = kcache__lockfile_claim(kc->store->lf, kcache__claim_offset(d));
        if (got == 1) return 1;
        if (got < 0 && errno == ECHILD) {
            kcache__atomic_store_u32(&kc->store->forked, 1);
            return -1;
        }
        if (got < 0 || try_only || kcache__mono_ns() > deadline) return 0;
        /* the builder's put shows in the use table at once: no need to queue on its claim */
        if (kcache__slot_find_in(kcache__tab(kc->store), d)) return 2;
        if (!*waited) *waited = kcache__count_wait(kc);
        kcache__sleep_ms(pause);
        if (pause < 50) pause = pause * 2 > 50 ? 50 : pause * 2;
    }
}
static void kcache__unclaim(kcache *kc, kcache_hash128 d) { kcache__lockfile_unclaim(kc->store->lf, kcache__claim_offset(d)); }

/* A new flight for digest, this thread its builder, linked into kc's list (lock held); NULL when out
   of memory. */
static kcache__flight *kcache__flight_new(kcache *kc, kcache_hash128 digest) {
    kcache__flight *f = (kcache__flight *)kcache__mem_alloc(&kc->mem, sizeof *f);
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    f->digest = digest;
    f->refs = 1;
    kcache__cond_init(&f->cond);
    f->next = kc->flights;
    kc->flights = f;
    return f;
}

static void kcache__flight_leave(kcache *kc, kcache__flight *f) { /* lock held */
    if (--f->refs == 0) {
        kcache__cond_destroy(&f->cond);
        kcache__mem_free(&kc->mem, f);
    }
}

/* Runs the caller's build and hands its result out as a blob (kcache takes the buffer). *child:
   the build forked and this is the child coming back (nothing of the parent's may be touched). */
static kcache_status kcache__run_build(kcache *kc, kcache_build_fn build, void *user, kcache__blob **out, int *child) {
    void *p = NULL;
    size_t n = 0;
    int rc = build(user, &p, &n);
    *child = kcache__pid() != kc->pid;
    if (!*child) {
        kcache__mutex_lock(&kc->lock);
        kc->stats.builds++;
        kcache__pub_add(&kc->pub, KCACHE__PUB_BUILDS, 1);
        kcache__mutex_unlock(&kc->lock);
    }
    *out = NULL;
    if (rc != 0) { KCACHE_FREE(p); return KCACHE_EBUILD; }
    /* what kcache_put refuses: no bytes for a size; a failed build for every waiter (they build) */
    if (!p && n) {
        KCACHE__DEBUG(kc, "build returned 0 with no payload for %zu bytes; nothing stored (KCACHE_EINVAL)", n);
        return KCACHE_EINVAL;
    }
    *out = kcache__blob_copy(kc, p, n);
    KCACHE_FREE(p);
    return *out ? KCACHE_OK : KCACHE_ENOMEM;
}

/* The remote calls of kc that failed or were skipped by a breaker so far: a lookup that misses
   while this moves may have missed for want of an answer (another thread's failure moves it too,
   which only makes the caller look again). */
static uint64_t kcache__remote_trouble(kcache *kc) {
    uint64_t n;
    kcache__mutex_lock(&kc->lock);
    n = kc->stats.remote_errors + kc->stats.remote_skipped;
    kcache__mutex_unlock(&kc->lock);
    return n;
}

/* Whether a builder's put to the remote may have landed, so that its claim is released (waiters
   look for the value) rather than abandoned (waiters build at once): a put that timed out or broke
   may have been stored all the same, and a waiter that looks costs one GET, not a build. */
static int kcache__put_may_have_landed(kcache_status remote_put) {
    return remote_put == KCACHE_OK || remote_put == KCACHE_ETIMEOUT || remote_put == KCACHE_EIO;
}

/* A claim holder's result (b, one reference the call takes) to the store and the remote, where the
   backend can with the claim's release in the same exchange (kcache__rclaim_put_end: one round trip
   fewer for each build, issue 35); *remote_put: how the remote's put went. A cache with no store
   puts as before (kcache__put_blob judges there whether the entry is kept anywhere). */
static void kcache__put_held(kcache *kc, const kcache_key *k, kcache__blob *b, kcache__rclaim *cl, kcache_status *remote_put) {
    kcache_key *copy = NULL;
    const kcache_key *rk;
    const void *data = b->data;
    size_t size = b->size;
    kcache__remote_ev ev;
    if (!kc->store || !KCACHE__REMOTE(kc) || !kcache__rclaim_can_put_end(cl)) {
        kcache__put_blob(kc, k, b, 1, remote_put);
        return;
    }
    /* (the caller keeps a reference of its own: data stays valid after put_blob) */
    kcache__put_blob(kc, k, b, KCACHE__PUT_NOT_REMOTE, remote_put);
    if ((rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy)) != NULL && rk->error == KCACHE_OK) {
        memset(&ev, 0, sizeof ev);
        *remote_put = kcache__rclaim_put_end(cl, rk, data, size, &ev);
        if (*remote_put == KCACHE_EDISABLED && !cl->released) *remote_put = kcache__remote_put(kc->remote, rk, data, size, 0, &ev);
        kcache__remote_stats(kc, &ev);
    }
    kcache__key_drop(&kc->mem, copy);
}

/* A claim holder's put that failed, or that its shard's breaker skipped, on a shard that answers
   otherwise (kcache__remote_glitch): sent once more, past the breaker, so that the waiters on other
   machines find the value instead of each building it (issue 35). *remote_put: how it went. */
static void kcache__holder_put_again(kcache *kc, const kcache_key *k, const kcache__rclaim *cl, const void *data, size_t size,
                                     kcache_status *remote_put) {
    kcache_key *copy = NULL;
    const kcache_key *rk;
    kcache__remote_ev ev;
    if (!cl->r || !cl->held || *remote_put == KCACHE_OK || *remote_put == KCACHE_ETOOBIG || *remote_put == KCACHE_EROFS ||
        *remote_put == KCACHE_ENOSPC || *remote_put == KCACHE_EINVAL || *remote_put == KCACHE_ENOMEM || !kcache__remote_glitch(kc->remote, k))
        return;
    if ((rk = kcache__key_resolve(kc, k, kc->cfg.stamp, &copy)) != NULL && rk->error == KCACHE_OK) {
        memset(&ev, 0, sizeof ev);
        *remote_put = kcache__remote_put(kc->remote, rk, data, size, 1, &ev);
        kcache__remote_stats(kc, &ev);
    }
    kcache__key_drop(&kc->mem, copy);
}

/* One build per cluster: after this machine's claim, the remote's. KCACHE_OK with the payload when
   another machine's build arrived meanwhile (waiting at most KCACHE_BUILD_WAIT, woken by its end);
   else KCACHE_MISS, with *cl held when this process is the cluster's builder (and not when the
   remote cannot say: then everyone builds, as without a remote). Waiting goes through failures
   (issue 35): a claim call or a read-back that fails on a shard that answers otherwise
   (kcache__remote_glitch: a lost packet, a slow link) is asked again after a pause, so that a
   process builds only when the claim is gone, expired or abandoned, never because a call failed;
   and a claim taken after a wait or a failure is kept only once the value is known missing. */
static kcache_status kcache__cluster_claim(kcache *kc, const kcache_key *k, kcache__rclaim *cl, const void **data, size_t *size) {
    int64_t deadline = kcache__mono_ns() + (int64_t)kc->cfg.build_wait_ms * 1000000;
    kcache__remote_ev ev;
    kcache_status s = KCACHE_MISS, st;
    int waited = 0, rounds = 0, look = 0;
    unsigned pause = 20;
    uint32_t claim_ms;
    if (!kcache__rclaim_init(cl, kc->remote, k)) return KCACHE_MISS;
    memset(&ev, 0, sizeof ev);
    look = kcache__remote_failing(kc->remote, k); /* (the caller's look may have been skipped by the breaker) */
    for (;;) {
        int64_t left;
        st = kcache__rclaim_take(cl, &ev);
        if (st == KCACHE_OK) {
            uint64_t trouble;
            if (!look || cl->checked) break; /* the first try (the caller looked a moment ago), or a take that saw no value: build */
            /* taken after a wait or a failure: the value may have landed meanwhile */
            kcache__remote_stats(kc, &ev);
            memset(&ev, 0, sizeof ev);
            trouble = kcache__remote_trouble(kc);
            if ((s = kcache__get(kc, k, data, size, 0, KCACHE__ASK_REMOTE)) == KCACHE_OK) {
                kcache__rclaim_end(cl, 1, &ev); /* (found: waiters look too) */
                break;
            }
            if (kcache__remote_trouble(kc) == trouble || !kcache__remote_glitch(kc->remote, k)) break; /* missing indeed: build */
            kcache__rclaim_end(cl, 1, &ev); /* could not look: given back (waiters look), and asked again */
            if (!kcache__rclaim_init(cl, kc->remote, k)) break;
            st = KCACHE_EIO;
        }
        left = (deadline - kcache__mono_ns()) / 1000000;
        if (left <= 0) break; /* waited long enough: build here */
        if (st == KCACHE_EEXIST) {
            if (!waited) {
                waited = kcache__count_wait(kc);
                KCACHE__DEBUG(kc, "wait %s: another machine builds it (%s)", k->unit, kcache__rclaim_url(cl));
            }
            look = 1;
            pause = 20;
            claim_ms = kcache__remote_claim_ms(kc->remote);
            st = kcache__rclaim_call(cl, KCACHE_CLAIM_WAIT, left < (int64_t)claim_ms ? (uint32_t)left : claim_ms, &ev);
            if (st == KCACHE_EEXIST) continue; /* still building */
            if (st == KCACHE_OK || st == KCACHE_ENOENT) {
                uint64_t trouble;
                kcache__remote_stats(kc, &ev);
                memset(&ev, 0, sizeof ev);
                trouble = kcache__remote_trouble(kc);
                /* its result: another machine's build lands on the remote (and in this store only where the
                   store is shared with it), never in a layer (read-only to everyone): ask the remote again */
                if ((s = kcache__get(kc, k, data, size, 0, KCACHE__ASK_REMOTE)) == KCACHE_OK) break;
                /* a claim held when taken yet gone when looked at (ENOENT), again and again, without a value
                   (a server that says so): after a few, build here. A wait that ran out the claim's life
                   while its builder renews it is no such round, nor a look that got no answer. */
                if (st == KCACHE_ENOENT && kcache__remote_trouble(kc) == trouble && ++rounds == 4) break;
                continue;
            }
            if (st == KCACHE_MISS || st == KCACHE_ECORRUPT) break; /* abandoned, or not honoured: build here */
        }
        /* the call failed, or the breaker skipped it: a shard that answers otherwise is asked again
           after a pause (a lost packet costs a retransmission, not a build); one down, one whose
           node for the key is down (KCACHE_ENODE), or one refusing writes (no claim can be taken),
           is done without */
        if (st == KCACHE_EROFS || st == KCACHE_ENODE || !kcache__remote_glitch(kc->remote, k)) break;
        look = 1;
        kcache__sleep_ms(left < (int64_t)pause ? (unsigned)left : pause);
        if (pause < 500) pause *= 2;
    }
    kcache__remote_stats(kc, &ev);
    if (waited && s != KCACHE_OK) { /* another held the claim, yet this process builds: a duplicate build */
        kcache__mutex_lock(&kc->lock);
        kc->stats.builds_claimed_elsewhere++;
        kcache__pub_add(&kc->pub, KCACHE__PUB_BUILDS_CLAIMED, 1);
        kcache__mutex_unlock(&kc->lock);
    }
    return s;
}

static kcache_status kcache__cluster_try(kcache *kc, const kcache_key *k, kcache__rclaim *cl, const void **data, size_t *size);

/* Ends this thread's flight (kc->lock taken here): waiters look again. */
static void kcache__flight_end(kcache *kc, kcache__flight *f) {
    kcache__flight **p;
    kcache__mutex_lock(&kc->lock);
    for (p = &kc->flights; *p != f; p = &(*p)->next) {
    }
    *p = f->next;
    f->done = 1;
    kcache__cond_broadcast(&f->cond);
    kcache__flight_leave(kc, f);
    kcache__mutex_unlock(&kc->lock);
}

/* What a caller holds between finding a key missing and ending its build: this process's flight
   (NULL: nothing, the build runs alone and its result is not stored), the store's claim byte
   (claimed 1) and the remote's claim (cl, whose renewer thread points into it: never moved). */
typedef struct kcache__hold {
    kcache__flight *f;
    int claimed;
    kcache__rclaim cl;
} kcache__hold;

/* The calling thread, to tell whether it already holds a ticket (see kcache__holds_ticket). */
#if defined(_WIN32)
typedef DWORD kcache__tid;
static kcache__tid kcache__tid_self(void) { return GetCurrentThreadId(); }
static int kcache__tid_same(kcache__tid a, kcache__tid b) { return a == b; }
#else
typedef pthread_t kcache__tid;
static kcache__tid kcache__tid_self(void) { return pthread_self(); }
static int kcache__tid_same(kcache__tid a, kcache__tid b) { return pthread_equal(a, b) != 0; }
#endif

/* A claim of the two-step form (kcache_get_or_claim), linked into its kcache's list until it ends. */
struct kcache_ticket {
    struct kcache_ticket *next;
    const kcache_key *k;       /* the caller's, valid until the ticket ends (kcache_put_claimed's key) */
    kcache_hash128 digest;
    kcache__tid tid;           /* the thread that took it */
    uint32_t pid;              /* the process that took it (a forked child's put does not end it) */
    kcache__hold hd;
};

/* Whether the calling thread holds a ticket on kc: then it only tries the next key's claims, so that
   two holders waiting for each other's keys (numba compiling mutually dependent functions in two
   processes) build both instead of waiting forever. */
static int kcache__holds_ticket(kcache *kc) {
    kcache_ticket *t;
    kcache__tid me;
    int held = 0;
    if (!kcache__atomic_load_ptr((void *const *)&kc->tickets)) return 0;
    me = kcache__tid_self();
    kcache__mutex_lock(&kc->lock);
    for (t = kc->tickets; t && !held; t = t->next) held = kcache__tid_same(t->tid, me);
    kcache__mutex_unlock(&kc->lock);
    return held;
}

/* Takes the claims for a key that missed, as kcache_get_or_build does before it builds. KCACHE_OK:
   the payload (*from: where; BUILT_ELSEWHERE when it was missing at the first look); KCACHE__FORKED;
   else KCACHE_MISS: build now, holding hd (hd->f NULL: build alone, nothing to store). hd holds
   something in every case; kcache__hold_end gives it back. try_only: a claim another holds is not
   waited for (the key is then built alone: see kcache__holds_ticket). */
static kcache_status kcache__acquire(kcache *kc, const kcache_key *k, const void **data, size_t *size, kcache_origin *from,
                                     kcache__hold *hd, int try_only) {
    kcache_status s;
    int counted = 0;
    hd->f = NULL;
    hd->claimed = 0;
    kcache__rclaim_reset(&hd->cl);
    /* The tiers below the store (layers, remote: a round trip each) are asked once, by the first
       look, which counts the miss. Every re-check after it looks at memory and the store, and at
       the remote only after a wait that let a builder put the entry there alone (see each
       re-check); a layer is read-only to everyone, so nothing new ever appears in one. */
    for (;;) {
        kcache__flight *f;
        int waited_out = 0, claim_waited = 0;
        /* after another thread's flight (continue below): it put its result into memory (and the
           store) before it ended the flight, so memory and the store are enough */
        s = kcache__get_from(kc, k, data, size, !counted, counted ? 0 : KCACHE__ASK_LOWER, from);
        if (s == KCACHE_OK && counted) *from = KCACHE_BUILT_ELSEWHERE;
        counted = 1;
        if (s == KCACHE_OK || s == KCACHE__FORKED) return s;
        if (k->error != KCACHE_OK || !kc->cfg.enable) return KCACHE_MISS; /* nothing to share: just build */
        if (!try_only) try_only = kcache__holds_ticket(kc);
        kcache__mutex_lock(&kc->lock);
        for (f = kc->flights; f; f = f->next)
            if (f->digest.lo == k->digest.lo && f->digest.hi == k->digest.hi) break;
        if (f) { /* another thread builds it: wait (KCACHE_BUILD_WAIT at most), then look again */
            int64_t deadline = kcache__now_ns() + (int64_t)kc->cfg.build_wait_ms * 1000000;
            if (kcache__pid() != kc->pid) { /* a build by a thread of the parent: it never ends here */
                kcache__atomic_store_u32(&kc->forked, 1);
                kcache__mutex_unlock(&kc->lock);
                return KCACHE__FORKED;
            }
            if (try_only) { /* (a holder does not wait: built here too) */
                kcache__mutex_unlock(&kc->lock);
                return KCACHE_MISS;
            }
            f->refs++;
            kc->stats.build_waits++;
            kcache__pub_add(&kc->pub, KCACHE__PUB_BUILD_WAITS, 1);
            while (!f->done && !waited_out) waited_out = !kcache__cond_wait_until(&f->cond, &kc->lock, deadline);
            kcache__flight_leave(kc, f);
            kcache__mutex_unlock(&kc->lock);
            if (!waited_out) continue;
            return KCACHE_MISS; /* waited long enough: build here */
        }
        f = kcache__flight_new(kc, k->digest);
        kcache__mutex_unlock(&kc->lock);
        if (!f) return KCACHE_MISS;
        hd->f = f;

        /* Built by a thread or process that finished between the miss and the flight? A thread of
           this process put it into memory, a process on this store into the store: both local. (A
           machine that finished within this instant is not looked for on the remote: no more than
           it would be an instant later; the cluster claim below waits for one still building.) */
        s = kcache__get(kc, k, data, size, 0, 0);
        if (s != KCACHE_OK && kc->store && !kc->store->readonly) {
            hd->claimed = kcache__claim(kc, k->digest, &claim_waited, try_only);
            if (hd->claimed < 0) s = KCACHE__FORKED;
            /* Built by the process we waited for? It held this store's claim and writes through to
               this store before the remote, so the store has it (2: seen there already) unless the
               store refused it (over its size limit, a write error), when only the remote has it:
               the remote is asked again only after such a wait, and only when the store misses. */
            else if (hd->claimed) s = kcache__get(kc, k, data, size, 0, hd->claimed == 1 && claim_waited ? KCACHE__ASK_REMOTE : 0);
        }
        if (s != KCACHE_OK && s != KCACHE__FORKED && KCACHE__REMOTE(kc)) {
            if (!try_only) s = kcache__cluster_claim(kc, k, &hd->cl, data, size);
            else if ((s = kcache__cluster_try(kc, k, &hd->cl, data, size)) == KCACHE_EEXIST) s = KCACHE_MISS;
        }
        if (s == KCACHE_OK) *from = KCACHE_BUILT_ELSEWHERE;
        return s == KCACHE_OK || s == KCACHE__FORKED ? s : KCACHE_MISS;
    }
}

/* Gives back what kcache__acquire took: the remote's claim (released with the value when stored
   says it reached the remote, else abandoned), the store's claim byte, then the flight, whose
   waiters look again. */
static void kcache__hold_end(kcache *kc, kcache_hash128 digest, kcache__hold *hd, int stored) {
    if (kcache__rclaim_pending(&hd->cl)) { /* the other machines read the result, or build on their own when there is none */
        kcache__remote_ev ev;
        memset(&ev, 0, sizeof ev);
        kcache__rclaim_end(&hd->cl, stored, &ev);
        kcache__remote_stats(kc, &ev);
    }
    if (hd->claimed == 1) kcache__unclaim(kc, digest);
    hd->claimed = 0;
    if (hd->f) kcache__flight_end(kc, hd->f);
    hd->f = NULL;
}

/* kcache_get_or_build on the handle kcache__live chose; KCACHE__FORKED when it finds the process is
   a fork of kc's (the caller moves to the child's own handle). */
static kcache_status kcache__get_or_build(kcache *kc, const kcache_key *k, kcache_build_fn build, void *user, const void **data,
                                          size_t *size, kcache_origin *from) {
    kcache_status s, remote_put = KCACHE_EDISABLED;
    kcache__blob *b;
    kcache__hold hd;
    int child = 0;
    if (data) *data = NULL;
    if (size) *size = 0;
    if (!kc || !build || !data || !size || !kcache__key_usable(k)) return KCACHE_EINVAL;
    s = kcache__acquire(kc, k, data, size, from, &hd, 0);
    if (s != KCACHE_OK && s != KCACHE__FORKED) {
        s = kcache__run_build(kc, build, user, &b, &child);
        if (child) { /* forked inside the build: the child takes its payload and goes */
            if (s != KCACHE_OK) return s;
            *data = b->data;
            *size = b->size;
            *from = KCACHE_BUILT_HERE;
            return s;
        }
        if (s == KCACHE_OK) {
            *data = b->data;
            *size = b->size;
            *from = KCACHE_BUILT_HERE;
            if (hd.f) { /* (alone: as after a wait spent, the result is not stored) */
                kcache__blob_ref(b);
                kcache__put_held(kc, k, b, &hd.cl, &remote_put); /* to the store now: other processes wait for it there */
                kcache__holder_put_again(kc, k, &hd.cl, b->data, b->size, &remote_put);
            }
        }
    }
    kcache__hold_end(kc, k->digest, &hd, kcache__put_may_have_landed(remote_put));
    return s;
}

/* kcache_get_or_build, saying where the payload came from (*from, when KCACHE_OK). */
static kcache_status kcache__get_or_build_from(kcache *kc, const kcache_key *k, kcache_build_fn build, void *user, const void **data,
                                               size_t *size, kcache_origin *from) {
    kcache_status s;
    kcache *h;
    int tries = 0;
#if KCACHE_CHECKS
    if (data) *data = NULL; /* (kcache__get_or_build does it for the calls that reach it) */
    if (size) *size = 0;
#endif
    KCACHE__CHECK_KC(kc, "kcache_get_or_build", KCACHE_EINVAL);
    KCACHE__CHECK_KEY(kc, k, "kcache_get_or_build", KCACHE_EINVAL);
    do {
        h = kcache__live(kc, 0);
        if (kc && !h) return KCACHE_ENOMEM; /* a forked child that could not open its own */
        s = kcache__get_or_build(h, k, build, user, data, size, from);
    } while (s == KCACHE__FORKED && ++tries < 3);
#if KCACHE_CHECKS
    /* (the handle that ran the build: a build that forked hands its payload out in the child) */
    if (s == KCACHE_OK && (h = kcache__pid() == h->pid ? h : kcache__live(h, 1)) != NULL) kcache__held_add(h, *data);
#endif
    return s == KCACHE__FORKED ? KCACHE_ELOCK : s;
}

KCACHE_API kcache_status kcache_get_or_build(kcache *kc, const kcache_key *k, kcache_build_fn build, void *user,
                                             const void **data, size_t *size) {
    kcache_origin from;
    return kcache__get_or_build_from(kc, k, build, user, data, size, &from);
}

/* ---- the two-step form: kcache_get_or_claim, then kcache_put_claimed or kcache_drop_claim ----
   The ticket holds what kcache__acquire took, exactly as kcache_get_or_build holds it around its
   build callback; the caller's build runs between the two calls. */

KCACHE_API kcache_status kcache_get_or_claim(kcache *kc, const kcache_key *k, const void **data, size_t *size,
                                             kcache_origin *origin, kcache_ticket **ticket) {
    kcache_status s = KCACHE__FORKED;
    kcache_origin from = KCACHE_BUILT_HERE;
    kcache_ticket *t = NULL;
    kcache *h = NULL;
    int tries = 0;
    if (data) *data = NULL;
    if (size) *size = 0;
    if (ticket) *ticket = NULL;
    if (origin) *origin = KCACHE_BUILT_HERE;
    KCACHE__CHECK_KC(kc, "kcache_get_or_claim", KCACHE_EINVAL);
    KCACHE__CHECK_KEY(kc, k, "kcache_get_or_claim", KCACHE_EINVAL);
    if (!kc || !data || !size || !ticket || !kcache__key_usable(k)) return KCACHE_EINVAL;
    while (s == KCACHE__FORKED && tries++ < 3) {
        if ((h = kcache__live(kc, 0)) == NULL) return KCACHE_CLAIMED; /* a forked child without its own: build, nothing held */
        /* the ticket first: claims are never taken without a place to keep them */
        if ((t = (kcache_ticket *)kcache__mem_alloc(&h->mem, sizeof *t)) == NULL) return KCACHE_CLAIMED;
        memset(t, 0, sizeof *t);
        t->k = k;
        t->digest = k->digest;
        t->tid = kcache__tid_self();
        t->pid = h->pid;
        s = kcache__acquire(h, k, data, size, &from, &t->hd, 0);
        if (s == KCACHE_OK || s == KCACHE__FORKED) {
            kcache__hold_end(h, k->digest, &t->hd, 0);
            kcache__mem_free(&h->mem, t);
            t = NULL;
        }
    }
    if (s == KCACHE__FORKED) return KCACHE_CLAIMED; /* (three forks in a row: build, nothing held) */
    if (s == KCACHE_OK) {
        if (origin) *origin = from;
#if KCACHE_CHECKS
        kcache__held_add(h, *data);
#endif
        return KCACHE_OK;
    }
    kcache__mutex_lock(&h->lock);
    t->next = h->tickets;
    kcache__atomic_store_ptr((void **)&h->tickets, t); /* (the head is read without the lock: kcache__holds_ticket) */
    kcache__mutex_unlock(&h->lock);
    *ticket = t;
    return KCACHE_CLAIMED;
}

/* Finds t among the open tickets: unlinked from its kcache (*owner) and returned, 1; 2 when it is
   a ticket of the parent's seen in a forked child (left as it is: the parent ends it); 0 when it is
   not an open ticket of kc's (ended already, or another kcache's: misuse). */
static int kcache__ticket_take(kcache *kc, kcache_ticket *t, kcache **owner, const char *call) {
    kcache *h = kcache__live(kc, 1);
    kcache_ticket **p;
    int found = 0;
    *owner = h;
    if (h) {
        kcache__mutex_lock(&h->lock);
        for (p = &h->tickets; *p; p = &(*p)->next)
            if (*p == t) {
                if (p == &h->tickets) kcache__atomic_store_ptr((void **)p, t->next); /* (the head: read without the lock) */
                else *p = t->next;
                found = 1;
                break;
            }
        kcache__mutex_unlock(&h->lock);
    }
    if (!found && h != kc) { /* a forked child: the parent's list as it was at the fork (none of its threads runs here) */
        const kcache_ticket *q;
        for (q = kc->tickets; q; q = q->next)
            if (q == t) return 2;
    }
#if KCACHE_CHECKS
    if (!found)
        kcache__misuse(kc->cfg.log, kc->cfg.log_user,
                       "%s: the ticket was ended already (kcache_put_claimed or kcache_drop_claim) or is not this kcache's; nothing done", call);
#else
    (void)call;
#endif
    return found;
}

/* A claimed build ended (stored or dropped): counted as kcache_get_or_build counts its builds. */
static void kcache__count_build(kcache *kc) {
    kcache__mutex_lock(&kc->lock);
    kc->stats.builds++;
    kcache__pub_add(&kc->pub, KCACHE__PUB_BUILDS, 1);
    kcache__mutex_unlock(&kc->lock);
}

KCACHE_API kcache_status kcache_put_claimed(kcache *kc, kcache_ticket *t, const void *data, size_t size) {
    kcache_status s, remote_put = KCACHE_EDISABLED;
    kcache__blob *b;
    kcache *h;
    int got;
    KCACHE__CHECK_KC(kc, "kcache_put_claimed", KCACHE_EINVAL);
    if (!kc || !t) return KCACHE_EINVAL; /* a ticket that claimed nothing and had nowhere to keep the key */
    got = kcache__ticket_take(kc, t, &h, "kcache_put_claimed");
    if (got == 0) return KCACHE_EINVAL;
    if (got == 2) return kcache_put(kc, t->k, data, size); /* a forked child: a plain put (the claims are the parent's) */
    kcache__count_build(h);
    if (!data && size) s = KCACHE_EINVAL; /* (as kcache_put; the claim is given back all the same) */
    else if (!t->hd.f) s = kcache_put(h, t->k, data, size); /* claimed nothing: a plain put */
    else if ((b = kcache__blob_copy(h, data, size)) == NULL) s = KCACHE_ENOMEM;
    else if ((s = kcache__put_blob(h, t->k, b, 1, &remote_put)) == KCACHE_OK) /* to the store now: the waiters look there */
        kcache__holder_put_again(h, t->k, &t->hd.cl, data, size, &remote_put);
    kcache__hold_end(h, t->digest, &t->hd, kcache__put_may_have_landed(remote_put));
    kcache__mem_free(&h->mem, t);
    return s;
}

KCACHE_API void kcache_drop_claim(kcache *kc, kcache_ticket *t) {
    kcache *h;
    KCACHE__CHECK_KC(kc, "kcache_drop_claim", );
    if (!kc || !t || kcache__ticket_take(kc, t, &h, "kcache_drop_claim") != 1) return;
    kcache__count_build(h);
    kcache__hold_end(h, t->digest, &t->hd, 0);
    kcache__mem_free(&h->mem, t);
}

/* kcache_close: the tickets never ended are dropped (their waiters build), so that nothing waits
   out KCACHE_BUILD_WAIT for a cache that is gone. Their keys are not read: they may be freed. */
static void kcache__tickets_close(kcache *kc) {
    kcache_ticket *t, *next;
    kcache__mutex_lock(&kc->lock);
    t = kc->tickets;
    kcache__atomic_store_ptr((void **)&kc->tickets, NULL);
    kcache__mutex_unlock(&kc->lock);
    for (; t; t = next) {
        char hex[33];
        next = t->next;
        kcache_hash_hex(t->digest, hex);
        KCACHE__DEBUG(kc, "close: the claim on %s (kcache_get_or_claim) was never ended; dropped", hex);
        kcache__hold_end(kc, t->digest, &t->hd, 0);
        kcache__mem_free(&kc->mem, t);
    }
}

/* ============================================================================================== */
/* >>batch  the batch call: kcache_get_or_build_many                                              */
/* ============================================================================================== */

/* ---- one claim tried per key ----
   The same claims as kcache_get_or_build (this process's flights, the store's claim bytes, the
   remote's claims), each only tried: a key someone else builds is left for later, so every caller
   builds a key nobody builds while there is one, and waits only when none is left. */

/* The cluster's claim, tried: KCACHE_EEXIST when another machine holds it (nothing held here);
   else the remote asked (another machine may have built it since the batch's first look): the
   payload, or a miss with *cl held when this process is to build (not held when the remote has no
   claims or did not answer: then everyone builds, as without a remote). */
static kcache_status kcache__cluster_try(kcache *kc, const kcache_key *k, kcache__rclaim *cl, const void **data, size_t *size) {
    kcache__remote_ev ev;
    kcache_status s, t = KCACHE_MISS;
    uint64_t trouble;
    memset(&ev, 0, sizeof ev);
    if (kcache__rclaim_init(cl, kc->remote, k)) {
        t = kcache__rclaim_take(cl, &ev);
        /* held; or the call failed (or its breaker skipped it) on a shard that answers otherwise:
           tried later, as a held claim is (issue 35: a lost packet is no reason to build) */
        if (t == KCACHE_EEXIST || (t != KCACHE_OK && t != KCACHE_EROFS && t != KCACHE_ENODE && kcache__remote_glitch(kc->remote, k))) {
            kcache__rclaim_end(cl, 0, &ev); /* (not held: nothing to give back) */
            kcache__remote_stats(kc, &ev);
            return KCACHE_EEXIST;
        }
    }
    if (t == KCACHE_OK && cl->checked) { /* the take saw the value missing: build (the caller looked here a moment ago) */
        kcache__remote_stats(kc, &ev);
        return KCACHE_MISS;
    }
    trouble = kcache__remote_trouble(kc);
    s = kcache__get(kc, k, data, size, 0, KCACHE__ASK_REMOTE);
    if (s != KCACHE_OK && t == KCACHE_OK && kcache__remote_trouble(kc) != trouble && kcache__remote_glitch(kc->remote, k)) {
        /* the look after the claim got no answer: the value may be there (built and released before
           the claim was taken): the claim given back (its waiters look), the key tried later */
        kcache__rclaim_end(cl, 1, &ev);
        s = KCACHE_EEXIST;
    }
    kcache__remote_stats(kc, &ev);
    return s;
}

/* One try at a key, waiting for nobody: KCACHE_OK (the payload in *data) or an error: the key is
   done; KCACHE_EEXIST: another thread, process or machine builds it now (nothing held: try later);
   KCACHE__FORKED. waited: seen busy before, so the first look asks the remote too (another
   machine's build lands there, not in this store); and once the claims are ours it is asked
   anyway: another machine may have built it since the batch's first look. alone: waited past
   KCACHE_BUILD_WAIT, so build without claims, as kcache_get_or_build does. *child: as
   kcache__run_build's (the child takes its payload and touches nothing else). */
static kcache_status kcache__try_build(kcache *kc, const kcache_key *k, kcache_build_fn build, void *user, int waited, int alone,
                                       kcache__rclaim *held, const void **data, size_t *size, int *child, kcache_origin *from) {
    kcache__flight *f = NULL;
    kcache__rclaim own, *cl = held ? held : &own; /* held: the cluster's claim, taken already (kcache__rclaim_take_first) */
    kcache__blob *b;
    kcache_status s = KCACHE_MISS, remote_put = KCACHE_EDISABLED;
    int claimed = 0, built = 0;
    *child = 0;
    *data = NULL;
    *size = 0;
    kcache__rclaim_reset(&own);
    if (!alone && k->error == KCACHE_OK && kc->cfg.enable) {
        kcache__mutex_lock(&kc->lock);
        for (f = kc->flights; f; f = f->next)
            if (kcache__same(f->digest, k->digest)) break;
        if (f) { /* a thread of this process builds it */
            int forked = kcache__pid() != kc->pid; /* (a thread of the parent: it never ends here) */
            if (forked) kcache__atomic_store_u32(&kc->forked, 1);
            kcache__mutex_unlock(&kc->lock);
            if (held && !forked) { /* given back: its waiters look, as this thread's will */
                kcache__remote_ev ev;
                memset(&ev, 0, sizeof ev);
                kcache__rclaim_end(held, 1, &ev);
                kcache__remote_stats(kc, &ev);
            }
            return forked ? KCACHE__FORKED : KCACHE_EEXIST;
        }
        f = kcache__flight_new(kc, k->digest);
        kcache__mutex_unlock(&kc->lock);
    }
    if (f) {
        s = kcache__get(kc, k, data, size, 0, waited ? KCACHE__ASK_REMOTE : 0); /* put meanwhile? */
        if (s != KCACHE_OK && s != KCACHE__FORKED && kc->store && !kc->store->readonly) {
            int got = kcache__lockfile_claim(kc->store->lf, kcache__claim_offset(k->digest));
            if (got < 0 && errno == ECHILD) {
                kcache__atomic_store_u32(&kc->store->forked, 1);
                s = KCACHE__FORKED;
            } else if (got == 0) {
                s = KCACHE_EEXIST;
            } else if (got == 1) {
                claimed = 1;
                s = kcache__get(kc, k, data, size, 0, 0); /* its builder ended between the look and the claim */
            }
        }
        if (s != KCACHE_OK && s != KCACHE__FORKED && s != KCACHE_EEXIST && kc->remote && !held) s = kcache__cluster_try(kc, k, cl, data, size);
    }
    if (s != KCACHE_OK && s != KCACHE__FORKED && s != KCACHE_EEXIST) {
        s = kcache__run_build(kc, build, user, &b, child);
        if (*child) { /* forked inside the build: the child takes its payload and goes */
            *from = KCACHE_BUILT_HERE;
            if (s == KCACHE_OK) {
                *data = b->data;
                *size = b->size;
            }
            return s;
        }
        built = 1;
        if (s == KCACHE_OK) {
            *data = b->data;
            *size = b->size;
            if (f) { /* (alone: as kcache_get_or_build after its wait, the result is not stored) */
                kcache__blob_ref(b);
                kcache__put_held(kc, k, b, cl, &remote_put); /* to the store now: other processes look there */
                kcache__holder_put_again(kc, k, cl, b->data, b->size, &remote_put);
            }
        }
    }
    if (kcache__rclaim_pending(cl)) { /* the other machines read the result (ours, or the one we found), or build on their own */
        kcache__remote_ev ev;
        memset(&ev, 0, sizeof ev);
        kcache__rclaim_end(cl, s == KCACHE_OK && (!built || kcache__put_may_have_landed(remote_put)), &ev);
        kcache__remote_stats(kc, &ev);
    }
    if (claimed) kcache__unclaim(kc, k->digest);
    if (f) kcache__flight_end(kc, f);
    *from = built ? KCACHE_BUILT_HERE : KCACHE_BUILT_ELSEWHERE; /* (missing at the batch's first look) */
    return s;
}

enum { KCACHE__JOB_OPEN, KCACHE__JOB_TAKEN, KCACHE__JOB_DONE };

/* What the workers of one batch share (m guards it all). */
typedef struct kcache__batch {
    kcache *kc;                /* the handle the workers use */
    kcache_job *jobs;
    size_t *todo, ntodo;       /* the jobs to build: one per distinct missing key, in the caller's order */
    unsigned char *state;      /* per todo: KCACHE__JOB_* (taken: a worker is trying it now) */
    int64_t *busy_since;       /* per todo: when first seen built by someone else (0: not yet) */
    int64_t *ask_after;        /* per todo seen busy: not asked again (the remote, a claim) before
                                  then, monotonic ns (the back-off of kcache__batch_later) */
    unsigned char *backoff;    /* per todo: how often it was put off (the back-off doubles) */
    int64_t *tried_at;         /* per todo: when its try last found it busy (monotonic ns) */
    size_t left;               /* todo not done */
    uint64_t ends;             /* todo done so far: a waiting worker wakes when it moves */
    unsigned workers;          /* workers started so far (each starts its passes elsewhere) */
    int forked, child;         /* the process is a fork of kc's: stop (the caller goes on) */
    int fetched;               /* a read-back was made (kcache__batch_fetch: the first asks every key seen busy) */
    int sweep;                 /* the next read-back asks every key seen busy (nothing left to build) */
    size_t fresh;              /* todo never seen busy and not done: while some are, there may be one to
                                  build, and what others built is read back later, in one sweep */
    unsigned sweeps;           /* sweeps since one found a value: their back-off (16 ms doubling to 256 ms) */
    int64_t sweep_at;          /* not before then (monotonic ns) */
    kcache__mutex m;
    kcache__cond c;
} kcache__batch;

/* Whether todo i, seen busy, may be asked again now (its back-off spent). */
static int kcache__batch_due(const kcache__batch *bt, size_t i, int64_t now) { return !bt->busy_since[i] || now >= bt->ask_after[i]; }

/* Todo i was seen busy (another builds it) or could not be asked (a failed call while its shard
   answers otherwise): asked again, of the remote and for its claim, only after a back-off (16 ms
   doubling to 256 ms), never after every build of this batch, so that a key costs a few commands
   while another machine builds it, not one per key built meanwhile (issue 35). Lock held. */
static void kcache__batch_later(kcache__batch *bt, size_t i, int64_t now) {
    unsigned b = bt->backoff[i] < 4 ? bt->backoff[i] : 4;
    if (!bt->busy_since[i]) bt->busy_since[i] = now, bt->fresh--;
    bt->ask_after[i] = now + ((int64_t)16000000 << b);
    if (bt->backoff[i] < 255) bt->backoff[i]++;
}

/* Asks the tiers again for the next open keys of a pass that were seen busy and are due, or for
   all of them (`all`) (KCACHE__REMOTE_MANY at most, from step `from` of a pass that starts at todo
   `first`; lock held, dropped meanwhile with the keys marked taken): memory and the store, then the remote in one
   exchange per shard for the rest (kcache__remote_fetch), so that the values other machines built
   come back without a claim and a round trip each. Returns the step after the last key asked;
   *progress: 1 when a key got done. */
static size_t kcache__batch_fetch(kcache__batch *bt, kcache__many *mm, size_t first, size_t from, int *progress) {
    size_t step, j, m = 0, n, k;
    int forked = 0, done = 0;
    int64_t now = kcache__mono_ns();
    /* every key seen busy, the pass's earlier ones too, in one exchange: when nothing is left to
       build (a sweep: what others built is read back together), and the batch's first read-back */
    int all = bt->sweep || !bt->fetched;
    for (k = 0; k < (all ? bt->ntodo : bt->ntodo - from) && m < KCACHE__REMOTE_MANY; k++) {
        size_t i = (first + from + k) % bt->ntodo;
        if (bt->state[i] == KCACHE__JOB_OPEN && bt->busy_since[i] && (all || kcache__batch_due(bt, i, now))) {
            bt->state[i] = KCACHE__JOB_TAKEN;
            mm->at[m] = i;
            mm->keys[m++] = bt->jobs[bt->todo[i]].key;
        }
    }
    step = from + k < bt->ntodo ? from + k : bt->ntodo;
    if (!m) return step;
    bt->fetched = 1;
    if (bt->sweep) {
        bt->sweep = 0;
        bt->sweep_at = now + ((int64_t)16000000 << (bt->sweeps < 4 ? bt->sweeps : 4));
        bt->sweeps++;
    }
    kcache__mutex_unlock(&bt->m);
    for (j = 0, n = 0; j < m; j++) /* the store first: a process on this store may have built it */
        if ((mm->st[j] = kcache__get(bt->kc, mm->keys[j], &mm->d[j], &mm->sz[j], 0, 0)) != KCACHE_OK) {
            forked |= mm->st[j] == KCACHE__FORKED;
            mm->which[n] = j;
            mm->ask[n++] = mm->keys[j];
        }
    if (forked) n = 0; /* (the next try says so) */
    kcache__remote_fetch(bt->kc, mm, n);
    for (j = 0; j < n; j++) {
        mm->st[mm->which[j]] = mm->got[j];
        mm->d[mm->which[j]] = mm->data[j];
        mm->sz[mm->which[j]] = mm->size[j];
    }
    kcache__mutex_lock(&bt->m);
    for (j = 0; j < m; j++) {
        kcache_job *job = &bt->jobs[bt->todo[mm->at[j]]];
        if (mm->st[j] != KCACHE_OK) { /* still missing: tried as before */
            bt->state[mm->at[j]] = KCACHE__JOB_OPEN;
            continue;
        }
        bt->sweeps = 0; /* (values are landing: the next sweep soon) */
        job->data = mm->d[j];
        job->size = mm->sz[j];
        job->status = KCACHE_OK;
        job->origin = KCACHE_BUILT_ELSEWHERE; /* (missing at the batch's first look) */
        bt->state[mm->at[j]] = KCACHE__JOB_DONE;
        bt->left--;
        bt->ends++;
        done = 1;
    }
    if (done) {
        *progress = 1;
        kcache__cond_broadcast(&bt->c);
    }
    return step;
}

/* Before todo *i is tried (never seen busy, or seen busy and its claim due to be asked again):
   with a remote that takes many claims in one exchange (claim_take_many), the claim of the first
   free key among it and the next open keys never seen busy or due again on its shard
   (KCACHE__REMOTE_MANY at most, from step `step` of the pass that starts at todo `first`) is taken
   in one round trip (issue 35: the keys due again were asked one round trip each); the keys found
   held or built are put off (as a try that finds one busy does), and *i becomes the key taken,
   its claim in mm->cl (mm->held). Returns 1
   when none was free (the caller moves on: *next, the first key put off's due time, updated), 0
   to try *i. Lock held, dropped meanwhile with the keys marked taken. */
static int kcache__batch_take_first(kcache__batch *bt, kcache__many *mm, size_t first, size_t step, size_t *i, int64_t *next) {
    kcache *kc = bt->kc;
    const kcache_key *k0 = bt->jobs[bt->todo[*i]].key, **keys = mm->keys;
    size_t *at = mm->at, m = 0, x, which = 0;
    kcache_status *st = mm->st, t;
    kcache__remote_ev ev;
    int64_t now = kcache__mono_ns(), again = (int64_t)kcache__remote_claim_ms(KCACHE__REMOTE(kc)) * 333333;
    mm->held = 0;
    if (!kc->cfg.enable || k0->error != KCACHE_OK || !kcache__rclaim_can_take_first(KCACHE__REMOTE(kc), k0, k0)) return 0;
    for (; step < bt->ntodo && m < KCACHE__REMOTE_MANY; step++) {
        size_t c = (first + step) % bt->ntodo;
        const kcache_key *k = bt->jobs[bt->todo[c]].key;
        /* (a key seen busy: once its claim is to be asked again, with the others in the same exchange) */
        if (bt->state[c] != KCACHE__JOB_OPEN || (bt->busy_since[c] && (!kcache__batch_due(bt, c, now) || now - bt->tried_at[c] < again)) ||
            k->error != KCACHE_OK || !kcache__rclaim_can_take_first(KCACHE__REMOTE(kc), k0, k))
            continue;
        bt->state[c] = KCACHE__JOB_TAKEN;
        at[m] = c;
        keys[m++] = k;
    }
    if (m < 2) { /* (one key: its try takes its claim as before) */
        for (x = 0; x < m; x++) bt->state[at[x]] = KCACHE__JOB_OPEN;
        return 0;
    }
    kcache__mutex_unlock(&bt->m);
    memset(&ev, 0, sizeof ev);
    t = kcache__rclaim_take_first(KCACHE__REMOTE(kc), keys, m, &mm->cl, &which, st, &ev);
    kcache__remote_stats(kc, &ev);
    kcache__mutex_lock(&bt->m);
    now = kcache__mono_ns();
    for (x = 0; x < m; x++) {
        bt->state[at[x]] = KCACHE__JOB_OPEN;
        if ((t == KCACHE_OK || t == KCACHE_EEXIST) && st[x] == KCACHE_EEXIST) { /* another builds it, or it is built: looked at later */
            if (!bt->busy_since[at[x]]) kcache__count_wait(kc);
            kcache__batch_later(bt, at[x], now);
            bt->tried_at[at[x]] = now;
            if (!*next || bt->ask_after[at[x]] < *next) *next = bt->ask_after[at[x]];
        }
    }
    if (t == KCACHE_OK) {
        *i = at[which];
        mm->held = 1;
        return 0;
    }
    return t == KCACHE_EEXIST; /* (a failure: *i is tried on its own, as before) */
}

/* A worker: passes over the keys left, trying each that no worker of the batch holds; a key seen
   busy (another thread, process or machine builds it) is tried again only after its back-off
   (kcache__batch_later); when a pass built nothing, it waits (woken by this batch's workers, else
   until the first key put off is due, or 20 ms: another process's end is seen in the store). Each
   worker starts its passes at a key of its own (from its process id and its number), so that
   processes that need the same keys do not all race for the same first ones. With a remote, the
   keys put off that are due are asked again together (kcache__batch_fetch, the next
   KCACHE__REMOTE_MANY of the pass at a time) before they are tried: what others built meanwhile
   comes back in one exchange. A key never seen busy is not asked again: the batch's first look
   asked it, and its try asks once more after taking its claims (at most 2 GETs per key when
   nobody else builds; issue 35), or with claim_take_many not at all: the worker takes the first
   free claim among its next keys in one exchange, a take that sees the value missing
   (kcache__batch_take_first). */
static void kcache__batch_work(kcache__batch *bt) {
    /* (without room for it, each key seen busy is asked of the remote by its try) */
    kcache__many *mm = KCACHE__REMOTE(bt->kc) ? (kcache__many *)kcache__mem_alloc(&bt->kc->mem, sizeof *mm) : NULL;
    size_t first;
    kcache__mutex_lock(&bt->m);
    { /* (a hash, not the id itself: consecutive pids would start on consecutive keys) */
        uint64_t seed[2];
        seed[0] = kcache__pid();
        seed[1] = bt->workers++;
        first = bt->ntodo ? (size_t)(kcache_hash(seed, sizeof seed).lo % bt->ntodo) : 0;
    }
    while (bt->left && !bt->forked && !bt->child) {
        uint64_t seen = bt->ends;
        int progress = 0;
        int64_t next = 0, now; /* next: when the first key put off is due (0: none) */
        size_t step, i, asked = 0; /* the steps of this pass a fetch looked at */
        for (step = 0; step < bt->ntodo && !bt->forked && !bt->child; step++) {
            const void *d;
            size_t n;
            kcache_job *j;
            kcache_status s;
            kcache_origin from = KCACHE_BUILT_HERE; /* (set by every try that ends the job) */
            int child, alone;
            i = (first + step) % bt->ntodo;
            if (bt->state[i] != KCACHE__JOB_OPEN) continue;
            now = kcache__mono_ns();
            if (!kcache__batch_due(bt, i, now) && !(bt->sweep && mm)) {
                if (!next || bt->ask_after[i] < next) next = bt->ask_after[i];
                continue;
            }
            /* (with a remote that takes the first free of many claims at once, what others built is
               read back once nothing is left to build: a read-back between builds cost a round trip) */
            if (bt->busy_since[i] && mm && step >= asked &&
                (bt->sweep || !bt->fresh || !kcache__rclaim_can_take_first(KCACHE__REMOTE(bt->kc), bt->jobs[bt->todo[i]].key, bt->jobs[bt->todo[i]].key))) {
                asked = kcache__batch_fetch(bt, mm, first, step, &progress);
                if (bt->state[i] != KCACHE__JOB_OPEN) continue;
            }
            /* still missing after its look: its claim is asked again (a try) only a third of a
               claim's life after it was last seen held, so that a key another builds costs a GET
               per back-off, not a GET and a claim (the claim ending unseen, abandoned or
               expired, is found by the next try; its value, by the looks) */
            if (bt->busy_since[i] && mm && now - bt->tried_at[i] < (int64_t)kcache__remote_claim_ms(KCACHE__REMOTE(bt->kc)) * 333333) {
                kcache__batch_later(bt, i, now);
                if (!next || bt->ask_after[i] < next) next = bt->ask_after[i];
                continue;
            }
            if (mm && kcache__batch_take_first(bt, mm, first, step, &i, &next)) continue;
            j = &bt->jobs[bt->todo[i]];
            bt->state[i] = KCACHE__JOB_TAKEN;
            alone = bt->busy_since[i] && now - bt->busy_since[i] > (int64_t)bt->kc->cfg.build_wait_ms * 1000000;
            kcache__mutex_unlock(&bt->m);
            s = kcache__try_build(bt->kc, j->key, j->build, j->user, bt->busy_since[i] != 0 && !mm, alone, mm && mm->held ? &mm->cl : NULL, &d, &n,
                                  &child, &from);
            if (mm) mm->held = 0;
            if (child) { /* this thread alone in a forked child: no lock of the parent's is touched */
                j->data = d;
                j->size = n;
                j->status = s;
                j->origin = from;
                bt->state[i] = KCACHE__JOB_DONE;
                bt->child = 1;
                kcache__mem_free(&bt->kc->mem, mm); /* (as the batch's arrays are, by its caller) */
                return;
            }
            if (s == KCACHE_EEXIST && !bt->busy_since[i]) kcache__count_wait(bt->kc);
            kcache__mutex_lock(&bt->m);
            if (s == KCACHE_EEXIST || s == KCACHE__FORKED) {
                now = kcache__mono_ns();
                kcache__batch_later(bt, i, now);
                bt->tried_at[i] = now;
                if (!next || bt->ask_after[i] < next) next = bt->ask_after[i];
                bt->forked |= s == KCACHE__FORKED;
                bt->state[i] = KCACHE__JOB_OPEN;
                continue;
            }
            j->data = d;
            j->size = n;
            j->status = s;
            j->origin = from;
            bt->state[i] = KCACHE__JOB_DONE;
            bt->left--;
            if (!bt->busy_since[i]) bt->fresh--;
            bt->ends++;
            progress = 1;
            kcache__cond_broadcast(&bt->c);
        }
        if (progress || !bt->left || bt->forked || bt->child || bt->ends != seen) continue;
        now = kcache__mono_ns();
        /* nothing to build, nothing due: every key others build is asked again at once (one
           exchange: what ended since comes back together, not each after its own back-off) */
        if (mm && next && now >= bt->sweep_at) {
            bt->sweep = 1;
            continue;
        }
        if (!next || next > now + 20000000) next = now + 20000000; /* (taken by this batch's workers: they wake it) */
        if (next > now) kcache__cond_wait_until(&bt->c, &bt->m, kcache__now_ns() + (next - now));
    }
    kcache__mutex_unlock(&bt->m);
    kcache__mem_free(&bt->kc->mem, mm);
}

KCACHE__THREAD_FN(kcache__batch_worker, arg) {
    kcache__batch_work((kcache__batch *)arg);
    KCACHE__THREAD_END;
}

/* Orders the distinct-key sort: by digest, then by job number (the lowest job of a key leads it). */
typedef struct kcache__batch_ord { kcache_hash128 d; size_t i; } kcache__batch_ord;
static int kcache__batch_cmp(const void *a, const void *b) {
    const kcache__batch_ord *x = (const kcache__batch_ord *)a, *y = (const kcache__batch_ord *)b;
    if (x->d.hi != y->d.hi) return x->d.hi < y->d.hi ? -1 : 1;
    if (x->d.lo != y->d.lo) return x->d.lo < y->d.lo ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

KCACHE_API kcache_status kcache_get_or_build_many(kcache *kc, kcache_job *jobs, size_t n, unsigned threads) {
    kcache__batch bt;
    kcache__batch_ord *ord = NULL;
    kcache__thread *th = NULL;
    size_t *lead = NULL, i, nmiss = 0, nth = 0, started = 0;
    kcache *h = NULL;
    int tries = 0;
    KCACHE__CHECK_KC(kc, "kcache_get_or_build_many", KCACHE_EINVAL);
    if (n && !jobs) return KCACHE_EINVAL;
    for (i = 0; i < n; i++) {
        jobs[i].data = NULL;
        jobs[i].size = 0;
        jobs[i].origin = KCACHE_BUILT_HERE;
        jobs[i].status = !kc || !jobs[i].build || !kcache__key_usable(jobs[i].key) ? KCACHE_EINVAL : KCACHE_MISS;
    }
    if (kc && (h = kcache__live(kc, 0)) == NULL)
        for (i = 0; i < n; i++) jobs[i].status = jobs[i].status == KCACHE_MISS ? KCACHE_ENOMEM : jobs[i].status;
    /* what is there already: each a lookup as kcache_get's (memory, the store, the layers, then the
       remote: with one, asked for all the keys missing here at once, and each still missing then
       counted as a miss) */
    for (i = 0; h && i < n; i++) {
        kcache_status s;
        int count = !KCACHE__REMOTE(h);
        unsigned ask = count ? KCACHE__ASK_LOWER : KCACHE__ASK_LAYERS;
        if (jobs[i].status != KCACHE_MISS) continue;
        s = kcache__get_from(h, jobs[i].key, &jobs[i].data, &jobs[i].size, count, ask, &jobs[i].origin);
        while (s == KCACHE__FORKED && ++tries < 3 && (h = kcache__live(kc, 0)) != NULL) {
            count = !KCACHE__REMOTE(h);
            s = kcache__get_from(h, jobs[i].key, &jobs[i].data, &jobs[i].size, count, count ? KCACHE__ASK_LOWER : KCACHE__ASK_LAYERS,
                                 &jobs[i].origin);
        }
        if (s == KCACHE__FORKED || !h) break; /* the rest goes through kcache_get_or_build below */
        if (s == KCACHE_OK) jobs[i].status = KCACHE_OK;
        else nmiss++;
    }
    if (nmiss && h && i == n && KCACHE__REMOTE(h)) {
        kcache__many *mm = (kcache__many *)kcache__mem_alloc(&h->mem, sizeof *mm);
        size_t m, j;
        for (i = 0; i < n;) {
            for (m = 0; i < n && (m < KCACHE__REMOTE_MANY || !mm); i++)
                if (jobs[i].status == KCACHE_MISS) {
                    kcache_status s = KCACHE_MISS;
                    if (mm) mm->at[m] = i, mm->ask[m++] = jobs[i].key;
                    else s = kcache__get_from(h, jobs[i].key, &jobs[i].data, &jobs[i].size, 1, KCACHE__ASK_REMOTE, &jobs[i].origin); /* (no room: one by one) */
                    if (s == KCACHE_OK) jobs[i].status = KCACHE_OK, nmiss--;
                }
            if (mm) kcache__remote_fetch(h, mm, m);
            for (j = 0; j < m; j++) {
                kcache_job *job = &jobs[mm->at[j]];
                kcache_status s = mm->got[j];
                if (s == KCACHE_OK) job->data = mm->data[j], job->size = mm->size[j], job->origin = KCACHE_FROM_REMOTE;
                else s = kcache__get_from(h, job->key, &job->data, &job->size, 1, 0, &job->origin); /* counts the miss */
                if (s == KCACHE_OK) job->status = KCACHE_OK, nmiss--;
            }
        }
        kcache__mem_free(&h->mem, mm);
    }
    memset(&bt, 0, sizeof bt);
    if (nmiss && h && i == n) {
        /* the distinct keys missing, in the caller's order (each worker starts its passes at a key
           of its own, and goes round from there: see kcache__batch_work) */
        ord = (kcache__batch_ord *)kcache__mem_alloc(&h->mem, nmiss * sizeof *ord);
        lead = (size_t *)kcache__mem_alloc(&h->mem, n * sizeof *lead);
        bt.todo = (size_t *)kcache__mem_alloc(&h->mem, nmiss * sizeof *bt.todo);
        bt.state = (unsigned char *)kcache__mem_alloc(&h->mem, nmiss);
        bt.busy_since = (int64_t *)kcache__mem_alloc(&h->mem, nmiss * sizeof *bt.busy_since);
        bt.ask_after = (int64_t *)kcache__mem_alloc(&h->mem, nmiss * sizeof *bt.ask_after);
        bt.backoff = (unsigned char *)kcache__mem_alloc(&h->mem, nmiss);
        bt.tried_at = (int64_t *)kcache__mem_alloc(&h->mem, nmiss * sizeof *bt.tried_at);
    }
    if (bt.busy_since && bt.ask_after && bt.backoff && bt.tried_at && ord && lead && bt.todo && bt.state) {
        size_t m = 0;
        for (i = 0; i < n; i++) {
            lead[i] = i;
            /* a key that cannot be stored (incomplete, caching off) is built by its own job */
            if (jobs[i].status == KCACHE_MISS && jobs[i].key->error == KCACHE_OK && h->cfg.enable) {
                ord[m].d = jobs[i].key->digest;
                ord[m++].i = i;
            }
        }
        qsort(ord, m, sizeof *ord, kcache__batch_cmp);
        for (i = 1; i < m; i++)
            if (kcache__same(ord[i].d, ord[i - 1].d)) lead[ord[i].i] = lead[ord[i - 1].i];
        for (i = 0; i < n; i++)
            if (jobs[i].status == KCACHE_MISS && lead[i] == i) {
                bt.state[bt.ntodo] = KCACHE__JOB_OPEN;
                bt.busy_since[bt.ntodo] = 0;
                bt.ask_after[bt.ntodo] = 0;
                bt.backoff[bt.ntodo] = 0;
                bt.tried_at[bt.ntodo] = 0;
                bt.todo[bt.ntodo++] = i;
            }
        bt.kc = h;
        bt.jobs = jobs;
        bt.left = bt.fresh = bt.ntodo;
        kcache__mutex_init(&bt.m);
        kcache__cond_init(&bt.c);
        nth = threads > 1 ? threads - 1 : 0; /* the caller is a worker too */
        if (nth > bt.ntodo - 1) nth = bt.ntodo - 1;
        if (nth) th = (kcache__thread *)kcache__mem_alloc(&h->mem, nth * sizeof *th);
        if (!th) nth = 0;
        KCACHE__DEBUG(h, "build many: %zu jobs, %zu hits, %zu keys to build on %zu thread(s)", n, n - nmiss, bt.ntodo, nth + 1);
        for (started = 0; started < nth && kcache__thread_start(&th[started], kcache__batch_worker, &bt); started++) {
        }
        kcache__batch_work(&bt);
        if (!bt.child) {
            for (i = 0; i < started; i++) kcache__thread_join(th[i]);
            kcache__cond_destroy(&bt.c);
            kcache__mutex_destroy(&bt.m);
        }
        for (i = 0; i < bt.ntodo; i++) /* left by a fork: the rest goes through kcache_get_or_build */
            if (bt.state[i] != KCACHE__JOB_DONE) jobs[bt.todo[i]].status = KCACHE_MISS;
        for (i = 0; i < n; i++) /* the same key's other jobs share its payload */
            if (lead[i] != i && jobs[lead[i]].status != KCACHE_MISS) {
                jobs[i].status = jobs[lead[i]].status;
                jobs[i].origin = jobs[lead[i]].origin;
                if (jobs[i].status == KCACHE_OK) {
                    kcache__blob_ref(kcache__blob_of(jobs[lead[i]].data));
                    jobs[i].data = jobs[lead[i]].data;
                    jobs[i].size = jobs[lead[i]].size;
                }
            }
    }
    if (h) { /* (all NULL without h; h is the kcache they came from) */
        kcache__mem_free(&h->mem, th);
        kcache__mem_free(&h->mem, ord);
        kcache__mem_free(&h->mem, lead);
        kcache__mem_free(&h->mem, bt.todo);
        kcache__mem_free(&h->mem, bt.state);
        kcache__mem_free(&h->mem, bt.busy_since);
        kcache__mem_free(&h->mem, bt.ask_after);
        kcache__mem_free(&h->mem, bt.backoff);
        kcache__mem_free(&h->mem, bt.tried_at);
    }
#if KCACHE_CHECKS
    { /* what the batch handed out so far, for kcache_release's check (kcache_get_or_build below
         registers its own); this process's handle: a build may have forked */
        kcache *me = kc ? kcache__live(kc, 1) : NULL;
        for (i = 0; me && i < n; i++)
            if (jobs[i].status == KCACHE_OK) kcache__held_add(me, jobs[i].data);
    }
#endif
    /* anything left (out of memory, a fork): one key at a time */
    for (i = 0; i < n; i++)
        if (jobs[i].status == KCACHE_MISS)
            jobs[i].status = kcache__get_or_build_from(kc, jobs[i].key, jobs[i].build, jobs[i].user, &jobs[i].data, &jobs[i].size,
                                                       &jobs[i].origin);
    for (i = 0; i < n; i++)
        if (jobs[i].status != KCACHE_OK) return jobs[i].status;
    return KCACHE_OK;
}


/* ============================================================================================== */
/* >>toolapi  reading a store for tools: the decoders above, behind public names                  */
/* ============================================================================================== */

/* Everything here calls the decoders the library itself reads with (kcache__ix_read,
   kcache__record_parse, kcache__pub_*, kcache__acct_*): a tool sees the store exactly as kcache
   does, and a format change is made once. A reader's store is a stand-in that only reads: its
   directory, its owner (and group, for a group-shared store), an allocator; no lock file, no
   config.file mapping, nothing written. */

struct kcache_reader {
    kcache__store st;
};

KCACHE_API kcache_status kcache_reader_open(kcache_reader **out, const char *dir) {
    kcache_reader *r;
    kcache__finfo fi;
    size_t n;
    int e;
    if (!out) return KCACHE_EINVAL;
    *out = NULL;
    if (!dir || !dir[0]) return KCACHE_EINVAL;
    n = strlen(dir);
    if ((r = (kcache_reader *)KCACHE_MALLOC(sizeof *r + n + 1)) == NULL) return KCACHE_ENOMEM;
    memset(r, 0, sizeof *r);
    r->st.dir = (char *)(r + 1);
    memcpy(r->st.dir, dir, n + 1);
    r->st.tmpfd = r->st.cffd = -1;
    r->st.dirfd = kcache__io_open(dir, KCACHE__RD | KCACHE__DIRECTORY);
    if (r->st.dirfd < 0 || kcache__io_fstat(r->st.dirfd, &fi) != 0 || fi.kind != KCACHE__KIND_DIR) {
        e = errno;
        if (r->st.dirfd >= 0) kcache__io_close(r->st.dirfd);
        KCACHE_FREE(r);
        return e == ENOENT ? KCACHE_ENOENT : e == ENOTDIR ? KCACHE_EUNSAFE : e == ENOMEM ? KCACHE_ENOMEM : KCACHE_EIO;
    }
    r->st.readonly = 1;
    r->st.uid = fi.uid; /* the store's owner is whom its files are trusted from (and root) */
    r->st.gid = fi.gid;
    r->st.shared = (fi.perm & 02070) == 02070; /* a group's store (KCACHE_SHARED_GROUP): its members too */
    r->st.pid = kcache__pid();
    kcache__mutex_init(&r->st.shard_mutex);
    kcache__mutex_init(&r->st.mutex);
    *out = r;
    return KCACHE_OK;
}

KCACHE_API void kcache_reader_close(kcache_reader *r) {
    if (!r) return;
    kcache__io_close(r->st.dirfd);
    kcache__mutex_destroy(&r->st.shard_mutex);
    kcache__mutex_destroy(&r->st.mutex);
    KCACHE_FREE(r);
}

KCACHE_API uint32_t kcache_reader_owner(const kcache_reader *r) { return r ? r->st.uid : 0; }

KCACHE_API kcache_status kcache_default_dir(char *out, size_t cap) {
    char *buf; /* a path's room on the heap: no call takes more than 4 KiB of stack */
    size_t n;
    kcache_status st = KCACHE_OK;
    if (!out || !cap) return KCACHE_EINVAL;
    out[0] = 0;
    if ((buf = (char *)KCACHE_MALLOC(4096)) == NULL) return KCACHE_ENOMEM;
    if (!kcache__default_dir(buf, 4096)) st = KCACHE_ENOENT;
    else if ((n = strlen(buf)) >= cap) st = KCACHE_ETOOBIG;
    else memcpy(out, buf, n + 1);
    KCACHE_FREE(buf);
    return st;
}

/* ---- text ---- */
KCACHE_API size_t kcache_escape_char(const unsigned char *s, size_t n, char out[11], size_t *used) {
    size_t u;
    if (!used) used = &u;
    if (!s) n = 0;
    return kcache__esc_char(s, n, out, used);
}
KCACHE_API char *kcache_escape(char *out, size_t cap, const void *s, size_t n) {
    if (!out || !cap) return out;
    return s ? kcache__esc(out, cap, s, n) : kcache__esc(out, cap, "(null)", 6);
}
KCACHE_API char *kcache_shell_quote(char *out, size_t cap, const char *s) {
    if (!out || !cap) return out;
    return kcache__shell_quote(out, cap, s ? s : "");
}
KCACHE_API kcache_status kcache_parse_size(const char *s, uint64_t *out) {
    uint64_t v;
    if (!out || !kcache__parse_size(s, &v)) return KCACHE_EINVAL;
    *out = v;
    return KCACHE_OK;
}
KCACHE_API const char *kcache_reason_text(kcache_reason r) {
    return (unsigned)r < (unsigned)KCACHE_REASON_COUNT ? kcache__reason_text[r] : "unknown";
}

/* ---- the host ---- */
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert((int)KCACHE_HOST_FEATURES_MAX >= (int)KCACHE__HOST_FEATURES_MAX && (int)KCACHE_HOST_CPU_LLVM == (int)KCACHE__LLVM_NEWEST,
              "kcache: host features fit, names of the newest LLVM");
#else
typedef char kcache__host_features_public[(int)KCACHE_HOST_FEATURES_MAX >= (int)KCACHE__HOST_FEATURES_MAX &&
                                          (int)KCACHE_HOST_CPU_LLVM == (int)KCACHE__LLVM_NEWEST ? 1 : -1];
#endif
KCACHE_API void kcache_host_cpu_name(char *out, size_t cap) {
    if (out && cap) kcache__host_cpu_name(out, cap);
}
KCACHE_API size_t kcache_host_cpu_features(char *out, size_t cap) { return out && cap ? kcache__host_cpu_features(out, cap) : 0; }

/* ---- the accounting file ---- */

/* config.file, opened to read when it is a regular file the store trusts: KCACHE_OK with *fd and
   its size; KCACHE_ENOENT, KCACHE_EUNSAFE (a link, or not a regular file the store trusts), KCACHE_EIO. */
static kcache_status kcache__reader_cf(kcache_reader *r, int *fd, uint64_t *size) {
    kcache__finfo fi;
    *fd = kcache__open_in(&r->st, "config.file", KCACHE__RD | KCACHE__NONBLOCK);
    if (*fd < 0) return errno == ENOENT ? KCACHE_ENOENT : errno == ELOOP ? KCACHE_EUNSAFE : KCACHE_EIO;
    if (kcache__io_fstat(*fd, &fi) != 0 || fi.kind != KCACHE__KIND_FILE || !kcache__trusted(&r->st, &fi)) {
        kcache__io_close(*fd);
        *fd = -1;
        return KCACHE_EUNSAFE;
    }
    *size = fi.size;
    return KCACHE_OK;
}

/* The use table's rows for a file of that size, as kcache maps it (0: not a use table's size). */
static uint64_t kcache__reader_slots(uint64_t file_size) {
    uint64_t n;
    if (file_size <= KCACHE__ACCT_HEADER || (file_size - KCACHE__ACCT_HEADER) % KCACHE__SLOT != 0) return 0;
    n = (file_size - KCACHE__ACCT_HEADER) / KCACHE__SLOT;
    return n >= 4 * KCACHE__WAYS && n <= ((uint64_t)KCACHE__WAYS << 24) && (n & (n - 1)) == 0 ? n : 0;
}

KCACHE_API kcache_status kcache_accounting_decode(const void *header, size_t len, uint64_t size, kcache_accounting *out,
                                                  kcache_eviction evictions[KCACHE_EVICTION_LOG], unsigned *n) {
    const unsigned char *h = (const unsigned char *)header;
    uint32_t lg;
    int i;
    if (n) *n = 0;
    if (!out || (!h && len)) return KCACHE_EINVAL;
    memset(out, 0, sizeof *out);
    out->file_size = size;
    if (len < KCACHE__ACCT_HEADER || size < KCACHE__ACCT_HEADER) return KCACHE_ECORRUPT;
    out->magic_ok = memcmp(h, "KCACHECF", 8) == 0;
    out->version = kcache__get_u32(h + 8);
    out->version_ok = out->version == KCACHE__ACCT_VERSION && kcache__get_u32(h + 12) == KCACHE__ACCT_HEADER;
    lg = kcache__get_u32(h + 16);
    out->geometry_ok = kcache__get_u32(h + 20) == KCACHE__WAYS && lg >= 4 && lg <= 24 &&
                       size == KCACHE__ACCT_HEADER + ((uint64_t)KCACHE__WAYS << lg) * KCACHE__SLOT;
    out->checksum_ok = kcache__get_u64(h + KCACHE__ACCT_SUMMED) == kcache__acct_sum(h);
    out->valid = kcache__acct_valid(h, size);
    out->bytes = kcache__get_u64(h + 24);
    out->entries = kcache__get_u64(h + 32);
    out->generation = kcache__get_u64(h + 40);
    out->busy = kcache__get_u32(h + 48);
    out->limit = kcache__get_u64(h + 56);
    out->evictions = kcache__get_u64(h + 64);
    out->created = (int64_t)kcache__get_u64(h + 72);
    out->use_slots = kcache__reader_slots(size);
    out->sound = out->checksum_ok && out->busy == 0;
    if (!out->magic_ok) return KCACHE_ECORRUPT;
    for (i = 0; evictions && n && i < KCACHE__EVLOG_SLOTS; i++) {
        const unsigned char *e = h + KCACHE__EVLOG_AT + i * 32;
        kcache_eviction *v = &evictions[*n];
        v->digest.lo = kcache__get_u64(e);
        v->digest.hi = kcache__get_u64(e + 8);
        v->when = (int64_t)kcache__get_u64(e + 16);
        v->size = kcache__get_u64(e + 24);
        if (v->digest.lo || v->digest.hi) (*n)++;
    }
    return KCACHE_OK;
}

/* config.file's header page into h (KCACHE__ACCT_HEADER bytes), decoded. */
static kcache_status kcache__reader_cf_header(kcache_reader *r, unsigned char *h, kcache_accounting *out, kcache_eviction *ev, unsigned *n) {
    uint64_t size = 0;
    ptrdiff_t got = 0;
    int fd;
    kcache_status s = kcache__reader_cf(r, &fd, &size);
    memset(out, 0, sizeof *out);
    if (s != KCACHE_OK) return s;
    if (size >= KCACHE__ACCT_HEADER) got = kcache__io_pread(fd, h, KCACHE__ACCT_HEADER, 0);
    kcache__io_close(fd);
    return kcache_accounting_decode(h, got > 0 ? (size_t)got : 0, size, out, ev, n);
}

/* The header's 4 KiB are read into the heap: no call takes more than 4 KiB of stack. */
KCACHE_API kcache_status kcache_read_accounting(kcache_reader *r, kcache_accounting *out) {
    unsigned char *h;
    kcache_status s;
    if (!r || !out) return KCACHE_EINVAL;
    if ((h = (unsigned char *)KCACHE_MALLOC(KCACHE__ACCT_HEADER)) == NULL) return KCACHE_ENOMEM;
    s = kcache__reader_cf_header(r, h, out, NULL, NULL);
    KCACHE_FREE(h);
    return s;
}

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert((int)KCACHE_EVICTION_LOG == (int)KCACHE__EVLOG_SLOTS, "kcache: the eviction log's slots");
#else
typedef char kcache__evlog_public[(int)KCACHE_EVICTION_LOG == (int)KCACHE__EVLOG_SLOTS ? 1 : -1];
#endif
KCACHE_API kcache_status kcache_read_evictions(kcache_reader *r, kcache_eviction out[KCACHE_EVICTION_LOG], unsigned *n) {
    unsigned char *h;
    kcache_accounting a;
    kcache_status s;
    if (n) *n = 0;
    if (!r || !out || !n) return KCACHE_EINVAL;
    if ((h = (unsigned char *)KCACHE_MALLOC(KCACHE__ACCT_HEADER)) == NULL) return KCACHE_ENOMEM;
    s = kcache__reader_cf_header(r, h, &a, out, n);
    KCACHE_FREE(h);
    return s;
}

/* Reads count slots of the use table from slot first into buf: its rows, or 0 (*st says why). */
static kcache_status kcache__reader_slots_read(kcache_reader *r, uint64_t first, uint64_t count, unsigned char *buf, uint64_t *slots) {
    uint64_t size = 0;
    int fd;
    kcache_status s = kcache__reader_cf(r, &fd, &size);
    if (s != KCACHE_OK) return s;
    *slots = kcache__reader_slots(size);
    if (!*slots || first >= *slots || count > *slots - first) s = KCACHE_ECORRUPT;
    else if (count && kcache__io_pread(fd, buf, (size_t)count * KCACHE__SLOT, KCACHE__ACCT_HEADER + first * KCACHE__SLOT) != (ptrdiff_t)(count * KCACHE__SLOT))
        s = KCACHE_ECORRUPT;
    kcache__io_close(fd);
    return s;
}
static void kcache__use_row(const unsigned char *s, kcache_use_row *out) {
    out->digest.lo = kcache__get_u64(s);
    out->digest.hi = kcache__get_u64(s + 8);
    out->last_use = (int64_t)kcache__get_u64(s + 16);
    out->size = kcache__get_u64(s + 24);
}

KCACHE_API kcache_status kcache_read_use_table(kcache_reader *r, uint64_t first, unsigned count, kcache_use_row *out, unsigned *n) {
    unsigned char *buf;
    uint64_t slots = 0;
    kcache_status s;
    unsigned i;
    if (n) *n = 0;
    if (!r || !n || (count && !out)) return KCACHE_EINVAL;
    if ((buf = (unsigned char *)KCACHE_MALLOC((size_t)count * KCACHE__SLOT + 1)) == NULL) return KCACHE_ENOMEM;
    if ((s = kcache__reader_slots_read(r, first, count, buf, &slots)) == KCACHE_OK)
        for (i = 0; i < count; i++) {
            kcache__use_row(buf + (size_t)i * KCACHE__SLOT, &out[*n]);
            if (out[*n].digest.lo || out[*n].digest.hi) (*n)++;
        }
    KCACHE_FREE(buf);
    return s;
}

KCACHE_API kcache_status kcache_read_use(kcache_reader *r, kcache_hash128 d, kcache_use_row *out) {
    unsigned char b[KCACHE__WAYS * KCACHE__SLOT];
    uint64_t slots = 0, size = 0;
    kcache_status s;
    int fd, w;
    if (out) memset(out, 0, sizeof *out);
    if (!r || !out) return KCACHE_EINVAL;
    if ((s = kcache__reader_cf(r, &fd, &size)) != KCACHE_OK) return s;
    kcache__io_close(fd);
    if (!(slots = kcache__reader_slots(size))) return KCACHE_ECORRUPT;
    /* the bucket kcache__acct_find looks in */
    if ((s = kcache__reader_slots_read(r, (d.lo & (slots / KCACHE__WAYS - 1)) * KCACHE__WAYS, KCACHE__WAYS, b, &slots)) != KCACHE_OK) return s;
    for (w = 0; w < KCACHE__WAYS; w++) {
        kcache__use_row(b + w * KCACHE__SLOT, out);
        if (out->digest.lo == d.lo && out->digest.hi == d.hi) return KCACHE_OK;
    }
    memset(out, 0, sizeof *out);
    return KCACHE_MISS;
}

KCACHE_API kcache_status kcache_read_last_use(kcache_reader *r, kcache_hash128 d, int64_t *when_ns) {
    unsigned char h[32], s[KCACHE__WAYS * KCACHE__SLOT];
    uint32_t lg;
    uint64_t b, size;
    int fd, w;
    kcache_status st = KCACHE_MISS;
    if (!r || !when_ns) return KCACHE_EINVAL;
    *when_ns = 0;
    if ((st = kcache__reader_cf(r, &fd, &size)) != KCACHE_OK) return st == KCACHE_ENOENT ? KCACHE_ENOENT : KCACHE_ECORRUPT;
    st = KCACHE_MISS;
    if (kcache__io_pread(fd, h, sizeof h, 0) != (ptrdiff_t)sizeof h || memcmp(h, "KCACHECF", 8) != 0 ||
        (lg = kcache__get_u32(h + 16)) < 4 || lg > 24) {
        kcache__io_close(fd);
        return KCACHE_ECORRUPT;
    }
    b = (d.lo & (((uint64_t)1 << lg) - 1)) * KCACHE__WAYS; /* the bucket kcache__acct_find looks in */
    if (kcache__io_pread(fd, s, sizeof s, KCACHE__ACCT_HEADER + b * KCACHE__SLOT) == (ptrdiff_t)sizeof s)
        for (w = 0; w < KCACHE__WAYS; w++)
            if (kcache__get_u64(s + w * KCACHE__SLOT) == d.lo && kcache__get_u64(s + w * KCACHE__SLOT + 8) == d.hi) {
                *when_ns = (int64_t)kcache__get_u64(s + w * KCACHE__SLOT + 16);
                st = KCACHE_OK;
            }
    kcache__io_close(fd);
    return st;
}

KCACHE_API kcache_status kcache_entry_path(kcache_hash128 digest, char *out, size_t cap) {
    char rel[48];
    if (!out || cap < sizeof rel - 2) return KCACHE_EINVAL;
    kcache__entry_name(digest, rel);
    if (strlen(rel) >= cap) return KCACHE_ETOOBIG;
    memcpy(out, rel, strlen(rel) + 1);
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_entry_stat(kcache_reader *r, kcache_hash128 digest, uint64_t *size) {
    char rel[48];
    kcache__finfo fi;
    if (size) *size = 0;
    if (!r) return KCACHE_EINVAL;
    kcache__entry_name(digest, rel);
    if (kcache__io_statat(r->st.dirfd, rel, &fi) != 0) return errno == ENOENT || errno == ENOTDIR ? KCACHE_ENOENT : KCACHE_EIO;
    if (fi.kind != KCACHE__KIND_FILE) return KCACHE_EUNSAFE;
    if (size) *size = fi.size;
    return KCACHE_OK;
}

KCACHE_API int kcache_reader_is_store(kcache_reader *r) {
    kcache__finfo fi;
    if (!r) return 0;
    return kcache__io_statat(r->st.dirfd, "config.file", &fi) == 0 || kcache__is_dir_nofollow(r->st.dirfd, "e") ||
           kcache__is_dir_nofollow(r->st.dirfd, "i");
}

/* ---- entry files ---- */

/* Notes the first thing wrong with an entry (later ones are consequences, or less telling). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void kcache__entry_problem(kcache_entry_info *e, const char *fmt, ...) {
    va_list ap;
    if (e->problem[0]) return;
    va_start(ap, fmt);
    vsnprintf(e->problem, sizeof e->problem, fmt, ap);
    va_end(ap);
}

/* The checks of a lookup (kcache__entry_check_as) one by one, each with its own verdict, so that a
   tool can say which failed; the payload's only when all of it is given. */
KCACHE_API kcache_status kcache_entry_decode(const void *bytes, size_t have, uint64_t file_size, kcache_entry_info *e, kcache_key *key) {
    const unsigned char *h = (const unsigned char *)bytes;
    uint64_t rec_end;
    if (key) kcache_key_init(key, NULL);
    if (!e) return KCACHE_EINVAL;
    memset(e, 0, sizeof *e);
    if (!key || (!h && have)) return KCACHE_EINVAL;
    e->file_size = file_size;
    e->header_sum = e->padding = e->record = e->record_digest = e->payload = e->name_digest = -1;
    if (have > file_size) have = (size_t)file_size;
    if (have < 8 || memcmp(h, "KCENTRY", 8) != 0) {
        kcache__entry_problem(e, "not a kcache entry (no KCENTRY magic)");
        return KCACHE_ECORRUPT;
    }
    if (have < KCACHE__ENTRY_FIXED) {
        kcache__entry_problem(e, "truncated: %lu bytes, shorter than an entry's fixed header (%d)", (unsigned long)have, KCACHE__ENTRY_FIXED);
        return KCACHE_ECORRUPT;
    }
    e->version = kcache__get_u16(h + 8);
    e->flags = kcache__get_u16(h + 10);
    if (e->version != KCACHE__ENTRY_VERSION && !(e->version == KCACHE__ENTRY_VERSION_ZSTD && e->flags == KCACHE__ENTRY_ZSTD)) {
        kcache__entry_problem(e, "entry format version %u; this kcache reads versions %d and %d (zstd payload)", e->version,
                              KCACHE__ENTRY_VERSION, KCACHE__ENTRY_VERSION_ZSTD);
        return KCACHE_ECORRUPT;
    }
    e->header_len = kcache__get_u32(h + 12);
    e->payload_len = kcache__get_u64(h + 16);
    e->digest.lo = kcache__get_u64(h + 24);
    e->digest.hi = kcache__get_u64(h + 32);
    e->payload_sum.lo = kcache__get_u64(h + 40);
    e->payload_sum.hi = kcache__get_u64(h + 48);
    e->created = (int64_t)kcache__get_u64(h + 56);
    e->record_len = kcache__get_u32(h + 64);
    rec_end = (uint64_t)KCACHE__ENTRY_FIXED + e->record_len;
    /* the order of kcache__entry_check_as: lengths, header checksum, padding, key, payload */
    e->lengths_ok = e->header_len % 16 == 0 && e->header_len <= file_size && e->record_len <= e->header_len &&
                    rec_end + 8 + 16 <= e->header_len && e->payload_len == file_size - e->header_len;
    if (!e->lengths_ok) {
        if (e->header_len > file_size)
            kcache__entry_problem(e, "truncated: the header says %u bytes of header, the file has %llu", e->header_len, (unsigned long long)file_size);
        else if (e->header_len % 16 != 0 || e->record_len > e->header_len || rec_end + 8 + 16 > e->header_len)
            kcache__entry_problem(e, "inconsistent lengths (header %u, key record %u bytes)", e->header_len, e->record_len);
        else
            kcache__entry_problem(e, "payload length %llu, but %llu bytes follow the header", (unsigned long long)e->payload_len,
                                  (unsigned long long)(file_size - e->header_len));
    }
    if (rec_end + 8 <= have) {
        e->header_sum = kcache__get_u64(h + rec_end) == kcache_hash(h, (size_t)rec_end).lo;
        if (!e->header_sum) kcache__entry_problem(e, "header checksum fails");
    } else {
        kcache__entry_problem(e, "the key record (%u bytes) runs past the header", e->record_len);
    }
    if (e->header_len <= have && rec_end + 8 <= e->header_len) {
        size_t m;
        e->padding = 1;
        for (m = (size_t)rec_end + 8; m < e->header_len; m++)
            if (h[m] != 0) { e->padding = 0; break; }
        if (!e->padding) kcache__entry_problem(e, "the padding after the key record is not zero");
    }
    if (rec_end <= have) {
        const unsigned char *rec = h + KCACHE__ENTRY_FIXED;
        e->record_sum = kcache_hash(rec, e->record_len);
        kcache_key_free(key);
        e->record = kcache__record_parse(rec, e->record_len, key) == KCACHE_OK;
        if (!e->record) kcache__entry_problem(e, "the key record does not decode");
        else if (kcache__record_match(rec, e->record_len, key, KCACHE_STAMP_HYBRID) != KCACHE__MATCH) {
            /* kcache__record_parse cuts a unit or name at a NUL byte; a lookup compares the whole
               record, so no key can ever match this one */
            e->record = 0;
            kcache__entry_problem(e, "the key record does not match its own decoding (a NUL byte in a name?)");
        } else {
            e->record_digest = key->digest.lo == e->digest.lo && key->digest.hi == e->digest.hi;
            if (!e->record_digest) kcache__entry_problem(e, "the key record's digest is not the header's");
        }
    }
    if (have == file_size && e->lengths_ok) {
        kcache_hash128 sum = kcache_hash(h + e->header_len, (size_t)e->payload_len);
        e->payload = sum.lo == e->payload_sum.lo && sum.hi == e->payload_sum.hi;
        if (!e->payload) kcache__entry_problem(e, "payload checksum fails");
    }
    return KCACHE_OK;
}

/* An entry's file for kcache_entry_read/_unit: in the reader's store (a regular file it trusts),
   or a path the caller named. -1 with the status and e's problem. */
static int kcache__entry_open(kcache_reader *r, const char *path, kcache__finfo *fi, kcache_entry_info *e, kcache_status *st) {
    int fd = r ? kcache__open_in(&r->st, path, KCACHE__RD | KCACHE__NONBLOCK) : kcache__io_open(path, KCACHE__RD | KCACHE__NONBLOCK);
    if (fd < 0) {
        e->error = errno;
        *st = errno == ENOENT || errno == ENOTDIR ? KCACHE_ENOENT : errno == ELOOP ? KCACHE_EUNSAFE : KCACHE_EIO;
        kcache__entry_problem(e, "cannot open: %s", errno == ELOOP ? "a symlink in place of the entry" : strerror(errno));
        return -1;
    }
    if (kcache__io_fstat(fd, fi) != 0) {
        e->error = errno;
        *st = KCACHE_EIO;
        kcache__entry_problem(e, "cannot stat: %s", strerror(errno));
    } else if (fi->kind != KCACHE__KIND_FILE) {
        *st = KCACHE_EUNSAFE;
        kcache__entry_problem(e, "not a regular file");
    } else if (r && !kcache__trusted(&r->st, fi)) {
        *st = KCACHE_EUNSAFE;
        kcache__entry_problem(e, "another user's file (uid %lu): not read", (unsigned long)fi->uid);
    } else {
        return fd;
    }
    kcache__io_close(fd);
    return -1;
}

/* Reads up to n bytes at off: the count read (short at the end of the file), -1 on an error. */
static ptrdiff_t kcache__pread_full(int fd, void *buf, size_t n, uint64_t off) {
    size_t have = 0;
    while (have < n) {
        ptrdiff_t got = kcache__io_pread(fd, (char *)buf + have, n - have, off + have);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return have ? (ptrdiff_t)have : -1;
        if (got == 0) break;
        have += (size_t)got;
    }
    return (ptrdiff_t)have;
}

KCACHE_API kcache_status kcache_entry_read(kcache_reader *r, const char *path, int check_payload, kcache_entry_info *e, kcache_key *key) {
    unsigned char fixed[KCACHE__ENTRY_FIXED], *hbuf = NULL;
    const char *base;
    kcache__finfo fi;
    kcache_status st = KCACHE_OK;
    kcache_hash128 named;
    size_t want;
    ptrdiff_t got;
    uint32_t hlen;
    int fd;
    if (key) kcache_key_init(key, NULL);
    if (!e) return KCACHE_EINVAL;
    memset(e, 0, sizeof *e);
    e->header_sum = e->padding = e->record = e->record_digest = e->payload = e->name_digest = -1;
    if (!path || !path[0] || !key) return KCACHE_EINVAL;
    if ((fd = kcache__entry_open(r, path, &fi, e, &st)) < 0) return st;
    got = kcache__pread_full(fd, fixed, sizeof fixed, 0);
    if (got < 0) {
        e->error = errno;
        kcache__entry_problem(e, "cannot read: %s", strerror(errno));
        kcache__io_close(fd);
        return KCACHE_EIO;
    }
    if (got < (ptrdiff_t)sizeof fixed) {
        kcache__io_close(fd);
        return kcache_entry_decode(fixed, (size_t)got, fi.size, e, key);
    }
    hlen = kcache__get_u32(fixed + 12);
    want = hlen < KCACHE__ENTRY_FIXED ? KCACHE__ENTRY_FIXED : hlen > KCACHE_ENTRY_HEADER_MAX ? KCACHE_ENTRY_HEADER_MAX : hlen;
    if ((uint64_t)want > fi.size) want = (size_t)fi.size;
    if ((hbuf = (unsigned char *)KCACHE_MALLOC(want ? want : 1)) == NULL) {
        kcache__io_close(fd);
        kcache__entry_problem(e, "out of memory");
        return KCACHE_ENOMEM;
    }
    got = kcache__pread_full(fd, hbuf, want, 0);
    if (got < 0) {
        e->error = errno;
        kcache__entry_problem(e, "cannot read: %s", strerror(errno));
        st = KCACHE_EIO;
    } else if ((st = kcache_entry_decode(hbuf, (size_t)got, fi.size, e, key)) == KCACHE_OK) {
        if (hlen > KCACHE_ENTRY_HEADER_MAX) kcache__entry_problem(e, "implausible header length %u", hlen);
        if (check_payload && e->lengths_ok && e->payload < 0) { /* streamed: the payload may be large */
            unsigned char *buf = (unsigned char *)KCACHE_MALLOC(65536);
            kcache_hash_state hs;
            uint64_t done = 0;
            kcache_hash_init(&hs);
            while (buf && done < e->payload_len) {
                size_t n = e->payload_len - done < 65536 ? (size_t)(e->payload_len - done) : 65536;
                ptrdiff_t rd = kcache__pread_full(fd, buf, n, e->header_len + done);
                if (rd <= 0) {
                    e->payload = 0;
                    kcache__entry_problem(e, "the payload cannot be read (%s)", rd < 0 ? strerror(errno) : "short file");
                    break;
                }
                kcache_hash_update(&hs, buf, (size_t)rd);
                done += (uint64_t)rd;
            }
            if (!buf) kcache__entry_problem(e, "out of memory");
            else if (done == e->payload_len) {
                kcache_hash128 sum = kcache_hash_final(&hs);
                e->payload = sum.lo == e->payload_sum.lo && sum.hi == e->payload_sum.hi;
                if (!e->payload) kcache__entry_problem(e, "payload checksum fails");
            }
            KCACHE_FREE(buf);
        }
        base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (kcache__parse_entry_name(base, &named)) {
            e->name_digest = named.lo == e->digest.lo && named.hi == e->digest.hi;
            if (!e->name_digest) kcache__entry_problem(e, "the entry's digest is not its file name's");
        }
    }
    KCACHE_FREE(hbuf);
    kcache__io_close(fd);
    return st;
}

KCACHE_API kcache_status kcache_entry_unit(kcache_reader *r, const char *path, char *unit, size_t cap) {
    unsigned char h[KCACHE__ENTRY_FIXED + 2 + KCACHE_UNIT_MAX];
    kcache_entry_info e;
    kcache__finfo fi;
    kcache_status st = KCACHE_OK;
    ptrdiff_t got;
    size_t ul;
    int fd;
    if (!unit || !cap || !path) return KCACHE_EINVAL;
    unit[0] = 0;
    memset(&e, 0, sizeof e);
    if ((fd = kcache__entry_open(r, path, &fi, &e, &st)) < 0) return st;
    got = kcache__pread_full(fd, h, sizeof h, 0);
    kcache__io_close(fd);
    if (got < KCACHE__ENTRY_FIXED + 2 || memcmp(h, "KCENTRY", 8) != 0) return KCACHE_ECORRUPT;
    ul = kcache__get_u16(h + KCACHE__ENTRY_FIXED); /* the key record starts with the unit (see >>key) */
    if (ul == 0 || ul >= KCACHE_UNIT_MAX || (size_t)got < KCACHE__ENTRY_FIXED + 2 + ul || memchr(h + KCACHE__ENTRY_FIXED + 2, 0, ul)) return KCACHE_ECORRUPT;
    if (ul >= cap) return KCACHE_ETOOBIG;
    memcpy(unit, h + KCACHE__ENTRY_FIXED + 2, ul);
    unit[ul] = 0;
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_entry_load(kcache_reader *r, kcache_hash128 d, kcache_key *key, void **data, size_t *size) {
    char rel[48];
    unsigned char fixed[KCACHE__ENTRY_FIXED];
    kcache__finfo fi;
    kcache__blob *b;
    kcache__read rd;
    const unsigned char *h;
    uint64_t hlen, plen;
    size_t fsize, rlen;
    ptrdiff_t have;
    int fd;
    if (key) kcache_key_init(key, NULL);
    if (data) *data = NULL;
    if (size) *size = 0;
    if (!r || !key || !data || !size) return KCACHE_EINVAL;
    kcache__entry_name(d, rel);
    /* judged by the open file, not by its name: another member of a group's store may have renamed
       her own file over it */
    if ((fd = kcache__open_in(&r->st, rel, KCACHE__RD | KCACHE__NONBLOCK)) < 0)
        return errno == ENOENT || errno == ENOTDIR ? KCACHE_ENOENT : errno == ELOOP ? KCACHE_ECORRUPT : KCACHE_EIO;
    if (kcache__io_fstat(fd, &fi) != 0 || fi.kind != KCACHE__KIND_FILE) {
        kcache__io_close(fd);
        return KCACHE_ECORRUPT;
    }
    if ((fi.uid != r->st.uid && fi.uid != 0) || (fi.perm & 022)) {
        kcache__io_close(fd);
        return KCACHE_EUNSAFE;
    }
    /* the header and the size it says first: a sparse or huge file is not read */
    have = kcache__pread_full(fd, fixed, sizeof fixed, 0);
    hlen = have == (ptrdiff_t)sizeof fixed ? kcache__get_u32(fixed + 12) : 0;
    plen = have == (ptrdiff_t)sizeof fixed ? kcache__get_u64(fixed + 16) : 0;
    if (have != (ptrdiff_t)sizeof fixed || memcmp(fixed, "KCENTRY", 8) != 0 || kcache__get_u64(fixed + 24) != d.lo ||
        kcache__get_u64(fixed + 32) != d.hi || hlen < KCACHE__ENTRY_FIXED + 24 || plen > ((uint64_t)1 << 40) || hlen + plen != fi.size ||
        fi.size > (uint64_t)((size_t)-1 / 2)) {
        kcache__io_close(fd);
        return KCACHE_ECORRUPT;
    }
    fsize = (size_t)fi.size;
    if (!(b = kcache__blob_alloc(&r->st.mem, fsize, 0))) {
        kcache__io_close(fd);
        return KCACHE_ENOMEM;
    }
    have = kcache__pread_full(fd, kcache__blob_bytes(b), fsize, 0);
    kcache__io_close(fd);
    h = kcache__blob_bytes(b);
    rlen = kcache__get_u32(h + 64);
    kcache_key_free(key);
    if (have != (ptrdiff_t)fsize || rlen > fsize - KCACHE__ENTRY_FIXED || kcache__record_parse(h + KCACHE__ENTRY_FIXED, rlen, key) != KCACHE_OK ||
        key->digest.lo != d.lo || key->digest.hi != d.hi) {
        kcache__blob_unref(b);
        return KCACHE_ECORRUPT;
    }
    memset(&rd, 0, sizeof rd);
    kcache__entry_check(b, (size_t)have, fsize, key, KCACHE_STAMP_HYBRID, 0, (uint64_t)1 << 40, &rd); /* takes b */
    kcache__mem_free(rd.mem, rd.rec);
    if (rd.status != KCACHE_OK) return rd.status == KCACHE_ENOENT ? KCACHE_EDISABLED : rd.status == KCACHE_ENOMEM ? KCACHE_ENOMEM : KCACHE_ECORRUPT;
    *data = KCACHE_MALLOC(rd.blob->size ? rd.blob->size : 1);
    if (*data) {
        memcpy(*data, rd.blob->data, rd.blob->size);
        *size = rd.blob->size;
    }
    kcache__blob_unref(rd.blob);
    return *data ? KCACHE_OK : KCACHE_ENOMEM;
}

/* ---- walking the entry files ---- */
struct kcache_entry_walk {
    kcache_reader *r;
    int shard;            /* the next e/XX to list */
    kcache__dir *dir;     /* the one being listed */
    int dirfd;
};

KCACHE_API kcache_status kcache_entry_walk_open(kcache_reader *r, kcache_entry_walk **out) {
    kcache_entry_walk *w;
    if (out) *out = NULL;
    if (!r || !out) return KCACHE_EINVAL;
    if ((w = (kcache_entry_walk *)KCACHE_MALLOC(sizeof *w)) == NULL) return KCACHE_ENOMEM;
    memset(w, 0, sizeof *w);
    w->r = r;
    w->dirfd = -1;
    *out = w;
    return KCACHE_OK;
}

static void kcache__entry_walk_shard_close(kcache_entry_walk *w) {
    if (w->dir) kcache__io_dir_close(w->dir);
    if (w->dirfd >= 0) kcache__io_close(w->dirfd);
    w->dir = NULL;
    w->dirfd = -1;
}

KCACHE_API kcache_status kcache_entry_walk_next(kcache_entry_walk *w, kcache_entry_file *out) {
    if (!w || !out) return KCACHE_EINVAL;
    for (;;) {
        const char *n;
        kcache__finfo fi;
        memset(out, 0, sizeof *out);
        if (!w->dir) {
            char rel[8];
            if (w->shard >= 256) return KCACHE_MISS;
            snprintf(rel, sizeof rel, "e/%02x", w->shard++);
            if ((w->dirfd = kcache__open_in(&w->r->st, rel, KCACHE__RD | KCACHE__DIRECTORY)) < 0) continue;
            if ((w->dir = kcache__io_dir_open(&w->r->st.mem, w->dirfd, ".")) == NULL) { kcache__entry_walk_shard_close(w); continue; }
        }
        if ((n = kcache__io_dir_next(w->dir)) == NULL) { kcache__entry_walk_shard_close(w); continue; }
        if (n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2]))) continue;
        if (kcache__io_statat(w->dirfd, n, &fi) != 0) continue; /* (gone since it was listed) */
        out->kind = fi.kind == KCACHE__KIND_FILE ? KCACHE_KIND_FILE : fi.kind == KCACHE__KIND_DIR ? KCACHE_KIND_DIR : KCACHE_KIND_OTHER;
        out->size = fi.size;
        out->uid = fi.uid;
        out->mode = fi.perm;
        out->named = kcache__parse_entry_name(n, &out->digest);
        if (out->named) {
            char want[48];
            kcache__entry_name(out->digest, want); /* "e/XX/<digest>.kce": XX is where it belongs */
            out->other_shard = (unsigned)(kcache__hexval((unsigned char)want[2]) * 16 + kcache__hexval((unsigned char)want[3])) != (unsigned)(w->shard - 1);
        }
        if (strlen(n) + 6 < sizeof out->path) snprintf(out->path, sizeof out->path, "e/%02x/%s", w->shard - 1, n);
        return KCACHE_OK;
    }
}

KCACHE_API void kcache_entry_walk_close(kcache_entry_walk *w) {
    if (!w) return;
    kcache__entry_walk_shard_close(w);
    KCACHE_FREE(w);
}

/* ---- temp files ---- */
KCACHE_API kcache_status kcache_read_temp_files(kcache_reader *r, kcache_temp_files *out) {
    kcache__dir *dp;
    const char *name;
    int fd;
    int64_t now = kcache__now_ns();
    if (out) memset(out, 0, sizeof *out);
    if (!r || !out) return KCACHE_EINVAL;
    if ((dp = kcache__io_dir_open(&r->st.mem, r->st.dirfd, "tmp")) == NULL) return errno == ENOENT ? KCACHE_ENOENT : KCACHE_EIO;
    fd = kcache__os_dir_fd(dp);
    while ((name = kcache__io_dir_next(dp)) != NULL) {
        kcache__finfo s;
        unsigned long pid;
        if (name[0] == '.' || kcache__io_statat(fd, name, &s) != 0) continue;
        out->files++;
        out->bytes += s.size;
        /* what kcache__store_sweep_temps removes: kcache's own, of a writer gone or a day old */
        if (kcache__temp_name(name, &pid) && s.kind == KCACHE__KIND_FILE && kcache__trusted(&r->st, &s) &&
            ((pid > 0 && kcache__os_pid_gone((uint32_t)pid)) || s.mtime_ns < now - (int64_t)86400 * 1000000000)) {
            out->orphaned++;
            out->orphaned_bytes += s.size;
        } else {
            out->in_progress++;
        }
    }
    kcache__io_dir_close(dp);
    return KCACHE_OK;
}

/* ---- records and stamps ---- */
KCACHE_API kcache_status kcache_record_decode(const void *record, size_t len, kcache_key *k) {
    if (!k) return KCACHE_EINVAL;
    if (!record) {
        kcache_key_init(k, NULL);
        return KCACHE_ECORRUPT;
    }
    return kcache__record_parse((const unsigned char *)record, len, k);
}
KCACHE_API const kcache_key_field *kcache_key_field_at(const kcache_key *k, uint32_t i) {
    return k && i < k->count ? &kcache__key_fields(k)[i] : NULL;
}

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert((int)KCACHE_STAMP_DIFF_MTIME == (int)KCACHE__STAMP_MTIME && (int)KCACHE_STAMP_DIFF_SIZE == (int)KCACHE__STAMP_SIZE &&
                  (int)KCACHE_STAMP_DIFF_CONTENT == (int)KCACHE__STAMP_CONTENT, "kcache: stamp bits");
#else
typedef char kcache__stamp_bits_public[((int)KCACHE_STAMP_DIFF_MTIME == (int)KCACHE__STAMP_MTIME && (int)KCACHE_STAMP_DIFF_SIZE == (int)KCACHE__STAMP_SIZE &&
                                        (int)KCACHE_STAMP_DIFF_CONTENT == (int)KCACHE__STAMP_CONTENT) ? 1 : -1];
#endif
KCACHE_API int kcache_stamp_compare(const kcache_key_field *stored, const kcache_key_field *now) {
    if (!stored || !now) return KCACHE_STAMP_DIFF_MTIME | KCACHE_STAMP_DIFF_SIZE | KCACHE_STAMP_DIFF_CONTENT;
    return kcache__stamp_diff(stored, now);
}
KCACHE_API int kcache_stamp_stale(int diff, int policy) { return kcache__stamp_stale(diff, policy); }

KCACHE_API int kcache_record_compare(const void *record, size_t len, const kcache_key *k, kcache_key *decoded) {
    if (!decoded) return -1;
    if (!record || !k) {
        kcache_key_init(decoded, NULL);
        return -1;
    }
    return kcache__equal_fields((const unsigned char *)record, len, k, decoded); /* (frees decoded when it fails) */
}

/* kcache__sb over a caller's buffer: what explain writes, the length it needed returned. */
static kcache__sb kcache__sb_over(char *buf, size_t cap) {
    kcache__sb b;
    b.p = buf;
    b.cap = buf ? cap : 0;
    b.len = 0;
    b.mem = NULL;
    if (buf && cap) buf[0] = 0;
    return b;
}
KCACHE_API size_t kcache_key_diff_text(const kcache_key *stored, const kcache_key *now, char *buf, size_t cap) {
    kcache__sb b = kcache__sb_over(buf, cap);
    if (stored && now) kcache__sb_diff(&b, stored, now);
    return b.len;
}
KCACHE_API size_t kcache_key_stamps_text(const kcache_key *stored, const kcache_key *now, int policy, char *buf, size_t cap) {
    kcache__sb b = kcache__sb_over(buf, cap);
    if (stored && now) kcache__sb_stamps(&b, stored, now, policy);
    return b.len;
}

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert((int)KCACHE_PREVIEW_BYTES == (int)KCACHE__PREVIEW_BYTES && KCACHE_INDEX_MAX == KCACHE__IX_MAX, "kcache: preview and index sizes");
#else
typedef char kcache__preview_public[(int)KCACHE_PREVIEW_BYTES == (int)KCACHE__PREVIEW_BYTES && KCACHE_INDEX_MAX == KCACHE__IX_MAX ? 1 : -1];
#endif
/* (the form kcache__preview writes for a value it does not keep as text) */
KCACHE_API int kcache_preview_is_digest(const kcache_key_field *f) {
    const char *p;
    if (!f || f->type != KCACHE_FIELD_BYTES || f->preview[0] != '<') return 0;
    p = f->preview + 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return strncmp(p, " bytes xxh128:", 14) == 0;
}

/* ---- a dependency now ---- */
#define KCACHE__DEP_BUF 65536
KCACHE_API kcache_status kcache_dep_now(const kcache_key_field *stored, const char *path, uint32_t owner_uid, uint64_t max_read,
                                        kcache_dep *out) {
    kcache__finfo fi;
    int fd;
    if (out) memset(out, 0, sizeof *out);
    if (!stored || !path || !path[0] || !out) return KCACHE_EINVAL;
#if !defined(_WIN32)
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
#else
    fd = kcache__io_open(path, KCACHE__RD | KCACHE__NONBLOCK); /* (no symlinks, FIFOs or uids to guard against) */
#endif
    if (fd < 0) {
        out->error = errno;
        out->state = errno == ELOOP ? KCACHE_DEP_SYMLINK : errno == ENOENT || errno == ENOTDIR ? KCACHE_DEP_MISSING : KCACHE_DEP_ERROR;
        return KCACHE_OK;
    }
    if (kcache__io_fstat(fd, &fi) != 0) {
        out->error = errno;
        out->state = KCACHE_DEP_ERROR;
    } else if (fi.kind != KCACHE__KIND_FILE) {
        out->state = KCACHE_DEP_NOT_REGULAR;
    } else if (fi.uid != owner_uid && fi.uid != 0) {
        out->uid = fi.uid;
        out->state = KCACHE_DEP_FOREIGN;
    } else {
        out->uid = fi.uid;
        out->now.type = KCACHE_FIELD_FILE;
        out->now.mtime_ns = fi.mtime_ns;
        out->now.file_size = fi.size;
        out->state = fi.size == stored->file_size ? KCACHE_DEP_READ : KCACHE_DEP_OTHER_SIZE;
    }
    if (out->state == KCACHE_DEP_READ && fi.size <= max_read) { /* streamed: never more than the size stored */
        unsigned char *buf = (unsigned char *)KCACHE_MALLOC(KCACHE__DEP_BUF);
        kcache_hash_state hs;
        uint64_t done = 0;
        kcache_hash_init(&hs);
        while (buf && done < fi.size) {
            size_t want = fi.size - done < KCACHE__DEP_BUF ? (size_t)(fi.size - done) : KCACHE__DEP_BUF;
            ptrdiff_t got = kcache__io_read(fd, buf, want);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            kcache_hash_update(&hs, buf, (size_t)got);
            done += (uint64_t)got;
        }
        if (buf && done == fi.size) out->now.content = kcache_hash_final(&hs); /* (shrunk while read: left zero) */
        KCACHE_FREE(buf);
    }
    kcache__io_close(fd);
    return KCACHE_OK;
}

KCACHE_API const char *kcache_dep_state_text(kcache_dep_state s) {
    switch (s) {
    case KCACHE_DEP_READ: return "read";
    case KCACHE_DEP_OTHER_SIZE: return "another size: not read";
    case KCACHE_DEP_MISSING: return "missing";
    case KCACHE_DEP_SYMLINK: return "a symlink: not followed";
    case KCACHE_DEP_NOT_REGULAR: return "not a regular file: not read";
    case KCACHE_DEP_FOREIGN: return "another user's: not read";
    case KCACHE_DEP_ERROR: return "cannot be opened";
    }
    return "unknown";
}

/* ---- index logs ---- */
struct kcache_index {
    kcache__ix ix;
    kcache_index_item *items[KCACHE__IX_LISTS];
    kcache__ix_tally tally;   /* kcache_index_decode's */
};

KCACHE_API kcache_status kcache_index_path(const char *unit, char *out, size_t cap) {
    char rel[48];
    if (!unit || !out || cap < sizeof rel - 2) return KCACHE_EINVAL;
    kcache__ix_name(unit, rel);
    if (strlen(rel) >= cap) return KCACHE_ETOOBIG;
    memcpy(out, rel, strlen(rel) + 1);
    return KCACHE_OK;
}

KCACHE_API uint32_t kcache_index_count(const kcache_index *x, kcache_index_list list) {
    return x && (unsigned)list < (unsigned)KCACHE_INDEX_LISTS ? x->ix.n[list] : 0;
}
KCACHE_API const kcache_index_item *kcache_index_at(const kcache_index *x, kcache_index_list list, uint32_t i) {
    return i < kcache_index_count(x, list) ? &x->items[list][i] : NULL;
}
KCACHE_API void kcache_index_size(const kcache_index *x, size_t *records, size_t *bytes) {
    if (records) *records = x ? x->ix.records : 0;
    if (bytes) *bytes = x ? x->ix.file_len : 0;
}
KCACHE_API void kcache_index_log_info(const kcache_index *x, kcache_index_log *out) {
    int k;
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!x || !x->ix.file || x->ix.file_len < 26) return;
    out->unit = (const char *)x->ix.file + 26; /* (the header: see >>index) */
    out->unit_len = kcache__get_u16(x->ix.file + 24);
    out->rewritten_at = x->ix.compacted_len;
    out->bytes = x->ix.file_len;
    out->records = x->ix.records;
    for (k = 0; k < 4; k++) out->by_kind[k] = x->tally.by_kind[k];
    out->damaged_bytes = x->tally.damaged_bytes;
    out->damaged_places = x->tally.damaged_places;
    for (k = 0; k < KCACHE__IX_LISTS; k++) out->dropped[k] = x->tally.dropped[k];
}
KCACHE_API void kcache_index_free(kcache_index *x) {
    int l;
    if (!x) return;
    kcache__ix_free(&x->ix);
    for (l = 0; l < KCACHE__IX_LISTS; l++) KCACHE_FREE(x->items[l]);
    KCACHE_FREE(x);
}

#ifndef KCACHE_NO_EXPLAIN
static kcache_status kcache__index_items(kcache_index *x);
KCACHE_API kcache_status kcache_index_read(kcache_reader *r, const char *unit, kcache_index **out) {
    kcache_index *x;
    kcache_status s;
    if (out) *out = NULL;
    if (!r || !unit || !out || !unit[0] || strlen(unit) >= KCACHE_UNIT_MAX) return KCACHE_EINVAL;
    if ((x = (kcache_index *)KCACHE_MALLOC(sizeof *x)) == NULL) return KCACHE_ENOMEM;
    memset(x, 0, sizeof *x);
    if ((s = kcache__ix_read(&r->st, unit, &x->ix)) != KCACHE_OK) {
        KCACHE_FREE(x);
        return s;
    }
    if ((s = kcache__index_items(x)) != KCACHE_OK) return s;
    *out = x;
    return KCACHE_OK;
}

/* The public items of a replayed index (their records point into its file); frees x when it fails. */
static kcache_status kcache__index_items(kcache_index *x) {
    int l;
    uint32_t i;
    for (l = 0; l < KCACHE__IX_LISTS; l++) {
        if (!x->ix.n[l]) continue;
        if ((x->items[l] = (kcache_index_item *)KCACHE_MALLOC(sizeof(kcache_index_item) * x->ix.n[l])) == NULL) {
            kcache_index_free(x);
            return KCACHE_ENOMEM;
        }
        for (i = 0; i < x->ix.n[l]; i++) {
            const kcache__ix_item *it = &x->ix.items[l][i];
            kcache_index_item *o = &x->items[l][i];
            o->digest = it->digest;
            o->when = it->when;
            o->size = it->size;
            o->reason = it->reason < KCACHE_REASON_COUNT ? (kcache_reason)it->reason : KCACHE_REASON_COUNT;
            o->pid = it->pid;
            o->record = it->rec;
            o->record_len = it->rec_len;
        }
    }
    return KCACHE_OK;
}

/* Says why an index is refused, in a few words (why may be NULL). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void kcache__index_why(char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    if (!why || !cap) return;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
}

/* The header of an index held in memory (the checks of kcache__ix_read, whatever unit it names),
   then the log replayed by the library's own kcache__ix_replay; takes file. */
static kcache_status kcache__index_from(unsigned char *file, size_t len, kcache_index **out, char *why, size_t cap) {
    kcache_index *x;
    size_t ulen, hlen;
    unsigned ver;
    if (len < 8 || memcmp(file, "KCINDEX", 8) != 0) { kcache__index_why(why, cap, "not a kcache index (no KCINDEX magic)"); goto bad; }
    if (len < 26) { kcache__index_why(why, cap, "truncated: %lu bytes, shorter than an index header", (unsigned long)len); goto bad; }
    if ((ver = kcache__get_u16(file + 8)) != KCACHE__IX_VERSION) {
        kcache__index_why(why, cap, "index format version %u; this kcache reads version %d", ver, KCACHE__IX_VERSION);
        goto bad;
    }
    ulen = kcache__get_u16(file + 24);
    if (ulen == 0 || ulen >= KCACHE_UNIT_MAX) { kcache__index_why(why, cap, "implausible unit name length %lu", (unsigned long)ulen); goto bad; }
    hlen = 26 + ulen + 8;
    if (len < hlen) { kcache__index_why(why, cap, "truncated: %lu bytes, the header needs %lu", (unsigned long)len, (unsigned long)hlen); goto bad; }
    if (kcache__get_u64(file + hlen - 8) != kcache_hash(file, hlen - 8).lo) { kcache__index_why(why, cap, "index header checksum fails"); goto bad; }
    if ((x = (kcache_index *)KCACHE_MALLOC(sizeof *x)) == NULL) {
        kcache__index_why(why, cap, "out of memory");
        KCACHE_FREE(file);
        return KCACHE_ENOMEM;
    }
    memset(x, 0, sizeof *x);
    x->ix.file = file;
    x->ix.file_len = len;
    x->ix.compacted_len = (size_t)kcache__get_u64(file + 16);
    if (!kcache__ix_replay(&x->ix, hlen, &x->tally)) {
        kcache_index_free(x);
        x = NULL;
    }
    if (!x || kcache__index_items(x) != KCACHE_OK) { /* (which frees x when it fails) */
        kcache__index_why(why, cap, "out of memory");
        return KCACHE_ENOMEM;
    }
    *out = x;
    return KCACHE_OK;
bad:
    KCACHE_FREE(file);
    return KCACHE_ECORRUPT;
}

KCACHE_API kcache_status kcache_index_decode(const void *buf, size_t len, kcache_index **out, char *why, size_t cap) {
    unsigned char *copy;
    if (why && cap) why[0] = 0;
    if (out) *out = NULL;
    if (!out || (!buf && len)) return KCACHE_EINVAL;
    if (len > KCACHE__IX_MAX) {
        kcache__index_why(why, cap, "%lu bytes: larger than any index kcache reads (%lu MiB)", (unsigned long)len, (unsigned long)(KCACHE__IX_MAX >> 20));
        return KCACHE_ETOOBIG;
    }
    if ((copy = (unsigned char *)KCACHE_MALLOC(len ? len : 1)) == NULL) { kcache__index_why(why, cap, "out of memory"); return KCACHE_ENOMEM; }
    if (len) memcpy(copy, buf, len);
    return kcache__index_from(copy, len, out, why, cap);
}

KCACHE_API kcache_status kcache_index_load(kcache_reader *r, const char *path, kcache_index **out, char *why, size_t cap) {
    kcache__finfo fi;
    unsigned char *file;
    size_t have = 0;
    int fd;
    if (why && cap) why[0] = 0;
    if (out) *out = NULL;
    if (!out || !path || !path[0]) return KCACHE_EINVAL;
    fd = r ? kcache__open_in(&r->st, path, KCACHE__RD | KCACHE__NONBLOCK) : kcache__io_open(path, KCACHE__RD | KCACHE__NONBLOCK);
    if (fd < 0) {
        kcache__index_why(why, cap, "cannot open: %s", strerror(errno));
        return errno == ENOENT || errno == ENOTDIR ? KCACHE_ENOENT : errno == ELOOP ? KCACHE_EUNSAFE : KCACHE_EIO;
    }
    if (kcache__io_fstat(fd, &fi) != 0) {
        kcache__index_why(why, cap, "cannot stat: %s", strerror(errno));
        kcache__io_close(fd);
        return KCACHE_EIO;
    }
    if (fi.kind != KCACHE__KIND_FILE || (r && !kcache__trusted(&r->st, &fi))) {
        kcache__index_why(why, cap, fi.kind != KCACHE__KIND_FILE ? "not a regular file" : "another user's file: not read");
        kcache__io_close(fd);
        return KCACHE_EUNSAFE;
    }
    if (fi.size > KCACHE__IX_MAX) {
        kcache__index_why(why, cap, "%llu bytes: larger than any index kcache reads (%lu MiB)", (unsigned long long)fi.size, (unsigned long)(KCACHE__IX_MAX >> 20));
        kcache__io_close(fd);
        return KCACHE_ETOOBIG;
    }
    if ((file = (unsigned char *)KCACHE_MALLOC(fi.size ? (size_t)fi.size : 1)) == NULL) {
        kcache__index_why(why, cap, "out of memory");
        kcache__io_close(fd);
        return KCACHE_ENOMEM;
    }
    while (have < (size_t)fi.size) {
        ptrdiff_t n = kcache__io_pread(fd, file + have, (size_t)fi.size - have, (uint64_t)have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            kcache__index_why(why, cap, "cannot read: %s", strerror(errno));
            kcache__io_close(fd);
            KCACHE_FREE(file);
            return KCACHE_EIO;
        }
        if (n == 0) break;
        have += (size_t)n;
    }
    kcache__io_close(fd);
    return kcache__index_from(file, have, out, why, cap);
}

/* The explanation kcache_explain gave for a traced miss, from what the index holds: a field miss
   against the overloads stored before it (what was there then; the key itself may have been
   stored since), a stamp miss against the overload that left, an eviction with its time. */
KCACHE_API size_t kcache_index_explain(const kcache_index *x, uint32_t missed_i, const char *unit, int policy, char *buf, size_t cap) {
    const kcache__ix *ix;
    const kcache__ix_item *m;
    kcache__sb b;
    kcache_key *now, *best, *cand;
    uint32_t i;
    b.p = buf;
    b.cap = buf ? cap : 0;
    b.len = 0;
    b.mem = NULL;
    if (buf && cap) buf[0] = 0;
    if (!x || !unit || missed_i >= x->ix.n[KCACHE__IX_MISSED]) return 0;
    ix = &x->ix;
    m = &ix->items[KCACHE__IX_MISSED][missed_i];
    now = kcache__key_alloc(NULL);
    best = kcache__key_alloc(NULL);
    cand = kcache__key_alloc(NULL);
    if (!now || !best || !cand || kcache__record_parse(m->rec, m->rec_len, now) != KCACHE_OK) {
        kcache__sb_add(&b, "miss: %s", kcache_reason_text((kcache_reason)m->reason));
        goto done;
    }
    switch (m->reason) {
    case KCACHE_REASON_FIELD: {
        int best_eq = -1, pass;
        uint32_t seen = 0;
        for (pass = 0; pass < 2 && best_eq < 0; pass++)
            for (i = 0; i < ix->n[KCACHE__IX_LIVE]; i++) {
                const kcache__ix_item *it = &ix->items[KCACHE__IX_LIVE][i];
                int eq;
                if (kcache__same(it->digest, m->digest) || (pass == 0 && it->when > m->when)) continue;
                eq = kcache__equal_fields(it->rec, it->rec_len, now, cand);
                seen++;
                if (eq >= 0) kcache__keep_closest(best, &best_eq, cand, eq);
            }
        kcache__sb_add(&b, "miss: %s: closest of %u stored overload(s) of unit \"%s\": ", kcache_reason_text(KCACHE_REASON_FIELD), seen, unit);
        if (best_eq >= 0) kcache__sb_diff(&b, best, now);
        else kcache__sb_add(&b, "(none stored now)");
        if (kcache__ix_find(ix, KCACHE__IX_LIVE, m->digest) >= 0) kcache__sb_add(&b, " (stored since)");
        break;
    }
    case KCACHE_REASON_STAMP: {
        const kcache__ix_item *g = NULL;
        for (i = 0; i < ix->n[KCACHE__IX_GONE]; i++)
            if (kcache__same(ix->items[KCACHE__IX_GONE][i].digest, m->digest)) g = &ix->items[KCACHE__IX_GONE][i];
        kcache__sb_add(&b, "miss: %s", kcache_reason_text(KCACHE_REASON_STAMP));
        if (g && kcache__record_parse(g->rec, g->rec_len, best) == KCACHE_OK) {
            kcache__sb_add(&b, ": ");
            kcache__sb_stamps(&b, best, now, policy);
        }
        break;
    }
    case KCACHE_REASON_EVICTED:
        kcache__sb_add(&b, "miss: %s", kcache_reason_text(KCACHE_REASON_EVICTED));
        for (i = 0; i < ix->n[KCACHE__IX_GONE]; i++)
            if (ix->items[KCACHE__IX_GONE][i].digest.lo == m->digest.lo && ix->items[KCACHE__IX_GONE][i].when) {
                kcache__sb_add(&b, ": removed at ");
                kcache__sb_time(&b, ix->items[KCACHE__IX_GONE][i].when);
                break;
            }
        break;
    case KCACHE_REASON_COLD: kcache__sb_add(&b, "miss: cold: unit \"%s\" never stored", unit); break;
    default: kcache__sb_add(&b, "miss: %s", kcache_reason_text((kcache_reason)m->reason)); break;
    }
done:
    kcache__key_drop(NULL, now); /* (best and cand: freed, or moved into best, by kcache__keep_closest) */
    kcache__key_drop(NULL, best);
    kcache__key_drop(NULL, cand);
    return b.len;
}
#else
KCACHE_API kcache_status kcache_index_read(kcache_reader *r, const char *unit, kcache_index **out) {
    (void)r; (void)unit;
    if (out) *out = NULL;
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_index_decode(const void *buf, size_t len, kcache_index **out, char *why, size_t cap) {
    (void)buf; (void)len;
    if (out) *out = NULL;
    if (why && cap) why[0] = 0;
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_index_load(kcache_reader *r, const char *path, kcache_index **out, char *why, size_t cap) {
    (void)r; (void)path;
    if (out) *out = NULL;
    if (why && cap) why[0] = 0;
    return KCACHE_EDISABLED;
}
KCACHE_API size_t kcache_index_explain(const kcache_index *x, uint32_t missed_i, const char *unit, int policy, char *buf, size_t cap) {
    (void)x; (void)missed_i; (void)unit; (void)policy;
    if (buf && cap) buf[0] = 0;
    return 0;
}
#endif /* KCACHE_NO_EXPLAIN */

/* ---- walking the index files ---- */
struct kcache_index_walk {
    kcache_reader *r;
    int shard;            /* the next i/XX to list */
    kcache__dir *dir;     /* the one being listed */
    int dirfd;            /* its descriptor (dir lists it) */
    char name[40];        /* the current file's name in it */
};

KCACHE_API kcache_status kcache_index_walk_open(kcache_reader *r, kcache_index_walk **out) {
    kcache_index_walk *w;
    if (out) *out = NULL;
    if (!r || !out) return KCACHE_EINVAL;
    if ((w = (kcache_index_walk *)KCACHE_MALLOC(sizeof *w)) == NULL) return KCACHE_ENOMEM;
    memset(w, 0, sizeof *w);
    w->r = r;
    w->dirfd = -1;
    *out = w;
    return KCACHE_OK;
}

static void kcache__walk_shard_close(kcache_index_walk *w) {
    if (w->dir) kcache__io_dir_close(w->dir);
    if (w->dirfd >= 0) kcache__io_close(w->dirfd);
    w->dir = NULL;
    w->dirfd = -1;
}

KCACHE_API kcache_status kcache_index_walk_next(kcache_index_walk *w, kcache_index_file *out) {
    if (!w || !out) return KCACHE_EINVAL;
    memset(out, 0, sizeof *out);
    for (;;) {
        const char *n;
        kcache__finfo fi;
        uint64_t lo = 0;
        int k, bad = 0;
        if (!w->dir) {
            char rel[8];
            if (w->shard >= 256) return KCACHE_MISS;
            snprintf(rel, sizeof rel, "i/%02x", w->shard++);
            if ((w->dirfd = kcache__open_in(&w->r->st, rel, KCACHE__RD | KCACHE__DIRECTORY)) < 0) continue;
            if ((w->dir = kcache__io_dir_open(&w->r->st.mem, w->dirfd, ".")) == NULL) { kcache__walk_shard_close(w); continue; }
        }
        if ((n = kcache__io_dir_next(w->dir)) == NULL) { kcache__walk_shard_close(w); continue; }
        if (strlen(n) != 36 || strcmp(n + 32, ".kci") != 0) continue;
        for (k = 0; k < 32; k++) { /* "<hi 16 hex><lo 16 hex>.kci", as kcache__entry_name writes it */
            int v = kcache__hexval((unsigned char)n[k]);
            if (v < 0) bad = 1;
            else if (k >= 16) lo = (lo << 4) | (uint64_t)v;
        }
        if (bad || kcache__io_statat(w->dirfd, n, &fi) != 0 || fi.kind != KCACHE__KIND_FILE) continue;
        memcpy(w->name, n, 37);
        out->name_lo = lo;
        out->name.lo = lo;
        for (k = 0, out->name.hi = 0; k < 16; k++) out->name.hi = (out->name.hi << 4) | (uint64_t)kcache__hexval((unsigned char)n[k]);
        out->other_shard = (unsigned)(kcache__hexval((unsigned char)n[0]) * 16 + kcache__hexval((unsigned char)n[1])) != (unsigned)(w->shard - 1);
        out->ino = fi.ino;
        out->size = fi.size;
        out->mtime_ns = fi.mtime_ns;
        snprintf(out->path, sizeof out->path, "i/%02x/%s", w->shard - 1, n);
        return KCACHE_OK;
    }
}

KCACHE_API kcache_status kcache_index_walk_unit(kcache_index_walk *w, char *unit, size_t cap) {
    unsigned char h[26 + KCACHE_UNIT_MAX];
    ptrdiff_t got;
    size_t ul;
    int fd;
    if (!w || !unit || !cap) return KCACHE_EINVAL;
    unit[0] = 0;
    if (!w->dir || (fd = kcache__io_openat(w->dirfd, w->name, KCACHE__RD | KCACHE__NONBLOCK)) < 0) return KCACHE_ENOENT;
    got = kcache__io_pread(fd, h, sizeof h, 0);
    kcache__io_close(fd);
    if (got < 26 || memcmp(h, "KCINDEX", 8) != 0) return KCACHE_ECORRUPT; /* (the index header: see >>index) */
    ul = kcache__get_u16(h + 24);
    if (ul == 0 || ul >= KCACHE_UNIT_MAX || (size_t)got < 26 + ul || memchr(h + 26, 0, ul)) return KCACHE_ECORRUPT;
    if (ul >= cap) return KCACHE_ETOOBIG;
    memcpy(unit, h + 26, ul);
    unit[ul] = 0;
    return KCACHE_OK;
}

KCACHE_API void kcache_index_walk_close(kcache_index_walk *w) {
    if (!w) return;
    kcache__walk_shard_close(w);
    KCACHE_FREE(w);
}

/* ---- the stats file ---- */
struct kcache_stats_file {
    const unsigned char *map; /* the file mapped read-only, or the caller's image */
    size_t len;
    int mapped;
    uint64_t dev, ino;
    uint64_t domain;          /* where this process's pids mean something (kcache__pub_domain) */
};

KCACHE_API unsigned kcache_stats_file_rows(kcache_stats_table table) {
#ifndef KCACHE_NO_PUB
    return table == KCACHE_STATS_SHARDS || table == KCACHE_STATS_NODES ? KCACHE__PUB_SHARDS : 0;
#else
    (void)table;
    return 0;
#endif
}

#if !defined(KCACHE_NO_PUB) && !defined(_WIN32)
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert((int)KCACHE_CTR_COUNT == (int)KCACHE__PUB_COUNTERS && (int)KCACHE_CTR_HITS_REMOTE == (int)KCACHE__PUB_HITS_REMOTE &&
                  (int)KCACHE_CTR_BREAKER_CLOSES == (int)KCACHE__PUB_REMOTE_CLOSES && (int)KCACHE_CTR_BUILDS_CLAIMED_ELSEWHERE == (int)KCACHE__PUB_BUILDS_CLAIMED && (int)KCACHE_CTR_STORE_ERRORS == (int)KCACHE__PUB_STORE_ERRORS &&
                  (int)KCACHE_CTR_MISSES_BY_REASON == (int)KCACHE__PUB_MISS_REASON && (int)KCACHE_EVENT_HIT_LAYER == (int)KCACHE__PUB_EV_HIT_LAYER &&
                  (int)KCACHE_STATS_SLOTS == (int)KCACHE__PUB_SLOTS && (int)KCACHE_STATS_UNITS == (int)KCACHE__PUB_UNITS &&
                  (int)KCACHE_STATS_EVENTS == (int)KCACHE__PUB_EVENTS && (int)KCACHE_STATS_UNIT_NAME == (int)KCACHE__PUB_UNIT_NAME &&
                  (int)KCACHE_STATS_EVENT_NAME == (int)KCACHE__PUB_EVENT_NAME && (int)KCACHE_STATS_ROW_NAME == (int)KCACHE__PUB_SHARD_URL,
              "kcache: the public stats names are the file's");
#else
typedef char kcache__stats_names_public[((int)KCACHE_CTR_COUNT == (int)KCACHE__PUB_COUNTERS && (int)KCACHE_CTR_HITS_REMOTE == (int)KCACHE__PUB_HITS_REMOTE &&
                                         (int)KCACHE_CTR_BREAKER_CLOSES == (int)KCACHE__PUB_REMOTE_CLOSES && (int)KCACHE_CTR_BUILDS_CLAIMED_ELSEWHERE == (int)KCACHE__PUB_BUILDS_CLAIMED &&
                                         (int)KCACHE_CTR_STORE_ERRORS == (int)KCACHE__PUB_STORE_ERRORS &&
                                         (int)KCACHE_CTR_MISSES_BY_REASON == (int)KCACHE__PUB_MISS_REASON &&
                                         (int)KCACHE_EVENT_HIT_LAYER == (int)KCACHE__PUB_EV_HIT_LAYER && (int)KCACHE_STATS_SLOTS == (int)KCACHE__PUB_SLOTS &&
                                         (int)KCACHE_STATS_UNITS == (int)KCACHE__PUB_UNITS && (int)KCACHE_STATS_EVENTS == (int)KCACHE__PUB_EVENTS &&
                                         (int)KCACHE_STATS_UNIT_NAME == (int)KCACHE__PUB_UNIT_NAME &&
                                         (int)KCACHE_STATS_EVENT_NAME == (int)KCACHE__PUB_EVENT_NAME &&
                                         (int)KCACHE_STATS_ROW_NAME == (int)KCACHE__PUB_SHARD_URL) ? 1 : -1];
#endif

KCACHE_API kcache_status kcache_stats_file_open(kcache_reader *r, kcache_stats_file **out) {
    unsigned char *hdr; /* the header's room on the heap: no call takes more than 4 KiB of stack */
    kcache_stats_file *sf;
    kcache__finfo fi;
    int fd, v = 0, e;
    void *m;
    if (out) *out = NULL;
    if (!r || !out) return KCACHE_EINVAL;
    if (kcache__io_statat(r->st.dirfd, "stats", &fi) != 0) return errno == ENOENT ? KCACHE_ENOENT : KCACHE_EIO;
    if (fi.kind != KCACHE__KIND_FILE || !kcache__trusted(&r->st, &fi)) return KCACHE_EUNSAFE;
    if ((fd = kcache__open_in(&r->st, "stats", KCACHE__RD | KCACHE__NONBLOCK)) < 0) return errno == ENOENT ? KCACHE_ENOENT : KCACHE_EIO;
    if (kcache__io_fstat(fd, &fi) != 0 || fi.kind != KCACHE__KIND_FILE || !kcache__trusted(&r->st, &fi)) {
        kcache__io_close(fd);
        return KCACHE_EUNSAFE;
    }
    if ((hdr = (unsigned char *)KCACHE_MALLOC(KCACHE__PUB_HEADER)) == NULL) {
        kcache__io_close(fd);
        return KCACHE_ENOMEM;
    }
    if (fi.size >= KCACHE__PUB_HEADER && kcache__io_pread(fd, hdr, KCACHE__PUB_HEADER, 0) == (ptrdiff_t)KCACHE__PUB_HEADER) v = kcache__pub_valid(hdr, fi.size);
    KCACHE_FREE(hdr);
    if (v != 1) {
        kcache__io_close(fd);
        return v < 0 ? KCACHE_EINVAL : KCACHE_ECORRUPT;
    }
    m = mmap(NULL, (size_t)fi.size, PROT_READ, MAP_SHARED, fd, 0); /* read-only: a reader never writes it */
    e = errno;
    kcache__io_close(fd);
    if (m == MAP_FAILED) {
        errno = e;
        return e == ENOMEM ? KCACHE_ENOMEM : KCACHE_EIO;
    }
    if ((sf = (kcache_stats_file *)KCACHE_MALLOC(sizeof *sf)) == NULL) {
        munmap(m, (size_t)fi.size);
        return KCACHE_ENOMEM;
    }
    sf->map = (const unsigned char *)m;
    sf->len = (size_t)fi.size;
    sf->mapped = 1;
    sf->dev = fi.dev;
    sf->ino = fi.ino;
    sf->domain = kcache__pub_domain();
    *out = sf;
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_stats_file_from_image(const void *image, size_t len, kcache_stats_file **out) {
    kcache_stats_file *sf;
    int v;
    if (out) *out = NULL;
    if (!image || !out) return KCACHE_EINVAL;
    v = len >= KCACHE__PUB_HEADER ? kcache__pub_valid((const unsigned char *)image, len) : 0;
    if (v != 1) return v < 0 ? KCACHE_EINVAL : KCACHE_ECORRUPT;
    if ((sf = (kcache_stats_file *)KCACHE_MALLOC(sizeof *sf)) == NULL) return KCACHE_ENOMEM;
    memset(sf, 0, sizeof *sf);
    sf->map = (const unsigned char *)image;
    sf->len = len;
    sf->domain = kcache__pub_domain();
    *out = sf;
    return KCACHE_OK;
}

KCACHE_API void kcache_stats_file_close(kcache_stats_file *sf) {
    if (!sf) return;
    if (sf->mapped) munmap((void *)(uintptr_t)sf->map, sf->len);
    KCACHE_FREE(sf);
}

KCACHE_API int kcache_stats_file_replaced(const kcache_stats_file *sf, kcache_reader *r) {
    kcache__finfo fi;
    if (!sf || !sf->mapped) return 0;
    if (!r || kcache__io_statat(r->st.dirfd, "stats", &fi) != 0) return 1;
    return fi.ino != sf->ino || fi.dev != sf->dev;
}

KCACHE_API int64_t kcache_stats_file_created(const kcache_stats_file *sf) {
    return sf ? (int64_t)kcache__get_u64(sf->map + 40) : 0;
}

/* The slots and totals, consistent: the retired counters plus every claimed slot's, read so that
   no fold (a slot's counters moving to the retired ones) happened in between. */
KCACHE_API kcache_status kcache_stats_file_read(const kcache_stats_file *sf, kcache_stats_snapshot *out) {
    uint64_t e1[KCACHE__PUB_SLOTS], ret[KCACHE__PUB_COUNTERS];
    int64_t now = kcache__now_ns();
    int attempt, i, j, c, ok = 0;
    if (!sf || !out) return KCACHE_EINVAL;
    for (attempt = 0; attempt < 50 && !ok; attempt++) {
        if (attempt) kcache__sleep_us(200);
        for (i = 0; i < KCACHE__PUB_SLOTS; i++)
            e1[i] = kcache__pub_ld_acq(kcache__pub_slot_word(kcache__pub_slot_at(sf->map, (unsigned)i), KCACHE__PUB_S_EPOCH));
        kcache__atomic_fence();
        for (c = 0; c < KCACHE__PUB_COUNTERS; c++) ret[c] = kcache__pub_ld(kcache__pub_retired(sf->map) + c);
        kcache__atomic_fence();
        ok = 1;
        for (i = 0; i < KCACHE__PUB_SLOTS; i++) {
            const unsigned char *s = kcache__pub_slot_at(sf->map, (unsigned)i);
            kcache_stats_slot *v = &out->slots[i];
            uint64_t ea, eb;
            int alive;
            v->owner = kcache__pub_ld_acq(kcache__pub_slot_word(s, KCACHE__PUB_S_OWNER));
            ea = kcache__pub_ld_acq(kcache__pub_slot_word(s, KCACHE__PUB_S_EPOCH));
            v->epoch = ea;
            v->domain = kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_DOMAIN));
            v->opened = (int64_t)kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_OPENED));
            v->last = (int64_t)kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_LAST));
            v->events = kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_EVENTS));
            kcache__pub_get_name(kcache__pub_slot_word(s, KCACHE__PUB_S_NAME), 16, v->name, sizeof v->name);
            for (c = 0; c < KCACHE__PUB_COUNTERS; c++) v->counters[c] = kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_CTR_AT / 8) + c);
            kcache__atomic_fence();
            eb = kcache__pub_ld(kcache__pub_slot_word(s, KCACHE__PUB_S_EPOCH));
            v->pid = (uint32_t)(v->owner >> 32);
            v->setting_up = (v->owner & KCACHE__PUB_SETTING_UP) != 0;
            alive = v->owner && kcache__pub_alive(s, sf->domain, now);
            v->state = !v->owner ? KCACHE_SLOT_FREE : !alive ? KCACHE_SLOT_DEAD : v->domain != sf->domain ? KCACHE_SLOT_OTHER_DOMAIN : KCACHE_SLOT_LIVE;
            if (ea != eb || ea != e1[i]) ok = 0;
            else if ((ea & 1) && v->state != KCACHE_SLOT_DEAD) ok = 0; /* being claimed, reset or retired right now */
        }
    }
    out->consistent = ok;
    memcpy(out->totals, ret, sizeof ret);
    out->claimed = out->processes = 0;
    for (i = 0; i < KCACHE__PUB_SLOTS; i++) {
        const kcache_stats_slot *v = &out->slots[i];
        int dup = 0;
        if (!v->owner) continue;
        out->claimed++;
        for (c = 0; c < KCACHE__PUB_COUNTERS; c++) out->totals[c] += v->counters[c];
        if (v->state != KCACHE_SLOT_LIVE && v->state != KCACHE_SLOT_OTHER_DOMAIN) continue;
        for (j = 0; j < i; j++)
            if ((out->slots[j].state == KCACHE_SLOT_LIVE || out->slots[j].state == KCACHE_SLOT_OTHER_DOMAIN) &&
                out->slots[j].owner == v->owner && out->slots[j].domain == v->domain)
                dup = 1;
        if (!dup) out->processes++; /* processes, not slots: a process may hold several caches */
    }
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_stats_file_units(const kcache_stats_file *sf, unsigned slot, kcache_stats_unit out[KCACHE_STATS_UNITS]) {
    const unsigned char *s;
    unsigned j;
    if (!sf || !out || slot >= KCACHE__PUB_SLOTS) return KCACHE_EINVAL;
    s = kcache__pub_slot_at(sf->map, slot);
    for (j = 0; j < KCACHE__PUB_UNITS; j++) {
        const uint64_t *e = kcache__pub_unit_at(s, j);
        kcache_stats_unit *u = &out[j];
        uint64_t info;
        memset(u, 0, sizeof *u);
        u->hash = kcache__pub_ld_acq(e + KCACHE__PUB_U_HASH);
        u->hits_memory = kcache__pub_ld(e + KCACHE__PUB_U_HITS_MEM);
        u->hits_store = kcache__pub_ld(e + KCACHE__PUB_U_HITS_DISK);
        u->misses = kcache__pub_ld(e + KCACHE__PUB_U_MISSES);
        u->puts = kcache__pub_ld(e + KCACHE__PUB_U_PUTS);
        u->bytes_put = kcache__pub_ld(e + KCACHE__PUB_U_BYTES_PUT);
        u->last = (int64_t)kcache__pub_ld(e + KCACHE__PUB_U_LAST);
        info = kcache__pub_ld(e + KCACHE__PUB_U_INFO);
        u->name_len = (uint32_t)((info >> 8) & 0xffff);
        u->last_miss = (info & 0xff) < KCACHE_REASON_COUNT ? (kcache_reason)(info & 0xff) : KCACHE_REASON_COUNT;
        kcache__pub_get_name(e + KCACHE__PUB_U_NAME, KCACHE__PUB_UNIT_NAME, u->name, sizeof u->name);
        kcache__atomic_fence();
        if (kcache__pub_ld(e + KCACHE__PUB_U_HASH) != u->hash) { /* changing right now */
            memset(u, 0, sizeof *u);
            u->changing = 1;
        }
    }
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_stats_file_events(const kcache_stats_file *sf, unsigned slot, uint64_t *seq, kcache_stats_event *out,
                                                  unsigned cap, unsigned *n) {
    const unsigned char *s;
    uint64_t head, q;
    if (n) *n = 0;
    if (!sf || !seq || !n || (cap && !out) || slot >= KCACHE__PUB_SLOTS) return KCACHE_EINVAL;
    s = kcache__pub_slot_at(sf->map, slot);
    head = kcache__pub_ld_acq(kcache__pub_slot_word(s, KCACHE__PUB_S_EVENTS)); /* the ring outlives its owners: its head only grows */
    if (head < *seq) *seq = 0;
    q = head > KCACHE__PUB_EVENTS ? head - KCACHE__PUB_EVENTS + 1 : 1;
    if (q <= *seq) q = *seq + 1;
    for (; q <= head && q != 0 && *n < cap; q++) { /* q wraps to 0 past a head of 2^64-1 (a damaged file) */
        const uint64_t *e = kcache__pub_event_at(s, (unsigned)((q - 1) % KCACHE__PUB_EVENTS));
        kcache_stats_event *ev = &out[*n];
        uint64_t info;
        if (kcache__pub_ld_acq(e + KCACHE__PUB_E_SEQ) != q) continue;
        memset(ev, 0, sizeof *ev);
        ev->seq = q;
        ev->time = (int64_t)kcache__pub_ld(e + KCACHE__PUB_E_TIME);
        ev->unit_hash = kcache__pub_ld(e + KCACHE__PUB_E_UNIT);
        ev->size = kcache__pub_ld(e + KCACHE__PUB_E_SIZE);
        info = kcache__pub_ld(e + KCACHE__PUB_E_INFO);
        ev->pid = (uint32_t)kcache__pub_ld(e + KCACHE__PUB_E_PID);
        kcache__pub_get_name(e + KCACHE__PUB_E_NAME, KCACHE__PUB_EVENT_NAME, ev->unit, sizeof ev->unit);
        kcache__atomic_fence();
        if (kcache__pub_ld(e + KCACHE__PUB_E_SEQ) != q) continue; /* rewritten while read */
        ev->kind = (kcache_event_kind)(info & 0xff);
        ev->reason = (int)((info >> 8) & 0xff);
        ev->name_len = (uint32_t)((info >> 16) & 0xffff);
        ev->count = info >> 32;
        (*n)++;
    }
    *seq = q > head || q == 0 ? head : q - 1;
    return KCACHE_OK;
}

KCACHE_API kcache_status kcache_stats_file_row(const kcache_stats_file *sf, kcache_stats_table table, unsigned i, kcache_stats_row *out) {
    const uint64_t *e;
    unsigned c;
    if (out) memset(out, 0, sizeof *out);
    if (!sf || !out || (table != KCACHE_STATS_SHARDS && table != KCACHE_STATS_NODES) || i >= KCACHE__PUB_SHARDS) return KCACHE_EINVAL;
    e = kcache__pub_shard_at(sf->map, i);
    if ((out->id = kcache__pub_ld_acq(e)) == 0) return KCACHE_OK;
    if ((out->id & 1) != (table == KCACHE_STATS_SHARDS)) { out->id = 0; return KCACHE_OK; } /* the other table's row */
    out->nvalues = 7; /* hits, misses, errors, timeouts, skipped calls; calls made, breaker open since */
    for (c = 0; c < 5; c++) out->value[c] = kcache__pub_ld(e + 1 + c);
    kcache__pub_get_name(e + 6, KCACHE__PUB_SHARD_URL, out->name, sizeof out->name);
    e = kcache__pub_shard_more_at(sf->map, i);
    out->value[5] = kcache__pub_ld(e);
    out->value[6] = kcache__pub_ld(e + 1);
    return KCACHE_OK;
}

#else /* KCACHE_NO_PUB (or Windows): no stats file to read */
KCACHE_API kcache_status kcache_stats_file_open(kcache_reader *r, kcache_stats_file **out) {
    (void)r;
    if (out) *out = NULL;
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_stats_file_from_image(const void *image, size_t len, kcache_stats_file **out) {
    (void)image; (void)len;
    if (out) *out = NULL;
    return KCACHE_EDISABLED;
}
KCACHE_API void kcache_stats_file_close(kcache_stats_file *sf) { (void)sf; }
KCACHE_API int kcache_stats_file_replaced(const kcache_stats_file *sf, kcache_reader *r) { (void)sf; (void)r; return 0; }
KCACHE_API int64_t kcache_stats_file_created(const kcache_stats_file *sf) { (void)sf; return 0; }
KCACHE_API kcache_status kcache_stats_file_read(const kcache_stats_file *sf, kcache_stats_snapshot *out) {
    (void)sf;
    if (out) memset(out, 0, sizeof *out);
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_stats_file_units(const kcache_stats_file *sf, unsigned slot, kcache_stats_unit out[KCACHE_STATS_UNITS]) {
    (void)sf; (void)slot; (void)out;
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_stats_file_events(const kcache_stats_file *sf, unsigned slot, uint64_t *seq, kcache_stats_event *out,
                                                  unsigned cap, unsigned *n) {
    (void)sf; (void)slot; (void)seq; (void)out; (void)cap;
    if (n) *n = 0;
    return KCACHE_EDISABLED;
}
KCACHE_API kcache_status kcache_stats_file_row(const kcache_stats_file *sf, kcache_stats_table table, unsigned i, kcache_stats_row *out) {
    (void)sf; (void)table; (void)i;
    if (out) memset(out, 0, sizeof *out);
    return KCACHE_EDISABLED;
}
#endif /* KCACHE_NO_PUB */

/* ============================================================================================== */
/* >>kit  services for companions and backends                                                    */
/* ============================================================================================== */

KCACHE_API kcache_status kcache_key_copy(kcache_key *dst, const kcache_key *src) {
    const kcache__kfile *kf;
    kcache__kfile **tail;
    if (!dst) return KCACHE_EINVAL;
    KCACHE__CHECK_KEY(NULL, src, "kcache_key_copy", kcache_key_init(dst, NULL));
    if (!kcache__key_usable(src)) return kcache_key_init(dst, NULL); /* (an empty key that failed) */
    memcpy(dst, src, offsetof(kcache_key, inline_fields));
    dst->files = NULL;
    if (src->heap) {
        if ((dst->heap = (kcache_key_field *)KCACHE_MALLOC(sizeof(kcache_key_field) * src->cap)) == NULL) {
            dst->count = 0;
            return kcache__key_fail(dst, KCACHE_ENOMEM);
        }
        memcpy(dst->heap, src->heap, sizeof(kcache_key_field) * src->count);
    } else {
        memcpy(dst->inline_fields, src->inline_fields, sizeof(kcache_key_field) * src->count);
    }
    tail = (kcache__kfile **)&dst->files;
    for (kf = (const kcache__kfile *)src->files; kf; kf = kf->next) {
        size_t n = strlen(kf->path);
        kcache__kfile *c = (kcache__kfile *)KCACHE_MALLOC(sizeof *c + n + 1);
        if (!c) return kcache__key_fail(dst, KCACHE_ENOMEM);
        memcpy(c, kf, sizeof *c);
        c->path = (char *)(c + 1);
        memcpy(c->path, kf->path, n + 1);
        c->next = NULL;
        *tail = c;
        tail = &c->next;
    }
    return dst->error;
}

KCACHE_API kcache_status kcache_key_fail(kcache_key *k, kcache_status s) {
    KCACHE__CHECK_KEY(NULL, k, "kcache_key_fail", KCACHE_EINVAL);
    if (!kcache__key_usable(k)) return KCACHE_EINVAL;
    return s == KCACHE_OK ? KCACHE_OK : kcache__key_fail(k, s);
}

KCACHE_API int kcache_enabled(kcache *kc) {
    KCACHE__CHECK_KC(kc, "kcache_enabled", 0);
    return kc && kc->cfg.enable;
}

/* One companion's state (kcache_companion_state): the block follows the header. */
#define KCACHE__COMPANION_NAME 32
typedef struct kcache__companion {
    struct kcache__companion *next;
    char name[KCACHE__COMPANION_NAME];
    void (*destroy)(void *state);
    void *state;
} kcache__companion;

KCACHE_API kcache_status kcache_companion_state(kcache *kc, const char *name, size_t size, void (*destroy)(void *state),
                                                kcache_state_fn fn, void *arg) {
    kcache__companion *c;
    size_t head = (sizeof(kcache__companion) + 15) & ~(size_t)15; /* the state as aligned as an allocation */
    KCACHE__CHECK_KC(kc, "kcache_companion_state", KCACHE_EINVAL);
    if (!kc || !name || !fn || !size || strlen(name) >= KCACHE__COMPANION_NAME || size > SIZE_MAX - head) return KCACHE_EINVAL;
    if ((kc = kcache__live(kc, 1)) == NULL) return KCACHE_ENOMEM;
    kcache__mutex_lock(&kc->lock);
    for (c = kc->companions; c && strcmp(c->name, name) != 0; c = c->next) {
    }
    if (!c && (c = (kcache__companion *)kcache__mem_alloc(&kc->mem, head + size)) != NULL) {
        memset(c, 0, head + size);
        strcpy(c->name, name);
        c->destroy = destroy;
        c->state = (unsigned char *)c + head;
        c->next = kc->companions;
        kc->companions = c;
    }
    if (c) fn(c->state, arg);
    kcache__mutex_unlock(&kc->lock);
    return c ? KCACHE_OK : KCACHE_ENOMEM;
}

/* At kcache_close: every companion's state, destroyed and freed. */
static void kcache__companions_free(kcache *kc) {
    while (kc->companions) {
        kcache__companion *c = kc->companions;
        kc->companions = c->next;
        if (c->destroy) c->destroy(c->state);
        kcache__mem_free(&kc->mem, c);
    }
}

KCACHE_API void kcache_count_reject(kcache *kc, const kcache_key *k, const char *why) {
    KCACHE__CHECK_KC(kc, "kcache_count_reject", );
    KCACHE__CHECK_KEY(kc, k, "kcache_count_reject", );
    if (!kc || !kcache__key_usable(k) || (kc = kcache__live(kc, 1)) == NULL) return;
    kcache__count_miss_quiet(kc, k, KCACHE_REASON_REJECTED);
    KCACHE__DEBUG(kc, "reject %s: %s", k->unit, why ? why : "");
}

KCACHE_API int64_t kcache_monotonic_ns(void) { return kcache__mono_ns(); }

/* ============================================================================================== */
/* >>opencl  kcache_cl_build: a key per device, binary checks, the in-process program cache       */
/* ============================================================================================== */
#ifdef KCACHE_OPENCL

#define KCACHE__CL_MAGIC "kcclbin1" /* payload: magic, binary size, build ns, reserved, binary */
#define KCACHE__CL_HDR 32
#define KCACHE__CL_LAYER 1          /* the "cl.layer" key field: bump when the key or payload changes */
#define KCACHE__CL_MAX_DEPS 256     /* #included files followed per program */
#define KCACHE__CL_MAX_DEPTH 32     /* include nesting followed */
#define KCACHE__CL_MAX_HEADER (16u << 20)
#define KCACHE__CL_LOGS 64          /* threads whose last build log is kept (oldest replaced first) */
#define KCACHE__CL_PLATFORMS 16     /* platforms whose driver-library stamp is remembered */
#define KCACHE__CL_DRIVER_UUID 0x106B /* CL_DRIVER_UUID_KHR (cl_khr_device_uuid) */
#define KCACHE__CL_UUID_SIZE 16

/* ---- OpenCL error names, for logs ---------------------------------------------------------- */

static const char *kcache__cl_errname(cl_int e) {
    switch (e) {
    case 0: return "CL_SUCCESS";
    case -1: return "CL_DEVICE_NOT_FOUND";
    case -2: return "CL_DEVICE_NOT_AVAILABLE";
    case -3: return "CL_COMPILER_NOT_AVAILABLE";
    case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case -5: return "CL_OUT_OF_RESOURCES";
    case -6: return "CL_OUT_OF_HOST_MEMORY";
    case -11: return "CL_BUILD_PROGRAM_FAILURE";
    case -30: return "CL_INVALID_VALUE";
    case -32: return "CL_INVALID_PLATFORM";
    case -33: return "CL_INVALID_DEVICE";
    case -34: return "CL_INVALID_CONTEXT";
    case -42: return "CL_INVALID_BINARY";
    case -43: return "CL_INVALID_BUILD_OPTIONS";
    case -44: return "CL_INVALID_PROGRAM";
    case -45: return "CL_INVALID_PROGRAM_EXECUTABLE";
    case -59: return "CL_INVALID_OPERATION";
    default: return "an OpenCL error";
    }
}

/* ---- state hung on the kcache: programs built in this process, build logs, driver stamps ---- */

typedef struct kcache__cl_dep { char *path; int64_t mtime_ns; uint64_t size; } kcache__cl_dep;

/* What the sources #include, resolved: the files (absolute) and their stamps when scanned. */
typedef struct kcache__cl_deps {
    kcache__cl_dep *v;
    uint32_t n, cap;
    int any;     /* the sources have #include lines (resolved or not) */
    int failed;  /* out of memory or past a limit: the set is incomplete, so nothing is cached */
} kcache__cl_deps;

/* A program this process built, found again by the hash of what built it. */
typedef struct kcache__cl_prog {
    struct kcache__cl_prog *hnext, *prev, *next;
    kcache_hash128 id;
    cl_context ctx;
    cl_program prog;
    uint32_t ndeps;
    kcache__cl_dep *deps; /* stamps to re-check on each hit (programs with #include lines) */
    char *cwd;            /* for those: the working directory relative includes were resolved from */
    char *unit, *options; /* how it was keyed, for kcache_cl_update: the unit, the options, */
    cl_uint nsrc;         /* and the source strings' lengths (CL_PROGRAM_SOURCE joins them) */
    size_t *lens;
} kcache__cl_prog;

typedef struct kcache__cl_log { pthread_t tid; int used; unsigned age; char *text; size_t len; } kcache__cl_log;

typedef struct kcache__cl_plat { cl_platform_id plat; char *path; int readable; } kcache__cl_plat;

typedef struct kcache__cl_state {
    kcache__cl_prog **buckets;
    uint32_t nbuckets, count;
    kcache__cl_prog lru; /* sentinel: lru.next is the most recently used */
    kcache__cl_log logs[KCACHE__CL_LOGS];
    unsigned nlogs, log_clock;
    kcache__cl_plat plats[KCACHE__CL_PLATFORMS];
    unsigned nplats;
} kcache__cl_state;

static void kcache__cl_deps_free(kcache__cl_dep *v, uint32_t n) {
    uint32_t i;
    for (i = 0; i < n; i++) KCACHE_FREE(v[i].path);
    KCACHE_FREE(v);
}

static void kcache__cl_prog_free(kcache__cl_prog *p) {
    if (!p) return;
    if (p->prog) clReleaseProgram(p->prog);
    kcache__cl_deps_free(p->deps, p->ndeps);
    KCACHE_FREE(p->cwd);
    KCACHE_FREE(p->unit);
    KCACHE_FREE(p->options);
    KCACHE_FREE(p->lens);
    KCACHE_FREE(p);
}

static void kcache__cl_state_free(void *v) {
    kcache__cl_state *st = (kcache__cl_state *)v;
    kcache__cl_prog *p, *next;
    unsigned i;
    if (!st) return;
    for (p = st->lru.next; p && p != &st->lru; p = next) {
        next = p->next;
        kcache__cl_prog_free(p);
    }
    for (i = 0; i < KCACHE__CL_LOGS; i++) KCACHE_FREE(st->logs[i].text);
    for (i = 0; i < st->nplats; i++) KCACHE_FREE(st->plats[i].path);
    KCACHE_FREE(st->buckets);
    KCACHE_FREE(st);
}

/* kc's state, created on first use (lock held). NULL when out of memory. */
static kcache__cl_state *kcache__cl_state_of(kcache *kc) {
    kcache__cl_state *st = (kcache__cl_state *)kc->cl;
    if (st) return st;
    st = (kcache__cl_state *)KCACHE_MALLOC(sizeof *st);
    if (!st) return NULL;
    memset(st, 0, sizeof *st);
    st->nbuckets = 64;
    st->buckets = (kcache__cl_prog **)KCACHE_MALLOC(sizeof(kcache__cl_prog *) * st->nbuckets);
    if (!st->buckets) { KCACHE_FREE(st); return NULL; }
    memset(st->buckets, 0, sizeof(kcache__cl_prog *) * st->nbuckets);
    st->lru.next = st->lru.prev = &st->lru;
    kc->cl = st;
    kc->cl_free = kcache__cl_state_free;
    return st;
}

/* -- the calling thread's last build log (lock held) -- */

static kcache__cl_log *kcache__cl_log_slot(kcache__cl_state *st, int make) {
    pthread_t self = pthread_self();
    unsigned i, oldest = 0;
    for (i = 0; i < KCACHE__CL_LOGS; i++)
        if (st->logs[i].used && pthread_equal(st->logs[i].tid, self)) return &st->logs[i];
    if (!make) return NULL;
    for (i = 0; i < KCACHE__CL_LOGS; i++) {
        if (!st->logs[i].used) { oldest = i; break; }
        if (st->logs[i].age < st->logs[oldest].age) oldest = i;
    }
    if (st->logs[oldest].used) { KCACHE_FREE(st->logs[oldest].text); st->nlogs--; }
    memset(&st->logs[oldest], 0, sizeof st->logs[oldest]);
    st->logs[oldest].tid = self;
    st->logs[oldest].used = 1;
    st->nlogs++;
    return &st->logs[oldest];
}

/* Sets the thread's log to text (taken over; NULL or empty clears it). Lock held. */
static void kcache__cl_log_set_locked(kcache__cl_state *st, char *text, size_t len) {
    kcache__cl_log *l;
    if (!st || (!text && st->nlogs == 0)) { KCACHE_FREE(text); return; }
    l = kcache__cl_log_slot(st, text != NULL && len > 0);
    if (!l) { KCACHE_FREE(text); return; }
    KCACHE_FREE(l->text);
    l->text = NULL;
    l->len = 0;
    if (text && len > 0) {
        l->text = text;
        l->len = len;
        l->age = ++st->log_clock;
    } else {
        KCACHE_FREE(text);
        l->used = 0;
        st->nlogs--;
    }
}

static void kcache__cl_log_set(kcache *kc, char *text, size_t len) {
    if (!kc) { KCACHE_FREE(text); return; }
    kcache__mutex_lock(&kc->lock);
    kcache__cl_log_set_locked(text ? kcache__cl_state_of(kc) : (kcache__cl_state *)kc->cl, text, len);
    kcache__mutex_unlock(&kc->lock);
}

KCACHE_API size_t kcache_cl_build_log(kcache *kc, char *buf, size_t cap) {
    kcache__cl_state *st;
    kcache__cl_log *l;
    size_t n = 0;
    if (buf && cap) buf[0] = 0;
    KCACHE__CHECK_KC(kc, "kcache_cl_build_log", 0);
    if (!kc || (kc = kcache__live(kc, 1)) == NULL) return 0;
    kcache__mutex_lock(&kc->lock);
    st = (kcache__cl_state *)kc->cl;
    l = st && st->nlogs ? kcache__cl_log_slot(st, 0) : NULL;
    if (l && l->text) {
        n = l->len;
        if (buf && cap) {
            size_t c = n < cap - 1 ? n : cap - 1;
            memcpy(buf, l->text, c);
            buf[c] = 0;
        }
    }
    kcache__mutex_unlock(&kc->lock);
    return n;
}

/* -- a growing text (logs) -- */

typedef struct kcache__cl_text { char *p; size_t len, cap; int oom; } kcache__cl_text;

static void kcache__cl_text_add(kcache__cl_text *t, const char *s, size_t n) {
    if (t->oom || n == 0) return;
    if (t->len + n + 1 > t->cap) {
        size_t ncap = t->cap ? t->cap : 256;
        char *np;
        while (ncap < t->len + n + 1) ncap *= 2;
        np = (char *)KCACHE_REALLOC(t->p, ncap);
        if (!np) { t->oom = 1; return; }
        t->p = np;
        t->cap = ncap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = 0;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void kcache__cl_text_fmt(kcache__cl_text *t, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) kcache__cl_text_add(t, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ---- device and platform descriptions ------------------------------------------------------ */

/* A string property of a device (or, with dev NULL, of plat), allocated; NULL on failure. */
static char *kcache__cl_info_str(cl_device_id dev, cl_platform_id plat, cl_uint what) {
    size_t n = 0;
    char *s;
    cl_int e = dev ? clGetDeviceInfo(dev, (cl_device_info)what, 0, NULL, &n)
                   : clGetPlatformInfo(plat, (cl_platform_info)what, 0, NULL, &n);
    if (e != CL_SUCCESS || n > ((size_t)1 << 24)) return NULL;
    s = (char *)KCACHE_MALLOC(n + 1);
    if (!s) return NULL;
    e = dev ? clGetDeviceInfo(dev, (cl_device_info)what, n, s, NULL) : clGetPlatformInfo(plat, (cl_platform_info)what, n, s, NULL);
    if (e != CL_SUCCESS) { KCACHE_FREE(s); return NULL; }
    s[n] = 0;
    return s;
}

/* Whether a space-separated extension list names ext (a whole word). */
static int kcache__cl_has_word(const char *list, const char *ext) {
    size_t n = strlen(ext);
    const char *p = list;
    while (p && (p = strstr(p, ext)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return 1;
        p += n;
    }
    return 0;
}

/* What kcache needs to know of one device of the call. */
typedef struct kcache__cl_dev {
    cl_device_id id;
    cl_platform_id plat;
    int pocl;              /* PoCL: its binaries are checked as PoCL binaries */
    int have_pocl_id;
    uint64_t pocl_id;      /* the device id PoCL writes into its binaries */
    char name[96];         /* for logs */
    kcache_key key;
    int key_live, key_ok;
    int state;             /* KCACHE__CL_* below */
    cl_uint same_as;       /* the first device with the same key (itself when none before) */
    const void *data;      /* the payload (from the cache, or built here) */
    size_t size;
    int release;           /* data came from kcache_get / kcache_get_or_build */
    int nostore;           /* the driver refused the binary it had just made: do not store it again */
    /* its compile (the build function, perhaps on a builder thread of the batch: these fields are
       this device's alone, read by the caller once the batch has joined its threads) */
    struct kcache__cl_job *job; /* the program's */
    int tried;             /* compiled here */
    cl_int err;
    cl_program prog;       /* what the compile made, for this device alone */
    kcache__cl_text log;   /* the compiler's output */
} kcache__cl_dev;

enum { KCACHE__CL_MISSING = 0, KCACHE__CL_CACHED = 1, KCACHE__CL_BUILT = 2 };

/* PoCL's device id in its binaries: a 64-bit FNV-style hash (multiply, then xor each byte) of the
   device's build hash string, which PoCL also prints in CL_DEVICE_VERSION after "HSTR: ". */
static int kcache__cl_pocl_device_id(const char *version, uint64_t *out) {
    const char *h = version ? strstr(version, "HSTR: ") : NULL;
    uint64_t r = 0xcbf29ce484222325ull;
    if (!h) return 0;
    for (h += 6; *h && *h != ' '; h++) {
        r *= 0x100000001b3ull;
        r ^= (uint64_t)(unsigned char)*h;
    }
    *out = r;
    return 1;
}

/* ---- the driver library's stamp ---------------------------------------------------------- */

/* The file of the driver library (the ICD vendor library) that serves plat, as loaded. */
static int kcache__cl_driver_path(cl_platform_id plat, char *out, size_t cap) {
    void *fn;
    char *exts;
    /* Every ICD vendor library exports clIcdGetPlatformIDsKHR; asked through the platform, the
       loader hands back the vendor's own function, which lives in the vendor's library. */
    fn = clGetExtensionFunctionAddressForPlatform(plat, "clIcdGetPlatformIDsKHR");
    if (!fn && (exts = kcache__cl_info_str(NULL, plat, CL_PLATFORM_EXTENSIONS)) != NULL) {
        /* cl_khr_icd: every object starts with the vendor's dispatch table */
        if (kcache__cl_has_word(exts, "cl_khr_icd")) {
            void *const *table = *(void *const *const *)plat;
            fn = table ? table[0] : NULL;
        }
        KCACHE_FREE(exts);
    }
    if (!fn) { /* no ICD loader: the library this program linked is the driver */
        cl_int (*direct)(cl_uint, cl_platform_id *, cl_uint *) = clGetPlatformIDs;
        memcpy(&fn, &direct, sizeof fn < sizeof direct ? sizeof fn : sizeof direct);
    }
    return fn && kcache__module_path(fn, out, cap) == 0;
}

#define KCACHE__CL_DRIVER_FIELD "cl.driver.library"

/* Adds "cl.driver.library": the driver library as a file dependency (kcache_key_library's stamp: a
   stat per key, the content digest remembered under the file's full stat). The library's path is
   found once per platform and process; a library that cannot be read keys by its path alone. */
static kcache_status kcache__cl_key_driver(kcache *kc, kcache_key *k, cl_platform_id plat) {
    kcache__cl_state *st;
    char *path = NULL;
    int readable = 0;
    unsigned i;
    kcache_status s;
    if (kc) {
        kcache__mutex_lock(&kc->lock);
        st = (kcache__cl_state *)kc->cl;
        for (i = 0; st && i < st->nplats; i++)
            if (st->plats[i].plat == plat) {
                path = kcache__strndup(st->plats[i].path, strlen(st->plats[i].path));
                readable = st->plats[i].readable;
                break;
            }
        kcache__mutex_unlock(&kc->lock);
    }
    if (!path) {
        int fd;
        if ((path = (char *)KCACHE_MALLOC(KCACHE__PATH_MAX)) == NULL) return kcache_key_str(k, KCACHE__CL_DRIVER_FIELD, "unknown");
        if (!kcache__cl_driver_path(plat, path, KCACHE__PATH_MAX)) strcpy(path, "unknown");
        else if ((fd = kcache__io_open(path, KCACHE__RD | KCACHE__NONBLOCK)) >= 0) {
            readable = 1;
            kcache__io_close(fd);
        }
        if (kc) {
            kcache__mutex_lock(&kc->lock);
            st = kcache__cl_state_of(kc);
            for (i = 0; st && i < st->nplats && st->plats[i].plat != plat; i++) {
            }
            if (st && i == st->nplats && i < KCACHE__CL_PLATFORMS &&
                (st->plats[i].path = kcache__strndup(path, strlen(path))) != NULL) {
                st->plats[i].plat = plat;
                st->plats[i].readable = readable;
                st->nplats++;
            }
            kcache__mutex_unlock(&kc->lock);
        }
    }
    s = readable ? kcache_key_file(k, KCACHE__CL_DRIVER_FIELD, path) : kcache_key_str(k, KCACHE__CL_DRIVER_FIELD, path);
    KCACHE_FREE(path);
    return s;
}

/* ---- #include dependencies ------------------------------------------------------------------ */

typedef struct kcache__cl_scan {
    kcache__cl_deps *deps;
    char **idirs; /* -I directories of the options, as written (relative ones are from the cwd) */
    uint32_t nidirs;
    char want[4096], cand[8192]; /* scratch of one lookup (here, not on a recursing stack) */
} kcache__cl_scan;

/* The -I directories of an options string: "-I dir", "-Idir", quoted or not. */
static void kcache__cl_idirs(const char *opt, kcache__cl_scan *sc) {
    const char *p = opt;
    int want_dir = 0;
    size_t cap = opt ? strlen(opt) + 1 : 1;
    char *tok = (char *)KCACHE_MALLOC(cap); /* a token is never longer than the options */
    if (!tok) { sc->deps->failed = 1; return; }
    while (p && *p) {
        size_t n = 0;
        char q = 0;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!*p) break;
        while (*p && (q || (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r'))) {
            if (!q && (*p == '"' || *p == '\'')) q = *p;
            else if (q && *p == q) q = 0;
            else if (!q && *p == '\\' && p[1]) { p++; if (n < cap - 1) tok[n++] = *p; }
            else if (n < cap - 1) tok[n++] = *p;
            p++;
        }
        tok[n] = 0;
        if (want_dir || (n > 2 && tok[0] == '-' && tok[1] == 'I')) {
            const char *dir = want_dir ? tok : tok + 2;
            char **nd = (char **)KCACHE_REALLOC(sc->idirs, sizeof(char *) * (sc->nidirs + 1));
            size_t dl = strlen(dir);
            want_dir = 0;
            if (!nd) { sc->deps->failed = 1; break; }
            sc->idirs = nd;
            if ((nd[sc->nidirs] = (char *)KCACHE_MALLOC(dl + 1)) == NULL) { sc->deps->failed = 1; break; }
            memcpy(nd[sc->nidirs++], dir, dl + 1);
        } else if (strcmp(tok, "-I") == 0) {
            want_dir = 1;
        }
    }
    KCACHE_FREE(tok);
}

static int kcache__cl_is_file(const char *path) {
    kcache__finfo s;
    return kcache__io_stat(path, &s) == 0 && s.kind == KCACHE__KIND_FILE;
}

static void kcache__cl_scan_text(kcache__cl_scan *sc, const char *text, size_t len, const char *curdir, int depth);

/* Follows one #include: finds the file, records it once, and scans it in turn. */
/* A found #include file's canonical path, allocated with malloc (free() it), or NULL: realpath where
   the headers declare it (it is XSI, not in POSIX 2008's base: a strict -std with
   -D_POSIX_C_SOURCE=200809L hides it), else the path made absolute from the working directory with
   its ".", ".." and repeated slashes taken out by their names (symlinks are not resolved: a file
   reached through two links is two dependencies, which costs a stat, never a wrong hit). */
#if defined(__GLIBC__) ? (defined(__USE_MISC) || defined(__USE_XOPEN_EXTENDED)) \
                       : (!defined(_POSIX_C_SOURCE) || defined(_XOPEN_SOURCE) || defined(_GNU_SOURCE) || defined(_BSD_SOURCE) || defined(_DEFAULT_SOURCE))
#define KCACHE__CL_REALPATH(p) realpath((p), NULL)
#else
#define KCACHE__CL_REALPATH(p) kcache__cl_abspath(p)
static char *kcache__cl_abspath(const char *p) {
    size_t cap = KCACHE__PATH_MAX, n = 0, at;
    char *out = (char *)malloc(cap);
    const char *q = p;
    if (!out) return NULL;
    if (p[0] != '/') {
        if (!getcwd(out, cap)) { free(out); return NULL; }
        n = strlen(out);
        if (n == 1) n = 0; /* "/" */
    }
    while (*q) {
        const char *e;
        size_t len;
        while (*q == '/') q++;
        for (e = q; *e && *e != '/'; e++) {
        }
        len = (size_t)(e - q);
        if (len == 0 || (len == 1 && q[0] == '.')) {
        } else if (len == 2 && q[0] == '.' && q[1] == '.') {
            for (at = n; at > 0 && out[at - 1] != '/'; at--) {
            }
            n = at > 0 ? at - 1 : 0;
        } else {
            if (n + 1 + len + 1 > cap) { free(out); return NULL; }
            out[n++] = '/';
            memcpy(out + n, q, len);
            n += len;
        }
        q = e;
    }
    if (n == 0) out[n++] = '/';
    out[n] = 0;
    return out;
}
#endif

static void kcache__cl_follow(kcache__cl_scan *sc, const char *name, size_t nlen, int angle, const char *curdir, int depth) {
    char *want = sc->want, *cand = sc->cand;
    char *real = NULL;
    uint32_t i;
    int found = 0;
    if (nlen == 0 || nlen >= sizeof sc->want) return;
    memcpy(want, name, nlen);
    want[nlen] = 0;
    if (want[0] == '/') {
        found = kcache__cl_is_file(want);
        if (found) snprintf(cand, sizeof sc->cand, "%s", want);
    } else {
        /* as the compiler searches: the including file's directory (quoted includes in a
           header), the working directory (PoCL searches it first, for either kind), then the -I
           directories in order */
        if (!angle && curdir) {
            snprintf(cand, sizeof sc->cand, "%s/%s", curdir, want);
            found = kcache__cl_is_file(cand);
        }
        if (!found) {
            snprintf(cand, sizeof sc->cand, "%s", want);
            found = kcache__cl_is_file(cand);
        }
        for (i = 0; !found && i < sc->nidirs; i++) {
            snprintf(cand, sizeof sc->cand, "%s/%s", sc->idirs[i], want);
            found = kcache__cl_is_file(cand);
        }
    }
    if (!found || (real = KCACHE__CL_REALPATH(cand)) == NULL) return; /* the compiler will say */
    for (i = 0; i < sc->deps->n; i++)
        if (strcmp(sc->deps->v[i].path, real) == 0) { free(real); return; } /* seen (include guards) */
    if (sc->deps->n >= KCACHE__CL_MAX_DEPS || depth >= KCACHE__CL_MAX_DEPTH) { free(real); sc->deps->failed = 1; return; }
    if (sc->deps->n == sc->deps->cap) {
        uint32_t ncap = sc->deps->cap ? sc->deps->cap * 2 : 8;
        kcache__cl_dep *nv = (kcache__cl_dep *)KCACHE_REALLOC(sc->deps->v, sizeof(kcache__cl_dep) * ncap);
        if (!nv) { free(real); sc->deps->failed = 1; return; }
        sc->deps->v = nv;
        sc->deps->cap = ncap;
    }
    {
        kcache__cl_dep *d = &sc->deps->v[sc->deps->n];
        size_t rl = strlen(real);
        char *dir, *slash;
        FILE *f;
        d->path = (char *)KCACHE_MALLOC(rl + 1);
        if (!d->path) { free(real); sc->deps->failed = 1; return; }
        memcpy(d->path, real, rl + 1);
        free(real);
        d->mtime_ns = 0;
        d->size = 0;
        kcache__stat_path(d->path, &d->mtime_ns, &d->size);
        sc->deps->n++;
        if (d->size > KCACHE__CL_MAX_HEADER) return;
        /* scan it, from its own directory */
        dir = (char *)KCACHE_MALLOC(rl + 1);
        if (!dir) { sc->deps->failed = 1; return; }
        memcpy(dir, d->path, rl + 1);
        slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        f = fopen(d->path, "rb");
        if (f) {
            size_t cap = (size_t)d->size + 1, got;
            char *text = (char *)KCACHE_MALLOC(cap);
            if (text) {
                got = fread(text, 1, cap - 1, f);
                kcache__cl_scan_text(sc, text, got, dir[0] ? dir : "/", depth + 1);
                KCACHE_FREE(text);
            }
            fclose(f);
        }
        KCACHE_FREE(dir);
    }
}

/* Finds `#include "name"` and `#include <name>` lines. */
static void kcache__cl_scan_text(kcache__cl_scan *sc, const char *text, size_t len, const char *curdir, int depth) {
    const char *p = text, *end = text + len;
    while (p < end && !sc->deps->failed) {
        const char *eol = (const char *)memchr(p, '\n', (size_t)(end - p));
        const char *q = p;
        if (!eol) eol = end;
        while (q < eol && (*q == ' ' || *q == '\t')) q++;
        if (q < eol && *q == '#') {
            q++;
            while (q < eol && (*q == ' ' || *q == '\t')) q++;
            if (eol - q > 7 && memcmp(q, "include", 7) == 0) {
                q += 7;
                sc->deps->any = 1;
                while (q < eol && (*q == ' ' || *q == '\t')) q++;
                if (q < eol && (*q == '"' || *q == '<')) {
                    char close = *q == '"' ? '"' : '>';
                    const char *name = ++q;
                    while (q < eol && *q != close) q++;
                    if (q < eol) kcache__cl_follow(sc, name, (size_t)(q - name), close == '>', curdir, depth);
                }
            }
        }
        p = eol + 1;
    }
}

/* Whether a text has a '#' followed by "include": the only texts worth scanning line by line. */
static int kcache__cl_mentions_include(const char *s, size_t n) {
    const char *p = s, *end = s + n;
    while (p < end && (p = (const char *)memchr(p, '#', (size_t)(end - p))) != NULL) {
        p++;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (end - p >= 7 && memcmp(p, "include", 7) == 0) return 1;
    }
    return 0;
}

/* Every file the sources #include, recursively; deps->any says whether there were #include lines. */
static void kcache__cl_find_deps(cl_uint nsrc, const char *const *srcs, const size_t *lens, const char *options,
                                 kcache__cl_deps *deps) {
    kcache__cl_scan *sc;
    cl_uint i;
    uint32_t j;
    memset(deps, 0, sizeof *deps);
    for (i = 0; i < nsrc; i++) /* a cheap look first: most programs include nothing */
        if (kcache__cl_mentions_include(srcs[i], lens[i])) break;
    if (i == nsrc) return;
    if ((sc = (kcache__cl_scan *)KCACHE_MALLOC(sizeof *sc)) == NULL) { deps->failed = 1; return; }
    memset(sc, 0, offsetof(kcache__cl_scan, want));
    sc->deps = deps;
    kcache__cl_idirs(options, sc);
    for (i = 0; i < nsrc && !deps->failed; i++) kcache__cl_scan_text(sc, srcs[i], lens[i], NULL, 0);
    for (j = 0; j < sc->nidirs; j++) KCACHE_FREE(sc->idirs[j]);
    KCACHE_FREE(sc->idirs);
    KCACHE_FREE(sc);
}

/* ---- keys ----------------------------------------------------------------------------------- */

/* Adds the identity of dv->id's device and driver to k (the fields kcache_cl_device_key documents)
   and learns what kcache needs of the device (platform, PoCL or not, PoCL's device id, its name). */
static kcache_status kcache__cl_key_device(kcache *kc, kcache_key *k, kcache__cl_dev *dv) {
    static const struct { const char *name; cl_uint what; int platform; } strs[] = {
        {"cl.platform.name", CL_PLATFORM_NAME, 1},   {"cl.platform.version", CL_PLATFORM_VERSION, 1},
        {"cl.device.name", CL_DEVICE_NAME, 0},       {"cl.device.version", CL_DEVICE_VERSION, 0},
        {"cl.driver.version", CL_DRIVER_VERSION, 0},
    };
    cl_uint u, i;
    char *s;
    if (clGetDeviceInfo(dv->id, CL_DEVICE_PLATFORM, sizeof dv->plat, &dv->plat, NULL) != CL_SUCCESS)
        return kcache__key_fail(k, KCACHE_EINVAL);
    for (i = 0; i < sizeof strs / sizeof strs[0]; i++) {
        s = kcache__cl_info_str(strs[i].platform ? NULL : dv->id, dv->plat, strs[i].what);
        if (!s) return kcache__key_fail(k, KCACHE_EINVAL);
        kcache_key_str(k, strs[i].name, s);
        if (strs[i].what == CL_PLATFORM_NAME) dv->pocl = strcmp(s, "Portable Computing Language") == 0;
        if (strs[i].what == CL_DEVICE_NAME) snprintf(dv->name, sizeof dv->name, "%s", s);
        if (strs[i].what == CL_DEVICE_VERSION) dv->have_pocl_id = kcache__cl_pocl_device_id(s, &dv->pocl_id);
        KCACHE_FREE(s);
    }
    if (clGetDeviceInfo(dv->id, CL_DEVICE_VENDOR_ID, sizeof u, &u, NULL) != CL_SUCCESS) return kcache__key_fail(k, KCACHE_EINVAL);
    kcache_key_u64(k, "cl.device.vendor_id", u);
    if (clGetDeviceInfo(dv->id, CL_DEVICE_ADDRESS_BITS, sizeof u, &u, NULL) != CL_SUCCESS) return kcache__key_fail(k, KCACHE_EINVAL);
    kcache_key_u64(k, "cl.device.address_bits", u);
    if ((s = kcache__cl_info_str(dv->id, NULL, CL_DEVICE_EXTENSIONS)) != NULL) {
        unsigned char uuid[KCACHE__CL_UUID_SIZE];
        if (kcache__cl_has_word(s, "cl_khr_device_uuid") &&
            clGetDeviceInfo(dv->id, (cl_device_info)KCACHE__CL_DRIVER_UUID, sizeof uuid, uuid, NULL) == CL_SUCCESS)
            kcache_key_bytes(k, "cl.driver.uuid", uuid, sizeof uuid);
        KCACHE_FREE(s);
    }
    kcache__cl_key_driver(kc, k, dv->plat);
    return k->error;
}

/* The key of one device (k is initialised here; free it with kcache_key_free). */
static kcache_status kcache__cl_key_dev(kcache *kc, kcache_key *k, kcache__cl_dev *dv, const char *unit, cl_uint nsrc,
                                        const char *const *srcs, const size_t *lens, const char *options,
                                        const kcache__cl_deps *deps) {
    char name[KCACHE_FIELD_NAME_MAX];
    cl_uint u, i;
    kcache_key_init(k, unit);
    if (nsrc == 1) {
        kcache_key_bytes(k, "cl.source", srcs[0], lens[0]);
    } else {
        for (i = 0; i < nsrc; i++) {
            snprintf(name, sizeof name, "cl.source.%u", (unsigned)i);
            kcache_key_bytes(k, name, srcs[i], lens[i]);
        }
    }
    kcache_key_str(k, "cl.options", options);
    kcache_key_u64(k, "cl.layer", KCACHE__CL_LAYER);
    if (kcache__cl_key_device(kc, k, dv) != KCACHE_OK) return k->error;
    for (u = 0; deps && u < deps->n; u++) {
        snprintf(name, sizeof name, "cl.include.%u", (unsigned)u);
        kcache_key_file(k, name, deps->v[u].path);
    }
    if (deps && deps->failed) kcache__key_fail(k, KCACHE_ETOOBIG);
    return k->error;
}

KCACHE_API kcache_status kcache_cl_device_key(kcache_key *k, cl_device_id device) {
    kcache__cl_dev *dv;
    kcache_status s;
    if (!k || !kcache__key_usable(k)) return KCACHE_EINVAL;
    if (!device) return kcache__key_fail(k, KCACHE_EINVAL);
    dv = (kcache__cl_dev *)KCACHE_MALLOC(sizeof *dv); /* (holds a key: not on the stack) */
    if (!dv) return kcache__key_fail(k, KCACHE_ENOMEM);
    memset(dv, 0, sizeof *dv);
    dv->id = device;
    s = kcache__cl_key_device(NULL, k, dv);
    KCACHE_FREE(dv);
    return s;
}

/* Lengths of the sources: lens[i], or strlen where lens is NULL or lens[i] is 0. */
static size_t *kcache__cl_lens(cl_uint nsrc, const char **srcs, const size_t *lens) {
    size_t *out = (size_t *)KCACHE_MALLOC(sizeof(size_t) * (nsrc ? nsrc : 1));
    cl_uint i;
    if (!out) return NULL;
    for (i = 0; i < nsrc; i++) out[i] = lens && lens[i] ? lens[i] : strlen(srcs[i]);
    return out;
}

KCACHE_API kcache_status kcache_cl_key(kcache *kc, kcache_key *k, cl_device_id dev, const char *unit, cl_uint nsrc,
                                       const char **srcs, const size_t *lens, const char *options) {
    kcache__cl_dev *dv;
    kcache__cl_deps deps;
    size_t *ln;
    kcache_status s;
    cl_uint i;
    KCACHE__CHECK_KC(kc, "kcache_cl_key", KCACHE_EINVAL);
    if (!k) return KCACHE_EINVAL;
    if (kc) kc = kcache__live(kc, 1); /* NULL in a forked child that could not open its own: as no kc */
    if (!unit || !unit[0]) unit = "opencl";
    if (!options) options = "";
    if (!dev || !srcs || nsrc == 0) { kcache_key_init(k, unit); return kcache__key_fail(k, KCACHE_EINVAL); }
    for (i = 0; i < nsrc; i++)
        if (!srcs[i]) { kcache_key_init(k, unit); return kcache__key_fail(k, KCACHE_EINVAL); }
    ln = kcache__cl_lens(nsrc, srcs, lens);
    dv = (kcache__cl_dev *)KCACHE_MALLOC(sizeof *dv); /* (holds a key: not on the stack) */
    if (!ln || !dv) {
        KCACHE_FREE(ln);
        KCACHE_FREE(dv);
        kcache_key_init(k, unit);
        return kcache__key_fail(k, KCACHE_ENOMEM);
    }
    memset(dv, 0, sizeof *dv);
    dv->id = dev;
    kcache__cl_find_deps(nsrc, srcs, ln, options, &deps);
    s = kcache__cl_key_dev(kc, k, dv, unit, nsrc, srcs, ln, options, &deps);
    kcache__cl_deps_free(deps.v, deps.n);
    KCACHE_FREE(ln);
    KCACHE_FREE(dv);
    return s;
}

/* ---- checking a stored binary before a driver sees it --------------------------------------- */

/* A run of serialized files (u32 length, path, u32 length, content) filling [p, end) exactly; the
   paths are where PoCL writes the contents, so each must stay inside its directory. */
static int kcache__cl_pocl_files(const unsigned char *p, const unsigned char *end, char *why, size_t cap) {
    while (p < end) {
        uint32_t pl, cl, i;
        if (end - p < 4) { kcache__say(why, cap, "a file record is cut"); return 0; }
        pl = kcache__get_u32(p);
        p += 4;
        if (pl == 0 || pl > 1024 || (size_t)(end - p) < (size_t)pl + 4) { kcache__say(why, cap, "a file name is cut or too long"); return 0; }
        if (p[0] != '/') { kcache__say(why, cap, "a file name is not relative to its directory"); return 0; }
        for (i = 0; i < pl; i++) {
            if (p[i] < 0x20 || p[i] >= 0x7f) { kcache__say(why, cap, "a file name has a control byte"); return 0; }
            if (p[i] == '.' && p[i - 1] == '/' && i + 1 < pl && p[i + 1] == '.' && (i + 2 == pl || p[i + 2] == '/')) {
                kcache__say(why, cap, "a file name leaves its directory");
                return 0;
            }
        }
        p += pl;
        cl = kcache__get_u32(p);
        p += 4;
        if ((size_t)(end - p) < cl) { kcache__say(why, cap, "a file's content is cut"); return 0; }
        p += cl;
    }
    return 1;
}

/* A PoCL binary ("poclbin"): the magic, the device id it was built for, and for the layouts known
   here (versions 9 to 11: PoCL 3.x to 6.x) the bounds of every record, so that PoCL, which reads
   it without checking lengths, never runs past the end or writes outside its cache directory. */
static int kcache__cl_pocl_check(const unsigned char *b, size_t n, const kcache__cl_dev *dv, char *why, size_t cap) {
    const unsigned char *p, *end = b + n;
    uint32_t version, nk, roots, i;
    uint64_t flags;
    if (n < 77) { kcache__say(why, cap, "a PoCL binary of %zu bytes is shorter than its header", n); return 0; }
    if (dv->have_pocl_id && kcache__get_u64(b + 8) != dv->pocl_id) {
        kcache__say(why, cap, "a PoCL binary for another device (id %016llx, this device %016llx)",
                    (unsigned long long)kcache__get_u64(b + 8), (unsigned long long)dv->pocl_id);
        return 0;
    }
    version = kcache__get_u32(b + 16);
    nk = kcache__get_u32(b + 20);
    flags = kcache__get_u64(b + 24);
    roots = kcache__get_u32(b + 32);
    if (version < 9 || version > 11) return 1; /* a layout not known here: the header is all we check */
    p = b + 36 + 41;                          /* the program's build hash: 40 characters and a NUL */
    if (version >= 10 && (flags & 2)) p += 8; /* program-scope variable bytes */
    if (p > end || roots > 64) { kcache__say(why, cap, "a PoCL binary header is inconsistent"); return 0; }
    for (i = 0; i < roots; i++) {
        uint64_t len;
        if (end - p < 8) { kcache__say(why, cap, "a PoCL binary is cut in its program files"); return 0; }
        len = kcache__get_u64(p);
        p += 8;
        if (len == 0 || len > (uint64_t)(end - p)) { kcache__say(why, cap, "a PoCL program record runs past the end"); return 0; }
        if (!kcache__cl_pocl_files(p, p + len, why, cap)) return 0;
        p += len;
    }
    for (i = 0; i < nk; i++) {
        uint64_t ss, bs;
        uint32_t nl;
        if (end - p < 24) { kcache__say(why, cap, "a PoCL binary is cut in kernel %u of %u", (unsigned)i, (unsigned)nk); return 0; }
        ss = kcache__get_u64(p);
        bs = kcache__get_u64(p + 8);
        nl = kcache__get_u32(p + 20);
        if (ss > (uint64_t)(end - p) || ss < 24 + (uint64_t)nl || bs > ss - 24 - nl) {
            kcache__say(why, cap, "kernel record %u of a PoCL binary is inconsistent or cut", (unsigned)i);
            return 0;
        }
        if (!kcache__cl_pocl_files(p + (ss - bs), p + ss, why, cap)) return 0;
        p += ss;
    }
    if (p != end) { kcache__say(why, cap, "a PoCL binary has %zu bytes after its last record", (size_t)(end - p)); return 0; }
    return 1;
}

/* Whether PoCL's own kernel cache is off (POCL_KERNEL_CACHE=0; it is on by default). */
static int kcache__cl_pocl_cache_off(void) {
    const char *env = getenv("POCL_KERNEL_CACHE");
    return env && (strcmp(env, "0") == 0 || strcmp(env, "false") == 0 || strcmp(env, "off") == 0 || strcmp(env, "no") == 0);
}

/* PoCL unpacks a binary's files into <POCL_CACHE_DIR>/<the binary's build hash>/ and, with its
   kernel cache off (POCL_KERNEL_CACHE=0), deletes that directory when the program is released. A
   binary built with the cache off names a temporary directory ("_UNCACHED_..."), and any binary
   loaded with the cache off has its directory deleted at release: two programs loaded from one
   entry, in one process or in two, would share a directory that the first release deletes under
   the other (PoCL then aborts). So a binary loaded here gets a directory of its own: a name unique
   to this load when PoCL's cache is off; when it is on, a name from the binary's digest in place of
   a temporary one (the same files, unpacked once and kept, as PoCL's own cache does). Returns the
   renamed copy (KCACHE_MALLOC), or NULL when the binary is fine as it is. */
static unsigned char *kcache__cl_pocl_rename(kcache *kc, const unsigned char *b, size_t n) {
    char name[48];
    unsigned char *copy;
    uint32_t version;
    int off = kcache__cl_pocl_cache_off();
    if (n < 77 || memcmp(b, "poclbin", 8) != 0) return NULL;
    version = kcache__get_u32(b + 16);
    if (version < 9 || version > 11) return NULL;
    if (!off && memcmp(b + 36, "_UNCACHED_", 10) != 0) return NULL; /* PoCL's own stable name */
    if (off) {
        long nth = kcache__atomic_add(&kc->cl_loads, 1);
        snprintf(name, sizeof name, "_UNCACHED_kc%08x%08x%012llx", (unsigned)kcache__pid(), (unsigned)nth,
                 (unsigned long long)((uint64_t)kcache__now_ns() & 0xffffffffffffull));
    } else {
        kcache_hash128 h = kcache_hash(b, n);
        snprintf(name, sizeof name, "kc/%016llx%016llx", (unsigned long long)h.hi, (unsigned long long)h.lo);
    }
    copy = (unsigned char *)KCACHE_MALLOC(n);
    if (!copy) return NULL;
    memcpy(copy, b, n);
    memset(copy + 36, 0, 41);
    memcpy(copy + 36, name, strlen(name) < 40 ? strlen(name) : 40);
    return copy;
}

/* Whether a PoCL binary's file path (pl bytes at f: "/kernel/dir/file") lies in a directory named
   "0-0-0": the generic work-group function, for any local size. */
static int kcache__cl_pocl_generic(const unsigned char *f, uint32_t pl) {
    uint32_t i;
    for (i = 0; i + 7 <= pl; i++)
        if (f[i] == '/' && memcmp(f + i + 1, "0-0-0/", 6) == 0) return 1;
    return 0;
}

/* Leaves out of a PoCL binary (b, n bytes: a copy of a checked one, edited in place; returns its new
   size) each kernel's generic work-group function where the kernel also has one specialised for a
   launch (a binary stored by kcache_cl_update after the first launches has both). PoCL unpacks
   every file of a binary into its cache directory when it loads it, each written with fdatasync
   (a millisecond or more on a busy disk), and with specialisation on (its default) a launch uses a
   specialised function, compiled from the program's bitcode when it is not there, never the
   generic one; so a hit into an empty PoCL cache writes half the files for nothing. With
   POCL_WORK_GROUP_SPECIALIZATION=0 the generic one is what runs: nothing is left out. PoCL
   compiles the generic function again if the loaded program's binary is asked for. */
static size_t kcache__cl_pocl_lean(unsigned char *b, size_t n) {
    const char *spec = getenv("POCL_WORK_GROUP_SPECIALIZATION");
    unsigned char *p, *end = b + n;
    uint32_t nk, roots, i, version;
    if (spec && (strcmp(spec, "0") == 0 || strcmp(spec, "false") == 0 || strcmp(spec, "off") == 0 || strcmp(spec, "no") == 0))
        return n;
    if (n < 77 || memcmp(b, "poclbin", 8) != 0) return n;
    version = kcache__get_u32(b + 16);
    if (version < 9 || version > 11) return n; /* a layout not known here: as it is */
    nk = kcache__get_u32(b + 20);
    roots = kcache__get_u32(b + 32);
    p = b + 36 + 41;
    if (version >= 10 && (kcache__get_u64(b + 24) & 2)) p += 8;
    for (i = 0; i < roots; i++) {
        uint64_t len;
        if (end - p < 8 || (len = kcache__get_u64(p)) > (uint64_t)(end - p - 8)) return n;
        p += 8 + len;
    }
    for (i = 0; i < nk; i++) {
        uint64_t ss, bs, gone = 0;
        unsigned char *f, *fe, *w;
        int specialised = 0;
        if (end - p < 24) return n;
        ss = kcache__get_u64(p);
        bs = kcache__get_u64(p + 8);
        if (ss > (uint64_t)(end - p) || ss < 24 || bs > ss - 24) return n;
        fe = p + ss;
        for (f = p + (ss - bs); f < fe;) { /* a specialised function first */
            uint32_t pl, cl;
            if (fe - f < 8 || (pl = kcache__get_u32(f)) > (size_t)(fe - f) - 8 || (cl = kcache__get_u32(f + 4 + pl)) > (size_t)(fe - f) - 8 - pl)
                return n;
            if (!kcache__cl_pocl_generic(f + 4, pl) && pl > 3 && memcmp(f + 4 + pl - 3, ".so", 3) == 0) specialised = 1;
            f += 8 + (size_t)pl + cl;
        }
        if (specialised) {
            for (f = w = p + (ss - bs); f < fe;) {
                uint32_t pl = kcache__get_u32(f), cl = kcache__get_u32(f + 4 + pl);
                size_t rec = 8 + (size_t)pl + cl;
                if (kcache__cl_pocl_generic(f + 4, pl)) {
                    gone += rec;
                } else {
                    if (w != f) memmove(w, f, rec);
                    w += rec;
                }
                f += rec;
            }
            if (gone) {
                memmove(fe - gone, fe, (size_t)(end - fe));
                end -= gone;
                kcache__put_u64(p, ss - gone);
                kcache__put_u64(p + 8, bs - gone);
            }
        }
        p += ss - gone;
    }
    return (size_t)(end - b);
}

/* Whether a payload is a binary this device's driver may be given. */
static int kcache__cl_payload_ok(const void *data, size_t size, const kcache__cl_dev *dv, char *why, size_t cap) {
    const unsigned char *p = (const unsigned char *)data;
    uint64_t n;
    if (!p || size < KCACHE__CL_HDR + 1 || memcmp(p, KCACHE__CL_MAGIC, 8) != 0) {
        kcache__say(why, cap, "not a binary stored by kcache_cl_build");
        return 0;
    }
    n = kcache__get_u64(p + 8);
    if (n != size - KCACHE__CL_HDR) { kcache__say(why, cap, "the binary's length disagrees with the entry's"); return 0; }
    p += KCACHE__CL_HDR;
    if (n >= 8 && memcmp(p, "poclbin", 8) == 0) return kcache__cl_pocl_check(p, (size_t)n, dv, why, cap);
    if (dv->pocl && n < 4) { kcache__say(why, cap, "a %llu-byte binary", (unsigned long long)n); return 0; }
    return 1;
}

#ifdef KCACHE_TEST_CL
KCACHE_API int kcache_test_cl_payload_ok(cl_device_id dev, const void *data, size_t size, char *why, size_t cap) {
    kcache__cl_dev *dv = (kcache__cl_dev *)KCACHE_MALLOC(sizeof *dv); /* (holds a key: not on the stack) */
    int ok;
    if (!dv) {
        kcache__say(why, cap, "out of memory");
        return 0;
    }
    memset(dv, 0, sizeof *dv);
    dv->id = dev;
    ok = kcache__cl_payload_ok(data, size, dv, why, cap);
    KCACHE_FREE(dv);
    return ok;
}
#endif

/* Counts a stored binary that failed a check or that the driver refused, and removes it. */
static void kcache__cl_reject(kcache *kc, kcache__cl_dev *dv, const char *why) {
    kcache_remove(kc, &dv->key);
    kcache__count_miss_quiet(kc, &dv->key, KCACHE_REASON_REJECTED);
    KCACHE__DEBUG(kc, "reject %s on %s: %s; removed, rebuilding from source", dv->key.unit, dv->name, why);
}

/* ---- building from source ------------------------------------------------------------------- */

typedef struct kcache__cl_job {
    kcache *kc;
    const char *unit;
    cl_context ctx;
    cl_uint nsrc;
    const char **srcs;
    const size_t *lens;
    const char *options;
    kcache__cl_dev *dv;
    cl_uint ndev;
    cl_program prog;      /* built from source here (a build for every device, or a compile's copy) */
    int64_t build_ns;
    kcache__cl_text log;
    cl_uint current;      /* the device of a compile for one device (its log section's number) */
    int several;          /* the program has several devices: a compile for one device heads its log */
    cl_device_id *built;  /* the devices prog was built for, in the program's device order */
    cl_uint nbuilt;
} kcache__cl_job;

/* Builds the sources for n devices; on success j->prog holds the program and j->built the devices
   it was built for, in the program's device order (PoCL 3 lists binaries only for the devices
   built, in that order; the specification, for every device of the program). The compiler's
   output goes to j->log either way. */
static cl_int kcache__cl_compile(kcache__cl_job *j, cl_uint n, const cl_device_id *given) {
    cl_int e, e2;
    cl_uint i, m, nd = 0;
    int64_t t0;
    cl_device_id *ids, *pd = NULL;
    cl_program prog = clCreateProgramWithSource(j->ctx, j->nsrc, j->srcs, j->lens, &e);
    if (!prog || e != CL_SUCCESS) {
        kcache__cl_text_fmt(&j->log, "kcache_cl_build: clCreateProgramWithSource failed: %s (%d)\n", kcache__cl_errname(e), (int)e);
        if (prog) clReleaseProgram(prog);
        return e != CL_SUCCESS ? e : CL_OUT_OF_HOST_MEMORY;
    }
    KCACHE_FREE(j->built);
    j->built = ids = (cl_device_id *)KCACHE_MALLOC(sizeof *ids * (n ? n : 1));
    j->nbuilt = 0;
    if (!ids) { clReleaseProgram(prog); return CL_OUT_OF_HOST_MEMORY; }
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL) == CL_SUCCESS && nd > 0 && nd <= 4096 &&
        (pd = (cl_device_id *)KCACHE_MALLOC(sizeof *pd * nd)) != NULL &&
        clGetProgramInfo(prog, CL_PROGRAM_DEVICES, sizeof *pd * nd, pd, NULL) == CL_SUCCESS) {
        for (m = 0; m < nd; m++) /* the given devices in the program's order */
            for (i = 0; i < n; i++)
                if (given[i] == pd[m]) { ids[j->nbuilt++] = pd[m]; break; }
    }
    KCACHE_FREE(pd);
    if (j->nbuilt != n) { /* not all found (a driver that does not say): as given */
        memcpy(ids, given, sizeof *ids * n);
        j->nbuilt = n;
    }
    if (j->kc && j->kc->cfg.debug) {
        kcache__cl_text names;
        memset(&names, 0, sizeof names);
        for (i = 0; i < n; i++) {
            char dn[128];
            if (clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof dn - 1, dn, NULL) != CL_SUCCESS) dn[0] = 0;
            dn[sizeof dn - 1] = 0;
            kcache__cl_text_fmt(&names, "%s%s", i ? ", " : "", dn);
        }
        KCACHE__DEBUG(j->kc, "compile %s for %u device(s): %s", j->unit, (unsigned)n, names.p ? names.p : "");
        KCACHE_FREE(names.p);
    }
    t0 = kcache__mono_ns();
    e = clBuildProgram(prog, n, ids, j->options, NULL, NULL);
    j->build_ns = kcache__mono_ns() - t0;
    if (j->kc) KCACHE__DEBUG(j->kc, "compiled %s in %.1f ms: %s", j->unit, (double)j->build_ns / 1e6, kcache__cl_errname(e));
    for (i = 0; i < n; i++) {
        size_t len = 0, k;
        char *text;
        if (clGetProgramBuildInfo(prog, ids[i], CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS || len == 0) continue;
        text = (char *)KCACHE_MALLOC(len + 1);
        if (!text) continue;
        e2 = clGetProgramBuildInfo(prog, ids[i], CL_PROGRAM_BUILD_LOG, len, text, NULL);
        text[e2 == CL_SUCCESS ? len : 0] = 0;
        k = strlen(text);
        while (k && (text[k - 1] == '\n' || text[k - 1] == ' ' || text[k - 1] == '\r' || text[k - 1] == '\t')) k--;
        if (k) {
            if (n > 1 || j->several) {
                char dn[128];
                if (clGetDeviceInfo(ids[i], CL_DEVICE_NAME, sizeof dn - 1, dn, NULL) != CL_SUCCESS) dn[0] = 0;
                dn[sizeof dn - 1] = 0;
                kcache__cl_text_fmt(&j->log, "== device %u: %s\n", (unsigned)(n > 1 ? i : j->current), dn);
            }
            kcache__cl_text_add(&j->log, text, k);
            kcache__cl_text_add(&j->log, "\n", 1);
        }
        KCACHE_FREE(text);
    }
    if (e != CL_SUCCESS) {
        if (j->log.len == 0)
            kcache__cl_text_fmt(&j->log, "kcache_cl_build: clBuildProgram failed: %s (%d)\n", kcache__cl_errname(e), (int)e);
        clReleaseProgram(prog);
        return e;
    }
    j->prog = prog;
    return CL_SUCCESS;
}

/* The payload (header + binary) of one device of a built program, allocated with KCACHE_MALLOC.
   The binaries come one per device of the program (the specification) or, from PoCL 3, one per
   device built, in the program's order; every one is fetched (PoCL writes through the NULL
   pointers the specification lets a caller pass for devices it does not want), all but one dropped. */
static int kcache__cl_extract(const kcache__cl_job *j, cl_program prog, cl_device_id dev, void **out, size_t *out_size) {
    cl_uint nd = 0, i, at = 0, count = 0;
    cl_device_id *ids = NULL;
    const cl_device_id *list;
    size_t *sizes = NULL, ret = 0;
    unsigned char **bins = NULL;
    int ok = 0, shifted = 0;
    *out = NULL;
    *out_size = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL) != CL_SUCCESS || nd == 0 || nd > 4096) return 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, 0, NULL, &ret) != CL_SUCCESS) return 0;
    ids = (cl_device_id *)KCACHE_MALLOC(sizeof *ids * nd);
    if (!ids || clGetProgramInfo(prog, CL_PROGRAM_DEVICES, sizeof *ids * nd, ids, NULL) != CL_SUCCESS) goto done;
    if (ret == sizeof(size_t) * nd) { list = ids; count = nd; }
    else if (ret == sizeof(size_t) * j->nbuilt && j->built) { list = j->built; count = j->nbuilt; }
    else goto done;
    for (at = 0; at < count && list[at] != dev; at++) {
    }
    if (at == count) goto done;
    sizes = (size_t *)KCACHE_MALLOC(sizeof *sizes * count);
    bins = (unsigned char **)KCACHE_MALLOC(sizeof *bins * count);
    if (!sizes || !bins) goto done;
    for (i = 0; i < count; i++) bins[i] = NULL;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof *sizes * count, sizes, NULL) != CL_SUCCESS) goto done;
    if (sizes[at] == 0 || sizes[at] > ((size_t)1 << 31)) goto done;
    for (i = 0; i < count; i++) { /* this device's binary lands after room for the payload header */
        size_t room = (i == at ? KCACHE__CL_HDR : 0) + (sizes[i] ? sizes[i] : 1);
        if ((bins[i] = (unsigned char *)KCACHE_MALLOC(room)) == NULL) goto done;
        if (i == at) { bins[i] += KCACHE__CL_HDR; shifted = 1; }
    }
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof *bins * count, bins, NULL) != CL_SUCCESS) goto done;
    bins[at] -= KCACHE__CL_HDR;
    shifted = 0;
    memcpy(bins[at], KCACHE__CL_MAGIC, 8);
    kcache__put_u64(bins[at] + 8, (uint64_t)sizes[at]);
    kcache__put_u64(bins[at] + 16, (uint64_t)(j->build_ns > 0 ? j->build_ns : 0));
    kcache__put_u64(bins[at] + 24, 0);
    *out = bins[at];
    *out_size = KCACHE__CL_HDR + sizes[at];
    bins[at] = NULL;
    ok = 1;
done:
    if (bins) {
        for (i = 0; i < count; i++) {
            if (shifted && i == at) bins[i] -= KCACHE__CL_HDR; /* back to what was allocated */
            KCACHE_FREE(bins[i]);
        }
    }
    KCACHE_FREE(ids);
    KCACHE_FREE(sizes);
    KCACHE_FREE(bins);
    return ok;
}

/* The build function of one device's key (the first device of those with that key): compiles the
   sources for that device alone. A program's devices are keys of their own in the batch
   (kcache_get_or_build_many), so that the threads, processes and machines that need the program at
   once each compile a share of its devices, as they do of a batch's programs. One clBuildProgram for
   every device would save the process that builds alone one load of the binaries (the program is
   then made from them: a few percent of a compile on PoCL, which compiles a program's devices one
   after another anyway), but would compile every device in the first process to come while the
   others wait. May run on a builder thread of the batch: it writes its own device's fields only, and
   compiles through a copy of the program's job. */
static int kcache__cl_build_fn(void *user, void **out, size_t *out_size) {
    kcache__cl_dev *dv = (kcache__cl_dev *)user;
    kcache__cl_job one = *dv->job;
    char why[256];
    int ok;
    *out = NULL;
    *out_size = 0;
    one.prog = NULL;
    one.built = NULL;
    one.nbuilt = 0;
    one.build_ns = 0;
    memset(&one.log, 0, sizeof one.log);
    one.current = (cl_uint)(dv - one.dv);
    one.several = one.ndev > 1;
    dv->tried = 1;
    dv->err = kcache__cl_compile(&one, 1, &dv->id);
    kcache__cl_text_add(&dv->log, one.log.p ? one.log.p : "", one.log.len);
    if (one.log.oom) dv->log.oom = 1;
    KCACHE_FREE(one.log.p);
    if (dv->err != CL_SUCCESS) {
        KCACHE_FREE(one.built);
        return 1;
    }
    dv->state = KCACHE__CL_BUILT;
    if (dv->prog) clReleaseProgram(dv->prog);
    dv->prog = one.prog;
    /* The binary for the store, which waiters need as soon as the build ends. PoCL freezes a
       program's binary at the first query, before the work-group functions of its first launches
       are in it; so with PoCL's own cache on, the binary is read from a second program of the same
       source, which PoCL builds from its cache (tens of ms against a compile's hundreds), and the
       caller's program stays unfrozen: kcache_cl_update can store its grown binary after the first
       launch. With PoCL's cache off a second program would be a second compile: the binary is read
       from the caller's program, as other drivers' are. */
    {
        cl_program second = NULL;
        if (dv->pocl && !kcache__cl_pocl_cache_off()) {
            kcache__cl_job two = one;
            two.prog = NULL;
            two.built = NULL; /* (its own: kcache__cl_compile replaces it) */
            two.nbuilt = 0;
            memset(&two.log, 0, sizeof two.log);
            if (kcache__cl_compile(&two, 1, &dv->id) == CL_SUCCESS) second = two.prog;
            KCACHE_FREE(two.log.p);
            KCACHE_FREE(two.built);
        }
        ok = kcache__cl_extract(&one, second ? second : one.prog, dv->id, out, out_size);
        if (second) clReleaseProgram(second);
    }
    KCACHE_FREE(one.built);
    if (ok && !kcache__cl_payload_ok(*out, *out_size, dv, why, sizeof why)) {
        KCACHE__DEBUG(one.kc, "not storing %s for %s: %s", dv->key.unit, dv->name, why);
        KCACHE_FREE(*out);
        *out = NULL;
        *out_size = 0;
        ok = 0; /* not cached; the program built from source is used as it is, or built again */
    }
    return ok ? 0 : 1;
}

/* ---- the in-process program cache (kc->lock held) ------------------------------------------ */

static kcache_hash128 kcache__cl_mem_id(cl_context ctx, cl_uint ndev, const cl_device_id *devs, const char *unit,
                                        cl_uint nsrc, const char **srcs, const size_t *lens, const char *options) {
    kcache_hash_state h;
    unsigned char b[8];
    uint64_t v;
    cl_uint i;
    kcache_hash_init(&h);
    v = (uint64_t)(uintptr_t)ctx;
    kcache__put_u64(b, v);
    kcache_hash_update(&h, b, 8);
    kcache__put_u64(b, ((uint64_t)ndev << 32) | nsrc);
    kcache_hash_update(&h, b, 8);
    for (i = 0; i < ndev; i++) {
        kcache__put_u64(b, (uint64_t)(uintptr_t)devs[i]);
        kcache_hash_update(&h, b, 8);
    }
    kcache_hash_update(&h, unit, strlen(unit) + 1);
    kcache_hash_update(&h, options, strlen(options) + 1);
    for (i = 0; i < nsrc; i++) {
        kcache__put_u64(b, (uint64_t)lens[i]);
        kcache_hash_update(&h, b, 8);
        kcache_hash_update(&h, srcs[i], lens[i]);
    }
    return kcache_hash_final(&h);
}

static kcache__cl_prog **kcache__cl_bucket(kcache__cl_state *st, kcache_hash128 id) {
    return &st->buckets[id.lo & (st->nbuckets - 1)];
}

static void kcache__cl_unlink(kcache__cl_state *st, kcache__cl_prog *p) {
    kcache__cl_prog **b = kcache__cl_bucket(st, p->id);
    while (*b && *b != p) b = &(*b)->hnext;
    if (*b) *b = p->hnext;
    p->prev->next = p->next;
    p->next->prev = p->prev;
    p->hnext = p->next = p->prev = NULL;
    st->count--;
}

static void kcache__cl_front(kcache__cl_state *st, kcache__cl_prog *p) {
    p->next = st->lru.next;
    p->prev = &st->lru;
    st->lru.next->prev = p;
    st->lru.next = p;
}

/* The working directory, in a new string (KCACHE_FREE it), or NULL. */
static char *kcache__cl_cwd(void) {
    char *now = (char *)KCACHE_MALLOC(KCACHE__PATH_MAX); /* (not on the stack: small thread stacks) */
    if (now && !getcwd(now, KCACHE__PATH_MAX)) {
        KCACHE_FREE(now);
        now = NULL;
    }
    return now;
}

/* Whether a program's #included files are as they were when it was built. */
static int kcache__cl_deps_same(const kcache__cl_prog *p) {
    uint32_t i;
    if (p->cwd) {
        char *now = kcache__cl_cwd();
        int same = now && strcmp(now, p->cwd) == 0;
        KCACHE_FREE(now);
        if (!same) return 0;
    }
    for (i = 0; i < p->ndeps; i++) {
        int64_t m = 0;
        uint64_t s = 0;
        if (kcache__stat_path(p->deps[i].path, &m, &s) != 0 || m != p->deps[i].mtime_ns || s != p->deps[i].size) return 0;
    }
    return 1;
}

/* Adds a program (with a reference of its own), dropping the least recently used past the
   capacity; returns the dropped ones chained by next, to be freed after unlocking. */
static kcache__cl_prog *kcache__cl_insert(kcache *kc, kcache__cl_state *st, kcache__cl_prog *p) {
    kcache__cl_prog *q, *gone = NULL;
    for (q = *kcache__cl_bucket(st, p->id); q; q = q->hnext)
        if (q->ctx == p->ctx && kcache__same(q->id, p->id)) { /* built meanwhile by another thread */
            p->next = NULL;
            return p;
        }
    if (st->count + 1 > st->nbuckets && st->nbuckets < (1u << 24)) { /* grow: rehash into twice as many */
        uint32_t nb = st->nbuckets * 2, i;
        kcache__cl_prog **nbk = (kcache__cl_prog **)KCACHE_MALLOC(sizeof(kcache__cl_prog *) * nb);
        if (nbk) {
            memset(nbk, 0, sizeof(kcache__cl_prog *) * nb);
            for (i = 0; i < st->nbuckets; i++) {
                while ((q = st->buckets[i]) != NULL) {
                    st->buckets[i] = q->hnext;
                    q->hnext = nbk[q->id.lo & (nb - 1)];
                    nbk[q->id.lo & (nb - 1)] = q;
                }
            }
            KCACHE_FREE(st->buckets);
            st->buckets = nbk;
            st->nbuckets = nb;
        }
    }
    p->hnext = *kcache__cl_bucket(st, p->id);
    *kcache__cl_bucket(st, p->id) = p;
    kcache__cl_front(st, p);
    st->count++;
    while (st->count > kc->cfg.mem_entries && st->lru.prev != p) {
        q = st->lru.prev;
        kcache__cl_unlink(st, q);
        q->next = gone;
        gone = q;
    }
    return gone;
}

static void kcache__cl_free_list(kcache__cl_prog *list) {
    while (list) {
        kcache__cl_prog *next = list->next;
        kcache__cl_prog_free(list);
        list = next;
    }
}

/* The memory hit path: the program this process built for the same inputs, retained. */
static cl_program kcache__cl_mem_get(kcache *kc, kcache_hash128 id, cl_context ctx) {
    kcache__cl_state *st;
    kcache__cl_prog *p, *stale = NULL;
    cl_program prog = NULL;
    kcache__mutex_lock(&kc->lock);
    st = (kcache__cl_state *)kc->cl;
    if (st) {
        for (p = *kcache__cl_bucket(st, id); p; p = p->hnext)
            if (p->ctx == ctx && kcache__same(p->id, id)) break;
        if (p && (p->ndeps == 0 && !p->cwd ? 1 : kcache__cl_deps_same(p))) {
            if (st->lru.next != p) {
                p->prev->next = p->next;
                p->next->prev = p->prev;
                kcache__cl_front(st, p);
            }
            if (clRetainProgram(p->prog) == CL_SUCCESS) {
                prog = p->prog;
                kc->stats.hits_mem++;
                kcache__pub_add(&kc->pub, KCACHE__PUB_HITS_MEM, 1);
                if (st->nlogs) kcache__cl_log_set_locked(st, NULL, 0);
            }
        } else if (p) { /* an #included file changed: build again */
            kcache__cl_unlink(st, p);
            stale = p;
        }
    }
    kcache__mutex_unlock(&kc->lock);
    if (stale) {
        KCACHE__DEBUG(kc, "an #included file of a program built in this process changed; building it again");
        kcache__cl_prog_free(stale);
    }
    return prog;
}

static void kcache__cl_mem_put(kcache *kc, kcache_hash128 id, cl_context ctx, cl_program prog, kcache__cl_deps *deps,
                               const char *unit, const char *options, cl_uint nsrc, const size_t *lens) {
    kcache__cl_prog *p, *gone;
    kcache__cl_state *st;
    if (deps->failed || clRetainProgram(prog) != CL_SUCCESS) return;
    p = (kcache__cl_prog *)KCACHE_MALLOC(sizeof *p);
    if (!p) { clReleaseProgram(prog); return; }
    memset(p, 0, sizeof *p);
    p->id = id;
    p->ctx = ctx;
    p->prog = prog;
    p->unit = kcache__strndup(unit, strlen(unit));
    p->options = kcache__strndup(options, strlen(options));
    p->lens = (size_t *)KCACHE_MALLOC(sizeof *p->lens * (nsrc ? nsrc : 1));
    p->nsrc = p->lens ? nsrc : 0;
    if (p->lens) memcpy(p->lens, lens, sizeof *p->lens * nsrc);
    p->deps = deps->v; /* taken over */
    p->ndeps = deps->n;
    deps->v = NULL;
    deps->n = deps->cap = 0;
    if (deps->any && (p->cwd = kcache__cl_cwd()) == NULL) {
        kcache__cl_prog_free(p);
        return;
    }
    kcache__mutex_lock(&kc->lock);
    st = kcache__cl_state_of(kc);
    gone = st ? kcache__cl_insert(kc, st, p) : p;
    kcache__mutex_unlock(&kc->lock);
    kcache__cl_free_list(gone);
}

KCACHE_API void kcache_cl_forget(kcache *kc, cl_context ctx) {
    kcache__cl_state *st;
    kcache__cl_prog *p, *next, *gone = NULL;
    KCACHE__CHECK_KC(kc, "kcache_cl_forget", );
    if (!kc || (kc = kcache__live(kc, 1)) == NULL) return;
    kcache__mutex_lock(&kc->lock);
    st = (kcache__cl_state *)kc->cl;
    for (p = st ? st->lru.next : NULL; p && p != &st->lru; p = next) {
        next = p->next;
        if (ctx && p->ctx != ctx) continue;
        kcache__cl_unlink(st, p);
        p->next = gone;
        gone = p;
    }
    kcache__mutex_unlock(&kc->lock);
    kcache__cl_free_list(gone);
}

/* ---- kcache_cl_build --------------------------------------------------------------------------- */

/* Loads a program from the devices' payloads. On failure, *bad[i] says which devices the driver
   refused (all of them when it does not say). */
static cl_program kcache__cl_load(kcache__cl_job *j, int *bad, cl_int *err) {
    cl_uint i;
    cl_device_id *ids = (cl_device_id *)KCACHE_MALLOC(sizeof *ids * j->ndev);
    size_t *sizes = (size_t *)KCACHE_MALLOC(sizeof *sizes * j->ndev);
    const unsigned char **bins = (const unsigned char **)KCACHE_MALLOC(sizeof *bins * j->ndev);
    cl_int *status = (cl_int *)KCACHE_MALLOC(sizeof *status * j->ndev);
    unsigned char **renamed = (unsigned char **)KCACHE_MALLOC(sizeof *renamed * j->ndev);
    cl_program prog = NULL;
    cl_int e = CL_OUT_OF_HOST_MEMORY;
    for (i = 0; i < j->ndev; i++) bad[i] = 1;
    if (renamed)
        for (i = 0; i < j->ndev; i++) renamed[i] = NULL;
    if (!ids || !sizes || !bins || !status || !renamed) goto done;
    for (i = 0; i < j->ndev; i++) {
        const kcache__cl_dev *d = &j->dv[j->dv[i].same_as];
        ids[i] = j->dv[i].id;
        sizes[i] = d->size - KCACHE__CL_HDR;
        bins[i] = (const unsigned char *)d->data + KCACHE__CL_HDR;
        status[i] = CL_INVALID_BINARY;
        if (j->dv[i].pocl && (renamed[i] = kcache__cl_pocl_rename(j->kc, bins[i], sizes[i])) != NULL) bins[i] = renamed[i];
        if (j->dv[i].pocl && !renamed[i] && (renamed[i] = (unsigned char *)KCACHE_MALLOC(sizes[i])) != NULL) {
            memcpy(renamed[i], bins[i], sizes[i]); /* (a copy to leave files out of: the entry is the store's) */
            bins[i] = renamed[i];
        }
        if (renamed[i]) sizes[i] = kcache__cl_pocl_lean(renamed[i], sizes[i]);
    }
    prog = clCreateProgramWithBinary(j->ctx, j->ndev, ids, sizes, bins, status, &e);
    if (!prog || e != CL_SUCCESS) {
        for (i = 0; i < j->ndev; i++) bad[i] = e == CL_INVALID_BINARY ? status[i] != CL_SUCCESS : 1;
        if (prog) clReleaseProgram(prog);
        prog = NULL;
        if (e == CL_SUCCESS) e = CL_INVALID_BINARY;
        goto done;
    }
    e = clBuildProgram(prog, j->ndev, ids, j->options, NULL, NULL);
    if (e != CL_SUCCESS) {
        for (i = 0; i < j->ndev; i++) {
            cl_build_status bs = CL_BUILD_ERROR;
            bad[i] = clGetProgramBuildInfo(prog, ids[i], CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL) != CL_SUCCESS ||
                     bs != CL_BUILD_SUCCESS;
        }
        clReleaseProgram(prog);
        prog = NULL;
        goto done;
    }
    for (i = 0; i < j->ndev; i++) bad[i] = 0;
done:
    if (renamed)
        for (i = 0; i < j->ndev; i++) KCACHE_FREE(renamed[i]);
    KCACHE_FREE(renamed);
    KCACHE_FREE(ids);
    KCACHE_FREE(sizes);
    KCACHE_FREE(bins);
    KCACHE_FREE(status);
    *err = e;
    return prog;
}

/* Errors of a load that say the call itself is wrong (a device not in the context, bad options),
   not that the binaries are: those are no reason to remove an entry. */
static int kcache__cl_callers_fault(cl_int e) {
    return e == CL_INVALID_DEVICE || e == CL_INVALID_CONTEXT || e == CL_INVALID_VALUE || e == CL_INVALID_BUILD_OPTIONS ||
           e == CL_INVALID_OPERATION || e == CL_INVALID_PLATFORM || e == CL_DEVICE_NOT_AVAILABLE;
}

/* No cache: the sources built for the devices, as a program would without kcache. */
static cl_program kcache__cl_plain(kcache__cl_job *j, const cl_device_id *ids, cl_uint n, cl_int *err) {
    cl_program p;
    if (j->kc) { /* counted as kcache_get_or_build counts the builds it runs */
        kcache__mutex_lock(&j->kc->lock);
        j->kc->stats.builds++;
        kcache__pub_add(&j->kc->pub, KCACHE__PUB_BUILDS, 1);
        kcache__mutex_unlock(&j->kc->lock);
    }
    *err = kcache__cl_compile(j, n, ids);
    p = j->prog;
    j->prog = NULL;
    return p;
}

/* One program of a kcache_cl_build or kcache_cl_build_many call, through its phases: begin (the
   arguments, the in-process cache, the keys, what the store has), the batch (its devices' missing
   keys, with every other program's of the call), finish (the program, from the source build or the
   binaries). */
typedef struct kcache__cl_one {
    kcache__cl_job j;
    kcache__cl_deps deps;
    cl_device_id *all;      /* every device of the context (ndev 0) */
    const cl_device_id *ids;
    size_t *ln;             /* the sources' lengths (j.lens) */
    kcache_hash128 mid;
    cl_program prog;
    cl_int e;
    int cache, built_here, hit, done, memhit, args_bad;
    size_t njobs;           /* its devices' keys to build (the batch's jobs) */
    kcache__cl_text log;    /* finish: the program's build log */
} kcache__cl_one;

static void kcache__cl_begin(kcache *kc, kcache__cl_one *o, cl_context ctx, cl_uint ndev, const cl_device_id *devs, const char *unit,
                             cl_uint nsrc, const char **srcs, const size_t *lens, const char *options) {
    kcache__cl_job *j = &o->j;
    kcache__cl_dev *dv; /* (each holds a key: on the heap, not the stack) */
    size_t *ln;
    cl_uint i, k;
    char why[256];
    memset(o, 0, sizeof *o);
    o->ids = devs;
    if (!unit || !unit[0]) unit = "opencl";
    if (!options) options = "";
    j->kc = kc;
    j->unit = unit;
    j->ctx = ctx;
    j->nsrc = nsrc;
    j->srcs = srcs;
    j->options = options;
    if (!ctx) { o->e = CL_INVALID_CONTEXT; goto bad_args; }
    if (nsrc == 0 || !srcs || (ndev > 0 && !devs) || (ndev == 0 && devs)) { o->e = CL_INVALID_VALUE; goto bad_args; }
    for (i = 0; i < nsrc; i++)
        if (!srcs[i]) { o->e = CL_INVALID_VALUE; goto bad_args; }
    if (ndev == 0) { /* every device of the context */
        size_t bytes = 0;
        o->e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, NULL, &bytes);
        if (o->e != CL_SUCCESS || bytes < sizeof(cl_device_id)) { o->e = o->e != CL_SUCCESS ? o->e : CL_INVALID_CONTEXT; goto bad_args; }
        o->all = (cl_device_id *)KCACHE_MALLOC(bytes);
        if (!o->all) { o->e = CL_OUT_OF_HOST_MEMORY; goto bad_args; }
        if ((o->e = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, bytes, o->all, NULL)) != CL_SUCCESS) goto bad_args;
        ndev = (cl_uint)(bytes / sizeof(cl_device_id));
        o->ids = o->all;
    }
    if ((o->ln = ln = kcache__cl_lens(nsrc, srcs, lens)) == NULL) { o->e = CL_OUT_OF_HOST_MEMORY; goto bad_args; }
    j->lens = ln;
    j->ndev = ndev;
    o->cache = kc && kc->cfg.enable;
    if (!o->cache) goto plain; /* no cache: build as the program would have */

    /* 1. this process built it already */
    o->mid = kcache__cl_mem_id(ctx, ndev, o->ids, unit, nsrc, srcs, ln, options);
    if ((o->prog = kcache__cl_mem_get(kc, o->mid, ctx)) != NULL) {
        if (kc->cfg.debug) KCACHE__DEBUG(kc, "hit memory %s (program built in this process)", unit);
        o->memhit = o->hit = o->done = 1;
        return;
    }

    /* 2. one key per device; what the store has */
    kcache__cl_find_deps(nsrc, srcs, ln, options, &o->deps);
    dv = (kcache__cl_dev *)KCACHE_MALLOC(sizeof *dv * ndev);
    if (!dv) goto plain;
    memset(dv, 0, sizeof *dv * ndev);
    j->dv = dv;
    for (i = 0; i < ndev; i++) {
        dv[i].id = o->ids[i];
        dv[i].same_as = i;
        dv[i].job = j;
        dv[i].key_ok = kcache__cl_key_dev(kc, &dv[i].key, &dv[i], unit, nsrc, srcs, ln, options, &o->deps) == KCACHE_OK;
        dv[i].key_live = 1;
        if (!dv[i].key_ok) { /* no key (a device the driver will not describe, a unit name too long,
                                includes past the limits): built as without a cache */
            KCACHE__DEBUG(kc, "not caching %s: its key for device %u is incomplete (%s)", unit, (unsigned)i,
                          kcache_strerror(dv[i].key.error));
            goto plain;
        }
        for (k = 0; k < i; k++) {
            if (dv[k].id == dv[i].id) goto plain; /* a device named twice: the driver's answer, uncached */
            if (dv[i].same_as == i && kcache__same(dv[k].key.digest, dv[i].key.digest)) dv[i].same_as = k;
        }
    }
    for (i = 0; i < ndev; i++) {
        if (dv[i].same_as != i) continue;
        if (kcache_get(kc, &dv[i].key, &dv[i].data, &dv[i].size) != KCACHE_OK) {
            o->njobs++;
            continue;
        }
        dv[i].release = 1;
        if (!kcache__cl_payload_ok(dv[i].data, dv[i].size, &dv[i], why, sizeof why)) {
            kcache_release(kc, dv[i].data);
            dv[i].data = NULL;
            dv[i].release = 0;
            kcache__cl_reject(kc, &dv[i], why);
            o->njobs++;
            continue;
        }
        dv[i].state = KCACHE__CL_CACHED;
    }
    return;

plain:
    o->prog = kcache__cl_plain(j, o->ids, j->ndev, &o->e);
    o->built_here = o->done = 1;
    o->njobs = 0;
    return;

bad_args:
    o->args_bad = o->done = 1;
    kcache__cl_text_fmt(&o->log, "kcache_cl_build: invalid arguments: %s (%d)\n", kcache__cl_errname(o->e), (int)o->e);
}

/* The batch's jobs of a program begun: one per device key missing, in device order. */
static size_t kcache__cl_jobs(kcache__cl_one *o, kcache_job *jobs) {
    kcache__cl_dev *dv = o->j.dv;
    size_t n = 0;
    cl_uint i;
    if (o->done || !dv) return 0;
    for (i = 0; i < o->j.ndev; i++) {
        if (dv[i].same_as != i || dv[i].state == KCACHE__CL_CACHED) continue;
        memset(&jobs[n], 0, sizeof jobs[n]);
        jobs[n].key = &dv[i].key;
        jobs[n].build = kcache__cl_build_fn;
        jobs[n].user = &dv[i];
        n++;
    }
    return n;
}

/* The program, once its jobs (NULL: none ran, as when out of memory) are done; frees what begin
   made. o->prog, o->e, o->hit and o->log say how it went. */
static void kcache__cl_finish(kcache__cl_one *o, kcache_job *jobs) {
    kcache__cl_job *j = &o->j;
    kcache *kc = j->kc;
    kcache__cl_dev *dv = j->dv;
    cl_uint i, ndev = j->ndev;
    cl_program prog = o->prog;
    cl_int e = o->e;
    size_t at = 0;
    int *bad = NULL, memhit = 0;
    char why[256];

    if (o->args_bad || o->memhit) goto done;
    if (o->done) goto out;

    /* 3. the devices that missed: built by the batch, here or by another thread, process or machine */
    for (i = 0; i < ndev; i++) {
        if (dv[i].same_as != i || dv[i].state == KCACHE__CL_CACHED) continue;
        if (jobs && jobs[at].status == KCACHE_OK) {
            dv[i].data = jobs[at].data;
            dv[i].size = jobs[at].size;
            dv[i].release = 1;
        }
        at++;
    }
    for (i = 0; i < ndev; i++) {
        if (dv[i].same_as != i || dv[i].state == KCACHE__CL_CACHED) continue;
        if (dv[i].data) {
            if (dv[i].state == KCACHE__CL_MISSING) { /* another thread or process built it */
                if (kcache__cl_payload_ok(dv[i].data, dv[i].size, &dv[i], why, sizeof why)) {
                    dv[i].state = KCACHE__CL_CACHED;
                } else {
                    kcache_release(kc, dv[i].data);
                    dv[i].data = NULL;
                    dv[i].release = 0;
                    kcache__cl_reject(kc, &dv[i], why);
                }
            }
        } else if (dv[i].tried && dv[i].err != CL_SUCCESS) {
            e = dv[i].err; /* the sources do not build */
            goto out;
        }
    }

    /* 4. the program: the source build itself when it covered the one device, else from binaries */
    {
        int complete = 1;
        for (i = 0; i < ndev; i++) {
            if (!dv[dv[i].same_as].data) complete = 0;
            if (dv[dv[i].same_as].state != KCACHE__CL_CACHED) o->built_here = 1;
        }
        if (ndev == 1 && dv[0].state == KCACHE__CL_BUILT && dv[0].prog) {
            prog = dv[0].prog;
            dv[0].prog = NULL;
            goto out;
        }
        if (!complete) { /* a binary that cannot be stored or loaded: as without a cache */
            prog = kcache__cl_plain(j, o->ids, ndev, &e);
            o->built_here = 1;
            goto out;
        }
    }
    /* the same program made meanwhile by this process (another thread, or the same program twice in
       one kcache_cl_build_many): that one, as a repeat call would have it */
    if ((prog = kcache__cl_mem_get(kc, o->mid, j->ctx)) != NULL) {
        memhit = 1;
        goto out;
    }
    bad = (int *)KCACHE_MALLOC(sizeof *bad * ndev);
    if (!bad) { prog = kcache__cl_plain(j, o->ids, ndev, &e); o->built_here = 1; goto out; }
    prog = kcache__cl_load(j, bad, &e);
    if (!prog && kcache__cl_callers_fault(e)) { /* not the binaries' fault: the driver's answer, uncached */
        prog = kcache__cl_plain(j, o->ids, ndev, &e);
        o->built_here = 1;
    } else if (!prog) {
        /* the driver refused a stored binary: remove it, count it, build from source, store anew */
        o->built_here = 1;
        for (i = 0; i < ndev; i++) {
            cl_uint l = dv[i].same_as;
            if (!bad[i] || dv[l].state == KCACHE__CL_MISSING) continue;
            snprintf(why, sizeof why, "the driver refused the binary (%s)", kcache__cl_errname(e));
            kcache__cl_reject(kc, &dv[l], why);
            dv[l].nostore = dv[l].state == KCACHE__CL_BUILT; /* it refuses its own binaries: storing them again is no use */
            dv[l].state = KCACHE__CL_MISSING;
        }
        prog = kcache__cl_plain(j, o->ids, ndev, &e);
        if (prog) {
            for (i = 0; i < ndev; i++) {
                void *p;
                size_t sz;
                if (dv[i].same_as != i || dv[i].state != KCACHE__CL_MISSING || dv[i].nostore) continue;
                if (kcache__cl_extract(j, prog, dv[i].id, &p, &sz)) {
                    if (kcache__cl_payload_ok(p, sz, &dv[i], why, sizeof why)) kcache_put(kc, &dv[i].key, p, sz);
                    KCACHE_FREE(p);
                }
            }
        }
    }

out:
    if (j->prog) clReleaseProgram(j->prog);
    j->prog = NULL;
    KCACHE_FREE(j->built);
    j->built = NULL;
    if (prog && o->cache && !o->deps.failed && !memhit)
        kcache__cl_mem_put(kc, o->mid, j->ctx, prog, &o->deps, j->unit, j->options, j->nsrc, o->ln);
    if (prog && kc && kc->cfg.debug && !o->built_here && dv) {
        uint64_t ns = 0; /* what the binaries saved: the compile time their payloads recorded */
        for (i = 0; i < ndev; i++)
            if (dv[i].data && kcache__get_u64((const unsigned char *)dv[i].data + 16) > ns)
                ns = kcache__get_u64((const unsigned char *)dv[i].data + 16);
        KCACHE__DEBUG(kc, "hit %s: loaded from the store's binaries (compiling took %.1f ms)", j->unit, (double)ns / 1e6);
    }
    /* the log: the compiler's words when it ran (even on success: warnings), device by device, then
       those of a build of every device at once; else nothing */
    for (i = 0; dv && i < ndev; i++) {
        if (dv[i].log.oom) o->log.oom = 1;
        kcache__cl_text_add(&o->log, dv[i].log.p ? dv[i].log.p : "", dv[i].log.len);
    }
    if (j->log.oom) o->log.oom = 1;
    kcache__cl_text_add(&o->log, j->log.p ? j->log.p : "", j->log.len);
    if (dv) {
        for (i = 0; i < ndev; i++) {
            if (dv[i].release) kcache_release(kc, dv[i].data);
            if (dv[i].key_live) kcache_key_free(&dv[i].key);
            if (dv[i].prog) clReleaseProgram(dv[i].prog);
            KCACHE_FREE(dv[i].log.p);
        }
        KCACHE_FREE(dv);
        j->dv = NULL;
    }
    if (!prog && e == CL_SUCCESS) e = CL_OUT_OF_HOST_MEMORY;
    if (!prog && kc) KCACHE__DEBUG(kc, "kcache_cl_build %s failed: %s (%d)", j->unit, kcache__cl_errname(e), (int)e);
    o->hit = prog && (memhit || !o->built_here);
done:
    KCACHE_FREE(j->log.p);
    j->log.p = NULL;
    kcache__cl_deps_free(o->deps.v, o->deps.n);
    o->deps.v = NULL;
    KCACHE_FREE(bad);
    KCACHE_FREE(o->ln);
    o->ln = NULL;
    j->lens = NULL;
    KCACHE_FREE(o->all);
    o->all = NULL;
    if (o->log.oom) { KCACHE_FREE(o->log.p); memset(&o->log, 0, sizeof o->log); }
    o->prog = prog;
    o->e = prog ? CL_SUCCESS : e;
}

KCACHE_API cl_program kcache_cl_build(kcache *kc, cl_context ctx, cl_uint ndev, const cl_device_id *devs,
                                      const char *unit, cl_uint nsrc, const char **srcs, const size_t *lens,
                                      const char *options, int *hit, cl_int *err) {
    kcache__cl_one o;
    kcache_job *jobs = NULL;
    if (hit) *hit = 0;
#if KCACHE_CHECKS
    if (kc && !kcache__kc_ok(kc, "kcache_cl_build")) kc = NULL; /* (said): a plain build, as without a cache */
#endif
    if (kc) kc = kcache__live(kc, 1); /* NULL in a forked child that could not open its own: a plain build */
    kcache__cl_begin(kc, &o, ctx, ndev, devs, unit, nsrc, srcs, lens, options);
    /* the missing devices' keys through the batch, on this thread alone: each device of the program
       that another thread, process or machine is not compiling already is compiled here */
    if (o.njobs && (jobs = (kcache_job *)KCACHE_MALLOC(sizeof *jobs * o.njobs)) != NULL) {
        kcache__cl_jobs(&o, jobs);
        kcache_get_or_build_many(kc, jobs, o.njobs, 1);
    }
    kcache__cl_finish(&o, jobs);
    KCACHE_FREE(jobs);
    if (o.memhit) KCACHE_FREE(o.log.p); /* (kcache__cl_mem_get cleared the thread's log) */
    else kcache__cl_log_set(kc, o.log.p, o.log.len);
    if (hit) *hit = o.hit;
    if (err) *err = o.e;
    return o.prog;
}

/* ---- kcache_cl_build_program: where clBuildProgram was ------------------------------------ */

/* What kcache_cl_build_program needs of a program made from source: its context, its one source
   string (CL_PROGRAM_SOURCE: the strings it was made from, joined), the devices to build for in the
   program's order, and whether it may be swapped. 0 when it is not such a program (made from
   binaries or IL, built already, a device not its own, a query the driver refuses): clBuildProgram
   then gives the driver's own answer. */
typedef struct kcache__cl_prog_info {
    cl_context ctx;
    char *src;
    size_t len;
    cl_device_id *devs; /* the devices asked for, in the program's device order */
    cl_uint ndev;
    cl_uint refs;
} kcache__cl_prog_info;

static void kcache__cl_prog_info_free(kcache__cl_prog_info *pi) {
    KCACHE_FREE(pi->src);
    KCACHE_FREE(pi->devs);
    memset(pi, 0, sizeof *pi);
}

static int kcache__cl_prog_info_get(cl_program prog, cl_uint num_devices, const cl_device_id *device_list,
                                    kcache__cl_prog_info *pi, int built) {
    cl_uint nd = 0, i, m;
    cl_device_id *pd = NULL;
    size_t len = 0;
    memset(pi, 0, sizeof *pi);
    if ((num_devices == 0) != (device_list == NULL)) return 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_CONTEXT, sizeof pi->ctx, &pi->ctx, NULL) != CL_SUCCESS || !pi->ctx ||
        clGetProgramInfo(prog, CL_PROGRAM_REFERENCE_COUNT, sizeof pi->refs, &pi->refs, NULL) != CL_SUCCESS ||
        clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof nd, &nd, NULL) != CL_SUCCESS || nd == 0 || nd > 4096 ||
        clGetProgramInfo(prog, CL_PROGRAM_SOURCE, 0, NULL, &len) != CL_SUCCESS || len <= 1 || len > ((size_t)1 << 30))
        return 0;
    pd = (cl_device_id *)KCACHE_MALLOC(sizeof *pd * nd);
    pi->devs = (cl_device_id *)KCACHE_MALLOC(sizeof *pd * nd);
    pi->src = (char *)KCACHE_MALLOC(len + 1);
    if (!pd || !pi->devs || !pi->src || clGetProgramInfo(prog, CL_PROGRAM_DEVICES, sizeof *pd * nd, pd, NULL) != CL_SUCCESS ||
        clGetProgramInfo(prog, CL_PROGRAM_SOURCE, len, pi->src, NULL) != CL_SUCCESS)
        goto no;
    pi->src[len] = 0;
    pi->len = strlen(pi->src);
    if (pi->len == 0) goto no;
    for (m = 0; m < nd; m++) {
        cl_build_status bs = CL_BUILD_NONE;
        int asked = num_devices == 0;
        for (i = 0; i < num_devices && !asked; i++) asked = device_list[i] == pd[m];
        if (clGetProgramBuildInfo(prog, pd[m], CL_PROGRAM_BUILD_STATUS, sizeof bs, &bs, NULL) != CL_SUCCESS) goto no;
        if (built) { /* kcache_cl_update: the devices it was built for */
            if (bs == CL_BUILD_SUCCESS) pi->devs[pi->ndev++] = pd[m];
            continue;
        }
        if (bs != CL_BUILD_NONE) goto no; /* built (or building) already: a rebuild is the driver's business */
        if (asked) pi->devs[pi->ndev++] = pd[m];
    }
    for (i = 0; i < num_devices; i++) { /* every device asked for is the program's, and once */
        cl_uint seen = 0;
        for (m = 0; m < pi->ndev; m++) seen += pi->devs[m] == device_list[i];
        if (seen != 1) goto no;
    }
    if (built ? pi->ndev == 0 : pi->ndev != (num_devices ? num_devices : nd)) goto no;
    KCACHE_FREE(pd);
    return 1;
no:
    KCACHE_FREE(pd);
    kcache__cl_prog_info_free(pi);
    return 0;
}

/* Stores the binaries of a program built in place (kcache_cl_build_program, kcache_cl_update) for
   the devices of pi whose entry is missing, or (grown) whose stored binary is smaller than the
   driver's now. Returns how many it stored. */
static unsigned kcache__cl_store_prog(kcache *kc, cl_program prog, const kcache__cl_prog_info *pi, const char *unit,
                                      cl_uint nsrc, const char **srcs, const size_t *lens, const char *options, int grown) {
    kcache__cl_dev *dv;
    kcache__cl_deps deps;
    kcache__cl_job j;
    unsigned stored = 0;
    cl_uint i;
    char why[256];
    dv = (kcache__cl_dev *)KCACHE_MALLOC(sizeof *dv); /* (holds a key: not on the stack) */
    if (!dv) return 0;
    memset(&j, 0, sizeof j);
    j.kc = kc;
    j.unit = unit;
    j.ctx = pi->ctx;
    j.built = pi->devs;
    j.nbuilt = pi->ndev;
    kcache__cl_find_deps(nsrc, srcs, lens, options, &deps);
    for (i = 0; i < pi->ndev; i++) {
        const void *data = NULL;
        size_t size = 0, now = 0;
        void *p;
        size_t sz;
        int want;
        memset(dv, 0, sizeof *dv);
        dv->id = pi->devs[i];
        if (kcache__cl_key_dev(kc, &dv->key, dv, j.unit, nsrc, srcs, lens, options, &deps) != KCACHE_OK) {
            kcache_key_free(&dv->key);
            continue;
        }
        want = kcache_get(kc, &dv->key, &data, &size) != KCACHE_OK;
        if (!want) {
            if (grown) { /* the driver's binary now, against the stored one: its size alone (no query of the binary) */
                size_t *sizes = (size_t *)KCACHE_MALLOC(sizeof *sizes * pi->ndev);
                size_t ret = 0;
                if (sizes && clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, 0, NULL, &ret) == CL_SUCCESS &&
                    ret == sizeof *sizes * pi->ndev &&
                    clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, ret, sizes, NULL) == CL_SUCCESS)
                    now = sizes[i];
                KCACHE_FREE(sizes);
                want = size >= KCACHE__CL_HDR && now > size - KCACHE__CL_HDR;
            }
            kcache_release(kc, data);
        }
        if (want && kcache__cl_extract(&j, prog, dv->id, &p, &sz)) {
            if (kcache__cl_payload_ok(p, sz, dv, why, sizeof why) && kcache_put(kc, &dv->key, p, sz) == KCACHE_OK) stored++;
            KCACHE_FREE(p);
        }
        kcache_key_free(&dv->key);
    }
    kcache__cl_deps_free(deps.v, deps.n);
    KCACHE_FREE(dv);
    return stored;
}

KCACHE_API cl_int kcache_cl_build_program(kcache *kc, cl_program *program, cl_uint num_devices,
                                          const cl_device_id *device_list, const char *options) {
    kcache__cl_prog_info pi;
    kcache__cl_one o;
    kcache_job *jobs = NULL;
    const char *src;
    cl_int e;
    if (!program || !*program) return CL_INVALID_PROGRAM;
#if KCACHE_CHECKS
    if (kc && !kcache__kc_ok(kc, "kcache_cl_build_program")) kc = NULL; /* (said): the driver's build, uncached */
#endif
    if (kc) kc = kcache__live(kc, 1);
    if (!kc || !kc->cfg.enable || !kcache__cl_prog_info_get(*program, num_devices, device_list, &pi, 0))
        return clBuildProgram(*program, num_devices, device_list, options, NULL, NULL);
    if (!options) options = "";
    if (pi.refs > 1) { /* others hold it: built where it is, then stored */
        e = clBuildProgram(*program, num_devices, device_list, options, NULL, NULL);
        if (e == CL_SUCCESS) {
            src = pi.src;
            kcache__cl_store_prog(kc, *program, &pi, "opencl", 1, &src, &pi.len, options, 0);
        }
        kcache__cl_prog_info_free(&pi);
        return e;
    }
    src = pi.src;
    kcache__cl_begin(kc, &o, pi.ctx, pi.ndev, pi.devs, NULL, 1, &src, &pi.len, options);
    if (o.njobs && (jobs = (kcache_job *)KCACHE_MALLOC(sizeof *jobs * o.njobs)) != NULL) {
        kcache__cl_jobs(&o, jobs);
        kcache_get_or_build_many(kc, jobs, o.njobs, 1);
    }
    kcache__cl_finish(&o, jobs);
    KCACHE_FREE(jobs);
    if (o.memhit) KCACHE_FREE(o.log.p);
    else kcache__cl_log_set(kc, o.log.p, o.log.len);
    if (o.prog) { /* the caller's program is now the built one */
        clReleaseProgram(*program);
        *program = o.prog;
        e = CL_SUCCESS;
    } else { /* the driver's own answer and log, on the caller's program (a failure compiles twice) */
        e = clBuildProgram(*program, num_devices, device_list, options, NULL, NULL);
    }
    kcache__cl_prog_info_free(&pi);
    return e;
}

KCACHE_API kcache_status kcache_cl_update(kcache *kc, cl_program program) {
    kcache__cl_prog_info pi;
    char *opts = NULL;
    size_t n = 0;
    kcache_status s = KCACHE_OK;
    KCACHE__CHECK_KC(kc, "kcache_cl_update", KCACHE_EINVAL);
    if (!program) return KCACHE_EINVAL;
    if (!kc || (kc = kcache__live(kc, 1)) == NULL || !kc->cfg.enable) return KCACHE_OK; /* nothing to store into */
    if (!kcache__cl_prog_info_get(program, 0, NULL, &pi, 1)) return KCACHE_EINVAL; /* not a built source program */
    /* the options it was built with, as the driver kept them (those of its first device) */
    if (clGetProgramBuildInfo(program, pi.devs[0], CL_PROGRAM_BUILD_OPTIONS, 0, NULL, &n) != CL_SUCCESS ||
        (opts = (char *)KCACHE_MALLOC(n + 1)) == NULL ||
        clGetProgramBuildInfo(program, pi.devs[0], CL_PROGRAM_BUILD_OPTIONS, n, opts, NULL) != CL_SUCCESS) {
        s = opts ? KCACHE_EINVAL : KCACHE_ENOMEM;
    } else {
        /* keyed as the call that built it keyed it: kcache_cl_build's unit, options and source strings
           where this process's program cache still holds the program, else as kcache_cl_build_program
           keys it (unit "opencl", the source as one string, the options the driver reports) */
        kcache__cl_state *st;
        kcache__cl_prog *p;
        const char *unit = "opencl", *src = pi.src, **srcs = &src;
        char *unit_own = NULL, *opts_own = NULL;
        size_t *lens = &pi.len, *lens_own = NULL;
        cl_uint nsrc = 1, i;
        opts[n] = 0;
        kcache__mutex_lock(&kc->lock);
        st = (kcache__cl_state *)kc->cl;
        for (p = st ? st->lru.next : NULL; p && p != &st->lru; p = p->next)
            if (p->prog == program) {
                size_t sum = 0;
                for (i = 0; i < p->nsrc; i++) sum += p->lens[i];
                if (p->unit && p->options && p->nsrc && sum == pi.len) {
                    unit_own = kcache__strndup(p->unit, strlen(p->unit));
                    opts_own = kcache__strndup(p->options, strlen(p->options));
                    lens_own = (size_t *)KCACHE_MALLOC(sizeof *lens_own * p->nsrc);
                    if (lens_own) memcpy(lens_own, p->lens, sizeof *lens_own * p->nsrc);
                    nsrc = p->nsrc;
                }
                break;
            }
        kcache__mutex_unlock(&kc->lock);
        if (unit_own && opts_own && lens_own &&
            (srcs = (const char **)KCACHE_MALLOC(sizeof *srcs * nsrc)) != NULL) {
            size_t at = 0;
            for (i = 0; i < nsrc; i++) { /* CL_PROGRAM_SOURCE is the strings joined */
                srcs[i] = pi.src + at;
                at += lens_own[i];
            }
            kcache__cl_store_prog(kc, program, &pi, unit_own, nsrc, srcs, lens_own, opts_own, 1);
            KCACHE_FREE(srcs);
        } else {
            srcs = &src;
            kcache__cl_store_prog(kc, program, &pi, unit, 1, srcs, lens, opts, 1);
        }
        KCACHE_FREE(unit_own);
        KCACHE_FREE(opts_own);
        KCACHE_FREE(lens_own);
    }
    KCACHE_FREE(opts);
    kcache__cl_prog_info_free(&pi);
    return s;
}

KCACHE_API cl_int kcache_cl_build_many(kcache *kc, cl_context ctx, cl_uint ndev, const cl_device_id *devs,
                                       kcache_cl_program *progs, size_t n, unsigned threads) {
    kcache__cl_one *o;
    kcache_job *jobs = NULL;
    size_t i, j, njobs = 0, at = 0, first = n;
    if (n && !progs) return CL_INVALID_VALUE;
    for (i = 0; i < n; i++) {
        progs[i].program = NULL;
        progs[i].hit = 0;
        progs[i].err = CL_SUCCESS;
        progs[i].log_len = 0;
        if (progs[i].log && progs[i].log_cap) progs[i].log[0] = 0;
    }
#if KCACHE_CHECKS
    if (kc && !kcache__kc_ok(kc, "kcache_cl_build_many")) kc = NULL; /* (said): plain builds, as without a cache */
#endif
    if (kc) kc = kcache__live(kc, 1);
    if (n == 0) return CL_SUCCESS;
    o = (kcache__cl_one *)KCACHE_MALLOC(sizeof *o * n);
    if (!o) { /* one program at a time */
        for (i = 0; i < n; i++) {
            kcache_cl_program *p = &progs[i];
            p->program = kcache_cl_build(kc, ctx, ndev, devs, p->unit, p->nsrc, p->srcs, p->lens, p->options, &p->hit, &p->err);
            p->log_len = kcache_cl_build_log(kc, p->log, p->log_cap);
            if (p->err != CL_SUCCESS && first == n) first = i;
        }
        return first < n ? progs[first].err : CL_SUCCESS;
    }
    for (i = 0; i < n; i++) {
        const kcache_cl_program *p = &progs[i];
        kcache__cl_begin(kc, &o[i], ctx, ndev, devs, p->unit, p->nsrc, p->srcs, p->lens, p->options);
        njobs += o[i].njobs;
    }
    /* every program's missing device keys in one batch: the processes, threads and machines that need
       the same programs at once each build a share */
    if (njobs && (jobs = (kcache_job *)KCACHE_MALLOC(sizeof *jobs * njobs)) != NULL) {
        for (i = 0; i < n; i++) at += kcache__cl_jobs(&o[i], jobs + at);
        kcache_get_or_build_many(kc, jobs, njobs, threads);
    }
    for (i = 0, at = 0; i < n; i++) { /* in order: a program twice in the call is made once, then found in memory */
        kcache_cl_program *p = &progs[i];
        size_t len;
        kcache__cl_finish(&o[i], jobs ? jobs + at : NULL);
        at += o[i].njobs;
        p->program = o[i].prog;
        p->hit = o[i].hit;
        for (j = 0; p->program && j < i; j++) /* the same program again: as it went the first time */
            if (progs[j].program == p->program) p->hit = progs[j].hit;
        p->err = o[i].e;
        len = o[i].log.len;
        p->log_len = len;
        if (p->log && p->log_cap) {
            size_t c = len < p->log_cap - 1 ? len : p->log_cap - 1;
            if (c) memcpy(p->log, o[i].log.p, c);
            p->log[c] = 0;
        }
        if (p->err != CL_SUCCESS && first == n) first = i;
    }
    /* the thread's log (kcache_cl_build_log): the first failed program's, else none */
    for (i = 0; i < n; i++) {
        if (i == first) kcache__cl_log_set(kc, o[i].log.p, o[i].log.len);
        else KCACHE_FREE(o[i].log.p);
    }
    if (first == n) kcache__cl_log_set(kc, NULL, 0);
    KCACHE_FREE(jobs);
    KCACHE_FREE(o);
    return first < n ? progs[first].err : CL_SUCCESS;
}

#endif /* KCACHE_OPENCL */

/* Public: the core's implementation is compiled in this file; a companion compiles its own after it. */
#define KCACHE_IMPLEMENTED 1
#endif /* !KCACHE__UNUSABLE */
#endif /* KCACHE__IMPLEMENTED */
#endif /* KCACHE_IMPLEMENTATION */

/* ============================================================================================== */
/* >>companions  kcache_redis.h and kcache_vk.h, included from this file's directory when asked   */
/* ============================================================================================== */
/* Up to 0.4 the Redis backend and the Vulkan part were inside this file; they are companions beside
   it now. A program built the 0.4 way (-DKCACHE_REDIS / -DKCACHE_VULKAN, kcache.h alone) gets them
   here: a quoted include looks in this file's directory first. Including a companion yourself is
   the new way (kcache_vk.h after kcache.h; kcache_redis.h in place of kcache.h where the
   implementation is compiled, so that the core names its kcache_redis_backend, >>remote); the companion
   defines its switch and includes kcache.h, and its guard makes this include a no-op then. */
#if defined(KCACHE_VULKAN) && !defined(KCACHE_VK_H)
#if defined(__has_include)
#if __has_include("kcache_vk.h")
#include "kcache_vk.h"
#else
#error "kcache: KCACHE_VULKAN is defined but kcache_vk.h, the Vulkan part (a companion of kcache.h since 0.5), is not beside kcache.h: copy it there"
#endif
#else
#include "kcache_vk.h" /* (KCACHE_VULKAN: the Vulkan part, beside kcache.h since 0.5) */
#endif
#endif
#if defined(KCACHE_REDIS) && !defined(KCACHE_REDIS_H)
#if defined(__has_include)
#if __has_include("kcache_redis.h")
#include "kcache_redis.h"
#else
#error "kcache: KCACHE_REDIS is defined but kcache_redis.h, the Redis backend (a companion of kcache.h since 0.5), is not beside kcache.h: copy it there"
#endif
#else
#include "kcache_redis.h" /* (KCACHE_REDIS: the Redis backend, beside kcache.h since 0.5) */
#endif
#endif
/* (after the companions, whose system headers may need it on C libraries that decide per header) */
#ifdef KCACHE__OWN_GNU_SOURCE /* kcache's choice, not the including file's (see the top) */
#undef _GNU_SOURCE
#undef KCACHE__OWN_GNU_SOURCE
#endif

/*
MIT License

Copyright (c) 2026 the kcache authors

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
*/
