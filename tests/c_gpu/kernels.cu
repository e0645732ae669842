// PTX test kernels for smoke.cu (built with nvcc -ptx, loaded with cuModuleLoadData). Each takes its
// arguments followed by eagle's partition triple (base, count, n_samples).
#include <cstdint>
extern "C" __global__ void k_add(uint32_t* buf, uint32_t v, int64_t base, int64_t count, int64_t n) {
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t < count) buf[base + t] += v;
}
extern "C" __global__ void k_fill(uint32_t* buf, uint32_t v, int64_t base, int64_t count, int64_t n) {
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t < count) buf[base + t] = v;
}
// counts lanes run into acc[0], stores the triple seen into tri[0..2]
extern "C" __global__ void k_lanes(unsigned long long* acc, int64_t* tri, int64_t base, int64_t count, int64_t n) {
    int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (t < count) atomicAdd(acc, 1ull);
    if (t == 0) { tri[0] = base; tri[1] = count; tri[2] = n; }
}
// one lane decrements *c when positive (a WHILE body's progress)
extern "C" __global__ void k_dec(uint32_t* c, int64_t base, int64_t count, int64_t n) {
    if (blockIdx.x == 0 && threadIdx.x == 0 && *c > 0) *c -= 1;
}
