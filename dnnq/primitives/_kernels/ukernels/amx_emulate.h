/* A software model of the AMX tile unit (palette 1: 8 tiles of up to 16 rows x 64 bytes), for
 * gemm_amx.c compiled with DNNQ_AMX_EMULATE (suffix amxemu): the AMX GEMM's own code (its tile
 * shapes, strides, staging and epilogues) then runs on a CPU without AMX, when the process
 * starts with DNNQ_EMULATE_AMX=1 (cpu_features.c).  Tests use it to check the AMX level against
 * oneDNN and numpy on any AVX-512 machine; it is far slower than the tiles.
 *
 * What the instructions do (Intel SDM, "Intel AMX instruction set reference"): LDTILECFG sets
 * each tile's rows and bytes per row; TILELOADD fills the configured rows from base + r *
 * stride; TDPBUSD / TDPBSSD add, to each s32 element (m, n) of the destination, the four
 * products of bytes 4k .. 4k + 3 of row m of A with bytes 4n .. 4n + 3 of row k of B, over
 * every k (A's bytes per row / 4 = B's rows), wrapping; TILESTORED writes the configured rows;
 * TILERELEASE returns to the unconfigured state.  Any use the hardware refuses (#UD: a tile or
 * configuration out of shape, a tile not configured) stops the process with a message, so that
 * a test fails where the real unit would fault. */
#ifndef DNNQ_AMX_EMULATE_H
#define DNNQ_AMX_EMULATE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int configured;
    int rows[8], colsb[8];
    uint8_t data[8][16][64];
} amx_emu_state_t;

static __thread amx_emu_state_t amx_emu;

static void amx_emu_fault(const char *what, int t) {
    fprintf(stderr, "dnnq AMX emulation: %s (tile %d)\n", what, t);
    abort();
}

static void amx_emu_check(int t) {
    if (t < 0 || t > 7) amx_emu_fault("no such tile", t);
    if (!amx_emu.configured || amx_emu.rows[t] == 0) amx_emu_fault("tile not configured", t);
}

/* cfg: the 64-byte LDTILECFG operand (palette_id, start_row, 14 reserved, colsb[16] as u16,
 * rows[16] as u8) */
static void amx_emu_loadconfig(const void *cfg) {
    const uint8_t *b = (const uint8_t *)cfg;
    memset(&amx_emu, 0, sizeof(amx_emu));
    if (b[0] == 0) return; /* palette 0: the unconfigured state */
    if (b[0] != 1) amx_emu_fault("palette other than 1", -1);
    for (int t = 0; t < 16; ++t) {
        const int colsb = b[16 + 2 * t] | (b[17 + 2 * t] << 8), rows = b[48 + t];
        if (t >= 8) {
            if (colsb || rows) amx_emu_fault("tiles 8 - 15 do not exist in palette 1", t);
            continue;
        }
        if (rows > 16 || colsb > 64 || (colsb & 3) || (!rows) != (!colsb))
            amx_emu_fault("tile shape out of range", t);
        amx_emu.rows[t] = rows;
        amx_emu.colsb[t] = colsb;
    }
    amx_emu.configured = 1;
}

static void amx_emu_release(void) { memset(&amx_emu, 0, sizeof(amx_emu)); }

static void amx_emu_zero(int t) {
    amx_emu_check(t);
    memset(amx_emu.data[t], 0, sizeof(amx_emu.data[t]));
}

static void amx_emu_load(int t, const void *base, int64_t stride) {
    amx_emu_check(t);
    memset(amx_emu.data[t], 0, sizeof(amx_emu.data[t]));
    for (int r = 0; r < amx_emu.rows[t]; ++r)
        memcpy(amx_emu.data[t][r], (const char *)base + r * stride, (size_t)amx_emu.colsb[t]);
}

static void amx_emu_store(int t, void *base, int64_t stride) {
    amx_emu_check(t);
    for (int r = 0; r < amx_emu.rows[t]; ++r)
        memcpy((char *)base + r * stride, amx_emu.data[t][r], (size_t)amx_emu.colsb[t]);
}

/* a_signed: TDPBSSD (s8 A), else TDPBUSD (u8 A); B is s8 either way */
static void amx_emu_dp(int c, int a, int b, int a_signed) {
    amx_emu_check(c);
    amx_emu_check(a);
    amx_emu_check(b);
    if (c == a || c == b || a == b) amx_emu_fault("the three tiles must differ", c);
    const int M = amx_emu.rows[c], N = amx_emu.colsb[c] / 4, K = amx_emu.colsb[a] / 4;
    if (amx_emu.rows[a] != M || amx_emu.rows[b] != K || amx_emu.colsb[b] != amx_emu.colsb[c])
        amx_emu_fault("tile shapes do not agree (A rows = C rows, A bytes / 4 = B rows, "
                      "B bytes = C bytes)", c);
    for (int m = 0; m < M; ++m) {
        const uint8_t *ar = amx_emu.data[a][m];
        for (int n = 0; n < N; ++n) {
            uint32_t acc;
            memcpy(&acc, amx_emu.data[c][m] + 4 * n, 4);
            for (int k = 0; k < K; ++k) {
                const int8_t *br = (const int8_t *)amx_emu.data[b][k] + 4 * n;
                for (int i = 0; i < 4; ++i) {
                    const int32_t av = a_signed ? (int32_t)(int8_t)ar[4 * k + i] : (int32_t)ar[4 * k + i];
                    acc += (uint32_t)(av * (int32_t)br[i]);
                }
            }
            memcpy(amx_emu.data[c][m] + 4 * n, &acc, 4);
        }
    }
}

#endif
