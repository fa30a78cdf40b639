/* A 256-entry byte table applied element by element (dst[i] = table[src[i]]): an ONNX
 * session's element-wise chain between two int8 roundings, tabulated once at creation.
 * With VBMI (`vbmi`, decided by the caller under the ISA cap) vpermi2b looks up 64 bytes per
 * step; otherwise the scalar loop.  A lookup: the same bytes either way. */
#ifdef TK_HAVE_LUT
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void tk_table_vbmi(uint8_t *dst, const uint8_t *src, const uint8_t *table, int64_t n) {
    const __m512i t0 = _mm512_loadu_si512((const void *)table);
    const __m512i t1 = _mm512_loadu_si512((const void *)(table + 64));
    const __m512i t2 = _mm512_loadu_si512((const void *)(table + 128));
    const __m512i t3 = _mm512_loadu_si512((const void *)(table + 192));
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i x = _mm512_loadu_si512((const void *)(src + i));
        const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);  /* entries 0..127 */
        const __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);  /* entries 128..255 */
        _mm512_storeu_si512((void *)(dst + i), _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
    }
    if (i < n) { /* the tail under a mask: no byte outside [0, n) is read or written */
        const __mmask64 m = (1ULL << (n - i)) - 1; /* n - i < 64 */
        const __m512i x = _mm512_maskz_loadu_epi8(m, (const void *)(src + i));
        const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1);
        const __m512i hi = _mm512_permutex2var_epi8(t2, x, t3);
        _mm512_mask_storeu_epi8((void *)(dst + i), m,
                                _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
    }
}
#endif

void DNNQ_TK_FN(dnnq_table_run)(uint8_t *dst, const uint8_t *src, const uint8_t *table,
                                int64_t n, int vbmi) {
#ifdef TK_HAVE_LUT
    if (vbmi) {
        tk_table_vbmi(dst, src, table, n);
        return;
    }
#endif
    (void)vbmi;
    for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}
