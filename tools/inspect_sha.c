/* inspect_sha.c - kcache-inspect: SHA-1 and SHA-256, for what numba hashes.
 *
 * numba names a NUMBA_CACHE_DIR subdirectory after the sha1 of the source's directory, stamps an
 * index with the sha256 of the source from 0.68 on (of a zip member, of a notebook cell), and
 * names a notebook cell's function by the sha256 of its first lines: the numba half of the tool
 * needs both digests, and kcache.h (XXH3-128 only) has neither.  Written from FIPS 180-4. */
#include "inspect.h"

/* ---------------------------------------------------------------------------------------- */
/* SHA-1 (numba names a NUMBA_CACHE_DIR subdirectory after the sha1 of the source's         */
/* directory) and SHA-256 (numba >= 0.68's stamp is the sha256 digest of the source).       */
/* Written from FIPS 180-4.                                                                  */

static uint32_t rol32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
static uint32_t ror32(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }

static const uint32_t ki_k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2 };

void sha_init(ki_sha *s, int is256)
{
    static const uint32_t h1[5] = { 0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0 };
    static const uint32_t h256[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memset(s, 0, sizeof *s);
    s->is256 = is256;
    if (is256) memcpy(s->h, h256, sizeof h256);
    else memcpy(s->h, h1, sizeof h1);
}

static void sha_block(ki_sha *s, const unsigned char *p)
{
    uint32_t w[80], a, b, c, d, e, f, g, h, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    if (!s->is256) {
        for (i = 16; i < 80; i++) w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3]; e = s->h[4];
        for (i = 0; i < 80; i++) {
            uint32_t fn, k;
            if (i < 20) { fn = (b & c) | (~b & d); k = 0x5A827999; }
            else if (i < 40) { fn = b ^ c ^ d; k = 0x6ED9EBA1; }
            else if (i < 60) { fn = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC; }
            else { fn = b ^ c ^ d; k = 0xCA62C1D6; }
            t1 = rol32(a, 5) + fn + e + k + w[i];
            e = d; d = c; c = rol32(b, 30); b = a; a = t1;
        }
        s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d; s->h[4] += e;
        return;
    }
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3]; e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
    for (i = 0; i < 64; i++) {
        t1 = h + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) + ((e & f) ^ (~e & g)) + ki_k256[i] + w[i];
        t2 = (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d; s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

void sha_update(ki_sha *s, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    s->len += n;
    while (n) {
        size_t take = 64 - s->fill;
        if (take > n) take = n;
        memcpy(s->blk + s->fill, p, take);
        s->fill += take; p += take; n -= take;
        if (s->fill == 64) { sha_block(s, s->blk); s->fill = 0; }
    }
}

void sha_final(ki_sha *s, unsigned char *out)
{
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80, z = 0, lb[8];
    int i, words = s->is256 ? 8 : 5;
    sha_update(s, &pad, 1);
    while (s->fill != 56) sha_update(s, &z, 1);
    for (i = 0; i < 8; i++) lb[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha_update(s, lb, 8);
    for (i = 0; i < words; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24); out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8); out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void ki_hex_of(const unsigned char *p, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    size_t i;
    for (i = 0; i < n; i++) { out[2 * i] = hx[p[i] >> 4]; out[2 * i + 1] = hx[p[i] & 15]; }
    out[2 * n] = 0;
}
