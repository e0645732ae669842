/* A body that waits on memory (benchmarks/diag/reorder_memory_bound.py): each sample owns W = 8
 * double rows of a (W, n) plane and takes one step per call, a multiply-add on each of its W
 * values, until it has taken target[i] steps. 128 bytes read and written a step for 16 flops. */
#include <eagle/kernel.h>

EAGLE_KERNEL(mb_reset, (double*, p), (int32_t*, done), (uint8_t*, mask))
{
    for (int64_t r = 0; r < 8; ++r) p[r * n + i] = (double)r;
    done[i] = 0;
    mask[i] = 0;
}

EAGLE_KERNEL(mb_step, (double*, p), (int32_t*, done), (const int32_t*, target), (uint8_t*, mask))
{
    for (int64_t r = 0; r < 8; ++r) p[r * n + i] = p[r * n + i] * 0.5 + 1.0;
    const int32_t d = done[i] + 1;
    done[i] = d;
    mask[i] = d >= target[i];
}
