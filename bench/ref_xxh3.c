/* bench/ref_xxh3.c - the reference XXH3-128 (xxHash's own xxhash.h, libxxhash-dev), compiled
 * three times by bench/bench_hash.c's build with different flags and a different REF_NAME, so the
 * benchmark can compare kcache_hash with the reference's SSE2, AVX2 and AVX-512 code in one run.
 * Exports:  kcache_hash128 REF_NAME(const void *data, size_t len);
 *           int REF_NAME_vector(void)   (as REF_NAME ## _vector: XXH_VECTOR the reference chose,
 *                                         0 scalar, 1 SSE2, 2 AVX2, 3 AVX512, 4 NEON, ...)
 * Only used for measuring and comparing; nothing of it goes into kcache.h. */
#include <stddef.h>
#include <stdint.h>
#include "kcache.h" /* for kcache_hash128 only (no implementation here) */

#define XXH_INLINE_ALL
#include <xxhash.h>

#ifndef REF_NAME
#  error "compile with -DREF_NAME=ref_sse2 (or ref_avx2, ref_avx512)"
#endif
#define REF_CAT_(a, b) a##b
#define REF_CAT(a, b) REF_CAT_(a, b)

kcache_hash128 REF_NAME(const void *data, size_t len);
int REF_CAT(REF_NAME, _vector)(void);

kcache_hash128 REF_NAME(const void *data, size_t len)
{
    XXH128_hash_t r = XXH3_128bits(data, len);
    kcache_hash128 h;
    h.lo = r.low64;
    h.hi = r.high64;
    return h;
}

int REF_CAT(REF_NAME, _vector)(void)
{
    return XXH_VECTOR;
}
