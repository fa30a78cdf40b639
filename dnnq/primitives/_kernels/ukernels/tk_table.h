/* A 256-entry byte table applied element by element (dst[i] = table[src[i]]): an ONNX
 * session's element-wise chain between two int8 roundings, tabulated once at creation.
 * With VBMI (`vbmi`, decided by the caller under the ISA cap) tk_pw_fast.h's vpermi2b lookup
 * (64 bytes per step); otherwise the scalar loop.  A lookup: the same bytes either way. */

void DNNQ_TK_FN(dnnq_table_run)(uint8_t *dst, const uint8_t *src, const uint8_t *table,
                                int64_t n, int vbmi) {
#ifdef TK_HAVE_LUT
    if (vbmi) {
        tk_lut_apply(dst, src, table, n);
        return;
    }
#endif
    (void)vbmi;
    for (int64_t i = 0; i < n; ++i) dst[i] = table[src[i]];
}
